//! `ivnsec testbed up|status|exec|down` as a user runs them. Every run uses a state directory of
//! its own (`IVNSEC_STATE_DIR`), so `down --all` here only sees testbeds these tests made. Tests
//! that build namespaces skip with a printed reason when not root or without `ip netns`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::skip_reason;

const BIN: &str = env!("CARGO_BIN_EXE_ivnsec");

fn run(state: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("IVNSEC_STATE_DIR", state)
        .output()
        .expect("spawn ivnsec")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A state directory of its own; on drop, `down --all` (also after a failed assertion) and
/// removal of the directory.
struct StateDir(PathBuf);

impl StateDir {
    fn new(tag: &str) -> StateDir {
        let r = ivnsec_net::testbed::random_prefix().unwrap();
        let p = std::env::temp_dir().join(format!("ivnsec-cli-{tag}-{r}"));
        std::fs::create_dir_all(&p).unwrap();
        StateDir(p)
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = run(&self.0, &["testbed", "down", "--all"]);
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn namespaces_with(prefix: &str) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    out(&o)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_subcommand_has_help() {
    let dir = StateDir::new("help");
    for sub in [
        vec!["testbed"],
        vec!["testbed", "up"],
        vec!["testbed", "status"],
        vec!["testbed", "exec"],
        vec!["testbed", "down"],
    ] {
        let mut args = sub.clone();
        args.push("--help");
        let o = run(&dir.0, &args);
        assert_eq!(o.status.code(), Some(0), "{sub:?}: {}", err(&o));
        assert!(out(&o).contains("Usage:"), "{sub:?}: {}", out(&o));
    }
    let o = run(&dir.0, &["testbed", "up", "--help"]);
    assert!(out(&o).contains("steer-by-wire") && out(&o).contains("cascade:N"));
}

#[test]
fn bad_topologies_are_usage_errors() {
    let dir = StateDir::new("badtopo");
    for t in [
        "ring",
        "sensors:0",
        "sensors:999",
        "cascade:x",
        "cascade:",
        "",
    ] {
        let o = run(&dir.0, &["testbed", "up", "--topology", t]);
        assert_eq!(o.status.code(), Some(2), "{t}: {}", err(&o));
        assert!(
            err(&o).contains("expected pair | steer-by-wire"),
            "{t}: {}",
            err(&o)
        );
    }
    // A malformed prefix is a usage error too, before anything is touched.
    let o = run(&dir.0, &["testbed", "down", "--testbed", "lo"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(&dir.0, &["testbed", "exec", "ecu1"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "exec without a command: {}",
        err(&o)
    );
}

#[test]
fn status_and_down_with_nothing_recorded() {
    let dir = StateDir::new("empty");
    let o = run(&dir.0, &["testbed", "status"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("no testbed is recorded"), "{}", out(&o));
    let o = run(&dir.0, &["testbed", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["testbeds"], serde_json::json!([]));
    for args in [
        &["testbed", "down"][..],
        &["testbed", "down", "--all"],
        &["testbed", "down", "--testbed", "ivn-000000"],
    ] {
        let o = run(&dir.0, args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
    }
    let o = run(&dir.0, &["testbed", "exec", "ecu1", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("ivnsec testbed up"), "{}", err(&o));
}

#[test]
fn missing_tool_or_privilege_is_exit_3() {
    let dir = StateDir::new("env");
    // No `ip` in PATH.
    let empty = dir.0.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let o = Command::new(BIN)
        .args(["testbed", "up"])
        .env("IVNSEC_STATE_DIR", &dir.0)
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("iproute2"), "{}", err(&o));
    // Not root: as root, drop to `nobody` with setpriv (util-linux) when it is there.
    if skip_reason().is_none() && Command::new("setpriv").arg("--version").output().is_ok() {
        let o = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                BIN,
                "testbed",
                "up",
            ])
            .env("IVNSEC_STATE_DIR", &dir.0)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(3), "{}", err(&o));
        assert!(err(&o).contains("needs root"), "{}", err(&o));
    }
}

#[test]
fn up_status_exec_down() {
    require_root!();
    let dir = StateDir::new("life");
    let o = run(&dir.0, &["testbed", "up", "--topology", "pair", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let state: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let prefix = state["prefix"].as_str().unwrap().to_string();
    assert!(prefix.starts_with("ivn-") && prefix.len() == 10, "{prefix}");
    assert_eq!(namespaces_with(&prefix).len(), 3);

    let o = run(&dir.0, &["testbed", "status"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let s = out(&o);
    assert!(
        s.contains(&prefix) && s.contains("up, 3 of 3 namespaces"),
        "{s}"
    );
    assert!(
        s.contains("02:49:56:00:00:02") && s.contains("10.77.0.2/16"),
        "{s}"
    );

    // exec passes the exit code through and runs inside the node.
    let o = run(
        &dir.0,
        &["testbed", "exec", "ecu2", "--", "sh", "-c", "exit 7"],
    );
    assert_eq!(o.status.code(), Some(7), "{}", err(&o));
    let o = run(
        &dir.0,
        &[
            "testbed",
            "exec",
            "ecu1",
            "--testbed",
            &prefix,
            "--",
            "ip",
            "-o",
            "addr",
            "show",
            "eth0",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("10.77.0.1/16"), "{}", out(&o));
    let o = run(&dir.0, &["testbed", "exec", "ecu9", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("ecu1, ecu2"), "{}", err(&o));

    // A second testbed: now the prefix must be named.
    let o = run(&dir.0, &["testbed", "up", "--topology", "steer-by-wire"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("front") && out(&o).contains("ivnsec testbed down --testbed"));
    let o = run(&dir.0, &["testbed", "exec", "ecu1", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let o = run(&dir.0, &["testbed", "down"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));

    // Down one, then all; both idempotent.
    let o = run(&dir.0, &["testbed", "down", "--testbed", &prefix]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("removed 3 namespaces"), "{}", out(&o));
    assert!(namespaces_with(&prefix).is_empty());
    let o = run(&dir.0, &["testbed", "down", "--testbed", &prefix]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("already down"), "{}", out(&o));
    let o = run(&dir.0, &["testbed", "down", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("removed 4 namespaces"), "{}", out(&o));
    let o = run(&dir.0, &["testbed", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["testbeds"], serde_json::json!([]));
}
