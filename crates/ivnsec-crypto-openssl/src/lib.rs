//! The OpenSSL crypto provider: the system's libcrypto through the `openssl` crate.
//!
//! It is the code `ivnsec crypto-bench --vs-openssl` compares against (`openssl speed`), so a
//! profile run on it shows what is left of the gap once the cryptography is the same: the
//! framing, the dispatch and the locking below. On x86-64 it brings OpenSSL's AVX-512
//! ChaCha20 and Poly1305, which neither aws-lc-rs nor RustCrypto have; `--provider auto` takes it
//! where it measured fastest (the table in `ivnsec-crypto`).
//!
//! Covers AES-128/256-GCM, AES-128/256-CCM (12-byte nonce, 16-byte tag), ChaCha20-Poly1305 and
//! AES-128/192/256 as a block permutation, in CBC and in CTR. It has no MAC and no key wrap: the
//! `openssl` crate reaches HMAC and CMAC only through `EVP_DigestSignInit`, which schedules the
//! key again for every message (against the rule that key schedules are made once per SA), and
//! the other providers' HMAC measured faster anyway (docs/benchmarks.md). `supports` says so and
//! `--provider auto` takes those from the other providers.
//!
//! Per key, one `EVP_CIPHER_CTX` per direction holds the key schedule, made once; each frame
//! only sets the nonce (`EVP_EncryptInit_ex` with no cipher and no key, as `openssl speed -aead`
//! does). A context is mutable state, so each sits behind a `Mutex` (uncontended: one SA's frames
//! are protected by one thread). OpenSSL cleanses the key schedule when the context is freed
//! (`EVP_CIPHER_CTX_free` → `OPENSSL_clear_free`). No Rust allocation per frame; OpenSSL's
//! error queue may allocate when a call fails (a tag that does not verify under CCM).
#![forbid(unsafe_code)]

use std::sync::{Mutex, MutexGuard};

use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, BLOCK_LEN, CipherAlg, CipherKey, CryptoError,
    CryptoProvider, KeyFactory, MacAlg, MacKey, Primitive, SecureRandom, check_key_len,
};
use openssl::cipher::{Cipher as Evp, CipherRef};
use openssl::cipher_ctx::CipherCtx;

/// The OpenSSL provider.
pub static PROVIDER: CryptoProvider = CryptoProvider {
    name: "openssl",
    library: "OpenSSL libcrypto (system library, `openssl` crate)",
    keys: &Keys,
    rng: &OpensslRandom,
};

/// The version of the libcrypto linked at run time (e.g. `OpenSSL 3.0.19 27 Jan 2026`).
pub fn version() -> &'static str {
    openssl::version::version()
}

struct Keys;

fn aead_cipher(alg: AeadAlg) -> Option<&'static CipherRef> {
    match alg {
        AeadAlg::Aes128Gcm => Some(Evp::aes_128_gcm()),
        AeadAlg::Aes256Gcm => Some(Evp::aes_256_gcm()),
        AeadAlg::Aes128Ccm => Some(Evp::aes_128_ccm()),
        AeadAlg::Aes256Ccm => Some(Evp::aes_256_ccm()),
        AeadAlg::ChaCha20Poly1305 => Some(Evp::chacha20_poly1305()),
        _ => None,
    }
}

/// ECB (the raw permutation), CBC and CTR of an AES key size.
fn block_ciphers(
    alg: CipherAlg,
) -> Option<(&'static CipherRef, &'static CipherRef, &'static CipherRef)> {
    match alg {
        CipherAlg::Aes128 => Some((Evp::aes_128_ecb(), Evp::aes_128_cbc(), Evp::aes_128_ctr())),
        CipherAlg::Aes192 => Some((Evp::aes_192_ecb(), Evp::aes_192_cbc(), Evp::aes_192_ctr())),
        CipherAlg::Aes256 => Some((Evp::aes_256_ecb(), Evp::aes_256_cbc(), Evp::aes_256_ctr())),
        _ => None,
    }
}

/// OpenSSL takes lengths as `int`; anything longer is refused before the call (the `openssl`
/// crate would panic on it).
fn fits_int(n: usize) -> Result<(), CryptoError> {
    if i32::try_from(n).is_ok() {
        Ok(())
    } else {
        Err(CryptoError::BadInputLength)
    }
}

fn internal<E>(_: E) -> CryptoError {
    CryptoError::Internal
}

fn lock(ctx: &Mutex<CipherCtx>) -> Result<MutexGuard<'_, CipherCtx>, CryptoError> {
    // Poisoned only if a thread panicked inside a call; the context is then not trusted.
    ctx.lock().map_err(internal)
}

/// A context with `cipher` and `key` set for one direction (the key schedule is made here, once).
fn keyed(
    cipher: &CipherRef,
    key: &[u8],
    encrypt: bool,
    setup: impl FnOnce(&mut CipherCtx) -> Result<(), CryptoError>,
) -> Result<Mutex<CipherCtx>, CryptoError> {
    let mut c = CipherCtx::new().map_err(internal)?;
    if encrypt {
        c.encrypt_init(Some(cipher), None, None)
    } else {
        c.decrypt_init(Some(cipher), None, None)
    }
    .map_err(internal)?;
    setup(&mut c)?;
    if encrypt {
        c.encrypt_init(None, Some(key), None)
    } else {
        c.decrypt_init(None, Some(key), None)
    }
    .map_err(internal)?;
    Ok(Mutex::new(c))
}

impl KeyFactory for Keys {
    fn supports(&self, p: Primitive) -> bool {
        match p {
            Primitive::Aead(a) => aead_cipher(a).is_some(),
            Primitive::Cipher(c) => block_ciphers(c).is_some(),
            Primitive::Mac(_) | Primitive::KeyWrap(_) => false,
        }
    }

    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
        let cipher = aead_cipher(alg).ok_or(CryptoError::Unsupported(Primitive::Aead(alg)))?;
        check_key_len(alg.key_len(), key)?;
        let ccm = matches!(alg, AeadAlg::Aes128Ccm | AeadAlg::Aes256Ccm);
        // GCM and ChaCha20-Poly1305 take a 12-byte nonce by default; CCM's default is 7 bytes
        // (L = 8) with a 12-byte tag, so it is set to 12 (L = 3) with a 16-byte tag, as SP
        // 800-38C allows. Both go into CCM's key setup, so they come before the key.
        let setup = |c: &mut CipherCtx| {
            if ccm {
                c.set_iv_length(AEAD_NONCE_LEN).map_err(internal)?;
                c.set_tag_length(AEAD_TAG_LEN).map_err(internal)?;
            }
            Ok(())
        };
        Ok(Box::new(Aead {
            alg,
            ccm,
            seal: keyed(cipher, key, true, setup)?,
            open: keyed(cipher, key, false, setup)?,
        }))
    }

    fn mac(&self, alg: MacAlg, _key: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
        Err(CryptoError::Unsupported(Primitive::Mac(alg)))
    }

    fn cipher(&self, alg: CipherAlg, key: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
        let (ecb, cbc, ctr) =
            block_ciphers(alg).ok_or(CryptoError::Unsupported(Primitive::Cipher(alg)))?;
        check_key_len(alg.key_len(), key)?;
        // The data is always whole blocks here: no padding, so nothing is held back.
        let unpadded = |cipher, encrypt| {
            let ctx = keyed(cipher, key, encrypt, |_| Ok(()))?;
            lock(&ctx)?.set_padding(false);
            Ok::<_, CryptoError>(ctx)
        };
        Ok(Box::new(Cipher {
            alg,
            ecb: unpadded(ecb, true)?,
            cbc_enc: unpadded(cbc, true)?,
            cbc_dec: unpadded(cbc, false)?,
            ctr: keyed(ctr, key, true, |_| Ok(()))?,
        }))
    }
}

struct Aead {
    alg: AeadAlg,
    ccm: bool,
    seal: Mutex<CipherCtx>,
    open: Mutex<CipherCtx>,
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
        let len = in_out.len();
        fits_int(len)?;
        fits_int(aad.len())?;
        let mut c = lock(&self.seal)?;
        c.encrypt_init(None, None, Some(nonce)).map_err(internal)?;
        if self.ccm {
            // CCM needs the message length before the AAD.
            c.set_data_len(len).map_err(internal)?;
        }
        if !aad.is_empty() {
            c.cipher_update(aad, None).map_err(internal)?;
        }
        if c.cipher_update_inplace(in_out, len).map_err(internal)? != len {
            return Err(CryptoError::Internal);
        }
        // A stream mode: nothing is held back, so the final call writes nothing.
        c.cipher_final(&mut []).map_err(internal)?;
        c.tag(tag).map_err(internal)
    }

    fn open_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError> {
        let len = in_out.len();
        fits_int(len)?;
        fits_int(aad.len())?;
        let mut c = lock(&self.open)?;
        // The expected tag goes in first: CCM checks it inside the update call (and wants it
        // before the nonce), GCM and ChaCha20-Poly1305 in the final call.
        if self.ccm {
            c.set_tag(tag).map_err(internal)?;
        }
        c.decrypt_init(None, None, Some(nonce)).map_err(internal)?;
        if !self.ccm {
            c.set_tag(tag).map_err(internal)?;
        }
        if self.ccm {
            c.set_data_len(len).map_err(internal)?;
        }
        if !aad.is_empty() {
            c.cipher_update(aad, None).map_err(internal)?;
        }
        match c.cipher_update_inplace(in_out, len) {
            Ok(n) if n == len => {}
            Ok(_) => return Err(CryptoError::Internal),
            Err(_) if self.ccm => return Err(CryptoError::AuthFailed),
            Err(_) => return Err(CryptoError::Internal),
        }
        c.cipher_final(&mut [])
            .map(|_| ())
            .map_err(|_| CryptoError::AuthFailed)
    }
}

/// AES through ECB (one block), CBC and CTR contexts, each keyed once.
struct Cipher {
    alg: CipherAlg,
    ecb: Mutex<CipherCtx>,
    cbc_enc: Mutex<CipherCtx>,
    cbc_dec: Mutex<CipherCtx>,
    ctr: Mutex<CipherCtx>,
}

/// Bytes of CBC data moved through the stack per update call (see [`Cipher::cbc`]).
const CBC_CHUNK: usize = 1024;

impl Cipher {
    /// CBC in place. For a block mode the `openssl` crate wants one spare block in the output
    /// (it cannot know that padding is off), so the data goes through a stack buffer with that
    /// spare block, `CBC_CHUNK` bytes at a time; the chaining state stays in the context.
    fn cbc(
        ctx: &Mutex<CipherCtx>,
        encrypt: bool,
        iv: &[u8; BLOCK_LEN],
        buf: &mut [u8],
    ) -> Result<(), CryptoError> {
        if buf.len() % BLOCK_LEN != 0 {
            return Err(CryptoError::BadInputLength);
        }
        if buf.is_empty() {
            return Ok(());
        }
        let mut c = lock(ctx)?;
        if encrypt {
            c.encrypt_init(None, None, Some(iv))
        } else {
            c.decrypt_init(None, None, Some(iv))
        }
        .map_err(internal)?;
        let mut tmp = [0u8; CBC_CHUNK + BLOCK_LEN];
        for chunk in buf.chunks_mut(CBC_CHUNK) {
            let n = chunk.len();
            tmp[..n].copy_from_slice(chunk);
            if c.cipher_update_inplace(&mut tmp[..n + BLOCK_LEN], n)
                .map_err(internal)?
                != n
            {
                return Err(CryptoError::Internal);
            }
            chunk.copy_from_slice(&tmp[..n]);
        }
        tmp.fill(0);
        Ok(())
    }
}

impl CipherKey for Cipher {
    fn alg(&self) -> CipherAlg {
        self.alg
    }

    fn encrypt_block(&self, block: &mut [u8; BLOCK_LEN]) -> Result<(), CryptoError> {
        let mut c = lock(&self.ecb)?;
        let mut tmp = [0u8; 2 * BLOCK_LEN];
        tmp[..BLOCK_LEN].copy_from_slice(block);
        let n = c
            .cipher_update_inplace(&mut tmp, BLOCK_LEN)
            .map_err(internal)?;
        if n != BLOCK_LEN {
            return Err(CryptoError::Internal);
        }
        block.copy_from_slice(&tmp[..BLOCK_LEN]);
        Ok(())
    }

    fn cbc_encrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        Self::cbc(&self.cbc_enc, true, iv, buf)
    }

    fn cbc_decrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        Self::cbc(&self.cbc_dec, false, iv, buf)
    }

    fn ctr_apply(&self, counter: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        if buf.is_empty() {
            return Ok(());
        }
        fits_int(buf.len())?;
        let len = buf.len();
        let mut c = lock(&self.ctr)?;
        c.encrypt_init(None, None, Some(counter))
            .map_err(internal)?;
        if c.cipher_update_inplace(buf, len).map_err(internal)? != len {
            return Err(CryptoError::Internal);
        }
        Ok(())
    }
}

/// OpenSSL's DRBG (`RAND_bytes`).
struct OpensslRandom;

impl SecureRandom for OpensslRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        // `RAND_bytes` takes an `int` length.
        for chunk in buf.chunks_mut(1 << 20) {
            openssl::rand::rand_bytes(chunk).map_err(|_| CryptoError::Rng)?;
        }
        Ok(())
    }
}
