//! Provider selection: `portable`, `fast`, or `auto` (the fast one when it has every primitive of
//! the suite, else the portable one).

use std::fmt;
use std::str::FromStr;

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::suite::Suite;

pub static PROVIDERS: [&CryptoProvider; 2] = [
    &ivnsec_crypto_fast::PROVIDER,
    &ivnsec_crypto_portable::PROVIDER,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProviderChoice {
    Portable,
    Fast,
    #[default]
    Auto,
}

impl FromStr for ProviderChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "portable" => Ok(ProviderChoice::Portable),
            "fast" => Ok(ProviderChoice::Fast),
            "auto" => Ok(ProviderChoice::Auto),
            _ => Err(format!(
                "unknown provider '{s}' (expected portable, fast or auto)"
            )),
        }
    }
}

impl fmt::Display for ProviderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProviderChoice::Portable => "portable",
            ProviderChoice::Fast => "fast",
            ProviderChoice::Auto => "auto",
        })
    }
}

/// True when `provider` has every primitive `suite` needs.
pub fn has_suite(provider: &CryptoProvider, suite: Suite) -> bool {
    let (prims, n) = suite.primitives();
    prims[..n].iter().flatten().all(|p| provider.supports(*p))
}

/// The provider for `suite` under `choice`; `Err` names the problem when the choice lacks it.
pub fn select(choice: ProviderChoice, suite: Suite) -> Result<&'static CryptoProvider, String> {
    let p: &'static CryptoProvider = match choice {
        ProviderChoice::Portable => &ivnsec_crypto_portable::PROVIDER,
        ProviderChoice::Fast => &ivnsec_crypto_fast::PROVIDER,
        ProviderChoice::Auto => {
            if has_suite(&ivnsec_crypto_fast::PROVIDER, suite) {
                &ivnsec_crypto_fast::PROVIDER
            } else {
                &ivnsec_crypto_portable::PROVIDER
            }
        }
    };
    if has_suite(p, suite) {
        Ok(p)
    } else {
        Err(format!(
            "provider '{}' does not implement suite {suite}; use --provider portable or auto",
            p.name
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_prefers_fast_and_falls_back() {
        let gcm: Suite = "aes128-gcm".parse().unwrap();
        assert_eq!(select(ProviderChoice::Auto, gcm).unwrap().name, "fast");
        let ccm: Suite = "aes128-ccm".parse().unwrap();
        assert_eq!(select(ProviderChoice::Auto, ccm).unwrap().name, "portable");
        assert!(select(ProviderChoice::Fast, ccm).is_err());
        let md5: Suite = "aes128-cbc-hmac-md5".parse().unwrap();
        assert_eq!(select(ProviderChoice::Auto, md5).unwrap().name, "portable");
        for s in Suite::all() {
            assert!(select(ProviderChoice::Portable, s).is_ok(), "{s}");
        }
    }
}
