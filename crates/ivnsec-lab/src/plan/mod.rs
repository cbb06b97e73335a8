//! Experiment plans: a TOML file naming a matrix of ping-pong scenarios and how to run them.
//! `plans/*.toml` in the repository are the presets; docs/plans.md describes the format.
//!
//! ```toml
//! name = "quick"
//! description = "…"
//! topology = "pair"          # pair | steer-by-wire | sensors:N | cascade:N | bump | bump2 (default pair)
//! initiator = "ecu1"         # default: the topology's first ECU
//! responder = "ecu2"         # default: its last ECU
//! [run]                      # settings of every scenario (all optional)
//! count = 120                # exchanges per replication
//! replications = 5
//! pause_ms = 0.1
//! timeout_ms = 200
//! mode = "blocking"          # or "busy-poll"
//! pin = false
//! provider = "auto"
//! [requirements]             # verdict thresholds (all optional)
//! control_owd_us = 2500
//! control_rtt_us = 5000
//! safety_margin = 0.25
//! sensor_p999_us = 2000
//! [[matrix]]                 # every profile × every payload
//! profiles = ["plain", "aes128-gcm"]
//! payloads = [64, 1440]
//! [[scenario]]               # single scenarios, optionally with their own count/replications
//! profile = "chacha20-poly1305"
//! payload = 736
//! ```
//!
//! Experiment tables beside them: `[[throughput]]`, `[[underload]]`, `[[playback]]`,
//! `[[camera]]`, `[[tdma]]` (seed 001's analysis and slot-timed runs), `[[crypto_bench]]`
//! (single-frame protect/verify times) and `[[pingpong]]` (ping-pong scenarios through the
//! gateways of a `bump`/`bump2` testbed of their own); docs/plans.md lists their keys. The plan
//! reads only its frame (the keys above, `[[host]]`); each experiment of
//! [`crate::experiments::planned`] reads and checks its own tables (`parse` in its folder's
//! `plan.rs`), and a key that neither the frame nor a listed experiment reads is refused.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use ivnsec_core::profile::NamedProfile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::topology::Topology;
use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::bench::per_frame::PerFrameConfig;
use crate::bench::plan::ChunkBenchConfig;
use crate::camera::run::CameraConfig;
use crate::experiment::text::{ScenarioDefaults, key_error, toml_error_at};
use crate::experiment::{Gateways, Jobs, PlanText};
use crate::hosts::Host;
use crate::pingpong::Requirements;
use crate::pingpong::run::{Mode, Scenario, ms_to_ns};
use crate::report::Experiments;
use crate::tdma::sweep::Sweep;
use crate::tlsbench::plan::TlsBenchConfig;
use crate::tunnel::{BulkConfig, PingConfig};
use crate::underload::run::UnderloadConfig;
use ivnsec_node::error::usage;

pub use crate::experiment::text::Base;
use crate::experiment::text::toml_error;
use crate::gateway_pingpong::plan::PingPongJob;
use crate::throughput::plan::ThroughputJob;
use crate::underload::plan::PlaybackJob;

pub mod run;

/// The presets shipped with ivnsec (the files in `plans/`).
pub const PRESETS: [(&str, &str); 6] = [
    ("quick", include_str!("../../../../plans/quick.toml")),
    ("seed000", include_str!("../../../../plans/seed000.toml")),
    ("seed001", include_str!("../../../../plans/seed001.toml")),
    ("seed002", include_str!("../../../../plans/seed002.toml")),
    ("seed003", include_str!("../../../../plans/seed003.toml")),
    ("seed004", include_str!("../../../../plans/seed004.toml")),
];

/// The plan's frame: the keys it reads itself ([`FRAME_KEYS`]); every other key is an
/// experiment's table, read by the experiment.
#[derive(Debug, Deserialize)]
struct PlanFile {
    name: Option<String>,
    #[allow(dead_code)]
    description: Option<String>,
    topology: Option<String>,
    initiator: Option<String>,
    responder: Option<String>,
    #[serde(default)]
    run: RunSection,
    #[serde(default)]
    requirements: ReqSection,
    #[serde(default)]
    matrix: Vec<MatrixEntry>,
    #[serde(default)]
    scenario: Vec<ScenarioEntry>,
    /// `[[host]]` tables: the nodes run on these hosts over SSH (docs/multihost.md).
    #[serde(default)]
    host: Vec<Host>,
}

/// The top-level keys of [`PlanFile`].
const FRAME_KEYS: [&str; 10] = [
    "name",
    "description",
    "topology",
    "initiator",
    "responder",
    "run",
    "requirements",
    "matrix",
    "scenario",
    "host",
];

/// `[run]`: every key optional; also the shape of command-line overrides.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    pub count: Option<u32>,
    pub replications: Option<u32>,
    pub pause_ms: Option<f64>,
    pub timeout_ms: Option<f64>,
    pub mode: Option<Mode>,
    pub pin: Option<bool>,
    pub provider: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReqSection {
    control_owd_us: Option<f64>,
    control_rtt_us: Option<f64>,
    safety_margin: Option<f64>,
    sensor_p999_us: Option<f64>,
    throughput_cost: Option<f64>,
    cpu_increase_points: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixEntry {
    /// Typed where the plan is read: an unknown profile is a TOML error naming its key
    /// (`matrix[0].profiles[1]`, [`crate::experiment::text::key_at`]).
    profiles: Vec<NamedProfile>,
    payloads: Vec<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioEntry {
    /// Typed where the plan is read, as [`MatrixEntry::profiles`] (`scenario[0].profile`).
    profile: NamedProfile,
    payload: usize,
    count: Option<u32>,
    replications: Option<u32>,
}

/// The list of experiments the plan reads and runs.
fn planned() -> [&'static dyn crate::experiment::PlanTables<Plan, Experiments>; 10] {
    crate::experiments::planned()
}

/// A checked plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    /// The testbed the plan runs on, and the two ECUs that exchange.
    pub topology: Topology,
    pub initiator: String,
    pub responder: String,
    pub scenarios: Vec<Scenario>,
    pub throughput: Vec<ThroughputJob>,
    /// `[[throughput]]` groups with a `topology` of their own (`bump2`: through gateways),
    /// run after those on `sensors:N`.
    pub throughput_gateways: Vec<ThroughputJob>,
    pub underload: Vec<UnderloadConfig>,
    /// `[[underload]]` tables with `topology = "bump2"` (through gateways), run after the
    /// others.
    pub underload_gateways: Vec<UnderloadConfig>,
    /// `[[pingpong]]` tables: ping-pong scenarios through the gateways of a `bump`/`bump2`
    /// testbed of their own, run after the plan's own scenarios.
    pub pingpong_gateways: Vec<PingPongJob>,
    pub playback: Vec<PlaybackJob>,
    pub camera: Vec<CameraConfig>,
    /// `[[tdma]]` tables, checked.
    pub tdma: Vec<Sweep>,
    pub crypto_bench: Vec<PerFrameConfig>,
    /// `[[tunnel_ping]]` and `[[tunnel_bulk]]` tables, checked (each on a `pair` testbed of
    /// its own).
    pub tunnel_ping: Vec<PingConfig>,
    pub tunnel_bulk: Vec<BulkConfig>,
    /// `[[chunk_bench]]` and `[[tls_bench]]` tables, checked (run in the plan's own process).
    pub chunk_bench: Vec<ChunkBenchConfig>,
    pub tls_bench: Vec<TlsBenchConfig>,
    pub requirements: Requirements,
    /// `[[host]]` tables: with them, `initiator` and `responder` name two of these hosts and
    /// the ping-pong and throughput run between them over SSH instead of on a testbed.
    pub hosts: Vec<Host>,
}

/// Checked jobs by kind: what the listed experiments read and run.
macro_rules! jobs {
    ($($t:ty $(, $table:ty)? => $field:ident;)*) => {$(
        impl Jobs<$t $(, $table)?> for Plan {
            fn jobs(&self) -> &[$t] {
                &self.$field
            }
            fn jobs_mut(&mut self) -> &mut Vec<$t> {
                &mut self.$field
            }
        }
    )*};
}

jobs! {
    ThroughputJob => throughput;
    ThroughputJob, Gateways => throughput_gateways;
    UnderloadConfig => underload;
    UnderloadConfig, Gateways => underload_gateways;
    PingPongJob => pingpong_gateways;
    PlaybackJob => playback;
    CameraConfig => camera;
    Sweep => tdma;
    PerFrameConfig => crypto_bench;
    PingConfig => tunnel_ping;
    BulkConfig => tunnel_bulk;
    ChunkBenchConfig => chunk_bench;
    TlsBenchConfig => tls_bench;
}

impl Plan {
    /// The initiator's and the responder's hosts, when the plan has `[[host]]` tables.
    pub fn host_pair(&self) -> Option<(&Host, &Host)> {
        let find = |n: &str| self.hosts.iter().find(|h| h.name == n);
        Some((find(&self.initiator)?, find(&self.responder)?))
    }
}

impl Plan {
    /// Total exchanges of the plan.
    pub fn exchanges(&self) -> u64 {
        self.scenarios
            .iter()
            .map(|s| u64::from(s.count) * u64::from(s.replications))
            .sum()
    }

    /// Seconds the throughput runs send, baselines included (iperf3 twice when shaped).
    pub fn throughput_seconds(&self) -> f64 {
        crate::throughput::plan::seconds(self.throughput.iter().chain(&self.throughput_gateways))
    }
}

/// The longest plan `name` accepted (it heads every report file).
pub const MAX_NAME_CHARS: usize = 200;

/// Reads and checks a plan file; errors name the file, the key and the problem.
pub fn load(path: &Path, overrides: &RunSection) -> Result<Plan> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("plan {}: cannot read it: {e}", path.display())))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan".into());
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| ".".into());
    parse_in(
        &path.display().to_string(),
        &stem,
        &text,
        overrides,
        &Base::Dir(dir),
    )
}

/// The `[[host]]` tables of a plan file, checked (the rest of the file is not read: a file with
/// only `[[host]]` tables will do for `ivnsec hosts check`).
pub fn hosts_of(path: &Path) -> Result<Vec<Host>> {
    #[derive(Deserialize)]
    struct HostsOnly {
        #[serde(default)]
        host: Vec<Host>,
    }
    let file = path.display().to_string();
    let meta =
        std::fs::metadata(path).map_err(|e| usage(format!("plan {file}: cannot read it: {e}")))?;
    if meta.len() > 16 << 20 {
        return Err(usage(format!("plan {file}: larger than 16 MiB")));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("plan {file}: cannot read it: {e}")))?;
    let f: HostsOnly = toml::from_str(&text)
        .map_err(|e| usage(format!("plan {file}: {}", toml_error(&e, &text))))?;
    if f.host.is_empty() {
        return Err(usage(format!(
            "plan {file}: no [[host]] tables (name, ssh, iface; docs/multihost.md)"
        )));
    }
    for (i, h) in f.host.iter().enumerate() {
        h.check()
            .map_err(|e| usage(format!("plan {file}: key `host[{i}].{}`: {}", e.key, e.why)))?;
    }
    crate::hosts::check_set(&f.host).map_err(|e| usage(format!("plan {file}: {e}")))?;
    Ok(f.host)
}

/// The site of the first two `[[host]]` tables of a plan file: `pingpong --hosts` and
/// `throughput --hosts` (the first host initiates or sends, the second responds or receives).
pub fn open_hosts_of(path: &Path) -> Result<crate::site::OpenSite> {
    let hosts = hosts_of(path)?;
    if hosts.len() < 2 {
        return Err(usage(format!(
            "plan {}: one [[host]] table; the experiment needs two (the first initiates, the \
             second responds)",
            path.display()
        )));
    }
    crate::site::open_hosts(&hosts[0], &hosts[1])
}

/// A preset by name.
pub fn preset(name: &str, overrides: &RunSection) -> Result<Plan> {
    let (_, text) = PRESETS.iter().find(|(n, _)| *n == name).ok_or_else(|| {
        let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
        usage(format!(
            "unknown preset `{name}` (expected {})",
            names.join(" or ")
        ))
    })?;
    parse_in(
        &format!("plans/{name}.toml"),
        name,
        text,
        overrides,
        &Base::Preset,
    )
}

/// Parses plan text whose relative file names are relative to the working directory; `file`
/// names it in errors.
#[cfg(test)]
pub fn parse(file: &str, default_name: &str, text: &str, overrides: &RunSection) -> Result<Plan> {
    parse_in(file, default_name, text, overrides, &Base::Dir(".".into()))
}

/// Parses plan text; `file` names it in errors, `base` resolves relative file names: the
/// plan's frame, then each listed experiment's tables.
pub fn parse_in(
    file: &str,
    default_name: &str,
    text: &str,
    overrides: &RunSection,
    base: &Base,
) -> Result<Plan> {
    let list = planned();
    check_keys(
        file,
        text,
        list.iter().flat_map(|x| x.tables().iter().copied()),
    )?;
    let f: PlanFile = toml::from_str(text)
        .map_err(|e| usage(format!("plan {file}: {}", toml_error(&e, text))))?;
    let bad = |key: &str, why: String| key_error(file, key, why);
    if let Some(name) = &f.name {
        let chars = name.chars().count();
        if chars == 0 || chars > MAX_NAME_CHARS {
            return Err(bad(
                "name",
                format!("must be 1 to {MAX_NAME_CHARS} characters, got {chars}"),
            ));
        }
    }
    let scenarios = run_settings(&f.run, overrides, &bad)?;
    check_hosts(&f, &bad)?;
    let (topology, initiator, responder) = endpoints(&f, &bad)?;
    let t = PlanText {
        file,
        text,
        base,
        across_hosts: !f.host.is_empty(),
        provider: scenarios.provider,
        scenarios,
    };
    let mut plan = Plan {
        name: f.name.clone().unwrap_or_else(|| default_name.to_string()),
        topology,
        initiator,
        responder,
        requirements: requirements(&f.requirements, &bad)?,
        scenarios: frame_scenarios(&f, &t)?,
        throughput: Vec::new(),
        throughput_gateways: Vec::new(),
        underload: Vec::new(),
        underload_gateways: Vec::new(),
        pingpong_gateways: Vec::new(),
        playback: Vec::new(),
        camera: Vec::new(),
        tdma: Vec::new(),
        crypto_bench: Vec::new(),
        tunnel_ping: Vec::new(),
        tunnel_bulk: Vec::new(),
        chunk_bench: Vec::new(),
        tls_bench: Vec::new(),
        hosts: f.host,
    };
    for x in list {
        x.parse(&t, &mut plan)?;
    }
    if plan.scenarios.is_empty() && list.iter().all(|x| x.is_empty(&plan)) {
        let tables: Vec<String> = ["matrix", "scenario"]
            .into_iter()
            .chain(list.iter().flat_map(|x| x.tables().iter().copied()))
            .map(|t| format!("[[{t}]]"))
            .collect();
        let (last, rest) = tables.split_last().expect("the frame's tables");
        return Err(usage(format!(
            "plan {file}: no scenarios (add a {} or {last} table)",
            rest.join(", ")
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for s in &plan.scenarios {
        if !seen.insert(s.name()) {
            return Err(usage(format!(
                "plan {file}: scenario {} appears twice",
                s.name()
            )));
        }
    }
    Ok(plan)
}

/// Refuses a top-level key that neither the frame nor a listed experiment (`tables`) reads,
/// the first in the file, as serde would have.
fn check_keys<'a>(file: &str, text: &str, tables: impl Iterator<Item = &'a str>) -> Result<()> {
    let keys: BTreeMap<toml::Spanned<String>, IgnoredAny> = toml::from_str(text)
        .map_err(|e| usage(format!("plan {file}: {}", toml_error(&e, text))))?;
    let known: Vec<&str> = FRAME_KEYS.into_iter().chain(tables).collect();
    let Some(unknown) = keys
        .keys()
        .filter(|k| !known.contains(&k.get_ref().as_str()))
        .min_by_key(|k| k.span().start)
    else {
        return Ok(());
    };
    let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    let msg = format!(
        "unknown field `{}`, expected one of {}",
        unknown.get_ref(),
        expected.join(", ")
    );
    Err(usage(format!(
        "plan {file}: {}",
        toml_error_at(msg, Some(unknown.span()), text)
    )))
}

/// `[run]` with the command line's overrides: the settings of every ping-pong scenario.
fn run_settings(
    r: &RunSection,
    overrides: &RunSection,
    bad: &dyn Fn(&str, String) -> anyhow::Error,
) -> Result<ScenarioDefaults> {
    let pick = |o: Option<u32>, p: Option<u32>, d: u32| o.or(p).unwrap_or(d);
    let pause_ms = overrides.pause_ms.or(r.pause_ms).unwrap_or(0.0);
    let timeout_ms = overrides.timeout_ms.or(r.timeout_ms).unwrap_or(200.0);
    let pause_ns =
        ms_to_ns("pause_ms", pause_ms, true).map_err(|e| bad("run.pause_ms", format!("{e:#}")))?;
    let timeout_ns = ms_to_ns("timeout_ms", timeout_ms, false)
        .map_err(|e| bad("run.timeout_ms", format!("{e:#}")))?;
    let provider: ProviderChoice = overrides
        .provider
        .as_deref()
        .or(r.provider.as_deref())
        .unwrap_or("auto")
        .parse()
        .map_err(|e: String| bad("run.provider", e))?;
    Ok(ScenarioDefaults {
        count: pick(overrides.count, r.count, 120),
        replications: pick(overrides.replications, r.replications, 30),
        count_override: overrides.count,
        replications_override: overrides.replications,
        pause_ns,
        timeout_ns,
        mode: overrides.mode.or(r.mode).unwrap_or(Mode::Blocking),
        pin: overrides.pin.or(r.pin).unwrap_or(false),
        provider,
    })
}

/// `[[host]]` tables: each checked, two at least, no testbed topology beside them.
fn check_hosts(f: &PlanFile, bad: &dyn Fn(&str, String) -> anyhow::Error) -> Result<()> {
    for (i, h) in f.host.iter().enumerate() {
        h.check()
            .map_err(|e| bad(&format!("host[{i}].{}", e.key), e.why))?;
        if f.host[..i].iter().any(|o| o.name == h.name) {
            return Err(bad(
                &format!("host[{i}].name"),
                format!("`{}` names two hosts", h.name),
            ));
        }
    }
    if f.host.is_empty() {
        return Ok(());
    }
    if f.host.len() < 2 {
        return Err(bad(
            "host",
            "one [[host]] table; an experiment needs two (the initiator and the responder)".into(),
        ));
    }
    if f.topology.is_some() {
        return Err(bad(
            "topology",
            "a plan with [[host]] tables runs on those hosts, not on a testbed; remove \
             topology (or the [[host]] tables)"
                .into(),
        ));
    }
    Ok(())
}

/// The plan's topology and the two ECUs (or hosts) that exchange.
fn endpoints(
    f: &PlanFile,
    bad: &dyn Fn(&str, String) -> anyhow::Error,
) -> Result<(Topology, String, String)> {
    let topology: Topology = f
        .topology
        .as_deref()
        .unwrap_or("pair")
        .parse()
        .map_err(|e: ivnsec_net::Error| bad("topology", e.to_string()))?;
    let ecus = topology.ecu_names();
    let node = |key: &str, given: &Option<String>, default: &String| -> Result<String> {
        match given {
            None => Ok(default.clone()),
            Some(n) if ecus.contains(n) => Ok(n.clone()),
            Some(n) => Err(bad(
                key,
                format!(
                    "topology {topology} has no ECU `{n}` (it has {})",
                    ecus.join(", ")
                ),
            )),
        }
    };
    let host_node = |key: &str, given: &Option<String>, default: usize| -> Result<String> {
        match given {
            None => Ok(f.host[default].name.clone()),
            Some(n) if f.host.iter().any(|h| &h.name == n) => Ok(n.clone()),
            Some(n) => Err(bad(
                key,
                format!(
                    "no [[host]] is named `{n}` (the hosts: {})",
                    f.host
                        .iter()
                        .map(|h| h.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    };
    let (initiator, responder) = if f.host.is_empty() {
        // The topology's first and last ECU (on `bump`: the legacy sensor1 to the consumer).
        let layout = crate::site::Layout::of(topology);
        (
            node("initiator", &f.initiator, &layout.initiator)?,
            node("responder", &f.responder, &layout.responder)?,
        )
    } else {
        (
            host_node("initiator", &f.initiator, 0)?,
            host_node("responder", &f.responder, 1)?,
        )
    };
    if initiator == responder {
        return Err(bad(
            "responder",
            format!("must differ from the initiator `{initiator}`"),
        ));
    }
    Ok((topology, initiator, responder))
}

/// `[requirements]`: the verdict thresholds, the defaults where not given.
fn requirements(
    q: &ReqSection,
    bad: &dyn Fn(&str, String) -> anyhow::Error,
) -> Result<Requirements> {
    let d = Requirements::default();
    let requirements = Requirements {
        control_owd_us: q.control_owd_us.unwrap_or(d.control_owd_us),
        control_rtt_us: q.control_rtt_us.unwrap_or(d.control_rtt_us),
        safety_margin: q.safety_margin.unwrap_or(d.safety_margin),
        sensor_p999_us: q.sensor_p999_us.unwrap_or(d.sensor_p999_us),
        throughput_cost: q.throughput_cost.unwrap_or(d.throughput_cost),
        cpu_increase_points: q.cpu_increase_points.unwrap_or(d.cpu_increase_points),
    };
    for (k, v) in [
        ("requirements.control_owd_us", requirements.control_owd_us),
        ("requirements.control_rtt_us", requirements.control_rtt_us),
        ("requirements.sensor_p999_us", requirements.sensor_p999_us),
        ("requirements.throughput_cost", requirements.throughput_cost),
        (
            "requirements.cpu_increase_points",
            requirements.cpu_increase_points,
        ),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(bad(k, format!("must be a positive number, got {v}")));
        }
    }
    if !(requirements.safety_margin.is_finite()
        && (0.0..=10.0).contains(&requirements.safety_margin))
    {
        return Err(bad(
            "requirements.safety_margin",
            format!(
                "must be from 0 to 10 (0.25 = 25 %), got {}",
                requirements.safety_margin
            ),
        ));
    }
    Ok(requirements)
}

/// The plan's own ping-pong scenarios: every `[[matrix]]` profile × payload, then each
/// `[[scenario]]`.
fn frame_scenarios(f: &PlanFile, t: &PlanText) -> Result<Vec<Scenario>> {
    let d = &t.scenarios;
    let mut scenarios = Vec::new();
    for (i, m) in f.matrix.iter().enumerate() {
        if m.profiles.is_empty() || m.payloads.is_empty() {
            return Err(t.bad(
                &format!("matrix[{i}]"),
                "needs at least one profile and one payload".into(),
            ));
        }
        for (j, profile) in m.profiles.iter().enumerate() {
            let key = |n: usize| format!("matrix[{i}].profiles[{j}] ({profile} at {n} bytes)");
            for &n in &m.payloads {
                scenarios.push(t.scenario(&key(n), profile, n, d.count, d.replications)?);
            }
        }
    }
    for (i, e) in f.scenario.iter().enumerate() {
        let (count, replications) = t.counts(e.count, e.replications);
        let key = format!("scenario[{i}]");
        scenarios.push(t.scenario(&key, &e.profile, e.payload, count, replications)?);
    }
    Ok(scenarios)
}

#[cfg(test)]
mod tests;
