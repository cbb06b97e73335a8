//! Shared by the root tests: skip checks, temporary state directories and cleanup guards.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use ivnsec_net::testbed;

/// `Some(reason)` when this process cannot build namespaces (not root, no `ip`, no netns).
pub fn skip_reason() -> Option<String> {
    if let Err(e) = testbed::check_environment() {
        return Some(e.to_string());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run `ip netns list`: {e}")),
    }
}

/// Returns early from a test, printing why, when namespaces are unavailable.
#[macro_export]
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

/// A state directory of its own, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "ivnsec-{tag}-{}",
            testbed::random_prefix().unwrap()
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Removes every namespace of `prefix` on drop (also after a panic), whatever `Testbed` did.
pub struct PrefixGuard {
    pub prefix: String,
    pub state_dir: PathBuf,
}

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        let _ = testbed::down(&self.prefix, &self.state_dir);
    }
}

/// Options with a state dir of its own.
pub fn options(dir: &TempDir) -> testbed::Options {
    testbed::Options {
        state_dir: dir.0.clone(),
        ..testbed::Options::default()
    }
}

pub fn have(program: &str) -> bool {
    Command::new(program).arg("-V").output().is_ok()
}
