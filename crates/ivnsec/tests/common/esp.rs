//! `ivnsec esp up` (`esp_tunnel` of cli and of testbed_pair): the profile and the key files of
//! both directions.

use std::path::PathBuf;

use super::TempDir;

pub const PROFILE: &str = "esp-aes128-gcm";

/// The key files of both directions.
pub struct Keys {
    pub ab: PathBuf,
    pub ba: PathBuf,
}

pub fn keys(d: &TempDir) -> Keys {
    Keys {
        ab: super::keygen(d, PROFILE, "a2b.toml"),
        ba: super::keygen(d, PROFILE, "b2a.toml"),
    }
}
