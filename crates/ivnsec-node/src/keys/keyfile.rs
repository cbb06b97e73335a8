//! Key files of `ivnsec send`, `receive` and `keygen`: one direction's key material as a small
//! TOML file (docs/nonce-safety.md):
//!
//! ```toml
//! # ivnsec key file: keep it secret (mode 0600)
//! profile = "aes128-gcm"                          # required by senders; same suite as --profile
//! key = "00112233445566778899aabbccddeeff"        # cipher key (ESP GCM/GMAC/ChaCha: key ‖ salt)
//! mac_key = ""                                    # HMAC key (CBC/CTR+HMAC, hmac-*, esp-…-hmac-…)
//! iv = "0102030405060708090a0b0c"                 # 12 bytes: IVN-AE per-SA IV, MACsec XPN salt
//! ```
//!
//! The file is read with a size bound ([`MAX_KEY_FILE`]); a sender refuses a file that group or
//! others may read, a file without `profile`, and a `profile` of another suite than `--profile`
//! (one key, one nonce domain); everyone refuses an all-zero key.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ivnsec_core::crypto::AEAD_NONCE_LEN;
use ivnsec_core::profile::NamedProfile;
use serde::Deserialize;
use zeroize::{Zeroize, Zeroizing};

use ivnsec_core::channel::DirectionKeys;

use crate::error::{parse_hex, parse_profile, usage};

/// Largest key file read (bytes): a key file is a few hundred bytes; anything larger is not one
/// (`--keys /dev/zero` must not grow the process).
pub const MAX_KEY_FILE: u64 = 16 * 1024;

/// Who loads a key file: the rules for senders are stricter (a sender's key protects nonces).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `send` (and every other sender under a key from a file).
    Sender,
    /// `receive`.
    Receiver,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    profile: Option<String>,
    key: Option<String>,
    mac_key: Option<String>,
    iv: Option<String>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.key.zeroize();
        self.mac_key.zeroize();
        self.iv.zeroize();
    }
}

/// Reads a small secret file (a key file; a PSK file) with a size bound: at most `max` bytes,
/// from a regular file. Returns the text (wiped when dropped) and the permission bits of the
/// open file. Every problem is a usage error naming the file; `hint` says how to make one.
pub fn read_secret(
    path: &Path,
    what: &str,
    max: u64,
    hint: &str,
) -> Result<(Zeroizing<String>, u32)> {
    let file = path.display();
    let f = std::fs::File::open(path)
        .map_err(|e| usage(format!("{what} {file}: cannot read it: {e} ({hint})")))?;
    let meta = f
        .metadata()
        .map_err(|e| usage(format!("{what} {file}: cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(usage(format!(
            "{what} {file}: not a regular file; give the path of the file itself ({hint})"
        )));
    }
    if meta.len() > max {
        return Err(usage(format!(
            "{what} {file}: {} bytes, more than the {max} a {what} can have; is this the right file? ({hint})",
            meta.len()
        )));
    }
    let mut buf = Zeroizing::new(Vec::with_capacity(meta.len() as usize));
    f.take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| usage(format!("{what} {file}: cannot read it: {e}")))?;
    if buf.len() as u64 > max {
        return Err(usage(format!(
            "{what} {file}: grew beyond {max} bytes while being read; is this the right file?"
        )));
    }
    let text = match std::str::from_utf8(&buf) {
        Ok(t) => Zeroizing::new(t.to_string()),
        Err(_) => {
            return Err(usage(format!("{what} {file}: not UTF-8 text ({hint})")));
        }
    };
    Ok((text, meta.mode() & 0o7777))
}

/// Reads and checks the key file `path` for `profile` (messages name it as it was given).
/// Every problem is a usage error (exit 2) naming the file, the key and what is wrong. The
/// file's own `profile` line is parsed here, at its edge.
pub fn load(path: &Path, profile: &NamedProfile, role: Role) -> Result<DirectionKeys> {
    let family = profile.profile();
    let domain = family.nonce_domain();
    let file = path.display();
    let hint = format!(
        "create one with `ivnsec keygen --profile {profile} --out {}`",
        path.display()
    );
    let (text, mode) = read_secret(path, "key file", MAX_KEY_FILE, &hint)?;
    let loose = mode & 0o077 != 0;
    if loose && role == Role::Receiver {
        eprintln!(
            "ivnsec: warning: key file {file} is readable by others (mode {:o}); `chmod 600` it",
            mode & 0o777
        );
    }
    let raw: Raw = toml::from_str(&text).map_err(|e| {
        usage(format!(
            "key file {file}: {} (expected keys: profile, key, mac_key, iv)",
            e.message()
        ))
    })?;
    if let Some(p) = &raw.profile {
        let theirs = parse_profile(p)
            .map_err(|e| usage(format!("key file {file}: key `profile`: `{p}`: {e:#}")))?;
        let their_domain = theirs.profile().nonce_domain();
        if their_domain != domain {
            return Err(usage(format!(
                "key file {file}: key `profile`: the file is for `{p}`, but --profile is \
                 `{profile}`: one key serves one suite (another level of `{their_domain}` is \
                 fine; another suite or family under the same key is not). Use the key file \
                 made for `{profile}`, or make one with `ivnsec keygen --profile {profile}`"
            )));
        }
    }
    let (key_len, mac_len) = family.key_lengths();
    let check = |name: &str, v: &Option<String>, want: usize| -> Result<Zeroizing<Vec<u8>>> {
        let s = v.as_deref().unwrap_or("").trim();
        let bytes = Zeroizing::new(
            parse_hex(name, s)
                .map_err(|e| usage(format!("key file {file}: key `{name}`: {e:#}")))?,
        );
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
        if name != "iv" && !bytes.is_empty() && bytes.iter().all(|&b| b == 0) {
            return Err(usage(format!(
                "key file {file}: key `{name}` is all zeros: that is no secret (anyone can \
                 compute and forge these units). Make a random key with `ivnsec keygen \
                 --profile {profile} --out FILE`"
            )));
        }
        Ok(bytes)
    };
    let key = check("key", &raw.key, key_len)?;
    let mac_key = check("mac_key", &raw.mac_key, mac_len)?;
    let mut iv = [0u8; AEAD_NONCE_LEN];
    if family.uses_iv() {
        iv.copy_from_slice(&check("iv", &raw.iv, AEAD_NONCE_LEN)?);
    } else {
        // Unused by this profile; still must be hex if given.
        let s = raw.iv.as_deref().unwrap_or("").trim();
        parse_hex("iv", s).map_err(|e| usage(format!("key file {file}: key `iv`: {e:#}")))?;
    }
    if role == Role::Sender {
        if raw.profile.is_none() {
            return Err(usage(format!(
                "key file {file}: no `profile` line; a sender needs it so that one key only \
                 ever serves one suite (two suites, or two spellings, under one key would \
                 reuse nonces). Add `profile = \"{domain}\"` if this key was made for \
                 {domain} and never used with another suite, or make a new key with `ivnsec \
                 keygen --profile {profile} --out FILE`"
            )));
        }
        if loose {
            return Err(usage(format!(
                "key file {file} is readable by group or others (mode {:o}); a sender refuses \
                 a key others can read (as ssh does for private keys): `chmod 600 {file}`",
                mode & 0o777
            )));
        }
    }
    let keys = DirectionKeys::new(&key, &mac_key, iv);
    iv.zeroize();
    Ok(keys)
}

/// The used-key record beside a key file (`KEYFILE.used`): which SAs have sent under the key
/// ([`super::highwater`], docs/nonce-safety.md).
pub fn used_record(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".used");
    path.with_file_name(name)
}

/// The text of a key file (wiped when dropped).
pub fn render(profile: &str, keys: &DirectionKeys) -> Zeroizing<String> {
    let hex = |b: &[u8]| Zeroizing::new(hex::encode(b));
    let (key, mac_key) = (hex(keys.key()), hex(keys.mac_key()));
    let iv = if keys.key().is_empty() && keys.mac_key().is_empty() {
        Zeroizing::new(String::new())
    } else {
        hex(keys.iv())
    };
    Zeroizing::new(format!(
        "# ivnsec key file: one direction's keys. Keep it secret (mode 0600).\n\
         # A sender under this key needs a --state-dir (docs/nonce-safety.md).\n\
         profile = \"{profile}\"\nkey = \"{}\"\nmac_key = \"{}\"\niv = \"{}\"\n",
        *key, *mac_key, *iv
    ))
}

/// Writes a new key file with mode 0600; refuses to overwrite an existing file.
pub fn write_new(path: &Path, profile: &str, keys: &DirectionKeys) -> Result<()> {
    write_secret(path, &render(profile, keys))
}

/// Writes `text` (a secret: a key file, a PSK file) to a new file with mode 0600, durably
/// (file and directory fsynced); refuses to overwrite an existing file.
pub fn write_secret(path: &Path, text: &str) -> Result<()> {
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
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))?;
    // The new name is durable too.
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("fsync of {}", parent.display()))?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A temporary directory of secret files, removed when dropped (also used by the PSK
    /// file tests).
    pub(crate) struct Dir(pub(crate) PathBuf);
    impl Dir {
        pub(crate) fn new(tag: &str) -> Dir {
            let mut r = [0u8; 6];
            getrandom::fill(&mut r).unwrap();
            let p = std::env::temp_dir().join(format!("ivnsec-kf-{tag}-{}", hex::encode(r)));
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        /// Writes `body` to `name` with `mode`.
        pub(crate) fn file(&self, name: &str, body: &str, mode: u32) -> PathBuf {
            let p = self.0.join(name);
            std::fs::write(&p, body).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const KEY: &str = "00112233445566778899aabbccddeeff";
    const IV: &str = "0102030405060708090a0b0c";

    fn np(name: &str) -> NamedProfile {
        name.parse().unwrap()
    }

    fn err(r: Result<DirectionKeys>) -> (u8, String) {
        let e = r.unwrap_err();
        (crate::error::exit_code(&e), format!("{e:#}"))
    }

    #[test]
    fn render_then_load_round_trips_for_every_family() {
        let d = Dir::new("rt");
        for profile in [
            "aes128-gcm",
            "aes128-cbc-hmac-sha256",
            "macsec-gcm-aes-256",
            "macsec-gcm-aes-xpn-128",
            "esp-aes128-gcm",
            "esp-aes128-cbc-hmac-sha256",
        ] {
            let k = crate::channel::random_keys(profile.parse().unwrap()).unwrap();
            let p = d.0.join(format!("{profile}.toml"));
            write_new(&p, profile, &k).unwrap();
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            for role in [Role::Sender, Role::Receiver] {
                let l = load(&p, &np(profile), role).unwrap();
                assert_eq!((l.key(), l.mac_key()), (k.key(), k.mac_key()), "{profile}");
            }
            assert!(write_new(&p, profile, &k).is_err(), "no overwrite");
        }
    }

    /// A key file is a few hundred bytes: a device, a huge file or a directory is refused
    /// before anything large is read.
    #[test]
    fn reads_are_bounded_and_only_of_regular_files() {
        let d = Dir::new("bound");
        let big = d.file(
            "big.toml",
            &format!(
                "profile = \"aes128-gcm\"\nkey = \"{KEY}\"\niv = \"{IV}\"\n# {}\n",
                "x".repeat(20_000)
            ),
            0o600,
        );
        for (p, want) in [
            (Path::new("/dev/zero"), "not a regular file"),
            (d.0.as_path(), "not a regular file"),
            (big.as_path(), "more than the 16384"),
        ] {
            for role in [Role::Sender, Role::Receiver] {
                let (code, msg) = err(load(p, &np("aes128-gcm"), role));
                assert_eq!(code, 2, "{msg}");
                assert!(
                    msg.contains(want) && msg.contains(&p.display().to_string()),
                    "{msg}"
                );
            }
        }
    }

    #[test]
    fn senders_need_a_private_file_with_a_profile_line() {
        let d = Dir::new("sender");
        let body = format!("profile = \"aes128-gcm\"\nkey = \"{KEY}\"\niv = \"{IV}\"\n");
        let open = d.file("open.toml", &body, 0o644);
        let (code, msg) = err(load(&open, &np("aes128-gcm"), Role::Sender));
        assert_eq!(code, 2);
        assert!(
            msg.contains("readable by group or others") && msg.contains("chmod 600"),
            "{msg}"
        );
        // A receiver only warns.
        load(&open, &np("aes128-gcm"), Role::Receiver).unwrap();
        let bare = d.file(
            "bare.toml",
            &format!("key = \"{KEY}\"\niv = \"{IV}\"\n"),
            0o600,
        );
        let (code, msg) = err(load(&bare, &np("aes128-gcm"), Role::Sender));
        assert_eq!(code, 2);
        assert!(
            msg.contains("no `profile` line") && msg.contains("profile = \"aes128-gcm\""),
            "{msg}"
        );
        load(&bare, &np("aes128-gcm"), Role::Receiver).unwrap();
    }

    /// `--profile` may name another level of the file's suite, never another suite or family.
    #[test]
    fn profile_line_and_option_must_share_the_nonce_domain() {
        let d = Dir::new("domain");
        let f = d.file(
            "k.toml",
            &format!("profile = \"aes128-gcm/conf\"\nkey = \"{KEY}\"\niv = \"{IV}\"\n"),
            0o600,
        );
        for ok in [
            "aes128-gcm",
            "aes128-gcm/auth",
            "aes128-gcm/conf",
            " aes128-gcm",
        ] {
            load(&f, &np(ok), Role::Sender).unwrap_or_else(|e| panic!("{ok}: {e:#}"));
        }
        for bad in [
            "aes128-ccm",
            "macsec-gcm-aes-128",
            "esp-aes128-gcm",
            "someip-aes128-gcm",
        ] {
            let (code, msg) = err(load(&f, &np(bad), Role::Sender));
            assert_eq!(code, 2, "{bad}: {msg}");
            assert!(
                msg.contains("`profile`") && msg.contains("one key serves one suite"),
                "{bad}: {msg}"
            );
        }
        let m = d.file(
            "m.toml",
            &format!("profile = \"macsec-gcm-aes-128/auth\"\nkey = \"{KEY}\"\n"),
            0o600,
        );
        load(&m, &np("macsec-gcm-aes-128"), Role::Sender).unwrap();
        load(&m, &np("macsec-gcm-aes-128/conf"), Role::Receiver).unwrap();
        let u = d.file(
            "u.toml",
            &format!("profile = \"nope\"\nkey = \"{KEY}\"\n"),
            0o600,
        );
        let (code, msg) = err(load(&u, &np("aes128-gcm"), Role::Receiver));
        assert_eq!(code, 2);
        assert!(msg.contains("`profile`") && msg.contains("nope"), "{msg}");
    }

    #[test]
    fn all_zero_keys_are_refused() {
        let d = Dir::new("zero");
        let zero = "00".repeat(16);
        let cases = [
            (
                "aes128-gcm",
                format!("key = \"{zero}\"\niv = \"{IV}\"\n"),
                "`key`",
            ),
            (
                "aes128-cbc-hmac-sha256",
                format!(
                    "key = \"{KEY}\"\nmac_key = \"{}\"\niv = \"{IV}\"\n",
                    "00".repeat(32)
                ),
                "`mac_key`",
            ),
            (
                "macsec-gcm-aes-128",
                format!("key = \"0x{}\"\n", "00:".repeat(15) + "00"),
                "`key`",
            ),
        ];
        for (profile, body, name) in cases {
            let f = d.file("z.toml", &format!("profile = \"{profile}\"\n{body}"), 0o600);
            for role in [Role::Sender, Role::Receiver] {
                let (code, msg) = err(load(&f, &np(profile), role));
                assert_eq!(code, 2, "{profile}: {msg}");
                assert!(
                    msg.contains(name) && msg.contains("all zeros"),
                    "{profile}: {msg}"
                );
            }
        }
        // An all-zero IV is a documented default (docs/wire-ivnae.md), not a secret.
        let f = d.file(
            "ziv.toml",
            &format!(
                "profile = \"aes128-gcm\"\nkey = \"{KEY}\"\niv = \"{}\"\n",
                "00".repeat(12)
            ),
            0o600,
        );
        load(&f, &np("aes128-gcm"), Role::Sender).unwrap();
    }

    #[test]
    fn the_used_record_sits_beside_the_key_file() {
        assert_eq!(
            used_record(Path::new("/etc/k/a.toml")),
            Path::new("/etc/k/a.toml.used")
        );
        assert_eq!(used_record(Path::new("a.toml")), Path::new("a.toml.used"));
    }
}
