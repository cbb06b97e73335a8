//! Conformance support for ivnsec's protocol tests.
//!
//! This crate is test-only (`publish = false`). It holds what every protocol test shares:
//!
//! - [`PROVIDERS`] and [`providers`]: the one table of crypto providers, and the one helper that
//!   picks the providers implementing what a test needs ([`Needs`]). Every API test runs once per
//!   provider that has the primitive, through this helper.
//! - [`vectors`]: the known-answer vectors as data tables, each entry with its citation. The
//!   tests in `tests/` drive them through the API once per provider;
//!   `crates/ivnsec/tests/cli/protocols.rs` drives the same tables through the `ivnsec` binary.
//! - [`packets`]: the IP packets and payloads the ESP tests wrap.
//!
//! The tests themselves are in `tests/conformance/` (one binary: IVN-AE suites, MACsec, ESP,
//! SecOC, secured SOME/IP) and `tests/no_alloc.rs` (its own binary: it installs a counting global
//! allocator, the one place here that needs `unsafe`).
#![forbid(unsafe_code)]

pub mod batch;
pub mod packets;
pub mod vectors;

use ivnsec_core::crypto::{AeadAlg, CipherAlg, CryptoProvider, MacAlg, Primitive};
use ivnsec_core::sa::esp::EspAlg;
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::sa::secoc::SecocAlg;
use ivnsec_core::suite::{IvnAeProfile, Suite};

/// Every crypto provider, in one fixed order: the portable one (RustCrypto, every primitive),
/// the fast one (aws-lc-rs), the OpenSSL one (libcrypto: AEADs and AES modes), and `auto`'s
/// per-primitive provider (each key from the provider its measured table names, AEAD and MAC
/// keys split by size), so that what `--provider auto` runs passes the same tests.
pub static PROVIDERS: [&CryptoProvider; 4] = [
    &ivnsec_crypto_portable::PROVIDER,
    &ivnsec_crypto_fast::PROVIDER,
    &ivnsec_crypto_openssl::PROVIDER,
    &ivnsec_crypto::AUTO,
];

/// What a test needs from a provider: a primitive, or a transform made of primitives.
pub trait Needs {
    /// True when `provider` implements all of it.
    fn met_by(&self, provider: &CryptoProvider) -> bool;
}

/// Nothing: every provider qualifies (tests of logic that every provider runs alike).
#[derive(Clone, Copy, Debug)]
pub struct Anything;

impl Needs for Anything {
    fn met_by(&self, _: &CryptoProvider) -> bool {
        true
    }
}

impl Needs for Primitive {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        provider.supports(*self)
    }
}

impl Needs for AeadAlg {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        provider.supports(Primitive::Aead(*self))
    }
}

impl Needs for MacAlg {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        provider.supports(Primitive::Mac(*self))
    }
}

impl Needs for CipherAlg {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        provider.supports(Primitive::Cipher(*self))
    }
}

/// An IVN-AE suite: all of its primitives (none for `plain` and `crc32`).
impl Needs for Suite {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        let (prims, n) = self.primitives();
        prims[..n].iter().flatten().all(|p| provider.supports(*p))
    }
}

impl Needs for IvnAeProfile {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        self.suite.met_by(provider)
    }
}

/// A MACsec cipher suite: its AES-GCM key size.
impl Needs for CipherSuite {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        self.aead().met_by(provider)
    }
}

/// An ESP transform: its cipher or AEAD and its MAC.
impl Needs for EspAlg {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        self.supported_by(provider)
    }
}

/// A SecOC authenticator: its MAC.
impl Needs for SecocAlg {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        self.supported_by(provider)
    }
}

/// All of several needs (e.g. a test that builds SAs of three ESP transforms).
impl<N: Needs, const K: usize> Needs for [N; K] {
    fn met_by(&self, provider: &CryptoProvider) -> bool {
        self.iter().all(|n| n.met_by(provider))
    }
}

/// The providers, from [`PROVIDERS`] and in its order, that implement everything `needs` names.
///
/// ```
/// use ivnsec_conformance::providers;
/// use ivnsec_core::crypto::AeadAlg;
/// // Every provider has AES-128-GCM; only some have AES-128-CCM.
/// assert_eq!(providers(AeadAlg::Aes128Gcm).count(), 4);
/// assert!(providers(AeadAlg::Aes128Ccm).any(|p| p.name == "portable"));
/// ```
pub fn providers<N: Needs + Clone>(
    needs: N,
) -> impl Iterator<Item = &'static CryptoProvider> + Clone {
    PROVIDERS.into_iter().filter(move |p| needs.met_by(p))
}

/// The provider called `name` (`portable`, `fast`, `openssl`, `auto`), for the tests about one provider in
/// particular (e.g. that the fast one has the suites it exists for). Panics on an unknown name.
pub fn provider(name: &str) -> &'static CryptoProvider {
    PROVIDERS
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no crypto provider called {name:?}"))
}

/// Bytes from hex as typed in from a publication: ASCII whitespace between digits is ignored
/// (vectors are laid out in groups and lines); anything else that is not a hex digit is a typing
/// error and panics.
pub fn unhex(s: &str) -> Vec<u8> {
    let clean: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    hex::decode(&clean).unwrap_or_else(|e| panic!("bad hex vector {s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_provider_once() {
        let names: Vec<&str> = PROVIDERS.iter().map(|p| p.name).collect();
        assert_eq!(names, ["portable", "fast", "openssl", "auto"]);
        assert_eq!(provider("fast").name, "fast");
        assert_eq!(provider("openssl").name, "openssl");
    }

    #[test]
    fn providers_filters_by_what_is_needed() {
        assert_eq!(providers(Anything).count(), PROVIDERS.len());
        assert_eq!(providers(Suite::Plain).count(), PROVIDERS.len());
        // The portable provider has every primitive (its crate's promise), so it is never
        // filtered out; a pair of needs keeps exactly the providers that have both.
        for a in AeadAlg::ALL {
            assert!(providers(a).any(|p| p.name == "portable"), "{a:?}");
            for b in AeadAlg::ALL {
                let both: Vec<&str> = providers([a, b]).map(|p| p.name).collect();
                let want: Vec<&str> = PROVIDERS
                    .iter()
                    .filter(|p| p.supports(Primitive::Aead(a)) && p.supports(Primitive::Aead(b)))
                    .map(|p| p.name)
                    .collect();
                assert_eq!(both, want, "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn unhex_ignores_layout_and_refuses_typos() {
        assert_eq!(unhex("0a 0B\n  ff"), [0x0a, 0x0b, 0xff]);
        assert!(std::panic::catch_unwind(|| unhex("0g")).is_err());
        assert!(std::panic::catch_unwind(|| unhex("abc")).is_err());
    }
}
