//! The options and the printing `underload` and `playback` share: the stream's profiles,
//! baselines and site ([`StreamArgs`]), and the report of a sensor-stream run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::site::{Site, Where};
use ivnsec_lab::underload::run::layout;
use ivnsec_lab::underload::{REQUIREMENT_US, UnderloadReport};
use serde_json::Value;

use super::lab::{self, WhereArg};
use crate::output::Json;

/// The options `underload` and `playback` share.
#[derive(clap::Args, Debug)]
pub struct StreamArgs {
    /// Profile to run (repeat for several; `ivnsec suites` lists them). Default: plain,
    /// macsec-gcm-aes-128, esp-null-hmac-sha256 (seed 002's three configurations).
    #[arg(long = "profile", value_name = "PROFILE", value_parser = crate::cmd::profile_arg)]
    pub profiles: Vec<ivnsec_core::profile::NamedProfile>,
    /// Reply to every N-th message (sockperf's --reply-every).
    #[arg(long, default_value_t = 100)]
    pub reply_every: u64,
    /// The one-way requirement, in µs: p99.9 must be below it (seed 002 §5.1: 2000).
    #[arg(long, default_value_t = REQUIREMENT_US)]
    pub requirement_us: f64,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: String,
    /// Where the nodes run: auto (testbed when root, else loopback), testbed, loopback.
    #[arg(long = "on", value_enum, default_value = "auto")]
    pub on: WhereArg,
    /// Use this running testbed (`ivnsec testbed up`) instead of building one.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
    /// Build this bump-in-the-wire topology instead of `sensors:1`, its gateways started by
    /// the run (macsec-gcm-aes-128, a fresh key): `bump` (the legacy sensor1 behind its
    /// gateway sends to a MACsec consumer, whose `ivnsec macsec up` the run starts) or `bump2`
    /// (ecu1 → ecu2, both legacy ECUs behind gateways). Give --profile plain to measure the
    /// gateways' protection alone. Or `production` (seed 002 testbench 3: sensor1 to the
    /// consumer across switches under STP). Not with --testbed.
    /// Example: `sudo ivnsec underload --topology bump --profile plain --seconds 5`
    #[arg(long, value_name = "TOPOLOGY", conflicts_with = "testbed")]
    pub topology: Option<String>,
    /// Run across the hosts of this plan's `[[host]]` tables (docs/multihost.md): the sensor on
    /// the first host, the consumer on the second, over SSH. The one-way delays need one clock:
    /// allowed when both hosts are this machine (namespaces of it) or PTP-synchronised (`ivnsec
    /// clock check --plan PLAN`), else exit 3. One-way delays are then timed on CLOCK_REALTIME;
    /// no sockperf baseline, no --pcap. Example:
    /// ivnsec underload --hosts bench.toml --profile macsec-gcm-aes-128 --seconds 10
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["testbed", "topology"])]
    pub hosts: Option<PathBuf>,
    /// Skip the same-run baselines (the added `plain` run and sockperf).
    #[arg(long)]
    pub no_baseline: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Record the first 1000 protected units the sensor sends (classic pcap, Ethernet; ESP
    /// units get the Ethernet/IPv4 headers they travel with); with several profiles, one file
    /// per profile: FILE.<profile>.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
}

impl StreamArgs {
    /// Opens the site, runs `f` there, and prints the report (JSON on `json` when claimed).
    pub(crate) fn run(
        &self,
        command: &str,
        mut json: Json,
        f: impl FnOnce(&Site, Option<&Path>) -> Result<UnderloadReport>,
    ) -> Result<ExitCode> {
        // Ctrl-C: the profiles that finished are printed, marked interrupted.
        crate::interrupted::watch()?;
        let open = match &self.hosts {
            Some(plan) => ivnsec_lab::plan::open_hosts_of(plan)?,
            None => {
                let layout = match &self.topology {
                    Some(t) => lab::bump_layout(command, t, "sensors:1")?,
                    None => layout(),
                };
                let on = lab::where_for_topology(self.on.into(), self.topology.as_deref())?;
                open(on, self.testbed.as_deref(), &layout)?
            }
        };
        let report = f(&open.site, self.pcap.as_deref())?;
        drop(open);
        finish(&report, &mut json)
    }
}

/// Opens the site of a sensor-stream run: a `sensors:1` testbed (sensor1 → consumer), a
/// bump-in-the-wire testbed of `--topology`, or loopback.
fn open(
    on: Where,
    testbed: Option<&str>,
    layout: &ivnsec_lab::site::Layout,
) -> Result<ivnsec_lab::site::OpenSite> {
    let open = ivnsec_lab::site::open_site(on, testbed, layout)?;
    if let Some(why) = &open.fallback_reason {
        eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
    }
    Ok(open)
}

/// Prints the report (text or JSON) and maps the verdict to the exit code; interrupted, the
/// report (of the profiles that finished) is marked so and the exit code is 128 + signal.
fn finish(r: &UnderloadReport, json: &mut Json) -> Result<ExitCode> {
    if crate::interrupted::requested() {
        if json.claimed() {
            json.print(&crate::interrupted::marked(r))?;
        } else {
            print_report(r);
            println!(
                "{}",
                crate::interrupted::line(
                    "the profile in progress and the sockperf baseline are left out"
                )
            );
        }
        return Ok(crate::interrupted::code());
    }
    if json.claimed() {
        json.print(r)?;
    } else {
        print_report(r);
    }
    Ok(if r.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn fmt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0}"))
}

fn print_report(r: &UnderloadReport) {
    println!("transport: {}", r.transport);
    if let Some(f) = &r.clock_flag {
        println!("{f}");
    }
    println!("settings: {}", r.settings);
    println!(
        "{:<24} {:>7} {:>7} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7}  verdict",
        "one-way (µs)",
        "sent",
        "recv",
        "lost",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "½rtt p50",
        "units"
    );
    for x in &r.runs {
        let o = x.one_way.as_ref();
        println!(
            "{:<24} {:>7} {:>7} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9} {:>7}  {} (late {}, lost {}, allowed {})",
            x.profile,
            x.messages.sent,
            x.messages.received,
            x.messages.lost,
            fmt_us(o.map(|s| s.p50_us)),
            fmt_us(o.map(|s| s.p90_us)),
            fmt_us(o.map(|s| s.p99_us)),
            fmt_us(o.map(|s| s.p999_us)),
            fmt_us(o.map(|s| s.max_us)),
            fmt_us(x.replies.half_rtt.as_ref().map(|s| s.p50_us)),
            x.units_sent,
            lab::pass(x.verdict.passed),
            x.verdict.late,
            x.verdict.lost,
            x.verdict.allowed,
        );
    }
    println!(
        "CPU (% of all cores): sensor, consumer, machine; ns per message byte sent / received"
    );
    for x in &r.runs {
        let c = &x.cpu;
        let inc = c.increase_over_plain.map_or(String::new(), |i| {
            format!(
                "; machine {:+.1} points over plain ({})",
                i.system_pct,
                if i.within_5pct {
                    "< 5: PASS"
                } else {
                    "≥ 5: FAIL"
                }
            )
        });
        println!(
            "  {:<22} {:>5.1} {:>5.1} {:>5.1}   {} / {}{inc}",
            x.profile,
            c.sender_pct,
            c.receiver_pct,
            c.system_pct,
            c.sender_ns_per_byte
                .map_or("-".into(), |v| format!("{v:.2}")),
            c.receiver_ns_per_byte
                .map_or("-".into(), |v| format!("{v:.2}")),
        );
        for (reason, n) in &x.rejected {
            println!("    consumer rejected {n}: {reason}");
        }
        for (reason, n) in &x.replies.rejected {
            println!("    sensor rejected {n} reply units: {reason}");
        }
    }
    if let Some(Value::Object(s)) = r.baseline.get("sockperf") {
        let g = |k: &str| s.get(k).and_then(Value::as_f64);
        println!(
            "sockperf (same path, UDP, half round trips of {} replied messages): p50 {} p90 {} p99 {} p99.9 {} max {} µs; dropped {}",
            s.get("observations").map_or("?".into(), Value::to_string),
            fmt_us(g("half_rtt_p50_us")),
            fmt_us(g("half_rtt_p90_us")),
            fmt_us(g("half_rtt_p99_us")),
            fmt_us(g("half_rtt_p999_us")),
            fmt_us(g("half_rtt_max_us")),
            s.get("dropped_messages")
                .map_or("?".into(), Value::to_string),
        );
    }
    println!(
        "requirement: p99.9 of the one-way delay < {} µs (seed 002 §5.1): {}",
        r.runs
            .first()
            .map_or(REQUIREMENT_US, |x| x.verdict.requirement_us),
        if r.passed { "PASS" } else { "FAIL" }
    );
}
