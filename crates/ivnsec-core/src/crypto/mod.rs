//! Crypto provider traits.
//!
//! The core never names a crypto library. A [`CryptoProvider`] is a plain struct of `&'static dyn`
//! parts (the rustls shape): a key factory that schedules keys once per security association, and
//! a random source. Provider crates (`ivnsec-crypto-portable`, `ivnsec-crypto-fast`) fill it in;
//! every API test runs once per provider.
//!
//! All per-frame operations work in place on caller buffers and never allocate.

use alloc::boxed::Box;
use core::fmt;

mod choice;
pub mod kat;

pub use choice::{NoProvider, ProviderChoice, has_all, select};

/// Nonce length of every AEAD used here (GCM, CCM with a 12-byte nonce, ChaCha20-Poly1305).
pub const AEAD_NONCE_LEN: usize = 12;
/// Tag length of every AEAD used here.
pub const AEAD_TAG_LEN: usize = 16;
/// AES block length.
pub const BLOCK_LEN: usize = 16;
/// Largest MAC output (HMAC-SHA-512).
pub const MAX_MAC_LEN: usize = 64;

/// An authenticated-encryption algorithm with a 12-byte nonce and a 16-byte tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AeadAlg {
    Aes128Gcm,
    Aes256Gcm,
    /// AES-CCM (SP 800-38C / RFC 3610) with a 12-byte nonce and a 16-byte tag.
    Aes128Ccm,
    Aes256Ccm,
    /// RFC 8439.
    ChaCha20Poly1305,
}

impl AeadAlg {
    pub const ALL: [AeadAlg; 5] = [
        AeadAlg::Aes128Gcm,
        AeadAlg::Aes256Gcm,
        AeadAlg::Aes128Ccm,
        AeadAlg::Aes256Ccm,
        AeadAlg::ChaCha20Poly1305,
    ];

    pub const fn key_len(self) -> usize {
        match self {
            AeadAlg::Aes128Gcm | AeadAlg::Aes128Ccm => 16,
            AeadAlg::Aes256Gcm | AeadAlg::Aes256Ccm | AeadAlg::ChaCha20Poly1305 => 32,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            AeadAlg::Aes128Gcm => "aes128-gcm",
            AeadAlg::Aes256Gcm => "aes256-gcm",
            AeadAlg::Aes128Ccm => "aes128-ccm",
            AeadAlg::Aes256Ccm => "aes256-ccm",
            AeadAlg::ChaCha20Poly1305 => "chacha20-poly1305",
        }
    }
}

/// A message authentication code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MacAlg {
    HmacMd5,
    HmacSha1,
    HmacSha224,
    HmacSha256,
    HmacSha384,
    HmacSha512,
    HmacSha3_256,
    /// CMAC with AES-128 (SP 800-38B, RFC 4493); the key is exactly 16 bytes.
    CmacAes128,
    /// CMAC with AES-256 (SP 800-38B); the key is exactly 32 bytes. The PRF of the IEEE 802.1X
    /// KDF for 256-bit CAKs (MKA).
    CmacAes256,
}

impl MacAlg {
    pub const ALL: [MacAlg; 9] = [
        MacAlg::HmacMd5,
        MacAlg::HmacSha1,
        MacAlg::HmacSha224,
        MacAlg::HmacSha256,
        MacAlg::HmacSha384,
        MacAlg::HmacSha512,
        MacAlg::HmacSha3_256,
        MacAlg::CmacAes128,
        MacAlg::CmacAes256,
    ];

    /// Full output length in bytes.
    pub const fn output_len(self) -> usize {
        match self {
            MacAlg::HmacMd5 | MacAlg::CmacAes128 | MacAlg::CmacAes256 => 16,
            MacAlg::HmacSha1 => 20,
            MacAlg::HmacSha224 => 28,
            MacAlg::HmacSha256 | MacAlg::HmacSha3_256 => 32,
            MacAlg::HmacSha384 => 48,
            MacAlg::HmacSha512 => 64,
        }
    }

    /// The key length the algorithm requires, or `None` for HMAC (any length ≥ 1).
    pub const fn fixed_key_len(self) -> Option<usize> {
        match self {
            MacAlg::CmacAes128 => Some(16),
            MacAlg::CmacAes256 => Some(32),
            _ => None,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            MacAlg::HmacMd5 => "hmac-md5",
            MacAlg::HmacSha1 => "hmac-sha1",
            MacAlg::HmacSha224 => "hmac-sha224",
            MacAlg::HmacSha256 => "hmac-sha256",
            MacAlg::HmacSha384 => "hmac-sha384",
            MacAlg::HmacSha512 => "hmac-sha512",
            MacAlg::HmacSha3_256 => "hmac-sha3-256",
            MacAlg::CmacAes128 => "cmac-aes128",
            MacAlg::CmacAes256 => "cmac-aes256",
        }
    }
}

/// A block cipher (AES) used through CBC, CTR or as a single-block permutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CipherAlg {
    Aes128,
    Aes192,
    Aes256,
}

impl CipherAlg {
    pub const ALL: [CipherAlg; 3] = [CipherAlg::Aes128, CipherAlg::Aes192, CipherAlg::Aes256];

    pub const fn key_len(self) -> usize {
        match self {
            CipherAlg::Aes128 => 16,
            CipherAlg::Aes192 => 24,
            CipherAlg::Aes256 => 32,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            CipherAlg::Aes128 => "aes128",
            CipherAlg::Aes192 => "aes192",
            CipherAlg::Aes256 => "aes256",
        }
    }
}

/// What a provider may or may not implement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Primitive {
    Aead(AeadAlg),
    Mac(MacAlg),
    Cipher(CipherAlg),
    /// AES Key Wrap (RFC 3394, SP 800-38F KW) with a key-encryption key of this AES size.
    KeyWrap(CipherAlg),
}

/// Errors from a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CryptoError {
    /// The provider does not implement this primitive.
    Unsupported(Primitive),
    /// The key has the wrong length.
    BadKeyLength { expected: usize, got: usize },
    /// An input has a length the mode cannot take (e.g. CBC data not a multiple of 16).
    BadInputLength,
    /// The tag did not verify.
    AuthFailed,
    /// The random source failed.
    Rng,
    /// The underlying library reported an unexpected failure.
    Internal,
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptoError::Unsupported(p) => {
                write!(f, "primitive {p:?} not supported by this provider")
            }
            CryptoError::BadKeyLength { expected, got } => {
                write!(f, "key must be {expected} bytes, got {got}")
            }
            CryptoError::BadInputLength => f.write_str("input length not acceptable for this mode"),
            CryptoError::AuthFailed => f.write_str("authentication failed"),
            CryptoError::Rng => f.write_str("random source failed"),
            CryptoError::Internal => f.write_str("crypto library failure"),
        }
    }
}

impl core::error::Error for CryptoError {}

/// A scheduled AEAD key.
pub trait AeadKey: Send + Sync {
    fn alg(&self) -> AeadAlg;
    /// Encrypts `in_out` in place and writes the tag.
    fn seal_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError>;
    /// Verifies the tag and decrypts `in_out` in place. On error the content of `in_out` is
    /// unspecified and must be discarded.
    fn open_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError>;

    /// Seals every message of `ops` (each op's `tag` is written, its `result` set). The default
    /// seals them one by one; a key that [`multi_buffer`](Self::multi_buffer)s interleaves them.
    fn seal_batch(&self, ops: &mut [AeadOp<'_>]) {
        seal_each(self, ops);
    }

    /// Opens every message of `ops` (each op's `result` set; a failed op's `in_out` is
    /// unspecified and must be discarded, as with [`open_in_place`](Self::open_in_place)).
    fn open_batch(&self, ops: &mut [AeadOp<'_>]) {
        open_each(self, ops);
    }

    /// True where the `*_batch` calls work on several messages at once (multi-buffer), so a
    /// batch costs less than its messages one by one.
    fn multi_buffer(&self) -> bool {
        false
    }
}

/// Seals `ops` one by one with `key` (the default [`AeadKey::seal_batch`], and the fallback of
/// keys that batch only some of the time).
pub fn seal_each<K: AeadKey + ?Sized>(key: &K, ops: &mut [AeadOp<'_>]) {
    for op in ops {
        op.result = key.seal_in_place(&op.nonce, op.aad, op.in_out, &mut op.tag);
    }
}

/// Opens `ops` one by one with `key` (see [`seal_each`]).
pub fn open_each<K: AeadKey + ?Sized>(key: &K, ops: &mut [AeadOp<'_>]) {
    for op in ops {
        op.result = key.open_in_place(&op.nonce, op.aad, op.in_out, &op.tag);
    }
}

/// One message of a batch ([`AeadKey::seal_batch`], [`AeadKey::open_batch`]).
pub struct AeadOp<'a> {
    pub nonce: [u8; AEAD_NONCE_LEN],
    pub aad: &'a [u8],
    pub in_out: &'a mut [u8],
    /// Open: the received tag. Seal: the computed tag, written by the call.
    pub tag: [u8; AEAD_TAG_LEN],
    /// Written by the call.
    pub result: Result<(), CryptoError>,
}

/// Lengths only: the buffer holds plaintext.
impl fmt::Debug for AeadOp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AeadOp")
            .field("aad_len", &self.aad.len())
            .field("len", &self.in_out.len())
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

impl<'a> AeadOp<'a> {
    /// An op not yet run (`result` is `Internal` until a batch call sets it).
    pub fn new(
        nonce: [u8; AEAD_NONCE_LEN],
        aad: &'a [u8],
        in_out: &'a mut [u8],
        tag: [u8; AEAD_TAG_LEN],
    ) -> AeadOp<'a> {
        AeadOp {
            nonce,
            aad,
            in_out,
            tag,
            result: Err(CryptoError::Internal),
        }
    }
}

/// A scheduled MAC key.
pub trait MacKey: Send + Sync {
    fn alg(&self) -> MacAlg;
    /// MAC over the concatenation of `parts`; writes the full output to the front of `out` and
    /// returns its length (`alg().output_len()`).
    fn compute(&self, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize;
}

/// A scheduled block-cipher key.
pub trait CipherKey: Send + Sync {
    fn alg(&self) -> CipherAlg;
    /// Encrypts one block in place (the raw permutation, as ECB on one block).
    fn encrypt_block(&self, block: &mut [u8; BLOCK_LEN]) -> Result<(), CryptoError>;
    /// CBC encryption in place; `buf.len()` must be a multiple of 16 (no padding here).
    fn cbc_encrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError>;
    /// CBC decryption in place; `buf.len()` must be a multiple of 16.
    fn cbc_decrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError>;
    /// XORs the CTR keystream starting at `counter` (whole 128-bit block incremented big-endian,
    /// SP 800-38A §B.1) into `buf`. Encryption and decryption are the same operation.
    fn ctr_apply(&self, counter: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError>;
}

/// Length of the integrity check block AES Key Wrap prepends (RFC 3394 §2.2.1).
pub const KEY_WRAP_OVERHEAD: usize = 8;

/// A key-encryption key for AES Key Wrap (RFC 3394 with its default initial value
/// `A6A6A6A6A6A6A6A6`; SP 800-38F "KW").
pub trait KeyWrapKey: Send + Sync {
    fn alg(&self) -> CipherAlg;
    /// Wraps `plaintext` (a multiple of 8 bytes, at least 16) into the front of `out` and returns
    /// the length written, `plaintext.len() + 8`. `BadInputLength` for a plaintext or output of a
    /// length the mode cannot take.
    fn wrap(&self, plaintext: &[u8], out: &mut [u8]) -> Result<usize, CryptoError>;
    /// Unwraps `wrapped` (a multiple of 8 bytes, at least 24) into the front of `out` and returns
    /// the length written, `wrapped.len() - 8`. `AuthFailed` when the integrity check fails (the
    /// content of `out` is then unspecified and must be discarded).
    fn unwrap(&self, wrapped: &[u8], out: &mut [u8]) -> Result<usize, CryptoError>;
}

/// Checks the lengths of a key wrap call; used by providers.
pub fn check_wrap_lengths(input: usize, out: usize, wrap: bool) -> Result<usize, CryptoError> {
    let ok_input = input % 8 == 0 && input >= if wrap { 16 } else { 24 };
    let n = if wrap {
        input + KEY_WRAP_OVERHEAD
    } else {
        input.saturating_sub(KEY_WRAP_OVERHEAD)
    };
    if ok_input && out >= n {
        Ok(n)
    } else {
        Err(CryptoError::BadInputLength)
    }
}

/// Makes scheduled keys. Called once per security association, never per frame.
pub trait KeyFactory: Send + Sync {
    fn supports(&self, primitive: Primitive) -> bool;
    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError>;
    fn mac(&self, alg: MacAlg, key: &[u8]) -> Result<Box<dyn MacKey>, CryptoError>;
    fn cipher(&self, alg: CipherAlg, key: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError>;
    /// An AES Key Wrap key-encryption key. Providers without key wrap keep the default.
    fn key_wrap(&self, alg: CipherAlg, kek: &[u8]) -> Result<Box<dyn KeyWrapKey>, CryptoError> {
        let _ = kek;
        Err(CryptoError::Unsupported(Primitive::KeyWrap(alg)))
    }
}

/// A cryptographically secure random source.
pub trait SecureRandom: Send + Sync {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError>;
}

/// A borrowed source is a source (e.g. a provider's `&'static dyn SecureRandom`).
impl<R: SecureRandom + ?Sized> SecureRandom for &R {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        (**self).fill(buf)
    }
}

/// A crypto provider: a name and its parts.
pub struct CryptoProvider {
    /// Stable name used on the command line and in reports (`portable`, `fast`).
    pub name: &'static str,
    /// The library behind it, for reports (e.g. `RustCrypto`, `aws-lc-rs 1.x`).
    pub library: &'static str,
    pub keys: &'static dyn KeyFactory,
    pub rng: &'static dyn SecureRandom,
}

impl CryptoProvider {
    pub fn supports(&self, primitive: Primitive) -> bool {
        self.keys.supports(primitive)
    }
}

impl fmt::Debug for CryptoProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CryptoProvider")
            .field("name", &self.name)
            .field("library", &self.library)
            .finish_non_exhaustive()
    }
}

/// Checks a key length; used by providers.
pub fn check_key_len(expected: usize, key: &[u8]) -> Result<(), CryptoError> {
    if key.len() == expected {
        Ok(())
    } else {
        Err(CryptoError::BadKeyLength {
            expected,
            got: key.len(),
        })
    }
}
