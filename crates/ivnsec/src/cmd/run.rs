//! `ivnsec run PLAN.toml`: every scenario of a plan on one site, then the report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use ivnsec_lab::report::{Experiments, Report, ScenarioRun, Summary};
use serde_json::Value;

use super::lab::{ModeArg, WhereArg};
use crate::plan::{self, Plan, RunSection};
use ivnsec_lab::camera::run as camera;
use ivnsec_lab::pingpong::run::run_scenario;
use ivnsec_lab::site::OpenSite;
use ivnsec_lab::site::Site;
use ivnsec_lab::throughput::run as throughput;
use ivnsec_lab::underload::{playback, run as underload};

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
    pub mode: Option<ModeArg>,
    /// Pin the initiator to CPU 0 and the responder to CPU 1.
    #[arg(long)]
    pub pin: bool,
    /// Crypto provider: portable, fast, or auto.
    #[arg(long)]
    pub provider: Option<String>,
    /// Where the nodes run: auto (testbed when root, else loopback), testbed, loopback.
    #[arg(long = "on", value_enum, default_value = "auto")]
    pub on: WhereArg,
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
            mode: self.mode.map(Into::into),
            pin: self.pin.then_some(true),
            provider: self.provider.clone(),
        }
    }

    /// Opens where `plan` runs: the running testbed given, a fresh one of the plan's topology,
    /// or loopback, as `--on` says.
    pub fn open_site(&self, plan: &Plan) -> Result<OpenSite> {
        let layout = ivnsec_lab::site::Layout {
            topology: plan.topology,
            initiator: plan.initiator.clone(),
            responder: plan.responder.clone(),
        };
        ivnsec_lab::site::open_site(self.on.into(), self.testbed.as_deref(), &layout)
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let plan = plan::load(&a.plan, &a.overrides.run_section())?;
    ivnsec_lab::site::ensure_dir(&a.out)?;
    let open = if plan.scenarios.is_empty() {
        None
    } else {
        Some(a.overrides.open_site(&plan)?)
    };
    if let Some(why) = open.as_ref().and_then(|o| o.fallback_reason.as_ref()) {
        eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
    }
    let report = run_plan(&plan, &a.overrides, open, None, &a.out)?;
    finish(&report, &a.out)
}

/// One capture for a whole plan: each node writes its part, which is appended in order.
struct Capture {
    writer: ivnsec_net::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
    part: PathBuf,
}

impl Capture {
    fn create(p: &Path) -> Result<Capture> {
        Ok(Capture {
            writer: ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
            part: ivnsec_lab::site::part_path(p),
        })
    }

    /// Appends what the last node wrote to the part file.
    fn absorb(&mut self) -> Result<()> {
        ivnsec_lab::site::append_pcap(&mut self.writer, &self.part)
    }
}

/// Runs the plan: its ping-pong scenarios on `open` (the site of the plan's topology, closed
/// before the experiments start; `None` when the plan has no scenario) with a progress bar, then
/// each experiment on a site of its own (a fresh testbed of the topology it needs, or what
/// `--on`/`--testbed` say). Returns the report, not yet written.
pub fn run_plan(
    plan: &Plan,
    overrides: &Overrides,
    open: Option<OpenSite>,
    baseline: Option<Value>,
    out: &Path,
) -> Result<Report> {
    let started = Instant::now();
    let mut capture = overrides.pcap.as_deref().map(Capture::create).transpose()?;
    let mut runs = Vec::with_capacity(plan.scenarios.len());
    let mut environment = serde_json::Map::new();
    if let Some(open) = &open {
        runs = run_scenarios(plan, open, capture.as_mut())?;
        environment =
            ivnsec_lab::pingpong::run::environment(&open.site, &plan.scenarios[0], &plan.name);
        if let Some(why) = &open.fallback_reason {
            environment.insert("fallback_reason".into(), serde_json::json!(why));
        }
    } else {
        environment.insert("plan".into(), serde_json::json!(plan.name));
    }
    if let Some(tb) = open.and_then(|o| o.testbed) {
        let prefix = tb.prefix().to_string();
        match tb.down() {
            Ok(_) => eprintln!("ivnsec: testbed {prefix} removed"),
            Err(e) => eprintln!("ivnsec: removing testbed {prefix}: {e}"),
        }
    }
    let mut experiments = Experiments::default();
    if !plan.throughput.is_empty() {
        eprintln!(
            "ivnsec run: {} throughput group(s), about {:.0} s of sending",
            plan.throughput.len(),
            plan.throughput_seconds()
        );
    }
    for (i, job) in plan.throughput.iter().enumerate() {
        eprintln!(
            "ivnsec run: throughput group {}/{}: {} at {} B, {} sender(s), {}",
            i + 1,
            plan.throughput.len(),
            job.profiles.join(", "),
            job.config.payload,
            job.config.senders,
            job.config
                .rate_bps
                .map_or("unshaped".to_string(), |b| format!("{b} b/s"))
        );
        let site = ivnsec_lab::site::open_site(
            overrides.on.into(),
            overrides.testbed.as_deref(),
            &throughput::layout(job.config.senders),
        )?;
        let part = capture.as_ref().map(|c| c.part.clone());
        let results = throughput::run_set(
            &site.site,
            &job.config,
            &job.profiles,
            job.baseline,
            part.as_deref(),
        )?;
        drop(site);
        if let Some(c) = capture.as_mut() {
            c.absorb()?;
        }
        experiments.throughput.extend(results);
    }
    // Each experiment on a site of its own; its nodes' capture parts join the run's capture.
    let mut on_site = |what: String,
                       layout: ivnsec_lab::site::Layout,
                       run: &mut dyn FnMut(&Site, Option<&Path>) -> Result<()>|
     -> Result<()> {
        eprintln!("ivnsec run: {what}");
        let site = ivnsec_lab::site::open_site(
            overrides.on.into(),
            overrides.testbed.as_deref(),
            &layout,
        )?;
        if let Some(why) = &site.fallback_reason {
            eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
        }
        let part = capture.as_ref().map(|c| c.part.clone());
        run(&site.site, part.as_deref()).with_context(|| what.clone())?;
        drop(site);
        if let Some(c) = capture.as_mut() {
            c.absorb()?;
        }
        Ok(())
    };
    for (i, cfg) in plan.underload.iter().enumerate() {
        let what = format!(
            "under load {}/{}: {}",
            i + 1,
            plan.underload.len(),
            cfg.profiles.join(", ")
        );
        on_site(what, underload::layout(), &mut |site, part| {
            experiments
                .underload
                .push(underload::run_underload(site, cfg, part)?);
            Ok(())
        })?;
    }
    for (i, job) in plan.playback.iter().enumerate() {
        let mut cfg = job.config.clone();
        if let Some((name, text)) = job.embedded {
            // The preset's built-in timeline goes into the report: the run can be redone from it.
            let path = out.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            cfg.timeline = path;
        }
        let what = format!(
            "playback {}/{}: {} from {}",
            i + 1,
            plan.playback.len(),
            cfg.profiles.join(", "),
            cfg.timeline.display()
        );
        on_site(what, underload::layout(), &mut |site, part| {
            experiments
                .playback
                .push(playback::run_playback(site, &cfg, part)?);
            Ok(())
        })?;
    }
    for (i, cfg) in plan.camera.iter().enumerate() {
        let what = format!(
            "cameras {}/{}: {:?} at {} over {:?}",
            i + 1,
            plan.camera.len(),
            cfg.cameras,
            cfg.levels.join(", "),
            cfg.transport
        );
        on_site(what, camera::layout(), &mut |site, part| {
            experiments
                .camera
                .push(camera::run_camera(site, cfg, part)?);
            Ok(())
        })?;
    }
    if let Some(mut c) = capture {
        c.writer.flush()?;
    }
    environment.insert(
        "duration_s".into(),
        serde_json::json!(started.elapsed().as_secs_f64()),
    );
    Ok(Report {
        environment,
        requirements: plan.requirements,
        scenarios: runs,
        baseline_sockperf: baseline,
        experiments,
    })
}

/// Every ping-pong scenario of `plan` on `open`, with a progress bar on a terminal.
fn run_scenarios(
    plan: &Plan,
    open: &OpenSite,
    mut capture: Option<&mut Capture>,
) -> Result<Vec<ScenarioRun>> {
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
        let part = capture.as_ref().map(|c| c.part.clone());
        let o = run_scenario(&open.site, s, part.as_deref())
            .with_context(|| format!("scenario {}", s.name()))?;
        if let Some(c) = capture.as_mut() {
            c.absorb()?;
        }
        bar.inc(u64::from(s.count) * u64::from(s.replications));
        runs.push(ScenarioRun {
            name: s.name(),
            profile: s.profile_name.clone(),
            payload: s.payload,
            frame_bytes: o.frame_bytes,
            exchanges: o.exchanges,
        });
    }
    bar.finish_and_clear();
    Ok(runs)
}

/// Writes the report, prints the verdict table and the path; exit 1 when a verdict failed.
pub fn finish(report: &Report, out: &Path) -> Result<ExitCode> {
    let summary: Summary = report
        .write_dir(out)
        .with_context(|| format!("writing the report to {}", out.display()))?;
    if !summary.scenarios.is_empty() {
        print!("{}", summary.verdict_table());
    }
    let experiments = summary.experiment_failures();
    if !summary.experiments.is_empty() {
        let t = &summary.experiment_verdicts.throughput;
        if !t.is_empty() {
            println!(
                "throughput: {} of {} runs within seed 002's cost rules",
                t.iter().filter(|r| r.verdict.passed()).count(),
                t.len()
            );
        }
        if experiments.is_empty() {
            println!("experiments: every verdict passed");
        } else {
            println!("experiments failed: {}", experiments.join(", "));
        }
    }
    let failed =
        summary.control_failures().count() + summary.sensor_failures().count() + experiments.len();
    println!("report: {}", out.join("index.html").display());
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
