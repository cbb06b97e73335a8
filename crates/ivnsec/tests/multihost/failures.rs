//! Runs across SSH hosts that fail: unreachable or wrong hosts, dropped connections, Ctrl-C, unsynchronised clocks.

use crate::bench::*;
use crate::common::{BIN, Proc, TempDir, text};
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An unreachable host, a wrong host key, a host without ivnsec where copying is off: each
/// stops the run before any node starts, with exit 3 and the host's name and cause.
#[test]
fn failing_hosts_are_named() {
    require_sshd!();
    let d = TempDir::new("multihost-fail");
    let bench = Bench::up(&d);
    let front = bench.host_table("front", "");
    // Unreachable: an address of the testbed's subnet where nothing answers.
    let rear_ip = &bench.nodes[2].2;
    let unused = format!("{}.250", rear_ip.rsplit_once('.').unwrap().0);
    let ghost = bench
        .host_table("rear", "")
        .replace("name = \"rear\"", "name = \"ghost\"")
        .replace(&bench.nodes[2].2, &unused);
    fails_naming(
        &bench,
        &d,
        &format!("{PLAN}{front}{ghost}"),
        "ghost",
        "SSH failed",
    );
    // A wrong host key: the known hosts say front's key for rear's address.
    let kh = bench.dir.join("known_hosts");
    let good = std::fs::read_to_string(&kh).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let (a0, k0) = lines[0].split_once(' ').unwrap();
    let (a1, k1) = lines[1].split_once(' ').unwrap();
    let swapped = format!("{a0} {k1}\n{a1} {k0}\n");
    std::fs::write(&kh, swapped).unwrap();
    fails_naming(
        &bench,
        &d,
        &format!("{PLAN}{front}{}", bench.host_table("rear", "")),
        "front",
        "Host key verification failed",
    );
    std::fs::write(&kh, good).unwrap();
    // No ivnsec on rear's PATH and copying off.
    fails_naming(
        &bench,
        &d,
        &format!("{PLAN}{front}{}", bench.host_table("rear", "copy = false")),
        "rear",
        "copying is off",
    );
    // hosts check says the same, with exit 3.
    let p = d.path("check.toml");
    std::fs::write(
        &p,
        format!("{front}{}", bench.host_table("rear", "copy = false")),
    )
    .unwrap();
    let o = bench.ivnsec(&d, &["hosts", "check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("ivnsec    missing"), "{out}");
    assert!(out.contains("copy = true"), "{out}");
    bench.close();
    assert!(d.leftover_testbeds().is_empty());
}

/// The SSH connection to the responder's host dropped mid-run (its sshd session killed): the
/// run ends with exit 3 naming that host, soon, and no node is left on either host.
#[test]
fn ssh_dropped_mid_run() {
    require_sshd!();
    let d = TempDir::new("multihost-drop");
    let bench = Bench::up(&d);
    let p = d.path("long.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"long\"\n[run]\ncount = 100000\nreplications = 1\npause_ms = 1\n\
             [[scenario]]\nprofile = \"aes128-gcm\"\npayload = 64\n{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let out = d.path("report-drop");
    let mut run = bench.in_cu(BIN);
    run.args(["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("IVNSEC_STATE_DIR", d.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = run.spawn().unwrap();
    let mut run = Proc(Some(child));
    // Both nodes run (ivnsec copied to each host first).
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    // The nodes on the hosts got their keys over the SSH channel: their command lines are
    // `IVNSEC node pingpong`, nothing more.
    for pid in ours_running(&bench.dir) {
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let argv: Vec<String> = argv
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        assert_eq!(argv[1..], ["node", "pingpong"], "{argv:?}");
    }
    let listener = bench.sshd[1].0.as_ref().unwrap().id();
    // `ip netns exec` execs sshd, so the listener is the spawned pid.
    let sessions = sshd_sessions(listener);
    assert!(!sessions.is_empty(), "no sshd session on rear");
    for pid in sessions {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let t1 = Instant::now();
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    assert!(t1.elapsed() < Duration::from_secs(30), "the run went on");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("host rear"), "{err}");
    assert_none_left(&bench.dir);
    bench.close();
    assert!(d.leftover_testbeds().is_empty());
}

/// Ctrl-C (SIGINT) to ivnsec in the middle of a long throughput run across hosts: ivnsec ends
/// at once and, its SSH connections gone with it, the receiver and the sender on the hosts stop
/// well before their 30 s are up.
#[test]
fn ctrl_c_stops_every_node() {
    require_sshd!();
    let d = TempDir::new("multihost-int");
    let bench = Bench::up(&d);
    let p = d.path("long.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"long\"\n[[throughput]]\nprofiles = [\"aes128-gcm\"]\npayloads = [256]\n\
             rates = [\"10M\"]\nseconds = 30\nbaseline = false\n{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let out = d.path("report-int");
    let mut run = bench.in_cu(BIN);
    run.args(["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("IVNSEC_STATE_DIR", d.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut run = Proc(Some(run.spawn().unwrap()));
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    // `ip netns exec` execs ivnsec: the spawned pid is ivnsec's.
    let pid = run.0.as_ref().unwrap().id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let t1 = Instant::now();
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    assert!(
        t1.elapsed() < Duration::from_secs(10),
        "ivnsec went on after SIGINT"
    );
    assert!(!o.status.success(), "{}", text(&o.stderr));
    assert_none_left(&bench.dir);
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "the nodes ran their whole time"
    );
    bench.close();
    assert!(d.leftover_testbeds().is_empty());
}

/// A host that is another machine (its own boot id) and runs no ptp4l: the experiments whose
/// verdict is a one-way delay (`tdma run` too: its slots and deadlines are on the hosts'
/// clocks) refuse to run across it, exit 3, naming the host, its clock state and how to fix
/// it; no node is started.
#[test]
fn one_way_experiments_refused_on_unsynchronised_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-refused");
    let bench = Bench::up_with(&d, &["rear"]);
    let hosts = format!(
        "{}{}",
        bench.host_table("front", ""),
        bench.host_table("rear", "")
    );
    std::fs::write(d.path("t.csv"), TIMELINE).unwrap();
    let plan = d.path("streams.toml");
    std::fs::write(&plan, format!("{STREAMS}{hosts}")).unwrap();
    let p = plan.to_str().unwrap();
    let t = d.path("t.csv");
    let flows = d.path("flows.toml");
    std::fs::write(
        &flows,
        "[[flow]]\nname = \"steer\"\nfrom = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 100\n",
    )
    .unwrap();
    for args in [
        vec![
            "tdma",
            "run",
            "--hosts",
            p,
            "--flows",
            flows.to_str().unwrap(),
            "--bp",
            "4ms",
            "--gp",
            "1ms",
        ],
        vec!["underload", "--hosts", p, "--seconds", "1"],
        vec!["playback", "--hosts", p, "--timeline", t.to_str().unwrap()],
        vec!["camera", "--hosts", p, "--seconds", "1"],
        vec!["run", p, "--out", d.path("r").to_str().unwrap()],
    ] {
        let o = bench.ivnsec(&d, &args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("host rear is no ptp4l"), "{args:?}: {err}");
        assert!(
            err.contains("ptp4l") && err.contains("phc2sys") && err.contains("docs/multihost.md"),
            "{args:?}: {err}"
        );
        assert!(ours_running(&bench.dir).is_empty());
    }
    // The ping-pong needs no shared clock (round trips): it runs across the same hosts.
    let o = bench.ivnsec(
        &d,
        &[
            "pingpong",
            "--hosts",
            p,
            "--profile",
            "plain",
            "--payload",
            "64",
            "--count",
            "10",
            "--replications",
            "1",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert_eq!(v["lost"], 0, "{v}");
    assert_none_left(&bench.dir);
    bench.close();
}

/// The consumer's SSH connection dropped in the middle of an under-load run across hosts (its
/// sshd session killed): once the sensor has sent its messages the run ends with exit 3 naming
/// the hosts, and no node is left on either.
#[test]
fn ssh_dropped_mid_underload() {
    require_sshd!();
    let d = TempDir::new("multihost-ul-drop");
    let bench = Bench::up(&d);
    let p = bench.hosts_plan(&d, "hosts.toml", "");
    let mut run = bench.in_cu(BIN);
    run.args([
        "underload",
        "--hosts",
        p.to_str().unwrap(),
        "--profile",
        "aes128-gcm",
        "--size",
        "2000",
        "--mps",
        "100",
        "--seconds",
        "6",
        "--no-baseline",
    ])
    .env("IVNSEC_STATE_DIR", d.state())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut run = Proc(Some(run.spawn().unwrap()));
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let listener = bench.sshd[1].0.as_ref().unwrap().id();
    let sessions = sshd_sessions(listener);
    assert!(!sessions.is_empty(), "no sshd session on rear");
    for pid in sessions {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("host rear"), "{err}");
    assert!(err.contains("SSH connection was lost"), "{err}");
    assert_none_left(&bench.dir);
    bench.close();
}
