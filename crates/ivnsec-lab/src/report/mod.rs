//! Reports of the ping-pong experiment (issue 3, "Reports"): a report directory holds
//!
//! - `samples.csv`, one row per message ([`csv`]);
//! - `summary.json`, the statistics and verdicts per scenario ([`Summary`], keys documented in
//!   `docs/report.md`);
//! - `summary.md`, verdict tables and seed 000 Tables 4–5 / Appendix A beside our figures;
//! - `index.html`, one self-contained page with inline SVG plots (seed 000 Fig. 17–33 and a CDF).
//!
//! [`Report::write_dir`] writes all four; [`Report::from_dir`] reads a directory back from its
//! `samples.csv` (plus environment, requirements and baseline from `summary.json` when present),
//! which is what `ivnsec report DIR` rebuilds from.
//!
//! The page names no experiment but the ping-pong, whose scenarios are its own: their sections
//! are in `scenarios.rs` (tables, summary.md) and `scenarios_html.rs` (index.html, plots), the
//! comparisons with the seeds in [`seeds`], every other experiment's section in its folder
//! (`experiments::all()`). The data they all read, summary.json's, is in [`summary`].

mod baseline;
pub mod csv;
pub mod experiments;
pub mod fit;
mod html;
mod markdown;
pub(crate) mod plots;
mod scenarios;
mod scenarios_html;
pub mod seeds;
pub mod summary;

use std::path::Path;

use serde_json::{Map, Value};

use crate::pingpong::Requirements;

pub use crate::table::Table;
use crate::tdma::report as tdma;
pub use experiments::Experiments;
pub use fit::{LinearFit, least_squares};

pub use summary::*;

impl Summary {
    /// Names of the experiment runs whose verdict failed.
    pub fn experiment_failures(&self) -> Vec<String> {
        let page = experiments::Page {
            experiments: &self.experiments,
            requirements: &self.requirements,
        };
        crate::experiments::all()
            .into_iter()
            .flat_map(|x| x.failures(&page))
            .collect()
    }

    /// The verdict table as Markdown (also fine on a terminal).
    pub fn verdict_table(&self) -> String {
        scenarios::verdict_table(self)
    }
}

impl Report {
    /// The summary.json structure.
    pub fn summary(&self) -> Summary {
        let scenarios: Vec<ScenarioSummary> = self
            .scenarios
            .iter()
            .map(|s| ScenarioSummary::of(s, &self.requirements))
            .collect();
        Summary {
            interrupted: self.environment.get("interrupted") == Some(&Value::Bool(true)),
            environment: self.environment.clone(),
            statistics_method: STATISTICS_METHOD.to_string(),
            requirements: self.requirements,
            payload_fits: payload_fits(&scenarios, &self.requirements),
            scenarios,
            baseline: Baseline {
                sockperf: self.baseline_sockperf.clone(),
            },
            experiments: self.experiments.clone(),
            experiment_verdicts: ExperimentVerdicts {
                throughput: crate::throughput::report::throughput_rows(
                    &self.experiments.throughput,
                    &self.requirements,
                ),
            },
            seed001: tdma::seed001(tdma::Results {
                tdma: &self.experiments.tdma,
                crypto_bench: &self.experiments.crypto_bench,
            }),
        }
    }

    /// Writes samples.csv, summary.json, summary.md and index.html into `dir` (created if
    /// missing) and returns the summary.
    pub fn write_dir(&self, dir: &Path) -> Result<Summary, ReportError> {
        std::fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
        csv::write_samples(&dir.join(SAMPLES_CSV), &self.scenarios)?;
        let page = experiments::Page {
            experiments: &self.experiments,
            requirements: &self.requirements,
        };
        for x in crate::experiments::all() {
            for (name, text) in x.files(&page) {
                write_file(&dir.join(name), text.as_bytes())?;
            }
        }
        self.write_summaries(dir)
    }

    /// Writes summary.json, summary.md and index.html into `dir` (created if missing), leaving
    /// samples.csv alone: what rebuilding a report from its samples needs.
    pub fn write_summaries(&self, dir: &Path) -> Result<Summary, ReportError> {
        std::fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
        let summary = self.summary();
        let json_path = dir.join(SUMMARY_JSON);
        let mut json = serde_json::to_string_pretty(&summary).map_err(|e| ReportError::Json {
            path: json_path.clone(),
            line: 0,
            column: 0,
            message: e.to_string(),
        })?;
        json.push('\n');
        write_file(&json_path, json.as_bytes())?;
        write_file(&dir.join(SUMMARY_MD), markdown::render(&summary).as_bytes())?;
        let page = html::render(self, &summary)?;
        write_file(&dir.join(INDEX_HTML), page.as_bytes())?;
        Ok(summary)
    }

    /// Reads a report directory: its samples.csv, and environment, requirements and baseline
    /// from its summary.json when that exists (defaults otherwise).
    pub fn from_dir(dir: &Path) -> Result<Report, ReportError> {
        let scenarios = csv::read_samples(&dir.join(SAMPLES_CSV))?;
        let json_path = dir.join(SUMMARY_JSON);
        let mut report = Report {
            environment: Map::new(),
            requirements: Requirements::default(),
            scenarios,
            baseline_sockperf: None,
            experiments: Experiments::default(),
        };
        let text = match std::fs::read_to_string(&json_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
            Err(e) => return Err(ReportError::io(&json_path, e)),
        };
        let json_err = |line: usize, column: usize, message: String| ReportError::Json {
            path: json_path.clone(),
            line,
            column,
            message,
        };
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| json_err(e.line(), e.column(), e.to_string()))?;
        let Value::Object(top) = v else {
            return Err(json_err(1, 1, "not a JSON object".into()));
        };
        match top.get("environment") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => report.environment = m.clone(),
            Some(_) => return Err(json_err(0, 0, "\"environment\" is not an object".into())),
        }
        match top.get("requirements") {
            None | Some(Value::Null) => {}
            Some(r) => {
                report.requirements = serde_json::from_value(r.clone())
                    .map_err(|e| json_err(0, 0, format!("\"requirements\": {e}")))?;
            }
        }
        match top.get("baseline") {
            None | Some(Value::Null) => {}
            Some(Value::Object(b)) => {
                report.baseline_sockperf = b.get("sockperf").filter(|v| !v.is_null()).cloned();
            }
            Some(_) => return Err(json_err(0, 0, "\"baseline\" is not an object".into())),
        }
        match top.get("experiments") {
            None | Some(Value::Null) => {}
            Some(e) => {
                report.experiments = serde_json::from_value(e.clone())
                    .map_err(|e| json_err(0, 0, format!("\"experiments\": {e}")))?;
            }
        }
        Ok(report)
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    std::fs::write(path, bytes).map_err(|e| ReportError::io(path, e))
}

#[cfg(test)]
mod tests;
