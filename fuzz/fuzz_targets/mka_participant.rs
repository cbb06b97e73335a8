//! An MKA participant (`ivnsec_core::mka::Participant`, GCM-AES-128 or XPN-256 by bit 0 of
//! byte 0, the provider by bit 1) on a virtual clock fed arbitrary MKPDUs.
//!
//! The input is a list of records `dt | flags | len (u16) | bytes`: the clock advances by
//! dt × 50 ms; flag bit 0 re-signs the bytes with the CA's ICK after fixing the EAPOL length
//! (so that the state machine behind the ICV check is reached), bit 1 first patches the CKN to
//! the CA's; then the participant's timers run and its transmit and event queues drain.
//!
//! Invariants: nothing panics; every MKPDU the participant sends parses, carries our CKN and a
//! valid ICV and is at most `max_frame_len()`; MNs increase; the peer table stays within its
//! bound; once the timers ran and the transmit queue drained, the next timeout lies after `now`;
//! at most two keys are installed for receive; a transmit SA is only installed for a key
//! installed for receive; a retired key was installed; every drop is counted once.
#![no_main]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use ivnsec_core::crypto::{CryptoError, CryptoProvider, SecureRandom};
use ivnsec_core::mka::kdf::CaKeys;
use ivnsec_core::mka::{Config, Event, Participant};
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_core::wire::mkpdu::{Frame, HEADER_LEN, ICV_LEN, KeyId, Repr};
use libfuzzer_sys::fuzz_target;

const CAK: [u8; 16] = [0x5a; 16];
const CKN: &[u8] = b"fuzz-ckn";

struct Rng(AtomicU64);

impl SecureRandom for Rng {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        for c in buf.chunks_mut(8) {
            // splitmix64, the same stream as `mka_peer --session` (the seeds).
            let mut z = self.0.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            c.copy_from_slice(&z.to_le_bytes()[..c.len()]);
        }
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let suite = if sel & 1 == 0 { CipherSuite::GcmAes128 } else { CipherSuite::GcmAesXpn256 };
    let provider: &'static CryptoProvider = if sel & 2 == 0 {
        &ivnsec_crypto_portable::PROVIDER
    } else {
        &ivnsec_crypto_fast::PROVIDER
    };
    let mut cfg = Config::new(suite);
    cfg.max_peers = 4;
    cfg.rekey_interval_ns = Some(3_000_000_000);
    let sci = Sci::end_station(MacAddr([2, 0, 0, 0, 0, 1]));
    let mut p = Participant::new(cfg, &CAK, CKN, sci, provider, Rng(AtomicU64::new(1)), 0).unwrap();
    let keys = CaKeys::new(provider, &CAK, CKN).unwrap();
    let mut now = 0u64;
    let mut last_mn = 0u32;
    let mut buf = vec![0u8; p.max_frame_len()];
    let mut rx: BTreeSet<KeyId> = BTreeSet::new();
    while rest.len() >= 4 {
        let (dt, flags) = (rest[0], rest[1]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]])).min(rest.len() - 4);
        let mut frame = rest[4..4 + len].to_vec();
        rest = &rest[4 + len..];
        now += u64::from(dt) * 50_000_000;
        if frame.len() >= HEADER_LEN + 32 {
            let body = frame.len() - HEADER_LEN;
            let body = body - body % 4;
            frame.truncate(HEADER_LEN + body);
            if flags & 2 != 0 && frame.len() >= HEADER_LEN + 32 + CKN.len() + ICV_LEN {
                // Basic parameter set with our CKN's length and bytes.
                let l = 28 + CKN.len() as u16;
                frame[HEADER_LEN + 2] = (frame[HEADER_LEN + 2] & 0xF0) | (l >> 8) as u8;
                frame[HEADER_LEN + 3] = l as u8;
                frame[HEADER_LEN + 32..HEADER_LEN + 32 + CKN.len()].copy_from_slice(CKN);
            }
            if flags & 1 != 0 {
                frame[12..16].copy_from_slice(&[0x88, 0x8e, 3, 5]);
                frame[16..18].copy_from_slice(&(body as u16).to_be_bytes());
                let n = frame.len();
                let icv = keys.icv(&frame[..n - ICV_LEN]);
                frame[n - ICV_LEN..].copy_from_slice(&icv);
            }
        }
        let before = p.counters().total_drops();
        let r = p.handle_pdu(now, &frame);
        assert_eq!(p.counters().total_drops() - before, u64::from(r.is_err()));
        p.handle_timeout(now);
        while let Some(n) = p.poll_transmit(now, &mut buf) {
            let f = Frame::new_checked(&buf[..n]).expect("our MKPDU checks");
            let r = Repr::parse(&f).expect("our MKPDU parses");
            assert_eq!(r.basic.ckn, CKN);
            assert!(keys.verify_icv(f.signed(), f.icv()));
            assert!(r.basic.mn > last_mn || r.basic.mn == 1);
            last_mn = r.basic.mn;
        }
        while let Some(e) = p.poll_event() {
            match e {
                Event::InstallRx(sa) => {
                    assert_eq!(sa.sak.as_bytes().len(), suite.key_len());
                    rx.insert(sa.key);
                }
                Event::RetireRx { key, .. } => {
                    assert!(rx.remove(&key));
                }
                Event::InstallTx(sa) => assert!(rx.contains(&sa.key)),
                _ => {}
            }
            assert!(rx.len() <= 2);
        }
        let s = p.snapshot();
        assert!(s.peers.len() <= 4);
        assert!(p.poll_timeout().is_some_and(|t| t > now));
    }
});
