//! What a report holds and summary.json writes: the runs of the ping-pong scenarios
//! ([`Report`], [`ScenarioRun`]), their statistics and verdicts ([`Summary`],
//! [`ScenarioSummary`], [`PayloadFit`]), and the errors of reading and writing a report. Below the
//! page and every section that reads them; the page is [`crate::report`].

use std::fmt;
use std::path::{Path, PathBuf};

use ivnsec_core::profile::NamedProfile;
use serde::Serialize;
use serde_json::{Map, Value};

use super::experiments::Experiments;
use super::fit::least_squares;
use crate::pingpong::{Exchange, Requirements, Section, SectionStats, Verdicts, efficiency};
use crate::report::seeds::seed000;
use crate::stats;
use crate::tdma::report as tdma;

/// File names inside a report directory.
pub const SAMPLES_CSV: &str = "samples.csv";
pub const SUMMARY_JSON: &str = "summary.json";
pub const SUMMARY_MD: &str = "summary.md";
pub const INDEX_HTML: &str = "index.html";

/// How the statistics are computed (summary.json `statistics_method`).
pub const STATISTICS_METHOD: &str = "exact: every sample kept and sorted; quantiles \
interpolate linearly between order statistics (Hyndman-Fan type 7, as R and numpy); standard \
deviation with n-1; wilcoxon_bound_us is the smallest m for which the one-sample Wilcoxon \
signed-rank test rejects 'median >= m' at 99 % confidence (seed 000 section 4.3); pwcet_1e9_us is \
the latency exceeded with probability 1e-9 per message from a Gumbel fit (maximum likelihood) to \
maxima of blocks of 50 messages in measurement order; all times in microseconds";

/// The measurements of one scenario (one profile at one payload size).
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioRun {
    /// E.g. `aes128-cbc-hmac-sha256@1440` or `aes128-gcm/conf@64`.
    pub name: String,
    /// The profile, with the name the plan or command line gave it (samples.csv: that name).
    pub profile: NamedProfile,
    /// Payload bytes per message.
    pub payload: usize,
    /// Bytes of the whole frame on the wire (header, payload, protection overhead).
    pub frame_bytes: usize,
    /// Every exchange in measurement order.
    pub exchanges: Vec<Exchange>,
}

/// Everything a report directory is made from.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Host, kernel, CPU, mode, transport, plan, … as the runner fills them.
    pub environment: Map<String, Value>,
    pub requirements: Requirements,
    pub scenarios: Vec<ScenarioRun>,
    /// sockperf ping-pong on the same path, as an object of whatever keys the runner measured.
    pub baseline_sockperf: Option<Value>,
    /// The plan's other experiments (throughput, …).
    pub experiments: Experiments,
}

/// Statistics of the eight sections of one scenario; `None` where there is no sample (all
/// lost, or `owd_direct` not measured). Serialized as an object with every key present.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sections {
    pub owd_forward: Option<SectionStats>,
    pub owd_backward: Option<SectionStats>,
    pub rtt: Option<SectionStats>,
    pub protect: Option<SectionStats>,
    pub verify: Option<SectionStats>,
    pub responder: Option<SectionStats>,
    pub wire_one_way: Option<SectionStats>,
    pub owd_direct: Option<SectionStats>,
}

impl Sections {
    pub fn of(exchanges: &[Exchange]) -> Sections {
        let s = |sec| SectionStats::of(sec, exchanges);
        Sections {
            owd_forward: s(Section::OwdForward),
            owd_backward: s(Section::OwdBackward),
            rtt: s(Section::Rtt),
            protect: s(Section::Protect),
            verify: s(Section::Verify),
            responder: s(Section::Responder),
            wire_one_way: s(Section::WireOneWay),
            owd_direct: s(Section::OwdDirect),
        }
    }

    pub fn get(&self, section: Section) -> Option<&SectionStats> {
        match section {
            Section::OwdForward => self.owd_forward.as_ref(),
            Section::OwdBackward => self.owd_backward.as_ref(),
            Section::Rtt => self.rtt.as_ref(),
            Section::Protect => self.protect.as_ref(),
            Section::Verify => self.verify.as_ref(),
            Section::Responder => self.responder.as_ref(),
            Section::WireOneWay => self.wire_one_way.as_ref(),
            Section::OwdDirect => self.owd_direct.as_ref(),
        }
    }
}

/// How far seed 000's estimated forward OWD (1 + 2 + 5 + responder 4) is from the directly
/// measured one, per message: estimate − direct, in µs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EstimateError {
    pub count: usize,
    pub mean_us: f64,
    pub median_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    /// Mean of |estimate − direct| relative to the direct value.
    pub mean_abs_relative: f64,
}

impl EstimateError {
    pub fn of(exchanges: &[Exchange]) -> Option<EstimateError> {
        let mut diff = Vec::new();
        let mut rel = 0.0;
        for e in exchanges.iter().filter(|e| !e.lost) {
            if let Some(d) = e.owd_direct_ns {
                let est = e.owd_forward_ns();
                diff.push((est - d as f64) / 1000.0);
                if d > 0 {
                    rel += (est - d as f64).abs() / d as f64;
                }
            }
        }
        let s = stats::summarize(&diff)?;
        Some(EstimateError {
            count: s.count,
            mean_us: s.mean,
            median_us: s.median,
            min_us: s.min,
            max_us: s.max,
            mean_abs_relative: rel / diff.len() as f64,
        })
    }
}

/// One scenario of summary.json.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioSummary {
    pub name: String,
    pub profile: NamedProfile,
    pub payload: usize,
    pub frame_bytes: usize,
    /// payload / frame_bytes (seed 000 §4.2.3).
    pub efficiency: f64,
    /// Exchanges attempted, lost ones included.
    pub count: usize,
    /// Exchanges without a valid reply.
    pub lost: usize,
    pub sections: Sections,
    pub verdicts: Verdicts,
    /// Estimated minus directly measured forward OWD; `null` when not measured.
    pub owd_estimate_error_us: Option<EstimateError>,
}

impl ScenarioSummary {
    pub fn of(run: &ScenarioRun, req: &Requirements) -> ScenarioSummary {
        let sections = Sections::of(&run.exchanges);
        let lost = run.exchanges.iter().filter(|e| e.lost).count();
        let verdicts = Verdicts::judge(
            req,
            sections.owd_forward.as_ref(),
            sections.owd_backward.as_ref(),
            sections.rtt.as_ref(),
            lost,
        );
        ScenarioSummary {
            name: run.name.clone(),
            profile: run.profile.clone(),
            payload: run.payload,
            frame_bytes: run.frame_bytes,
            efficiency: efficiency(run.payload, run.frame_bytes),
            count: run.exchanges.len(),
            lost,
            owd_estimate_error_us: EstimateError::of(&run.exchanges),
            sections,
            verdicts,
        }
    }

    /// Worst one-way delay in either direction (µs), which the control verdict multiplies by
    /// the margin.
    pub fn worst_owd_us(&self) -> Option<f64> {
        match (&self.sections.owd_forward, &self.sections.owd_backward) {
            (Some(f), Some(b)) => Some(f.max_us.max(b.max_us)),
            (Some(f), None) => Some(f.max_us),
            (None, Some(b)) => Some(b.max_us),
            (None, None) => None,
        }
    }
}

/// A least-squares line of one forward-OWD statistic against the payload, for one profile, and
/// where it reaches the deadline (seed 000 §4.2.3, Fig. 20–21).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PayloadFit {
    pub profile: NamedProfile,
    /// Always `owd_forward`.
    pub section: String,
    /// `min`, `mean` or `max` of each scenario.
    pub statistic: String,
    /// Scenarios (payload sizes) the line goes through.
    pub points: usize,
    pub slope_us_per_byte: f64,
    pub intercept_us: f64,
    pub r2: Option<f64>,
    /// The control-data OWD deadline.
    pub deadline_us: f64,
    /// Payload at which the line reaches the deadline: 0 when already there at payload 0,
    /// `null` when it never does.
    pub crossing_payload_bytes: Option<f64>,
    /// The deadline divided by (1 + safety margin), the bound the control verdict applies.
    pub margin_deadline_us: f64,
    pub crossing_with_margin_payload_bytes: Option<f64>,
}

/// summary.json.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// The run was stopped by Ctrl-C (SIGINT, SIGTERM or SIGHUP) and holds only what finished
    /// before it (from `environment.interrupted`); absent when it ran to the end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    pub environment: Map<String, Value>,
    pub statistics_method: String,
    pub requirements: Requirements,
    pub scenarios: Vec<ScenarioSummary>,
    pub payload_fits: Vec<PayloadFit>,
    pub baseline: Baseline,
    /// The plan's other experiments, as measured.
    pub experiments: Experiments,
    /// Their verdicts.
    pub experiment_verdicts: ExperimentVerdicts,
    /// Seed 001's Tables 3, 7, 11 and Figure 6 beside ours (plans with `[[tdma]]` or
    /// `[[crypto_bench]]` tables only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed001: Option<tdma::Seed001>,
}

/// The verdicts of the experiments (`experiment_verdicts` of summary.json).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ExperimentVerdicts {
    pub throughput: Vec<crate::throughput::report::ThroughputRow>,
}

/// Reference measurements on the same path (`baseline` of summary.json).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Baseline {
    pub sockperf: Option<Value>,
}

impl Summary {
    /// Scenarios that miss the control-data deadline.
    pub fn control_failures(&self) -> impl Iterator<Item = &ScenarioSummary> {
        self.scenarios.iter().filter(|s| !s.verdicts.control_2500us)
    }

    /// Scenarios that miss the sensor-data p99.9 bound.
    pub fn sensor_failures(&self) -> impl Iterator<Item = &ScenarioSummary> {
        self.scenarios
            .iter()
            .filter(|s| !s.verdicts.sensor_p999_2ms)
    }
}

/// The fewest distinct payload sizes a line is fitted through: a line through two or three
/// points fits them (nearly) exactly and says nothing about a payload outside them.
pub const MIN_FIT_PAYLOADS: usize = 4;

/// The profiles of `scenarios` in order of first appearance.
fn profiles_of(scenarios: &[ScenarioSummary]) -> Vec<&NamedProfile> {
    let mut profiles: Vec<&NamedProfile> = Vec::new();
    for s in scenarios {
        if !profiles.contains(&&s.profile) {
            profiles.push(&s.profile);
        }
    }
    profiles
}

/// How many distinct payload sizes a profile's forward OWD was measured at.
fn payload_sizes(scenarios: &[ScenarioSummary], profile: &NamedProfile) -> usize {
    let mut sizes: Vec<usize> = scenarios
        .iter()
        .filter(|s| s.profile == *profile && s.sections.owd_forward.is_some())
        .map(|s| s.payload)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes.len()
}

/// Why profiles measured at several payload sizes have no line (or lack one statistic's), one
/// sentence each: too few sizes, or a statistic that falls as the payload grows. Empty when
/// every such profile has all three lines.
pub fn payload_fit_gaps(summary: &Summary) -> Vec<String> {
    let mut few = Vec::new();
    let mut falling = Vec::new();
    for p in profiles_of(&summary.scenarios) {
        let n = payload_sizes(&summary.scenarios, p);
        if n < 2 {
            continue;
        }
        if n < MIN_FIT_PAYLOADS {
            few.push(format!("{p} ({n})"));
            continue;
        }
        for stat in ["min", "mean", "max"] {
            if !summary
                .payload_fits
                .iter()
                .any(|f| f.profile == *p && f.statistic == stat)
            {
                falling.push(format!("{p} {stat}"));
            }
        }
    }
    let mut out = Vec::new();
    if !few.is_empty() {
        out.push(format!(
            "Too few points to fit a line (it needs at least {MIN_FIT_PAYLOADS} payload sizes): {}.",
            few.join(", ")
        ));
    }
    if !falling.is_empty() {
        out.push(format!(
            "No line where the latency falls as the payload grows (a negative slope says nothing about a larger payload): {}.",
            falling.join(", ")
        ));
    }
    out
}

/// Fits of min, mean and max forward OWD against payload for every profile measured at
/// [`MIN_FIT_PAYLOADS`] or more payload sizes, profiles in order of first appearance; a
/// statistic whose line falls with the payload gets none.
pub fn payload_fits(scenarios: &[ScenarioSummary], req: &Requirements) -> Vec<PayloadFit> {
    let profiles: Vec<&NamedProfile> = profiles_of(scenarios)
        .into_iter()
        .filter(|p| payload_sizes(scenarios, p) >= MIN_FIT_PAYLOADS)
        .collect();
    let margin_deadline = req.control_owd_us / (1.0 + req.safety_margin);
    let mut out = Vec::new();
    for p in profiles {
        let rows: Vec<(f64, &SectionStats)> = scenarios
            .iter()
            .filter(|s| s.profile == *p)
            .filter_map(|s| Some((s.payload as f64, s.sections.owd_forward.as_ref()?)))
            .collect();
        type Stat = fn(&SectionStats) -> f64;
        let stats: [(&str, Stat); 3] = [
            ("min", |s| s.min_us),
            ("mean", |s| s.mean_us),
            ("max", |s| s.max_us),
        ];
        for (name, get) in stats {
            let pts: Vec<(f64, f64)> = rows.iter().map(|(x, s)| (*x, get(s))).collect();
            if let Some(f) = least_squares(&pts).filter(|f| f.slope >= 0.0) {
                out.push(PayloadFit {
                    profile: p.clone(),
                    section: Section::OwdForward.name().to_string(),
                    statistic: name.to_string(),
                    points: f.points,
                    slope_us_per_byte: f.slope,
                    intercept_us: f.intercept,
                    r2: f.r2,
                    deadline_us: req.control_owd_us,
                    crossing_payload_bytes: f.crossing(req.control_owd_us),
                    margin_deadline_us: margin_deadline,
                    crossing_with_margin_payload_bytes: f.crossing(margin_deadline),
                });
            }
        }
    }
    out
}

/// What went wrong reading or writing a report directory.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReportError {
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A problem in samples.csv; `column` is the 1-based field number.
    Csv {
        path: PathBuf,
        line: usize,
        column: usize,
        field: Option<&'static str>,
        message: String,
    },
    /// A problem in summary.json.
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A plot could not be drawn.
    Plot { plot: String, message: String },
}

impl ReportError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> ReportError {
        ReportError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ReportError::Csv {
                path,
                line,
                column,
                field,
                message,
            } => {
                write!(f, "{}: line {line}, column {column}", path.display())?;
                if let Some(name) = field {
                    write!(f, " ({name})")?;
                }
                write!(f, ": {message}")
            }
            ReportError::Json {
                path,
                line,
                column,
                message,
            } => write!(
                f,
                "{}: line {line}, column {column}: {message}",
                path.display()
            ),
            ReportError::Plot { plot, message } => write!(f, "plot {plot:?}: {message}"),
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReportError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The AES key size a profile names (`aes256-…`, `esp-aes128-…`, `macsec-gcm-aes-256`).
pub fn aes_key_bits(profile: &str) -> Option<u32> {
    let base = profile.split('/').next().unwrap_or(profile);
    let parts: Vec<&str> = base.split('-').collect();
    parts
        .iter()
        .enumerate()
        .find_map(|(i, part)| match part.strip_prefix("aes") {
            Some("") => parts.get(i + 1)?.parse().ok(),
            Some(d) => d.parse().ok(),
            None => None,
        })
}

/// The HMAC hash a profile names (`…-hmac-sha256` → `sha256`).
pub fn hmac_name(profile: &str) -> Option<&str> {
    let base = profile.split('/').next().unwrap_or(profile);
    let i = base.find("hmac-")?;
    Some(&base[i + 5..]).filter(|h| !h.is_empty())
}

/// The profile the seed-style detail plots (box plots, dispersion, Fig. 20) focus on: the
/// seed's AES-256 / HMAC-SHA-256 when measured, else the protected profile measured at the
/// most payload sizes, else the first.
pub fn focus_profile(scenarios: &[ScenarioSummary]) -> Option<&str> {
    if scenarios
        .iter()
        .any(|s| s.profile == seed000::WILCOXON_PROFILE)
    {
        return Some(seed000::WILCOXON_PROFILE);
    }
    let mut best: Option<(&str, usize)> = None;
    for s in scenarios {
        if s.profile == "plain" || s.profile == "crc32" {
            continue;
        }
        let n = scenarios.iter().filter(|t| t.profile == s.profile).count();
        if best.is_none_or(|(_, m)| n > m) {
            best = Some((s.profile.name(), n));
        }
    }
    best.map(|b| b.0)
        .or_else(|| scenarios.first().map(|s| s.profile.name()))
}
