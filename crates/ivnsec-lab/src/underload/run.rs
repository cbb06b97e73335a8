//! Orchestration of the sensor-stream experiments (seed 002 §5.2.1): the under-load settings
//! ([`UnderloadConfig`]), the engine both under-load and playback run on (`run_stream`: per
//! profile a sensor and a consumer process, their reports joined into a [`ProfileRun`]), and the
//! sockperf baseline on the same path in the same invocation. Playback's timeline and settings
//! are in [`super::playback`]. The command prints what this returns; plans call
//! [`run_underload`] directly.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use ivnsec_core::channel::Ends;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::LinkSpec;
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::netns_command;
use ivnsec_net::topology::{self, Topology};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::node::{Schedule, StreamRole, StreamSpec};
use super::{
    MAX_MESSAGE, MIN_MESSAGE, MessageCounts, ProfileRun, REQUIREMENT_US, Replies, UnderloadReport,
};
use crate::cpu::{ProcessCpu, SystemSampler};
use crate::fragment::FragSender;
use crate::hosts::Remote;
use crate::outage::Trace;
use crate::process::{
    Place, Reaper, child_stderr, field_u64, read_report, spawn_role_at, wait_ready,
};
use crate::site::{Layout, Site, link_spec, link_spec_on, testbed_node};
use crate::sockperf::parse_sockperf;
use crate::throughput::{CpuResult, system_fields};
use ivnsec_node::channel::{open as open_channel, random_keys};
use ivnsec_node::error::usage;

fn check_count(n: usize) -> Result<()> {
    if n == 0 || n > MAX_PROFILES {
        return Err(usage(format!("give 1 to {MAX_PROFILES} profiles, got {n}")));
    }
    Ok(())
}

/// The profiles of seed 002 when none is given: no protection, MACsec GCM-AES-128 and IPsec ESP
/// with HMAC-SHA256-128 integrity only (§5, Tables 6.1–6.9).
pub const DEFAULT_PROFILES: [&str; 3] = ["plain", "macsec-gcm-aes-128", "esp-null-hmac-sha256"];
/// Most profiles one invocation runs.
pub const MAX_PROFILES: usize = 16;
/// Most messages one run sends (the consumer keeps one 16-byte sample per message).
pub const MAX_COUNT: u64 = 10_000_000;
/// Largest link MTU the experiment fragments for (the testbed's).
const MTU: usize = topology::MTU as usize;
/// How long the sensor waits for the last replies after its last send.
const DRAIN_NS: u64 = 300_000_000;
/// Port of the sockperf server.
const SOCKPERF_PORT: u16 = 11112;

/// The settings of an under-load run, as the command line and plan sections give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UnderloadConfig {
    /// Profiles, run in this order (`plain` first is added when missing and `baseline` is on).
    /// Typed where the plan is read: an unknown profile is a TOML error naming its key
    /// (`underload[0].profiles[1]`, [`crate::experiment::text::key_at`]); the command line
    /// parses its own (`--profile`).
    pub profiles: Vec<NamedProfile>,
    /// Message size, bytes.
    pub size: usize,
    /// Messages per second.
    pub mps: f64,
    /// Reply to every n-th message.
    pub reply_every: u64,
    /// Sending time per profile, s.
    pub seconds: f64,
    /// p99.9 of the one-way delay must be below this, µs.
    pub requirement_us: f64,
    /// `portable`, `fast` or `auto`.
    pub provider: String,
    /// Run `plain` and sockperf in the same invocation.
    pub baseline: bool,
    /// In a plan: `bump2` runs on a testbed of its own with the sensor and the consumer as
    /// legacy ECUs behind bump-in-the-wire gateways the run starts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

/// [`DEFAULT_PROFILES`], typed.
pub fn default_profiles() -> Vec<NamedProfile> {
    DEFAULT_PROFILES
        .iter()
        .map(|s| s.parse().expect("the default profiles are profiles"))
        .collect()
}

impl Default for UnderloadConfig {
    fn default() -> Self {
        UnderloadConfig {
            profiles: default_profiles(),
            size: 24_938,
            mps: 950.0,
            reply_every: 100,
            seconds: 10.0,
            requirement_us: REQUIREMENT_US,
            provider: "auto".into(),
            baseline: true,
            topology: None,
        }
    }
}

impl UnderloadConfig {
    /// Checks every setting; the error is a usage error (exit 2) naming the setting.
    pub fn check(&self) -> Result<()> {
        check_common(
            &self.profiles,
            self.reply_every,
            self.requirement_us,
            &self.provider,
        )?;
        if !(MIN_MESSAGE..=MAX_MESSAGE).contains(&self.size) {
            return Err(usage(format!(
                "size must be from {MIN_MESSAGE} (sequence number and send time) to \
                 {MAX_MESSAGE} bytes, got {}",
                self.size
            )));
        }
        if !self.mps.is_finite() || self.mps <= 0.0 || self.mps > 1_000_000.0 {
            return Err(usage(format!(
                "mps must be above 0 and at most 1000000 messages per second, got {}",
                self.mps
            )));
        }
        if !self.seconds.is_finite() || self.seconds <= 0.0 || self.seconds > 3600.0 {
            return Err(usage(format!(
                "seconds must be above 0 and at most 3600, got {}",
                self.seconds
            )));
        }
        let n = self.count();
        if n == 0 || n > MAX_COUNT {
            return Err(usage(format!(
                "mps × seconds = {n} messages; must be from 1 to {MAX_COUNT}"
            )));
        }
        Ok(())
    }

    /// Messages each profile's sensor sends: mps × seconds, rounded.
    pub fn count(&self) -> u64 {
        (self.mps * self.seconds).round().max(0.0) as u64
    }

    fn common(&self) -> Common {
        Common {
            experiment: "underload",
            profiles: self.profiles.clone(),
            reply_every: self.reply_every,
            requirement_us: self.requirement_us,
            provider: self.provider.parse().unwrap_or_default(),
            baseline: self.baseline,
        }
    }

    fn schedule(&self) -> Schedule {
        Schedule::Rate {
            size: self.size,
            mps: self.mps,
            count: self.count(),
        }
    }
}

/// The checks under-load and playback share.
pub(crate) fn check_common(
    profiles: &[NamedProfile],
    reply_every: u64,
    requirement_us: f64,
    provider: &str,
) -> Result<()> {
    check_count(profiles.len())?;
    for (i, p) in profiles.iter().enumerate() {
        if profiles[..i].contains(p) {
            return Err(usage(format!("profile `{p}` is given twice")));
        }
    }
    if !(1..=1_000_000).contains(&reply_every) {
        return Err(usage(format!(
            "reply-every must be from 1 to 1000000, got {reply_every}"
        )));
    }
    if !requirement_us.is_finite() || requirement_us <= 0.0 {
        return Err(usage(format!(
            "requirement-us must be above 0, got {requirement_us}"
        )));
    }
    let provider: ProviderChoice = provider.parse().map_err(usage)?;
    // Every profile must have a provider and room for fragment data in the MTU.
    for p in profiles {
        let profile = p.profile();
        let k = random_keys(profile)?;
        let ch = open_channel(
            profile,
            provider,
            &k,
            &k,
            loopback_ends(),
            0,
            Default::default(),
        )?;
        FragSender::new(&ch, MTU, 1, 1).map_err(|e| usage(format!("profile `{p}`: {e:#}")))?;
    }
    Ok(())
}

fn loopback_ends() -> Ends {
    Ends {
        local_mac: topology::ecu_mac(1, 1),
        peer_mac: topology::ecu_mac(0, 1),
        local_ip: Ipv4Addr::LOCALHOST,
        peer_ip: Ipv4Addr::LOCALHOST,
    }
}

/// Runs an under-load experiment at `site`. With `pcap`, each profile's sensor records its
/// first units (the file holds the last profile's; one file per profile is written as
/// `FILE.<profile>` when there are several).
pub fn run_underload(
    site: &Site,
    cfg: &UnderloadConfig,
    pcap: Option<&Path>,
) -> Result<UnderloadReport> {
    cfg.check()?;
    let settings = serde_json::to_value(cfg)?;
    let schedule = cfg.schedule();
    let sockperf = |pair: &Pair| {
        let secs = cfg.seconds.ceil().max(1.0) as u64;
        let args = vec![
            "under-load".to_string(),
            "--mps".into(),
            format!("{}", cfg.mps),
            "-m".into(),
            cfg.size.to_string(),
            "--reply-every".into(),
            cfg.reply_every.to_string(),
            "-t".into(),
            secs.to_string(),
        ];
        sockperf_baseline(site, pair, &args)
    };
    run_stream(site, &cfg.common(), &schedule, settings, pcap, &sockperf)
}

/// The testbed under-load and playback run on: one sensor and the consumer on a switch.
pub fn layout() -> Layout {
    Layout {
        topology: Topology::Sensors(1),
        initiator: "sensor1".into(),
        responder: "consumer".into(),
    }
}

/// What a run needs besides its schedule.
pub(crate) struct Common {
    pub experiment: &'static str,
    pub profiles: Vec<NamedProfile>,
    pub reply_every: u64,
    pub requirement_us: f64,
    pub provider: ProviderChoice,
    pub baseline: bool,
}

/// The two nodes: namespace (None on loopback), MAC and IPv4 address.
pub(crate) struct Pair {
    sensor: (Option<String>, [u8; 6], Ipv4Addr),
    consumer: (Option<String>, [u8; 6], Ipv4Addr),
    /// Across hosts: the sensor's host and the consumer's.
    hosts: Option<(Arc<Remote>, Arc<Remote>)>,
    /// Across hosts: what the one-way delays were timed on (decided before the run), and
    /// whether the hosts are this machine (one clock).
    clocks: Option<(String, bool)>,
}

impl Pair {
    fn of(site: &Site, experiment: &str) -> Result<Pair> {
        match site {
            Site::Testbed {
                state,
                initiator,
                responder,
            } => {
                let node = |name: &str| testbed_node(state, name);
                Ok(Pair {
                    sensor: node(initiator)?,
                    consumer: node(responder)?,
                    hosts: None,
                    clocks: None,
                })
            }
            Site::Hosts {
                initiator,
                responder,
            } => {
                // The verdict is a one-way delay: one machine, or PTP-synchronised clocks.
                let clocks = crate::clock_watch::one_way_clocks(
                    experiment,
                    &[&initiator.spec, &responder.spec],
                    crate::clock::DEFAULT_MAX_OFFSET_NS,
                )?;
                let ip = |h: &Remote| h.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
                Ok(Pair {
                    sensor: (None, initiator.mac, ip(initiator)),
                    consumer: (None, responder.mac, ip(responder)),
                    hosts: Some((initiator.clone(), responder.clone())),
                    clocks: Some(clocks),
                })
            }
            Site::Loopback => {
                let e = loopback_ends();
                Ok(Pair {
                    sensor: (None, e.local_mac, e.local_ip),
                    consumer: (None, e.peer_mac, e.peer_ip),
                    hosts: None,
                    clocks: None,
                })
            }
        }
    }

    /// The sensor's view of the two ends.
    fn sensor_ends(&self) -> Ends {
        Ends {
            local_mac: self.sensor.1,
            peer_mac: self.consumer.1,
            local_ip: self.sensor.2,
            peer_ip: self.consumer.2,
        }
    }
}

/// Runs every profile (plain first when the baseline asks for it), then the sockperf baseline.
pub(crate) fn run_stream(
    site: &Site,
    common: &Common,
    schedule: &Schedule,
    settings: Value,
    pcap: Option<&Path>,
    sockperf: &dyn Fn(&Pair) -> Option<Value>,
) -> Result<UnderloadReport> {
    let pair = Pair::of(site, common.experiment)?;
    // Across hosts the clocks are watched while the experiment runs.
    let watch = match (&pair.hosts, &pair.clocks) {
        (Some((s, c)), Some((_, shared))) => Some(crate::clock_watch::ExperimentWatch::start(
            &[&s.spec, &c.spec],
            *shared,
        )),
        _ => None,
    };
    if pair.hosts.is_some() && pcap.is_some() {
        return Err(usage(
            "a capture (--pcap) is not taken across hosts: the sensor runs on another machine; \
             capture there (tcpdump -i IFACE -w FILE)",
        ));
    }
    let mut profiles = common.profiles.clone();
    if common.baseline && !profiles.iter().any(|p| p == "plain") {
        profiles.insert(0, NamedProfile::from(Profile::PLAIN));
    }
    let mut runs: Vec<ProfileRun> = Vec::new();
    // Interrupted (crate::interrupt): the profiles that finished are reported, the one in
    // progress is left out, and nothing more runs.
    let stopped = crate::interrupt::requested;
    for (i, p) in profiles.iter().enumerate() {
        if stopped() {
            break;
        }
        eprintln!(
            "ivnsec {}: {p} ({} of {})",
            common.experiment,
            i + 1,
            profiles.len()
        );
        let file = pcap.map(|f| {
            if profiles.len() == 1 {
                f.to_path_buf()
            } else {
                let mut name = f.as_os_str().to_os_string();
                name.push(format!(".{}", p.name().replace('/', "-")));
                PathBuf::from(name)
            }
        });
        let r = match run_profile(site, &pair, p, schedule, common, file.as_deref(), None) {
            Err(_) if stopped() => break,
            r => r.map_err(|e| pair.node_error(e))?,
        };
        if let Some(f) = &file {
            eprintln!("capture: {} (the first units {p} sent)", f.display());
        }
        runs.push(r);
    }
    if let Some(plain) = runs.iter().find(|r| r.profile == "plain").cloned() {
        for r in runs.iter_mut().filter(|r| r.profile != "plain") {
            r.cpu.increase_over_plain = Some(r.cpu.increase_over(&plain.cpu));
        }
    }
    let mut baseline = Map::new();
    if common.baseline && pair.hosts.is_some() {
        eprintln!(
            "ivnsec {}: no sockperf baseline across hosts (it would run on this machine)",
            common.experiment
        );
    } else if common.baseline && !stopped() {
        if let Some(mut v) = sockperf(&pair).filter(|_| !stopped()) {
            if let (Value::Object(m), Some(plain)) =
                (&mut v, runs.iter().find(|r| r.profile == "plain"))
            {
                compare_with_sockperf(m, plain);
            }
            baseline.insert("sockperf".into(), v);
        }
    }
    let mut report = UnderloadReport {
        experiment: common.experiment.to_string(),
        transport: match &pair.clocks {
            Some((c, _)) => format!("{}; {c}", transport(site)),
            None => transport(site),
        },
        settings,
        runs,
        baseline,
        passed: false,
        gateways: match site {
            Site::Testbed { state, .. }
                if state
                    .nodes
                    .iter()
                    .any(|n| n.kind == ivnsec_net::topology::NodeKind::Gateway.as_str()) =>
            {
                Some(state.topology.to_string())
            }
            _ => None,
        },
        clock_during_run: None,
        clock_flag: None,
    };
    if let Some(w) = watch {
        let (during, flag) = w.finish();
        report.clock_during_run = Some(during);
        report.clock_flag = flag;
    }
    report.passed = report.passed();
    Ok(report)
}

fn transport(site: &Site) -> String {
    match site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => format!(
            "testbed {} ({}): {initiator} → switch → {responder}, raw Ethernet (AF_PACKET) over \
             veth and a Linux bridge, 1500-byte MTU, every fragment its own protected frame; ESP \
             as IPv4 protocol 50 through the kernel's IP layer (raw IP sockets), one ESP packet \
             per fragment; SecOC and SOME/IP in UDP datagrams, one per fragment",
            state.prefix, state.topology
        ),
        Site::Hosts { .. } => site.transport(),
        Site::Loopback => "UDP on loopback (no testbed: not root), one protected fragment per \
                           datagram, fragments sized for a 1500-byte MTU; not a vehicle-network \
                           path"
            .to_string(),
    }
}

fn spawn(place: &Place<'_>, spec: &StreamSpec) -> Result<Child> {
    spawn_role_at(place, "underload", spec, &format!("{:?}", spec.role))
        .map_err(|e| on_host(place, e))
}

/// An error of a node on a host names the host (exit 3).
fn on_host(place: &Place<'_>, e: anyhow::Error) -> anyhow::Error {
    match place {
        Place::Host(h) => h.node_error(e),
        _ => e,
    }
}

impl Pair {
    /// Across hosts, a node's failure names both hosts (exit 3): a node failed there or its
    /// SSH connection was lost. Errors that already name a host, and usage errors, pass.
    fn node_error(&self, e: anyhow::Error) -> anyhow::Error {
        let Some((s, c)) = &self.hosts else { return e };
        if e.chain().any(|x| {
            x.is::<ivnsec_node::error::EnvError>() || x.is::<ivnsec_node::error::UsageError>()
        }) {
            return e;
        }
        ivnsec_node::error::env_error(format!(
            "{} (sensor) or {} (consumer): a node failed or its SSH connection was lost: {e:#}",
            s.spec.label(),
            c.spec.label()
        ))
    }

    fn sensor_place(&self) -> Place<'_> {
        match (&self.hosts, &self.sensor.0) {
            (Some((s, _)), _) => Place::Host(s),
            (None, Some(ns)) => Place::Namespace(ns),
            (None, None) => Place::Here,
        }
    }
    fn consumer_place(&self) -> Place<'_> {
        match (&self.hosts, &self.consumer.0) {
            (Some((_, c)), _) => Place::Host(c),
            (None, Some(ns)) => Place::Namespace(ns),
            (None, None) => Place::Here,
        }
    }
    /// The link of a node with `ends` on the sensor's (`sensor`) or the consumer's side.
    fn link(
        &self,
        testbed: bool,
        family: Profile,
        ends: &Ends,
        port: Option<u16>,
        sensor: bool,
    ) -> LinkSpec {
        match &self.hosts {
            Some((s, c)) => link_spec_on(
                if sensor { &s.spec.iface } else { &c.spec.iface },
                family,
                ends,
            ),
            None => link_spec(testbed, family, ends, port),
        }
    }
}

/// Reads `READY <port>` from a role, or stops it and fails with what it printed on stderr.
fn ready(c: &mut Child, out: &mut BufReader<ChildStdout>, what: &str) -> Result<u16> {
    wait_ready(out).or_else(|_| {
        let _ = c.kill();
        let err = child_stderr(c);
        let _ = c.wait();
        bail!("the {what} did not start: {err}")
    })
}

/// What the sensor reported.
#[derive(Default)]
struct SensorLog {
    rtts: Vec<u64>,
    sent: u64,
    units: u64,
    bytes: u64,
    start: u64,
    last: u64,
    max_late: u64,
    user_ns: u64,
    sys_ns: u64,
    rejects: BTreeMap<String, u64>,
}

/// What the consumer reported.
#[derive(Default)]
struct ConsumerLog {
    one_way: Vec<u64>,
    /// The sequence number of each `one_way` (kept only when the run is traced).
    seqs: Vec<u64>,
    units: u64,
    bytes: u64,
    duplicates: u64,
    out_of_order: u64,
    replied: u64,
    drops: BTreeMap<String, u64>,
    user_ns: u64,
    sys_ns: u64,
}

fn read_sensor(out: impl BufRead) -> Result<SensorLog> {
    let mut s = SensorLog::default();
    read_report(out, "sensor", |f| {
        match f[0] {
            "RTT" => s.rtts.push(field_u64(f, 2)?),
            "SENT" => {
                s.sent = field_u64(f, 1)?;
                s.units = field_u64(f, 2)?;
                s.bytes = field_u64(f, 3)?;
                s.start = field_u64(f, 4)?;
                s.last = field_u64(f, 5)?;
                s.max_late = field_u64(f, 6)?;
                s.user_ns = field_u64(f, 7)?;
                s.sys_ns = field_u64(f, 8)?;
            }
            "REJECT" => {
                s.rejects
                    .insert(f.get(1).unwrap_or(&"?").to_string(), field_u64(f, 2)?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(s)
}

fn read_consumer(out: impl BufRead, keep_seqs: bool) -> Result<ConsumerLog> {
    let mut c = ConsumerLog::default();
    read_report(out, "consumer", |f| {
        match f[0] {
            "M" => {
                c.one_way.push(field_u64(f, 2)?);
                if keep_seqs {
                    c.seqs.push(field_u64(f, 1)?);
                }
            }
            "RECV" => {
                c.units = field_u64(f, 1)?;
                c.bytes = field_u64(f, 2)?;
                c.duplicates = field_u64(f, 3)?;
                c.out_of_order = field_u64(f, 4)?;
            }
            "REPLIED" => c.replied = field_u64(f, 1)?,
            "DROP" => {
                c.drops
                    .insert(f.get(1).unwrap_or(&"?").to_string(), field_u64(f, 2)?);
            }
            "CPU" => {
                c.user_ns = field_u64(f, 1)?;
                c.sys_ns = field_u64(f, 2)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(c)
}

/// One profile: starts the sensor (which opens its link), the consumer (which knows the sensor's
/// UDP port on loopback), then tells the sensor to go, and joins their reports.
fn run_profile(
    site: &Site,
    pair: &Pair,
    profile: &NamedProfile,
    schedule: &Schedule,
    common: &Common,
    pcap: Option<&Path>,
    trace: Option<&mut Trace>,
) -> Result<ProfileRun> {
    let family = profile.profile();
    let testbed = matches!(site, Site::Testbed { .. });
    if let Some((s, c)) = &pair.hosts
        && (family.is_ip() || family.is_udp())
        && (s.ip.is_none() || c.ip.is_none())
    {
        return Err(ivnsec_node::error::env_error(format!(
            "{profile} needs an IPv4 address on the interfaces of both hosts ({} on {}, {} on \
             {}); add them (ip addr add ADDRESS/PREFIX dev IFACE)",
            s.spec.iface, s.spec.name, c.spec.iface, c.spec.name
        )));
    }
    let s_ends = pair.sensor_ends();
    let c_ends = s_ends.reversed();
    let forward = random_keys(family)?;
    let backward = random_keys(family)?;
    let spec = |role, ends: Ends, link, pcap: Option<PathBuf>| StreamSpec {
        role,
        profile: family,
        provider: common.provider,
        forward: forward.clone(),
        backward: backward.clone(),
        ends,
        link,
        schedule: schedule.clone(),
        reply_every: common.reply_every,
        mtu: MTU,
        drain_ns: DRAIN_NS,
        pcap,
        // Across hosts one-way delays are timed on the clock PTP disciplines.
        stamp_clock: if pair.hosts.is_some() {
            crate::clock_watch::StampClock::Realtime
        } else {
            crate::clock_watch::StampClock::Monotonic
        },
    };
    let pcap = pcap.map(std::path::absolute).transpose()?;
    let mut reaper = Reaper(Vec::new());

    let s_link = pair.link(testbed, family, &s_ends, None, true);
    let s_place = pair.sensor_place();
    let c_place = pair.consumer_place();
    let mut sensor = spawn(&s_place, &spec(StreamRole::Sensor, s_ends, s_link, pcap))?;
    let mut s_out = BufReader::new(sensor.stdout.take().expect("piped"));
    let s_port = ready(&mut sensor, &mut s_out, "sensor").map_err(|e| on_host(&s_place, e))?;
    reaper.0.push(sensor);

    // On loopback the consumer answers the sensor's UDP port, known only now.
    let c_link = pair.link(
        testbed,
        family,
        &c_ends,
        (!testbed).then_some(s_port),
        false,
    );
    let mut consumer = spawn(&c_place, &spec(StreamRole::Consumer, c_ends, c_link, None))?;
    let mut c_out = BufReader::new(consumer.stdout.take().expect("piped"));
    let c_port = ready(&mut consumer, &mut c_out, "consumer").map_err(|e| on_host(&c_place, e))?;
    reaper.0.push(consumer);

    let sampler = SystemSampler::start(Duration::from_secs(1));
    if let Some(stdin) = reaper.0[0].stdin.as_mut() {
        stdin
            .write_all(format!("GO {c_port}\n").as_bytes())
            .and_then(|_| stdin.flush())
            .context("starting the sensor")?;
    }
    let sensor_log = read_sensor(&mut s_out);
    let system = sampler.stop();
    let sensor_log = match sensor_log {
        Ok(s) => s,
        Err(e) => {
            let err = child_stderr(&mut reaper.0[0]);
            return Err(on_host(&s_place, e.context(format!("sensor: {err}"))));
        }
    };
    // Everything in flight has arrived during the sensor's drain; stop the consumer.
    std::thread::sleep(Duration::from_millis(50));
    drop(reaper.0[1].stdin.take());
    let consumer_log = match read_consumer(&mut c_out, trace.is_some()) {
        Ok(c) => c,
        Err(e) => {
            let err = child_stderr(&mut reaper.0[1]);
            return Err(on_host(&c_place, e.context(format!("consumer: {err}"))));
        }
    };
    for c in &mut reaper.0 {
        let err = child_stderr(c);
        let st = c.wait()?;
        if !st.success() {
            bail!("a {profile} node failed ({st}): {err}");
        }
    }
    reaper.0.clear();

    let s = sensor_log;
    let c = consumer_log;
    if let Some(t) = trace {
        *t = trace_of(schedule, &s, &c)?;
    }
    result_of(profile, schedule, common, s_ends, s, c, &system)
}

/// One profile's result from the sensor's and the consumer's logs and the CPU seen meanwhile.
fn result_of(
    profile: &NamedProfile,
    schedule: &Schedule,
    common: &Common,
    s_ends: Ends,
    s: SensorLog,
    c: ConsumerLog,
    system: &crate::cpu::SystemCpu,
) -> Result<ProfileRun> {
    let family = profile.profile();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let window = s.last.saturating_sub(s.start);
    let sender = ProcessCpu {
        user_ns: s.user_ns,
        sys_ns: s.sys_ns,
        wall_ns: window,
    };
    let receiver = ProcessCpu {
        user_ns: c.user_ns,
        sys_ns: c.sys_ns,
        wall_ns: window,
    };
    let mut cpu = CpuResult {
        sender_pct: sender.pct_of_machine(cores),
        receiver_pct: receiver.pct_of_machine(cores),
        cores,
        sender_user_ns: s.user_ns,
        sender_sys_ns: s.sys_ns,
        receiver_user_ns: c.user_ns,
        receiver_sys_ns: c.sys_ns,
        sender_ns_per_byte: sender.ns_per_byte(s.bytes),
        receiver_ns_per_byte: receiver.ns_per_byte(c.bytes),
        ..CpuResult::default()
    };
    system_fields(&mut cpu, system);
    let k = random_keys(family)?;
    let ch = open_channel(
        family,
        common.provider,
        &k,
        &k,
        s_ends,
        0,
        Default::default(),
    )?;
    let fs = FragSender::new(&ch, MTU, 1, 1)?;
    let mut r = ProfileRun {
        profile: profile.clone(),
        unit_payload: fs.max_unit(),
        units_per_message: fs.fragments(schedule.max_size()),
        units_sent: s.units,
        units_received: c.units,
        bytes_sent: s.bytes,
        seconds: window as f64 / 1e9,
        max_send_late_us: s.max_late as f64 / 1e3,
        messages: MessageCounts {
            sent: s.sent,
            duplicates: c.duplicates,
            out_of_order: c.out_of_order,
            ..MessageCounts::default()
        },
        replies: Replies {
            every: common.reply_every,
            sent: c.replied,
            rejected: s.rejects,
            ..Replies::default()
        },
        rejected: c.drops,
        cpu,
        ..ProfileRun::default()
    };
    r.derive(&c.one_way, &s.rtts, common.requirement_us);
    Ok(r)
}

/// The messages of a traced run: when each was due (the sensor's start plus its place in the
/// schedule, CLOCK_MONOTONIC) and its one-way delay as the consumer first received it (None:
/// never delivered), for the messages the sensor sent.
fn trace_of(schedule: &Schedule, s: &SensorLog, c: &ConsumerLog) -> Result<Trace> {
    let plan = super::node::entries(schedule)?;
    let sent = usize::try_from(s.sent)
        .unwrap_or(usize::MAX)
        .min(plan.len());
    let mut latency_ns: Vec<Option<f64>> = vec![None; sent];
    for (&seq, &owd) in c.seqs.iter().zip(&c.one_way) {
        let slot = usize::try_from(seq)
            .ok()
            .and_then(|q| q.checked_sub(1))
            .and_then(|i| latency_ns.get_mut(i));
        if let Some(slot @ None) = slot {
            *slot = Some(owd as f64);
        }
    }
    Ok(Trace {
        starts_ns: plan[..sent].iter().map(|e| s.start + e.at_ns).collect(),
        latency_ns,
    })
}

/// One under-load profile at `site` (sensor → consumer) with the [`Trace`] of its messages,
/// for a run with link outages ([`super::outage`]); no capture, no sockperf.
pub(crate) fn run_traced(
    site: &Site,
    cfg: &UnderloadConfig,
    profile: &NamedProfile,
) -> Result<(ProfileRun, Trace)> {
    let pair = Pair::of(site, "underload")?;
    let mut trace = Trace::default();
    let r = run_profile(
        site,
        &pair,
        profile,
        &cfg.schedule(),
        &cfg.common(),
        None,
        Some(&mut trace),
    )?;
    Ok((r, trace))
}

/// Runs `sockperf <args> -i <consumer> -p PORT` from the sensor against `sockperf server` on
/// the consumer (the same two ECUs, UDP) and parses its summary; `None` (with a note) when
/// sockperf is missing or fails.
pub(crate) fn sockperf_baseline(site: &Site, pair: &Pair, args: &[String]) -> Option<Value> {
    let experiment = args.first().map_or("sockperf", String::as_str);
    if !crate::site::baseline_tool_installed(experiment, "sockperf") {
        return None;
    }
    let cmd = |ns: &Option<String>| match ns {
        Some(ns) => netns_command(ns, "sockperf"),
        None => Command::new("sockperf"),
    };
    let ip = match site {
        Site::Testbed { .. } | Site::Hosts { .. } => pair.consumer.2.to_string(),
        Site::Loopback => "127.0.0.1".to_string(),
    };
    let port = SOCKPERF_PORT.to_string();
    let server = crate::interrupt::spawn(
        die_with_parent(&mut cmd(&pair.consumer.0))
            .args(["server", "-i", &ip, "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ivnsec: starting the sockperf server: {e}; no baseline");
            return None;
        }
    };
    let mut reaper = Reaper(vec![server]);
    std::thread::sleep(Duration::from_millis(300));
    let mut full: Vec<String> = args.to_vec();
    full.extend(["-i".into(), ip.clone(), "-p".into(), port.clone()]);
    eprintln!("ivnsec: baseline: sockperf {}", full.join(" "));
    let out = crate::interrupt::output(die_with_parent(&mut cmd(&pair.sensor.0)).args(&full));
    if let Some(s) = reaper.0.first_mut() {
        let _ = s.kill();
    }
    drop(reaper);
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!(
                "ivnsec: sockperf {experiment} failed ({}): {}; no baseline",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("ivnsec: sockperf {experiment}: {e}; no baseline");
            return None;
        }
    };
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let Some(mut v) = parse_sockperf(&text) else {
        eprintln!("ivnsec: sockperf {experiment} printed no latency summary; no baseline");
        return None;
    };
    if let Value::Object(m) = &mut v {
        m.insert(
            "command".into(),
            json!(format!("sockperf {}", full.join(" "))),
        );
        m.insert(
            "note".into(),
            json!(
                "sockperf over UDP between the same two ECUs (the kernel IP-fragments its \
                 datagrams, no protection); its latency is half the round trip of the replied \
                 messages, in µs"
            ),
        );
    }
    Some(v)
}

/// Our plain run's half round trips beside sockperf's, and their ratio.
fn compare_with_sockperf(m: &mut Map<String, Value>, plain: &ProfileRun) {
    let Some(h) = &plain.replies.half_rtt else {
        return;
    };
    m.insert("ours_plain_half_rtt_p50_us".into(), json!(h.p50_us));
    m.insert("ours_plain_half_rtt_p999_us".into(), json!(h.p999_us));
    if let Some(theirs) = m.get("half_rtt_p50_us").and_then(Value::as_f64) {
        if theirs > 0.0 {
            m.insert("ratio_plain_p50".into(), json!(h.p50_us / theirs));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_and_checks() {
        let c = UnderloadConfig::default();
        c.check().unwrap();
        assert_eq!(c.count(), 9500);
        // From TOML with only some keys; unknown keys are refused.
        let t: UnderloadConfig = toml::from_str("size = 1400\nmps = 100\nseconds = 2").unwrap();
        assert_eq!((t.size, t.count(), t.reply_every), (1400, 200, 100));
        assert_eq!(t.profiles, default_profiles());
        assert!(toml::from_str::<UnderloadConfig>("sise = 3").is_err());
        let typed = |names: &[&str]| -> Vec<NamedProfile> {
            names.iter().map(|n| n.parse().unwrap()).collect()
        };
        for bad in [
            UnderloadConfig {
                size: 15,
                ..c.clone()
            },
            UnderloadConfig {
                mps: 0.0,
                ..c.clone()
            },
            UnderloadConfig {
                seconds: f64::NAN,
                ..c.clone()
            },
            UnderloadConfig {
                reply_every: 0,
                ..c.clone()
            },
            UnderloadConfig {
                profiles: typed(&["plain", "plain"]),
                ..c.clone()
            },
            UnderloadConfig {
                profiles: vec![],
                ..c.clone()
            },
            UnderloadConfig {
                provider: "nope".into(),
                ..c.clone()
            },
            UnderloadConfig {
                mps: 1e6,
                seconds: 3600.0,
                ..c.clone()
            },
        ] {
            let e = bad.check().unwrap_err();
            assert_eq!(ivnsec_node::error::exit_code(&e), 2, "{bad:?}: {e}");
        }
    }

    /// `profiles` is typed where the table is read: an unknown profile fails there, the error
    /// on the profile itself (its key `profiles[1]` for the plan's message); known ones are the
    /// typed profiles under the names the table spells.
    #[test]
    fn profiles_are_typed_when_read() {
        let text = "profiles = [\"plain\", \"aes999-gcm\"]\n";
        let e = toml::from_str::<UnderloadConfig>(text).unwrap_err();
        assert_eq!(
            crate::experiment::text::toml_error(&e, text),
            "line 1, column 22: key `profiles[1]`: profile `aes999-gcm`: unknown suite (see \
             `ivnsec suites`)\n  | profiles = [\"plain\", \"aes999-gcm\"]"
        );
        let c: UnderloadConfig =
            toml::from_str("profiles = [\"hmac-sha256\", \"aes128-gcm/conf\"]\n").unwrap();
        let want: Vec<NamedProfile> = ["hmac-sha256", "aes128-gcm/conf"]
            .map(|p| p.parse().unwrap())
            .into();
        assert_eq!(c.profiles, want);
        assert_eq!(c.profiles[1].name(), "aes128-gcm/conf");
    }
}
