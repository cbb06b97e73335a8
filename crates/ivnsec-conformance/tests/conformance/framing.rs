//! Protect from any offset (`protect_in_place_at`): a unit given behind the SA's headroom — as
//! the channel, the crypto benchmark and the MACsec TAP data plane give it, so that protect
//! encrypts the payload where it lies — or at any other offset protects to the bytes the
//! standards publish (MACsec Annex C, the published ESP packets), and to the same bytes as
//! protect at offset 0 where nothing is published (IVN-AE, IPv6 and IPv4 options, tunnel over
//! IPv6). The offsets below, at and above the headroom make the payload move towards the back,
//! stay, and move towards the front over the bytes it came from. Once per provider.

use std::net::IpAddr;

use ivnsec_conformance::packets::{ipv4, ipv6, udp_payload};
use ivnsec_conformance::vectors::esp::VECTORS;
use ivnsec_conformance::vectors::macsec::{KATS, salt};
use ivnsec_conformance::{providers, unhex};
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::ProtectError;
use ivnsec_core::sa::esp::{
    EspAlg, EspMode, EspParams, EspProtectError, EspRx, EspTx, MAX_OVERHEAD,
};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::MacsecTx;
use ivnsec_core::sa::secy::{SaKey, SecY, SecyConfig};
use ivnsec_core::suite::IvnAeProfile;
use ivnsec_core::wire::ip::{self, IpError};
use ivnsec_core::wire::macsec::Sci;

/// Offsets to try for an SA with `headroom` bytes of it: 0, around the headroom, and beyond.
fn offsets(headroom: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        headroom.saturating_sub(1),
        headroom,
        headroom + 1,
        headroom + 23,
    ];
    v.sort_unstable();
    v.dedup();
    v
}

/// `unit` at `at` in a buffer of `at + unit + room` bytes whose other bytes are 0xA5 (what was
/// in front of the unit must not leak into the result).
fn placed(unit: &[u8], at: usize, room: usize) -> Vec<u8> {
    let mut buf = vec![0xA5; at + unit.len() + room];
    buf[at..at + unit.len()].copy_from_slice(unit);
    buf
}

#[test]
fn macsec_annex_c_from_every_offset() {
    for k in KATS {
        for p in providers(k.suite) {
            let key = unhex(k.key);
            let (plain, want) = (k.plain(), k.protected());
            let headroom = MacsecTx::new(p, &k.keys(&key), k.tx_opts(), k.pn)
                .unwrap()
                .headroom();
            // IEEE 802.1AE §9.3: the SecTAG (8 octets, 16 with the SCI) is what the frame gains
            // in front of the secure data; the 16-octet ICV goes behind it.
            assert_eq!(headroom, want.len() - plain.len() - 16, "{}", k.name);
            for at in offsets(headroom) {
                let mut tx = MacsecTx::new(p, &k.keys(&key), k.tx_opts(), k.pn).unwrap();
                let mut buf = placed(&plain, at, 32);
                let n = tx.protect_in_place_at(&mut buf, at, plain.len()).unwrap();
                assert_eq!(
                    hex::encode_upper(&buf[..n]),
                    hex::encode_upper(&want),
                    "{} from offset {at} ({})",
                    k.name,
                    p.name
                );
            }
        }
    }
}

#[test]
fn secy_annex_c_from_every_offset() {
    for k in KATS {
        for p in providers(k.suite) {
            let sak = unhex(k.key);
            let xpn = k.suite.is_xpn();
            let sa_key = SaKey {
                sak: &sak,
                ssci: xpn.then_some(ivnsec_conformance::vectors::macsec::SSCI),
                salt: xpn.then(salt),
                key_number: 1,
            };
            let config = SecyConfig {
                suite: k.suite,
                sci: Sci::from_u64(k.sci),
                tx: k.tx_opts(),
                rx: k.rx_opts(),
            };
            let (plain, want) = (k.plain(), k.protected());
            let headroom = SecY::new(p, &config).unwrap().tx.headroom();
            assert_eq!(headroom, want.len() - plain.len() - 16, "{}", k.name);
            for at in offsets(headroom) {
                let mut s = SecY::new(p, &config).unwrap();
                s.tx.install(k.an, &sa_key, k.pn).unwrap();
                s.tx.enable(k.an).unwrap();
                let mut buf = placed(&plain, at, 32);
                let (n, pn) = s.tx.protect_in_place_at(&mut buf, at, plain.len()).unwrap();
                assert_eq!(pn, k.pn);
                assert_eq!(
                    hex::encode_upper(&buf[..n]),
                    hex::encode_upper(&want),
                    "{} from offset {at} ({})",
                    k.name,
                    p.name
                );
            }
        }
    }
}

#[test]
fn esp_published_vectors_from_every_offset() {
    let mut ran = 0;
    for v in VECTORS {
        let key = unhex(v.key);
        let (iv, packet) = (unhex(v.iv), unhex(v.packet));
        let params = EspParams {
            alg: v.alg,
            spi: v.spi,
            key: &key,
            auth_key: &[],
            esn: v.esn,
        };
        // Tunnel mode adds a 20-byte outer IPv4 header.
        let (input, mode) = v.input_and_mode();
        let outer = if mode == EspMode::Transport { 0 } else { 20 };
        for p in providers(v.alg) {
            let headroom = EspTx::new(p, &params, mode, v.seq).unwrap().headroom();
            // RFC 4303 §2: SPI (4) and sequence number (4), then the IV; tunnel mode adds the
            // outer header in front.
            assert_eq!(headroom, outer + 8 + iv.len(), "{}", v.source);
            for at in offsets(headroom) {
                let mut tx = EspTx::new(p, &params, mode, v.seq).unwrap();
                let mut buf = placed(&input, at, MAX_OVERHEAD);
                let n = tx
                    .protect_in_place_at(&mut buf, at, input.len(), Some(&iv))
                    .unwrap();
                assert_eq!(
                    hex::encode(&buf[20..n]),
                    hex::encode(&packet),
                    "{} from offset {at} ({})",
                    v.source,
                    p.name
                );
                assert_eq!(buf[9], 50, "{}: outer protocol ESP", v.source);
                assert_eq!(usize::from(u16::from_be_bytes([buf[2], buf[3]])), n);
                // RFC 1071: a header with a correct checksum sums to 0xffff.
                assert_eq!(ip::internet_checksum(&buf[..20]), 0, "{}", v.source);
                ran += 1;
            }
        }
    }
    assert!(ran >= VECTORS.len() * 4);
}

/// An IPv4 packet with 4 bytes of options (NOP, NOP, NOP, end of options: RFC 791) around `p`.
fn ipv4_with_options(proto: u8, p: &[u8]) -> Vec<u8> {
    let mut pkt = ipv4(proto, p);
    pkt.splice(20..20, [1, 1, 1, 0]);
    pkt[0] = 0x46;
    let total = pkt.len() as u16;
    pkt[2..4].copy_from_slice(&total.to_be_bytes());
    ip::fill_ipv4_checksum(&mut pkt[..24]);
    pkt
}

/// Protects `input` at `at` with explicit IVs (so that two SAs agree byte for byte): the
/// protected packet.
fn esp_at(
    p: &CryptoProvider,
    params: &EspParams<'_>,
    mode: EspMode,
    input: &[u8],
    at: usize,
) -> Vec<u8> {
    let iv = [0x5c; 16];
    let mut tx = EspTx::new(p, params, mode, 7).unwrap();
    let mut buf = placed(input, at, MAX_OVERHEAD);
    let n = tx
        .protect_in_place_at(&mut buf, at, input.len(), Some(&iv[..params.alg.iv_len()]))
        .unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn esp_every_alg_family_and_mode_from_every_offset() {
    let v6: IpAddr = "2001:db8::1".parse().unwrap();
    let modes = [
        EspMode::Transport,
        EspMode::Tunnel {
            src: "192.0.2.1".parse().unwrap(),
            dst: "192.0.2.2".parse().unwrap(),
        },
        EspMode::Tunnel { src: v6, dst: v6 },
    ];
    let inputs = [
        ipv4(17, &udp_payload(61)),
        ipv4_with_options(6, &udp_payload(33)),
        ipv6(17, &udp_payload(47)),
    ];
    for alg in EspAlg::ALL {
        let key: Vec<u8> = (0..alg.key_len()).map(|i| i as u8).collect();
        let auth: Vec<u8> = (0..alg.auth_key_len().unwrap_or(0))
            .map(|i| !i as u8)
            .collect();
        for esn in [false, true] {
            let params = EspParams {
                alg,
                spi: 0x0102_0304,
                key: &key,
                auth_key: &auth,
                esn,
            };
            for p in providers(alg) {
                for mode in modes {
                    for input in &inputs {
                        let what = format!("{alg} {mode:?} esn {esn} ({})", p.name);
                        let want = esp_at(p, &params, mode, input, 0);
                        let headroom = EspTx::new(p, &params, mode, 7).unwrap().headroom();
                        for at in offsets(headroom) {
                            assert_eq!(
                                hex::encode(esp_at(p, &params, mode, input, at)),
                                hex::encode(&want),
                                "{what}: offset {at}"
                            );
                        }
                        // And it verifies back to the input (transport: the input packet;
                        // tunnel: the inner packet).
                        let mut rx = EspRx::new(p, &params, 64).unwrap();
                        let mut wire = want.clone();
                        let r = rx.verify_in_place(&mut wire).unwrap();
                        assert_eq!(hex::encode(&wire[r]), hex::encode(input), "{what}");
                    }
                }
            }
        }
    }
}

#[test]
fn ivnae_every_profile_from_every_offset() {
    let frame: Vec<u8> = (0..14 + 77).map(|i| (i * 7) as u8).collect();
    let key = [0x11u8; 32];
    let mac_key = [0x22u8; 64];
    for profile in IvnAeProfile::all() {
        let s = profile.suite;
        let params = SaParams {
            key: s.key_len().map_or(&[][..], |n| &key[..n]),
            mac_key: if s.needs_mac_key() { &mac_key[..] } else { &[] },
            ..SaParams::new(profile, &[], &[])
        };
        for p in providers(profile) {
            let protect_at = |at: usize| {
                let mut tx = IvnAeTx::new(p, &params, 9).unwrap();
                let mut buf = placed(&frame, at, 128);
                let n = tx.protect_in_place_at(&mut buf, at, frame.len()).unwrap();
                buf.truncate(n);
                buf
            };
            let want = protect_at(0);
            let headroom = IvnAeTx::new(p, &params, 9).unwrap().headroom();
            // docs/wire-ivnae.md: the outer EtherType (2) and the IVN-AE fields (12) go between
            // the addresses and the body.
            assert_eq!(headroom, 14, "{profile}");
            for at in offsets(headroom) {
                assert_eq!(protect_at(at), want, "{profile} ({}): offset {at}", p.name);
            }
            let mut rx = IvnAeRx::new(p, &params, 64).unwrap();
            let mut wire = want.clone();
            let r = rx.verify_in_place(&mut wire).unwrap();
            assert_eq!(&wire[r], &frame[..], "{profile} ({})", p.name);
        }
    }
}

/// Offsets and lengths outside the buffer, or overflowing, are refused with the error protect
/// always gave for a unit that is not there; nothing panics and no number is spent.
#[test]
fn offsets_outside_the_buffer_are_refused() {
    let p = ivnsec_conformance::provider("portable");
    let k = &KATS[0];
    let key = unhex(k.key);
    let mut tx = MacsecTx::new(p, &k.keys(&key), k.tx_opts(), k.pn).unwrap();
    let mut buf = vec![0u8; 128];
    for (at, len) in [
        (120, 14),
        (0, 129),
        (usize::MAX, 14),
        (1, usize::MAX),
        (64, 13),
    ] {
        assert_eq!(
            tx.protect_in_place_at(&mut buf, at, len),
            Err(ProtectError::FrameTooShort),
            "MACsec at {at} len {len}"
        );
    }
    // Room for the frame but not for what protect adds.
    let needed = tx.protected_len(100);
    assert_eq!(
        tx.protect_in_place_at(&mut buf, 28, 100),
        Err(ProtectError::BufferTooSmall { needed })
    );
    assert_eq!(tx.next_pn(), Some(k.pn));

    let key = [7u8; 20];
    let params = EspParams {
        alg: EspAlg::Aes128Gcm,
        spi: 9,
        key: &key,
        auth_key: &[],
        esn: false,
    };
    let mut tx = EspTx::new(p, &params, EspMode::Transport, 1).unwrap();
    let pkt = ipv4(17, &udp_payload(40));
    let mut buf = placed(&pkt, 8, 0);
    for (at, len) in [(9, pkt.len()), (usize::MAX, 1), (1, usize::MAX)] {
        assert_eq!(
            tx.protect_in_place_at(&mut buf, at, len, None),
            Err(EspProtectError::BadPacket(IpError::Truncated)),
            "ESP at {at} len {len}"
        );
    }
    assert!(matches!(
        tx.protect_in_place_at(&mut buf, 8, pkt.len(), None),
        Err(EspProtectError::BufferTooSmall { .. })
    ));
    assert_eq!(tx.next_seq(), Some(1));

    let profile: IvnAeProfile = "aes128-gcm".parse().unwrap();
    let params = SaParams::new(profile, &key[..16], &[]);
    let mut tx = IvnAeTx::new(p, &params, 1).unwrap();
    let mut buf = vec![0u8; 64];
    for (at, len) in [(60, 14), (usize::MAX, 14), (0, 65)] {
        assert_eq!(
            tx.protect_in_place_at(&mut buf, at, len),
            Err(ProtectError::FrameTooShort)
        );
    }
    assert_eq!(tx.next_seq(), Some(1));
}
