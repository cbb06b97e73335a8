//! `ivnsec run PLAN.toml`: every scenario of a plan on one site, then the report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use ivnsec_lab::report::{Report, ScenarioRun, Summary};
use serde_json::Value;

use super::lab::{self, OpenSite, Where};
use crate::node::orchestrate::{Mode, run_scenario};
use crate::plan::{self, Plan, RunSection};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A plan is a TOML file: [run] settings, optional [requirements], and [[matrix]] (profiles × \
payloads) or [[scenario]] tables; docs/plans.md describes it, plans/quick.toml and \
plans/seed000.toml are examples. Flags given here override the plan's [run] settings.

Exit codes: 0 every verdict passed, 1 a verdict failed (the report is written first), 2 a plan \
or usage error, 3 a missing privilege or tool.

Example:
  ivnsec run plans/seed000.toml --out seed000-report/")]
pub struct Args {
    /// The plan file.
    pub plan: PathBuf,
    /// Report directory.
    #[arg(long, default_value = "ivnsec-report")]
    pub out: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
}

/// Command-line overrides of a plan's `[run]` table.
#[derive(clap::Args, Debug, Clone)]
pub struct Overrides {
    /// Exchanges per replication.
    #[arg(long)]
    pub count: Option<u32>,
    /// Replications per scenario.
    #[arg(long)]
    pub replications: Option<u32>,
    /// Pause between exchanges (ms).
    #[arg(long)]
    pub pause_ms: Option<f64>,
    /// Per-exchange timeout (ms).
    #[arg(long)]
    pub timeout_ms: Option<f64>,
    /// How both nodes wait for frames.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Pin the initiator to CPU 0 and the responder to CPU 1.
    #[arg(long)]
    pub pin: bool,
    /// Crypto provider: portable, fast, or auto.
    #[arg(long)]
    pub provider: Option<String>,
    /// Where the nodes run: auto (testbed when root, else loopback), testbed, loopback.
    #[arg(long = "on", value_enum, default_value = "auto")]
    pub on: Where,
    /// Use this running testbed instead of building one.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
    /// Record the frames every scenario's initiator sends and receives, one scenario after the
    /// other, in this capture (classic pcap, Ethernet; ESP frames get their Ethernet/IPv4
    /// headers). Large plans make large captures: seed000 is about 400,000 frames.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
}

impl Overrides {
    pub fn run_section(&self) -> RunSection {
        RunSection {
            count: self.count,
            replications: self.replications,
            pause_ms: self.pause_ms,
            timeout_ms: self.timeout_ms,
            mode: self.mode,
            pin: self.pin.then_some(true),
            provider: self.provider.clone(),
        }
    }

    /// Opens where `plan` runs: the running testbed given, a fresh one of the plan's topology,
    /// or loopback, as `--on` says.
    pub fn open_site(&self, plan: &Plan) -> Result<OpenSite> {
        let layout = lab::Layout {
            topology: plan.topology,
            initiator: plan.initiator.clone(),
            responder: plan.responder.clone(),
        };
        lab::open_site(self.on, self.testbed.as_deref(), &layout)
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let plan = plan::load(&a.plan, &a.overrides.run_section())?;
    lab::ensure_dir(&a.out)?;
    let open = a.overrides.open_site(&plan)?;
    if let Some(why) = &open.fallback_reason {
        eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
    }
    let report = run_plan(&plan, &open, None, a.overrides.pcap.as_deref())?;
    drop(open);
    finish(&report, &a.out)
}

/// Runs every scenario of `plan` on `site` with a progress bar (on a terminal) and returns the
/// report (not yet written).
pub fn run_plan(
    plan: &Plan,
    open: &OpenSite,
    baseline: Option<Value>,
    pcap: Option<&Path>,
) -> Result<Report> {
    let started = Instant::now();
    let mut capture = match pcap {
        Some(p) => Some((
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
            lab::part_path(p),
        )),
        None => None,
    };
    let bar = ProgressBar::new(plan.exchanges());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} messages, ETA {eta}  {msg}",
        )
        .expect("valid template"),
    );
    let mut runs = Vec::with_capacity(plan.scenarios.len());
    for (i, s) in plan.scenarios.iter().enumerate() {
        bar.set_message(format!("{} ({}/{})", s.name(), i + 1, plan.scenarios.len()));
        let part = capture.as_ref().map(|c| c.1.as_path());
        let o =
            run_scenario(&open.site, s, part).with_context(|| format!("scenario {}", s.name()))?;
        if let Some((w, part)) = capture.as_mut() {
            lab::append_pcap(w, part)?;
        }
        bar.inc(u64::from(s.count) * u64::from(s.replications));
        runs.push(ScenarioRun {
            name: s.name(),
            profile: s.profile.clone(),
            payload: s.payload,
            frame_bytes: o.frame_bytes,
            exchanges: o.exchanges,
        });
    }
    bar.finish_and_clear();
    if let Some((mut w, _)) = capture {
        w.flush()?;
    }
    let mut environment = lab::environment(&open.site, &plan.scenarios[0], &plan.name);
    environment.insert(
        "duration_s".into(),
        serde_json::json!(started.elapsed().as_secs_f64()),
    );
    if let Some(why) = &open.fallback_reason {
        environment.insert("fallback_reason".into(), serde_json::json!(why));
    }
    Ok(Report {
        environment,
        requirements: plan.requirements,
        scenarios: runs,
        baseline_sockperf: baseline,
    })
}

/// Writes the report, prints the verdict table and the path; exit 1 when a verdict failed.
pub fn finish(report: &Report, out: &Path) -> Result<ExitCode> {
    let summary: Summary = report
        .write_dir(out)
        .with_context(|| format!("writing the report to {}", out.display()))?;
    print!("{}", summary.verdict_table());
    let failed = summary.control_failures().count() + summary.sensor_failures().count();
    println!("report: {}", out.join("index.html").display());
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
