//! Multi-buffer CCM against the `ccm` crate (an independent implementation of SP 800-38C) one
//! message at a time, over the lengths where the formatting changes: no AAD, AAD that ends
//! inside the first block or on a block edge, the 2-octet/6-octet AAD prefix boundary
//! (0xFEFF/0xFF00), empty and partial-block payloads; batches with ragged lengths, more than
//! one group of lanes, and tampering in one lane only. The Wycheproof vectors run through the
//! batch calls as well (`ivnsec_core::crypto::kat`, tests/kat.rs).

extern crate std;

use std::vec::Vec;

use aes::cipher::KeyInit;
use aes::{Aes128, Aes256};
use ccm::aead::AeadInPlace;
use ccm::consts::{U12, U16};
use ivnsec_core::crypto::{AEAD_TAG_LEN, AeadOp, CryptoError};
use proptest::prelude::*;

use super::{open_batch, seal_batch};

type Ref128 = ccm::Ccm<Aes128, U16, U12>;
type Ref256 = ccm::Ccm<Aes256, U16, U12>;

/// Bytes derived from `seed` (a message's content; no randomness needed).
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

struct Msg {
    nonce: [u8; 12],
    aad: Vec<u8>,
    pt: Vec<u8>,
}

fn msgs(lens: &[(usize, usize)]) -> Vec<Msg> {
    lens.iter()
        .enumerate()
        .map(|(i, &(a, p))| Msg {
            nonce: bytes(i as u64 + 7, 12).try_into().unwrap(),
            aad: bytes(1000 + i as u64, a),
            pt: bytes(2000 + i as u64, p),
        })
        .collect()
}

/// Seals `ms` as one batch and checks every ciphertext and tag against the reference; then
/// opens them as one batch, with the messages in `tamper` changed, and checks the verdicts.
fn check<C, R>(cipher: &C, reference: &R, ms: &[Msg], tamper: &[usize])
where
    C: aes::cipher::BlockEncrypt + aes::cipher::BlockSizeUser<BlockSize = U16>,
    R: AeadInPlace<NonceSize = U12, TagSize = U16>,
{
    let mut bufs: Vec<Vec<u8>> = ms.iter().map(|m| m.pt.clone()).collect();
    let mut ops: Vec<AeadOp<'_>> = ms
        .iter()
        .zip(bufs.iter_mut())
        .map(|(m, b)| AeadOp::new(m.nonce, &m.aad, b, [0; AEAD_TAG_LEN]))
        .collect();
    seal_batch(cipher, &mut ops);
    let mut sealed = Vec::new();
    for (i, (op, m)) in ops.iter().zip(ms).enumerate() {
        let mut want = m.pt.clone();
        let tag = reference
            .encrypt_in_place_detached((&m.nonce).into(), &m.aad, &mut want)
            .unwrap();
        assert_eq!(op.result, Ok(()), "message {i}");
        assert_eq!(op.in_out[..], want[..], "ciphertext of message {i}");
        assert_eq!(op.tag[..], tag[..], "tag of message {i}");
        sealed.push((op.in_out.to_vec(), op.tag));
    }
    let mut bufs: Vec<Vec<u8>> = sealed.iter().map(|(c, _)| c.clone()).collect();
    let mut aads: Vec<Vec<u8>> = ms.iter().map(|m| m.aad.clone()).collect();
    let mut tags: Vec<[u8; AEAD_TAG_LEN]> = sealed.iter().map(|(_, t)| *t).collect();
    for (n, &i) in tamper.iter().enumerate() {
        // Tag, ciphertext and AAD in turn, where there is one.
        match (n % 3, bufs[i].is_empty(), aads[i].is_empty()) {
            (1, false, _) => bufs[i][0] ^= 0x20,
            (2, _, false) => aads[i][0] ^= 0x01,
            _ => tags[i][15] ^= 0x80,
        }
    }
    let mut ops: Vec<AeadOp<'_>> = ms
        .iter()
        .zip(bufs.iter_mut())
        .zip(&aads)
        .zip(&tags)
        .map(|(((m, b), a), t)| AeadOp::new(m.nonce, a, b, *t))
        .collect();
    open_batch(cipher, &mut ops);
    for (i, (op, m)) in ops.iter().zip(ms).enumerate() {
        if tamper.contains(&i) {
            assert_eq!(op.result, Err(CryptoError::AuthFailed), "message {i}");
            assert!(
                op.in_out.iter().all(|&b| b == 0),
                "a refused message is wiped"
            );
        } else {
            assert_eq!(op.result, Ok(()), "message {i}");
            assert_eq!(op.in_out[..], m.pt[..], "plaintext of message {i}");
        }
    }
}

fn both(ms: &[Msg], tamper: &[usize]) {
    let k128 = bytes(1, 16);
    let k256 = bytes(2, 32);
    check(
        &Aes128::new_from_slice(&k128).unwrap(),
        &Ref128::new_from_slice(&k128).unwrap(),
        ms,
        tamper,
    );
    check(
        &Aes256::new_from_slice(&k256).unwrap(),
        &Ref256::new_from_slice(&k256).unwrap(),
        ms,
        tamper,
    );
}

#[test]
fn equal_messages_fill_the_lanes() {
    // The SOME/IP case: eight and then some messages of one size, at both levels (conf: header
    // as AAD and the body encrypted; auth: everything as AAD).
    both(&msgs(&[(17, 1400); 13]), &[]);
    both(&msgs(&[(1417, 0); 13]), &[]);
}

#[test]
fn formatting_edges_match_the_reference() {
    let edges = [0usize, 1, 13, 14, 15, 16, 17, 31, 32, 33];
    let mut lens = Vec::new();
    for &a in &edges {
        for &p in &edges {
            lens.push((a, p));
        }
    }
    both(&msgs(&lens), &[]);
    // The AAD length prefix changes from two octets to six at 0xFF00 (SP 800-38C A.2.2).
    both(
        &msgs(&[(0xFEFF, 5), (0xFF00, 5), (0xFF01, 40), (70_000, 0)]),
        &[],
    );
}

#[test]
fn a_tampered_message_fails_alone() {
    let ms = msgs(&[(17, 1400); 20]);
    both(&ms, &[0, 3, 7, 8, 19]);
    // Ragged lengths: the tampered one is the longest, the shortest and a middle one.
    let ragged = msgs(&[(4, 100), (60, 3000), (17, 1), (0, 64), (33, 800), (5, 0)]);
    both(&ragged, &[1, 5, 4]);
}

#[test]
fn a_too_long_payload_is_refused_alone() {
    let key = bytes(1, 16);
    let c = Aes128::new_from_slice(&key).unwrap();
    let mut big = std::vec![0u8; 1 << 24];
    let mut small = std::vec![1u8; 40];
    let mut ops = std::vec![
        AeadOp::new([1; 12], b"h", &mut big, [0; 16]),
        AeadOp::new([2; 12], b"h", &mut small, [0; 16]),
    ];
    seal_batch(&c, &mut ops);
    assert_eq!(ops[0].result, Err(CryptoError::BadInputLength));
    assert_eq!(ops[1].result, Ok(()));
    let tag = ops[1].tag;
    let mut check = std::vec![1u8; 40];
    let reference = Ref128::new_from_slice(&key).unwrap();
    let want = reference
        .encrypt_in_place_detached((&[2u8; 12]).into(), b"h", &mut check)
        .unwrap();
    assert_eq!(tag[..], want[..]);
    assert_eq!(small, check);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_batch_matches_the_reference(
        lens in proptest::collection::vec((0usize..300, 0usize..600), 1..20),
        tamper in proptest::collection::vec(0usize..20, 0..4),
    ) {
        let ms = msgs(&lens);
        let mut t: Vec<usize> = tamper.into_iter().filter(|&i| i < ms.len()).collect();
        t.sort_unstable();
        t.dedup();
        both(&ms, &t);
    }
}
