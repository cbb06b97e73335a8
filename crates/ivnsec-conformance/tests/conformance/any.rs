//! `ivnsec_core::sa::any`: one SA of any family behind one protect / verify. The published
//! answers of MACsec (IEEE 802.1AE Annex C), ESP (draft-mcgrew-gcm-test-01, RFC 7634) and SecOC
//! (the tables in `ivnsec_conformance::vectors`) come out of the one dispatch byte for byte;
//! every family round-trips, rejects a flipped bit as `bad_tag`, and never panics on a short
//! unit. Every test runs once per crypto provider that has what it needs.

use ivnsec_conformance::packets::ipv4;
use ivnsec_conformance::vectors::{esp, macsec, secoc};
use ivnsec_conformance::{Needs, PROVIDERS, providers, unhex};
use ivnsec_core::crypto::{AeadAlg, CryptoProvider};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::any::{AnyProtectError, AnyRx, AnyTx, Family};
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, RxStatus, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};
use ivnsec_core::wire::macsec::Sci;

/// Protects `plain` through the common API; the protected unit.
fn protect(tx: &mut AnyTx, plain: &[u8], iv: Option<&[u8]>) -> Vec<u8> {
    let mut buf = vec![0u8; tx.protected_len(plain.len())];
    buf[..plain.len()].copy_from_slice(plain);
    let n = tx
        .protect_in_place_with_iv(&mut buf, plain.len(), iv)
        .unwrap_or_else(|e| panic!("{} protect: {e}", tx.family()));
    buf.truncate(n);
    buf
}

/// Verifies a copy of `unit` through the common API; the plain unit or the drop reason.
fn verify(rx: &mut AnyRx, unit: &[u8]) -> Result<Vec<u8>, DropReason> {
    let mut buf = unit.to_vec();
    rx.verify_in_place(&mut buf).map(|r| buf[r].to_vec())
}

#[test]
fn macsec_annex_c_through_the_one_dispatch() {
    let mut ran = 0;
    for v in macsec::KATS {
        let key = unhex(v.key);
        for p in providers(v.suite) {
            let tx = MacsecTx::new(p, &v.keys(&key), v.tx_opts(), v.pn).unwrap();
            let mut tx = AnyTx::from(tx);
            assert_eq!(tx.family(), Family::Macsec);
            let wire = protect(&mut tx, &v.plain(), None);
            assert_eq!(
                hex::encode(&wire),
                hex::encode(v.protected()),
                "{} on {}",
                v.name,
                p.name
            );
            assert_eq!(tx.next_seq(), Some(v.pn + 1));
            assert_eq!(tx.protected(), 1);
            let mut rx = AnyRx::from(MacsecRx::new(p, &v.keys(&key), v.rx_opts()).unwrap());
            assert_eq!(verify(&mut rx, &v.protected()), Ok(v.plain()), "{}", v.name);
            assert_eq!(rx.macsec_counters().unwrap().in_pkts_ok, 1);
            assert_eq!(rx.highest_seq(), v.pn);
            ran += 1;
        }
    }
    assert!(ran >= macsec::KATS.len());
}

#[test]
fn esp_published_packets_through_the_one_dispatch() {
    let mut ran = 0;
    for v in esp::VECTORS {
        let key = unhex(v.key);
        let (payload, nh) = v.payload_and_nh();
        let (input, mode) = if nh == 4 {
            let mode = EspMode::Tunnel {
                src: "192.0.2.1".parse().unwrap(),
                dst: "192.0.2.2".parse().unwrap(),
            };
            (payload.clone(), mode)
        } else {
            (ipv4(nh, &payload), EspMode::Transport)
        };
        let params = EspParams {
            alg: v.alg,
            spi: v.spi,
            key: &key,
            auth_key: &[],
            esn: v.esn,
        };
        for p in providers(v.alg) {
            let mut tx = AnyTx::from(EspTx::new(p, &params, mode, v.seq).unwrap());
            let wire = protect(&mut tx, &input, Some(&unhex(v.iv)));
            // Behind the 20-byte outer IPv4 header: the published ESP packet.
            assert_eq!(
                hex::encode(&wire[20..]),
                hex::encode(unhex(v.packet)),
                "{} on {}",
                v.source,
                p.name
            );
            let mut rx = EspRx::new(p, &params, 64).unwrap();
            if v.seq > 1 {
                rx.restore_seen(v.seq - 1);
            }
            let mut rx = AnyRx::from(rx);
            let got = verify(&mut rx, &ipv4(50, &unhex(v.packet)));
            assert_eq!(got, Ok(input.clone()), "{} on {}", v.source, p.name);
            assert_eq!(rx.highest_seq(), v.seq);
            ran += 1;
        }
    }
    assert!(ran >= esp::VECTORS.len());
}

#[test]
fn secoc_published_pdus_through_the_one_dispatch() {
    let mut ran = 0;
    for v in secoc::KATS {
        let key = unhex(v.key);
        for p in providers(v.alg) {
            let mut tx = AnyTx::from(SecocTx::new(p, &v.params(&key), v.fv).unwrap());
            let wire = protect(&mut tx, &unhex(v.pdu), None);
            assert_eq!(
                hex::encode(&wire),
                hex::encode(unhex(v.secured)),
                "{}",
                v.source
            );
            assert_eq!(tx.next_seq(), v.fv.checked_add(1));
            let opts = SecocRxOptions {
                last_freshness: v.fv - 1,
                ..SecocRxOptions::default()
            };
            let mut rx = AnyRx::from(SecocRx::new(p, &v.params(&key), opts).unwrap());
            assert_eq!(verify(&mut rx, &unhex(v.secured)), Ok(unhex(v.pdu)));
            assert_eq!(rx.highest_seq(), v.fv, "the freshness value it carried");
            ran += 1;
        }
    }
    assert!(ran >= secoc::KATS.len());
}

const KEY: [u8; 16] = [0x4c; 16];

/// A plain Ethernet frame: dst ‖ src ‖ EtherType 0x0800 ‖ 46 bytes.
fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend((0..46u8).map(|i| i.wrapping_mul(37)));
    f
}

/// A fresh transmit / receive pair of `family` on `p`, and a plain unit of the family.
fn pair(family: Family, p: &'static CryptoProvider) -> (AnyTx, AnyRx, Vec<u8>) {
    match family {
        Family::IvnAe => {
            let params = SaParams::new("aes128-gcm".parse().unwrap(), &KEY, &[]);
            let tx = IvnAeTx::new(p, &params, 1).unwrap();
            let rx = IvnAeRx::new(p, &params, 64).unwrap();
            (tx.into(), rx.into(), frame())
        }
        Family::Macsec => {
            let keys = KeyParams {
                suite: CipherSuite::GcmAes128,
                key: &KEY,
                sci: Sci::from_u64(0x0200_0000_0001_0001),
                an: 0,
                ssci: None,
                salt: None,
            };
            let opts = TxOptions {
                confidentiality: true,
                include_sci: true,
                es: false,
                scb: false,
            };
            let tx = MacsecTx::new(p, &keys, opts, 1).unwrap();
            let rx = MacsecRx::new(p, &keys, RxOptions::default()).unwrap();
            (tx.into(), rx.into(), frame())
        }
        Family::Esp => {
            let key = [0x4c; 20];
            let params = EspParams {
                alg: EspAlg::Aes128Gcm,
                spi: 0x1001,
                key: &key,
                auth_key: &[],
                esn: false,
            };
            let tx = EspTx::new(p, &params, EspMode::Transport, 1).unwrap();
            let rx = EspRx::new(p, &params, 64).unwrap();
            (tx.into(), rx.into(), ipv4(17, &frame()))
        }
        Family::Secoc => {
            let params = SecocParams {
                fv_bits: 8,
                mac_bits: 64,
                ..SecocParams::new(SecocAlg::CmacAes128, &KEY, 0x0a01)
            };
            let tx = SecocTx::new(p, &params, 1).unwrap();
            let rx = SecocRx::new(p, &params, SecocRxOptions::default()).unwrap();
            (tx.into(), rx.into(), frame()[14..].to_vec())
        }
        Family::Someip => unreachable!("SOME/IP has no unit SA"),
    }
}

const FAMILIES: [Family; 4] = [Family::IvnAe, Family::Macsec, Family::Esp, Family::Secoc];

/// Every family on every provider of what its pair uses: AES-128-GCM, CMAC-AES-128 for SecOC.
fn cases() -> impl Iterator<Item = (Family, &'static CryptoProvider)> {
    FAMILIES.into_iter().flat_map(|f| {
        PROVIDERS
            .into_iter()
            .filter(move |p| match f {
                Family::Secoc => SecocAlg::CmacAes128.met_by(p),
                _ => AeadAlg::Aes128Gcm.met_by(p),
            })
            .map(move |p| (f, p))
    })
}

#[test]
fn every_family_round_trips_and_counts() {
    for (family, p) in cases() {
        let (mut tx, mut rx, plain) = pair(family, p);
        assert_eq!((tx.family(), rx.family()), (family, family));
        for seq in 1..=3u64 {
            assert_eq!(tx.next_seq(), Some(seq), "{family}");
            let wire = protect(&mut tx, &plain, None);
            assert!(wire.len() <= tx.protected_len(plain.len()), "{family}");
            assert_eq!(
                verify(&mut rx, &wire),
                Ok(plain.clone()),
                "{family} on {}",
                p.name
            );
            assert_eq!(rx.highest_seq(), seq, "{family}");
            // The same unit again: a replay. (SecOC reconstructs the truncated freshness
            // value of a replay as the next roll-over, whose MAC does not match.)
            let again = verify(&mut rx, &wire).unwrap_err();
            let want = match family {
                Family::Secoc => DropReason::BadTag,
                Family::Macsec => DropReason::Late,
                _ => DropReason::ReplayDuplicate,
            };
            assert_eq!(again, want, "{family}");
        }
        assert_eq!(tx.protected(), 3, "{family}");
        assert_eq!(rx.drops().total(), 3, "{family}: the three replays");
        assert_eq!(rx.macsec_counters().is_some(), family == Family::Macsec);
    }
}

#[test]
fn a_flipped_bit_in_body_or_tag_is_bad_tag() {
    for (family, p) in cases() {
        let (mut tx, mut rx, plain) = pair(family, p);
        let wire = protect(&mut tx, &plain, None);
        // The last byte (tag / ICV / MAC) and a byte of the protected body.
        let body = wire.len() - 20;
        for at in [wire.len() - 1, body] {
            for bit in [0, 7] {
                let mut bad = wire.clone();
                bad[at] ^= 1 << bit;
                let mut buf = bad.clone();
                let got = rx.verify_in_place_status(&mut buf);
                assert_eq!(
                    got,
                    Err(DropReason::BadTag),
                    "{family} on {}: byte {at} bit {bit}",
                    p.name
                );
            }
        }
        assert_eq!(rx.drops().get(DropReason::BadTag), 4, "{family}");
        // No forgery entered the replay state: the genuine unit still verifies.
        assert_eq!(verify(&mut rx, &wire), Ok(plain), "{family}");
    }
}

#[test]
fn a_short_unit_is_refused_without_a_panic() {
    for (family, p) in cases() {
        let (mut tx, mut rx, plain) = pair(family, p);
        let wire = protect(&mut tx, &plain, None);
        for n in 0..wire.len() {
            assert!(verify(&mut rx, &wire[..n]).is_err(), "{family}: {n} bytes");
        }
        assert_eq!(
            rx.drops().total(),
            wire.len() as u64,
            "{family}: each counted"
        );
        // Protect: a length past the buffer is this unit's refusal (oversize, or for the
        // frame families "too short to be a frame in this buffer"); no number is spent.
        let next = tx.next_seq();
        let mut buf = [0u8; 8];
        let e = tx.protect_in_place(&mut buf, 9).unwrap_err();
        assert!(e.unit_refusal().is_some(), "{family}: {e}");
        assert_eq!(tx.next_seq(), next, "{family}");
        // Too short to be a unit of the family, where the family has a minimum.
        let short = tx.protect_in_place(&mut [0u8; 64], 5);
        match family {
            Family::IvnAe | Family::Macsec => {
                assert_eq!(
                    short.unwrap_err().unit_refusal(),
                    Some(DropReason::Truncated)
                )
            }
            Family::Esp => {
                assert_eq!(
                    short.unwrap_err().unit_refusal(),
                    Some(DropReason::Malformed)
                )
            }
            // An Authentic I-PDU may be of any length.
            Family::Secoc => assert!(short.is_ok()),
            Family::Someip => unreachable!("SOME/IP has no unit SA"),
        }
    }
}

#[test]
fn an_explicit_iv_is_for_esp_only() {
    for (family, p) in cases() {
        let (mut tx, _, plain) = pair(family, p);
        let mut buf = vec![0u8; tx.protected_len(plain.len())];
        buf[..plain.len()].copy_from_slice(&plain);
        let r = tx.protect_in_place_with_iv(&mut buf, plain.len(), Some(&[9; 8]));
        if family == Family::Esp {
            let n = r.unwrap();
            // RFC 4106: the IV follows SPI and sequence number, behind the IPv4 header.
            assert_eq!(&buf[28..36], &[9; 8]);
            assert!(n > plain.len());
        } else {
            assert_eq!(r, Err(AnyProtectError::IvNotTaken(family)));
            assert_eq!(tx.next_seq(), Some(1), "{family}: no number spent");
        }
    }
}

/// validateFrames Check (802.1AE §10.6.5): an integrity-only frame with a bad ICV is delivered
/// but not validated; the one API says so, and `verify_in_place` alone still delivers it.
#[test]
fn macsec_check_mode_delivers_unvalidated_frames_and_says_so() {
    for p in providers(CipherSuite::GcmAes128) {
        let keys = KeyParams {
            suite: CipherSuite::GcmAes128,
            key: &KEY,
            sci: Sci::from_u64(0x0200_0000_0001_0001),
            an: 1,
            ssci: None,
            salt: None,
        };
        let opts = TxOptions {
            confidentiality: false,
            include_sci: true,
            es: false,
            scb: false,
        };
        let mut tx = AnyTx::from(MacsecTx::new(p, &keys, opts, 1).unwrap());
        let rx_opts = RxOptions {
            validate: ValidateFrames::Check,
            ..RxOptions::default()
        };
        let mut rx = AnyRx::from(MacsecRx::new(p, &keys, rx_opts).unwrap());
        let mut wire = protect(&mut tx, &frame(), None);
        let last = wire.len() - 1;
        wire[last] ^= 1;
        let mut buf = wire.clone();
        let d = rx.verify_in_place_status(&mut buf).unwrap();
        assert_eq!(d.status, RxStatus::Invalid);
        assert_eq!(&buf[d.range], &frame()[..]);
        assert_eq!(rx.macsec_counters().unwrap().in_pkts_invalid, 1);
    }
}

/// The factory ([`AnyTx::new`], [`AnyRx::new`]) makes, from a typed profile and the options of
/// its family, the SA each family's own constructor makes: the same units byte for byte, and
/// each verifies on the other's receiver. SOME/IP has no unit SA.
#[test]
fn the_factory_makes_each_familys_own_sa() {
    use ivnsec_core::profile::{MacsecProfile, Profile};
    use ivnsec_core::sa::any::{
        EspOptions, IvnAeOptions, MacsecOptions, SaBuildError, SaKeys, SaOptions, SecocOptions,
    };
    let esp_key = [0x4c; 20];
    for (family, p) in cases() {
        let (mut tx, mut rx, plain) = pair(family, p);
        let (profile, key): (Profile, &[u8]) = match family {
            Family::IvnAe => ("aes128-gcm".parse().unwrap(), &KEY),
            Family::Macsec => (
                Profile::Macsec(MacsecProfile {
                    suite: CipherSuite::GcmAes128,
                    confidentiality: true,
                }),
                &KEY,
            ),
            Family::Esp => (Profile::Esp(EspAlg::Aes128Gcm), &esp_key),
            Family::Secoc => (Profile::Secoc(SecocAlg::CmacAes128), &KEY),
            Family::Someip => unreachable!(),
        };
        assert_eq!(profile.family(), family);
        let keys = SaKeys {
            key,
            mac_key: &[],
            iv: [0; 12],
        };
        let opts = SaOptions {
            ivnae: IvnAeOptions::default(),
            macsec: MacsecOptions {
                sci: Sci::from_u64(0x0200_0000_0001_0001),
                ..MacsecOptions::default()
            },
            esp: EspOptions {
                spi: 0x1001,
                ..EspOptions::default()
            },
            secoc: SecocOptions {
                data_id: 0x0a01,
                fv_bits: 8,
                mac_bits: 64,
                ..SecocOptions::default()
            },
        };
        let mut ftx = AnyTx::new(p, profile, keys, &opts, 1).unwrap();
        let mut frx = AnyRx::new(p, profile, keys, &opts, 64).unwrap();
        assert_eq!((ftx.family(), frx.family()), (family, family));
        let theirs = protect(&mut tx, &plain, None);
        let ours = protect(&mut ftx, &plain, None);
        assert_eq!(ours, theirs, "{family} on {}", p.name);
        assert_eq!(verify(&mut rx, &ours).unwrap(), plain, "{family}");
        assert_eq!(verify(&mut frx, &theirs).unwrap(), plain, "{family}");
    }
    let someip: Profile = "someip-aes128-gcm".parse().unwrap();
    let keys = SaKeys {
        key: &KEY,
        mac_key: &[],
        iv: [0; 12],
    };
    let e = AnyTx::new(PROVIDERS[0], someip, keys, &SaOptions::default(), 1).unwrap_err();
    assert_eq!(e, SaBuildError::NoUnitSa(Family::Someip));
    // A family's own configuration error comes through with its own text.
    let e = AnyTx::new(
        PROVIDERS[0],
        "aes128-gcm".parse().unwrap(),
        keys,
        &SaOptions::default(),
        0,
    )
    .unwrap_err();
    assert!(matches!(e, SaBuildError::IvnAe(_)), "{e:?}");
}
