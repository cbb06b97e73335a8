//! Key files of `ivnsec send`, `receive` and `keygen`: one direction's key material as a small
//! TOML file (docs/nonce-safety.md):
//!
//! ```toml
//! # ivnsec key file: keep it secret (mode 0600)
//! profile = "aes128-gcm"                          # optional; must match --profile if present
//! key = "00112233445566778899aabbccddeeff"        # cipher key (ESP GCM/GMAC/ChaCha: key ‖ salt)
//! mac_key = ""                                    # HMAC key (CBC/CTR+HMAC, hmac-*, esp-…-hmac-…)
//! iv = "0102030405060708090a0b0c"                 # 12 bytes: IVN-AE per-SA IV, MACsec XPN salt
//! ```

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use ivnsec_core::crypto::AEAD_NONCE_LEN;
use serde::Deserialize;

use super::channel::{DirectionKeys, Family, key_lengths};
use crate::cli::{parse_hex, usage};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    profile: Option<String>,
    key: Option<String>,
    mac_key: Option<String>,
    iv: Option<String>,
}

/// Reads and checks the key file `path` for `profile`. Every problem is a usage error (exit 2)
/// naming the file, the key and what is wrong.
pub fn load(path: &Path, profile: &str) -> Result<DirectionKeys> {
    let family = Family::parse(profile)?;
    let text = std::fs::read_to_string(path).map_err(|e| {
        usage(format!(
            "key file {}: cannot read it: {e} (create one with `ivnsec keygen --profile {profile} --out {}`)",
            path.display(),
            path.display()
        ))
    })?;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        eprintln!(
            "ivnsec: warning: key file {} is readable by others (mode {:o}); `chmod 600` it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    let raw: Raw = toml::from_str(&text).map_err(|e| {
        usage(format!(
            "key file {}: {} (expected keys: profile, key, mac_key, iv)",
            path.display(),
            e.message()
        ))
    })?;
    let file = path.display();
    if let Some(p) = &raw.profile
        && p != profile
    {
        return Err(usage(format!(
            "key file {file}: key `profile`: the file is for `{p}`, but --profile is `{profile}`"
        )));
    }
    let (key_len, mac_len) = key_lengths(profile)?;
    let check = |name: &str, v: &Option<String>, want: usize| -> Result<String> {
        let s = v.as_deref().unwrap_or("").trim();
        let bytes = parse_hex(name, s)
            .map_err(|e| usage(format!("key file {file}: key `{name}`: {e:#}")))?;
        if bytes.len() != want {
            return Err(usage(if want == 0 {
                format!(
                    "key file {file}: key `{name}`: {profile} takes no {name}, but the file gives {} bytes; remove it",
                    bytes.len()
                )
            } else {
                format!(
                    "key file {file}: key `{name}`: {profile} needs {want} bytes ({} hex digits), got {}",
                    want * 2,
                    bytes.len()
                )
            }));
        }
        Ok(s.to_string())
    };
    let key = check("key", &raw.key, key_len)?;
    let mac_key = check("mac_key", &raw.mac_key, mac_len)?;
    let iv = if family.uses_iv() {
        check("iv", &raw.iv, AEAD_NONCE_LEN)?
    } else {
        // Unused by this profile; still must be hex if given.
        let s = raw.iv.as_deref().unwrap_or("").trim();
        parse_hex("iv", s).map_err(|e| usage(format!("key file {file}: key `iv`: {e:#}")))?;
        String::new()
    };
    Ok(DirectionKeys { key, mac_key, iv })
}

/// The text of a key file.
pub fn render(profile: &str, keys: &DirectionKeys) -> String {
    format!(
        "# ivnsec key file: one direction's keys. Keep it secret (mode 0600).\n\
         # A sender under this key needs a --state-dir (docs/nonce-safety.md).\n\
         profile = \"{profile}\"\nkey = \"{}\"\nmac_key = \"{}\"\niv = \"{}\"\n",
        keys.key, keys.mac_key, keys.iv
    )
}

/// Writes a new key file with mode 0600; refuses to overwrite an existing file.
pub fn write_new(path: &Path, profile: &str, keys: &DirectionKeys) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                usage(format!(
                    "{} exists; not overwriting a key (remove it first, and the nonce state of \
                     the old key with it, or choose another file name)",
                    path.display()
                ))
            } else {
                usage(format!("cannot create {}: {e}", path.display()))
            }
        })?;
    f.write_all(render(profile, keys).as_bytes())
        .and_then(|_| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_load_round_trips_for_every_family() {
        let dir = std::env::temp_dir().join(format!("ivnsec-kf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for profile in [
            "aes128-gcm",
            "aes128-cbc-hmac-sha256",
            "macsec-gcm-aes-256",
            "macsec-gcm-aes-xpn-128",
            "esp-aes128-gcm",
            "esp-aes128-cbc-hmac-sha256",
        ] {
            let k = DirectionKeys::random(profile).unwrap();
            let p = dir.join(format!("{profile}.toml"));
            let _ = std::fs::remove_file(&p);
            write_new(&p, profile, &k).unwrap();
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let l = load(&p, profile).unwrap();
            assert_eq!((&l.key, &l.mac_key), (&k.key, &k.mac_key), "{profile}");
            assert!(write_new(&p, profile, &k).is_err(), "no overwrite");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
