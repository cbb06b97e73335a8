//! `ivnsec throughput` as a user runs it: over UDP on loopback (no root) and bad input. On
//! `sensors:N` testbeds (root): `testbed_ecus/throughput.rs`.

use crate::common;
use crate::common::throughput::check_common;
use crate::common::{TempDir, ivnsec, json, text};

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
    let v = json::with_codes("throughput", &o, &[0]);
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
    let v = json::with_codes("throughput", &o, &[0]);
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
        let v = json::with_codes("throughput", &o, &[0]);
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
