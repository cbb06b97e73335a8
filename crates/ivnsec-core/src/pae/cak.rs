//! The CAK and CKN of an EAP exchange (IEEE Std 802.1X-2020 6.2.2), for MKA with the
//! authenticator after a successful EAP-TLS.
//!
//! ```text
//! CAK = KDF(Key, "IEEE8021 EAP CAK", mac1 ‖ mac2, CAKlength)
//! CKN = KDF(Key, "IEEE8021 EAP CKN", EAP Session-Id ‖ mac1 ‖ mac2, 128)
//! ```
//!
//! - `KDF` is the AES-CMAC counter-mode KDF of 6.2.1 ([`crate::mka::kdf::kdf`]).
//! - `Key` is the first 16 octets of the MSK for a 128-bit CAK, the first 32 octets for a
//!   256-bit CAK (the CMAC's key size follows the CAK's). wpa_supplicant and hostapd
//!   (`wpas_kay.c`, `ieee802_1x_key.c`: `msk->len = DEFAULT_KEY_LEN` = 16, CAK 16 octets) use
//!   the 128-bit case.
//! - `mac1` is the numerically lower of the supplicant's and the authenticator's MAC addresses
//!   (compared as 6 octets, most significant first), `mac2` the higher (wpa_supplicant's
//!   `joint_two_mac`).
//! - The CKN is 16 octets in both cases.
//!
//! Known answers: `tests/interop/pae_cak_ref.py`, an independent implementation written from
//! the standard's text; its vectors are checked in the conformance crate, once per provider.

use alloc::vec;
use alloc::vec::Vec;

use zeroize::Zeroizing;

use crate::crypto::CryptoProvider;
use crate::mka::kdf::{KeyError, SecretBytes, kdf};

/// Label of the CAK derivation.
pub const LABEL_EAP_CAK: &[u8] = b"IEEE8021 EAP CAK";
/// Label of the CKN derivation.
pub const LABEL_EAP_CKN: &[u8] = b"IEEE8021 EAP CKN";
/// Length of the derived CKN.
pub const CKN_LEN: usize = 16;

/// `mac1 ‖ mac2`: the lower MAC address first.
pub fn joint_macs(a: [u8; 6], b: [u8; 6]) -> [u8; 12] {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let mut out = [0u8; 12];
    let (l, h) = out.split_at_mut(6);
    l.copy_from_slice(&lo);
    h.copy_from_slice(&hi);
    out
}

/// CAK (`cak_len` = 16 or 32 octets) and the 16-octet CKN from the MSK and the EAP Session-Id
/// of an exchange between `supplicant` and `authenticator`.
pub fn derive(
    provider: &CryptoProvider,
    msk: &[u8; 64],
    session_id: &[u8],
    supplicant: [u8; 6],
    authenticator: [u8; 6],
    cak_len: usize,
) -> Result<(SecretBytes, Vec<u8>), KeyError> {
    if cak_len != 16 && cak_len != 32 {
        return Err(KeyError::BadCakLength(cak_len));
    }
    let key = msk.get(..cak_len).ok_or(KeyError::BadCakLength(cak_len))?;
    let macs = joint_macs(supplicant, authenticator);
    let mut cak = Zeroizing::new(vec![0u8; cak_len]);
    kdf(provider, key, LABEL_EAP_CAK, &macs, &mut cak)?;
    let mut ctx = Vec::with_capacity(session_id.len() + macs.len());
    ctx.extend_from_slice(session_id);
    ctx.extend_from_slice(&macs);
    let mut ckn = vec![0u8; CKN_LEN];
    kdf(provider, key, LABEL_EAP_CKN, &ctx, &mut ckn)?;
    Ok((cak, ckn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_mac_first() {
        let a = [2, 0, 0, 0, 0, 9];
        let b = [2, 0, 0, 0, 1, 0];
        assert_eq!(joint_macs(a, b), joint_macs(b, a));
        assert_eq!(&joint_macs(b, a)[..6], &a);
    }
}
