//! The plan options and the end of a plan run that `run` and `validate` share: the overrides
//! of a plan's `[run]` table and where it runs ([`Overrides`]), the progress bar ([`Bar`]), and
//! writing the report with its verdict table ([`finish`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use ivnsec_lab::plan::run::{Progress, Settings};
use ivnsec_lab::plan::{Plan, RunSection};
use ivnsec_lab::report::{Report, Summary};
use ivnsec_lab::site::OpenSite;

use super::lab::{ModeArg, WhereArg};

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
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
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

    /// Where and how the plan runs beyond the plan file.
    pub fn settings(&self) -> Settings {
        Settings {
            on: self.on.into(),
            testbed: self.testbed.clone(),
            pcap: self.pcap.clone(),
        }
    }

    /// Opens where `plan` runs: the running testbed given, a fresh one of the plan's topology,
    /// or loopback, as `--on` says.
    pub fn open_site(&self, plan: &Plan) -> Result<OpenSite> {
        if let Some((a, b)) = plan.host_pair() {
            if self.testbed.is_some() {
                return Err(crate::error::usage(
                    "--testbed and a plan with [[host]] tables exclude each other",
                ));
            }
            let on: ivnsec_lab::site::Where = self.on.into();
            if on != ivnsec_lab::site::Where::Auto {
                return Err(crate::error::usage(
                    "--on and a plan with [[host]] tables exclude each other: the plan's nodes \
                     run on its hosts",
                ));
            }
            return ivnsec_lab::site::open_hosts(a, b);
        }
        let layout = ivnsec_lab::site::Layout {
            topology: plan.topology,
            initiator: plan.initiator.clone(),
            responder: plan.responder.clone(),
        };
        ivnsec_lab::site::open_site(self.on.into(), self.testbed.as_deref(), &layout)
    }
}

/// A progress bar on the terminal (hidden when stderr is not one).
#[derive(Default)]
pub struct Bar(Option<ProgressBar>);

impl Progress for Bar {
    fn start(&mut self, total: u64) {
        let bar = ProgressBar::new(total);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} messages, ETA {eta}  {msg}",
            )
            .expect("valid template"),
        );
        self.0 = Some(bar);
    }
    fn scenario(&mut self, name: &str, index: usize, count: usize) {
        if let Some(b) = &self.0 {
            b.set_message(format!("{name} ({}/{count})", index + 1));
        }
    }
    fn advance(&mut self, exchanges: u64) {
        if let Some(b) = &self.0 {
            b.inc(exchanges);
        }
    }
    fn finish(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
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
        for t in &summary.experiments.tdma {
            match &t.not_measured {
                Some(why) => println!(
                    "tdma: the analysis only ({} rows); not measured: {why}",
                    t.analysis.len()
                ),
                None => println!(
                    "tdma: {} of {} runs met their schedule (every frame within its slot)",
                    t.measured.iter().filter(|r| r.passed()).count(),
                    t.measured.len()
                ),
            }
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
    if summary.interrupted {
        eprintln!("ivnsec: interrupted; the report holds what finished before it");
        return Ok(ExitCode::from(ivnsec_lab::interrupt::exit_code()));
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
