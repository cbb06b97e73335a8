//! `ivnsec report DIR [--out DIR2]` on report directories this test writes itself: samples.csv
//! rows generated here (not by the lab crate's writer) and a summary.json carrying an
//! environment and a sockperf baseline. Expected statistics are computed here from the generated
//! rows. Also the exit-2 cases: missing directory, missing samples.csv, a malformed row (the
//! message names file, line and column), a malformed summary.json.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::{run, text, tmpdir};

const HEADER: &str = "scenario,profile,payload,frame_bytes,replication,index,payload_ns,protect_ns,round_trip_ns,verify_ns,resp_verify_ns,resp_protect_ns,owd_direct_ns,lost";

/// One generated message: parts 1, 2, 3, 4, responder 4 and 2, direct OWD, lost.
struct Msg {
    p: [u64; 6],
    direct: Option<u64>,
    lost: bool,
}

struct Scenario {
    profile: &'static str,
    payload: usize,
    frame: usize,
    msgs: Vec<Msg>,
}

/// Two scenarios with times that depend on the message number, one lost message and one
/// scenario without the direct OWD.
fn scenarios() -> Vec<Scenario> {
    let mut out = Vec::new();
    for (profile, payload, overhead, base) in [
        ("aes128-cbc-hmac-sha256", 64usize, 32usize, 40_000u64),
        ("plain", 1440, 0, 30_000),
    ] {
        let mut msgs = Vec::new();
        for i in 0..120u64 {
            let jitter = (i * 37) % 11 * 100;
            msgs.push(Msg {
                p: [
                    500 + jitter,
                    3_000 + jitter,
                    base + 10 * jitter,
                    2_500,
                    2_000 + jitter,
                    2_200,
                ],
                direct: (profile != "plain").then_some(base / 2 + jitter),
                lost: profile == "plain" && i == 77,
            });
        }
        out.push(Scenario {
            profile,
            payload,
            frame: 14 + payload + overhead,
            msgs,
        });
    }
    out
}

fn write_samples(dir: &Path, sc: &[Scenario]) {
    let mut s = format!("{HEADER}\n");
    for x in sc {
        for (i, m) in x.msgs.iter().enumerate() {
            let [a, b, c, d, e, f] = m.p;
            s.push_str(&format!(
                "{}@{},{},{},{},{},{},{a},{b},{c},{d},{e},{f},{},{}\n",
                x.profile,
                x.payload,
                x.profile,
                x.payload,
                x.frame,
                i / 60,
                i % 60,
                m.direct.map_or(String::new(), |v| v.to_string()),
                u8::from(m.lost),
            ));
        }
    }
    std::fs::write(dir.join("samples.csv"), s).unwrap();
}

fn write_summary(dir: &Path) {
    let j = serde_json::json!({
        "environment": {"host": "test-host", "mode": "busy-poll", "cores": 2},
        "scenarios": [],
        "baseline": {"sockperf": {"half_rtt_p50_us": 12.5, "ratio": 1.07}}
    });
    std::fs::write(dir.join("summary.json"), j.to_string()).unwrap();
}

#[test]
fn rebuilds_into_another_directory() {
    let dir = tmpdir("in");
    let out = tmpdir("out");
    let sc = scenarios();
    write_samples(&dir, &sc);
    write_summary(&dir);
    let before = std::fs::read(dir.join("summary.json")).unwrap();
    let o = run(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).trim(),
        out.join("index.html").display().to_string()
    );
    for f in ["samples.csv", "summary.json", "summary.md", "index.html"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    assert_eq!(
        std::fs::read(dir.join("summary.json")).unwrap(),
        before,
        "the input directory is left alone"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<script"));

    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["environment"]["host"], "test-host", "environment kept");
    assert_eq!(s["baseline"]["sockperf"]["ratio"], 1.07, "baseline kept");
    let got = s["scenarios"].as_array().unwrap();
    assert_eq!(got.len(), sc.len());
    for (g, x) in got.iter().zip(&sc) {
        assert_eq!(g["name"], format!("{}@{}", x.profile, x.payload));
        assert_eq!(g["profile"], x.profile);
        assert_eq!(g["payload"], x.payload);
        assert_eq!(g["frame_bytes"], x.frame);
        let lost = x.msgs.iter().filter(|m| m.lost).count();
        assert_eq!(g["count"], x.msgs.len());
        assert_eq!(g["lost"], lost);
        let eff = g["efficiency"].as_f64().unwrap();
        assert!((eff - x.payload as f64 / x.frame as f64).abs() < 1e-12);
        // RTT = 1 + 2 + 3 + 4 over the messages that were not lost, in µs.
        let rtts: Vec<f64> = x
            .msgs
            .iter()
            .filter(|m| !m.lost)
            .map(|m| (m.p[0] + m.p[1] + m.p[2] + m.p[3]) as f64 / 1000.0)
            .collect();
        let rtt = &g["sections"]["rtt"];
        assert_eq!(rtt["count"], rtts.len());
        let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
        let max = rtts.iter().copied().fold(f64::MIN, f64::max);
        let min = rtts.iter().copied().fold(f64::MAX, f64::min);
        assert!((rtt["mean_us"].as_f64().unwrap() - mean).abs() < 1e-9);
        assert_eq!(rtt["max_us"].as_f64().unwrap(), max);
        assert_eq!(rtt["min_us"].as_f64().unwrap(), min);
        // Forward OWD = 1 + 2 + (3 − (r4 + r2)) / 2 + r4.
        let fwd_max = x
            .msgs
            .iter()
            .filter(|m| !m.lost)
            .map(|m| {
                let [a, b, c, _, e, f] = m.p;
                (a + b + e) as f64 + (c - e - f) as f64 / 2.0
            })
            .fold(f64::MIN, f64::max)
            / 1000.0;
        let f = g["sections"]["owd_forward"]["max_us"].as_f64().unwrap();
        assert!((f - fwd_max).abs() < 1e-9, "{f} vs {fwd_max}");
        // Control verdict: (worst OWD either way) × 1.25 ≤ 2500 µs, RTT ≤ 5000 µs, none lost.
        assert_eq!(g["verdicts"]["control_2500us"], lost == 0);
        let direct = x.msgs.iter().any(|m| m.direct.is_some());
        assert_eq!(g["sections"]["owd_direct"].is_null(), !direct);
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    // plain@1440 is the seed's "1440/no crypto" (Appendix A: OWD mean 511.7 µs).
    assert!(md.contains("1440/no crypto") && md.contains("511.7"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn rebuilds_in_place_without_summary_json() {
    let dir = tmpdir("inplace");
    let sc = scenarios();
    write_samples(&dir, &sc);
    let csv = std::fs::read(dir.join("samples.csv")).unwrap();
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).trim(),
        dir.join("index.html").display().to_string()
    );
    assert_eq!(
        std::fs::read(dir.join("samples.csv")).unwrap(),
        csv,
        "samples untouched"
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(s["environment"].as_object().unwrap().is_empty());
    assert!(s["baseline"]["sockperf"].is_null());
    // Rebuilding again from its own output gives the same summary.
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(again, s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_exits_2_naming_the_file() {
    // Missing directory.
    let missing = std::env::temp_dir().join("ivnsec-cli-report-does-not-exist");
    let o = run(&["report", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("ivnsec-cli-report-does-not-exist"));

    // Directory without samples.csv.
    let dir = tmpdir("bad");
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("samples.csv"),
        "{}",
        text(&o.stderr)
    );

    // A malformed value: line 4 of the file, column 9 (round_trip_ns).
    let sc = scenarios();
    write_samples(&dir, &sc);
    let good = std::fs::read_to_string(dir.join("samples.csv")).unwrap();
    let mut lines: Vec<String> = good.lines().map(String::from).collect();
    let mut cells: Vec<String> = lines[3].split(',').map(String::from).collect();
    cells[8] = "forty".into();
    lines[3] = cells.join(",");
    std::fs::write(dir.join("samples.csv"), lines.join("\n")).unwrap();
    let o = run(&["report", dir.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("samples.csv"), "{err}");
    assert!(err.contains("line 4, column 9 (round_trip_ns)"), "{err}");
    assert!(!dir.join("index.html").exists(), "nothing written");

    // A row with a column missing.
    lines[3] = good
        .lines()
        .nth(3)
        .unwrap()
        .rsplit_once(',')
        .unwrap()
        .0
        .to_string();
    std::fs::write(dir.join("samples.csv"), lines.join("\n")).unwrap();
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("line 4, column 14 (lost)"),
        "{}",
        text(&o.stderr)
    );

    // Header only.
    std::fs::write(dir.join("samples.csv"), format!("{HEADER}\n")).unwrap();
    let o = run(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no samples"));

    // Good samples, broken summary.json.
    std::fs::write(dir.join("samples.csv"), &good).unwrap();
    std::fs::write(dir.join("summary.json"), "{\"environment\": {\"host\": }").unwrap();
    let o = run(&["report", dir.to_str().unwrap()]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("summary.json: line 1"), "{err}");

    // Missing DIR argument: clap's usage error.
    let o = run(&["report"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn help_describes_the_command() {
    let o = run(&["report", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let h = text(&o.stdout);
    assert!(h.contains("samples.csv") && h.contains("--out") && h.contains("Exit codes"));
}

/// Issue 32: Ctrl-C stops `ivnsec run` at once (its node processes too), the report holds the
/// scenarios that finished before it, marked interrupted, and the exit status is 130. Over UDP
/// on loopback: no root needed.
#[test]
fn run_stops_on_ctrl_c_and_writes_what_it_measured() {
    let dir = tmpdir("interrupt");
    let plan = dir.join("long.toml");
    // One short scenario first (finished within the first seconds), then two of at least 10 s
    // each (10,000 messages at 1 ms).
    std::fs::write(
        &plan,
        "name = \"long\"\n[run]\ncount = 200\nreplications = 50\npause_ms = 1\n\
         [[scenario]]\nprofile = \"plain\"\npayload = 32\ncount = 20\nreplications = 2\n\
         [[scenario]]\nprofile = \"aes128-gcm\"\npayload = 64\n\
         [[scenario]]\nprofile = \"plain\"\npayload = 64\n",
    )
    .unwrap();
    let out = dir.join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ivnsec"))
        .args(["run", plan.to_str().unwrap(), "--on", "loopback", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(child.try_wait().unwrap().is_none(), "the plan ended early");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("still running 10 s after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let took = t0.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        took.as_millis() < 2_000,
        "exit {took:?} after SIGINT: {err}"
    );
    assert_eq!(status.code(), Some(130), "{err}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["interrupted"], true);
    let done = summary["scenarios"].as_array().unwrap();
    assert!(done.len() == 1, "{} scenarios finished", done.len());
    assert_eq!(done[0]["name"], "plain@32");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("Interrupted"), "{md}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("Interrupted"));
    let _ = std::fs::remove_dir_all(&dir);
}
