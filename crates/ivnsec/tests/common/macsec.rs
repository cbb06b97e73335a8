//! `ivnsec macsec up` under static keys (`macsec_tap` of cli and of testbed_pair): the MACs of
//! the two ends, key files named after their profile.

use std::path::PathBuf;

use super::TempDir;

pub const MAC_A: &str = "02:00:00:00:00:0a";

pub const MAC_B: &str = "02:00:00:00:00:0b";

/// `ivnsec keygen --profile PROFILE` into a file of `d` named after the profile.
pub fn key_file(d: &TempDir, profile: &str) -> PathBuf {
    super::keygen(d, profile, &format!("{}.toml", profile.replace('/', "_")))
}
