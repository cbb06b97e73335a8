//! `ivnsec throughput` as a user runs it: over UDP on loopback (no root), on a `sensors:3`
//! testbed of its own with a shaped link (root; skipped with a reason otherwise), and bad input.

use std::process::Output;

use serde_json::Value;

use crate::common;

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

fn check_common(v: &Value, profile: &str, payload: u64) {
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

#[test]
fn loopback_run_delivers_and_accounts() {
    let d = TempDir::new("lo");
    let pcap = d.0.join("tp.pcap");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "loopback",
            "--profile",
            "aes128-gcm",
            "--payload",
            "1440",
            "--seconds",
            "0.5",
            "--no-baseline",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let v = json_of(&o);
    check_common(&v, "aes128-gcm", 1440);
    // Unshaped: no theoretical maximum.
    assert!(v["theoretical_mbps"].is_null() && v["efficiency"].is_null());
    assert!(v["transport"].as_str().unwrap().contains("loopback"));
    // The capture holds frames (24-byte file header + 16-byte record headers + frames).
    let len = std::fs::metadata(&pcap).unwrap().len();
    assert!(len > 24 + 16 + 1440, "pcap is {len} bytes");

    // Shaped, with the plain baseline and two senders (ESP: senders told apart by SPI).
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "loopback",
            "--profile",
            "esp-aes128-gcm",
            "--payload",
            "1000",
            "--seconds",
            "0.5",
            "--rate",
            "20M",
            "--senders",
            "2",
            "--json",
        ],
    );
    let v = json_of(&o);
    check_common(&v, "esp-aes128-gcm", 1000);
    let e = v["efficiency"].as_f64().unwrap();
    assert!(e > 0.0 && e <= 1.02, "efficiency {e}");
    assert!(v["baseline"]["plain"]["goodput_mbps"].as_f64().unwrap() > 0.0);
    assert!(v["cpu"]["increase_over_plain"]["system_pct"].is_number());
}

/// SecOC and secured SOME/IP with two senders on loopback: the receiver tells the senders apart
/// by SecOC PDU id / SOME/IP client ID, so each sender's units are verified with its own keys
/// and nothing is refused.
#[test]
fn loopback_udp_families_with_two_senders() {
    let d = TempDir::new("lo-udp");
    for profile in ["secoc-cmac-aes128", "someip-aes128-gcm/conf"] {
        let o = ivnsec(
            &d,
            &[
                "throughput",
                "--on",
                "loopback",
                "--profile",
                profile,
                "--payload",
                "1000",
                "--seconds",
                "0.3",
                "--rate",
                "20M",
                "--senders",
                "2",
                "--no-baseline",
                "--json",
            ],
        );
        let v = json_of(&o);
        check_common(&v, profile, 1000);
        let per = v["per_sender"].as_array().unwrap();
        assert_eq!(per.len(), 2, "{v}");
        assert!(
            per.iter().all(|s| s["delivered"].as_u64().unwrap() > 0),
            "{v}"
        );
        assert!(
            v["rejected"].as_object().is_none_or(|r| r.is_empty()),
            "{v}"
        );
    }
}

#[test]
fn bad_input_is_a_usage_error() {
    let d = TempDir::new("bad");
    let base = ["throughput", "--on", "loopback", "--seconds", "0.2"];
    let cases: [(&[&str], &str); 5] = [
        (
            &["--profile", "aes999-gcm", "--payload", "64"],
            "aes999-gcm",
        ),
        (
            &["--profile", "plain", "--payload", "64", "--rate", "7X"],
            "--rate",
        ),
        (
            &["--profile", "macsec-gcm-aes-128", "--payload", "1480"],
            "MTU",
        ),
        (
            &["--profile", "plain", "--payload", "64", "--senders", "0"],
            "--senders",
        ),
        (&["--profile", "plain", "--payload", "0"], "--payload"),
    ];
    for (args, needle) in cases {
        let mut all: Vec<&str> = base.to_vec();
        all.extend_from_slice(args);
        let o = ivnsec(&d, &all);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let o = ivnsec(&d, &["throughput", "--help"]);
    let help = text(&o.stdout);
    for opt in [
        "--profile",
        "--payload",
        "--seconds",
        "--rate",
        "--senders",
        "--batch",
        "--json",
        "--pcap",
        "--testbed",
        "--no-baseline",
    ] {
        assert!(help.contains(opt), "help lacks {opt}");
    }
}

#[test]
fn testbed_three_senders_shaped() {
    require_root!();
    let d = TempDir::new("tb");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "testbed",
            "--profile",
            "macsec-gcm-aes-128",
            "--payload",
            "1440",
            "--seconds",
            "1",
            "--rate",
            "100M",
            "--senders",
            "3",
            "--json",
        ],
    );
    let v = json_of(&o);
    check_common(&v, "macsec-gcm-aes-128", 1440);
    assert_eq!(v["senders"], 3);
    assert!(v["transport"].as_str().unwrap().contains("sensors:3"));
    let e = v["efficiency"].as_f64().unwrap();
    assert!(e > 0.0 && e <= 1.02, "efficiency {e}: {v}");
    // Our MACsec frame carries the payload straight at layer 2: 12 + SecTAG 16 + EtherType 2 +
    // 1440 + ICV 16 = 1486, + FCS 4 + preamble 8 + IFG 12 = 1510 byte times:
    // 3 × 1440 / 1510 × 100 Mb/s.
    let t = v["theoretical_mbps"].as_f64().unwrap();
    assert!((t - 3.0 * 1440.0 / 1510.0 * 100.0).abs() < 0.01, "{t}");
    // CPU per role: the consumer, the three sensors, their pacing and the switch (the rest of
    // the machine), adding up to the machine's share (the switch is never below 0), each per
    // Gb/s through it.
    let roles = v["cpu"]["roles"].as_array().unwrap();
    let names: Vec<&str> = roles.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "consumer", "sensor1", "sensor2", "sensor3", "pacing", "switch"
        ]
    );
    let sum: f64 = roles.iter().map(|r| r["pct"].as_f64().unwrap()).sum();
    let machine = v["cpu"]["system_pct"].as_f64().unwrap();
    assert!(sum >= machine - 1e-9, "{sum} vs {machine}: {v}");
    let goodput = v["goodput_mbps"].as_f64().unwrap() / 1e3;
    for r in roles {
        let (pct, gbps) = (r["pct"].as_f64().unwrap(), r["gbps"].as_f64().unwrap());
        assert!(pct >= 0.0 && gbps > 0.0, "{r}");
        let per = r["pct_per_gbps"].as_f64().unwrap();
        assert!((per - pct / gbps).abs() < 1e-9, "{r}");
    }
    assert!((roles[0]["gbps"].as_f64().unwrap() - goodput).abs() < 1e-9);
    assert_eq!(roles[0]["pct"], v["cpu"]["receiver_pct"]);
    // The run's testbed is gone: no state file, no namespace of its prefix.
    let left: Vec<_> = std::fs::read_dir(d.state())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert!(left.is_empty(), "testbed state left behind: {left:?}");
    let prefix = v["transport"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(
        ivnsec_net::testbed::live_namespaces(&prefix)
            .unwrap()
            .is_empty()
    );
}

/// ESP on a testbed: the senders write whole frames (Ethernet ‖ IPv4 ‖ ESP) on a raw Ethernet
/// link, the consumer takes them through its IP layer; every frame the consumer gets verifies,
/// and the capture of sender 1 holds those frames: EtherType IPv4, a valid IPv4 header of
/// protocol 50 from sensor1 to the consumer, the sender's SPI, the run's frame length. The
/// pacing spin is reported apart from protecting and sending.
#[test]
fn testbed_esp_senders_write_whole_frames() {
    require_root!();
    let d = TempDir::new("tb-esp");
    let pcap = d.path("esp.pcap");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "testbed",
            "--profile",
            "esp-null-hmac-sha256",
            "--payload",
            "1000",
            "--seconds",
            "1",
            "--rate",
            "100M",
            "--senders",
            "2",
            "--no-baseline",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let v = json_of(&o);
    check_common(&v, "esp-null-hmac-sha256", 1000);
    assert_eq!(v["rejected"], serde_json::json!({}), "{v}");
    assert!(v["transport"].as_str().unwrap().contains("whole frames"));
    assert!(v["cpu"]["sender_pacing_ns"].as_u64().is_some(), "{v}");
    let frame_bytes = v["frame_bytes"].as_u64().unwrap() as usize;
    let frames: Vec<Vec<u8>> = ivnsec_net::pcap::PcapReader::open(&pcap)
        .unwrap()
        .map(|r| r.unwrap().data)
        .collect();
    assert_eq!(frames.len(), 1000);
    for f in &frames {
        assert_eq!(f.len(), frame_bytes);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        let ip = &f[14..];
        assert_eq!((ip[0], ip[9]), (0x45, 50));
        assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
        let mut sum: u32 = ip[..20]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff, "IPv4 header checksum");
        // sensor1's SPI: the pair's forward SPI (0x1001).
        assert_eq!(&ip[20..24], &[0, 0, 0x10, 0x01]);
    }
}

/// A plan with a `[[throughput]]` table and no ping-pong: `ivnsec run` runs `plain` first, then
/// the profile, then iperf3 (one stream per sender when installed), judges seed 002's cost rules
/// against the same run's plain, and writes them into the report.
#[test]
fn plan_throughput_section_reports_and_judges() {
    let d = TempDir::new("plan");
    let plan = d.0.join("tp.toml");
    std::fs::write(
        &plan,
        "name = \"tp\"\n[requirements]\nthroughput_cost = 0.5\ncpu_increase_points = 50\n\
         [[throughput]]\nprofiles = [\"aes128-gcm\"]\npayloads = [1000]\nrates = [\"20M\"]\n\
         senders = 2\nseconds = 0.5\n",
    )
    .unwrap();
    let out = d.0.join("report");
    let (code, s) = common::run_plan_on_loopback(&d, &plan);
    let code = Some(code);
    assert_eq!(s["scenarios"].as_array().unwrap().len(), 0);
    let runs = s["experiments"]["throughput"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{s}");
    let r = &runs[0];
    check_common(r, "aes128-gcm", 1000);
    assert_eq!(r["senders"], 2);
    assert_eq!(r["rate_bps"], 20_000_000);
    let plain = r["baseline"]["plain"]["goodput_mbps"].as_f64().unwrap();
    let ours = r["goodput_mbps"].as_f64().unwrap();
    let v = &s["experiment_verdicts"]["throughput"][0];
    let cost = v["cost"].as_f64().unwrap();
    assert!((cost - (1.0 - ours / plain)).abs() < 1e-9, "{v}");
    assert_eq!(v["cost_ok"].as_bool().unwrap(), cost < 0.5);
    let cpu = v["cpu_increase_points"].as_f64().unwrap();
    assert_eq!(v["cpu_ok"].as_bool().unwrap(), cpu < 50.0);
    let passed = cost < 0.5 && cpu < 50.0;
    assert_eq!(code == Some(0), passed, "exit {code:?} but verdict {v}");
    if let Some(i) = r["baseline"]["iperf3"].as_object() {
        assert_eq!(i["unlimited"]["streams"], 2, "{r}");
        assert_eq!(i["shaped"]["per_stream"].as_array().unwrap().len(), 2);
    }
    let csv = std::fs::read_to_string(out.join("throughput.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.lines().nth(1).unwrap().starts_with("aes128-gcm,1000,"));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("id=\"throughput\"") && html.contains("aes128-gcm@1000 20 Mb/s ×2"));
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Throughput") && md.contains("no ping-pong scenarios"));
    // `ivnsec report` rebuilds the same experiments from the directory.
    std::fs::remove_file(out.join("index.html")).unwrap();
    let o = ivnsec(&d, &["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("aes128-gcm@1000 20 Mb/s ×2"));
}
