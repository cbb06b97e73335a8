//! `ivnsec pingpong`: one ping-pong scenario (seed 000 §3.3) between two processes in two ECU
//! namespaces, with per-part timing, statistics and verdicts.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::pingpong::Requirements;
use ivnsec_lab::report::{Report, ScenarioRun};

use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::pingpong::run::{Scenario, environment, judge, ms_to_ns, run_scenario};
use ivnsec_lab::site::{Layout, ensure_dir, open_site};

use super::common::lab::{self, ModeArg, WhereArg};
use crate::output::Json;
use ivnsec_core::profile::{NamedProfile, Profile};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The initiator (ecu1) times, per exchange: 1 create a random payload, 2 protect, 3 send and wait \
for the reply, 4 verify it; the responder (ecu2) times its verify and protect. From these come \
the forward/backward one-way delay and RTT as in seed 000 Fig. 16, and the forward one-way delay \
measured directly on the clock both namespaces share.

As root, a `pair` testbed is built for the run and removed afterwards (or --testbed PREFIX uses \
a running one); otherwise the two processes talk UDP on loopback, which the output says. \
--topology bump2 builds two legacy ECUs, each behind an `ivnsec gateway` the run starts \
(macsec-gcm-aes-128, a fresh key): the exchanges run between the legacy ECUs through both \
gateways, unchanged (give --profile plain to measure the gateways' protection alone). \
--topology bump is seed 002's testbench 2: the legacy sensor1 initiates through its gateway gw1 \
and a MACsec consumer responds, its `ivnsec macsec up` started by the run with the gateway's key. \
--topology production builds seed 002's testbench 3 (four switches with redundant links under \
the kernel's spanning tree, the consumer on three links): the exchanges run between sensor1 and \
the consumer across two switches.

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its nodes and the testbed \
go), exit 130 (128 + the signal). The scenario in progress is left out: the output (and --out's \
summary.json) says `\"interrupted\": true` in JSON and ends with a line `interrupted: …` in \
text. With --outage: the report holds the profiles whose whole outage schedule finished, marked \
the same way.

Examples:
  ivnsec pingpong --profile aes128-gcm --payload 64 --count 120 --replications 30
  ivnsec pingpong --profile macsec-gcm-aes-128 --payload 1440 --mode busy-poll --pin --json
  ivnsec pingpong --profile esp-aes128-gcm --payload 736 --out ivnsec-report/
  sudo ivnsec pingpong --topology bump2 --profile plain --payload 64 --count 2000 --replications 1
  sudo ivnsec pingpong --topology bump --profile plain --payload 64 --count 2000 --replications 1
  sudo ivnsec pingpong --topology production --profile macsec-gcm-aes-128 --payload 64 --count 500
  ivnsec pingpong --hosts bench.toml --profile aes128-gcm --payload 64   # across two SSH hosts")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…;
    /// or someip-SUITE[/auth|/conf], someip-nosec.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    /// Payload bytes per message (≥ 8; the frame must fit the 1500-byte MTU).
    #[arg(long)]
    pub payload: usize,
    #[command(flatten)]
    pub run: RunOpts,
    /// Write samples.csv, summary.json, summary.md and index.html to this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Record the frames the initiator sends and receives (classic pcap, Ethernet; ESP frames get
    /// the Ethernet/IPv4 headers they travel with). Read it with tshark or `ivnsec pcap verify`.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Print the scenario's summary as JSON (the `scenarios[0]` object of summary.json).
    #[arg(long)]
    pub json: bool,
    /// Build this testbed topology instead of `pair` (`ivnsec testbed up --help` lists them):
    /// its first ECU initiates, its last responds; `bump2` starts the gateways, `bump` the
    /// gateway and the consumer's MACsec (sensor1 initiates). Not with --testbed.
    #[arg(long, value_name = "TOPOLOGY", conflicts_with = "testbed")]
    pub topology: Option<String>,
    /// Run the initiator on the first `[[host]]` of this plan and the responder on the second,
    /// over SSH, instead of on a testbed (docs/multihost.md; check them first with `ivnsec
    /// hosts check PLAN`). Example: ivnsec pingpong --hosts bench.toml --profile aes128-gcm
    /// --payload 64
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["testbed", "topology"])]
    pub hosts: Option<PathBuf>,
    /// Link outages during the run (needs --topology production): N links chosen at random
    /// (seeded: --outage-seed) go down for 12 s each, one every SECONDS (default 25), and come
    /// back. Runs `plain` first, then --profile (and each --also-profile), with the same
    /// outages; reports per outage and
    /// profile the exchanges lost, the time to recover, the latency while the spanning tree
    /// re-converges, and whether the MKA sessions (the consumer and the gateways, started on
    /// one pre-shared CAK) survived or re-established. --count and --replications are set
    /// from the schedule (one exchange every --pause-ms, default 10 here). Exit 1 when an
    /// outage was not recovered from or an MKA participant ended without its peers.
    /// Example: `sudo ivnsec pingpong --topology production --profile macsec-gcm-aes-128
    /// --payload 64 --outage 1`.
    #[arg(long, value_name = "N[@SECONDS]", conflicts_with_all = ["pcap", "out"])]
    pub outage: Option<String>,
    /// The seed of the outages' link choice (default: a random one, printed in the report).
    #[arg(long, value_name = "SEED", requires = "outage")]
    pub outage_seed: Option<u64>,
    /// With --outage: another protection to run with the same outages after --profile; repeat
    /// for each (e.g. `--also-profile esp-aes128-gcm --also-profile aes128-gcm`).
    #[arg(long, value_name = "PROFILE", requires = "outage", value_parser = super::profile_arg)]
    pub also_profile: Vec<NamedProfile>,
}

/// Run settings shared by `pingpong`, `run` (as overrides of the plan) and `validate`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunOpts {
    /// Exchanges per replication.
    #[arg(long, default_value_t = 120)]
    pub count: u32,
    /// Replications (blocks of `count` exchanges).
    #[arg(long, default_value_t = 30)]
    pub replications: u32,
    /// Pause between exchanges, in milliseconds (fractions allowed).
    #[arg(long, default_value_t = 0.0)]
    pub pause_ms: f64,
    /// How both nodes wait for frames.
    #[arg(long, value_enum, default_value = "blocking")]
    pub mode: ModeArg,
    /// Pin the initiator to CPU 0 and the responder to CPU 1.
    #[arg(long)]
    pub pin: bool,
    /// Give up on an exchange after this many milliseconds (counted as lost).
    #[arg(long, default_value_t = 200.0)]
    pub timeout_ms: f64,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Where the nodes run: auto (testbed when root, else loopback), testbed, loopback.
    #[arg(long = "on", value_enum, default_value = "auto")]
    pub on: WhereArg,
    /// Use this running testbed (`ivnsec testbed up`) instead of building one; its first two
    /// ECUs are the initiator and the responder.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let s = Scenario {
        profile: a.profile.clone(),
        payload: a.payload,
        count: a.run.count,
        replications: a.run.replications,
        pause_ns: ms_to_ns("--pause-ms", a.run.pause_ms, true)?,
        timeout_ns: ms_to_ns("--timeout-ms", a.run.timeout_ms, false)?,
        mode: a.run.mode.into(),
        pin: a.run.pin,
        provider: a.run.provider,
    };
    s.check()?;
    // Ctrl-C: what finished is written, marked interrupted.
    crate::interrupted::watch()?;
    if let Some(spec) = &a.outage {
        return outage(&a, spec, s, &mut json);
    }
    if let Some(dir) = &a.out {
        ensure_dir(dir)?;
    }
    let layout = match &a.topology {
        Some(t) => Layout::of(lab::parse_topology(t)?),
        None => Layout::default(),
    };
    let on = lab::where_for_topology(a.run.on.into(), a.topology.as_deref())?;
    let open = match &a.hosts {
        Some(plan) => ivnsec_lab::plan::open_hosts_of(plan)?,
        None => open_site(on, a.run.testbed.as_deref(), &layout)?,
    };
    if let Some(why) = &open.fallback_reason {
        eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
    }
    // Across hosts, the hosts' clocks are watched while the ping-pong runs on them.
    let watch = match &open.site {
        ivnsec_lab::site::Site::Hosts {
            initiator,
            responder,
        } => Some(ivnsec_lab::clock_watch::Watch::hosts(&[
            &initiator.spec,
            &responder.spec,
        ])),
        _ => None,
    };
    let outcome = match run_scenario(&open.site, &s, a.pcap.as_deref()) {
        Err(_) if crate::interrupted::requested() => {
            let environment = environment(&open.site, &s, "pingpong");
            drop(open);
            return interrupted(&a, &s, environment, &mut json);
        }
        r => r?,
    };
    if crate::interrupted::requested() {
        // The signal came as the scenario ended: left out all the same.
        let environment = environment(&open.site, &s, "pingpong");
        drop(open);
        return interrupted(&a, &s, environment, &mut json);
    }
    let mut environment = environment(&open.site, &s, "pingpong");
    if let Some(w) = watch {
        ivnsec_lab::clock_watch::record(&mut environment, &w.finish());
    }
    if let Some(p) = &a.pcap {
        eprintln!("capture: {}", p.display());
    }
    let req = Requirements::default();
    let judged = judge(&outcome, &req);
    let report = Report {
        experiments: Default::default(),
        environment,
        requirements: req,
        scenarios: vec![ScenarioRun {
            name: s.name(),
            profile: s.profile.clone(),
            payload: s.payload,
            frame_bytes: outcome.frame_bytes,
            exchanges: outcome.exchanges.clone(),
        }],
        baseline_sockperf: None,
    };
    drop(open);
    if a.json {
        let summary = report.summary();
        let v = serde_json::to_value(&summary)?;
        let scenario = v
            .get("scenarios")
            .and_then(|s| s.get(0))
            .cloned()
            .unwrap_or_default();
        json.print(&scenario)?;
    } else {
        println!("transport: {}", report.environment["transport"]);
        println!(
            "mode: {}{}",
            s.mode.as_str(),
            if s.pin { ", pinned" } else { "" }
        );
        lab::print_scenario(&s.name(), s.payload, &outcome, &judged);
    }
    if let Some(dir) = &a.out {
        report.write_dir(dir)?;
        eprintln!("report: {}", dir.join("index.html").display());
    }
    Ok(
        if judged.verdicts.control_2500us && judged.verdicts.sensor_p999_2ms {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}

/// Interrupted: the one scenario was in progress, so nothing is kept; the usual output says
/// so, marked interrupted (--out: a report without scenarios, `"interrupted": true`).
fn interrupted(
    a: &Args,
    s: &Scenario,
    mut environment: serde_json::Map<String, serde_json::Value>,
    json: &mut Json,
) -> Result<ExitCode> {
    let what = "the scenario was in progress: no exchange is kept";
    if a.json {
        json.print(&serde_json::json!({
            "name": s.name(),
            "profile": s.profile.to_string(),
            "payload": s.payload,
            "interrupted": true,
        }))?;
    } else {
        println!("transport: {}", environment["transport"]);
        println!(
            "mode: {}{}",
            s.mode.as_str(),
            if s.pin { ", pinned" } else { "" }
        );
        println!("{}", crate::interrupted::line(what));
    }
    if let Some(dir) = &a.out {
        environment.insert("interrupted".into(), serde_json::json!(true));
        let report = Report {
            experiments: Default::default(),
            environment,
            requirements: Requirements::default(),
            scenarios: Vec::new(),
            baseline_sockperf: None,
        };
        report.write_dir(dir)?;
        eprintln!("report: {}", dir.join("index.html").display());
    }
    Ok(crate::interrupted::code())
}

/// `pingpong --outage`: plain, then the profile, on a fresh `production` testbed with the same
/// seeded link outages (ivnsec_lab::outage).
fn outage(a: &Args, spec: &str, s: Scenario, json: &mut Json) -> Result<ExitCode> {
    use ivnsec_lab::outage::run::run as run_outages;
    let spec = super::common::outage::spec(spec, a.topology.as_deref(), a.outage_seed)?;
    let pause_ms = if a.run.pause_ms > 0.0 {
        a.run.pause_ms
    } else {
        10.0
    };
    let count = ((spec.duration_s() * 1000.0) / pause_ms).ceil();
    if count > 1e7 {
        return Err(crate::error::usage(format!(
            "--outage {spec:?} with --pause-ms {pause_ms}: {count} exchanges is too many; give a \
             longer --pause-ms"
        )));
    }
    let mut scenarios = Vec::new();
    let plain = NamedProfile::from(Profile::PLAIN);
    let names = [&plain, &a.profile].into_iter().chain(&a.also_profile);
    for name in names {
        if scenarios
            .iter()
            .any(|x: &Scenario| x.profile.name() == name.name())
        {
            continue;
        }
        let mut x = s.clone();
        x.profile = name.clone();
        x.count = count as u32;
        x.replications = 1;
        x.pause_ns = ms_to_ns("--pause-ms", pause_ms, false)?;
        x.check()?;
        scenarios.push(x);
    }
    let report = run_outages(&scenarios, &spec)?;
    super::common::outage::finish(&report, json)
}
