//! The checks of `ivnsec underload` and `playback` reports (`underload` of cli and of
//! testbed_ecus): every figure present and consistent with the others, the exit code agreeing
//! with the verdict.

use std::process::Output;

use serde_json::Value;

use super::json::{f64_at, u64_at};
use super::text;

/// The report of a run that completed (exit 0: passed, 1: a verdict failed).
pub fn report_of(o: &Output) -> Value {
    let code = o.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "exit {code:?}\nstdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)));
    assert_eq!(
        v["passed"].as_bool(),
        Some(code == Some(0)),
        "exit code and verdict disagree: {v}"
    );
    v
}

/// Every figure of one profile's run is present and consistent.
pub fn check_run(r: &Value, requirement_us: f64) {
    let sent = u64_at(r, &["messages", "sent"]);
    let received = u64_at(r, &["messages", "received"]);
    let lost = u64_at(r, &["messages", "lost"]);
    assert!(sent > 0 && received > 0, "{r}");
    assert_eq!(sent, received + lost, "sent = received + lost: {r}");
    // Percentiles in order, all from the received messages.
    let ow = &r["one_way"];
    assert_eq!(u64_at(ow, &["count"]), received, "{r}");
    let keys = ["min_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us"];
    let vals: Vec<f64> = keys.iter().map(|k| f64_at(ow, &[k])).collect();
    assert!(vals.windows(2).all(|w| w[0] <= w[1]), "unordered {vals:?}");
    assert!(vals[0] > 0.0, "a one-way delay of 0: {r}");
    let mean = f64_at(ow, &["mean_us"]);
    assert!(vals[0] <= mean && mean <= vals[5], "{r}");
    // Replies: every reply_every-th message received was answered; the sensor got at most those.
    let every = u64_at(r, &["replies", "every"]);
    let replied = u64_at(r, &["replies", "sent"]);
    assert!(replied <= sent / every, "{r}");
    assert!(u64_at(r, &["replies", "received"]) <= replied, "{r}");
    if u64_at(r, &["replies", "received"]) > 0 {
        let rtt = &r["replies"]["rtt"];
        let half = &r["replies"]["half_rtt"];
        assert!(f64_at(rtt, &["p50_us"]) <= f64_at(rtt, &["max_us"]));
        assert!((f64_at(half, &["max_us"]) - f64_at(rtt, &["max_us"]) / 2.0).abs() < 0.002);
    }
    // Units: every message took the same number of fragments of at most unit_payload bytes.
    assert!(u64_at(r, &["unit_payload"]) <= 1500, "{r}");
    // The verdict follows from the figures.
    let v = &r["verdict"];
    assert_eq!(f64_at(v, &["requirement_us"]), requirement_us);
    assert_eq!(u64_at(v, &["lost"]), lost);
    assert_eq!(u64_at(v, &["allowed"]), sent / 1000);
    let passed = u64_at(v, &["late"]) + lost <= sent / 1000;
    assert_eq!(v["passed"].as_bool(), Some(passed), "{r}");
    // CPU figures are shares of the machine.
    for k in ["sender_pct", "receiver_pct", "system_pct"] {
        let p = f64_at(r, &["cpu", k]);
        assert!((0.0..=100.5).contains(&p), "cpu.{k} = {p}");
    }
    assert!(f64_at(r, &["cpu", "sender_ns_per_byte"]) > 0.0, "{r}");
}
