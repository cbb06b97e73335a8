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
//! gateways of a `bump`/`bump2` testbed of their own); docs/plans.md lists their keys.

use std::path::Path;

use anyhow::Result;
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::topology::Topology;
use serde::Deserialize;

use crate::bench::per_frame::PerFrameConfig;
use crate::camera::run::CameraConfig;
use crate::hosts::Host;
use crate::pingpong::Requirements;
use crate::pingpong::run::{Mode, Scenario, ms_to_ns};
use crate::tdma::sweep::{Sweep, SweepConfig};
use crate::throughput::run as throughput;
use crate::underload::playback::PlaybackConfig;
use crate::underload::run::UnderloadConfig;
use ivnsec_core::profile::NamedProfile;
use ivnsec_node::error::{parse_profile, usage};

pub mod run;
pub mod seed004_tables;

/// The presets shipped with ivnsec (the files in `plans/`).
pub const PRESETS: [(&str, &str); 6] = [
    ("quick", include_str!("../../../../plans/quick.toml")),
    ("seed000", include_str!("../../../../plans/seed000.toml")),
    ("seed001", include_str!("../../../../plans/seed001.toml")),
    ("seed002", include_str!("../../../../plans/seed002.toml")),
    ("seed003", include_str!("../../../../plans/seed003.toml")),
    ("seed004", include_str!("../../../../plans/seed004.toml")),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
    #[serde(default)]
    throughput: Vec<ThroughputEntry>,
    #[serde(default)]
    underload: Vec<UnderloadConfig<String>>,
    #[serde(default)]
    playback: Vec<PlaybackConfig<String>>,
    #[serde(default)]
    camera: Vec<CameraConfig>,
    #[serde(default)]
    tdma: Vec<SweepConfig>,
    #[serde(default)]
    crypto_bench: Vec<PerFrameConfig>,
    /// `[[host]]` tables: the nodes run on these hosts over SSH (docs/multihost.md).
    #[serde(default)]
    host: Vec<Host>,
    #[serde(default)]
    pingpong: Vec<PingPongEntry>,
    /// `[[tunnel_ping]]` tables (seed 004: ping by size through ESP and MACsec tunnels).
    #[serde(default)]
    tunnel_ping: Vec<crate::tunnel::PingConfig<String>>,
    /// `[[tunnel_bulk]]` tables (seed 004: iperf3 and scp through the ESP tunnel).
    #[serde(default)]
    tunnel_bulk: Vec<crate::tunnel::BulkConfig<String>>,
    /// `[[chunk_bench]]` tables (`crypto-bench --chunk-sizes`, seed 003 Fig. 8, seed 004 §6.1).
    #[serde(default)]
    chunk_bench: Vec<seed004_tables::ChunkBenchConfig>,
    /// `[[tls_bench]]` tables (`tls-bench`, seed 004 Tables 5.1 and 5.2).
    #[serde(default)]
    tls_bench: Vec<seed004_tables::TlsBenchConfig>,
}

/// `[[pingpong]]`: ping-pong scenarios (every profile × payload) on a bump-in-the-wire testbed
/// of their own, through the gateways the run starts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PingPongEntry {
    /// `bump` or `bump2`.
    topology: String,
    profiles: Vec<String>,
    payloads: Vec<usize>,
    count: Option<u32>,
    replications: Option<u32>,
}

/// One `[[pingpong]]` table: its scenarios run between the legacy ECU and its peer of
/// `topology` (`bump`: sensor1 → consumer, `bump2`: ecu1 → ecu2).
#[derive(Debug, Clone)]
pub struct PingPongJob {
    pub topology: Topology,
    pub scenarios: Vec<Scenario>,
}

/// Files the presets name (timelines), built into the binary: a preset runs from any directory.
pub const PRESET_FILES: [(&str, &str); 1] = [(
    "lidar-playback.csv",
    include_str!("../../../../plans/lidar-playback.csv"),
)];

/// Where a plan's relative file names (playback timelines) are found.
#[derive(Clone, Debug)]
pub enum Base {
    /// Beside the plan file.
    Dir(std::path::PathBuf),
    /// A preset: the files of [`PRESET_FILES`].
    Preset,
}

/// One `[[playback]]` table, its timeline resolved.
#[derive(Debug, Clone)]
pub struct PlaybackJob {
    pub config: PlaybackConfig,
    /// A preset's timeline, built in: written into the report directory before the run.
    pub embedded: Option<(&'static str, &'static str)>,
}

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
    profiles: Vec<String>,
    payloads: Vec<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioEntry {
    profile: String,
    payload: usize,
    count: Option<u32>,
    replications: Option<u32>,
}

/// `[[throughput]]`: every profile × payload × rate, each with the same senders and duration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThroughputEntry {
    profiles: Vec<String>,
    payloads: Vec<usize>,
    rates: Option<Vec<String>>,
    senders: Option<usize>,
    seconds: Option<f64>,
    batch: Option<usize>,
    baseline: Option<bool>,
    /// `bump2`: the group runs on a testbed of its own with two legacy ECUs behind
    /// bump-in-the-wire gateways the run starts (one sender, `ecu1` → `ecu2`); `bump`: the
    /// legacy `sensor1` behind its gateway sends to a MACsec `consumer`.
    topology: Option<String>,
    /// `tcp`: secured SOME/IP on one TCP connection per sender (`ivnsec throughput --tcp`);
    /// `datagram` (default): each profile's own datagrams or frames.
    transport: Option<String>,
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
    pub tunnel_ping: Vec<crate::tunnel::PingConfig>,
    pub tunnel_bulk: Vec<crate::tunnel::BulkConfig>,
    /// `[[chunk_bench]]` and `[[tls_bench]]` tables, checked (run in the plan's own process).
    pub chunk_bench: Vec<seed004_tables::ChunkBenchConfig>,
    pub tls_bench: Vec<seed004_tables::TlsBenchConfig>,
    pub requirements: Requirements,
    /// `[[host]]` tables: with them, `initiator` and `responder` name two of these hosts and
    /// the ping-pong and throughput run between them over SSH instead of on a testbed.
    pub hosts: Vec<Host>,
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
        self.throughput
            .iter()
            .chain(&self.throughput_gateways)
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
}

/// The longest plan `name` accepted (it heads every report file).
pub const MAX_NAME_CHARS: usize = 200;

/// How much of an offending line a TOML error shows, in characters.
const EXCERPT_CHARS: usize = 120;

/// `s` cut to at most `max` characters, an ellipsis marking each cut end; `at` (a character
/// index) stays inside the window.
fn excerpt(s: &str, at: usize, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let start = at.saturating_sub(max / 2).min(n - max);
    let body: String = s.chars().skip(start).take(max).collect();
    let head = if start > 0 { "…" } else { "" };
    let tail = if start + max < n { "…" } else { "" };
    format!("{head}{body}{tail}")
}

/// The largest value of an unsigned integer type serde names in "expected u32".
fn unsigned_range(ty: &str) -> Option<u64> {
    Some(match ty {
        "u8" => u8::MAX.into(),
        "u16" => u16::MAX.into(),
        "u32" => u32::MAX.into(),
        "u64" | "usize" => u64::MAX,
        _ => return None,
    })
}

/// A TOML error for a person: where (line and column), what (the allowed range where serde
/// names only an integer type), and the offending line cut to [`EXCERPT_CHARS`] characters (a
/// 200 KB line is not echoed whole).
pub fn toml_error(e: &toml::de::Error, text: &str) -> String {
    let mut msg = e.message().trim_end().to_string();
    for ty in ["u8", "u16", "u32", "u64", "usize"] {
        let from = format!("expected {ty}");
        if msg.ends_with(&from) {
            if let Some(max) = unsigned_range(ty) {
                msg.truncate(msg.len() - from.len());
                msg.push_str(&format!("expected a whole number in 0..={max}"));
            }
        }
    }
    // The message quotes the offending value: keep its head and its tail (the expectation).
    if msg.chars().count() > 2 * EXCERPT_CHARS {
        let head: String = msg.chars().take(EXCERPT_CHARS).collect();
        let tail: String = msg
            .chars()
            .skip(msg.chars().count() - EXCERPT_CHARS)
            .collect();
        msg = format!("{head}…{tail}");
    }
    let Some(span) = e.span() else {
        return msg;
    };
    let at = span.start.min(text.len());
    let before = text.get(..at).unwrap_or("");
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text
        .get(line_start..)
        .and_then(|l| l.lines().next())
        .unwrap_or("");
    let col = text.get(line_start..at).map_or(0, |p| p.chars().count());
    format!(
        "line {line_no}, column {}: {msg}\n  | {}",
        col + 1,
        excerpt(line, col, EXCERPT_CHARS)
    )
}

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

/// Parses plan text; `file` names it in errors, `base` resolves relative file names.
pub fn parse_in(
    file: &str,
    default_name: &str,
    text: &str,
    overrides: &RunSection,
    base: &Base,
) -> Result<Plan> {
    let f: PlanFile = toml::from_str(text)
        .map_err(|e| usage(format!("plan {file}: {}", toml_error(&e, text))))?;
    let bad = |key: &str, why: String| usage(format!("plan {file}: key `{key}`: {why}"));
    if let Some(name) = &f.name {
        let chars = name.chars().count();
        if chars == 0 || chars > MAX_NAME_CHARS {
            return Err(bad(
                "name",
                format!("must be 1 to {MAX_NAME_CHARS} characters, got {chars}"),
            ));
        }
    }
    let r = &f.run;
    let pick = |o: Option<u32>, p: Option<u32>, d: u32| o.or(p).unwrap_or(d);
    let count = pick(overrides.count, r.count, 120);
    let replications = pick(overrides.replications, r.replications, 30);
    let pause_ms = overrides.pause_ms.or(r.pause_ms).unwrap_or(0.0);
    let timeout_ms = overrides.timeout_ms.or(r.timeout_ms).unwrap_or(200.0);
    let pause_ns =
        ms_to_ns("pause_ms", pause_ms, true).map_err(|e| bad("run.pause_ms", format!("{e:#}")))?;
    let timeout_ns = ms_to_ns("timeout_ms", timeout_ms, false)
        .map_err(|e| bad("run.timeout_ms", format!("{e:#}")))?;
    let mode = overrides.mode.or(r.mode).unwrap_or(Mode::Blocking);
    let pin = overrides.pin.or(r.pin).unwrap_or(false);
    let provider: ProviderChoice = overrides
        .provider
        .as_deref()
        .or(r.provider.as_deref())
        .unwrap_or("auto")
        .parse()
        .map_err(|e: String| bad("run.provider", e))?;

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
    if !f.host.is_empty() {
        if f.host.len() < 2 {
            return Err(bad(
                "host",
                "one [[host]] table; an experiment needs two (the initiator and the responder)"
                    .into(),
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
        for (table, n) in [
            ("tunnel_ping", f.tunnel_ping.len()),
            ("tunnel_bulk", f.tunnel_bulk.len()),
        ] {
            if n > 0 {
                return Err(bad(
                    table,
                    format!(
                        "[[{table}]] does not run across hosts: it builds a `pair` testbed of its \
                         own and starts the tunnels in its namespaces; move it to a plan without \
                         [[host]] tables"
                    ),
                ));
            }
        }
        for (i, u) in f.underload.iter().enumerate() {
            if u.topology.is_some() {
                return Err(bad(
                    &format!("underload[{i}].topology"),
                    "across hosts an under-load table runs from the initiator host to the \
                     responder host, not through a testbed's gateways; remove topology"
                        .into(),
                ));
            }
        }
        for (i, t) in f.throughput.iter().enumerate() {
            if t.senders.unwrap_or(1) != 1 || t.topology.is_some() {
                return Err(bad(
                    &format!("throughput[{i}]"),
                    "across hosts a throughput group has one sender (the initiator host) and \
                     no topology"
                        .into(),
                ));
            }
        }
    }
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

    let d = Requirements::default();
    let q = &f.requirements;
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

    let make =
        |key: String, profile: &str, payload: usize, c: u32, reps: u32| -> Result<Scenario> {
            let s = Scenario {
                profile: profile
                    .parse()
                    .map_err(|e: ivnsec_core::profile::ProfileError| bad(&key, e.to_string()))?,
                payload,
                count: c,
                replications: reps,
                pause_ns,
                timeout_ns,
                mode,
                pin,
                provider,
            };
            s.check().map_err(|e| bad(&key, format!("{e:#}")))?;
            Ok(s)
        };
    let mut scenarios = Vec::new();
    for (i, m) in f.matrix.iter().enumerate() {
        if m.profiles.is_empty() || m.payloads.is_empty() {
            return Err(bad(
                &format!("matrix[{i}]"),
                "needs at least one profile and one payload".into(),
            ));
        }
        for (j, p) in m.profiles.iter().enumerate() {
            for &n in &m.payloads {
                scenarios.push(make(
                    format!("matrix[{i}].profiles[{j}] ({p} at {n} bytes)"),
                    p,
                    n,
                    count,
                    replications,
                )?);
            }
        }
    }
    for (i, e) in f.scenario.iter().enumerate() {
        scenarios.push(make(
            format!("scenario[{i}]"),
            &e.profile,
            e.payload,
            overrides.count.or(e.count).unwrap_or(count),
            overrides
                .replications
                .or(e.replications)
                .unwrap_or(replications),
        )?);
    }
    let mut jobs = Vec::new();
    let mut gateway_jobs = Vec::new();
    for (i, t) in f.throughput.iter().enumerate() {
        let key = |k: &str| format!("throughput[{i}].{k}");
        if t.profiles.is_empty() || t.payloads.is_empty() {
            return Err(bad(
                &format!("throughput[{i}]"),
                "needs at least one profile and one payload".into(),
            ));
        }
        let rates = t
            .rates
            .clone()
            .unwrap_or_else(|| vec!["unlimited".to_string()]);
        if rates.is_empty() {
            return Err(bad(&key("rates"), "needs at least one rate".into()));
        }
        let topology = match t.topology.as_deref() {
            None => None,
            Some(name @ ("bump" | "bump2")) => {
                let topology = if name == "bump" {
                    Topology::Bump
                } else {
                    Topology::Bump2
                };
                if t.senders.unwrap_or(1) != 1 {
                    let l = crate::site::Layout::of(topology);
                    return Err(bad(
                        &key("senders"),
                        format!(
                            "topology {name} has one sender ({} → {}): senders = 1",
                            l.initiator, l.responder
                        ),
                    ));
                }
                Some(topology)
            }
            Some(other) => {
                return Err(bad(
                    &key("topology"),
                    format!(
                        "`{other}`: a throughput group builds sensors:N itself; topology takes \
                         bump2 (legacy ECUs behind gateways) or bump (a legacy sensor behind a \
                         gateway, a MACsec consumer)"
                    ),
                ));
            }
        };
        let tcp = match t.transport.as_deref() {
            None | Some("datagram") => false,
            Some("tcp") => true,
            Some(other) => {
                return Err(bad(
                    &key("transport"),
                    format!("`{other}`: takes tcp (SOME/IP over TCP) or datagram (the default)"),
                ));
            }
        };
        for &payload in &t.payloads {
            for rate in &rates {
                let mut config = throughput::check_config(
                    payload,
                    t.seconds.unwrap_or(5.0),
                    rate,
                    t.senders.unwrap_or(1),
                    t.batch.unwrap_or(32),
                    provider,
                )
                .map_err(|e| bad(&format!("throughput[{i}]"), format!("{e:#}")))?;
                config.tcp = tcp;
                let mut profiles = Vec::with_capacity(t.profiles.len());
                for (j, p) in t.profiles.iter().enumerate() {
                    let key = format!("throughput[{i}].profiles[{j}]");
                    let p = parse_profile(p).map_err(|e| bad(&key, format!("{e:#}")))?;
                    throughput::check_profile(&p, &config)
                        .map_err(|e| bad(&key, format!("{e:#}")))?;
                    profiles.push(p);
                }
                let job = ThroughputJob {
                    profiles,
                    config,
                    baseline: t.baseline.unwrap_or(true),
                    topology,
                };
                if topology.is_some() {
                    gateway_jobs.push(job);
                } else {
                    jobs.push(job);
                }
            }
        }
    }
    let mut underloads = Vec::with_capacity(f.underload.len());
    for (i, u) in f.underload.into_iter().enumerate() {
        let u = u
            .parse()
            .and_then(|u| u.check().map(|_| u))
            .map_err(|e| bad(&format!("underload[{i}]"), format!("{e:#}")))?;
        if let Some(t) = u
            .topology
            .as_deref()
            .filter(|t| !matches!(*t, "bump" | "bump2"))
        {
            return Err(bad(
                &format!("underload[{i}].topology"),
                format!(
                    "`{t}`: under load builds sensors:1 itself; topology takes bump2 (the \
                     sensor and the consumer as legacy ECUs behind gateways) or bump (the \
                     legacy sensor behind a gateway, a MACsec consumer)"
                ),
            ));
        }
        underloads.push(u);
    }
    let mut pingpong_gateways = Vec::with_capacity(f.pingpong.len());
    for (i, e) in f.pingpong.iter().enumerate() {
        let topology = gateway_topology(&e.topology).ok_or_else(|| {
            bad(
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
            return Err(bad(
                &format!("pingpong[{i}]"),
                "needs at least one profile and one payload".into(),
            ));
        }
        let mut scenarios = Vec::new();
        for (j, p) in e.profiles.iter().enumerate() {
            for &n in &e.payloads {
                scenarios.push(make(
                    format!("pingpong[{i}].profiles[{j}] ({p} at {n} bytes)"),
                    p,
                    n,
                    overrides.count.or(e.count).unwrap_or(count),
                    overrides
                        .replications
                        .or(e.replications)
                        .unwrap_or(replications),
                )?);
            }
        }
        pingpong_gateways.push(PingPongJob {
            topology,
            scenarios,
        });
    }
    for (i, p) in f.playback.iter().enumerate() {
        if let Some(t) = p
            .topology
            .as_deref()
            .filter(|t| gateway_topology(t).is_none())
        {
            return Err(bad(
                &format!("playback[{i}].topology"),
                format!(
                    "`{t}`: playback builds sensors:1 itself; topology takes bump (the legacy \
                     sensor1 behind a gateway, a MACsec consumer) or bump2 (two legacy ECUs \
                     behind gateways)"
                ),
            ));
        }
    }
    let (underload_gateways, underload): (Vec<_>, Vec<_>) =
        underloads.into_iter().partition(|u| u.topology.is_some());
    let mut playback = Vec::new();
    for (i, p) in f.playback.iter().enumerate() {
        let key = format!("playback[{i}]");
        let mut config = p.clone().parse().map_err(|e| bad(&key, format!("{e:#}")))?;
        let mut embedded = None;
        if config.timeline.is_relative() {
            match base {
                Base::Dir(d) => config.timeline = d.join(&config.timeline),
                Base::Preset => {
                    let name = config.timeline.to_string_lossy();
                    embedded = Some(
                        PRESET_FILES
                            .iter()
                            .copied()
                            .find(|(n, _)| *n == name)
                            .ok_or_else(|| bad(&key, format!("no built-in file `{name}`")))?,
                    );
                }
            }
        }
        if embedded.is_none() {
            config.check().map_err(|e| bad(&key, format!("{e:#}")))?;
        }
        playback.push(PlaybackJob { config, embedded });
    }
    for (i, c) in f.camera.iter().enumerate() {
        c.check()
            .map_err(|e| bad(&format!("camera[{i}]"), format!("{e:#}")))?;
    }
    let mut tdma = Vec::with_capacity(f.tdma.len());
    for (i, t) in f.tdma.iter().enumerate() {
        tdma.push(
            t.check()
                .map_err(|e| bad(&format!("tdma[{i}].{}", e.key), e.why))?,
        );
    }
    for (i, c) in f.crypto_bench.iter().enumerate() {
        c.check()
            .map_err(|e| bad(&format!("crypto_bench[{i}].{}", e.key), e.why))?;
    }
    let mut tunnel_ping = Vec::with_capacity(f.tunnel_ping.len());
    for (i, c) in f.tunnel_ping.iter().enumerate() {
        tunnel_ping.push(
            c.check()
                .map_err(|e| bad(&format!("tunnel_ping[{i}].{}", e.key), e.why))?,
        );
    }
    let mut tunnel_bulk = Vec::with_capacity(f.tunnel_bulk.len());
    for (i, c) in f.tunnel_bulk.iter().enumerate() {
        tunnel_bulk.push(
            c.check()
                .map_err(|e| bad(&format!("tunnel_bulk[{i}].{}", e.key), e.why))?,
        );
    }
    for (i, c) in f.chunk_bench.iter().enumerate() {
        c.check()
            .map_err(|e| bad(&format!("chunk_bench[{i}].{}", e.key), e.why))?;
    }
    for (i, c) in f.tls_bench.iter().enumerate() {
        c.check()
            .map_err(|e| bad(&format!("tls_bench[{i}].{}", e.key), e.why))?;
    }
    if scenarios.is_empty()
        && jobs.is_empty()
        && gateway_jobs.is_empty()
        && underload.is_empty()
        && underload_gateways.is_empty()
        && pingpong_gateways.is_empty()
        && playback.is_empty()
        && f.camera.is_empty()
        && tdma.is_empty()
        && f.crypto_bench.is_empty()
        && tunnel_ping.is_empty()
        && tunnel_bulk.is_empty()
        && f.chunk_bench.is_empty()
        && f.tls_bench.is_empty()
    {
        return Err(usage(format!(
            "plan {file}: no scenarios (add a [[matrix]], [[scenario]], [[throughput]], \
             [[underload]], [[playback]], [[camera]], [[tdma]], [[crypto_bench]], [[pingpong]], [[tunnel_ping]], \
             [[tunnel_bulk]], [[chunk_bench]] or [[tls_bench]] table)"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for s in &scenarios {
        if !seen.insert(s.name()) {
            return Err(usage(format!(
                "plan {file}: scenario {} appears twice",
                s.name()
            )));
        }
    }
    Ok(Plan {
        name: f.name.unwrap_or_else(|| default_name.to_string()),
        topology,
        initiator,
        responder,
        scenarios,
        throughput: jobs,
        throughput_gateways: gateway_jobs,
        underload,
        underload_gateways,
        pingpong_gateways,
        playback,
        camera: f.camera,
        tdma,
        crypto_bench: f.crypto_bench,
        tunnel_ping,
        tunnel_bulk,
        chunk_bench: f.chunk_bench,
        tls_bench: f.tls_bench,
        requirements,
        hosts: f.host,
    })
}

/// The bump-in-the-wire topology a table's `topology` names (`bump`, `bump2`), if it does.
fn gateway_topology(t: &str) -> Option<Topology> {
    match t {
        "bump" => Some(Topology::Bump),
        "bump2" => Some(Topology::Bump2),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
