//! `[[camera]]` in a plan: its tables checked and run, each on a site of its own (or the plan's
//! two hosts).

use anyhow::Result;
use serde::Deserialize;

use super::CameraReport;
use super::report::CameraExperiment;
use super::run::{self as camera, CameraConfig};
use crate::experiment::{Gathers, Jobs, PlanTables, PlanText, RunContext};

#[derive(Deserialize)]
struct Tables {
    #[serde(default)]
    camera: Vec<CameraConfig>,
}

impl<Pl, R> PlanTables<Pl, R> for CameraExperiment
where
    Pl: Jobs<CameraConfig>,
    R: Gathers<CameraReport>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: Tables = t.tables()?;
        for (i, c) in f.camera.iter().enumerate() {
            c.check()
                .map_err(|e| t.bad(&format!("camera[{i}]"), format!("{e:#}")))?;
        }
        *plan.jobs_mut() = f.camera;
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn on_hosts(&self, plan: &Pl) -> bool {
        !plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        40
    }

    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()> {
        let jobs = plan.jobs();
        for (i, cfg) in jobs.iter().enumerate() {
            let what = format!(
                "cameras {}/{}: {:?} at {} over {:?}",
                i + 1,
                jobs.len(),
                cfg.cameras,
                cfg.levels.join(", "),
                cfg.transport
            );
            cx.on_site(what, camera::layout(), &mut |site, part| {
                // Interrupted, it returns the runs that finished (none: left out).
                let r = camera::run_camera(site, cfg, part)?;
                if !r.results.is_empty() {
                    results.gather(r);
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}
