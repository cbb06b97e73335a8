//! Known-answer tests (ivnsec_core::crypto::kat) against the portable provider, which implements
//! every primitive: nothing may be skipped and nothing may fail.

use ivnsec_core::crypto::kat::{self, Family, KatReport};
use ivnsec_crypto_portable::PROVIDER;

fn run(family: Family) -> KatReport {
    let report = kat::run_family(&PROVIDER, family);
    assert_eq!(
        report.failed(),
        0,
        "{family:?} on {}: {report}",
        PROVIDER.name
    );
    assert_eq!(
        report.skipped(),
        0,
        "{family:?}: the portable provider implements everything: {report}"
    );
    assert!(report.passed() > 0, "{family:?}: no vectors ran");
    report
}

#[test]
fn aes_block() {
    assert_eq!(run(Family::AesBlock).passed(), 3);
}

#[test]
fn aes_cbc() {
    assert_eq!(run(Family::AesCbc).passed(), 3);
}

#[test]
fn aes_ctr() {
    assert_eq!(run(Family::AesCtr).passed(), 3);
}

#[test]
fn aes_gcm() {
    assert_eq!(run(Family::AesGcm).passed(), 8);
}

#[test]
fn aes_ccm() {
    assert_eq!(run(Family::AesCcm).passed(), 10);
}

#[test]
fn chacha20_poly1305() {
    assert_eq!(run(Family::ChaCha20Poly1305).passed(), 2);
}

#[test]
fn hmac() {
    // RFC 2202: 8 MD5 + 8 SHA-1; RFC 4231: 7 cases x 4 hashes; NIST HMAC-SHA3-256: 4.
    assert_eq!(run(Family::Hmac).passed(), 16 + 28 + 4);
}

#[test]
fn cmac() {
    assert_eq!(run(Family::Cmac).passed(), 4);
}

#[test]
fn everything_at_once() {
    let report = kat::run(&PROVIDER);
    assert_eq!(report.failed(), 0, "{report}");
    assert_eq!(report.first_failure(), None);
    assert_eq!(report.skipped(), 0, "{report}");
    assert_eq!(report.passed(), report.results.len());
}

/// The harness is not vacuous: a provider that corrupts MACs and accepts any AEAD tag fails the
/// KATs, and the report names the vector and the step.
mod broken_provider {
    use ivnsec_core::crypto::kat::{self, Family, Outcome};
    use ivnsec_core::crypto::{
        AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, CipherAlg, CipherKey, CryptoError,
        CryptoProvider, KeyFactory, MAX_MAC_LEN, MacAlg, MacKey, Primitive, SecureRandom,
    };
    use ivnsec_crypto_portable::PROVIDER;

    struct BrokenKeys;
    struct NoRandom;
    struct AcceptAnyTag(Box<dyn AeadKey>);
    struct FlipFirstBit(Box<dyn MacKey>);

    static BROKEN: CryptoProvider = CryptoProvider {
        name: "broken",
        library: "test",
        keys: &BrokenKeys,
        rng: &NoRandom,
    };

    impl SecureRandom for NoRandom {
        fn fill(&self, _buf: &mut [u8]) -> Result<(), CryptoError> {
            Err(CryptoError::Rng)
        }
    }

    impl AeadKey for AcceptAnyTag {
        fn alg(&self) -> AeadAlg {
            self.0.alg()
        }
        fn seal_in_place(
            &self,
            nonce: &[u8; AEAD_NONCE_LEN],
            aad: &[u8],
            in_out: &mut [u8],
            tag: &mut [u8; AEAD_TAG_LEN],
        ) -> Result<(), CryptoError> {
            self.0.seal_in_place(nonce, aad, in_out, tag)
        }
        fn open_in_place(
            &self,
            nonce: &[u8; AEAD_NONCE_LEN],
            aad: &[u8],
            in_out: &mut [u8],
            tag: &[u8; AEAD_TAG_LEN],
        ) -> Result<(), CryptoError> {
            let _ = self.0.open_in_place(nonce, aad, in_out, tag);
            Ok(())
        }
    }

    impl MacKey for FlipFirstBit {
        fn alg(&self) -> MacAlg {
            self.0.alg()
        }
        fn compute(&self, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize {
            let n = self.0.compute(parts, out);
            out[0] ^= 0x80;
            n
        }
    }

    impl KeyFactory for BrokenKeys {
        fn supports(&self, p: Primitive) -> bool {
            PROVIDER.supports(p)
        }
        fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
            Ok(Box::new(AcceptAnyTag(PROVIDER.keys.aead(alg, key)?)))
        }
        fn mac(&self, alg: MacAlg, key: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
            Ok(Box::new(FlipFirstBit(PROVIDER.keys.mac(alg, key)?)))
        }
        fn cipher(&self, alg: CipherAlg, key: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
            PROVIDER.keys.cipher(alg, key)
        }
    }

    #[test]
    fn a_broken_provider_fails() {
        let r = kat::run_family(&BROKEN, Family::Hmac);
        assert_eq!(r.failed(), r.results.len());
        let first = r.first_failure().unwrap();
        assert_eq!(first.name, "RFC 2202 HMAC-MD5 test case 1");
        assert_eq!(first.outcome, Outcome::Failed("compute: MAC differs"));

        let r = kat::run_family(&BROKEN, Family::AesGcm);
        assert_eq!(r.failed(), r.results.len());
        assert_eq!(
            r.first_failure().unwrap().outcome,
            Outcome::Failed("open accepted a tampered tag")
        );

        // Ciphers are not broken: they still pass.
        let r = kat::run(&BROKEN);
        assert_eq!(r.passed_in(Family::AesCbc), 3);
        assert!(
            r.to_string()
                .contains("FAILED RFC 4493 4 example 1 AES-CMAC (len 0)"),
            "{r}"
        );
    }
}
