//! The providers ivnsec links, in `auto`'s fallback order.

use ivnsec_core::crypto::CryptoProvider;

/// Every provider, in the order `auto` falls back on for a primitive its table does not name.
pub static PROVIDERS: [&CryptoProvider; 3] = [
    &ivnsec_crypto_fast::PROVIDER,
    &ivnsec_crypto_openssl::PROVIDER,
    &ivnsec_crypto_portable::PROVIDER,
];

/// The portable provider (every primitive): for work that must not depend on a choice, such as
/// fingerprints and random keys.
pub static PORTABLE: &CryptoProvider = &ivnsec_crypto_portable::PROVIDER;

/// The version of the OpenSSL libcrypto the `openssl` provider runs on.
pub fn openssl_version() -> &'static str {
    ivnsec_crypto_openssl::version()
}
