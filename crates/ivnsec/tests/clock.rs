//! `ivnsec clock check` (and `testbed up --ptp`): the PTP state of hosts as linuxptp's pmc reports
//! it. Tests that need linuxptp skip with the reason when it is not installed (`scripts/setup`
//! installs it); tests that build namespaces skip when not root.

use std::process::Output;

use serde_json::Value;

#[macro_use]
mod common;

use common::{TempDir, text};

fn has_linuxptp() -> bool {
    ["/usr/sbin/pmc", "/sbin/pmc", "/usr/bin/pmc"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
}

fn json(what: &str, o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not JSON ({e}): {}\nstderr: {}",
            text(&o.stdout),
            text(&o.stderr)
        )
    })
}

#[test]
fn help_has_an_example_and_bad_usage_is_exit_2() {
    let d = TempDir::new("clock-usage");
    let o = d.run(&["clock", "check", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let help = text(&o.stdout);
    assert!(help.contains("Examples:") && help.contains("ivnsec clock check --netns"));
    for (args, says) in [
        (&["clock", "check"][..], "name at least one host"),
        (
            &["clock", "check", "--netns", "../etc"],
            "not a namespace name",
        ),
        (&["clock", "check", "--ssh=-oProxyCommand=x"], "[user@]host"),
        (
            &["clock", "check", "--local", "--ssh-option", "-v"],
            "needs at least one --ssh",
        ),
        (
            &["clock", "check", "--local", "--max-offset", "x"],
            "invalid value",
        ),
    ] {
        let o = d.run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// This machine with no ptp4l on the socket asked: `no ptp4l`, exit 1 (or `pmc missing`, exit
/// 3, where linuxptp is not installed); the same answer as a table and as JSON.
#[test]
fn local_without_ptp4l_is_not_synchronised() {
    let d = TempDir::new("clock-local");
    let uds = d.path("no-ptp4l.sock");
    let uds = uds.to_str().unwrap();
    let o = d.run(&["clock", "check", "--local", "--uds", uds, "--json"]);
    let v = json("clock check --local", &o);
    let h = &v["hosts"][0];
    assert_eq!(h["host"], "local");
    assert_eq!(h["this_host"], true);
    assert_eq!(v["shared_clock"], false, "one host alone is judged by PTP");
    if has_linuxptp() {
        assert_eq!(o.status.code(), Some(1), "{v}");
        assert_eq!(h["state"], "no ptp4l", "{v}");
        assert!(h["reason"].as_str().unwrap().contains(uds), "{v}");
        assert_eq!(v["owd"], "unsynchronised");
    } else {
        assert_eq!(o.status.code(), Some(3), "{v}");
        assert_eq!(h["state"], "pmc missing", "{v}");
    }
    let o = d.run(&["clock", "check", "--local", "--uds", uds]);
    let t = text(&o.stdout);
    assert!(t.contains("offset ns") && t.contains("local"), "{t}");
    assert!(t.contains("unsynchronised: local"), "{t}");
}

/// A host ssh cannot reach (a closed port on loopback, passed with --ssh-option) cannot be
/// asked: `unreachable` with ssh's reason, exit 3.
#[test]
fn an_unreachable_ssh_host_is_exit_3() {
    if std::process::Command::new("ssh")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no ssh client");
        return;
    }
    let d = TempDir::new("clock-ssh");
    let o = d.run(&[
        "clock",
        "check",
        "--ssh",
        "nobody@127.0.0.1",
        "--ssh-option",
        "-p",
        "--ssh-option",
        "1",
        "--ssh-option",
        "-oStrictHostKeyChecking=yes",
        "--json",
    ]);
    let v = json("clock check --ssh", &o);
    assert_eq!(o.status.code(), Some(3), "{v}");
    let h = &v["hosts"][0];
    assert_eq!(h["state"], "unreachable", "{v}");
    assert_eq!(h["via"], "ssh");
    assert_eq!(h["this_host"], false);
    let why = h["reason"].as_str().unwrap();
    assert!(
        why.contains("ssh could not reach") && why.contains("port 1"),
        "{why}"
    );
}

/// A namespace that does not exist cannot be asked: exit 3, with ip's reason.
#[test]
fn a_missing_namespace_is_exit_3() {
    require_root!();
    let d = TempDir::new("clock-nons");
    let ns = format!("{}-nosuch", ivnsec_net::testbed::random_prefix().unwrap());
    let o = d.run(&["clock", "check", "--netns", &ns, "--json"]);
    let v = json("clock check --netns", &o);
    assert_eq!(o.status.code(), Some(3), "{v}");
    assert_eq!(v["hosts"][0]["state"], "unreachable", "{v}");
    assert!(
        v["hosts"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("Cannot open network namespace"),
        "{v}"
    );
}
