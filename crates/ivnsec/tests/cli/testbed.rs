//! `ivnsec testbed up|status|exec|down` as a user runs them. Every run uses a state directory of
//! its own (`IVNSEC_STATE_DIR`), so `down --all` here only sees testbeds these tests made. The
//! test that builds testbeds (root) is in `testbed_pair/testbed.rs`.

use std::process::Command;

use crate::common::{BIN, TempDir, skip_reason, stderr, stdout};

#[test]
fn every_subcommand_has_help() {
    let dir = TempDir::new("help");
    for sub in [
        vec!["testbed"],
        vec!["testbed", "up"],
        vec!["testbed", "status"],
        vec!["testbed", "exec"],
        vec!["testbed", "down"],
    ] {
        let mut args = sub.clone();
        args.push("--help");
        let o = dir.run(&args);
        assert_eq!(o.status.code(), Some(0), "{sub:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("Usage:"), "{sub:?}: {}", stdout(&o));
    }
    let o = dir.run(&["testbed", "up", "--help"]);
    assert!(stdout(&o).contains("steer-by-wire") && stdout(&o).contains("cascade:N"));
}

#[test]
fn bad_topologies_are_usage_errors() {
    let dir = TempDir::new("badtopo");
    for t in [
        "ring",
        "sensors:0",
        "sensors:999",
        "cascade:x",
        "cascade:",
        "",
    ] {
        let o = dir.run(&["testbed", "up", "--topology", t]);
        assert_eq!(o.status.code(), Some(2), "{t}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("expected pair | steer-by-wire"),
            "{t}: {}",
            stderr(&o)
        );
    }
    // A malformed prefix is a usage error too, before anything is touched.
    let o = dir.run(&["testbed", "down", "--testbed", "lo"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = dir.run(&["testbed", "exec", "ecu1"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "exec without a command: {}",
        stderr(&o)
    );
}

#[test]
fn status_and_down_with_nothing_recorded() {
    let dir = TempDir::new("empty");
    let o = dir.run(&["testbed", "status"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no testbed is recorded"),
        "{}",
        stdout(&o)
    );
    let o = dir.run(&["testbed", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["testbeds"], serde_json::json!([]));
    for args in [
        &["testbed", "down"][..],
        &["testbed", "down", "--all"],
        &["testbed", "down", "--testbed", "ivn-000000"],
    ] {
        let o = dir.run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
    }
    let o = dir.run(&["testbed", "exec", "ecu1", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("ivnsec testbed up"), "{}", stderr(&o));
}

#[test]
fn missing_tool_or_privilege_is_exit_3() {
    let dir = TempDir::new("env");
    // No `ip` in PATH.
    let empty = dir.0.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let o = Command::new(BIN)
        .args(["testbed", "up"])
        .env("IVNSEC_STATE_DIR", dir.state())
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("iproute2"), "{}", stderr(&o));
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
            .env("IVNSEC_STATE_DIR", dir.state())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
        assert!(stderr(&o).contains("needs root"), "{}", stderr(&o));
    }
}
