//! `ivnsec underload` and `playback` on a `sensors:1` testbed of their own (root). Loopback and
//! bad input: `cli/underload.rs`.

use std::process::Command;

use crate::common::json::u64_at;
use crate::common::underload::{check_run, report_of};
use crate::common::{TempDir, ivnsec, text};

/// Reads a capture with our reader: (records, longest frame).
fn read_capture(p: &std::path::Path) -> (usize, usize) {
    let mut r = ivnsec_net::pcap::PcapReader::open(p).unwrap();
    let (mut n, mut longest) = (0, 0);
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        n += 1;
        longest = longest.max(rec.data.len());
    }
    (n, longest)
}

#[test]
fn testbed_run_delivers_every_message_beside_sockperf() {
    require_root!();
    let d = TempDir::new("ul-tb");
    let pcap = d.path("ul.pcap");
    let o = ivnsec(
        &d,
        &[
            "underload",
            "--on",
            "testbed",
            "--profile",
            "macsec-gcm-aes-128",
            "--profile",
            "esp-null-hmac-sha256",
            "--seconds",
            "2",
            "--mps",
            "300",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let v = report_of(&o);
    assert!(
        v["transport"].as_str().unwrap().contains("sensors:1"),
        "{v}"
    );
    let runs = v["runs"].as_array().unwrap();
    // The plain run of the same invocation comes first.
    let names: Vec<&str> = runs
        .iter()
        .map(|r| r["profile"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["plain", "macsec-gcm-aes-128", "esp-null-hmac-sha256"]
    );
    for r in runs {
        check_run(r, 2000.0);
        // An idle switch between two namespaces: every message arrives, nothing is rejected.
        assert_eq!(u64_at(r, &["messages", "sent"]), 600, "{r}");
        assert_eq!(u64_at(r, &["messages", "lost"]), 0, "{r}");
        assert_eq!(u64_at(r, &["messages", "duplicates"]), 0, "{r}");
        assert!(r["rejected"].as_object().unwrap().is_empty(), "{r}");
        assert_eq!(u64_at(r, &["replies", "sent"]), 6, "{r}");
        // 24,938 bytes take 17 plain units, 18 protected ones (docs/fragmentation.md).
        let per = if r["profile"] == "plain" { 17 } else { 18 };
        assert_eq!(u64_at(r, &["units_per_message"]), per, "{r}");
        assert_eq!(u64_at(r, &["units_sent"]), 600 * per, "{r}");
        assert_eq!(u64_at(r, &["units_received"]), 600 * per, "{r}");
        if r["profile"] != "plain" {
            assert!(
                r["cpu"]["increase_over_plain"]["system_pct"].is_f64(),
                "{r}"
            );
        }
        // The capture of this profile: the first 1000 units, each one full frame in the MTU.
        let name = format!("ul.pcap.{}", r["profile"].as_str().unwrap());
        let file = d.path(&name);
        let (n, longest) = read_capture(&file);
        assert_eq!(n, 1000, "{name}");
        assert!(longest <= 1514, "{name}: {longest}");
        if Command::new("tshark").arg("--version").output().is_ok() {
            let t = Command::new("tshark")
                .args(["-r", file.to_str().unwrap(), "-c", "5"])
                .output()
                .unwrap();
            assert!(t.status.success(), "tshark: {}", text(&t.stderr));
            let out = text(&t.stdout);
            let want = match r["profile"].as_str().unwrap() {
                "macsec-gcm-aes-128" => "MACSEC",
                "esp-null-hmac-sha256" => "ESP",
                _ => "",
            };
            assert!(out.lines().count() == 5 && out.contains(want), "{out}");
        }
    }
    if Command::new("sockperf").arg("--version").output().is_ok() {
        let s = &v["baseline"]["sockperf"];
        assert!(s["half_rtt_p50_us"].as_f64().unwrap() > 0.0, "{v}");
        assert!(s["command"].as_str().unwrap().contains("under-load"));
        assert!(s["ours_plain_half_rtt_p50_us"].as_f64().is_some(), "{s}");
    }
    assert!(d.leftover_testbeds().is_empty(), "testbed not removed");
}

#[test]
fn testbed_playback_of_the_example_timeline() {
    require_root!();
    let d = TempDir::new("pb-tb");
    let timeline = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/lidar-playback.csv"
    );
    let o = ivnsec(
        &d,
        &[
            "playback",
            "--on",
            "testbed",
            "--profile",
            "aes128-gcm",
            "--timeline",
            timeline,
            "--json",
        ],
    );
    let v = report_of(&o);
    let s = &v["settings"]["timeline_stats"];
    assert_eq!(s["messages"], 1940);
    assert_eq!(s["adjusted_for_sockperf"], 0);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        check_run(r, 2000.0);
        assert_eq!(u64_at(r, &["messages", "lost"]), 0, "{r}");
        assert_eq!(u64_at(r, &["bytes_sent"]), 1900 * 24_938 + 40 * 512);
    }
    if Command::new("sockperf").arg("--version").output().is_ok() {
        let s = &v["baseline"]["sockperf"];
        assert!(s["command"].as_str().unwrap().contains("playback"), "{v}");
        assert!(s["observations"].as_u64().unwrap() > 0, "{v}");
    }
    assert!(d.leftover_testbeds().is_empty(), "testbed not removed");
}
