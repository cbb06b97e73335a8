//! The crypto providers ivnsec links and the one selection every caller uses.
//!
//! [`PROVIDERS`] lists them fastest first; [`select`] picks one for a profile under a
//! `--provider` choice (`auto`: the first that implements every primitive of the profile).
//! The selection rule itself is [`ivnsec_core::crypto::select`]; this crate only supplies the
//! list, so core stays free of any crypto library.
#![forbid(unsafe_code)]

use ivnsec_core::crypto::{self, CryptoProvider, NoProvider, Primitive};
use ivnsec_core::profile::Profile;
use ivnsec_core::suite::Suite;

pub use ivnsec_core::crypto::ProviderChoice;

/// Every provider, in the order `auto` prefers them.
pub static PROVIDERS: [&CryptoProvider; 2] = [
    &ivnsec_crypto_fast::PROVIDER,
    &ivnsec_crypto_portable::PROVIDER,
];

/// The portable provider (every primitive): for work that must not depend on a choice, such as
/// fingerprints and random keys.
pub static PORTABLE: &CryptoProvider = &ivnsec_crypto_portable::PROVIDER;

/// The provider that runs `profile` under `choice`.
pub fn select(
    choice: ProviderChoice,
    profile: Profile,
) -> Result<&'static CryptoProvider, NoProvider> {
    crypto::select(choice, &profile.primitives(), &PROVIDERS, &profile)
}

/// The provider that runs the IVN-AE `suite` under `choice` (the error says "suite …").
pub fn select_suite(
    choice: ProviderChoice,
    suite: Suite,
) -> Result<&'static CryptoProvider, NoProvider> {
    let (prims, n) = suite.primitives();
    let needs: Vec<Primitive> = prims[..n].iter().flatten().copied().collect();
    crypto::select(choice, &needs, &PROVIDERS, &format_args!("suite {suite}"))
}

/// The provider for a set of primitives under `choice`; `what` names them in the error.
pub fn select_primitives(
    choice: ProviderChoice,
    needs: &[Primitive],
    what: &dyn std::fmt::Display,
) -> Result<&'static CryptoProvider, NoProvider> {
    crypto::select(choice, needs, &PROVIDERS, what)
}

/// Names of the providers that implement every primitive of `needs`.
pub fn providers_with(needs: &[Primitive]) -> Vec<&'static str> {
    PROVIDERS
        .iter()
        .filter(|p| crypto::has_all(p, needs))
        .map(|p| p.name)
        .collect()
}

/// True when `provider` has every primitive of the IVN-AE `suite`.
pub fn has_suite(provider: &CryptoProvider, suite: Suite) -> bool {
    let (prims, n) = suite.primitives();
    prims[..n].iter().flatten().all(|p| provider.supports(*p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_prefers_fast_and_falls_back() {
        let gcm: Suite = "aes128-gcm".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, gcm).unwrap().name,
            "fast"
        );
        let ccm: Suite = "aes128-ccm".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, ccm).unwrap().name,
            "portable"
        );
        let e = select_suite(ProviderChoice::Fast, ccm).unwrap_err();
        assert_eq!(
            e.to_string(),
            "provider 'fast' does not implement suite aes128-ccm; use --provider portable or auto"
        );
        let md5: Suite = "aes128-cbc-hmac-md5".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, md5).unwrap().name,
            "portable"
        );
        for s in Suite::all() {
            assert!(select_suite(ProviderChoice::Portable, s).is_ok(), "{s}");
        }
    }

    /// The portable provider runs every profile of every family, and `auto` always finds one.
    #[test]
    fn every_profile_has_a_provider() {
        for p in Profile::all() {
            assert_eq!(
                select(ProviderChoice::Portable, p).unwrap().name,
                "portable",
                "{p}"
            );
            let auto = select(ProviderChoice::Auto, p).unwrap();
            assert!(crypto::has_all(auto, &p.primitives()), "{p}");
        }
        let ccm: Profile = "esp-aes128-gcm".parse().unwrap();
        assert_eq!(select(ProviderChoice::Auto, ccm).unwrap().name, "fast");
    }
}
