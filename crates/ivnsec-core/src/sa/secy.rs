//! A MACsec Security Entity (SecY, IEEE 802.1AE-2018 clause 10), sans-I/O: one transmit secure
//! channel and one receive secure channel per peer, each with up to four security associations
//! selected by the association number (AN), on top of [`MacsecTx`] / [`MacsecRx`].
//!
//! - **Transmit** ([`SecyTx`], §10.5): one transmit SC (this SecY's SCI) with up to four
//!   transmit SAs; the *encoding SA* (§10.7.21 `encodingSA`) protects every frame. A key agreement
//!   entity installs a new SA under another AN while the old one still transmits, makes the new
//!   one the encoding SA once every receiver has it (make-before-break, §10.7.22/§10.7.23
//!   `enableTransmit`), and retires the old one later. [`SecyTx::next_pn`] tells the caller the
//!   PN of the next frame (MKA reports it in its SAK use parameter set, and rekeys before it runs
//!   out); when the encoding SA has used every PN the SecY stops transmitting
//!   ([`TxError::Exhausted`]) instead of wrapping (§10.5.2).
//! - **Receive** ([`SecyRx`], §10.6, Figure 10-5): the SecTAG is checked, the receive SC found by
//!   SCI (explicit in the SecTAG, the end-station SCI `src ‖ 0x0001` when ES is set, or the one
//!   receive SC of a point-to-point SecY when neither), the receive SA by AN; the SA then does PN
//!   recovery (XPN), the replay check, validation and counting. Several receive SAs of one SC are
//!   in use at once, so frames in flight under the old key still verify after the peer switched.
//!   Every frame that is not delivered is counted with its [`DropReason`] (unknown SCI:
//!   [`DropReason::NoSci`], AN not in use: [`DropReason::NotUsingSa`], …).
//!
//! Nothing here allocates per frame: receive SCs live in a vector bounded by [`MAX_RX_SCS`] that
//! only grows when an SC is installed, and protect/verify work in the caller's buffer.
//!
//! [`SecY`] holds both halves; a data plane that moves the two directions on two threads holds
//! [`SecyTx`] and [`SecyRx`] behind a lock each ([`SecY::into_parts`]), so a frame going out
//! never waits for a frame coming in.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use super::macsec::{
    Check, Checked, CipherSuite, Delivered, KeyParams, MacsecError, MacsecRx, MacsecTx, Opened,
    RxCounters, RxOptions, RxStatus, Sealing, TxCounters, TxOptions, ValidateFrames,
};
use super::{DropCounters, DropReason, ProtectError};
use crate::crypto::CryptoProvider;
use crate::wire::ethernet;
use crate::wire::macsec::{self as wire, ICV_LEN, SECTAG_OFFSET, Sci};

/// Association numbers per secure channel (§10.7.19: AN is two bits).
pub const AN_COUNT: usize = 4;
/// Most receive SCs (peers) one SecY holds: a car's Ethernet segment has a handful of ECUs; the
/// bound keeps a misbehaving key source from growing the SecY without limit.
pub const MAX_RX_SCS: usize = 64;

/// The key of one SA: the SAK and, for the XPN suites, the SSCI of the transmitting SC and the
/// salt (802.1AEbw §14.7). `key_number` labels the SA in status reports and events (MKA's key
/// number; a static key uses 1).
#[derive(Clone, Copy)]
pub struct SaKey<'a> {
    pub sak: &'a [u8],
    pub ssci: Option<u32>,
    pub salt: Option<[u8; 12]>,
    pub key_number: u32,
}

impl fmt::Debug for SaKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the key bytes.
        f.debug_struct("SaKey")
            .field("sak", &format_args!("<{} bytes>", self.sak.len()))
            .field("ssci", &self.ssci)
            .field("key_number", &self.key_number)
            .finish_non_exhaustive()
    }
}

/// How a SecY protects and validates (the managed objects of §10.7 that are not per SA).
#[derive(Clone, Copy, Debug)]
pub struct SecyConfig {
    pub suite: CipherSuite,
    /// This SecY's SCI (its transmit SC).
    pub sci: Sci,
    /// Confidentiality, SCI in the SecTAG, ES, SCB.
    pub tx: TxOptions,
    /// validateFrames, replayProtect, replayWindow; `lowest_pn` is per SA (given at install).
    pub rx: RxOptions,
}

/// Why an SA or SC could not be installed, switched or retired.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecyError {
    /// The SA could not be made (key length, SSCI/salt, PN).
    Macsec(MacsecError),
    BadAn(u8),
    /// No receive SC for this SCI.
    NoSc(Sci),
    /// No SA is installed under this AN.
    NoSa {
        sci: Sci,
        an: u8,
    },
    /// The receive SC limit is reached.
    TooManyScs {
        max: usize,
    },
    /// A receive SC for this SecY's own SCI (two SCs would then share a nonce space).
    OwnSci(Sci),
}

impl fmt::Display for SecyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecyError::Macsec(e) => write!(f, "{e}"),
            SecyError::BadAn(an) => write!(f, "association number must be 0..=3, got {an}"),
            SecyError::NoSc(sci) => write!(f, "no receive SC for SCI {:016x}", sci.to_u64()),
            SecyError::NoSa { sci, an } => {
                write!(f, "no SA with AN {an} in SC {:016x}", sci.to_u64())
            }
            SecyError::TooManyScs { max } => {
                write!(f, "a SecY holds at most {max} receive secure channels")
            }
            SecyError::OwnSci(sci) => write!(
                f,
                "SCI {:016x} is this SecY's own transmit SCI; a peer needs an SCI of its own",
                sci.to_u64()
            ),
        }
    }
}

impl core::error::Error for SecyError {}

impl From<MacsecError> for SecyError {
    fn from(e: MacsecError) -> Self {
        SecyError::Macsec(e)
    }
}

fn check_an(an: u8) -> Result<usize, SecyError> {
    if usize::from(an) < AN_COUNT {
        Ok(usize::from(an))
    } else {
        Err(SecyError::BadAn(an))
    }
}

/// Why a frame was not protected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxError {
    /// No encoding SA: nothing is installed or enabled yet, or it was retired.
    NoSa,
    /// The encoding SA has used every PN: a new SAK must be installed and enabled.
    Exhausted,
    /// The frame or buffer is unusable (too short, buffer too small), or the cipher failed.
    Protect(ProtectError),
}

impl fmt::Display for TxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TxError::NoSa => f.write_str("no transmit SA is in use"),
            TxError::Exhausted => f.write_str(
                "the transmit SA has used every PN; transmission stopped until a new SAK is in use",
            ),
            TxError::Protect(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for TxError {}

/// Transmit counters of the SecY beyond those of its SAs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxDiscards {
    /// Frames discarded because no transmit SA was in use.
    pub no_sa: u64,
    /// Frames discarded because the encoding SA's PNs were used up.
    pub pn_exhausted: u64,
    /// Frames discarded as unusable (shorter than an Ethernet header, too long for the buffer).
    pub bad_frame: u64,
}

struct TxSa {
    sa: MacsecTx,
    key_number: u32,
}

/// What a status report shows of one transmit SA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxSaInfo {
    pub an: u8,
    pub key_number: u32,
    /// PN of the next frame; `None` once exhausted.
    pub next_pn: Option<u64>,
    /// Whether this SA protects the frames sent now.
    pub in_use: bool,
    pub counters: TxCounters,
}

/// The transmit half: one transmit SC with up to four SAs.
pub struct SecyTx {
    provider: &'static CryptoProvider,
    suite: CipherSuite,
    sci: Sci,
    opts: TxOptions,
    sas: [Option<TxSa>; AN_COUNT],
    encoding: Option<usize>,
    /// Counters of retired SAs, so totals survive rekeys.
    retired: TxCounters,
    discards: TxDiscards,
    /// Bumped by every change of the SAs: a [`SecySealing`] of another generation is void.
    generation: u64,
}

fn add_tx(a: &mut TxCounters, b: &TxCounters) {
    a.out_pkts_protected += b.out_pkts_protected;
    a.out_pkts_encrypted += b.out_pkts_encrypted;
    a.out_octets_protected += b.out_octets_protected;
    a.out_octets_encrypted += b.out_octets_encrypted;
    a.out_pkts_too_long += b.out_pkts_too_long;
}

impl SecyTx {
    pub fn suite(&self) -> CipherSuite {
        self.suite
    }

    pub fn sci(&self) -> Sci {
        self.sci
    }

    /// Installs a transmit SA under `an` whose first frame carries `first_pn`. It does not
    /// transmit until [`enable`](Self::enable)d; an SA installed under the AN of the encoding SA
    /// replaces it at once (the caller asked for exactly that SA to be used).
    pub fn install(&mut self, an: u8, key: &SaKey<'_>, first_pn: u64) -> Result<(), SecyError> {
        let i = check_an(an)?;
        let sa = MacsecTx::new(
            self.provider,
            &KeyParams {
                suite: self.suite,
                key: key.sak,
                sci: self.sci,
                an,
                ssci: key.ssci,
                salt: key.salt,
            },
            self.opts,
            first_pn,
        )?;
        let slot = self.sas.get_mut(i).ok_or(SecyError::BadAn(an))?;
        if let Some(old) = slot.take() {
            add_tx(&mut self.retired, &old.sa.counters());
        }
        *slot = Some(TxSa {
            sa,
            key_number: key.key_number,
        });
        self.generation += 1;
        Ok(())
    }

    /// Makes the SA under `an` the encoding SA: every frame from now on is protected under it.
    pub fn enable(&mut self, an: u8) -> Result<(), SecyError> {
        let i = check_an(an)?;
        if self.sas.get(i).is_none_or(Option::is_none) {
            return Err(SecyError::NoSa { sci: self.sci, an });
        }
        self.encoding = Some(i);
        self.generation += 1;
        Ok(())
    }

    /// Removes the SA under `an` (its key is dropped and zeroed). Retiring the encoding SA
    /// stops transmission until another is enabled.
    pub fn retire(&mut self, an: u8) -> Result<(), SecyError> {
        let i = check_an(an)?;
        let old = self
            .sas
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(SecyError::NoSa { sci: self.sci, an })?;
        add_tx(&mut self.retired, &old.sa.counters());
        if self.encoding == Some(i) {
            self.encoding = None;
        }
        self.generation += 1;
        Ok(())
    }

    /// AN of the encoding SA.
    pub fn encoding_an(&self) -> Option<u8> {
        self.encoding.map(|i| i as u8)
    }

    /// The PN the next frame will carry; `None` when no SA is in use or it is exhausted.
    pub fn next_pn(&self) -> Option<u64> {
        self.encoding
            .and_then(|i| self.sas.get(i))
            .and_then(Option::as_ref)
            .and_then(|s| s.sa.next_pn())
    }

    /// True when the encoding SA has used every PN (a new SAK is needed to send again).
    pub fn exhausted(&self) -> bool {
        self.encoding
            .and_then(|i| self.sas.get(i))
            .and_then(Option::as_ref)
            .is_some_and(|s| s.sa.needs_rekey())
    }

    /// Frame length on the wire for a plain frame of `plain_len` octets.
    pub fn protected_len(&self, plain_len: usize) -> usize {
        plain_len + overhead(self.opts)
    }

    /// Octets the SecTAG and ICV add to every frame.
    pub fn overhead(&self) -> usize {
        overhead(self.opts)
    }

    /// Octets to leave in front of a plain frame so that protect encrypts its secure data where
    /// it lies (the SecTAG's length; see [`MacsecTx::protect_in_place_at`]).
    pub fn headroom(&self) -> usize {
        overhead(self.opts) - ICV_LEN
    }

    /// Protects the plain frame `buf[..plain_len]` in place under the encoding SA; `buf` must
    /// hold [`protected_len`](Self::protected_len) octets. Returns the frame length and its PN.
    pub fn protect_in_place(
        &mut self,
        buf: &mut [u8],
        plain_len: usize,
    ) -> Result<(usize, u64), TxError> {
        self.protect_in_place_at(buf, 0, plain_len)
    }

    /// As [`protect_in_place`](Self::protect_in_place) for the plain frame in
    /// `buf[at..at + plain_len]`; the protected frame goes to the front of `buf`. With `at` =
    /// [`headroom`](Self::headroom) the secure data does not move.
    ///
    /// The same as [`SecyTx::prepare_at`] and [`SecyTx::seal`] one after the other.
    pub fn protect_in_place_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        plain_len: usize,
    ) -> Result<(usize, u64), TxError> {
        let s = self.prepare_at(buf, at, plain_len)?;
        Ok((self.seal(buf, &s)?, s.pn()))
    }

    /// The first of a protection's two stages, in the frames' order: under the encoding SA,
    /// the frame's PN taken, its SecTAG written, the frame counted ([`MacsecTx::prepare_at`]).
    /// The frames of a batch may then be sealed ([`SecyTx::seal`], `&self`) in any order or on
    /// several threads at once, while the SAs stay as they are (a change voids the sealing).
    pub fn prepare_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        plain_len: usize,
    ) -> Result<SecySealing, TxError> {
        let Some((i, sa)) = self
            .encoding
            .and_then(|i| Some((i, self.sas.get_mut(i)?.as_mut()?)))
        else {
            self.discards.no_sa += 1;
            return Err(TxError::NoSa);
        };
        if sa.sa.next_pn().is_none() {
            self.discards.pn_exhausted += 1;
            return Err(TxError::Exhausted);
        }
        match sa.sa.prepare_at(buf, at, plain_len) {
            Ok(sealing) => Ok(SecySealing {
                sa: i,
                generation: self.generation,
                sealing,
            }),
            Err(ProtectError::SeqExhausted) => {
                self.discards.pn_exhausted += 1;
                Err(TxError::Exhausted)
            }
            Err(e) => {
                self.discards.bad_frame += 1;
                Err(TxError::Protect(e))
            }
        }
    }

    /// The second stage: the frame sealed under the SA and PN of its preparation
    /// ([`MacsecTx::seal`]). Returns the frame length.
    pub fn seal(&self, buf: &mut [u8], s: &SecySealing) -> Result<usize, TxError> {
        let sa = (s.generation == self.generation)
            .then(|| self.sas.get(s.sa)?.as_ref())
            .flatten()
            .ok_or(TxError::NoSa)?;
        sa.sa.seal(buf, &s.sealing).map_err(TxError::Protect)
    }

    /// Protects `plain` into `out` (see [`protect_in_place`](Self::protect_in_place)).
    pub fn protect(&mut self, plain: &[u8], out: &mut [u8]) -> Result<(usize, u64), TxError> {
        if plain.len() < ethernet::HEADER_LEN {
            self.discards.bad_frame += 1;
            return Err(TxError::Protect(ProtectError::FrameTooShort));
        }
        let needed = self.protected_len(plain.len());
        if out.len() < needed {
            self.discards.bad_frame += 1;
            return Err(TxError::Protect(ProtectError::BufferTooSmall { needed }));
        }
        let at = self.headroom();
        let Some(dst) = out.get_mut(at..at + plain.len()) else {
            self.discards.bad_frame += 1;
            return Err(TxError::Protect(ProtectError::BufferTooSmall { needed }));
        };
        dst.copy_from_slice(plain);
        self.protect_in_place_at(out, at, plain.len())
    }

    /// The installed SAs, by AN.
    pub fn sas(&self) -> impl Iterator<Item = TxSaInfo> + '_ {
        self.sas.iter().enumerate().filter_map(move |(i, s)| {
            s.as_ref().map(|s| TxSaInfo {
                an: i as u8,
                key_number: s.key_number,
                next_pn: s.sa.next_pn(),
                in_use: self.encoding == Some(i),
                counters: s.sa.counters(),
            })
        })
    }

    /// Counters of every SA this SC had (installed and retired), added up.
    pub fn counters(&self) -> TxCounters {
        let mut c = self.retired;
        for s in self.sas.iter().flatten() {
            add_tx(&mut c, &s.sa.counters());
        }
        c
    }

    /// Frames the SecY refused to send, by reason.
    pub fn discards(&self) -> TxDiscards {
        self.discards
    }
}

impl fmt::Debug for SecyTx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecyTx")
            .field("suite", &self.suite)
            .field("sci", &self.sci)
            .field("encoding_an", &self.encoding_an())
            .field("next_pn", &self.next_pn())
            .finish_non_exhaustive()
    }
}

fn overhead(opts: TxOptions) -> usize {
    (if opts.include_sci {
        wire::SECTAG_SCI_LEN
    } else {
        wire::SECTAG_LEN
    }) + ICV_LEN
}

struct RxSa {
    sa: MacsecRx,
    key_number: u32,
}

/// One receive SC: a peer's SCI and its SAs.
struct RxSc {
    sci: Sci,
    sas: [Option<RxSa>; AN_COUNT],
    /// Counters of retired SAs.
    retired: RxCounters,
}

/// What a status report shows of one receive SA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxSaInfo {
    pub sci: Sci,
    pub an: u8,
    pub key_number: u32,
    /// nextPN: one above the highest PN validated.
    pub next_pn: u64,
    /// The lowest PN still acceptable.
    pub lowest_pn: u64,
    pub counters: RxCounters,
}

/// Receive counters of the SecY itself (frames that never reached an SA, §10.7.9), and every
/// discard by reason, the SAs' included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RxSecyCounters {
    /// InPktsUntagged: no SecTAG, delivered (validateFrames not Strict).
    pub in_pkts_untagged: u64,
    /// InPktsNoTag: no SecTAG, discarded.
    pub in_pkts_no_tag: u64,
    /// InPktsBadTag: invalid SecTAG.
    pub in_pkts_bad_tag: u64,
    /// InPktsNoSCI: SCI matches no receive SC, discarded.
    pub in_pkts_no_sci: u64,
    /// InPktsUnknownSCI: SCI matches no receive SC, delivered unvalidated (C = 0, not Strict).
    pub in_pkts_unknown_sci: u64,
    /// InPktsNotUsingSA: AN selects no SA in use, discarded.
    pub in_pkts_not_using_sa: u64,
    /// InPktsUnusedSA: AN selects no SA in use, delivered unvalidated (C = 0, not Strict).
    pub in_pkts_unused_sa: u64,
    /// Discards before an SA, by reason.
    pub drops: DropCounters,
}

/// A delivered frame: the plain frame is `frame[range]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub range: Range<usize>,
    pub status: RxStatus,
    /// The SC it came on (the SCI the SecTAG named or implied).
    pub sci: Sci,
    pub an: u8,
    /// The recovered PN (0 when the frame was not validated against an SA).
    pub pn: u64,
}

/// A discarded frame: why, and which SC it named when it named one it could be matched to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub reason: DropReason,
    /// The SC whose SA discarded it (`None` when no SC was found).
    pub sci: Option<Sci>,
}

/// The receive half: one receive SC per peer.
pub struct SecyRx {
    provider: &'static CryptoProvider,
    suite: CipherSuite,
    own_sci: Sci,
    opts: RxOptions,
    scs: Vec<RxSc>,
    counters: RxSecyCounters,
    /// Counters of the SAs of removed SCs, so totals survive a peer leaving.
    removed: RxCounters,
    /// Bumped by every change of the SCs and SAs: a [`Ticket`] of another generation is void.
    generation: u64,
}

fn add_rx(a: &mut RxCounters, b: &RxCounters) {
    a.in_pkts_untagged += b.in_pkts_untagged;
    a.in_pkts_no_tag += b.in_pkts_no_tag;
    a.in_pkts_bad_tag += b.in_pkts_bad_tag;
    a.in_pkts_unknown_sci += b.in_pkts_unknown_sci;
    a.in_pkts_no_sci += b.in_pkts_no_sci;
    a.in_pkts_overrun += b.in_pkts_overrun;
    a.in_octets_validated += b.in_octets_validated;
    a.in_octets_decrypted += b.in_octets_decrypted;
    a.in_pkts_unchecked += b.in_pkts_unchecked;
    a.in_pkts_delayed += b.in_pkts_delayed;
    a.in_pkts_late += b.in_pkts_late;
    a.in_pkts_ok += b.in_pkts_ok;
    a.in_pkts_invalid += b.in_pkts_invalid;
    a.in_pkts_not_valid += b.in_pkts_not_valid;
    a.in_pkts_not_using_sa += b.in_pkts_not_using_sa;
    a.in_pkts_unused_sa += b.in_pkts_unused_sa;
    a.below_restored += b.below_restored;
    a.drops.merge(&b.drops);
}

impl SecyRx {
    pub fn suite(&self) -> CipherSuite {
        self.suite
    }

    fn sc_index(&self, sci: Sci) -> Option<usize> {
        self.scs.iter().position(|s| s.sci == sci)
    }

    /// Adds a receive SC for `sci` (no SA yet); nothing happens when it exists.
    pub fn add_sc(&mut self, sci: Sci) -> Result<(), SecyError> {
        if sci == self.own_sci {
            return Err(SecyError::OwnSci(sci));
        }
        if self.sc_index(sci).is_some() {
            return Ok(());
        }
        if self.scs.len() >= MAX_RX_SCS {
            return Err(SecyError::TooManyScs { max: MAX_RX_SCS });
        }
        self.scs.push(RxSc {
            sci,
            sas: [None, None, None, None],
            retired: RxCounters::default(),
        });
        self.generation += 1;
        Ok(())
    }

    /// Removes the receive SC of `sci` with its SAs (a peer that left). Its counters stay in
    /// the SecY's totals.
    pub fn remove_sc(&mut self, sci: Sci) -> Result<(), SecyError> {
        let i = self.sc_index(sci).ok_or(SecyError::NoSc(sci))?;
        let sc = self.scs.swap_remove(i);
        self.generation += 1;
        let mut all = sc.retired;
        for s in sc.sas.iter().flatten() {
            add_rx(&mut all, s.sa.counters());
        }
        add_rx(&mut self.removed, &all);
        Ok(())
    }

    /// Installs a receive SA under `an` for the peer `sci` (the SC is added if missing),
    /// accepting PNs from `lowest_pn` up. Replaces an SA under the same AN.
    pub fn install(
        &mut self,
        sci: Sci,
        an: u8,
        key: &SaKey<'_>,
        lowest_pn: u64,
    ) -> Result<(), SecyError> {
        let i = check_an(an)?;
        let sa = MacsecRx::new(
            self.provider,
            &KeyParams {
                suite: self.suite,
                key: key.sak,
                sci,
                an,
                ssci: key.ssci,
                salt: key.salt,
            },
            RxOptions {
                lowest_pn,
                ..self.opts
            },
        )?;
        self.add_sc(sci)?;
        let sc_i = self.sc_index(sci).ok_or(SecyError::NoSc(sci))?;
        let sc = self.scs.get_mut(sc_i).ok_or(SecyError::NoSc(sci))?;
        let slot = sc.sas.get_mut(i).ok_or(SecyError::BadAn(an))?;
        if let Some(old) = slot.take() {
            add_rx(&mut sc.retired, old.sa.counters());
        }
        *slot = Some(RxSa {
            sa,
            key_number: key.key_number,
        });
        self.generation += 1;
        Ok(())
    }

    /// Retires the receive SA `an` of `sci`: frames under it are discarded from now on
    /// ([`DropReason::NotUsingSa`]).
    pub fn retire(&mut self, sci: Sci, an: u8) -> Result<(), SecyError> {
        let i = check_an(an)?;
        let sc_i = self.sc_index(sci).ok_or(SecyError::NoSc(sci))?;
        let sc = self.scs.get_mut(sc_i).ok_or(SecyError::NoSc(sci))?;
        let old = sc
            .sas
            .get_mut(i)
            .and_then(Option::take)
            .ok_or(SecyError::NoSa { sci, an })?;
        add_rx(&mut sc.retired, old.sa.counters());
        self.generation += 1;
        Ok(())
    }

    /// The peers (receive SCs).
    pub fn scs(&self) -> impl Iterator<Item = Sci> + '_ {
        self.scs.iter().map(|s| s.sci)
    }

    /// The installed receive SAs.
    pub fn sas(&self) -> impl Iterator<Item = RxSaInfo> + '_ {
        self.scs.iter().flat_map(|sc| {
            sc.sas.iter().enumerate().filter_map(move |(an, s)| {
                s.as_ref().map(|s| RxSaInfo {
                    sci: sc.sci,
                    an: an as u8,
                    key_number: s.key_number,
                    next_pn: s.sa.next_pn(),
                    lowest_pn: s.sa.lowest_pn(),
                    counters: s.sa.counters().clone(),
                })
            })
        })
    }

    /// The SecY's own counters (frames that reached no SA).
    pub fn secy_counters(&self) -> &RxSecyCounters {
        &self.counters
    }

    /// Every receive counter added up: the SecY's, those of every SA installed and retired.
    /// `drops` holds every discard by reason.
    pub fn totals(&self) -> RxCounters {
        let mut t = self.removed.clone();
        for sc in &self.scs {
            add_rx(&mut t, &sc.retired);
            for s in sc.sas.iter().flatten() {
                add_rx(&mut t, s.sa.counters());
            }
        }
        let c = &self.counters;
        t.in_pkts_untagged += c.in_pkts_untagged;
        t.in_pkts_no_tag += c.in_pkts_no_tag;
        t.in_pkts_bad_tag += c.in_pkts_bad_tag;
        t.in_pkts_no_sci += c.in_pkts_no_sci;
        t.in_pkts_unknown_sci += c.in_pkts_unknown_sci;
        t.in_pkts_not_using_sa += c.in_pkts_not_using_sa;
        t.in_pkts_unused_sa += c.in_pkts_unused_sa;
        t.drops.merge(&c.drops);
        t
    }

    fn drop_here(&mut self, reason: DropReason) -> Result<Received, Dropped> {
        self.counters.drops.bump(reason);
        Err(Dropped { reason, sci: None })
    }

    /// Verifies the received frame in place (§10.6). On delivery the plain frame is
    /// `frame[range]`; on a discard the buffer content is unspecified. Every outcome is counted.
    ///
    /// The same as [`SecyRx::check`], [`SecyRx::open`] and [`SecyRx::commit`] one after the
    /// other, which is how it is done.
    pub fn verify_in_place(&mut self, frame: &mut [u8]) -> Result<Received, Dropped> {
        match self.check(frame) {
            SecyCheck::Done(r) => r,
            SecyCheck::Validate(t) => {
                let o = self.open(frame, &t);
                self.commit(frame, &t, o)
            }
        }
    }

    /// The first of a verification's three stages: the SC and SA the frame names, its SecTAG
    /// and the replay check ([`MacsecRx::check`]). A frame to validate comes back as
    /// [`SecyCheck::Validate`]; anything else is decided and counted here.
    ///
    /// The frames of a batch may be checked in their order of arrival, opened in any order or
    /// on several threads at once ([`SecyRx::open`] takes `&self`), and committed in their
    /// order of arrival ([`SecyRx::commit`]): each frame's outcome and every counter are then
    /// what [`SecyRx::verify_in_place`] gives one frame after the other, a frame that came twice
    /// delivered once. A change of the SCs or SAs between a frame's check and its commit voids
    /// its ticket (the frame is dropped as [`DropReason::NotUsingSa`]).
    pub fn check(&mut self, frame: &mut [u8]) -> SecyCheck {
        let strict = self.opts.validate == ValidateFrames::Strict;
        if frame.len() < ethernet::HEADER_LEN {
            return SecyCheck::Done(self.drop_here(DropReason::Truncated));
        }
        if !wire::Frame::<&[u8]>::is_tagged(frame) {
            if strict {
                self.counters.in_pkts_no_tag += 1;
                return SecyCheck::Done(self.drop_here(DropReason::Untagged));
            }
            self.counters.in_pkts_untagged += 1;
            return SecyCheck::Done(Ok(Received {
                range: 0..frame.len(),
                status: RxStatus::Untagged,
                sci: Sci::default(),
                an: 0,
                pn: 0,
            }));
        }
        let f = match wire::Frame::new_checked(&*frame) {
            Ok(f) => f,
            Err(e) => {
                self.counters.in_pkts_bad_tag += 1;
                return SecyCheck::Done(self.drop_here(e.into()));
            }
        };
        let (an, c_bit, hdr_len, pn32) = (f.an(), f.c(), f.header_len(), f.pn());
        let named = match f.sci() {
            Some(s) => Some(s),
            None if f.es() => Some(Sci::end_station(f.src())),
            // Point-to-point: no SCI in the frame, the one peer's.
            None if self.scs.len() == 1 => self.scs.first().map(|s| s.sci),
            None => None,
        };
        let sc_i = named.and_then(|s| self.sc_index(s));
        let unvalidated = |frame: &mut [u8]| {
            // Delivered without validation (only possible with C = 0): strip SecTAG and ICV.
            frame.copy_within(0..SECTAG_OFFSET, hdr_len - SECTAG_OFFSET);
            hdr_len - SECTAG_OFFSET..frame.len() - ICV_LEN
        };
        let Some(sc_i) = sc_i else {
            if c_bit || strict {
                self.counters.in_pkts_no_sci += 1;
                return SecyCheck::Done(self.drop_here(DropReason::NoSci));
            }
            self.counters.in_pkts_unknown_sci += 1;
            return SecyCheck::Done(Ok(Received {
                range: unvalidated(frame),
                status: RxStatus::UnknownSci,
                sci: named.unwrap_or_default(),
                an,
                pn: u64::from(pn32),
            }));
        };
        let Some(sc) = self.scs.get_mut(sc_i) else {
            // sc_index only returns indexes of existing SCs.
            self.counters.in_pkts_no_sci += 1;
            return SecyCheck::Done(self.drop_here(DropReason::NoSci));
        };
        let sci = sc.sci;
        let Some(sa) = sc.sas.get_mut(usize::from(an)).and_then(Option::as_mut) else {
            if c_bit || strict {
                self.counters.in_pkts_not_using_sa += 1;
                return SecyCheck::Done(self.not_using_sa(sci));
            }
            self.counters.in_pkts_unused_sa += 1;
            return SecyCheck::Done(Ok(Received {
                range: unvalidated(frame),
                status: RxStatus::UnusedSa,
                sci,
                an,
                pn: u64::from(pn32),
            }));
        };
        match sa.sa.check(frame) {
            Check::Validate(checked) => SecyCheck::Validate(Ticket {
                sc: sc_i,
                an,
                sci,
                generation: self.generation,
                checked,
            }),
            Check::Done(r) => SecyCheck::Done(received(r, sci, an)),
        }
    }

    fn not_using_sa(&mut self, sci: Sci) -> Result<Received, Dropped> {
        self.counters.drops.bump(DropReason::NotUsingSa);
        Err(Dropped {
            reason: DropReason::NotUsingSa,
            sci: Some(sci),
        })
    }

    fn sa_of(&self, t: &Ticket) -> Option<&MacsecRx> {
        if t.generation != self.generation {
            return None;
        }
        let sa = self.scs.get(t.sc)?.sas.get(usize::from(t.an))?.as_ref()?;
        Some(&sa.sa)
    }

    /// The second stage: the frame validated and decrypted in place under its SA's key
    /// ([`MacsecRx::open`]); reads only, counts nothing.
    pub fn open(&self, frame: &mut [u8], t: &Ticket) -> Opened {
        match self.sa_of(t) {
            Some(sa) => sa.open(frame, &t.checked),
            // Void: the commit drops it.
            None => Opened::CryptoError,
        }
    }

    /// The third stage, in the frames' order of arrival ([`MacsecRx::commit`]): the replay
    /// check again, the verdict, the window and the counters.
    pub fn commit(&mut self, frame: &mut [u8], t: &Ticket, o: Opened) -> Result<Received, Dropped> {
        if self.sa_of(t).is_none() {
            self.counters.in_pkts_not_using_sa += 1;
            return self.not_using_sa(t.sci);
        }
        let Some(sa) = self
            .scs
            .get_mut(t.sc)
            .and_then(|sc| sc.sas.get_mut(usize::from(t.an)))
            .and_then(Option::as_mut)
        else {
            return self.not_using_sa(t.sci);
        };
        received(sa.sa.commit(frame, &t.checked, o), t.sci, t.an)
    }
}

fn received(r: Result<Delivered, DropReason>, sci: Sci, an: u8) -> Result<Received, Dropped> {
    match r {
        Ok(d) => Ok(Received {
            range: d.range,
            status: d.status,
            sci,
            an,
            pn: d.pn,
        }),
        Err(reason) => Err(Dropped {
            reason,
            sci: Some(sci),
        }),
    }
}

/// A frame [`SecyRx::check`] found to validate: its SC and SA, and what their stages need.
/// Valid only while the receive SecY's SCs and SAs stay as they were at the check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    sc: usize,
    an: u8,
    sci: Sci,
    generation: u64,
    checked: Checked,
}

impl Ticket {
    /// The SC the frame came on.
    pub fn sci(&self) -> Sci {
        self.sci
    }

    /// The PN recovered at the check.
    pub fn pn(&self) -> u64 {
        self.checked.pn()
    }

    /// Refused by the replay check at the check (not opened; the commit gives the reason).
    pub fn replay_refused(&self) -> bool {
        self.checked.replay_refused()
    }
}

/// A frame [`SecyTx::prepare_at`] laid out: its SA, PN and layout. Valid only while the
/// transmit SAs stay as they were at the preparation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecySealing {
    sa: usize,
    generation: u64,
    sealing: Sealing,
}

impl SecySealing {
    /// The PN the frame carries.
    pub fn pn(&self) -> u64 {
        self.sealing.pn()
    }
}

/// What [`SecyRx::check`] made of a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecyCheck {
    /// To be opened and committed.
    Validate(Ticket),
    /// Decided and counted: delivered unvalidated, or dropped.
    Done(Result<Received, Dropped>),
}

impl fmt::Debug for SecyRx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecyRx")
            .field("suite", &self.suite)
            .field("scs", &self.scs.len())
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// A SecY: its transmit half and its receive half.
#[derive(Debug)]
pub struct SecY {
    pub tx: SecyTx,
    pub rx: SecyRx,
}

impl SecY {
    /// A SecY with no SA: it sends nothing ([`TxError::NoSa`]) and accepts nothing until a key
    /// source installs SAs.
    pub fn new(provider: &'static CryptoProvider, cfg: &SecyConfig) -> Result<SecY, SecyError> {
        if cfg.tx.include_sci && (cfg.tx.es || cfg.tx.scb) {
            return Err(SecyError::Macsec(MacsecError::ConflictingTci));
        }
        if cfg.suite.is_xpn() && cfg.rx.replay_window > super::macsec::XPN_MAX_WINDOW {
            return Err(SecyError::Macsec(MacsecError::WindowTooLarge {
                max: super::macsec::XPN_MAX_WINDOW,
                got: cfg.rx.replay_window,
            }));
        }
        Ok(SecY {
            tx: SecyTx {
                provider,
                suite: cfg.suite,
                sci: cfg.sci,
                opts: cfg.tx,
                sas: [None, None, None, None],
                encoding: None,
                retired: TxCounters::default(),
                discards: TxDiscards::default(),
                generation: 0,
            },
            rx: SecyRx {
                provider,
                suite: cfg.suite,
                own_sci: cfg.sci,
                opts: cfg.rx,
                scs: Vec::new(),
                counters: RxSecyCounters::default(),
                removed: RxCounters::default(),
                generation: 0,
            },
        })
    }

    /// The two halves, for a data plane that runs them on two threads.
    pub fn into_parts(self) -> (SecyTx, SecyRx) {
        (self.tx, self.rx)
    }
}

/// The SSCI of each SCI when SSCIs are assigned in ascending order of SCI, starting at 1 (for
/// tests that need distinct SSCIs). Not for configured members: an SSCI by rank moves when the
/// member list changes, onto an SSCI another member used; `ivnsec macsec up --keys` derives
/// each SSCI from the SCI alone (`ivnsec_node::macsec::static_keys::static_ssci`). Returns
/// `(sci, ssci)` sorted by SCI; duplicates are removed.
pub fn ssci_by_sci_order(scis: &[Sci]) -> Vec<(Sci, u32)> {
    let mut v: Vec<Sci> = scis.to_vec();
    v.sort_unstable();
    v.dedup();
    v.into_iter()
        .enumerate()
        .map(|(i, s)| (s, i as u32 + 1))
        .collect()
}

/// The SA identity under which the nonce state of a transmit SA is kept (see
/// `ivnsec_core::channel::sa_identity`, which builds the same strings for a channel): GCM-AES's
/// IV starts with the SCI, so the SCI separates its nonce spaces; XPN's IV starts with the SSCI.
pub fn tx_sa_identity(suite: CipherSuite, sci: Sci, ssci: Option<u32>) -> String {
    use alloc::format;
    match (suite.is_xpn(), ssci) {
        (true, Some(ssci)) => format!("macsec-xpn ssci {ssci}"),
        _ => {
            let b = sci.0;
            format!(
                "macsec sci {:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssci_follow_the_order_of_scis() {
        let a = Sci::from_u64(0x0200_0000_0002_0001);
        let b = Sci::from_u64(0x0200_0000_0001_0001);
        assert_eq!(ssci_by_sci_order(&[a, b, a]), alloc::vec![(b, 1), (a, 2)]);
    }

    #[test]
    fn sa_identity_matches_the_channel() {
        use crate::channel::{Ends, sa_identity};
        use crate::profile::Profile;
        let mac = [2, 0, 0, 0, 0, 1];
        let ends = Ends {
            local_mac: mac,
            peer_mac: [2, 0, 0, 0, 0, 2],
            local_ip: core::net::Ipv4Addr::LOCALHOST,
            peer_ip: core::net::Ipv4Addr::LOCALHOST,
        };
        let sci = Sci::end_station(ethernet::MacAddr(mac));
        for s in CipherSuite::ALL {
            let p: Profile = s.profile().parse().unwrap();
            let ssci = s.is_xpn().then_some(1);
            assert_eq!(
                tx_sa_identity(s, sci, ssci),
                sa_identity(p, &ends, 0),
                "{s}"
            );
        }
    }
}
