//! `ivnsec underload`: seed 002's sockperf *under-load* test (§5.2.1) with our protection: a
//! sensor streams 24,938-byte lidar messages at 950 messages/s to the consumer, every message
//! cut into fragments that are each protected, the consumer measures every message's one-way
//! delay and sends every 100th back; per profile the p99.9 < 2 ms verdict of §5.1, loss, round
//! trips and CPU, beside the `plain` run and `sockperf under-load` on the same path in the same
//! invocation.
//!
//! The command line and the printing; the experiment is `ivnsec_lab::underload::run` (shared
//! with `ivnsec playback`, the same roles on a timeline).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::site::{Site, Where};
use ivnsec_lab::underload::run::{UnderloadConfig, layout, run_underload};
use ivnsec_lab::underload::{REQUIREMENT_US, UnderloadReport};
use serde_json::Value;

use super::lab::{self, WhereArg};
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Seed 002's sockperf under-load test with our protection. A sensor (the `sensor1` ECU) sends \
--size-byte messages at --mps messages per second for --seconds to the consumer; every message \
carries its sequence number and send time (CLOCK_MONOTONIC, shared by every namespace of the \
host) and is cut into fragments that each fit the 1500-byte MTU and are each protected by the \
profile (docs/fragmentation.md). The consumer verifies every fragment, reassembles, records \
each message's one-way delay (send → last fragment verified) and sends every --reply-every-th \
message back whole, so round trips are measured too, like sockperf.

Reported per profile: messages sent/received/lost, one-way p50/p90/p99/p99.9/max, round trips \
and half round trips of the replied messages, units the consumer rejected, the verdict \
`p99.9 < --requirement-us` (at least 99.9 % of the messages sent arrived in time; a lost \
message counts as late), and CPU: sensor, consumer and the whole machine (/proc/stat every \
second) as % of all cores, CPU ns per message byte, and the increase over the `plain` run made \
first in the same invocation (seed 002's < 5 % rule).

Baseline in the same run: when sockperf is installed, `sockperf under-load` (UDP, the same \
--mps, -m --size, --reply-every and duration; the kernel IP-fragments its datagrams) runs between \
the same two ECUs; its figures (half round trips of the replied messages, as sockperf prints \
them) sit under baseline.sockperf beside our plain run's half round trips.

As root, a `sensors:1` testbed (sensor1 and consumer on one switch) is built and removed \
afterwards, or --testbed PREFIX uses a running one (its sensor1 and consumer, else its first and \
last ECUs); otherwise both processes talk UDP on loopback, which the output says. --topology \
bump|bump2 runs through bump-in-the-wire gateways the run starts instead (seed 002 testbench 2; \
docs/gateway.md); --topology production from sensor1 to the consumer across seed 002's \
testbench 3 (switches with redundant links under STP; docs/testbed.md), where --outage takes \
links down and up during the run (docs/experiments.md).

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its nodes, sockperf and \
the testbed go): the report holds the profiles that finished before it, marked \
`\"interrupted\": true` in JSON and by a last line `interrupted: …` in text (with --outage: \
the profiles whose whole outage schedule finished).

Exit codes: 0 every profile met the requirement, 1 one did not, 2 usage error, 3 a missing \
privilege or tool for the requested site, 130 interrupted by Ctrl-C (128 + the signal).

Examples:
  ivnsec underload
  ivnsec underload --profile plain --profile macsec-gcm-aes-128 --profile esp-null-hmac-sha256 --seconds 10 --json
  ivnsec underload --profile aes128-gcm --size 1400 --mps 5000 --reply-every 10 --pcap ul.pcap
  sudo ivnsec underload --topology bump --profile plain --seconds 5 --json
  sudo ivnsec underload --topology production --profile macsec-gcm-aes-128 --outage 2@30 --json")]
pub struct Args {
    /// Message size in bytes (16 ..= 1048576; seed 002: a 24,938-byte lidar packet).
    #[arg(long, default_value_t = 24_938)]
    pub size: usize,
    /// Messages per second.
    #[arg(long, default_value_t = 950.0)]
    pub mps: f64,
    /// How long each profile's sensor sends, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Link outages during the run (needs --topology production): N links chosen at random
    /// (seeded: --outage-seed) go down for 12 s each, one every SECONDS (default 25), and come
    /// back, while sensor1 streams to the consumer. Runs `plain` first, then each --profile,
    /// each sending for the whole schedule (3 s before the first outage, 8 s after the last
    /// link came back; --seconds is set from it), with the same outages; reports per outage
    /// and profile the messages lost, the time to recover, the spanning tree's settling time,
    /// the one-way delays while the network re-converges (median, p99, max), and whether the
    /// MKA sessions (the consumer and the gateways, started on one pre-shared CAK) survived or
    /// re-established; the same report as `pingpong --outage` with `messages` and
    /// `one_way_…_us` for `exchanges` and `rtt_…_us`. No sockperf baseline. Exit 1 when an
    /// outage was not recovered from or an MKA participant ended without its peers.
    /// Example: `sudo ivnsec underload --topology production --profile macsec-gcm-aes-128
    /// --outage 1`.
    #[arg(
        long,
        value_name = "N[@SECONDS]",
        conflicts_with_all = ["seconds", "pcap", "hosts"]
    )]
    pub outage: Option<String>,
    /// The seed of the outages' link choice (default: a random one, printed in the report).
    #[arg(long, value_name = "SEED", requires = "outage")]
    pub outage_seed: Option<u64>,
    #[command(flatten)]
    pub stream: StreamArgs,
}

/// The options `underload` and `playback` share.
#[derive(clap::Args, Debug)]
pub struct StreamArgs {
    /// Profile to run (repeat for several; `ivnsec suites` lists them). Default: plain,
    /// macsec-gcm-aes-128, esp-null-hmac-sha256 (seed 002's three configurations).
    #[arg(long = "profile", value_name = "PROFILE", value_parser = super::profile_arg)]
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

pub fn run(a: Args) -> Result<ExitCode> {
    let json = Json::claim(a.stream.json)?;
    let st = &a.stream;
    let mut cfg = UnderloadConfig {
        size: a.size,
        mps: a.mps,
        reply_every: st.reply_every,
        seconds: a.seconds,
        requirement_us: st.requirement_us,
        provider: st.provider.clone(),
        baseline: !st.no_baseline,
        ..UnderloadConfig::default()
    };
    if !st.profiles.is_empty() {
        cfg.profiles = st.profiles.clone();
    }
    if let Some(text) = &a.outage {
        let spec = super::outage::spec(text, st.topology.as_deref(), a.outage_seed)?;
        cfg.seconds = spec.duration_s();
        cfg.check()?;
        return outage(&cfg, &spec, json);
    }
    cfg.check()?;
    st.run("underload", json, |site, pcap| {
        run_underload(site, &cfg, pcap)
    })
}

/// `underload --outage`: plain, then each profile, on a fresh `production` testbed with the
/// same seeded link outages (ivnsec_lab::underload::outage).
fn outage(
    cfg: &UnderloadConfig,
    spec: &ivnsec_lab::outage::OutageSpec,
    mut json: Json,
) -> Result<ExitCode> {
    // Ctrl-C: the profiles that finished are printed, marked interrupted.
    crate::interrupted::watch()?;
    let report = ivnsec_lab::underload::outage::run_underload_outage(cfg, spec)?;
    super::outage::finish(&report, &mut json)
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
