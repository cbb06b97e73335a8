//! The portable crypto provider: RustCrypto crates, `no_std`, every primitive ivnsec uses.
//!
//! Key schedules are computed when a key is made; per-frame calls clone the scheduled state (a
//! stack copy) and never allocate. AES round keys are zeroed on drop (the `aes` crate's
//! `zeroize` feature); AEAD keys likewise.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

mod ccm_lanes;

use aes::cipher::{
    BlockDecryptMut, BlockEncrypt, BlockEncryptMut, InnerIvInit, KeyInit, StreamCipher,
};
use aes::{Aes128, Aes192, Aes256};
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use alloc::boxed::Box;
use ccm::consts::{U12, U16};
use chacha20poly1305::ChaCha20Poly1305;
use hmac::{Hmac, Mac};
use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, AeadOp, BLOCK_LEN, CipherAlg, CipherKey,
    CryptoError, CryptoProvider, KeyFactory, KeyWrapKey, MAX_MAC_LEN, MacAlg, MacKey, Primitive,
    SecureRandom, check_key_len, check_wrap_lengths, open_each, seal_each,
};

type Aes128Ccm = ccm::Ccm<Aes128, U16, U12>;
type Aes256Ccm = ccm::Ccm<Aes256, U16, U12>;

/// The portable provider.
pub static PROVIDER: CryptoProvider = CryptoProvider {
    name: "portable",
    library: "RustCrypto",
    keys: &Keys,
    rng: &OsRandom,
};

struct Keys;

impl KeyFactory for Keys {
    fn supports(&self, _primitive: Primitive) -> bool {
        true
    }

    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
        check_key_len(alg.key_len(), key)?;
        let bad = |_| CryptoError::BadKeyLength {
            expected: alg.key_len(),
            got: key.len(),
        };
        let inner = match alg {
            AeadAlg::Aes128Gcm => {
                AeadInner::Aes128Gcm(Aes128Gcm::new_from_slice(key).map_err(bad)?)
            }
            AeadAlg::Aes256Gcm => {
                AeadInner::Aes256Gcm(Aes256Gcm::new_from_slice(key).map_err(bad)?)
            }
            AeadAlg::Aes128Ccm => {
                AeadInner::Aes128Ccm(Aes128Ccm::new_from_slice(key).map_err(bad)?)
            }
            AeadAlg::Aes256Ccm => {
                AeadInner::Aes256Ccm(Aes256Ccm::new_from_slice(key).map_err(bad)?)
            }
            AeadAlg::ChaCha20Poly1305 => {
                AeadInner::ChaCha(ChaCha20Poly1305::new_from_slice(key).map_err(bad)?)
            }
            _ => return Err(CryptoError::Unsupported(Primitive::Aead(alg))),
        };
        // CCM batches run on their own schedule of the key ([`ccm_lanes`]; the `ccm` crate's
        // is private).
        let lanes = match alg {
            AeadAlg::Aes128Ccm => Some(Lanes::Aes128(Box::new(
                Aes128::new_from_slice(key).map_err(bad)?,
            ))),
            AeadAlg::Aes256Ccm => Some(Lanes::Aes256(Box::new(
                Aes256::new_from_slice(key).map_err(bad)?,
            ))),
            _ => None,
        };
        Ok(Box::new(Aead { alg, inner, lanes }))
    }

    fn mac(&self, alg: MacAlg, key: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
        if let Some(n) = alg.fixed_key_len() {
            check_key_len(n, key)?;
        }
        fn h<M: KeyInit>(key: &[u8]) -> Result<M, CryptoError> {
            M::new_from_slice(key).map_err(|_| CryptoError::BadKeyLength {
                expected: 16,
                got: key.len(),
            })
        }
        let inner = match alg {
            MacAlg::HmacMd5 => MacInner::Md5(h(key)?),
            MacAlg::HmacSha1 => MacInner::Sha1(h(key)?),
            MacAlg::HmacSha224 => MacInner::Sha224(h(key)?),
            MacAlg::HmacSha256 => MacInner::Sha256(h(key)?),
            MacAlg::HmacSha384 => MacInner::Sha384(h(key)?),
            MacAlg::HmacSha512 => MacInner::Sha512(h(key)?),
            MacAlg::HmacSha3_256 => MacInner::Sha3_256(h(key)?),
            MacAlg::CmacAes128 => MacInner::CmacAes128(h(key)?),
            MacAlg::CmacAes256 => MacInner::CmacAes256(Box::new(h(key)?)),
            _ => return Err(CryptoError::Unsupported(Primitive::Mac(alg))),
        };
        Ok(Box::new(MacState { alg, inner }))
    }

    fn key_wrap(&self, alg: CipherAlg, kek: &[u8]) -> Result<Box<dyn KeyWrapKey>, CryptoError> {
        check_key_len(alg.key_len(), kek)?;
        let bad = |_| CryptoError::BadKeyLength {
            expected: alg.key_len(),
            got: kek.len(),
        };
        // `Kek` holds the scheduled AES key, zeroed on drop (the `aes` crate's `zeroize`).
        let inner = match alg {
            CipherAlg::Aes128 => Wrap::Aes128(aes_kw::KekAes128::try_from(kek).map_err(bad)?),
            CipherAlg::Aes192 => Wrap::Aes192(aes_kw::KekAes192::try_from(kek).map_err(bad)?),
            CipherAlg::Aes256 => Wrap::Aes256(aes_kw::KekAes256::try_from(kek).map_err(bad)?),
            _ => return Err(CryptoError::Unsupported(Primitive::KeyWrap(alg))),
        };
        Ok(Box::new(KeyWrap { alg, inner }))
    }

    fn cipher(&self, alg: CipherAlg, key: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
        check_key_len(alg.key_len(), key)?;
        let bad = |_| CryptoError::BadKeyLength {
            expected: alg.key_len(),
            got: key.len(),
        };
        let inner = match alg {
            CipherAlg::Aes128 => Block::Aes128(Aes128::new_from_slice(key).map_err(bad)?),
            CipherAlg::Aes192 => Block::Aes192(Aes192::new_from_slice(key).map_err(bad)?),
            CipherAlg::Aes256 => Block::Aes256(Aes256::new_from_slice(key).map_err(bad)?),
            _ => return Err(CryptoError::Unsupported(Primitive::Cipher(alg))),
        };
        Ok(Box::new(Cipher { alg, inner }))
    }
}

enum AeadInner {
    Aes128Gcm(Aes128Gcm),
    Aes256Gcm(Aes256Gcm),
    Aes128Ccm(Aes128Ccm),
    Aes256Ccm(Aes256Ccm),
    ChaCha(ChaCha20Poly1305),
}

/// The AES schedule multi-buffer CCM runs on (zeroed on drop, the `aes` crate's `zeroize`).
enum Lanes {
    Aes128(Box<Aes128>),
    Aes256(Box<Aes256>),
}

struct Aead {
    alg: AeadAlg,
    inner: AeadInner,
    /// CCM only.
    lanes: Option<Lanes>,
}

macro_rules! with_aead {
    ($inner:expr, $k:ident => $body:expr) => {
        match $inner {
            AeadInner::Aes128Gcm($k) => $body,
            AeadInner::Aes256Gcm($k) => $body,
            AeadInner::Aes128Ccm($k) => $body,
            AeadInner::Aes256Ccm($k) => $body,
            AeadInner::ChaCha($k) => $body,
        }
    };
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
        let t = with_aead!(&self.inner, k => k
            .encrypt_in_place_detached(nonce.into(), aad, in_out)
            .map_err(|_| CryptoError::BadInputLength)?);
        tag.copy_from_slice(&t);
        Ok(())
    }

    fn open_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError> {
        with_aead!(&self.inner, k => k
            .decrypt_in_place_detached(nonce.into(), aad, in_out, tag.into())
            .map_err(|_| CryptoError::AuthFailed))
    }

    fn seal_batch(&self, ops: &mut [AeadOp<'_>]) {
        match &self.lanes {
            Some(Lanes::Aes128(c)) if ops.len() > 1 => ccm_lanes::seal_batch(&**c, ops),
            Some(Lanes::Aes256(c)) if ops.len() > 1 => ccm_lanes::seal_batch(&**c, ops),
            _ => seal_each(self, ops),
        }
    }

    fn open_batch(&self, ops: &mut [AeadOp<'_>]) {
        match &self.lanes {
            Some(Lanes::Aes128(c)) if ops.len() > 1 => ccm_lanes::open_batch(&**c, ops),
            Some(Lanes::Aes256(c)) if ops.len() > 1 => ccm_lanes::open_batch(&**c, ops),
            _ => open_each(self, ops),
        }
    }

    fn multi_buffer(&self) -> bool {
        self.lanes.is_some()
    }
}

enum MacInner {
    Md5(Hmac<md5::Md5>),
    Sha1(Hmac<sha1::Sha1>),
    Sha224(Hmac<sha2::Sha224>),
    Sha256(Hmac<sha2::Sha256>),
    Sha384(Hmac<sha2::Sha384>),
    Sha512(Hmac<sha2::Sha512>),
    Sha3_256(Hmac<sha3::Sha3_256>),
    CmacAes128(cmac::Cmac<Aes128>),
    /// Boxed: its AES-256 schedule would make every other MAC state as large.
    CmacAes256(Box<cmac::Cmac<Aes256>>),
}

struct MacState {
    alg: MacAlg,
    inner: MacInner,
}

/// Clones the keyed state (inner/outer pads already absorbed), feeds the parts, finalizes.
fn run_mac<M: Mac + Clone>(m: &M, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize {
    let mut m = m.clone();
    for p in parts {
        m.update(p);
    }
    let t = m.finalize().into_bytes();
    out[..t.len()].copy_from_slice(&t);
    t.len()
}

impl MacKey for MacState {
    fn alg(&self) -> MacAlg {
        self.alg
    }

    fn compute(&self, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize {
        match &self.inner {
            MacInner::Md5(m) => run_mac(m, parts, out),
            MacInner::Sha1(m) => run_mac(m, parts, out),
            MacInner::Sha224(m) => run_mac(m, parts, out),
            MacInner::Sha256(m) => run_mac(m, parts, out),
            MacInner::Sha384(m) => run_mac(m, parts, out),
            MacInner::Sha512(m) => run_mac(m, parts, out),
            MacInner::Sha3_256(m) => run_mac(m, parts, out),
            MacInner::CmacAes128(m) => run_mac(m, parts, out),
            MacInner::CmacAes256(m) => run_mac(m.as_ref(), parts, out),
        }
    }
}

enum Block {
    Aes128(Aes128),
    Aes192(Aes192),
    Aes256(Aes256),
}

struct Cipher {
    alg: CipherAlg,
    inner: Block,
}

macro_rules! with_block {
    ($inner:expr, $k:ident => $body:expr) => {
        match $inner {
            Block::Aes128($k) => $body,
            Block::Aes192($k) => $body,
            Block::Aes256($k) => $body,
        }
    };
}

fn cbc_enc<C>(k: &C, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError>
where
    C: BlockEncryptMut
        + aes::cipher::BlockCipher
        + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16>
        + Clone,
{
    if buf.len() % BLOCK_LEN != 0 {
        return Err(CryptoError::BadInputLength);
    }
    let mut e = cbc::Encryptor::<C>::inner_iv_init(k.clone(), iv.into());
    let (blocks, _) = aes::cipher::inout::InOutBuf::from(buf).into_chunks();
    e.encrypt_blocks_inout_mut(blocks);
    Ok(())
}

fn cbc_dec<C>(k: &C, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError>
where
    C: BlockDecryptMut
        + aes::cipher::BlockCipher
        + aes::cipher::BlockSizeUser<BlockSize = aes::cipher::consts::U16>
        + Clone,
{
    if buf.len() % BLOCK_LEN != 0 {
        return Err(CryptoError::BadInputLength);
    }
    let mut d = cbc::Decryptor::<C>::inner_iv_init(k.clone(), iv.into());
    let (blocks, _) = aes::cipher::inout::InOutBuf::from(buf).into_chunks();
    d.decrypt_blocks_inout_mut(blocks);
    Ok(())
}

impl CipherKey for Cipher {
    fn alg(&self) -> CipherAlg {
        self.alg
    }

    fn encrypt_block(&self, block: &mut [u8; BLOCK_LEN]) -> Result<(), CryptoError> {
        with_block!(&self.inner, k => k.encrypt_block(block.into()));
        Ok(())
    }

    fn cbc_encrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        with_block!(&self.inner, k => cbc_enc(k, iv, buf))
    }

    fn cbc_decrypt(&self, iv: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        with_block!(&self.inner, k => cbc_dec(k, iv, buf))
    }

    fn ctr_apply(&self, counter: &[u8; BLOCK_LEN], buf: &mut [u8]) -> Result<(), CryptoError> {
        with_block!(&self.inner, k => {
            let mut c = ctr::Ctr128BE::from_core(ctr::CtrCore::inner_iv_init(k.clone(), counter.into()));
            c.try_apply_keystream(buf).map_err(|_| CryptoError::BadInputLength)
        })
    }
}

enum Wrap {
    Aes128(aes_kw::KekAes128),
    Aes192(aes_kw::KekAes192),
    Aes256(aes_kw::KekAes256),
}

struct KeyWrap {
    alg: CipherAlg,
    inner: Wrap,
}

macro_rules! with_kek {
    ($inner:expr, $k:ident => $body:expr) => {
        match $inner {
            Wrap::Aes128($k) => $body,
            Wrap::Aes192($k) => $body,
            Wrap::Aes256($k) => $body,
        }
    };
}

impl KeyWrapKey for KeyWrap {
    fn alg(&self) -> CipherAlg {
        self.alg
    }

    fn wrap(&self, plaintext: &[u8], out: &mut [u8]) -> Result<usize, CryptoError> {
        let n = check_wrap_lengths(plaintext.len(), out.len(), true)?;
        with_kek!(&self.inner, k => k.wrap(plaintext, &mut out[..n]))
            .map_err(|_| CryptoError::BadInputLength)?;
        Ok(n)
    }

    fn unwrap(&self, wrapped: &[u8], out: &mut [u8]) -> Result<usize, CryptoError> {
        let n = check_wrap_lengths(wrapped.len(), out.len(), false)?;
        with_kek!(&self.inner, k => k.unwrap(wrapped, &mut out[..n])).map_err(|e| match e {
            aes_kw::Error::IntegrityCheckFailed => CryptoError::AuthFailed,
            _ => CryptoError::BadInputLength,
        })?;
        Ok(n)
    }
}

struct OsRandom;

impl SecureRandom for OsRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        getrandom::fill(buf).map_err(|_| CryptoError::Rng)
    }
}
