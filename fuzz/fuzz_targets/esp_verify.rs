//! IPsec ESP receive path on arbitrary IP packets. The first input byte selects the transform
//! (bits 0-2), ESN (bit 3), the replay window (bits 4-5), a resumed receive state (bit 6: both
//! SAs start as if sequence number `RESUME_ESN` (with ESN) or `RESUME` had verified, so that ESN
//! inference across a 2^32 boundary is reachable) and the crypto provider (bit 7); the rest is the
//! packet. It goes through an `EspReceiver` holding SAs for SPIs 0x100 and 0x101 with fixed keys.
//!
//! Invariants: verify never panics; an accepted packet yields an in-bounds range holding an IP
//! packet whose length field matches it, the SPI is one of ours, and the same bytes a second time
//! are a replay.
#![no_main]

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{EspAlg, EspParams, EspReceiver, EspRx, spi_of};
use ivnsec_core::wire::ip;
use libfuzzer_sys::fuzz_target;

const WINDOWS: [u32; 4] = [0, 1, 64, 4096];
const SPIS: [u32; 2] = [0x100, 0x101];
/// Highest sequence number already seen by a resumed SA: just past the first 2^32 wrap with ESN,
/// near the top of the 32-bit space without.
const RESUME_ESN: u64 = 0x1_0000_0010;
const RESUME: u64 = 0xffff_ff00;

fn key(alg: EspAlg, spi: u32) -> Vec<u8> {
    (0..alg.key_len())
        .map(|i| (i as u8).wrapping_mul(7) ^ spi as u8)
        .collect()
}

fn auth_key(alg: EspAlg, spi: u32) -> Vec<u8> {
    match alg.auth_key_len() {
        Some(n) => (0..n as u8).map(|i| i ^ 0x5c ^ spi as u8).collect(),
        None => Vec::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, packet)) = data.split_first() else {
        return;
    };
    let alg = EspAlg::ALL[usize::from(sel & 7)];
    let esn = sel & 8 != 0;
    let window = WINDOWS[usize::from(sel >> 4) & 3];
    let provider: &CryptoProvider =
        if sel & 0x80 != 0 && alg.supported_by(&ivnsec_crypto_fast::PROVIDER) {
            &ivnsec_crypto_fast::PROVIDER
        } else {
            &ivnsec_crypto_portable::PROVIDER
        };
    let mut rx = EspReceiver::new();
    for spi in SPIS {
        let (k, a) = (key(alg, spi), auth_key(alg, spi));
        let params = EspParams {
            alg,
            spi,
            key: &k,
            auth_key: &a,
            esn,
        };
        let mut sa = EspRx::new(provider, &params, window).expect("fixed SA");
        if sel & 0x40 != 0 {
            sa.restore_seen(if esn { RESUME_ESN } else { RESUME });
        }
        rx.install(sa);
    }
    let mut buf = packet.to_vec();
    let Ok(range) = rx.verify_in_place(&mut buf) else {
        return;
    };
    assert!(range.end <= buf.len() && range.start <= range.end);
    match ip::parse(&buf[range.clone()]) {
        Ok(inner) => assert_eq!(
            inner.total_len,
            range.len(),
            "length field matches the packet"
        ),
        // An authenticated transport-mode payload may name an IPv6 fragment header.
        Err(ip::IpError::Fragment) => {}
        Err(e) => panic!("recovered packet is not IP: {e}"),
    }
    let spi = spi_of(packet).expect("accepted packet has an SPI");
    assert!(SPIS.contains(&spi));
    let mut again = packet.to_vec();
    assert_eq!(
        rx.verify_in_place(&mut again),
        Err(DropReason::ReplayDuplicate)
    );
});
