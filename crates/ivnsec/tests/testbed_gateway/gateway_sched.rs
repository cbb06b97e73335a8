//! How `ivnsec gateway` runs its data plane: socket buffers as `--rcvbuf-mib` asks,
//! SCHED_FIFO under `--realtime`, and adaptive scheduling that raises the data plane only
//! while it is backlogged.

use crate::common::net::{assert_ping, testbed};
use crate::common::proc::wait_for_or;
use crate::common::{TempDir, keygen, text};
use ivnsec_net::topology::Topology;

use crate::gateway::*;

/// `--rcvbuf-mib` sets both ports' kernel receive buffers: the status reports what the kernel
/// granted (SO_RCVBUF read back: twice the size asked, its bookkeeping share included), and
/// frames still cross; out of 1 … 1024 it is a usage error naming the option.
#[test]
fn the_socket_buffers_are_what_rcvbuf_mib_asks_for() {
    require_root!();
    let d = TempDir::new("gwrb");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (g1, g2) = (Gw::new(&tb, &d, "gw1"), Gw::new(&tb, &d, "gw2"));
    for bad in ["0", "1025", "x"] {
        let o = g1
            .args(
                &["--keys", k, "--peer", MAC_GW2_PROT],
                &["--rcvbuf-mib", bad],
            )
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("--rcvbuf-mib"),
            "{}",
            text(&o.stderr)
        );
    }
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &["--rcvbuf-mib", "16"],
    );
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let st = g1.status();
    assert_eq!(st["socket_buffers"]["plain"], 32 << 20, "{st}");
    assert_eq!(st["socket_buffers"]["protected"], 32 << 20, "{st}");
    // The default: 4 MiB asked.
    let st = g2.status();
    assert_eq!(st["socket_buffers"]["plain"], 8 << 20, "{st}");
    assert_ping(&ns(&tb, "ecu1"), "10.77.0.2", &["-c", "3"]);
    assert_eq!(p1.stop_json().0, Some(0));
    assert_eq!(p2.stop_json().0, Some(0));
}

/// The scheduling policy of every thread of process `pid`: (policy, priority) from
/// `/proc/PID/task/TID/stat` (fields 40 and 41: rt_priority, policy).
fn thread_policies(pid: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap();
        // The fields after the command (which may hold spaces) start behind its ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // `rest` starts at field 3 (state): field n is f[n - 3].
        out.push((f[41 - 3].parse().unwrap(), f[40 - 3].parse().unwrap()));
    }
    out.sort_unstable();
    out
}

/// `--realtime PRIO` puts the two data-plane threads and the two crypto workers
/// (`--crypto-workers 2`) under SCHED_FIFO at PRIO (policy 1 in `/proc`), the others stay
/// normal (policy 0), and frames cross; out of 1 … 99 it is a usage error naming the option.
#[test]
fn realtime_puts_the_data_plane_threads_under_sched_fifo() {
    require_root!();
    let d = TempDir::new("gwrt");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (g1, g2) = (Gw::new(&tb, &d, "gw1"), Gw::new(&tb, &d, "gw2"));
    for bad in ["0", "100", "x"] {
        let o = g1
            .args(&["--keys", k, "--peer", MAC_GW2_PROT], &["--realtime", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("--realtime"),
            "{}",
            text(&o.stderr)
        );
    }
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &["--realtime", "10", "--crypto-workers", "2"],
    );
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let st = g1.status();
    assert_eq!(st["realtime"], 10, "{st}");
    assert_eq!(st["crypto_workers"], 2, "{st}");
    let pid = st["pid"].as_u64().unwrap();
    // The workers set their policy as they start: give them a moment.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut pol = thread_policies(pid);
    while pol.iter().filter(|p| **p == (1, 10)).count() < 4 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(50));
        pol = thread_policies(pid);
    }
    assert_eq!(
        pol.iter().filter(|p| **p == (1, 10)).count(),
        4,
        "four SCHED_FIFO threads at 10 (two data-plane threads, two workers): {pol:?}"
    );
    assert!(
        pol.iter().all(|p| *p == (1, 10) || *p == (0, 0)),
        "the others normal: {pol:?}"
    );
    assert_eq!(st["scheduling"]["mode"], "realtime", "{st}");
    let st2 = g2.status();
    assert!(st2["realtime"].is_null(), "{st2}");
    let pol2 = thread_policies(st2["pid"].as_u64().unwrap());
    assert!(pol2.iter().all(|p| *p == (0, 0)), "{pol2:?}");
    assert_ping(&ns(&tb, "ecu1"), "10.77.0.2", &["-c", "3"]);
    assert_eq!(p1.stop_json().0, Some(0));
    assert_eq!(p2.stop_json().0, Some(0));
}

/// `--scheduling adaptive`: idle, every thread runs under the normal policy; a flood (iperf3
/// UDP, unlimited rate) backlogs the data-plane threads, which go to SCHED_FIFO (counted in
/// `frames.backlog_raises`) and back to the normal policy once the flood has passed. The
/// default, normal scheduling, never raises them; `--scheduling normal --realtime N` is a
/// usage error naming both options, a linger time over 1000 ms one naming `--linger-ms`, a
/// raise time over 1 s one naming `--raise-after-us`.
#[test]
fn adaptive_scheduling_raises_the_data_plane_only_while_backlogged() {
    require_root!();
    let d = TempDir::new("gwad");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (g1, g2) = (Gw::new(&tb, &d, "gw1"), Gw::new(&tb, &d, "gw2"));
    // Usage errors (exit 2), each naming the options at fault.
    for (opts, named) in [
        (
            &["--scheduling", "normal", "--realtime", "5"][..],
            &["--scheduling normal", "--realtime"][..],
        ),
        (&["--linger-ms", "1001"], &["--linger-ms"]),
        (
            &["--scheduling", "adaptive", "--raise-after-us", "1000001"],
            &["--raise-after-us"],
        ),
    ] {
        let o = g1
            .args(&["--keys", k, "--peer", MAC_GW2_PROT], opts)
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{opts:?}: {err}");
        for n in named {
            assert!(err.contains(n), "{opts:?}: {err}");
        }
    }
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &["--scheduling", "adaptive"],
    );
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let st = g1.status();
    assert_eq!(st["scheduling"]["mode"], "adaptive", "{st}");
    assert_eq!(st["scheduling"]["priority"], 10, "{st}");
    assert_eq!(st["scheduling"]["raise_after_us"], 1000.0, "{st}");
    assert!(st["realtime"].is_null(), "{st}");
    let pid = st["pid"].as_u64().unwrap();
    assert!(thread_policies(pid).iter().all(|p| *p == (0, 0)));
    let (e1, e2) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"));
    iperf3(&e2, &e1, "10.77.0.2", &["-u", "-b", "0", "-l", "1472"]);
    let st = g1.status();
    assert!(st["frames"]["backlog_raises"].as_u64().unwrap() > 0, "{st}");
    assert!(
        st["frames"]["tap_in"].as_u64().unwrap() > 1000,
        "the flood crossed gw1: {st}"
    );
    // Idle again: back under the normal policy.
    wait_for_or(
        5,
        "gw1's threads back under the normal policy",
        || thread_policies(pid).iter().all(|p| *p == (0, 0)),
        || format!("{:?}", thread_policies(pid)),
    );
    let st2 = g2.status();
    assert_eq!(st2["scheduling"]["mode"], "normal", "{st2}");
    assert_eq!(st2["frames"]["backlog_raises"], 0, "{st2}");
    assert!(st2["frames"]["tap_out"].as_u64().unwrap() > 1000, "{st2}");
    assert_ping(&e1, "10.77.0.2", &["-c", "3"]);
    assert_eq!(p1.stop_json().0, Some(0));
    assert_eq!(p2.stop_json().0, Some(0));
}
