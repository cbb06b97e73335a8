//! `ivnsec attack`: a legitimate sender and receiver run the ping-pong on a testbed switch while
//! an attacker node on the same switch injects forged, replayed and altered frames, class by
//! class and profile by profile (seed 002 §3, §5.2.4). Reports what was injected, what the
//! receiver accepted and dropped (by reason), and what happened to the legitimate traffic.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::{self, Options, Testbed, TestbedState, netns_command};
use ivnsec_net::topology::{self, Topology};
use serde::Serialize;

use super::lab::{self, net_err};
use crate::cli::{EnvError, usage};
use crate::node::attack::{self, Attack, AttackSpec};
use crate::node::channel::{ChannelOptions, DirectionKeys, Ends, Family, SomeipProfile};
use crate::node::orchestrate::{
    child_stderr, collect_initiator, collect_responder, link_spec, node_addr, spawn, wait_ready,
};
use crate::node::pingpong::{Role, RoleSpec};
use crate::providers::ProviderChoice;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A testbed with three ECUs on one switch is built for the run and removed afterwards: `sensor1` \
is the legitimate sender, `consumer` the receiver, `sensor2` the attacker (a replaced sensor, or \
a device plugged into the vehicle network). The switch floods every frame to every port, so the \
attacker sees the legitimate traffic it replays. For each profile and attack class, a fresh \
ping-pong runs between sender and receiver (100 µs between exchanges) while the attacker \
injects; then the receiver's accepted units and drop counters are read.

Classes: foreign-source, no-key, replay-w1, replay-w1024 (the receiver's replay window), \
bit-flip, length, downgrade, unknown-id, garbage, flood (as fast as the attacker can for \
--flood-seconds). Tampering, length, downgrade and unknown-id alter frames a man in the middle \
intercepted before the receiver saw them (docs/attacks.md says how).

The flood runs with the switch forwarding by address instead (--flood-switch static, the \
default): the attacker needs no copy of the legitimate traffic to flood, and on a switched \
network its frames, addressed to the receiver, reach only the receiver's port. \
The receiver's and the sender's kernel socket drops (a full receive queue) are reported per \
run, so every lost frame is accounted for.

Exit 1 if the receiver accepted any forged or replayed frame, or a legitimate exchange was lost; \
exit 3 without root (raw sockets and namespaces are needed).

SecOC and SOME/IP profiles travel in UDP datagrams between the two ECUs' addresses; the \
attacker injects whole Ethernet/IPv4/UDP frames with correct checksums, and its garbage goes to \
the protocol's UDP port (docs/attacks.md).

Examples:
  sudo ivnsec attack --profile aes128-gcm --profile macsec-gcm-aes-128 --profile esp-aes128-gcm
  sudo ivnsec attack --profile secoc-cmac-aes128 --profile someip-aes128-gcm/conf --count 1000
  sudo ivnsec attack --all --count 10000 --json > attacks.json
  sudo ivnsec attack --profile aes128-gcm --attack flood --flood-seconds 5 --pcap flood.pcap
  sudo ivnsec attack --profile hmac-sha1 --attack flood --flood-switch hub --rcvbuf-mib 32")]
pub struct Args {
    /// Profile to attack (repeatable): an IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…
    /// (`ivnsec suites`), someip-SUITE[/auth|/conf] or someip-nosec. Default: aes128-gcm,
    /// macsec-gcm-aes-128, esp-aes128-gcm, secoc-cmac-aes128, someip-aes128-gcm/conf.
    #[arg(long = "profile", value_name = "P", conflicts_with = "all")]
    pub profiles: Vec<String>,
    /// Every IVN-AE, MACsec, ESP, SecOC and secured SOME/IP profile with a key (not `plain`,
    /// `crc32` or `someip-nosec`, which protect nothing: name them with --profile to see them
    /// fail).
    #[arg(long)]
    pub all: bool,
    /// Attack class to run (repeatable; default: all ten).
    #[arg(long = "attack", value_enum, value_name = "CLASS")]
    pub attacks: Vec<Attack>,
    /// Frames injected per class and profile (the flood runs for --flood-seconds instead).
    #[arg(long, default_value_t = 10_000)]
    pub count: u64,
    /// How long the flood lasts, in seconds.
    #[arg(long, default_value_t = 2.0)]
    pub flood_seconds: f64,
    /// How the switch forwards during the flood: `static` (default) by a fixed address table,
    /// as an in-vehicle switch configured at design time does (each ECU's MAC on its port, no
    /// learning, so spoofed source addresses move nothing); `hub` floods every frame to every
    /// port as for the other classes, so the legitimate sender receives the flood too.
    #[arg(long, value_enum, default_value = "static")]
    pub flood_switch: SwitchMode,
    /// Kernel receive buffer of the legitimate nodes' sockets, in MiB (the kernel doubles it;
    /// set beyond net.core.rmem_max). A larger queue loses fewer frames to a flood and delays
    /// the ones behind it longer.
    #[arg(long, default_value_t = DEFAULT_RCVBUF_MIB, value_name = "MIB")]
    pub rcvbuf_mib: usize,
    /// Payload bytes of the legitimate and the forged messages (8 to 1024).
    #[arg(long, default_value_t = 64)]
    pub payload: usize,
    /// Crypto provider of every node: auto, fast or portable.
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print `{"results": [...]}` as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Record the injected frames (classic pcap, Ethernet): every frame of each class, the
    /// first 10,000 of each flood.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Use a running testbed with at least three ECUs (its first is the sender, its second the
    /// receiver, its third the attacker) instead of building one; its switches are set to
    /// flood for the run and set back afterwards.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
}

/// The result of one class against one profile.
#[derive(Clone, Debug, Serialize)]
pub struct AttackResult {
    pub profile: String,
    pub attack: &'static str,
    pub injected: u64,
    /// Forged or replayed units the receiver accepted.
    pub accepted: u64,
    /// Units the receiver dropped, by reason.
    pub dropped: BTreeMap<String, u64>,
    /// Injected frames the receiver never judged (lost in a full queue during the flood).
    pub not_seen: u64,
    /// Injection rate (frames per second).
    pub rate_fps: f64,
    pub legit_sent: u64,
    /// Legitimate requests the receiver accepted.
    pub legit_delivered: u64,
    /// Legitimate exchanges whose reply never arrived in time.
    pub legit_exchanges_lost: u64,
    /// Forward one-way delay of the legitimate requests (µs).
    pub legit_p50_us: Option<f64>,
    pub legit_p999_us: Option<f64>,
    /// How the switch forwarded during the run: `hub` or `static`.
    pub switch: &'static str,
    /// Frames the kernel dropped at the receiver's sockets because the receive queue was full
    /// (`PACKET_STATISTICS` / `SO_MEMINFO`): the forged and the legitimate ones.
    pub receiver_socket_drops: u64,
    /// The same at the legitimate sender's socket (a lost reply).
    pub initiator_socket_drops: u64,
}

impl AttackResult {
    fn failed(&self) -> bool {
        self.accepted > 0 || self.legit_delivered < self.legit_sent || self.legit_exchanges_lost > 0
    }
}

#[derive(Serialize)]
struct Output<'a> {
    results: &'a [AttackResult],
    testbed: String,
    verdict: &'static str,
}

/// The three roles on the testbed.
struct Roles {
    state: TestbedState,
    sender: String,
    receiver: String,
    attacker: String,
}

const DEFAULT_PROFILES: [&str; 5] = [
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
/// Time the receiver gets to judge queued frames after the attacker stops.
const SETTLE: Duration = Duration::from_millis(300);
/// Default receive buffer of the legitimate nodes (MiB, before the kernel doubles it).
const DEFAULT_RCVBUF_MIB: usize = 16;

pub fn run(a: Args) -> Result<ExitCode> {
    let profiles = profiles(&a)?;
    if a.count == 0 {
        return Err(usage("--count must be at least 1"));
    }
    if !(a.flood_seconds > 0.0 && a.flood_seconds <= 3600.0) {
        return Err(usage("--flood-seconds must be in (0, 3600]"));
    }
    if !(8..=1024).contains(&a.payload) {
        return Err(usage("--payload must be 8 to 1024 bytes"));
    }
    if !(1..=1024).contains(&a.rcvbuf_mib) {
        return Err(usage("--rcvbuf-mib must be 1 to 1024"));
    }
    let attacks: Vec<Attack> = if a.attacks.is_empty() {
        Attack::ALL.to_vec()
    } else {
        let mut v = a.attacks.clone();
        v.sort();
        v.dedup();
        v
    };
    testbed::check_environment().map_err(|e| {
        anyhow::Error::new(EnvError(format!(
            "{e}; `ivnsec attack` injects frames from a testbed node and needs root \
             (run it with sudo)"
        )))
    })?;

    let (owned, roles) = open_testbed(a.testbed.as_deref())?;
    let mut switches = Switches::hub(&roles.state)?;
    let mut pcap = match &a.pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    let tmp = TempDir::new()?;
    let mut results = Vec::new();
    let total = profiles.len() * attacks.len();
    for profile in &profiles {
        for &attack in &attacks {
            if !a.json {
                eprint!(
                    "\rattack {}/{total}: {profile} {:<16}",
                    results.len() + 1,
                    attack.name()
                );
            }
            let part = tmp.0.join(format!("part-{}.pcap", results.len()));
            let mode = if attack == Attack::Flood {
                a.flood_switch
            } else {
                SwitchMode::Hub
            };
            switches.set(mode)?;
            let r = run_one(
                &roles,
                &a,
                profile,
                attack,
                mode,
                pcap.is_some().then_some(&part),
            )
            .with_context(|| format!("{profile}, {}", attack.name()))?;
            if let Some(w) = pcap.as_mut() {
                lab::append_pcap(w, &part)?;
            }
            results.push(r);
        }
    }
    if !a.json {
        eprintln!();
    }
    if let Some(mut w) = pcap {
        w.flush()?;
    }
    drop(tmp);
    drop(switches);
    if let Some(tb) = owned {
        tb.down().map_err(net_err)?;
    }

    let failed = results.iter().any(AttackResult::failed);
    let where_ = format!("{} ({})", roles.state.prefix, roles.state.topology);
    if a.json {
        let out = Output {
            results: &results,
            testbed: where_,
            verdict: if failed { "fail" } else { "pass" },
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(&results);
        println!(
            "\n{}: {} forged or replayed frames accepted, {} legitimate requests lost, on testbed {where_}",
            if failed { "FAIL" } else { "PASS" },
            results.iter().map(|r| r.accepted).sum::<u64>(),
            results
                .iter()
                .map(|r| r.legit_sent - r.legit_delivered.min(r.legit_sent))
                .sum::<u64>(),
        );
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn profiles(a: &Args) -> Result<Vec<String>> {
    let list: Vec<String> = if a.all {
        ivnsec_core::suite::IvnAeProfile::all()
            .map(|p| p.to_string())
            .filter(|p| p != "plain" && p != "crc32")
            .chain(
                ivnsec_core::sa::macsec::CipherSuite::ALL
                    .iter()
                    .map(|s| s.profile().to_string()),
            )
            .chain(
                ivnsec_core::sa::esp::EspAlg::ALL
                    .iter()
                    .map(|e| e.name().to_string()),
            )
            .chain(
                ivnsec_core::sa::secoc::SecocAlg::ALL
                    .iter()
                    .map(|a| a.name().to_string()),
            )
            .chain(
                SomeipProfile::all()
                    .filter(|p| p.level != ivnsec_core::sa::someip::Level::NoSec)
                    .map(|p| p.to_string()),
            )
            .collect()
    } else if a.profiles.is_empty() {
        DEFAULT_PROFILES.iter().map(|s| s.to_string()).collect()
    } else {
        a.profiles.clone()
    };
    for p in &list {
        Family::parse(p)?;
    }
    Ok(list)
}

fn open_testbed(existing: Option<&str>) -> Result<(Option<Testbed>, Roles)> {
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
        let roles = Roles {
            state,
            sender: ecus[0].clone(),
            receiver: ecus[1].clone(),
            attacker: ecus[2].clone(),
        };
        return Ok((None, roles));
    }
    let tb = Testbed::up(&Topology::Sensors(2), &Options::default()).map_err(net_err)?;
    tb.down_on_termination_signal().map_err(net_err)?;
    let roles = Roles {
        state: tb.state().clone(),
        sender: "sensor1".into(),
        receiver: "consumer".into(),
        attacker: "sensor2".into(),
    };
    Ok((Some(tb), roles))
}

/// How the testbed's switches forward frames during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SwitchMode {
    /// Every frame to every port (bridge ageing time 0: no address is learned): a tapped
    /// link, as the attacker of seed 002 has; learning nothing also keeps the attacker's
    /// spoofed source addresses from pulling the legitimate sender's traffic to its port.
    Hub,
    /// A fixed address table: each ECU's MAC on the port toward it, learning off on every
    /// port, as an in-vehicle switch configured at design time forwards. A frame reaches only
    /// the port of the address it is sent to, and a spoofed source address moves nothing.
    Static,
}

impl SwitchMode {
    fn name(self) -> &'static str {
        match self {
            SwitchMode::Hub => "hub",
            SwitchMode::Static => "static",
        }
    }
}

/// One entry of the static address table: on switch namespace `ns`, `mac` is behind `port`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FdbEntry {
    ns: String,
    port: String,
    mac: String,
}

/// The static address table of a testbed: for every switch and every ECU, the switch port
/// toward the ECU (the first port whose side of the network holds it; the testbed
/// topologies are trees).
fn static_table(state: &TestbedState) -> Vec<FdbEntry> {
    let node_of = |peer: &str| peer.split('/').next().unwrap_or_default().to_string();
    let mut out = Vec::new();
    for sw in state.nodes.iter().filter(|n| n.kind == "switch") {
        let mut seen: HashSet<String> = HashSet::from([sw.name.clone()]);
        for port in &sw.interfaces {
            let Some(peer) = &port.peer else { continue };
            let mut queue = std::collections::VecDeque::from([node_of(peer)]);
            while let Some(name) = queue.pop_front() {
                if !seen.insert(name.clone()) {
                    continue;
                }
                let Some(node) = state.node(&name) else {
                    continue;
                };
                for i in &node.interfaces {
                    if node.kind == "ecu" && i.name == topology::ECU_IF {
                        out.push(FdbEntry {
                            ns: sw.namespace.clone(),
                            port: port.name.clone(),
                            mac: i.mac.clone(),
                        });
                    }
                    if let Some(p) = &i.peer {
                        queue.push_back(node_of(p));
                    }
                }
            }
        }
    }
    out
}

/// The switches of a testbed in the mode of the run; set back to an ordinary learning switch
/// with the default ageing time when dropped.
struct Switches {
    switches: Vec<String>,
    table: Vec<FdbEntry>,
    mode: SwitchMode,
}

/// The Linux bridge default ageing time (centiseconds).
const DEFAULT_AGEING: &str = "30000";

impl Switches {
    /// Every switch of `state` in hub mode.
    fn hub(state: &TestbedState) -> Result<Switches> {
        let switches: Vec<String> = state
            .nodes
            .iter()
            .filter(|n| n.kind == "switch")
            .map(|n| n.namespace.clone())
            .collect();
        let s = Switches {
            switches,
            table: static_table(state),
            mode: SwitchMode::Hub,
        };
        for ns in &s.switches {
            set_ageing(ns, "0")?;
        }
        Ok(s)
    }

    /// Switches to `mode` (no change when already in it).
    fn set(&mut self, mode: SwitchMode) -> Result<()> {
        if mode == self.mode {
            return Ok(());
        }
        match mode {
            SwitchMode::Static => {
                self.mode = SwitchMode::Static;
                for e in &self.table {
                    bridge(
                        &e.ns,
                        &["fdb", "replace", &e.mac, "dev", &e.port, "master", "static"],
                    )?;
                    bridge(&e.ns, &["link", "set", "dev", &e.port, "learning", "off"])?;
                }
            }
            SwitchMode::Hub => {
                self.unset_static()?;
                self.mode = SwitchMode::Hub;
            }
        }
        Ok(())
    }

    /// Removes the static table and turns learning back on (ageing time 0 keeps it a hub).
    fn unset_static(&self) -> Result<()> {
        let mut first_err = None;
        for e in &self.table {
            for r in [
                bridge(
                    &e.ns,
                    &["fdb", "del", &e.mac, "dev", &e.port, "master", "static"],
                ),
                bridge(&e.ns, &["link", "set", "dev", &e.port, "learning", "on"]),
            ] {
                if let Err(err) = r {
                    first_err.get_or_insert(err);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Switches {
    fn drop(&mut self) {
        if self.mode == SwitchMode::Static {
            let _ = self.unset_static();
        }
        for ns in &self.switches {
            let _ = set_ageing(ns, DEFAULT_AGEING);
        }
    }
}

fn set_ageing(ns: &str, centiseconds: &str) -> Result<()> {
    ip(
        ns,
        &[
            "link",
            "set",
            "dev",
            topology::BRIDGE_IF,
            "type",
            "bridge",
            "ageing_time",
            centiseconds,
        ],
    )
}

fn bridge(ns: &str, args: &[&str]) -> Result<()> {
    tool("bridge", ns, args)
}

fn ip(ns: &str, args: &[&str]) -> Result<()> {
    tool("ip", ns, args)
}

/// Runs `ip` or `bridge` (iproute2) with `-n ns`.
fn tool(name: &str, ns: &str, args: &[&str]) -> Result<()> {
    let out = die_with_parent(&mut Command::new(name))
        .arg("-n")
        .arg(ns)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {name}"))?;
    if !out.status.success() {
        bail!(
            "{name} -n {ns} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A directory for the attacker's capture parts, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir> {
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

/// One class against one profile: receiver, legitimate sender, attacker; then the accounts.
fn run_one(
    roles: &Roles,
    a: &Args,
    profile: &str,
    attack: Attack,
    mode: SwitchMode,
    pcap: Option<&PathBuf>,
) -> Result<AttackResult> {
    let family = Family::parse(profile)?;
    let forward = DirectionKeys::random(profile)?;
    let backward = DirectionKeys::random(profile)?;
    let s = node_addr(&roles.state, &roles.sender)?;
    let r = node_addr(&roles.state, &roles.receiver)?;
    let x = node_addr(&roles.state, &roles.attacker)?;
    let ns = |n: &str| -> Result<String> {
        Ok(roles.state.namespace_of(n).map_err(net_err)?.to_string())
    };
    let sender_ends = Ends {
        local_mac: s.0,
        peer_mac: r.0,
        local_ip: s.1,
        peer_ip: r.1,
    };
    let recv_ends = sender_ends.reversed();
    let base = |role, ends: Ends| RoleSpec {
        role,
        profile: profile.to_string(),
        provider: a.provider.to_string(),
        payload: a.payload,
        count: u32::MAX,
        replications: 1,
        pause_ns: LEGIT_PAUSE.as_nanos() as u64,
        timeout_ns: LEGIT_TIMEOUT.as_nanos() as u64,
        busy_poll: false,
        cpu: None,
        link: link_spec(true, family, &ends, None),
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
        rcvbuf: Some(a.rcvbuf_mib << 20),
    };
    let mut res_spec = base(Role::Responder, recv_ends);
    res_spec.watch_plain = true;
    let mut responder = spawn(Some(&ns(&roles.receiver)?), &res_spec)?;
    let mut res_out = BufReader::new(responder.stdout.take().expect("piped"));
    if let Err(e) = wait_ready(&mut res_out) {
        let _ = responder.kill();
        let err = child_stderr(&mut responder);
        let _ = responder.wait();
        return Err(e.context(format!("the receiver did not start: {err}")));
    }
    let mut ini_spec = base(Role::Initiator, sender_ends);
    ini_spec.until_eof = true;
    let initiator = spawn(Some(&ns(&roles.sender)?), &ini_spec);

    let spec = AttackSpec {
        attack,
        profile: profile.to_string(),
        provider: a.provider.to_string(),
        payload: a.payload,
        count: a.count,
        flood_ns: (a.flood_seconds * 1e9) as u64,
        ifname: topology::ECU_IF.to_string(),
        sender: sender_ends,
        attacker_mac: x.0,
        attacker_ip: x.1,
        forward: forward.clone(),
        pcap: pcap.cloned(),
        pcap_limit: if attack == Attack::Flood {
            FLOOD_PCAP_LIMIT
        } else {
            u64::MAX
        },
    };
    let attacker = initiator
        .as_ref()
        .map_err(|e| anyhow!("{e:#}"))
        .and_then(|_| run_attacker(&ns(&roles.attacker)?, &spec));
    std::thread::sleep(SETTLE);

    // Stop the legitimate sender, then the receiver, whatever happened.
    let ini = initiator.and_then(|mut c| {
        drop(c.stdin.take());
        collect_initiator(&mut c)
    });
    drop(responder.stdin.take());
    let res = collect_responder(&mut res_out);
    let res_err = child_stderr(&mut responder);
    let status = responder.wait()?;
    let (injected, seconds) = attacker?;
    let ini = ini?;
    let res = res.with_context(|| format!("receiver: {res_err}"))?;
    if !status.success() {
        bail!("the receiver failed ({status}): {res_err}");
    }

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
    for &(id, _, _, at) in &res.log {
        match sent.get(&id) {
            Some(&start) if seen.insert(id) => {
                owd_us.push(at.saturating_sub(start) as f64 / 1e3);
            }
            _ => accepted += 1,
        }
    }
    let dropped: BTreeMap<String, u64> = res.drops.into_iter().collect();
    let judged = accepted + dropped.values().sum::<u64>();
    owd_us.sort_by(f64::total_cmp);
    let q = |p: f64| (!owd_us.is_empty()).then(|| ivnsec_lab::stats::quantile_sorted(&owd_us, p));
    Ok(AttackResult {
        profile: profile.to_string(),
        attack: attack.name(),
        injected,
        accepted,
        dropped,
        not_seen: injected.saturating_sub(judged),
        rate_fps: if seconds > 0.0 {
            injected as f64 / seconds
        } else {
            0.0
        },
        legit_sent: sent.len() as u64,
        legit_delivered: seen.len() as u64,
        legit_exchanges_lost: ini.records.iter().filter(|e| e.lost).count() as u64,
        legit_p50_us: q(0.5),
        legit_p999_us: q(0.999),
        switch: mode.name(),
        receiver_socket_drops: res.socket_drops,
        initiator_socket_drops: ini.socket_drops,
    })
}

/// Runs the attacker process to its end; returns (frames injected, seconds it took).
fn run_attacker(ns: &str, spec: &AttackSpec) -> Result<(u64, f64)> {
    // Frames to other hosts reach the attacker's port (the switch floods); its interface
    // takes them in.
    ip(
        ns,
        &["link", "set", "dev", topology::ECU_IF, "promisc", "on"],
    )?;
    let exe = std::env::current_exe().context("locating the ivnsec binary")?;
    let mut cmd = netns_command(ns, &exe);
    cmd.args(["node", "attack"])
        .env(attack::SPEC_ENV, serde_json::to_string(spec)?)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = die_with_parent(&mut cmd)
        .spawn()
        .context("starting the attacker")?;
    let mut text = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut text)?;
    let err = child_stderr(&mut child);
    let status = child.wait()?;
    if !status.success() {
        bail!("the attacker failed ({status}): {err}");
    }
    let (mut injected, mut seconds, mut ended) = (None, 0.0, false);
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        match (f.next(), f.next()) {
            (Some("INJECTED"), Some(n)) => injected = n.parse().ok(),
            (Some("SECONDS"), Some(s)) => seconds = s.parse().unwrap_or(0.0),
            (Some("END"), None) => ended = true,
            _ => bail!("attacker: unexpected line {line:?}"),
        }
    }
    match (injected, ended) {
        (Some(n), true) => Ok((n, seconds)),
        _ => bail!("the attacker ended without its counts: {err}"),
    }
}

fn print_table(results: &[AttackResult]) {
    println!(
        "{:<26} {:<15} {:>9} {:>8} {:>8} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8}  dropped by reason",
        "profile",
        "attack",
        "injected",
        "accepted",
        "not seen",
        "legit",
        "lost",
        "p50 µs",
        "p99.9 µs",
        "rx qdrop",
        "tx qdrop"
    );
    let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    for r in results {
        let reasons: Vec<String> = r.dropped.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let attack = if r.switch == "hub" {
            r.attack.to_string()
        } else {
            format!("{} ({})", r.attack, r.switch)
        };
        println!(
            "{:<26} {:<15} {:>9} {:>8} {:>8} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8}  {}",
            r.profile,
            attack,
            r.injected,
            r.accepted,
            r.not_seen,
            r.legit_sent,
            r.legit_sent - r.legit_delivered.min(r.legit_sent) + r.legit_exchanges_lost,
            us(r.legit_p50_us),
            us(r.legit_p999_us),
            r.receiver_socket_drops,
            r.initiator_socket_drops,
            reasons.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(t: &str) -> Vec<(String, String, String)> {
        let topo: Topology = t.parse().unwrap();
        let state = TestbedState::planned("ivn-000000", &topo);
        let mac = |node: &str| state.node(node).unwrap().interfaces[0].mac.clone();
        let mut v: Vec<(String, String, String)> = static_table(&state)
            .into_iter()
            .map(|e| {
                let ecu = state
                    .ecus()
                    .find(|n| n.interfaces[0].mac == e.mac)
                    .unwrap()
                    .name
                    .clone();
                assert_eq!(e.mac, mac(&ecu));
                (e.ns, e.port, ecu)
            })
            .collect();
        v.sort();
        v
    }

    /// One switch: each ECU's MAC on its own port, nothing else.
    #[test]
    fn static_table_of_one_switch() {
        let t = |p: &str, e: &str| ("ivn-000000-sw0".to_string(), p.to_string(), e.to_string());
        assert_eq!(
            entries("sensors:2"),
            vec![
                t("to-consumer", "consumer"),
                t("to-sensor1", "sensor1"),
                t("to-sensor2", "sensor2"),
            ]
        );
    }

    /// A chain of switches: every switch has an entry for every ECU, on the port toward it.
    #[test]
    fn static_table_of_a_cascade() {
        let topo: Topology = "cascade:3".parse().unwrap();
        let state = TestbedState::planned("ivn-000000", &topo);
        let switches: Vec<_> = state.nodes.iter().filter(|n| n.kind == "switch").collect();
        let ecus: Vec<_> = state.ecus().collect();
        assert!(switches.len() >= 2, "{state:?}");
        let v = entries("cascade:3");
        assert_eq!(v.len(), switches.len() * ecus.len(), "{v:?}");
        for (ns, port, ecu) in &v {
            let sw = switches.iter().find(|s| &s.namespace == ns).unwrap();
            let iface = sw.interfaces.iter().find(|i| &i.name == port).unwrap();
            let peer = iface.peer.as_deref().unwrap();
            // The port leads to the ECU itself or to the next switch on the way to it.
            let direct = peer == format!("{ecu}/{}", topology::ECU_IF);
            let via_switch = state
                .node(peer.split('/').next().unwrap())
                .is_some_and(|n| n.kind == "switch");
            assert!(direct || via_switch, "{ns} {port} → {peer} for {ecu}");
            // An ECU attached to this switch is reached directly, never through a trunk.
            let local = sw
                .interfaces
                .iter()
                .any(|i| i.peer.as_deref() == Some(&format!("{ecu}/{}", topology::ECU_IF)));
            assert_eq!(local, direct, "{ns} {port} for {ecu}");
        }
    }
}
