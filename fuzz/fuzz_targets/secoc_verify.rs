//! AUTOSAR SecOC receive path on arbitrary UDP datagrams. Byte 0 selects the MAC (bit 0: CMAC-AES-128
//! or HMAC-SHA-256), the provider (bit 1: fast) and the bit lengths (bits 2-4, [`LAYOUTS`]); byte 1
//! the verify attempts (bits 0-1) and the acceptance window (bits 2-3, [`WINDOWS`]). The rest is a
//! datagram of AUTOSAR PDU headers (id ‖ length) and PDUs: those with id 0x10 and 0x11 go to a
//! receive SA each (Data ID 0x0100 / 0x0101, fixed keys, last freshness 0); other ids are skipped.
//!
//! Invariants: neither the PDU walk nor verify panics; an accepted PDU has a shorter Authentic
//! I-PDU, a freshness value above the previous last one (which it becomes) and inside the window,
//! and re-protects with the same SA parameters and that freshness value to exactly the same bytes;
//! with an authenticator of 32 bits or more the same PDU a second time is refused.
#![no_main]

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};
use ivnsec_core::wire::secoc::Pdus;
use libfuzzer_sys::fuzz_target;

/// (fv_bits, mac_bits, full_fv_bits); must match fuzz/seed.sh.
const LAYOUTS: [(u8, u16, u8); 8] = [
    (8, 24, 64),
    (3, 28, 40),
    (0, 32, 16),
    (16, 64, 16),
    (4, 8, 12),
    (64, 128, 64),
    (5, 13, 31),
    (1, 1, 1),
];
const WINDOWS: [Option<u64>; 4] = [None, Some(1), Some(40), Some(u64::MAX)];
const PDU_IDS: [u32; 2] = [0x10, 0x11];

/// Key of the SA for PDU id `id`: 16 bytes for CMAC, 32 for HMAC; byte i = (i · 7) ^ id.
fn key(alg: SecocAlg, id: u32) -> Vec<u8> {
    let n = alg.key_len().unwrap_or(32);
    (0..n).map(|i| (i as u8).wrapping_mul(7) ^ id as u8).collect()
}

fn params(alg: SecocAlg, key: &[u8], id: u32, layout: (u8, u16, u8)) -> SecocParams<'_> {
    SecocParams {
        fv_bits: layout.0,
        mac_bits: layout.1,
        full_fv_bits: layout.2,
        ..SecocParams::new(alg, key, 0x0100 | (id as u16 & 0xff))
    }
}

fuzz_target!(|data: &[u8]| {
    let [sel, opt, datagram @ ..] = data else {
        return;
    };
    let alg = SecocAlg::ALL[usize::from(sel & 1)];
    let provider: &CryptoProvider = if sel & 2 != 0 {
        &ivnsec_crypto_fast::PROVIDER
    } else {
        &ivnsec_crypto_portable::PROVIDER
    };
    let layout = LAYOUTS[usize::from(sel >> 2) & 7];
    let opts = SecocRxOptions {
        last_freshness: 0,
        acceptance_window: WINDOWS[usize::from(opt >> 2) & 3],
        verify_attempts: u16::from(opt & 3),
    };
    let keys = PDU_IDS.map(|id| key(alg, id));
    let mut rx = [0, 1].map(|i| {
        SecocRx::new(provider, &params(alg, &keys[i], PDU_IDS[i], layout), opts)
            .expect("fixed SA")
    });
    for r in Pdus::new(datagram) {
        let Ok((id, pdu)) = r else {
            break;
        };
        let Some(i) = PDU_IDS.iter().position(|&x| x == id) else {
            continue;
        };
        let before = rx[i].last_freshness();
        let Ok(v) = rx[i].verify(pdu) else {
            assert_eq!(rx[i].last_freshness(), before, "a drop changes no state");
            continue;
        };
        assert!(v.authentic_len < pdu.len());
        assert!(v.freshness > before);
        assert!(u128::from(v.freshness - before) <= u128::from(rx[i].acceptance_window()));
        assert_eq!(rx[i].last_freshness(), v.freshness);

        let p = params(alg, &keys[i], id, layout);
        let mut tx = SecocTx::new(provider, &p, v.freshness).expect("accepted FV is a valid first FV");
        let mut again = vec![0u8; pdu.len()];
        let n = tx
            .protect(&pdu[..v.authentic_len], &mut again)
            .expect("room for the same PDU");
        assert_eq!(&again[..n], pdu, "an accepted PDU re-protects identically");

        if layout.1 >= 32 {
            assert!(rx[i].verify(pdu).is_err(), "a replay was accepted");
        }
    }
});
