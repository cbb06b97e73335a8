//! `EspTx::sealer`: what a data plane holds to seal, on another thread, the packets an `EspTx`
//! prepared. For every ESP transform, a packet prepared and sealed through the sealer is the
//! packet `EspTx::seal` makes (same sequence number, same IV), and the peer's `EspRx` accepts it;
//! a sealer outlives nothing it should not: it seals with the keys of the SA that prepared.

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};

const P: &CryptoProvider = &ivnsec_crypto_portable::PROVIDER;

/// IPv4 ‖ UDP ‖ 4 octets.
const PACKET: [u8; 32] = [
    0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0x30, 0x3a, 0,
    12, 0, 0, 0xde, 0xad, 0xbe, 0xef,
];

#[test]
fn the_sealer_seals_as_the_sa_does_for_every_transform() {
    for name in [
        "esp-aes128-gcm",
        "esp-aes256-gcm",
        "esp-chacha20-poly1305",
        "esp-aes128-gmac",
        "esp-aes256-gmac",
        "esp-null-hmac-sha256",
        "esp-aes128-cbc-hmac-sha256",
        "esp-aes256-cbc-hmac-sha256",
    ] {
        let alg = EspAlg::from_name(name).unwrap();
        let key = vec![0x5a; alg.key_len()];
        let auth_key = vec![0xa5; alg.auth_key_len().unwrap_or(0)];
        let params = EspParams {
            alg,
            spi: 0x1234,
            key: &key,
            auth_key: &auth_key,
            esn: false,
        };
        let iv = vec![0x11; alg.iv_len()];
        let mut by_sa = EspTx::new(P, &params, EspMode::Transport, 7).unwrap();
        let mut by_sealer = EspTx::new(P, &params, EspMode::Transport, 7).unwrap();
        let room = by_sa.headroom();
        let mut a = vec![0u8; room + PACKET.len() + 64];
        let mut b = a.clone();
        a[room..room + PACKET.len()].copy_from_slice(&PACKET);
        b[room..room + PACKET.len()].copy_from_slice(&PACKET);
        let sa = by_sa
            .prepare_at(&mut a, room, PACKET.len(), Some(&iv))
            .unwrap();
        let sb = by_sealer
            .prepare_at(&mut b, room, PACKET.len(), Some(&iv))
            .unwrap();
        let sealer = by_sealer.sealer();
        // The SA itself may be gone by the time the sealer seals.
        drop(by_sealer);
        let n = by_sa.seal(&mut a, &sa).unwrap();
        let m = sealer.seal(&mut b, &sb).unwrap();
        assert_eq!((n, &a[..n]), (m, &b[..m]), "{name}");
        let mut rx = EspRx::new(P, &params, 64).unwrap();
        let mut out = vec![0u8; n];
        let got = rx.verify(&b[..m], &mut out).unwrap();
        // Transport mode: the receiver puts the IPv4 header checksum back (PACKET has 0 there).
        assert_eq!(got, PACKET.len(), "{name}");
        assert_eq!(
            (&out[..10], &out[12..got]),
            (&PACKET[..10], &PACKET[12..]),
            "{name}"
        );
        assert!(
            !format!("{sealer:?}").contains("5a, 5a"),
            "{name}: {sealer:?}"
        );
    }
}
