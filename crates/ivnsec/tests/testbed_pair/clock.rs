//! `ivnsec clock check` against namespaces and `testbed up --ptp` (root; linuxptp): ports and
//! offsets on one clock, three ECUs on `steer-by-wire`, Ctrl-C and SIGKILL. What needs neither:
//! `cli/clock.rs`.

use serde_json::Value;

use crate::common;
use crate::common::{TempDir, have_linuxptp, json, text};

/// A namespace that does not exist cannot be asked: exit 3, with ip's reason.
#[test]
fn a_missing_namespace_is_exit_3() {
    require_root!();
    let d = TempDir::new("clock-nons");
    let ns = format!("{}-nosuch", ivnsec_net::testbed::random_prefix().unwrap());
    let o = d.run(&["clock", "check", "--netns", &ns, "--json"]);
    let v = json::parse("clock check --netns", &o);
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
    if !have_linuxptp() {
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
    let v = json::parse("clock check --netns", &o);
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

/// Three ECUs (steer-by-wire): the central unit is the grand master, both wheel controllers
/// follow it. SIGTERM (Ctrl-C) stops ptp4l and `up --ptp` ends with 0, leaving the testbed up
/// (its state file stays, its namespaces too) and no ptp4l socket behind.
#[test]
fn testbed_ptp_three_ecus_and_ctrl_c_keeps_the_testbed() {
    require_root!();
    if !have_linuxptp() {
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
    let v = json::parse("clock check after Ctrl-C", &o);
    assert_eq!(v["hosts"][0]["state"], "no ptp4l", "{v}");
}

/// `up --ptp` killed with SIGKILL (no chance to clean up): its ptp4l instances die with it
/// (nothing is left running in the namespaces), and `testbed down` removes their sockets and
/// logs with the testbed.
#[test]
fn testbed_ptp_killed_leaves_no_ptp4l_and_down_cleans_up() {
    require_root!();
    if !have_linuxptp() {
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
