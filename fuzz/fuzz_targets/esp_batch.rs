//! ESP receive in batches against one by one (differential): the input is a program that builds
//! a stream of packets, then the stream is verified twice — packet by packet with
//! `EspRx::verify_in_place`, and in batches the way the tunnel's crypto workers do it (`check`
//! in order, `open` in reverse order, `commit` in order).
//!
//! Byte 0 selects the transform (bits 0-2, in the order of `EspAlg::ALL`), ESN (bit 3) and the
//! replay window (bits 4-5: 0, 1, 64, 4096). Byte 1 is the largest batch (1 + byte % 32). Then
//! records, each an op byte and its operands:
//! - `op % 5 == 0`: a tunnel-mode packet of the peer's SA with the sequence number
//!   `first + u16` (two bytes; with ESN `first` is just below 2^32, so the window crosses it)
//!   and a UDP payload of one byte's length;
//! - `1`: the packet `byte % count` made so far again (a replay);
//! - `2`: that packet with one bit flipped (byte: index, byte: bit position);
//! - `3`: that packet cut to `byte` octets;
//! - `4`: raw bytes (one byte of length, then the bytes).
//!
//! Invariants: nothing panics; every packet gets the same verdict both ways (the recovered
//! packet, or the drop reason); the counters and the window end the same.
#![no_main]

use std::net::IpAddr;

use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{EspAlg, EspCheck, EspMode, EspParams, EspRx, EspTx};
use libfuzzer_sys::fuzz_target;

const WINDOWS: [u32; 4] = [0, 1, 64, 4096];
const SPI: u32 = 0x100;

fn provider() -> &'static ivnsec_core::crypto::CryptoProvider {
    &ivnsec_crypto_portable::PROVIDER
}

fn keys(alg: EspAlg) -> (Vec<u8>, Vec<u8>) {
    let k = (0..alg.key_len())
        .map(|i| (i as u8).wrapping_mul(7))
        .collect();
    let a = alg
        .auth_key_len()
        .map(|n| (0..n as u8).map(|i| i ^ 0x5c).collect())
        .unwrap_or_default();
    (k, a)
}

/// An IPv4 UDP packet with `n` bytes of payload.
fn inner(n: usize) -> Vec<u8> {
    let total = 28 + n;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[10, 9, 0, 1]);
    p[16..20].copy_from_slice(&[10, 9, 0, 2]);
    p[24..26].copy_from_slice(&((8 + n) as u16).to_be_bytes());
    p
}

fn stream(alg: EspAlg, esn: bool, first: u64, mut prog: &[u8]) -> Vec<Vec<u8>> {
    let (k, a) = keys(alg);
    let params = EspParams {
        alg,
        spi: SPI,
        key: &k,
        auth_key: &a,
        esn,
    };
    let src: IpAddr = "192.0.2.1".parse().expect("address");
    let dst: IpAddr = "192.0.2.2".parse().expect("address");
    let mut out: Vec<Vec<u8>> = Vec::new();
    let take = |n: usize, prog: &mut &[u8]| -> Option<Vec<u8>> {
        let (x, y) = prog.split_at_checked(n)?;
        *prog = y;
        Some(x.to_vec())
    };
    while out.len() < 256 {
        let Some(op) = take(1, &mut prog) else { break };
        match op[0] % 5 {
            0 => {
                let Some(b) = take(3, &mut prog) else { break };
                let seq = first + u64::from(u16::from_be_bytes([b[0], b[1]]));
                let mut tx = EspTx::new(provider(), &params, EspMode::Tunnel { src, dst }, seq)
                    .expect("fixed SA");
                let p = inner(usize::from(b[2]));
                let mut buf = vec![0u8; p.len() + 200];
                let n = tx.protect(&p, &mut buf).expect("fits");
                buf.truncate(n);
                out.push(buf);
            }
            1..=3 if !out.is_empty() => {
                let Some(b) = take(2, &mut prog) else { break };
                let mut f = out[usize::from(b[0]) % out.len()].clone();
                match op[0] % 5 {
                    2 if !f.is_empty() => {
                        let bit = usize::from(b[1]) * 8 % (f.len() * 8);
                        f[bit / 8] ^= 1 << (bit % 8);
                    }
                    3 => f.truncate(usize::from(b[1])),
                    _ => {}
                }
                out.push(f);
            }
            4 => {
                let Some(n) = take(1, &mut prog) else { break };
                let Some(raw) = take(usize::from(n[0]), &mut prog) else {
                    break;
                };
                out.push(raw);
            }
            _ => {}
        }
    }
    out
}

type Verdict = Result<Vec<u8>, DropReason>;

fuzz_target!(|data: &[u8]| {
    let Some((&[sel, batch], prog)) = data.split_first_chunk::<2>() else {
        return;
    };
    let alg = EspAlg::ALL[usize::from(sel & 7)];
    let esn = sel & 8 != 0;
    let window = WINDOWS[usize::from(sel >> 4) & 3];
    let max_batch = 1 + usize::from(batch) % 32;
    let first: u64 = if esn { (1 << 32) - 300 } else { 1 };
    let packets = stream(alg, esn, first, prog);
    let (k, a) = keys(alg);
    let receiver = || {
        let params = EspParams {
            alg,
            spi: SPI,
            key: &k,
            auth_key: &a,
            esn,
        };
        let mut r = EspRx::new(provider(), &params, window).expect("fixed SA");
        if esn {
            r.restore_seen(first - 1);
        }
        r
    };
    let verdict = |b: &[u8], r: Result<std::ops::Range<usize>, DropReason>| -> Verdict {
        r.map(|range| {
            assert!(range.start <= range.end && range.end <= b.len());
            b[range].to_vec()
        })
    };
    let mut one = receiver();
    let by_one: Vec<Verdict> = packets
        .iter()
        .map(|p| {
            let mut b = p.clone();
            let r = one.verify_in_place(&mut b);
            verdict(&b, r)
        })
        .collect();
    let mut batched = receiver();
    let mut by_batch = Vec::with_capacity(packets.len());
    for chunk in packets.chunks(max_batch) {
        let mut bufs: Vec<Vec<u8>> = chunk.to_vec();
        let checks: Vec<EspCheck> = bufs.iter_mut().map(|b| batched.check(b)).collect();
        let mut opened = vec![None; bufs.len()];
        for i in (0..bufs.len()).rev() {
            if let EspCheck::Validate(c) = &checks[i] {
                opened[i] = Some(batched.open(&mut bufs[i], c));
            }
        }
        for (i, c) in checks.into_iter().enumerate() {
            let r = match c {
                EspCheck::Done(r) => r,
                EspCheck::Validate(c) => {
                    let o = opened[i].take().expect("opened above");
                    batched.commit(&mut bufs[i], &c, o)
                }
            };
            by_batch.push(verdict(&bufs[i], r));
        }
    }
    assert_eq!(by_one, by_batch);
    assert_eq!(one.counters(), batched.counters());
    assert_eq!(one.highest_seq(), batched.highest_seq());
});
