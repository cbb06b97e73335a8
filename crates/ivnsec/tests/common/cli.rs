//! The command tree of `ivnsec`, walked through its `--help`.

use std::process::Command;

use super::{BIN, text};

/// The long help (`--help`) of `ivnsec PATH…`, which must succeed.
pub fn help(path: &[String]) -> String {
    let o = Command::new(BIN)
        .args(path)
        .arg("--help")
        .output()
        .expect("ivnsec --help");
    assert!(o.status.success(), "{path:?} --help: {}", text(&o.stderr));
    text(&o.stdout)
}

/// The subcommands listed under `Commands:` of a help text (`help` left out; the continuation
/// lines of a wrapped description are not names).
pub fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}
