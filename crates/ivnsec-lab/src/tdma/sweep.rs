//! A plan's `[[tdma]]` table (docs/plans.md): seed 001's question for every profile × frame ×
//! switch count, answered twice —
//!
//! - **the analysis** (no testbed, no root): eq. 2 and 9 on the plan's base period, guard period
//!   and rate for the frame each profile sends ([`capacity`](super::capacity), exact), beside the
//!   same frame without its tag;
//! - **the measurement** (root): for every switch count one `cascade:N` testbed, and on it one
//!   [`run`](super::run) per profile × frame: one frame per base period from `ecu1` to `ecu2` in
//!   a slot of eq. 9's length, for `periods` base periods. Each run gives Table 6's "Tx" (send
//!   call → first switch port), the switches' forwarding delays, the worst slot start → arrival
//!   (Max_TT, Table 7's measured method: ⌊BP / Max_TT⌋) and eq. 9 with the measured Tx as the
//!   frame time (Table 11's method); with `capacity = true` also the capacity steps.
//!
//! **Frames.** `frames` are frame sizes as `plain` sends them (Ethernet and IVN-AE headers and
//! the payload, no tag): seed 001's 60-byte control frame. Every profile carries the same
//! payload, so its frame is that plus what the profile adds — `hmac-sha1` turns the 60-byte
//! frame into seed 001's 80-byte one (the 20-byte tag), `hmac-sha256` into 92 bytes. The analysis
//! counts what the tag costs in frames per base period; the measurement sends those frames.
//!
//! Without root (or with `--on loopback`, or `measure = false`) only the analysis runs and the
//! report says why the measurement did not.

use anyhow::{Context, Result};
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::testbed::{self, Options, Testbed};
use ivnsec_net::topology::{MAX_SWITCHES, Topology};
use serde::{Deserialize, Serialize};

use super::capacity::{MaxTt, Query, Switches, Tag};
use super::flows::{FLOW_HEADER, Flow, MAX_FRAME_BYTES, fmt_duration, parse_duration, parse_rate};
use super::run::{LINGER_NS, MAX_PERIODS, RunConfig, RunResult, START_LEAD_NS, run_on};
use super::schedule::{MAX_BP_NS, Params, Schedule, build, nf_max_frame_time};
use super::{Duration, Rate};
use crate::site::{Where, net_err};
use ivnsec_node::error::{KeyError, env_error, usage};

/// Most entries of `profiles`, `frames` and `switches` each.
pub const MAX_LIST: usize = 32;

/// One `[[tdma]]` table as the plan file gives it (every key optional).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepConfig {
    /// Base period (seed 001: 10 ms).
    #[serde(default = "default_bp")]
    pub bp: String,
    /// Guard period per switch (seed 001: 0.2 ms).
    #[serde(default = "default_gp")]
    pub gp: String,
    /// Line rate of eq. 2 (seed 001 Platform A, TTEthernet: 100M).
    #[serde(default = "default_rate")]
    pub rate: String,
    /// Frame sizes as `plain` sends them (no tag), bytes.
    #[serde(default = "default_frames")]
    pub frames: Vec<u32>,
    /// Typed where the plan is read: an unknown profile is a TOML error naming its key
    /// (`tdma[0].profiles[1]`, [`crate::experiment::text::key_at`]).
    #[serde(default = "default_profiles")]
    pub profiles: Vec<NamedProfile>,
    /// Switch counts of the `cascade:N` testbeds.
    #[serde(default = "default_switches")]
    pub switches: Vec<u16>,
    /// Base periods per measured run.
    #[serde(default = "default_periods")]
    pub periods: u32,
    /// Also search the most frames per base period with no miss (`tdma run`'s capacity steps).
    #[serde(default)]
    pub capacity: bool,
    /// Measure on testbeds (root); false: the analysis only.
    #[serde(default = "default_measure")]
    pub measure: bool,
    #[serde(default = "default_provider")]
    pub provider: String,
}

fn default_bp() -> String {
    "10ms".into()
}
fn default_gp() -> String {
    "0.2ms".into()
}
fn default_rate() -> String {
    "100M".into()
}
fn default_frames() -> Vec<u32> {
    vec![60, 80]
}
fn default_profiles() -> Vec<NamedProfile> {
    ["plain", "hmac-sha1"]
        .map(|p| p.parse().expect("the default profiles are profiles"))
        .into()
}
fn default_switches() -> Vec<u16> {
    vec![1]
}
fn default_periods() -> u32 {
    200
}
fn default_measure() -> bool {
    true
}
fn default_provider() -> String {
    "auto".into()
}

impl Default for SweepConfig {
    /// Seed 001 Platform A: BP 10 ms, GP 0.2 ms, 100 Mb/s, 60- and 80-byte frames, plain and
    /// HMAC-SHA1, one switch, 200 base periods per run.
    fn default() -> Self {
        SweepConfig {
            bp: default_bp(),
            gp: default_gp(),
            rate: default_rate(),
            frames: default_frames(),
            profiles: default_profiles(),
            switches: default_switches(),
            periods: default_periods(),
            capacity: false,
            measure: default_measure(),
            provider: default_provider(),
        }
    }
}

/// One profile × frame of a sweep: what is sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// The profile, with the name the plan gives it.
    pub profile: NamedProfile,
    /// The frame under `plain` (a `frames` entry).
    pub plain_frame_bytes: u32,
    /// The payload both carry.
    pub payload: usize,
    /// The frame under the profile, on the wire.
    pub frame_bytes: u32,
}

/// A checked `[[tdma]]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub bp_ns: u64,
    pub gp_ns: u64,
    pub rate_bps: u64,
    /// Profile × frame, profiles in the plan's order, frames in the plan's order within each.
    pub cells: Vec<Cell>,
    pub switches: Vec<u16>,
    pub periods: u32,
    pub capacity: bool,
    pub measure: bool,
    pub provider: ProviderChoice,
}

impl SweepConfig {
    /// Checks every key; the error names the key (`frames[1]`, `profiles[0]`, …) and says how
    /// to fix the value.
    pub fn check(&self) -> Result<Sweep, KeyError> {
        let bp_ns = parse_duration("bp", &self.bp).map_err(|e| KeyError::new("bp", e))?;
        if bp_ns == 0 || bp_ns > MAX_BP_NS {
            return Err(KeyError::new(
                "bp",
                format!(
                    "the base period must be above 0 and at most 60 s, got {}",
                    self.bp
                ),
            ));
        }
        let gp_ns = parse_duration("gp", &self.gp).map_err(|e| KeyError::new("gp", e))?;
        if gp_ns >= bp_ns {
            return Err(KeyError::new(
                "gp",
                format!(
                    "the guard period ({}) must be shorter than the base period ({})",
                    self.gp, self.bp
                ),
            ));
        }
        let rate_bps = parse_rate("rate", &self.rate).map_err(|e| KeyError::new("rate", e))?;
        let provider: ProviderChoice = self
            .provider
            .parse()
            .map_err(|e: String| KeyError::new("provider", e))?;
        list("frames", self.frames.len())?;
        list("profiles", self.profiles.len())?;
        list("switches", self.switches.len())?;
        for (j, &n) in self.switches.iter().enumerate() {
            if n == 0 || n > MAX_SWITCHES {
                return Err(KeyError::new(
                    format!("switches[{j}]"),
                    format!("a cascade has 1 to {MAX_SWITCHES} switches, got {n}"),
                ));
            }
            if self.switches[..j].contains(&n) {
                return Err(KeyError::new(
                    format!("switches[{j}]"),
                    format!("{n} is listed twice"),
                ));
            }
        }
        if self.periods == 0 || self.periods > MAX_PERIODS {
            return Err(KeyError::new(
                "periods",
                format!(
                    "give 1 to {MAX_PERIODS} base periods per run, got {}",
                    self.periods
                ),
            ));
        }
        let plain: Profile = "plain".parse().expect("plain is a profile");
        let plain_header = ivnsec_node::channel::frame_bytes(plain, provider, 0)
            .map_err(|e| KeyError::new("provider", format!("{e:#}")))?;
        let smallest = plain_header + FLOW_HEADER;
        for (j, &f) in self.frames.iter().enumerate() {
            let key = format!("frames[{j}]");
            if (f as usize) < smallest || f > MAX_FRAME_BYTES {
                return Err(KeyError::new(
                    key,
                    format!(
                        "{f}: a frame as `plain` sends it has {plain_header} header bytes and \
                         the {FLOW_HEADER}-byte flow header every measured frame carries, so \
                         give {smallest} to {MAX_FRAME_BYTES} bytes (seed 001: 60)"
                    ),
                ));
            }
            if self.frames[..j].contains(&f) {
                return Err(KeyError::new(key, format!("{f} is listed twice")));
            }
        }
        let mut cells = Vec::new();
        let mut seen: Vec<Profile> = Vec::new();
        for (j, named) in self.profiles.iter().enumerate() {
            let key = format!("profiles[{j}]");
            let name = named.name();
            let profile = named.profile();
            if seen.contains(&profile) {
                return Err(KeyError::new(key, format!("`{name}` is listed twice")));
            }
            seen.push(profile);
            for &f in &self.frames {
                let payload = f as usize - plain_header;
                let bytes = ivnsec_node::channel::frame_bytes(profile, provider, payload)
                    .map_err(|e| KeyError::new(&key, format!("{e:#}")))?;
                let frame_bytes = u32::try_from(bytes)
                    .ok()
                    .filter(|&b| b <= MAX_FRAME_BYTES)
                    .ok_or_else(|| {
                        KeyError::new(
                            &key,
                            format!(
                                "`{name}` makes the {f}-byte frame {bytes} bytes, more than \
                                 {MAX_FRAME_BYTES} (the MTU and the Ethernet header); give \
                                 smaller frames"
                            ),
                        )
                    })?;
                cells.push(Cell {
                    profile: named.clone(),
                    plain_frame_bytes: f,
                    payload,
                    frame_bytes,
                });
            }
        }
        let sweep = Sweep {
            bp_ns,
            gp_ns,
            rate_bps,
            cells,
            switches: self.switches.clone(),
            periods: self.periods,
            capacity: self.capacity,
            measure: self.measure,
            provider,
        };
        // Every slot must fit the base period (eq. 9 ≥ 1), as `tdma schedule` would place it.
        for &n in &sweep.switches {
            for c in &sweep.cells {
                if let Err(e) = sweep.schedule(c, n) {
                    return Err(KeyError::new(
                        "switches",
                        format!("{e:#}; give a longer bp, a shorter gp or fewer switches"),
                    ));
                }
            }
        }
        Ok(sweep)
    }
}

fn list(key: &str, len: usize) -> Result<(), KeyError> {
    if len == 0 || len > MAX_LIST {
        return Err(KeyError::new(
            key,
            format!("give 1 to {MAX_LIST} values, not {len}"),
        ));
    }
    Ok(())
}

impl Sweep {
    /// The measured runs: profiles × frames × switch counts.
    pub fn runs(&self) -> usize {
        self.cells.len() * self.switches.len()
    }

    /// About how long the measurement takes, in seconds (the runs' base periods and the wait
    /// after each; the testbeds and the capacity steps come on top).
    pub fn measure_seconds(&self) -> f64 {
        let per_run =
            (u128::from(self.periods) * u128::from(self.bp_ns)) as f64 / 1e9 + LINGER_S + LEAD_S;
        self.runs() as f64 * per_run
    }

    /// The schedule of one measured run: one slot per base period for the cell's frame from
    /// ecu1 to ecu2 on `cascade:switches`.
    pub fn schedule(&self, c: &Cell, switches: u16) -> Result<Schedule> {
        let p = Params {
            bp_ns: self.bp_ns,
            gp_ns: self.gp_ns,
            rate_bps: self.rate_bps,
        };
        let flow = Flow {
            name: "frames".into(),
            from: "ecu1".into(),
            to: "ecu2".into(),
            frame_bytes: c.frame_bytes,
            period: 1,
            profile: Some(c.profile.clone()),
            payload: u32::try_from(c.payload).ok(),
        };
        match build("[[tdma]]", &p, &format!("cascade:{switches}"), vec![flow])? {
            Ok(s) => Ok(s),
            Err(no) => Err(usage(format!(
                "{} frames of {} bytes on cascade:{switches}: {}",
                c.profile,
                c.frame_bytes,
                no.reason(self.bp_ns, switches)
            ))),
        }
    }

    /// Eq. 2 and 9 for every profile × frame × switch count, and the same frame without the
    /// profile's tag.
    pub fn analysis(&self) -> Result<Vec<AnalysisRow>> {
        let rate = Rate::from_bps(self.rate_bps).ok_or_else(|| usage("the rate is 0"))?;
        let mut rows = Vec::new();
        for c in &self.cells {
            for &n in &self.switches {
                let tag = c.frame_bytes.saturating_sub(c.plain_frame_bytes);
                let q = Query {
                    bp: Duration::from_ps(self.bp_ns.saturating_mul(1_000)),
                    gp: Duration::from_ps(self.gp_ns.saturating_mul(1_000)),
                    rate,
                    frames: vec![c.plain_frame_bytes],
                    frame_times: Vec::new(),
                    switches: Switches::range(u32::from(n), u32::from(n))
                        .ok_or_else(|| usage(format!("{n} switches")))?,
                    max_tt: MaxTt::None,
                    tag: Tag::Bytes(tag),
                };
                let r = q
                    .rows()?
                    .into_iter()
                    .next()
                    .ok_or_else(|| anyhow::anyhow!("no analysis row"))?;
                rows.push(AnalysisRow {
                    profile: c.profile.clone(),
                    plain_frame_bytes: c.plain_frame_bytes,
                    frame_bytes: c.frame_bytes,
                    tag_bytes: tag,
                    switches: n,
                    frame_time_ms: r.frame_time.ms_f64(),
                    slot_ms: r.slot.ms_f64(),
                    nf_max: r.nf_max,
                    nf_max_untagged: r.nf_max_untagged.unwrap_or(r.nf_max),
                });
            }
        }
        Ok(rows)
    }
}

/// Seconds each measured run adds beyond its base periods (the receivers' linger, the start
/// lead and starting the processes, about).
const LINGER_S: f64 = LINGER_NS as f64 / 1e9;
const LEAD_S: f64 = START_LEAD_NS as f64 / 1e9 + 0.3;

/// One profile × frame × switch count of the analysis (`experiments.tdma[].analysis`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalysisRow {
    /// The profile, with the name the plan gives it.
    pub profile: NamedProfile,
    /// The frame under `plain`.
    pub plain_frame_bytes: u32,
    /// The frame under the profile.
    pub frame_bytes: u32,
    /// `frame_bytes − plain_frame_bytes`.
    pub tag_bytes: u32,
    pub switches: u16,
    /// Eq. 2 for `frame_bytes`, ms (the nearest double of the exact value).
    pub frame_time_ms: f64,
    /// Frame_time + GP × N_switch, ms.
    pub slot_ms: f64,
    /// Eq. 9, ⌊BP / slot⌋, exact.
    pub nf_max: u64,
    /// Eq. 9 for `plain_frame_bytes`.
    pub nf_max_untagged: u64,
}

/// One measured run (`experiments.tdma[].measured`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasuredRun {
    /// The profile, with the name the plan gives it.
    pub profile: NamedProfile,
    pub plain_frame_bytes: u32,
    pub frame_bytes: u32,
    pub switches: u16,
    /// Eq. 9 for `frame_bytes` (the slot the run used).
    pub nf_max: u64,
    /// Table 6 "Tx": the largest send call → first switch port, µs (`run.first_hop_us.max`).
    pub tx_max_us: Option<f64>,
    /// Eq. 9 with `tx_max_us` (rounded up to whole ns) as the frame time: Table 11's method.
    pub nf_max_measured_tx: Option<u64>,
    /// Everything `tdma run --json` reports for the run.
    pub run: RunResult,
}

impl MeasuredRun {
    /// Every frame arrived within its slot.
    pub fn passed(&self) -> bool {
        self.run.schedule_met
    }

    /// `profile frame B ×N` for tables and verdict lists.
    pub fn name(&self) -> String {
        format!(
            "tdma {} {} B ×{} switch{}",
            self.profile,
            self.frame_bytes,
            self.switches,
            if self.switches == 1 { "" } else { "es" }
        )
    }
}

/// What a `[[tdma]]` table found (`experiments.tdma[]` of summary.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TdmaReport {
    pub bp_ms: f64,
    pub gp_ms: f64,
    pub rate_bps: u64,
    pub switches: Vec<u16>,
    pub periods: u32,
    pub provider: String,
    pub analysis: Vec<AnalysisRow>,
    /// One per profile × frame × switch count; empty when not measured.
    pub measured: Vec<MeasuredRun>,
    /// Why there is no measurement (no root, `--on loopback`, `measure = false`).
    pub not_measured: Option<String>,
}

impl TdmaReport {
    /// The sweep's parameters and analysis, nothing measured yet: where every run starts.
    fn analysed(sweep: &Sweep) -> Result<Self> {
        Ok(TdmaReport {
            bp_ms: sweep.bp_ns as f64 / 1e6,
            gp_ms: sweep.gp_ns as f64 / 1e6,
            rate_bps: sweep.rate_bps,
            switches: sweep.switches.clone(),
            periods: sweep.periods,
            provider: sweep.provider.to_string(),
            analysis: sweep.analysis()?,
            measured: Vec::new(),
            not_measured: None,
        })
    }

    /// The measured runs that missed a slot or lost a frame.
    pub fn failures(&self) -> impl Iterator<Item = &MeasuredRun> {
        self.measured.iter().filter(|r| !r.passed())
    }
}

/// Runs a sweep: the analysis, then (where it can) the measurement, one `cascade:N` testbed per
/// switch count. `on` says where: `Auto` measures when root, else says why not; `Testbed`
/// needs root (exit 3 without); `Loopback` only analyses. `pcap`: each run's frames are written
/// there and `after_run` is called after every run (a plan joins the capture then).
pub fn run(
    sweep: &Sweep,
    on: Where,
    pcap: Option<&std::path::Path>,
    after_run: &mut dyn FnMut(&MeasuredRun) -> Result<()>,
) -> Result<TdmaReport> {
    let mut report = TdmaReport::analysed(sweep)?;
    let why_not = if !sweep.measure {
        Some("`measure = false` in the plan: the analysis only".to_string())
    } else {
        match (on, testbed::check_environment()) {
            (Where::Loopback, _) => Some(
                "the run is on loopback (--on loopback) and the measurement needs cascade:N \
                 testbeds of network namespaces; run as root without --on loopback"
                    .to_string(),
            ),
            (Where::Auto, Err(e)) => Some(match e {
                ivnsec_net::Error::Env(m) if m.contains("root") => {
                    "the measurement needs root: it builds cascade:N testbeds of network \
                     namespaces (CAP_SYS_ADMIN and CAP_NET_ADMIN); run the plan as root, e.g. \
                     `sudo ivnsec run PLAN.toml` or `sudo ivnsec validate --preset seed001`"
                        .to_string()
                }
                other => format!("the measurement builds cascade:N testbeds and cannot: {other}"),
            }),
            (Where::Testbed, Err(e)) => {
                return Err(env_error(format!(
                    "the tdma measurement builds cascade:N testbeds: {e}"
                )));
            }
            (_, Ok(())) => None,
        }
    };
    if let Some(why) = why_not {
        eprintln!("ivnsec: tdma: not measured: {why}");
        report.not_measured = Some(why);
        return Ok(report);
    }
    let total = sweep.runs();
    let mut done = 0;
    for &n in &sweep.switches {
        let topo = Topology::Cascade(n);
        let tb = Testbed::up(&topo, &Options::default()).map_err(net_err)?;
        crate::interrupt::remove_on_signal(&tb).map_err(net_err)?;
        for c in &sweep.cells {
            done += 1;
            eprintln!(
                "ivnsec run: tdma {done}/{total}: {}, {}-byte frames, {topo}, {} base periods of {}",
                c.profile,
                c.frame_bytes,
                sweep.periods,
                fmt_duration(sweep.bp_ns)
            );
            let cfg = RunConfig {
                schedule: sweep.schedule(c, n)?,
                profile: c.profile.clone(),
                provider: sweep.provider,
                periods: sweep.periods,
                capacity: sweep.capacity,
                pcap: pcap.map(std::path::Path::to_path_buf),
            };
            let r = run_on(&cfg, tb.state()).with_context(|| {
                format!(
                    "tdma {} with {}-byte frames on {topo}",
                    c.profile, c.frame_bytes
                )
            })?;
            let m = measured(sweep, c, n, r);
            after_run(&m)?;
            report.measured.push(m);
        }
        tb.down().map_err(net_err)?;
    }
    Ok(report)
}

/// Runs a sweep across two hosts of a plan (`[[tdma]]` beside `[[host]]` tables): the
/// analysis, then (unless `measure = false`) every profile × frame × switch count with ecu1 on
/// `a` and ecu2 on `b` ([`super::run::run_hosts`]: one clock or PTP-synchronised hosts only,
/// stamps on CLOCK_REALTIME, no switch probe). `switches` is then the number of switches the
/// bench has between the hosts, as the plan declares it (eq. 9's GP × N_switch); the bench is
/// the same for every entry, so give one.
pub fn run_across_hosts(
    sweep: &Sweep,
    a: &crate::hosts::Host,
    b: &crate::hosts::Host,
    after_run: &mut dyn FnMut(&MeasuredRun) -> Result<()>,
) -> Result<TdmaReport> {
    let mut report = TdmaReport::analysed(sweep)?;
    if !sweep.measure {
        report.not_measured = Some("`measure = false` in the plan: the analysis only".into());
        return Ok(report);
    }
    let total = sweep.runs();
    let mut done = 0;
    for &n in &sweep.switches {
        for c in &sweep.cells {
            done += 1;
            eprintln!(
                "ivnsec run: tdma {done}/{total}: {}, {}-byte frames, {n} switch(es) declared, {} \
                 base periods of {} between hosts {} and {}",
                c.profile,
                c.frame_bytes,
                sweep.periods,
                fmt_duration(sweep.bp_ns),
                a.name,
                b.name
            );
            let cfg = RunConfig {
                schedule: sweep.schedule(c, n)?,
                profile: c.profile.clone(),
                provider: sweep.provider,
                periods: sweep.periods,
                capacity: sweep.capacity,
                pcap: None,
            };
            let r = super::run::run_hosts(&cfg, a, b).with_context(|| {
                format!(
                    "tdma {} with {}-byte frames across hosts {} and {}",
                    c.profile, c.frame_bytes, a.name, b.name
                )
            })?;
            let m = measured(sweep, c, n, r);
            after_run(&m)?;
            report.measured.push(m);
        }
    }
    Ok(report)
}

/// A run with Table 11's figure: eq. 9 with the measured Tx as the frame time.
fn measured(sweep: &Sweep, c: &Cell, switches: u16, run: RunResult) -> MeasuredRun {
    let tx_max_us = run.first_hop_us.as_ref().map(|h| h.max);
    let nf_max_measured_tx = tx_max_us.filter(|t| t.is_finite() && *t > 0.0).map(|t| {
        nf_max_frame_time(
            sweep.bp_ns,
            sweep.gp_ns,
            u64::from(switches),
            (t * 1000.0).ceil() as u64,
        )
    });
    let nf_max = run.capacity.as_ref().map(|k| k.nf_max).unwrap_or_else(|| {
        super::schedule::nf_max(
            sweep.bp_ns,
            sweep.gp_ns,
            u64::from(switches),
            c.frame_bytes,
            sweep.rate_bps,
        )
    });
    MeasuredRun {
        profile: c.profile.clone(),
        plain_frame_bytes: c.plain_frame_bytes,
        frame_bytes: c.frame_bytes,
        switches,
        nf_max,
        tx_max_us,
        nf_max_measured_tx,
        run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> SweepConfig {
        toml::from_str(text).unwrap()
    }

    /// The frames each profile sends, by the layouts of docs/wire-ivnae.md: 14 Ethernet + 12
    /// IVN-AE header + 2 inner EtherType + payload + tag. Seed 001's 60-byte frame carries 32
    /// payload bytes; HMAC-SHA1 adds its 20-byte tag (seed 001's 80 bytes), HMAC-SHA256 and
    /// SHA3-256 32 bytes, the AEADs a 16-byte tag.
    #[test]
    fn every_profile_carries_the_plain_frames_payload() {
        let s = cfg(
            "profiles = [\"plain\", \"hmac-sha1\", \"hmac-sha256\", \"hmac-sha3-256\", \
             \"aes128-gcm\", \"chacha20-poly1305\"]\nframes = [60, 80]\n",
        )
        .check()
        .unwrap();
        let got: Vec<(&str, u32, usize, u32)> = s
            .cells
            .iter()
            .map(|c| {
                (
                    c.profile.name(),
                    c.plain_frame_bytes,
                    c.payload,
                    c.frame_bytes,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("plain", 60, 32, 60),
                ("plain", 80, 52, 80),
                ("hmac-sha1", 60, 32, 80),
                ("hmac-sha1", 80, 52, 100),
                ("hmac-sha256", 60, 32, 92),
                ("hmac-sha256", 80, 52, 112),
                ("hmac-sha3-256", 60, 32, 92),
                ("hmac-sha3-256", 80, 52, 112),
                ("aes128-gcm", 60, 32, 76),
                ("aes128-gcm", 80, 52, 96),
                ("chacha20-poly1305", 60, 32, 76),
                ("chacha20-poly1305", 80, 52, 96),
            ]
        );
        assert_eq!(
            (s.bp_ns, s.gp_ns, s.rate_bps),
            (10_000_000, 200_000, 100_000_000)
        );
        assert_eq!(s.runs(), 12);
    }

    /// Eq. 9 worked by hand at 100 Mb/s, BP 10 ms, GP 0.2 ms: 80 bytes take 6.4 µs, so one
    /// switch gives ⌊10 / 0.2064⌋ = 48 and five ⌊10 / 1.0064⌋ = 9; 92 bytes (HMAC-SHA256) take
    /// 7.36 µs: ⌊10 / 0.20736⌋ = 48 and with GP = 0, ⌊10 / 0.00736⌋ = 1358 against the
    /// untagged 60-byte frame's 2083.
    #[test]
    fn analysis_is_eq_9_on_the_tagged_frame() {
        let s = cfg("profiles = [\"hmac-sha1\"]\nframes = [60]\nswitches = [1, 5]\n")
            .check()
            .unwrap();
        let a = s.analysis().unwrap();
        let got: Vec<(u32, u32, u16, u64, u64)> = a
            .iter()
            .map(|r| {
                (
                    r.frame_bytes,
                    r.tag_bytes,
                    r.switches,
                    r.nf_max,
                    r.nf_max_untagged,
                )
            })
            .collect();
        assert_eq!(got, [(80, 20, 1, 48, 48), (80, 20, 5, 9, 9)]);
        assert_eq!(a[0].frame_time_ms, 0.0064);
        assert_eq!(a[0].slot_ms, 0.2064);
        let s = cfg("profiles = [\"hmac-sha256\"]\nframes = [60]\ngp = \"0ms\"\n")
            .check()
            .unwrap();
        let r = &s.analysis().unwrap()[0];
        assert_eq!(
            (r.frame_bytes, r.nf_max, r.nf_max_untagged),
            (92, 1358, 2083)
        );
    }

    #[test]
    fn bad_values_name_the_key() {
        for (text, key, why) in [
            ("bp = \"10\"\n", "bp", "the unit is missing"),
            ("bp = \"0ms\"\n", "bp", "above 0"),
            ("gp = \"10ms\"\n", "gp", "shorter than the base period"),
            ("gp = \"0.5ns\"\n", "gp", "finer than 1 ns"),
            ("rate = \"fast\"\n", "rate", "not a rate"),
            ("frames = []\n", "frames", "1 to 32"),
            ("frames = [20]\n", "frames[0]", "give 36 to 1514"),
            ("frames = [60, 60]\n", "frames[1]", "twice"),
            ("frames = [1514]\n", "profiles[1]", "more than 1514"),
            (
                "profiles = [\"plain\", \"plain\"]\n",
                "profiles[1]",
                "twice",
            ),
            ("switches = [0]\n", "switches[0]", "1 to 32"),
            ("switches = [33]\n", "switches[0]", "1 to 32"),
            ("switches = [2, 2]\n", "switches[1]", "twice"),
            ("periods = 0\n", "periods", "1 to 100000"),
            ("provider = \"quick\"\n", "provider", "quick"),
            (
                "profiles = [\"aes128-ccm\"]\nprovider = \"fast\"\n",
                "profiles[0]",
                "does not implement",
            ),
            (
                "bp = \"1ms\"\ngp = \"0.3ms\"\nswitches = [4]\n",
                "switches",
                "does not fit",
            ),
        ] {
            let e = cfg(text).check().unwrap_err();
            assert_eq!(e.key, key, "{text}: {e:?}");
            assert!(e.why.contains(why), "{text}: {e:?}");
        }
        assert!(toml::from_str::<SweepConfig>("switch = [1]\n").is_err());
    }

    /// `profiles` is typed where the table is read: an unknown profile fails there, the error
    /// on the profile itself (its key `profiles[1]` for the plan's message); known ones are the
    /// typed profiles under the names the table spells.
    #[test]
    fn profiles_are_typed_when_read() {
        let text = "profiles = [\"plain\", \"nope\"]\n";
        let e = toml::from_str::<SweepConfig>(text).unwrap_err();
        assert_eq!(
            crate::experiment::text::toml_error(&e, text),
            "line 1, column 22: key `profiles[1]`: profile `nope`: unknown suite (see \
             `ivnsec suites`)\n  | profiles = [\"plain\", \"nope\"]"
        );
        let c = cfg("profiles = [\"hmac-sha256\", \"aes128-gcm\"]\n");
        let typed: Vec<NamedProfile> = ["hmac-sha256", "aes128-gcm"]
            .map(|p| p.parse().unwrap())
            .into();
        assert_eq!(c.profiles, typed);
        assert_eq!(c.profiles[1].name(), "aes128-gcm");
    }

    /// Without a testbed (`--on loopback`, or `measure = false`) the analysis is all there is,
    /// and the report says why.
    #[test]
    fn no_testbed_no_measurement() {
        let s = SweepConfig::default().check().unwrap();
        let r = run(&s, Where::Loopback, None, &mut |_| Ok(())).unwrap();
        assert_eq!(r.analysis.len(), 4);
        assert!(r.measured.is_empty());
        assert!(r.not_measured.unwrap().contains("--on loopback"));
        let s = cfg("measure = false\n").check().unwrap();
        let r = run(&s, Where::Auto, None, &mut |_| Ok(())).unwrap();
        assert!(
            r.not_measured
                .as_deref()
                .unwrap()
                .contains("measure = false")
        );
        let back: TdmaReport = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
        assert_eq!(back.analysis, r.analysis);
    }
}
