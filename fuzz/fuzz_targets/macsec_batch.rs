//! MACsec receive in batches against one by one (differential): the input is a program that
//! builds a stream of frames, then the stream is verified twice — frame by frame with
//! `SecyRx::verify_in_place`, and in batches the way the data plane's crypto workers do it
//! (`check` in order, `open` in reverse order, `commit` in order).
//!
//! Byte 0 selects the cipher suite (bits 0-1), validateFrames (bits 2-3: Strict, Check,
//! Disabled, Strict), the replay window (bits 4-5: 0, 1, 64, 65536) and replayProtect (bit 6).
//! Byte 1 is the largest batch (1 + byte % 32). Then records, each an op byte and its operands:
//! - `op % 5 == 0`: a frame of the peer's transmit SA with the PN `first + u16` (two bytes;
//!   XPN: `first` is just below 2^32, so the window crosses it) and a payload of one byte's
//!   length, integrity only when bit 7 of op is set;
//! - `1`: the frame `byte % count` made so far again (a replay);
//! - `2`: that frame with one bit flipped (byte: index, byte: bit position within the frame);
//! - `3`: that frame cut to `byte` octets;
//! - `4`: raw bytes (one byte of length, then the bytes).
//!
//! Invariants: nothing panics; every frame gets the same verdict both ways (status, delivered
//! bytes unless Invalid, SC, AN, PN; or the drop reason and SC); the counters and the receive
//! SAs' windows end the same.
#![no_main]

use ivnsec_core::sa::macsec::{CipherSuite, RxOptions, RxStatus, TxOptions, ValidateFrames};
use ivnsec_core::sa::secy::{SaKey, SecY, SecyCheck, SecyConfig};
use ivnsec_core::wire::macsec::Sci;
use libfuzzer_sys::fuzz_target;

const PEER: u64 = 0x0200_0000_0001_0001;
const OWN: u64 = 0x0200_0000_0002_0001;
const KEY: [u8; 32] = [0x5a; 32];
const SALT: [u8; 12] = [7; 12];
const WINDOWS: [u32; 4] = [0, 1, 64, 65_536];

fn provider() -> &'static ivnsec_core::crypto::CryptoProvider {
    &ivnsec_crypto_portable::PROVIDER
}

fn key(suite: CipherSuite) -> SaKey<'static> {
    SaKey {
        sak: &KEY[..suite.key_len()],
        ssci: suite.is_xpn().then_some(1),
        salt: suite.is_xpn().then_some(SALT),
        key_number: 1,
    }
}

type Verdict =
    Result<(RxStatus, Option<Vec<u8>>, Sci, u8, u64), (ivnsec_core::sa::DropReason, Option<Sci>)>;

fn verdict(
    b: &[u8],
    r: Result<ivnsec_core::sa::secy::Received, ivnsec_core::sa::secy::Dropped>,
) -> Verdict {
    match r {
        Ok(r) => {
            assert!(r.range.start <= r.range.end && r.range.end <= b.len());
            Ok((
                r.status,
                (r.status != RxStatus::Invalid).then(|| b[r.range.clone()].to_vec()),
                r.sci,
                r.an,
                r.pn,
            ))
        }
        Err(d) => Err((d.reason, d.sci)),
    }
}

/// The frames the program builds.
fn stream(suite: CipherSuite, mut prog: &[u8]) -> Vec<Vec<u8>> {
    let first: u64 = if suite.is_xpn() { (1 << 32) - 300 } else { 1 };
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let take = |n: usize, prog: &mut &[u8]| -> Option<Vec<u8>> {
        let (a, b) = prog.split_at_checked(n)?;
        *prog = b;
        Some(a.to_vec())
    };
    while frames.len() < 256 {
        let Some(op) = take(1, &mut prog) else { break };
        let op = op[0];
        match op % 5 {
            0 => {
                let Some(b) = take(3, &mut prog) else { break };
                let pn = first + u64::from(u16::from_be_bytes([b[0], b[1]]));
                let mut c = SecyConfig {
                    suite,
                    sci: Sci::from_u64(PEER),
                    tx: TxOptions {
                        confidentiality: op & 0x80 == 0,
                        include_sci: true,
                        es: false,
                        scb: false,
                    },
                    rx: RxOptions::default(),
                };
                c.rx.lowest_pn = 1;
                let mut s = SecY::new(provider(), &c).expect("fixed SA");
                s.tx.install(0, &key(suite), pn).expect("fixed SA");
                s.tx.enable(0).expect("fixed SA");
                let mut plain = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb6];
                plain.extend(std::iter::repeat_n(b[2], usize::from(b[2])));
                let mut out = vec![0u8; s.tx.protected_len(plain.len())];
                let (n, _) = s.tx.protect(&plain, &mut out).expect("fits");
                out.truncate(n);
                frames.push(out);
            }
            1..=3 if !frames.is_empty() => {
                let Some(b) = take(2, &mut prog) else { break };
                let mut f = frames[usize::from(b[0]) % frames.len()].clone();
                match op % 5 {
                    2 if !f.is_empty() => {
                        let bit = usize::from(b[1]) * 8 % (f.len() * 8);
                        f[bit / 8] ^= 1 << (bit % 8);
                    }
                    3 => f.truncate(usize::from(b[1])),
                    _ => {}
                }
                frames.push(f);
            }
            4 => {
                let Some(n) = take(1, &mut prog) else { break };
                let Some(raw) = take(usize::from(n[0]), &mut prog) else {
                    break;
                };
                frames.push(raw);
            }
            _ => {}
        }
    }
    frames
}

fuzz_target!(|data: &[u8]| {
    let Some((&[sel, batch], prog)) = data.split_first_chunk::<2>() else {
        return;
    };
    let suite = CipherSuite::ALL[usize::from(sel & 3)];
    let opts = RxOptions {
        validate: [
            ValidateFrames::Strict,
            ValidateFrames::Check,
            ValidateFrames::Disabled,
            ValidateFrames::Strict,
        ][usize::from(sel >> 2) & 3],
        replay_protect: sel & 0x40 != 0,
        replay_window: WINDOWS[usize::from(sel >> 4) & 3],
        lowest_pn: 1,
    };
    let max_batch = 1 + usize::from(batch) % 32;
    let frames = stream(suite, prog);
    let receiver = || {
        let cfg = SecyConfig {
            suite,
            sci: Sci::from_u64(OWN),
            tx: TxOptions {
                confidentiality: true,
                include_sci: true,
                es: false,
                scb: false,
            },
            rx: opts,
        };
        let mut r = SecY::new(provider(), &cfg).expect("fixed SecY");
        let first = if suite.is_xpn() { (1 << 32) - 300 } else { 1 };
        r.rx.install(Sci::from_u64(PEER), 0, &key(suite), first)
            .expect("fixed SA");
        r
    };
    let mut one = receiver();
    let by_one: Vec<Verdict> = frames
        .iter()
        .map(|f| {
            let mut b = f.clone();
            let r = one.rx.verify_in_place(&mut b);
            verdict(&b, r)
        })
        .collect();
    let mut batched = receiver();
    let mut by_batch = Vec::with_capacity(frames.len());
    for chunk in frames.chunks(max_batch) {
        let mut bufs: Vec<Vec<u8>> = chunk.to_vec();
        let checks: Vec<SecyCheck> = bufs.iter_mut().map(|b| batched.rx.check(b)).collect();
        let mut opened = vec![None; bufs.len()];
        for i in (0..bufs.len()).rev() {
            if let SecyCheck::Validate(t) = &checks[i] {
                opened[i] = Some(batched.rx.open(&mut bufs[i], t));
            }
        }
        for (i, c) in checks.into_iter().enumerate() {
            let r = match c {
                SecyCheck::Done(r) => r,
                SecyCheck::Validate(t) => {
                    batched
                        .rx
                        .commit(&mut bufs[i], &t, opened[i].expect("opened above"))
                }
            };
            by_batch.push(verdict(&bufs[i], r));
        }
    }
    assert_eq!(by_one, by_batch);
    assert_eq!(one.rx.totals(), batched.rx.totals());
    assert_eq!(
        one.rx.sas().collect::<Vec<_>>(),
        batched.rx.sas().collect::<Vec<_>>()
    );
});
