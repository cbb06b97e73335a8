//! `ivnsec pingpong`, `ivnsec run` and `ivnsec validate` as a user runs them: over UDP on
//! loopback (no root); on testbeds of their own as root in `testbed_pair/pingpong.rs` and
//! `testbed_ecus/pingpong.rs`.
//! Every run uses its own state directory (`IVNSEC_STATE_DIR`) and temporary output directory,
//! so tests never see each other's testbeds, and each checks that its testbed is gone after.

use serde_json::Value;

use crate::common::pingpong::{check_samples_csv, check_scenario};
use crate::common::{TempDir, ivnsec, text};

/// `pingpong --on loopback` of `profile` with 64-byte payloads, 2 × 30 exchanges, checked.
fn loopback_scenario(d: &TempDir, profile: &str) {
    let o = ivnsec(
        d,
        &[
            "pingpong",
            "--on",
            "loopback",
            "--profile",
            profile,
            "--payload",
            "64",
            "--count",
            "30",
            "--replications",
            "2",
            "--json",
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{profile}: {}",
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("JSON");
    check_scenario(&v, profile, 64, 60);
}

#[test]
fn pingpong_over_loopback_without_a_testbed() {
    let d = TempDir::new("lo");
    for profile in ["aes128-gcm", "macsec-gcm-aes-128", "esp-aes128-gcm"] {
        loopback_scenario(&d, profile);
    }
}

/// SecOC and secured SOME/IP profiles run the ping-pong like every other family, on loopback
/// and from a plan (`ivnsec run`), with the frame lengths their specifications give.
#[test]
fn pingpong_and_run_take_secoc_and_someip_profiles() {
    let d = TempDir::new("udp-lo");
    for profile in [
        "secoc-cmac-aes128",
        "someip-aes128-gcm/conf",
        "someip-nosec",
    ] {
        loopback_scenario(&d, profile);
    }
    let plan = d.path("udp.toml");
    std::fs::write(
        &plan,
        "name = \"udp\"\n[run]\ncount = 20\nreplications = 1\n\
         [[matrix]]\nprofiles = [\"secoc-hmac-sha256\", \"someip-chacha20-poly1305/auth\"]\n\
         payloads = [64, 1024]\n",
    )
    .unwrap();
    let out = d.path("out");
    let o = ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--on",
            "loopback",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sc = v["scenarios"].as_array().unwrap();
    assert_eq!(sc.len(), 4);
    for s in sc {
        let (p, n) = (
            s["profile"].as_str().unwrap(),
            s["payload"].as_u64().unwrap(),
        );
        check_scenario(s, p, n as usize, 20);
    }
    // A payload whose SOME/IP frame would exceed the MTU is refused up front (exit 2).
    let o = ivnsec(
        &d,
        &[
            "pingpong",
            "--on",
            "loopback",
            "--profile",
            "someip-aes128-gcm/conf",
            "--payload",
            "1440",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("MTU"), "{}", text(&o.stderr));
}

#[test]
fn pingpong_rejects_bad_input_with_exit_2() {
    let d = TempDir::new("bad");
    for args in [
        &["pingpong", "--profile", "nope", "--payload", "64"][..],
        &["pingpong", "--profile", "plain", "--payload", "4"],
        &["pingpong", "--profile", "aes128-gcm", "--payload", "1480"],
        &[
            "pingpong",
            "--profile",
            "plain",
            "--payload",
            "64",
            "--pause-ms",
            "-1",
        ],
        &[
            "pingpong",
            "--profile",
            "plain",
            "--payload",
            "64",
            "--timeout-ms",
            "0",
        ],
        &[
            "pingpong",
            "--profile",
            "plain",
            "--payload",
            "64",
            "--mode",
            "spin",
        ],
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(!text(&o.stderr).trim().is_empty());
    }
    let o = ivnsec(
        &d,
        &["pingpong", "--profile", "aes128-gcm", "--payload", "1480"],
    );
    assert!(text(&o.stderr).contains("MTU"), "{}", text(&o.stderr));
}

#[test]
fn run_writes_the_report_of_a_plan() {
    let d = TempDir::new("run");
    let plan = d.path("mini.toml");
    std::fs::write(
        &plan,
        "name = \"mini\"\n[run]\ncount = 25\nreplications = 2\n\
         [[matrix]]\nprofiles = [\"plain\", \"crc32\"]\npayloads = [64, 128]\n\
         [[scenario]]\nprofile = \"chacha20-poly1305\"\npayload = 736\nreplications = 1\n",
    )
    .unwrap();
    let out = d.path("out");
    let pcap = d.path("run.pcap");
    let o = ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--on",
            "loopback",
            "--out",
            out.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stdout).contains("index.html"));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sc = v["scenarios"].as_array().unwrap();
    assert_eq!(sc.len(), 5);
    for s in sc {
        let (p, n) = (
            s["profile"].as_str().unwrap(),
            s["payload"].as_u64().unwrap(),
        );
        let count = if p == "chacha20-poly1305" { 25 } else { 50 };
        check_scenario(s, p, n as usize, count);
    }
    assert_eq!(v["environment"]["plan"], "mini");
    assert!(
        v["environment"]["transport"]
            .as_str()
            .unwrap()
            .contains("loopback")
    );
    check_samples_csv(&out.join("samples.csv"), 4 * 50 + 25);
    // One capture for the whole plan: each exchange's request and reply, scenario by scenario.
    let records = ivnsec_net::pcap::PcapReader::open(&pcap)
        .unwrap()
        .inspect(|r| assert!(r.is_ok(), "{r:?}"))
        .count();
    assert_eq!(records, 2 * (4 * 50 + 25));
    assert!(!d.path("run.pcap.part").exists());
    for f in ["summary.md", "index.html"] {
        assert!(out.join(f).exists(), "{f}");
    }
}

#[test]
fn run_reports_plan_errors_with_file_and_key() {
    let d = TempDir::new("runbad");
    let plan = d.path("bad.toml");
    std::fs::write(
        &plan,
        "[[matrix]]\nprofiles = [\"aes999-gcm\"]\npayloads = [64]\n",
    )
    .unwrap();
    let o = ivnsec(&d, &["run", plan.to_str().unwrap(), "--on", "loopback"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("bad.toml") && e.contains("matrix[0].profiles[0]"),
        "{e}"
    );
    let o = ivnsec(&d, &["run", d.path("missing.toml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("missing.toml"));
}

#[test]
fn validate_without_root_falls_back_to_loopback() {
    let d = TempDir::new("valo");
    let out = d.path("report");
    let o = ivnsec(
        &d,
        &[
            "validate",
            "--on",
            "loopback",
            "--no-baseline",
            "--count",
            "10",
            "--replications",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stderr).contains("loopback"));
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(v["scenarios"].as_array().unwrap().len(), 14);
    assert!(v["baseline"]["sockperf"].is_null());
    let o = ivnsec(&d, &["validate", "--preset", "nope"]);
    assert_eq!(o.status.code(), Some(2));
}
