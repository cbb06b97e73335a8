//! The checks of `ivnsec camera` reports shared by its loopback runs (cli) and its testbed run
//! (testbed_pair): every frame accounted for, the delays consistent, the verdict matching them.

use std::process::Output;

use serde_json::Value;

use super::json::{u64_of, with_codes};

/// Checks one result's accounting; returns whether it passed.
pub fn check_result(r: &Value, cameras: u64, frames_per_camera: u64, reliable: bool) -> bool {
    assert_eq!(u64_of(r, "cameras"), cameras);
    let (sent, received, lost) = (
        u64_of(r, "frames_sent"),
        u64_of(r, "frames_received"),
        u64_of(r, "lost"),
    );
    assert_eq!(sent, cameras * frames_per_camera, "{r}");
    assert_eq!(received + lost, sent, "received + lost = sent: {r}");
    if reliable {
        // TCP on an idle path: every frame arrives whole and verifies, however late.
        assert_eq!(received, sent, "{r}");
    } else {
        assert!(received > 0, "{r}");
    }
    // Nothing was rejected: no verify failure, no bad segment.
    assert!(
        r["drops"].as_object().unwrap().is_empty(),
        "drops: {}",
        r["drops"]
    );
    let d = &r["delay_us"];
    let q: Vec<f64> = ["min", "p1", "p25", "p50", "p75", "p99", "max"]
        .iter()
        .map(|k| {
            d[*k]
                .as_f64()
                .unwrap_or_else(|| panic!("delay_us.{k}: {r}"))
        })
        .collect();
    assert!(
        q.windows(2).all(|w| w[0] <= w[1]),
        "percentiles ordered: {d}"
    );
    assert!(q[0] > 0.0, "a delay is positive: {d}");
    assert_eq!(u64_of(d, "count"), received);
    let late = u64_of(r, "past_deadline");
    assert!(late <= received);
    // The maximum decides whether any frame was late.
    let deadline_us = r["deadline_ms"].as_f64().unwrap() * 1e3;
    assert_eq!(late > 0, q[6] > deadline_us, "{r}");
    assert!(u64_of(r, "past_deadline_from_due") >= late);
    let per = r["per_camera"].as_array().unwrap();
    assert_eq!(per.len() as u64, cameras);
    assert_eq!(
        per.iter().map(|c| u64_of(c, "received")).sum::<u64>(),
        received
    );
    assert_eq!(per.iter().map(|c| u64_of(c, "sent")).sum::<u64>(), sent);
    let services: Vec<u64> = per.iter().map(|c| u64_of(c, "service")).collect();
    assert_eq!(
        services,
        (1..=cameras).map(|i| 0x4300 + i).collect::<Vec<_>>()
    );
    for k in ["sender_pct", "receiver_pct", "system_pct"] {
        let p = r["cpu"][k].as_f64().unwrap();
        assert!((0.0..=100.5).contains(&p), "cpu.{k} = {p}");
    }
    assert!(r["goodput_mbps"].as_f64().unwrap() > 0.0);
    let passed = r["passed"].as_bool().unwrap();
    assert_eq!(
        passed,
        lost == 0 && late == 0 && u64_of(r, "past_deadline_from_due") == 0,
        "{r}"
    );
    passed
}

/// Checks a whole `--json` report: results per count × level in order, nosec first, the CPU
/// increase only where a nosec run of the same count exists, and the exit code from the verdicts.
pub fn check_report(
    o: &Output,
    counts: &[u64],
    levels: &[&str],
    fpc: u64,
    reliable: bool,
) -> Value {
    let v = with_codes("camera", o, &[0, 1]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), counts.len() * levels.len(), "{v}");
    let mut all = true;
    let mut i = 0;
    for &n in counts {
        for &level in levels {
            let r = &results[i];
            i += 1;
            assert_eq!(r["level"], level);
            all &= check_result(r, n, fpc, reliable);
            let inc = &r["cpu"]["increase_over_nosec"];
            if level == "nosec" {
                assert!(r["suite"].is_null());
                assert!(inc.is_null());
            } else {
                assert_eq!(r["suite"], "aes128-gcm");
                assert_eq!(inc.is_null(), !levels.contains(&"nosec"), "{r}");
            }
        }
    }
    assert_eq!(o.status.code(), Some(if all { 0 } else { 1 }));
    v
}
