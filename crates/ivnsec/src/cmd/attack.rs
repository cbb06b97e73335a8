//! `ivnsec attack`: a legitimate sender and receiver run the ping-pong on a testbed switch while
//! an attacker node on the same switch injects forged, replayed and altered frames, class by
//! class and profile by profile (seed 002 §3, §5.2.4). Reports what was injected, what the
//! receiver accepted and dropped (by reason), and what happened to the legitimate traffic.
//! The experiment is `ivnsec_lab::attack`; this command parses the options and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::output::Json;
use ivnsec_core::profile::{MacsecProfile, NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::attack::eap::EapAttack;
use ivnsec_lab::attack::eap_run::{self, EapAttackConfig, run_eap_attacks};
use ivnsec_lab::attack::mka::MkaAttack;
use ivnsec_lab::attack::mka_run::{self, MkaAttackConfig, run_mka_attacks};
use ivnsec_lab::attack::run::{
    AttackConfig, DEFAULT_RCVBUF_MIB, Progress, SwitchMode, profiles, run_attacks,
};
use ivnsec_lab::attack::{Attack, AttackResult};
use ivnsec_net::topology::Topology;

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

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its nodes, the MKA members \
and the testbed go; the switches are set back): the table (or JSON) holds the classes that \
finished before it, the one in progress left out, marked `\"interrupted\": true` in JSON and \
by a last line `interrupted: …` in text; exit 130 (128 + the signal).

SecOC and SOME/IP profiles travel in UDP datagrams between the two ECUs' addresses; the \
attacker injects whole Ethernet/IPv4/UDP frames with correct checksums, and its garbage goes to \
the protocol's UDP port (docs/attacks.md).

MKA (--mka): the first two ECUs run `ivnsec macsec up --psk` with one CAK, agree a SAK and ping \
each other through their TAPs every 10 ms; the third injects MKPDUs (EAPOL-MKA to \
01-80-C2-00-00-03; the switches forward that group address for the run): mka-bad-icv (a member's \
MKPDU altered to win the key server election and carry a SAK, with an ICV the attacker cannot \
compute), mka-stale-mn (members' MKPDUs replayed), mka-foreign-ckn (another CA's MKPDUs with a \
valid ICV under its own CAK), mka-sak-not-key-server (an insider holding the CAK, priority 255, \
distributing SAKs). Judged from the members' MKA drop counters and events: accepted counts peers \
made live with the attacker's MI (not for the insider, which is a member), SAKs installed that \
no elected key server distributed, and key server elections during the class; the ping must \
lose nothing. --profile takes MACsec profiles (default macsec-gcm-aes-128); --count is MKPDUs \
per class (default 1000, 2000 per second).

802.1X (--eap): sensor1 runs `ivnsec macsec up --eap-tls` (the supplicant, certificate from a \
PKI made for the run), the consumer `ivnsec macsec up --authenticator` (key server, \
re-authenticating every 2 s, at most 16 supplicants) with a FreeRADIUS of the run's own in \
sensor1's namespace on sensor1's plain address, so that RADIUS crosses the switch where the \
attacker sees it (freeradius must be installed); once EAP-TLS and MKA secured the link they \
ping each other through their TAPs every 10 ms while sensor2 injects: eap-logoff-spoofed \
(EAPOL-Logoff to the authenticator from the attacker's and from random MACs), \
eap-failure-spoofed (EAP-Failure and EAP-Success with every identifier to the supplicant and the \
group address), radius-forged-accept (each sniffed Access-Request answered at once by an \
Access-Accept spoofed from the RADIUS server, with a random Response Authenticator and MS-MPPE \
keys of the attacker's own; unsolicited ones too; for 5 s at least), eapol-start-flood \
(EAPOL-Start from --count random MACs as fast as possible). Judged from both members' events and \
status: accepted counts EAP failures and CAK changes or removals not made by the legitimate \
re-authentications, authenticator successes under a CKN the supplicant never derived, RADIUS \
accepts beyond the legitimate ones, sessions above the bound and the supplicant losing its \
session; `dropped` holds the PAE drops of both members and the RADIUS client's as \
`radius.REASON`; the ping must lose nothing. --count is frames per class (default 1000).

Through gateways (--topology bump2): a fresh bump2 testbed, its two gateways started with a \
fresh macsec-gcm-aes-128 key (as a plan on bump2 starts them); the legacy ECUs ecu1 (sender) and \
ecu2 (receiver) run the ping-pong unprotected through them, and the attacker injects on the \
protected side (a packet socket on the switch's bridge). Every class forges the gateways' \
MACsec (replays are genuine frames captured there; foreign-source and downgrade frames carry \
the legacy ECU's own MAC). Judged on the legacy ECU: any forged unit reaching it counts as \
accepted; `dropped` holds the victim gateway's (gw2) drops by reason, and `gateway` in --json \
each gateway's drops, frames from the protected port and frames written to its legacy ECU. \
--topology bump (seed 002 testbench 2): the legacy sensor1 sends through its gateway gw1 to a \
MACsec consumer (its `ivnsec macsec up` started by the run with the gateway's key); the victim \
is the consumer's own SecY (`dropped` holds its drops) and any forged unit reaching the \
consumer's host counts as accepted.

On the production network (--topology production, seed 002 testbench 3): a fresh `production` \
testbed (four switches with redundant links under the kernel's STP, built once the tree has \
converged); `sensor1` on sw1 is the legitimate sender, the `consumer` (on sw0 by three links, \
one forwarding) the receiver, `sensor2` on sw1 the attacker. Every switch floods for the \
classes (the attacker on the sender's switch sees the legitimate traffic, as on sensors:2); \
for the flood, every switch gets the static address table along the spanning tree: each ECU's \
MAC on the one port the tree carries its frames on (the blocked redundant links and the \
consumer's standby uplinks hold none), so the attacker's frames cross sw1 and sw0 to the \
consumer's forwarding uplink only. Same classes, verdicts, counters and JSON as on sensors:2; \
with --mka, sensor1 and the consumer are the two members.

Across hosts (--hosts PLAN, docs/multihost.md): the nodes start over SSH on the plan's [[host]] \
tables, as every experiment across hosts does (settings and keys over the SSH channel, never on \
a command line): the legitimate sender on the first host, the receiver on the second, the \
attacker on a third host if the plan has one (or the one --attacker names), else on the sender's \
host (a compromised ECU on the same link, with an address of its own). ivnsec sets no switch \
there: the classes run through the bench's switch as it is (`switch` is `bench`); the replays \
use what the attacker captures on its interface (promiscuous, every EtherType: its own host's \
egress beside the sender, else what the switch lets reach its port), and a replay class that \
captured nothing is reported as not run with the reason; the flood runs only with --flood-switch \
bench (static and hub set the testbed's switch: reported as not run). Not-run classes are \
listed, never counted as passed. Legitimate delays are round trips there (legit_rtt_*). A lost \
SSH connection or a failed node ends the run with exit 3 naming the host. Not with --mka, \
--testbed, --topology or --pcap.

Examples:
  sudo ivnsec attack --profile aes128-gcm --profile macsec-gcm-aes-128 --profile esp-aes128-gcm
  sudo ivnsec attack --profile secoc-cmac-aes128 --profile someip-aes128-gcm/conf --count 1000
  sudo ivnsec attack --all --count 10000 --json > attacks.json
  sudo ivnsec attack --profile aes128-gcm --attack flood --flood-seconds 5 --pcap flood.pcap
  sudo ivnsec attack --profile hmac-sha1 --attack flood --flood-switch hub --rcvbuf-mib 32
  sudo ivnsec attack --mka --profile macsec-gcm-aes-xpn-256 --json
  sudo ivnsec attack --mka --mka-attack mka-stale-mn --count 5000
  sudo ivnsec attack --eap --count 200 --json
  sudo ivnsec attack --eap --eap-attack radius-forged-accept --eap-attack eapol-start-flood
  sudo ivnsec attack --topology production --count 2000 --json > production-attacks.json
  sudo ivnsec attack --topology bump2 --count 2000 --json > gateway-attacks.json
  sudo ivnsec attack --topology bump --attack bit-flip --attack flood --count 2000
  ivnsec attack --hosts bench.toml --profile aes128-gcm --count 2000 --json
  ivnsec attack --hosts bench.toml --attacker ecu3 --attack replay-w1 --attack flood --flood-switch bench")]
pub struct Args {
    /// Profile to attack (repeatable): an IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…
    /// (`ivnsec suites`), someip-SUITE[/auth|/conf] or someip-nosec. Default: aes128-gcm,
    /// macsec-gcm-aes-128, esp-aes128-gcm, secoc-cmac-aes128, someip-aes128-gcm/conf.
    #[arg(long = "profile", value_name = "P", conflicts_with = "all",
          value_parser = super::profile_arg)]
    pub profiles: Vec<NamedProfile>,
    /// Every IVN-AE, MACsec, ESP, SecOC and secured SOME/IP profile with a key (not `plain`,
    /// `crc32` or `someip-nosec`, which protect nothing: name them with --profile to see them
    /// fail). With --mka: the four MACsec profiles.
    #[arg(long)]
    pub all: bool,
    /// Attack class to run (repeatable; default: all ten).
    #[arg(
        long = "attack",
        value_enum,
        value_name = "CLASS",
        conflicts_with_all = ["mka", "eap"]
    )]
    pub attacks: Vec<AttackArg>,
    /// Attack MKA key agreement instead: two members run `macsec up --psk`, the attacker
    /// injects MKPDUs (the four --mka-attack classes).
    #[arg(long, conflicts_with = "eap")]
    pub mka: bool,
    /// With --mka: the MKA class to run (repeatable; default: all four).
    #[arg(
        long = "mka-attack",
        value_enum,
        value_name = "CLASS",
        requires = "mka"
    )]
    pub mka_attacks: Vec<MkaAttackArg>,
    /// Attack 802.1X instead: a supplicant (`macsec up --eap-tls`) and an authenticator
    /// (`--authenticator`, FreeRADIUS behind it) secure the link, the attacker injects
    /// spoofed EAPOL, EAP and RADIUS (the four --eap-attack classes).
    /// Example: sudo ivnsec attack --eap --count 200
    #[arg(long)]
    pub eap: bool,
    /// With --eap: the 802.1X class to run (repeatable; default: all four).
    #[arg(
        long = "eap-attack",
        value_enum,
        value_name = "CLASS",
        requires = "eap"
    )]
    pub eap_attacks: Vec<EapAttackArg>,
    /// Frames injected per class and profile (the flood runs for --flood-seconds instead).
    /// Default 10000; with --mka, MKPDUs per class, default 1000; with --eap, frames per class,
    /// default 1000.
    #[arg(long)]
    pub count: Option<u64>,
    /// How long the flood lasts, in seconds.
    #[arg(long, default_value_t = 2.0)]
    pub flood_seconds: f64,
    /// How the switch forwards during the flood: `static` (default) by a fixed address table,
    /// as an in-vehicle switch configured at design time does (each ECU's MAC on its port, no
    /// learning, so spoofed source addresses move nothing); `hub` floods every frame to every
    /// port as for the other classes, so the legitimate sender receives the flood too; `bench`
    /// (only with --hosts) floods through the bench's switch as it is configured.
    #[arg(long, value_enum, default_value = "static")]
    pub flood_switch: SwitchArg,
    /// Kernel receive buffer of the legitimate nodes' sockets, in MiB (the kernel doubles it;
    /// set beyond net.core.rmem_max). A larger queue loses fewer frames to a flood and delays
    /// the ones behind it longer.
    #[arg(long, default_value_t = DEFAULT_RCVBUF_MIB, value_name = "MIB")]
    pub rcvbuf_mib: usize,
    /// Payload bytes of the legitimate and the forged messages (8 to 1024).
    #[arg(long, default_value_t = 64)]
    pub payload: usize,
    /// Crypto provider of every node: auto, fast, openssl or portable.
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print `{"results": [...]}` as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Record the injected frames (classic pcap, Ethernet): every frame of each class, the
    /// first 10,000 of each flood.
    #[arg(long)]
    pub pcap: Option<PathBuf>,
    /// Run across the hosts of this plan's `[[host]]` tables over SSH (docs/multihost.md): the
    /// sender on the first, the receiver on the second, the attacker on the third (or
    /// --attacker), else beside the sender.
    /// Example: ivnsec attack --hosts bench.toml --profile aes128-gcm --count 2000
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["mka", "eap", "testbed", "topology", "pcap"])]
    pub hosts: Option<PathBuf>,
    /// With --hosts: the `[[host]]` (by name) that runs the attacker; the sender's host's name
    /// puts it beside the sender. Default: the plan's third host, else the sender's.
    #[arg(long, value_name = "NAME", requires = "hosts")]
    pub attacker: Option<String>,
    /// Use a running testbed with at least three ECUs (its first is the sender, its second the
    /// receiver, its third the attacker; on a `production` testbed sensor1, the consumer and
    /// sensor2, as with --topology production) instead of building one; its switches are set
    /// to flood for the run and set back afterwards.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
    /// Build this topology instead of `sensors:2`: `production` (seed 002 testbench 3: four
    /// switches under STP; sensor1 sends to the consumer across the tree, sensor2 on sensor1's
    /// switch attacks; every profile and class, also with --mka), or attack the protected port
    /// of bump-in-the-wire gateways: `bump2` (two legacy ECUs, each behind an `ivnsec gateway`,
    /// started by the run) or `bump` (a legacy sensor behind a gateway, a MACsec consumer);
    /// those two take profile macsec-gcm-aes-128 (the gateways') and not --mka. Not with
    /// --testbed. Example: sudo ivnsec attack --topology production --profile aes128-gcm
    #[arg(long, value_name = "TOPOLOGY", conflicts_with = "testbed")]
    pub topology: Option<String>,
}

#[derive(Serialize)]
struct Output<'a> {
    results: &'a [AttackResult],
    testbed: String,
    verdict: &'static str,
    /// Classes reported as not run (each result says why); not part of the verdict.
    not_run: usize,
    /// Across hosts: the hosts of the sender, the receiver and the attacker.
    #[serde(skip_serializing_if = "Option::is_none")]
    hosts: Option<serde_json::Value>,
    /// Stopped by a signal: `results` holds the classes that finished before it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    interrupted: bool,
}

impl Args {
    /// `--topology`, parsed.
    fn topology(&self) -> Result<Option<Topology>> {
        self.topology
            .as_deref()
            .map(|t| {
                t.parse::<Topology>()
                    .map_err(|e| crate::error::usage(format!("--topology {t}: {e}")))
            })
            .transpose()
    }

    /// The lab's settings of this run (the profile names checked).
    fn config(&self) -> Result<AttackConfig> {
        let topology = self.topology()?;
        let through_gateways = matches!(topology, Some(Topology::Bump | Topology::Bump2));
        let profiles = if through_gateways && self.profiles.is_empty() && !self.all {
            vec![
                ivnsec_lab::site::GATEWAY_PROFILE
                    .parse()
                    .expect("the gateways' profile is a profile"),
            ]
        } else {
            profiles(self.all, &self.profiles)
        };
        Ok(AttackConfig {
            profiles,
            attacks: self.attacks.iter().map(|&x| x.into()).collect(),
            count: self.count.unwrap_or(10_000),
            flood_seconds: self.flood_seconds,
            flood_switch: self.flood_switch.into(),
            rcvbuf_mib: self.rcvbuf_mib,
            payload: self.payload,
            provider: self.provider,
            pcap: self.pcap.clone(),
            testbed: self.testbed.clone(),
            topology,
            hosts: None,
        })
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut doc = Json::claim(a.json)?;
    let json = a.json;
    // Ctrl-C: the classes that finished are printed, marked interrupted.
    crate::interrupted::watch()?;
    let mut cfg_hosts = None;
    let out = if a.eap {
        if a.pcap.is_some() {
            return Err(crate::error::usage(
                "--pcap records the injected frames of the frame classes; with --eap capture \
                 the testbed's switch port instead (EtherType 0x888E, UDP port 1812)",
            ));
        }
        if a.all {
            return Err(crate::error::usage(
                "--all with --eap: the 802.1X classes attack key agreement, not a profile; name \
                 MACsec profiles with --profile (default macsec-gcm-aes-128)",
            ));
        }
        let cfg = EapAttackConfig {
            profiles: a.profiles.clone(),
            attacks: a.eap_attacks.iter().map(|&x| x.into()).collect(),
            count: a.count.unwrap_or(eap_run::DEFAULT_COUNT),
            provider: a.provider,
            testbed: a.testbed.clone(),
            topology: a.topology()?,
        };
        run_eap_attacks(&cfg, &mut |p| match p {
            _ if json => {}
            Some((index, total, profile, attack)) => {
                eprint!("\rattack {index}/{total}: {profile} {:<24}", attack.name())
            }
            None => eprintln!(),
        })?
    } else if a.mka {
        if a.pcap.is_some() {
            return Err(crate::error::usage(
                "--pcap records the injected frames of the frame classes; with --mka capture \
                 the testbed's switch port instead (EtherType 0x888E)",
            ));
        }
        let profiles = if a.all {
            ivnsec_core::sa::macsec::CipherSuite::ALL
                .iter()
                .map(|&suite| {
                    NamedProfile::from(Profile::Macsec(MacsecProfile {
                        suite,
                        confidentiality: true,
                    }))
                })
                .collect()
        } else {
            a.profiles.clone()
        };
        let cfg = MkaAttackConfig {
            profiles,
            attacks: a.mka_attacks.iter().map(|&x| x.into()).collect(),
            count: a.count.unwrap_or(mka_run::DEFAULT_COUNT),
            provider: a.provider,
            testbed: a.testbed.clone(),
            topology: a.topology()?,
        };
        run_mka_attacks(&cfg, &mut |p| match p {
            _ if json => {}
            Some((index, total, profile, attack)) => {
                eprint!("\rattack {index}/{total}: {profile} {:<24}", attack.name())
            }
            None => eprintln!(),
        })?
    } else {
        let mut cfg = a.config()?;
        if let Some(plan) = &a.hosts {
            // The options are checked before any host is asked.
            cfg.hosts = None;
            cfg.check_for_hosts()?;
            cfg.hosts = Some(ivnsec_lab::attack::hosts::open(
                plan,
                a.attacker.as_deref(),
            )?);
        }
        cfg_hosts = cfg.hosts.clone();
        run_attacks(&cfg, &mut |p| match p {
            _ if json => {}
            Progress::Start {
                index,
                total,
                profile,
                attack,
            } => eprint!("\rattack {index}/{total}: {profile} {:<16}", attack.name()),
            Progress::Done => eprintln!(),
        })?
    };

    let interrupted = crate::interrupted::requested();
    let failed = out.failed();
    let results = &out.results;
    let where_ = out.testbed.clone();
    let not_run: Vec<&AttackResult> = results.iter().filter(|r| !r.ran()).collect();
    let hosts = cfg_hosts.as_ref().map(|h| {
        serde_json::json!({
            "sender": ivnsec_lab::hosts::describe(&h.sender),
            "receiver": ivnsec_lab::hosts::describe(&h.receiver),
            "attacker": ivnsec_lab::hosts::describe(&h.attacker),
            "attacker_beside_sender": h.colocated,
        })
    });
    if a.json {
        let out = Output {
            results,
            testbed: where_,
            verdict: if failed { "fail" } else { "pass" },
            not_run: not_run.len(),
            hosts,
            interrupted,
        };
        doc.print(&out)?;
    } else {
        print_table(results);
        for r in &not_run {
            println!(
                "{} {}: {}",
                r.profile,
                r.attack,
                r.not_run.as_deref().unwrap_or_default()
            );
        }
        println!(
            "\n{}: {} forged or replayed frames accepted, {} legitimate requests lost, {} \
             class runs not run (not counted), on {}{where_}",
            if failed { "FAIL" } else { "PASS" },
            results.iter().map(|r| r.accepted).sum::<u64>(),
            results
                .iter()
                .map(|r| r.legit_sent - r.legit_delivered.min(r.legit_sent))
                .sum::<u64>(),
            not_run.len(),
            if cfg_hosts.is_some() { "" } else { "testbed " },
        );
        if interrupted {
            println!(
                "{}",
                crate::interrupted::line(
                    "the class in progress and those after it did not run (not counted)"
                )
            );
        }
    }
    if interrupted {
        return Ok(crate::interrupted::code());
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// How the testbed's switches forward frames during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SwitchArg {
    /// Every frame to every port (bridge ageing time 0: no address is learned): a tapped
    /// link, as the attacker of seed 002 has; learning nothing also keeps the attacker's
    /// spoofed source addresses from pulling the legitimate sender's traffic to its port.
    Hub,
    /// A fixed address table: each ECU's MAC on the port toward it, learning off on every
    /// port, as an in-vehicle switch configured at design time forwards. A frame reaches only
    /// the port of the address it is sent to, and a spoofed source address moves nothing.
    Static,
    /// Only with --hosts: the bench's own switch as its owner configured it (ivnsec sets
    /// nothing on it).
    Bench,
}

impl From<SwitchArg> for SwitchMode {
    fn from(s: SwitchArg) -> SwitchMode {
        match s {
            SwitchArg::Hub => SwitchMode::Hub,
            SwitchArg::Static => SwitchMode::Static,
            SwitchArg::Bench => SwitchMode::Bench,
        }
    }
}

/// The attack classes as `--attack` names them.
/// The attack classes as `--attack` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum AttackArg {
    /// A frame from the attacker's own address and identity under its own key (002 test 1).
    ForeignSource,
    /// The legitimate sender's address, key id / SCI / SPI, but a key the receiver does not
    /// share (002 test 2).
    NoKey,
    /// Replays of captured legitimate frames against a receiver with replay window 1: the
    /// newest (a duplicate) and ones older than the window (002 test 3).
    ReplayW1,
    /// The same against replay window 1024.
    ReplayW1024,
    /// Single-bit flips in the source address and header fields, the sequence number / PN,
    /// the payload and the tag (002 test 4).
    BitFlip,
    /// Truncated and extended frames, and a wrong length field (MACsec SL, IPv4 total length,
    /// SecOC PDU length, SOME/IP Length).
    Length,
    /// The payload sent unprotected, or at a weaker level (authentication instead of
    /// confidentiality, or a weaker suite).
    Downgrade,
    /// An unknown key id / AN / SCI / SPI / SecOC PDU id (Data ID) / SOME/IP service or key id.
    UnknownId,
    /// Random bytes with the protocol's EtherType (ESP: random bytes as IPv4 protocol 50;
    /// SecOC, SOME/IP: a random UDP datagram to the protocol's port).
    Garbage,
    /// Invalid frames as fast as the attacker can send them, for a fixed time, while the
    /// legitimate ping-pong runs: its latency and loss under the flood.
    Flood,
}

impl From<AttackArg> for Attack {
    fn from(a: AttackArg) -> Attack {
        match a {
            AttackArg::ForeignSource => Attack::ForeignSource,
            AttackArg::NoKey => Attack::NoKey,
            AttackArg::ReplayW1 => Attack::ReplayW1,
            AttackArg::ReplayW1024 => Attack::ReplayW1024,
            AttackArg::BitFlip => Attack::BitFlip,
            AttackArg::Length => Attack::Length,
            AttackArg::Downgrade => Attack::Downgrade,
            AttackArg::UnknownId => Attack::UnknownId,
            AttackArg::Garbage => Attack::Garbage,
            AttackArg::Flood => Attack::Flood,
        }
    }
}

/// The MKA classes as `--mka-attack` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MkaAttackArg {
    /// A member's MKPDU altered to win the key server election and carry a SAK, with an ICV
    /// the attacker cannot compute.
    #[value(name = "mka-bad-icv")]
    BadIcv,
    /// Captured MKPDUs of the members replayed (an MN already seen).
    #[value(name = "mka-stale-mn")]
    StaleMn,
    /// MKPDUs of another CA: a valid ICV under a CAK the members do not share.
    #[value(name = "mka-foreign-ckn")]
    ForeignCkn,
    /// An insider that holds the CAK but is not the key server distributes SAKs.
    #[value(name = "mka-sak-not-key-server")]
    SakNotKeyServer,
}

impl From<MkaAttackArg> for MkaAttack {
    fn from(a: MkaAttackArg) -> MkaAttack {
        match a {
            MkaAttackArg::BadIcv => MkaAttack::BadIcv,
            MkaAttackArg::StaleMn => MkaAttack::StaleMn,
            MkaAttackArg::ForeignCkn => MkaAttack::ForeignCkn,
            MkaAttackArg::SakNotKeyServer => MkaAttack::SakNotFromKeyServer,
        }
    }
}

/// The 802.1X classes as `--eap-attack` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EapAttackArg {
    /// EAPOL-Logoff to the authenticator from the attacker's MAC and from random MACs.
    #[value(name = "eap-logoff-spoofed")]
    LogoffSpoofed,
    /// EAP-Failure and EAP-Success (every identifier) to the supplicant from the attacker.
    #[value(name = "eap-failure-spoofed")]
    FailureSpoofed,
    /// Access-Accepts spoofed from the RADIUS server, with a Response Authenticator the
    /// attacker cannot compute.
    #[value(name = "radius-forged-accept")]
    RadiusForgedAccept,
    /// EAPOL-Start from random MACs as fast as possible.
    #[value(name = "eapol-start-flood")]
    StartFlood,
}

impl From<EapAttackArg> for EapAttack {
    fn from(a: EapAttackArg) -> EapAttack {
        match a {
            EapAttackArg::LogoffSpoofed => EapAttack::LogoffSpoofed,
            EapAttackArg::FailureSpoofed => EapAttack::FailureSpoofed,
            EapAttackArg::RadiusForgedAccept => EapAttack::RadiusForgedAccept,
            EapAttackArg::StartFlood => EapAttack::StartFlood,
        }
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
