//! RustCrypto ChaCha20-Poly1305 (built with or without `--cfg chacha20_avx512`) against OpenSSL's
//! EVP ChaCha20-Poly1305, one message at a time as a frame pays it: nonce, 14-byte AAD, seal in
//! place, 16-byte tag. One context per key for both (key schedule outside the timing). Rounds
//! alternate between the two so that both figures of a ratio come from the same time window.
//!
//! Before timing, the RFC 8439 §2.8.2 vector is checked and both implementations must produce
//! the same ciphertext and tag at every measured size (the AVX-512 path runs from 4 blocks on).
//!
//! Usage: chacha-rustcrypto-bench [ROUNDS]   (default 5; prints one line per size and round)

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use chacha20poly1305::aead::{AeadInOut, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};
use openssl::cipher::Cipher;
use openssl::cipher_ctx::CipherCtx;

const SIZES: [usize; 3] = [64, 1440, 16384];

struct Ossl {
    ctx: CipherCtx,
    out: Vec<u8>,
}

impl Ossl {
    fn new(key: &[u8; 32]) -> Result<Ossl, openssl::error::ErrorStack> {
        let mut ctx = CipherCtx::new()?;
        ctx.encrypt_init(Some(Cipher::chacha20_poly1305()), Some(key), None)?;
        Ok(Ossl {
            ctx,
            out: vec![0; 65536 + 64],
        })
    }

    fn seal(
        &mut self,
        nonce: &[u8; 12],
        aad: &[u8],
        msg: &[u8],
    ) -> Result<(&[u8], [u8; 16]), openssl::error::ErrorStack> {
        self.ctx.encrypt_init(None, None, Some(nonce))?;
        self.ctx.cipher_update(aad, None)?;
        let n = self.ctx.cipher_update(msg, Some(&mut self.out))?;
        let m = self.ctx.cipher_final(&mut self.out[n..])?;
        let mut tag = [0; 16];
        self.ctx.tag(&mut tag)?;
        Ok((&self.out[..n + m], tag))
    }
}

fn rc_seal(c: &ChaCha20Poly1305, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> [u8; 16] {
    let n = Nonce::from(*nonce);
    match c.encrypt_inout_detached(&n, aad, buf.into()) {
        Ok(t) => t.into(),
        Err(_) => unreachable!("ChaCha20-Poly1305 seals any length below 256 GiB"),
    }
}

/// RFC 8439 §2.8.2, and RustCrypto == OpenSSL at every measured size.
fn check(key: &[u8; 32], nonce: &[u8; 12], aad: &[u8]) -> Result<(), String> {
    let h = |s: &str| hex::decode(s).map_err(|e| e.to_string());
    let k: [u8; 32] = h("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")?
        .try_into()
        .map_err(|_| "key length")?;
    let n: [u8; 12] = h("070000004041424344454647")?
        .try_into()
        .map_err(|_| "nonce length")?;
    let a = h("50515253c0c1c2c3c4c5c6c7")?;
    let mut p = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".to_vec();
    let want_ct = h(concat!(
        "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6",
        "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36",
        "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc",
        "3ff4def08e4b7a9de576d26586cec64b6116"
    ))?;
    let want_tag = h("1ae10b594f09e26a7e902ecbd0600691")?;
    let tag = rc_seal(&ChaCha20Poly1305::new(&k.into()), &n, &a, &mut p);
    if p != want_ct || tag[..] != want_tag[..] {
        return Err("RFC 8439 §2.8.2: RustCrypto's ciphertext or tag differs".into());
    }
    let c = ChaCha20Poly1305::new(key.into());
    let mut o = Ossl::new(key).map_err(|e| e.to_string())?;
    for size in SIZES {
        let msg: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
        let mut buf = msg.clone();
        let t = rc_seal(&c, nonce, aad, &mut buf);
        let (ct, ot) = o.seal(nonce, aad, &msg).map_err(|e| e.to_string())?;
        if ct != &buf[..] || ot != t {
            return Err(format!("{size} B: RustCrypto and OpenSSL differ"));
        }
    }
    Ok(())
}

/// ns per call over `iters` calls.
fn per_call(iters: u32, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / f64::from(iters)
}

fn main() -> ExitCode {
    let rounds: u32 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 5,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: chacha-rustcrypto-bench [ROUNDS]  (ROUNDS: a positive integer)");
            return ExitCode::from(2);
        }
    };
    let key = [0x42; 32];
    let nonce = [0x24; 12];
    let aad = [0x55; 14];
    if let Err(e) = check(&key, &nonce, &aad) {
        eprintln!("known-answer check failed: {e}");
        return ExitCode::from(1);
    }
    let avx512 = cfg!(chacha20_avx512) && std::is_x86_feature_detected!("avx512f");
    println!("known answers: ok; AVX-512 backend compiled in and detected: {avx512}");
    let c = ChaCha20Poly1305::new(&key.into());
    let mut o = match Ossl::new(&key) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("OpenSSL: {e}");
            return ExitCode::from(3);
        }
    };
    for size in SIZES {
        // ~3 ms per batch on this machine.
        let iters = (3_000_000 / (100 + size)) as u32;
        let mut buf = vec![0x5a; size];
        let msg = buf.clone();
        let (mut best_rc, mut best_os) = (f64::MAX, f64::MAX);
        for round in 0..rounds {
            let mut rc = f64::MAX;
            let mut os = f64::MAX;
            // Five batches each, alternating; the lowest batch of each is its figure.
            for _ in 0..5 {
                rc = rc.min(per_call(iters, || {
                    black_box(rc_seal(&c, &nonce, &aad, black_box(&mut buf)));
                }));
                os = os.min(per_call(iters, || {
                    black_box(o.seal(&nonce, &aad, black_box(&msg)).map(|(_, t)| t).ok());
                }));
            }
            best_rc = best_rc.min(rc);
            best_os = best_os.min(os);
            println!(
                "{size:>6} B round {round}: rustcrypto {rc:>8.0} ns  openssl {os:>8.0} ns  rustcrypto/openssl speed {:.2}",
                os / rc
            );
        }
        println!(
            "{size:>6} B best:    rustcrypto {best_rc:>8.0} ns  openssl {best_os:>8.0} ns  rustcrypto/openssl speed {:.2}",
            best_os / best_rc
        );
    }
    ExitCode::SUCCESS
}
