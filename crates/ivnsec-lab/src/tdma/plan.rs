//! `[[tdma]]` in a plan (seed 001): its tables checked into sweeps and run, the analysis and
//! then the measured runs on `cascade:N` testbeds of their own, or between the plan's two
//! hosts.

use anyhow::{Context, Result};
use serde::Deserialize;

use super::report::TdmaExperiment;
use super::sweep::{self, Sweep, SweepConfig, TdmaReport};
use crate::experiment::{Gathers, Jobs, PlanTables, PlanText, RunContext};

#[derive(Deserialize)]
struct Tables {
    #[serde(default)]
    tdma: Vec<SweepConfig>,
}

impl<Pl, R> PlanTables<Pl, R> for TdmaExperiment
where
    Pl: Jobs<Sweep>,
    R: Gathers<TdmaReport>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: Tables = t.tables()?;
        *plan.jobs_mut() = t.checked("tdma", &f.tdma, SweepConfig::check)?;
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        150
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let jobs = plan.jobs();
        for (i, s) in jobs.iter().enumerate() {
            if crate::interrupt::requested() {
                break;
            }
            eprintln!(
                "ivnsec run: tdma {}/{}: the analysis, then {} run(s) of {} base periods on \
                 cascade testbeds (about {:.0} s) where it can measure",
                i + 1,
                jobs.len(),
                s.runs(),
                s.periods,
                s.measure_seconds()
            );
            let part = cx.part();
            let (on, hosts) = (cx.on, cx.hosts);
            let report = match hosts {
                // Across hosts: between the plan's two hosts; no capture there (the ECUs run on
                // other machines).
                Some((a, b)) => sweep::run_across_hosts(s, a, b, &mut |_| Ok(())),
                None => sweep::run(s, on, part.as_deref(), &mut |_| cx.absorb()),
            };
            let report = match report {
                Err(_) if crate::interrupt::requested() => break,
                r => r.context("tdma")?,
            };
            results.gather(report);
        }
        Ok(())
    }
}
