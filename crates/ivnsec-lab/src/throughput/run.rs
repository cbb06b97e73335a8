//! Runs the throughput experiment: goodput, frames/s, loss and CPU of one profile between N
//! sender processes and one receiver process (seed 002 §5.2.3 and testbench 1), next to the
//! theoretical maximum of the profile on the shaped link (002 §6.1.2) and, in the same run, the
//! `plain` profile and iperf3 UDP on the same path. `ivnsec throughput` and plans call it.

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::Ends;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::LinkSpec;
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::netns_command;
use ivnsec_net::topology::{self, Topology};
use serde_json::{Map, Value, json};

pub use super::config::{
    Config, DEFAULT_RX_COALESCE_US, MAX_RX_COALESCE_US, MAX_SENDERS, check_config,
    check_rx_coalesce,
};
use super::node::{Peer, TputRole, TputSpec};
use super::result::{GatewayCpu, Measured, read_receiver, read_sender, result_of};
use super::tcp::MAX_TCP_PAYLOAD;
use super::{ThroughputResult, theoretical_bps, wire_bytes};
use crate::cpu::SystemSampler;
use crate::hosts::Remote;
use crate::process::{Place, Reaper, child_stderr, spawn_role_at};
use crate::site::{Layout, Site, testbed_node};
use ivnsec_node::channel::{frame_bytes, random_keys};
use ivnsec_node::error::usage;

/// The iperf3 baseline's UDP payload: 1500 − 20 (IPv4) − 8 (UDP), as seed 002 §6.1.2.
const IPERF3_LEN: usize = 1472;
/// Port of the iperf3 server.
const IPERF3_PORT: u16 = 5201;

/// Checks the profile and that its frame fits the MTU; returns the frame length.
pub fn check_fits(
    profile: &NamedProfile,
    provider: ProviderChoice,
    payload: usize,
) -> Result<usize> {
    let frame = frame_bytes(profile.profile(), provider, payload)?;
    let l2 = frame - 14;
    let mtu = topology::MTU as usize;
    if l2 > mtu {
        return Err(usage(format!(
            "--payload {payload}: the {profile} frame carries {l2} bytes after the Ethernet \
             header, more than the {mtu}-byte MTU; use a payload of at most {} bytes",
            payload.saturating_sub(l2 - mtu)
        )));
    }
    Ok(frame)
}

/// Checks that `profile` can run over TCP (a secured SOME/IP profile, `someip-…`) with
/// `payload`-byte payloads (at most [`MAX_TCP_PAYLOAD`]); returns the protected message length.
/// No MTU applies: the kernel cuts the stream into segments.
pub fn check_tcp(
    profile: &NamedProfile,
    provider: ProviderChoice,
    payload: usize,
) -> Result<usize> {
    let family = profile.profile();
    if !matches!(family, Profile::Someip(_)) {
        return Err(usage(format!(
            "--tcp carries secured SOME/IP messages: {profile} is not a someip-… profile \
             (someip-nosec, someip-SUITE/auth, someip-SUITE/conf)"
        )));
    }
    if payload > MAX_TCP_PAYLOAD {
        return Err(usage(format!(
            "--payload {payload}: over TCP a message carries at most {MAX_TCP_PAYLOAD} bytes"
        )));
    }
    Ok(frame_bytes(family, provider, payload)? - ivnsec_core::channel::UDP_AT)
}

/// [`check_tcp`] for TCP runs, [`check_fits`] for the others.
pub fn check_profile(profile: &NamedProfile, cfg: &Config) -> Result<usize> {
    if cfg.tcp {
        check_tcp(profile, cfg.provider, cfg.payload)
    } else {
        check_fits(profile, cfg.provider, cfg.payload)
    }
}

/// The testbed a throughput run needs: N sensors and a consumer on one switch (002 testbench 1).
pub fn layout(senders: usize) -> Layout {
    Layout {
        topology: Topology::Sensors(senders as u16),
        initiator: "sensor1".into(),
        responder: "consumer".into(),
    }
}

/// Runs each of `profiles` with `cfg` on `site`, in order, and returns one result per profile.
/// With `baseline`, the `plain` profile runs first (once, also when listed) and iperf3 UDP runs
/// once on the same path; every protected result carries both under `baseline` and its CPU
/// increase over plain. With `pcap`, each profile's first frames are appended to that capture.
pub fn run_set(
    site: &Site,
    cfg: &Config,
    profiles: &[NamedProfile],
    baseline: bool,
    pcap: Option<&Path>,
) -> Result<Vec<ThroughputResult>> {
    for p in profiles {
        check_profile(p, cfg)?;
    }
    if cfg.tcp && pcap.is_some() {
        return Err(usage(
            "--pcap records datagram runs; a TCP run's segments are the kernel's: capture them \
             with tcpdump on the testbed instead",
        ));
    }
    if cfg.tcp && matches!(site, Site::Hosts { .. }) {
        return Err(usage(
            "--tcp runs on the testbed or loopback only; across SSH hosts throughput measures \
             datagram runs (drop --tcp, or run it on a testbed)",
        ));
    }
    let nodes = Nodes::of(site, cfg.senders)?;
    let mut capture = match pcap {
        Some(p) if profiles.len() > 1 => Some((
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
            crate::site::part_path(p),
        )),
        _ => None,
    };
    let mut run = |profile: &NamedProfile| -> Result<ThroughputResult> {
        let part = match &capture {
            Some((_, part)) => Some(part.as_path()),
            None => pcap,
        };
        let r = run_once(site, &nodes, profile, cfg, part)
            .with_context(|| format!("throughput of {profile}"))?;
        if let Some((w, part)) = capture.as_mut() {
            crate::site::append_pcap(w, part)?;
        }
        Ok(r)
    };
    // Over TCP the unprotected reference is `someip-nosec` (listed in the group) and iperf3
    // TCP: `plain` frames have no TCP form.
    // Interrupted (crate::interrupt): the runs that finished are returned, the one in progress
    // is left out, and nothing more runs.
    let stopped = crate::interrupt::requested;
    let needs_plain = baseline && !cfg.tcp && profiles.iter().any(|p| p != "plain");
    let plain = if needs_plain && !stopped() {
        eprintln!("ivnsec throughput: baseline run with `plain` first");
        match run(&NamedProfile::from(Profile::PLAIN)) {
            Err(_) if stopped() => None,
            r => Some(r?),
        }
    } else {
        None
    };
    let mut results = Vec::with_capacity(profiles.len());
    for p in profiles {
        if stopped() {
            break;
        }
        let r = match &plain {
            Some(plain) if p == "plain" => plain.clone(),
            _ => match run(p) {
                Err(_) if stopped() => break,
                r => r?,
            },
        };
        results.push(r);
    }
    if let Some((mut w, _)) = capture {
        w.flush()?;
    }
    if stopped() {
        // What was measured: the plain baseline run too when it was not one of `profiles`.
        if let Some(plain) = plain.filter(|_| !profiles.iter().any(|p| p == "plain")) {
            results.insert(0, plain);
        }
        return Ok(results);
    }
    let iperf3 = if baseline {
        iperf3_baseline(site, &nodes, cfg)
    } else {
        None
    };
    for r in &mut results {
        if let Some(p) = plain.as_ref().filter(|_| r.profile != "plain") {
            r.cpu.increase_over_plain = Some(r.cpu.increase_over(&p.cpu));
            r.baseline.insert(
                "plain".into(),
                json!({
                    "goodput_mbps": p.goodput_mbps,
                    "frames_per_s": p.frames_per_s,
                    "loss": p.loss,
                    "theoretical_mbps": p.theoretical_mbps,
                    "efficiency": p.efficiency,
                    "cpu": p.cpu,
                    "ratio": ratio(r.goodput_mbps, p.goodput_mbps),
                }),
            );
        }
        if let Some(mut v) = iperf3.clone() {
            with_ratios(&mut v, r);
            r.baseline.insert("iperf3".into(), v);
        }
    }
    Ok(results)
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Who sends and who receives, and their addresses.
struct Nodes {
    /// Receiver: namespace (None on loopback), MAC, IPv4.
    receiver: (Option<String>, [u8; 6], Ipv4Addr),
    senders: Vec<(Option<String>, [u8; 6], Ipv4Addr)>,
    names: Vec<String>,
    /// Across hosts: the sender's host and the receiver's.
    hosts: Option<(Arc<Remote>, Arc<Remote>)>,
}

impl Nodes {
    /// Where the receiver runs.
    fn rx_place(&self) -> Place<'_> {
        match (&self.hosts, &self.receiver.0) {
            (Some((_, r)), _) => Place::Host(r),
            (None, Some(ns)) => Place::Namespace(ns),
            (None, None) => Place::Here,
        }
    }

    /// Where sender `i` runs.
    fn tx_place(&self, i: usize) -> Place<'_> {
        match (&self.hosts, self.senders.get(i).and_then(|s| s.0.as_ref())) {
            (Some((s, _)), _) => Place::Host(s),
            (None, Some(ns)) => Place::Namespace(ns),
            (None, None) => Place::Here,
        }
    }

    /// The interfaces of the receiver and the senders.
    fn ifaces(&self) -> (&str, &str) {
        match &self.hosts {
            Some((s, r)) => (&r.spec.iface, &s.spec.iface),
            None => (topology::ECU_IF, topology::ECU_IF),
        }
    }

    /// A node's failure, naming its host across hosts (exit 3).
    fn on_host(&self, place: &Place<'_>, e: anyhow::Error) -> anyhow::Error {
        match place {
            Place::Host(h) => h.node_error(e),
            _ => e,
        }
    }
}

impl Nodes {
    fn of(site: &Site, n: usize) -> Result<Nodes> {
        match site {
            Site::Testbed { state, .. } => {
                let ecus: Vec<String> = state.ecus().map(|e| e.name.clone()).collect();
                let rx = if ecus.iter().any(|e| e == "consumer") {
                    "consumer".to_string()
                } else {
                    ecus.last().cloned().unwrap_or_default()
                };
                let tx: Vec<String> = ecus.iter().filter(|e| **e != rx).take(n).cloned().collect();
                if tx.len() < n {
                    return Err(usage(format!(
                        "testbed {} has {} ECUs besides the receiver {rx}; --senders {n} needs {n}",
                        state.prefix,
                        tx.len()
                    )));
                }
                let node = |name: &str| testbed_node(state, name);
                Ok(Nodes {
                    receiver: node(&rx)?,
                    senders: tx.iter().map(|s| node(s)).collect::<Result<_>>()?,
                    names: tx,
                    hosts: None,
                })
            }
            Site::Hosts {
                initiator,
                responder,
            } => {
                if n != 1 {
                    return Err(usage(format!(
                        "across hosts the throughput has one sender (the plan's initiator host \
                         {}); {n} senders asked",
                        initiator.spec.name
                    )));
                }
                let ip = |h: &Remote| h.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
                Ok(Nodes {
                    receiver: (None, responder.mac, ip(responder)),
                    senders: vec![(None, initiator.mac, ip(initiator))],
                    names: vec![initiator.spec.name.clone()],
                    hosts: Some((initiator.clone(), responder.clone())),
                })
            }
            Site::Loopback => Ok(Nodes {
                receiver: (None, topology::ecu_mac(0, 1), Ipv4Addr::LOCALHOST),
                senders: (0..n)
                    .map(|i| (None, topology::ecu_mac(1, i as u8 + 1), Ipv4Addr::LOCALHOST))
                    .collect(),
                names: (1..=n).map(|i| format!("sensor{i}")).collect(),
                hosts: None,
            }),
        }
    }
}

fn spawn(place: &Place<'_>, spec: &TputSpec) -> Result<Child> {
    spawn_role_at(place, "throughput", spec, "throughput node")
}

/// One run of `profile`: starts the receiver, then every sender, starts them together, and
/// joins their reports.
fn run_once(
    site: &Site,
    nodes: &Nodes,
    profile: &NamedProfile,
    cfg: &Config,
    pcap: Option<&std::path::Path>,
) -> Result<ThroughputResult> {
    let frame = check_profile(profile, cfg)?;
    let family = profile.profile();
    let testbed = matches!(site, Site::Testbed { .. } | Site::Hosts { .. });
    if nodes.hosts.is_some() && pcap.is_some() {
        return Err(usage(
            "a capture (--pcap) is not taken across hosts: the sender runs on another machine; \
             capture there (tcpdump -i IFACE -w FILE)",
        ));
    }
    if let Some((s, r)) = &nodes.hosts
        && (family.is_ip() || family.is_udp())
        && (s.ip.is_none() || r.ip.is_none())
    {
        return Err(ivnsec_node::error::env_error(format!(
            "{profile} needs an IPv4 address on the interfaces of both hosts ({} on {}, {} on \
             {}); add them (ip addr add ADDRESS/PREFIX dev IFACE)",
            s.spec.iface, s.spec.name, r.spec.iface, r.spec.name
        )));
    }
    let (rx_if, tx_if) = nodes.ifaces();
    let (_, rx_mac, rx_ip) = nodes.receiver.clone();
    let peers: Vec<Peer> = nodes
        .senders
        .iter()
        .map(|(_, mac, ip)| {
            Ok(Peer {
                keys: random_keys(family)?,
                ends: Ends {
                    local_mac: *mac,
                    peer_mac: rx_mac,
                    local_ip: *ip,
                    peer_ip: rx_ip,
                },
            })
        })
        .collect::<Result<_>>()?;
    let link = |to: Option<u16>| link_spec(family, testbed, (rx_if, tx_if), rx_ip, to);
    let spec = |role, link, pcap: Option<PathBuf>| TputSpec {
        role,
        profile: family,
        provider: cfg.provider,
        payload: cfg.payload,
        seconds_ns: cfg.seconds_ns,
        rate_bps: cfg.rate_bps,
        batch: cfg.batch,
        link,
        peers: peers.clone(),
        pcap,
        tcp: cfg.tcp,
        rx_coalesce_us: cfg.rx_coalesce_us,
    };
    let mut reaper = Reaper(Vec::new());
    let rx_place = nodes.rx_place();
    let (receiver, mut rx_out, port) = start_receiver(
        nodes,
        &rx_place,
        &spec(TputRole::Receiver, link(None), None),
    )?;
    reaper.0.push(receiver);
    let pcap = pcap.map(std::path::absolute).transpose()?;
    let mut outs = Vec::new();
    for i in 0..nodes.senders.len() {
        let s = spec(
            TputRole::Sender { index: i },
            link(Some(port)),
            if i == 0 { pcap.clone() } else { None },
        );
        let place = nodes.tx_place(i);
        let mut c = spawn(&place, &s).map_err(|e| nodes.on_host(&place, e))?;
        outs.push(c.stdout.take().expect("piped"));
        reaper.0.push(c);
    }
    // Give every sender time to open its socket, then start them together.
    std::thread::sleep(Duration::from_millis(100));
    let sampler = SystemSampler::start(Duration::from_secs(1));
    // Bump-in-the-wire gateways on the path: their CPU over the same window.
    let gateways = GatewayCpu::start(site);
    for c in reaper.0.iter_mut().skip(1) {
        if let Some(stdin) = c.stdin.as_mut() {
            let _ = stdin.write_all(b"GO\n").and_then(|_| stdin.flush());
        }
    }
    let readers: Vec<_> = outs
        .into_iter()
        .map(|o| std::thread::spawn(move || read_sender(o)))
        .collect();
    let mut sent_lines = Vec::new();
    let mut failure = None;
    for (i, h) in readers.into_iter().enumerate() {
        match h.join().map_err(|_| anyhow!("reader thread panicked"))? {
            Ok(s) => sent_lines.push(s),
            Err(e) => {
                let err = child_stderr(&mut reaper.0[i + 1]);
                let e = e.context(format!("sender {}: {err}", i + 1));
                failure.get_or_insert(nodes.on_host(&nodes.tx_place(i), e));
            }
        }
    }
    let system = sampler.stop();
    let gateway_cpu = gateways.stop();
    // Frames still in flight (socket buffers, the bridge) get a moment to arrive.
    std::thread::sleep(Duration::from_millis(300));
    drop(reaper.0[0].stdin.take());
    let recv = read_receiver(&mut rx_out, peers.len());
    if let Some(e) = failure {
        return Err(e);
    }
    let recv = match recv {
        Ok(r) => r,
        Err(e) => {
            let err = child_stderr(&mut reaper.0[0]);
            return Err(nodes.on_host(&rx_place, e.context(format!("receiver: {err}"))));
        }
    };
    for c in &mut reaper.0 {
        let err = child_stderr(c);
        let st = c.wait()?;
        if !st.success() {
            if let Some((s, _)) = &nodes.hosts {
                return Err(s.node_error(anyhow!("a throughput node failed ({st}): {err}")));
            }
            bail!("a throughput node failed ({st}): {err}");
        }
    }

    Ok(result_of(
        site,
        &nodes.names,
        profile,
        cfg,
        frame,
        peers.len(),
        Measured {
            sent_lines,
            recv,
            system,
            on_gateways: !gateways.gateways.is_empty(),
            gateway_cpu,
        },
    ))
}

/// Starts the receiver at `place` and waits for its `READY PORT` line: the receiver, its
/// output, the port the senders send to.
fn start_receiver(
    nodes: &Nodes,
    place: &Place,
    spec: &TputSpec,
) -> Result<(Child, BufReader<ChildStdout>, u16)> {
    let mut receiver = spawn(place, spec).map_err(|e| nodes.on_host(place, e))?;
    let mut rx_out = BufReader::new(receiver.stdout.take().expect("piped"));
    let mut line = String::new();
    rx_out.read_line(&mut line)?;
    let port: u16 = match line
        .trim()
        .strip_prefix("READY ")
        .and_then(|p| p.parse().ok())
    {
        Some(p) => p,
        None => {
            let _ = receiver.kill();
            let err = child_stderr(&mut receiver);
            let _ = receiver.wait();
            return Err(nodes.on_host(place, anyhow!("the receiver did not start: {err}")));
        }
    };
    Ok((receiver, rx_out, port))
}

/// The link a throughput node of `family` uses: the receiver's (`to` = None) or a sender's
/// towards the receiver's port `to`.
fn link_spec(
    family: Profile,
    testbed: bool,
    (rx_if, tx_if): (&str, &str),
    rx_ip: Ipv4Addr,
    to: Option<u16>,
) -> LinkSpec {
    let port = family.udp_port();
    match (testbed, family.is_ip()) {
        // UDP families on a testbed: every sender to the receiver's address and port.
        (true, _) if family.is_udp() => LinkSpec::Udp {
            local: SocketAddr::new(
                IpAddr::V4(if to.is_some() {
                    Ipv4Addr::UNSPECIFIED
                } else {
                    rx_ip
                }),
                if to.is_some() { 0 } else { port },
            ),
            peer: to.map(|_| SocketAddr::new(IpAddr::V4(rx_ip), port)),
        },
        (true, false) => LinkSpec::Raw {
            ifname: if to.is_some() { tx_if } else { rx_if }.to_string(),
            ethertype: family.ethertype(),
        },
        // ESP on a testbed: the senders write whole frames (Ethernet ‖ IPv4 ‖ ESP) on a raw
        // Ethernet link, past their IP layer; the receiver takes them through its IP layer.
        (true, true) if to.is_some() => LinkSpec::Raw {
            ifname: tx_if.to_string(),
            ethertype: ivnsec_core::profile::ETHERTYPE_IPV4,
        },
        (true, true) => LinkSpec::RawIp {
            protocol: ivnsec_core::wire::ip::protocol::ESP,
            peer: rx_ip,
        },
        (false, _) => LinkSpec::Udp {
            local: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            peer: to.map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p)),
        },
    }
}

/// iperf3 UDP from every sender to the receiver at once (one stream per sender, as our
/// senders run): unshaped (`-b 0`) and, with --rate, at the goodput a 1472-byte datagram allows
/// on the shaped link (iperf3's -b counts UDP payload bits, not wire bytes). Goodputs are summed
/// over the streams. `None` when iperf3 is missing or fails (with a note on stderr).
fn iperf3_baseline(site: &Site, nodes: &Nodes, cfg: &Config) -> Option<Value> {
    if nodes.hosts.is_some() {
        eprintln!(
            "ivnsec throughput: no iperf3 baseline across hosts (run iperf3 -s on the receiver's \
             host and iperf3 -u -c on the sender's by hand)"
        );
        return None;
    }
    if !crate::site::baseline_tool_installed("throughput", "iperf3") {
        return None;
    }
    if cfg.tcp {
        return iperf3_tcp_baseline(site, nodes, cfg);
    }
    let secs = (cfg.seconds_ns as f64 / 1e9).ceil().max(1.0) as u64;
    let mut m = Map::new();
    let mut rates = vec![("unlimited", "0".to_string())];
    if let Some(r) = cfg.rate_bps {
        // The goodput of 1472-byte UDP payloads on the shaped wire: 1472 / 1538 × rate.
        let b = theoretical_bps(IPERF3_LEN, 14 + 20 + 8 + IPERF3_LEN, r).floor() as u64;
        rates.push(("shaped", b.to_string()));
    }
    for (key, b) in rates {
        match iperf3_streams(site, nodes, secs, &b, None) {
            Ok(mut v) => {
                if let (Value::Object(o), "shaped", Some(rate)) = (&mut v, key, cfg.rate_bps) {
                    o.insert(
                        "theoretical_mbps".into(),
                        json!(
                            theoretical_bps(IPERF3_LEN, 14 + 28 + IPERF3_LEN, rate)
                                * nodes.senders.len() as f64
                                / 1e6
                        ),
                    );
                }
                m.insert(key.into(), v);
            }
            Err(_) if crate::interrupt::requested() => return None,
            Err(e) => {
                eprintln!("ivnsec throughput: iperf3 ({key}): {e:#}; no baseline for it");
            }
        }
    }
    m.insert(
        "note".into(),
        json!(format!(
            "iperf3 UDP ({IPERF3_LEN}-byte datagrams), one stream from each of the {} sender(s) \
             to the receiver at once, on the same path; goodput summed over the streams; \
             `ratio` = our goodput / iperf3's received goodput; wire bytes per iperf3 datagram: {}",
            nodes.senders.len(),
            wire_bytes(14 + 28 + IPERF3_LEN)
        )),
    );
    (m.len() > 1).then_some(Value::Object(m))
}

/// iperf3 TCP from every sender to the receiver at once, writes of the run's payload size (`-l`,
/// as our senders write one message at a time), unshaped and, with --rate, at the goodput
/// full-MSS segments allow on the shaped link. As [`iperf3_baseline`] otherwise.
fn iperf3_tcp_baseline(site: &Site, nodes: &Nodes, cfg: &Config) -> Option<Value> {
    let secs = (cfg.seconds_ns as f64 / 1e9).ceil().max(1.0) as u64;
    let segment = super::TCP_SEGMENT_HEADERS + super::TCP_MSS;
    let mut m = Map::new();
    let mut rates = vec![("unlimited", "0".to_string())];
    if let Some(r) = cfg.rate_bps {
        let b = theoretical_bps(super::TCP_MSS, segment, r).floor() as u64;
        rates.push(("shaped", b.to_string()));
    }
    for (key, b) in rates {
        match iperf3_streams(site, nodes, secs, &b, Some(cfg.payload)) {
            Ok(mut v) => {
                if let (Value::Object(o), "shaped", Some(rate)) = (&mut v, key, cfg.rate_bps) {
                    o.insert(
                        "theoretical_mbps".into(),
                        json!(
                            theoretical_bps(super::TCP_MSS, segment, rate)
                                * nodes.senders.len() as f64
                                / 1e6
                        ),
                    );
                }
                m.insert(key.into(), v);
            }
            Err(_) if crate::interrupt::requested() => return None,
            Err(e) => {
                eprintln!("ivnsec throughput: iperf3 TCP ({key}): {e:#}; no baseline for it");
            }
        }
    }
    m.insert(
        "note".into(),
        json!(format!(
            "iperf3 TCP ({}-byte writes), one connection from each of the {} sender(s) to the \
             receiver at once, on the same path; goodput summed over the streams; `ratio` = our \
             goodput / iperf3's received goodput; `system_pct`: the machine's busy % during \
             iperf3 (/proc/stat), `sender_pct`/`receiver_pct`: iperf3's own client and server \
             CPU as % of the machine; `ns_per_byte`/`ours_ns_per_byte`: CPU ns per payload \
             byte, both ends together; `cost_ratio` = iperf3's / ours, the goodput ratio equal \
             CPU time would give (steadier than `ratio` on a shared machine)",
            cfg.payload,
            nodes.senders.len(),
        )),
    );
    m.insert("transport".into(), json!("tcp"));
    (m.len() > 2).then_some(Value::Object(m))
}

/// Puts `ours` and `ratio` (our goodput / iperf3's) into each rate of an iperf3 baseline, and
/// the CPU each side spent per payload byte: `ns_per_byte` (iperf3's client and server
/// together), `ours_ns_per_byte` (our senders and receiver together) and `cost_ratio` =
/// `ns_per_byte` / `ours_ns_per_byte`, the goodput ratio the two would reach on the same CPU
/// time. On a machine whose CPU is shared (other jobs taking a share that changes from second
/// to second), `ratio` moves with what each run was given; `cost_ratio` does not.
fn with_ratios(v: &mut Value, ours: &ThroughputResult) {
    let c = &ours.cpu;
    let ours_cost = c
        .sender_ns_per_byte
        .zip(c.receiver_ns_per_byte)
        .map(|(s, r)| s + r);
    for key in ["unlimited", "shaped"] {
        if let Some(Value::Object(o)) = v.get_mut(key) {
            let num = |k: &str| o.get(k).and_then(Value::as_f64);
            let theirs = num("goodput_mbps").unwrap_or(0.0);
            let cost = iperf3_ns_per_byte(num("sender_pct"), num("receiver_pct"), c.cores, theirs);
            o.insert("ours_mbps".into(), json!(ours.goodput_mbps));
            o.insert("ratio".into(), json!(ratio(ours.goodput_mbps, theirs)));
            o.insert("ns_per_byte".into(), json!(cost));
            o.insert("ours_ns_per_byte".into(), json!(ours_cost));
            let cost_ratio = cost.zip(ours_cost).and_then(|(t, u)| ratio(t, u));
            o.insert("cost_ratio".into(), json!(cost_ratio));
        }
    }
}

/// CPU ns per payload byte of an iperf3 run: its client's and server's CPU (`sender_pct`,
/// `receiver_pct`: % of a machine of `cores` cores, as [`iperf3_streams`] gives them) over
/// its goodput. `None` without CPU figures or without goodput.
fn iperf3_ns_per_byte(
    sender_pct: Option<f64>,
    receiver_pct: Option<f64>,
    cores: usize,
    goodput_mbps: f64,
) -> Option<f64> {
    let busy_cores = (sender_pct? + receiver_pct?) / 100.0 * cores as f64;
    let bytes_per_s = goodput_mbps * 1e6 / 8.0;
    (bytes_per_s > 0.0 && cores > 0).then(|| busy_cores * 1e9 / bytes_per_s)
}

/// One iperf3 server per sender (ports 5201, 5202, …) in the receiver's namespace, then every
/// client at once; the figures of the streams summed.
/// `tcp_len`: TCP with writes of that many bytes; `None`: UDP with 1472-byte datagrams.
fn iperf3_streams(
    site: &Site,
    nodes: &Nodes,
    secs: u64,
    bandwidth: &str,
    tcp_len: Option<usize>,
) -> Result<Value> {
    let (rx_ns, _, rx_ip) = &nodes.receiver;
    let cmd = |ns: &Option<String>| match ns {
        Some(ns) => netns_command(ns, "iperf3"),
        None => Command::new("iperf3"),
    };
    let server_ip = match site {
        Site::Testbed { .. } | Site::Hosts { .. } => rx_ip.to_string(),
        Site::Loopback => "127.0.0.1".to_string(),
    };
    // A testbed's namespaces have their ports to themselves; loopback is shared with whatever
    // else runs on the host, so there the kernel picks free ports (all held until all are
    // picked, so they differ).
    let ports: Vec<String> = match site {
        Site::Testbed { .. } | Site::Hosts { .. } => (0..nodes.senders.len())
            .map(|i| (IPERF3_PORT + i as u16).to_string())
            .collect(),
        Site::Loopback => {
            let held = (0..nodes.senders.len())
                .map(|_| std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
                .collect::<std::io::Result<Vec<_>>>()
                .context("finding free ports for iperf3")?;
            held.iter()
                .map(|l| l.local_addr().map(|a| a.port().to_string()))
                .collect::<std::io::Result<_>>()?
        }
    };
    let mut reaper = Reaper(Vec::new());
    for port in &ports {
        let server = crate::interrupt::spawn(
            die_with_parent(&mut cmd(rx_ns))
                .args(["-s", "-1", "-B", &server_ip, "-p", port])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        )
        .context("starting an iperf3 server")?;
        reaper.0.push(server);
    }
    std::thread::sleep(Duration::from_millis(300));
    let len = tcp_len.unwrap_or(IPERF3_LEN).to_string();
    let t = secs.to_string();
    let args = |port: &str| -> Vec<String> {
        [
            "-c", &server_ip, "-p", port, "-u", "-b", bandwidth, "-l", &len, "-t", &t, "-J",
        ]
        .iter()
        .filter(|a| tcp_len.is_none() || **a != "-u")
        .map(|s| s.to_string())
        .collect()
    };
    let sampler = SystemSampler::start(Duration::from_secs(1));
    let clients = nodes
        .senders
        .iter()
        .zip(&ports)
        .map(|((ns, _, _), port)| {
            crate::interrupt::spawn(
                die_with_parent(&mut cmd(ns))
                    .args(args(port))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped()),
            )
            .context("starting an iperf3 client")
        })
        .collect::<Result<Vec<Child>>>()?;
    let mut streams = Vec::new();
    for c in clients {
        let out = c.wait_with_output().context("running an iperf3 client")?;
        streams.push(parse_iperf3(&out.stdout, &out.stderr));
    }
    let system = sampler.stop();
    for s in &mut reaper.0 {
        let _ = s.wait();
    }
    reaper.0.clear();
    let streams = streams.into_iter().collect::<Result<Vec<Value>>>()?;
    let sum = |k: &str| -> Option<f64> { streams.iter().map(|v| v[k].as_f64()).sum() };
    let packets: u64 = streams.iter().filter_map(|v| v["packets"].as_u64()).sum();
    let lost: u64 = streams
        .iter()
        .filter_map(|v| v["lost_packets"].as_u64())
        .sum();
    // iperf3 reports its CPU as % of one core; ours are % of the machine.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let cpu = |k: &str| -> Option<f64> {
        streams
            .iter()
            .map(|v| v["cpu_utilization_percent"][k].as_f64())
            .sum::<Option<f64>>()
            .map(|p| p / cores)
    };
    Ok(json!({
        "command": format!("iperf3 {}", args("PORT").join(" ")),
        "streams": streams.len(),
        "system_pct": system.pct,
        "sender_pct": cpu("host_total"),
        "receiver_pct": cpu("remote_total"),
        "goodput_mbps": sum("goodput_mbps"),
        "sent_mbps": sum("sent_mbps"),
        "loss": (packets > 0).then(|| lost as f64 / packets as f64),
        "packets": packets,
        "per_stream": streams,
    }))
}

/// The figures of one iperf3 client's JSON (`-J`) output.
fn parse_iperf3(stdout: &[u8], stderr: &[u8]) -> Result<Value> {
    let v: Value = serde_json::from_slice(stdout).map_err(|e| {
        anyhow!(
            "iperf3 gave no JSON ({e}): {}",
            String::from_utf8_lossy(stderr).trim()
        )
    })?;
    if let Some(err) = v.get("error").and_then(Value::as_str) {
        bail!("iperf3: {err}");
    }
    let rx = &v["end"]["sum_received"];
    let tx = &v["end"]["sum_sent"];
    let bps = rx["bits_per_second"]
        .as_f64()
        .ok_or_else(|| anyhow!("iperf3 JSON has no end.sum_received.bits_per_second"))?;
    Ok(json!({
        "goodput_mbps": bps / 1e6,
        "sent_mbps": tx["bits_per_second"].as_f64().map(|b| b / 1e6),
        "packets": v["end"]["sum"]["packets"],
        "lost_packets": v["end"]["sum"]["lost_packets"],
        "cpu_utilization_percent": v["end"]["cpu_utilization_percent"],
    }))
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
