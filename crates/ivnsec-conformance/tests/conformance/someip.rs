//! SOME/IP per-service security (docs/wire-someip-sec.md): known answers computed independently
//! with Python `cryptography` (the table `ivnsec_conformance::vectors::someip::KNOWN`), round
//! trips for every suite, level and provider, and every attack rejected with its own counted
//! reason. Every test runs once per provider that has the AEAD suite.

use ivnsec_conformance::vectors::someip::KNOWN;
use ivnsec_conformance::{Needs, PROVIDERS, providers, unhex};
use ivnsec_core::crypto::{AeadAlg, CryptoProvider};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::someip::{
    Level, OVERHEAD, ServiceParams, ServiceSa, SomeipConfigError, SomeipProtectError,
    SomeipSecurity, suite_from_name,
};
use ivnsec_core::wire::someip::{HEADER_LEN, MessageType, Repr, ReturnCode};

fn header(mt: MessageType) -> Repr {
    Repr {
        service_id: 0x1234,
        method_id: 0x0001,
        client_id: 0x0102,
        session_id: 0x0304,
        interface_version: 1,
        message_type: mt,
        tp: false,
        return_code: ReturnCode::E_OK,
        payload_len: 0,
    }
}

fn key(alg: AeadAlg) -> Vec<u8> {
    (0..alg.key_len() as u8).collect()
}

fn params(level: Level, alg: AeadAlg, key: &[u8]) -> ServiceParams<'_> {
    ServiceParams {
        service_id: 0x1234,
        level,
        alg,
        key_id: 7,
        key,
        salt: [0xa1, 0xa2, 0xa3, 0xa4],
        replay_window: 8,
        max_senders: 4,
        first_counter: 1,
    }
}

#[test]
fn known_answers_both_directions_every_provider() {
    let body = b"hello SOME/IP";
    for v in KNOWN {
        let suite = v.suite;
        let alg = suite_from_name(suite).unwrap();
        let level = Level::from_name(v.level).unwrap();
        let k = key(alg);
        let expected = unhex(v.message);
        let mut n = 0;
        for p in providers(alg) {
            n += 1;
            let mut prm = params(level, alg, &k);
            prm.first_counter = 5;
            let mut tx = ServiceSa::new(p, &prm).unwrap();
            let mut out = vec![0u8; 200];
            let len = tx
                .protect(&header(MessageType::Request), body, &mut out)
                .unwrap();
            assert_eq!(
                hex::encode(&out[..len]),
                hex::encode(&expected),
                "{suite} {level} {}",
                p.name
            );
            let mut rx = ServiceSa::new(p, &params(level, alg, &k)).unwrap();
            let mut m = expected.clone();
            let r = rx.verify(&mut m).unwrap();
            assert_eq!(&m[r], body);
        }
        assert!(n >= 1, "no provider has {suite}");
    }
}

#[test]
fn round_trip_every_suite_level_provider_and_size() {
    for alg in AeadAlg::ALL {
        let k = key(alg);
        for p in providers(alg) {
            for level in Level::ALL {
                let k: &[u8] = if level == Level::NoSec { &[] } else { &k };
                let mut tx = ServiceSa::new(p, &params(level, alg, k)).unwrap();
                let mut rx = ServiceSa::new(p, &params(level, alg, k)).unwrap();
                for size in [0usize, 1, 15, 16, 17, 1400, 65_000] {
                    let body: Vec<u8> = (0..size).map(|i| (i * 31) as u8).collect();
                    let mut out = vec![0u8; size + HEADER_LEN + OVERHEAD];
                    for mt in [
                        MessageType::Request,
                        MessageType::Response,
                        MessageType::Notification,
                    ] {
                        let n = tx.protect(&header(mt), &body, &mut out).unwrap();
                        let expect_len =
                            HEADER_LEN + size + if level == Level::NoSec { 0 } else { OVERHEAD };
                        assert_eq!(n, expect_len);
                        // Length covers everything after the first 8 bytes.
                        assert_eq!(
                            u32::from_be_bytes(out[4..8].try_into().unwrap()) as usize,
                            n - 8
                        );
                        if level == Level::Conf && size >= 16 {
                            assert_ne!(&out[25..25 + size], &body[..], "conf must encrypt");
                        }
                        if level == Level::Auth {
                            assert_eq!(
                                &out[25..25 + size],
                                &body[..],
                                "auth keeps the body in clear"
                            );
                        }
                        let mut m = out[..n].to_vec();
                        let r = rx
                            .verify(&mut m)
                            .unwrap_or_else(|d| panic!("{} {level} {size} {mt}: {d}", alg.name()));
                        assert_eq!(&m[r], &body[..]);
                    }
                }
                assert_eq!(rx.rx_counters().drops.total(), 0);
            }
        }
    }
}

fn protected(p: &CryptoProvider, level: Level, alg: AeadAlg, count: usize) -> Vec<Vec<u8>> {
    let k = key(alg);
    let mut tx = ServiceSa::new(p, &params(level, alg, &k)).unwrap();
    (0..count)
        .map(|i| {
            let mut out = vec![0u8; 100];
            let n = tx
                .protect(
                    &header(MessageType::Request),
                    format!("message {i}").as_bytes(),
                    &mut out,
                )
                .unwrap();
            out.truncate(n);
            out
        })
        .collect()
}

#[test]
fn every_bit_flip_is_rejected() {
    for alg in AeadAlg::ALL {
        for p in providers(alg) {
            for level in [Level::Auth, Level::Conf] {
                let k = key(alg);
                let msg = &protected(p, level, alg, 1)[0];
                for bit in 0..msg.len() * 8 {
                    let mut rx = ServiceSa::new(p, &params(level, alg, &k)).unwrap();
                    let mut m = msg.clone();
                    m[bit / 8] ^= 1 << (bit % 8);
                    let r = rx.verify(&mut m);
                    assert!(
                        r.is_err(),
                        "{} {level}: flip of bit {bit} accepted",
                        alg.name()
                    );
                    assert_eq!(rx.rx_counters().drops.total(), 1);
                    assert_eq!(rx.rx_counters().ok_frames, 0);
                }
            }
        }
    }
}

#[test]
fn attacks_are_rejected_with_counted_reasons() {
    let alg = AeadAlg::Aes128Gcm;
    for p in providers(alg) {
        let k = key(alg);
        let msgs = protected(p, Level::Conf, alg, 20);
        let mut rx = ServiceSa::new(p, &params(Level::Conf, alg, &k)).unwrap();
        let ok = |rx: &mut ServiceSa, m: &Vec<u8>| rx.verify(&mut m.clone());
        assert!(ok(&mut rx, &msgs[10]).is_ok());
        // Replay of the same message.
        assert_eq!(ok(&mut rx, &msgs[10]), Err(DropReason::ReplayDuplicate));
        // Inside the window (8) and new: accepted once.
        assert!(ok(&mut rx, &msgs[5]).is_ok());
        assert_eq!(ok(&mut rx, &msgs[5]), Err(DropReason::ReplayDuplicate));
        // Left of the window.
        assert_eq!(ok(&mut rx, &msgs[1]), Err(DropReason::ReplayTooOld));
        // Tampered body.
        let mut t = msgs[11].clone();
        t[30] ^= 0x40;
        assert_eq!(rx.verify(&mut t), Err(DropReason::BadTag));
        // The tampered message did not advance the window: the genuine one still verifies.
        assert!(ok(&mut rx, &msgs[11]).is_ok());
        // Tampered header (method ID) fails the tag too: the header is AAD.
        let mut t = msgs[12].clone();
        t[3] ^= 1;
        assert_eq!(rx.verify(&mut t), Err(DropReason::BadTag));
        // Wrong key (same key id).
        let other: Vec<u8> = vec![0x55; 16];
        let mut tx_bad = ServiceSa::new(p, &params(Level::Conf, alg, &other)).unwrap();
        let mut out = vec![0u8; 100];
        let n = tx_bad
            .protect(&header(MessageType::Request), b"x", &mut out)
            .unwrap();
        let mut wk = out[..n].to_vec();
        wk[17..25].copy_from_slice(&100u64.to_be_bytes());
        assert_eq!(rx.verify(&mut wk), Err(DropReason::BadTag));
        // Wrong key id.
        let mut t = msgs[13].clone();
        t[16] = 8;
        assert_eq!(rx.verify(&mut t), Err(DropReason::UnknownSa));
        // Downgrade: a plain (nosec) message to a secured service.
        let mut plain_tx = ServiceSa::new(p, &ServiceParams::nosec(0x1234)).unwrap();
        let n = plain_tx
            .protect(&header(MessageType::Response), b"plain", &mut out)
            .unwrap();
        assert_eq!(
            rx.verify(&mut out[..n].to_vec()),
            Err(DropReason::LevelMismatch)
        );
        // A longer plain message is taken apart as if secured and fails.
        let long = [0x07u8; 40];
        let n = plain_tx
            .protect(&header(MessageType::Response), &long, &mut out)
            .unwrap();
        assert!(rx.verify(&mut out[..n].to_vec()).is_err());
        // Auth-level message to a conf service: same key, fails the tag.
        let auth = protected(p, Level::Auth, alg, 15);
        assert_eq!(rx.verify(&mut auth[14].clone()), Err(DropReason::BadTag));
        // Counter 0.
        let mut z = msgs[14].clone();
        z[17..25].fill(0);
        assert_eq!(rx.verify(&mut z), Err(DropReason::BadSeq));
        // Another service.
        let mut s = msgs[15].clone();
        s[0] = 0x99;
        assert_eq!(rx.verify(&mut s), Err(DropReason::UnknownService));
        // Truncated / bad length.
        assert_eq!(
            rx.verify(&mut msgs[16][..10].to_vec()),
            Err(DropReason::Truncated)
        );
        let mut bl = msgs[16].clone();
        bl.push(0);
        assert_eq!(rx.verify(&mut bl), Err(DropReason::BadLength));
        let d = &rx.rx_counters().drops;
        assert_eq!(d.get(DropReason::ReplayDuplicate), 2);
        assert_eq!(d.get(DropReason::ReplayTooOld), 1);
        assert_eq!(d.get(DropReason::LevelMismatch), 1);
        assert_eq!(d.get(DropReason::UnknownSa), 1);
        assert_eq!(d.get(DropReason::BadSeq), 1);
        assert_eq!(d.get(DropReason::UnknownService), 1);
        assert!(d.get(DropReason::BadTag) >= 4);
        assert_eq!(rx.rx_counters().ok_frames, 3);
    }
}

#[test]
fn replay_windows_are_per_sender_and_bounded() {
    let alg = AeadAlg::ChaCha20Poly1305;
    for p in providers(alg) {
        let k = key(alg);
        let mut rx = ServiceSa::new(p, &params(Level::Auth, alg, &k)).unwrap();
        // Six clients, each sending counter 1: distinct senders, so no replay, until the bound (4).
        let mut results = Vec::new();
        for client in 0..6u16 {
            let mut tx = ServiceSa::new(p, &params(Level::Auth, alg, &k)).unwrap();
            let mut hd = header(MessageType::Request);
            hd.client_id = client;
            let mut out = vec![0u8; 100];
            let n = tx.protect(&hd, b"hi", &mut out).unwrap();
            results.push(rx.verify(&mut out[..n].to_vec()));
        }
        assert!(results[..4].iter().all(Result::is_ok));
        assert_eq!(results[4], Err(DropReason::TooManySenders));
        assert_eq!(rx.senders(), 4);
        // The server's counter 1 is yet another sender with its own nonce space.
        let mut server = ServiceSa::new(p, &params(Level::Auth, alg, &k)).unwrap();
        let mut out = vec![0u8; 100];
        let n = server
            .protect(&header(MessageType::Response), b"hi", &mut out)
            .unwrap();
        let mut client = ServiceSa::new(p, &params(Level::Auth, alg, &k)).unwrap();
        let mut tiny = [0u8; 20];
        let n2 = client.protect(&header(MessageType::Request), b"hi", &mut tiny);
        assert!(n2.is_err()); // buffer too small, and no counter was burnt
        assert_eq!(client.next_counter(), Some(1));
        let mut rx2 = ServiceSa::new(p, &params(Level::Auth, alg, &k)).unwrap();
        assert!(rx2.verify(&mut out[..n].to_vec()).is_ok());
    }
}

#[test]
fn counter_exhaustion_stops_sending() {
    let alg = AeadAlg::Aes128Gcm;
    for p in providers(alg) {
        let k = key(alg);
        let mut prm = params(Level::Conf, alg, &k);
        prm.first_counter = u64::MAX;
        let mut tx = ServiceSa::new(p, &prm).unwrap();
        let mut out = vec![0u8; 100];
        assert!(
            tx.protect(&header(MessageType::Request), b"last", &mut out)
                .is_ok()
        );
        assert_eq!(tx.next_counter(), None);
        assert_eq!(
            tx.protect(&header(MessageType::Request), b"more", &mut out),
            Err(SomeipProtectError::CounterExhausted)
        );
        prm.first_counter = 0;
        assert_eq!(
            ServiceSa::new(p, &prm).unwrap_err(),
            SomeipConfigError::BadFirstCounter
        );
    }
}

#[test]
fn config_errors() {
    let short = [0u8; 5];
    for p in providers(AeadAlg::Aes256Ccm) {
        let e = ServiceSa::new(p, &params(Level::Conf, AeadAlg::Aes256Ccm, &short)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "suite aes256-ccm needs a 32-byte key, got 5 bytes"
        );
    }
    for p in providers(AeadAlg::Aes128Gcm) {
        let e = ServiceSa::new(p, &params(Level::NoSec, AeadAlg::Aes128Gcm, &short)).unwrap_err();
        assert_eq!(e, SomeipConfigError::KeyNotUsed);
        let mut prm = params(Level::Conf, AeadAlg::Aes128Gcm, &[0u8; 16]);
        prm.replay_window = u32::MAX;
        assert!(matches!(
            ServiceSa::new(p, &prm),
            Err(SomeipConfigError::WindowTooLarge(_))
        ));
    }
    // A provider without CCM (the fast one); the SA says so instead of failing later.
    let ccm = AeadAlg::Aes128Ccm;
    for p in PROVIDERS.into_iter().filter(|p| !ccm.met_by(p)) {
        let e = ServiceSa::new(p, &params(Level::Conf, ccm, &[0u8; 16])).unwrap_err();
        assert_eq!(e, SomeipConfigError::Unsupported(AeadAlg::Aes128Ccm));
    }
}

#[test]
fn table_dispatches_by_service_and_counts_unknown() {
    for p in providers(AeadAlg::Aes128Gcm) {
        let k = key(AeadAlg::Aes128Gcm);
        let mut other = params(Level::NoSec, AeadAlg::Aes128Gcm, &[]);
        other.service_id = 0x4321;
        let mut table = SomeipSecurity::new(vec![
            ServiceSa::new(p, &params(Level::Conf, AeadAlg::Aes128Gcm, &k)).unwrap(),
            ServiceSa::new(p, &other).unwrap(),
        ]);
        let msgs = protected(p, Level::Conf, AeadAlg::Aes128Gcm, 2);
        assert!(table.verify(&mut msgs[0].clone()).is_ok());
        let mut m = msgs[1].clone();
        m[0] = 0x77;
        assert_eq!(table.verify(&mut m), Err(DropReason::UnknownService));
        assert_eq!(table.verify(&mut [1, 2, 3]), Err(DropReason::Truncated));
        let d = table.drops();
        assert_eq!(d.get(DropReason::UnknownService), 1);
        assert_eq!(d.get(DropReason::Truncated), 1);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    #[test]
    fn verify_never_panics_on_garbage(data in proptest::collection::vec(proptest::num::u8::ANY, 0..120), lvl in 0usize..3) {
        let k = key(AeadAlg::Aes128Gcm);
        let level = Level::ALL[lvl];
        let kk: &[u8] = if level == Level::NoSec { &[] } else { &k };
        for p in providers(AeadAlg::Aes128Gcm) {
            let mut rx = ServiceSa::new(p, &params(level, AeadAlg::Aes128Gcm, kk)).unwrap();
            let mut d = data.clone();
            let _ = rx.verify(&mut d);
        }
    }
}

/// A hostile mix for the batch test: genuine messages in and out of order, repeats inside one
/// batch and across batches, a repeat with a bad tag, messages left of the window, tampering,
/// wrong key id, counter 0, another service, truncation, and more senders than the bound.
fn hostile_mix(p: &CryptoProvider, level: Level, alg: AeadAlg) -> Vec<Vec<u8>> {
    let k = key(alg);
    let g = protected(p, level, alg, 30);
    let mut tampered = g[20].clone();
    tampered[HEADER_LEN + 12] ^= 0x10;
    let mut bad_dup = g[3].clone();
    let last = bad_dup.len() - 1;
    bad_dup[last] ^= 1;
    let mut key_id = g[21].clone();
    key_id[HEADER_LEN] ^= 1;
    let mut zero = g[22].clone();
    zero[HEADER_LEN + 1..HEADER_LEN + 9].fill(0);
    let mut service = g[23].clone();
    service[0] ^= 0x80;
    let mut senders = Vec::new();
    for client in 10..16u16 {
        let mut tx = ServiceSa::new(p, &params(level, alg, &k)).unwrap();
        let mut hd = header(MessageType::Request);
        hd.client_id = client;
        let mut out = vec![0u8; 100];
        let n = tx.protect(&hd, b"another", &mut out).unwrap();
        out.truncate(n);
        senders.push(out);
    }
    let mut mix = vec![
        g[0].clone(),
        g[2].clone(),
        g[1].clone(),
        g[2].clone(), // repeat inside a batch of eight
        g[3].clone(),
        bad_dup, // repeat of g[3] with a bad tag: refused as a repeat, as one by one
        g[4].clone(),
        g[5].clone(),
        g[5].clone(),
        g[19].clone(),
        g[6].clone(), // left of the window (8) after g[19]
        g[1].clone(), // repeat from an earlier batch
        tampered,
        g[20].clone(), // the genuine one after its tampered copy
        key_id,
        zero,
        service,
        g[24][..10].to_vec(),
        g[17].clone(),
        g[18].clone(),
        g[25].clone(),
    ];
    mix.extend(senders);
    mix.push(g[26].clone());
    mix
}

/// `verify_batch` gives every message the verdict `verify` gives it one by one, in order, with
/// the same counters, the same bodies and the same senders kept, for every suite, provider,
/// level and batch size (1, 3, 8, 13, all at once). The CCM keys of `portable` and `auto` check
/// the tags eight at a time (multi-buffer lanes); the others one by one.
#[test]
fn a_batch_gives_the_verdicts_of_one_by_one() {
    for alg in AeadAlg::ALL {
        for p in providers(alg) {
            for level in [Level::NoSec, Level::Auth, Level::Conf] {
                let k = key(alg);
                let k: &[u8] = if level == Level::NoSec { &[] } else { &k };
                let prm = |l| ServiceParams {
                    key: k,
                    ..params(l, alg, k)
                };
                let mix = if level == Level::NoSec {
                    let mut tx = ServiceSa::new(p, &prm(level)).unwrap();
                    (0..12)
                        .map(|i| {
                            let mut out = vec![0u8; 100];
                            let body = format!("plain {i}");
                            let n = tx
                                .protect(&header(MessageType::Request), body.as_bytes(), &mut out)
                                .unwrap();
                            out.truncate(n);
                            out
                        })
                        .collect()
                } else {
                    hostile_mix(p, level, alg)
                };
                let mut one = ServiceSa::new(p, &prm(level)).unwrap();
                let expect: Vec<(Result<_, DropReason>, Vec<u8>)> = mix
                    .iter()
                    .map(|m| {
                        let mut m = m.clone();
                        let r = one.verify(&mut m);
                        let body = r.clone().map(|b| m[b].to_vec()).unwrap_or_default();
                        (r, body)
                    })
                    .collect();
                for size in [1, 3, 8, 13, mix.len()] {
                    let mut rx = ServiceSa::new(p, &prm(level)).unwrap();
                    let mut bufs = mix.clone();
                    let mut got = Vec::new();
                    for chunk in bufs.chunks_mut(size) {
                        let mut msgs: Vec<&mut [u8]> =
                            chunk.iter_mut().map(|b| &mut b[..]).collect();
                        let mut out = vec![Err(DropReason::Malformed); msgs.len()];
                        rx.verify_batch(&mut msgs, &mut out);
                        for (m, r) in msgs.iter().zip(out) {
                            let body = r.clone().map(|b| m[b].to_vec()).unwrap_or_default();
                            got.push((r, body));
                        }
                    }
                    let what = format!("{} {level} {} batch {size}", alg.name(), p.name);
                    assert_eq!(got, expect, "{what}");
                    assert_eq!(rx.rx_counters(), one.rx_counters(), "{what}");
                    assert_eq!(rx.senders(), one.senders(), "{what}");
                }
                if level != Level::NoSec {
                    // The mix exercises what it is for.
                    let reasons: Vec<DropReason> =
                        expect.iter().filter_map(|(r, _)| r.clone().err()).collect();
                    for want in [
                        DropReason::ReplayDuplicate,
                        DropReason::ReplayTooOld,
                        DropReason::BadTag,
                        DropReason::UnknownSa,
                        DropReason::BadSeq,
                        DropReason::UnknownService,
                        DropReason::Truncated,
                        DropReason::TooManySenders,
                    ] {
                        assert!(reasons.contains(&want), "{}: no {want:?}", alg.name());
                    }
                }
            }
        }
    }
}
