//! Runs `ivnsec attack`: builds (or opens) the testbed, sets its switches, starts the receiver,
//! the legitimate sender and the attacker ([`super::node`]) in their ECU namespaces once per
//! family of links, runs every class of every profile on them back to back ([`Nodes`]), and
//! reads each class's accounts: what was injected, what the receiver accepted and dropped (by
//! reason), and what happened to the legitimate traffic.
//!
//! Across hosts ([`super::hosts`]) the same nodes start over SSH on a plan's hosts: no testbed,
//! no switch set; the classes a bench cannot run are reported as not run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, ChildStdout};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{ChannelOptions, Ends};
use ivnsec_core::profile::{NamedProfile, Profile, SomeipProfile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::LinkSpec;
use ivnsec_net::sys::wait_readable;
use ivnsec_net::testbed::{self, Options, Testbed, TestbedState};
use ivnsec_net::topology::{self, Topology};

use super::hosts::AttackHosts;
use super::roles::{Gateways, Roles};
pub use super::switches::SwitchMode;
pub(crate) use super::switches::Switches;
pub(crate) use super::switches::{ip, set_bridge};
use super::{Attack, AttackResult, AttackSpec};
use crate::pingpong::node::{Role, RoleSpec};
use crate::pingpong::run::{IniLog, ResLog, collect_responder, read_initiator};
use crate::process::{Place, child_stderr, read_report, send_next, spawn_role_at, wait_ready};
use crate::site::{link_spec, link_spec_on, net_err, node_addr};
use ivnsec_node::channel::random_keys;
use ivnsec_node::error::{env_error, usage};

pub const DEFAULT_PROFILES: [&str; 5] = [
    "aes128-gcm",
    "macsec-gcm-aes-128",
    "esp-aes128-gcm",
    "secoc-cmac-aes128",
    "someip-aes128-gcm/conf",
];
/// Flood frames recorded per flood when capturing.
const FLOOD_PCAP_LIMIT: u64 = 10_000;
/// Pause between legitimate exchanges.
const LEGIT_PAUSE: Duration = Duration::from_micros(100);
/// A legitimate exchange is lost if its reply takes longer.
const LEGIT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the receiver may take to accept the legitimate sender's first request.
const LEGIT_START: Duration = Duration::from_secs(10);
/// How often the legitimate nodes are checked while the attacker injects.
const WATCH: Duration = Duration::from_millis(100);
/// Default receive buffer of the legitimate nodes (MiB, before the kernel doubles it).
pub const DEFAULT_RCVBUF_MIB: usize = 16;

/// The settings of one `ivnsec attack` run.
#[derive(Clone, Debug)]
pub struct AttackConfig {
    /// Profiles, with the names the user gave them (the results keep them): see [`profiles`].
    pub profiles: Vec<NamedProfile>,
    /// The classes to run (empty: all ten); they run in the order of [`Attack::ALL`].
    pub attacks: Vec<Attack>,
    /// Frames injected per class and profile (the flood runs for `flood_seconds` instead).
    pub count: u64,
    /// How long the flood lasts, in seconds.
    pub flood_seconds: f64,
    /// How the switch forwards during the flood.
    pub flood_switch: SwitchMode,
    /// Kernel receive buffer of the legitimate nodes' sockets, in MiB.
    pub rcvbuf_mib: usize,
    /// Payload bytes of the legitimate and the forged messages.
    pub payload: usize,
    pub provider: ProviderChoice,
    /// Record the injected frames here.
    pub pcap: Option<PathBuf>,
    /// Use this running testbed instead of building one.
    pub testbed: Option<String>,
    /// Build this topology instead of `sensors:2`: `bump2` attacks the protected port of the
    /// gateways in front of two legacy ECUs, `bump` the gateway of a legacy sensor and the
    /// MACsec consumer it talks to ([`super::gateway`]).
    pub topology: Option<Topology>,
    /// Run on these hosts over SSH instead of a testbed ([`super::hosts`]).
    pub hosts: Option<AttackHosts>,
}

impl AttackConfig {
    /// Checks the numbers; an out-of-range one is a usage error naming its option.
    pub fn check(&self) -> Result<()> {
        self.check_with(self.hosts.is_some())
    }

    /// [`check`](Self::check) for a run across hosts, before the hosts are opened.
    pub fn check_for_hosts(&self) -> Result<()> {
        self.check_with(true)
    }

    fn check_with(&self, across_hosts: bool) -> Result<()> {
        if self.count == 0 {
            return Err(usage("--count must be at least 1"));
        }
        if !(self.flood_seconds > 0.0 && self.flood_seconds <= 3600.0) {
            return Err(usage("--flood-seconds must be in (0, 3600]"));
        }
        if !(8..=1024).contains(&self.payload) {
            return Err(usage("--payload must be 8 to 1024 bytes"));
        }
        if !(1..=1024).contains(&self.rcvbuf_mib) {
            return Err(usage("--rcvbuf-mib must be 1 to 1024"));
        }
        match across_hosts {
            true if self.testbed.is_some() || self.topology.is_some() => {
                return Err(usage(
                    "--hosts runs the attack on the plan's hosts: not with --testbed or \
                     --topology",
                ));
            }
            true if self.pcap.is_some() => {
                return Err(usage(
                    "a capture (--pcap) is not taken across hosts: the attacker runs on another \
                     machine; capture there (tcpdump -i IFACE -w FILE)",
                ));
            }
            false if self.flood_switch == SwitchMode::Bench => {
                return Err(usage(
                    "--flood-switch bench floods through a bench's own switch: only with \
                     --hosts (on a testbed use static or hub)",
                ));
            }
            _ => {}
        }
        super::gateway::check(
            self.topology.as_ref(),
            self.testbed.as_deref(),
            &self.profiles,
        )?;
        Ok(())
    }

    /// The classes to run: each once, in the order of [`Attack::ALL`].
    pub fn classes(&self) -> Vec<Attack> {
        chosen(&self.attacks, &Attack::ALL)
    }
}

/// The classes of a run: each of `given` once, in their order, or `all` when none is given.
pub(crate) fn chosen<T: Ord + Copy>(given: &[T], all: &[T]) -> Vec<T> {
    if given.is_empty() {
        all.to_vec()
    } else {
        let mut v = given.to_vec();
        v.sort();
        v.dedup();
        v
    }
}

/// What [`run_attacks`] reports while it runs.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// Run `index` (from 1) of `total` starts: `attack` against `profile`.
    Start {
        index: usize,
        total: usize,
        profile: &'a str,
        attack: Attack,
    },
    /// Every class ran against every profile (the capture and the testbed are closed next).
    Done,
}

/// The results of a run, and the testbed it ran on (`PREFIX (TOPOLOGY)`).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub results: Vec<AttackResult>,
    pub testbed: String,
}

impl Outcome {
    /// Whether any class failed ([`AttackResult::failed`]).
    pub fn failed(&self) -> bool {
        self.results.iter().any(AttackResult::failed)
    }
}

/// Runs every class of `cfg` against every profile of it; needs root (raw sockets and network
/// namespaces: an environment error without).
pub fn run_attacks(cfg: &AttackConfig, progress: &mut dyn FnMut(Progress<'_>)) -> Result<Outcome> {
    cfg.check()?;
    let attacks = cfg.classes();
    if let Some(h) = &cfg.hosts {
        return run_on_hosts(cfg, h, &attacks, progress);
    }
    testbed::check_environment().map_err(|e| {
        env_error(format!(
            "{e}; `ivnsec attack` injects frames from a testbed node and needs root \
             (run it with sudo)"
        ))
    })?;

    let (owned, roles) = match cfg.topology {
        Some(Topology::Production) => open_production()?,
        Some(t) => super::gateway::open_testbed(t)?,
        None => open_testbed(cfg.testbed.as_deref())?,
    };
    let mut switches = Switches::hub(&roles.state)?;
    // Frames to other hosts reach the attacker's port (the switch floods); its interface
    // takes them in.
    let attacker_ns = roles.state.namespace_of(&roles.attacker).map_err(net_err)?;
    ip(
        attacker_ns,
        &["link", "set", "dev", &roles.attacker_if, "promisc", "on"],
    )?;
    let mut pcap = match &cfg.pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    let tmp = TempDir::new()?;
    let mut nodes: Option<Nodes> = None;
    let mut results = Vec::new();
    let total = cfg.profiles.len() * attacks.len();
    // Interrupted (crate::interrupt): the classes that finished are returned, the one in
    // progress is left out; the nodes are killed (on drop), the testbed removed.
    let stopped = crate::interrupt::requested;
    'profiles: for profile in &cfg.profiles {
        for &attack in &attacks {
            if stopped() {
                break 'profiles;
            }
            progress(Progress::Start {
                index: results.len() + 1,
                total,
                profile: profile.name(),
                attack,
            });
            let part = tmp.0.join(format!("part-{}.pcap", results.len()));
            let mode = if attack == Attack::Flood {
                cfg.flood_switch
            } else {
                SwitchMode::Hub
            };
            switches.set(mode)?;
            let r = match run_one(
                &mut nodes,
                Bench::Testbed(&roles),
                cfg,
                profile,
                attack,
                mode,
                pcap.is_some().then_some(&part),
            ) {
                Err(_) if stopped() => break 'profiles,
                r => r.with_context(|| format!("{profile}, {}", attack.name()))?,
            };
            if let Some(w) = pcap.as_mut() {
                crate::site::append_pcap(w, &part)?;
            }
            results.push(r);
        }
    }
    progress(Progress::Done);
    if let Some(n) = nodes.take().filter(|_| !stopped()) {
        n.finish(Bench::Testbed(&roles))?;
    }
    if let Some(mut w) = pcap {
        w.flush()?;
    }
    drop(tmp);
    drop(switches);
    if let Some(tb) = owned {
        tb.down().map_err(net_err)?;
    }
    Ok(Outcome {
        results,
        testbed: format!("{} ({})", roles.state.prefix, roles.state.topology),
    })
}

/// [`run_attacks`] on hosts over SSH: no testbed, no switch set; a flood that needs the
/// testbed's switch, and a replay class whose attacker captured nothing to replay, are reported
/// as not run with the reason.
fn run_on_hosts(
    cfg: &AttackConfig,
    hosts: &AttackHosts,
    attacks: &[Attack],
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Outcome> {
    for p in &cfg.profiles {
        hosts.check_profile(p.name(), p.profile())?;
    }
    let mut nodes: Option<Nodes> = None;
    let mut results = Vec::new();
    let total = cfg.profiles.len() * attacks.len();
    let stopped = crate::interrupt::requested;
    'profiles: for profile in &cfg.profiles {
        for &attack in attacks {
            if stopped() {
                break 'profiles;
            }
            progress(Progress::Start {
                index: results.len() + 1,
                total,
                profile: profile.name(),
                attack,
            });
            if attack == Attack::Flood && cfg.flood_switch != SwitchMode::Bench {
                results.push(AttackResult::not_run(
                    profile,
                    attack,
                    cfg.flood_switch,
                    super::hosts::flood_not_run(cfg.flood_switch.name()),
                ));
                continue;
            }
            let r = match run_one(
                &mut nodes,
                Bench::Hosts(hosts),
                cfg,
                profile,
                attack,
                SwitchMode::Bench,
                None,
            ) {
                Err(_) if stopped() => break 'profiles,
                r => r.with_context(|| format!("{profile}, {}", attack.name()))?,
            };
            results.push(r);
        }
    }
    progress(Progress::Done);
    if let Some(n) = nodes.take().filter(|_| !stopped()) {
        n.finish(Bench::Hosts(hosts))?;
    }
    Ok(Outcome {
        results,
        testbed: hosts.describe(),
    })
}

/// Where the three nodes of a run are: ECU namespaces of a testbed, or hosts over SSH.
#[derive(Clone, Copy)]
enum Bench<'a> {
    Testbed(&'a Roles),
    Hosts(&'a AttackHosts),
}

impl Bench<'_> {
    fn gateway(&self) -> Option<&Gateways> {
        match self {
            Bench::Testbed(r) => r.gateway.as_ref(),
            Bench::Hosts(_) => None,
        }
    }

    /// Where node `role` (`sender`, `receiver`, `attacker`) runs.
    fn place(&self, role: &str) -> Result<Place<'_>> {
        Ok(match self {
            Bench::Testbed(r) => {
                let name = match role {
                    "receiver" => &r.receiver,
                    "attacker" => &r.attacker,
                    _ => &r.sender,
                };
                Place::Namespace(r.state.namespace_of(name).map_err(net_err)?)
            }
            Bench::Hosts(h) => Place::Host(match role {
                "receiver" => &h.receiver,
                "attacker" => &h.attacker,
                _ => &h.sender,
            }),
        })
    }

    /// The MAC and IPv4 address of the sender, the receiver and the attacker.
    #[allow(clippy::type_complexity)]
    fn addrs(&self) -> Result<[([u8; 6], Ipv4Addr); 3]> {
        match self {
            Bench::Testbed(roles) => Ok([
                node_addr(&roles.state, &roles.sender)?,
                node_addr(&roles.state, &roles.receiver)?,
                match &roles.gateway {
                    Some(g) => g.attacker_addr(),
                    None => node_addr(&roles.state, &roles.attacker)?,
                },
            ]),
            Bench::Hosts(h) => {
                let ip = |r: &crate::hosts::Remote| r.ip.unwrap_or(Ipv4Addr::UNSPECIFIED);
                Ok([
                    (h.sender.mac, ip(&h.sender)),
                    (h.receiver.mac, ip(&h.receiver)),
                    (h.attacker_mac(), ip(&h.attacker)),
                ])
            }
        }
    }

    /// The link of the sender's or the receiver's node.
    fn link(&self, receiver: bool, family: Profile, ends: &Ends) -> LinkSpec {
        match self {
            Bench::Testbed(_) => link_spec(true, family, ends, None),
            Bench::Hosts(h) => {
                let host = if receiver { &h.receiver } else { &h.sender };
                link_spec_on(&host.spec.iface, family, ends)
            }
        }
    }

    /// The attacker's interface.
    fn attacker_if(&self) -> String {
        match self {
            Bench::Testbed(r) => r.attacker_if.clone(),
            Bench::Hosts(h) => h.attacker.spec.iface.clone(),
        }
    }

    /// A node error: across hosts, an environment error naming the hosts of the roles that
    /// ended early.
    fn node_error(&self, e: anyhow::Error, ended: &[&str]) -> anyhow::Error {
        match self {
            Bench::Testbed(_) => e,
            Bench::Hosts(h) => h.node_error(e, ended),
        }
    }
}

/// The profiles of a run: with `all`, every IVN-AE, MACsec, ESP, SecOC and secured SOME/IP
/// profile with a key (each named canonically); else those `given`, or [`DEFAULT_PROFILES`] when
/// none is.
pub fn profiles(all: bool, given: &[NamedProfile]) -> Vec<NamedProfile> {
    if all {
        ivnsec_core::suite::IvnAeProfile::all()
            .map(Profile::IvnAe)
            .filter(|p| p.is_cryptographic())
            .chain(
                ivnsec_core::sa::macsec::CipherSuite::ALL
                    .iter()
                    .map(|&suite| {
                        Profile::Macsec(ivnsec_core::profile::MacsecProfile {
                            suite,
                            confidentiality: true,
                        })
                    }),
            )
            .chain(ivnsec_core::sa::esp::EspAlg::ALL.map(Profile::Esp))
            .chain(ivnsec_core::sa::secoc::SecocAlg::ALL.map(Profile::Secoc))
            .chain(
                SomeipProfile::all()
                    .filter(|p| p.level != ivnsec_core::sa::someip::Level::NoSec)
                    .map(Profile::Someip),
            )
            .map(NamedProfile::from)
            .collect()
    } else if given.is_empty() {
        DEFAULT_PROFILES
            .iter()
            .map(|s| s.parse().expect("the default profiles are profiles"))
            .collect()
    } else {
        given.to_vec()
    }
}

pub(crate) fn open_testbed(existing: Option<&str>) -> Result<(Option<Testbed>, Roles)> {
    if let Some(prefix) = existing {
        let state = testbed::load(&testbed::default_state_dir(), prefix).map_err(net_err)?;
        let ecus: Vec<String> = state.ecus().map(|n| n.name.clone()).collect();
        if ecus.len() < 3 {
            return Err(usage(format!(
                "testbed {prefix} has {} ECUs; an attack needs three (sender, receiver, attacker): \
                 e.g. `ivnsec testbed up --topology sensors:2`",
                ecus.len()
            )));
        }
        if state.topology == Topology::Production.to_string() {
            return Ok((None, production_roles(state)));
        }
        let roles = Roles {
            state,
            sender: ecus[0].clone(),
            receiver: ecus[1].clone(),
            attacker: ecus[2].clone(),
            attacker_if: topology::ECU_IF.to_string(),
            gateway: None,
        };
        return Ok((None, roles));
    }
    let tb = Testbed::up(&Topology::Sensors(2), &Options::default()).map_err(net_err)?;
    crate::interrupt::remove_on_signal(&tb).map_err(net_err)?;
    let roles = Roles {
        state: tb.state().clone(),
        sender: "sensor1".into(),
        receiver: "consumer".into(),
        attacker: "sensor2".into(),
        attacker_if: topology::ECU_IF.to_string(),
        gateway: None,
    };
    Ok((Some(tb), roles))
}

/// Builds a `production` testbed (seed 002 testbench 3; [`Testbed::up`] returns once its
/// spanning tree has converged) with [`production_roles`].
pub(crate) fn open_production() -> Result<(Option<Testbed>, Roles)> {
    let tb = Testbed::up(&Topology::Production, &Options::default()).map_err(net_err)?;
    crate::interrupt::remove_on_signal(&tb).map_err(net_err)?;
    let roles = production_roles(tb.state().clone());
    Ok((Some(tb), roles))
}

/// The roles on a `production` testbed: `sensor1` (an ECU that protects itself, on `sw1`)
/// sends across the spanning tree (`sw1` → `sw0` → the consumer's forwarding uplink) to the
/// `consumer`; `sensor2`, on the sender's switch `sw1`, is the attacker (a replaced sensor).
/// The legacy sensors behind `gw3` and `gw4` take no part (their gateways are not started).
pub(crate) fn production_roles(state: TestbedState) -> Roles {
    Roles {
        state,
        sender: "sensor1".into(),
        receiver: "consumer".into(),
        attacker: "sensor2".into(),
        attacker_if: topology::ECU_IF.to_string(),
        gateway: None,
    }
}

/// A directory for the attacker's capture parts, removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new() -> Result<TempDir> {
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).map_err(|e| anyhow!("random: {e}"))?;
        let dir = std::env::temp_dir().join(format!("ivnsec-attack-{}", hex::encode(r)));
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The receiver, the legitimate sender and the attacker, kept from one class to the next (and
/// from one profile to the next) while their links stay the same: each class runs as a segment
/// of each (fresh keys, the class's replay window; [`crate::pingpong::node`] and
/// [`super::node`]), on the sockets they opened once. Killed and reaped when dropped.
struct Nodes {
    /// What every class they run must keep: the receiver's and the sender's links and the
    /// attacker's EtherType.
    links: String,
    receiver: Child,
    receiver_out: BufReader<ChildStdout>,
    sender: Child,
    sender_out: BufReader<ChildStdout>,
    /// Started once the first class's legitimate exchanges run.
    attacker: Option<(Child, BufReader<ChildStdout>)>,
}

impl Nodes {
    /// Starts the receiver and the legitimate sender with the first class's specs.
    fn start(
        bench: Bench<'_>,
        links: String,
        receiver_spec: &RoleSpec,
        sender_spec: &RoleSpec,
    ) -> Result<Nodes> {
        let mut receiver = spawn_role_at(
            &bench.place("receiver")?,
            "pingpong",
            receiver_spec,
            "receiver",
        )
        .map_err(|e| bench.node_error(e, &["receiver"]))?;
        let mut receiver_out = BufReader::new(receiver.stdout.take().expect("piped"));
        if let Err(e) = wait_ready(&mut receiver_out) {
            let _ = receiver.kill();
            let err = child_stderr(&mut receiver);
            let _ = receiver.wait();
            return Err(bench.node_error(
                e.context(format!("the receiver did not start: {err}")),
                &["receiver"],
            ));
        }
        let sender = bench
            .place("sender")
            .and_then(|p| spawn_role_at(&p, "pingpong", sender_spec, "sender"));
        let mut sender = match sender {
            Ok(c) => c,
            Err(e) => {
                let _ = receiver.kill();
                let _ = receiver.wait();
                return Err(bench.node_error(e, &["sender"]));
            }
        };
        let sender_out = BufReader::new(sender.stdout.take().expect("piped"));
        Ok(Nodes {
            links,
            receiver,
            receiver_out,
            sender,
            sender_out,
            attacker: None,
        })
    }

    /// Hands the receiver and the legitimate sender the next class's specs.
    fn next(&mut self, receiver_spec: &RoleSpec, sender_spec: &RoleSpec) -> Result<()> {
        send_next(self.receiver.stdin.as_mut().expect("piped"), receiver_spec)
            .context("handing the receiver the next class")?;
        wait_ready(&mut self.receiver_out).context("the receiver did not take the next class")?;
        send_next(self.sender.stdin.as_mut().expect("piped"), sender_spec)
            .context("handing the legitimate sender the next class")
    }

    /// Runs the attacker's class: starts it, or hands it the next class.
    fn attack(&mut self, bench: Bench<'_>, spec: &AttackSpec) -> Result<Injected> {
        let (_, out) = match &mut self.attacker {
            Some(a) => {
                send_next(a.0.stdin.as_mut().expect("piped"), spec)
                    .context("handing the attacker the next class")?;
                a
            }
            None => {
                let mut child =
                    spawn_role_at(&bench.place("attacker")?, "attack", spec, "attacker")
                        .map_err(|e| bench.node_error(e, &["attacker"]))?;
                let out = BufReader::new(child.stdout.take().expect("piped"));
                self.attacker.insert((child, out))
            }
        };
        // While the attacker works, a legitimate node that ends (it failed, or across hosts its
        // SSH connection was lost) ends the class at once.
        while out.buffer().is_empty() && !wait_readable(out.get_ref().as_fd(), Some(WATCH))? {
            for (what, c) in [
                ("receiver", &mut self.receiver),
                ("sender", &mut self.sender),
            ] {
                if let Some(status) = c.try_wait()? {
                    bail!("the {what} ended ({status}) while the attacker injected");
                }
            }
        }
        read_attacker(out)
    }

    /// Ends the legitimate sender's segment and reads its report.
    fn stop_sender(&mut self) -> Result<IniLog> {
        writeln!(self.sender.stdin.as_mut().expect("piped"), "END")
            .context("stopping the legitimate sender")?;
        read_initiator(&mut self.sender_out)
    }

    /// Tells the receiver how many units were sent to it, ends its segment and reads its
    /// report.
    fn stop_receiver(&mut self, expect: u64) -> Result<ResLog> {
        write!(
            self.receiver.stdin.as_mut().expect("piped"),
            "EXPECT {expect}\nEND\n"
        )
        .context("stopping the receiver")?;
        collect_responder(&mut self.receiver_out)
    }

    /// An error of a class, with what the nodes said on stderr (they are stopped for it);
    /// across hosts an environment error naming the hosts of the nodes that had ended.
    fn failed(mut self, bench: Bench<'_>, e: anyhow::Error) -> anyhow::Error {
        let mut said = Vec::new();
        let mut ended = Vec::new();
        for (what, c) in self.children() {
            if matches!(c.try_wait(), Ok(Some(_))) {
                ended.push(what);
            }
        }
        for (what, c) in self.children() {
            let _ = c.kill();
            let err = child_stderr(c);
            let _ = c.wait();
            if !err.is_empty() {
                said.push(format!("{what}: {err}"));
            }
        }
        let e = if said.is_empty() {
            e
        } else {
            e.context(said.join("; "))
        };
        bench.node_error(e, &ended)
    }

    /// Closes the nodes' stdin (they report nothing more and end) and checks they ended well.
    fn finish(mut self, bench: Bench<'_>) -> Result<()> {
        for (_, c) in self.children() {
            drop(c.stdin.take());
        }
        for (what, c) in self.children() {
            let err = child_stderr(c);
            let status = c.wait()?;
            if !status.success() {
                return Err(
                    bench.node_error(anyhow!("the {what} failed ({status}): {err}"), &[what])
                );
            }
        }
        Ok(())
    }

    fn children(&mut self) -> impl Iterator<Item = (&'static str, &mut Child)> {
        [
            ("receiver", &mut self.receiver),
            ("sender", &mut self.sender),
        ]
        .into_iter()
        .chain(self.attacker.as_mut().map(|a| ("attacker", &mut a.0)))
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for (_, c) in self.children() {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// One class against one profile on the three nodes (started, or kept from the class before
/// when the links are the same); then the accounts.
///
/// The attacker starts once the receiver has accepted the first legitimate request, so the
/// legitimate exchanges run throughout the attack. When the attacker is done, the legitimate
/// sender ends its segment (it finishes the exchange in flight) and the receiver is told how
/// many units were sent to it (the attacker's frames but those the switch refuses, and the
/// legitimate requests); it ends its segment once it has judged them all or its sockets
/// counted the rest as dropped, or after [`DRAIN_QUIET`](crate::pingpong::node::DRAIN_QUIET)
/// without a unit.
fn run_one(
    nodes: &mut Option<Nodes>,
    bench: Bench<'_>,
    cfg: &AttackConfig,
    profile: &NamedProfile,
    attack: Attack,
    mode: SwitchMode,
    pcap: Option<&PathBuf>,
) -> Result<AttackResult> {
    let gateway = bench.gateway();
    let (res_spec, ini_spec, spec) = specs(bench, cfg, profile, attack, pcap)?;
    let links = serde_json::to_string(&(
        &res_spec.link,
        &ini_spec.link,
        profile.profile().ethertype(),
    ))?;
    if let Some(n) = nodes.take_if(|n| n.links != links) {
        n.finish(bench)?;
    }
    let fresh = nodes.is_none();
    let n = match nodes {
        Some(n) => n,
        None => nodes.insert(Nodes::start(bench, links, &res_spec, &ini_spec)?),
    };
    let accounts = (|| -> Result<_> {
        if !fresh {
            n.next(&res_spec, &ini_spec)?;
        }
        wait_first(&mut n.receiver_out, &mut n.sender)?;
        let before = gateway.map(|g| g.counters()).transpose()?;
        let injected = n.attack(bench, &spec)?;
        let ini = n.stop_sender()?;
        // Behind the gateways, the legacy receiver is sent the legitimate requests only: any
        // forged frame it judges got through a gateway.
        let forged_expected = match gateway {
            Some(_) => 0,
            None => injected.injected - injected.refused,
        };
        let res = n.stop_receiver(forged_expected + ini.records.len() as u64)?;
        let account = match (gateway, before) {
            (Some(g), Some(before)) => Some(g.counters()?.since(&before, &g.victim)),
            _ => None,
        };
        Ok((injected, ini, res, account))
    })();
    let (
        Injected {
            injected,
            seconds,
            captured,
            refused,
        },
        ini,
        res,
        account,
    ) = match accounts {
        Ok(a) => a,
        Err(e) => return Err(nodes.take().expect("started").failed(bench, e)),
    };

    let (legit, mut accepted) = Legit::of(&ini, &res.log, matches!(bench, Bench::Hosts(_)));
    let mut dropped: BTreeMap<String, u64> = res.drops.into_iter().collect();
    let mut account = account;
    if let Some(a) = &mut account {
        // Behind the gateways, whatever the legacy receiver judged beyond the legitimate
        // requests reached it: a forged unit of its own profile (counted above), or a frame
        // of the forged MACsec's inner EtherType (its plain watch counts those) — a forgery
        // that got through. The victim's gateway judged (dropped) the rest.
        a.reached_legacy = accepted + dropped.values().sum::<u64>();
        accepted = a.reached_legacy;
        dropped = a.victim_drops.clone();
    }
    let judged = accepted + dropped.values().sum::<u64>();
    // Across hosts, a replay class whose attacker captured too little to replay did not run.
    // The older replays need a frame `window + 2` behind the newest.
    let needed = u64::from(attack.replay_window()) + 3;
    let not_run = match bench {
        Bench::Hosts(h) if attack.is_replay() && injected == 0 => {
            Some(super::hosts::replay_not_run(h, captured, needed))
        }
        _ => None,
    };
    Ok(AttackResult {
        profile: profile.clone(),
        attack: attack.name(),
        injected,
        accepted,
        dropped,
        not_seen: injected.saturating_sub(judged),
        switch_refused: refused,
        rate_fps: if seconds > 0.0 {
            injected as f64 / seconds
        } else {
            0.0
        },
        legit_sent: legit.sent,
        legit_delivered: legit.delivered,
        legit_exchanges_lost: legit.lost,
        legit_p50_us: legit.p50_us,
        legit_p999_us: legit.p999_us,
        legit_rtt_p50_us: legit.rtt_p50_us,
        legit_rtt_p999_us: legit.rtt_p999_us,
        switch: mode.name(),
        receiver_socket_drops: res.socket_drops,
        initiator_socket_drops: ini.socket_drops,
        mka: None,
        eap: None,
        gateway: account,
        not_run,
    })
}

/// The legitimate receiver's and sender's roles and the attacker's spec of one class.
fn specs(
    bench: Bench<'_>,
    cfg: &AttackConfig,
    profile: &NamedProfile,
    attack: Attack,
    pcap: Option<&PathBuf>,
) -> Result<(RoleSpec, RoleSpec, AttackSpec)> {
    // On a bump-in-the-wire testbed the legacy ECUs exchange without protection (the gateways
    // protect), and the attacker forges the gateways' MACsec on the protected side.
    let attack_family = profile.profile();
    let gateway = bench.gateway();
    let family = match gateway {
        Some(_) => Profile::PLAIN,
        None => attack_family,
    };
    let forward = random_keys(family)?;
    let backward = random_keys(family)?;
    let [s, r, x] = bench.addrs()?;
    let sender_ends = Ends {
        local_mac: s.0,
        peer_mac: r.0,
        local_ip: s.1,
        peer_ip: r.1,
    };
    let recv_ends = sender_ends.reversed();
    let base = |role: Role, ends: Ends| RoleSpec {
        role,
        profile: family,
        provider: cfg.provider,
        payload: cfg.payload,
        count: u32::MAX,
        replications: 1,
        pause_ns: LEGIT_PAUSE.as_nanos() as u64,
        timeout_ns: LEGIT_TIMEOUT.as_nanos() as u64,
        busy_poll: false,
        cpu: None,
        link: bench.link(role == Role::Responder, family, &ends),
        ends,
        forward: forward.clone(),
        backward: backward.clone(),
        pcap: None,
        channel: ChannelOptions {
            replay_window: attack.replay_window(),
            first_seq: 1,
            spi_offset: 0,
        },
        until_eof: false,
        watch_plain: false,
        rcvbuf: Some(cfg.rcvbuf_mib << 20),
        segments: true,
    };
    let mut res_spec = base(Role::Responder, recv_ends);
    res_spec.watch_plain = true;
    let mut ini_spec = base(Role::Initiator, sender_ends);
    ini_spec.until_eof = true;
    let (attack_sender, attack_keys, attacker_mac) = match gateway {
        Some(g) => (
            g.forged_sender(attack, sender_ends),
            // The attacker does not hold the gateways' key.
            random_keys(attack_family)?,
            g.attacker_mac(attack, sender_ends, x.0),
        ),
        None => (sender_ends, forward.clone(), x.0),
    };
    let spec = AttackSpec {
        attack,
        profile: attack_family,
        provider: cfg.provider,
        payload: cfg.payload,
        count: cfg.count,
        flood_ns: (cfg.flood_seconds * 1e9) as u64,
        ifname: bench.attacker_if(),
        sender: attack_sender,
        attacker_mac,
        attacker_ip: x.1,
        forward: attack_keys,
        pcap: pcap.cloned(),
        pcap_limit: if attack == Attack::Flood {
            FLOOD_PCAP_LIMIT
        } else {
            u64::MAX
        },
        capture_all: matches!(bench, Bench::Hosts(_)),
    };

    Ok((res_spec, ini_spec, spec))
}

/// The legitimate exchanges of one class: how many were sent, delivered and lost, their
/// one-way delay and round trip.
struct Legit {
    sent: u64,
    delivered: u64,
    lost: u64,
    p50_us: Option<f64>,
    p999_us: Option<f64>,
    rtt_p50_us: Option<f64>,
    rtt_p999_us: Option<f64>,
}

impl Legit {
    /// From the sender's records and the receiver's log; also the number of units accepted
    /// that were not a legitimate exchange's first delivery.
    fn of(ini: &IniLog, log: &[(u64, u64, u64, u64)], across_hosts: bool) -> (Legit, u64) {
        // Legitimate exchange ids are `replication << 32 | index`; every other accepted id, and
        // every legitimate id accepted more than once, is a forgery or a replay that got through.
        let sent: HashMap<u64, u64> = ini
            .records
            .iter()
            .map(|e| ((u64::from(e.rep) << 32) | u64::from(e.idx), e.start))
            .collect();
        let mut seen: HashSet<u64> = HashSet::new();
        let mut accepted = 0u64;
        let mut owd_us = Vec::with_capacity(sent.len());
        for &(id, _, _, at) in log {
            match sent.get(&id) {
                Some(&start) if seen.insert(id) => {
                    owd_us.push(at.saturating_sub(start) as f64 / 1e3);
                }
                _ => accepted += 1,
            }
        }
        // Across hosts a one-way delay would subtract two machines' clocks: the legitimate
        // requests' delay is then given as their round trip, timed on the sender's clock alone.
        if across_hosts {
            owd_us.clear();
        }
        owd_us.sort_by(f64::total_cmp);
        let q = |p: f64| (!owd_us.is_empty()).then(|| crate::stats::quantile_sorted(&owd_us, p));
        let mut rtt_us: Vec<f64> = ini
            .records
            .iter()
            .filter(|e| !e.lost)
            .map(|e| e.rtt as f64 / 1e3)
            .collect();
        rtt_us.sort_by(f64::total_cmp);
        let rq = |p: f64| (!rtt_us.is_empty()).then(|| crate::stats::quantile_sorted(&rtt_us, p));
        let legit = Legit {
            sent: sent.len() as u64,
            delivered: seen.len() as u64,
            lost: ini.records.iter().filter(|e| e.lost).count() as u64,
            p50_us: q(0.5),
            p999_us: q(0.999),
            rtt_p50_us: rq(0.5),
            rtt_p999_us: rq(0.999),
        };
        (legit, accepted)
    }
}

/// Waits for the receiver's `FIRST` line (it accepted the class's first legitimate request);
/// an error when the legitimate sender ends before, the receiver says something else, or none
/// came within [`LEGIT_START`].
fn wait_first(receiver_out: &mut BufReader<ChildStdout>, sender: &mut Child) -> Result<()> {
    let deadline = Instant::now() + LEGIT_START;
    loop {
        let poll = Some(Duration::from_millis(5));
        if !receiver_out.buffer().is_empty() || wait_readable(receiver_out.get_ref().as_fd(), poll)?
        {
            let mut line = String::new();
            receiver_out.by_ref().take(64).read_line(&mut line)?;
            if line.trim_end() == "FIRST" {
                return Ok(());
            }
            bail!(
                "the receiver said {:?} before it accepted a legitimate request",
                line.trim()
            );
        }
        if let Some(status) = sender.try_wait()? {
            bail!("the legitimate sender ended ({status}) before its first request was accepted");
        }
        if Instant::now() >= deadline {
            bail!(
                "the receiver accepted no legitimate request within {} s",
                LEGIT_START.as_secs()
            );
        }
    }
}

/// What the attacker reports of a class.
struct Injected {
    /// Frames it sent.
    injected: u64,
    /// How long it took.
    seconds: f64,
    /// Frames of those that the switch refuses ([`super::forger::switch_refuses`]).
    refused: u64,
    /// Legitimate frames a replay class captured.
    captured: u64,
}

/// Reads the attacker's report of one class.
fn read_attacker(out: &mut BufReader<ChildStdout>) -> Result<Injected> {
    let (mut injected, mut seconds, mut refused, mut captured) = (None, 0.0, None, 0);
    read_report(out, "attacker", |f| {
        match (f[0], f.get(1)) {
            ("INJECTED", Some(n)) => injected = n.parse().ok(),
            ("SECONDS", Some(s)) => seconds = s.parse().unwrap_or(0.0),
            ("REFUSED", Some(n)) => refused = n.parse().ok(),
            ("CAPTURED", Some(n)) => captured = n.parse().unwrap_or(0),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    match (injected, refused) {
        (Some(injected), Some(refused)) if refused <= injected => Ok(Injected {
            injected,
            seconds,
            refused,
            captured,
        }),
        _ => bail!("the attacker ended its class without its counts"),
    }
}

#[cfg(test)]
use super::switches::static_table;
#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
