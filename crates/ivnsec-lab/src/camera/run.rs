//! The camera experiment's orchestration (seed 003 §F, Fig. 7): its configuration (the command
//! line builds it, a plan's `[[camera]]` table deserialises it), the testbed layout, and
//! [`run_camera`], which starts the consumer and the camera ECU as node processes for every camera
//! count × level, reads their reports and joins them into a [`CameraReport`].

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Child, ChildStdout};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{DirectionKeys, Ends as ChannelEnds};
use ivnsec_core::crypto::{AeadAlg, Primitive};
use ivnsec_core::sa::someip::{Level, suite_from_name};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::topology::{self, Topology};
use serde::{Deserialize, Serialize};

use super::node::{
    CameraEcuReport, CameraRole, CameraSpec, CaptureSpec, ConsumerReport, L2Spec, Stream,
    Transport, l2_profile, message_bytes,
};
use super::{
    CameraCpu, CameraReport, CameraResult, DEFAULT_DEADLINE_MS, DEFAULT_FPS, DEFAULT_FRAME_BYTES,
    Phase, SEED_CAMERAS, frames_per_camera,
};
use crate::cpu::{ProcessCpu, SystemSampler};
use crate::hosts::Remote;
use crate::process::{Place, Reaper, child_stderr, spawn_role_at};
use crate::site::{Layout, Site, link_spec, testbed_node};
use ivnsec_node::channel::random_keys;
use ivnsec_node::error::usage;

/// Most cameras one run simulates.
pub const MAX_CAMERAS: usize = 32;
/// Largest frame (the TCP deframer and TP reassembler hold two per camera).
pub const MAX_FRAME_BYTES: usize = 4 << 20;
/// Smallest frame: the time stamps and some image.
pub const MIN_FRAME_BYTES: usize = 64;
/// SOME/IP service ID of camera 1; camera `i` is `CAMERA_SERVICE_BASE + i`.
pub const CAMERA_SERVICE_BASE: u16 = 0x4300;

fn default_cameras() -> Vec<usize> {
    SEED_CAMERAS.to_vec()
}
fn default_fps() -> u32 {
    DEFAULT_FPS
}
fn default_frame_bytes() -> usize {
    DEFAULT_FRAME_BYTES
}
fn default_levels() -> Vec<String> {
    Level::ALL.iter().map(|l| l.name().to_string()).collect()
}
fn default_suite() -> String {
    "aes128-gcm".into()
}
fn default_seconds() -> f64 {
    5.0
}
fn default_deadline() -> f64 {
    DEFAULT_DEADLINE_MS
}
fn default_provider() -> String {
    "auto".into()
}

/// One camera experiment: every camera count × every level, over one transport. The command
/// line builds it; a plan section deserialises it (every key optional, unknown keys refused):
///
/// ```toml
/// cameras = [2, 4, 8, 12, 16]   # one run per count (1..=32)
/// fps = 60                      # 1..=240
/// frame_bytes = 43520           # 64..=4194304 (42.5 KiB: 21 Mb/s at 60 fps)
/// levels = ["nosec", "conf"]    # nosec | auth | conf; nosec runs first per count
/// suite = "aes128-gcm"          # aes128-gcm | aes256-gcm | aes128-ccm | aes256-ccm | chacha20-poly1305
/// transport = "tcp"             # tcp | udp-tp | l2
/// seconds = 5.0                 # frames per camera = seconds × fps
/// deadline_ms = 16.0
/// phase = "spread"              # spread | aligned
/// provider = "auto"             # auto | portable | fast
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    #[serde(default = "default_cameras")]
    pub cameras: Vec<usize>,
    #[serde(default = "default_fps")]
    pub fps: u32,
    #[serde(default = "default_frame_bytes")]
    pub frame_bytes: usize,
    #[serde(default = "default_levels")]
    pub levels: Vec<String>,
    #[serde(default = "default_suite")]
    pub suite: String,
    #[serde(default)]
    pub transport: Transport,
    #[serde(default = "default_seconds")]
    pub seconds: f64,
    #[serde(default = "default_deadline")]
    pub deadline_ms: f64,
    #[serde(default)]
    pub phase: Phase,
    #[serde(default = "default_provider")]
    pub provider: String,
}

impl Default for CameraConfig {
    /// Seed 003 §F: 2, 4, 8, 12, 16 cameras × 60 fps × 42.5 KiB over TCP, every level,
    /// AES-128-GCM, 16 ms.
    fn default() -> Self {
        CameraConfig {
            cameras: default_cameras(),
            fps: default_fps(),
            frame_bytes: default_frame_bytes(),
            levels: default_levels(),
            suite: default_suite(),
            transport: Transport::default(),
            seconds: default_seconds(),
            deadline_ms: default_deadline(),
            phase: Phase::default(),
            provider: default_provider(),
        }
    }
}

impl CameraConfig {
    /// Checks every field; the errors are usage errors (exit 2) naming the field.
    pub fn check(&self) -> Result<()> {
        if self.cameras.is_empty() {
            return Err(usage("cameras: give at least one camera count"));
        }
        if let Some(&c) = self.cameras.iter().find(|&&c| c == 0 || c > MAX_CAMERAS) {
            return Err(usage(format!(
                "cameras: each count must be from 1 to {MAX_CAMERAS}, got {c}"
            )));
        }
        if !(1..=240).contains(&self.fps) {
            return Err(usage(format!(
                "fps must be from 1 to 240, got {}",
                self.fps
            )));
        }
        if !(MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&self.frame_bytes) {
            return Err(usage(format!(
                "frame_bytes must be from {MIN_FRAME_BYTES} to {MAX_FRAME_BYTES}, got {}",
                self.frame_bytes
            )));
        }
        let levels = self.level_list()?;
        let alg = suite_from_name(&self.suite).ok_or_else(|| {
            usage(format!(
                "suite `{}`: expected aes128-gcm, aes256-gcm, aes128-ccm, aes256-ccm or chacha20-poly1305",
                self.suite
            ))
        })?;
        let provider: ProviderChoice = self
            .provider
            .parse()
            .map_err(|e: String| usage(format!("provider: {e}")))?;
        let needs = [Primitive::Aead(alg)];
        if levels.iter().any(|l| *l != Level::NoSec)
            && ivnsec_crypto::select_primitives(provider, &needs, &alg.name()).is_err()
        {
            return Err(usage(format!(
                "provider {provider} has no {}; use provider auto or portable",
                alg.name()
            )));
        }
        if !self.seconds.is_finite() || self.seconds <= 0.0 || self.seconds > 3600.0 {
            return Err(usage(format!(
                "seconds must be above 0 and at most 3600, got {}",
                self.seconds
            )));
        }
        if !self.deadline_ms.is_finite() || self.deadline_ms <= 0.0 || self.deadline_ms > 60_000.0 {
            return Err(usage(format!(
                "deadline_ms must be above 0 and at most 60000, got {}",
                self.deadline_ms
            )));
        }
        Ok(())
    }

    /// The levels to run, each once, in the order nosec, auth, conf.
    pub fn level_list(&self) -> Result<Vec<Level>> {
        if self.levels.is_empty() {
            return Err(usage("levels: give at least one of nosec, auth, conf"));
        }
        let mut v = Vec::new();
        for s in &self.levels {
            let l = Level::from_name(s.trim())
                .ok_or_else(|| usage(format!("level `{s}`: expected nosec, auth or conf")))?;
            v.push(l);
        }
        Ok(Level::ALL.into_iter().filter(|l| v.contains(l)).collect())
    }

    /// Frames each camera sends per run.
    pub fn frames_per_camera(&self) -> u64 {
        frames_per_camera(self.seconds, self.fps)
    }
}

/// The testbed the cameras run on: the camera ECU and the ADAS consumer on a switch.
pub fn layout() -> Layout {
    Layout {
        topology: Topology::Pair,
        initiator: "ecu1".into(),
        responder: "ecu2".into(),
    }
}

/// The camera ECU and the consumer: namespace (None on loopback), MAC, IPv4.
struct Ends {
    camera: (Option<String>, [u8; 6], Ipv4Addr),
    consumer: (Option<String>, [u8; 6], Ipv4Addr),
    /// Across hosts: the camera ECU's host and the consumer's.
    hosts: Option<(Arc<Remote>, Arc<Remote>)>,
    /// Across hosts: what the tx→rx delays were timed on (decided before the run), and
    /// whether the hosts are this machine (one clock).
    clocks: Option<(String, bool)>,
}

impl Ends {
    fn of(site: &Site) -> Result<Ends> {
        match site {
            Site::Testbed {
                state,
                initiator,
                responder,
            } => {
                let node = |name: &str| testbed_node(state, name);
                Ok(Ends {
                    camera: node(initiator)?,
                    consumer: node(responder)?,
                    hosts: None,
                    clocks: None,
                })
            }
            Site::Loopback => Ok(Ends {
                camera: (None, topology::ecu_mac(0, 1), Ipv4Addr::LOCALHOST),
                consumer: (None, topology::ecu_mac(0, 2), Ipv4Addr::LOCALHOST),
                hosts: None,
                clocks: None,
            }),
            Site::Hosts {
                initiator,
                responder,
            } => {
                // The verdict is a tx→rx delay: one machine, or PTP-synchronised clocks.
                let clocks = crate::clock_watch::one_way_clocks(
                    "the camera experiment",
                    &[&initiator.spec, &responder.spec],
                    crate::clock::DEFAULT_MAX_OFFSET_NS,
                )?;
                let ip = |h: &Remote| h.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
                Ok(Ends {
                    camera: (None, initiator.mac, ip(initiator)),
                    consumer: (None, responder.mac, ip(responder)),
                    hosts: Some((initiator.clone(), responder.clone())),
                    clocks: Some(clocks),
                })
            }
        }
    }

    /// Across hosts, a node's failure names both hosts (exit 3): a camera node failed there or
    /// its SSH connection was lost. Errors that already name a host, and usage errors, pass.
    fn node_error(&self, e: anyhow::Error) -> anyhow::Error {
        let Some((c, r)) = &self.hosts else { return e };
        if e.chain().any(|x| {
            x.is::<ivnsec_node::error::EnvError>() || x.is::<ivnsec_node::error::UsageError>()
        }) {
            return e;
        }
        ivnsec_node::error::env_error(format!(
            "{} (camera ECU) or {} (consumer): a camera node failed or its SSH connection was \
             lost: {e:#}",
            c.spec.label(),
            r.spec.label()
        ))
    }

    fn camera_place(&self) -> Place<'_> {
        match (&self.hosts, &self.camera.0) {
            (Some((c, _)), _) => Place::Host(c),
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

    /// The l2 link of the camera ECU (`camera`) or the consumer with `ends`.
    fn link(
        &self,
        family: ivnsec_core::profile::Profile,
        ends: &ChannelEnds,
        port: Option<u16>,
        camera: bool,
    ) -> ivnsec_net::link::LinkSpec {
        match &self.hosts {
            Some((c, r)) => crate::site::link_spec_on(
                if camera { &c.spec.iface } else { &r.spec.iface },
                family,
                ends,
            ),
            None => link_spec(self.camera.0.is_some(), family, ends, port),
        }
    }
}

/// An error of a node on a host names the host (exit 3).
fn on_host(place: &Place<'_>, e: anyhow::Error) -> anyhow::Error {
    match place {
        Place::Host(h) => h.node_error(e),
        _ => e,
    }
}

/// Runs every camera count × level of `cfg` on `site` (the initiator is the camera ECU, the
/// responder the consumer). With `pcap`, the first [`super::node::CAPTURE_FRAMES`]
/// frames of each run are written there. Errors: usage errors for a bad config (exit 2),
/// anything else when a node fails.
pub fn run_camera(site: &Site, cfg: &CameraConfig, pcap: Option<&Path>) -> Result<CameraReport> {
    cfg.check()?;
    let levels = cfg.level_list()?;
    let ends = Ends::of(site)?;
    if let Some((c, r)) = &ends.hosts {
        if pcap.is_some() {
            return Err(usage(
                "a capture (--pcap) is not taken across hosts: the camera ECU runs on another \
                 machine; capture there (tcpdump -i IFACE -w FILE)",
            ));
        }
        if cfg.transport != Transport::L2 && (c.ip.is_none() || r.ip.is_none()) {
            return Err(ivnsec_node::error::env_error(format!(
                "the {} transport needs an IPv4 address on the interfaces of both hosts ({} on \
                 {}, {} on {}); add them (ip addr add ADDRESS/PREFIX dev IFACE)",
                cfg.transport.name(),
                c.spec.iface,
                c.spec.name,
                r.spec.iface,
                r.spec.name
            )));
        }
    }
    let mut writer = match pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .map_err(|e| usage(format!("cannot create {}: {e}", p.display())))?,
        ),
        None => None,
    };
    let part = pcap
        .map(crate::site::part_path)
        .map(std::path::absolute)
        .transpose()?;
    // Across hosts the clocks are watched while the cameras run.
    let watch = match (&ends.hosts, &ends.clocks) {
        (Some((c, r)), Some((_, shared))) => Some(crate::clock_watch::ExperimentWatch::start(
            &[&c.spec, &r.spec],
            *shared,
        )),
        _ => None,
    };
    let mut results = Vec::new();
    // Interrupted (crate::interrupt): the runs that finished are reported, the one in progress
    // is left out, and nothing more runs.
    let stopped = crate::interrupt::requested;
    'counts: for &n in &cfg.cameras {
        let mut nosec_cpu: Option<CameraCpu> = None;
        for &level in &levels {
            if stopped() {
                break 'counts;
            }
            let mut r = match run_once(&ends, cfg, n, level, part.as_deref()) {
                Err(_) if stopped() => break 'counts,
                r => r.map_err(|e| ends.node_error(e))?,
            };
            if let (Some(w), Some(p)) = (writer.as_mut(), &part) {
                crate::site::append_pcap(w, p)?;
            }
            match (level, &nosec_cpu) {
                (Level::NoSec, _) => nosec_cpu = Some(r.cpu.clone()),
                (_, Some(base)) => r.cpu.increase_over_nosec = Some(r.cpu.increase_over(base)),
                _ => {}
            }
            results.push(r);
        }
    }
    if let Some(mut w) = writer {
        w.flush()?;
    }
    let (clock_during_run, clock_flag) = match watch.map(|w| w.finish()) {
        Some((d, f)) => (Some(d), f),
        None => (None, None),
    };
    Ok(CameraReport {
        clock_during_run,
        clock_flag,
        results,
        site: site_text(site, cfg.transport),
        clock: match &ends.clocks {
            Some((c, _)) => format!(
                "tx→rx delay = consumer's CLOCK_REALTIME after verify − camera ECU's \
                 CLOCK_REALTIME before protect, across hosts; {c}"
            ),
            None => "tx→rx delay = consumer's CLOCK_MONOTONIC after verify − camera ECU's \
                     CLOCK_MONOTONIC before protect; one clock shared by every namespace of the \
                     host (003 used PTP between two boards)"
                .into(),
        },
    })
}

fn site_text(site: &Site, t: Transport) -> String {
    let how = match t {
        Transport::Tcp => "secured SOME/IP over TCP, one connection per camera",
        Transport::UdpTp => "secured SOME/IP over UDP with SOME/IP-TP, one socket pair per camera",
        Transport::L2 => match site {
            Site::Testbed { .. } => {
                "SOME/IP in IVN-AE raw-Ethernet frames, fragments protected by one channel"
            }
            Site::Loopback | Site::Hosts { .. } => {
                "SOME/IP in IVN-AE frames (one per UDP datagram), fragments protected by one channel"
            }
        },
    };
    match site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => format!(
            "testbed {} ({}): camera ECU {initiator} → switch → consumer {responder}, {how}, \
             over veth and a Linux bridge",
            state.prefix, state.topology
        ),
        Site::Loopback => {
            format!("loopback: both ECUs on 127.0.0.1, {how}; not a vehicle-network path")
        }
        Site::Hosts { .. } => format!("{}; {how}", site.transport()),
    }
}

fn spawn(place: &Place<'_>, spec: &CameraSpec) -> Result<Child> {
    spawn_role_at(place, "camera", spec, "camera node").map_err(|e| on_host(place, e))
}

/// Reads a node's stdout lines in a thread, so the orchestrator can wait with a timeout.
fn lines(out: ChildStdout) -> mpsc::Receiver<std::io::Result<String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}

/// The next line with `tag`, its rest; an error naming `who` when the node ended or timed out.
fn expect_line(
    rx: &mpsc::Receiver<std::io::Result<String>>,
    tag: &str,
    timeout: Duration,
    who: &str,
) -> Result<String> {
    match rx.recv_timeout(timeout) {
        Ok(Ok(l)) => match l.strip_prefix(tag) {
            Some(rest) => Ok(rest.trim().to_string()),
            None => bail!("{who}: expected {tag}, got {l:?}"),
        },
        Ok(Err(e)) => bail!("{who}: reading its output: {e}"),
        Err(mpsc::RecvTimeoutError::Timeout) => bail!("{who}: no {tag} within {timeout:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => bail!("{who} ended without {tag}"),
    }
}

fn random_key(len: usize) -> Result<DirectionKeys> {
    let mut k = zeroize::Zeroizing::new(vec![0u8; len]);
    getrandom::fill(&mut k).map_err(|e| anyhow!("random key: {e}"))?;
    Ok(DirectionKeys::new(&k, &[], [0; 12]))
}

/// One run: `n` cameras at `level`.
fn run_once(
    ends: &Ends,
    cfg: &CameraConfig,
    n: usize,
    level: Level,
    pcap_part: Option<&Path>,
) -> Result<CameraResult> {
    let alg = suite_from_name(&cfg.suite).ok_or_else(|| usage("suite"))?;
    let frames = cfg.frames_per_camera();
    let provider: ProviderChoice = cfg.provider.parse().map_err(|e: String| usage(e))?;
    let streams: Vec<Stream> = (0..n)
        .map(|i| {
            Ok(Stream {
                service: CAMERA_SERVICE_BASE + 1 + i as u16,
                key: if level == Level::NoSec {
                    DirectionKeys::default()
                } else {
                    random_key(alg.key_len())?
                },
            })
        })
        .collect::<Result<_>>()?;
    let spec = |role, local_ip| CameraSpec {
        role,
        transport: cfg.transport,
        level: level.name().to_string(),
        suite: cfg.suite.clone(),
        provider,
        fps: cfg.fps,
        frame_bytes: cfg.frame_bytes,
        frames,
        phase: cfg.phase,
        streams: streams.clone(),
        local_ip,
        consumer_ip: ends.consumer.2,
        ports: Vec::new(),
        capture: None,
        l2: None,
        // Across hosts the delays are timed on the clock PTP disciplines.
        stamp_clock: if ends.hosts.is_some() {
            crate::clock_watch::StampClock::Realtime
        } else {
            crate::clock_watch::StampClock::Monotonic
        },
    };
    // l2: one IVN-AE channel (fresh keys) from the camera ECU to the consumer.
    let l2 = match cfg.transport {
        Transport::L2 => Some(l2_spec(ends, level, alg)?),
        _ => None,
    };
    let mut reaper = Reaper(Vec::new());
    let mut rx_spec = spec(CameraRole::Consumer, ends.consumer.2);
    rx_spec.l2 = l2.clone();
    let (cam_place, rx_place) = (ends.camera_place(), ends.consumer_place());
    let mut consumer = spawn(&rx_place, &rx_spec)?;
    let rx_lines = lines(consumer.stdout.take().expect("piped"));
    reaper.0.push(consumer);
    let ports = match expect_line(&rx_lines, "READY", Duration::from_secs(10), "the consumer") {
        Ok(p) => p,
        Err(e) => {
            let _ = reaper.0[0].kill();
            let err = child_stderr(&mut reaper.0[0]);
            return Err(on_host(&rx_place, e.context(err)));
        }
    };
    let ports: Vec<u16> = ports
        .split_ascii_whitespace()
        .map(|p| p.parse().map_err(|_| anyhow!("consumer: bad port {p:?}")))
        .collect::<Result<_>>()?;
    let mut cam_spec = spec(CameraRole::Cameras, ends.camera.2);
    cam_spec.l2 = l2.map(|s| L2Spec {
        link: ends.link(s.profile, &s.ends, ports.first().copied(), true),
        ..s
    });
    cam_spec.ports = ports;
    cam_spec.capture = pcap_part.map(|p| CaptureSpec {
        path: p.to_path_buf(),
        src_mac: ends.camera.1,
        dst_mac: ends.consumer.1,
    });
    let mut cams = spawn(&cam_place, &cam_spec)?;
    let tx_lines = lines(cams.stdout.take().expect("piped"));
    reaper.0.push(cams);
    if let Err(e) = expect_line(
        &tx_lines,
        "READY",
        Duration::from_secs(15),
        "the camera ECU",
    ) {
        return Err(reaper.fail(e));
    }
    let sampler = SystemSampler::start(Duration::from_secs(1));
    if let Some(stdin) = reaper.0[1].stdin.as_mut() {
        stdin.write_all(b"GO\n").and_then(|_| stdin.flush())?;
    }
    // The cameras need seconds × fps frame periods; give them that plus a generous margin.
    let run_time = Duration::from_secs_f64(frames as f64 / f64::from(cfg.fps));
    let budget = run_time * 3 + Duration::from_secs(30);
    let cam_report: CameraEcuReport =
        match expect_line(&tx_lines, "REPORT", budget, "the camera ECU")
            .and_then(|l| serde_json::from_str(&l).context("the camera ECU's report"))
        {
            Ok(r) => r,
            Err(e) => return Err(reaper.fail(e)),
        };
    let rx = consumer_report(&mut reaper, &rx_lines, cfg)?;
    let system = sampler.stop();
    drop(reaper.0[0].stdin.take());
    for c in &mut reaper.0 {
        let err = child_stderr(c);
        let st = c.wait()?;
        if !st.success() {
            bail!("a camera node failed ({st}): {err}");
        }
    }
    if rx.cameras.len() != n || cam_report.sent.len() != n {
        bail!(
            "the nodes reported {} and {} cameras, not {n}",
            cam_report.sent.len(),
            rx.cameras.len()
        );
    }

    Ok(result_of(
        cfg,
        n,
        level,
        alg,
        &streams,
        &cam_report,
        &rx,
        system,
    ))
}

/// The consumer's report: frames in flight get the deadline and a second to arrive; then the
/// consumer is told to stop (a TCP consumer ends by itself at the end of each stream, a UDP one
/// when every frame is in).
fn consumer_report(
    reaper: &mut Reaper,
    rx_lines: &mpsc::Receiver<std::io::Result<String>>,
    cfg: &CameraConfig,
) -> Result<ConsumerReport> {
    let grace = Duration::from_secs_f64(cfg.deadline_ms / 1e3) + Duration::from_secs(1);
    let rx_report = match rx_lines.recv_timeout(grace) {
        Ok(l) => Some(l),
        Err(mpsc::RecvTimeoutError::Timeout) => None,
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            return Err(reaper.fail(anyhow!("the consumer ended without REPORT")));
        }
    };
    let line = match rx_report {
        Some(Ok(l)) => l,
        Some(Err(e)) => return Err(reaper.fail(e.into())),
        None => {
            drop(reaper.0[0].stdin.take());
            match expect_line(rx_lines, "", Duration::from_secs(10), "the consumer") {
                Ok(l) => l,
                Err(e) => return Err(reaper.fail(e)),
            }
        }
    };
    let Some(json) = line.trim().strip_prefix("REPORT") else {
        return Err(reaper.fail(anyhow!("consumer: unexpected line {line:?}")));
    };
    serde_json::from_str(json.trim()).context("the consumer's report")
}

/// The IVN-AE channel (fresh keys) of `--transport l2` from the camera ECU to the consumer, its
/// link the consumer's (the cameras' is set once the consumer's port is known).
fn l2_spec(ends: &Ends, level: Level, alg: AeadAlg) -> Result<L2Spec> {
    let profile = l2_profile(level, alg);
    let ch_ends = ChannelEnds {
        local_mac: ends.camera.1,
        peer_mac: ends.consumer.1,
        local_ip: ends.camera.2,
        peer_ip: ends.consumer.2,
    };
    Ok(L2Spec {
        keys: random_keys(profile)?,
        link: ends.link(profile, &ch_ends.reversed(), None, false),
        profile,
        ends: ch_ends,
    })
}

/// One run's result from the two nodes' reports and the CPU seen meanwhile.
#[allow(clippy::too_many_arguments)]
fn result_of(
    cfg: &CameraConfig,
    n: usize,
    level: Level,
    alg: AeadAlg,
    streams: &[Stream],
    cam_report: &CameraEcuReport,
    rx: &ConsumerReport,
    system: crate::cpu::SystemCpu,
) -> CameraResult {
    let mut r = CameraResult {
        cameras: n,
        level: level.name().to_string(),
        suite: (level != Level::NoSec).then(|| alg.name().to_string()),
        transport: cfg.transport.name().to_string(),
        fps: cfg.fps,
        frame_bytes: cfg.frame_bytes,
        message_bytes: match cfg.transport {
            // The SOME/IP message travels unprotected; each fragment carries the protection.
            Transport::L2 => message_bytes(Level::NoSec, cfg.frame_bytes),
            _ => message_bytes(level, cfg.frame_bytes),
        },
        phase: cfg.phase,
        deadline_ms: cfg.deadline_ms,
        ..CameraResult::default()
    };
    let services: Vec<u16> = streams.iter().map(|s| s.service).collect();
    r.fill(
        &cam_report.sent,
        &rx.cameras,
        &services,
        cam_report.start_ns,
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let window = (r.seconds * 1e9) as u64;
    let tx_cpu = ProcessCpu {
        user_ns: cam_report.user_ns,
        sys_ns: cam_report.sys_ns,
        wall_ns: window,
    };
    let rx_cpu = ProcessCpu {
        user_ns: rx.user_ns,
        sys_ns: rx.sys_ns,
        wall_ns: window,
    };
    let bytes = |frames: u64| frames * cfg.frame_bytes as u64;
    r.cpu = CameraCpu {
        sender_pct: tx_cpu.pct_of_machine(cores),
        receiver_pct: rx_cpu.pct_of_machine(cores),
        system_pct: system.pct,
        cores,
        sender_ns_per_byte: tx_cpu.ns_per_byte(bytes(r.frames_sent)),
        receiver_ns_per_byte: rx_cpu.ns_per_byte(bytes(r.frames_received)),
        system_per_second_pct: system.per_interval_pct,
        increase_over_nosec: None,
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_node::error::exit_code;

    #[test]
    fn config_checks_are_usage_errors() {
        let ok = CameraConfig::default();
        ok.check().unwrap();
        assert_eq!(ok.frames_per_camera(), 300);
        let bad: Vec<(&str, CameraConfig)> = vec![
            (
                "cameras",
                CameraConfig {
                    cameras: vec![],
                    ..ok.clone()
                },
            ),
            (
                "cameras",
                CameraConfig {
                    cameras: vec![2, 0],
                    ..ok.clone()
                },
            ),
            (
                "cameras",
                CameraConfig {
                    cameras: vec![33],
                    ..ok.clone()
                },
            ),
            (
                "fps",
                CameraConfig {
                    fps: 0,
                    ..ok.clone()
                },
            ),
            (
                "frame_bytes",
                CameraConfig {
                    frame_bytes: 10,
                    ..ok.clone()
                },
            ),
            (
                "frame_bytes",
                CameraConfig {
                    frame_bytes: MAX_FRAME_BYTES + 1,
                    ..ok.clone()
                },
            ),
            (
                "level",
                CameraConfig {
                    levels: vec!["secret".into()],
                    ..ok.clone()
                },
            ),
            (
                "levels",
                CameraConfig {
                    levels: vec![],
                    ..ok.clone()
                },
            ),
            (
                "suite",
                CameraConfig {
                    suite: "aes128-cbc".into(),
                    ..ok.clone()
                },
            ),
            (
                "provider",
                CameraConfig {
                    provider: "quick".into(),
                    ..ok.clone()
                },
            ),
            // The fast provider has no CCM.
            (
                "provider",
                CameraConfig {
                    suite: "aes128-ccm".into(),
                    provider: "fast".into(),
                    ..ok.clone()
                },
            ),
            (
                "seconds",
                CameraConfig {
                    seconds: 0.0,
                    ..ok.clone()
                },
            ),
            (
                "seconds",
                CameraConfig {
                    seconds: f64::NAN,
                    ..ok.clone()
                },
            ),
            (
                "deadline_ms",
                CameraConfig {
                    deadline_ms: -1.0,
                    ..ok.clone()
                },
            ),
        ];
        for (field, c) in bad {
            let e = c.check().unwrap_err();
            assert_eq!(exit_code(&e), 2, "{field}: {e}");
            assert!(e.to_string().contains(field), "{field}: {e}");
        }
        // nosec alone does not need the suite from the provider.
        CameraConfig {
            levels: vec!["nosec".into()],
            suite: "aes128-ccm".into(),
            provider: "fast".into(),
            ..ok.clone()
        }
        .check()
        .unwrap();
    }

    #[test]
    fn levels_run_nosec_first_once() {
        let c = CameraConfig {
            levels: vec!["conf".into(), "nosec".into(), "conf".into()],
            ..CameraConfig::default()
        };
        assert_eq!(c.level_list().unwrap(), vec![Level::NoSec, Level::Conf]);
    }

    #[test]
    fn config_from_toml() {
        let c: CameraConfig = toml::from_str(
            "cameras = [4, 16]\nlevels = [\"conf\"]\ntransport = \"udp-tp\"\nphase = \"aligned\"\n",
        )
        .unwrap();
        assert_eq!(c.cameras, vec![4, 16]);
        assert_eq!(c.transport, Transport::UdpTp);
        assert_eq!(c.phase, Phase::Aligned);
        assert_eq!(c.fps, 60);
        assert_eq!(c.frame_bytes, 43_520);
        c.check().unwrap();
        let e = toml::from_str::<CameraConfig>("cameras = [4]\nspeed = 3\n").unwrap_err();
        assert!(e.to_string().contains("speed"), "{e}");
        assert!(toml::from_str::<CameraConfig>("transport = \"carrier-pigeon\"\n").is_err());
        assert_eq!(
            toml::from_str::<CameraConfig>("").unwrap(),
            CameraConfig::default()
        );
    }

    /// 003 §F: "21 Mbps per camera", "from 42 Mbps to 336 Mbps" for 2 to 16 cameras at 60 fps;
    /// the default frame (42.5 KiB) gives 20.9 Mb/s per camera, 41.8 to 334 Mb/s. A conf
    /// message adds the SOME/IP header (16) and the security fields (9 + 16) to the frame.
    #[test]
    fn seed_003_figures() {
        let c = CameraConfig::default();
        let per_camera = c.frame_bytes as f64 * 8.0 * f64::from(c.fps) / 1e6;
        assert!((per_camera - 20.8896).abs() < 1e-9);
        assert_eq!((2.0 * per_camera).round(), 42.0);
        assert_eq!((16.0 * per_camera).round(), 334.0);
        assert!(16.0 * per_camera < 1000.0, "fits 003's 1 Gb/s link");
        assert_eq!(message_bytes(Level::Conf, 43_520), 43_561);
        assert_eq!(message_bytes(Level::NoSec, 43_520), 43_536);
    }
}
