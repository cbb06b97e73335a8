//! `ivnsec hosts check PLAN`: before a run across hosts, what each host of the plan has and
//! lacks (SSH, privilege, interface, link, MTU, speed, ivnsec, pmc), with how to fix it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::hosts::{self, check::HostReport};

use crate::output::Json;

#[derive(clap::Subcommand, Debug)]
pub enum Args {
    /// Check every `[[host]]` of a plan: SSH reachability, privilege (root or CAP_NET_RAW), the
    /// interface (exists, up, MTU, link speed), ivnsec of this version, pmc (linuxptp).
    #[command(after_help = "\
Each finding is ok, warn (the run works; look at it) or missing (the run cannot work), with how \
to fix it. Nothing is changed on the hosts.

Exit codes: 0 nothing missing, 2 a bad plan, 3 something missing on a host.

Example:
  ivnsec hosts check bench.toml
  ivnsec hosts check bench.toml --json")]
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The plan file with `[[host]]` tables (name, ssh, iface, optional ssh_options).
    pub plan: PathBuf,
    /// One JSON document: `{"hosts": [{"name", "ssh", "iface", "checks": [{"what", "status",
    /// "found", "fix"}]}], "ready": bool}`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a {
        Args::Check(c) => check(c),
    }
}

fn check(a: CheckArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let list = ivnsec_lab::plan::hosts_of(&a.plan)?;
    let exe = std::env::current_exe()?;
    let digest = hosts::file_sha256(&exe)?;
    let reports: Vec<HostReport> = list
        .iter()
        .map(|h| hosts::check::check(h, &digest))
        .collect();
    let ready = reports.iter().all(HostReport::ready);
    if json.claimed() {
        json.print(&serde_json::json!({ "hosts": reports, "ready": ready }))?;
    } else {
        for r in &reports {
            println!("{} ({}, {})", r.name, r.ssh, r.iface);
            for c in &r.checks {
                println!("  {:<9} {:<7} {}", c.what, c.status, c.found);
                if !c.fix.is_empty() {
                    println!("  {:<9} {:<7} fix: {}", "", "", c.fix);
                }
            }
        }
        println!(
            "{}",
            if ready {
                "every host is ready"
            } else {
                "some hosts are not ready: fix what is missing above"
            }
        );
    }
    Ok(if ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}
