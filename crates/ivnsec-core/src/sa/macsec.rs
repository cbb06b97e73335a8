//! MACsec security associations (IEEE 802.1AE-2018 with the XPN cipher suites of 802.1AEbw):
//! a transmit SA ([`MacsecTx`]) and a receive SC with one receive SA ([`MacsecRx`]).
//!
//! Cipher suites (§14): GCM-AES-128, GCM-AES-256 (32-bit PN, IV = SCI ‖ PN) and GCM-AES-XPN-128,
//! GCM-AES-XPN-256 (64-bit PN, IV = (SSCI ‖ PN) XOR salt). The ICV is 16 octets. Integrity only
//! (E = C = 0: the ICV covers the whole frame, the data stays in clear) or confidentiality with
//! offset 0 (E = C = 1: dst ‖ src ‖ SecTAG authenticated, the secure data encrypted).
//!
//! Receive follows §10.6 (Figure 10-5) in this order:
//! untagged? → SecTAG valid? → SCI known? → SA in use (AN)? → PN recovery (XPN, §10.6.2) →
//! replay check (lowest acceptable PN, and our duplicate bitmap) → validation (§10.6.4) →
//! nextPN update → counters (§10.7). The PN is *checked* before the ICV and *marked* only after a
//! frame validated (as boringtun does).
//!
//! Stricter than the standard: a PN that already validated is refused as
//! [`DropReason::ReplayDuplicate`] when it is one of the [`DUP_BITS`] PNs at or below the highest
//! validated PN. 802.1AE accepts any PN ≥ lowest acceptable PN, duplicates included. The replay
//! window is a 32-bit quantity, so no bitmap of its size is kept: between `highest − DUP_BITS`
//! and the lowest acceptable PN (only reachable with `replay_window > DUP_BITS`) frames are
//! accepted as the standard accepts them, without duplicate detection.

use alloc::boxed::Box;
use core::fmt;
use core::ops::Range;

use zeroize::Zeroizing;

use super::{DropCounters, DropReason, ProtectError};
use crate::crypto::{AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, CryptoError, CryptoProvider};
use crate::wire::ethernet::{self, MacAddr};
use crate::wire::macsec::{self as wire, ICV_LEN, SECTAG_OFFSET, Sci};

/// How many PNs below the highest validated PN the duplicate bitmap covers.
pub const DUP_BITS: u64 = 2048;
const DUP_WORDS: usize = (DUP_BITS / 64) as usize;
/// Largest replay window for XPN suites (802.1AEbw: the window shall be less than 2^30).
pub const XPN_MAX_WINDOW: u32 = (1 << 30) - 1;

/// A MACsec cipher suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CipherSuite {
    GcmAes128,
    GcmAes256,
    GcmAesXpn128,
    GcmAesXpn256,
}

impl CipherSuite {
    pub const ALL: [CipherSuite; 4] = [
        CipherSuite::GcmAes128,
        CipherSuite::GcmAes256,
        CipherSuite::GcmAesXpn128,
        CipherSuite::GcmAesXpn256,
    ];

    /// Profile name (`macsec-gcm-aes-128`, …).
    pub const fn profile(self) -> &'static str {
        match self {
            CipherSuite::GcmAes128 => "macsec-gcm-aes-128",
            CipherSuite::GcmAes256 => "macsec-gcm-aes-256",
            CipherSuite::GcmAesXpn128 => "macsec-gcm-aes-xpn-128",
            CipherSuite::GcmAesXpn256 => "macsec-gcm-aes-xpn-256",
        }
    }

    /// Parses a profile name.
    pub fn from_profile(s: &str) -> Option<CipherSuite> {
        CipherSuite::ALL.iter().copied().find(|c| c.profile() == s)
    }

    /// Cipher suite identifier of §14 (for reports).
    pub const fn identifier(self) -> u64 {
        match self {
            CipherSuite::GcmAes128 => 0x0080_C200_0100_0001,
            CipherSuite::GcmAes256 => 0x0080_C200_0100_0002,
            CipherSuite::GcmAesXpn128 => 0x0080_C200_0100_0003,
            CipherSuite::GcmAesXpn256 => 0x0080_C200_0100_0004,
        }
    }

    pub const fn aead(self) -> AeadAlg {
        match self {
            CipherSuite::GcmAes128 | CipherSuite::GcmAesXpn128 => AeadAlg::Aes128Gcm,
            CipherSuite::GcmAes256 | CipherSuite::GcmAesXpn256 => AeadAlg::Aes256Gcm,
        }
    }

    pub const fn key_len(self) -> usize {
        self.aead().key_len()
    }

    pub const fn is_xpn(self) -> bool {
        matches!(self, CipherSuite::GcmAesXpn128 | CipherSuite::GcmAesXpn256)
    }

    /// Largest PN the suite can send.
    pub const fn max_pn(self) -> u64 {
        if self.is_xpn() {
            u64::MAX
        } else {
            u32::MAX as u64
        }
    }
}

impl fmt::Display for CipherSuite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.profile())
    }
}

/// validateFrames (§10.7.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValidateFrames {
    Disabled,
    Check,
    #[default]
    Strict,
}

impl core::str::FromStr for ValidateFrames {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "disabled" => Ok(ValidateFrames::Disabled),
            "check" => Ok(ValidateFrames::Check),
            "strict" => Ok(ValidateFrames::Strict),
            _ => Err("expected strict, check or disabled"),
        }
    }
}

/// Key material shared by both directions. XPN suites need `ssci` and `salt`; the others ignore
/// them (and [`MacsecError::XpnParamsNotUsed`] is returned when they are given).
#[derive(Clone, Copy, Debug)]
pub struct KeyParams<'a> {
    pub suite: CipherSuite,
    /// The SAK, 16 or 32 octets.
    pub key: &'a [u8],
    /// The SCI of the transmitting SC (the transmit SC's own, or the peer's on receive).
    pub sci: Sci,
    /// Association number 0..=3.
    pub an: u8,
    /// XPN: short SCI.
    pub ssci: Option<u32>,
    /// XPN: 12-octet salt.
    pub salt: Option<[u8; 12]>,
}

/// Transmit options.
#[derive(Clone, Copy, Debug, Default)]
pub struct TxOptions {
    /// E = C = 1 (false: integrity only).
    pub confidentiality: bool,
    /// Put the SCI in the SecTAG (SC = 1). Off with `es` or `scb`.
    pub include_sci: bool,
    /// ES = 1: the SCI is the source address ‖ 0x0001 (checked per frame).
    pub es: bool,
    /// SCB = 1 (EPON single copy broadcast).
    pub scb: bool,
}

/// Receive options.
#[derive(Clone, Copy, Debug)]
pub struct RxOptions {
    pub validate: ValidateFrames,
    /// replayProtect (§10.7.8).
    pub replay_protect: bool,
    /// replayWindow: PNs down to nextPN − window are acceptable.
    pub replay_window: u32,
    /// Lowest acceptable PN when the SA is installed (≥ 1); also the base of XPN PN recovery.
    pub lowest_pn: u64,
}

impl Default for RxOptions {
    fn default() -> Self {
        RxOptions {
            validate: ValidateFrames::Strict,
            replay_protect: true,
            replay_window: 0,
            lowest_pn: 1,
        }
    }
}

/// Configuration errors.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MacsecError {
    BadKeyLength {
        suite: CipherSuite,
        expected: usize,
        got: usize,
    },
    BadAn(u8),
    /// An XPN suite without SSCI or salt.
    MissingXpnParams {
        suite: CipherSuite,
    },
    /// SSCI or salt given to a non-XPN suite.
    XpnParamsNotUsed {
        suite: CipherSuite,
    },
    /// PN 0 or above the suite's maximum.
    BadPn {
        suite: CipherSuite,
        pn: u64,
    },
    /// `es` or `scb` together with an explicit SCI (§9.5: ES and SCB only when SC is clear).
    ConflictingTci,
    /// replayWindow too large for an XPN suite.
    WindowTooLarge {
        max: u32,
        got: u32,
    },
    Crypto(CryptoError),
}

impl fmt::Display for MacsecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MacsecError::BadKeyLength {
                suite,
                expected,
                got,
            } => {
                write!(f, "{suite} needs a {expected}-byte key, got {got} bytes")
            }
            MacsecError::BadAn(an) => write!(f, "association number must be 0..=3, got {an}"),
            MacsecError::MissingXpnParams { suite } => {
                write!(f, "{suite} needs an SSCI and a 12-byte salt")
            }
            MacsecError::XpnParamsNotUsed { suite } => {
                write!(f, "{suite} takes no SSCI or salt (XPN suites only)")
            }
            MacsecError::BadPn { suite, pn } => {
                write!(f, "{suite}: PN {pn} outside 1..={}", suite.max_pn())
            }
            MacsecError::ConflictingTci => {
                f.write_str("ES and SCB are only allowed without an explicit SCI")
            }
            MacsecError::WindowTooLarge { max, got } => {
                write!(f, "replay window {got} exceeds the XPN maximum {max}")
            }
            MacsecError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for MacsecError {}

impl From<CryptoError> for MacsecError {
    fn from(e: CryptoError) -> Self {
        MacsecError::Crypto(e)
    }
}

/// Scheduled key and IV material.
struct Keys {
    suite: CipherSuite,
    sci: Sci,
    an: u8,
    ssci: [u8; 4],
    salt: Zeroizing<[u8; 12]>,
    aead: Box<dyn AeadKey>,
}

impl Keys {
    fn new(provider: &CryptoProvider, p: &KeyParams<'_>) -> Result<Keys, MacsecError> {
        let suite = p.suite;
        if p.key.len() != suite.key_len() {
            return Err(MacsecError::BadKeyLength {
                suite,
                expected: suite.key_len(),
                got: p.key.len(),
            });
        }
        if p.an > 3 {
            return Err(MacsecError::BadAn(p.an));
        }
        let (ssci, salt) = match (suite.is_xpn(), p.ssci, p.salt) {
            (true, Some(ssci), Some(salt)) => (ssci.to_be_bytes(), salt),
            (true, _, _) => return Err(MacsecError::MissingXpnParams { suite }),
            (false, None, None) => ([0; 4], [0; 12]),
            (false, _, _) => return Err(MacsecError::XpnParamsNotUsed { suite }),
        };
        let aead = provider.keys.aead(suite.aead(), p.key)?;
        Ok(Keys {
            suite,
            sci: p.sci,
            an: p.an,
            ssci,
            salt: Zeroizing::new(salt),
            aead,
        })
    }

    /// §14.5 (GCM-AES): IV = SCI ‖ PN (32 bits). 802.1AEbw §14.7 (XPN): IV = (SSCI ‖ PN64) XOR salt.
    /// Written as 8 + 4 bytes, the way the providers read a 12-byte nonce, so that reading it
    /// back does not wait for narrower stores.
    fn iv(&self, pn: u64) -> [u8; AEAD_NONCE_LEN] {
        let mut iv = [0u8; AEAD_NONCE_LEN];
        if self.suite.is_xpn() {
            let ssci = u64::from(u32::from_be_bytes(self.ssci));
            let salt: &[u8; 12] = &self.salt;
            let salt_hi = u64::from_be_bytes([
                salt[0], salt[1], salt[2], salt[3], salt[4], salt[5], salt[6], salt[7],
            ]);
            let salt_lo = u32::from_be_bytes([salt[8], salt[9], salt[10], salt[11]]);
            iv[..8].copy_from_slice(&(((ssci << 32) | (pn >> 32)) ^ salt_hi).to_be_bytes());
            iv[8..].copy_from_slice(&((pn as u32) ^ salt_lo).to_be_bytes());
        } else {
            iv[..8].copy_from_slice(&self.sci.0);
            iv[8..].copy_from_slice(&(pn as u32).to_be_bytes());
        }
        iv
    }
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("Keys")
            .field("suite", &self.suite)
            .field("sci", &self.sci)
            .field("an", &self.an)
            .finish_non_exhaustive()
    }
}

/// Transmit counters (§10.7.17, per SecY and per SA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCounters {
    /// OutPktsProtected: integrity only.
    pub out_pkts_protected: u64,
    /// OutPktsEncrypted: confidentiality.
    pub out_pkts_encrypted: u64,
    /// OutOctetsProtected: user data octets integrity protected.
    pub out_octets_protected: u64,
    /// OutOctetsEncrypted: user data octets encrypted.
    pub out_octets_encrypted: u64,
    /// OutPktsTooLong: refused because the output buffer was too small.
    pub out_pkts_too_long: u64,
}

/// Transmit side: one transmit SA of a transmit SC.
pub struct MacsecTx {
    keys: Keys,
    opts: TxOptions,
    /// Next PN; `None` once the suite's maximum PN has been used.
    next_pn: Option<u64>,
    counters: TxCounters,
}

impl MacsecTx {
    /// A transmit SA whose first frame carries `first_pn` (≥ 1). A restarted sender must start
    /// above every PN it used under the same key.
    pub fn new(
        provider: &CryptoProvider,
        keys: &KeyParams<'_>,
        opts: TxOptions,
        first_pn: u64,
    ) -> Result<MacsecTx, MacsecError> {
        if first_pn == 0 || first_pn > keys.suite.max_pn() {
            return Err(MacsecError::BadPn {
                suite: keys.suite,
                pn: first_pn,
            });
        }
        if opts.include_sci && (opts.es || opts.scb) {
            return Err(MacsecError::ConflictingTci);
        }
        Ok(MacsecTx {
            keys: Keys::new(provider, keys)?,
            opts,
            next_pn: Some(first_pn),
            counters: TxCounters::default(),
        })
    }

    pub fn suite(&self) -> CipherSuite {
        self.keys.suite
    }

    /// The PN of the next frame; `None` when the SA is exhausted.
    pub fn next_pn(&self) -> Option<u64> {
        self.next_pn
    }

    /// True once every PN is used: the SA stops and needs a new SAK.
    pub fn needs_rekey(&self) -> bool {
        self.next_pn.is_none()
    }

    pub fn counters(&self) -> TxCounters {
        self.counters
    }

    fn sectag_len(&self) -> usize {
        if self.opts.include_sci {
            wire::SECTAG_SCI_LEN
        } else {
            wire::SECTAG_LEN
        }
    }

    /// Length of the MACsec frame for a plain frame of `plain_len` (≥ 14) octets.
    pub fn protected_len(&self, plain_len: usize) -> usize {
        plain_len + self.sectag_len() + ICV_LEN
    }

    /// Octets to leave in front of a plain frame so that
    /// [`protect_in_place_at`](Self::protect_in_place_at) need not move its secure data: the
    /// SecTAG's length (8, or 16 with the SCI).
    pub fn headroom(&self) -> usize {
        self.sectag_len()
    }

    /// Protects `plain` (dst ‖ src ‖ EtherType ‖ payload) into `out`; returns the frame length.
    pub fn protect(&mut self, plain: &[u8], out: &mut [u8]) -> Result<usize, ProtectError> {
        if plain.len() < ethernet::HEADER_LEN {
            return Err(ProtectError::FrameTooShort);
        }
        let needed = self.protected_len(plain.len());
        if out.len() < needed {
            self.counters.out_pkts_too_long += 1;
            return Err(ProtectError::BufferTooSmall { needed });
        }
        // Copied once, to where the secure data stays.
        let at = self.headroom();
        out.get_mut(at..at + plain.len())
            .ok_or(ProtectError::BufferTooSmall { needed })?
            .copy_from_slice(plain);
        self.protect_in_place_at(out, at, plain.len())
    }

    /// Protects the plain frame in `buf[..plain_len]` in place; `buf` must hold
    /// [`protected_len`](Self::protected_len) octets. Returns the frame length.
    pub fn protect_in_place(
        &mut self,
        buf: &mut [u8],
        plain_len: usize,
    ) -> Result<usize, ProtectError> {
        self.protect_in_place_at(buf, 0, plain_len)
    }

    /// Protects the plain frame in `buf[at..at + plain_len]` in place and writes the MACsec
    /// frame to the front of `buf`; `buf` must hold [`protected_len`](Self::protected_len)
    /// octets. Returns the frame length. With `at` = [`headroom`](Self::headroom) (a frame
    /// received or built behind that many spare octets) only the 12 address octets move: the
    /// secure data is encrypted where it lies. Any other `at` moves the secure data too.
    ///
    /// The same as [`MacsecTx::prepare_at`] and [`MacsecTx::seal`] one after the other, which is
    /// how it is done.
    pub fn protect_in_place_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        plain_len: usize,
    ) -> Result<usize, ProtectError> {
        let s = self.prepare_at(buf, at, plain_len)?;
        self.seal(buf, &s)
    }

    /// The first of a protection's two stages, in the frames' order: the frame's PN taken
    /// (spent whatever happens next), the SecTAG written and the frame laid out as
    /// [`MacsecTx::protect_in_place_at`] lays it out, the frame counted as protected. The
    /// second, [`MacsecTx::seal`], takes `&self`: the frames of a batch may be sealed in any
    /// order or on several threads at once, each under the PN its preparation took.
    pub fn prepare_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        plain_len: usize,
    ) -> Result<Sealing, ProtectError> {
        let end = super::plain_frame_end(buf, at, plain_len)?;
        let needed = self.protected_len(plain_len);
        if buf.len() < needed {
            self.counters.out_pkts_too_long += 1;
            return Err(ProtectError::BufferTooSmall { needed });
        }
        let pn = self.next_pn.ok_or(ProtectError::SeqExhausted)?;
        // Spent whatever happens next: a PN is never used twice under one SAK (§10.5.2), and
        // the PN never wraps.
        self.next_pn = if pn >= self.keys.suite.max_pn() {
            None
        } else {
            Some(pn + 1)
        };

        let sd_len = plain_len - SECTAG_OFFSET;
        let hdr_len = SECTAG_OFFSET + self.sectag_len();
        super::make_header_room(buf, at, end, hdr_len);
        let sci = if self.opts.include_sci {
            Some(self.keys.sci)
        } else {
            None
        };
        let repr = wire::Repr {
            es: self.opts.es,
            scb: self.opts.scb,
            encrypted: self.opts.confidentiality,
            an: self.keys.an,
            short_len: wire::Repr::short_len_for(sd_len),
            pn: pn as u32,
            sci,
        };
        repr.emit(&mut wire::Frame::new_unchecked(
            buf.get_mut(..hdr_len)
                .ok_or(ProtectError::BufferTooSmall { needed })?,
        ));
        // Counted here, where the PN is spent: sealing a laid-out frame under a valid key does
        // not fail.
        if self.opts.confidentiality {
            self.counters.out_pkts_encrypted += 1;
            self.counters.out_octets_encrypted += sd_len as u64;
        } else {
            self.counters.out_pkts_protected += 1;
            self.counters.out_octets_protected += sd_len as u64;
        }
        Ok(Sealing {
            pn,
            hdr_len,
            sd_len,
            needed,
        })
    }

    /// The second stage: the frame [`MacsecTx::prepare_at`] laid out in `buf` sealed under its
    /// PN, the ICV written behind it. Reads the key only. Returns the frame length.
    pub fn seal(&self, buf: &mut [u8], s: &Sealing) -> Result<usize, ProtectError> {
        let too_small = ProtectError::BufferTooSmall { needed: s.needed };
        let iv = self.keys.iv(s.pn);
        let (head, rest) = buf
            .get_mut(..s.needed)
            .and_then(|b| b.split_at_mut_checked(s.hdr_len + s.sd_len))
            .ok_or(too_small)?;
        // The tag goes straight into the frame.
        let icv: &mut [u8; AEAD_TAG_LEN] = rest.try_into().map_err(|_| too_small)?;
        if self.opts.confidentiality {
            let (aad, data) = head.split_at_mut(s.hdr_len);
            self.keys.aead.seal_in_place(&iv, aad, data, icv)?;
        } else {
            self.keys.aead.seal_in_place(&iv, head, &mut [], icv)?;
        }
        Ok(s.needed)
    }
}

/// A frame [`MacsecTx::prepare_at`] laid out: what its [`MacsecTx::seal`] needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sealing {
    pn: u64,
    hdr_len: usize,
    sd_len: usize,
    needed: usize,
}

impl Sealing {
    /// The PN the frame carries.
    pub fn pn(&self) -> u64 {
        self.pn
    }
}

impl fmt::Debug for MacsecTx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MacsecTx")
            .field("keys", &self.keys)
            .field("opts", &self.opts)
            .field("next_pn", &self.next_pn)
            .field("counters", &self.counters)
            .finish()
    }
}

/// Receive counters of §10.7.9 (SecY), §10.7.12 (SC) and §10.7.14 (SA) — one SC, one SA here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RxCounters {
    /// InPktsUntagged: no SecTAG, validateFrames not Strict (delivered).
    pub in_pkts_untagged: u64,
    /// InPktsNoTag: no SecTAG, validateFrames Strict (discarded).
    pub in_pkts_no_tag: u64,
    /// InPktsBadTag: invalid SecTAG (discarded).
    pub in_pkts_bad_tag: u64,
    /// InPktsUnknownSCI: SCI not found, delivered unvalidated (C = 0, not Strict).
    pub in_pkts_unknown_sci: u64,
    /// InPktsNoSCI: SCI not found, discarded.
    pub in_pkts_no_sci: u64,
    /// InPktsOverrun: the cipher could not keep up. Never counted here (we never drop for load).
    pub in_pkts_overrun: u64,
    /// InOctetsValidated / InOctetsDecrypted: secure data octets integrity checked / decrypted.
    pub in_octets_validated: u64,
    pub in_octets_decrypted: u64,
    /// InPktsUnchecked: validateFrames Disabled, delivered without a check.
    pub in_pkts_unchecked: u64,
    /// InPktsDelayed: valid, PN below the lowest acceptable PN, replayProtect off.
    pub in_pkts_delayed: u64,
    /// InPktsLate: PN below the lowest acceptable PN with replayProtect on (discarded).
    pub in_pkts_late: u64,
    /// InPktsOK: valid.
    pub in_pkts_ok: u64,
    /// InPktsInvalid: not valid, validateFrames Check, C = 0 (delivered).
    pub in_pkts_invalid: u64,
    /// InPktsNotValid: not valid, discarded.
    pub in_pkts_not_valid: u64,
    /// InPktsNotUsingSA: AN not in use, discarded.
    pub in_pkts_not_using_sa: u64,
    /// InPktsUnusedSA: AN not in use, delivered unvalidated.
    pub in_pkts_unused_sa: u64,
    /// Not an 802.1AE counter (not in [`named`](Self::named)): frames counted in
    /// `in_pkts_late` whose PN is below the lowest PN the SA was installed with
    /// ([`RxOptions::lowest_pn`]). For a receiver that installs its SAs above a persisted
    /// acceptance mark, these are PNs a previous run may have accepted.
    pub below_restored: u64,
    /// Every discard, by [`DropReason`] (the duplicate PNs we refuse beyond the standard appear
    /// only here, as `replay_duplicate`).
    pub drops: DropCounters,
}

impl RxCounters {
    /// `(name, value)` of every 802.1AE counter, in §10.7 order, for reports.
    pub fn named(&self) -> [(&'static str, u64); 16] {
        [
            ("InPktsUntagged", self.in_pkts_untagged),
            ("InPktsNoTag", self.in_pkts_no_tag),
            ("InPktsBadTag", self.in_pkts_bad_tag),
            ("InPktsUnknownSCI", self.in_pkts_unknown_sci),
            ("InPktsNoSCI", self.in_pkts_no_sci),
            ("InPktsOverrun", self.in_pkts_overrun),
            ("InOctetsValidated", self.in_octets_validated),
            ("InOctetsDecrypted", self.in_octets_decrypted),
            ("InPktsUnchecked", self.in_pkts_unchecked),
            ("InPktsDelayed", self.in_pkts_delayed),
            ("InPktsLate", self.in_pkts_late),
            ("InPktsOK", self.in_pkts_ok),
            ("InPktsInvalid", self.in_pkts_invalid),
            ("InPktsNotValid", self.in_pkts_not_valid),
            ("InPktsNotUsingSA", self.in_pkts_not_using_sa),
            ("InPktsUnusedSA", self.in_pkts_unused_sa),
        ]
    }
}

/// How a delivered frame was (or was not) validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxStatus {
    /// Validated (InPktsOK).
    Ok,
    /// Validated but below the lowest acceptable PN with replayProtect off (InPktsDelayed).
    Delayed,
    /// ICV wrong, delivered because validateFrames is Check and C = 0 (InPktsInvalid).
    Invalid,
    /// validateFrames Disabled, C = 0: no check (InPktsUnchecked).
    Unchecked,
    /// SCI unknown, C = 0, not Strict: delivered unvalidated (InPktsUnknownSCI).
    UnknownSci,
    /// AN not in use, C = 0, not Strict: delivered unvalidated (InPktsUnusedSA).
    UnusedSa,
    /// No SecTAG, not Strict: delivered as it came (InPktsUntagged).
    Untagged,
}

impl RxStatus {
    pub const fn name(self) -> &'static str {
        match self {
            RxStatus::Ok => "ok",
            RxStatus::Delayed => "delayed",
            RxStatus::Invalid => "invalid",
            RxStatus::Unchecked => "unchecked",
            RxStatus::UnknownSci => "unknown_sci",
            RxStatus::UnusedSa => "unused_sa",
            RxStatus::Untagged => "untagged",
        }
    }
}

/// A delivered frame: the plain frame is `frame[range]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub range: Range<usize>,
    pub status: RxStatus,
    /// The (recovered) PN; 0 for untagged frames.
    pub pn: u64,
}

/// XPN PN recovery (IEEE 802.1AEbw §10.6.2): the 64-bit PN of a frame carrying the low 32
/// bits `pn32`, given the receive SA's lowest acceptable PN `lowest`: the high half of
/// `lowest` when `pn32` is not below its low half, else one more. Every true PN in
/// `lowest ..= lowest + 2^32 − 1` is recovered exactly (checked exhaustively near the 32-bit
/// boundaries by `crates/ivnsec-model`). `None`: the PN would lie beyond 2^64 − 1.
pub fn recover_xpn_pn(lowest: u64, pn32: u32) -> Option<u64> {
    let (hi, lo) = ((lowest >> 32) as u32, lowest as u32);
    let hi = if pn32 >= lo {
        Some(hi)
    } else {
        hi.checked_add(1)
    }?;
    Some((u64::from(hi) << 32) | u64::from(pn32))
}

/// Bitmap of validated PNs in `(highest − DUP_BITS, highest]`; no allocation.
#[derive(Clone, Debug)]
struct DupBitmap {
    /// Highest validated PN; 0 = none yet (PNs start at 1).
    highest: u64,
    bits: [u64; DUP_WORDS],
}

impl DupBitmap {
    fn slot(pn: u64) -> (usize, u64) {
        let i = pn % DUP_BITS;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn seen(&self, pn: u64) -> bool {
        if self.highest == 0 || pn > self.highest || self.highest - pn >= DUP_BITS {
            return false;
        }
        let (w, m) = Self::slot(pn);
        // `slot` maps every PN into the bitmap; a bit it could not find counts as seen.
        self.bits.get(w).is_none_or(|b| b & m != 0)
    }

    fn insert(&mut self, pn: u64) {
        if pn > self.highest {
            let advance = pn - self.highest;
            if self.highest == 0 || advance >= DUP_BITS {
                self.bits = [0; DUP_WORDS];
            } else {
                for s in self.highest + 1..=pn {
                    let (w, m) = Self::slot(s);
                    if let Some(b) = self.bits.get_mut(w) {
                        *b &= !m;
                    }
                }
            }
            self.highest = pn;
        } else if self.highest - pn >= DUP_BITS {
            return;
        }
        let (w, m) = Self::slot(pn);
        if let Some(b) = self.bits.get_mut(w) {
            *b |= m;
        }
    }
}

/// Receive side: one receive SC (the peer's SCI) with one receive SA (its AN).
pub struct MacsecRx {
    keys: Keys,
    opts: RxOptions,
    /// nextPN of the receive SA: one above the highest validated PN (or the initial lowest PN).
    /// `u64::MAX` + 1 cannot be represented, so it saturates: a validated PN of `u64::MAX` leaves
    /// the SA unable to accept anything new, which is what exhaustion means.
    next_pn: u64,
    dup: DupBitmap,
    counters: RxCounters,
}

impl MacsecRx {
    pub fn new(
        provider: &CryptoProvider,
        keys: &KeyParams<'_>,
        opts: RxOptions,
    ) -> Result<MacsecRx, MacsecError> {
        let suite = keys.suite;
        if opts.lowest_pn == 0 || opts.lowest_pn > suite.max_pn() {
            return Err(MacsecError::BadPn {
                suite,
                pn: opts.lowest_pn,
            });
        }
        if suite.is_xpn() && opts.replay_window > XPN_MAX_WINDOW {
            return Err(MacsecError::WindowTooLarge {
                max: XPN_MAX_WINDOW,
                got: opts.replay_window,
            });
        }
        Ok(MacsecRx {
            keys: Keys::new(provider, keys)?,
            next_pn: opts.lowest_pn,
            opts,
            dup: DupBitmap {
                highest: 0,
                bits: [0; DUP_WORDS],
            },
            counters: RxCounters::default(),
        })
    }

    pub fn suite(&self) -> CipherSuite {
        self.keys.suite
    }

    pub fn counters(&self) -> &RxCounters {
        &self.counters
    }

    /// nextPN of the receive SA.
    pub fn next_pn(&self) -> u64 {
        self.next_pn
    }

    /// The lowest acceptable PN (§10.6.2): the configured lowest PN, raised to
    /// nextPN − replayWindow as frames validate.
    pub fn lowest_pn(&self) -> u64 {
        self.opts.lowest_pn.max(
            self.next_pn
                .saturating_sub(u64::from(self.opts.replay_window)),
        )
    }

    /// Restores a receiver's persisted acceptance mark: the lowest acceptable PN is raised
    /// above `m`, so every PN ≤ `m` is refused as late (counted in `below_restored` too). `m`
    /// must be below the suite's largest PN (the caller refuses a mark at the end of the space:
    /// nothing new can arrive under that key).
    pub fn restore_floor(&mut self, m: u64) {
        self.opts.lowest_pn = self.opts.lowest_pn.max(m.saturating_add(1));
    }

    /// Verifies `frame` into `out` and writes the delivered plain frame to the front of `out`.
    pub fn verify(
        &mut self,
        frame: &[u8],
        out: &mut [u8],
    ) -> Result<(usize, RxStatus), DropReason> {
        let Some(buf) = out.get_mut(..frame.len()) else {
            self.counters.drops.bump(DropReason::Oversize);
            return Err(DropReason::Oversize);
        };
        buf.copy_from_slice(frame);
        let d = self.verify_in_place(buf)?;
        out.copy_within(d.range.clone(), 0);
        Ok((d.range.len(), d.status))
    }

    /// Verifies in place. On delivery the plain frame (dst ‖ src ‖ EtherType ‖ payload) is
    /// `frame[range]`; on a drop the buffer content is unspecified. Every outcome is counted.
    ///
    /// The same as [`MacsecRx::check`], [`MacsecRx::open`] and [`MacsecRx::commit`] one after
    /// the other, which is how it is done.
    pub fn verify_in_place(&mut self, frame: &mut [u8]) -> Result<Delivered, DropReason> {
        match self.check(frame) {
            Check::Done(r) => r,
            Check::Validate(c) => {
                let o = self.open(frame, &c);
                self.commit(frame, &c, o)
            }
        }
    }

    fn bad_tag(&mut self, r: DropReason) -> Result<Delivered, DropReason> {
        self.counters.in_pkts_bad_tag += 1;
        Err(r)
    }

    /// The first of the three stages of a verification: the SecTAG, the SCI and AN, the PN's
    /// recovery and the replay check (§10.6.1, §10.6.2). A frame to validate comes back as
    /// [`Check::Validate`]; anything else is decided here ([`Check::Done`], counted, a frame
    /// delivered unvalidated already stripped).
    ///
    /// Frames of a batch may be checked first, opened in any order or on several threads at
    /// once ([`MacsecRx::open`] takes `&self`), and committed in their order of arrival: the
    /// replay window is judged again at the commit, so a frame that arrives twice in a batch is
    /// delivered once, and the outcome and counters of every frame are those of
    /// [`MacsecRx::verify_in_place`] on the frames one by one. Nothing may change the SA
    /// between a frame's check and its commit.
    pub fn check(&mut self, frame: &mut [u8]) -> Check {
        let r = self.check_inner(frame);
        if let Check::Done(Err(reason)) = r {
            self.counters.drops.bump(reason);
        }
        r
    }

    fn check_inner(&mut self, frame: &mut [u8]) -> Check {
        let done = Check::Done;
        let strict = self.opts.validate == ValidateFrames::Strict;
        if frame.len() < ethernet::HEADER_LEN {
            return done(Err(DropReason::Truncated));
        }
        // §10.6: frames without a SecTAG.
        if !wire::Frame::<&[u8]>::is_tagged(frame) {
            if strict {
                self.counters.in_pkts_no_tag += 1;
                return done(Err(DropReason::Untagged));
            }
            self.counters.in_pkts_untagged += 1;
            return done(Ok(Delivered {
                range: 0..frame.len(),
                status: RxStatus::Untagged,
                pn: 0,
            }));
        }
        // §10.6.1 / Figure 10-5: SecTAG validity.
        let f = match wire::Frame::new_checked(&*frame) {
            Ok(f) => f,
            Err(e) => return done(self.bad_tag(e.into())),
        };
        let xpn = self.keys.suite.is_xpn();
        let pn32 = f.pn();
        if pn32 == 0 && !xpn {
            return done(self.bad_tag(DropReason::BadSeq));
        }
        let (c_bit, e_bit, an, hdr_len) = (f.c(), f.e(), f.an(), f.header_len());
        // SCI: explicit, end station (src ‖ 0x0001), or the single receive SC (point-to-point).
        let sci = match f.sci() {
            Some(s) => s,
            None if f.es() => Sci::end_station(f.src()),
            None => self.keys.sci,
        };
        let sd_end = frame.len() - ICV_LEN;
        let unvalidated = |frame: &mut [u8]| {
            // Delivered without validation: strip SecTAG and ICV (possible only with C = 0).
            frame.copy_within(0..SECTAG_OFFSET, hdr_len - SECTAG_OFFSET);
            hdr_len - SECTAG_OFFSET..sd_end
        };
        if sci != self.keys.sci {
            if c_bit || strict {
                self.counters.in_pkts_no_sci += 1;
                return done(Err(DropReason::NoSci));
            }
            self.counters.in_pkts_unknown_sci += 1;
            return done(Ok(Delivered {
                range: unvalidated(frame),
                status: RxStatus::UnknownSci,
                pn: u64::from(pn32),
            }));
        }
        if an != self.keys.an {
            if c_bit || strict {
                self.counters.in_pkts_not_using_sa += 1;
                return done(Err(DropReason::NotUsingSa));
            }
            self.counters.in_pkts_unused_sa += 1;
            return done(Ok(Delivered {
                range: unvalidated(frame),
                status: RxStatus::UnusedSa,
                pn: u64::from(pn32),
            }));
        }
        let c = Checked {
            pn: 0,
            pn32,
            hdr_len,
            c_bit,
            e_bit,
            refused: false,
        };
        // A frame the replay check refuses now is not opened; its commit judges it again
        // against the window of that moment, which gives the reason (late or duplicate) and
        // the counters the frame has one by one.
        Check::Validate(match self.judge(c, false) {
            Ok(c) => c,
            Err(_) => Checked { refused: true, ..c },
        })
    }

    /// §10.6.2 (802.1AEbw): the 64-bit PN recovered from the lowest acceptable PN as it is
    /// now, and the replay check against the window as it is now. With `count`, a late frame
    /// is counted.
    fn judge(&mut self, mut c: Checked, count: bool) -> Result<Checked, DropReason> {
        let lowest = self.lowest_pn();
        let mut late = |below_restored: bool| {
            if count {
                self.counters.in_pkts_late += 1;
                if below_restored {
                    self.counters.below_restored += 1;
                }
            }
            Err(DropReason::Late)
        };
        c.pn = if self.keys.suite.is_xpn() {
            match recover_xpn_pn(lowest, c.pn32) {
                Some(pn) => pn,
                // Beyond the last PN: nothing from this SA can be valid any more.
                None => return late(false),
            }
        } else {
            u64::from(c.pn32)
        };
        // §10.6.2 replay check before validation.
        if self.opts.replay_protect {
            if c.pn < lowest {
                return late(c.pn < self.opts.lowest_pn);
            }
            if self.dup.seen(c.pn) {
                return Err(DropReason::ReplayDuplicate);
            }
        }
        Ok(c)
    }

    /// The second stage (§10.6.4): the ICV checked and the data decrypted in place under the
    /// PN [`MacsecRx::check`] recovered. Reads the key only, so the frames of a batch may be
    /// opened on several threads at once; counts nothing (the commit does).
    pub fn open(&self, frame: &mut [u8], c: &Checked) -> Opened {
        if c.refused {
            return Opened::Skipped;
        }
        if self.opts.validate == ValidateFrames::Disabled && !c.c_bit {
            return Opened::Unchecked;
        }
        let Some(sd_end) = frame.len().checked_sub(ICV_LEN) else {
            return Opened::Truncated;
        };
        if sd_end < c.hdr_len {
            return Opened::Truncated;
        }
        let iv = self.keys.iv(c.pn);
        let (head, icv) = frame.split_at_mut(sd_end);
        let Ok(icv) = <&[u8; AEAD_TAG_LEN]>::try_from(&*icv) else {
            return Opened::Truncated;
        };
        let r = if c.e_bit {
            let (aad, data) = head.split_at_mut(c.hdr_len);
            self.keys.aead.open_in_place(&iv, aad, data, icv)
        } else {
            self.keys.aead.open_in_place(&iv, head, &mut [], icv)
        };
        match r {
            Ok(()) => Opened::Valid,
            Err(CryptoError::AuthFailed) => Opened::Invalid,
            Err(_) => Opened::CryptoError,
        }
    }

    /// The third stage, in the frames' order of arrival: the replay check made again against
    /// the window as the frames committed before left it (a duplicate within a batch, or a
    /// frame the window passed meanwhile, is refused as [`MacsecRx::verify_in_place`] would
    /// have refused it), then the verdict of the validation, the window moved by a valid PN,
    /// and the frame's counters. On delivery the plain frame is `frame[range]`.
    pub fn commit(
        &mut self,
        frame: &mut [u8],
        c: &Checked,
        o: Opened,
    ) -> Result<Delivered, DropReason> {
        let r = self.commit_inner(frame, c, o);
        if let Err(reason) = r {
            self.counters.drops.bump(reason);
        }
        r
    }

    fn commit_inner(
        &mut self,
        frame: &mut [u8],
        c: &Checked,
        mut o: Opened,
    ) -> Result<Delivered, DropReason> {
        let strict = self.opts.validate == ValidateFrames::Strict;
        let now = self.judge(*c, true)?;
        if o == Opened::Skipped {
            // Refused at the check, passed now (a PN the duplicate bitmap has let go of, as
            // one by one): opened here, under the PN recovered now. (The check recovered no
            // PN for it: nothing to compare.)
            o = self.open(
                frame,
                &Checked {
                    refused: false,
                    ..now
                },
            );
        } else if now.pn != c.pn && matches!(o, Opened::Valid | Opened::Invalid) {
            // The window moved across a 2^32 boundary since the check (XPN): one by one this
            // frame would have been validated under `now.pn`, which its sender cannot have
            // used yet, so its ICV would not have matched.
            o = Opened::Invalid;
        }
        if o == Opened::Truncated {
            return Err(DropReason::Truncated);
        }
        let pn = now.pn;
        let hdr_len = c.hdr_len;
        let sd_end = frame.len().saturating_sub(ICV_LEN);
        if o != Opened::Unchecked && self.opts.validate != ValidateFrames::Disabled {
            let sd_len = sd_end.saturating_sub(hdr_len) as u64;
            if c.e_bit {
                self.counters.in_octets_decrypted += sd_len;
            } else {
                self.counters.in_octets_validated += sd_len;
            }
        }
        let status = match o {
            Opened::Truncated | Opened::Skipped => return Err(DropReason::Truncated),
            Opened::CryptoError => return Err(DropReason::Crypto),
            Opened::Unchecked => {
                self.counters.in_pkts_unchecked += 1;
                RxStatus::Unchecked
            }
            Opened::Invalid => {
                if c.c_bit || strict {
                    self.counters.in_pkts_not_valid += 1;
                    return Err(DropReason::BadTag);
                }
                self.counters.in_pkts_invalid += 1;
                RxStatus::Invalid
            }
            Opened::Valid => {
                let lowest = self.lowest_pn();
                // Validated: only now does the PN count (nextPN and the duplicate bitmap).
                self.next_pn = self.next_pn.max(pn.saturating_add(1));
                self.dup.insert(pn);
                if pn < lowest {
                    self.counters.in_pkts_delayed += 1;
                    RxStatus::Delayed
                } else {
                    self.counters.in_pkts_ok += 1;
                    RxStatus::Ok
                }
            }
        };
        frame.copy_within(0..SECTAG_OFFSET, hdr_len - SECTAG_OFFSET);
        Ok(Delivered {
            range: hdr_len - SECTAG_OFFSET..sd_end,
            status,
            pn,
        })
    }
}

/// A frame [`MacsecRx::check`] found to validate: what its [`MacsecRx::open`] and
/// [`MacsecRx::commit`] need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checked {
    /// The PN recovered at the check.
    pn: u64,
    pn32: u32,
    hdr_len: usize,
    c_bit: bool,
    e_bit: bool,
    /// Refused by the replay check at the check: not opened, judged again at the commit.
    refused: bool,
}

impl Checked {
    /// The PN recovered at the check (the commit may refuse it, see [`MacsecRx::commit`]).
    pub fn pn(&self) -> u64 {
        self.pn
    }

    /// Refused by the replay check at the check (not opened; the commit gives the reason).
    pub fn replay_refused(&self) -> bool {
        self.refused
    }
}

/// What [`MacsecRx::check`] made of a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// To be opened and committed.
    Validate(Checked),
    /// Decided and counted: delivered unvalidated, or dropped.
    Done(Result<Delivered, DropReason>),
}

/// What [`MacsecRx::open`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// The ICV matched; the data is decrypted in place.
    Valid,
    /// The ICV did not match; the frame's content is unspecified.
    Invalid,
    /// Not validated: validateFrames Disabled and C = 0.
    Unchecked,
    /// Shorter than its SecTAG and ICV.
    Truncated,
    /// The cipher failed for another reason.
    CryptoError,
    /// Not opened: the replay check refused it at the check (the commit judges it again).
    Skipped,
}

impl fmt::Debug for MacsecRx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MacsecRx")
            .field("keys", &self.keys)
            .field("opts", &self.opts)
            .field("next_pn", &self.next_pn)
            .field("counters", &self.counters)
            .finish()
    }
}

/// The SCI an end station with this source address uses (for callers building [`KeyParams`]).
pub fn end_station_sci(src: MacAddr) -> Sci {
    Sci::end_station(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dup_bitmap_window() {
        let mut d = DupBitmap {
            highest: 0,
            bits: [0; DUP_WORDS],
        };
        assert!(!d.seen(1));
        d.insert(5);
        assert!(d.seen(5));
        assert!(!d.seen(4));
        d.insert(3);
        assert!(d.seen(3));
        d.insert(5 + DUP_BITS - 1);
        assert!(d.seen(5));
        assert!(!d.seen(3), "3 slid out of the bitmap");
        d.insert(5 + DUP_BITS);
        assert!(!d.seen(5));
        d.insert(1 << 40);
        assert!(d.seen(1 << 40));
        assert!(!d.seen((1 << 40) - 1));
    }

    #[test]
    fn suite_names_round_trip() {
        for s in CipherSuite::ALL {
            assert_eq!(CipherSuite::from_profile(s.profile()), Some(s));
        }
        assert_eq!(CipherSuite::GcmAes128.max_pn(), 0xffff_ffff);
        assert_eq!(CipherSuite::GcmAesXpn256.max_pn(), u64::MAX);
    }
}
