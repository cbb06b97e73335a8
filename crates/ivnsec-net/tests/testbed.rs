//! Root tests of the namespace testbed: real namespaces, veth links and bridges. Each test makes
//! its own random prefix and state directory, and cleans up through Drop guards even when it
//! fails. Without root (or without `ip netns`) each test prints why and passes as skipped.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{PrefixGuard, TempDir, have, options};
use ivnsec_core::wire::ivnae::ETHERTYPE as ETH_P_IVNAE;
use ivnsec_net::sys::{PacketType, RawSocket};
use ivnsec_net::testbed::{self, Testbed};
use ivnsec_net::topology::{Topology, parse_mac};
use ivnsec_net::{Error, Result};

/// Environment variable that turns the `helper` test into a raw-socket helper process.
const HELPER_ENV: &str = "IVNSEC_NET_TEST_HELPER";

fn up(t: Topology, dir: &TempDir) -> (Testbed, PrefixGuard) {
    let tb = Testbed::up(&t, &options(dir)).expect("testbed up");
    let guard = PrefixGuard {
        prefix: tb.prefix().to_string(),
        state_dir: dir.0.clone(),
    };
    (tb, guard)
}

fn ip_out(args: &[&str]) -> String {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(
        o.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ping(tb: &Testbed, from: &str, to: &str) {
    if !have("ping") {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"ping part SKIPPED: no `ping` (Debian: apt-get install iputils-ping)\n",
        );
        return;
    }
    let dst = tb.state().ipv4_of(to).unwrap().to_string();
    let o = tb
        .command(from, "ping")
        .unwrap()
        .args(["-c1", "-W2", &dst])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ping {from} -> {to} ({dst}): {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn pair_builds_pings_and_tears_down() {
    require_root!();
    let dir = TempDir::new("pair");
    let (tb, _guard) = up(Topology::Pair, &dir);
    let prefix = tb.prefix().to_string();
    let live = testbed::live_namespaces(&prefix).unwrap();
    assert_eq!(live.len(), 3, "{live:?}");
    for n in ["ecu1", "ecu2", "sw0"] {
        assert!(live.contains(&format!("{prefix}-{n}")), "{live:?}");
    }
    // The state file says what exists.
    let st = testbed::load(&dir.0, &prefix).unwrap();
    assert!(st.complete);
    assert_eq!(&st, tb.state());
    // Fixed MAC and MTU on the ECU interface; the bridge has STP off, forward delay 0.
    let link = ip_out(&[
        "-n",
        &format!("{prefix}-ecu1"),
        "-d",
        "link",
        "show",
        "eth0",
    ]);
    assert!(
        link.contains("mtu 1500") && link.contains("link/ether 02:49:56:00:00:01"),
        "{link}"
    );
    let br = ip_out(&["-n", &format!("{prefix}-sw0"), "-d", "link", "show", "br0"]);
    assert!(
        br.contains("forward_delay 0") && br.contains("stp_state 0"),
        "{br}"
    );
    // IPv6 is off inside: no link-local address, so no DAD/RS/MLD frames.
    let addrs = ip_out(&["-n", &format!("{prefix}-ecu1"), "addr", "show", "eth0"]);
    assert!(
        addrs.contains("inet 10.77.0.1/16") && !addrs.contains("inet6"),
        "{addrs}"
    );
    ping(&tb, "ecu1", "ecu2");
    ping(&tb, "ecu2", "ecu1");
    // Dropping tears down; a second down is a no-op.
    drop(tb);
    assert_eq!(
        testbed::live_namespaces(&prefix).unwrap(),
        Vec::<String>::new()
    );
    assert!(testbed::load(&dir.0, &prefix).is_err());
    assert!(testbed::down(&prefix, &dir.0).unwrap().was_already_down());
}

#[test]
fn other_topologies_build_and_forward() {
    require_root!();
    let dir = TempDir::new("topos");
    for (t, a, b, switches) in [
        (Topology::SteerByWire, "cu", "rear", 1),
        (Topology::Sensors(3), "sensor3", "consumer", 1),
        (Topology::Cascade(3), "ecu1", "ecu2", 3),
    ] {
        let (tb, _guard) = up(t, &dir);
        let p = tb.prefix().to_string();
        assert_eq!(
            testbed::live_namespaces(&p).unwrap().len(),
            t.plan().nodes.len(),
            "{t}"
        );
        assert_eq!(
            tb.state()
                .nodes
                .iter()
                .filter(|n| n.kind == "switch")
                .count(),
            switches
        );
        ping(&tb, a, b);
        let report = tb.down().unwrap();
        assert_eq!(report.removed_namespaces.len(), t.plan().nodes.len());
        assert!(report.removed_state_file);
        assert!(testbed::live_namespaces(&p).unwrap().is_empty());
    }
}

#[test]
fn raw_frame_crosses_the_bridge_between_namespaces() {
    require_root!();
    let dir = TempDir::new("raw");
    let (tb, _guard) = up(Topology::Pair, &dir);
    let mut frame = Vec::new();
    frame.extend_from_slice(&parse_mac("02:49:56:00:00:02").unwrap());
    frame.extend_from_slice(&parse_mac("02:49:56:00:00:01").unwrap());
    frame.extend_from_slice(&ETH_P_IVNAE.to_be_bytes());
    frame.extend((0..100u8).map(|i| i.wrapping_mul(7)));
    let hex: String = frame.iter().map(|b| format!("{b:02x}")).collect();

    let mut rx = spawn_helper(&tb, "ecu2", "recv").unwrap();
    let mut lines = BufReader::new(rx.stdout.take().unwrap()).lines();
    let ready = wait_for(&mut lines, "IVNSEC-READY");
    assert!(ready.is_some(), "receiver: {}", stderr_of(&mut rx));
    let tx = spawn_helper(&tb, "ecu1", &format!("send:{hex}"))
        .unwrap()
        .wait_with_output()
        .unwrap();
    assert!(
        tx.status.success(),
        "sender: {}",
        String::from_utf8_lossy(&tx.stderr)
    );
    let got = wait_for(&mut lines, "IVNSEC-FRAME ");
    let err = stderr_of(&mut rx);
    assert!(rx.wait().unwrap().success(), "receiver: {err}");
    let got = got.unwrap();
    let mut parts = got.split_whitespace();
    assert_eq!(parts.next(), Some(hex.as_str()), "frame changed on the way");
    assert_eq!(parts.next(), Some("Host"));
    assert_eq!(parts.next(), Some("timestamped"));
}

/// Reads lines until one contains `marker`; returns what follows it (`None` at end of output).
fn wait_for(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    marker: &str,
) -> Option<String> {
    for l in lines.by_ref() {
        // The harness may print `test helper ... ` before it on the same line.
        if let Some((_, rest)) = l.ok()?.split_once(marker) {
            return Some(rest.to_string());
        }
    }
    None
}

fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// Runs this test binary's `helper` test inside node `node` (`ip netns exec`), as `job`.
fn spawn_helper(tb: &Testbed, node: &str, job: &str) -> Result<Child> {
    let exe = std::env::current_exe()?;
    Ok(tb
        .command(node, exe)?
        .args(["--exact", "helper", "--nocapture", "--test-threads", "1"])
        .env(HELPER_ENV, job)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?)
}

/// Not a test of its own: when started by `spawn_helper()` inside a namespace it sends or receives one
/// raw frame on `eth0`; otherwise it does nothing.
#[test]
fn helper() {
    let Ok(job) = std::env::var(HELPER_ENV) else {
        return;
    };
    if let Some(dir) = job.strip_prefix("hold:") {
        let opts = testbed::Options {
            state_dir: dir.into(),
            ..testbed::Options::default()
        };
        let tb = Testbed::up(&Topology::Pair, &opts).unwrap();
        tb.down_on_termination_signal().unwrap();
        println!("IVNSEC-HELD {}", tb.prefix());
        std::thread::sleep(Duration::from_secs(30));
        panic!("no signal came");
    }
    let sock = RawSocket::open("eth0", ETH_P_IVNAE).unwrap();
    if job == "recv" {
        sock.enable_timestamps().unwrap();
        println!("IVNSEC-READY");
        let mut buf = [0u8; 2048];
        let meta = sock
            .recv(&mut buf, Some(Duration::from_secs(5)))
            .unwrap()
            .expect("a frame within 5 s");
        let hex: String = buf[..meta.len].iter().map(|b| format!("{b:02x}")).collect();
        let ts = if meta.timestamp.is_some() {
            "timestamped"
        } else {
            "no-timestamp"
        };
        println!("IVNSEC-FRAME {hex} {:?} {ts}", meta.packet_type);
        assert_eq!(meta.packet_type, PacketType::Host);
    } else if let Some(hex) = job.strip_prefix("send:") {
        let frame: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(sock.mac_address().unwrap(), frame[6..12]);
        assert_eq!(sock.send(&frame).unwrap(), frame.len());
    } else {
        panic!("unknown helper job {job}");
    }
}

#[test]
fn drop_tears_down_after_a_panic() {
    require_root!();
    let dir = TempDir::new("panic");
    let state_dir = dir.0.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let r = std::thread::spawn(move || {
        let tb = Testbed::up(
            &Topology::Pair,
            &testbed::Options {
                state_dir,
                ..testbed::Options::default()
            },
        )
        .unwrap();
        tx.send(tb.prefix().to_string()).unwrap();
        panic!("deliberate panic while the testbed is up");
    })
    .join();
    assert!(r.is_err());
    let prefix = rx.recv().unwrap();
    let _guard = PrefixGuard {
        prefix: prefix.clone(),
        state_dir: dir.0.clone(),
    };
    assert!(testbed::live_namespaces(&prefix).unwrap().is_empty());
}

#[test]
fn a_termination_signal_tears_down() {
    require_root!();
    let dir = TempDir::new("signal");
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", "helper", "--nocapture", "--test-threads", "1"])
        .env(HELPER_ENV, format!("hold:{}", dir.0.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let Some(prefix) = wait_for(&mut lines, "IVNSEC-HELD ") else {
        let _ = child.kill();
        panic!("holder: {}", stderr_of(&mut child));
    };
    let prefix = prefix.trim().to_string();
    let _guard = PrefixGuard {
        prefix: prefix.clone(),
        state_dir: dir.0.clone(),
    };
    assert_eq!(testbed::live_namespaces(&prefix).unwrap().len(), 3);
    ivnsec_net::sys::signal_process(child.id(), false).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{}", stderr_of(&mut child));
    assert!(testbed::live_namespaces(&prefix).unwrap().is_empty());
    assert!(testbed::load(&dir.0, &prefix).is_err());
}

#[test]
fn kept_testbed_survives_and_down_stops_processes_inside() {
    require_root!();
    let dir = TempDir::new("keep");
    let (tb, _guard) = up(Topology::Pair, &dir);
    let state = tb.keep();
    let prefix = state.prefix.clone();
    assert_eq!(testbed::live_namespaces(&prefix).unwrap().len(), 3);
    let listing = testbed::list(&dir.0).unwrap();
    assert!(listing.unreadable.is_empty());
    assert_eq!(listing.testbeds, vec![state.clone()]);
    // A long-running program inside a node is stopped by down.
    let mut sleeper = testbed::netns_command(state.namespace_of("ecu1").unwrap(), "sleep")
        .arg("30")
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let report = testbed::down(&prefix, &dir.0).unwrap();
    assert_eq!(report.removed_namespaces.len(), 3);
    assert!(report.stopped_processes >= 1, "{report:?}");
    let status = sleeper.wait().unwrap();
    assert!(!status.success());
    assert!(testbed::down(&prefix, &dir.0).unwrap().was_already_down());
}

#[test]
fn a_prefix_in_use_is_refused_and_left_alone() {
    require_root!();
    let dir = TempDir::new("inuse");
    let (tb, _guard) = up(Topology::Pair, &dir);
    let other = TempDir::new("inuse2");
    let opts = testbed::Options {
        prefix: Some(tb.prefix().to_string()),
        ..options(&other)
    };
    match Testbed::up(&Topology::Pair, &opts) {
        Err(Error::Usage(m)) => assert!(m.contains("in use"), "{m}"),
        other => panic!("{other:?}"),
    }
    // The refused attempt must not have removed the running testbed.
    assert_eq!(testbed::live_namespaces(tb.prefix()).unwrap().len(), 3);
    let bad = testbed::Options {
        prefix: Some("ivn-XYZ".to_string()),
        ..options(&other)
    };
    assert!(matches!(
        Testbed::up(&Topology::Pair, &bad),
        Err(Error::Usage(_))
    ));
}

/// A run killed with SIGKILL cannot tear its testbed down; the next `up` in the same state
/// directory removes it (its creator is gone, it was never kept), while a testbed kept on
/// purpose (`ivnsec testbed up`) with a dead creator stays.
#[test]
fn up_removes_a_dead_runs_testbed_and_leaves_kept_ones() {
    require_root!();
    let dir = TempDir::new("reap");
    // A pid that no longer runs.
    let mut c = Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    let as_dead = |prefix: &str| {
        let f = dir.0.join(format!("{prefix}.json"));
        let text = std::fs::read_to_string(&f).unwrap();
        let key = format!("\"created_by_pid\": {}", std::process::id());
        assert!(text.contains(&key), "{text}");
        std::fs::write(
            &f,
            text.replace(&key, &format!("\"created_by_pid\": {dead}")),
        )
        .unwrap();
    };
    // Kept on purpose, its creator gone too.
    let (kept, g2) = up(Topology::Pair, &dir);
    let k = kept.keep().prefix;
    as_dead(&k);
    // The abandoned run: no Drop runs, as after SIGKILL.
    let (abandoned, g1) = up(Topology::Pair, &dir);
    let a = abandoned.prefix().to_string();
    std::mem::forget(abandoned);
    as_dead(&a);
    assert!(!testbed::live_namespaces(&a).unwrap().is_empty());
    let (next, g3) = up(Topology::Pair, &dir);
    assert!(
        testbed::live_namespaces(&a).unwrap().is_empty(),
        "{a} left behind"
    );
    assert!(!dir.0.join(format!("{a}.json")).exists());
    assert!(
        !testbed::live_namespaces(&k).unwrap().is_empty(),
        "{k} was kept"
    );
    drop(next);
    drop((g1, g2, g3));
    assert!(testbed::live_namespaces(&k).unwrap().is_empty());
}
