//! `[[tunnel_ping]]` and `[[tunnel_bulk]]` in a plan (seed 004): their tables checked and run,
//! each on a `pair` testbed of its own with the tunnels the run starts (root only: without it,
//! under `--on auto`, they are skipped and said so).

use anyhow::{Context, Result};
use serde::Deserialize;

use super::{BulkConfig, BulkReport, PingConfig, PingReport, TunnelExperiment};
use crate::experiment::{Gathers, Jobs, PlanTables, PlanText, RunContext};
use crate::site::Where;

#[derive(Deserialize)]
struct Tables {
    /// Seed 004: ping by size through ESP and MACsec tunnels.
    #[serde(default)]
    tunnel_ping: Vec<PingConfig<String>>,
    /// Seed 004: iperf3 and scp through the ESP tunnel.
    #[serde(default)]
    tunnel_bulk: Vec<BulkConfig<String>>,
}

/// Why the tunnels cannot run here, if they cannot.
fn skipped(on: Where) -> Option<String> {
    match on {
        Where::Loopback => Some("--on loopback".to_string()),
        Where::Auto => ivnsec_net::testbed::check_environment()
            .err()
            .map(|e| e.to_string()),
        Where::Testbed => None,
    }
}

impl<Pl, R> PlanTables<Pl, R> for TunnelExperiment
where
    Pl: Jobs<PingConfig> + Jobs<BulkConfig>,
    R: Gathers<PingReport> + Gathers<BulkReport>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: Tables = t.tables()?;
        if t.across_hosts {
            for (table, n) in [
                ("tunnel_ping", f.tunnel_ping.len()),
                ("tunnel_bulk", f.tunnel_bulk.len()),
            ] {
                if n > 0 {
                    return Err(t.bad(
                        table,
                        format!(
                            "[[{table}]] does not run across hosts: it builds a `pair` testbed \
                             of its own and starts the tunnels in its namespaces; move it to a \
                             plan without [[host]] tables"
                        ),
                    ));
                }
            }
        }
        *Jobs::<PingConfig>::jobs_mut(plan) =
            t.checked("tunnel_ping", &f.tunnel_ping, PingConfig::<String>::check)?;
        *Jobs::<BulkConfig>::jobs_mut(plan) =
            t.checked("tunnel_bulk", &f.tunnel_bulk, BulkConfig::<String>::check)?;
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        Jobs::<PingConfig>::jobs(plan).is_empty() && Jobs::<BulkConfig>::jobs(plan).is_empty()
    }

    fn run_rank(&self) -> u8 {
        140
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let (pings, bulks) = (
            Jobs::<PingConfig>::jobs(plan),
            Jobs::<BulkConfig>::jobs(plan),
        );
        if pings.is_empty() && bulks.is_empty() {
            return Ok(());
        }
        if let Some(why) = skipped(cx.on) {
            eprintln!(
                "ivnsec run: [[tunnel_ping]] and [[tunnel_bulk]] need a testbed with TUN/TAP \
                 (root); skipped: {why}"
            );
            return Ok(());
        }
        for (i, cfg) in pings.iter().enumerate() {
            if crate::interrupt::requested() {
                break;
            }
            eprintln!(
                "ivnsec run: tunnel_ping {}/{}: {} ping(s) at {:?} bytes over {}",
                i + 1,
                pings.len(),
                cfg.count,
                cfg.sizes,
                cfg.paths.join(", ")
            );
            // Interrupted, it returns the rows that finished (none: left out).
            let r = match super::run_ping(cfg) {
                Err(_) if crate::interrupt::requested() => break,
                r => r.context("tunnel_ping")?,
            };
            if !r.rows.is_empty() {
                results.gather(r);
            }
        }
        for (i, cfg) in bulks.iter().enumerate() {
            if crate::interrupt::requested() {
                break;
            }
            eprintln!(
                "ivnsec run: tunnel_bulk {}/{}: {} over {}",
                i + 1,
                bulks.len(),
                cfg.tools.join(", "),
                cfg.paths.join(", ")
            );
            let r = match super::run_bulk(cfg) {
                Err(_) if crate::interrupt::requested() => break,
                r => r.context("tunnel_bulk")?,
            };
            if !r.rows.is_empty() {
                results.gather(r);
            }
        }
        Ok(())
    }
}
