//! MACsec (IEEE 802.1AE-2018, XPN per 802.1AEbw-2013): Annex C known answers in both directions,
//! attack tests (each rejected with its own reason and counter), validateFrames modes, XPN PN
//! recovery, PN exhaustion. Every SA test runs once per provider that has the cipher suite.
//!
//! The Annex C frames are the table `ivnsec_conformance::vectors::macsec::KATS` (with their
//! citations); the `ivnsec frame` CLI tests of them are in `crates/ivnsec/tests/cli_protocols.rs`.

use ivnsec_conformance::vectors::macsec::{KATS, SSCI, salt};
use ivnsec_conformance::{providers, unhex};
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecError, MacsecRx, MacsecTx, RxOptions, RxStatus, TxOptions,
    ValidateFrames,
};
use ivnsec_core::wire::macsec::Sci;

use CipherSuite::{
    GcmAes128 as G128, GcmAes256 as G256, GcmAesXpn128 as X128, GcmAesXpn256 as X256,
};

#[test]
fn annex_c_known_answers_protect_and_verify() {
    for k in KATS {
        for p in providers(k.suite) {
            let key = unhex(k.key);
            let plain = k.plain();
            let want = k.protected();
            // Sanity of the typed vector: the frame length names the vector.
            let mut tx = MacsecTx::new(p, &k.keys(&key), k.tx_opts(), k.pn).unwrap();
            let mut out = vec![0u8; tx.protected_len(plain.len())];
            let n = tx.protect(&plain, &mut out).unwrap();
            assert_eq!(
                hex::encode_upper(&out[..n]),
                hex::encode_upper(&want),
                "{} protect ({})",
                k.name,
                p.name
            );

            let mut rx = MacsecRx::new(p, &k.keys(&key), k.rx_opts()).unwrap();
            let mut back = vec![0u8; want.len()];
            let (n, status) = rx
                .verify(&want, &mut back)
                .unwrap_or_else(|e| panic!("{} verify ({}): {e}", k.name, p.name));
            assert_eq!(status, RxStatus::Ok);
            assert_eq!(
                hex::encode_upper(&back[..n]),
                hex::encode_upper(&plain),
                "{} verify ({})",
                k.name,
                p.name
            );
            assert_eq!(rx.counters().in_pkts_ok, 1);
            assert_eq!(rx.next_pn(), k.pn + 1);
            if k.conf {
                assert_eq!(rx.counters().in_octets_decrypted, (plain.len() - 12) as u64);
            } else {
                assert_eq!(rx.counters().in_octets_validated, (plain.len() - 12) as u64);
            }
        }
    }
}

#[test]
fn annex_c_every_single_bit_flip_is_refused() {
    for k in KATS
        .iter()
        .filter(|k| k.name.starts_with("C.5") || k.name.starts_with("C.1"))
    {
        for p in providers(k.suite) {
            let key = unhex(k.key);
            let want = k.protected();
            for i in 0..want.len() {
                let mut rx = MacsecRx::new(p, &k.keys(&key), k.rx_opts()).unwrap();
                let mut bad = want.clone();
                bad[i] ^= 0x01;
                let r = rx.verify_in_place(&mut bad);
                assert!(r.is_err(), "{} byte {i} flipped accepted: {r:?}", k.name);
                assert_eq!(rx.counters().in_pkts_ok, 0);
                assert_eq!(rx.counters().drops.total(), 1);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Attack tests on a simple SA pair.

const KEY: [u8; 16] = [0x42; 16];
const PEER_SCI: u64 = 0x0200_0000_0001_0001;

fn pair(p: &CryptoProvider, suite: CipherSuite, conf: bool, rx: RxOptions) -> (MacsecTx, MacsecRx) {
    let key = vec![0x42u8; suite.key_len()];
    let xpn = suite.is_xpn();
    let kp = KeyParams {
        suite,
        key: &key,
        sci: Sci::from_u64(PEER_SCI),
        an: 1,
        ssci: xpn.then_some(7),
        salt: xpn.then(salt),
    };
    let tx = MacsecTx::new(
        p,
        &kp,
        TxOptions {
            confidentiality: conf,
            include_sci: true,
            es: false,
            scb: false,
        },
        rx.lowest_pn,
    )
    .unwrap();
    let rx = MacsecRx::new(p, &kp, rx).unwrap();
    (tx, rx)
}

fn plain(n: usize) -> Vec<u8> {
    let mut f = unhex("0200000000020200000000010800");
    f.extend((0..n).map(|i| i as u8));
    f
}

fn protect(tx: &mut MacsecTx, f: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; tx.protected_len(f.len())];
    let n = tx.protect(f, &mut out).unwrap();
    out.truncate(n);
    out
}

fn strict(window: u32) -> RxOptions {
    RxOptions {
        validate: ValidateFrames::Strict,
        replay_protect: true,
        replay_window: window,
        lowest_pn: 1,
    }
}

fn verify(rx: &mut MacsecRx, f: &[u8]) -> Result<(Vec<u8>, RxStatus), DropReason> {
    let mut buf = f.to_vec();
    let d = rx.verify_in_place(&mut buf)?;
    Ok((buf[d.range].to_vec(), d.status))
}

#[test]
fn replayed_pn_is_a_duplicate() {
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            let (mut tx, mut rx) = pair(p, suite, true, strict(16));
            let f1 = protect(&mut tx, &plain(60));
            let f2 = protect(&mut tx, &plain(61));
            assert_eq!(verify(&mut rx, &f2).unwrap().0, plain(61));
            assert_eq!(
                verify(&mut rx, &f1).unwrap().0,
                plain(60),
                "reordered inside the window"
            );
            assert_eq!(verify(&mut rx, &f1), Err(DropReason::ReplayDuplicate));
            assert_eq!(verify(&mut rx, &f2), Err(DropReason::ReplayDuplicate));
            let c = rx.counters();
            assert_eq!(c.in_pkts_ok, 2);
            assert_eq!(c.drops.get(DropReason::ReplayDuplicate), 2);
            assert_eq!(c.in_pkts_late, 0);
        }
    }
}

#[test]
fn pn_below_lowest_acceptable_is_late() {
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            // Window 2: after PN 5, lowest acceptable = 6 − 2 = 4.
            let (mut tx, mut rx) = pair(p, suite, false, strict(2));
            let frames: Vec<_> = (0..5).map(|i| protect(&mut tx, &plain(i))).collect();
            verify(&mut rx, &frames[4]).unwrap();
            assert_eq!(rx.lowest_pn(), 4);
            if suite.is_xpn() {
                // XPN (§10.6.2): PN 3 has a low half below lowest's (4), so it is recovered as
                // 2^32 + 3 — never "late", but its ICV fails. Old PNs can't be replayed either way.
                assert_eq!(verify(&mut rx, &frames[2]), Err(DropReason::BadTag));
                assert_eq!(rx.counters().in_pkts_not_valid, 1);
            } else {
                assert_eq!(verify(&mut rx, &frames[2]), Err(DropReason::Late));
                assert_eq!(rx.counters().in_pkts_late, 1);
                assert_eq!(rx.counters().drops.get(DropReason::Late), 1);
            }
            assert_eq!(verify(&mut rx, &frames[3]).unwrap().1, RxStatus::Ok);
            // A configured lowest PN above the frame's.
            let (mut tx, _) = pair(p, suite, false, strict(0));
            let f = protect(&mut tx, &plain(10));
            let (_, mut rx) = pair(
                p,
                suite,
                false,
                RxOptions {
                    lowest_pn: 2,
                    ..strict(0)
                },
            );
            if suite.is_xpn() {
                // §10.6.2: a low half below the lowest PN's low half means the next upper half,
                // so PN 1 is read as 2^32 + 1 — which then fails the ICV.
                assert_eq!(verify(&mut rx, &f), Err(DropReason::BadTag));
            } else {
                assert_eq!(verify(&mut rx, &f), Err(DropReason::Late));
            }
        }
    }
}

#[test]
fn tampered_sectag_payload_icv_are_not_valid() {
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            for conf in [false, true] {
                let (mut tx, mut rx) = pair(p, suite, conf, strict(64));
                let good = protect(&mut tx, &plain(100));
                // SecTAG: the PN (authenticated) — the ICV no longer verifies.
                let mut t = good.clone();
                t[19] ^= 0x04;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadTag), "{suite} pn");
                // SecTAG: the V bit — an invalid SecTAG.
                let mut t = good.clone();
                t[14] |= 0x80;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadVersion));
                // SecTAG: E/C cleared on a confidential frame (downgrade) or set on an integrity one.
                let mut t = good.clone();
                t[14] ^= 0x0c;
                assert_eq!(
                    verify(&mut rx, &t),
                    Err(DropReason::BadTag),
                    "{suite} E/C flip"
                );
                // Payload.
                let mut t = good.clone();
                t[40] ^= 0x80;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadTag));
                // ICV.
                let mut t = good.clone();
                let last = t.len() - 1;
                t[last] ^= 0x01;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadTag));
                // Truncated below SecTAG + ICV.
                assert_eq!(verify(&mut rx, &good[..30]), Err(DropReason::Truncated));
                let c = rx.counters();
                assert_eq!(c.in_pkts_not_valid, 4);
                assert_eq!(c.in_pkts_bad_tag, 2);
                assert_eq!(c.drops.get(DropReason::BadTag), 4);
                // The good frame still verifies: nothing was marked by the failures.
                assert_eq!(verify(&mut rx, &good).unwrap().0, plain(100));
            }
        }
    }
}

#[test]
fn unknown_sci_and_unused_an() {
    for p in providers(G128) {
        let other = KeyParams {
            suite: G128,
            key: &KEY,
            sci: Sci::from_u64(0x0200_0000_0009_0001),
            an: 1,
            ssci: None,
            salt: None,
        };
        let mut stranger = MacsecTx::new(
            p,
            &other,
            TxOptions {
                include_sci: true,
                ..Default::default()
            },
            1,
        )
        .unwrap();
        let f = protect(&mut stranger, &plain(50));
        let (_, mut rx) = pair(p, G128, false, strict(0));
        assert_eq!(verify(&mut rx, &f), Err(DropReason::NoSci));
        assert_eq!(rx.counters().in_pkts_no_sci, 1);
        // Check mode, C = 0: delivered unvalidated and counted as InPktsUnknownSCI.
        let (_, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(0)
            },
        );
        assert_eq!(verify(&mut rx, &f), Ok((plain(50), RxStatus::UnknownSci)));
        assert_eq!(rx.counters().in_pkts_unknown_sci, 1);
        // Confidential frames from unknown SCIs are always discarded.
        let mut stranger = MacsecTx::new(
            p,
            &other,
            TxOptions {
                include_sci: true,
                confidentiality: true,
                ..Default::default()
            },
            1,
        )
        .unwrap();
        let f = protect(&mut stranger, &plain(50));
        assert_eq!(verify(&mut rx, &f), Err(DropReason::NoSci));

        // Same SCI, another AN.
        let wrong_an = KeyParams {
            sci: Sci::from_u64(PEER_SCI),
            an: 2,
            ..other
        };
        let mut tx = MacsecTx::new(
            p,
            &wrong_an,
            TxOptions {
                include_sci: true,
                ..Default::default()
            },
            1,
        )
        .unwrap();
        let f = protect(&mut tx, &plain(50));
        let (_, mut rx) = pair(p, G128, false, strict(0));
        assert_eq!(verify(&mut rx, &f), Err(DropReason::NotUsingSa));
        assert_eq!(rx.counters().in_pkts_not_using_sa, 1);
    }
}

#[test]
fn untagged_frames_by_validate_mode() {
    for p in providers(G128) {
        let (_, mut rx) = pair(p, G128, false, strict(0));
        assert_eq!(verify(&mut rx, &plain(50)), Err(DropReason::Untagged));
        assert_eq!(rx.counters().in_pkts_no_tag, 1);
        assert_eq!(rx.counters().drops.get(DropReason::Untagged), 1);
        let (_, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(0)
            },
        );
        assert_eq!(
            verify(&mut rx, &plain(50)),
            Ok((plain(50), RxStatus::Untagged))
        );
        assert_eq!(rx.counters().in_pkts_untagged, 1);
        assert_eq!(verify(&mut rx, &plain(0)[..13]), Err(DropReason::Truncated));
    }
}

#[test]
fn check_and_disabled_modes() {
    for p in providers(G128) {
        // Check: a bad ICV on an integrity-only frame is delivered and counted InPktsInvalid.
        let (mut tx, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(8)
            },
        );
        let mut f = protect(&mut tx, &plain(70));
        let last = f.len() - 1;
        f[last] ^= 1;
        assert_eq!(verify(&mut rx, &f), Ok((plain(70), RxStatus::Invalid)));
        assert_eq!(rx.counters().in_pkts_invalid, 1);
        assert_eq!(rx.next_pn(), 1, "an invalid frame does not move nextPN");
        // ... but a bad confidential frame is discarded (InPktsNotValid).
        let (mut tx, mut rx) = pair(
            p,
            G128,
            true,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(8)
            },
        );
        let mut f = protect(&mut tx, &plain(70));
        f[30] ^= 1;
        assert_eq!(verify(&mut rx, &f), Err(DropReason::BadTag));
        assert_eq!(rx.counters().in_pkts_not_valid, 1);
        // Disabled: integrity-only frames pass unchecked; confidential frames are still decrypted
        // and checked.
        let (mut tx, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Disabled,
                ..strict(8)
            },
        );
        let mut f = protect(&mut tx, &plain(70));
        let last = f.len() - 1;
        f[last] ^= 1;
        assert_eq!(verify(&mut rx, &f), Ok((plain(70), RxStatus::Unchecked)));
        assert_eq!(rx.counters().in_pkts_unchecked, 1);
        assert_eq!(rx.counters().in_octets_validated, 0);
        let (mut tx, mut rx) = pair(
            p,
            G128,
            true,
            RxOptions {
                validate: ValidateFrames::Disabled,
                ..strict(8)
            },
        );
        let f = protect(&mut tx, &plain(70));
        assert_eq!(verify(&mut rx, &f), Ok((plain(70), RxStatus::Ok)));
        // replayProtect off: a valid frame below the lowest acceptable PN is InPktsDelayed.
        let (mut tx, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                replay_protect: false,
                ..strict(1)
            },
        );
        let a = protect(&mut tx, &plain(1));
        let _ = protect(&mut tx, &plain(2));
        let c = protect(&mut tx, &plain(3));
        verify(&mut rx, &c).unwrap();
        assert_eq!(verify(&mut rx, &a), Ok((plain(1), RxStatus::Delayed)));
        assert_eq!(rx.counters().in_pkts_delayed, 1);
    }
}

#[test]
fn short_frames_use_sl_and_round_trip() {
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            for conf in [false, true] {
                let (mut tx, mut rx) = pair(p, suite, conf, strict(0));
                for n in [0usize, 1, 45, 46, 47, 600, 1500] {
                    let pl = plain(n);
                    let f = protect(&mut tx, &pl);
                    let sd = pl.len() - 12;
                    assert_eq!(
                        usize::from(f[15]),
                        if sd < 48 { sd } else { 0 },
                        "SL for {sd}"
                    );
                    assert_eq!(f.len(), pl.len() + 16 + 16);
                    assert_eq!(verify(&mut rx, &f), Ok((pl, RxStatus::Ok)));
                }
            }
        }
    }
}

#[test]
fn xpn_recovers_upper_pn_half_across_the_32_bit_boundary() {
    for p in providers([X128, X256, G128]) {
        for suite in [X128, X256] {
            let start = 0x0000_0005_FFFF_FFFD;
            let (mut tx, mut rx) = pair(
                p,
                suite,
                true,
                RxOptions {
                    lowest_pn: start,
                    ..strict(4)
                },
            );
            for i in 0..6u64 {
                let f = protect(&mut tx, &plain(20));
                assert_eq!(
                    u32::from_be_bytes(f[16..20].try_into().unwrap()),
                    (start + i) as u32
                );
                let d = {
                    let mut b = f.clone();
                    rx.verify_in_place(&mut b).unwrap()
                };
                assert_eq!(d.pn, start + i);
            }
            assert_eq!(rx.next_pn(), 0x0000_0006_0000_0003);
            // Lower half 0 is valid for XPN (and the PN on the wire is 00000000 then 00000001...).
            let (mut tx, mut rx) = pair(
                p,
                suite,
                false,
                RxOptions {
                    lowest_pn: 0x1_0000_0000,
                    ..strict(0)
                },
            );
            let f = protect(&mut tx, &plain(20));
            assert_eq!(&f[16..20], &[0, 0, 0, 0]);
            assert_eq!(
                rx.verify_in_place(&mut f.clone()).unwrap().pn,
                0x1_0000_0000
            );
        }
        // Non-XPN: PN 0 is an invalid SecTAG.
        let (mut tx, mut rx) = pair(p, G128, false, strict(0));
        let mut f = protect(&mut tx, &plain(20));
        f[16..20].fill(0);
        assert_eq!(verify(&mut rx, &f), Err(DropReason::BadSeq));
        assert_eq!(rx.counters().in_pkts_bad_tag, 1);
    }
}

#[test]
fn pn_exhaustion_stops_the_sa() {
    for p in providers([G128, X128]) {
        for (suite, last) in [(G128, u64::from(u32::MAX)), (X128, u64::MAX)] {
            let key = vec![1u8; suite.key_len()];
            let xpn = suite.is_xpn();
            let kp = KeyParams {
                suite,
                key: &key,
                sci: Sci::from_u64(PEER_SCI),
                an: 0,
                ssci: xpn.then_some(1),
                salt: xpn.then(salt),
            };
            let mut tx = MacsecTx::new(p, &kp, TxOptions::default(), last - 1).unwrap();
            let mut rx = MacsecRx::new(
                p,
                &kp,
                RxOptions {
                    lowest_pn: last - 1,
                    ..strict(0)
                },
            )
            .unwrap();
            let a = protect(&mut tx, &plain(5));
            let b = protect(&mut tx, &plain(5));
            assert!(tx.needs_rekey());
            let mut out = vec![0u8; 100];
            assert_eq!(
                tx.protect(&plain(5), &mut out),
                Err(ivnsec_core::sa::ProtectError::SeqExhausted)
            );
            assert!(verify(&mut rx, &a).is_ok());
            assert!(verify(&mut rx, &b).is_ok());
            assert!(verify(&mut rx, &b).is_err());
            assert!(matches!(
                MacsecTx::new(p, &kp, TxOptions::default(), 0),
                Err(MacsecError::BadPn { .. })
            ));
        }
        let kp = KeyParams {
            suite: G128,
            key: &KEY,
            sci: Sci::from_u64(1),
            an: 0,
            ssci: None,
            salt: None,
        };
        assert!(matches!(
            MacsecTx::new(p, &kp, TxOptions::default(), 1 << 32),
            Err(MacsecError::BadPn { .. })
        ));
    }
}

#[test]
fn configuration_errors() {
    for p in providers([X128, G128, G256]) {
        let kp = KeyParams {
            suite: X128,
            key: &KEY,
            sci: Sci::from_u64(1),
            an: 0,
            ssci: None,
            salt: None,
        };
        assert!(matches!(
            MacsecRx::new(p, &kp, strict(0)),
            Err(MacsecError::MissingXpnParams { .. })
        ));
        let kp = KeyParams {
            suite: G128,
            ssci: Some(1),
            ..kp
        };
        assert!(matches!(
            MacsecRx::new(p, &kp, strict(0)),
            Err(MacsecError::XpnParamsNotUsed { .. })
        ));
        let kp = KeyParams {
            suite: G256,
            ssci: None,
            ..kp
        };
        assert!(matches!(
            MacsecRx::new(p, &kp, strict(0)),
            Err(MacsecError::BadKeyLength {
                expected: 32,
                got: 16,
                ..
            })
        ));
        let kp = KeyParams {
            suite: G128,
            an: 4,
            ..kp
        };
        assert!(matches!(
            MacsecRx::new(p, &kp, strict(0)),
            Err(MacsecError::BadAn(4))
        ));
    }
}

#[test]
fn hostile_input_never_panics() {
    // Cheap deterministic noise (xorshift) over lengths 0..200 and SecTAG-shaped prefixes.
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            for validate in [
                ValidateFrames::Strict,
                ValidateFrames::Check,
                ValidateFrames::Disabled,
            ] {
                let (_, mut rx) = pair(
                    p,
                    suite,
                    false,
                    RxOptions {
                        validate,
                        ..strict(32)
                    },
                );
                for _ in 0..300 {
                    let n = (next() % 200) as usize;
                    let mut f: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                    if n >= 16 && next() % 2 == 0 {
                        f[12] = 0x88;
                        f[13] = 0xe5;
                        f[14] &= 0x2f;
                        f[15] &= 0x3f;
                    }
                    if let Ok(d) = rx.verify_in_place(&mut f) {
                        assert!(d.range.end <= n);
                    }
                }
            }
        }
    }
}

/// Found by the `macsec_verify` fuzz target (2026-11-21, crash-2761ee3c…, selector 0xc6:
/// GCM-AES-XPN-128, validateFrames Check, replay window 0, replayProtect, fast provider): an
/// integrity-only XPN frame with PN 1 validates; the same bytes again are not Late, because XPN
/// PN recovery (802.1AEbw §10.6.2) puts a lower half below that of the lowest acceptable PN (now
/// 2) into the next 2^32 epoch, PN 2^32 + 1. Under that PN the ICV fails, and validateFrames
/// Check delivers an integrity-only frame that fails validation (InPktsInvalid) as the standard
/// says. The intended behaviour, which the target had wrong: a replay is never delivered as
/// validated (Ok or Delayed) and moves no state; with Strict it is discarded (InPktsNotValid).
#[test]
fn fuzz_xpn_replay_in_check_mode_is_delivered_invalid_never_ok() {
    // dst ‖ src ‖ 88e5 ‖ TCI 0x21 (SC, AN 1) ‖ SL 2 ‖ PN 1 ‖ SCI ‖ 0800 ‖ ICV, made by
    // `ivnsec frame protect --profile macsec-gcm-aes-xpn-128 --integrity-only` with the target's
    // key 5a…5a, SCI 0200000000010001, SSCI 7a30c118 and salt (fuzz/seed.sh).
    let frame = unhex(
        "020000000002020000000001\
                   88e5210200000001020000000001000108001726f8682b1dac1c4199a23b05519035",
    );
    let key = [0x5au8; 16];
    let kp = KeyParams {
        suite: X128,
        key: &key,
        sci: Sci::from_u64(0x0200_0000_0001_0001),
        an: 1,
        ssci: Some(SSCI),
        salt: Some(salt()),
    };
    for p in providers(X128) {
        for validate in [ValidateFrames::Check, ValidateFrames::Strict] {
            let mut rx = MacsecRx::new(
                p,
                &kp,
                RxOptions {
                    validate,
                    ..strict(0)
                },
            )
            .unwrap();
            let mut b = frame.clone();
            let d = rx.verify_in_place(&mut b).unwrap();
            assert_eq!((d.status, d.pn), (RxStatus::Ok, 1));
            assert_eq!(b[d.range], unhex("0200000000020200000000010800"));
            assert_eq!(rx.next_pn(), 2);

            let mut b = frame.clone();
            let again = rx.verify_in_place(&mut b);
            if validate == ValidateFrames::Check {
                let d = again.unwrap();
                assert_eq!((d.status, d.pn), (RxStatus::Invalid, 0x1_0000_0001));
                assert_eq!(rx.counters().in_pkts_invalid, 1);
            } else {
                assert_eq!(again, Err(DropReason::BadTag));
                assert_eq!(rx.counters().in_pkts_not_valid, 1);
            }
            assert_eq!(rx.counters().in_pkts_ok, 1, "the replay is not validated");
            assert_eq!(rx.next_pn(), 2, "the replay moves no state");
        }
    }
}
