//! Runs one ping-pong scenario: starts the responder and the initiator as separate processes
//! (inside their ECU namespaces on a testbed, or side by side over UDP on loopback), collects
//! both logs and joins them into [`Exchange`]s.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Child, ChildStdout, Command, Stdio};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_lab::pingpong::Exchange;
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::{TestbedState, netns_command};
use ivnsec_net::topology;

use super::channel::{Channel, DirectionKeys, Ends, Family};
use super::link::LinkSpec;
use super::pingpong::{MIN_PAYLOAD, Role, RoleSpec, SPEC_ENV};
use crate::cli::usage;
use crate::providers::ProviderChoice;

/// Where the two nodes run.
#[derive(Clone, Debug)]
pub enum Site {
    /// Two ECUs of a testbed: raw Ethernet through the software switch (ESP: UDP between their
    /// addresses).
    Testbed {
        state: TestbedState,
        initiator: String,
        responder: String,
    },
    /// Both on this host's loopback, every frame in a UDP datagram (no root needed).
    Loopback,
}

impl Site {
    /// A sentence for reports.
    pub fn transport(&self) -> String {
        match self {
            Site::Testbed {
                state,
                initiator,
                responder,
            } => format!(
                "testbed {} ({}): {initiator} → switch → {responder}, raw Ethernet (AF_PACKET) \
                 over veth and a Linux bridge; ESP as IPv4 protocol 50 through the kernel's IP layer; \
                 SecOC and SOME/IP in UDP datagrams",
                state.prefix, state.topology
            ),
            Site::Loopback => "UDP on loopback (no testbed: not root), one frame per datagram; \
                               not a vehicle-network path"
                .to_string(),
        }
    }
}

/// Receive strategy of both nodes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Sleep in the kernel until a frame arrives (a wake-up per hop).
    Blocking,
    /// Spin on non-blocking reads (one CPU busy per node, no wake-up latency).
    BusyPoll,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Blocking => "blocking",
            Mode::BusyPoll => "busy-poll",
        }
    }
}

/// One scenario's settings.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub profile: String,
    pub payload: usize,
    pub count: u32,
    pub replications: u32,
    pub pause_ns: u64,
    pub timeout_ns: u64,
    pub mode: Mode,
    pub pin: bool,
    pub provider: ProviderChoice,
}

impl Scenario {
    /// The scenario's name in reports: `profile@payload`.
    pub fn name(&self) -> String {
        format!("{}@{}", self.profile, self.payload)
    }

    /// Checks the profile and that the frame fits the 1500-byte MTU; returns the frame length.
    pub fn check(&self) -> Result<usize> {
        if self.payload < MIN_PAYLOAD {
            return Err(usage(format!(
                "scenario {}: the payload must be at least {MIN_PAYLOAD} bytes (the exchange id)",
                self.name()
            )));
        }
        if self.count == 0 || self.replications == 0 {
            return Err(usage(format!(
                "scenario {}: count and replications must be ≥ 1",
                self.name()
            )));
        }
        let frame = frame_bytes(&self.profile, self.provider, self.payload)?;
        let l2_payload = frame - 14;
        if l2_payload > topology::MTU as usize {
            return Err(usage(format!(
                "scenario {}: the {} frame carries {l2_payload} bytes after the Ethernet header, \
                 more than the {}-byte MTU; use a payload of at most {} bytes",
                self.name(),
                self.profile,
                topology::MTU,
                self.payload - (l2_payload - topology::MTU as usize)
            )));
        }
        Ok(frame)
    }
}

/// The frame length of `payload` under `profile` (built with throw-away keys; nothing is sent).
pub fn frame_bytes(profile: &str, provider: ProviderChoice, payload: usize) -> Result<usize> {
    let k = DirectionKeys::random(profile)?;
    let ends = Ends {
        local_mac: [2, 0, 0, 0, 0, 1],
        peer_mac: [2, 0, 0, 0, 0, 2],
        local_ip: Ipv4Addr::LOCALHOST,
        peer_ip: Ipv4Addr::LOCALHOST,
    };
    Ok(Channel::new(profile, provider, &k, &k, ends, 0)?.frame_bytes(payload))
}

/// What one scenario produced.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub exchanges: Vec<Exchange>,
    pub frame_bytes: usize,
    /// Replies the initiator's verify rejected, by reason.
    pub rejected: Vec<(String, u64)>,
    /// Requests the responder's verify rejected, by reason.
    pub responder_drops: Vec<(String, u64)>,
    /// Valid replies that came after their exchange had been given up.
    pub stale: u64,
}

impl Outcome {
    pub fn lost(&self) -> usize {
        self.exchanges.iter().filter(|e| e.lost).count()
    }
}

/// Runs `s` at `site`; with `pcap`, the initiator records the frames it sends and receives.
pub fn run_scenario(site: &Site, s: &Scenario, pcap: Option<&std::path::Path>) -> Result<Outcome> {
    let frame_bytes = s.check()?;
    let family = Family::parse(&s.profile)?;
    let forward = DirectionKeys::random(&s.profile)?;
    let backward = DirectionKeys::random(&s.profile)?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (cpu_i, cpu_r) = if s.pin {
        (Some(0), Some(1 % cpus))
    } else {
        (None, None)
    };
    let base = |role, link, ends, cpu| RoleSpec {
        role,
        profile: s.profile.clone(),
        provider: s.provider.to_string(),
        payload: s.payload,
        count: s.count,
        replications: s.replications,
        pause_ns: s.pause_ns,
        timeout_ns: s.timeout_ns,
        busy_poll: s.mode == Mode::BusyPoll,
        cpu,
        link,
        ends,
        forward: forward.clone(),
        backward: backward.clone(),
        pcap: None,
        channel: Default::default(),
        until_eof: false,
        watch_plain: false,
        rcvbuf: None,
    };

    // The initiator's view of the two ends (the responder's is the reverse) and, on a testbed,
    // the two namespaces.
    let (ini_ends, ns) = match site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => {
            let a = node_addr(state, initiator)?;
            let b = node_addr(state, responder)?;
            (
                Ends {
                    local_mac: a.0,
                    peer_mac: b.0,
                    local_ip: a.1,
                    peer_ip: b.1,
                },
                Some((
                    state.namespace_of(initiator).map_err(net_err)?.to_string(),
                    state.namespace_of(responder).map_err(net_err)?.to_string(),
                )),
            )
        }
        Site::Loopback => (
            Ends {
                local_mac: topology::ecu_mac(0, 1),
                peer_mac: topology::ecu_mac(0, 2),
                local_ip: Ipv4Addr::LOCALHOST,
                peer_ip: Ipv4Addr::LOCALHOST,
            },
            None,
        ),
    };
    let res_ends = ini_ends.reversed();
    let res_link = link_spec(ns.is_some(), family, &res_ends, None);
    let res_spec = base(Role::Responder, res_link, res_ends, cpu_r);
    let mut responder = spawn(ns.as_ref().map(|n| n.1.as_str()), &res_spec)?;
    let mut res_out = BufReader::new(responder.stdout.take().expect("piped"));
    let port = match wait_ready(&mut res_out) {
        Ok(p) => p,
        Err(e) => {
            let _ = responder.kill();
            let err = child_stderr(&mut responder);
            let _ = responder.wait();
            return Err(e.context(format!("the responder did not start: {err}")));
        }
    };
    let ini_link = link_spec(ns.is_some(), family, &ini_ends, Some(port));
    let mut ini_spec = base(Role::Initiator, ini_link, ini_ends, cpu_i);
    // The initiator runs in another directory context (`ip netns exec`): give it an absolute path.
    ini_spec.pcap = pcap.map(std::path::absolute).transpose()?;
    let ini_result = spawn(ns.as_ref().map(|n| n.0.as_str()), &ini_spec)
        .and_then(|mut c| collect_initiator(&mut c));
    // Stop the responder whatever happened to the initiator.
    drop(responder.stdin.take());
    let res_result = collect_responder(&mut res_out);
    let res_err = child_stderr(&mut responder);
    let status = responder.wait()?;
    let ini = ini_result?;
    let res = res_result.with_context(|| format!("responder: {res_err}"))?;
    if !status.success() {
        bail!("the responder failed ({status}): {res_err}");
    }

    let by_id: HashMap<u64, (u64, u64, u64)> = res
        .log
        .into_iter()
        .map(|(id, v, p, at)| (id, (v, p, at)))
        .collect();
    let exchanges = ini
        .records
        .into_iter()
        .map(|r| {
            let id = (u64::from(r.rep) << 32) | u64::from(r.idx);
            let mut e = Exchange {
                replication: r.rep,
                index: r.idx,
                payload_ns: r.payload,
                protect_ns: r.protect,
                round_trip_ns: r.rtt,
                verify_ns: r.verify,
                lost: r.lost,
                ..Exchange::default()
            };
            match by_id.get(&id) {
                Some(&(v, p, at)) if !r.lost => {
                    e.resp_verify_ns = v;
                    e.resp_protect_ns = p;
                    e.owd_direct_ns = at.checked_sub(r.start);
                }
                Some(_) => {}
                None => e.lost = true,
            }
            e
        })
        .collect();
    Ok(Outcome {
        exchanges,
        frame_bytes,
        rejected: ini.rejects,
        responder_drops: res.drops,
        stale: ini.stale,
    })
}

/// The link of a node with `ends`: raw Ethernet (IVN-AE, MACsec), raw IPv4 (ESP) or UDP between
/// the two addresses on the family's port (SecOC: from the peer's address and port only;
/// SOME/IP: from any client) on a testbed; UDP on loopback, where the initiator sends to the
/// responder's `peer_port` and the responder answers whoever sent.
pub(crate) fn link_spec(
    testbed: bool,
    family: Family,
    ends: &Ends,
    peer_port: Option<u16>,
) -> LinkSpec {
    if testbed && family.is_udp() {
        let port = family.udp_port();
        let local = SocketAddr::new(IpAddr::V4(ends.local_ip), port);
        let peer = SocketAddr::new(IpAddr::V4(ends.peer_ip), port);
        return match family {
            Family::Secoc(_) => LinkSpec::UdpPeer { local, peer },
            _ => LinkSpec::Udp {
                local,
                peer: Some(peer),
            },
        };
    }
    match (testbed, family.is_ip()) {
        (true, false) => LinkSpec::Raw {
            ifname: topology::ECU_IF.to_string(),
            ethertype: family.ethertype(),
        },
        (true, true) => LinkSpec::RawIp {
            protocol: ivnsec_core::wire::ip::protocol::ESP,
            peer: ends.peer_ip,
        },
        (false, _) => LinkSpec::Udp {
            local: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            peer: peer_port.map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p)),
        },
    }
}

fn net_err(e: ivnsec_net::Error) -> anyhow::Error {
    anyhow!("{e}")
}

/// A testbed node as an experiment starts a process in it: its namespace, and the MAC and IPv4
/// address of its ECU interface.
pub(crate) fn testbed_node(
    state: &TestbedState,
    node: &str,
) -> Result<(Option<String>, [u8; 6], Ipv4Addr)> {
    let (mac, ip) = node_addr(state, node)?;
    let ns = state.namespace_of(node).map_err(|e| anyhow!("{e}"))?;
    Ok((Some(ns.to_string()), mac, ip))
}

/// MAC and IPv4 address of a testbed node's ECU interface.
pub(crate) fn node_addr(state: &TestbedState, node: &str) -> Result<([u8; 6], Ipv4Addr)> {
    let n = state
        .node(node)
        .ok_or_else(|| usage(format!("testbed {} has no node `{node}`", state.prefix)))?;
    let i = n
        .interfaces
        .iter()
        .find(|i| i.name == topology::ECU_IF)
        .ok_or_else(|| anyhow!("node {node} has no {} interface", topology::ECU_IF))?;
    let mac = topology::parse_mac(&i.mac).ok_or_else(|| anyhow!("bad MAC {}", i.mac))?;
    let ip = i
        .ipv4
        .as_deref()
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("node {node} has no IPv4 address"))?;
    Ok((mac, ip))
}

pub(crate) fn spawn(ns: Option<&str>, spec: &RoleSpec) -> Result<Child> {
    spawn_role(ns, "pingpong", spec, &format!("{:?}", spec.role))
}

/// Starts `ivnsec node KIND` (inside namespace `ns` when given) with `spec` as JSON in
/// `$IVNSEC_NODE_SPEC` and piped stdin/stdout/stderr; `what` names it in the error. The node
/// dies with this process (also when this one is killed with SIGKILL).
pub(crate) fn spawn_role(
    ns: Option<&str>,
    kind: &str,
    spec: &impl serde::Serialize,
    what: &str,
) -> Result<Child> {
    let exe = std::env::current_exe().context("locating the ivnsec binary")?;
    let mut cmd = match ns {
        Some(ns) => netns_command(ns, &exe),
        None => Command::new(&exe),
    };
    cmd.args(["node", kind])
        .env(SPEC_ENV, serde_json::to_string(spec)?)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd)
        .spawn()
        .with_context(|| format!("starting the {what} process"))
}

/// Kills and reaps the node processes that are still running when it is dropped (a run that
/// failed half-way leaves none behind).
pub(crate) struct Reaper(pub Vec<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

pub(crate) fn child_stderr(c: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = c.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s.trim().to_string()
}

pub(crate) fn wait_ready(out: &mut BufReader<ChildStdout>) -> Result<u16> {
    let mut line = String::new();
    out.read_line(&mut line)?;
    let port = line
        .trim()
        .strip_prefix("READY ")
        .ok_or_else(|| anyhow!("no READY line (got {:?})", line.trim()))?;
    port.parse().map_err(|_| anyhow!("bad READY line {line:?}"))
}

pub(crate) struct IniRecord {
    pub rep: u32,
    pub idx: u32,
    pub start: u64,
    pub payload: u64,
    pub protect: u64,
    pub rtt: u64,
    pub verify: u64,
    pub lost: bool,
}

/// Reads a node role's report from its stdout, one line of space-separated fields at a time:
/// `f` takes each line's fields and says whether it knew the line; returns once `END` came.
/// Errors name `who` and the line: an unknown, empty or malformed line, or no `END`.
pub(crate) fn read_report(
    out: impl BufRead,
    who: &str,
    mut f: impl FnMut(&[&str]) -> Result<bool>,
) -> Result<()> {
    for line in out.lines() {
        let line = line?;
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        match fields.first() {
            Some(&"END") => return Ok(()),
            None => bail!("{who}: unexpected line {line:?}"),
            Some(_) => {}
        }
        if !f(&fields).with_context(|| format!("{who}: bad line {line:?}"))? {
            bail!("{who}: unexpected line {line:?}");
        }
    }
    bail!("the {who} ended without its report")
}

/// Field `i` of a report line as a number.
pub(crate) fn field_u64(f: &[&str], i: usize) -> Result<u64> {
    f.get(i)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("field {i} is not a number"))
}

pub(crate) struct IniLog {
    pub records: Vec<IniRecord>,
    pub rejects: Vec<(String, u64)>,
    pub stale: u64,
    /// Units the kernel dropped at the initiator's socket (full receive queue).
    pub socket_drops: u64,
}

pub(crate) fn collect_initiator(c: &mut Child) -> Result<IniLog> {
    let out = BufReader::new(c.stdout.take().expect("piped"));
    let mut log = IniLog {
        records: Vec::new(),
        rejects: Vec::new(),
        stale: 0,
        socket_drops: 0,
    };
    let read = read_report(out, "initiator", |f| {
        let num = |i| field_u64(f, i);
        match f[0] {
            "E" => log.records.push(IniRecord {
                rep: num(1)? as u32,
                idx: num(2)? as u32,
                start: num(3)?,
                payload: num(4)?,
                protect: num(5)?,
                rtt: num(6)?,
                verify: num(7)?,
                lost: num(8)? != 0,
            }),
            "REJECT" => log
                .rejects
                .push((f.get(1).unwrap_or(&"?").to_string(), num(2)?)),
            "STALE" => log.stale = num(1)?,
            "SOCKDROPS" => log.socket_drops = num(1)?,
            _ => return Ok(false),
        }
        Ok(true)
    });
    let err = child_stderr(c);
    let status = c.wait()?;
    if !status.success() {
        bail!("the initiator failed ({status}): {err}");
    }
    read.with_context(|| format!("the initiator failed ({status}): {err}"))?;
    Ok(log)
}

pub(crate) struct ResLog {
    /// Per accepted unit: exchange id, verify ns, protect ns, verify done (monotonic ns).
    pub log: Vec<(u64, u64, u64, u64)>,
    pub drops: Vec<(String, u64)>,
    /// Units the kernel dropped at the responder's sockets (full receive queues).
    pub socket_drops: u64,
}

pub(crate) fn collect_responder(out: &mut BufReader<ChildStdout>) -> Result<ResLog> {
    let mut r = ResLog {
        log: Vec::new(),
        drops: Vec::new(),
        socket_drops: 0,
    };
    read_report(out, "responder", |f| {
        let num = |i| field_u64(f, i);
        match f[0] {
            "R" => r.log.push((num(1)?, num(2)?, num(3)?, num(4)?)),
            "DROP" => r
                .drops
                .push((f.get(1).unwrap_or(&"?").to_string(), num(2)?)),
            "SOCKDROPS" => r.socket_drops = num(1)?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(r)
}
