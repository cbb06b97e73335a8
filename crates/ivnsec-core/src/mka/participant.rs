//! The MKA participant: one member of one CA (IEEE Std 802.1X-2020 clause 9), sans-I/O.
//!
//! See the [module documentation](super) for the API contract and the state machine.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::hash::{Hash, Hasher};

use zeroize::Zeroizing;

use super::kdf::{CaKeys, KeyError, SecretBytes};
use crate::crypto::{CryptoProvider, SecureRandom};
use crate::sa::macsec::CipherSuite;
use crate::wire::ethernet::MacAddr;
use crate::wire::macsec::Sci;
use crate::wire::mkpdu::{
    self, ALGORITHM_AGILITY, BasicParamSet, DistributedKey, DistributedSak, Frame, KeyId,
    MAX_CKN_LEN, MKA_VERSION, Mi, MkpduError, PAE_GROUP_ADDR, PeerEntry, PeerList, Repr, SakUse,
    SakUseKeys, XpnParams,
};

/// One second in nanoseconds.
pub const SECOND: u64 = 1_000_000_000;
/// MKA Hello Time (Table 9-3).
pub const HELLO_TIME: u64 = 2 * SECOND;
/// MKA Bounded Hello Time (Table 9-3), used with delay protection.
pub const BOUNDED_HELLO_TIME: u64 = SECOND / 2;
/// MKA Life Time (Table 9-3).
pub const LIFE_TIME: u64 = 6 * SECOND;
/// MKA SAK Retire Time (Table 9-3).
pub const SAK_RETIRE_TIME: u64 = 3 * SECOND;
/// Key Server Priority that never acts as key server.
pub const NEVER_KEY_SERVER: u8 = 0xFF;
/// Default peer table bound (live and potential peers together).
pub const DEFAULT_MAX_PEERS: usize = 32;
/// Events kept for the caller before IcvFailure events are dropped (counted).
pub const MAX_QUEUED_EVENTS: usize = 256;
/// Sent MNs remembered for the freshness check.
const MN_HISTORY: usize = 64;

/// A start-up ramp-up: the first `count` MKPDUs go out after `first_ns`, 2·`first_ns`,
/// 4·`first_ns`, … (never slower than the hello time), so a link comes up in well under a hello
/// time (MKAdaemon's idea for in-vehicle networks). The standard behaviour has no ramp-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RampUp {
    pub first_ns: u64,
    pub count: u32,
}

/// Settings of a participant. [`Config::new`] gives the standard's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// The cipher suite the key server distributes and members accept.
    pub suite: CipherSuite,
    /// Key Server Priority: lower wins the election, ties go to the lower SCI; 0xFF never
    /// acts as key server. Default 16.
    pub key_server_priority: u8,
    /// Confidentiality Offset distributed with a SAK: 1 (confidentiality, offset 0; default)
    /// or 0 (integrity only).
    pub confidentiality_offset: u8,
    /// MKA Hello Time (default 2 s).
    pub hello_ns: u64,
    /// MKA Bounded Hello Time (default 0.5 s), the hello interval with `delay_protect`.
    pub bounded_hello_ns: u64,
    /// MKA Life Time (default 6 s).
    pub life_ns: u64,
    /// MKA SAK Retire Time (default 3 s): how long an old SAK stays installed for reception
    /// after every live peer reports transmitting with the new one.
    pub sak_retire_ns: u64,
    /// Distribute a new SAK this long after the last (key server only; default: never).
    pub rekey_interval_ns: Option<u64>,
    /// Distribute a new SAK when a transmit PN of the latest key reaches this (default: 75 %
    /// of the suite's PN space, [`Config::pn_threshold`]).
    pub pn_threshold: Option<u64>,
    /// Distribute a new SAK when a live peer joins or leaves (default true; always for XPN
    /// suites on a join, whose SSCIs follow the membership).
    pub rekey_on_peer_change: bool,
    /// Delay protection: hello at the bounded hello time and say so in the SAK Use set.
    pub delay_protect: bool,
    /// Start-up ramp-up (default none).
    pub ramp_up: Option<RampUp>,
    /// Destination of MKPDUs (default the nearest non-TPMR bridge group address).
    pub destination: MacAddr,
    /// Bound of the peer table.
    pub max_peers: usize,
}

impl Config {
    /// The standard's defaults for `suite`.
    pub fn new(suite: CipherSuite) -> Config {
        Config {
            suite,
            key_server_priority: 16,
            confidentiality_offset: 1,
            hello_ns: HELLO_TIME,
            bounded_hello_ns: BOUNDED_HELLO_TIME,
            life_ns: LIFE_TIME,
            sak_retire_ns: SAK_RETIRE_TIME,
            rekey_interval_ns: None,
            pn_threshold: None,
            rekey_on_peer_change: true,
            delay_protect: false,
            ramp_up: None,
            destination: PAE_GROUP_ADDR,
            max_peers: DEFAULT_MAX_PEERS,
        }
    }

    /// The PN at which the key server rekeys.
    pub fn pn_threshold(&self) -> u64 {
        // 75 % of the 2^32 (2^64 with XPN) PN space: 0xC0000000, wpa_supplicant's value.
        let space = u128::from(self.suite.max_pn()) + 1;
        self.pn_threshold.unwrap_or((space / 4 * 3) as u64).max(1)
    }

    fn check(&self) -> Result<(), MkaError> {
        let bad = |what| Err(MkaError::BadConfig(what));
        if self.hello_ns == 0 || self.bounded_hello_ns == 0 {
            return bad("hello times must be positive");
        }
        if self.life_ns <= self.hello_ns.max(self.bounded_hello_ns) {
            return bad("the life time must exceed the hello time");
        }
        if self.confidentiality_offset > 1 {
            return bad("confidentiality offset must be 0 (integrity only) or 1 (offset 0)");
        }
        if self.max_peers == 0 || self.max_peers > 200 {
            return bad("max_peers must be 1..=200");
        }
        if self.rekey_interval_ns == Some(0) {
            return bad("the rekey interval must be positive");
        }
        if self.ramp_up.is_some_and(|r| r.first_ns == 0) {
            return bad("the ramp-up interval must be positive");
        }
        Ok(())
    }

    /// The hello interval in steady state.
    fn hello(&self) -> u64 {
        if self.delay_protect {
            self.bounded_hello_ns
        } else {
            self.hello_ns
        }
    }
}

/// Errors of [`Participant::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MkaError {
    /// The CAK, CKN or provider cannot make the CA's keys.
    Key(KeyError),
    /// A setting out of range (the text says which).
    BadConfig(&'static str),
}

impl fmt::Display for MkaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MkaError::Key(e) => write!(f, "{e}"),
            MkaError::BadConfig(s) => f.write_str(s),
        }
    }
}

impl core::error::Error for MkaError {}

impl From<KeyError> for MkaError {
    fn from(e: KeyError) -> Self {
        MkaError::Key(e)
    }
}

/// Why a received MKPDU (or the SAK in it) was not accepted. Each is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MkaDrop {
    /// Not a well-formed MKPDU.
    Malformed(MkpduError),
    /// Addressed to neither the configured group address nor this port.
    NotForUs,
    /// MKA version 0 or an Algorithm Agility other than 00-80-C2-01.
    Unsupported,
    /// A CKN other than this CA's.
    UnknownCkn,
    /// The ICV does not verify under this CA's ICK.
    BadIcv,
    /// Sent by this participant (looped back) or with this participant's MI.
    OwnPdu,
    /// An MN not above the last one accepted from that MI (a replay or reordering).
    StaleMn,
    /// A new peer while the peer table is full.
    TooManyPeers,
    /// A Distributed SAK from a member that is not the elected key server (the rest of the
    /// MKPDU was used).
    SakNotFromKeyServer,
    /// A Distributed SAK that does not unwrap under the KEK, has the wrong length, or names
    /// another cipher suite (the rest of the MKPDU was used).
    BadSak,
}

impl MkaDrop {
    /// Every reason, in counter order.
    pub const ALL: [&'static str; 10] = [
        "malformed",
        "not_for_us",
        "unsupported",
        "unknown_ckn",
        "bad_icv",
        "own_pdu",
        "stale_mn",
        "too_many_peers",
        "sak_not_from_key_server",
        "bad_sak",
    ];

    /// Stable name (used as a counter and JSON key).
    pub fn name(self) -> &'static str {
        Self::ALL[self.index()]
    }

    fn index(self) -> usize {
        match self {
            MkaDrop::Malformed(_) => 0,
            MkaDrop::NotForUs => 1,
            MkaDrop::Unsupported => 2,
            MkaDrop::UnknownCkn => 3,
            MkaDrop::BadIcv => 4,
            MkaDrop::OwnPdu => 5,
            MkaDrop::StaleMn => 6,
            MkaDrop::TooManyPeers => 7,
            MkaDrop::SakNotFromKeyServer => 8,
            MkaDrop::BadSak => 9,
        }
    }
}

impl fmt::Display for MkaDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MkaDrop::Malformed(e) => write!(f, "malformed MKPDU: {e}"),
            other => f.write_str(other.name()),
        }
    }
}

/// SAK bytes, zeroed on drop; `Debug` never prints them.
pub struct Sak(SecretBytes);

impl Sak {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Clone for Sak {
    fn clone(&self) -> Self {
        Sak(Zeroizing::new(self.0.to_vec()))
    }
}

impl fmt::Debug for Sak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sak(<{} bytes>)", self.0.len())
    }
}

/// A receive or transmit SA to install: everything `sa::macsec::KeyParams` needs.
#[derive(Clone, Debug)]
pub struct SaInstall {
    pub key: KeyId,
    pub an: u8,
    pub suite: CipherSuite,
    pub sak: Sak,
    /// XPN: the salt (the key server's MI with the KN folded in, clause 9.8.2).
    pub salt: Option<[u8; 12]>,
    /// Confidentiality Offset: 0 integrity only, 1 confidentiality from offset 0.
    pub confidentiality_offset: u8,
    /// The SCs this SA covers: on receive, one receive SA per peer SC with the peer's SSCI
    /// (XPN); on transmit, this participant's SCI and SSCI.
    pub scs: Vec<(Sci, Option<u32>)>,
    /// Lowest acceptable PN (receive) or first PN (transmit).
    pub lowest_pn: u64,
}

/// Why a new SAK was distributed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RekeyReason {
    /// The first SAK of this key server (it was just elected).
    Elected,
    /// A live peer joined or left.
    PeerChange,
    /// The rekey interval elapsed.
    Timer,
    /// A transmit PN of the latest key reached the threshold.
    PnThreshold,
}

impl RekeyReason {
    pub fn name(self) -> &'static str {
        match self {
            RekeyReason::Elected => "elected",
            RekeyReason::PeerChange => "peer_change",
            RekeyReason::Timer => "timer",
            RekeyReason::PnThreshold => "pn_threshold",
        }
    }
}

/// What the caller acts on (see the module documentation).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Event {
    /// A peer became live (its MKPDUs list this participant with a recent MN).
    PeerLive { sci: Sci, mi: Mi },
    /// A live peer was not heard from within the life time, or was replaced by a new MI of
    /// the same SCI.
    PeerLost { sci: Sci, mi: Mi },
    /// A key server was elected (`None`: no live peer, no CA).
    KeyServerElected { sci: Option<Sci>, is_self: bool },
    /// This participant (the key server) distributed a new SAK.
    SakDistributed {
        key: KeyId,
        an: u8,
        reason: RekeyReason,
    },
    /// Install receive SAs for a SAK.
    InstallRx(SaInstall),
    /// Transmit with this SAK from now on (the previous transmit SA is retired next).
    InstallTx(SaInstall),
    /// Delete the receive SAs of this key.
    RetireRx { key: KeyId, an: u8 },
    /// Delete the transmit SA of this key.
    RetireTx { key: KeyId, an: u8 },
    /// An MKPDU with this CA's CKN failed its ICV (from this source address).
    IcvFailure { src: MacAddr },
}

/// Counters for `macsec status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub pdus_sent: u64,
    pub pdus_accepted: u64,
    /// Per [`MkaDrop::ALL`] entry.
    pub drops: [u64; 10],
    pub saks_distributed: u64,
    pub saks_installed: u64,
    pub saks_retired: u64,
    pub peers_live: u64,
    pub peers_lost: u64,
    /// Events dropped because the queue was full (only IcvFailure events are dropped).
    pub events_dropped: u64,
    /// Transmit attempts with a buffer too small for the MKPDU.
    pub tx_buffer_too_small: u64,
    /// Distributed SAKs held back because the SSCI assignment differed (views converging).
    pub ssci_deferred: u64,
}

impl Counters {
    /// Named drop counters.
    pub fn named_drops(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        MkaDrop::ALL.iter().copied().zip(self.drops.iter().copied())
    }

    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// A peer in the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerStatus {
    pub sci: Sci,
    pub mi: Mi,
    pub mn: u32,
    pub live: bool,
    pub key_server_priority: u8,
}

/// A key in the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyStatus {
    pub key: KeyId,
    pub an: u8,
    pub rx: bool,
    pub tx: bool,
    /// Next transmit PN the data plane reported for it.
    pub tx_pn: u64,
}

/// A snapshot for `macsec status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub sci: Sci,
    pub mi: Mi,
    pub mn: u32,
    pub suite: CipherSuite,
    pub key_server: Option<Sci>,
    pub is_key_server: bool,
    pub peers: Vec<PeerStatus>,
    pub latest: Option<KeyStatus>,
    pub old: Option<KeyStatus>,
    pub counters: Counters,
}

#[derive(Clone)]
struct Peer {
    mi: Mi,
    mn: u32,
    sci: Sci,
    priority: u8,
    key_server: bool,
    live: bool,
    expires: u64,
    version: u8,
    sak_use: Option<SakUse>,
    /// High 32 bits of the reported lowest acceptable PNs (XPN set).
    xpn: Option<XpnParams>,
}

impl Peer {
    /// The full 64-bit lowest PN this peer reports for `key` as its latest key.
    fn latest_pn_for(&self, key: &KeyId) -> Option<u64> {
        let s = self.sak_use?;
        let k = s.keys?;
        (k.latest == *key).then(|| {
            let high = self.xpn.map_or(0, |x| x.latest_lowest_pn_high);
            (u64::from(high) << 32) | u64::from(k.latest_lowest_pn)
        })
    }

    fn reports(&self, key: &KeyId, tx: bool) -> bool {
        self.sak_use.is_some_and(|s| {
            s.keys.is_some_and(|k| k.latest == *key) && if tx { s.latest_tx } else { s.latest_rx }
        })
    }
}

#[derive(Clone)]
struct Key {
    id: KeyId,
    an: u8,
    sak: SecretBytes,
    salt: Option<[u8; 12]>,
    confidentiality_offset: u8,
    /// Every member's SCI and SSCI (XPN) as assigned at distribution, this participant included.
    members: Vec<(Sci, Option<u32>)>,
    /// MIs of the key server's live peers at distribution (key server only: join detection).
    peer_mis: Vec<Mi>,
    created: u64,
    rx: bool,
    tx: bool,
    tx_pn: u64,
    tx_since: Option<u64>,
}

impl Key {
    fn status(&self) -> KeyStatus {
        KeyStatus {
            key: self.id,
            an: self.an,
            rx: self.rx,
            tx: self.tx,
            tx_pn: self.tx_pn,
        }
    }
}

/// The key server's distribution in progress.
#[derive(Clone)]
struct Distribution {
    wrapped: Vec<u8>,
    key: KeyId,
    an: u8,
}

/// One MKA participant (see the module documentation).
pub struct Participant {
    cfg: Config,
    /// The CA's keys, fixed at creation (shared by [`Participant::fork`]s).
    keys: Arc<CaKeys>,
    ckn: Vec<u8>,
    sci: Sci,
    src: MacAddr,
    rng: Box<dyn SecureRandom>,
    mi: Mi,
    mn: u32,
    /// (MN, time sent) of recent MKPDUs, oldest first.
    sent: VecDeque<(u32, u64)>,
    peers: Vec<Peer>,
    key_server: Option<(Sci, Option<Mi>)>,
    latest: Option<Key>,
    old: Option<Key>,
    next_kn: u32,
    /// The AN of the first SAK this participant distributes as key server
    /// ([`Participant::prefer_first_an`]; 0 by default).
    first_an: u8,
    distributing: Option<Distribution>,
    retire_at: Option<u64>,
    next_hello: u64,
    ramp_sent: u32,
    pending_tx: bool,
    events: VecDeque<Event>,
    counters: Counters,
}

impl fmt::Debug for Participant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Participant")
            .field("sci", &self.sci)
            .field("mn", &self.mn)
            .field("peers", &self.peers.len())
            .finish_non_exhaustive()
    }
}

fn rand_mi(rng: &dyn SecureRandom) -> Result<Mi, KeyError> {
    let mut mi = [0u8; 12];
    rng.fill(&mut mi)?;
    Ok(mi)
}

/// XPN salt (clause 9.8.2, as wpa_supplicant and MKAdaemon compute it): the key server's MI
/// with the KN's two 16-bit halves XORed into its first four octets, low half first.
pub fn xpn_salt(key: &KeyId) -> [u8; 12] {
    let mut s = key.mi;
    let kn = key.kn.to_be_bytes();
    s[0] ^= kn[2];
    s[1] ^= kn[3];
    s[2] ^= kn[0];
    s[3] ^= kn[1];
    s
}

/// SSCIs of the members of a CA (IEEE 802.1AE 10.7.13): 1, 2, … in descending SCI order.
pub fn assign_sscis(scis: &mut [Sci]) -> Vec<(Sci, u32)> {
    scis.sort_unstable_by(|a, b| b.cmp(a));
    scis.iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u32 + 1))
        .collect()
}

impl Participant {
    /// A participant for the CA of `cak`/`ckn` on the port with `sci`; MKPDUs carry the MAC
    /// address of the SCI as source. `provider` must implement [`super::kdf::primitives`];
    /// `rng` makes the MI, KS-nonces and nothing else. `now` is CLOCK_MONOTONIC in ns.
    pub fn new(
        cfg: Config,
        cak: &[u8],
        ckn: &[u8],
        sci: Sci,
        provider: &CryptoProvider,
        rng: impl SecureRandom + 'static,
        now: u64,
    ) -> Result<Participant, MkaError> {
        cfg.check()?;
        if ckn.is_empty() || ckn.len() > MAX_CKN_LEN {
            return Err(KeyError::BadCknLength(ckn.len()).into());
        }
        let keys = Arc::new(CaKeys::new(provider, cak, ckn)?);
        let rng: Box<dyn SecureRandom> = Box::new(rng);
        let mi = rand_mi(rng.as_ref())?;
        let mut src = [0u8; 6];
        src.copy_from_slice(&sci.0[..6]);
        Ok(Participant {
            cfg,
            keys,
            ckn: ckn.to_vec(),
            sci,
            src: MacAddr(src),
            rng,
            mi,
            mn: 1,
            sent: VecDeque::new(),
            peers: Vec::new(),
            key_server: None,
            latest: None,
            old: None,
            next_kn: 1,
            first_an: 0,
            distributing: None,
            retire_at: None,
            next_hello: now,
            ramp_sent: 0,
            pending_tx: true,
            events: VecDeque::new(),
            counters: Counters::default(),
        })
    }

    /// This participant's SCI.
    pub fn sci(&self) -> Sci {
        self.sci
    }

    /// A copy of this participant in its current state that draws its randomness (MIs,
    /// KS-nonces) from `rng` from now on; the CA's keys are shared. For model checkers and
    /// simulations that explore several futures of one state (`crates/ivnsec-model`): the copy
    /// behaves exactly as this one would given the same inputs and the same random bytes.
    pub fn fork(&self, rng: impl SecureRandom + 'static) -> Participant {
        Participant {
            cfg: self.cfg,
            keys: Arc::clone(&self.keys),
            ckn: self.ckn.clone(),
            sci: self.sci,
            src: self.src,
            rng: Box::new(rng),
            mi: self.mi,
            mn: self.mn,
            sent: self.sent.clone(),
            peers: self.peers.clone(),
            key_server: self.key_server,
            latest: self.latest.clone(),
            old: self.old.clone(),
            next_kn: self.next_kn,
            first_an: self.first_an,
            distributing: self.distributing.clone(),
            retire_at: self.retire_at,
            next_hello: self.next_hello,
            ramp_sent: self.ramp_sent,
            pending_tx: self.pending_tx,
            events: self.events.clone(),
            counters: self.counters,
        }
    }

    /// Feeds everything that decides this participant's future behaviour into `h`: MI and MN,
    /// the MNs sent and when, the peer table, the election, the keys (by key identifier, AN,
    /// flags, PNs and times — never the SAK's bytes; a distribution by its wrapped form, as on
    /// the wire), timers and queued events. Not the counters, the configuration or the CA's
    /// keys, which are fixed or do not feed back; not the random source (the caller that
    /// supplies it accounts for its position). Two participants of one CA with equal digests
    /// (and equal random sources) behave alike: a model checker's visited set.
    pub fn state_digest<H: Hasher>(&self, h: &mut H) {
        self.sci.hash(h);
        self.mi.hash(h);
        self.mn.hash(h);
        self.sent.len().hash(h);
        for s in &self.sent {
            s.hash(h);
        }
        self.peers.len().hash(h);
        for p in &self.peers {
            (
                p.mi,
                p.mn,
                p.sci,
                p.priority,
                p.key_server,
                p.live,
                p.expires,
            )
                .hash(h);
            (p.version, p.sak_use, p.xpn).hash(h);
        }
        self.key_server.hash(h);
        for k in [&self.latest, &self.old] {
            k.is_some().hash(h);
            if let Some(k) = k {
                (k.id, k.an, k.salt, k.confidentiality_offset).hash(h);
                k.members.hash(h);
                k.peer_mis.hash(h);
                (k.created, k.rx, k.tx, k.tx_pn, k.tx_since).hash(h);
            }
        }
        (self.next_kn, self.first_an).hash(h);
        self.distributing.is_some().hash(h);
        if let Some(d) = &self.distributing {
            (d.key, d.an).hash(h);
            d.wrapped.hash(h);
        }
        (
            self.retire_at,
            self.next_hello,
            self.ramp_sent,
            self.pending_tx,
        )
            .hash(h);
        // Events are drained by the caller after every call; a queue left full is counted.
        self.events.len().hash(h);
    }

    /// Longest MKPDU this participant can send (a transmit buffer of this size always fits).
    pub fn max_frame_len(&self) -> usize {
        mkpdu::HEADER_LEN
            + 4
            + mkpdu::padded(mkpdu::BASIC_FIXED_LEN + MAX_CKN_LEN)
            + 2 * (4 + mkpdu::PEER_ENTRY_LEN * self.cfg.max_peers)
            + 4
            + mkpdu::SAK_USE_LEN
            + 4
            + 52
            + 4
            + mkpdu::XPN_LEN
            + mkpdu::ICV_LEN
    }

    fn push_event(&mut self, e: Event) {
        if matches!(e, Event::IcvFailure { .. }) && self.events.len() >= MAX_QUEUED_EVENTS {
            self.counters.events_dropped += 1;
            return;
        }
        self.events.push_back(e);
    }

    fn drop_pdu(&mut self, d: MkaDrop) -> Result<(), MkaDrop> {
        self.counters.drops[d.index()] += 1;
        Err(d)
    }

    /// The lowest MN this participant sent within the life time (a peer listing an MN below
    /// it has not heard from us recently).
    fn lowest_recent_mn(&self, now: u64) -> Option<u32> {
        self.sent
            .iter()
            .find(|(_, t)| t.saturating_add(self.cfg.life_ns) > now)
            .map(|(mn, _)| *mn)
    }

    /// Handles one received frame (the whole Ethernet frame, EtherType 0x888E). `Ok` when it
    /// was accepted; a drop is counted and returned. See [`MkaDrop`] for the two drops that
    /// still use the rest of the MKPDU.
    pub fn handle_pdu(&mut self, now: u64, frame: &[u8]) -> Result<(), MkaDrop> {
        let f = match Frame::new_checked(frame) {
            Ok(f) => f,
            Err(e) => return self.drop_pdu(MkaDrop::Malformed(e)),
        };
        let dst = f.dst();
        if dst != self.cfg.destination && dst != self.src {
            return self.drop_pdu(MkaDrop::NotForUs);
        }
        let r = match Repr::parse(&f) {
            Ok(r) => r,
            Err(e) => return self.drop_pdu(MkaDrop::Malformed(e)),
        };
        if r.basic.version == 0 || r.basic.algorithm_agility != ALGORITHM_AGILITY {
            return self.drop_pdu(MkaDrop::Unsupported);
        }
        if r.basic.ckn != self.ckn.as_slice() {
            return self.drop_pdu(MkaDrop::UnknownCkn);
        }
        if !self.keys.verify_icv(f.signed(), f.icv()) {
            let src = f.src();
            self.push_event(Event::IcvFailure { src });
            return self.drop_pdu(MkaDrop::BadIcv);
        }
        if r.basic.sci == self.sci || f.src() == self.src {
            return self.drop_pdu(MkaDrop::OwnPdu);
        }
        if r.basic.mi == self.mi {
            // Another member drew our MI: draw a new one (clause 9.4.2) and drop the PDU.
            if let Ok(mi) = rand_mi(self.rng.as_ref()) {
                self.new_mi(mi);
            }
            return self.drop_pdu(MkaDrop::OwnPdu);
        }
        let idx = match self.peers.iter().position(|p| p.mi == r.basic.mi) {
            Some(i) if r.basic.mn <= self.peers[i].mn => return self.drop_pdu(MkaDrop::StaleMn),
            Some(i) => i,
            None => {
                if self.peers.len() >= self.cfg.max_peers {
                    return self.drop_pdu(MkaDrop::TooManyPeers);
                }
                self.peers.push(Peer {
                    mi: r.basic.mi,
                    mn: 0,
                    sci: r.basic.sci,
                    priority: r.basic.key_server_priority,
                    key_server: false,
                    live: false,
                    expires: 0,
                    version: r.basic.version,
                    sak_use: None,
                    xpn: None,
                });
                // A new potential peer: answer at once so it can list us.
                self.pending_tx = true;
                self.peers.len() - 1
            }
        };
        self.counters.pdus_accepted += 1;
        let recent = self.lowest_recent_mn(now);
        let lists_us = [r.live_peers, r.potential_peers]
            .iter()
            .flatten()
            .filter_map(|l| l.find(&self.mi))
            .any(|mn| recent.is_some_and(|low| mn >= low) && mn < self.mn);
        let life = self.cfg.life_ns;
        let became_live = {
            let p = &mut self.peers[idx];
            p.mn = r.basic.mn;
            p.sci = r.basic.sci;
            p.priority = r.basic.key_server_priority;
            p.key_server = r.basic.key_server;
            p.version = r.basic.version;
            if lists_us || !p.live {
                p.expires = now.saturating_add(life);
            }
            if p.live {
                p.sak_use = r.sak_use;
                p.xpn = r.xpn;
            }
            let became = lists_us && !p.live;
            if became {
                p.live = true;
                p.sak_use = r.sak_use;
                p.xpn = r.xpn;
            }
            became
        };
        if became_live {
            let (sci, mi) = (r.basic.sci, r.basic.mi);
            // A new MI of a known SCI replaces the old one (the peer restarted).
            let stale: Vec<Mi> = self
                .peers
                .iter()
                .filter(|p| p.sci == sci && p.mi != mi)
                .map(|p| p.mi)
                .collect();
            for m in stale {
                self.remove_peer(&m);
            }
            self.counters.peers_live += 1;
            self.push_event(Event::PeerLive { sci, mi });
            self.add_receiver(sci);
            self.pending_tx = true;
        }
        self.elect(now);
        let live = self.peers.iter().any(|p| p.mi == r.basic.mi && p.live);
        let result = match r.distributed_sak {
            Some(d) if live => self.accept_sak(now, &r, d),
            _ => Ok(()),
        };
        self.progress(now);
        match result {
            Err(d) => self.drop_pdu(d),
            Ok(()) => Ok(()),
        }
    }

    /// A peer that became live after a SAK was installed gets receive SAs of the SAKs in use
    /// (clause 9.10: a receive SC for every live peer), or frames it sends under them would be
    /// dropped until the next SAK. That happens when the key server distributes as soon as it
    /// sees a new member live, before the other members and the new one saw each other. GCM-AES
    /// only: an XPN SAK is accepted once this member's view of the membership matches the key
    /// server's (SSCIs follow it), and a join always makes the key server distribute anew.
    fn add_receiver(&mut self, sci: Sci) {
        if self.cfg.suite.is_xpn() {
            return;
        }
        let suite = self.cfg.suite;
        let mut installs = Vec::new();
        for k in [self.latest.as_mut(), self.old.as_mut()]
            .into_iter()
            .flatten()
        {
            if k.rx && !k.members.iter().any(|(s, _)| *s == sci) {
                k.members.push((sci, None));
                installs.push(SaInstall {
                    key: k.id,
                    an: k.an,
                    suite,
                    sak: Sak(Zeroizing::new(k.sak.to_vec())),
                    salt: k.salt,
                    confidentiality_offset: k.confidentiality_offset,
                    scs: vec![(sci, None)],
                    lowest_pn: 1,
                });
            }
        }
        for i in installs {
            self.push_event(Event::InstallRx(i));
        }
    }

    fn new_mi(&mut self, mi: Mi) {
        self.mi = mi;
        self.mn = 1;
        self.sent.clear();
        self.pending_tx = true;
    }

    fn remove_peer(&mut self, mi: &Mi) {
        if let Some(i) = self.peers.iter().position(|p| &p.mi == mi) {
            let p = self.peers.remove(i);
            if p.live {
                self.counters.peers_lost += 1;
                self.push_event(Event::PeerLost {
                    sci: p.sci,
                    mi: p.mi,
                });
            }
        }
    }

    /// Key server election (clause 9.5): among this participant and its live peers whose
    /// priority is not 0xFF, the lowest priority value, then the lowest SCI. No live peer: none.
    fn elect(&mut self, now: u64) {
        let mut best: Option<(u8, Sci, Option<Mi>)> = None;
        if self.peers.iter().any(|p| p.live) {
            if self.cfg.key_server_priority != NEVER_KEY_SERVER {
                best = Some((self.cfg.key_server_priority, self.sci, None));
            }
            for p in self.peers.iter().filter(|p| p.live) {
                if p.priority == NEVER_KEY_SERVER {
                    continue;
                }
                if best.is_none_or(|(bp, bs, _)| (p.priority, p.sci) < (bp, bs)) {
                    best = Some((p.priority, p.sci, Some(p.mi)));
                }
            }
        }
        let new = best.map(|(_, s, m)| (s, m));
        if new != self.key_server {
            self.key_server = new;
            self.distributing = None;
            self.push_event(Event::KeyServerElected {
                sci: new.map(|(s, _)| s),
                is_self: new.is_some_and(|(_, m)| m.is_none()),
            });
            self.pending_tx = true;
            if new.is_none() {
                self.retire_all();
            }
            let _ = now;
        }
    }

    fn is_key_server(&self) -> bool {
        self.key_server.is_some_and(|(_, m)| m.is_none())
    }

    fn key_server_mi(&self) -> Option<Mi> {
        self.key_server.and_then(|(_, m)| m)
    }

    /// SSCIs for a key: this participant and its live peers (XPN suites only).
    fn members(&self) -> Vec<(Sci, Option<u32>)> {
        let mut scis: Vec<Sci> = core::iter::once(self.sci)
            .chain(self.peers.iter().filter(|p| p.live).map(|p| p.sci))
            .collect();
        if self.cfg.suite.is_xpn() {
            assign_sscis(&mut scis)
                .into_iter()
                .map(|(s, i)| (s, Some(i)))
                .collect()
        } else {
            scis.sort_unstable();
            scis.into_iter().map(|s| (s, None)).collect()
        }
    }

    fn own_ssci(key: &Key, sci: Sci) -> Option<u32> {
        key.members
            .iter()
            .find(|(s, _)| *s == sci)
            .and_then(|m| m.1)
    }

    fn install(&self, key: &Key, tx: bool) -> SaInstall {
        let scs = if tx {
            vec![(self.sci, Self::own_ssci(key, self.sci))]
        } else {
            key.members
                .iter()
                .filter(|(s, _)| *s != self.sci)
                .copied()
                .collect()
        };
        SaInstall {
            key: key.id,
            an: key.an,
            suite: self.cfg.suite,
            sak: Sak(Zeroizing::new(key.sak.to_vec())),
            salt: key.salt,
            confidentiality_offset: key.confidentiality_offset,
            scs,
            lowest_pn: 1,
        }
    }

    /// A Distributed SAK from a live peer.
    fn accept_sak(&mut self, now: u64, r: &Repr<'_>, d: DistributedSak<'_>) -> Result<(), MkaDrop> {
        if self.key_server_mi() != Some(r.basic.mi) || !r.basic.key_server {
            return Err(MkaDrop::SakNotFromKeyServer);
        }
        let Some(k) = d.key else {
            // "Plain text" distribution: MACsec without protection is not offered here.
            return Err(MkaDrop::BadSak);
        };
        let id = KeyId {
            mi: r.basic.mi,
            kn: k.kn,
        };
        if self.latest.as_ref().is_some_and(|l| l.id == id)
            || self.old.as_ref().is_some_and(|o| o.id == id)
        {
            return Ok(());
        }
        let suite = self.cfg.suite;
        let suite_ok = match k.cipher_suite {
            None => suite == CipherSuite::GcmAes128,
            Some(cs) => cs == suite.identifier(),
        };
        if !suite_ok || d.an > 3 {
            return Err(MkaDrop::BadSak);
        }
        let sak = match self.keys.unwrap_sak(k.wrapped) {
            Ok(s) if s.len() == suite.key_len() => s,
            _ => return Err(MkaDrop::BadSak),
        };
        let members = self.members();
        if suite.is_xpn() && r.basic.version >= 3 {
            let ks = members
                .iter()
                .find(|(s, _)| *s == r.basic.sci)
                .and_then(|m| m.1);
            if ks.map(|v| v as u8) != Some(r.key_server_ssci) {
                // Our view of the membership differs from the key server's: it sends the SAK
                // again with every MKPDU, so wait for the views to agree.
                self.counters.ssci_deferred += 1;
                return Ok(());
            }
        }
        let key = Key {
            id,
            an: d.an,
            sak,
            salt: suite.is_xpn().then(|| xpn_salt(&id)),
            confidentiality_offset: d.confidentiality_offset,
            members,
            peer_mis: Vec::new(),
            created: now,
            rx: true,
            tx: false,
            tx_pn: 1,
            tx_since: None,
        };
        self.set_latest(now, key);
        Ok(())
    }

    /// Makes `key` the latest key (receive installed). The key this participant transmits
    /// with is never dropped here: a latest key in use (by us or, as a peer reports, by
    /// anyone) becomes the old key, else it is replaced and the old key stays.
    fn set_latest(&mut self, now: u64, key: Key) {
        if let Some(prev) = self.latest.take() {
            let in_use = prev.tx
                || self
                    .peers
                    .iter()
                    .any(|p| p.live && p.reports(&prev.id, true));
            if in_use {
                let mut prev = prev;
                if !prev.tx {
                    prev.tx = true;
                    prev.tx_since = Some(now);
                    let ev = self.install(&prev, true);
                    self.push_event(Event::InstallTx(ev));
                }
                if let Some(o) = self.old.take() {
                    self.retire(o);
                }
                self.old = Some(prev);
            } else {
                self.retire(prev);
            }
        }
        self.retire_at = None;
        self.counters.saks_installed += 1;
        let ev = self.install(&key, false);
        self.push_event(Event::InstallRx(ev));
        self.latest = Some(key);
        self.pending_tx = true;
    }

    fn retire(&mut self, k: Key) {
        if k.tx {
            self.push_event(Event::RetireTx {
                key: k.id,
                an: k.an,
            });
        }
        if k.rx {
            self.push_event(Event::RetireRx {
                key: k.id,
                an: k.an,
            });
        }
        self.counters.saks_retired += 1;
    }

    fn retire_all(&mut self) {
        if let Some(o) = self.old.take() {
            self.retire(o);
        }
        if let Some(l) = self.latest.take() {
            self.retire(l);
        }
        self.distributing = None;
        self.retire_at = None;
    }

    /// The key server generates and distributes a SAK (clause 9.8).
    fn distribute(&mut self, now: u64, reason: RekeyReason) {
        let suite = self.cfg.suite;
        let mut nonce = Zeroizing::new(vec![0u8; suite.key_len()]);
        if self.rng.fill(&mut nonce).is_err() {
            return;
        }
        let kn = self.next_kn;
        let peer_mis: Vec<Mi> = self.peers.iter().filter(|p| p.live).map(|p| p.mi).collect();
        let mut mis = vec![self.mi];
        mis.extend_from_slice(&peer_mis);
        let Ok(sak) = self.keys.derive_sak(&nonce, &mis, kn, suite.key_len()) else {
            return;
        };
        let Ok(wrapped) = self.keys.wrap_sak(&sak) else {
            return;
        };
        self.next_kn = kn.wrapping_add(1).max(1);
        let used = [
            self.latest.as_ref().filter(|l| l.tx).map(|l| l.an),
            self.old.as_ref().map(|o| o.an),
        ];
        let prev = self
            .latest
            .as_ref()
            .map_or((self.first_an + 3) % 4, |l| l.an);
        let an = (1..=4)
            .map(|i| (prev + i) % 4)
            .find(|a| !used.contains(&Some(*a)))
            .unwrap_or((prev + 1) % 4);
        let id = KeyId { mi: self.mi, kn };
        let key = Key {
            id,
            an,
            sak,
            salt: suite.is_xpn().then(|| xpn_salt(&id)),
            confidentiality_offset: self.cfg.confidentiality_offset,
            members: self.members(),
            peer_mis,
            created: now,
            rx: true,
            tx: false,
            tx_pn: 1,
            tx_since: None,
        };
        self.counters.saks_distributed += 1;
        self.push_event(Event::SakDistributed {
            key: id,
            an,
            reason,
        });
        self.distributing = Some(Distribution {
            wrapped,
            key: id,
            an,
        });
        self.set_latest(now, key);
    }

    /// What follows from the current state: key server duties, transmit switch, retirement —
    /// repeated while a step changes the keys (a switch or a retirement can make a rekey due).
    fn progress(&mut self, now: u64) {
        let state = |p: &Participant| {
            (
                p.latest.as_ref().map(|l| (l.id, l.tx)),
                p.old.as_ref().map(|o| o.id),
            )
        };
        // Each round either changes nothing or moves a key a step on; a handful is plenty.
        for _ in 0..4 {
            let before = state(self);
            self.progress_once(now);
            if state(self) == before {
                break;
            }
        }
    }

    fn progress_once(&mut self, now: u64) {
        let live: Vec<&Peer> = self.peers.iter().filter(|p| p.live).collect();
        if live.is_empty() {
            return;
        }
        drop(live);
        // Retire first: a retirement may let the next rekey start.
        self.check_retire(now);
        let live: Vec<&Peer> = self.peers.iter().filter(|p| p.live).collect();
        if self.is_key_server() {
            let ours = self.latest.as_ref().filter(|l| l.id.mi == self.mi);
            let reason = match ours {
                None => Some(RekeyReason::Elected),
                Some(l) => {
                    let joined = live.iter().any(|p| !l.peer_mis.contains(&p.mi));
                    let left = l.peer_mis.iter().any(|m| !live.iter().any(|p| &p.mi == m));
                    let change = joined
                        && (self.cfg.rekey_on_peer_change || self.cfg.suite.is_xpn())
                        || left && self.cfg.rekey_on_peer_change;
                    let pn = live
                        .iter()
                        .filter_map(|p| p.latest_pn_for(&l.id))
                        .chain(core::iter::once(l.tx_pn))
                        .max()
                        .unwrap_or(0);
                    if !l.tx && joined {
                        // Still distributing and a member joined: redistribute to all.
                        Some(RekeyReason::PeerChange)
                    } else if !l.tx || self.old.is_some() {
                        // One rekey at a time: the previous one completes first.
                        None
                    } else if change {
                        Some(RekeyReason::PeerChange)
                    } else if pn >= self.cfg.pn_threshold() {
                        Some(RekeyReason::PnThreshold)
                    } else if self
                        .cfg
                        .rekey_interval_ns
                        .is_some_and(|i| now >= l.created.saturating_add(i))
                    {
                        Some(RekeyReason::Timer)
                    } else {
                        None
                    }
                }
            };
            if let Some(reason) = reason {
                self.distribute(now, reason);
            }
        }
        self.switch_tx(now);
        self.check_retire(now);
    }

    /// Starts transmitting with the latest key: the key server once every live peer receives
    /// with it, the others once the key server transmits with it.
    fn switch_tx(&mut self, now: u64) {
        let Some(l) = self.latest.as_ref() else {
            return;
        };
        if l.tx || !l.rx {
            return;
        }
        let id = l.id;
        let ready = if self.is_key_server() {
            let all = self
                .peers
                .iter()
                .filter(|p| p.live)
                .all(|p| p.reports(&id, false));
            if all {
                self.distributing = None;
            }
            all
        } else {
            let ks = self.key_server_mi();
            self.peers
                .iter()
                .any(|p| p.live && Some(p.mi) == ks && p.reports(&id, true))
        };
        if !ready {
            return;
        }
        let mut old_tx = None;
        if let Some(o) = self.old.as_mut().filter(|o| o.tx) {
            o.tx = false;
            old_tx = Some((o.id, o.an));
        }
        if let Some(l) = self.latest.as_mut() {
            l.tx = true;
            l.tx_since = Some(now);
            l.tx_pn = 1;
        }
        if let Some(ev) = self.latest.as_ref().map(|l| self.install(l, true)) {
            self.push_event(Event::InstallTx(ev));
        }
        if let Some((key, an)) = old_tx {
            self.push_event(Event::RetireTx { key, an });
        }
        self.pending_tx = true;
    }

    /// Retires the old key once every live peer transmits with the latest (after the SAK
    /// retire time), or at the latest a life time plus the retire time after our own switch.
    fn check_retire(&mut self, now: u64) {
        let (Some(o), Some(l)) = (self.old.as_ref(), self.latest.as_ref()) else {
            self.retire_at = None;
            return;
        };
        let _ = o;
        let Some(since) = l.tx_since else {
            return;
        };
        let id = l.id;
        if self.retire_at.is_none()
            && self
                .peers
                .iter()
                .filter(|p| p.live)
                .all(|p| p.reports(&id, true))
        {
            self.retire_at = Some(now.saturating_add(self.cfg.sak_retire_ns));
        }
        let forced = since
            .saturating_add(self.cfg.life_ns)
            .saturating_add(self.cfg.sak_retire_ns);
        if self.retire_at.is_some_and(|t| now >= t) || now >= forced {
            if let Some(o) = self.old.take() {
                self.retire(o);
            }
            self.retire_at = None;
            self.pending_tx = true;
        }
    }

    /// Advances the clock: peers not heard from within the life time are lost, hellos and
    /// rekeys fall due, old keys retire.
    pub fn handle_timeout(&mut self, now: u64) {
        let expired: Vec<Mi> = self
            .peers
            .iter()
            .filter(|p| p.expires <= now)
            .map(|p| p.mi)
            .collect();
        for mi in expired {
            self.remove_peer(&mi);
        }
        self.elect(now);
        if now >= self.next_hello {
            self.pending_tx = true;
        }
        self.progress(now);
    }

    /// The next time [`handle_timeout`](Self::handle_timeout) has work, in ns. Call
    /// [`poll_transmit`](Self::poll_transmit) first: while an MKPDU is pending this is `now`.
    pub fn poll_timeout(&self) -> Option<u64> {
        let mut t = self.next_hello;
        for p in &self.peers {
            t = t.min(p.expires);
        }
        if let Some(r) = self.retire_at {
            t = t.min(r);
        }
        if let (Some(l), true) = (self.latest.as_ref(), self.old.is_some()) {
            if let Some(since) = l.tx_since {
                t = t.min(
                    since
                        .saturating_add(self.cfg.life_ns)
                        .saturating_add(self.cfg.sak_retire_ns),
                );
            }
        }
        // The rekey timer, while a rekey could start (the previous one has completed).
        let ours = self
            .latest
            .as_ref()
            .filter(|l| l.id.mi == self.mi && l.tx && self.old.is_none());
        if let (true, Some(l), Some(i)) = (self.is_key_server(), ours, self.cfg.rekey_interval_ns) {
            t = t.min(l.created.saturating_add(i));
        }
        Some(t)
    }

    fn hello_interval(&self) -> u64 {
        let steady = self.cfg.hello();
        match self.cfg.ramp_up {
            Some(r) if self.ramp_sent < r.count => r
                .first_ns
                .saturating_mul(1u64 << self.ramp_sent.min(30))
                .min(steady),
            _ => steady,
        }
    }

    /// Writes the next MKPDU (a whole Ethernet frame) into `buf` when one is due and returns
    /// its length. A buffer shorter than [`max_frame_len`](Self::max_frame_len) may not fit:
    /// then nothing is sent (counted) and the MKPDU stays pending.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        if !self.pending_tx && now < self.next_hello {
            return None;
        }
        let live: Vec<PeerEntry> = self
            .peers
            .iter()
            .filter(|p| p.live)
            .map(|p| PeerEntry { mi: p.mi, mn: p.mn })
            .collect();
        let potential: Vec<PeerEntry> = self
            .peers
            .iter()
            .filter(|p| !p.live)
            .map(|p| PeerEntry { mi: p.mi, mn: p.mn })
            .collect();
        let suite = self.cfg.suite;
        let sak_use = self.latest.as_ref().map(|l| {
            let old = self.old.as_ref();
            SakUse {
                latest_an: l.an,
                latest_tx: l.tx,
                latest_rx: l.rx,
                old_an: old.map_or(0, |o| o.an),
                old_tx: old.is_some_and(|o| o.tx),
                old_rx: old.is_some_and(|o| o.rx),
                plain_tx: false,
                plain_rx: false,
                delay_protect: self.cfg.delay_protect,
                keys: Some(SakUseKeys {
                    latest: l.id,
                    latest_lowest_pn: l.tx_pn as u32,
                    old: old.map_or(KeyId::default(), |o| o.id),
                    old_lowest_pn: old.map_or(0, |o| o.tx_pn as u32),
                }),
            }
        });
        let xpn = (suite.is_xpn() && sak_use.is_some()).then(|| XpnParams {
            suspension_time: 0,
            latest_lowest_pn_high: self.latest.as_ref().map_or(0, |l| (l.tx_pn >> 32) as u32),
            old_lowest_pn_high: self.old.as_ref().map_or(0, |o| (o.tx_pn >> 32) as u32),
        });
        let dist = self.distributing.as_ref().filter(|_| self.is_key_server());
        let distributed_sak = dist.map(|d| DistributedSak {
            an: d.an,
            confidentiality_offset: self.cfg.confidentiality_offset,
            key: Some(DistributedKey {
                kn: d.key.kn,
                cipher_suite: (suite != CipherSuite::GcmAes128).then(|| suite.identifier()),
                wrapped: &d.wrapped,
            }),
        });
        let key_server_ssci = match (suite.is_xpn(), dist, self.latest.as_ref()) {
            (true, Some(_), Some(l)) => Self::own_ssci(l, self.sci).map_or(0, |s| s as u8),
            _ => 0,
        };
        let repr = Repr {
            basic: BasicParamSet {
                version: MKA_VERSION,
                key_server_priority: self.cfg.key_server_priority,
                key_server: self.is_key_server(),
                macsec_desired: true,
                macsec_capability: 2,
                sci: self.sci,
                mi: self.mi,
                mn: self.mn,
                algorithm_agility: ALGORITHM_AGILITY,
                ckn: &self.ckn,
            },
            live_peers: (!live.is_empty()).then_some(PeerList::Entries(&live)),
            key_server_ssci,
            potential_peers: (!potential.is_empty()).then_some(PeerList::Entries(&potential)),
            sak_use,
            distributed_sak,
            xpn,
            icv_indicator: false,
            skipped: 0,
        };
        let n = match repr.emit(self.cfg.destination, self.src, buf) {
            Ok(n) => n,
            Err(_) => {
                self.counters.tx_buffer_too_small += 1;
                return None;
            }
        };
        let signed_len = n - mkpdu::ICV_LEN;
        let icv = self.keys.icv(&buf[..signed_len]);
        buf[signed_len..n].copy_from_slice(&icv);

        // Bookkeeping for the next one.
        self.counters.pdus_sent += 1;
        if self.sent.len() >= MN_HISTORY {
            self.sent.pop_front();
        }
        self.sent.push_back((self.mn, now));
        while self
            .sent
            .front()
            .is_some_and(|(_, t)| t.saturating_add(self.cfg.life_ns) <= now)
            && self.sent.len() > 1
        {
            self.sent.pop_front();
        }
        if self.mn == u32::MAX {
            if let Ok(mi) = rand_mi(self.rng.as_ref()) {
                self.new_mi(mi);
            }
        } else {
            self.mn += 1;
        }
        self.next_hello = now.saturating_add(self.hello_interval());
        if self.cfg.ramp_up.is_some_and(|r| self.ramp_sent < r.count) {
            self.ramp_sent += 1;
        }
        self.pending_tx = false;
        Some(n)
    }

    /// The next event, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Makes the first SAK this participant distributes as key server take association number
    /// `an` (0..=3; default 0), later ones the next free as always. A participant that takes
    /// over a SecY from another on an older CAK (`macsec up --keyserver`) picks an AN the old
    /// one's SAKs do not use, so both CAKs' SAs stay installed side by side until the old ones
    /// retire (make-before-break across CAKs).
    pub fn prefer_first_an(&mut self, an: u8) {
        self.first_an = an & 3;
    }

    /// The data plane reports the next PN of the transmit SA with association number `an`.
    /// The key server rekeys when it reaches the threshold; the others report it in their SAK
    /// Use parameter set so the key server does.
    pub fn report_tx_pn(&mut self, now: u64, an: u8, next_pn: u64) {
        let mut changed = false;
        for k in [self.latest.as_mut(), self.old.as_mut()]
            .into_iter()
            .flatten()
        {
            if k.tx && k.an == an && next_pn > k.tx_pn {
                let crossed =
                    k.tx_pn < self.cfg.pn_threshold() && next_pn >= self.cfg.pn_threshold();
                k.tx_pn = next_pn;
                changed |= crossed;
            }
        }
        if changed {
            // Tell the key server now rather than at the next hello.
            self.pending_tx = true;
        }
        self.progress(now);
    }

    /// A snapshot of the state and counters.
    pub fn snapshot(&self) -> Status {
        Status {
            sci: self.sci,
            mi: self.mi,
            mn: self.mn,
            suite: self.cfg.suite,
            key_server: self.key_server.map(|(s, _)| s),
            is_key_server: self.is_key_server(),
            peers: self
                .peers
                .iter()
                .map(|p| PeerStatus {
                    sci: p.sci,
                    mi: p.mi,
                    mn: p.mn,
                    live: p.live,
                    key_server_priority: p.priority,
                })
                .collect(),
            latest: self.latest.as_ref().map(Key::status),
            old: self.old.as_ref().map(Key::status),
            counters: self.counters,
        }
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}
