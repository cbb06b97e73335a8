//! `ivnsec throughput --tcp`: secured SOME/IP with 64 KiB payloads on TCP (seed 003 Fig. 5c and
//! 6), over loopback (no root), on a testbed of its own beside iperf3 TCP (root; skipped with a
//! reason otherwise), and bad input.

use std::process::Output;

use serde_json::Value;

use crate::common::{TempDir, ivnsec, text};

fn json_of(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)))
}

/// The byte times of a TCP stream of `n` bytes: segments of 1448 bytes (1500 − IPv4 20 − TCP
/// with timestamps 32), each framed by Ethernet 14 + IPv4 20 + TCP 32 + FCS 4 + preamble 8 +
/// gap 12 (the last, short one padded to a 64-byte frame).
fn tcp_wire(n: usize) -> usize {
    let seg = |b: usize| (14 + 20 + 32 + b + 4).max(64) + 20;
    (n / 1448) * seg(1448) + if n % 1448 > 0 { seg(n % 1448) } else { 0 }
}

/// TCP is reliable and every message verifies: nothing lost, nothing rejected, the message is
/// the SOME/IP header 16 + key id 1 + counter 8 + payload + tag 16 (docs/wire-someip-sec.md).
fn check_tcp_run(v: &Value, profile: &str, senders: u64) {
    assert_eq!(v["profile"], profile);
    assert_eq!(v["payload"], 65536);
    assert_eq!(v["tcp"], true, "{v}");
    assert_eq!(v["senders"], senders);
    let overhead = if profile == "someip-nosec" {
        16
    } else {
        16 + 1 + 8 + 16
    };
    assert_eq!(v["frame_bytes"], 65536 + overhead);
    assert_eq!(v["wire_bytes"], tcp_wire(65536 + overhead) as u64);
    let (sent, delivered) = (
        v["sent"].as_u64().unwrap(),
        v["delivered"].as_u64().unwrap(),
    );
    assert!(delivered > 0, "{v}");
    assert_eq!(sent, delivered, "{v}");
    assert_eq!(v["lost"], 0);
    assert!(v["rejected"].as_object().unwrap().is_empty(), "{v}");
    let per = v["per_sender"].as_array().unwrap();
    assert_eq!(per.len() as u64, senders);
    assert!(per.iter().all(|s| s["delivered"].as_u64().unwrap() > 0));
    let gbps = v["goodput_mbps"].as_f64().unwrap();
    let secs = v["seconds"].as_f64().unwrap();
    let expect = delivered as f64 * 65536.0 * 8.0 / secs / 1e6;
    // Each sender over its own window, summed: at least all of them over the joint window.
    assert!(gbps >= expect * 0.999, "{gbps} vs {expect}");
}

#[test]
fn loopback_two_senders_deliver_every_message() {
    let d = TempDir::new("tcp-lo");
    for profile in ["someip-aes128-gcm/conf", "someip-nosec"] {
        let o = ivnsec(
            &d,
            &[
                "throughput",
                "--tcp",
                "--on",
                "loopback",
                "--profile",
                profile,
                "--payload",
                "65536",
                "--senders",
                "2",
                "--seconds",
                "0.5",
                "--no-baseline",
                "--provider",
                "portable",
                "--json",
            ],
        );
        let v = json_of(&o);
        check_tcp_run(&v, profile, 2);
        assert!(
            v["transport"]
                .as_str()
                .unwrap()
                .starts_with("TCP on loopback")
        );
        assert!(v["baseline"].as_object().unwrap().is_empty());
    }
}

/// On a testbed, shaped to 1 Gb/s: our goodput is near the TCP ceiling of the shaped link
/// (65,536 payload bytes per message over its segments' byte times), iperf3 TCP runs on the
/// same path in the same invocation when installed, and CPU is given per role.
#[test]
fn testbed_shaped_beside_iperf3_tcp() {
    require_root!();
    let d = TempDir::new("tcp-tb");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--tcp",
            "--on",
            "testbed",
            "--profile",
            "someip-aes128-gcm/auth",
            "--payload",
            "65536",
            "--seconds",
            "1",
            "--rate",
            "1G",
            "--json",
        ],
    );
    let v = json_of(&o);
    check_tcp_run(&v, "someip-aes128-gcm/auth", 1);
    let t = v["theoretical_mbps"].as_f64().unwrap();
    assert!(
        (t - 65536.0 / tcp_wire(65577) as f64 * 1e3).abs() < 1e-6,
        "{t}"
    );
    let e = v["efficiency"].as_f64().unwrap();
    assert!(e > 0.5 && e <= 1.02, "efficiency {e}: {v}");
    assert!(v["transport"].as_str().unwrap().contains("TCP connection"));
    let roles: Vec<&str> = v["cpu"]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["consumer", "sensor1", "pacing", "switch"]);
    // No `plain` run over TCP.
    assert!(v["baseline"].get("plain").is_none());
    let have_iperf3 = std::process::Command::new("iperf3")
        .arg("--version")
        .output()
        .is_ok();
    if have_iperf3 {
        let i = &v["baseline"]["iperf3"];
        assert_eq!(i["transport"], "tcp", "{v}");
        for key in ["unlimited", "shaped"] {
            assert!(i[key]["goodput_mbps"].as_f64().unwrap() > 0.0, "{key}: {i}");
            assert!(!i[key]["command"].as_str().unwrap().contains("-u"));
            assert!(i[key]["command"].as_str().unwrap().contains("-l 65536"));
            assert!(i[key]["system_pct"].as_f64().is_some());
            assert!(i[key]["ratio"].as_f64().is_some());
        }
    } else {
        eprintln!("iperf3 not installed: its TCP baseline is not checked");
    }
    assert!(d.leftover_testbeds().is_empty());
}

#[test]
fn tcp_bad_input_is_a_usage_error() {
    let d = TempDir::new("tcp-bad");
    let base = [
        "throughput",
        "--tcp",
        "--on",
        "loopback",
        "--seconds",
        "0.2",
    ];
    let pcap = d.path("x.pcap");
    let cases: [(&[&str], &str); 3] = [
        (&["--profile", "aes128-gcm", "--payload", "64"], "someip"),
        (
            &["--profile", "someip-nosec", "--payload", "2000000"],
            "1048576",
        ),
        (
            &[
                "--profile",
                "someip-nosec",
                "--payload",
                "65536",
                "--pcap",
                pcap.to_str().unwrap(),
            ],
            "tcpdump",
        ),
    ];
    for (args, needle) in cases {
        let mut all: Vec<&str> = base.to_vec();
        all.extend_from_slice(args);
        let o = ivnsec(&d, &all);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Without --tcp a 64 KiB SOME/IP payload does not fit a datagram on the MTU.
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "loopback",
            "--profile",
            "someip-nosec",
            "--payload",
            "65536",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let help = text(&ivnsec(&d, &["throughput", "--help"]).stdout);
    assert!(
        help.contains("--tcp") && help.contains("--payload 65536"),
        "{help}"
    );
}
