//! The fast crypto provider: aws-lc-rs (AWS-LC's assembly for AES-NI, CLMUL, AVX2, SHA-NI).
//!
//! Covers AES-128/256-GCM, ChaCha20-Poly1305, AES-128/192/256 in CBC and CTR, HMAC with SHA-1 and
//! SHA-2, and CMAC-AES-128. It has no AES-CCM, HMAC-MD5 or HMAC-SHA3: `supports` says so and
//! `--provider auto` falls back to the portable provider for those suites.
//!
//! AWS-LC cleanses key schedules when its key objects are freed.
#![forbid(unsafe_code)]

use aws_lc_rs::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_lc_rs::cipher::{
    self, DecryptingKey, DecryptionContext, EncryptingKey, EncryptionContext, UnboundCipherKey,
};
use aws_lc_rs::iv::FixedLength;
use aws_lc_rs::{cmac, hmac};
use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, BLOCK_LEN, CipherAlg, CipherKey, CryptoError,
    CryptoProvider, KeyFactory, MAX_MAC_LEN, MacAlg, MacKey, Primitive, SecureRandom,
    check_key_len,
};

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
            Primitive::Mac(m) => m == MacAlg::CmacAes128 || hmac_alg(m).is_some(),
            Primitive::Cipher(c) => cipher_alg(c).is_some(),
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
        if alg == MacAlg::CmacAes128 {
            check_key_len(16, key)?;
            let k = cmac::Key::new(cmac::AES_128, key).map_err(|_| CryptoError::Internal)?;
            return Ok(Box::new(Cmac { key: k }));
        }
        let a = hmac_alg(alg).ok_or(CryptoError::Unsupported(Primitive::Mac(alg)))?;
        Ok(Box::new(Hmac {
            alg,
            key: hmac::Key::new(a, key),
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

/// CMAC-AES-128 with its subkeys derived once.
struct Cmac {
    key: cmac::Key,
}

impl MacKey for Cmac {
    fn alg(&self) -> MacAlg {
        MacAlg::CmacAes128
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

struct SystemRandom;

impl SecureRandom for SystemRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        use aws_lc_rs::rand::SecureRandom as _;
        aws_lc_rs::rand::SystemRandom::new()
            .fill(buf)
            .map_err(|_| CryptoError::Rng)
    }
}
