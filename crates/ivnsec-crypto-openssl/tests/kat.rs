//! Known-answer tests (ivnsec_core::crypto::kat) against the OpenSSL provider.
//!
//! It implements every AEAD and AES mode and no MAC: the MAC vectors are skipped, everything it
//! does implement must pass, and every vector of the families it covers must really have run.

use ivnsec_core::crypto::kat::{self, Family, KatReport};
use ivnsec_core::crypto::{AeadAlg, CipherAlg, MacAlg, Primitive};
use ivnsec_crypto_openssl::PROVIDER;

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
        "{family:?}: vectors skipped on the OpenSSL provider: {report}"
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
fn aes_ccm() {
    let r = run_all(Family::AesCcm);
    assert!(r.passed_for(Primitive::Aead(AeadAlg::Aes128Ccm)) > 0);
    assert!(r.passed_for(Primitive::Aead(AeadAlg::Aes256Ccm)) > 0);
}

#[test]
fn chacha20_poly1305() {
    assert_eq!(run_all(Family::ChaCha20Poly1305).passed(), 2);
}

/// No MAC here: every HMAC and CMAC vector is skipped, never silently passed, and asking for a
/// MAC key says the primitive is not supported.
#[test]
fn macs_are_skipped_not_failed() {
    for family in [Family::Hmac, Family::Cmac] {
        let r = run(family);
        assert_eq!(r.passed(), 0, "{family:?}");
        assert_eq!(r.skipped(), r.results.len(), "{family:?}");
    }
    for alg in MacAlg::ALL {
        assert!(!PROVIDER.supports(Primitive::Mac(alg)));
        assert!(matches!(
            PROVIDER.keys.mac(alg, &[0u8; 16]),
            Err(ivnsec_core::crypto::CryptoError::Unsupported(_))
        ));
    }
    assert!(!PROVIDER.supports(Primitive::KeyWrap(CipherAlg::Aes128)));
}

#[test]
fn everything_at_once() {
    let report = kat::run(&PROVIDER);
    assert_eq!(report.failed(), 0, "{report}");
    assert_eq!(report.first_failure(), None);
    assert_eq!(report.passed() + report.skipped(), report.results.len());
}

/// Wrong key lengths are errors, not panics inside the `openssl` crate.
#[test]
fn bad_key_lengths_are_errors() {
    for alg in AeadAlg::ALL {
        assert!(PROVIDER.keys.aead(alg, &[0u8; 5]).is_err(), "{alg:?}");
    }
    for alg in CipherAlg::ALL {
        assert!(PROVIDER.keys.cipher(alg, &[0u8; 31]).is_err(), "{alg:?}");
    }
}
