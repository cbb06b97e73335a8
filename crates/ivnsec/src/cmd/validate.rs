//! `ivnsec validate`: the main job. Testbed up → plan → sockperf baseline → report → testbed
//! down, then the verdict table and the report path.

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::Result;
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::netns_command;
use serde_json::{Value, json};

use super::run::{Overrides, finish, run_plan};
use crate::plan;
use ivnsec_lab::pingpong::run::Mode;
use ivnsec_lab::site::OpenSite;
use ivnsec_lab::site::Site;
use ivnsec_lab::sockperf::parse_sockperf;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Answers seed 000's question on this machine: does the protection still meet the control-data \
deadline (one-way delay ≤ 2.5 ms worst case with a 25 % margin, RTT ≤ 5 ms) and the sensor-data \
bound (p99.9 < 2 ms)?

As root it builds a `pair` testbed (two ECU namespaces, veth, a Linux bridge), runs the preset's \
scenarios between two processes over raw Ethernet, and removes the testbed; without root it runs \
over UDP on loopback and says so. When sockperf is installed, its UDP ping-pong runs on the same \
path and mode and sits beside our `plain` scenario in the report (baseline.sockperf).

Presets: quick (default, about a minute: plain, crc32, aes256-cbc-hmac-sha256, aes128-gcm, \
chacha20-poly1305, macsec-gcm-aes-128, esp-aes128-gcm at 64 and 1440 bytes), seed000 (seed \
000's 56 scenarios × 120 × 30), seed002 (seed 002 testbench 1: no security, IPsec ESP \
HMAC-SHA256-128 and MACsec GCM-AES-128 integrity only; ping-pong, then throughput and CPU of \
three sensors at 1 Gb/s beside plain and iperf3) and seed003 (secured SOME/IP over UDP with the five AEAD suites of seed 003 \
at auth and conf, throughput and CPU at 1 Gb/s). Throughput verdicts are seed 002's cost rules: \
< 5 % goodput and < 5 points of CPU over the same run's plain.

Exit codes: 0 every verdict passed, 1 a verdict failed (after writing the report), 2 usage \
error, 3 a missing privilege or tool for the requested site.

Examples:
  sudo ivnsec validate
  sudo ivnsec validate --preset seed000 --out seed000-report/
  ivnsec validate --on loopback --count 50 --replications 2")]
pub struct Args {
    /// The plan preset: quick, seed000, seed002 or seed003.
    #[arg(long, default_value = "quick")]
    pub preset: String,
    /// Report directory.
    #[arg(long, default_value = "ivnsec-report")]
    pub out: PathBuf,
    /// Skip the sockperf baseline even when sockperf is installed.
    #[arg(long)]
    pub no_baseline: bool,
    #[command(flatten)]
    pub overrides: Overrides,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let plan = plan::preset(&a.preset, &a.overrides.run_section())?;
    ivnsec_lab::site::ensure_dir(&a.out)?;
    let open = if plan.scenarios.is_empty() {
        None
    } else {
        Some(a.overrides.open_site(&plan)?)
    };
    let baseline = match &open {
        Some(open) => {
            match (&open.site, &open.fallback_reason) {
                (Site::Loopback, Some(why)) => eprintln!(
                    "ivnsec validate: no testbed ({why}).\n  Running over UDP on loopback instead: \
                     the figures show the cost of the protection on this host, not a \
                     vehicle-network path."
                ),
                (Site::Loopback, None) => {
                    eprintln!("ivnsec validate: running over UDP on loopback")
                }
                (Site::Testbed { state, .. }, _) => eprintln!(
                    "ivnsec validate: testbed {} up ({}); preset {} = {} scenarios, {} exchanges",
                    state.prefix,
                    state.topology,
                    plan.name,
                    plan.scenarios.len(),
                    plan.exchanges()
                ),
            }
            let s0 = &plan.scenarios[0];
            if a.no_baseline {
                None
            } else {
                sockperf_baseline(open, s0.mode, s0.pause_ns)
            }
        }
        None => None,
    };
    let report = run_plan(&plan, &a.overrides, open, baseline, &a.out)?;
    let mut report = report;
    compare_with_baseline(&mut report);
    finish(&report, &a.out)
}

/// Port of the sockperf server.
const SOCKPERF_PORT: u16 = 11111;

/// sockperf UDP ping-pong (64-byte messages) on the site's path; `None` (with a note) when
/// sockperf is missing or fails. Figures are half round trips in µs, as sockperf reports them.
fn sockperf_baseline(open: &OpenSite, mode: Mode, pause_ns: u64) -> Option<Value> {
    if !ivnsec_lab::site::baseline_tool_installed("validate", "sockperf") {
        return None;
    }
    let (server_ip, mut server, mut client) = match &open.site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => {
            let ip = state.ipv4_of(responder)?.to_string();
            (
                ip,
                netns_command(state.namespace_of(responder).ok()?, "sockperf"),
                netns_command(state.namespace_of(initiator).ok()?, "sockperf"),
            )
        }
        Site::Loopback => (
            "127.0.0.1".to_string(),
            Command::new("sockperf"),
            Command::new("sockperf"),
        ),
    };
    let port = SOCKPERF_PORT.to_string();
    let mut srv = die_with_parent(&mut server)
        .args(["server", "-i", &server_ip, "-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    std::thread::sleep(Duration::from_millis(300));
    // Same pacing as our exchanges: at most one message per pause.
    let mps = 1_000_000_000u64
        .checked_div(pause_ns)
        .map_or_else(|| "max".to_string(), |m| m.max(1).to_string());
    let mut args: Vec<String> = [
        "ping-pong",
        "-i",
        &server_ip,
        "-p",
        &port,
        "-m",
        "64",
        "-t",
        "5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--mps={mps}"));
    if mode == Mode::BusyPoll {
        args.push("--nonblocked".into());
    }
    let out = die_with_parent(&mut client).args(&args).output();
    let _ = srv.kill();
    let _ = srv.wait();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!(
                "ivnsec validate: sockperf ping-pong failed ({}); no baseline",
                o.status
            );
            return None;
        }
        Err(e) => {
            eprintln!("ivnsec validate: sockperf ping-pong: {e}; no baseline");
            return None;
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut v = parse_sockperf(&text)?;
    if let Value::Object(m) = &mut v {
        m.insert(
            "command".into(),
            json!(format!("sockperf {}", args.join(" "))),
        );
        m.insert("path".into(), json!(open.site.transport()));
        m.insert("mode".into(), json!(mode.as_str()));
    }
    Some(v)
}

/// Adds our half round trips (part 3 / 2: send until the reply is back, responder included —
/// what sockperf's client measures) and their ratios to sockperf's median, for `plain` and
/// `aes128-gcm` at 64 bytes.
fn compare_with_baseline(report: &mut ivnsec_lab::report::Report) {
    let Some(Value::Object(b)) = &mut report.baseline_sockperf else {
        return;
    };
    let Some(theirs) = b.get("half_rtt_p50_us").and_then(Value::as_f64) else {
        return;
    };
    for (profile, key) in [("plain", "plain"), ("aes128-gcm", "aes128_gcm")] {
        let Some(run) = report
            .scenarios
            .iter()
            .find(|r| r.payload == 64 && r.profile == profile)
        else {
            continue;
        };
        let mut half: Vec<f64> = run
            .exchanges
            .iter()
            .filter(|e| !e.lost)
            .map(|e| e.round_trip_ns as f64 / 2000.0)
            .collect();
        if half.is_empty() {
            continue;
        }
        half.sort_by(f64::total_cmp);
        let ours = ivnsec_lab::stats::quantile_sorted(&half, 0.5);
        b.insert(format!("ours_{key}_64_half_rtt_p50_us"), json!(ours));
        b.insert(format!("ratio_{key}_64"), json!(ours / theirs));
    }
    b.insert(
        "targets".into(),
        json!(
            "ours (part 3 / 2) / sockperf half round trip, medians: plain ≤ 1.1, aes128-gcm 64 B ≤ 1.2"
        ),
    );
}
