//! `[[throughput]]` in a plan: its tables checked into groups of runs ([`ThroughputJob`]) and
//! run, each group on a site of its own (`sensors:N`, or `bump`/`bump2` through gateways, or
//! the plan's two hosts).

use anyhow::Result;
use ivnsec_core::profile::NamedProfile;
use ivnsec_net::topology::Topology;
use serde::Deserialize;

use super::ThroughputResult;
use super::report::ThroughputExperiment;
use super::run as throughput;
use crate::experiment::{Gateways, Gathers, Jobs, PlanTables, PlanText, RunContext};

/// `[[throughput]]`: every profile × payload × rate, each with the same senders and duration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThroughputEntry {
    /// Typed where the plan is read: an unknown profile is a TOML error naming its key
    /// (`throughput[0].profiles[1]`, [`crate::experiment::text::key_at`]).
    profiles: Vec<NamedProfile>,
    payloads: Vec<usize>,
    rates: Option<Vec<String>>,
    senders: Option<usize>,
    seconds: Option<f64>,
    batch: Option<usize>,
    /// The consumer's receive coalescing, µs (`--rx-coalesce-us`).
    rx_coalesce_us: Option<u32>,
    baseline: Option<bool>,
    /// `bump2`: the group runs on a testbed of its own with two legacy ECUs behind
    /// bump-in-the-wire gateways the run starts (one sender, `ecu1` → `ecu2`); `bump`: the
    /// legacy `sensor1` behind its gateway sends to a MACsec `consumer`.
    topology: Option<String>,
    /// `tcp`: secured SOME/IP on one TCP connection per sender (`ivnsec throughput --tcp`);
    /// `datagram` (default): each profile's own datagrams or frames.
    transport: Option<String>,
}

#[derive(Deserialize)]
struct Tables {
    #[serde(default)]
    throughput: Vec<ThroughputEntry>,
}

/// One group of throughput runs: the profiles share a testbed, the `plain` run and iperf3.
#[derive(Debug, Clone)]
pub struct ThroughputJob {
    pub profiles: Vec<NamedProfile>,
    pub config: throughput::Config,
    /// Run `plain` first and iperf3 after, on the same path.
    pub baseline: bool,
    /// The group's own testbed topology (`bump`, `bump2`), instead of `sensors:N`.
    pub topology: Option<Topology>,
}

/// Seconds the throughput groups send, baselines included (iperf3 twice when shaped).
pub fn seconds<'a>(jobs: impl IntoIterator<Item = &'a ThroughputJob>) -> f64 {
    jobs.into_iter()
        .map(|j| {
            let s = j.config.seconds_ns as f64 / 1e9;
            let plain = j.baseline && !j.config.tcp && !j.profiles.iter().any(|p| p == "plain");
            let iperf = match (j.baseline, j.config.rate_bps) {
                (false, _) => 0.0,
                (true, None) => s.ceil(),
                (true, Some(_)) => 2.0 * s.ceil(),
            };
            s * (j.profiles.len() + usize::from(plain)) as f64 + iperf
        })
        .sum()
}

/// The testbed of a group with a `topology` of its own (`bump`, `bump2`; one sender).
fn group_topology(t: &PlanText, i: usize, e: &ThroughputEntry) -> Result<Option<Topology>> {
    let key = |k: &str| format!("throughput[{i}].{k}");
    match e.topology.as_deref() {
        None => Ok(None),
        Some(name @ ("bump" | "bump2")) => {
            let topology = if name == "bump" {
                Topology::Bump
            } else {
                Topology::Bump2
            };
            if e.senders.unwrap_or(1) != 1 {
                let l = crate::site::Layout::of(topology);
                return Err(t.bad(
                    &key("senders"),
                    format!(
                        "topology {name} has one sender ({} → {}): senders = 1",
                        l.initiator, l.responder
                    ),
                ));
            }
            Ok(Some(topology))
        }
        Some(other) => Err(t.bad(
            &key("topology"),
            format!(
                "`{other}`: a throughput group builds sensors:N itself; topology takes \
                 bump2 (legacy ECUs behind gateways) or bump (a legacy sensor behind a \
                 gateway, a MACsec consumer)"
            ),
        )),
    }
}

/// The groups of one `[[throughput]]` table: one per payload × rate.
fn groups(t: &PlanText, i: usize, e: &ThroughputEntry) -> Result<Vec<ThroughputJob>> {
    if e.profiles.is_empty() || e.payloads.is_empty() {
        return Err(t.bad(
            &format!("throughput[{i}]"),
            "needs at least one profile and one payload".into(),
        ));
    }
    let rates = e
        .rates
        .clone()
        .unwrap_or_else(|| vec!["unlimited".to_string()]);
    if rates.is_empty() {
        return Err(t.bad(
            &format!("throughput[{i}].rates"),
            "needs at least one rate".into(),
        ));
    }
    let topology = group_topology(t, i, e)?;
    let tcp = match e.transport.as_deref() {
        None | Some("datagram") => false,
        Some("tcp") => true,
        Some(other) => {
            return Err(t.bad(
                &format!("throughput[{i}].transport"),
                format!("`{other}`: takes tcp (SOME/IP over TCP) or datagram (the default)"),
            ));
        }
    };
    let mut jobs = Vec::new();
    for &payload in &e.payloads {
        for rate in &rates {
            let mut config = throughput::check_config(
                payload,
                e.seconds.unwrap_or(5.0),
                rate,
                e.senders.unwrap_or(1),
                e.batch.unwrap_or(32),
                t.provider,
            )
            .map_err(|err| t.bad(&format!("throughput[{i}]"), format!("{err:#}")))?;
            config.tcp = tcp;
            if let Some(us) = e.rx_coalesce_us {
                config.rx_coalesce_us = throughput::check_rx_coalesce(us).map_err(|err| {
                    t.bad(
                        &format!("throughput[{i}].rx_coalesce_us"),
                        format!("{err:#}"),
                    )
                })?;
            }
            let mut profiles = Vec::with_capacity(e.profiles.len());
            for (j, p) in e.profiles.iter().enumerate() {
                throughput::check_profile(p, &config).map_err(|err| {
                    t.bad(
                        &format!("throughput[{i}].profiles[{j}]"),
                        format!("{err:#}"),
                    )
                })?;
                profiles.push(p.clone());
            }
            jobs.push(ThroughputJob {
                profiles,
                config,
                baseline: e.baseline.unwrap_or(true),
                topology,
            });
        }
    }
    Ok(jobs)
}

/// Runs one group on its site; `None` when interrupted.
fn run_group(
    cx: &mut RunContext,
    job: &ThroughputJob,
    i: usize,
    n: usize,
) -> Result<Option<Vec<ThroughputResult>>> {
    eprintln!(
        "ivnsec run: throughput group {}/{}: {} at {} B, {} sender(s), {}{}",
        i + 1,
        n,
        NamedProfile::join(&job.profiles, ", "),
        job.config.payload,
        job.config.senders,
        job.config
            .rate_bps
            .map_or("unshaped".to_string(), |b| format!("{b} b/s")),
        job.topology
            .as_ref()
            .map_or(String::new(), |t| format!(", on {t} through its gateways"))
    );
    let layout = match &job.topology {
        Some(t) => crate::site::Layout::of(*t),
        None => throughput::layout(job.config.senders),
    };
    let site = cx.open(&layout)?;
    let part = cx.part();
    let results = match throughput::run_set(
        &site.site,
        &job.config,
        &job.profiles,
        job.baseline,
        part.as_deref(),
    ) {
        Err(_) if crate::interrupt::requested() => return Ok(None),
        r => r?,
    };
    drop(site);
    cx.absorb()?;
    Ok(Some(results))
}

impl<Pl, R> PlanTables<Pl, R> for ThroughputExperiment
where
    Pl: Jobs<ThroughputJob> + Jobs<ThroughputJob, Gateways>,
    R: Gathers<ThroughputResult>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: Tables = t.tables()?;
        if t.across_hosts {
            for (i, e) in f.throughput.iter().enumerate() {
                if e.senders.unwrap_or(1) != 1 || e.topology.is_some() {
                    return Err(t.bad(
                        &format!("throughput[{i}]"),
                        "across hosts a throughput group has one sender (the initiator host) \
                         and no topology"
                            .into(),
                    ));
                }
            }
        }
        for (i, e) in f.throughput.iter().enumerate() {
            for job in groups(t, i, e)? {
                if job.topology.is_some() {
                    Jobs::<ThroughputJob, Gateways>::jobs_mut(plan).push(job);
                } else {
                    Jobs::<ThroughputJob>::jobs_mut(plan).push(job);
                }
            }
        }
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        Jobs::<ThroughputJob>::jobs(plan).is_empty()
            && Jobs::<ThroughputJob, Gateways>::jobs(plan).is_empty()
    }

    fn on_hosts(&self, plan: &Pl) -> bool {
        !PlanTables::<Pl, R>::is_empty(self, plan)
    }

    fn run_rank(&self) -> u8 {
        10
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let groups: Vec<&ThroughputJob> = Jobs::<ThroughputJob>::jobs(plan)
            .iter()
            .chain(Jobs::<ThroughputJob, Gateways>::jobs(plan))
            .collect();
        if !groups.is_empty() {
            eprintln!(
                "ivnsec run: {} throughput group(s), about {:.0} s of sending",
                groups.len(),
                seconds(groups.iter().copied())
            );
        }
        for (i, job) in groups.iter().enumerate() {
            if crate::interrupt::requested() {
                break;
            }
            match run_group(cx, job, i, groups.len())? {
                Some(r) => r.into_iter().for_each(|r| results.gather(r)),
                None => break,
            }
        }
        Ok(())
    }
}
