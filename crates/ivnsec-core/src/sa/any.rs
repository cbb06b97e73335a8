//! One security association of any frame family — IVN-AE, MACsec, ESP, SecOC — behind one
//! protect and one verify, so a caller that handles several families (`frame protect|verify`,
//! `pcap verify`, the experiments' [`crate::channel::Channel`]) dispatches once, here, instead
//! of once per operation.
//!
//! [`AnyTx::new`] and [`AnyRx::new`] are the one factory of these SAs: a typed
//! [`Profile`](crate::profile::Profile), its keys ([`SaKeys`]) and the options of its family
//! ([`SaOptions`]) make the SA of the profile's family ([`Family`], from
//! [`Profile::family`](crate::profile::Profile::family)).
//!
//! [`AnyTx::protect_in_place`] protects the plain unit in `buf[..len]` in place and returns the
//! protected length; [`AnyRx::verify_in_place`] verifies a protected unit in place and returns
//! the range of the plain unit in the buffer. What a unit is depends on the family: an Ethernet
//! frame (IVN-AE, MACsec), an IP packet (ESP), an Authentic / Secured I-PDU (SecOC).
//!
//! Nothing here allocates per unit, and no input panics: every refusal is a [`DropReason`]
//! (receive) or an [`AnyProtectError`] (send), counted by the SA as its family counts it.

use core::fmt;
use core::ops::Range;

use super::esp::{EspConfigError, EspMode, EspParams, EspProtectError, EspRx, EspTx};
use super::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use super::macsec::{
    self, KeyParams, MacsecError, MacsecRx, MacsecTx, RxOptions, RxStatus, TxOptions,
    ValidateFrames,
};
use super::secoc::{
    DEFAULT_FULL_FV_BITS, DEFAULT_FV_BITS, DEFAULT_MAC_BITS, SecocConfigError, SecocParams,
    SecocProtectError, SecocRx, SecocRxOptions, SecocTx,
};
use super::{DropCounters, DropReason, ProtectError, SaError};
use crate::crypto::{AEAD_NONCE_LEN, CryptoProvider};
pub use crate::profile::Family;
use crate::profile::Profile;
use crate::wire::macsec::Sci;

// ---- The SA factory -------------------------------------------------------------------------

/// The keys of one SA, borrowed: the SA keeps only its scheduled keys. Its `Debug` shows
/// lengths only.
#[derive(Clone, Copy)]
pub struct SaKeys<'a> {
    /// Cipher key: IVN-AE AEAD/AES key, MACsec SAK, ESP key (‖ salt), SecOC MAC key.
    pub key: &'a [u8],
    /// HMAC key: IVN-AE HMAC suites, ESP HMAC transforms (the ESP authentication key); empty
    /// otherwise.
    pub mac_key: &'a [u8],
    /// IVN-AE per-SA IV (zeros where unused; the MACsec XPN salt is in [`MacsecOptions`]).
    pub iv: [u8; AEAD_NONCE_LEN],
}

impl fmt::Debug for SaKeys<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaKeys")
            .field("key", &format_args!("<{} bytes>", self.key.len()))
            .field("mac_key", &format_args!("<{} bytes>", self.mac_key.len()))
            .finish_non_exhaustive()
    }
}

/// IVN-AE options of an SA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IvnAeOptions {
    /// Key id carried in the frame and mixed into the nonce.
    pub key_id: u8,
    /// HMAC tag truncation; `None`: full length.
    pub tag_len: Option<usize>,
    /// Inbound: also take version 1 frames (see [`IvnAeRx::set_accept_v1`]).
    pub accept_v1: bool,
}

/// MACsec options of an SA. Confidentiality (E = C = 1 or integrity only) is the profile's
/// ([`crate::profile::MacsecProfile::confidentiality`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MacsecOptions {
    /// SCI of the transmitting SC: this SC's own on transmit, the peer's on receive.
    pub sci: Sci,
    /// Association number 0..=3.
    pub an: u8,
    /// XPN: short SCI.
    pub ssci: Option<u32>,
    /// XPN: 12-octet salt.
    pub salt: Option<[u8; 12]>,
    /// Outbound: put the SCI in the SecTAG (off with `es` or `scb`).
    pub include_sci: bool,
    /// Outbound: ES = 1.
    pub es: bool,
    /// Outbound: SCB = 1.
    pub scb: bool,
    /// Inbound: validateFrames.
    pub validate: ValidateFrames,
    /// Inbound: lowest acceptable PN (≥ 1).
    pub lowest_pn: u64,
}

impl Default for MacsecOptions {
    fn default() -> Self {
        MacsecOptions {
            sci: Sci::default(),
            an: 0,
            ssci: None,
            salt: None,
            include_sci: true,
            es: false,
            scb: false,
            validate: ValidateFrames::Strict,
            lowest_pn: 1,
        }
    }
}

/// ESP options of an SA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EspOptions {
    pub spi: u32,
    /// Extended sequence numbers (RFC 4303 §2.2.1).
    pub esn: bool,
    /// Outbound: transport or tunnel mode.
    pub mode: EspMode,
}

impl Default for EspOptions {
    fn default() -> Self {
        EspOptions {
            spi: 0,
            esn: false,
            mode: EspMode::Transport,
        }
    }
}

/// SecOC options of an SA.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecocOptions {
    /// Data ID of the PDU.
    pub data_id: u16,
    /// Truncated freshness value bits on the wire.
    pub fv_bits: u8,
    /// Truncated authenticator bits on the wire.
    pub mac_bits: u16,
    /// Full freshness value bits.
    pub full_fv_bits: u8,
    /// Inbound: the freshness value model.
    pub rx: SecocRxOptions,
}

impl Default for SecocOptions {
    fn default() -> Self {
        SecocOptions {
            data_id: 0,
            fv_bits: DEFAULT_FV_BITS,
            mac_bits: DEFAULT_MAC_BITS,
            full_fv_bits: DEFAULT_FULL_FV_BITS,
            rx: SecocRxOptions::default(),
        }
    }
}

/// Everything an SA is made of beyond its profile and keys, family by family: the SA of a
/// profile reads its family's options and ignores the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaOptions {
    pub ivnae: IvnAeOptions,
    pub macsec: MacsecOptions,
    pub esp: EspOptions,
    pub secoc: SecocOptions,
}

/// Why the factory made no SA: the family's own configuration error, unchanged (its text is
/// what users see), or a profile whose family has no SA of this kind.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SaBuildError {
    IvnAe(SaError),
    Macsec(MacsecError),
    Esp(EspConfigError),
    Secoc(SecocConfigError),
    /// SOME/IP protects messages of a service ([`crate::sa::someip::ServiceSa`]), not units.
    NoUnitSa(Family),
}

impl fmt::Display for SaBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SaBuildError::IvnAe(e) => write!(f, "{e}"),
            SaBuildError::Macsec(e) => write!(f, "{e}"),
            SaBuildError::Esp(e) => write!(f, "{e}"),
            SaBuildError::Secoc(e) => write!(f, "{e}"),
            SaBuildError::NoUnitSa(family) => {
                write!(
                    f,
                    "{family} has no unit SA (its SAs protect service messages)"
                )
            }
        }
    }
}

impl core::error::Error for SaBuildError {}

fn ivnae_params<'a>(
    p: crate::suite::IvnAeProfile,
    keys: &SaKeys<'a>,
    o: &IvnAeOptions,
) -> SaParams<'a> {
    SaParams {
        profile: p,
        key: keys.key,
        mac_key: keys.mac_key,
        iv: keys.iv,
        key_id: o.key_id,
        tag_len: o.tag_len,
    }
}

fn macsec_keys<'a>(
    suite: macsec::CipherSuite,
    keys: &SaKeys<'a>,
    o: &MacsecOptions,
) -> KeyParams<'a> {
    KeyParams {
        suite,
        key: keys.key,
        sci: o.sci,
        an: o.an,
        ssci: o.ssci,
        salt: o.salt,
    }
}

fn esp_params<'a>(alg: super::esp::EspAlg, keys: &SaKeys<'a>, o: &EspOptions) -> EspParams<'a> {
    EspParams {
        alg,
        spi: o.spi,
        key: keys.key,
        auth_key: keys.mac_key,
        esn: o.esn,
    }
}

fn secoc_params<'a>(
    alg: super::secoc::SecocAlg,
    keys: &SaKeys<'a>,
    o: &SecocOptions,
) -> SecocParams<'a> {
    SecocParams {
        fv_bits: o.fv_bits,
        mac_bits: o.mac_bits,
        full_fv_bits: o.full_fv_bits,
        ..SecocParams::new(alg, keys.key, o.data_id)
    }
}

impl AnyTx {
    /// The outbound SA of `profile`, the one factory of every family's outbound SA: the keys,
    /// the options of the profile's family, and the first sequence number / PN / full
    /// freshness value (≥ 1) of the first unit.
    pub fn new(
        provider: &CryptoProvider,
        profile: Profile,
        keys: SaKeys<'_>,
        opts: &SaOptions,
        first: u64,
    ) -> Result<AnyTx, SaBuildError> {
        Ok(match profile {
            Profile::IvnAe(p) => {
                IvnAeTx::new(provider, &ivnae_params(p, &keys, &opts.ivnae), first)
                    .map_err(SaBuildError::IvnAe)?
                    .into()
            }
            Profile::Macsec(m) => {
                let o = &opts.macsec;
                let tx_opts = TxOptions {
                    confidentiality: m.confidentiality,
                    include_sci: o.include_sci,
                    es: o.es,
                    scb: o.scb,
                };
                MacsecTx::new(provider, &macsec_keys(m.suite, &keys, o), tx_opts, first)
                    .map_err(SaBuildError::Macsec)?
                    .into()
            }
            Profile::Esp(alg) => {
                let o = &opts.esp;
                EspTx::new(provider, &esp_params(alg, &keys, o), o.mode, first)
                    .map_err(SaBuildError::Esp)?
                    .into()
            }
            Profile::Secoc(alg) => {
                SecocTx::new(provider, &secoc_params(alg, &keys, &opts.secoc), first)
                    .map_err(SaBuildError::Secoc)?
                    .into()
            }
            Profile::Someip(_) => return Err(SaBuildError::NoUnitSa(Family::Someip)),
        })
    }
}

impl AnyRx {
    /// The inbound SA of `profile`, the one factory of every family's inbound SA: the keys,
    /// the options of the profile's family, and the replay window (IVN-AE, MACsec, ESP; SecOC
    /// has its acceptance window in [`SecocOptions::rx`]).
    pub fn new(
        provider: &CryptoProvider,
        profile: Profile,
        keys: SaKeys<'_>,
        opts: &SaOptions,
        replay_window: u32,
    ) -> Result<AnyRx, SaBuildError> {
        Ok(match profile {
            Profile::IvnAe(p) => {
                let o = &opts.ivnae;
                let mut rx = IvnAeRx::new(provider, &ivnae_params(p, &keys, o), replay_window)
                    .map_err(SaBuildError::IvnAe)?;
                rx.set_accept_v1(o.accept_v1);
                rx.into()
            }
            Profile::Macsec(m) => {
                let o = &opts.macsec;
                let rx_opts = RxOptions {
                    validate: o.validate,
                    replay_protect: true,
                    replay_window,
                    lowest_pn: o.lowest_pn,
                };
                MacsecRx::new(provider, &macsec_keys(m.suite, &keys, o), rx_opts)
                    .map_err(SaBuildError::Macsec)?
                    .into()
            }
            Profile::Esp(alg) => {
                EspRx::new(provider, &esp_params(alg, &keys, &opts.esp), replay_window)
                    .map_err(SaBuildError::Esp)?
                    .into()
            }
            Profile::Secoc(alg) => {
                let o = &opts.secoc;
                SecocRx::new(provider, &secoc_params(alg, &keys, o), o.rx)
                    .map_err(SaBuildError::Secoc)?
                    .into()
            }
            Profile::Someip(_) => return Err(SaBuildError::NoUnitSa(Family::Someip)),
        })
    }
}

// ---- One protect, one verify ----------------------------------------------------------------

/// Why [`AnyTx`] did not protect a unit: the family SA's own error, unchanged (its text is what
/// users see), or a misuse of the common API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnyProtectError {
    /// IVN-AE or MACsec.
    Frame(ProtectError),
    /// ESP.
    Esp(EspProtectError),
    /// SecOC.
    Secoc(SecocProtectError),
    /// An explicit IV given to a family that builds its nonces from the sequence number (only
    /// ESP carries an IV in the packet and takes one).
    IvNotTaken(Family),
}

impl AnyProtectError {
    /// The reason to refuse this one unit while the SA goes on (the unit is too short, too long
    /// or not one the family can protect; no sequence number was spent), or `None` when the SA
    /// cannot go on: its numbers are exhausted, the provider failed, the call was wrong.
    pub fn unit_refusal(&self) -> Option<DropReason> {
        match self {
            AnyProtectError::Frame(ProtectError::FrameTooShort) => Some(DropReason::Truncated),
            AnyProtectError::Frame(ProtectError::BufferTooSmall { .. })
            | AnyProtectError::Esp(EspProtectError::TooLong)
            | AnyProtectError::Esp(EspProtectError::BufferTooSmall { .. })
            | AnyProtectError::Secoc(SecocProtectError::BufferTooSmall { .. }) => {
                Some(DropReason::Oversize)
            }
            AnyProtectError::Esp(EspProtectError::BadPacket(_)) => Some(DropReason::Malformed),
            _ => None,
        }
    }
}

impl fmt::Display for AnyProtectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyProtectError::Frame(e) => write!(f, "{e}"),
            AnyProtectError::Esp(e) => write!(f, "{e}"),
            AnyProtectError::Secoc(e) => write!(f, "{e}"),
            AnyProtectError::IvNotTaken(family) => {
                write!(
                    f,
                    "{family} builds its nonces itself and takes no explicit IV"
                )
            }
        }
    }
}

impl core::error::Error for AnyProtectError {}

impl From<ProtectError> for AnyProtectError {
    fn from(e: ProtectError) -> Self {
        AnyProtectError::Frame(e)
    }
}

impl From<EspProtectError> for AnyProtectError {
    fn from(e: EspProtectError) -> Self {
        AnyProtectError::Esp(e)
    }
}

impl From<SecocProtectError> for AnyProtectError {
    fn from(e: SecocProtectError) -> Self {
        AnyProtectError::Secoc(e)
    }
}

/// The outbound SA of one family.
#[derive(Debug)]
pub enum AnyTx {
    IvnAe(IvnAeTx),
    Macsec(MacsecTx),
    Esp(EspTx),
    Secoc(SecocTx),
}

impl AnyTx {
    /// The SA's family.
    pub fn family(&self) -> Family {
        match self {
            AnyTx::IvnAe(_) => Family::IvnAe,
            AnyTx::Macsec(_) => Family::Macsec,
            AnyTx::Esp(_) => Family::Esp,
            AnyTx::Secoc(_) => Family::Secoc,
        }
    }

    /// The sequence number / PN / freshness value the next unit will carry; `None` once every
    /// one is used (the SA needs a new key).
    pub fn next_seq(&self) -> Option<u64> {
        match self {
            AnyTx::IvnAe(t) => t.next_seq(),
            AnyTx::Macsec(t) => t.next_pn(),
            AnyTx::Esp(t) => t.next_seq(),
            AnyTx::Secoc(t) => t.next_freshness(),
        }
    }

    /// Room a buffer needs to protect a `plain_len`-byte unit in place (for ESP an upper bound).
    pub fn protected_len(&self, plain_len: usize) -> usize {
        match self {
            AnyTx::IvnAe(t) => t.protected_len(plain_len),
            AnyTx::Macsec(t) => t.protected_len(plain_len),
            AnyTx::Esp(t) => t.max_protected_len(plain_len),
            AnyTx::Secoc(t) => t.secured_len(plain_len),
        }
    }

    /// Units protected so far.
    pub fn protected(&self) -> u64 {
        match self {
            AnyTx::IvnAe(t) => t.counters().frames,
            AnyTx::Macsec(t) => {
                let c = t.counters();
                c.out_pkts_protected + c.out_pkts_encrypted
            }
            AnyTx::Esp(t) => t.counters().frames,
            AnyTx::Secoc(t) => t.counters().frames,
        }
    }

    /// Protects the plain unit in `buf[..len]` in place (`buf` needs
    /// [`protected_len`](Self::protected_len) bytes); returns the protected length. ESP uses
    /// its default IVs (the sequence number for the AEADs, random for CBC).
    pub fn protect_in_place(
        &mut self,
        buf: &mut [u8],
        len: usize,
    ) -> Result<usize, AnyProtectError> {
        self.protect_in_place_with_iv(buf, len, None)
    }

    /// As [`protect_in_place`](Self::protect_in_place), with an explicit IV for ESP (8 bytes
    /// for the AEADs, 16 for CBC; the caller answers for its uniqueness or unpredictability).
    /// The other families take none: `Some` is [`AnyProtectError::IvNotTaken`] and spends no
    /// number.
    pub fn protect_in_place_with_iv(
        &mut self,
        buf: &mut [u8],
        len: usize,
        iv: Option<&[u8]>,
    ) -> Result<usize, AnyProtectError> {
        if iv.is_some() && !matches!(self, AnyTx::Esp(_)) {
            return Err(AnyProtectError::IvNotTaken(self.family()));
        }
        Ok(match self {
            AnyTx::IvnAe(t) => t.protect_in_place(buf, len)?,
            AnyTx::Macsec(t) => t.protect_in_place(buf, len)?,
            AnyTx::Esp(t) => t.protect_in_place(buf, len, iv)?,
            AnyTx::Secoc(t) => {
                // SecOC appends to `buf[..len]`; a length past the buffer is a unit too long
                // (checked here so that no length sum can overflow).
                if len > buf.len() {
                    return Err(SecocProtectError::BufferTooSmall {
                        needed: len.saturating_add(t.secured_len(0)),
                    }
                    .into());
                }
                t.protect_in_place(buf, len)?
            }
        })
    }
}

impl From<IvnAeTx> for AnyTx {
    fn from(t: IvnAeTx) -> Self {
        AnyTx::IvnAe(t)
    }
}

impl From<MacsecTx> for AnyTx {
    fn from(t: MacsecTx) -> Self {
        AnyTx::Macsec(t)
    }
}

impl From<EspTx> for AnyTx {
    fn from(t: EspTx) -> Self {
        AnyTx::Esp(t)
    }
}

impl From<SecocTx> for AnyTx {
    fn from(t: SecocTx) -> Self {
        AnyTx::Secoc(t)
    }
}

/// A unit [`AnyRx::verify_in_place_status`] delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// The plain unit is `buf[range]`.
    pub range: Range<usize>,
    /// [`RxStatus::Ok`] when it verified; otherwise how a MACsec receiver whose validateFrames
    /// is Check or Disabled delivered it without validation (802.1AE §10.6). The other
    /// families deliver only what verified.
    pub status: RxStatus,
}

/// The inbound SA of one family. MACsec's keeps its 256-byte duplicate bitmap inline, as the
/// [`crate::channel::Channel`] holds it: one SA per node, verified on every frame.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyRx {
    IvnAe(IvnAeRx),
    Macsec(MacsecRx),
    Esp(EspRx),
    Secoc(SecocRx),
}

impl AnyRx {
    /// The SA's family.
    pub fn family(&self) -> Family {
        match self {
            AnyRx::IvnAe(_) => Family::IvnAe,
            AnyRx::Macsec(_) => Family::Macsec,
            AnyRx::Esp(_) => Family::Esp,
            AnyRx::Secoc(_) => Family::Secoc,
        }
    }

    /// Verifies the protected unit in `buf` in place; on success the plain unit is
    /// `buf[range]`, on failure the buffer's content is unspecified. Every outcome is counted.
    ///
    /// A MACsec receiver configured to deliver frames it did not validate (validateFrames Check
    /// or Disabled) returns them here as `Ok` too; [`verify_in_place_status`]
    /// (Self::verify_in_place_status) tells them apart.
    pub fn verify_in_place(&mut self, buf: &mut [u8]) -> Result<Range<usize>, DropReason> {
        self.verify_in_place_status(buf).map(|d| d.range)
    }

    /// As [`verify_in_place`](Self::verify_in_place), saying how the unit was validated.
    pub fn verify_in_place_status(&mut self, buf: &mut [u8]) -> Result<Delivered, DropReason> {
        let verified = |range| Delivered {
            range,
            status: RxStatus::Ok,
        };
        match self {
            AnyRx::IvnAe(r) => r.verify_in_place(buf).map(verified),
            AnyRx::Macsec(r) => r.verify_in_place(buf).map(|d| Delivered {
                range: d.range,
                status: d.status,
            }),
            AnyRx::Esp(r) => r.verify_in_place(buf).map(verified),
            // The Secured I-PDU starts with the Authentic I-PDU: nothing moves.
            AnyRx::Secoc(r) => r.verify(buf).map(|v| verified(0..v.authentic_len)),
        }
    }

    /// The drops so far, by reason.
    pub fn drops(&self) -> &DropCounters {
        match self {
            AnyRx::IvnAe(r) => &r.counters().drops,
            AnyRx::Macsec(r) => &r.counters().drops,
            AnyRx::Esp(r) => &r.counters().drops,
            AnyRx::Secoc(r) => &r.counters().drops,
        }
    }

    /// The highest sequence number / freshness value accepted so far (0 when none): IVN-AE and
    /// ESP the top of the replay window, SecOC the last accepted freshness value (the
    /// configured one until a PDU verifies), MACsec nextPN − 1.
    pub fn highest_seq(&self) -> u64 {
        match self {
            AnyRx::IvnAe(r) => r.highest_seq(),
            AnyRx::Macsec(r) => r.next_pn().saturating_sub(1),
            AnyRx::Esp(r) => r.highest_seq(),
            AnyRx::Secoc(r) => r.last_freshness(),
        }
    }

    /// The 802.1AE §10.7 receive counters of a MACsec SA (`None` for the other families).
    pub fn macsec_counters(&self) -> Option<&macsec::RxCounters> {
        match self {
            AnyRx::Macsec(r) => Some(r.counters()),
            _ => None,
        }
    }
}

impl From<IvnAeRx> for AnyRx {
    fn from(r: IvnAeRx) -> Self {
        AnyRx::IvnAe(r)
    }
}

impl From<MacsecRx> for AnyRx {
    fn from(r: MacsecRx) -> Self {
        AnyRx::Macsec(r)
    }
}

impl From<EspRx> for AnyRx {
    fn from(r: EspRx) -> Self {
        AnyRx::Esp(r)
    }
}

impl From<SecocRx> for AnyRx {
    fn from(r: SecocRx) -> Self {
        AnyRx::Secoc(r)
    }
}

#[cfg(test)]
mod tests {
    //! The families that need no cipher (IVN-AE `crc32`, `plain`), on a provider that has no
    //! primitive at all. Every family on the real providers, with published known answers, is
    //! in `crates/ivnsec-conformance/tests/conformance/any.rs`.

    use alloc::boxed::Box;
    use alloc::string::ToString;
    use alloc::vec;
    use alloc::vec::Vec;

    use super::*;
    use crate::crypto::{
        AeadAlg, AeadKey, CipherAlg, CipherKey, CryptoError, CryptoProvider, KeyFactory, MacAlg,
        MacKey, Primitive, SecureRandom,
    };
    use crate::sa::ivnae::SaParams;
    use crate::sa::secoc::SecocProtectError;

    struct Nothing;

    impl KeyFactory for Nothing {
        fn supports(&self, _: Primitive) -> bool {
            false
        }
        fn aead(&self, alg: AeadAlg, _: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
            Err(CryptoError::Unsupported(Primitive::Aead(alg)))
        }
        fn mac(&self, alg: MacAlg, _: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
            Err(CryptoError::Unsupported(Primitive::Mac(alg)))
        }
        fn cipher(&self, alg: CipherAlg, _: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
            Err(CryptoError::Unsupported(Primitive::Cipher(alg)))
        }
    }

    impl SecureRandom for Nothing {
        fn fill(&self, _: &mut [u8]) -> Result<(), CryptoError> {
            Err(CryptoError::Rng)
        }
    }

    static NOTHING: CryptoProvider = CryptoProvider {
        name: "nothing",
        library: "none",
        keys: &Nothing,
        rng: &Nothing,
    };

    /// dst ‖ src ‖ EtherType 0x0800 ‖ 20 bytes.
    const PLAIN: [u8; 34] = [
        2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 0x14, 0, 0, 0x40, 0, 0x40,
        0x11, 0, 0x0a, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0, 2,
    ];

    fn pair(profile: &str, first: u64) -> (AnyTx, AnyRx) {
        let params = SaParams::new(profile.parse().unwrap(), &[], &[]);
        let tx = IvnAeTx::new(&NOTHING, &params, first).unwrap();
        let rx = IvnAeRx::new(&NOTHING, &params, 64).unwrap();
        (tx.into(), rx.into())
    }

    fn protect(tx: &mut AnyTx, plain: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; tx.protected_len(plain.len())];
        buf[..plain.len()].copy_from_slice(plain);
        let n = tx.protect_in_place(&mut buf, plain.len()).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn crc32_round_trip_counts_and_numbers() {
        let (mut tx, mut rx) = pair("crc32", 7);
        assert_eq!((tx.family(), rx.family()), (Family::IvnAe, Family::IvnAe));
        assert_eq!(tx.family().name(), "IVN-AE");
        assert_eq!(tx.next_seq(), Some(7));
        let mut wire = protect(&mut tx, &PLAIN);
        // IVN-AE header (26) ‖ inner EtherType and payload (22) ‖ CRC-32 (4).
        assert_eq!(wire.len(), 26 + 22 + 4);
        assert_eq!(&wire[12..14], &[0x88, 0xb5]);
        assert_eq!(&wire[18..26], &7u64.to_be_bytes());
        assert_eq!((tx.next_seq(), tx.protected()), (Some(8), 1));
        let r = rx.verify_in_place(&mut wire).unwrap();
        assert_eq!(&wire[r], &PLAIN[..]);
        assert_eq!(rx.highest_seq(), 7);
        assert_eq!(rx.drops().total(), 0);
        assert!(rx.macsec_counters().is_none());
    }

    #[test]
    fn a_flipped_bit_is_bad_tag_and_counted() {
        let (mut tx, mut rx) = pair("crc32", 1);
        let wire = protect(&mut tx, &PLAIN);
        // Every bit of the body and tag (the header's own checks answer for the header).
        for byte in 26..wire.len() {
            for bit in 0..8 {
                let mut w = wire.clone();
                w[byte] ^= 1 << bit;
                assert_eq!(
                    rx.verify_in_place_status(&mut w),
                    Err(DropReason::BadTag),
                    "byte {byte} bit {bit}"
                );
            }
        }
        let flips = ((wire.len() - 26) * 8) as u64;
        assert_eq!(rx.drops().get(DropReason::BadTag), flips);
        // The untouched frame still verifies: none of the forgeries entered the window.
        let mut w = wire.clone();
        assert_eq!(
            rx.verify_in_place_status(&mut w).map(|d| d.status),
            Ok(RxStatus::Ok)
        );
    }

    #[test]
    fn short_input_never_panics() {
        let (mut tx, mut rx) = pair("crc32", 1);
        let wire = protect(&mut tx, &PLAIN);
        for n in 0..wire.len() {
            let mut w = wire[..n].to_vec();
            let r = rx.verify_in_place(&mut w);
            assert!(r.is_err(), "{n} bytes: {r:?}");
        }
        assert_eq!(
            rx.drops().total(),
            wire.len() as u64,
            "every short frame counted"
        );
        // Protect: shorter than an Ethernet header, and a length past the buffer, are refused
        // for the unit alone, without spending a number.
        let mut buf = [0u8; 64];
        for (len, reason) in [(0, DropReason::Truncated), (13, DropReason::Truncated)] {
            let e = tx.protect_in_place(&mut buf, len).unwrap_err();
            assert_eq!(e, AnyProtectError::Frame(ProtectError::FrameTooShort));
            assert_eq!(e.unit_refusal(), Some(reason));
        }
        let e = tx.protect_in_place(&mut buf, 65).unwrap_err();
        assert_eq!(e.unit_refusal(), Some(DropReason::Truncated));
        assert_eq!(tx.next_seq(), Some(2));
    }

    #[test]
    fn only_esp_takes_an_explicit_iv() {
        let (mut tx, _) = pair("crc32", 1);
        let mut buf = [0u8; 128];
        buf[..PLAIN.len()].copy_from_slice(&PLAIN);
        let e = tx
            .protect_in_place_with_iv(&mut buf, PLAIN.len(), Some(&[0; 8]))
            .unwrap_err();
        assert_eq!(e, AnyProtectError::IvNotTaken(Family::IvnAe));
        assert_eq!(e.unit_refusal(), None);
        assert_eq!(
            e.to_string(),
            "IVN-AE builds its nonces itself and takes no explicit IV"
        );
        assert_eq!(tx.next_seq(), Some(1), "no number spent");
    }

    #[test]
    fn which_errors_refuse_one_unit_and_which_stop_the_sa() {
        use crate::sa::esp::EspProtectError as E;
        use crate::wire::ip::IpError;
        let refused = [
            (
                AnyProtectError::Frame(ProtectError::FrameTooShort),
                DropReason::Truncated,
            ),
            (
                AnyProtectError::Frame(ProtectError::BufferTooSmall { needed: 9 }),
                DropReason::Oversize,
            ),
            (
                AnyProtectError::Esp(E::BadPacket(IpError::Truncated)),
                DropReason::Malformed,
            ),
            (AnyProtectError::Esp(E::TooLong), DropReason::Oversize),
            (
                AnyProtectError::Esp(E::BufferTooSmall { needed: 9 }),
                DropReason::Oversize,
            ),
            (
                AnyProtectError::Secoc(SecocProtectError::BufferTooSmall { needed: 9 }),
                DropReason::Oversize,
            ),
        ];
        for (e, r) in refused {
            assert_eq!(e.unit_refusal(), Some(r), "{e:?}");
        }
        for e in [
            AnyProtectError::Frame(ProtectError::SeqExhausted),
            AnyProtectError::Frame(ProtectError::Crypto(CryptoError::Internal)),
            AnyProtectError::Esp(E::SeqExhausted),
            AnyProtectError::Esp(E::BadIvLength {
                expected: 8,
                got: 1,
            }),
            AnyProtectError::Secoc(SecocProtectError::FreshnessExhausted),
        ] {
            assert_eq!(e.unit_refusal(), None, "{e:?}");
        }
        // The family's own text, unchanged.
        assert_eq!(
            AnyProtectError::Frame(ProtectError::SeqExhausted).to_string(),
            ProtectError::SeqExhausted.to_string()
        );
    }

    #[test]
    fn sequence_numbers_run_out_and_stop_the_sa() {
        let (mut tx, _) = pair("crc32", u64::MAX);
        let mut buf = [0u8; 128];
        buf[..PLAIN.len()].copy_from_slice(&PLAIN);
        assert!(tx.protect_in_place(&mut buf, PLAIN.len()).is_ok());
        assert_eq!(tx.next_seq(), None);
        buf[..PLAIN.len()].copy_from_slice(&PLAIN);
        let e = tx.protect_in_place(&mut buf, PLAIN.len()).unwrap_err();
        assert_eq!(e, AnyProtectError::Frame(ProtectError::SeqExhausted));
        assert_eq!(e.unit_refusal(), None);
    }
}
