//! IVN-AE receive path on arbitrary frames. The first input byte selects the profile (low nibble),
//! the replay window (bits 4-5) and the crypto provider (bit 7); the rest is the frame. The frame
//! goes through an `IvnAeReceiver` holding SAs for key ids 1 and 2 with fixed keys; the SA of key
//! id 2 also accepts IVN-AE version 1 frames (`set_accept_v1`), the one of key id 1 does not.
//!
//! Invariants: verify never panics; an accepted version 2 frame re-protects to exactly the same
//! bytes with the same SA parameters and sequence number; a version 1 frame is accepted only by
//! key id 2; the same bytes a second time are a replay.
#![no_main]

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::ivnae::{IvnAeReceiver, IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::suite::IvnAeProfile;
use ivnsec_core::wire::ivnae::{Frame, VERSION, VERSION_1};
use libfuzzer_sys::fuzz_target;

/// One profile per family, with the HMAC tag truncation to use (`None` = full length).
const PROFILES: &[(&str, Option<usize>)] = &[
    ("plain", None),
    ("crc32", None),
    ("aes128-gcm/conf", None),
    ("aes128-gcm/auth", None),
    ("aes128-ccm/conf", None),
    ("chacha20-poly1305/conf", None),
    ("chacha20-poly1305/auth", None),
    ("hmac-sha256", Some(16)),
    ("aes128-cbc-hmac-sha256", None),
    ("aes256-ctr-hmac-sha1", Some(12)),
];

const WINDOWS: [u32; 4] = [0, 1, 32, 1024];
const KEY_IDS: [u8; 2] = [1, 2];
const IV: [u8; 12] = [0xa5, 0x5a, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

/// Cipher key for `key_id`, as long as the profile needs (empty when it needs none).
fn key(profile: IvnAeProfile, key_id: u8) -> Vec<u8> {
    let len = profile.suite.key_len().unwrap_or(0);
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7) ^ key_id)
        .collect()
}

fn mac_key(profile: IvnAeProfile, key_id: u8) -> Vec<u8> {
    if profile.suite.needs_mac_key() {
        (0..64u8).map(|i| i ^ 0x36 ^ key_id).collect()
    } else {
        Vec::new()
    }
}

fn params<'a>(
    profile: IvnAeProfile,
    tag_len: Option<usize>,
    key_id: u8,
    key: &'a [u8],
    mac: &'a [u8],
) -> SaParams<'a> {
    let mut p = SaParams::new(profile, key, mac);
    p.iv = IV;
    p.iv[11] ^= key_id;
    p.key_id = key_id;
    p.tag_len = tag_len;
    p
}

fn has_suite(provider: &CryptoProvider, profile: IvnAeProfile) -> bool {
    let (prims, n) = profile.suite.primitives();
    prims[..n].iter().flatten().all(|p| provider.supports(*p))
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let (name, tag_len) = PROFILES[usize::from(sel & 0x0f) % PROFILES.len()];
    let profile: IvnAeProfile = name.parse().expect("fixed profile name");
    let window = WINDOWS[usize::from(sel >> 4) & 3];
    let provider: &CryptoProvider =
        if sel & 0x80 != 0 && has_suite(&ivnsec_crypto_fast::PROVIDER, profile) {
            &ivnsec_crypto_fast::PROVIDER
        } else {
            &ivnsec_crypto_portable::PROVIDER
        };

    let mut rx = IvnAeReceiver::new();
    for id in KEY_IDS {
        let (k, m) = (key(profile, id), mac_key(profile, id));
        let mut sa = IvnAeRx::new(provider, &params(profile, tag_len, id, &k, &m), window)
            .expect("fixed SA");
        sa.set_accept_v1(id == 2);
        rx.install(sa);
    }

    let mut buf = frame.to_vec();
    let Ok(range) = rx.verify_in_place(&mut buf) else {
        return;
    };
    assert!(range.end <= buf.len());
    let plain = &buf[range];
    // Accepted: a well-formed header for one of our key ids.
    let f = Frame::new_checked(frame).expect("accepted frame parses");
    let (key_id, seq) = (f.key_id(), f.seq());
    assert!(KEY_IDS.contains(&key_id));
    assert!(seq >= 1);
    assert!(f.version() == VERSION || (f.version() == VERSION_1 && key_id == 2));

    // The same frame again is a replay.
    let mut again = frame.to_vec();
    assert_eq!(
        rx.verify_in_place(&mut again),
        Err(DropReason::ReplayDuplicate)
    );
    if f.version() == VERSION_1 {
        return; // ivnsec writes version 2 only
    }

    // The same parameters and sequence number protect the recovered frame to the same bytes.
    let (k, m) = (key(profile, key_id), mac_key(profile, key_id));
    let mut tx =
        IvnAeTx::new(provider, &params(profile, tag_len, key_id, &k, &m), seq).expect("fixed SA");
    let mut out = vec![0u8; tx.protected_len(plain.len())];
    let n = tx.protect(plain, &mut out).expect("re-protect");
    assert_eq!(
        &out[..n],
        frame,
        "accepted frame does not re-protect to the same bytes"
    );
});
