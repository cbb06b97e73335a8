//! `ivnsec validate`: the main job. Testbed up → plan → sockperf baseline → report → testbed
//! down, then the verdict table and the report path.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::plan;
use ivnsec_lab::plan::run::{compare_with_baseline, run_plan};
use ivnsec_lab::site::Site;
use ivnsec_lab::sockperf::pingpong_baseline;

use super::common::plan::{Bar, Overrides, finish};

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
000's 56 scenarios × 120 × 30), seed001 (seed 001's TDMA capacity: the analysis of 60/80-byte \
frames under plain, HMAC-SHA1/SHA256/SHA3-256 and the AEAD suites on 1-5 cascaded switches and, \
as root, slot-timed runs on cascade:1..5 testbeds, 90 runs of 200 base periods, about 4 minutes; \
single-frame HMAC times; beside Tables 3, 7, 11 and Figure 6; without root the analysis and the \
HMAC table only), seed002 (seed 002 testbench 1: no security, IPsec ESP \
HMAC-SHA256-128 and MACsec GCM-AES-128 integrity only; ping-pong, then throughput and CPU of \
three sensors at 1 Gb/s beside plain and iperf3) and seed003 (secured SOME/IP over UDP with the five AEAD suites of seed 003 \
at auth and conf, throughput and CPU at 1 Gb/s) and seed004 (seed 004: ping p50/p99/p99.9 by \
packet size, 64 to 8000 bytes, plain, through `ivnsec esp up` and through `ivnsec macsec up`; \
iperf3 TCP and a 128 MiB scp plain and through the ESP tunnel with CPU, as root only, each on \
a pair testbed of its own; AES by chunk size and the offload break-evens; TLS handshakes beside \
Tables 5.1 and 5.2; ESP protect/verify cost per size). Throughput verdicts are seed 002's cost rules: \
< 5 % goodput and < 5 points of CPU over the same run's plain.

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second: its nodes are stopped, \
the testbed is removed, and the report holds the scenarios and experiments that finished \
before it, marked interrupted (summary.json \"interrupted\": true).

Exit codes: 0 every verdict passed, 1 a verdict failed (after writing the report), 2 usage \
error, 3 a missing privilege or tool for the requested site, 130 interrupted by Ctrl-C (128 + \
the signal: 143 for SIGTERM).

Examples:
  sudo ivnsec validate
  sudo ivnsec validate --preset seed000 --out seed000-report/
  sudo ivnsec validate --preset seed001 --out seed001-report/
  sudo ivnsec validate --preset seed004 --out seed004-report/
  ivnsec validate --on loopback --count 50 --replications 2")]
pub struct Args {
    /// The plan preset: quick, seed000, seed001, seed002, seed003 or seed004.
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
    // Ctrl-C stops the run between (and inside) measurements; the report is still written.
    crate::interrupted::watch()?;
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
                (Site::Hosts { .. }, _) => {
                    eprintln!("ivnsec validate: {}", open.site.transport())
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
                pingpong_baseline(open, s0.mode, s0.pause_ns)
            }
        }
        None => None,
    };
    let report = run_plan(
        &plan,
        &a.overrides.settings(),
        open,
        baseline,
        &a.out,
        &mut Bar::default(),
    )?;
    let mut report = report;
    compare_with_baseline(&mut report);
    finish(&report, &a.out)
}
