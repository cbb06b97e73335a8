//! `ivnsec run PLAN.toml`: every scenario of a plan on one site, then the report.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::plan;
use ivnsec_lab::plan::run::run_plan;

use super::common::plan::{Bar, Overrides, finish};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A plan is a TOML file: [run] settings, optional [requirements], and [[matrix]] (profiles × \
payloads) or [[scenario]] tables, and experiment tables ([[throughput]], [[underload]], \
[[playback]], [[camera]], [[tdma]], [[crypto_bench]]); docs/plans.md describes it, \
plans/quick.toml, plans/seed000.toml and plans/seed001.toml are examples. Flags given here override the plan's [run] settings.

With [[host]] tables (name, ssh, iface, optional ssh_options) the ping-pong and the throughput run \
between two hosts over SSH instead of on a testbed (docs/multihost.md); `ivnsec hosts check PLAN` \
checks the hosts first.

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second: its nodes are stopped, \
the testbed is removed, and the report holds the scenarios and experiments that finished \
before it, marked interrupted (summary.json \"interrupted\": true).

Exit codes: 0 every verdict passed, 1 a verdict failed (the report is written first), 2 a plan \
or usage error, 3 a missing privilege or tool, 130 interrupted by Ctrl-C (128 + the signal: \
143 for SIGTERM).

Examples:
  ivnsec run plans/seed000.toml --out seed000-report/
  ivnsec run bench.toml --out bench-report/      # a plan with [[host]] tables")]
pub struct Args {
    /// The plan file.
    pub plan: PathBuf,
    /// Report directory.
    #[arg(long, default_value = "ivnsec-report")]
    pub out: PathBuf,
    #[command(flatten)]
    pub overrides: Overrides,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let plan = plan::load(&a.plan, &a.overrides.run_section())?;
    // Ctrl-C stops the run between (and inside) measurements; the report is still written.
    crate::interrupted::watch()?;
    ivnsec_lab::site::ensure_dir(&a.out)?;
    let open = if plan.scenarios.is_empty() {
        None
    } else {
        Some(a.overrides.open_site(&plan)?)
    };
    if let Some(why) = open.as_ref().and_then(|o| o.fallback_reason.as_ref()) {
        eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
    }
    let report = run_plan(
        &plan,
        &a.overrides.settings(),
        open,
        None,
        &a.out,
        &mut Bar::default(),
    )?;
    finish(&report, &a.out)
}
