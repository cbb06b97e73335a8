//! `ivnsec testbed up|status|exec|down` on testbeds of their own (root; a state directory of
//! its own, so `down --all` only sees what this test made). Help and usage: `cli/testbed.rs`.

use std::process::Command;

use crate::common::{TempDir, stderr, stdout};

fn namespaces_with(prefix: &str) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    stdout(&o)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .map(str::to_string)
        .collect()
}

#[test]
fn up_status_exec_down() {
    require_root!();
    let dir = TempDir::new("life");
    let o = dir.run(&["testbed", "up", "--topology", "pair", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let state: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let prefix = state["prefix"].as_str().unwrap().to_string();
    assert!(prefix.starts_with("ivn-") && prefix.len() == 10, "{prefix}");
    assert_eq!(namespaces_with(&prefix).len(), 3);

    let o = dir.run(&["testbed", "status"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains(&prefix) && s.contains("up, 3 of 3 namespaces"),
        "{s}"
    );
    assert!(
        s.contains("02:49:56:00:00:02") && s.contains("10.77.0.2/16"),
        "{s}"
    );

    // exec passes the exit code through and runs inside the node.
    let o = dir.run(&["testbed", "exec", "ecu2", "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let o = dir.run(&[
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
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("10.77.0.1/16"), "{}", stdout(&o));
    let o = dir.run(&["testbed", "exec", "ecu9", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("ecu1, ecu2"), "{}", stderr(&o));

    // A second testbed: now the prefix must be named.
    let o = dir.run(&["testbed", "up", "--topology", "steer-by-wire"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("front") && stdout(&o).contains("ivnsec testbed down --testbed"));
    let o = dir.run(&["testbed", "exec", "ecu1", "--", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = dir.run(&["testbed", "down"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    // Down one, then all; both idempotent.
    let o = dir.run(&["testbed", "down", "--testbed", &prefix]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("removed 3 namespaces"),
        "{}",
        stdout(&o)
    );
    assert!(namespaces_with(&prefix).is_empty());
    let o = dir.run(&["testbed", "down", "--testbed", &prefix]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("already down"), "{}", stdout(&o));
    let o = dir.run(&["testbed", "down", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("removed 4 namespaces"),
        "{}",
        stdout(&o)
    );
    let o = dir.run(&["testbed", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["testbeds"], serde_json::json!([]));
}
