//! `ivnsec tdma`: time-triggered (TDMA) networks, seed 001 (docs/tdma.md, docs/tdma-run.md).
//! `capacity` is the analysis of how many frames fit in a base period
//! (`ivnsec_lab::tdma::capacity`); `schedule` places periodic flows in the slots of a base period
//! on a `cascade:N` topology; `run` executes a schedule on a testbed with slot-timed senders and
//! measures it. The work is `ivnsec_lab::tdma`; this module reads the options and prints.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::tdma::capacity::{self, ExactTime, MaxTt, Method, Query, Row, Switches, Tag};
use ivnsec_lab::tdma::flows::{self, parse_duration, parse_rate};
use ivnsec_lab::tdma::run::{RunConfig, run_profile};
use ivnsec_lab::tdma::schedule::{NoFit, Params, Schedule, build};
use ivnsec_lab::tdma::{Duration, Rate};

use crate::error::usage;
use crate::output::Json;
use ivnsec_core::profile::NamedProfile;

/// The `tdma` subcommands.
#[derive(Subcommand, Debug)]
pub enum Args {
    /// How many frames fit in one TDMA base period: seed 001's NF_max (eq. 1, 2, 4, 9), exactly.
    ///
    /// For every frame size and switch count: the frame time (frame bytes x 8 / rate, eq. 2, or
    /// the measured one given with --frame-time) and NF_max = floor(BP / (Frame_time + GP x
    /// N_switch)) (eq. 1 and 9). With a maximum transmission time (--max-tt, or eq. 4 Max_TT =
    /// 2 x (Frame_time - SO) + Diff from --switch-overhead and --diff) NF_max = floor(BP /
    /// Max_TT) instead, as seed 001's Tables 7 and 10. Times are computed as exact fractions
    /// of picoseconds, never in floating point. See docs/tdma.md.
    Capacity(CapacityArgs),
    /// Place periodic flows in the slots of a TDMA base period (slot = frame time + GP × N
    /// switches, seed 001 eq. 9), or say which flow does not fit and why.
    Schedule(ScheduleArgs),
    /// Run a schedule on a cascade:N testbed: slot-timed protected frames, send jitter, one-way
    /// delay, switch forwarding delay, deadline misses and frames per base period (needs root).
    Run(RunArgs),
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Durations take a unit: s, ms, us, ns, ps (10ms, 0.2ms, 115us); rates \
are bits per second with an optional k, M or G (100M, 54M, 1G). Frame bytes are the Ethernet \
frame without preamble, FCS and inter-frame gap, as in seed 001. In the table, slot is what one \
frame takes of the base period (Frame_time + GP x N_switch, or Max_TT); ~ marks a value rounded \
to 6 decimals.

Examples:
  # seed 001 Table 3: TTEthernet, 100 Mb/s, 60-byte frames and 60 + 20 (HMAC-SHA1)
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 80
  # Table 11: measured frame times (0.115 ms, 0.15 ms), 1 to 5 cascaded switches
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60,80 \\
      --frame-time 0.115ms,0.15ms --switches 1..5
  # Table 7 measured: eq. 4 with SO = 0.1 ms and Diff = 0.2 ms
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 \\
      --frame-time 0.115ms --switch-overhead 0.1ms --diff 0.2ms
  # Table 10 measured: a measured Max_TT on 802.11 (54 Mb/s)
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 54M --frame 60 --max-tt 1.024ms --json
  # what our suites cost in frames per base period
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 --suite hmac-sha256
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 --suite macsec-gcm-aes-128"
)]
pub struct CapacityArgs {
    /// Base period BP (seed 001: 10ms).
    #[arg(long, value_name = "DURATION")]
    bp: Duration,
    /// Guard period GP, added once per switch (seed 001: 0.2ms; 0ms for none).
    #[arg(long, value_name = "DURATION")]
    gp: Duration,
    /// Transmission rate of eq. 2 (seed 001: 100M TTEthernet, 54M 802.11g).
    #[arg(long, value_name = "RATE")]
    rate: Rate,
    /// Frame sizes in bytes (1 to 256 of them, space- or comma-separated); every size is a row
    /// for every switch count.
    #[arg(long = "frame", value_name = "BYTES", num_args = 1.., value_delimiter = ',', required = true)]
    frames: Vec<u32>,
    /// Measured frame times instead of eq. 2: one for every frame, or one per --frame in the
    /// same order.
    #[arg(long = "frame-time", value_name = "DURATION", num_args = 1.., value_delimiter = ',')]
    frame_times: Vec<Duration>,
    /// Switches a frame crosses, N_switch of eq. 9: N, or A..B for every count from A to B
    /// (both included), 1 to 1024.
    #[arg(long, value_name = "N|A..B", default_value = "1")]
    switches: Switches,
    /// Measured maximum transmission time: NF_max = floor(BP / Max_TT). One for every frame, or
    /// one per --frame in the same order.
    #[arg(
        long = "max-tt",
        value_name = "DURATION",
        num_args = 1..,
        value_delimiter = ',',
        conflicts_with_all = ["switch_overhead", "diff"]
    )]
    max_tt: Vec<Duration>,
    /// Switch overhead SO of eq. 4, Max_TT = 2 x (Frame_time - SO) + Diff (needs --diff).
    #[arg(long, value_name = "DURATION", requires = "diff")]
    switch_overhead: Option<Duration>,
    /// Diff of eq. 4: the time the switch takes to forward a frame (needs --switch-overhead).
    #[arg(long, value_name = "DURATION", requires = "switch_overhead")]
    diff: Option<Duration>,
    /// Tag bytes added to every frame (20 for HMAC-SHA1, 32 for HMAC-SHA256); each row also
    /// shows NF_max without the tag.
    #[arg(long, value_name = "N", conflicts_with = "suite")]
    tag_bytes: Option<u32>,
    /// Add what an IVN-AE or MACsec profile adds to each plain Ethernet frame (header, tag,
    /// padding; `ivnsec suites` lists them), e.g. hmac-sha1, aes128-gcm, macsec-gcm-aes-128.
    #[arg(long, value_name = "PROFILE", value_parser = super::profile_arg)]
    suite: Option<NamedProfile>,
    /// Print {"rows": [{frame_bytes, rate_bps, bp_ms, gp_ms, switches, frame_time_ms,
    /// max_tt_ms, nf_max}]} instead of a table (max_tt_ms null without a Max_TT).
    #[arg(long)]
    json: bool,
}

impl CapacityArgs {
    /// The lab's query for these options.
    fn query(&self) -> Result<Query> {
        let tag = match (&self.suite, self.tag_bytes) {
            (Some(p), _) => Tag::Suite(p.profile()),
            (None, Some(n)) => Tag::Bytes(n),
            (None, None) => Tag::None,
        };
        let max_tt = match (self.switch_overhead, self.diff) {
            (Some(switch_overhead), Some(diff)) => MaxTt::Eq4 {
                switch_overhead,
                diff,
            },
            _ if !self.max_tt.is_empty() => MaxTt::Given(self.max_tt.clone()),
            _ => MaxTt::None,
        };
        Ok(Query {
            bp: self.bp,
            gp: self.gp,
            rate: self.rate,
            frames: self.frames.clone(),
            frame_times: self.frame_times.clone(),
            switches: self.switches,
            max_tt,
            tag,
        })
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Capacity(a) => run_capacity(a),
        Args::Schedule(s) => schedule(s),
        Args::Run(r) => run_schedule(r),
    }
}

fn run_capacity(args: CapacityArgs) -> Result<ExitCode> {
    let query = args.query()?;
    let rows = query.rows()?;
    let mut json = Json::claim(args.json)?;
    if args.json {
        json.print(&capacity::json(&rows))?;
    } else {
        print_table(&mut std::io::stdout().lock(), &args, &query, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Decimals of the milliseconds in the table.
const MS_DECIMALS: u32 = 6;

/// A duration in milliseconds for the table (`0.2`, `~0.000001` below the precision).
fn ms(d: Duration) -> String {
    ExactTime::from(d).ms_text(MS_DECIMALS)
}

fn print_table(out: &mut impl Write, args: &CapacityArgs, q: &Query, rows: &[Row]) -> Result<()> {
    match q.method() {
        Method::Eq1 => writeln!(
            out,
            "NF_max = floor(BP / (Frame_time + GP x N_switch))   (seed 001 eq. 1, 9)"
        )?,
        Method::Eq4 => writeln!(
            out,
            "NF_max = floor(BP / Max_TT), Max_TT = 2 x (Frame_time - SO) + Diff   (seed 001 eq. 4), \
SO {} ms, Diff {} ms",
            ms(args.switch_overhead.unwrap_or_default()),
            ms(args.diff.unwrap_or_default())
        )?,
        Method::MaxTtGiven => writeln!(out, "NF_max = floor(BP / Max_TT), Max_TT measured")?,
    }
    if q.frame_times.is_empty() {
        writeln!(out, "Frame_time = frame bytes x 8 / rate   (eq. 2)")?;
    } else {
        writeln!(out, "Frame_time measured")?;
    }
    let rate = q.rate.to_string();
    let (number, multiplier) = rate.split_at(rate.trim_end_matches(char::is_alphabetic).len());
    write!(
        out,
        "BP {} ms, GP {} ms, rate {number} {multiplier}b/s",
        ms(q.bp),
        ms(q.gp)
    )?;
    match &q.tag {
        Tag::None => writeln!(out)?,
        Tag::Bytes(n) => writeln!(out, ", tag {n} bytes per frame")?,
        Tag::Suite(p) => writeln!(out, ", tag: what {p} adds to each frame")?,
    }
    writeln!(out)?;
    let tagged = q.tag != Tag::None;
    write!(
        out,
        "{:>12} {:>8} {:>14} {:>14} {:>14} {:>8}",
        "frame bytes", "N_switch", "Frame_time ms", "slot ms", "Max_TT ms", "NF_max"
    )?;
    if tagged {
        write!(out, " {:>15}", "NF_max untagged")?;
    }
    writeln!(out)?;
    for r in rows {
        let frame = if tagged {
            format!("{}+{}", r.frame, r.tag_bytes)
        } else {
            r.frame_bytes.to_string()
        };
        write!(
            out,
            "{:>12} {:>8} {:>14} {:>14} {:>14} {:>8}",
            frame,
            r.switches,
            r.frame_time.ms_text(MS_DECIMALS),
            r.slot.ms_text(MS_DECIMALS),
            r.max_tt.map_or("-".to_string(), |t| t.ms_text(MS_DECIMALS)),
            r.nf_max
        )?;
        if let Some(n) = r.nf_max_untagged {
            write!(out, " {n:>15}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Where the schedule comes from and its time frame.
#[derive(clap::Args, Debug)]
pub struct FrameArgs {
    /// Base period (BP), with a unit: 10ms, 2.5ms, 500us.
    #[arg(long)]
    pub bp: Option<String>,
    /// Guard period (GP) per switch, with a unit: 0.2ms, 50us, 0ms.
    #[arg(long)]
    pub gp: Option<String>,
    /// The flows file (TOML, [[flow]] tables; docs/tdma-run.md describes it).
    #[arg(long, value_name = "FILE")]
    pub flows: Option<PathBuf>,
    /// The testbed topology: cascade:N (ecu1 and ecu2 with N switches between them). Default
    /// cascade:1.
    #[arg(long)]
    pub topology: Option<String>,
    /// Line rate that turns frame bytes into frame time (bytes × 8 / rate, seed 001 eq. 2):
    /// 100M (TTEthernet, the default), 54M, 1G, or bits per second.
    #[arg(long)]
    pub rate: Option<String>,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Each flow sends one frame every `period` base periods; its slot is its frame time (frame bytes × \
8 / --rate) plus one guard period per switch on the way, and it ends when the last switch's guard \
period ends. Flows are placed in file order at the earliest offset free in every base period \
they use (trying every phase of their period). The table lists every slot with the window of \
the sender and of each switch, the use of each base period, and NF_max = ⌊BP / (Frame_time + GP \
× N_switch)⌋ per frame size.

Exit codes: 0 the flows fit, 1 a flow does not fit (the reason names it, the slot time it needs \
and the time left), 2 a bad option or flows file (the error names the file and the key).

Flows file (docs/tdma-run.md):
  [[flow]]
  name = \"steer\"
  from = \"ecu1\"
  to = \"ecu2\"
  frame_bytes = 60      # or: payload = 40 with profile = \"hmac-sha1\" (or --profile)
  period = 1            # in base periods

Examples (flows.toml as in docs/tdma-run.md, whose flows give a `payload`: --profile frames it):
  ivnsec tdma schedule --bp 10ms --gp 0.2ms --flows flows.toml --profile hmac-sha1
  ivnsec tdma schedule --bp 10ms --gp 0.2ms --flows flows.toml --topology cascade:3 \\
      --profile hmac-sha1 --json > s.json")]
pub struct ScheduleArgs {
    #[command(flatten)]
    pub frame: FrameArgs,
    /// Profile that frames the flows given with a payload (a flow's own `profile` wins).
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: Option<NamedProfile>,
    /// Crypto provider (for frame sizes): portable, fast, openssl, or auto.
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print the schedule as JSON (what `tdma run --schedule` reads).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Builds a cascade:N testbed (network namespaces; needs root, exit 3 otherwise), runs the schedule \
for --periods base periods and removes the testbed. Each ECU process protects its flows' frames \
with --profile and sends each at its slot start on the CLOCK_MONOTONIC all namespaces share \
(timed in the sender: sleep, then spin; not by a taprio qdisc); receivers record arrival times; \
a probe in every switch namespace takes kernel receive timestamps at the bridge ports. Run it \
under `chrt -f 20` (SCHED_FIFO) so other processes of the host disturb the slots less.

Per slot: send error (send call − slot start) and one-way delay (p50/p99/max), the forwarding \
delay of every switch (seed 001 Table 6 \"Diff\": next hop's ingress − this switch's ingress), \
deadline misses (arrived after the slot ended) and lost frames. Then the capacity: the largest \
number of evenly spaced frames per base period from ecu1 to ecu2 that all arrived within their \
slots (k = 1, 2, 4, … up to eq. 9's NF_max, then bisection), beside NF_max and ⌊BP / Max_TT⌋ \
with the measured Max_TT (seed 001 Table 7, measured). docs/tdma-run.md explains every figure.

Across hosts (--hosts PLAN, docs/multihost.md): ecu1 runs on the plan's first [[host]], ecu2 on \
its second, started over SSH with their keys on the SSH channel; nothing is built. Allowed only \
when both hosts share this machine's clock (the same boot id) or are PTP-synchronised (`ivnsec \
clock check --plan PLAN`), exit 3 otherwise; the slots, the start and every stamp are on each \
host's CLOCK_REALTIME, and the clocks are watched during the run (clock_during_run, clock_flag). \
The bench's switches run no probe of ivnsec's: the per-switch forwarding delay (Table 6 \
\"Diff\") is reported as not measured with the reason; --topology cascade:N declares how many \
switches lie between the hosts (eq. 9's GP × N_switch). No --pcap there.

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its ECUs, probes and the \
testbed go). If the schedule run had finished, its result is printed with the capacity steps \
that finished, marked `\"interrupted\": true` in JSON and by a last line `interrupted: …` in \
text; else {\"interrupted\": true, \"profile\": …} (text: that line alone).

Exit codes: 0 every frame arrived within its slot, 1 a miss or a lost frame, 2 bad options or \
input, 3 not root or no `ip` command (across hosts: a host unreachable, its node failed or its \
SSH connection was lost, or clocks neither shared nor PTP-synchronised), 130 interrupted by \
Ctrl-C (128 + the signal).

Examples:
  ivnsec tdma run --flows flows.toml --bp 10ms --gp 0.2ms --topology cascade:2 --profile hmac-sha1
  ivnsec tdma run --schedule s.json --profile hmac-sha1 --periods 1000 --json
  ivnsec tdma run --flows flows.toml --bp 10ms --gp 0ms --profile plain --pcap tdma.pcap
  ivnsec tdma run --hosts bench.toml --flows flows.toml --bp 10ms --gp 0.2ms --profile hmac-sha1 \\
      --periods 200 --json")]
pub struct RunArgs {
    /// A schedule written by `tdma schedule --json` (instead of --flows, --bp, --gp,
    /// --topology, --rate).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["flows", "bp", "gp", "topology", "rate"])]
    pub schedule: Option<PathBuf>,
    #[command(flatten)]
    pub frame: FrameArgs,
    /// Profile of every frame (`ivnsec suites` lists them). Default: the profile the flows
    /// name, else plain.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: Option<NamedProfile>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Base periods to run the schedule (and each capacity step) for.
    #[arg(long, default_value_t = 100)]
    pub periods: u32,
    /// Skip the capacity steps (frames per base period with no miss).
    #[arg(long)]
    pub no_capacity: bool,
    /// Record every frame the ECUs send in the schedule run (classic pcap, Ethernet; ESP and UDP
    /// units with the headers they travel with; read it with tshark).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Run between the first two hosts of this plan's `[[host]]` tables over SSH (ecu1 on the
    /// first, ecu2 on the second; docs/multihost.md): only when they share this machine's clock
    /// or are PTP-synchronised (exit 3 otherwise); no switch probe (Table 6 "Diff" not measured).
    /// Example: ivnsec tdma run --hosts bench.toml --flows flows.toml --bp 10ms --gp 0.2ms
    #[arg(long, value_name = "PLAN", conflicts_with = "pcap")]
    pub hosts: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The schedule of `--flows` with `--bp`, `--gp`, `--topology`, `--rate`: `Ok(Err(_))` when a
/// flow does not fit.
fn from_flows(
    f: &FrameArgs,
    flows_path: &Path,
    profile: Option<&NamedProfile>,
    provider: ProviderChoice,
) -> Result<std::result::Result<Schedule, (NoFit, u64, u16)>> {
    let need = |v: &Option<String>, opt: &str| {
        v.clone()
            .ok_or_else(|| usage(format!("{opt} is needed with --flows (e.g. {opt} 10ms)")))
    };
    let params = Params {
        bp_ns: parse_duration("--bp", &need(&f.bp, "--bp")?).map_err(usage)?,
        gp_ns: parse_duration("--gp", &need(&f.gp, "--gp")?).map_err(usage)?,
        rate_bps: parse_rate("--rate", f.rate.as_deref().unwrap_or("100M")).map_err(usage)?,
    };
    params.check()?;
    let topology = f.topology.as_deref().unwrap_or("cascade:1");
    let switches = ivnsec_lab::tdma::schedule::cascade(topology)?.1;
    let specs = flows::load(flows_path)?;
    let profile = profile.map(NamedProfile::profile);
    let path = flows_path.display().to_string();
    let resolved = flows::resolve(&path, &specs, profile, provider)?;
    let file = format!("flows file {path}");
    Ok(build(&file, &params, topology, resolved)?.map_err(|n| (n, params.bp_ns, switches)))
}

fn schedule(a: ScheduleArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let Some(path) = &a.frame.flows else {
        return Err(usage(
            "--flows FILE is needed (docs/tdma-run.md describes the file)",
        ));
    };
    match from_flows(&a.frame, path, a.profile.as_ref(), a.provider)? {
        Ok(s) => {
            if a.json {
                let mut v = serde_json::to_value(&s)?;
                v["fits"] = true.into();
                json.print(&v)?;
            } else {
                print!("{}", s.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        Err((no, bp, switches)) => {
            let reason = no.reason(bp, switches);
            if a.json {
                let mut v = serde_json::to_value(&no)?;
                v["fits"] = false.into();
                v["reason"] = reason.into();
                json.print(&v)?;
            } else {
                println!("{reason}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

fn run_schedule(a: RunArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    // The plan's hosts are read (and a bad plan refused) before the schedule is built.
    let hosts = match &a.hosts {
        Some(plan) => {
            let h = ivnsec_lab::plan::hosts_of(plan)?;
            if h.len() < 2 {
                return Err(usage(format!(
                    "plan {}: {} [[host]] table(s); tdma run across hosts needs two (ecu1 on the \
                     first, ecu2 on the second)",
                    plan.display(),
                    h.len()
                )));
            }
            Some(h)
        }
        None => None,
    };
    let schedule = match (&a.schedule, &a.frame.flows) {
        (Some(p), _) => Schedule::load(p)?,
        (None, Some(p)) => match from_flows(&a.frame, p, a.profile.as_ref(), a.provider)? {
            Ok(s) => s,
            Err((no, bp, switches)) => return Err(usage(no.reason(bp, switches))),
        },
        (None, None) => {
            return Err(usage(
                "give --schedule FILE (from `tdma schedule --json`) or --flows FILE with --bp and --gp",
            ));
        }
    };
    let profile = run_profile(&schedule, a.profile.as_ref())?;
    let cfg = RunConfig {
        schedule,
        profile,
        provider: a.provider,
        periods: a.periods,
        capacity: !a.no_capacity,
        pcap: a.pcap.clone(),
    };
    // Ctrl-C: what finished is printed, marked interrupted.
    crate::interrupted::watch()?;
    let r = match &hosts {
        Some(h) => ivnsec_lab::tdma::run::run_hosts(&cfg, &h[0], &h[1]),
        None => ivnsec_lab::tdma::run::run(&cfg),
    };
    if crate::interrupted::requested() {
        let what = "the measurement in progress is left out";
        match r {
            Ok(r) if a.json => json.print(&crate::interrupted::marked(&r))?,
            Ok(r) => {
                print!("{}", r.to_text());
                println!("{}", crate::interrupted::line(what));
            }
            Err(_) if a.json => json.print(&serde_json::json!({
                "interrupted": true,
                "profile": cfg.profile.name(),
            }))?,
            Err(_) => println!(
                "{}",
                crate::interrupted::line("the schedule run did not finish: nothing measured")
            ),
        }
        return Ok(crate::interrupted::code());
    }
    let r = r?;
    if a.json {
        json.print(&r)?;
    } else {
        print!("{}", r.to_text());
    }
    if let Some(p) = &a.pcap {
        eprintln!("capture: {}", p.display());
    }
    Ok(if r.schedule_met {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
