//! The MACsec SecY (`ivnsec_core::sa::secy`, IEEE 802.1AE-2018 clause 10): the Annex C frames
//! through a SecY (the receive SC found by explicit and by end-station SCI), SA switching
//! without losing frames in flight, retirement, unknown SCIs and ANs, XPN across the 2^32
//! boundary with two transmitters under one SAK, PN exhaustion. Once per provider.

use ivnsec_conformance::batch::{Rng, out_of_order};
use ivnsec_conformance::vectors::macsec::{KATS, salt};
use ivnsec_conformance::{providers, unhex};
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::macsec::{CipherSuite, RxOptions, RxStatus, TxOptions, ValidateFrames};
use ivnsec_core::sa::secy::{
    MAX_RX_SCS, SaKey, SecY, SecyConfig, SecyError, TxError, ssci_by_sci_order,
};
use ivnsec_core::wire::macsec::Sci;

const A: u64 = 0x0200_0000_000A_0001;
const B: u64 = 0x0200_0000_000B_0001;
const C: u64 = 0x0200_0000_000C_0001;

fn cfg(suite: CipherSuite, sci: u64, window: u32) -> SecyConfig {
    SecyConfig {
        suite,
        sci: Sci::from_u64(sci),
        tx: TxOptions {
            confidentiality: true,
            include_sci: true,
            es: false,
            scb: false,
        },
        rx: RxOptions {
            validate: ValidateFrames::Strict,
            replay_protect: true,
            replay_window: window,
            lowest_pn: 1,
        },
    }
}

fn key(sak: &[u8], kn: u32) -> SaKey<'_> {
    SaKey {
        sak,
        ssci: None,
        salt: None,
        key_number: kn,
    }
}

/// A key with SSCI and salt where the suite is XPN.
fn xkey(sak: &[u8], xpn: bool, ssci: u32, kn: u32) -> SaKey<'_> {
    SaKey {
        sak,
        ssci: xpn.then_some(ssci),
        salt: xpn.then(salt),
        key_number: kn,
    }
}

/// dst ‖ src ‖ EtherType 0x88B6 ‖ `i` as 4 bytes ‖ 40 bytes of `i`.
fn plain(i: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0xB, 2, 0, 0, 0, 0, 0xA, 0x88, 0xB6];
    f.extend_from_slice(&[0, 0, 0, i]);
    f.extend_from_slice(&[i; 40]);
    f
}

fn protect(s: &mut SecY, p: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; s.tx.protected_len(p.len())];
    let (n, _) = s.tx.protect(p, &mut out).unwrap();
    out.truncate(n);
    out
}

/// The plain frame, AN and PN of a delivered frame; the reason and SC of a discarded one.
type Outcome = Result<(Vec<u8>, u8, u64), (DropReason, Option<Sci>)>;

fn deliver(s: &mut SecY, f: &[u8]) -> Outcome {
    let mut b = f.to_vec();
    match s.rx.verify_in_place(&mut b) {
        Ok(r) => {
            assert_eq!(r.status, RxStatus::Ok);
            Ok((b[r.range].to_vec(), r.an, r.pn))
        }
        Err(d) => Err((d.reason, d.sci)),
    }
}

#[test]
fn annex_c_frames_through_a_secy() {
    for k in KATS {
        for p in providers(k.suite) {
            let sak = unhex(k.key);
            let xpn = k.suite.is_xpn();
            let ssci = xpn.then_some(ivnsec_conformance::vectors::macsec::SSCI);
            let sa_key = SaKey {
                sak: &sak,
                ssci,
                salt: xpn.then(salt),
                key_number: 1,
            };
            let mut c = cfg(k.suite, k.sci, 0);
            c.tx = k.tx_opts();
            let mut tx = SecY::new(p, &c).unwrap();
            tx.tx.install(k.an, &sa_key, k.pn).unwrap();
            tx.tx.enable(k.an).unwrap();
            assert_eq!(tx.tx.next_pn(), Some(k.pn));
            let out = protect(&mut tx, &k.plain());
            assert_eq!(
                hex::encode_upper(&out),
                hex::encode_upper(k.protected()),
                "{} ({})",
                k.name,
                p.name
            );

            // A receiver with two peers: the frame's SC is found by its SCI (explicit, or the
            // end-station SCI of its source address), not by being the only one.
            let mut rx = SecY::new(p, &cfg(k.suite, 0x0200_0000_0099_0001, 0)).unwrap();
            rx.rx.add_sc(Sci::from_u64(A)).unwrap();
            rx.rx
                .install(Sci::from_u64(k.sci), k.an, &sa_key, k.pn)
                .unwrap();
            let (back, an, pn) = deliver(&mut rx, &k.protected())
                .unwrap_or_else(|e| panic!("{} ({}): {e:?}", k.name, p.name));
            assert_eq!(back, k.plain(), "{}", k.name);
            assert_eq!((an, pn), (k.an, k.pn), "{}", k.name);
            let sa = rx.rx.sas().next().unwrap();
            assert_eq!(sa.next_pn, k.pn + 1);
            assert_eq!(rx.rx.totals().in_pkts_ok, 1);
        }
    }
}

/// Make-before-break: frames sent under the old AN before the switch, still in flight after it,
/// verify alongside the frames under the new AN; none is lost.
#[test]
fn switching_the_an_loses_no_frame_in_flight() {
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            let (old, new) = (vec![0x11u8; suite.key_len()], vec![0x22u8; suite.key_len()]);
            let xpn = suite.is_xpn();
            let k = |sak, kn| xkey(sak, xpn, 1, kn);
            let mut a = SecY::new(p, &cfg(suite, A, 0)).unwrap();
            let mut b = SecY::new(p, &cfg(suite, B, 0)).unwrap();
            a.tx.install(0, &k(&old, 1), 1).unwrap();
            a.tx.enable(0).unwrap();
            b.rx.install(Sci::from_u64(A), 0, &k(&old, 1), 1).unwrap();

            let mut wire: Vec<Vec<u8>> = (0..5).map(|i| protect(&mut a, &plain(i))).collect();
            // The key source: the receiver gets the new SA first, then the sender switches.
            b.rx.install(Sci::from_u64(A), 1, &k(&new, 2), 1).unwrap();
            a.tx.install(1, &k(&new, 2), 1).unwrap();
            a.tx.enable(1).unwrap();
            assert_eq!(a.tx.encoding_an(), Some(1));
            assert_eq!(a.tx.next_pn(), Some(1));
            wire.extend((5..10).map(|i| protect(&mut a, &plain(i))));
            // In flight: the old AN's frames arrive interleaved with the new one's.
            let order = [5, 0, 6, 1, 7, 2, 8, 3, 9, 4];
            for &i in &order {
                let (back, an, _) = deliver(&mut b, &wire[i])
                    .unwrap_or_else(|e| panic!("{suite} ({}): frame {i}: {e:?}", p.name));
                assert_eq!(back, plain(i as u8));
                assert_eq!(an, if i < 5 { 0 } else { 1 });
            }
            assert_eq!(b.rx.totals().in_pkts_ok, 10);
            assert_eq!(b.rx.totals().drops.total(), 0);

            // The old SA retires on both sides: a late frame under it is discarded and counted.
            a.tx.retire(0).unwrap();
            b.rx.retire(Sci::from_u64(A), 0).unwrap();
            let late = {
                let mut s = SecY::new(p, &cfg(suite, A, 0)).unwrap();
                s.tx.install(0, &k(&old, 1), 100).unwrap();
                s.tx.enable(0).unwrap();
                protect(&mut s, &plain(42))
            };
            assert_eq!(
                deliver(&mut b, &late),
                Err((DropReason::NotUsingSa, Some(Sci::from_u64(A))))
            );
            assert_eq!(b.rx.secy_counters().in_pkts_not_using_sa, 1);
            assert_eq!(b.rx.totals().drops.get(DropReason::NotUsingSa), 1);
            // The new SA goes on.
            let f = protect(&mut a, &plain(11));
            assert_eq!(deliver(&mut b, &f).unwrap().0, plain(11));
            assert_eq!(a.tx.sas().count(), 1);
            assert_eq!(a.tx.counters().out_pkts_encrypted, 11, "{suite}");
        }
    }
}

#[test]
fn a_frame_from_an_unknown_sci_is_discarded_and_counted() {
    for p in providers(CipherSuite::GcmAes128) {
        let sak = [0x33u8; 16];
        let mut a = SecY::new(p, &cfg(CipherSuite::GcmAes128, A, 0)).unwrap();
        let mut c = SecY::new(p, &cfg(CipherSuite::GcmAes128, C, 0)).unwrap();
        let mut b = SecY::new(p, &cfg(CipherSuite::GcmAes128, B, 0)).unwrap();
        for s in [&mut a, &mut c] {
            s.tx.install(0, &key(&sak, 1), 1).unwrap();
            s.tx.enable(0).unwrap();
        }
        b.rx.install(Sci::from_u64(A), 0, &key(&sak, 1), 1).unwrap();
        // C holds the SAK but is no peer of B: its frame names an SCI B has no SC for.
        let f = protect(&mut c, &plain(1));
        assert_eq!(deliver(&mut b, &f), Err((DropReason::NoSci, None)));
        assert_eq!(b.rx.secy_counters().in_pkts_no_sci, 1);
        assert_eq!(b.rx.totals().drops.get(DropReason::NoSci), 1);
        // A is.
        let f = protect(&mut a, &plain(2));
        assert_eq!(deliver(&mut b, &f).unwrap().0, plain(2));
        // An AN A never installed.
        let mut g = protect(&mut a, &plain(3));
        g[14] = (g[14] & !3) | 2;
        assert_eq!(
            deliver(&mut b, &g),
            Err((DropReason::NotUsingSa, Some(Sci::from_u64(A))))
        );
        // One flipped bit: the SA's ICV check refuses it, and says whose SC it was.
        let mut h = protect(&mut a, &plain(4));
        let last = h.len() - 20;
        h[last] ^= 0x01;
        assert_eq!(
            deliver(&mut b, &h),
            Err((DropReason::BadTag, Some(Sci::from_u64(A))))
        );
        // No SecTAG; a bad SecTAG (V = 1).
        assert_eq!(
            deliver(&mut b, &plain(5)),
            Err((DropReason::Untagged, None))
        );
        let mut v = protect(&mut a, &plain(6));
        v[14] |= 0x80;
        assert_eq!(deliver(&mut b, &v), Err((DropReason::BadVersion, None)));
        let t = b.rx.totals();
        assert_eq!(t.in_pkts_ok, 1);
        assert_eq!(t.in_pkts_no_tag, 1);
        assert_eq!(t.in_pkts_bad_tag, 1);
        assert_eq!(t.in_pkts_not_valid, 1);
        assert_eq!(t.drops.total(), 5);
        // Truncated input never panics.
        for n in 0..30 {
            let mut short = f[..n.min(f.len())].to_vec();
            assert!(b.rx.verify_in_place(&mut short).is_err());
        }
    }
}

/// XPN: two members of one CA send under one SAK, told apart by their SSCIs (assigned in SCI
/// order); both cross the 2^32 PN boundary and the receiver recovers every 64-bit PN.
#[test]
fn xpn_two_senders_under_one_sak_across_the_32_bit_boundary() {
    for suite in [CipherSuite::GcmAesXpn128, CipherSuite::GcmAesXpn256] {
        for p in providers(suite) {
            let sak = vec![0x44u8; suite.key_len()];
            let sscis = ssci_by_sci_order(&[Sci::from_u64(C), Sci::from_u64(A)]);
            assert_eq!(sscis, vec![(Sci::from_u64(A), 1), (Sci::from_u64(C), 2)]);
            let k = |ssci| SaKey {
                sak: &sak,
                ssci: Some(ssci),
                salt: Some(salt()),
                key_number: 1,
            };
            let start = (1u64 << 32) - 2;
            let mut a = SecY::new(p, &cfg(suite, A, 0)).unwrap();
            let mut c = SecY::new(p, &cfg(suite, C, 0)).unwrap();
            a.tx.install(3, &k(1), start).unwrap();
            a.tx.enable(3).unwrap();
            c.tx.install(3, &k(2), start).unwrap();
            c.tx.enable(3).unwrap();
            let mut b = SecY::new(p, &cfg(suite, B, 0)).unwrap();
            b.rx.install(Sci::from_u64(A), 3, &k(1), start).unwrap();
            b.rx.install(Sci::from_u64(C), 3, &k(2), start).unwrap();
            for i in 0..4u8 {
                let pn = start + u64::from(i);
                assert_eq!(a.tx.next_pn(), Some(pn));
                let fa = protect(&mut a, &plain(i));
                let fc = protect(&mut c, &plain(i));
                // Same plain frame, same PN, same SAK: the SSCI alone keeps the nonces apart.
                assert_ne!(fa[28..], fc[28..], "{suite}: equal ciphertexts");
                assert_eq!(
                    u32::from_be_bytes(fa[16..20].try_into().unwrap()),
                    pn as u32
                );
                for f in [&fa, &fc] {
                    let (back, _, got) = deliver(&mut b, f).unwrap();
                    assert_eq!((back, got), (plain(i), pn), "{suite} ({})", p.name);
                }
            }
            // A's first frame replayed after the boundary: its 32 PN bits recover to a PN of the
            // next 2^32 epoch (above the lowest acceptable PN), whose ICV does not verify.
            let mut a2 = SecY::new(p, &cfg(suite, A, 0)).unwrap();
            a2.tx.install(3, &k(1), start).unwrap();
            a2.tx.enable(3).unwrap();
            let replay = protect(&mut a2, &plain(0));
            assert!(deliver(&mut b, &replay).is_err());
            // A receiver that mixed up the SSCIs rejects both.
            let mut wrong = SecY::new(p, &cfg(suite, B, 0)).unwrap();
            wrong.rx.install(Sci::from_u64(A), 3, &k(2), start).unwrap();
            let mut a3 = SecY::new(p, &cfg(suite, A, 0)).unwrap();
            a3.tx.install(3, &k(1), start).unwrap();
            a3.tx.enable(3).unwrap();
            let f = protect(&mut a3, &plain(9));
            assert_eq!(
                deliver(&mut wrong, &f),
                Err((DropReason::BadTag, Some(Sci::from_u64(A))))
            );
        }
    }
}

/// PN exhaustion stops the SecY: the last PN goes out, then every frame is refused and
/// counted, until a new SA is enabled.
#[test]
fn pn_exhaustion_stops_transmission_until_a_new_sa_is_in_use() {
    for p in providers(CipherSuite::GcmAes128) {
        let sak = [0x55u8; 16];
        let mut a = SecY::new(p, &cfg(CipherSuite::GcmAes128, A, 0)).unwrap();
        let mut b = SecY::new(p, &cfg(CipherSuite::GcmAes128, B, 0)).unwrap();
        let start = u64::from(u32::MAX) - 1;
        a.tx.install(0, &key(&sak, 1), start).unwrap();
        // Nothing in use yet: refused and counted.
        let mut buf = vec![0u8; 200];
        assert_eq!(a.tx.protect(&plain(0), &mut buf), Err(TxError::NoSa));
        assert_eq!(a.tx.discards().no_sa, 1);
        a.tx.enable(0).unwrap();
        b.rx.install(Sci::from_u64(A), 0, &key(&sak, 1), start)
            .unwrap();
        for i in 0..2 {
            let f = protect(&mut a, &plain(i));
            assert_eq!(deliver(&mut b, &f).unwrap().2, start + u64::from(i));
        }
        assert!(a.tx.exhausted());
        assert_eq!(a.tx.next_pn(), None);
        for _ in 0..3 {
            assert_eq!(a.tx.protect(&plain(9), &mut buf), Err(TxError::Exhausted));
        }
        assert_eq!(a.tx.discards().pn_exhausted, 3);
        // A new SAK under AN 1 starts at PN 1.
        let sak2 = [0x66u8; 16];
        a.tx.install(1, &key(&sak2, 2), 1).unwrap();
        b.rx.install(Sci::from_u64(A), 1, &key(&sak2, 2), 1)
            .unwrap();
        a.tx.enable(1).unwrap();
        let f = protect(&mut a, &plain(3));
        assert_eq!(deliver(&mut b, &f).unwrap(), (plain(3), 1, 1));
        assert_eq!(a.tx.counters().out_pkts_encrypted, 3);
    }
}

#[test]
fn configuration_is_checked_and_bounded() {
    let p: &CryptoProvider = providers(CipherSuite::GcmAes128).next().unwrap();
    let mut s = SecY::new(p, &cfg(CipherSuite::GcmAes128, A, 0)).unwrap();
    let sak = [0x77u8; 16];
    assert_eq!(s.tx.install(4, &key(&sak, 1), 1), Err(SecyError::BadAn(4)));
    assert!(matches!(
        s.tx.install(0, &key(&sak[..15], 1), 1),
        Err(SecyError::Macsec(_))
    ));
    assert!(matches!(
        s.tx.install(0, &key(&sak, 1), 0),
        Err(SecyError::Macsec(_))
    ));
    assert_eq!(
        s.tx.enable(2),
        Err(SecyError::NoSa {
            sci: Sci::from_u64(A),
            an: 2
        })
    );
    assert_eq!(
        s.rx.add_sc(Sci::from_u64(A)),
        Err(SecyError::OwnSci(Sci::from_u64(A)))
    );
    assert_eq!(
        s.rx.retire(Sci::from_u64(B), 0),
        Err(SecyError::NoSc(Sci::from_u64(B)))
    );
    for i in 0..MAX_RX_SCS as u64 {
        s.rx.add_sc(Sci::from_u64(0x0400_0000_0000_0001 + (i << 16)))
            .unwrap();
    }
    assert_eq!(
        s.rx.add_sc(Sci::from_u64(B)),
        Err(SecyError::TooManyScs { max: MAX_RX_SCS })
    );
    // XPN without SSCI and salt is refused.
    let mut x = SecY::new(p, &cfg(CipherSuite::GcmAesXpn128, A, 0)).unwrap();
    assert!(matches!(
        x.tx.install(0, &key(&sak, 1), 1),
        Err(SecyError::Macsec(_))
    ));
    // The key never shows in Debug output.
    let dbg = format!("{:?}", key(&sak, 1));
    assert!(dbg.contains("<16 bytes>") && !dbg.contains("119"), "{dbg}");
}

/// What a receiver made of one frame: the status, plain frame (unless Invalid: its content is
/// unspecified), SC, AN and PN of a delivery; the reason and SC of a drop.
type Verdict = Result<(RxStatus, Option<Vec<u8>>, Sci, u8, u64), (DropReason, Option<Sci>)>;

fn verdict(
    b: &[u8],
    r: Result<ivnsec_core::sa::secy::Received, ivnsec_core::sa::secy::Dropped>,
) -> Verdict {
    match r {
        Ok(r) => Ok((
            r.status,
            (r.status != RxStatus::Invalid).then(|| b[r.range].to_vec()),
            r.sci,
            r.an,
            r.pn,
        )),
        Err(d) => Err((d.reason, d.sci)),
    }
}

/// The traffic a receiver sees from two peers and an attacker: frames in order, swapped with
/// a neighbour, repeated, forged (one bit flipped), cut short, untagged, and from an SC the
/// receiver does not know; now and then a peer's PN leaps 3,000 ahead (beyond the duplicate
/// bitmap's reach, `DUP_BITS`, so that with a larger window a replay of an older frame is
/// judged by the window alone).
fn hostile_wire(rng: &mut Rng, suite: CipherSuite, xpn_start: u64, conf: bool) -> Vec<Vec<u8>> {
    let sak = [0x5Au8; 32];
    let sak = &sak[..suite.key_len()];
    let xpn = suite.is_xpn();
    let mut peers = Vec::new();
    for (i, sci) in [A, B, C].into_iter().enumerate() {
        let mut c = cfg(suite, sci, 0);
        c.tx.confidentiality = conf;
        let mut s = SecY::new(providers(suite).next().unwrap(), &c).unwrap();
        // C's SA is under another key: the receiver knows no SC of C anyway.
        s.tx.install(0, &xkey(sak, xpn, i as u32 + 1, 1), xpn_start)
            .unwrap();
        s.tx.enable(0).unwrap();
        peers.push(s);
    }
    let mut sent: Vec<Vec<u8>> = Vec::new();
    let mut wire = Vec::new();
    for i in 0..64u8 {
        let who = if rng.below(10) == 0 { 2 } else { rng.below(2) };
        let f = protect(&mut peers[who], &plain(i));
        sent.push(f.clone());
        match rng.below(12) {
            0 if !sent.is_empty() => {
                // A replay of a recent frame, then the frame.
                let back = rng.below(sent.len().min(12));
                wire.push(sent[sent.len() - 1 - back].clone());
                wire.push(f);
            }
            1 => {
                let mut g = f.clone();
                let at = 20 + rng.below(g.len() - 20);
                g[at] ^= 1 << rng.below(8);
                wire.push(g);
                wire.push(f);
            }
            2 => wire.push(f[..10 + rng.below(f.len() - 10)].to_vec()),
            3 => wire.push(plain(i)),
            4 if !wire.is_empty() => {
                // Swapped with the one before.
                let last = wire.pop().unwrap();
                wire.push(f);
                wire.push(last);
            }
            5 if who < 2 => {
                wire.push(f);
                let next = peers[who].tx.next_pn().unwrap();
                let k = xkey(sak, xpn, who as u32 + 1, 1);
                peers[who].tx.install(0, &k, next + 3000).unwrap();
                peers[who].tx.enable(0).unwrap();
            }
            _ => wire.push(f),
        }
    }
    wire
}

/// Frames checked in arrival order, opened out of order on two threads at once, committed in
/// arrival order are judged exactly as one by one: the same verdict for every frame (a frame
/// that came twice within a batch delivered once), the same counters, the same window — the
/// receive stage of a data plane with crypto workers. Every suite, confidentiality on and off,
/// strict / check / disabled validation, replay protection on and off, windows 0, 3, 32 and
/// 4096 (beyond the duplicate bitmap), XPN across the 2^32 boundary; batches of 1 to 24 frames.
#[test]
fn frames_opened_out_of_order_by_workers_are_judged_by_one_replay_window() {
    use ivnsec_core::sa::secy::SecyCheck;
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let mut cases = 0;
    let mut twice_in_a_batch = 0;
    for suite in CipherSuite::ALL {
        let p = providers(suite).next().unwrap();
        let start = if suite.is_xpn() { (1 << 32) - 40 } else { 1 };
        for conf in [true, false] {
            for validate in [
                ValidateFrames::Strict,
                ValidateFrames::Check,
                ValidateFrames::Disabled,
            ] {
                for (replay_protect, window) in
                    [(true, 0), (true, 3), (true, 32), (true, 4096), (false, 0)]
                {
                    cases += 1;
                    let wire = hostile_wire(&mut rng, suite, start, conf);
                    let sak = [0x5Au8; 32];
                    let sak = &sak[..suite.key_len()];
                    let receiver = || {
                        let mut c = cfg(suite, 0x0200_0000_0099_0001, window);
                        c.rx.validate = validate;
                        c.rx.replay_protect = replay_protect;
                        let mut r = SecY::new(p, &c).unwrap();
                        for (i, sci) in [A, B].into_iter().enumerate() {
                            let k = xkey(sak, suite.is_xpn(), i as u32 + 1, 1);
                            r.rx.install(Sci::from_u64(sci), 0, &k, start).unwrap();
                        }
                        r
                    };
                    // One by one.
                    let mut one = receiver();
                    let by_one: Vec<Verdict> = wire
                        .iter()
                        .map(|f| {
                            let mut b = f.clone();
                            let r = one.rx.verify_in_place(&mut b);
                            verdict(&b, r)
                        })
                        .collect();
                    // In batches, opened out of order on two threads.
                    let mut batched = receiver();
                    let mut by_batch = Vec::new();
                    let mut at = 0;
                    while at < wire.len() {
                        let n = (1 + rng.below(24)).min(wire.len() - at);
                        let mut bufs: Vec<Vec<u8>> = wire[at..at + n].to_vec();
                        let checks: Vec<SecyCheck> =
                            bufs.iter_mut().map(|b| batched.rx.check(b)).collect();
                        let mut pns: Vec<(Sci, u64)> = checks
                            .iter()
                            .filter_map(|c| match c {
                                SecyCheck::Validate(t) if !t.replay_refused() => {
                                    Some((t.sci(), t.pn()))
                                }
                                _ => None,
                            })
                            .collect();
                        pns.sort();
                        twice_in_a_batch += usize::from(pns.windows(2).any(|w| w[0] == w[1]));
                        let mut jobs: Vec<(&mut Vec<u8>, &SecyCheck, Option<_>)> = bufs
                            .iter_mut()
                            .zip(&checks)
                            .map(|(b, c)| (b, c, None))
                            .collect();
                        let rx = &batched.rx;
                        out_of_order(&mut jobs, |job| {
                            if let SecyCheck::Validate(t) = job.1 {
                                job.2 = Some(rx.open(job.0, t));
                            }
                        });
                        let opened: Vec<_> = jobs.into_iter().map(|j| j.2).collect();
                        for (i, c) in checks.into_iter().enumerate() {
                            let r = match c {
                                SecyCheck::Done(r) => r,
                                SecyCheck::Validate(t) => {
                                    batched.rx.commit(&mut bufs[i], &t, opened[i].unwrap())
                                }
                            };
                            by_batch.push(verdict(&bufs[i], r));
                        }
                        at += n;
                    }
                    let name = format!(
                        "{suite:?} {} {validate:?} replay {replay_protect} window {window} ({})",
                        if conf { "conf" } else { "integrity" },
                        p.name
                    );
                    for (i, (a, b)) in by_one.iter().zip(&by_batch).enumerate() {
                        assert_eq!(a, b, "{name}: frame {i}");
                    }
                    assert_eq!(one.rx.totals(), batched.rx.totals(), "{name}");
                    assert_eq!(
                        one.rx.sas().collect::<Vec<_>>(),
                        batched.rx.sas().collect::<Vec<_>>(),
                        "{name}"
                    );
                    // The traffic was hostile enough to mean something.
                    let t = one.rx.totals();
                    assert!(
                        t.in_pkts_ok + t.in_pkts_unchecked + t.in_pkts_invalid > 30,
                        "{name}: {t:?}"
                    );
                    // (Unchecked frames move no window: nothing to refuse as a replay.)
                    if replay_protect && t.in_pkts_unchecked == 0 {
                        assert!(
                            // (XPN: a replay from before the 2^32 boundary recovers to a
                            // PN 2^32 ahead, whose ICV cannot match: not valid, or invalid
                            // with Check.)
                            t.drops.get(DropReason::ReplayDuplicate)
                                + t.in_pkts_late
                                + if suite.is_xpn() {
                                    t.in_pkts_not_valid + t.in_pkts_invalid
                                } else {
                                    0
                                }
                                > 0,
                            "{name}: {t:?}"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(cases, 120);
    // Batches that held one PN twice (the case the commit's second replay check is for).
    assert!(twice_in_a_batch > 50, "{twice_in_a_batch}");
}

/// Frames prepared in order and sealed out of order on two threads at once are byte for byte
/// the frames one-by-one protection makes (whose output the Annex C test checks): the same
/// PNs in the same order, the same counters — the transmit stage of a data plane with crypto
/// workers. Every suite, with and without confidentiality, frames of 14 to 1514 octets, XPN
/// across the 2^32 boundary; and a sealing the SAs changed under is refused.
#[test]
fn frames_sealed_out_of_order_by_workers_are_the_frames_of_one_by_one_protection() {
    let mut rng = Rng(0x0DDC_0FFE_EBAD_F00D);
    for suite in CipherSuite::ALL {
        for p in providers(suite) {
            for conf in [true, false] {
                let sak = [0xA5u8; 32];
                let sak = &sak[..suite.key_len()];
                let start = if suite.is_xpn() { (1 << 32) - 30 } else { 1 };
                let sender = || {
                    let mut c = cfg(suite, A, 0);
                    c.tx.confidentiality = conf;
                    let mut s = SecY::new(p, &c).unwrap();
                    s.tx.install(1, &xkey(sak, suite.is_xpn(), 7, 1), start)
                        .unwrap();
                    s.tx.enable(1).unwrap();
                    s
                };
                let (mut one, mut two) = (sender(), sender());
                let headroom = one.tx.headroom();
                let plains: Vec<Vec<u8>> = (0..80)
                    .map(|i| {
                        let mut f = plain(i as u8);
                        f.resize(14 + rng.below(1501), i as u8);
                        f
                    })
                    .collect();
                let expect: Vec<(Vec<u8>, u64)> = plains
                    .iter()
                    .map(|f| {
                        let mut out = vec![0u8; one.tx.protected_len(f.len())];
                        let (n, pn) = one.tx.protect(f, &mut out).unwrap();
                        out.truncate(n);
                        (out, pn)
                    })
                    .collect();
                let mut got = Vec::new();
                for batch in plains.chunks(1 + rng.below(20)) {
                    let mut bufs: Vec<Vec<u8>> = batch
                        .iter()
                        .map(|f| {
                            let mut b = vec![0u8; two.tx.protected_len(f.len())];
                            b[headroom..headroom + f.len()].copy_from_slice(f);
                            b
                        })
                        .collect();
                    let sealings: Vec<_> = bufs
                        .iter_mut()
                        .zip(batch)
                        .map(|(b, f)| two.tx.prepare_at(b, headroom, f.len()).unwrap())
                        .collect();
                    let mut jobs: Vec<(&mut Vec<u8>, _, usize)> = bufs
                        .iter_mut()
                        .zip(&sealings)
                        .map(|(b, s)| (b, s, 0))
                        .collect();
                    let tx = &two.tx;
                    out_of_order(&mut jobs, |job| job.2 = tx.seal(job.0, job.1).unwrap());
                    let lens: Vec<usize> = jobs.into_iter().map(|j| j.2).collect();
                    for ((mut b, n), s) in bufs.into_iter().zip(lens).zip(&sealings) {
                        b.truncate(n);
                        got.push((b, s.pn()));
                    }
                }
                let name = format!("{suite:?} conf {conf} ({})", p.name);
                assert_eq!(got.len(), expect.len(), "{name}");
                for (i, (g, e)) in got.iter().zip(&expect).enumerate() {
                    assert_eq!(g, e, "{name}: frame {i}");
                }
                assert_eq!(one.tx.counters(), two.tx.counters(), "{name}");
                assert_eq!(one.tx.next_pn(), two.tx.next_pn(), "{name}");

                // A sealing made before the SAs changed is refused, not sealed under another SA.
                let f = plain(1);
                let mut b = vec![0u8; two.tx.protected_len(f.len())];
                b[headroom..headroom + f.len()].copy_from_slice(&f);
                let s = two.tx.prepare_at(&mut b, headroom, f.len()).unwrap();
                two.tx
                    .install(2, &xkey(sak, suite.is_xpn(), 7, 2), 1)
                    .unwrap();
                assert_eq!(two.tx.seal(&mut b, &s), Err(TxError::NoSa), "{name}");
            }
        }
    }
}
