//! MACsec receive path on arbitrary frames. The first input byte selects the cipher suite (bits
//! 0-1), validateFrames (bits 2-3), the replay window (bits 4-5), replayProtect (bit 6) and the
//! crypto provider (bit 7); the rest is the frame. The receive SC has a fixed SCI, AN 1 and fixed
//! keys (XPN: fixed SSCI and salt), lowest acceptable PN 1.
//!
//! Invariants: verify never panics and the delivered range lies inside the buffer; a frame that
//! validated (status Ok) re-protects to exactly the same bytes with the same SA, TCI bits and
//! (recovered) PN; and with replayProtect the same bytes a second time are not validated again:
//! refused, or (XPN, validateFrames Check, integrity only) delivered as Invalid.
#![no_main]

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, RxStatus, TxOptions, ValidateFrames,
};
use ivnsec_core::wire::macsec::{Frame, Sci};
use libfuzzer_sys::fuzz_target;

const SCI: u64 = 0x0200_0000_0001_0001;
const SALT: [u8; 12] = [
    0xe6, 0x30, 0xe8, 0x1a, 0x48, 0xde, 0x86, 0xa2, 0x1c, 0x66, 0xfa, 0x6d,
];
const WINDOWS: [u32; 4] = [0, 1, 64, 65_536];
const KEY: [u8; 32] = [0x5a; 32];

fn keys(suite: CipherSuite) -> KeyParams<'static> {
    let xpn = suite.is_xpn();
    KeyParams {
        suite,
        key: &KEY[..suite.key_len()],
        sci: Sci::from_u64(SCI),
        an: 1,
        ssci: xpn.then_some(0x7a30_c118),
        salt: xpn.then_some(SALT),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let suite = CipherSuite::ALL[usize::from(sel & 3)];
    let validate = [
        ValidateFrames::Strict,
        ValidateFrames::Check,
        ValidateFrames::Disabled,
        ValidateFrames::Strict,
    ][usize::from(sel >> 2) & 3];
    let replay_protect = sel & 0x40 != 0;
    let opts = RxOptions {
        validate,
        replay_protect,
        replay_window: WINDOWS[usize::from(sel >> 4) & 3],
        lowest_pn: 1,
    };
    let provider: &CryptoProvider = if sel & 0x80 != 0 {
        &ivnsec_crypto_fast::PROVIDER
    } else {
        &ivnsec_crypto_portable::PROVIDER
    };

    let mut rx = MacsecRx::new(provider, &keys(suite), opts).expect("fixed SA");
    let mut buf = frame.to_vec();
    let Ok(d) = rx.verify_in_place(&mut buf) else {
        return;
    };
    assert!(d.range.start <= d.range.end && d.range.end <= buf.len());
    if d.status != RxStatus::Ok {
        return;
    }
    // Validated: a well-formed SecTAG for our SCI and AN.
    let f = Frame::new_checked(frame).expect("validated frame parses");
    assert_eq!(f.an(), 1);
    let plain = buf[d.range.clone()].to_vec();
    let tx_opts = TxOptions {
        confidentiality: f.e(),
        include_sci: f.sc(),
        es: f.es(),
        scb: f.scb(),
    };
    let mut tx = MacsecTx::new(provider, &keys(suite), tx_opts, d.pn).expect("fixed SA");
    let mut out = vec![0u8; tx.protected_len(plain.len())];
    let n = tx.protect(&plain, &mut out).expect("re-protect");
    assert_eq!(
        &out[..n],
        frame,
        "validated frame does not re-protect to the same bytes"
    );

    if replay_protect {
        // A replay is never validated again. It is usually refused (Late / duplicate); but with
        // XPN its PN is recovered in the next 2^32 epoch (802.1AEbw §10.6.2), the ICV then fails,
        // and validateFrames Check delivers a failed integrity-only frame as Invalid (§10.6.4;
        // regression test fuzz_xpn_replay_in_check_mode_is_delivered_invalid_never_ok).
        let mut again = frame.to_vec();
        if let Ok(d) = rx.verify_in_place(&mut again) {
            assert!(
                d.status == RxStatus::Invalid && validate == ValidateFrames::Check && !f.c(),
                "replay accepted: {:?} PN {:#x}",
                d.status,
                d.pn
            );
        }
    }
});
