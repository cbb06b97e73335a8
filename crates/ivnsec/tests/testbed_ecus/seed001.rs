//! Seed 001 as a plan: a tiny measurement on a `cascade:1` testbed of its own (root). The
//! preset on loopback and the bad tables: `cli/seed001.rs`.

use crate::common::seed001::figures;
use crate::common::{TempDir, ivnsec, json, text};
use serde_json::Value;
use std::process::Command;

/// As root: a tiny measurement (HMAC-SHA1, seed 001's 80-byte frame, `cascade:1`, 5 base
/// periods of 10 ms with GP 0.2 ms) lands in the report beside Tables 7 and 11, the capture
/// holds every frame, and the testbed is gone afterwards.
#[test]
fn a_tiny_measurement_on_cascade_1() {
    require_root!();
    let d = TempDir::new("seed001-run");
    let plan = d.path("plan.toml");
    std::fs::write(
        &plan,
        "[[tdma]]\nprofiles = [\"hmac-sha1\"]\nframes = [60]\nswitches = [1]\nperiods = 5\n",
    )
    .unwrap();
    let out = d.path("report");
    let pcap = d.path("run.pcap");
    let o = ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let code = o.status.code();
    assert!(
        matches!(code, Some(0 | 1)),
        "exit {code:?}: {}",
        text(&o.stderr)
    );
    let v = json::summary(&out);
    let m = &v["experiments"]["tdma"][0]["measured"];
    assert_eq!(m.as_array().unwrap().len(), 1, "{m}");
    let m = &m[0];
    assert_eq!(
        (&m["profile"], &m["frame_bytes"], &m["switches"]),
        (&Value::from("hmac-sha1"), &Value::from(80), &Value::from(1))
    );
    // Eq. 9 for the run's slot: ⌊10 ms / (6.4 µs + 0.2 ms)⌋ = 48.
    assert_eq!(m["nf_max"], 48);
    let r = &m["run"];
    assert_eq!(
        (r["sent"].as_u64(), r["lost"].as_u64()),
        (Some(5), Some(0)),
        "{r}"
    );
    let met = r["schedule_met"].as_bool().unwrap();
    assert_eq!(met, code == Some(0), "the exit code follows the verdict");
    let tx = m["tx_max_us"].as_f64().unwrap();
    assert!(tx.is_finite() && tx > 0.0, "{m}");
    // Beside Table 7's "Measured, 80 bytes" and Table 11's 80-byte, one-switch column.
    let t7 = figures(&v, 7);
    let nf7 = t7
        .iter()
        .find(|f| f.0 == "Measured, 80 bytes" && f.1 == "NF_max")
        .unwrap();
    assert_eq!(nf7.4.as_str().unwrap(), r["nf_max_tt"].to_string());
    let t11 = figures(&v, 11);
    let nf11 = t11
        .iter()
        .find(|f| f.0 == "80 bytes, N_switch = 1" && f.1 == "NF_max")
        .unwrap();
    assert_eq!(
        nf11.4.as_str().unwrap(),
        m["nf_max_measured_tx"].to_string()
    );
    assert!(
        t7.iter()
            .filter(|f| f.0 == "Measured, 60 bytes")
            .all(|f| f.4.is_null()),
        "nothing stands for the 60-byte column"
    );
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("hmac-sha1, 80 B, cascade:1, 5 BP"), "{md}");
    assert!(
        md.contains("| tdma hmac-sha1 80 B ×1 switch | 5 | 5 | 0 |"),
        "{md}"
    );
    // The capture: 24-byte header, then 5 records of 16 + 80 bytes.
    assert_eq!(std::fs::metadata(&pcap).unwrap().len(), 24 + 5 * (16 + 80));
    let prefix = r["testbed"].as_str().unwrap();
    assert!(prefix.starts_with("ivn-"), "{prefix}");
    assert!(d.leftover_testbeds().is_empty(), "testbed not removed");
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !text(&ns.stdout).contains(prefix),
        "namespaces of {prefix} left: {}",
        text(&ns.stdout)
    );
}
