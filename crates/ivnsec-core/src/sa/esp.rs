//! IPsec ESP security associations (RFC 4303): protect (outbound) and verify (inbound).
//!
//! Algorithms: AES-GCM with a 16-byte ICV (RFC 4106), AES-GMAC (RFC 4543), ENCR_NULL with
//! HMAC-SHA-256-128 (RFC 4868), AES-CBC with HMAC-SHA-256-128 (RFC 3602, RFC 4868) and
//! ChaCha20-Poly1305 (RFC 7634); optional extended (64-bit) sequence numbers; transport and
//! tunnel mode over IPv4 and IPv6.
//!
//! Everything happens in the caller's buffer: no heap allocation per packet. With ESN, GMAC's AAD
//! (SPI ‖ seq high ‖ seq low ‖ IV ‖ data) is not contiguous in the packet; instead of a scratch
//! copy it is made contiguous in place for the duration of the GMAC call by borrowing the four
//! bytes in front of the ESP header (always an IP header, ≥ 20 bytes) and restoring them after.
//!
//! Inbound order (boringtun's): parse → SPI → sequence number (ESN high bits inferred) → replay
//! *check* → ICV (constant time) → replay *insert* → decrypt → padding → restore the packet.

use alloc::boxed::Box;
use core::fmt;
use core::net::IpAddr;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::replay::WindowTooLarge;
use super::{DropReason, TxCounters};
use crate::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, BLOCK_LEN, CipherAlg, CipherKey, CryptoError,
    CryptoProvider, MAX_MAC_LEN, MacAlg, MacKey, Primitive, SecureRandom,
};
use crate::wire::bytes::{put_byte, range_mut, tail};
use crate::wire::esp::{self as wire, HEADER_LEN, TRAILER_LEN};
use crate::wire::ip::{self, IpError, IpInfo, protocol};

mod rx;

pub use rx::{EspCheck, EspChecked, EspOpened, EspReceiver, EspRx, spi_of};

/// ICV length of every algorithm here.
pub const ICV_LEN: usize = 16;
/// Salt length of the AEAD algorithms (RFC 4106 §8.1, RFC 4543 §6, RFC 7634 §4).
pub const SALT_LEN: usize = 4;
/// Longest IV (AES-CBC).
pub const MAX_IV_LEN: usize = BLOCK_LEN;
/// Most bytes protecting adds to a packet: an IPv6 outer header, ESP header, IV, up to 15 bytes
/// of padding, the trailer and the ICV.
pub const MAX_OVERHEAD: usize =
    ip::IPV6_HEADER_LEN + HEADER_LEN + MAX_IV_LEN + 15 + TRAILER_LEN + ICV_LEN;

/// An ESP transform (encryption + integrity algorithm pair) and its profile name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EspAlg {
    /// ENCR_AES_GCM_16 with a 128-bit key (RFC 4106).
    Aes128Gcm,
    /// ENCR_AES_GCM_16 with a 256-bit key (RFC 4106).
    Aes256Gcm,
    /// ENCR_NULL_AUTH_AES_GMAC with a 128-bit key (RFC 4543): integrity only.
    Aes128Gmac,
    /// ENCR_NULL_AUTH_AES_GMAC with a 256-bit key (RFC 4543): integrity only.
    Aes256Gmac,
    /// ENCR_NULL + AUTH_HMAC_SHA2_256_128 (RFC 4868): integrity only.
    NullHmacSha256,
    /// ENCR_AES_CBC (RFC 3602) with a 128-bit key + AUTH_HMAC_SHA2_256_128.
    Aes128CbcHmacSha256,
    /// ENCR_AES_CBC (RFC 3602) with a 256-bit key + AUTH_HMAC_SHA2_256_128.
    Aes256CbcHmacSha256,
    /// ENCR_CHACHA20_POLY1305 (RFC 7634).
    ChaCha20Poly1305,
}

impl EspAlg {
    pub const ALL: [EspAlg; 8] = [
        EspAlg::Aes128Gcm,
        EspAlg::Aes256Gcm,
        EspAlg::Aes128Gmac,
        EspAlg::Aes256Gmac,
        EspAlg::NullHmacSha256,
        EspAlg::Aes128CbcHmacSha256,
        EspAlg::Aes256CbcHmacSha256,
        EspAlg::ChaCha20Poly1305,
    ];

    /// The stable profile name (`esp-aes128-gcm`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            EspAlg::Aes128Gcm => "esp-aes128-gcm",
            EspAlg::Aes256Gcm => "esp-aes256-gcm",
            EspAlg::Aes128Gmac => "esp-aes128-gmac",
            EspAlg::Aes256Gmac => "esp-aes256-gmac",
            EspAlg::NullHmacSha256 => "esp-null-hmac-sha256",
            EspAlg::Aes128CbcHmacSha256 => "esp-aes128-cbc-hmac-sha256",
            EspAlg::Aes256CbcHmacSha256 => "esp-aes256-cbc-hmac-sha256",
            EspAlg::ChaCha20Poly1305 => "esp-chacha20-poly1305",
        }
    }

    pub fn from_name(s: &str) -> Option<EspAlg> {
        EspAlg::ALL.into_iter().find(|a| a.name() == s)
    }

    /// Length of `--key`: cipher key, plus the 4-byte salt for GCM, GMAC and ChaCha20-Poly1305;
    /// 0 for ENCR_NULL.
    pub const fn key_len(self) -> usize {
        match self {
            EspAlg::Aes128Gcm | EspAlg::Aes128Gmac => 16 + SALT_LEN,
            EspAlg::Aes256Gcm | EspAlg::Aes256Gmac | EspAlg::ChaCha20Poly1305 => 32 + SALT_LEN,
            EspAlg::NullHmacSha256 => 0,
            EspAlg::Aes128CbcHmacSha256 => 16,
            EspAlg::Aes256CbcHmacSha256 => 32,
        }
    }

    /// Length of the HMAC key, for the algorithms with a separate integrity key (RFC 4868 §2.1.1:
    /// 256 bits for HMAC-SHA-256-128).
    pub const fn auth_key_len(self) -> Option<usize> {
        match self {
            EspAlg::NullHmacSha256 | EspAlg::Aes128CbcHmacSha256 | EspAlg::Aes256CbcHmacSha256 => {
                Some(32)
            }
            _ => None,
        }
    }

    /// Length of the explicit IV on the wire.
    pub const fn iv_len(self) -> usize {
        match self {
            EspAlg::NullHmacSha256 => 0,
            EspAlg::Aes128CbcHmacSha256 | EspAlg::Aes256CbcHmacSha256 => BLOCK_LEN,
            _ => 8,
        }
    }

    /// Length of the ESP part (SPI through ICV) that protects `payload_len` bytes (the upper
    /// layer in transport mode, the inner packet in tunnel mode): header, IV, payload padded with
    /// the trailer to the alignment, ICV.
    pub const fn esp_len(self, payload_len: usize) -> usize {
        HEADER_LEN
            + self.iv_len()
            + payload_len
            + wire::pad_len(payload_len, self.align())
            + TRAILER_LEN
            + ICV_LEN
    }

    /// Alignment of payload ‖ padding ‖ trailer: the cipher block for CBC, else 4 (RFC 4303 §2.4).
    pub const fn align(self) -> usize {
        match self {
            EspAlg::Aes128CbcHmacSha256 | EspAlg::Aes256CbcHmacSha256 => BLOCK_LEN,
            _ => 4,
        }
    }

    /// True when the payload is encrypted.
    pub const fn confidential(self) -> bool {
        !matches!(
            self,
            EspAlg::Aes128Gmac | EspAlg::Aes256Gmac | EspAlg::NullHmacSha256
        )
    }

    /// True when the IV must be unpredictable (random), not merely unique (a counter).
    pub const fn random_iv(self) -> bool {
        matches!(
            self,
            EspAlg::Aes128CbcHmacSha256 | EspAlg::Aes256CbcHmacSha256
        )
    }

    /// Primitives a provider needs for this transform.
    pub fn primitives(self) -> ([Option<Primitive>; 2], usize) {
        let mac = Some(Primitive::Mac(MacAlg::HmacSha256));
        match self {
            EspAlg::Aes128Gcm | EspAlg::Aes128Gmac => {
                ([Some(Primitive::Aead(AeadAlg::Aes128Gcm)), None], 1)
            }
            EspAlg::Aes256Gcm | EspAlg::Aes256Gmac => {
                ([Some(Primitive::Aead(AeadAlg::Aes256Gcm)), None], 1)
            }
            EspAlg::ChaCha20Poly1305 => {
                ([Some(Primitive::Aead(AeadAlg::ChaCha20Poly1305)), None], 1)
            }
            EspAlg::NullHmacSha256 => ([mac, None], 1),
            EspAlg::Aes128CbcHmacSha256 => ([Some(Primitive::Cipher(CipherAlg::Aes128)), mac], 2),
            EspAlg::Aes256CbcHmacSha256 => ([Some(Primitive::Cipher(CipherAlg::Aes256)), mac], 2),
        }
    }

    /// True when `provider` has every primitive of this transform.
    pub fn supported_by(self, provider: &CryptoProvider) -> bool {
        let (p, n) = self.primitives();
        p.iter().take(n).flatten().all(|p| provider.supports(*p))
    }
}

impl fmt::Display for EspAlg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Outbound encapsulation mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EspMode {
    /// ESP inserted after the IP header (RFC 4303 §3.1.1).
    Transport,
    /// The whole packet inside a new outer header from `src` to `dst` (RFC 4303 §3.1.2).
    Tunnel { src: IpAddr, dst: IpAddr },
}

/// What RFC 4303 §2.1 says of an SPI value, for the callers that choose or accept one. The SAs
/// themselves take any value: a published known answer (draft-mcgrew-gcm-test-01 case 4) uses
/// SPI 0, so the policy belongs to whoever configures the SA.
//= https://www.rfc-editor.org/rfc/rfc4303#section-2.1
//# The set of SPI values in the range 1 through 255 are reserved by the
//# Internet Assigned Numbers Authority (IANA) for future use; a reserved
//# SPI value will not normally be assigned by IANA unless the use of the
//# assigned SPI value is specified in an RFC.  The SPI value of zero (0)
//# is reserved for local, implementation-specific use and MUST NOT be
//# sent on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpiRange {
    /// 0: for local use, never sent on the wire.
    Local,
    /// 1-255: kept for future IANA assignment. Not forbidden on the wire: published test
    /// vectors (DPDK's ESP vectors use SPI 52) and captures carry them.
    IanaReserved,
    /// 256 and above: free for an SA.
    Assignable,
}

impl SpiRange {
    /// The range `spi` falls in.
    pub const fn of(spi: u32) -> SpiRange {
        match spi {
            0 => SpiRange::Local,
            1..=255 => SpiRange::IanaReserved,
            _ => SpiRange::Assignable,
        }
    }
}

/// What an SA is made from. Keys are borrowed; the SA keeps only scheduled keys and the salt.
#[derive(Clone, Copy, Debug)]
pub struct EspParams<'a> {
    pub alg: EspAlg,
    pub spi: u32,
    /// Cipher key ‖ salt (GCM, GMAC, ChaCha20-Poly1305), cipher key (CBC), empty (NULL).
    pub key: &'a [u8],
    /// HMAC-SHA-256 key (NULL and CBC transforms), empty otherwise.
    pub auth_key: &'a [u8],
    /// Extended sequence numbers (RFC 4303 §2.2.1).
    pub esn: bool,
}

/// Errors making an ESP SA.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EspConfigError {
    BadKeyLength {
        alg: EspAlg,
        expected: usize,
        got: usize,
    },
    MissingAuthKey {
        alg: EspAlg,
    },
    AuthKeyNotUsed {
        alg: EspAlg,
    },
    BadAuthKeyLength {
        alg: EspAlg,
        expected: usize,
        got: usize,
    },
    /// Sequence numbers start at 1 and, without ESN, end at 2^32 − 1.
    BadFirstSeq {
        first: u64,
        max: u64,
    },
    /// Tunnel endpoints of different address families.
    TunnelFamilyMismatch,
    WindowTooLarge(WindowTooLarge),
    Crypto(CryptoError),
}

impl fmt::Display for EspConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EspConfigError::BadKeyLength { alg, expected, got } => {
                if *expected == 0 {
                    write!(f, "{alg} takes no --key (ENCR_NULL), got {got} bytes")
                } else if matches!(
                    alg,
                    EspAlg::Aes128CbcHmacSha256 | EspAlg::Aes256CbcHmacSha256
                ) {
                    write!(f, "{alg} needs a {expected}-byte --key, got {got} bytes")
                } else {
                    write!(
                        f,
                        "{alg} needs a {expected}-byte --key (key ‖ 4-byte salt), got {got} bytes"
                    )
                }
            }
            EspConfigError::MissingAuthKey { alg } => {
                write!(f, "{alg} needs a 32-byte --auth-key (HMAC-SHA-256)")
            }
            EspConfigError::AuthKeyNotUsed { alg } => {
                write!(f, "{alg} takes no --auth-key (it is an AEAD)")
            }
            EspConfigError::BadAuthKeyLength { alg, expected, got } => {
                write!(
                    f,
                    "{alg} needs a {expected}-byte --auth-key (RFC 4868), got {got} bytes"
                )
            }
            EspConfigError::BadFirstSeq { first, max } => {
                write!(
                    f,
                    "sequence number {first} out of range 1..={max} (--esn allows 64-bit numbers)"
                )
            }
            EspConfigError::TunnelFamilyMismatch => {
                f.write_str("tunnel source and destination must both be IPv4 or both IPv6")
            }
            EspConfigError::WindowTooLarge(e) => write!(f, "{e}"),
            EspConfigError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for EspConfigError {}

impl From<CryptoError> for EspConfigError {
    fn from(e: CryptoError) -> Self {
        EspConfigError::Crypto(e)
    }
}

/// Errors protecting a packet: the sender's problems, never the wire's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EspProtectError {
    /// The input is not an IP packet ESP can protect.
    BadPacket(IpError),
    /// The protected packet would exceed 65535 bytes (the IPv4 total / IPv6 payload length).
    TooLong,
    /// The output buffer cannot hold the protected packet.
    BufferTooSmall {
        needed: usize,
    },
    /// An explicit IV of the wrong length (or one given to ENCR_NULL).
    BadIvLength {
        expected: usize,
        got: usize,
    },
    /// Every sequence number of this SA has been used: it needs a new key.
    SeqExhausted,
    Crypto(CryptoError),
}

impl fmt::Display for EspProtectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EspProtectError::BadPacket(e) => write!(f, "not a protectable IP packet: {e}"),
            EspProtectError::TooLong => f.write_str("protected packet would exceed 65535 bytes"),
            EspProtectError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            EspProtectError::BadIvLength { expected, got } => {
                write!(f, "IV must be {expected} bytes, got {got}")
            }
            EspProtectError::SeqExhausted => {
                f.write_str("sequence numbers exhausted: the SA needs a new key")
            }
            EspProtectError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for EspProtectError {}

impl From<CryptoError> for EspProtectError {
    fn from(e: CryptoError) -> Self {
        EspProtectError::Crypto(e)
    }
}

enum Engine {
    /// GCM or ChaCha20-Poly1305: encrypt payload ‖ trailer, AAD = SPI ‖ seq.
    Aead(Box<dyn AeadKey>),
    /// GMAC: everything in the AAD, empty plaintext (RFC 4543 §3).
    Gmac(Box<dyn AeadKey>),
    NullHmac(Box<dyn MacKey>),
    CbcHmac {
        cipher: Box<dyn CipherKey>,
        mac: Box<dyn MacKey>,
    },
}

/// Scheduled keys and fixed parameters of one SA.
struct Keys {
    alg: EspAlg,
    spi: u32,
    esn: bool,
    salt: Zeroizing<[u8; SALT_LEN]>,
    engine: Engine,
}

impl Keys {
    fn new(provider: &CryptoProvider, p: &EspParams<'_>) -> Result<Keys, EspConfigError> {
        let alg = p.alg;
        if p.key.len() != alg.key_len() {
            return Err(EspConfigError::BadKeyLength {
                alg,
                expected: alg.key_len(),
                got: p.key.len(),
            });
        }
        match alg.auth_key_len() {
            Some(_) if p.auth_key.is_empty() => return Err(EspConfigError::MissingAuthKey { alg }),
            Some(n) if p.auth_key.len() != n => {
                return Err(EspConfigError::BadAuthKeyLength {
                    alg,
                    expected: n,
                    got: p.auth_key.len(),
                });
            }
            None if !p.auth_key.is_empty() => return Err(EspConfigError::AuthKeyNotUsed { alg }),
            _ => {}
        }
        let keys = provider.keys;
        let mut salt = Zeroizing::new([0u8; SALT_LEN]);
        // key ‖ 4-byte salt; a key shorter than the salt leaves an empty key the provider refuses.
        let (key, key_salt) = p
            .key
            .split_last_chunk::<SALT_LEN>()
            .unwrap_or((&[], &[0; SALT_LEN]));
        let engine = match alg {
            EspAlg::Aes128Gcm | EspAlg::Aes256Gcm | EspAlg::ChaCha20Poly1305 => {
                *salt = *key_salt;
                let a = match alg {
                    EspAlg::Aes128Gcm => AeadAlg::Aes128Gcm,
                    EspAlg::Aes256Gcm => AeadAlg::Aes256Gcm,
                    _ => AeadAlg::ChaCha20Poly1305,
                };
                Engine::Aead(keys.aead(a, key)?)
            }
            EspAlg::Aes128Gmac | EspAlg::Aes256Gmac => {
                *salt = *key_salt;
                let a = if alg == EspAlg::Aes128Gmac {
                    AeadAlg::Aes128Gcm
                } else {
                    AeadAlg::Aes256Gcm
                };
                Engine::Gmac(keys.aead(a, key)?)
            }
            EspAlg::NullHmacSha256 => Engine::NullHmac(keys.mac(MacAlg::HmacSha256, p.auth_key)?),
            EspAlg::Aes128CbcHmacSha256 | EspAlg::Aes256CbcHmacSha256 => {
                let c = if alg == EspAlg::Aes128CbcHmacSha256 {
                    CipherAlg::Aes128
                } else {
                    CipherAlg::Aes256
                };
                Engine::CbcHmac {
                    cipher: keys.cipher(c, p.key)?,
                    mac: keys.mac(MacAlg::HmacSha256, p.auth_key)?,
                }
            }
        };
        Ok(Keys {
            alg,
            spi: p.spi,
            esn: p.esn,
            salt,
            engine,
        })
    }

    /// Largest sequence number: 2^32 − 1, or 2^64 − 1 with ESN.
    fn max_seq(&self) -> u64 {
        if self.esn {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        }
    }

    /// salt ‖ IV (RFC 4106 §4, RFC 4543 §3.1, RFC 7634 §2), the IV being the 8 bytes at the
    /// front of `iv`. Written as 8 + 4 bytes, the way the providers read a 12-byte nonce, so that
    /// reading it back does not wait for narrower stores.
    fn nonce(&self, iv: &[u8]) -> Result<[u8; AEAD_NONCE_LEN], DropReason> {
        let iv: [u8; 8] = iv
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or(DropReason::Malformed)?;
        let (salt, iv) = (u32::from_be_bytes(*self.salt), u64::from_be_bytes(iv));
        let mut n = [0u8; AEAD_NONCE_LEN];
        n[..8].copy_from_slice(&((u64::from(salt) << 32) | (iv >> 32)).to_be_bytes());
        n[8..].copy_from_slice(&(iv as u32).to_be_bytes());
        Ok(n)
    }

    /// AAD of GCM / ChaCha20-Poly1305 with ESN: SPI ‖ seq high ‖ seq low (12 bytes; RFC 4106
    /// §5, RFC 7634 §2.1). Without ESN the AAD is SPI ‖ seq, the ESP header as sent.
    fn aead_aad(&self, seq: u64) -> [u8; 12] {
        let mut a = [0u8; 12];
        a[..4].copy_from_slice(&self.spi.to_be_bytes());
        a[4..].copy_from_slice(&seq.to_be_bytes());
        a
    }

    /// Computes (`Seal`) or checks (`Open`) the ICV of the ESP packet `buf[esp..icv_end]` and
    /// encrypts / decrypts the data for AEAD transforms. `buf[..esp]` is the IP header (≥ 4 bytes).
    /// On `Open` failure returns `BadTag`. Does not run CBC (done by the callers around it).
    fn icv(
        &self,
        buf: &mut [u8],
        esp: usize,
        icv_end: usize,
        seq: u64,
        dir: Dir,
    ) -> Result<(), DropReason> {
        let iv_len = self.alg.iv_len();
        let data_start = esp + HEADER_LEN + iv_len;
        let (head, icv) = buf
            .get_mut(..icv_end)
            .and_then(<[u8]>::split_last_chunk_mut::<ICV_LEN>)
            .ok_or(DropReason::Truncated)?;
        // The IV field (`data_start` ≤ the end of the data: the callers checked the lengths).
        let iv_range = esp + HEADER_LEN..data_start;
        match &self.engine {
            Engine::Aead(k) => {
                let nonce = self.nonce(head.get(iv_range).ok_or(DropReason::Truncated)?)?;
                let esn_aad;
                let (front, data) = head
                    .split_at_mut_checked(data_start)
                    .ok_or(DropReason::Truncated)?;
                let aad = if self.esn {
                    esn_aad = self.aead_aad(seq);
                    &esn_aad[..]
                } else {
                    // SPI ‖ seq as they are on the wire: the ESP header itself.
                    front
                        .get(esp..esp + HEADER_LEN)
                        .ok_or(DropReason::Truncated)?
                };
                match dir {
                    Dir::Seal => k
                        .seal_in_place(&nonce, aad, data, icv)
                        .map_err(|_| DropReason::Crypto),
                    Dir::Open => k
                        .open_in_place(&nonce, aad, data, icv)
                        .map_err(|_| DropReason::BadTag),
                }
            }
            Engine::Gmac(k) => {
                //= https://www.rfc-editor.org/rfc/rfc4543#section-3.2
                //# the AAD is [...] SPI, (extended) sequence number, IV, payload, padding, pad
                //# length, next header; the plaintext is empty.
                let nonce = self.nonce(head.get(iv_range).ok_or(DropReason::Truncated)?)?;
                if self.esn {
                    // SPI ‖ seq high ‖ seq low ‖ IV ‖ data, made contiguous in place.
                    let before = esp.checked_sub(4).ok_or(DropReason::Malformed)?;
                    let aad = head.get_mut(before..).ok_or(DropReason::Truncated)?;
                    let (saved, spi) = match aad.first_chunk_mut::<8>() {
                        Some(w) => (*w, self.spi.to_be_bytes()),
                        None => return Err(DropReason::Truncated),
                    };
                    let [s0, s1, s2, s3] = spi;
                    let [h0, h1, h2, h3] = ((seq >> 32) as u32).to_be_bytes();
                    if let Some(w) = aad.first_chunk_mut::<8>() {
                        *w = [s0, s1, s2, s3, h0, h1, h2, h3];
                    }
                    let r = self.gmac(k.as_ref(), &nonce, aad, icv, dir);
                    // The SPI back in its place and the bytes in front of it as they were.
                    if let Some(w) = aad.first_chunk_mut::<8>() {
                        let [b0, b1, b2, b3, ..] = saved;
                        *w = [b0, b1, b2, b3, s0, s1, s2, s3];
                    }
                    r
                } else {
                    let aad = head.get(esp..).ok_or(DropReason::Truncated)?;
                    self.gmac(k.as_ref(), &nonce, aad, icv, dir)
                }
            }
            Engine::NullHmac(mac) | Engine::CbcHmac { mac, .. } => {
                // RFC 4303 §2.8 / Appendix A: the ICV covers the ESP packet and, with ESN, the high
                // 32 bits appended after it (never transmitted).
                let hi = ((seq >> 32) as u32).to_be_bytes();
                let packet = head.get(esp..).ok_or(DropReason::Truncated)?;
                let mut full = [0u8; MAX_MAC_LEN];
                if self.esn {
                    mac.compute(&[packet, &hi], &mut full);
                } else {
                    mac.compute(&[packet], &mut full);
                }
                match dir {
                    Dir::Seal => {
                        icv.copy_from_slice(&full[..ICV_LEN]);
                        Ok(())
                    }
                    Dir::Open => {
                        if bool::from(full[..ICV_LEN].ct_eq(&icv[..])) {
                            Ok(())
                        } else {
                            Err(DropReason::BadTag)
                        }
                    }
                }
            }
        }
    }

    fn gmac(
        &self,
        k: &dyn AeadKey,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        icv: &mut [u8; AEAD_TAG_LEN],
        dir: Dir,
    ) -> Result<(), DropReason> {
        match dir {
            Dir::Seal => k
                .seal_in_place(nonce, aad, &mut [], icv)
                .map_err(|_| DropReason::Crypto),
            Dir::Open => k
                .open_in_place(nonce, aad, &mut [], icv)
                .map_err(|_| DropReason::BadTag),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Seal,
    Open,
}

/// Outbound ESP SA.
pub struct EspTx {
    keys: Keys,
    mode: EspMode,
    rng: &'static dyn SecureRandom,
    /// Next sequence number; `None` once the last one has been used.
    next_seq: Option<u64>,
    counters: TxCounters,
}

impl EspTx {
    /// An SA whose first packet carries `first_seq` (≥ 1). A restarted sender must start above
    /// every sequence number it used before under the same key.
    pub fn new(
        provider: &CryptoProvider,
        params: &EspParams<'_>,
        mode: EspMode,
        first_seq: u64,
    ) -> Result<EspTx, EspConfigError> {
        let keys = Keys::new(provider, params)?;
        if first_seq == 0 || first_seq > keys.max_seq() {
            return Err(EspConfigError::BadFirstSeq {
                first: first_seq,
                max: keys.max_seq(),
            });
        }
        if let EspMode::Tunnel { src, dst } = mode
            && src.is_ipv4() != dst.is_ipv4()
        {
            return Err(EspConfigError::TunnelFamilyMismatch);
        }
        Ok(EspTx {
            keys,
            mode,
            rng: provider.rng,
            next_seq: Some(first_seq),
            counters: TxCounters::default(),
        })
    }

    pub fn alg(&self) -> EspAlg {
        self.keys.alg
    }

    pub fn spi(&self) -> u32 {
        self.keys.spi
    }

    pub fn mode(&self) -> EspMode {
        self.mode
    }

    /// The (full 64-bit) sequence number the next packet will carry.
    pub fn next_seq(&self) -> Option<u64> {
        self.next_seq
    }

    pub fn counters(&self) -> TxCounters {
        self.counters
    }

    /// An upper bound of the protected length of a `packet_len`-byte packet.
    pub fn max_protected_len(&self, packet_len: usize) -> usize {
        packet_len + MAX_OVERHEAD
    }

    /// Protects the IP packet `packet` into `out` with the default IV (the sequence number for
    /// GCM, GMAC and ChaCha20-Poly1305; random for CBC). Returns the protected length.
    pub fn protect(&mut self, packet: &[u8], out: &mut [u8]) -> Result<usize, EspProtectError> {
        self.protect_with_iv(packet, out, None)
    }

    /// As [`protect`](Self::protect) with an explicit IV (8 bytes for the AEADs, 16 for CBC).
    /// The caller answers for its uniqueness (AEAD) or unpredictability (CBC).
    pub fn protect_with_iv(
        &mut self,
        packet: &[u8],
        out: &mut [u8],
        iv: Option<&[u8]>,
    ) -> Result<usize, EspProtectError> {
        let info = self.parse(packet)?;
        let len = info.total_len;
        if out.len() < len {
            return Err(EspProtectError::BufferTooSmall {
                needed: self.max_protected_len(len),
            });
        }
        // Copied once, to where the payload stays (unless `out` is too short for that, which
        // protect then reports as it always has).
        let at = match self.headroom() {
            room if out.len() >= room + len => room,
            _ => 0,
        };
        match (out.get_mut(at..at + len), packet.get(..len)) {
            (Some(dst), Some(src)) => dst.copy_from_slice(src),
            // `len` ≤ `out.len()` (checked above) and ≤ `packet.len()` (`parse` checked it).
            _ => {
                return Err(EspProtectError::BufferTooSmall {
                    needed: self.max_protected_len(len),
                });
            }
        }
        self.protect_in_place_at(out, at, len, iv)
    }

    /// The IP packet to protect: whole (transport mode: ESP goes inside it, so a fragment is
    /// refused), or any IP packet, fragments included (tunnel mode, RFC 4301 §7).
    fn parse(&self, pkt: &[u8]) -> Result<IpInfo, EspProtectError> {
        match self.mode {
            EspMode::Transport => ip::parse(pkt),
            EspMode::Tunnel { .. } => ip::parse_inner(pkt),
        }
        .map_err(EspProtectError::BadPacket)
    }

    /// Bytes to leave in front of a packet so that
    /// [`protect_in_place_at`](Self::protect_in_place_at) need not move its payload: the ESP
    /// header and the IV (transport mode), and the outer IP header (tunnel mode).
    pub fn headroom(&self) -> usize {
        let esp = HEADER_LEN + self.keys.alg.iv_len();
        match self.mode {
            EspMode::Transport => esp,
            EspMode::Tunnel { src, .. } => ip::outer_header_len(&src) + esp,
        }
    }

    /// Protects the IP packet in `buf[..len]` in place; `buf` needs room for the overhead
    /// ([`MAX_OVERHEAD`] always suffices). Returns the protected length.
    pub fn protect_in_place(
        &mut self,
        buf: &mut [u8],
        len: usize,
        iv: Option<&[u8]>,
    ) -> Result<usize, EspProtectError> {
        self.protect_in_place_at(buf, 0, len, iv)
    }

    /// Protects the IP packet in `buf[at..at + len]` in place and writes the protected packet
    /// to the front of `buf`; `buf` needs room for the overhead ([`MAX_OVERHEAD`] beyond
    /// `at + len` always suffices). Returns the protected length. With `at` =
    /// [`headroom`](Self::headroom) (a packet received or built behind that many spare bytes)
    /// the payload is encrypted where it lies and only the IP header moves (transport mode) or
    /// nothing does (tunnel mode); any other `at` moves the payload too.
    ///
    /// The same as [`EspTx::prepare_at`] and [`EspTx::seal`] one after the other, which is how
    /// it is done.
    pub fn protect_in_place_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        len: usize,
        iv: Option<&[u8]>,
    ) -> Result<usize, EspProtectError> {
        let s = self.prepare_at(buf, at, len, iv)?;
        self.seal(buf, &s)
    }

    /// The first of a protection's two stages, in the packets' order: the packet's sequence
    /// number taken (spent whatever happens next), the packet laid out as
    /// [`EspTx::protect_in_place_at`] lays it out (headers, IV, trailer), the packet counted.
    /// The second, [`EspTx::seal`], takes `&self`: the packets of a batch may be sealed in any
    /// order or on several threads at once, each under the number its preparation took.
    pub fn prepare_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        len: usize,
        iv: Option<&[u8]>,
    ) -> Result<EspSealing, EspProtectError> {
        let pkt = at
            .checked_add(len)
            .and_then(|end| buf.get(at..end))
            .ok_or(EspProtectError::BadPacket(IpError::Truncated))?;
        let info = self.parse(pkt)?;
        let alg = self.keys.alg;
        let iv_len = alg.iv_len();
        if let Some(v) = iv
            && v.len() != iv_len
        {
            return Err(EspProtectError::BadIvLength {
                expected: iv_len,
                got: v.len(),
            });
        }
        let len = info.total_len;
        // (bytes in front of ESP, payload start, payload length, next header)
        let (hdr_len, payload_start, payload_len, nh) = match self.mode {
            EspMode::Transport => (
                info.header_len,
                at + info.header_len,
                len - info.header_len,
                info.next,
            ),
            EspMode::Tunnel { src, .. } => {
                let nh = if info.version == 4 {
                    protocol::IPV4
                } else {
                    protocol::IPV6
                };
                (ip::outer_header_len(&src), at, len, nh)
            }
        };
        let esp = hdr_len;
        let data_start = esp + HEADER_LEN + iv_len;
        let total = esp + alg.esp_len(payload_len);
        let ct_end = total - ICV_LEN;
        let ct_len = ct_end - data_start;
        let outer_v4 = match self.mode {
            EspMode::Transport => info.version == 4,
            EspMode::Tunnel { src, .. } => src.is_ipv4(),
        };
        let limit = usize::from(u16::MAX) + if outer_v4 { 0 } else { ip::IPV6_HEADER_LEN };
        if total > limit {
            return Err(EspProtectError::TooLong);
        }
        if buf.len() < total {
            return Err(EspProtectError::BufferTooSmall { needed: total });
        }
        let seq = self.next_seq.ok_or(EspProtectError::SeqExhausted)?;
        // The number is spent whatever happens next: never reuse a nonce.
        self.next_seq = if seq >= self.keys.max_seq() {
            None
        } else {
            Some(seq + 1)
        };

        // Transport mode: the IP header to the front, rewritten, before the payload moves (a
        // payload moving towards the front may land on it). Tunnel mode: the inner packet's
        // traffic class, before the packet moves.
        let tclass = match self.mode {
            EspMode::Transport => {
                if info.version == 4 && hdr_len == ip::IPV4_HEADER_LEN {
                    // `total` ≤ 65535: checked above.
                    ip::move_ipv4_header(buf, at, 0, protocol::ESP, total as u16);
                } else {
                    if at != 0 {
                        buf.copy_within(at..at + hdr_len, 0);
                    }
                    put_byte(buf, info.nh_offset, protocol::ESP);
                    ip::set_total_len(buf, &info, total);
                }
                0
            }
            EspMode::Tunnel { .. } => ip::traffic_class(tail(buf, at), info.version),
        };
        if payload_start != data_start {
            buf.copy_within(payload_start..payload_start + payload_len, data_start);
        }
        if let EspMode::Tunnel { src, dst } = self.mode {
            ip::emit_outer(buf, &src, &dst, tclass, protocol::ESP, total);
        }
        let repr = wire::Repr {
            spi: self.keys.spi,
            seq: seq as u32,
        };
        repr.emit(&mut wire::Packet::new_unchecked(range_mut(
            buf,
            esp..esp + HEADER_LEN,
        )));
        // Inside `buf`: `buf.len() ≥ total` was checked above.
        let too_small = EspProtectError::BufferTooSmall { needed: total };
        let iv_field = buf.get_mut(esp + HEADER_LEN..data_start).ok_or(too_small)?;
        match iv {
            Some(v) => iv_field.copy_from_slice(v),
            None if alg.random_iv() => self.rng.fill(iv_field)?,
            // RFC 4106 §3.1 / RFC 7634 §2: the IV must be unique per key; the 64-bit sequence
            // number is, and is what most implementations send.
            None => match <&mut [u8; 8]>::try_from(&mut *iv_field) {
                Ok(field) => *field = seq.to_be_bytes(),
                Err(_) => iv_field
                    .iter_mut()
                    .zip(seq.to_be_bytes())
                    .for_each(|(b, s)| *b = s),
            },
        }
        wire::emit_trailer(
            buf.get_mut(data_start + payload_len..ct_end)
                .ok_or(too_small)?,
            nh,
        );
        // Counted here, where the number is spent: sealing a laid-out packet does not fail.
        self.counters.frames += 1;
        self.counters.bytes += total as u64;
        Ok(EspSealing {
            seq,
            esp,
            data_start,
            ct_len,
            total,
        })
    }

    /// The second stage: the packet [`EspTx::prepare_at`] laid out in `buf` encrypted and its
    /// ICV computed under its sequence number. Reads the keys only. Returns the protected
    /// length.
    pub fn seal(&self, buf: &mut [u8], s: &EspSealing) -> Result<usize, EspProtectError> {
        let EspSealing {
            seq,
            esp,
            data_start,
            ct_len,
            total,
        } = *s;
        let too_small = EspProtectError::BufferTooSmall { needed: total };
        if let Engine::CbcHmac { cipher, .. } = &self.keys.engine {
            let (head, data) = buf.split_at_mut(data_start);
            let iv: &[u8; BLOCK_LEN] = tail(head, esp + HEADER_LEN)
                .try_into()
                .map_err(|_| EspProtectError::Crypto(CryptoError::Internal))?;
            cipher.cbc_encrypt(iv, data.get_mut(..ct_len).ok_or(too_small)?)?;
        }
        self.keys
            .icv(buf, esp, total, seq, Dir::Seal)
            .map_err(|_| EspProtectError::Crypto(CryptoError::Internal))?;
        Ok(total)
    }
}

/// A packet [`EspTx::prepare_at`] laid out: what its [`EspTx::seal`] needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EspSealing {
    seq: u64,
    esp: usize,
    data_start: usize,
    ct_len: usize,
    total: usize,
}

impl EspSealing {
    /// The sequence number the packet carries.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("Keys")
            .field("alg", &self.alg)
            .field("spi", &self.spi)
            .field("esn", &self.esn)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for EspTx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EspTx")
            .field("keys", &self.keys)
            .field("mode", &self.mode)
            .field("next_seq", &self.next_seq)
            .field("counters", &self.counters)
            .finish()
    }
}

/// RFC 4303 Appendix A2.2: the full 64-bit sequence number of a packet carrying the low half
/// `seql`, given the highest authenticated number `t` and the window `w` (0, strictly
/// increasing, behaves as 1). Every true number in `t − w + 1 ..= t − w + 2^32` (as far as it
/// is ≥ 1) is inferred exactly (checked exhaustively near the 32-bit boundaries by
/// `crates/ivnsec-model`). `None` when the high half would fall below 0 or above 2^32 − 1.
//= https://www.rfc-editor.org/rfc/rfc4303#appendix-A.2.2
//# Case A: Tl >= (W - 1). If Seql >= Tl - W + 1 then Seqh = Th, else Seqh = Th + 1.
//# Case B: Tl < (W - 1). If Seql >= Tl - W + 1 (mod 2^32) then Seqh = Th - 1, else Seqh = Th.
pub fn esn_full_seq(t: u64, w: u64, seql: u32) -> Option<u64> {
    let (th, tl) = ((t >> 32) as u32, t as u32);
    let w1 = (w.max(1) - 1) as u32;
    let bottom = tl.wrapping_sub(w1);
    let seqh = if tl >= w1 {
        if seql >= bottom {
            Some(th)
        } else {
            th.checked_add(1)
        }
    } else if seql >= bottom {
        th.checked_sub(1)
    } else {
        Some(th)
    }?;
    Some((u64::from(seqh) << 32) | u64::from(seql))
}

#[cfg(test)]
#[path = "esp_tests.rs"]
mod spi_range_tests;
