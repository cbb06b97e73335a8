//! `ivnsec tdma run`: a small schedule on a `cascade:2` testbed of its own (root). Schedules,
//! bad input and the run without root: `cli/tdma_run.rs`.

use std::process::Command;

use crate::common::tdma::TWO_FLOWS;
use crate::common::{TempDir, ivnsec, json, text, write};

/// A small schedule for a few base periods on `cascade:2`: every frame arrives, the figures
/// are finite, the capacity found stays within eq. 9, the capture holds every frame, and the
/// testbed is gone afterwards.
#[test]
fn run_on_cascade_2() {
    require_root!();
    let d = TempDir::new("tdma-run");
    let f = write(&d, "flows.toml", TWO_FLOWS);
    let pcap = d.path("tdma.pcap");
    // A generous guard period (1 ms per switch), so a loaded machine rarely misses a slot.
    let o = ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--flows",
            &f,
            "--bp",
            "10ms",
            "--gp",
            "1ms",
            "--topology",
            "cascade:2",
            "--profile",
            "hmac-sha256",
            "--periods",
            "10",
            "--json",
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
    let v = json::parse("tdma", &o);
    assert_eq!(v["topology"], "cascade:2");
    assert_eq!(v["profile"], "hmac-sha256");
    let slots = v["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 2);
    for s in slots {
        assert_eq!(s["sent"], 10, "{s}");
        assert_eq!(s["arrived"], 10, "every frame arrives: {s}");
        assert_eq!(s["lost"], 0, "{s}");
        // 100-byte frame: 26 + 2 + payload + 32-byte HMAC-SHA256 tag (docs/wire-ivnae.md).
        assert_eq!(s["payload"], 40, "{s}");
        for fig in ["send_error_us", "owd_us"] {
            for k in ["p50", "p99", "max"] {
                let x = s[fig][k].as_f64().unwrap_or(f64::NAN);
                assert!(x.is_finite() && x >= 0.0, "{fig}.{k} = {x}: {s}");
            }
            assert_eq!(s[fig]["count"], 10);
        }
        // Both switches forwarded every frame and the probes saw it.
        let sw: Vec<&str> = s["switch_diff_us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["switch"].as_str().unwrap())
            .collect();
        let want = if s["from"] == "ecu1" {
            ["sw0", "sw1"]
        } else {
            ["sw1", "sw0"]
        };
        assert_eq!(sw, want, "{s}");
        for d in s["switch_diff_us"].as_array().unwrap() {
            assert_eq!(d["count"], 10, "{d}");
            assert!(d["mean"].as_f64().unwrap().is_finite(), "{d}");
        }
    }
    assert_eq!(v["lost"], 0);
    let met = v["schedule_met"].as_bool().unwrap();
    assert_eq!(met, code == Some(0), "exit code follows the verdict");
    assert_eq!(met, v["misses"] == 0);
    // Eq. 9: ⌊10 ms / (8 µs + 1 ms × 2)⌋ = 4; the capacity found is at most that.
    let c = &v["capacity"];
    assert_eq!(c["nf_max"], 4, "{c}");
    let no_miss = c["nf_no_miss"].as_u64().unwrap();
    assert!(no_miss <= 4, "{c}");
    assert!(!c["steps"].as_array().unwrap().is_empty());
    assert!(v["max_tt_us"].as_f64().unwrap() > 0.0);
    // The capture: 24-byte header, then 20 records of 16 + 100 bytes.
    assert_eq!(
        std::fs::metadata(&pcap).unwrap().len(),
        24 + 20 * (16 + 100)
    );
    // Cleaned up: no state file, no namespace of its prefix.
    let prefix = v["testbed"].as_str().unwrap();
    assert!(prefix.starts_with("ivn-"), "{prefix}");
    assert!(d.leftover_testbeds().is_empty(), "testbed not removed");
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !text(&ns.stdout).contains(prefix),
        "namespaces of {prefix} left: {}",
        text(&ns.stdout)
    );
}
