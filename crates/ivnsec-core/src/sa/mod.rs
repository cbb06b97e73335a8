//! Security associations: per-SA keys, sequence numbers, replay windows and counters.
//!
//! Every verify path returns a [`DropReason`] and counts it; nothing on the receive path panics.

pub mod any;
pub mod esp;
pub mod ivnae;
pub mod macsec;
pub mod replay;
pub mod secoc;
pub mod secy;
pub mod someip;

use core::fmt;

use crate::crypto::CryptoError;
use crate::suite::{Level, Suite};
use crate::wire::WireError;

macro_rules! drop_reasons {
    ($($variant:ident => $name:literal, $doc:literal;)*) => {
        /// Why a received frame was dropped. Each reason has its own counter.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum DropReason {
            $(#[doc = $doc] $variant,)*
        }

        impl DropReason {
            /// Every reason, in counter order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant,)*];
            /// Number of reasons (length of a counter array).
            pub const COUNT: usize = Self::ALL.len();

            /// Stable snake_case name used in reports, JSON and `DROP <reason>` lines.
            pub const fn name(self) -> &'static str {
                match self {
                    $(DropReason::$variant => $name,)*
                }
            }

            /// Parses a name as printed by [`name`](Self::name).
            pub fn from_name(s: &str) -> Option<DropReason> {
                Self::ALL.iter().copied().find(|r| r.name() == s)
            }
        }
    };
}

drop_reasons! {
    Truncated => "truncated", "Shorter than the header, body and tag need.";
    Oversize => "oversize", "Longer than the receive buffer.";
    WrongEtherType => "wrong_ethertype", "Not the protocol's EtherType (an untagged or foreign frame).";
    BadVersion => "bad_version", "A version this implementation does not speak.";
    ReservedBits => "reserved_bits", "Reserved flag bits set (SecOC: non-zero padding bits after the authenticator).";
    UnknownSuite => "unknown_suite", "A suite id no suite has.";
    SuiteMismatch => "suite_mismatch", "A suite other than the SA's.";
    UnknownSa => "unknown_sa", "No SA for the key id / SCI / SPI.";
    LevelMismatch => "level_mismatch", "Protection level differs from the SA's (a downgrade attempt).";
    BadSeq => "bad_seq", "Sequence number 0 (sequence numbers start at 1).";
    BadLength => "bad_length", "Length impossible for the suite (e.g. CBC data not a multiple of 16).";
    ReplayDuplicate => "replay_duplicate", "Sequence number already accepted.";
    ReplayTooOld => "replay_too_old", "Sequence number left of the replay window.";
    BadTag => "bad_tag", "The tag / ICV / CRC did not verify.";
    BadPadding => "bad_padding", "Authenticated but the padding is malformed (a faulty sender).";
    Malformed => "malformed", "Any other structural error.";
    Crypto => "crypto_error", "The crypto provider failed.";
    NotEsp => "not_esp", "An IP packet whose protocol / next header is not ESP (50).";
    Fragment => "fragment", "An IP fragment: ESP is verified after reassembly.";
    DummyPacket => "dummy_packet", "An ESP dummy packet (next header 59, RFC 4303 §2.6), discarded after it verified.";
    Untagged => "untagged", "MACsec: a frame without a SecTAG under validateFrames Strict (InPktsNoTag).";
    NoSci => "no_sci", "MACsec: the SCI matches no receive SC and the frame cannot be delivered (InPktsNoSCI).";
    NotUsingSa => "not_using_sa", "MACsec: the AN selects no receive SA in use and the frame cannot be delivered (InPktsNotUsingSA).";
    Late => "late", "MACsec: PN below the lowest acceptable PN (InPktsLate).";
    FreshnessWindow => "freshness_window", "SecOC: the freshness value is more than the acceptance window ahead of the last accepted one.";
    UnknownService => "unknown_service", "SOME/IP: a service ID with no configuration.";
    BadMessageType => "bad_message_type", "SOME/IP: a message type the protocol does not define.";
    TooManySenders => "too_many_senders", "SOME/IP: a new sender while the service's replay table is full.";
    TpBadSegment => "tp_bad_segment", "SOME/IP-TP: an inconsistent segment (length, offset or end).";
    TpTooLarge => "tp_too_large", "SOME/IP-TP: a message past the reassembly bound.";
    StreamResync => "stream_resync", "SOME/IP over TCP: a corrupt header; bytes skipped to the next header.";
    ForeignSource => "foreign_source", "The source address is not the SA's peer (ESP transport mode: an inbound selector mismatch, RFC 4301 §5.2).";
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<WireError> for DropReason {
    fn from(e: WireError) -> DropReason {
        match e {
            WireError::Truncated => DropReason::Truncated,
            WireError::WrongEtherType => DropReason::WrongEtherType,
            WireError::BadVersion => DropReason::BadVersion,
            WireError::ReservedBits => DropReason::ReservedBits,
            WireError::Malformed => DropReason::Malformed,
        }
    }
}

/// One counter per [`DropReason`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DropCounters {
    counts: [u64; DropReason::COUNT],
}

impl Default for DropCounters {
    fn default() -> Self {
        DropCounters {
            counts: [0; DropReason::COUNT],
        }
    }
}

impl DropCounters {
    pub fn bump(&mut self, r: DropReason) {
        if let Some(c) = self.counts.get_mut(r as usize) {
            *c = c.saturating_add(1);
        }
    }

    /// Counts `n` drops for `r` at once.
    pub fn add(&mut self, r: DropReason, n: u64) {
        if let Some(c) = self.counts.get_mut(r as usize) {
            *c = c.saturating_add(n);
        }
    }

    pub fn get(&self, r: DropReason) -> u64 {
        self.counts.get(r as usize).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Non-zero counters.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|&r| (r, self.get(r)))
            .filter(|&(_, n)| n > 0)
    }

    pub fn merge(&mut self, other: &DropCounters) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a = a.saturating_add(*b);
        }
    }
}

/// Transmit counters of an SA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCounters {
    pub frames: u64,
    pub bytes: u64,
}

/// Receive counters of an SA.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RxCounters {
    pub ok_frames: u64,
    pub ok_bytes: u64,
    pub drops: DropCounters,
    /// Replay refusals (also counted in `drops`) of numbers at or below the mark the SA was
    /// restored with (`restore_floor`): numbers a previous run of the receiver may have
    /// accepted.
    pub below_restored: u64,
}

/// Errors making an SA (configuration errors, not wire errors).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaError {
    /// The suite needs a cipher key and none was given.
    MissingKey { suite: Suite },
    /// The suite needs an HMAC key (≥ 1 byte) and none was given.
    MissingMacKey { suite: Suite },
    /// A key was given to a suite that has none.
    KeyNotUsed { suite: Suite, which: &'static str },
    /// The cipher key has the wrong length.
    BadKeyLength {
        suite: Suite,
        expected: usize,
        got: usize,
    },
    /// The tag length is outside what the suite allows.
    BadTagLength {
        suite: Suite,
        min: usize,
        max: usize,
        got: usize,
    },
    /// The suite cannot run at the level.
    BadLevel { suite: Suite, level: Level },
    /// Sequence numbers start at 1.
    BadFirstSeq,
    /// The replay window is larger than supported.
    WindowTooLarge(replay::WindowTooLarge),
    /// The provider cannot make the keys.
    Crypto(CryptoError),
}

impl fmt::Display for SaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaError::MissingKey { suite } => write!(f, "suite {suite} needs a cipher key (--key)"),
            SaError::MissingMacKey { suite } => {
                write!(
                    f,
                    "suite {suite} needs an HMAC key of at least 1 byte (--mac-key)"
                )
            }
            SaError::KeyNotUsed { suite, which } => write!(f, "suite {suite} takes no {which}"),
            SaError::BadKeyLength {
                suite,
                expected,
                got,
            } => {
                write!(
                    f,
                    "suite {suite} needs a {expected}-byte key, got {got} bytes"
                )
            }
            SaError::BadTagLength {
                suite,
                min,
                max,
                got,
            } => {
                if min == max {
                    write!(f, "suite {suite} has a fixed {min}-byte tag, got {got}")
                } else {
                    write!(
                        f,
                        "suite {suite} takes a tag of {min}..={max} bytes, got {got}"
                    )
                }
            }
            SaError::BadLevel { suite, level } => {
                write!(f, "suite {suite} cannot run at level {level}")
            }
            SaError::BadFirstSeq => f.write_str("sequence numbers start at 1"),
            SaError::WindowTooLarge(e) => write!(f, "{e}"),
            SaError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for SaError {}

impl From<CryptoError> for SaError {
    fn from(e: CryptoError) -> SaError {
        SaError::Crypto(e)
    }
}

/// Errors protecting a frame. None of these come from the wire; they are the sender's problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtectError {
    /// The plain frame is shorter than an Ethernet header.
    FrameTooShort,
    /// The output buffer cannot hold the protected frame.
    BufferTooSmall {
        needed: usize,
    },
    /// Every sequence number of this SA has been used: the SA needs a new key.
    SeqExhausted,
    Crypto(CryptoError),
}

impl fmt::Display for ProtectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtectError::FrameTooShort => {
                f.write_str("frame shorter than an Ethernet header (14 bytes)")
            }
            ProtectError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            ProtectError::SeqExhausted => {
                f.write_str("sequence numbers exhausted: the SA needs a new key")
            }
            ProtectError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for ProtectError {}

impl From<CryptoError> for ProtectError {
    fn from(e: CryptoError) -> ProtectError {
        ProtectError::Crypto(e)
    }
}

/// Length of the addresses (destination ‖ source) in front of an Ethernet frame.
const ADDRS_LEN: usize = 12;

/// Where the plain Ethernet frame `buf[at..at + plain_len]` given to protect ends:
/// [`ProtectError::FrameTooShort`] when it is shorter than an Ethernet header or lies outside
/// `buf`.
fn plain_frame_end(buf: &[u8], at: usize, plain_len: usize) -> Result<usize, ProtectError> {
    at.checked_add(plain_len)
        .filter(|&end| plain_len >= crate::wire::ethernet::HEADER_LEN && end <= buf.len())
        .ok_or(ProtectError::FrameTooShort)
}

/// Moves the plain Ethernet frame `buf[at..end]` (from [`plain_frame_end`]) so that its
/// addresses are at the front of `buf` and the rest (EtherType and payload) starts at `body_at`
/// (≥ 12), leaving room for a header in between. What is already in place does not move: with
/// `at` = `body_at` − 12 only the 12 address bytes do. `buf` must reach `body_at + end − at − 12`.
fn make_header_room(buf: &mut [u8], at: usize, end: usize, body_at: usize) {
    // The addresses first: a body moving towards the front may land on them.
    if at != 0 {
        buf.copy_within(at..at + ADDRS_LEN, 0);
    }
    if at + ADDRS_LEN != body_at {
        buf.copy_within(at + ADDRS_LEN..end, body_at);
    }
}
