//! What the tests that build testbeds share: whether namespaces can be built here, and the
//! `require_root!` guard that skips a test with the reason printed.

use std::process::Command;

/// Why namespaces cannot be built here, if they cannot.
pub fn skip_reason() -> Option<String> {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|u| u.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    if !is_root {
        return Some("not root".to_string());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("no `ip` command: {e}")),
    }
}

/// Returns from the test, printing why, when namespaces cannot be built here.
macro_rules! require_root {
    () => {
        if let Some(why) = common::skip_reason() {
            // Straight to stderr: libtest captures eprintln!, and the reason should show.
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIPPED {}: {why}\n", module_path!()),
            );
            return;
        }
    };
}
