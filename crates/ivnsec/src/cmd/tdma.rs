//! `ivnsec tdma`: time-triggered networks (seed 001). `schedule` places periodic flows in the
//! slots of a TDMA base period on a `cascade:N` topology; `run` executes a schedule on a testbed
//! with slot-timed senders and measures it. The work is `ivnsec_lab::tdma`; this module reads
//! the options and prints.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::tdma::flows::{self, parse_duration, parse_rate};
use ivnsec_lab::tdma::run::{RunConfig, run_profile};
use ivnsec_lab::tdma::schedule::{NoFit, Params, Schedule, build};

use crate::error::{parse_profile, usage};

#[derive(clap::Subcommand, Debug)]
pub enum Args {
    /// Place periodic flows in the slots of a TDMA base period (slot = frame time + GP × N
    /// switches, seed 001 eq. 9), or say which flow does not fit and why.
    Schedule(ScheduleArgs),
    /// Run a schedule on a cascade:N testbed: slot-timed protected frames, send jitter, one-way
    /// delay, switch forwarding delay, deadline misses and frames per base period (needs root).
    Run(RunArgs),
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

Examples:
  ivnsec tdma schedule --bp 10ms --gp 0.2ms --flows flows.toml
  ivnsec tdma schedule --bp 10ms --gp 0.2ms --flows flows.toml --topology cascade:3 --json > s.json")]
pub struct ScheduleArgs {
    #[command(flatten)]
    pub frame: FrameArgs,
    /// Profile that frames the flows given with a payload (a flow's own `profile` wins).
    #[arg(long)]
    pub profile: Option<String>,
    /// Crypto provider (for frame sizes): portable, fast, or auto.
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

Exit codes: 0 every frame arrived within its slot, 1 a miss or a lost frame, 2 bad options or \
input, 3 not root or no `ip` command.

Examples:
  ivnsec tdma run --flows flows.toml --bp 10ms --gp 0.2ms --topology cascade:2 --profile hmac-sha1
  ivnsec tdma run --schedule s.json --profile aes128-gcm --periods 1000 --json
  ivnsec tdma run --flows flows.toml --bp 10ms --gp 0ms --pcap tdma.pcap")]
pub struct RunArgs {
    /// A schedule written by `tdma schedule --json` (instead of --flows, --bp, --gp,
    /// --topology, --rate).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["flows", "bp", "gp", "topology", "rate"])]
    pub schedule: Option<PathBuf>,
    #[command(flatten)]
    pub frame: FrameArgs,
    /// Profile of every frame (`ivnsec suites` lists them). Default: the profile the flows
    /// name, else plain.
    #[arg(long)]
    pub profile: Option<String>,
    /// Crypto provider: portable, fast, or auto.
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
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a {
        Args::Schedule(s) => schedule(s),
        Args::Run(r) => run_schedule(r),
    }
}

/// The schedule of `--flows` with `--bp`, `--gp`, `--topology`, `--rate`: `Ok(Err(_))` when a
/// flow does not fit.
fn from_flows(
    f: &FrameArgs,
    flows_path: &Path,
    profile: Option<&str>,
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
    let profile = profile.map(parse_profile).transpose()?;
    let path = flows_path.display().to_string();
    let resolved = flows::resolve(&path, &specs, profile, provider)?;
    let file = format!("flows file {path}");
    Ok(build(&file, &params, topology, resolved)?.map_err(|n| (n, params.bp_ns, switches)))
}

fn schedule(a: ScheduleArgs) -> Result<ExitCode> {
    let Some(path) = &a.frame.flows else {
        return Err(usage(
            "--flows FILE is needed (docs/tdma-run.md describes the file)",
        ));
    };
    match from_flows(&a.frame, path, a.profile.as_deref(), a.provider)? {
        Ok(s) => {
            if a.json {
                let mut v = serde_json::to_value(&s)?;
                v["fits"] = true.into();
                println!("{}", serde_json::to_string_pretty(&v)?);
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
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("{reason}");
            }
            Ok(ExitCode::from(1))
        }
    }
}

fn run_schedule(a: RunArgs) -> Result<ExitCode> {
    let schedule = match (&a.schedule, &a.frame.flows) {
        (Some(p), _) => Schedule::load(p)?,
        (None, Some(p)) => match from_flows(&a.frame, p, a.profile.as_deref(), a.provider)? {
            Ok(s) => s,
            Err((no, bp, switches)) => return Err(usage(no.reason(bp, switches))),
        },
        (None, None) => {
            return Err(usage(
                "give --schedule FILE (from `tdma schedule --json`) or --flows FILE with --bp and --gp",
            ));
        }
    };
    let (profile, profile_name) = run_profile(&schedule, a.profile.as_deref())?;
    let cfg = RunConfig {
        schedule,
        profile,
        profile_name,
        provider: a.provider,
        periods: a.periods,
        capacity: !a.no_capacity,
        pcap: a.pcap.clone(),
    };
    let r = ivnsec_lab::tdma::run::run(&cfg)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
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
