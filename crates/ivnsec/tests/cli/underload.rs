//! `ivnsec underload` and `ivnsec playback` as a user runs them: over UDP on loopback (no root)
//! and bad input; on a `sensors:1` testbed (root) in `testbed_ecus/underload.rs`.
//! No assertion on how fast anything is: the verdict may pass or fail on a loaded machine, but
//! the exit code must agree with it and every figure must be consistent with the others.

use std::process::Output;
use std::time::{Duration, SystemTime};

use crate::common;
use crate::common::json::u64_at;
use crate::common::underload::{check_run, report_of};
use crate::common::{TempDir, ivnsec, text};

#[test]
fn loopback_underload_reports_consistent_figures() {
    let d = TempDir::new("ul-lo");
    let o = ivnsec(
        &d,
        &[
            "underload",
            "--on",
            "loopback",
            "--profile",
            "aes128-gcm",
            "--profile",
            "esp-aes128-gcm",
            "--size",
            "5000",
            "--mps",
            "200",
            "--seconds",
            "1",
            "--reply-every",
            "10",
            "--requirement-us",
            "5000",
            "--no-baseline",
            "--json",
        ],
    );
    let v = report_of(&o);
    assert_eq!(v["experiment"], "underload");
    assert!(v["transport"].as_str().unwrap().contains("loopback"));
    assert_eq!(v["settings"]["size"], 5000);
    let runs = v["runs"].as_array().unwrap();
    // --no-baseline: no plain run added, no sockperf.
    assert_eq!(runs.len(), 2);
    assert!(v["baseline"].as_object().unwrap().is_empty());
    for (r, p) in runs.iter().zip(["aes128-gcm", "esp-aes128-gcm"]) {
        assert_eq!(r["profile"], p);
        assert_eq!(u64_at(r, &["messages", "sent"]), 200);
        check_run(r, 5000.0);
        // 5000 bytes in fragments of at most unit_payload − 14 data bytes.
        let per = 5000u64.div_ceil(u64_at(r, &["unit_payload"]) - 14);
        assert_eq!(u64_at(r, &["units_per_message"]), per);
        assert_eq!(u64_at(r, &["units_sent"]), 200 * per);
        assert_eq!(u64_at(r, &["bytes_sent"]), 200 * 5000);
        assert!(r["cpu"]["increase_over_plain"].is_null());
    }
}

#[test]
fn loopback_playback_of_a_csv_and_a_capture() {
    let d = TempDir::new("pb-lo");
    // A sockperf playback file: 60 messages of two sizes, 5 ms apart.
    let csv = d.path("t.csv");
    let mut t = String::from("# test timeline\n");
    for i in 1..=60 {
        t.push_str(&format!("{:.6}, {}\n", i as f64 * 0.005, [14, 3000][i % 2]));
    }
    std::fs::write(&csv, t).unwrap();
    let o = ivnsec(
        &d,
        &[
            "playback",
            "--on",
            "loopback",
            "--profile",
            "chacha20-poly1305",
            "--timeline",
            csv.to_str().unwrap(),
            "--reply-every",
            "5",
            "--no-baseline",
            "--json",
        ],
    );
    let v = report_of(&o);
    assert_eq!(v["experiment"], "playback");
    let s = &v["settings"]["timeline_stats"];
    assert_eq!(s["format"], "sockperf_csv");
    assert_eq!(s["messages"], 60);
    assert_eq!(s["max_size"], 3000);
    assert_eq!(s["min_size"], 14);
    // 30 messages of 14 bytes are sent as 16 (sequence number and send time).
    assert_eq!(s["padded_to_16_bytes"], 30);
    let r = &v["runs"][0];
    assert_eq!(u64_at(r, &["messages", "sent"]), 60);
    assert_eq!(u64_at(r, &["bytes_sent"]), 30 * 16 + 30 * 3000);
    check_run(r, 2000.0);

    // A capture: frames of 60 and 1514 bytes 2 ms apart; sizes are the frames' lengths.
    let cap = d.path("t.pcap");
    let mut w = ivnsec_net::pcap::PcapWriter::create(&cap).unwrap();
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for i in 0..40u64 {
        let len = if i % 4 == 0 { 1514 } else { 60 };
        w.write_frame(t0 + Duration::from_millis(2 * i), &vec![0u8; len])
            .unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let o = ivnsec(
        &d,
        &[
            "playback",
            "--on",
            "loopback",
            "--profile",
            "macsec-gcm-aes-128",
            "--timeline",
            cap.to_str().unwrap(),
            "--no-baseline",
            "--json",
        ],
    );
    let v = report_of(&o);
    let s = &v["settings"]["timeline_stats"];
    assert_eq!(s["format"], "pcap");
    assert_eq!(s["messages"], 40);
    assert!((s["seconds"].as_f64().unwrap() - 0.078).abs() < 1e-9);
    let r = &v["runs"][0];
    assert_eq!(u64_at(r, &["bytes_sent"]), 10 * 1514 + 30 * 60);
    check_run(r, 2000.0);
}

/// `ivnsec playback --on loopback --timeline FILE` (a run that must fail before it starts).
fn playback_on_loopback(d: &TempDir, timeline: &std::path::Path) -> Output {
    ivnsec(
        d,
        &[
            "playback",
            "--on",
            "loopback",
            "--timeline",
            timeline.to_str().unwrap(),
        ],
    )
}

#[test]
fn bad_input_is_a_usage_error() {
    let d = TempDir::new("ul-bad");
    for args in [
        &["underload", "--on", "loopback", "--size", "10"][..],
        &["underload", "--on", "loopback", "--size", "2000000"],
        &["underload", "--on", "loopback", "--profile", "aes999-gcm"],
        &["underload", "--on", "loopback", "--mps", "0"],
        &["underload", "--on", "loopback", "--seconds", "-1"],
        &["underload", "--on", "loopback", "--reply-every", "0"],
        &["underload", "--on", "loopback", "--provider", "quantum"],
        &["underload", "--on", "loopback", "--requirement-us", "0"],
        &[
            "underload",
            "--on",
            "loopback",
            "--profile",
            "plain",
            "--profile",
            "plain",
        ],
        &["underload", "--on", "nowhere"],
        &["playback", "--on", "loopback"],
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(!text(&o.stderr).is_empty(), "{args:?}: no message");
    }
    // Bad timelines: the message names the file and the line (CSV) or record (pcap).
    let cases = [
        ("order.csv", "0.1, 100\n0.2, 100\n0.15, 100\n", "line 3"),
        ("size.csv", "# c\n0.1, 99999\n", "line 2"),
        ("text.csv", "0.1; 100\n", "line 1"),
        ("empty.csv", "# nothing\n", "no messages"),
    ];
    for (name, body, want) in cases {
        let p = d.path(name);
        std::fs::write(&p, body).unwrap();
        let o = playback_on_loopback(&d, &p);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(want) && err.contains(name), "{name}: {err}");
    }
    let missing = d.path("missing.csv");
    let o = playback_on_loopback(&d, &missing);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // A capture cut inside its second record (a writer killed mid-record): not fatal; the
    // timeline is the whole record before the cut, and stderr says so.
    let cap = d.path("cut.pcap");
    let mut w = ivnsec_net::pcap::PcapWriter::create(&cap).unwrap();
    w.write_frame(SystemTime::UNIX_EPOCH, &[0u8; 100]).unwrap();
    w.write_frame(SystemTime::UNIX_EPOCH, &[0u8; 100]).unwrap();
    w.flush().unwrap();
    drop(w);
    let b = std::fs::read(&cap).unwrap();
    std::fs::write(&cap, &b[..b.len() - 1]).unwrap();
    let o = playback_on_loopback(&d, &cap);
    let err = text(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{err}");
    assert!(
        err.contains("record 2") && err.contains("the timeline is the 1 records before it"),
        "{err}"
    );
}

#[test]
fn help_has_examples() {
    let d = TempDir::new("ul-help");
    for cmd in ["underload", "playback"] {
        let o = ivnsec(&d, &[cmd, "--help"]);
        assert!(o.status.success());
        let h = text(&o.stdout);
        assert!(
            h.contains("Examples:") && h.contains(&format!("ivnsec {cmd}")),
            "{h}"
        );
    }
}

/// A plan with `[[underload]]`, `[[playback]]` (its timeline beside the plan) and `[[camera]]`
/// tables and nothing else: `ivnsec run` runs each, writes them into the report, and exits 1
/// exactly when one of their verdicts failed.
#[test]
fn plan_with_stream_and_camera_tables() {
    let d = TempDir::new("plan-streams");
    std::fs::write(
        d.0.join("t.csv"),
        "# ten messages, 20 ms apart\n0.010, 3000\n0.030, 3000\n0.050, 3000\n0.070, 3000\n\
         0.090, 3000\n0.110, 3000\n0.130, 3000\n0.150, 3000\n0.170, 3000\n0.190, 3000\n",
    )
    .unwrap();
    let plan = d.0.join("p.toml");
    std::fs::write(
        &plan,
        "name = \"streams\"\n\
         [[underload]]\nprofiles = [\"aes128-gcm\"]\nsize = 4000\nmps = 100\nseconds = 1\n\
         reply_every = 10\nbaseline = false\n\
         [[playback]]\nprofiles = [\"macsec-gcm-aes-128/auth\"]\ntimeline = \"t.csv\"\n\
         baseline = false\n\
         [[camera]]\ncameras = [2]\nlevels = [\"conf\"]\nframe_bytes = 8000\nseconds = 1\n",
    )
    .unwrap();
    let out = d.0.join("report");
    let (code, s) = common::run_plan_on_loopback(&d, &plan);
    let code = Some(code);
    let e = &s["experiments"];
    let u = &e["underload"][0]["runs"];
    assert_eq!(u.as_array().unwrap().len(), 1, "{e}");
    assert_eq!(u[0]["profile"], "aes128-gcm");
    assert_eq!(u[0]["messages"]["sent"], 100);
    let p = &e["playback"][0]["runs"];
    assert_eq!(p[0]["profile"], "macsec-gcm-aes-128/auth");
    assert_eq!(p[0]["messages"]["sent"], 10);
    let c = &e["camera"][0]["results"];
    assert_eq!(c[0]["cameras"], 2);
    assert_eq!(c[0]["level"], "conf");
    let passed = u[0]["verdict"]["passed"].as_bool().unwrap()
        && p[0]["verdict"]["passed"].as_bool().unwrap()
        && c[0]["passed"].as_bool().unwrap();
    assert_eq!(code == Some(0), passed, "exit {code:?}: {e}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for h in [
        "## Under load",
        "## Playback",
        "## Cameras",
        "Beside seed 003: cameras",
    ] {
        assert!(md.contains(h), "no {h} in summary.md");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("id=\"camera\"") && html.contains("macsec-gcm-aes-128/auth"));
}
