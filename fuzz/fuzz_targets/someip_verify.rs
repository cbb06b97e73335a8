//! SOME/IP per-service security, receive path, on arbitrary messages. The first input byte
//! selects the suite (bits 0-2, modulo 5), the level (bits 3-4: auth, conf, nosec), the replay
//! window (bit 5: 0 or 64) and the provider (bit 7, when it has the suite); the rest is one
//! message for service 0x1234 with the fixed key 00 01 02 …, key id 7 and salt a1a2a3a4 (the
//! known answers of crates/ivnsec-conformance/src/vectors/someip.rs, so seeds start accepted).
//!
//! Invariants: verify never panics; an accepted message yields an in-bounds body range after the
//! header (and the 9 security bytes when secured); a secured message accepted once is a replay
//! the second time; every rejection is counted. And `verify_batch` on nine copies of the
//! message (one whole group of eight and one more; AES-CCM on the portable provider runs its
//! multi-buffer lanes) gives the verdicts, bodies and counters of the nine one by one.
#![no_main]

use ivnsec_core::crypto::{AeadAlg, CryptoProvider, Primitive};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::someip::{Level, ServiceParams, ServiceSa};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, msg)) = data.split_first() else {
        return;
    };
    let alg = AeadAlg::ALL[usize::from(sel & 7) % 5];
    let level = [Level::Auth, Level::Conf, Level::NoSec, Level::Conf][usize::from(sel >> 3) & 3];
    let window = if sel & 0x20 != 0 { 64 } else { 0 };
    let fast: &CryptoProvider = &ivnsec_crypto_fast::PROVIDER;
    let provider: &CryptoProvider = if sel & 0x80 != 0 && fast.supports(Primitive::Aead(alg)) {
        fast
    } else {
        &ivnsec_crypto_portable::PROVIDER
    };
    let key: Vec<u8> = (0..alg.key_len() as u8).collect();
    let p = ServiceParams {
        service_id: 0x1234,
        level,
        alg,
        key_id: 7,
        key: if level == Level::NoSec { &[] } else { &key },
        salt: [0xa1, 0xa2, 0xa3, 0xa4],
        replay_window: window,
        max_senders: 4,
        first_counter: 1,
    };
    let mut one = ServiceSa::new(provider, &p).expect("fixed parameters are valid");
    let mut batch = ServiceSa::new(provider, &p).expect("fixed parameters are valid");
    let mut copies: Vec<Vec<u8>> = (0..9).map(|_| msg.to_vec()).collect();
    let expect: Vec<_> = copies
        .iter()
        .map(|c| {
            let mut c = c.clone();
            let r = one.verify(&mut c);
            let body = r.clone().map(|b| c[b].to_vec()).unwrap_or_default();
            (r, body)
        })
        .collect();
    let mut msgs: Vec<&mut [u8]> = copies.iter_mut().map(|c| &mut c[..]).collect();
    let mut out = vec![Err(DropReason::Malformed); msgs.len()];
    batch.verify_batch(&mut msgs, &mut out);
    let got: Vec<_> = msgs
        .iter()
        .zip(out)
        .map(|(m, r)| {
            let body = r.clone().map(|b| m[b].to_vec()).unwrap_or_default();
            (r, body)
        })
        .collect();
    assert_eq!(got, expect);
    assert_eq!(batch.rx_counters(), one.rx_counters());

    let mut sa = ServiceSa::new(provider, &p).expect("fixed parameters are valid");
    let mut m = msg.to_vec();
    match sa.verify(&mut m) {
        Ok(r) => {
            let min = if level == Level::NoSec { 16 } else { 25 };
            assert!(r.start >= min && r.start <= r.end && r.end <= m.len());
            if level != Level::NoSec {
                let mut again = msg.to_vec();
                assert_eq!(sa.verify(&mut again), Err(DropReason::ReplayDuplicate));
            }
        }
        Err(_) => assert_eq!(sa.rx_counters().drops.total(), 1),
    }
});
