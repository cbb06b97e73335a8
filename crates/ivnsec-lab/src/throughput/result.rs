//! What a throughput run's nodes report (the senders' and the receiver's last lines) and the
//! result made of it with the CPU seen meanwhile: per role, the gateways on the path, the
//! transport the frames took.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::ChildStdout;

use anyhow::{Result, anyhow};
use ivnsec_core::profile::{NamedProfile, Profile};

use super::config::Config;
use super::{CpuResult, RoleCpu, SenderResult, ThroughputResult, system_fields};
use crate::cpu::ProcessCpu;
use crate::process::{field_u64, read_report};
use crate::site::Site;

pub(super) struct SentLine {
    pub(super) sent: u64,
    pub(super) start: u64,
    pub(super) last: u64,
    /// Protecting and sending (the pacing spin taken out).
    pub(super) cpu: ProcessCpu,
    /// CPU ns spent spinning to hold the link's rate.
    pub(super) pacing_ns: u64,
}

pub(super) fn read_sender(out: ChildStdout) -> Result<SentLine> {
    let mut r = None;
    read_report(BufReader::new(out), "sender", |f| {
        if f[0] != "SENT" {
            return Ok(false);
        }
        let num = |i| field_u64(f, i);
        let (start, last) = (num(2)?, num(3)?);
        // The spin is user time; what is left of it is protecting and sending.
        let pacing_ns = num(6)?;
        let (user, sys) = (num(4)?, num(5)?);
        let over = pacing_ns.saturating_sub(user);
        r = Some(SentLine {
            sent: num(1)?,
            start,
            last,
            cpu: ProcessCpu {
                user_ns: user.saturating_sub(pacing_ns),
                sys_ns: sys.saturating_sub(over),
                wall_ns: last.saturating_sub(start),
            },
            pacing_ns,
        });
        Ok(true)
    })?;
    r.ok_or_else(|| anyhow!("the sender ended without its report"))
}

pub(super) struct RecvLog {
    pub(super) delivered: Vec<u64>,
    pub(super) drops: BTreeMap<String, u64>,
    pub(super) user_ns: u64,
    pub(super) sys_ns: u64,
}

pub(super) fn read_receiver(out: &mut BufReader<ChildStdout>, n: usize) -> Result<RecvLog> {
    let mut r = RecvLog {
        delivered: vec![0; n],
        drops: BTreeMap::new(),
        user_ns: 0,
        sys_ns: 0,
    };
    read_report(out, "receiver", |f| {
        let num = |i| field_u64(f, i);
        match f[0] {
            "RECV" => {
                let i = num(1)? as usize;
                *r.delivered
                    .get_mut(i)
                    .ok_or_else(|| anyhow!("bad sender {i}"))? = num(2)?;
            }
            "DROP" => {
                r.drops
                    .insert(f.get(1).unwrap_or(&"?").to_string(), num(2)?);
            }
            "CPU" => {
                r.user_ns = num(1)?;
                r.sys_ns = num(2)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(r)
}

/// The CPU the bump-in-the-wire gateways of a testbed use over a run's window.
pub(super) struct GatewayCpu {
    pub(super) gateways: Vec<(String, u32)>,
    pub(super) start: std::time::Instant,
    pub(super) before: Vec<Option<u64>>,
}

impl GatewayCpu {
    pub(super) fn start(site: &Site) -> GatewayCpu {
        let gateways = match site {
            Site::Testbed { state, .. } => crate::site::gateway_pids(state),
            Site::Loopback | Site::Hosts { .. } => Vec::new(),
        };
        let before = gateways
            .iter()
            .map(|(_, pid)| crate::site::process_cpu_ns(*pid))
            .collect();
        GatewayCpu {
            gateways,
            start: std::time::Instant::now(),
            before,
        }
    }

    /// Each gateway's CPU since [`GatewayCpu::start`] (those whose times could not be read
    /// are left out).
    pub(super) fn stop(&self) -> Vec<(String, ProcessCpu)> {
        let wall = self.start.elapsed().as_nanos() as u64;
        self.gateways
            .iter()
            .zip(&self.before)
            .filter_map(|((name, pid), before)| {
                let used = crate::site::process_cpu_ns(*pid)?.saturating_sub((*before)?);
                Some((
                    name.clone(),
                    ProcessCpu {
                        user_ns: used,
                        sys_ns: 0,
                        wall_ns: wall,
                    },
                ))
            })
            .collect()
    }
}

/// What the nodes of one run reported, and the CPU seen meanwhile.
pub(super) struct Measured {
    pub(super) sent_lines: Vec<SentLine>,
    pub(super) recv: RecvLog,
    pub(super) system: crate::cpu::SystemCpu,
    /// The path crosses bump-in-the-wire gateways (their CPU is in `gateway_cpu` where it
    /// could be read).
    pub(super) on_gateways: bool,
    pub(super) gateway_cpu: Vec<(String, ProcessCpu)>,
}

/// One run's result from what was measured.
pub(super) fn result_of(
    site: &Site,
    names: &[String],
    profile: &NamedProfile,
    cfg: &Config,
    frame: usize,
    senders: usize,
    m: Measured,
) -> ThroughputResult {
    let Measured {
        sent_lines,
        recv,
        system,
        on_gateways,
        gateway_cpu,
    } = m;
    let family = profile.profile();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = sent_lines.iter().map(|s| s.start).min().unwrap_or(0);
    let last = sent_lines.iter().map(|s| s.last).max().unwrap_or(start);
    let window = last.saturating_sub(start);
    let senders_cpu = ProcessCpu::sum(sent_lines.iter().map(|s| &s.cpu));
    let senders_cpu = ProcessCpu {
        wall_ns: window,
        ..senders_cpu
    };
    let receiver_cpu = ProcessCpu {
        user_ns: recv.user_ns,
        sys_ns: recv.sys_ns,
        wall_ns: window,
    };
    let sent: u64 = sent_lines.iter().map(|s| s.sent).sum();
    let delivered: u64 = recv.delivered.iter().sum();
    let payload_bytes = |n: u64| n * cfg.payload as u64;
    let mut cpu = CpuResult {
        sender_pct: senders_cpu.pct_of_machine(cores),
        receiver_pct: receiver_cpu.pct_of_machine(cores),
        cores,
        sender_user_ns: senders_cpu.user_ns,
        sender_sys_ns: senders_cpu.sys_ns,
        receiver_user_ns: receiver_cpu.user_ns,
        receiver_sys_ns: receiver_cpu.sys_ns,
        sender_ns_per_byte: senders_cpu.ns_per_byte(payload_bytes(sent)),
        receiver_ns_per_byte: receiver_cpu.ns_per_byte(payload_bytes(delivered)),
        sender_pacing_ns: sent_lines.iter().map(|s| s.pacing_ns).sum(),
        ..CpuResult::default()
    };
    system_fields(&mut cpu, &system);
    let per_sender = sent_lines
        .iter()
        .zip(&recv.delivered)
        .zip(names)
        .map(|((s, &d), name)| SenderResult {
            name: name.clone(),
            sent: s.sent,
            delivered: d,
            seconds: s.last.saturating_sub(s.start) as f64 / 1e9,
            ..SenderResult::default()
        })
        .collect();
    let mut r = ThroughputResult {
        profile: profile.clone(),
        payload: cfg.payload,
        frame_bytes: frame,
        senders,
        rate_bps: cfg.rate_bps,
        seconds: window as f64 / 1e9,
        transport: if cfg.tcp {
            transport_tcp(site)
        } else {
            transport(site, family)
        },
        tcp: cfg.tcp,
        rx_coalesce_us: if cfg.tcp { 0 } else { cfg.rx_coalesce_us },
        sent,
        delivered,
        rejected: recv.drops,
        per_sender,
        cpu,
        gateways: on_gateways.then(|| match site {
            Site::Testbed { state, .. } => state.topology.to_string(),
            Site::Loopback | Site::Hosts { .. } => String::new(),
        }),
        ..ThroughputResult::default()
    };
    r.derive();
    let sensors: Vec<ProcessCpu> = sent_lines
        .iter()
        .map(|s| ProcessCpu {
            wall_ns: window,
            ..s.cpu
        })
        .collect();
    r.cpu.roles = roles(&r, receiver_cpu, &sensors);
    with_gateways(&mut r.cpu.roles, &gateway_cpu, cores, r.goodput_mbps / 1e3);
    r.cpu.system_pct_per_gbps =
        (r.goodput_mbps > 0.0).then(|| r.cpu.system_pct / (r.goodput_mbps / 1e3));
    r
}

/// CPU by role over the sending window (every process's CPU over the same window, so the
/// shares add up): the consumer, each sensor (in `r.per_sender` order; protecting and sending),
/// the sensors' pacing (`r.cpu.sender_pacing_ns`: spinning to hold the link's rate), and the
/// switch as the machine's busy share less all of these (never below 0). Each per Gb/s of the
/// goodput through it.
pub(super) fn roles(
    r: &ThroughputResult,
    consumer: ProcessCpu,
    sensors: &[ProcessCpu],
) -> Vec<RoleCpu> {
    let cores = r.cpu.cores;
    let gbps = r.goodput_mbps / 1e3;
    let mut out = vec![RoleCpu::new(
        "consumer",
        consumer.pct_of_machine(cores),
        gbps,
    )];
    for (s, c) in r.per_sender.iter().zip(sensors) {
        out.push(RoleCpu::new(
            s.name.clone(),
            c.pct_of_machine(cores),
            s.goodput_mbps / 1e3,
        ));
    }
    let window = consumer.wall_ns;
    let pacing = ProcessCpu {
        user_ns: r.cpu.sender_pacing_ns,
        sys_ns: 0,
        wall_ns: window,
    };
    out.push(RoleCpu::new("pacing", pacing.pct_of_machine(cores), gbps));
    let processes: f64 = out.iter().map(|c| c.pct).sum();
    out.push(RoleCpu::new(
        "switch",
        (r.cpu.system_pct - processes).max(0.0),
        gbps,
    ));
    out
}

/// Adds the gateways on the path (bump-in-the-wire topologies) as roles before the switch,
/// whose share (the machine's busy share less every process) shrinks by theirs.
pub(super) fn with_gateways(
    roles: &mut Vec<RoleCpu>,
    gateways: &[(String, ProcessCpu)],
    cores: usize,
    gbps: f64,
) {
    let Some(switch) = roles.pop() else { return };
    let mut left = switch.pct;
    for (name, c) in gateways {
        let pct = c.pct_of_machine(cores);
        left -= pct;
        roles.push(RoleCpu::new(name.clone(), pct, gbps));
    }
    roles.push(RoleCpu::new(switch.role, left.max(0.0), gbps));
}

pub(super) fn transport_tcp(site: &Site) -> String {
    match site {
        Site::Hosts { .. } => format!(
            "{}; SOME/IP messages on one TCP connection per sender between the hosts' \
             addresses (the kernel segments them)",
            site.transport()
        ),
        Site::Testbed { state, .. } => format!(
            "testbed {} ({}): senders → switch → consumer, SOME/IP messages on one TCP \
             connection per sender between the ECUs' addresses (the kernel segments them), over \
             veth and a Linux bridge",
            state.prefix, state.topology
        ),
        Site::Loopback => "TCP on loopback (no testbed: not root), one connection per sender; \
                           not a vehicle-network path"
            .to_string(),
    }
}

pub(super) fn transport(site: &Site, family: Profile) -> String {
    match site {
        Site::Hosts { .. } => format!(
            "{}; CPU shares are each node's process on its host over this host's core count, \
             the system and switch shares this host's",
            site.transport()
        ),
        Site::Testbed { state, .. } => format!(
            "testbed {} ({}): senders → {}switch → consumer, {} over veth and a Linux bridge",
            state.prefix,
            state.topology,
            if state.topology == ivnsec_net::topology::Topology::Production.to_string() {
                // The senders protect themselves; the gateways there front other sensors.
                "switch sw1 → spanning tree → "
            } else if state
                .nodes
                .iter()
                .any(|n| n.kind == ivnsec_net::topology::NodeKind::Gateway.as_str())
            {
                "bump-in-the-wire gateway (MACsec) → "
            } else {
                ""
            },
            if family.is_ip() {
                "ESP as IPv4 protocol 50, the senders writing whole frames (raw Ethernet), the \
                 consumer receiving through its IP layer (raw IP socket)"
            } else if family.is_udp() {
                "UDP datagrams between the ECUs' addresses"
            } else {
                "raw Ethernet (AF_PACKET)"
            }
        ),
        Site::Loopback => "UDP on loopback (no testbed: not root), one frame per datagram; \
                           not a vehicle-network path"
            .to_string(),
    }
}
