//! Known-answer tests (ivnsec_core::crypto::kat) against the fast provider (aws-lc-rs).
//!
//! It has no AES-CCM, HMAC-MD5 or HMAC-SHA3-256, so those vectors are skipped; everything it does
//! implement must pass, and the primitives the fast provider exists for (GCM, ChaCha20-Poly1305,
//! HMAC-SHA1/SHA-256, AES-CBC/CTR) must really have run.

use ivnsec_core::crypto::kat::{self, Family, KatReport};
use ivnsec_core::crypto::{AeadAlg, CipherAlg, MacAlg, Primitive};
use ivnsec_crypto_fast::PROVIDER;

fn run(family: Family) -> KatReport {
    let report = kat::run_family(&PROVIDER, family);
    assert_eq!(
        report.failed(),
        0,
        "{family:?} on {}: {report}",
        PROVIDER.name
    );
    report
}

/// Every vector of the family ran: none skipped.
fn run_all(family: Family) -> KatReport {
    let report = run(family);
    assert_eq!(
        report.skipped(),
        0,
        "{family:?}: vectors skipped on the fast provider: {report}"
    );
    assert!(report.passed() > 0, "{family:?}: no vectors ran");
    report
}

#[test]
fn aes_block() {
    assert_eq!(run_all(Family::AesBlock).passed(), 3);
}

#[test]
fn aes_cbc() {
    let r = run_all(Family::AesCbc);
    for alg in CipherAlg::ALL {
        assert_eq!(
            r.passed_in_for(Family::AesCbc, Primitive::Cipher(alg)),
            1,
            "{alg:?}"
        );
    }
}

#[test]
fn aes_ctr() {
    let r = run_all(Family::AesCtr);
    for alg in CipherAlg::ALL {
        assert_eq!(
            r.passed_in_for(Family::AesCtr, Primitive::Cipher(alg)),
            1,
            "{alg:?}"
        );
    }
}

#[test]
fn aes_gcm() {
    let r = run_all(Family::AesGcm);
    assert_eq!(r.passed_for(Primitive::Aead(AeadAlg::Aes128Gcm)), 4);
    assert_eq!(r.passed_for(Primitive::Aead(AeadAlg::Aes256Gcm)), 4);
}

#[test]
fn aes_ccm_is_skipped_not_failed() {
    let r = run(Family::AesCcm);
    assert!(!PROVIDER.supports(Primitive::Aead(AeadAlg::Aes128Ccm)));
    assert_eq!(r.passed(), 0);
    assert_eq!(r.skipped(), r.results.len());
}

#[test]
fn chacha20_poly1305() {
    assert_eq!(run_all(Family::ChaCha20Poly1305).passed(), 2);
}

#[test]
fn hmac() {
    let r = run(Family::Hmac);
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacSha1)), 8);
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacSha224)), 7);
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacSha256)), 7);
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacSha384)), 7);
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacSha512)), 7);
    // Not implemented by aws-lc-rs here: skipped, never silently passed.
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacMd5)), 0);
    assert_eq!(r.passed_for(Primitive::Mac(MacAlg::HmacSha3_256)), 0);
    assert_eq!(r.skipped(), 8 + 4);
}

#[test]
fn cmac() {
    assert_eq!(run_all(Family::Cmac).passed(), 4);
}

#[test]
fn everything_at_once() {
    let report = kat::run(&PROVIDER);
    assert_eq!(report.failed(), 0, "{report}");
    assert_eq!(report.first_failure(), None);
    assert_eq!(report.passed() + report.skipped(), report.results.len());
}
