//! Provider selection, as the frame commands use it: the one selection of `ivnsec-crypto`.

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::suite::Suite;

pub use ivnsec_crypto::{PROVIDERS, ProviderChoice, has_suite};

/// The provider for `suite` under `choice`; `Err` names the problem when the choice lacks it.
pub fn select(choice: ProviderChoice, suite: Suite) -> Result<&'static CryptoProvider, String> {
    ivnsec_crypto::select_suite(choice, suite).map_err(|e| e.to_string())
}
