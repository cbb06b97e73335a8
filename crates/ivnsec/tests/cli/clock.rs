//! `ivnsec clock check` (and `testbed up --ptp`): the PTP state of hosts as linuxptp's pmc reports
//! it. Tests that need linuxptp skip with the reason when it is not installed (`scripts/setup`
//! installs it). The tests against namespaces and `testbed up --ptp` (root) are in
//! `testbed_pair/clock.rs`.

use crate::common;
use crate::common::{TempDir, have_linuxptp, json, text};

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
        (
            &["testbed", "up", "--ptp", "--topology", "bump"],
            "--ptp does not run on topology bump",
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
    let v = json::parse("clock check --local", &o);
    let h = &v["hosts"][0];
    assert_eq!(h["host"], "local");
    assert_eq!(h["this_host"], true);
    assert_eq!(v["shared_clock"], false, "one host alone is judged by PTP");
    if have_linuxptp() {
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
    let v = json::parse("clock check --ssh", &o);
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

/// A ping-pong plan run on this host records the clock state in the report's environment: both
/// nodes on this machine's one clock (`shared clock`), so its direct one-way delays are not
/// flagged.
#[test]
fn a_run_on_one_host_records_a_shared_clock() {
    let d = TempDir::new("clock-env");
    let plan = d.path("pp.toml");
    std::fs::write(
        &plan,
        "name = \"pp\"\n[run]\ncount = 20\nreplications = 1\npause_ms = 0.1\n\
         [[matrix]]\nprofiles = [\"plain\"]\npayloads = [64]\n",
    )
    .unwrap();
    let (_, s) = common::run_plan_on_loopback(&d, &plan);
    let env = &s["environment"];
    assert_eq!(env["owd_clock"], "shared clock", "{env}");
    let state = env["clock_state"].as_str().unwrap();
    assert!(
        state.starts_with("shared clock: initiator, responder on this machine"),
        "{state}"
    );
    let md = std::fs::read_to_string(d.path("report").join("summary.md")).unwrap();
    assert!(
        md.contains("shared clock") && !md.contains("FLAGGED"),
        "{md}"
    );
}

/// A plan without ping-pong scenarios (only an experiment table) records the shared clock too:
/// its experiments run on this machine.
#[test]
fn a_plan_of_experiments_only_records_a_shared_clock() {
    let d = TempDir::new("clock-env-tp");
    let plan = d.path("tp.toml");
    std::fs::write(
        &plan,
        "name = \"tp\"\n[[throughput]]\nprofiles = [\"plain\"]\npayloads = [1000]\n\
         rates = [\"10M\"]\nsenders = 1\nseconds = 0.3\n",
    )
    .unwrap();
    let (_, s) = common::run_plan_on_loopback(&d, &plan);
    let env = &s["environment"];
    assert_eq!(env["owd_clock"], "shared clock", "{env}");
    assert!(
        env["clock_state"]
            .as_str()
            .unwrap()
            .starts_with("shared clock: every node on this machine"),
        "{env}"
    );
}

/// `--plan` asks the hosts of a plan's `[[host]]` tables, each over its own ssh options: a host
/// on a closed port cannot be asked (exit 3, named by its table); a plan without hosts is a
/// usage error.
#[test]
fn plan_hosts_are_asked_over_their_ssh() {
    if std::process::Command::new("ssh")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: no ssh client");
        return;
    }
    let d = TempDir::new("clock-plan");
    let plan = d.path("bench.toml");
    std::fs::write(
        &plan,
        "name = \"bench\"\n\
         [[host]]\nname = \"front\"\nssh = \"nobody@127.0.0.1\"\niface = \"eth1\"\n\
         ssh_options = [\"-p\", \"1\", \"-oStrictHostKeyChecking=yes\"]\n",
    )
    .unwrap();
    let o = d.run(&["clock", "check", "--plan", plan.to_str().unwrap(), "--json"]);
    let v = json::parse("clock check --plan", &o);
    assert_eq!(o.status.code(), Some(3), "{v}");
    let h = &v["hosts"][0];
    assert_eq!(h["host"], "front", "{v}");
    assert_eq!(h["via"], "ssh");
    assert_eq!(h["state"], "unreachable", "{v}");
    assert!(h["reason"].as_str().unwrap().contains("port 1"), "{v}");

    let empty = d.path("empty.toml");
    std::fs::write(&empty, "name = \"x\"\n").unwrap();
    let o = d.run(&["clock", "check", "--plan", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("no [[host]] tables"),
        "{}",
        text(&o.stderr)
    );
}
