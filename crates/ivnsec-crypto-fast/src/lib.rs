//! The fast crypto provider: aws-lc-rs (AWS-LC's assembly for AES-NI, CLMUL, AVX2, SHA-NI).
//!
//! Covers AES-128/256-GCM, ChaCha20-Poly1305, AES-128/192/256 in CBC and CTR, HMAC with SHA-1 and
//! SHA-2, CMAC-AES-128/256 and AES Key Wrap with 128- and 256-bit KEKs. It has no AES-CCM,
//! HMAC-MD5, HMAC-SHA3 or key wrap under a 192-bit KEK: `supports` says so and `--provider auto`
//! falls back to the portable provider for those.
//!
//! AWS-LC cleanses key schedules when its key objects are freed.
#![forbid(unsafe_code)]

use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::cipher::{
    self, DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey,
};
use aws_lc_rs::iv::FixedLength;
use aws_lc_rs::key_wrap::{self, KeyWrap as _};
use aws_lc_rs::{cmac, hmac};
use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, BLOCK_LEN, CipherAlg, CipherKey, CryptoError,
    CryptoProvider, KeyFactory, KeyWrapKey, MAX_MAC_LEN, MacAlg, MacKey, Primitive, SecureRandom,
    check_key_len, check_wrap_lengths,
};
use zeroize::Zeroizing;

/// The fast provider.
pub static PROVIDER: CryptoProvider = CryptoProvider {
    name: "fast",
    library: "aws-lc-rs (AWS-LC)",
    keys: &Keys,
    rng: &SystemRandom,
};

struct Keys;

fn aead_alg(alg: AeadAlg) -> Option<&'static aead::Algorithm> {
    match alg {
        AeadAlg::Aes128Gcm => Some(&aead::AES_128_GCM),
        AeadAlg::Aes256Gcm => Some(&aead::AES_256_GCM),
        AeadAlg::ChaCha20Poly1305 => Some(&aead::CHACHA20_POLY1305),
        _ => None,
    }
}

fn hmac_alg(alg: MacAlg) -> Option<hmac::Algorithm> {
    match alg {
        MacAlg::HmacSha1 => Some(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY),
        MacAlg::HmacSha224 => Some(hmac::HMAC_SHA224),
        MacAlg::HmacSha256 => Some(hmac::HMAC_SHA256),
        MacAlg::HmacSha384 => Some(hmac::HMAC_SHA384),
        MacAlg::HmacSha512 => Some(hmac::HMAC_SHA512),
        _ => None,
    }
}

fn cmac_alg(alg: MacAlg) -> Option<cmac::Algorithm> {
    match alg {
        MacAlg::CmacAes128 => Some(cmac::AES_128),
        MacAlg::CmacAes256 => Some(cmac::AES_256),
        _ => None,
    }
}

fn wrap_alg(alg: CipherAlg) -> Option<&'static key_wrap::AesBlockCipher> {
    match alg {
        CipherAlg::Aes128 => Some(&key_wrap::AES_128),
        CipherAlg::Aes256 => Some(&key_wrap::AES_256),
        _ => None,
    }
}

fn cipher_alg(alg: CipherAlg) -> Option<&'static cipher::Algorithm> {
    match alg {
        CipherAlg::Aes128 => Some(&cipher::AES_128),
        CipherAlg::Aes192 => Some(&cipher::AES_192),
        CipherAlg::Aes256 => Some(&cipher::AES_256),
        _ => None,
    }
}

impl KeyFactory for Keys {
    fn supports(&self, p: Primitive) -> bool {
        match p {
            Primitive::Aead(a) => aead_alg(a).is_some(),
            Primitive::Mac(m) => cmac_alg(m).is_some() || hmac_alg(m).is_some(),
            Primitive::Cipher(c) => cipher_alg(c).is_some(),
            Primitive::KeyWrap(c) => wrap_alg(c).is_some(),
        }
    }

    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
        let a = aead_alg(alg).ok_or(CryptoError::Unsupported(Primitive::Aead(alg)))?;
        check_key_len(alg.key_len(), key)?;
        let k = UnboundKey::new(a, key).map_err(|_| CryptoError::Internal)?;
        Ok(Box::new(Aead {
            alg,
            key: LessSafeKey::new(k),
        }))
    }

    fn mac(&self, alg: MacAlg, key: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
        if let Some(c) = cmac_alg(alg) {
            check_key_len(alg.fixed_key_len().unwrap_or(16), key)?;
            let k = cmac::Key::new(c, key).map_err(|_| CryptoError::Internal)?;
            return Ok(Box::new(Cmac { alg, key: k }));
        }
        let a = hmac_alg(alg).ok_or(CryptoError::Unsupported(Primitive::Mac(alg)))?;
        Ok(Box::new(Hmac {
            alg,
            key: hmac::Key::new(a, key),
        }))
    }

    fn key_wrap(&self, alg: CipherAlg, kek: &[u8]) -> Result<Box<dyn KeyWrapKey>, CryptoError> {
        let cipher = wrap_alg(alg).ok_or(CryptoError::Unsupported(Primitive::KeyWrap(alg)))?;
        check_key_len(alg.key_len(), kek)?;
        Ok(Box::new(Kek {
            alg,
            cipher,
            key: Zeroizing::new(kek.to_vec()),
        }))
    }

    fn cipher(&self, alg: CipherAlg, key: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
        let a = cipher_alg(alg).ok_or(CryptoError::Unsupported(Primitive::Cipher(alg)))?;
        check_key_len(alg.key_len(), key)?;
        let unbound = || UnboundCipherKey::new(a, key).map_err(|_| CryptoError::Internal);
        Ok(Box::new(Cipher {
            alg,
            ctr: EncryptingKey::ctr(unbound()?).map_err(|_| CryptoError::Internal)?,
            cbc_enc: EncryptingKey::cbc(unbound()?).map_err(|_| CryptoError::Internal)?,
            cbc_dec: DecryptingKey::cbc(unbound()?).map_err(|_| CryptoError::Internal)?,
        }))
    }
}

struct Aead {
    alg: AeadAlg,
    key: LessSafeKey,
}

impl AeadKey for Aead {
    fn alg(&self) -> AeadAlg {
        self.alg
    }

    fn seal_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError> {
        let t = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                in_out,
            )
            .map_err(|_| CryptoError::BadInputLength)?;
        tag.copy_from_slice(t.as_ref());
        Ok(())
    }

    fn open_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError> {
        self.key
            .open_in_place_separate_tag(
                Nonce::assume_unique_for_key(*nonce),
                Aad::from(aad),
                tag,
                in_out,
            )
            .map(|_| ())
            .map_err(|_| CryptoError::AuthFailed)
    }
}

/// HMAC with a precomputed key (inner and outer pads absorbed once).
struct Hmac {
    alg: MacAlg,
    key: hmac::Key,
}

impl MacKey for Hmac {
    fn alg(&self) -> MacAlg {
        self.alg
    }

    fn compute(&self, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize {
        let mut c = hmac::Context::with_key(&self.key);
        for p in parts {
            c.update(p);
        }
        let t = c.sign();
        let t = t.as_ref();
        out[..t.len()].copy_from_slice(t);
        t.len()
    }
}

/// CMAC-AES-128/256 with its subkeys derived once.
struct Cmac {
    alg: MacAlg,
    key: cmac::Key,
}

impl MacKey for Cmac {
    fn alg(&self) -> MacAlg {
        self.alg
    }

    fn compute(&self, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize {
        let mut c = cmac::Context::with_key(&self.key);
        // CMAC_Update only fails on a broken context; an all-zero output then fails every
        // comparison, which is the safe direction.
        let ok = parts.iter().all(|p| c.update(p).is_ok());
        match c.sign() {
            Ok(t) if ok => {
                let t = t.as_ref();
                out[..t.len()].copy_from_slice(t);
                t.len()
            }
            _ => {
                out[..16].fill(0);
                16
            }
        }
    }
}

struct Cipher {
    alg: CipherAlg,
    ctr: EncryptingKey,
    cbc_enc: EncryptingKey,
    cbc_dec: DecryptingKey,
}

impl CipherKey for Cipher {
    fn alg(&self) -> CipherAlg {
        self.alg
    }

    fn encrypt_block(&self, block: &mut [u8; BLOCK_LEN]) -> Result<(), CryptoError> {
        // E_K(B) is the first CTR keystream block for counter B: XOR it onto zeros.
        let counter = *block;
        block.fill(0);
        self.ctr_apply(&counter, block)
    }

    fn cbc_encrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        if buf.len() % BLOCK_LEN != 0 {
            return Err(CryptoError::BadInputLength);
        }
        if buf.is_empty() {
            return Ok(());
        }
        self.cbc_enc
            .less_safe_encrypt(buf, EncryptionContext::Iv128(FixedLength::from(iv)))
            .map(|_| ())
            .map_err(|_| CryptoError::Internal)
    }

    fn cbc_decrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        if buf.len() % BLOCK_LEN != 0 {
            return Err(CryptoError::BadInputLength);
        }
        if buf.is_empty() {
            return Ok(());
        }
        self.cbc_dec
            .decrypt(buf, DecryptionContext::Iv128(FixedLength::from(iv)))
            .map(|_| ())
            .map_err(|_| CryptoError::Internal)
    }

    fn ctr_apply(&self, counter: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        if buf.is_empty() {
            return Ok(());
        }
        self.ctr
            .less_safe_encrypt(buf, EncryptionContext::Iv128(FixedLength::from(counter)))
            .map(|_| ())
            .map_err(|_| CryptoError::Internal)
    }
}

/// An AES key-encryption key. aws-lc-rs' `AesKek` is consumed by each wrap or unwrap, so the key
/// bytes are kept (zeroed on drop, as AesKek zeroes its own copy) and a KEK is made per call:
/// key wrap runs once per distributed SAK, never per frame.
struct Kek {
    alg: CipherAlg,
    cipher: &'static key_wrap::AesBlockCipher,
    key: Zeroizing<Vec<u8>>,
}

impl Kek {
    fn kek(&self) -> Result<key_wrap::AesKek, CryptoError> {
        key_wrap::AesKek::new(self.cipher, &self.key).map_err(|_| CryptoError::Internal)
    }
}

impl KeyWrapKey for Kek {
    fn alg(&self) -> CipherAlg {
        self.alg
    }

    fn wrap(&self, plaintext: &[u8], out: &mut [u8]) -> Result<usize, CryptoError> {
        let n = check_wrap_lengths(plaintext.len(), out.len(), true)?;
        let written = self
            .kek()?
            .wrap(plaintext, &mut out[..n])
            .map_err(|_| CryptoError::BadInputLength)?
            .len();
        if written == n {
            Ok(n)
        } else {
            Err(CryptoError::Internal)
        }
    }

    fn unwrap(&self, wrapped: &[u8], out: &mut [u8]) -> Result<usize, CryptoError> {
        let n = check_wrap_lengths(wrapped.len(), out.len(), false)?;
        // Lengths are checked above, so a failure here is the integrity check.
        let written = self
            .kek()?
            .unwrap(wrapped, &mut out[..n])
            .map_err(|_| CryptoError::AuthFailed)?
            .len();
        if written == n {
            Ok(n)
        } else {
            Err(CryptoError::Internal)
        }
    }
}

struct SystemRandom;

impl SecureRandom for SystemRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        use aws_lc_rs::rand::SecureRandom as _;
        aws_lc_rs::rand::SystemRandom::new()
            .fill(buf)
            .map_err(|_| CryptoError::Rng)
    }
}
