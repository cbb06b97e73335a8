//! The option groups `frame protect|verify` and `pcap verify` share: the SA beyond its profile
//! ([`SaArgs`]) and each protocol's own options ([`esp`], [`macsec`], [`secoc`]); the SAs they
//! make are built in `ivnsec_node::frames::material`.

use ivnsec_core::profile::NamedProfile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::frames::material::SaSettings;
use zeroize::Zeroizing;

pub mod esp;
pub mod macsec;
pub mod secoc;

/// The security association beyond its profile, as given on the command line.
#[derive(clap::Args, Debug)]
pub struct SaArgs {
    /// Cipher key in hex (AEAD and AES-CBC/CTR suites).
    #[arg(long)]
    pub key: Option<String>,
    /// HMAC key in hex, any length ≥ 1 byte (HMAC and AES-CBC/CTR-HMAC suites).
    #[arg(long)]
    pub mac_key: Option<String>,
    /// IVN-AE: per-SA IV in hex, 12 bytes, XORed with the key id and the sequence number to
    /// form the nonce (`iv XOR (000000 ‖ key id ‖ seq)`).
    #[arg(long)]
    pub iv: Option<String>,
    /// IVN-AE: key id carried in the frame (0-255, default 0). It is part of the nonce, so
    /// senders under one key need key ids of their own, and a frame verifies only under the
    /// key id it was protected with. Example: `--key-id 3`
    #[arg(long)]
    pub key_id: Option<u8>,
    /// Truncate HMAC tags to this many bytes (≥ max(10, digest/2)); default full length.
    #[arg(long)]
    pub tag_len: Option<usize>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
}

impl SaArgs {
    /// The settings of the SA of `profile`.
    pub fn settings(self, profile: NamedProfile) -> SaSettings {
        let a = self;
        SaSettings {
            profile,
            key: a.key.map(Zeroizing::new),
            mac_key: a.mac_key.map(Zeroizing::new),
            iv: a.iv,
            key_id: a.key_id,
            tag_len: a.tag_len,
            provider: a.provider,
        }
    }
}
