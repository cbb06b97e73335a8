//! `[[underload]]` and `[[playback]]` in a plan: their tables checked (a playback's timeline
//! resolved beside the plan, or built in for a preset) and run, each table on a site of its
//! own (`sensors:1`, `bump`/`bump2` through gateways, or the plan's two hosts).

use anyhow::{Context, Result};
use ivnsec_core::profile::NamedProfile;
use ivnsec_net::topology::Topology;
use serde::Deserialize;

use super::UnderloadReport;
use super::playback::{self, Playback, PlaybackConfig};
use super::report::{PlaybackExperiment, UnderloadExperiment};
use super::run::{self as underload, UnderloadConfig};
use crate::experiment::text::{Base, PRESET_FILES, gateway_topology};
use crate::experiment::{Gateways, Gathers, Jobs, PlanTables, PlanText, RunContext};
use crate::site::Layout;

/// One `[[playback]]` table, its timeline resolved.
#[derive(Debug, Clone)]
pub struct PlaybackJob {
    pub config: PlaybackConfig,
    /// A preset's timeline, built in: written into the report directory before the run.
    pub embedded: Option<(&'static str, &'static str)>,
}

/// The testbed of a table: its `topology` through gateways, or `sensors:1`.
fn layout(topology: Option<&str>) -> Layout {
    match topology {
        Some("bump") => Layout::of(Topology::Bump),
        Some(_) => Layout::of(Topology::Bump2),
        None => underload::layout(),
    }
}

/// The `[[underload]]` tables, their profiles typed as the plan is read (an unknown one names
/// its key, `underload[0].profiles[1]`).
#[derive(Deserialize)]
struct UnderloadTables {
    #[serde(default)]
    underload: Vec<UnderloadConfig>,
}

impl<Pl, R> PlanTables<Pl, R> for UnderloadExperiment
where
    Pl: Jobs<UnderloadConfig> + Jobs<UnderloadConfig, Gateways>,
    R: Gathers<UnderloadReport>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: UnderloadTables = t.tables()?;
        if t.across_hosts {
            for (i, u) in f.underload.iter().enumerate() {
                if u.topology.is_some() {
                    return Err(t.bad(
                        &format!("underload[{i}].topology"),
                        "across hosts an under-load table runs from the initiator host to the \
                         responder host, not through a testbed's gateways; remove topology"
                            .into(),
                    ));
                }
            }
        }
        for (i, u) in f.underload.into_iter().enumerate() {
            u.check()
                .map_err(|e| t.bad(&format!("underload[{i}]"), format!("{e:#}")))?;
            if let Some(topology) = u
                .topology
                .as_deref()
                .filter(|t| !matches!(*t, "bump" | "bump2"))
            {
                return Err(t.bad(
                    &format!("underload[{i}].topology"),
                    format!(
                        "`{topology}`: under load builds sensors:1 itself; topology takes bump2 \
                         (the sensor and the consumer as legacy ECUs behind gateways) or bump \
                         (the legacy sensor behind a gateway, a MACsec consumer)"
                    ),
                ));
            }
            if u.topology.is_some() {
                Jobs::<UnderloadConfig, Gateways>::jobs_mut(plan).push(u);
            } else {
                Jobs::<UnderloadConfig>::jobs_mut(plan).push(u);
            }
        }
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        Jobs::<UnderloadConfig>::jobs(plan).is_empty()
            && Jobs::<UnderloadConfig, Gateways>::jobs(plan).is_empty()
    }

    fn on_hosts(&self, plan: &Pl) -> bool {
        !Jobs::<UnderloadConfig>::jobs(plan).is_empty()
    }

    fn run_rank(&self) -> u8 {
        20
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let underloads: Vec<&UnderloadConfig> = Jobs::<UnderloadConfig>::jobs(plan)
            .iter()
            .chain(Jobs::<UnderloadConfig, Gateways>::jobs(plan))
            .collect();
        for (i, cfg) in underloads.iter().enumerate() {
            let what = format!(
                "under load {}/{}: {}{}",
                i + 1,
                underloads.len(),
                NamedProfile::join(&cfg.profiles, ", "),
                cfg.topology
                    .as_ref()
                    .map_or(String::new(), |t| format!(", on {t} through its gateways"))
            );
            cx.on_site(what, layout(cfg.topology.as_deref()), &mut |site, part| {
                // Interrupted, it returns the profiles that finished (none: left out).
                let r = underload::run_underload(site, cfg, part)?;
                if !r.runs.is_empty() {
                    results.gather(r);
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// The `[[playback]]` tables, their profiles typed as the plan is read (an unknown one names
/// its key, `playback[0].profiles[1]`).
#[derive(Deserialize)]
struct PlaybackTables {
    #[serde(default)]
    playback: Vec<PlaybackConfig>,
}

/// One `[[playback]]` table checked, its timeline found beside the plan or built in.
fn playback_job(t: &PlanText, i: usize, p: PlaybackConfig) -> Result<PlaybackJob> {
    let key = format!("playback[{i}]");
    let mut config = p;
    let mut embedded = None;
    if config.timeline.is_relative() {
        match t.base {
            Base::Dir(d) => config.timeline = d.join(&config.timeline),
            Base::Preset => {
                let name = config.timeline.to_string_lossy();
                embedded = Some(
                    PRESET_FILES
                        .iter()
                        .copied()
                        .find(|(n, _)| *n == name)
                        .ok_or_else(|| t.bad(&key, format!("no built-in file `{name}`")))?,
                );
            }
        }
    }
    // A built-in timeline is checked by the presets' tests, not read here; the other settings
    // are checked either way (how many profiles, none twice, reply_every, the provider).
    if embedded.is_none() {
        config.check()
    } else {
        config.check_settings()
    }
    .map_err(|e| t.bad(&key, format!("{e:#}")))?;
    Ok(PlaybackJob { config, embedded })
}

impl<Pl, R> PlanTables<Pl, R> for PlaybackExperiment
where
    Pl: Jobs<PlaybackJob>,
    R: Gathers<UnderloadReport, Playback>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: PlaybackTables = t.tables()?;
        for (i, p) in f.playback.iter().enumerate() {
            if let Some(topology) = p
                .topology
                .as_deref()
                .filter(|t| gateway_topology(t).is_none())
            {
                return Err(t.bad(
                    &format!("playback[{i}].topology"),
                    format!(
                        "`{topology}`: playback builds sensors:1 itself; topology takes bump \
                         (the legacy sensor1 behind a gateway, a MACsec consumer) or bump2 (two \
                         legacy ECUs behind gateways)"
                    ),
                ));
            }
        }
        for (i, p) in f.playback.into_iter().enumerate() {
            let job = playback_job(t, i, p)?;
            plan.jobs_mut().push(job);
        }
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn on_hosts(&self, plan: &Pl) -> bool {
        !plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        30
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let jobs = plan.jobs();
        for (i, job) in jobs.iter().enumerate() {
            let mut cfg = job.config.clone();
            if let Some((name, text)) = job.embedded {
                // The preset's built-in timeline goes into the report: the run can be redone
                // from it.
                let path = cx.out.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
                cfg.timeline = path;
            }
            let what = format!(
                "playback {}/{}: {} from {}",
                i + 1,
                jobs.len(),
                NamedProfile::join(&cfg.profiles, ", "),
                cfg.timeline.display()
            );
            cx.on_site(what, layout(cfg.topology.as_deref()), &mut |site, part| {
                let r = playback::run_playback(site, &cfg, part)?;
                if !r.runs.is_empty() {
                    results.gather(r);
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}
