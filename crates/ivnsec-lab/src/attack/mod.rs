//! The attack experiment, `ivnsec attack` (seed 002 §3 and §5.2.4): a legitimate sender and
//! receiver run the ping-pong on a testbed switch while an attacker node on the same switch (a
//! device plugged into the vehicle network, or a replaced sensor) injects forged, replayed and
//! altered frames, class by class and profile by profile.
//!
//! - this module: the data model (the classes, the attacker's spec, the result of one class
//!   against one profile);
//! - [`forger`]: the forged frames and the replay choice, without I/O;
//! - [`node`]: the attacker node process;
//! - [`run`]: the orchestration (the testbed, its switches, the three nodes, the accounts);
//! - [`hosts`]: the three nodes on hosts over SSH instead (`ivnsec attack --hosts PLAN`): where
//!   each runs, and the classes a bench cannot run (reported as not run, with the reason);
//! - [`mka`] and [`mka_run`]: the MKA classes (`ivnsec attack --mka`): forged, replayed and
//!   foreign MKPDUs against two members running `ivnsec macsec up --psk`;
//! - [`eap`] and [`eap_run`]: the 802.1X classes (`ivnsec attack --eap`): spoofed EAPOL and EAP,
//!   forged RADIUS answers and an EAPOL-Start flood against a supplicant and an authenticator.

pub mod eap;
pub mod eap_run;
pub mod forger;
pub mod gateway;
pub mod hosts;
pub mod mka;
pub mod mka_run;
pub mod node;
mod roles;
pub mod run;
mod switches;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use ivnsec_core::channel::{DirectionKeys, Ends};
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use serde::{Deserialize, Serialize};

use crate::process::NodeSpec;

/// The attack classes, in the order `ivnsec attack` runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Attack {
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

impl Attack {
    pub const ALL: [Attack; 10] = [
        Attack::ForeignSource,
        Attack::NoKey,
        Attack::ReplayW1,
        Attack::ReplayW1024,
        Attack::BitFlip,
        Attack::Length,
        Attack::Downgrade,
        Attack::UnknownId,
        Attack::Garbage,
        Attack::Flood,
    ];

    /// The stable name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Attack::ForeignSource => "foreign-source",
            Attack::NoKey => "no-key",
            Attack::ReplayW1 => "replay-w1",
            Attack::ReplayW1024 => "replay-w1024",
            Attack::BitFlip => "bit-flip",
            Attack::Length => "length",
            Attack::Downgrade => "downgrade",
            Attack::UnknownId => "unknown-id",
            Attack::Garbage => "garbage",
            Attack::Flood => "flood",
        }
    }

    /// The receiver's replay window during this attack.
    pub fn replay_window(self) -> u32 {
        match self {
            Attack::ReplayW1 => 1,
            Attack::ReplayW1024 => 1024,
            _ => ivnsec_core::channel::REPLAY_WINDOW,
        }
    }

    pub(crate) fn is_replay(self) -> bool {
        matches!(self, Attack::ReplayW1 | Attack::ReplayW1024)
    }
}

/// The result of one class against one profile.
#[derive(Clone, Debug, Serialize)]
pub struct AttackResult {
    /// The profile, with the name it was given.
    pub profile: NamedProfile,
    pub attack: &'static str,
    pub injected: u64,
    /// Forged or replayed units the receiver accepted.
    pub accepted: u64,
    /// Units the receiver dropped, by reason.
    pub dropped: BTreeMap<String, u64>,
    /// Injected frames the receiver never judged (lost in a full queue during the flood, or
    /// refused by the switch).
    pub not_seen: u64,
    /// Of the injected frames, those the switch refuses whatever its table says (a bit flip
    /// that makes the source address a group address; [`forger::switch_refuses`]): counted by
    /// the attacker, part of `not_seen`.
    pub switch_refused: u64,
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
    /// Round trip of the legitimate exchanges (µs), timed on the sender's clock alone; across
    /// hosts the legitimate delay is given only as this (`legit_p50_us` and `legit_p999_us` are
    /// null there: a one-way delay would subtract two machines' clocks).
    pub legit_rtt_p50_us: Option<f64>,
    pub legit_rtt_p999_us: Option<f64>,
    /// How the switch forwarded during the run: `hub` or `static`; across hosts `bench` (the
    /// bench's own switch, set by nobody but its owner).
    pub switch: &'static str,
    /// Frames the kernel dropped at the receiver's sockets because the receive queue was full
    /// (`PACKET_STATISTICS` / `SO_MEMINFO`): the forged and the legitimate ones.
    pub receiver_socket_drops: u64,
    /// The same at the legitimate sender's socket (a lost reply).
    pub initiator_socket_drops: u64,
    /// The MKA classes: what the members' MKA state says ([`mka::MkaAccount`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mka: Option<mka::MkaAccount>,
    /// The 802.1X classes: what the supplicant's and the authenticator's state says
    /// ([`eap::EapAccount`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eap: Option<eap::EapAccount>,
    /// On a bump-in-the-wire testbed (`ivnsec attack --topology bump2`): what the gateways
    /// counted during the class ([`gateway::GatewayAccount`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<gateway::GatewayAccount>,
    /// Across hosts (`ivnsec attack --hosts`): why this class did not run against this profile
    /// (its counts are then those of the legitimate traffic only, and it is neither passed nor
    /// failed). Absent when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_run: Option<String>,
}

impl AttackResult {
    /// The receiver accepted a forged or replayed frame, or a legitimate exchange was lost (also
    /// during a class that was not run: its legitimate traffic ran all the same).
    pub fn failed(&self) -> bool {
        self.accepted > 0 || self.legit_failed()
    }

    /// The legitimate exchanges of the class lost a request or a reply.
    fn legit_failed(&self) -> bool {
        self.legit_delivered < self.legit_sent || self.legit_exchanges_lost > 0
    }

    /// The class ran (it was not reported as not run).
    pub fn ran(&self) -> bool {
        self.not_run.is_none()
    }

    /// A class that did not run against `profile`, and why.
    pub fn not_run(
        profile: &NamedProfile,
        attack: Attack,
        switch: run::SwitchMode,
        reason: String,
    ) -> AttackResult {
        AttackResult {
            profile: profile.clone(),
            attack: attack.name(),
            injected: 0,
            accepted: 0,
            dropped: BTreeMap::new(),
            not_seen: 0,
            switch_refused: 0,
            rate_fps: 0.0,
            legit_sent: 0,
            legit_delivered: 0,
            legit_exchanges_lost: 0,
            legit_p50_us: None,
            legit_p999_us: None,
            legit_rtt_p50_us: None,
            legit_rtt_p999_us: None,
            switch: switch.name(),
            receiver_socket_drops: 0,
            initiator_socket_drops: 0,
            mka: None,
            eap: None,
            gateway: None,
            not_run: Some(reason),
        }
    }
}

/// Everything the attacker process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AttackSpec {
    pub attack: Attack,
    pub profile: Profile,
    pub provider: ProviderChoice,
    pub payload: usize,
    /// Frames to inject (every class but the flood).
    pub count: u64,
    /// How long the flood lasts.
    pub flood_ns: u64,
    /// The attacker's interface.
    pub ifname: String,
    /// The legitimate sender's view (local = sender, peer = receiver).
    pub sender: Ends,
    pub attacker_mac: [u8; 6],
    pub attacker_ip: Ipv4Addr,
    /// Sender → receiver keys: intercepted frames only ([`forger`] module documentation); sent
    /// over the pipe, not in the JSON.
    #[serde(skip)]
    pub forward: DirectionKeys,
    /// Record the injected frames here (at most `pcap_limit`).
    pub pcap: Option<PathBuf>,
    pub pcap_limit: u64,
    /// Across hosts: the replays capture on a second socket of every EtherType in promiscuous
    /// mode (so an attacker on the sender's host sees that host's own egress too), and a replay
    /// class that captured nothing reports `CAPTURED 0` instead of failing.
    #[serde(default)]
    pub capture_all: bool,
}

impl NodeSpec for AttackSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        vec![&self.forward]
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        vec![&mut self.forward]
    }
}
