//! The key hierarchy of MKA (IEEE Std 802.1X-2020 6.2.1, 9.3, 9.8).
//!
//! ```text
//! CAK (16 or 32 octets, pre-shared)            CKN (1..32 octets, names the CAK)
//!  ├─ ICK = KDF(CAK, "IEEE8021 ICK", CKN[0..16], |CAK|)   ICV of every MKPDU (AES-CMAC)
//!  ├─ KEK = KDF(CAK, "IEEE8021 KEK", CKN[0..16], |CAK|)   AES Key Wrap of distributed SAKs
//!  └─ SAK = KDF(CAK, "IEEE8021 SAK", KS-nonce ‖ MI list ‖ KN, |SAK|)   (the key server's)
//! ```
//!
//! `CKN[0..16]` is the first 16 octets of the CKN, zero-padded when it is shorter.
//!
//! The KDF is the counter-mode construction of clause 6.2.1 (after SP 800-108) with AES-CMAC
//! of the key's size as PRF:
//!
//! ```text
//! KDF(K, Label, Context, L) = PRF(K, [1]_8 ‖ Label ‖ 0x00 ‖ Context ‖ [L]_16)
//!                           ‖ PRF(K, [2]_8 ‖ …) ‖ …   truncated to L bits
//! ```
//!
//! The ICV (clause 9.4.1) is AES-CMAC under the ICK over the destination and source MAC
//! addresses, the EtherType and the EAPOL PDU up to (not including) the ICV, exactly the octets
//! [`Frame::signed`](crate::wire::mkpdu::Frame::signed) returns.
//!
//! Known answers: IEEE Std 802.1X-2020 Annex G (KDF, KEK, ICK, SAK; in the conformance crate,
//! once per provider) and an independent Python implementation written from the standard
//! (`tests/interop/mka_ref.py`).

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use crate::crypto::{
    CipherAlg, CryptoError, CryptoProvider, KEY_WRAP_OVERHEAD, KeyWrapKey, MAX_MAC_LEN, MacAlg,
    MacKey, Primitive,
};
use crate::wire::mkpdu::{ICV_LEN, MAX_CKN_LEN, Mi};

/// Label of the ICK derivation.
pub const LABEL_ICK: &[u8] = b"IEEE8021 ICK";
/// Label of the KEK derivation.
pub const LABEL_KEK: &[u8] = b"IEEE8021 KEK";
/// Label of the SAK derivation.
pub const LABEL_SAK: &[u8] = b"IEEE8021 SAK";

/// Key bytes zeroed on drop.
pub type SecretBytes = Zeroizing<Vec<u8>>;

/// Why a key could not be derived or used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyError {
    /// A CAK (or KDF key) must be 16 or 32 octets.
    BadCakLength(usize),
    /// A CKN must be 1 to 32 octets.
    BadCknLength(usize),
    /// An output length the KDF cannot produce (0, or more than 255 blocks / 65535 bits).
    BadOutputLength(usize),
    /// The provider failed or lacks a primitive.
    Crypto(CryptoError),
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::BadCakLength(n) => write!(f, "a CAK must be 16 or 32 bytes, got {n}"),
            KeyError::BadCknLength(n) => write!(f, "a CKN must be 1 to 32 bytes, got {n}"),
            KeyError::BadOutputLength(n) => write!(f, "the KDF cannot produce {n} bytes"),
            KeyError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for KeyError {}

impl From<CryptoError> for KeyError {
    fn from(e: CryptoError) -> Self {
        KeyError::Crypto(e)
    }
}

/// The CMAC (the KDF's PRF) for a 16- or 32-octet key.
pub fn cmac_alg(key_len: usize) -> Result<MacAlg, KeyError> {
    match key_len {
        16 => Ok(MacAlg::CmacAes128),
        32 => Ok(MacAlg::CmacAes256),
        n => Err(KeyError::BadCakLength(n)),
    }
}

/// The AES size of a 16- or 32-octet key.
pub fn aes_alg(key_len: usize) -> Result<CipherAlg, KeyError> {
    match key_len {
        16 => Ok(CipherAlg::Aes128),
        32 => Ok(CipherAlg::Aes256),
        n => Err(KeyError::BadCakLength(n)),
    }
}

/// The primitives MKA needs from a provider for a CAK of `cak_len` octets (CMAC for the KDF
/// and ICV, AES Key Wrap under a KEK of the same size), for the caller's provider selection.
pub fn primitives(cak_len: usize) -> Result<[Primitive; 2], KeyError> {
    Ok([
        Primitive::Mac(cmac_alg(cak_len)?),
        Primitive::KeyWrap(aes_alg(cak_len)?),
    ])
}

/// The KDF of clause 6.2.1 with an already scheduled PRF: fills `out` (L = 8·`out.len()` bits).
fn kdf_with(
    prf: &dyn MacKey,
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Result<(), KeyError> {
    let bits = out.len() * 8;
    if out.is_empty() || bits > usize::from(u16::MAX) {
        return Err(KeyError::BadOutputLength(out.len()));
    }
    let l = (bits as u16).to_be_bytes();
    let total = out.len();
    let mut block = Zeroizing::new([0u8; MAX_MAC_LEN]);
    for (i, chunk) in out.chunks_mut(16).enumerate() {
        // The counter is 8 bits: at most 255 blocks.
        let counter = u8::try_from(i + 1).map_err(|_| KeyError::BadOutputLength(total))?;
        let n = prf.compute(&[&[counter], label, &[0], context, &l], &mut block);
        if n != 16 {
            return Err(KeyError::Crypto(CryptoError::Internal));
        }
        let src = block
            .get(..chunk.len())
            .ok_or(KeyError::Crypto(CryptoError::Internal))?;
        chunk.copy_from_slice(src);
    }
    Ok(())
}

/// KDF(`key`, `label`, `context`, 8·`out.len()`) of clause 6.2.1; `key` is 16 or 32 octets.
pub fn kdf(
    provider: &CryptoProvider,
    key: &[u8],
    label: &[u8],
    context: &[u8],
    out: &mut [u8],
) -> Result<(), KeyError> {
    let prf = provider.keys.mac(cmac_alg(key.len())?, key)?;
    kdf_with(prf.as_ref(), label, context, out)
}

/// The KDF context of the ICK and KEK: the first 16 octets of the CKN, zero-padded.
pub fn ckn_context(ckn: &[u8]) -> Result<[u8; 16], KeyError> {
    if ckn.is_empty() || ckn.len() > MAX_CKN_LEN {
        return Err(KeyError::BadCknLength(ckn.len()));
    }
    let mut c = [0u8; 16];
    for (d, s) in c.iter_mut().zip(ckn) {
        *d = *s;
    }
    Ok(c)
}

fn derive(
    provider: &CryptoProvider,
    cak: &[u8],
    ckn: &[u8],
    label: &[u8],
) -> Result<SecretBytes, KeyError> {
    let ctx = ckn_context(ckn)?;
    let mut out = Zeroizing::new(vec![0u8; cak.len()]);
    kdf(provider, cak, label, &ctx, &mut out)?;
    Ok(out)
}

/// ICK = KDF(CAK, "IEEE8021 ICK", CKN[0..16], |CAK|) (clause 9.3.1).
pub fn ick(provider: &CryptoProvider, cak: &[u8], ckn: &[u8]) -> Result<SecretBytes, KeyError> {
    derive(provider, cak, ckn, LABEL_ICK)
}

/// KEK = KDF(CAK, "IEEE8021 KEK", CKN[0..16], |CAK|) (clause 9.3.2).
pub fn kek(provider: &CryptoProvider, cak: &[u8], ckn: &[u8]) -> Result<SecretBytes, KeyError> {
    derive(provider, cak, ckn, LABEL_KEK)
}

/// The context of the SAK derivation: KS-nonce ‖ the MIs of the key server and its live peers
/// ‖ KN (clause 9.8.1).
fn sak_context(ks_nonce: &[u8], mis: &[Mi], kn: u32) -> Zeroizing<Vec<u8>> {
    let mut ctx = Zeroizing::new(Vec::with_capacity(ks_nonce.len() + 12 * mis.len() + 4));
    ctx.extend_from_slice(ks_nonce);
    for mi in mis {
        ctx.extend_from_slice(mi);
    }
    ctx.extend_from_slice(&kn.to_be_bytes());
    ctx
}

/// SAK = KDF(CAK, "IEEE8021 SAK", KS-nonce ‖ MI list ‖ KN, 8·`sak_len`) (clause 9.8.1).
pub fn sak(
    provider: &CryptoProvider,
    cak: &[u8],
    ks_nonce: &[u8],
    mis: &[Mi],
    kn: u32,
    sak_len: usize,
) -> Result<SecretBytes, KeyError> {
    let mut out = Zeroizing::new(vec![0u8; sak_len]);
    kdf(
        provider,
        cak,
        LABEL_SAK,
        &sak_context(ks_nonce, mis, kn),
        &mut out,
    )?;
    Ok(out)
}

/// The keys of one CA, derived once from its CAK and CKN: the scheduled ICK (AES-CMAC), the
/// scheduled KEK (AES Key Wrap) and the CAK itself (for the SAK derivation), zeroed on drop.
pub struct CaKeys {
    cak: SecretBytes,
    prf: Box<dyn MacKey>,
    ick: Box<dyn MacKey>,
    kek: Box<dyn KeyWrapKey>,
}

impl CaKeys {
    /// Derives and schedules the ICK and KEK.
    pub fn new(provider: &CryptoProvider, cak: &[u8], ckn: &[u8]) -> Result<CaKeys, KeyError> {
        let alg = cmac_alg(cak.len())?;
        let ick_bytes = ick(provider, cak, ckn)?;
        let kek_bytes = kek(provider, cak, ckn)?;
        Ok(CaKeys {
            cak: Zeroizing::new(cak.to_vec()),
            prf: provider.keys.mac(alg, cak)?,
            ick: provider.keys.mac(alg, &ick_bytes)?,
            kek: provider.keys.key_wrap(aes_alg(cak.len())?, &kek_bytes)?,
        })
    }

    /// CAK length in octets (16 or 32).
    pub fn cak_len(&self) -> usize {
        self.cak.len()
    }

    /// The ICV of an MKPDU: AES-CMAC(ICK, `signed`), where `signed` is DA ‖ SA ‖ EtherType ‖
    /// EAPOL header ‖ MKPDU up to the ICV.
    pub fn icv(&self, signed: &[u8]) -> [u8; ICV_LEN] {
        let mut out = [0u8; MAX_MAC_LEN];
        self.ick.compute(&[signed], &mut out);
        let mut icv = [0u8; ICV_LEN];
        icv.copy_from_slice(&out[..ICV_LEN]);
        icv
    }

    /// Checks an ICV in constant time.
    pub fn verify_icv(&self, signed: &[u8], icv: &[u8]) -> bool {
        icv.len() == ICV_LEN && bool::from(self.icv(signed).ct_eq(icv))
    }

    /// Wraps `sak` under the KEK; returns the 24 or 40 octets of the Distributed SAK.
    pub fn wrap_sak(&self, sak: &[u8]) -> Result<Vec<u8>, KeyError> {
        let mut out = vec![0u8; sak.len() + KEY_WRAP_OVERHEAD];
        let n = self.kek.wrap(sak, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// Unwraps a distributed SAK; `AuthFailed` when the KEK does not match.
    pub fn unwrap_sak(&self, wrapped: &[u8]) -> Result<SecretBytes, KeyError> {
        let mut out = Zeroizing::new(vec![0u8; wrapped.len().saturating_sub(KEY_WRAP_OVERHEAD)]);
        let n = self.kek.unwrap(wrapped, &mut out)?;
        out.truncate(n);
        Ok(out)
    }

    /// SAK = KDF(CAK, "IEEE8021 SAK", `ks_nonce` ‖ `mis` ‖ KN, 8·`sak_len`).
    pub fn derive_sak(
        &self,
        ks_nonce: &[u8],
        mis: &[Mi],
        kn: u32,
        sak_len: usize,
    ) -> Result<SecretBytes, KeyError> {
        let mut out = Zeroizing::new(vec![0u8; sak_len]);
        kdf_with(
            self.prf.as_ref(),
            LABEL_SAK,
            &sak_context(ks_nonce, mis, kn),
            &mut out,
        )?;
        Ok(out)
    }
}

impl Drop for CaKeys {
    fn drop(&mut self) {
        self.cak.zeroize();
    }
}

impl fmt::Debug for CaKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("CaKeys")
            .field("cak_len", &self.cak.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ckn_context_pads_and_truncates() {
        assert_eq!(ckn_context(&[1, 2]).unwrap()[..3], [1, 2, 0]);
        let long = [9u8; 32];
        assert_eq!(ckn_context(&long).unwrap(), [9u8; 16]);
        assert_eq!(ckn_context(&[]), Err(KeyError::BadCknLength(0)));
        assert_eq!(ckn_context(&[0; 33]), Err(KeyError::BadCknLength(33)));
    }

    #[test]
    fn only_128_and_256_bit_keys() {
        assert_eq!(cmac_alg(24), Err(KeyError::BadCakLength(24)));
        assert!(primitives(16).is_ok() && primitives(32).is_ok());
        assert!(primitives(0).is_err());
    }
}
