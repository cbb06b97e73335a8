//! The participant's public types: configuration, errors, drop reasons, events, counters
//! and status.

use alloc::vec::Vec;
use core::fmt;

use zeroize::Zeroizing;

use crate::mka::kdf::{KeyError, SecretBytes};
use crate::sa::macsec::CipherSuite;
use crate::wire::ethernet::MacAddr;
use crate::wire::macsec::Sci;
use crate::wire::mkpdu::{KeyId, Mi, MkpduError, PAE_GROUP_ADDR};

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
    /// The key server distributes SAKs (default true). False for a CA that only carries a
    /// Distributed CAK: an 802.1X authenticator's pairwise CAs under a group CA, whose SAKs
    /// come from the group CA alone.
    pub distribute_sak: bool,
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
            distribute_sak: true,
        }
    }

    /// The PN at which the key server rekeys.
    pub fn pn_threshold(&self) -> u64 {
        // 75 % of the 2^32 (2^64 with XPN) PN space: 0xC0000000, wpa_supplicant's value.
        let space = u128::from(self.suite.max_pn()) + 1;
        self.pn_threshold.unwrap_or((space / 4 * 3) as u64).max(1)
    }

    pub(super) fn check(&self) -> Result<(), MkaError> {
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
    pub(super) fn hello(&self) -> u64 {
        if self.delay_protect {
            self.bounded_hello_ns
        } else {
            self.hello_ns
        }
    }
}

/// Errors of [`Participant::new`](super::Participant::new).
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
    /// A Distributed CAK from a live member that is not the elected key server (the rest of
    /// the MKPDU was used).
    DcakNotFromKeyServer,
    /// A Distributed CAK that does not unwrap under the KEK to a 128- or 256-bit CAK (the
    /// rest of the MKPDU was used).
    DcakUnwrap,
}

impl MkaDrop {
    /// Every reason, in counter order.
    pub const ALL: [&'static str; 12] = [
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
        "dcak_not_from_key_server",
        "dcak_unwrap",
    ];

    /// Stable name (used as a counter and JSON key).
    pub fn name(self) -> &'static str {
        Self::ALL.get(self.index()).copied().unwrap_or("unknown")
    }

    pub(super) fn index(self) -> usize {
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
            MkaDrop::DcakNotFromKeyServer => 10,
            MkaDrop::DcakUnwrap => 11,
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
pub struct Sak(pub(super) SecretBytes);

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

/// A distributed CAK's bytes, zeroed on drop; `Debug` never prints them.
pub struct Cak(pub(super) SecretBytes);

impl Cak {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Clone for Cak {
    fn clone(&self) -> Self {
        Cak(Zeroizing::new(self.0.to_vec()))
    }
}

impl PartialEq for Cak {
    /// In constant time.
    fn eq(&self, other: &Self) -> bool {
        use subtle::ConstantTimeEq;
        self.0.len() == other.0.len() && bool::from(self.0.ct_eq(&other.0))
    }
}

impl Eq for Cak {}

impl fmt::Debug for Cak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cak(<{} bytes>)", self.0.len())
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
    /// The elected key server of this CA distributed a CAK (clause 9.8): join the CA of `cak`
    /// and `ckn` as well (the group CA). Once per distinct CAK and CKN in a row.
    CakDistributed { cak: Cak, ckn: Vec<u8> },
}

/// Counters for `macsec status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub pdus_sent: u64,
    pub pdus_accepted: u64,
    /// Per [`MkaDrop::ALL`] entry.
    pub drops: [u64; 12],
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
    /// The CKN of the CAK [`distribute_cak`](super::Participant::distribute_cak) was given
    /// (sent while this participant is the key server), if any.
    pub distributing_cak: Option<Vec<u8>>,
    /// The CKN of the last CAK the key server distributed to this participant, if any.
    pub received_cak: Option<Vec<u8>>,
    pub counters: Counters,
}
