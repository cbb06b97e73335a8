//! AUTOSAR SecOC (Secure Onboard Communication): authenticating PDUs with a truncated MAC and a
//! freshness value.
//!
//! Profiles `secoc-cmac-aes128` (CMAC-AES-128, SP 800-38B / RFC 4493) and `secoc-hmac-sha256`
//! (HMAC-SHA-256, RFC 2104 / FIPS 180-4). The layout of the Secured I-PDU is in
//! [`crate::wire::secoc`]; `docs/secoc.md` has the whole specification.
//!
//! ## Authenticator
//!
//! MAC over `DataID (16 bits, big-endian) ‖ Authentic I-PDU ‖ full FV`, the full FV big-endian in
//! ⌈full_fv_bits / 8⌉ bytes. The Secured I-PDU carries the `mac_bits` most significant bits of the
//! MAC and the `fv_bits` least significant bits of the FV.
//!
//! ## Freshness (the counter model of the SecOC freshness value manager)
//!
//! Sender: a monotonic counter, one value per PDU, from the first value given (≥ 1) up to
//! 2^full_fv_bits − 1; then protect refuses ([`SecocProtectError::FreshnessExhausted`]): the
//! counter never wraps under one key.
//!
//! Receiver, holding the last accepted full FV `last`, with `n = fv_bits`:
//! 1. Reconstruct ([`reconstruct`]): with `r` the received truncated FV, the candidate is
//!    `upper(last) ‖ r` when `r > lsb_n(last)`, else `(upper(last) + 1) ‖ r`. (With
//!    `n = full_fv_bits` the FV is sent whole and taken as is.) A candidate that is not newer
//!    than `last` is a replay (`replay_duplicate` / `replay_too_old`); one above the largest FV can
//!    only be an old PDU (`replay_too_old`).
//! 2. Acceptance window `W` (≥ 1; default 2^n, which never limits step 1): only
//!    `last < FV ≤ last + W` is accepted; a candidate beyond is dropped as `freshness_window`
//!    without computing a MAC.
//! 3. Verify attempts (SecOC's `SecOCAuthenticationVerifyAttempts`: 0 means a single attempt):
//!    when the MAC does not verify with the candidate, try the next FV with the same low bits
//!    (upper part + 1, + 2, … i.e. candidate + k·2^n) while it stays inside the window and
//!    `k ≤ attempts`. This recovers a sender that ran more than 2^n values ahead (lost PDUs); the
//!    window bounds how far. When no attempt verifies: `bad_tag`.
//! 4. Only a verified PDU moves `last` to its FV.

use alloc::boxed::Box;
use core::fmt;

use subtle::ConstantTimeEq;

use super::{DropReason, RxCounters, TxCounters};
use crate::crypto::{CryptoError, CryptoProvider, MAX_MAC_LEN, MacAlg, MacKey, Primitive};
use crate::wire::bytes::tail;
use crate::wire::secoc::{
    AuthInfo, AuthLayout, LayoutError, MAX_FV_BITS, MAX_MAC_BYTES, SecuredError, SecuredPdu,
    fv_mask,
};

/// Default length of the truncated FV on the wire.
pub const DEFAULT_FV_BITS: u8 = 8;
/// Default length of the truncated authenticator.
pub const DEFAULT_MAC_BITS: u16 = 24;
/// Default length of the full FV.
pub const DEFAULT_FULL_FV_BITS: u8 = 64;

/// A SecOC MAC algorithm and its profile name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecocAlg {
    /// CMAC with AES-128 (SP 800-38B); the key is 16 bytes.
    CmacAes128,
    /// HMAC-SHA-256; the key is any length ≥ 1 byte.
    HmacSha256,
}

impl SecocAlg {
    pub const ALL: [SecocAlg; 2] = [SecocAlg::CmacAes128, SecocAlg::HmacSha256];

    /// The stable profile name.
    pub const fn name(self) -> &'static str {
        match self {
            SecocAlg::CmacAes128 => "secoc-cmac-aes128",
            SecocAlg::HmacSha256 => "secoc-hmac-sha256",
        }
    }

    pub fn from_name(s: &str) -> Option<SecocAlg> {
        SecocAlg::ALL.into_iter().find(|a| a.name() == s)
    }

    pub const fn mac_alg(self) -> MacAlg {
        match self {
            SecocAlg::CmacAes128 => MacAlg::CmacAes128,
            SecocAlg::HmacSha256 => MacAlg::HmacSha256,
        }
    }

    /// The key length the algorithm requires; `None` for HMAC (any length ≥ 1).
    pub const fn key_len(self) -> Option<usize> {
        self.mac_alg().fixed_key_len()
    }

    /// Longest truncated authenticator: the whole MAC.
    pub const fn max_mac_bits(self) -> u16 {
        (self.mac_alg().output_len() * 8) as u16
    }

    pub fn supported_by(self, provider: &CryptoProvider) -> bool {
        provider.supports(Primitive::Mac(self.mac_alg()))
    }
}

impl fmt::Display for SecocAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an SA is made from. The key is borrowed; the SA keeps only the scheduled MAC key.
#[derive(Clone, Copy, Debug)]
pub struct SecocParams<'a> {
    pub alg: SecocAlg,
    pub key: &'a [u8],
    /// SecOC Data ID of the PDU (first 16 bits of the MAC input).
    pub data_id: u16,
    /// Truncated FV bits on the wire, 0..=full_fv_bits.
    pub fv_bits: u8,
    /// Truncated authenticator bits on the wire, 1..=MAC length.
    pub mac_bits: u16,
    /// Full FV bits, 1..=64.
    pub full_fv_bits: u8,
}

impl<'a> SecocParams<'a> {
    /// Parameters with the default lengths (FV 8 of 64 bits, authenticator 24 bits).
    pub const fn new(alg: SecocAlg, key: &'a [u8], data_id: u16) -> SecocParams<'a> {
        SecocParams {
            alg,
            key,
            data_id,
            fv_bits: DEFAULT_FV_BITS,
            mac_bits: DEFAULT_MAC_BITS,
            full_fv_bits: DEFAULT_FULL_FV_BITS,
        }
    }
}

/// Receive-side settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SecocRxOptions {
    /// The last accepted full FV (0: none yet; FVs start at 1).
    pub last_freshness: u64,
    /// Acceptance window W ≥ 1: accept `last < FV ≤ last + W`. `None`: 2^fv_bits.
    pub acceptance_window: Option<u64>,
    /// Additional verification attempts after the first (SecOCAuthenticationVerifyAttempts).
    pub verify_attempts: u16,
}

/// Errors making a SecOC SA.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecocConfigError {
    BadKeyLength {
        alg: SecocAlg,
        expected: usize,
        got: usize,
    },
    /// HMAC needs a key of at least one byte.
    EmptyKey {
        alg: SecocAlg,
    },
    /// The full FV must be 1..=64 bits.
    FullFvBits {
        got: u8,
    },
    /// The truncated FV must be 0..=full_fv_bits.
    FvBits {
        got: u8,
        full: u8,
    },
    /// The truncated authenticator must be 1..=MAC length bits.
    MacBits {
        alg: SecocAlg,
        got: u16,
        max: u16,
    },
    /// The sender's first FV must be 1..=2^full_fv_bits − 1.
    BadFirstFreshness {
        got: u64,
        max: u64,
    },
    /// The receiver's last FV must fit in full_fv_bits.
    BadLastFreshness {
        got: u64,
        max: u64,
    },
    /// The acceptance window must be at least 1.
    ZeroWindow,
    Crypto(CryptoError),
}

impl fmt::Display for SecocConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecocConfigError::BadKeyLength { alg, expected, got } => {
                write!(f, "{alg} needs a {expected}-byte --key, got {got} bytes")
            }
            SecocConfigError::EmptyKey { alg } => {
                write!(f, "{alg} needs a --key of at least 1 byte")
            }
            SecocConfigError::FullFvBits { got } => {
                write!(
                    f,
                    "--full-fv-bits {got} out of range 1..={MAX_FV_BITS} (the full freshness value)"
                )
            }
            SecocConfigError::FvBits { got, full } => write!(
                f,
                "--fv-bits {got} out of range 0..={full} (the truncated freshness value cannot be longer than --full-fv-bits {full})"
            ),
            SecocConfigError::MacBits { alg, got, max } => write!(
                f,
                "--mac-bits {got} out of range 1..={max} (the {alg} MAC has {max} bits)"
            ),
            SecocConfigError::BadFirstFreshness { got, max } => write!(
                f,
                "--freshness {got} out of range 1..={max} (freshness values start at 1 and fit in --full-fv-bits)"
            ),
            SecocConfigError::BadLastFreshness { got, max } => write!(
                f,
                "--last-freshness {got} out of range 0..={max} (it must fit in --full-fv-bits)"
            ),
            SecocConfigError::ZeroWindow => f.write_str("--acceptance-window must be at least 1"),
            SecocConfigError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for SecocConfigError {}

impl From<CryptoError> for SecocConfigError {
    fn from(e: CryptoError) -> Self {
        SecocConfigError::Crypto(e)
    }
}

/// Errors protecting a PDU: the sender's problems, never the wire's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecocProtectError {
    /// The output buffer cannot hold the Secured I-PDU.
    BufferTooSmall { needed: usize },
    /// Every freshness value has been used: the SA needs a new key.
    FreshnessExhausted,
}

impl fmt::Display for SecocProtectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecocProtectError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            SecocProtectError::FreshnessExhausted => f.write_str(
                "freshness values exhausted (the counter never wraps): the SA needs a new key",
            ),
        }
    }
}

impl core::error::Error for SecocProtectError {}

/// Result of [`reconstruct`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconstruction {
    /// The full FV the PDU claims; always newer than the last accepted one.
    Candidate(u64),
    /// Equal to the last accepted FV.
    Duplicate,
    /// Older than the last accepted FV, or no newer FV has these low bits.
    TooOld,
}

/// Reconstructs the full FV from the received truncated FV `received` (its `fv_bits` low bits)
/// and the last accepted full FV `last` (≤ 2^full_fv_bits − 1; `fv_bits ≤ full_fv_bits ≤ 64`):
/// the upper part of `last` when the received bits are greater than the low bits of `last`, else
/// the upper part + 1. With `fv_bits == full_fv_bits` the received value is the full FV.
pub fn reconstruct(last: u64, received: u64, fv_bits: u8, full_fv_bits: u8) -> Reconstruction {
    let max = fv_mask(full_fv_bits);
    if fv_bits >= full_fv_bits {
        let r = received & max;
        return match r.cmp(&last) {
            core::cmp::Ordering::Greater => Reconstruction::Candidate(r),
            core::cmp::Ordering::Equal => Reconstruction::Duplicate,
            core::cmp::Ordering::Less => Reconstruction::TooOld,
        };
    }
    // fv_bits < full_fv_bits ≤ 64 from here.
    let mask = fv_mask(fv_bits);
    let r = received & mask;
    let upper = u128::from(last >> fv_bits);
    let upper = if r > last & mask { upper } else { upper + 1 };
    let c = (upper << fv_bits) | u128::from(r);
    if c > u128::from(max) {
        Reconstruction::TooOld
    } else {
        Reconstruction::Candidate(c as u64)
    }
}

/// Scheduled key and fixed parameters of one SA.
struct Keys {
    alg: SecocAlg,
    data_id: u16,
    layout: AuthLayout,
    full_fv_bits: u8,
    mac: Box<dyn MacKey>,
}

impl Keys {
    fn new(provider: &CryptoProvider, p: &SecocParams<'_>) -> Result<Keys, SecocConfigError> {
        let alg = p.alg;
        match alg.key_len() {
            Some(n) if p.key.len() != n => {
                return Err(SecocConfigError::BadKeyLength {
                    alg,
                    expected: n,
                    got: p.key.len(),
                });
            }
            None if p.key.is_empty() => return Err(SecocConfigError::EmptyKey { alg }),
            _ => {}
        }
        if p.full_fv_bits == 0 || p.full_fv_bits > MAX_FV_BITS {
            return Err(SecocConfigError::FullFvBits {
                got: p.full_fv_bits,
            });
        }
        if p.fv_bits > p.full_fv_bits {
            return Err(SecocConfigError::FvBits {
                got: p.fv_bits,
                full: p.full_fv_bits,
            });
        }
        let max = alg.max_mac_bits();
        if p.mac_bits == 0 || p.mac_bits > max {
            return Err(SecocConfigError::MacBits {
                alg,
                got: p.mac_bits,
                max,
            });
        }
        let layout = AuthLayout::new(p.fv_bits, p.mac_bits).map_err(|e| match e {
            LayoutError::FvBits(got) => SecocConfigError::FvBits {
                got,
                full: p.full_fv_bits,
            },
            LayoutError::MacBits(got) => SecocConfigError::MacBits { alg, got, max },
        })?;
        Ok(Keys {
            alg,
            data_id: p.data_id,
            layout,
            full_fv_bits: p.full_fv_bits,
            mac: provider.keys.mac(alg.mac_alg(), p.key)?,
        })
    }

    fn max_fv(&self) -> u64 {
        fv_mask(self.full_fv_bits)
    }

    /// The truncated authenticator for `authentic` under the full FV `fv`, left-aligned with zero
    /// bits after `mac_bits`.
    fn authenticator(&self, authentic: &[u8], fv: u64) -> [u8; MAX_MAC_BYTES] {
        let id = self.data_id.to_be_bytes();
        let fv_bytes = fv.to_be_bytes();
        let n = usize::from(self.full_fv_bits).div_ceil(8);
        let parts: [&[u8]; 3] = [&id, authentic, tail(&fv_bytes, 8usize.saturating_sub(n))];
        let mut full = [0u8; MAX_MAC_LEN];
        self.mac.compute(&parts, &mut full);
        let mut t = [0u8; MAX_MAC_BYTES];
        let len = self.layout.mac_len();
        // `len` ≤ MAX_MAC_BYTES ≤ MAX_MAC_LEN: `AuthLayout::new` bounds the MAC bits.
        if let (Some(dst), Some(src)) = (t.get_mut(..len), full.get(..len)) {
            dst.copy_from_slice(src);
        }
        let rem = usize::from(self.layout.mac_bits()) % 8;
        if rem != 0
            && let Some(last) = len.checked_sub(1).and_then(|i| t.get_mut(i))
        {
            *last &= 0xffu8 << (8 - rem);
        }
        t
    }
}

/// Outbound SecOC SA: a MAC key, a Data ID and the freshness counter.
pub struct SecocTx {
    keys: Keys,
    /// Next FV; `None` once the last one has been used.
    next_fv: Option<u64>,
    counters: TxCounters,
}

impl SecocTx {
    /// An SA whose first PDU carries the full FV `first_fv` (1..=2^full_fv_bits − 1). A restarted
    /// sender must start above every FV it used before under the same key.
    pub fn new(
        provider: &CryptoProvider,
        params: &SecocParams<'_>,
        first_fv: u64,
    ) -> Result<SecocTx, SecocConfigError> {
        let keys = Keys::new(provider, params)?;
        if first_fv == 0 || first_fv > keys.max_fv() {
            return Err(SecocConfigError::BadFirstFreshness {
                got: first_fv,
                max: keys.max_fv(),
            });
        }
        Ok(SecocTx {
            keys,
            next_fv: Some(first_fv),
            counters: TxCounters::default(),
        })
    }

    pub fn alg(&self) -> SecocAlg {
        self.keys.alg
    }

    pub fn layout(&self) -> AuthLayout {
        self.keys.layout
    }

    /// The full FV the next PDU will carry; `None` when exhausted.
    pub fn next_freshness(&self) -> Option<u64> {
        self.next_fv
    }

    pub fn counters(&self) -> TxCounters {
        self.counters
    }

    /// Length of the Secured I-PDU of an `authentic_len`-byte Authentic I-PDU.
    pub fn secured_len(&self, authentic_len: usize) -> usize {
        authentic_len + self.keys.layout.len()
    }

    /// Protects `authentic` into `out`; returns the Secured I-PDU length.
    pub fn protect(
        &mut self,
        authentic: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SecocProtectError> {
        let needed = self.secured_len(authentic.len());
        let Some(dst) = out.get_mut(..authentic.len()) else {
            return Err(SecocProtectError::BufferTooSmall { needed });
        };
        dst.copy_from_slice(authentic);
        self.protect_in_place(out, authentic.len())
    }

    /// Appends the authentication information to the Authentic I-PDU in `buf[..len]`; `buf` needs
    /// [`AuthLayout::len`] more bytes. Returns the Secured I-PDU length.
    pub fn protect_in_place(
        &mut self,
        buf: &mut [u8],
        len: usize,
    ) -> Result<usize, SecocProtectError> {
        let total = self.secured_len(len);
        let Some(buf) = buf.get_mut(..total) else {
            return Err(SecocProtectError::BufferTooSmall { needed: total });
        };
        let fv = self.next_fv.ok_or(SecocProtectError::FreshnessExhausted)?;
        // The value is spent whatever happens next: never reuse one.
        self.next_fv = if fv >= self.keys.max_fv() {
            None
        } else {
            Some(fv + 1)
        };
        // `buf` is `len` + the authentication information's length.
        let (authentic, info_bytes) = buf.split_at_mut(len);
        let info = AuthInfo {
            layout: self.keys.layout,
            fv: self.keys.layout.truncate_fv(fv),
            mac: self.keys.authenticator(authentic, fv),
        };
        info.emit(info_bytes);
        self.counters.frames += 1;
        self.counters.bytes += total as u64;
        Ok(total)
    }
}

/// A verified Secured I-PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The Authentic I-PDU is the first `authentic_len` bytes of the Secured I-PDU.
    pub authentic_len: usize,
    /// The full FV it carried (now the last accepted one).
    pub freshness: u64,
    /// Which attempt verified: 0 for the reconstructed FV, k for reconstructed + k·2^fv_bits.
    pub attempt: u16,
}

/// Inbound SecOC SA.
pub struct SecocRx {
    keys: Keys,
    last: u64,
    window: u64,
    attempts: u16,
    counters: RxCounters,
}

impl SecocRx {
    pub fn new(
        provider: &CryptoProvider,
        params: &SecocParams<'_>,
        opts: SecocRxOptions,
    ) -> Result<SecocRx, SecocConfigError> {
        let keys = Keys::new(provider, params)?;
        if opts.last_freshness > keys.max_fv() {
            return Err(SecocConfigError::BadLastFreshness {
                got: opts.last_freshness,
                max: keys.max_fv(),
            });
        }
        let window = match opts.acceptance_window {
            Some(0) => return Err(SecocConfigError::ZeroWindow),
            Some(w) => w,
            None => 1u64
                .checked_shl(u32::from(keys.layout.fv_bits()))
                .unwrap_or(u64::MAX),
        };
        Ok(SecocRx {
            keys,
            last: opts.last_freshness,
            window,
            attempts: opts.verify_attempts,
            counters: RxCounters::default(),
        })
    }

    pub fn alg(&self) -> SecocAlg {
        self.keys.alg
    }

    pub fn layout(&self) -> AuthLayout {
        self.keys.layout
    }

    /// The last accepted full FV (the initial value until a PDU verifies).
    pub fn last_freshness(&self) -> u64 {
        self.last
    }

    pub fn acceptance_window(&self) -> u64 {
        self.window
    }

    pub fn counters(&self) -> &RxCounters {
        &self.counters
    }

    /// Verifies a Secured I-PDU. On success the Authentic I-PDU is `secured[..authentic_len]`.
    /// Every outcome is counted.
    pub fn verify(&mut self, secured: &[u8]) -> Result<Verified, DropReason> {
        let r = self.verify_inner(secured);
        match &r {
            Ok(v) => {
                self.counters.ok_frames += 1;
                self.counters.ok_bytes += v.authentic_len as u64;
            }
            Err(reason) => self.counters.drops.bump(*reason),
        }
        r
    }

    fn verify_inner(&mut self, secured: &[u8]) -> Result<Verified, DropReason> {
        let layout = self.keys.layout;
        let pdu = SecuredPdu::new_checked(secured, layout).map_err(|e| match e {
            SecuredError::Truncated => DropReason::Truncated,
            SecuredError::NonZeroPadding => DropReason::ReservedBits,
        })?;
        let info = AuthInfo::parse(&pdu).map_err(|_| DropReason::Malformed)?;
        let first = match reconstruct(self.last, info.fv, layout.fv_bits(), self.keys.full_fv_bits)
        {
            Reconstruction::Candidate(c) => c,
            Reconstruction::Duplicate => return Err(DropReason::ReplayDuplicate),
            Reconstruction::TooOld => return Err(DropReason::ReplayTooOld),
        };
        // Highest acceptable FV: last + W, and never above the largest FV.
        let limit =
            (u128::from(self.last) + u128::from(self.window)).min(u128::from(self.keys.max_fv()));
        if u128::from(first) > limit {
            return Err(DropReason::FreshnessWindow);
        }
        let step = 1u128 << layout.fv_bits();
        let mac_len = layout.mac_len();
        let authentic = pdu.authentic();
        let mut fv = u128::from(first);
        let mut attempt = 0u16;
        loop {
            let want = self.keys.authenticator(authentic, fv as u64);
            let matches = match (want.get(..mac_len), info.mac.get(..mac_len)) {
                (Some(a), Some(b)) => bool::from(a.ct_eq(b)),
                _ => false,
            };
            if matches {
                self.last = fv as u64;
                return Ok(Verified {
                    authentic_len: authentic.len(),
                    freshness: fv as u64,
                    attempt,
                });
            }
            if attempt >= self.attempts {
                break;
            }
            fv += step;
            if fv > limit {
                break;
            }
            attempt += 1;
        }
        Err(DropReason::BadTag)
    }
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("Keys")
            .field("alg", &self.alg)
            .field("data_id", &self.data_id)
            .field("layout", &self.layout)
            .field("full_fv_bits", &self.full_fv_bits)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for SecocTx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecocTx")
            .field("keys", &self.keys)
            .field("next_fv", &self.next_fv)
            .field("counters", &self.counters)
            .finish()
    }
}

impl fmt::Debug for SecocRx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecocRx")
            .field("keys", &self.keys)
            .field("last", &self.last)
            .field("window", &self.window)
            .field("attempts", &self.attempts)
            .field("counters", &self.counters)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in SecocAlg::ALL {
            assert_eq!(SecocAlg::from_name(a.name()), Some(a));
        }
        assert_eq!(SecocAlg::from_name("secoc-cmac"), None);
        assert_eq!(SecocAlg::CmacAes128.max_mac_bits(), 128);
        assert_eq!(SecocAlg::HmacSha256.max_mac_bits(), 256);
        assert_eq!(SecocAlg::CmacAes128.key_len(), Some(16));
        assert_eq!(SecocAlg::HmacSha256.key_len(), None);
    }

    #[test]
    fn reconstruction_by_hand() {
        use Reconstruction::*;
        // 8 of 64 bits, last 0x1234: low byte 0x34.
        assert_eq!(reconstruct(0x1234, 0x35, 8, 64), Candidate(0x1235));
        assert_eq!(reconstruct(0x1234, 0xff, 8, 64), Candidate(0x12ff));
        // Equal or smaller low bits: the upper part + 1 (a roll-over of the truncated FV).
        assert_eq!(reconstruct(0x1234, 0x34, 8, 64), Candidate(0x1334));
        assert_eq!(reconstruct(0x1234, 0x00, 8, 64), Candidate(0x1300));
        assert_eq!(reconstruct(0x12ff, 0x00, 8, 64), Candidate(0x1300));
        // Only the low fv_bits of the received value count.
        assert_eq!(reconstruct(0x1234, 0xf35, 8, 64), Candidate(0x1235));
        // 3 of 40 bits.
        assert_eq!(reconstruct(0b1_0110, 0b111, 3, 40), Candidate(0b1_0111));
        assert_eq!(reconstruct(0b1_0111, 0b000, 3, 40), Candidate(0b1_1000));
        assert_eq!(reconstruct(0b1_0111, 0b111, 3, 40), Candidate(0b1_1111));
        // No FV on the wire: always last + 1.
        assert_eq!(reconstruct(41, 0, 0, 16), Candidate(42));
        // The whole FV on the wire: compared as is.
        assert_eq!(reconstruct(100, 101, 16, 16), Candidate(101));
        assert_eq!(reconstruct(100, 100, 16, 16), Duplicate);
        assert_eq!(reconstruct(100, 99, 16, 16), TooOld);
        assert_eq!(
            reconstruct(u64::MAX - 1, u64::MAX, 64, 64),
            Candidate(u64::MAX)
        );
        assert_eq!(reconstruct(u64::MAX, u64::MAX, 64, 64), Duplicate);
        // No newer FV with these low bits: only an old PDU can carry them.
        assert_eq!(reconstruct(0xff_fff0, 0x05, 8, 24), TooOld);
        assert_eq!(reconstruct(0xff_fff0, 0xf5, 8, 24), Candidate(0xff_fff5));
        assert_eq!(reconstruct(u64::MAX, 0, 0, 64), TooOld);
        assert_eq!(reconstruct(u64::MAX - 1, 0, 0, 64), Candidate(u64::MAX));
    }

    proptest::proptest! {
        /// Against a model: the candidate is the smallest FV > last with the received low bits.
        #[test]
        fn reconstruction_is_the_next_fv_with_those_low_bits(
            full in 1u8..=64,
            fv_pick in proptest::prelude::any::<u8>(),
            last_raw in proptest::prelude::any::<u64>(),
            received in proptest::prelude::any::<u64>(),
        ) {
            let fv_bits = fv_pick % (full + 1);
            let max = fv_mask(full);
            let last = last_raw & max;
            let got = reconstruct(last, received, fv_bits, full);
            let mask = u128::from(fv_mask(fv_bits));
            let r = u128::from(received) & mask & u128::from(max);
            let step = mask + 1;
            if fv_bits == full {
                let want = match r.cmp(&u128::from(last)) {
                    core::cmp::Ordering::Greater => Reconstruction::Candidate(r as u64),
                    core::cmp::Ordering::Equal => Reconstruction::Duplicate,
                    core::cmp::Ordering::Less => Reconstruction::TooOld,
                };
                proptest::prop_assert_eq!(got, want);
            } else {
                // Smallest x > last with x mod step == r.
                let l = u128::from(last);
                let base = l - l % step + r;
                let x = if base > l { base } else { base + step };
                let want = if x > u128::from(max) {
                    Reconstruction::TooOld
                } else {
                    Reconstruction::Candidate(x as u64)
                };
                proptest::prop_assert_eq!(got, want);
                if let Reconstruction::Candidate(c) = got {
                    proptest::prop_assert!(c > last && u128::from(c - last) <= step);
                }
            }
        }
    }
}
