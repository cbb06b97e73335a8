//! `ivnsec camera` as a user runs it: bad input (exit 2), short runs on loopback over TCP and
//! SOME/IP-TP (no root), and a run on a `pair` testbed of its own with a capture (root; skipped
//! with a reason otherwise). Nothing here asserts a time: the delays are checked for internal
//! consistency only (ordered percentiles, counts that add up, the verdict matching the counts).

use std::process::Output;

use serde_json::Value;

use crate::common::{TempDir, ivnsec, text};

fn json_of(o: &Output) -> Value {
    // 0: every frame on time; 1: a frame late or lost (possible on a loaded machine).
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stdout)))
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("no {k}: {v}"))
}

/// Checks one result's accounting; returns whether it passed.
fn check_result(r: &Value, cameras: u64, frames_per_camera: u64, reliable: bool) -> bool {
    assert_eq!(u(r, "cameras"), cameras);
    let (sent, received, lost) = (u(r, "frames_sent"), u(r, "frames_received"), u(r, "lost"));
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
    assert_eq!(u(d, "count"), received);
    let late = u(r, "past_deadline");
    assert!(late <= received);
    // The maximum decides whether any frame was late.
    let deadline_us = r["deadline_ms"].as_f64().unwrap() * 1e3;
    assert_eq!(late > 0, q[6] > deadline_us, "{r}");
    assert!(u(r, "past_deadline_from_due") >= late);
    let per = r["per_camera"].as_array().unwrap();
    assert_eq!(per.len() as u64, cameras);
    assert_eq!(per.iter().map(|c| u(c, "received")).sum::<u64>(), received);
    assert_eq!(per.iter().map(|c| u(c, "sent")).sum::<u64>(), sent);
    let services: Vec<u64> = per.iter().map(|c| u(c, "service")).collect();
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
        lost == 0 && late == 0 && u(r, "past_deadline_from_due") == 0,
        "{r}"
    );
    passed
}

/// Checks a whole `--json` report: results per count × level in order, nosec first, the CPU
/// increase only where a nosec run of the same count exists, and the exit code from the verdicts.
fn check_report(o: &Output, counts: &[u64], levels: &[&str], fpc: u64, reliable: bool) -> Value {
    let v = json_of(o);
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

#[test]
fn bad_input_is_a_usage_error() {
    let d = TempDir::new("cam-bad");
    for args in [
        &["--cameras", "0"][..],
        &["--cameras", "33"],
        &["--cameras", "two"],
        &["--level", "secret"],
        &["--suite", "aes128-cbc-hmac-sha256"],
        &["--suite", "aes128-ccm", "--provider", "fast"],
        &["--frame-bytes", "10"],
        &["--fps", "0"],
        &["--seconds", "0"],
        &["--deadline-ms", "-3"],
        &["--transport", "carrier-pigeon"],
        &["--phase", "random"],
    ] {
        let mut a = vec!["camera", "--on", "loopback"];
        a.extend_from_slice(args);
        let o = ivnsec(&d, &a);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(!text(&o.stderr).trim().is_empty(), "{args:?}: no message");
    }
}

#[test]
fn help_has_an_example() {
    let d = TempDir::new("cam-help");
    let o = ivnsec(&d, &["camera", "--help"]);
    assert!(o.status.success());
    let h = text(&o.stdout);
    assert!(h.contains("ivnsec camera --cameras"), "{h}");
    assert!(h.contains("--deadline-ms"), "{h}");
}

#[test]
fn loopback_tcp_run_receives_every_frame() {
    let d = TempDir::new("cam-tcp");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "loopback",
            "--cameras",
            "1,2",
            "--level",
            "nosec,conf",
            "--seconds",
            "1",
            "--frame-bytes",
            "20000",
            "--json",
        ],
    );
    let v = check_report(&o, &[1, 2], &["nosec", "conf"], 60, true);
    assert!(v["site"].as_str().unwrap().starts_with("loopback"));
}

#[test]
fn loopback_udp_tp_run_accounts_every_frame() {
    let d = TempDir::new("cam-udp");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "loopback",
            "--cameras",
            "2",
            "--level",
            "conf",
            "--transport",
            "udp-tp",
            "--seconds",
            "1",
            "--frame-bytes",
            "20000",
            "--phase",
            "aligned",
            "--json",
        ],
    );
    let v = check_report(&o, &[2], &["conf"], 60, false);
    let r = &v["results"][0];
    assert_eq!(r["transport"], "udp-tp");
    assert_eq!(r["phase"], "aligned");
    // 16 (SOME/IP) + 9 (key id, counter) + 20000 + 16 (tag).
    assert_eq!(u(r, "message_bytes"), 20_041);
}

/// The l2 transport on loopback: IVN-AE frames in UDP datagrams, every fragment verified.
#[test]
fn loopback_l2_run_accounts_every_frame() {
    let d = TempDir::new("cam-l2");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "loopback",
            "--cameras",
            "2",
            "--level",
            "nosec,conf",
            "--transport",
            "l2",
            "--seconds",
            "1",
            "--frame-bytes",
            "20000",
            "--json",
        ],
    );
    let v = check_report(&o, &[2], &["nosec", "conf"], 60, false);
    let r = &v["results"][1];
    assert_eq!(r["transport"], "l2");
    // The SOME/IP message goes unprotected; the fragments carry the protection.
    assert_eq!(u(r, "message_bytes"), 20_016);
}

#[test]
fn table_output_has_a_verdict() {
    let d = TempDir::new("cam-table");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "loopback",
            "--cameras",
            "1",
            "--level",
            "auth",
            "--suite",
            "chacha20-poly1305",
            "--seconds",
            "0.5",
            "--frame-bytes",
            "5000",
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let t = text(&o.stdout);
    assert!(t.contains("chacha20-poly1305"), "{t}");
    let verdict = if o.status.success() {
        "verdict: PASS"
    } else {
        "verdict: FAIL"
    };
    assert!(t.contains(verdict), "{t}");
}

/// A `pair` testbed of its own: ecu1 is the camera ECU, ecu2 the consumer; the capture holds
/// the first frames as IPv4/TCP packets from ecu1 to ecu2 carrying SOME/IP notifications of the
/// camera services; the testbed is gone afterwards.
#[test]
fn testbed_run_with_capture() {
    require_root!();
    let d = TempDir::new("cam-tb");
    let pcap = d.path("cam.pcap");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "testbed",
            "--cameras",
            "3",
            "--level",
            "nosec,auth",
            "--seconds",
            "1",
            "--frame-bytes",
            "30000",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let v = check_report(&o, &[3], &["nosec", "auth"], 60, true);
    assert!(v["site"].as_str().unwrap().starts_with("testbed"), "{v}");
    assert!(
        d.leftover_testbeds().is_empty(),
        "{:?}",
        d.leftover_testbeds()
    );

    // Two runs, 4 frames each, 30,016 / 30,041-byte messages in 1448-byte TCP segments.
    let mut r = ivnsec_net::pcap::PcapReader::open(&pcap).unwrap();
    let mut payload = Vec::new();
    let mut records = 0;
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        records += 1;
        let f = rec.data;
        assert_eq!(&f[12..14], &[0x08, 0x00], "IPv4");
        assert_eq!(f[14 + 9], 6, "TCP");
        assert_eq!(&f[14 + 12..14 + 14], &[10, 77], "testbed addresses");
        payload.extend_from_slice(&f[14 + 20 + 20..]);
    }
    let per_run = [30_016usize, 30_041];
    let expect: usize = per_run.iter().map(|m| 4 * m.div_ceil(1448)).sum();
    assert_eq!(records, expect);
    assert_eq!(payload.len(), per_run.iter().map(|m| 4 * m).sum::<usize>());
    // The first message: a SOME/IP notification (type 0x02) of event 0x8001 of a camera service.
    let service = u16::from_be_bytes([payload[0], payload[1]]);
    assert!((0x4301..=0x4303).contains(&service), "{service:#x}");
    assert_eq!(&payload[2..4], &[0x80, 0x01]);
    assert_eq!(
        u32::from_be_bytes(payload[4..8].try_into().unwrap()),
        8 + 30_000
    );
    assert_eq!(payload[14], 0x02);

    // l2 on the same kind of testbed: the capture holds IVN-AE frames (EtherType 0x88B5)
    // from ecu1 to ecu2, none larger than the 1500-byte MTU allows.
    let pcap = d.path("l2.pcap");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "testbed",
            "--cameras",
            "2",
            "--level",
            "conf",
            "--transport",
            "l2",
            "--seconds",
            "0.5",
            "--frame-bytes",
            "30000",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    check_report(&o, &[2], &["conf"], 30, false);
    assert!(d.leftover_testbeds().is_empty());
    let mut r = ivnsec_net::pcap::PcapReader::open(&pcap).unwrap();
    let mut n = 0;
    while let Some(rec) = r.next_record() {
        let f = rec.unwrap().data;
        assert_eq!(&f[12..14], &[0x88, 0xB5]);
        assert!(f.len() <= 1514, "{}", f.len());
        n += 1;
    }
    // 4 frames of 30,016 bytes, each in fragments of less than 1,500 bytes.
    assert!(n >= 4 * 30_016 / 1500, "{n} units");
}
