//! AUTOSAR SecOC: known answers, round trips, bit flips, freshness (roll-over, loss, replay,
//! window, verify attempts, exhaustion), configuration errors, hostile input, UDP PDU transport.
//!
//! Known answers: the table `ivnsec_conformance::vectors::secoc::KATS` (published CMAC / HMAC
//! examples split into DataID ‖ Authentic I-PDU ‖ FV, the expected Secured I-PDUs packed by hand;
//! none produced by this code). The command line tests are in
//! `crates/ivnsec/tests/cli_protocols.rs`.
//!
//! Every API test runs once per crypto provider that has the MAC.

use ivnsec_conformance::providers;
use ivnsec_conformance::unhex as h;
use ivnsec_conformance::vectors::secoc::KATS;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::secoc::{
    SecocAlg, SecocConfigError, SecocParams, SecocProtectError, SecocRx, SecocRxOptions, SecocTx,
};
use ivnsec_core::wire::secoc::{Pdus, emit_pdu};
use proptest::prelude::*;

fn rx_opts(last: u64) -> SecocRxOptions {
    SecocRxOptions {
        last_freshness: last,
        ..SecocRxOptions::default()
    }
}

#[test]
fn published_mac_examples_as_secured_pdus_both_directions() {
    let mut ran = 0;
    for v in KATS {
        for p in providers(v.alg) {
            let key = h(v.key);
            let params = v.params(&key);
            let want = h(v.secured);
            let pdu = h(v.pdu);

            let mut tx = SecocTx::new(p, &params, v.fv).unwrap();
            let mut out = vec![0u8; 128];
            let n = tx.protect(&pdu, &mut out).unwrap();
            assert_eq!(
                hex::encode(&out[..n]),
                hex::encode(&want),
                "{} on {}",
                v.source,
                p.name
            );

            // The receiver reconstructs the FV from the last accepted one, with and without a
            // roll-over of the truncated part (whenever the truncated FV has a roll-over).
            let mut lasts = vec![v.fv - 1];
            if v.fv_bits < v.full_fv_bits {
                let m = (1u64 << v.fv_bits) - 1;
                // Same low bits one period below: the upper part + 1 gives the FV back.
                lasts.push(v.fv - (m + 1));
                // All-ones low bits in the period below (≥ the received low bits).
                lasts.push((v.fv & !m) - 1);
            }
            for last in lasts {
                let mut rx = SecocRx::new(p, &params, rx_opts(last)).unwrap();
                let r = rx
                    .verify(&want)
                    .unwrap_or_else(|e| panic!("{} on {}, last {last:#x}: {e}", v.source, p.name));
                assert_eq!(&want[..r.authentic_len], &pdu[..]);
                assert_eq!(r.freshness, v.fv);
                assert_eq!(rx.last_freshness(), v.fv);
            }
            ran += 1;
        }
    }
    // Portable, fast and auto; the OpenSSL provider has no MAC.
    assert_eq!(ran, KATS.len() * 3);
}

// ---- Round trips and bit flips -----------------------------------------------------------------

#[derive(Clone, Debug)]
struct Case {
    alg: SecocAlg,
    provider: usize,
    key: Vec<u8>,
    data_id: u16,
    full_fv_bits: u8,
    fv_bits: u8,
    mac_bits: u16,
    first: u64,
    pdus: Vec<Vec<u8>>,
}

fn case(min_mac_bits: u16) -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(SecocAlg::CmacAes128), Just(SecocAlg::HmacSha256)],
        0usize..2,
        1u8..=64,
        any::<u64>(),
        any::<u64>(),
        any::<u16>(),
        any::<[u8; 40]>(),
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
    )
        .prop_map(
            move |(alg, provider, full, fv_pick, first_pick, data_id, keyb, mut pdus)| {
                let fv_bits = (fv_pick % (u64::from(full) + 1)) as u8;
                let max_mac = alg.max_mac_bits();
                let mac_bits = min_mac_bits + (fv_pick >> 8) as u16 % (max_mac - min_mac_bits + 1);
                let max_fv = if full == 64 {
                    u64::MAX
                } else {
                    (1u64 << full) - 1
                };
                // Room for the batch: first ≤ max − 5.
                let first = if max_fv <= 6 {
                    1
                } else {
                    1 + first_pick % (max_fv - 6)
                };
                // No more PDUs than freshness values are left.
                pdus.truncate((max_fv - first + 1).min(pdus.len() as u64) as usize);
                let key_len = alg
                    .key_len()
                    .unwrap_or(1 + (first_pick >> 58) as usize % 40);
                Case {
                    alg,
                    provider,
                    key: keyb[..key_len].to_vec(),
                    data_id,
                    full_fv_bits: full,
                    fv_bits,
                    mac_bits,
                    first,
                    pdus,
                }
            },
        )
}

impl Case {
    fn params(&self) -> SecocParams<'_> {
        SecocParams {
            fv_bits: self.fv_bits,
            mac_bits: self.mac_bits,
            full_fv_bits: self.full_fv_bits,
            ..SecocParams::new(self.alg, &self.key, self.data_id)
        }
    }

    /// One of the providers that have the MAC, picked by the case.
    fn provider(&self) -> &'static CryptoProvider {
        let ps: Vec<_> = providers(self.alg).collect();
        ps[self.provider % ps.len()]
    }

    fn secured(&self) -> Vec<Vec<u8>> {
        let mut tx = SecocTx::new(self.provider(), &self.params(), self.first).unwrap();
        self.pdus
            .iter()
            .map(|p| {
                let mut out = vec![0u8; p.len() + 40];
                let n = tx.protect(p, &mut out).unwrap();
                out.truncate(n);
                out
            })
            .collect()
    }

    fn rx(&self) -> SecocRx {
        SecocRx::new(self.provider(), &self.params(), rx_opts(self.first - 1)).unwrap()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every PDU of a batch verifies, in order, to its Authentic I-PDU and FV; the Secured I-PDU
    /// is the Authentic I-PDU plus ⌈(fv_bits + mac_bits) / 8⌉ bytes.
    #[test]
    fn round_trip(c in case(1)) {
        let secured = c.secured();
        let mut rx = c.rx();
        for (i, (s, p)) in secured.iter().zip(&c.pdus).enumerate() {
            let extra = (usize::from(c.fv_bits) + usize::from(c.mac_bits)).div_ceil(8);
            prop_assert_eq!(s.len(), p.len() + extra);
            prop_assert_eq!(&s[..p.len()], &p[..]);
            let v = rx.verify(s).map_err(|e| TestCaseError::fail(format!("PDU {i}: {e}")))?;
            prop_assert_eq!(v.authentic_len, p.len());
            prop_assert_eq!(v.freshness, c.first + i as u64);
            prop_assert_eq!(v.attempt, 0);
        }
        prop_assert_eq!(rx.counters().ok_frames, c.pdus.len() as u64);
        prop_assert_eq!(rx.counters().drops.total(), 0);
    }

    /// Any single-bit flip anywhere in a Secured I-PDU is rejected and changes no state. (With a
    /// truncated authenticator of m bits a forged PDU passes with probability 2^-m, so the cases
    /// use m ≥ 40.)
    #[test]
    fn every_single_bit_flip_is_rejected(c in case(40)) {
        let secured = c.secured();
        let s = &secured[0];
        let mut rx = c.rx();
        for bit in 0..s.len() * 8 {
            let mut f = s.clone();
            f[bit / 8] ^= 0x80 >> (bit % 8);
            let r = rx.verify(&f);
            prop_assert!(r.is_err(), "bit {} flipped was accepted: {:?}", bit, r);
            prop_assert_eq!(rx.last_freshness(), c.first - 1);
        }
        prop_assert_eq!(rx.counters().drops.total(), s.len() as u64 * 8);
        prop_assert!(rx.verify(s).is_ok());
    }

    /// Hostile input: any bytes, any lengths and state, never a panic; an accepted PDU advanced
    /// the freshness.
    #[test]
    fn hostile_input_never_panics(
        c in case(1),
        junk in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..60), 1..8),
        attempts in 0u16..4,
        window in proptest::option::of(1u64..1000),
    ) {
        let opts = SecocRxOptions {
            last_freshness: c.first - 1,
            acceptance_window: window,
            verify_attempts: attempts,
        };
        let mut rx = SecocRx::new(c.provider(), &c.params(), opts).unwrap();
        for j in &junk {
            let before = rx.last_freshness();
            if let Ok(v) = rx.verify(j) {
                prop_assert!(v.freshness > before);
                prop_assert!(v.authentic_len < j.len());
            }
        }
        prop_assert_eq!(
            rx.counters().ok_frames + rx.counters().drops.total(),
            junk.len() as u64
        );
    }
}

fn single_params(alg: SecocAlg, fv_bits: u8, mac_bits: u16, full: u8) -> (Vec<u8>, u8, u16, u8) {
    let key = match alg.key_len() {
        Some(n) => (0..n as u8).collect(),
        None => b"a SecOC HMAC key".to_vec(),
    };
    (key, fv_bits, mac_bits, full)
}

fn params(alg: SecocAlg, key: &[u8], fv_bits: u8, mac_bits: u16, full: u8) -> SecocParams<'_> {
    SecocParams {
        fv_bits,
        mac_bits,
        full_fv_bits: full,
        ..SecocParams::new(alg, key, 0x0a0b)
    }
}

fn protect_all(tx: &mut SecocTx, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let pdu = [i as u8, (i >> 8) as u8, 0x5a];
            let mut out = [0u8; 64];
            let len = tx.protect(&pdu, &mut out).unwrap();
            out[..len].to_vec()
        })
        .collect()
}

// ---- Freshness -----------------------------------------------------------------------------------

/// Three full periods of a 3-bit truncated FV (and of an 8-bit one): every roll-over of the low
/// bits is followed by the upper part; also starting just below a carry into the upper part.
#[test]
fn freshness_follows_the_sender_across_roll_overs() {
    for alg in SecocAlg::ALL {
        for p in providers(alg) {
            for (fv_bits, mac_bits, full, first) in [
                (3u8, 28u16, 40u8, 1u64),
                (3, 28, 40, 0x7f_ffff_fffc),
                (8, 24, 64, 0xffff_fffe_ffff_ff00),
                (0, 32, 16, 1),
            ] {
                let (key, fb, mb, fl) = single_params(alg, fv_bits, mac_bits, full);
                let pr = params(alg, &key, fb, mb, fl);
                let mut tx = SecocTx::new(p, &pr, first).unwrap();
                let n = 3usize << fv_bits.max(2);
                let max = if full == 64 {
                    u64::MAX
                } else {
                    (1 << full) - 1
                };
                let n = n.min((max - first + 1) as usize);
                let sent = protect_all(&mut tx, n);
                let mut rx = SecocRx::new(p, &pr, rx_opts(first - 1)).unwrap();
                for (i, s) in sent.iter().enumerate() {
                    let v = rx.verify(s).unwrap_or_else(|e| {
                        panic!(
                            "{alg} {} fv {fv_bits}/{full} first {first:#x}, PDU {i}: {e}",
                            p.name
                        )
                    });
                    assert_eq!(v.freshness, first + i as u64);
                }
            }
        }
    }
}

/// Loss: up to 2^n − 1 lost PDUs are absorbed by the reconstruction; 2^n lost PDUs are not
/// (the upper part is off by one) unless a second verify attempt inside the window recovers.
#[test]
fn lost_pdus_and_verify_attempts() {
    for alg in SecocAlg::ALL {
        for p in providers(alg) {
            let (key, ..) = single_params(alg, 4, 32, 32);
            let pr = params(alg, &key, 4, 32, 32);
            let mut tx = SecocTx::new(p, &pr, 1).unwrap();
            let sent = protect_all(&mut tx, 100); // FVs 1..=100

            // 15 lost (FV 1 → 17): accepted.
            let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
            rx.verify(&sent[0]).unwrap();
            assert_eq!(rx.verify(&sent[16]).unwrap().freshness, 17);

            // 16 lost (FV 1 → 18): the low bits say 2, reconstructed as 2, MAC fails.
            let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
            rx.verify(&sent[0]).unwrap();
            assert_eq!(rx.verify(&sent[17]), Err(DropReason::BadTag));
            assert_eq!(rx.last_freshness(), 1);

            // One more attempt but the default window (16): 18 − 1 > 16, not tried.
            let opts = SecocRxOptions {
                last_freshness: 1,
                acceptance_window: None,
                verify_attempts: 1,
            };
            let mut rx = SecocRx::new(p, &pr, opts).unwrap();
            assert_eq!(rx.acceptance_window(), 16);
            assert_eq!(rx.verify(&sent[17]), Err(DropReason::BadTag));

            // Window 32 and one more attempt: FV 2 fails, FV 18 verifies on attempt 1.
            let opts = SecocRxOptions {
                last_freshness: 1,
                acceptance_window: Some(32),
                verify_attempts: 1,
            };
            let mut rx = SecocRx::new(p, &pr, opts).unwrap();
            let v = rx.verify(&sent[17]).unwrap();
            assert_eq!((v.freshness, v.attempt), (18, 1));
            // From 18 (low bits 2) with W = 32: FV 50 has the same low bits, so the first
            // candidate is 34 and attempt 1 is 50, the window's edge.
            let rx_at_18 = |w: u64, attempts: u16| {
                let o = SecocRxOptions {
                    last_freshness: 18,
                    acceptance_window: Some(w),
                    verify_attempts: attempts,
                };
                SecocRx::new(p, &pr, o).unwrap()
            };
            let v = rx_at_18(32, 5).verify(&sent[49]).unwrap();
            assert_eq!((v.freshness, v.attempt), (50, 1));
            // FV 51: candidates 19, 35, 51; 51 is past 18 + 32, so not tried.
            assert_eq!(rx_at_18(32, 5).verify(&sent[50]), Err(DropReason::BadTag));
            // W = 33 reaches it on attempt 2, but only when two extra attempts are allowed.
            assert_eq!(rx_at_18(33, 1).verify(&sent[50]), Err(DropReason::BadTag));
            let v = rx_at_18(33, 2).verify(&sent[50]).unwrap();
            assert_eq!((v.freshness, v.attempt), (51, 2));
        }
    }
}

/// Replays: with a truncated FV a replayed PDU reconstructs to a newer FV and its MAC fails;
/// with the whole FV on the wire it is a duplicate or too old. Neither changes the state.
#[test]
fn replays_are_rejected() {
    for alg in SecocAlg::ALL {
        for p in providers(alg) {
            let (key, ..) = single_params(alg, 8, 24, 64);
            let pr = params(alg, &key, 8, 24, 64);
            let mut tx = SecocTx::new(p, &pr, 1).unwrap();
            let sent = protect_all(&mut tx, 3);
            let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
            rx.verify(&sent[0]).unwrap();
            rx.verify(&sent[1]).unwrap();
            assert_eq!(rx.verify(&sent[1]), Err(DropReason::BadTag));
            assert_eq!(rx.verify(&sent[0]), Err(DropReason::BadTag));
            assert_eq!(rx.last_freshness(), 2);
            assert_eq!(rx.verify(&sent[2]).unwrap().freshness, 3);
            assert_eq!(rx.counters().drops.get(DropReason::BadTag), 2);

            let pr = params(alg, &key, 16, 24, 16);
            let mut tx = SecocTx::new(p, &pr, 1).unwrap();
            let sent = protect_all(&mut tx, 3);
            let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
            rx.verify(&sent[0]).unwrap();
            rx.verify(&sent[1]).unwrap();
            assert_eq!(rx.verify(&sent[1]), Err(DropReason::ReplayDuplicate));
            assert_eq!(rx.verify(&sent[0]), Err(DropReason::ReplayTooOld));
            assert_eq!(rx.last_freshness(), 2);
            assert_eq!(rx.counters().drops.get(DropReason::ReplayDuplicate), 1);
            assert_eq!(rx.counters().drops.get(DropReason::ReplayTooOld), 1);
            // Reordering is not accepted either: FV 3 then 2.
            let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
            rx.verify(&sent[2]).unwrap();
            assert_eq!(rx.verify(&sent[1]), Err(DropReason::ReplayTooOld));
        }
    }
}

/// The acceptance window: last < FV ≤ last + W, at its edges, truncated or not.
#[test]
fn acceptance_window_bounds() {
    for alg in SecocAlg::ALL {
        for p in providers(alg) {
            let (key, ..) = single_params(alg, 8, 24, 64);
            for (fv_bits, full) in [(16u8, 16u8), (8, 64), (4, 20)] {
                let pr = params(alg, &key, fv_bits, 24, full);
                let last = 100u64;
                let mut tx = SecocTx::new(p, &pr, last + 1).unwrap();
                let sent = protect_all(&mut tx, 12); // FVs 101..=112
                for w in [1u64, 5, 11] {
                    let opts = SecocRxOptions {
                        last_freshness: last,
                        acceptance_window: Some(w),
                        verify_attempts: 3,
                    };
                    for (i, s) in sent.iter().enumerate() {
                        let fv = last + 1 + i as u64;
                        let mut rx = SecocRx::new(p, &pr, opts).unwrap();
                        let r = rx.verify(s);
                        if fv <= last + w {
                            assert_eq!(r.map(|v| v.freshness), Ok(fv), "W {w} fv {fv}");
                        } else {
                            assert_eq!(r, Err(DropReason::FreshnessWindow), "W {w} fv {fv}");
                            assert_eq!(rx.counters().drops.get(DropReason::FreshnessWindow), 1);
                        }
                    }
                }
            }
        }
    }
}

/// The counter never wraps: after the largest FV protect refuses; a receiver at the largest FV
/// accepts nothing.
#[test]
fn freshness_exhaustion() {
    for alg in SecocAlg::ALL {
        for p in providers(alg) {
            let (key, ..) = single_params(alg, 2, 24, 4);
            let pr = params(alg, &key, 2, 24, 4);
            let mut tx = SecocTx::new(p, &pr, 14).unwrap();
            let mut out = [0u8; 16];
            let a = tx.protect(&[1], &mut out).unwrap();
            let first = out[..a].to_vec();
            let b = tx.protect(&[2], &mut out).unwrap();
            let second = out[..b].to_vec();
            assert_eq!(tx.next_freshness(), None);
            assert_eq!(
                tx.protect(&[3], &mut out),
                Err(SecocProtectError::FreshnessExhausted)
            );
            assert_eq!(
                tx.protect(&[3], &mut out),
                Err(SecocProtectError::FreshnessExhausted)
            );
            assert_eq!(tx.counters().frames, 2);

            let mut rx = SecocRx::new(p, &pr, rx_opts(13)).unwrap();
            assert_eq!(rx.verify(&first).unwrap().freshness, 14);
            assert_eq!(rx.verify(&second).unwrap().freshness, 15);
            // Nothing is newer than 15 = 2^4 − 1: the low bits of FV 14 reconstruct past it.
            assert_eq!(rx.verify(&first), Err(DropReason::ReplayTooOld));

            let pr = params(alg, &key, 64, 24, 64);
            let mut tx = SecocTx::new(p, &pr, u64::MAX).unwrap();
            assert!(tx.protect(&[1], &mut out).is_ok());
            assert_eq!(
                tx.protect(&[1], &mut out),
                Err(SecocProtectError::FreshnessExhausted)
            );
            // A full buffer check comes first and spends nothing.
            let mut tx = SecocTx::new(p, &pr, 5).unwrap();
            assert_eq!(
                tx.protect(&[1; 20], &mut out),
                Err(SecocProtectError::BufferTooSmall { needed: 31 })
            );
            assert_eq!(tx.next_freshness(), Some(5));
        }
    }
}

#[test]
fn drops_are_counted_with_their_reason() {
    let alg = SecocAlg::CmacAes128;
    for p in providers(alg) {
        let (key, ..) = single_params(alg, 3, 28, 40);
        let pr = params(alg, &key, 3, 28, 40);
        let mut tx = SecocTx::new(p, &pr, 1).unwrap();
        let sent = protect_all(&mut tx, 2);
        let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
        // Shorter than the 4 bytes of authentication information.
        assert_eq!(rx.verify(&[1, 2, 3]), Err(DropReason::Truncated));
        // The padding bit (last bit: 3 + 28 = 31 of 32) set.
        let mut pad = sent[0].clone();
        *pad.last_mut().unwrap() |= 1;
        assert_eq!(rx.verify(&pad), Err(DropReason::ReservedBits));
        let mut tag = sent[0].clone();
        tag[4] ^= 0x02;
        assert_eq!(rx.verify(&tag), Err(DropReason::BadTag));
        assert!(rx.verify(&sent[0]).is_ok());
        assert!(rx.verify(&sent[1]).is_ok());
        let c = rx.counters();
        assert_eq!((c.ok_frames, c.ok_bytes), (2, 6));
        for r in [
            DropReason::Truncated,
            DropReason::ReservedBits,
            DropReason::BadTag,
        ] {
            assert_eq!(c.drops.get(r), 1, "{r}");
        }
        assert_eq!(c.drops.total(), 3);
    }
    assert_eq!(DropReason::FreshnessWindow.name(), "freshness_window");
    assert_eq!(
        DropReason::from_name("freshness_window"),
        Some(DropReason::FreshnessWindow)
    );
}

/// A different Data ID, key or length configuration does not verify.
#[test]
fn data_id_and_key_are_bound() {
    for alg in SecocAlg::ALL {
        for p in providers(alg) {
            let (key, ..) = single_params(alg, 8, 64, 64);
            let pr = params(alg, &key, 8, 64, 64);
            let mut tx = SecocTx::new(p, &pr, 1).unwrap();
            let s = &protect_all(&mut tx, 1)[0];
            let other_id = SecocParams {
                data_id: 0x0a0c,
                ..pr
            };
            let mut rx = SecocRx::new(p, &other_id, rx_opts(0)).unwrap();
            assert_eq!(rx.verify(s), Err(DropReason::BadTag));
            let mut k2 = key.clone();
            k2[0] ^= 1;
            let mut rx = SecocRx::new(p, &params(alg, &k2, 8, 64, 64), rx_opts(0)).unwrap();
            assert_eq!(rx.verify(s), Err(DropReason::BadTag));
            // The full FV length is in the MAC input (8 vs 7 bytes).
            let mut rx = SecocRx::new(p, &params(alg, &key, 8, 64, 56), rx_opts(0)).unwrap();
            assert_eq!(rx.verify(s), Err(DropReason::BadTag));
            let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
            assert!(rx.verify(s).is_ok());
        }
    }
}

#[test]
fn config_errors() {
    let k16 = [7u8; 16];
    let c = SecocAlg::CmacAes128;
    let hm = SecocAlg::HmacSha256;
    for p in providers([c, hm]) {
        let err = |pr: SecocParams<'_>| SecocTx::new(p, &pr, 1).unwrap_err();
        assert_eq!(
            err(SecocParams::new(c, &k16[..15], 1)),
            SecocConfigError::BadKeyLength {
                alg: c,
                expected: 16,
                got: 15
            }
        );
        assert_eq!(
            err(SecocParams::new(hm, &[], 1)),
            SecocConfigError::EmptyKey { alg: hm }
        );
        assert_eq!(
            err(params(c, &k16, 0, 24, 0)),
            SecocConfigError::FullFvBits { got: 0 }
        );
        assert_eq!(
            err(params(c, &k16, 8, 24, 65)),
            SecocConfigError::FullFvBits { got: 65 }
        );
        assert_eq!(
            err(params(c, &k16, 9, 24, 8)),
            SecocConfigError::FvBits { got: 9, full: 8 }
        );
        assert_eq!(
            err(params(c, &k16, 8, 0, 64)),
            SecocConfigError::MacBits {
                alg: c,
                got: 0,
                max: 128
            }
        );
        assert_eq!(
            err(params(c, &k16, 8, 129, 64)),
            SecocConfigError::MacBits {
                alg: c,
                got: 129,
                max: 128
            }
        );
        assert!(SecocTx::new(p, &params(hm, &k16, 8, 256, 64), 1).is_ok());
        assert_eq!(
            err(params(hm, &k16, 8, 257, 64)),
            SecocConfigError::MacBits {
                alg: hm,
                got: 257,
                max: 256
            }
        );
        let pr = params(c, &k16, 4, 24, 8);
        assert_eq!(
            SecocTx::new(p, &pr, 0).unwrap_err(),
            SecocConfigError::BadFirstFreshness { got: 0, max: 255 }
        );
        assert_eq!(
            SecocTx::new(p, &pr, 256).unwrap_err(),
            SecocConfigError::BadFirstFreshness { got: 256, max: 255 }
        );
        assert_eq!(
            SecocRx::new(p, &pr, rx_opts(256)).unwrap_err(),
            SecocConfigError::BadLastFreshness { got: 256, max: 255 }
        );
        let zero = SecocRxOptions {
            acceptance_window: Some(0),
            ..SecocRxOptions::default()
        };
        assert_eq!(
            SecocRx::new(p, &pr, zero).unwrap_err(),
            SecocConfigError::ZeroWindow
        );
        // The messages name the option and the range.
        assert!(
            err(params(c, &k16, 9, 24, 8))
                .to_string()
                .contains("--fv-bits 9 out of range 0..=8")
        );
        assert!(
            err(params(c, &k16, 8, 129, 64))
                .to_string()
                .contains("--mac-bits 129 out of range 1..=128")
        );
        // The default window is 2^fv_bits, saturating.
        let rx = SecocRx::new(p, &params(c, &k16, 64, 24, 64), rx_opts(0)).unwrap();
        assert_eq!(rx.acceptance_window(), u64::MAX);
        let rx = SecocRx::new(p, &params(c, &k16, 0, 24, 64), rx_opts(0)).unwrap();
        assert_eq!(rx.acceptance_window(), 1);
    }
}

/// Several Secured I-PDUs in one UDP datagram behind AUTOSAR PDU headers.
#[test]
fn secured_pdus_in_one_datagram() {
    let alg = SecocAlg::HmacSha256;
    for p in providers(alg) {
        let (key, ..) = single_params(alg, 8, 24, 64);
        let pr = params(alg, &key, 8, 24, 64);
        let mut tx = SecocTx::new(p, &pr, 1).unwrap();
        let sent = protect_all(&mut tx, 3);
        let mut dgram = [0u8; 256];
        let mut off = 0;
        for (i, s) in sent.iter().enumerate() {
            off = emit_pdu(&mut dgram, off, 0x100 + i as u32, s).unwrap();
        }
        let mut rx = SecocRx::new(p, &pr, rx_opts(0)).unwrap();
        let mut ids = Vec::new();
        for r in Pdus::new(&dgram[..off]) {
            let (id, pdu) = r.unwrap();
            let v = rx.verify(pdu).unwrap();
            ids.push((id, v.freshness));
        }
        assert_eq!(ids, [(0x100, 1), (0x101, 2), (0x102, 3)]);
        // A length that runs past the datagram stops the walk with a reason after the good PDUs.
        let mut bad = dgram[..off].to_vec();
        let last_len_at = off - sent[2].len() - 4;
        bad[last_len_at + 3] += 1;
        let results: Vec<_> = Pdus::new(&bad).collect();
        assert_eq!(results.len(), 3);
        assert!(results[2].is_err());
    }
}
