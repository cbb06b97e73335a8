//! `[[pingpong]]` in a plan: ping-pong scenarios (every profile × payload) checked into one job
//! per table and run on a `bump`/`bump2` testbed of their own, through the gateways the run
//! starts.

use anyhow::{Context, Result};
use ivnsec_core::profile::NamedProfile;
use ivnsec_net::topology::Topology;
use serde::Deserialize;

use super::{GatewayPingPong, GatewayPingPongExperiment};
use crate::experiment::text::gateway_topology;
use crate::experiment::{Gathers, Jobs, PlanTables, PlanText, RunContext};
use crate::pingpong::run::{Scenario, run_scenario};
use crate::site::Site;

/// `[[pingpong]]`: ping-pong scenarios (every profile × payload) on a bump-in-the-wire testbed
/// of their own, through the gateways the run starts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PingPongEntry {
    /// `bump` or `bump2`.
    topology: String,
    /// Typed where the plan is read: an unknown profile is a TOML error naming its key
    /// (`pingpong[0].profiles[1]`, [`crate::experiment::text::key_at`]).
    profiles: Vec<NamedProfile>,
    payloads: Vec<usize>,
    count: Option<u32>,
    replications: Option<u32>,
}

#[derive(Deserialize)]
struct Tables {
    #[serde(default)]
    pingpong: Vec<PingPongEntry>,
}

/// One `[[pingpong]]` table: its scenarios run between the legacy ECU and its peer of
/// `topology` (`bump`: sensor1 → consumer, `bump2`: ecu1 → ecu2).
#[derive(Debug, Clone)]
pub struct PingPongJob {
    pub topology: Topology,
    pub scenarios: Vec<Scenario>,
}

/// One `[[pingpong]]` table checked.
fn job(t: &PlanText, i: usize, e: &PingPongEntry) -> Result<PingPongJob> {
    let topology = gateway_topology(&e.topology).ok_or_else(|| {
        t.bad(
            &format!("pingpong[{i}].topology"),
            format!(
                "`{}`: [[pingpong]] runs through bump-in-the-wire gateways: bump (the legacy \
                 sensor1 behind a gateway, a MACsec consumer) or bump2 (two legacy ECUs \
                 behind gateways); scenarios on the plan's own topology go in [[matrix]] \
                 or [[scenario]]",
                e.topology
            ),
        )
    })?;
    if e.profiles.is_empty() || e.payloads.is_empty() {
        return Err(t.bad(
            &format!("pingpong[{i}]"),
            "needs at least one profile and one payload".into(),
        ));
    }
    let (count, replications) = t.counts(e.count, e.replications);
    let mut scenarios = Vec::new();
    for (j, profile) in e.profiles.iter().enumerate() {
        let key = |n: usize| format!("pingpong[{i}].profiles[{j}] ({profile} at {n} bytes)");
        for &n in &e.payloads {
            scenarios.push(t.scenario(&key(n), profile, n, count, replications)?);
        }
    }
    Ok(PingPongJob {
        topology,
        scenarios,
    })
}

/// Runs one job's scenarios on a testbed of its own with its gateways (skipped, and said so,
/// where there is none).
fn run_job(
    cx: &mut RunContext,
    job: &PingPongJob,
    results: &mut dyn FnMut(GatewayPingPong),
) -> Result<()> {
    let layout = crate::site::Layout::of(job.topology);
    let open = crate::site::open_site(cx.on, cx.testbed, &layout)?;
    let gateway = ivnsec_net::topology::NodeKind::Gateway.as_str();
    let (state, ini, res) = match &open.site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } if state.nodes.iter().any(|n| n.kind == gateway) => (state, initiator, responder),
        _ => {
            eprintln!(
                "ivnsec run: [[pingpong]] on {} needs a testbed with its gateways (root, \
                 no --testbed of another topology); skipped",
                job.topology
            );
            return Ok(());
        }
    };
    for s in &job.scenarios {
        if crate::interrupt::requested() {
            break;
        }
        let part = cx.part();
        let o = match run_scenario(&open.site, s, part.as_deref()) {
            Err(_) if crate::interrupt::requested() => break,
            r => r.with_context(|| format!("ping-pong {} on {}", s.name(), job.topology))?,
        };
        cx.absorb()?;
        results(GatewayPingPong::of(
            &state.topology,
            open.site.transport(),
            (ini, res),
            &s.profile,
            s.payload,
            &o.exchanges,
        ));
    }
    drop(open);
    Ok(())
}

impl<Pl, R> PlanTables<Pl, R> for GatewayPingPongExperiment
where
    Pl: Jobs<PingPongJob>,
    R: Gathers<GatewayPingPong>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: Tables = t.tables()?;
        for (i, e) in f.pingpong.iter().enumerate() {
            let job = job(t, i, e)?;
            plan.jobs_mut().push(job);
        }
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        50
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let jobs = plan.jobs();
        for (i, job) in jobs.iter().enumerate() {
            if crate::interrupt::requested() {
                break;
            }
            eprintln!(
                "ivnsec run: ping-pong through gateways {}/{}: {} scenario(s) on {}",
                i + 1,
                jobs.len(),
                job.scenarios.len(),
                job.topology
            );
            run_job(cx, job, &mut |r| results.gather(r))?;
        }
        Ok(())
    }
}
