//! The checks of `ivnsec throughput` reports (`throughput` and `someip_tcp` of cli and of
//! testbed_ecus): the fields every run has, and the byte times of a TCP stream.

use serde_json::Value;

/// The byte times of a TCP stream of `n` bytes: segments of 1448 bytes (1500 − IPv4 20 − TCP
/// with timestamps 32), each framed by Ethernet 14 + IPv4 20 + TCP 32 + FCS 4 + preamble 8 +
/// gap 12 (the last, short one padded to a 64-byte frame).
pub fn tcp_wire(n: usize) -> usize {
    let seg = |b: usize| (14 + 20 + 32 + b + 4).max(64) + 20;
    (n / 1448) * seg(1448) + if n % 1448 > 0 { seg(n % 1448) } else { 0 }
}

/// TCP is reliable and every message verifies: nothing lost, nothing rejected, the message is
/// the SOME/IP header 16 + key id 1 + counter 8 + payload + tag 16 (docs/wire-someip-sec.md).
pub fn check_tcp_run(v: &Value, profile: &str, senders: u64) {
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

pub fn check_common(v: &Value, profile: &str, payload: u64) {
    assert_eq!(v["profile"], profile);
    assert_eq!(v["payload"], payload);
    for k in [
        "goodput_mbps",
        "frames_per_s",
        "loss",
        "theoretical_mbps",
        "efficiency",
        "sent",
        "delivered",
        "lost",
    ] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    for k in ["sender_pct", "receiver_pct", "system_pct"] {
        assert!(v["cpu"][k].as_f64().is_some(), "missing cpu.{k}: {v}");
    }
    let (sent, delivered, lost) = (
        v["sent"].as_u64().unwrap(),
        v["delivered"].as_u64().unwrap(),
        v["lost"].as_u64().unwrap(),
    );
    assert!(delivered > 0, "nothing delivered: {v}");
    assert_eq!(sent, delivered + lost, "sent = delivered + lost: {v}");
    assert!(v["goodput_mbps"].as_f64().unwrap() > 0.0);
    let loss = v["loss"].as_f64().unwrap();
    assert!((loss - lost as f64 / sent as f64).abs() < 1e-12);
    let per: u64 = v["per_sender"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["delivered"].as_u64().unwrap())
        .sum();
    assert_eq!(per, delivered);
}
