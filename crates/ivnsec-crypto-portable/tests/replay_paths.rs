//! The replay behaviour of each receive path, end to end with real protected frames, against the
//! reference model of `ivnsec-core/tests/common/replay_model.rs` (a set of seen numbers plus the
//! highest): IVN-AE (`IvnAeRx`), ESP without and with extended sequence numbers (`EspRx`), and
//! MACsec (`MacsecRx`, which keeps its own lowest-acceptable-PN rule and duplicate bitmap).
//!
//! Each step protects a frame with the chosen number (a fresh transmit SA starting there), maybe
//! flips its last tag byte, and verifies it. The verdict must be the model's: accepted, or the
//! model's replay reason, or `bad_tag` for a tampered frame the window would have let through —
//! and a frame that failed its tag must leave no trace in the window.

#[path = "../../ivnsec-core/tests/common/replay_model.rs"]
mod replay_model;

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, DUP_BITS, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::replay::ReplayError;
use ivnsec_core::wire::macsec::Sci;
use proptest::prelude::*;
use replay_model::{Model, Op, ops, resolve};

const P: &CryptoProvider = &ivnsec_crypto_portable::PROVIDER;
const KEY: [u8; 16] = [0x42; 16];
/// Ethernet header ‖ a little payload.
const FRAME: [u8; 24] = [
    2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
];
/// IPv4/UDP, 28 + 4 bytes, checksum left zero (ESP does not look at it).
const PACKET: [u8; 32] = [
    0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0x30, 0x3a, 0,
    12, 0, 0, 0xde, 0xad, 0xbe, 0xef,
];

fn tamper(frame: &mut [u8], yes: bool) {
    if yes && let Some(b) = frame.last_mut() {
        *b ^= 0x01;
    }
}

fn generic_expectation(m: &Model, s: u64, authentic: bool) -> Result<(), DropReason> {
    match m.check(s) {
        Ok(()) if authentic => Ok(()),
        Ok(()) => Err(DropReason::BadTag),
        Err(ReplayError::TooOld) => Err(DropReason::ReplayTooOld),
        Err(ReplayError::Duplicate) => Err(DropReason::ReplayDuplicate),
    }
}

fn ivnae(window: u32, steps: &[(Op, bool)]) -> Result<(), TestCaseError> {
    let profile = "aes128-gcm".parse().unwrap();
    let params = SaParams::new(profile, &KEY, &[]);
    let mut rx = IvnAeRx::new(P, &params, window).unwrap();
    let mut m = Model::new(window);
    let mut history = Vec::new();
    let (mut wire, mut out) = ([0u8; 128], [0u8; 128]);
    for (i, (op, authentic)) in steps.iter().enumerate() {
        let s = resolve(op, m.highest, u64::from(window), &history, u64::MAX);
        history.push(s);
        let mut tx = IvnAeTx::new(P, &params, s).unwrap();
        let n = tx.protect(&FRAME, &mut wire).unwrap();
        tamper(&mut wire[..n], !authentic);
        let want = generic_expectation(&m, s, *authentic);
        let got = rx.verify(&wire[..n], &mut out).map(|_| ());
        prop_assert_eq!(
            got,
            want,
            "step {} {:?}: seq {} highest {}",
            i,
            op,
            s,
            m.highest
        );
        if got.is_ok() {
            m.insert(s);
        }
        prop_assert_eq!(rx.highest_seq(), m.highest);
    }
    Ok(())
}

fn esp_key() -> Vec<u8> {
    // AES-128-GCM: key ‖ 4-byte salt (RFC 4106).
    let mut k = KEY.to_vec();
    k.extend_from_slice(&[9, 8, 7, 6]);
    k
}

fn esp(window: u32, steps: &[(Op, bool)]) -> Result<(), TestCaseError> {
    let key = esp_key();
    let params = EspParams {
        alg: EspAlg::from_name("esp-aes128-gcm").unwrap(),
        spi: 0x1000,
        key: &key,
        auth_key: &[],
        esn: false,
    };
    let mut rx = EspRx::new(P, &params, window).unwrap();
    let mut m = Model::new(window);
    let mut history = Vec::new();
    let (mut wire, mut out) = ([0u8; 256], [0u8; 256]);
    for (i, (op, authentic)) in steps.iter().enumerate() {
        // 32-bit sequence numbers without ESN.
        let s = resolve(
            op,
            m.highest,
            u64::from(window),
            &history,
            u64::from(u32::MAX),
        );
        history.push(s);
        let mut tx = EspTx::new(P, &params, EspMode::Transport, s).unwrap();
        let n = tx.protect(&PACKET, &mut wire).unwrap();
        tamper(&mut wire[..n], !authentic);
        let want = generic_expectation(&m, s, *authentic);
        let got = rx.verify(&wire[..n], &mut out).map(|_| ());
        prop_assert_eq!(
            got,
            want,
            "step {} {:?}: seq {} highest {}",
            i,
            op,
            s,
            m.highest
        );
        if got.is_ok() {
            m.insert(s);
        }
        prop_assert_eq!(rx.highest_seq(), m.highest);
    }
    Ok(())
}

/// ESN: only the low 32 bits travel; the receiver infers the high half from its window (RFC 4303
/// Appendix A2.2), and a wrong guess fails the ICV (the high half is authenticated). So a number
/// left of the window is dropped, as `replay_too_old` or as `bad_tag`: the property here is
/// acceptance, which must match the model exactly. The receiver starts just below 2^32 so the
/// sequences cross into the next high half; jumps stay below 2^30 (far less than 2^32 − W,
/// beyond which the standard's inference cannot follow).
fn esp_esn(window: u32, steps: &[(Op, bool)]) -> Result<(), TestCaseError> {
    let key = esp_key();
    let params = EspParams {
        alg: EspAlg::from_name("esp-aes128-gcm").unwrap(),
        spi: 0x1001,
        key: &key,
        auth_key: &[],
        esn: true,
    };
    let mut rx = EspRx::new(P, &params, window).unwrap();
    // A fresh receiver infers the high half 0; start it (as a resumed receiver) just below 2^32.
    let base = (1u64 << 32) - 700;
    rx.restore_seen(base);
    let mut m = Model::new(window);
    m.insert(base);
    let mut history = Vec::new();
    let (mut wire, mut out) = ([0u8; 256], [0u8; 256]);
    for (i, (op, authentic)) in steps.iter().enumerate() {
        let op = match *op {
            Op::Jump(k) => Op::Jump(k.min(30)),
            Op::Any(_) => Op::Next(1),
            ref o => o.clone(),
        };
        let s = resolve(&op, m.highest, u64::from(window), &history, u64::MAX);
        history.push(s);
        let mut tx = EspTx::new(P, &params, EspMode::Transport, s).unwrap();
        let n = tx.protect(&PACKET, &mut wire).unwrap();
        tamper(&mut wire[..n], !authentic);
        let accept = m.check(s).is_ok() && *authentic;
        let got = rx.verify(&wire[..n], &mut out).map(|_| ());
        prop_assert_eq!(
            got.is_ok(),
            accept,
            "step {} {:?}: seq {:#x} highest {:#x}: {:?}",
            i,
            op,
            s,
            m.highest,
            got
        );
        if got.is_ok() {
            m.insert(s);
        }
        prop_assert_eq!(rx.highest_seq(), m.highest);
    }
    Ok(())
}

/// MACsec (802.1AE §10.6.2): a PN below the lowest acceptable PN, max(1, nextPN − W) with
/// nextPN = highest validated + 1, is `late`; of the rest, one that validated before is a
/// `replay_duplicate` when it lies within `DUP_BITS` of the highest (our stricter rule; the
/// standard accepts it). Windows above `DUP_BITS` therefore accept the old duplicates the bitmap
/// no longer covers, as the standard does.
fn macsec_expectation(m: &Model, pn: u64, authentic: bool) -> Result<(), DropReason> {
    let lowest = (m.highest + 1).saturating_sub(m.window).max(1);
    if pn < lowest {
        Err(DropReason::Late)
    } else if pn <= m.highest && m.highest - pn < DUP_BITS && m.seen.contains(&pn) {
        Err(DropReason::ReplayDuplicate)
    } else if authentic {
        Ok(())
    } else {
        Err(DropReason::BadTag)
    }
}

fn macsec(window: u32, steps: &[(Op, bool)]) -> Result<(), TestCaseError> {
    let keys = KeyParams {
        suite: CipherSuite::GcmAes128,
        key: &KEY,
        sci: Sci([2, 0, 0, 0, 0, 1, 0, 1]),
        an: 0,
        ssci: None,
        salt: None,
    };
    let tx_opts = TxOptions {
        confidentiality: true,
        include_sci: true,
        es: false,
        scb: false,
    };
    let rx_opts = RxOptions {
        validate: ValidateFrames::Strict,
        replay_protect: true,
        replay_window: window,
        lowest_pn: 1,
    };
    let mut rx = MacsecRx::new(P, &keys, rx_opts).unwrap();
    let mut m = Model::new(window);
    let mut history = Vec::new();
    let (mut wire, mut out) = ([0u8; 128], [0u8; 128]);
    for (i, (op, authentic)) in steps.iter().enumerate() {
        let pn = resolve(
            op,
            m.highest,
            u64::from(window),
            &history,
            u64::from(u32::MAX),
        );
        history.push(pn);
        let mut tx = MacsecTx::new(P, &keys, tx_opts, pn).unwrap();
        let n = tx.protect(&FRAME, &mut wire).unwrap();
        tamper(&mut wire[..n], !authentic);
        let want = macsec_expectation(&m, pn, *authentic);
        let got = rx.verify(&wire[..n], &mut out).map(|_| ());
        prop_assert_eq!(
            got,
            want,
            "step {} {:?}: pn {} highest {}",
            i,
            op,
            pn,
            m.highest
        );
        if got.is_ok() {
            m.insert(pn);
        }
        prop_assert_eq!(rx.next_pn(), m.highest + 1);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn ivnae_window_0(s in ops(120)) { ivnae(0, &s)?; }
    #[test]
    fn ivnae_window_1(s in ops(120)) { ivnae(1, &s)?; }
    #[test]
    fn ivnae_window_64(s in ops(160)) { ivnae(64, &s)?; }
    #[test]
    fn ivnae_window_1024(s in ops(200)) { ivnae(1024, &s)?; }

    #[test]
    fn esp_window_0(s in ops(120)) { esp(0, &s)?; }
    #[test]
    fn esp_window_1(s in ops(120)) { esp(1, &s)?; }
    #[test]
    fn esp_window_64(s in ops(160)) { esp(64, &s)?; }
    #[test]
    fn esp_window_1024(s in ops(200)) { esp(1024, &s)?; }

    #[test]
    fn esp_esn_window_0(s in ops(120)) { esp_esn(0, &s)?; }
    #[test]
    fn esp_esn_window_1(s in ops(120)) { esp_esn(1, &s)?; }
    #[test]
    fn esp_esn_window_64(s in ops(160)) { esp_esn(64, &s)?; }
    #[test]
    fn esp_esn_window_1024(s in ops(200)) { esp_esn(1024, &s)?; }

    #[test]
    fn macsec_window_0(s in ops(120)) { macsec(0, &s)?; }
    #[test]
    fn macsec_window_1(s in ops(120)) { macsec(1, &s)?; }
    #[test]
    fn macsec_window_64(s in ops(160)) { macsec(64, &s)?; }
    #[test]
    fn macsec_window_1024(s in ops(200)) { macsec(1024, &s)?; }
    /// Above DUP_BITS: the stretch where the standard's acceptance of duplicates shows.
    #[test]
    fn macsec_window_4096(s in ops(200)) { macsec(4096, &s)?; }
}
