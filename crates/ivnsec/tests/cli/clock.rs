//! `ivnsec clock check` (and `testbed up --ptp`): the PTP state of hosts as linuxptp's pmc reports
//! it. Tests that need linuxptp skip with the reason when it is not installed (`scripts/setup`
//! installs it); tests that build namespaces skip when not root.

use std::process::Output;

use serde_json::Value;

use crate::common;

use crate::common::{TempDir, text};

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

/// Reads one pretty-printed JSON document (it ends with a `}` line) from a running process.
fn read_document(r: &mut impl std::io::BufRead) -> Value {
    let mut doc = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "stdout ended: {doc}");
        doc.push_str(&line);
        if line == "}\n" {
            return serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
        }
    }
}

fn port_follows(h: &Value) -> bool {
    matches!(h["port_state"].as_str(), Some("UNCALIBRATED" | "SLAVE"))
}

/// `testbed up --ptp` runs ptp4l (software timestamping) on the two ECUs of a pair: ecu1 the
/// grand master (port MASTER), ecu2 its slave (UNCALIBRATED: free-running, it never steers the
/// clock it shares with ecu1 and the host). `clock check --netns` reads both ports and ecu2's
/// offset and path delay. Both namespaces read this machine's one system clock, so the offset
/// ptp4l measures is only the asymmetry of the two directions' timestamps: near zero. Measured
/// here about 1.5 µs with a 15 µs path delay; the bound is 1 ms (far below the 2.5 ms one-way
/// requirement) so a busy shared CI machine does not make it flaky. `testbed down` stops ptp4l
/// and ends `up --ptp`.
#[test]
fn testbed_ptp_ports_and_offsets_on_one_clock() {
    require_root!();
    if !has_linuxptp() {
        eprintln!("SKIPPED: linuxptp is not installed (scripts/setup installs it)");
        return;
    }
    let d = TempDir::new("clock-ptp");
    let mut c = d.cmd();
    c.args(["testbed", "up", "--ptp", "--json"]);
    let mut up = common::spawn_until_ready(c, "ptp: ready", "testbed up --ptp");
    let mut out = std::io::BufReader::new(up.0.as_mut().unwrap().stdout.take().unwrap());
    let state = read_document(&mut out);
    let prefix = state["prefix"].as_str().unwrap().to_string();
    assert!(prefix.starts_with("ivn-"), "{state}");
    let (ns1, ns2) = (format!("{prefix}-ecu1"), format!("{prefix}-ecu2"));
    let hosts = &state["ptp"]["hosts"];
    assert_eq!(hosts[0]["host"], ns1.as_str(), "{state}");
    assert_eq!(hosts[0]["port_state"], "MASTER", "{state}");
    assert!(port_follows(&hosts[1]), "{state}");

    let o = d.run(&["clock", "check", "--netns", &ns1, "--netns", &ns2, "--json"]);
    let v = json("clock check --netns", &o);
    assert_eq!(o.status.code(), Some(0), "{v}");
    assert_eq!(v["shared_clock"], true, "{v}");
    assert_eq!(v["owd"], "shared clock", "{v}");
    let (gm, slave) = (&v["hosts"][0], &v["hosts"][1]);
    assert_eq!(gm["port_state"], "MASTER", "{v}");
    assert_eq!(gm["state"], "synchronised", "{v}");
    assert_eq!(gm["steps_removed"], 0, "{v}");
    let gm_id = gm["clock_identity"].as_str().unwrap();
    // The testbed's ECU MACs (02:49:56:00:00:01) make the EUI-64 clock identities.
    assert_eq!(gm_id, "024956.fffe.000001", "{v}");
    assert!(port_follows(slave), "{v}");
    assert_eq!(slave["gm_present"], true, "{v}");
    assert_eq!(slave["gm_identity"], gm_id, "{v}");
    assert_eq!(slave["steps_removed"], 1, "{v}");
    let delay = slave["mean_path_delay_ns"].as_f64().unwrap();
    assert!(delay > 0.0 && delay < 1e6, "path delay {delay} ns: {v}");
    let offset = slave["offset_ns"].as_f64().unwrap();
    assert!(
        offset.abs() < 1e6,
        "one clock, so the offset must be near zero; got {offset} ns: {v}"
    );

    // The table says the same; the ECUs may be named by node when one testbed is up.
    let o = d.run(&["clock", "check", "--netns", "ecu1", "--netns", "ecu2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let t = text(&o.stdout);
    assert!(t.contains("MASTER") && t.contains("shared clock"), "{t}");

    // A ping-pong run on this testbed records both nodes' clocks in its report: one shared
    // clock, and what each ptp4l reports.
    let plan = d.path("pp.toml");
    std::fs::write(
        &plan,
        "name = \"pp\"\n[run]\ncount = 20\nreplications = 1\npause_ms = 0.1\n\
         [[matrix]]\nprofiles = [\"plain\"]\npayloads = [64]\n",
    )
    .unwrap();
    let report = d.path("report");
    let o = d.run(&[
        "run",
        plan.to_str().unwrap(),
        "--testbed",
        &prefix,
        "--out",
        report.to_str().unwrap(),
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("summary.json")).unwrap())
            .unwrap();
    let env = &summary["environment"];
    assert_eq!(env["owd_clock"], "shared clock", "{env}");
    let state = env["clock_state"].as_str().unwrap();
    assert!(state.starts_with("shared clock: ecu1, ecu2"), "{state}");
    assert!(
        state.contains("PTP (ptp4l): ecu1 synchronised, port MASTER; ecu2 unsynchronised, port"),
        "{state}"
    );

    // `testbed down` stops ptp4l (it runs inside the namespaces) and with it `up --ptp`.
    let o = d.run(&["testbed", "down", "--all"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let child = up.0.as_mut().unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "up --ptp still runs after down"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert!(status.success(), "{status}");
    assert!(
        !d.state().join("ptp").join(format!("{ns1}.sock")).exists(),
        "socket left behind"
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

/// Three ECUs (steer-by-wire): the central unit is the grand master, both wheel controllers
/// follow it. SIGTERM (Ctrl-C) stops ptp4l and `up --ptp` ends with 0, leaving the testbed up
/// (its state file stays, its namespaces too) and no ptp4l socket behind.
#[test]
fn testbed_ptp_three_ecus_and_ctrl_c_keeps_the_testbed() {
    require_root!();
    if !has_linuxptp() {
        eprintln!("SKIPPED: linuxptp is not installed (scripts/setup installs it)");
        return;
    }
    let d = TempDir::new("clock-ptp3");
    let mut c = d.cmd();
    c.args([
        "testbed",
        "up",
        "--ptp",
        "--topology",
        "steer-by-wire",
        "--json",
    ]);
    let mut up = common::spawn_until_ready(c, "ptp: ready", "testbed up --ptp");
    let mut out = std::io::BufReader::new(up.0.as_mut().unwrap().stdout.take().unwrap());
    let state = read_document(&mut out);
    let prefix = state["prefix"].as_str().unwrap().to_string();
    let hosts = state["ptp"]["hosts"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            format!("{prefix}-cu"),
            format!("{prefix}-front"),
            format!("{prefix}-rear")
        ],
        "{state}"
    );
    assert_eq!(hosts[0]["port_state"], "MASTER", "{state}");
    let gm = hosts[0]["clock_identity"].as_str().unwrap();
    for h in &hosts[1..] {
        assert!(port_follows(h), "{state}");
        assert_eq!(h["gm_identity"], gm, "{state}");
    }
    assert_eq!(state["ptp"]["shared_clock"], true, "{state}");

    let child = up.0.as_mut().unwrap();
    ivnsec_net::sys::signal_process(child.id(), false).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(
        d.state().join(format!("{prefix}.json")).exists(),
        "the testbed must stay after Ctrl-C"
    );
    for n in ["cu", "front", "rear"] {
        let sock = d.state().join("ptp").join(format!("{prefix}-{n}.sock"));
        assert!(!sock.exists(), "{} left behind", sock.display());
    }
    // The namespaces are still there, and ptp4l no longer answers in them.
    let o = d.run(&[
        "clock",
        "check",
        "--netns",
        &format!("{prefix}-cu"),
        "--uds",
        d.state()
            .join("ptp")
            .join(format!("{prefix}-cu.sock"))
            .to_str()
            .unwrap(),
        "--json",
    ]);
    let v = json("clock check after Ctrl-C", &o);
    assert_eq!(v["hosts"][0]["state"], "no ptp4l", "{v}");
}

/// `up --ptp` killed with SIGKILL (no chance to clean up): its ptp4l instances die with it
/// (nothing is left running in the namespaces), and `testbed down` removes their sockets and
/// logs with the testbed.
#[test]
fn testbed_ptp_killed_leaves_no_ptp4l_and_down_cleans_up() {
    require_root!();
    if !has_linuxptp() {
        eprintln!("SKIPPED: linuxptp is not installed (scripts/setup installs it)");
        return;
    }
    let d = TempDir::new("clock-ptpkill");
    let mut c = d.cmd();
    c.args(["testbed", "up", "--ptp", "--json"]);
    let mut up = common::spawn_until_ready(c, "ptp: ready", "testbed up --ptp");
    let mut out = std::io::BufReader::new(up.0.as_mut().unwrap().stdout.take().unwrap());
    let prefix = read_document(&mut out)["prefix"]
        .as_str()
        .unwrap()
        .to_string();
    let child = up.0.as_mut().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let ptp = d.state().join("ptp");
    assert!(ptp.join(format!("{prefix}-ecu1.sock")).exists());
    let start = std::time::Instant::now();
    for node in ["ecu1", "ecu2"] {
        loop {
            let o = std::process::Command::new("ip")
                .args(["netns", "pids", &format!("{prefix}-{node}")])
                .output()
                .unwrap();
            if text(&o.stdout).trim().is_empty() {
                break;
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "still running in {node}: {}",
                text(&o.stdout)
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let o = d.run(&["testbed", "down", "--testbed", &prefix]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        !ptp.exists(),
        "ptp files left: {:?}",
        std::fs::read_dir(&ptp).map(|r| r.count())
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
    let v = json("clock check --plan", &o);
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
