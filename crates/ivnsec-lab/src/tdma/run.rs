//! Runs a TDMA schedule on a `cascade:N` testbed of its own and measures it (seed 001 §7,
//! Tables 6 and 7 for our stack).
//!
//! One [`node`](super::node) ECU process in `ecu1` and one in `ecu2` send their flows' protected
//! frames at their slot times on the CLOCK_MONOTONIC every namespace shares and record what
//! arrives; a probe process in every switch namespace timestamps the frames entering each
//! bridge port (kernel receive timestamps), and so does each ECU on its own interface. From
//! these, per slot:
//! - **send error**: time of the send call − scheduled slot start (the jitter of a software
//!   slot timer: sleep, then spin);
//! - **one-way delay**: time the receiver's receive call returned − time of the send call;
//! - **switch forwarding delay** (seed 001 Table 6 "Diff"): kernel receive time at the next
//!   hop's ingress (the next switch's port, or the receiving ECU's interface) − kernel receive
//!   time at this switch's ingress port;
//! - **deadline misses**: frames that arrived after their slot ended (slot start + frame time +
//!   GP × N_switch); frames that never arrived are counted as lost.
//!
//! Then the capacity: the largest number of frames per BP that arrived with no miss, found by
//! running `k` evenly spaced slots per BP from `ecu1` to `ecu2` (slot = BP / k) for k = 1, 2, 4, …
//! up to the analytic NF_max of eq. 9 (a slot shorter than frame time + GP × N_switch would break
//! the guard periods a time-triggered switch needs), then bisecting between the last k without
//! a miss and the first with one. Beside it, eq. 9's NF_max and ⌊BP / Max_TT⌋ with the measured
//! Max_TT (the worst slot start → arrival of the schedule run), Table 7's "measured" method.
//!
//! Across hosts ([`run_hosts`], `tdma run --hosts PLAN`) the two ECU processes run on two hosts
//! over SSH instead, only on one machine's clock or PTP-synchronised clocks, with every time on
//! CLOCK_REALTIME; no switch is probed there, so the forwarding delay is reported as not
//! measured ([`DIFF_NOT_MEASURED`]).

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout};

use anyhow::{Context, Result, anyhow};
use ivnsec_core::channel::{ChannelOptions, Ends};
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::sys::monotonic_ns;
use ivnsec_net::testbed::{self, Options, Testbed, TestbedState};
use ivnsec_net::topology::{BRIDGE_IF, Topology};
use serde::{Deserialize, Serialize};

use super::flows::FLOW_HEADER;
use super::node::{EcuSpec, MAX_EVENTS, ProbeSpec, Spec, TxSlot};
use super::schedule::{Schedule, cascade, frame_time_ns, nf_max, path};
use crate::clock_watch::StampClock;
use crate::hosts::Remote;
use crate::process::{
    Place, Reaper, child_stderr, field_u64, read_report, spawn_role, spawn_role_at, wait_ready,
};
use crate::site::{link_spec, link_spec_on, net_err, node_addr};
use crate::stats;
use ivnsec_node::channel::random_keys;
use ivnsec_node::error::{env_error, usage};

/// The ECUs of a cascade: index 0 and 1 of every per-ECU array here.
pub const ECUS: [&str; 2] = ["ecu1", "ecu2"];
/// An ECU stops sleeping this long before its slot start and spins (Linux wakes a sleeping
/// thread up to the timer slack, 50 µs, plus scheduling latency late).
pub const SPIN_NS: u64 = 200_000;
/// The run starts this long after the start signal was written (every role reads it first).
pub const START_LEAD_NS: u64 = 50_000_000;
/// Receivers keep listening this long after the last base period of the schedule run.
pub const LINGER_NS: u64 = 100_000_000;
/// … and of a capacity step.
pub const STEP_LINGER_NS: u64 = 20_000_000;
/// Most base periods of one run.
pub const MAX_PERIODS: u32 = 100_000;
/// Across hosts the run starts this long after the start signal was written: it travels over
/// each host's SSH channel.
pub const START_LEAD_HOSTS_NS: u64 = 500_000_000;
/// Why the per-switch forwarding delay is not measured across hosts.
pub const DIFF_NOT_MEASURED: &str = "not measured across hosts: seed 001 Table 6's \"Diff\" is \
     taken from kernel receive timestamps at every switch's ingress ports, by a probe in each \
     software switch of a cascade testbed; a bench's hardware switch runs no probe of ivnsec's \
     (a switch with PTP transparent-clock or mirror-port timestamps would be needed)";

/// What to run.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub schedule: Schedule,
    /// The profile, with the name the user gave it.
    pub profile: NamedProfile,
    pub provider: ProviderChoice,
    /// Base periods to run the schedule (and each capacity step) for.
    pub periods: u32,
    /// Find the largest number of frames per BP with no miss (the capacity steps).
    pub capacity: bool,
    /// Record every frame the ECUs send (classic pcap).
    pub pcap: Option<PathBuf>,
}

/// The profile a run protects every flow with: `--profile` if given (every flow that names a
/// profile must name the same), else the one profile the flows name, else `plain`. (The flows'
/// names were parsed where the flows or the schedule file were read.)
pub fn run_profile(schedule: &Schedule, given: Option<&NamedProfile>) -> Result<NamedProfile> {
    let named: Vec<(&str, &NamedProfile)> = schedule
        .flows
        .iter()
        .filter_map(|f| f.profile.as_ref().map(|p| (f.name.as_str(), p)))
        .collect();
    let profile = match given {
        Some(g) => g.clone(),
        None => match named.first() {
            Some((_, p)) => (*p).clone(),
            None => NamedProfile::from(Profile::PLAIN),
        },
    };
    for (flow, p) in named {
        if p.profile() != profile.profile() {
            return Err(usage(format!(
                "flow `{flow}` names profile `{p}` but the run protects every flow with \
                 `{profile}` (tdma run uses one profile): run with --profile {p}, or give the \
                 flow frame_bytes instead of profile and payload"
            )));
        }
    }
    Ok(profile)
}

/// The payload of every flow under `profile`: the one whose frame is exactly the flow's
/// `frame_bytes` (the flow's own payload where it gave one and it still fits), at least the
/// 8-byte flow header.
pub fn payloads(
    schedule: &Schedule,
    profile: Profile,
    provider: ProviderChoice,
) -> Result<Vec<usize>> {
    let k = random_keys(profile)?;
    let ends = Ends {
        local_mac: [2, 0, 0, 0, 0, 1],
        peer_mac: [2, 0, 0, 0, 0, 2],
        local_ip: std::net::Ipv4Addr::LOCALHOST,
        peer_ip: std::net::Ipv4Addr::LOCALHOST,
    };
    let ch = ivnsec_node::channel::open(
        profile,
        provider,
        &k,
        &k,
        ends,
        0,
        ChannelOptions::default(),
    )?;
    let smallest = ch.frame_bytes(FLOW_HEADER);
    schedule
        .flows
        .iter()
        .map(|f| {
            let want = f.frame_bytes as usize;
            if let Some(p) = f.payload.map(|p| p as usize)
                && p >= FLOW_HEADER
                && ch.frame_bytes(p) == want
            {
                return Ok(p);
            }
            (FLOW_HEADER..=want)
                .rev()
                .find(|&p| ch.frame_bytes(p) == want)
                .ok_or_else(|| {
                    usage(if want < smallest {
                        format!(
                            "flow `{}`: a {want}-byte frame is too small for profile {} with the \
                             {FLOW_HEADER}-byte flow header tdma run puts in every payload: the \
                             smallest frame is {smallest} bytes",
                            f.name, profile
                        )
                    } else {
                        format!(
                            "flow `{}`: no payload makes a frame of exactly {want} bytes under \
                             profile {} (its block padding skips that size); use a frame size \
                             of {} or {} bytes",
                            f.name,
                            profile,
                            (smallest..want)
                                .rev()
                                .find(|&b| (FLOW_HEADER..=b).any(|p| ch.frame_bytes(p) == b))
                                .unwrap_or(smallest),
                            (want..=want + 32)
                                .find(|&b| (FLOW_HEADER..=b).any(|p| ch.frame_bytes(p) == b))
                                .unwrap_or(want + 16),
                        )
                    })
                })
        })
        .collect()
}

/// Percentiles of one figure, in µs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub count: usize,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Spread {
    fn of_ns(v: &[f64]) -> Option<Spread> {
        let us: Vec<f64> = v.iter().map(|x| x / 1000.0).collect();
        stats::summarize(&us).map(|s| Spread {
            count: s.count,
            p50: s.median,
            p99: s.p99,
            max: s.max,
        })
    }
}

/// Minimum, mean and maximum of one figure, in µs (as seed 001 Table 6 gives them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinMeanMax {
    pub count: usize,
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

impl MinMeanMax {
    fn of_ns(v: &[f64]) -> Option<MinMeanMax> {
        let us: Vec<f64> = v.iter().map(|x| x / 1000.0).collect();
        stats::summarize(&us).map(|s| MinMeanMax {
            count: s.count,
            min: s.min,
            mean: s.mean,
            max: s.max,
        })
    }
}

/// The forwarding delay of one switch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchDiff {
    pub switch: String,
    #[serde(flatten)]
    pub us: MinMeanMax,
}

/// What one slot of the schedule did over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlotResult {
    pub flow: String,
    pub from: String,
    pub to: String,
    pub frame_bytes: u32,
    pub payload: usize,
    pub period: u32,
    pub phase: u32,
    pub offset_us: f64,
    pub length_us: f64,
    pub sent: u64,
    pub arrived: u64,
    pub lost: u64,
    /// Arrived after the slot ended.
    pub misses: u64,
    /// Send call − scheduled slot start.
    pub send_error_us: Option<Spread>,
    /// Receive call returned − send call.
    pub owd_us: Option<Spread>,
    /// Per switch on the path, in path order.
    pub switch_diff_us: Vec<SwitchDiff>,
}

/// One step of the capacity search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub frames_per_bp: u64,
    pub slot_us: f64,
    pub sent: u64,
    pub arrived: u64,
    pub misses: u64,
    pub lost: u64,
    /// Worst slot start → arrival.
    pub max_tt_us: Option<f64>,
}

impl Step {
    /// Every frame arrived within its slot.
    pub fn no_miss(&self) -> bool {
        self.sent > 0 && self.misses == 0 && self.lost == 0
    }
}

/// The capacity of our stack against eq. 9.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapacityResult {
    /// The frame of the steps: the schedule's largest.
    pub frame_bytes: u32,
    pub payload: usize,
    pub frame_time_us: f64,
    /// Eq. 9, ⌊BP / (Frame_time + GP × N_switch)⌋: the most the steps try.
    pub nf_max: u64,
    /// The most frames per BP the steps may try: NF_max, or fewer when NF_max × periods would
    /// exceed the frames one ECU may send in a run.
    pub most_tried: u64,
    /// The largest frames per BP that all arrived within their slots.
    pub nf_no_miss: u64,
    /// The smallest number of frames per BP tried that had a miss or a loss.
    pub first_miss_at: Option<u64>,
    pub steps: Vec<Step>,
}

/// Everything a run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The testbed's prefix (removed again at the end of the run).
    pub testbed: String,
    pub topology: String,
    pub switches: u16,
    /// The profile, with the name the user gave it.
    pub profile: NamedProfile,
    pub provider: String,
    pub bp_ms: f64,
    pub gp_ms: f64,
    pub rate_bps: u64,
    pub periods: u32,
    pub clock: String,
    pub slots: Vec<SlotResult>,
    /// Per switch over every slot (seed 001 Table 6 "Diff").
    pub switch_diff_us: Vec<SwitchDiff>,
    /// Send call → kernel receive at the first switch's port (Table 6 "Tx").
    pub first_hop_us: Option<MinMeanMax>,
    /// Kernel receive at the receiving ECU's interface → its receive call returned.
    pub last_hop_us: Option<MinMeanMax>,
    pub sent: u64,
    pub arrived: u64,
    pub lost: u64,
    pub misses: u64,
    /// Frames the receivers' verify rejected, by reason.
    pub rejected: std::collections::BTreeMap<String, u64>,
    /// Frames the kernel dropped at the ECU sockets and at the probes (full receive queues).
    pub socket_drops: u64,
    pub probe_drops: u64,
    /// Worst slot start → arrival of the schedule run (Table 7's Max_TT for our stack).
    pub max_tt_us: Option<f64>,
    /// ⌊BP / Max_TT⌋.
    pub nf_max_tt: Option<u64>,
    pub capacity: Option<CapacityResult>,
    /// Every frame of the schedule run arrived within its slot.
    pub schedule_met: bool,
    /// Across hosts: the hosts of ecu1 and ecu2 (name, SSH destination, interface, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<serde_json::Value>,
    /// Why `switch_diff_us` (seed 001 Table 6 "Diff") is empty, when it was not measured
    /// (across hosts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_diff_not_measured: Option<String>,
    /// Across hosts: the hosts' PTP state watched during the run
    /// ([`crate::clock_watch::ExperimentWatch`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_during_run: Option<serde_json::Value>,
    /// Across hosts: `FLAGGED: …` when a host was not synchronised in some sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_flag: Option<String>,
}

/// Where the two ECUs of a run are: namespaces of a cascade testbed, or two hosts over SSH.
#[derive(Clone, Copy)]
enum Site<'a> {
    Testbed(&'a TestbedState),
    /// ecu1's host and ecu2's.
    Hosts(&'a [std::sync::Arc<Remote>; 2]),
}

impl Site<'_> {
    /// The MAC and IPv4 address of ECU `i`.
    fn addr(&self, i: usize) -> Result<([u8; 6], std::net::Ipv4Addr)> {
        match self {
            Site::Testbed(state) => node_addr(state, ECUS[i]),
            Site::Hosts(h) => Ok((h[i].mac, h[i].ip.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED))),
        }
    }

    fn clock(&self) -> StampClock {
        match self {
            Site::Testbed(_) => StampClock::Monotonic,
            Site::Hosts(_) => StampClock::Realtime,
        }
    }

    /// A node error: across hosts an environment error (exit 3) naming ECU `i`'s host.
    fn node_error(&self, i: usize, e: anyhow::Error) -> anyhow::Error {
        match self {
            Site::Testbed(_) => e,
            Site::Hosts(h) => h[i].node_error(e),
        }
    }
}

/// One frame as its sender reported it.
#[derive(Clone, Copy, Debug)]
struct Sent {
    flow: u16,
    seq: u64,
    sched: u64,
    send: u64,
    hash: u64,
}

/// What one run of slots produced.
#[derive(Default)]
struct Raw {
    sent: Vec<Sent>,
    /// (flow, seq) → arrival ns.
    arrived: HashMap<(u16, u64), u64>,
    /// hash → (node, kernel rx ns).
    probed: HashMap<u64, Vec<(String, u64)>>,
    rejected: std::collections::BTreeMap<String, u64>,
    socket_drops: u64,
    probe_drops: u64,
}

/// A slot as the ECUs run it.
#[derive(Clone, Debug)]
struct RunSlot {
    /// Index of the sending ECU in [`ECUS`].
    from: usize,
    offset_ns: u64,
    length_ns: u64,
    period: u32,
    phase: u32,
    payload: usize,
}

/// Runs `cfg` on a `cascade:N` testbed it builds and removes; needs root (exit 3 otherwise).
pub fn run(cfg: &RunConfig) -> Result<RunResult> {
    let prepared = prepare(cfg)?;
    let topo = prepared.topology;
    testbed::check_environment().map_err(|e| match e {
        ivnsec_net::Error::Env(m) => env_error(format!("tdma run builds a {topo} testbed: {m}")),
        other => net_err(other),
    })?;
    let tb = Testbed::up(&topo, &Options::default()).map_err(net_err)?;
    crate::interrupt::remove_on_signal(&tb).map_err(net_err)?;
    let result = run_prepared(cfg, &prepared, tb.state())?;
    tb.down().map_err(net_err)?;
    Ok(result)
}

/// Runs `cfg` on `state`, a running testbed of the schedule's `cascade:N` topology (a plan runs
/// every profile and frame of one switch count on one testbed); the caller removes it.
pub fn run_on(cfg: &RunConfig, state: &TestbedState) -> Result<RunResult> {
    let prepared = prepare(cfg)?;
    if state.topology != prepared.topology.to_string() {
        return Err(usage(format!(
            "testbed {} is {}, the schedule needs {}",
            state.prefix, state.topology, prepared.topology
        )));
    }
    run_prepared(cfg, &prepared, state)
}

/// What a run knows once its configuration is checked.
struct Prepared {
    payloads: Vec<usize>,
    slots: Vec<RunSlot>,
    topology: Topology,
    switches: u16,
}

/// Checks `cfg` and works out the payloads and the slots (usage errors, exit 2).
fn prepare(cfg: &RunConfig) -> Result<Prepared> {
    let s = &cfg.schedule;
    if cfg.periods == 0 || cfg.periods > MAX_PERIODS {
        return Err(usage(format!(
            "--periods must be 1..={MAX_PERIODS}, got {}",
            cfg.periods
        )));
    }
    let pay = payloads(s, cfg.profile.profile(), cfg.provider)?;
    let slots: Vec<RunSlot> = s
        .slots
        .iter()
        .map(|sl| {
            let i = s
                .flows
                .iter()
                .position(|f| f.name == sl.flow)
                .expect("checked");
            RunSlot {
                from: ECUS
                    .iter()
                    .position(|e| *e == s.flows[i].from)
                    .expect("checked"),
                offset_ns: sl.offset_ns,
                length_ns: sl.length_ns,
                period: s.flows[i].period,
                phase: sl.phase,
                payload: pay[i],
            }
        })
        .collect();
    if s.flows.len() > usize::from(u16::MAX) {
        return Err(usage("at most 65535 flows"));
    }
    let frames: u64 = slots
        .iter()
        .map(|x| u64::from(cfg.periods).div_ceil(u64::from(x.period)))
        .sum();
    if frames > MAX_EVENTS {
        return Err(usage(format!(
            "{frames} frames in {} base periods, at most {MAX_EVENTS}; run fewer --periods",
            cfg.periods
        )));
    }
    if let Some(p) = &cfg.pcap {
        let dir = std::path::absolute(p)?
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        if !dir.is_dir() {
            return Err(usage(format!(
                "--pcap {}: the directory {} does not exist",
                p.display(),
                dir.display()
            )));
        }
    }
    let (topology, switches) = cascade(&s.topology)?;
    Ok(Prepared {
        payloads: pay,
        slots,
        topology,
        switches,
    })
}

/// The schedule run, its analysis and the capacity steps on the testbed `state`.
fn run_prepared(cfg: &RunConfig, p: &Prepared, state: &TestbedState) -> Result<RunResult> {
    let s = &cfg.schedule;
    let parts: Option<[PathBuf; 2]> = match &cfg.pcap {
        Some(p) => {
            let p = std::path::absolute(p)?;
            Some(ECUS.map(|e| {
                let mut name = p.file_name().unwrap_or_default().to_os_string();
                name.push(format!(".{e}.part"));
                p.with_file_name(name)
            }))
        }
        None => None,
    };
    let raw = run_slots(
        Site::Testbed(state),
        cfg.profile.profile(),
        cfg.provider,
        s.bp_ns,
        cfg.periods,
        &p.slots,
        true,
        parts.as_ref(),
        LINGER_NS,
    )?;
    if let (Some(out), Some(parts)) = (&cfg.pcap, &parts) {
        merge_pcaps(out, parts)?;
    }
    let off = realtime_offset();
    let mut result = analyse(
        cfg,
        &state.prefix,
        &p.topology,
        &p.slots,
        &p.payloads,
        &raw,
        off,
    );
    if cfg.capacity {
        result.capacity = Some(capacity(
            cfg,
            Site::Testbed(state),
            p.switches,
            &p.payloads,
        )?);
    }
    Ok(result)
}

/// Runs `cfg` between two hosts over SSH: ecu1 on `hosts[0]`, ecu2 on `hosts[1]` (probed, ivnsec
/// found or copied there). Allowed only when the hosts share this machine's clock or are
/// PTP-synchronised (an environment error, exit 3, otherwise); the slots, the start and every
/// stamp are on CLOCK_REALTIME, the clocks are watched during the run. No switch is probed:
/// the per-switch forwarding delay is reported as not measured ([`DIFF_NOT_MEASURED`]); the
/// schedule's `cascade:N` is the number of switches the bench has between the hosts, as the
/// user declares it (eq. 9's GP × N_switch).
pub fn run_hosts(
    cfg: &RunConfig,
    a: &crate::hosts::Host,
    b: &crate::hosts::Host,
) -> Result<RunResult> {
    let prepared = prepare(cfg)?;
    if cfg.pcap.is_some() {
        return Err(usage(
            "a capture (--pcap) is not taken across hosts: the ECUs run on other machines; \
             capture there (tcpdump -i IFACE -w FILE)",
        ));
    }
    let hosts = [
        std::sync::Arc::new(crate::hosts::prepare(a)?),
        std::sync::Arc::new(crate::hosts::prepare(b)?),
    ];
    let family = cfg.profile.profile();
    if (family.is_ip() || family.is_udp()) && hosts.iter().any(|h| h.ip.is_none()) {
        return Err(env_error(format!(
            "{} needs an IPv4 address on the interfaces of both hosts ({} on {}, {} on {}); add \
             them (ip addr add ADDRESS/PREFIX dev IFACE)",
            cfg.profile, a.iface, a.name, b.iface, b.name
        )));
    }
    let (clocks, shared) = crate::clock_watch::one_way_clocks(
        "tdma run",
        &[a, b],
        crate::clock::DEFAULT_MAX_OFFSET_NS,
    )?;
    let watch = crate::clock_watch::ExperimentWatch::start(&[a, b], shared);
    let site = Site::Hosts(&hosts);
    let raw = run_slots(
        site,
        cfg.profile.profile(),
        cfg.provider,
        cfg.schedule.bp_ns,
        cfg.periods,
        &prepared.slots,
        true,
        None,
        LINGER_NS,
    )?;
    let label = format!(
        "hosts over SSH: ecu1 on {} ({}, {}), ecu2 on {} ({}, {})",
        a.name, a.ssh, a.iface, b.name, b.ssh, b.iface
    );
    // Every stamp, the kernel's included, is on CLOCK_REALTIME: no offset to apply.
    let mut result = analyse(
        cfg,
        &label,
        &prepared.topology,
        &prepared.slots,
        &prepared.payloads,
        &raw,
        0,
    );
    result.clock = format!(
        "{clocks}: slot times, send and arrival on each host's CLOCK_REALTIME; kernel receive \
         timestamps (CLOCK_REALTIME) at the receiving host's interface"
    );
    result.topology = format!("{} (declared: the bench's switches)", prepared.topology);
    result.switch_diff_not_measured = Some(DIFF_NOT_MEASURED.to_string());
    result.hosts = Some(serde_json::json!({
        "ecu1": crate::hosts::describe(&hosts[0]),
        "ecu2": crate::hosts::describe(&hosts[1]),
    }));
    if cfg.capacity {
        result.capacity = Some(capacity(cfg, site, prepared.switches, &prepared.payloads)?);
    }
    let (during, flag) = watch.finish();
    result.clock_during_run = Some(during);
    result.clock_flag = flag;
    Ok(result)
}

/// Starts the probes and both ECUs, runs `slots` for `periods` base periods and collects what
/// every process reported.
#[allow(clippy::too_many_arguments)]
fn run_slots(
    site: Site<'_>,
    profile: Profile,
    provider: ProviderChoice,
    bp_ns: u64,
    periods: u32,
    slots: &[RunSlot],
    probes: bool,
    pcap: Option<&[PathBuf; 2]>,
    linger_ns: u64,
) -> Result<Raw> {
    let fwd = random_keys(profile)?;
    let bwd = random_keys(profile)?;
    let a = site.addr(0)?;
    let b = site.addr(1)?;
    let ends1 = Ends {
        local_mac: a.0,
        peer_mac: b.0,
        local_ip: a.1,
        peer_ip: b.1,
    };
    let mut reaper = Reaper(Vec::new());
    let mut probe_outs: Vec<(String, BufReader<ChildStdout>)> = Vec::new();
    if let (true, Site::Testbed(state)) = (probes, site) {
        for n in state.nodes.iter().filter(|n| n.kind == "switch") {
            let ports: Vec<String> = n
                .interfaces
                .iter()
                .filter(|i| i.name != BRIDGE_IF)
                .map(|i| i.name.clone())
                .collect();
            let spec = Spec::Probe(ProbeSpec { ports, profile });
            let mut c = spawn_role(
                Some(&n.namespace),
                "tdma",
                &spec,
                &format!("{} probe", n.name),
            )?;
            let mut out = BufReader::new(c.stdout.take().expect("piped"));
            ready(&mut c, &mut out, &format!("{} probe", n.name))?;
            reaper.0.push(c);
            probe_outs.push((n.name.clone(), out));
        }
    }
    let mut ecu_outs = Vec::new();
    for (i, name) in ECUS.iter().enumerate() {
        let ends = if i == 0 { ends1 } else { ends1.reversed() };
        let (tx, rx) = if i == 0 {
            (fwd.clone(), bwd.clone())
        } else {
            (bwd.clone(), fwd.clone())
        };
        let link = match site {
            Site::Testbed(_) => link_spec(true, profile, &ends, None),
            Site::Hosts(h) => link_spec_on(&h[i].spec.iface, profile, &ends),
        };
        let spec = Spec::Ecu(EcuSpec {
            name: name.to_string(),
            profile,
            provider,
            link,
            ends,
            direction: i,
            tx,
            rx,
            bp_ns,
            periods,
            slots: slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.from == i)
                .map(|(k, s)| TxSlot {
                    flow: k as u16,
                    offset_ns: s.offset_ns,
                    period: s.period,
                    phase: s.phase,
                    payload: s.payload,
                })
                .collect(),
            linger_ns,
            spin_ns: SPIN_NS,
            probe: probes,
            pcap: pcap.map(|p| p[i].clone()),
            stamp_clock: site.clock(),
            iface: match site {
                Site::Testbed(_) => None,
                Site::Hosts(h) => Some(h[i].spec.iface.clone()),
            },
        });
        let place = match site {
            Site::Testbed(state) => Place::Namespace(state.namespace_of(name).map_err(net_err)?),
            Site::Hosts(h) => Place::Host(&h[i]),
        };
        let mut c =
            spawn_role_at(&place, "tdma", &spec, name).map_err(|e| site.node_error(i, e))?;
        let mut out = BufReader::new(c.stdout.take().expect("piped"));
        ready(&mut c, &mut out, name).map_err(|e| site.node_error(i, e))?;
        reaper.0.push(c);
        ecu_outs.push(out);
    }
    let t0 = site.clock().now_ns()
        + match site {
            Site::Testbed(_) => START_LEAD_NS,
            Site::Hosts(_) => START_LEAD_HOSTS_NS,
        };
    let n_probes = probe_outs.len();
    for c in reaper.0[n_probes..].iter_mut() {
        use std::io::Write;
        let stdin = c.stdin.as_mut().expect("piped");
        writeln!(stdin, "START {t0}")?;
        stdin.flush()?;
    }
    let mut raw = Raw::default();
    for (i, out) in ecu_outs.iter_mut().enumerate() {
        let r = read_ecu(out, ECUS[i], &mut raw);
        let c = &mut reaper.0[n_probes + i];
        if let Err(e) = r {
            let err = child_stderr(c);
            return Err(site.node_error(i, e.context(format!("{}: {err}", ECUS[i]))));
        }
    }
    // The run is over: the probes print what they saw once their stdin closes.
    for c in reaper.0[..n_probes].iter_mut() {
        drop(c.stdin.take());
    }
    for (k, (name, out)) in probe_outs.iter_mut().enumerate() {
        let r = read_report(out, &format!("{name} probe"), |f| {
            match f[0] {
                "T" => {
                    let (hash, ns) = (field_u64(f, 2)?, field_u64(f, 3)?);
                    raw.probed.entry(hash).or_default().push((name.clone(), ns));
                }
                "PROBEDROPS" => raw.probe_drops += field_u64(f, 1)?,
                _ => return Ok(false),
            }
            Ok(true)
        });
        if let Err(e) = r {
            let err = child_stderr(&mut reaper.0[k]);
            return Err(e.context(format!("{name} probe: {err}")));
        }
    }
    for (k, c) in reaper.0.iter_mut().enumerate() {
        drop(c.stdin.take());
        let status = c.wait()?;
        if !status.success() {
            let err = child_stderr(c);
            let e = anyhow!("a tdma node failed ({status}): {err}");
            return Err(match k.checked_sub(n_probes) {
                Some(i) => site.node_error(i, e),
                None => e,
            });
        }
    }
    Ok(raw)
}

fn ready(c: &mut Child, out: &mut BufReader<ChildStdout>, what: &str) -> Result<()> {
    if let Err(e) = wait_ready(out) {
        let _ = c.kill();
        let err = child_stderr(c);
        let _ = c.wait();
        return Err(e.context(format!("the {what} did not start: {err}")));
    }
    Ok(())
}

fn read_ecu(out: &mut BufReader<ChildStdout>, name: &str, raw: &mut Raw) -> Result<()> {
    read_report(out, name, |f| {
        let num = |i| field_u64(f, i);
        match f[0] {
            "S" => raw.sent.push(Sent {
                flow: u16::try_from(num(1)?)?,
                seq: num(2)?,
                sched: num(3)?,
                send: num(4)?,
                hash: num(6)?,
            }),
            "R" => {
                let key = (u16::try_from(num(1)?)?, num(2)?);
                raw.arrived.entry(key).or_insert(num(3)?);
            }
            "T" => {
                raw.probed
                    .entry(num(2)?)
                    .or_default()
                    .push((name.to_string(), num(3)?));
            }
            "DROP" => {
                let n = num(2)?;
                if n > 0 {
                    *raw.rejected
                        .entry(f.get(1).unwrap_or(&"?").to_string())
                        .or_default() += n;
                }
            }
            "SOCKDROPS" => raw.socket_drops += num(1)?,
            "PROBEDROPS" => raw.probe_drops += num(1)?,
            _ => return Ok(false),
        }
        Ok(true)
    })
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC in ns (kernel timestamps are on the first, the ECUs' times
/// on the second): the reading with the shortest bracket of several.
fn realtime_offset() -> i128 {
    let mut best = (u64::MAX, 0i128);
    for _ in 0..16 {
        let a = monotonic_ns();
        let r = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        let b = monotonic_ns();
        if b - a < best.0 {
            best = (b - a, r - i128::from(a + (b - a) / 2));
        }
    }
    best.1
}

/// Joins what the processes reported into the per-slot figures; `off` is CLOCK_REALTIME −
/// CLOCK_MONOTONIC (kernel timestamps → the ECUs' clock).
fn analyse(
    cfg: &RunConfig,
    testbed: &str,
    topo: &Topology,
    slots: &[RunSlot],
    payloads: &[usize],
    raw: &Raw,
    off: i128,
) -> RunResult {
    let s = &cfg.schedule;
    let switches = s.switches;
    let mut all_diff: Vec<Vec<f64>> = vec![Vec::new(); usize::from(switches)];
    let (mut first_hop, mut last_hop) = (Vec::new(), Vec::new());
    let mut max_tt: Option<u64> = None;
    let mut results = Vec::with_capacity(slots.len());
    let mut by_flow: Vec<Vec<&Sent>> = vec![Vec::new(); slots.len()];
    for f in &raw.sent {
        if let Some(v) = by_flow.get_mut(usize::from(f.flow)) {
            v.push(f);
        }
    }
    for (k, rs) in slots.iter().enumerate() {
        let flow = &s.flows[s
            .flows
            .iter()
            .position(|f| f.name == s.slots[k].flow)
            .expect("checked")];
        let sw_path = path(switches, &flow.from);
        let (mut send_err, mut owd) = (Vec::new(), Vec::new());
        let mut diffs: Vec<Vec<f64>> = vec![Vec::new(); sw_path.len()];
        let (mut sent, mut arrived, mut misses) = (0u64, 0u64, 0u64);
        for f in &by_flow[k] {
            sent += 1;
            send_err.push(f.send.saturating_sub(f.sched) as f64);
            let Some(&arr) = raw.arrived.get(&(f.flow, f.seq)) else {
                continue;
            };
            arrived += 1;
            if arr > f.sched + rs.length_ns {
                misses += 1;
            }
            let tt = arr.saturating_sub(f.sched);
            max_tt = Some(max_tt.map_or(tt, |m| m.max(tt)));
            owd.push(arr as f64 - f.send as f64);
            let Some(seen) = raw.probed.get(&f.hash) else {
                continue;
            };
            let at = |node: &str| seen.iter().find(|(n, _)| n == node).map(|&(_, t)| t);
            let mut hops: Vec<Option<u64>> = sw_path.iter().map(|n| at(n)).collect();
            hops.push(at(&flow.to));
            for (j, w) in hops.windows(2).enumerate() {
                if let (Some(x), Some(y)) = (w[0], w[1]) {
                    diffs[j].push(y as f64 - x as f64);
                }
            }
            if let Some(Some(t)) = hops.first() {
                first_hop.push(i128::from(*t) - off - i128::from(f.send));
            }
            if let Some(Some(t)) = hops.last() {
                last_hop.push(i128::from(arr) - (i128::from(*t) - off));
            }
        }
        let mut switch_diff_us = Vec::new();
        for (j, d) in diffs.iter().enumerate() {
            let k = sw_path[j][2..].parse::<usize>().unwrap_or(0);
            all_diff[k].extend_from_slice(d);
            if let Some(us) = MinMeanMax::of_ns(d) {
                switch_diff_us.push(SwitchDiff {
                    switch: sw_path[j].clone(),
                    us,
                });
            }
        }
        results.push(SlotResult {
            flow: flow.name.clone(),
            from: flow.from.clone(),
            to: flow.to.clone(),
            frame_bytes: flow.frame_bytes,
            payload: payloads[k],
            period: flow.period,
            phase: rs.phase,
            offset_us: rs.offset_ns as f64 / 1000.0,
            length_us: rs.length_ns as f64 / 1000.0,
            sent,
            arrived,
            lost: sent - arrived,
            misses,
            send_error_us: Spread::of_ns(&send_err),
            owd_us: Spread::of_ns(&owd),
            switch_diff_us,
        });
    }
    let switch_diff_us = all_diff
        .iter()
        .enumerate()
        .filter_map(|(k, d)| {
            MinMeanMax::of_ns(d).map(|us| SwitchDiff {
                switch: format!("sw{k}"),
                us,
            })
        })
        .collect();
    let f64s = |v: &[i128]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let sum = |f: fn(&SlotResult) -> u64| results.iter().map(f).sum::<u64>();
    let (sent, arrived, lost, misses) = (
        sum(|r| r.sent),
        sum(|r| r.arrived),
        sum(|r| r.lost),
        sum(|r| r.misses),
    );
    RunResult {
        testbed: testbed.to_string(),
        topology: topo.to_string(),
        switches,
        profile: cfg.profile.clone(),
        provider: cfg.provider.to_string(),
        bp_ms: s.bp_ns as f64 / 1e6,
        gp_ms: s.gp_ns as f64 / 1e6,
        rate_bps: s.rate_bps,
        periods: cfg.periods,
        clock: "CLOCK_MONOTONIC shared by every namespace (send, arrival); kernel receive \
                timestamps (CLOCK_REALTIME) at the switch ports and ECU interfaces"
            .to_string(),
        slots: results,
        switch_diff_us,
        first_hop_us: MinMeanMax::of_ns(&f64s(&first_hop)),
        last_hop_us: MinMeanMax::of_ns(&f64s(&last_hop)),
        sent,
        arrived,
        lost,
        misses,
        rejected: raw.rejected.clone(),
        socket_drops: raw.socket_drops,
        probe_drops: raw.probe_drops,
        max_tt_us: max_tt.map(|t| t as f64 / 1000.0),
        nf_max_tt: max_tt.filter(|&t| t > 0).map(|t| s.bp_ns / t),
        capacity: None,
        schedule_met: sent > 0 && lost == 0 && misses == 0,
        hosts: None,
        switch_diff_not_measured: None,
        clock_during_run: None,
        clock_flag: None,
    }
}

/// The capacity steps: `k` evenly spaced slots per BP from ecu1 to ecu2 for k = 1, 2, 4, … up
/// to eq. 9's NF_max, then bisection between the last k without a miss and the first with one.
fn capacity(
    cfg: &RunConfig,
    site: Site<'_>,
    switches: u16,
    payloads: &[usize],
) -> Result<CapacityResult> {
    let s = &cfg.schedule;
    let (i, f) = s
        .flows
        .iter()
        .enumerate()
        .max_by_key(|(_, f)| f.frame_bytes)
        .ok_or_else(|| anyhow!("no flows"))?;
    let payload = payloads[i];
    let nf = nf_max(
        s.bp_ns,
        s.gp_ns,
        u64::from(switches),
        f.frame_bytes,
        s.rate_bps,
    );
    // A step sends k × periods frames from one ECU, at most MAX_EVENTS.
    let most = nf.min(MAX_EVENTS / u64::from(cfg.periods));
    let mut steps: Vec<Step> = Vec::new();
    let mut step = |k: u64| -> Result<bool> {
        let slot = s.bp_ns / k;
        let slots: Vec<RunSlot> = (0..k)
            .map(|j| RunSlot {
                from: 0,
                offset_ns: j * slot,
                length_ns: slot,
                period: 1,
                phase: 0,
                payload,
            })
            .collect();
        let raw = run_slots(
            site,
            cfg.profile.profile(),
            cfg.provider,
            s.bp_ns,
            cfg.periods,
            &slots,
            false,
            None,
            STEP_LINGER_NS,
        )?;
        let (mut arrived, mut misses, mut worst) = (0, 0, None::<u64>);
        for x in &raw.sent {
            if let Some(&a) = raw.arrived.get(&(x.flow, x.seq)) {
                arrived += 1;
                if a > x.sched + slot {
                    misses += 1;
                }
                let tt = a.saturating_sub(x.sched);
                worst = Some(worst.map_or(tt, |w| w.max(tt)));
            }
        }
        let st = Step {
            frames_per_bp: k,
            slot_us: slot as f64 / 1000.0,
            sent: raw.sent.len() as u64,
            arrived,
            misses,
            lost: raw.sent.len() as u64 - arrived,
            max_tt_us: worst.map(|w| w as f64 / 1000.0),
        };
        let ok = st.no_miss();
        steps.push(st);
        Ok(ok)
    };
    // Interrupted (crate::interrupt): the steps that finished are kept (the search ends
    // there), the one in progress is left out.
    let stopped = crate::interrupt::requested;
    let (mut good, mut bad) = (0u64, None::<u64>);
    let mut k = 1u64;
    'search: {
        while k <= most {
            if stopped() {
                break 'search;
            }
            let ok = match step(k) {
                Err(_) if stopped() => break 'search,
                r => r?,
            };
            if ok {
                good = k;
                if k == most {
                    break;
                }
                k = (k * 2).min(most);
            } else {
                bad = Some(k);
                break;
            }
        }
        while let Some(b) = bad {
            if b - good <= 1 || stopped() {
                break;
            }
            let m = good + (b - good) / 2;
            let ok = match step(m) {
                Err(_) if stopped() => break 'search,
                r => r?,
            };
            if ok {
                good = m;
            } else {
                bad = Some(m);
            }
        }
    }
    Ok(CapacityResult {
        frame_bytes: f.frame_bytes,
        payload,
        frame_time_us: frame_time_ns(f.frame_bytes, s.rate_bps) as f64 / 1000.0,
        nf_max: nf,
        most_tried: most,
        nf_no_miss: good,
        first_miss_at: bad,
        steps,
    })
}

/// Writes the frames of both ECUs' captures to `out` in time order and removes the parts.
fn merge_pcaps(out: &Path, parts: &[PathBuf; 2]) -> Result<()> {
    let mut frames = Vec::new();
    for p in parts {
        if !p.exists() {
            continue;
        }
        let r = ivnsec_net::pcap::PcapReader::open(p)
            .map_err(|e| anyhow!("reading {}: {e}", p.display()))?;
        for rec in r {
            let rec = rec.map_err(|e| anyhow!("reading {}: {e}", p.display()))?;
            frames.push((rec.timestamp, rec.data));
        }
        std::fs::remove_file(p).with_context(|| format!("removing {}", p.display()))?;
    }
    frames.sort_by_key(|f| f.0);
    let mut w = ivnsec_net::pcap::PcapWriter::create(out)
        .with_context(|| format!("creating {}", out.display()))?;
    for (t, d) in &frames {
        w.write_frame(*t, d)?;
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
