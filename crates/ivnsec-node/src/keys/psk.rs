//! Pre-shared CAK files of MKA (`ivnsec macsec up --psk FILE`, written by `ivnsec keygen
//! --mka`, docs/mka.md): the Connectivity Association Key and its name as a small TOML file.
//!
//! ```toml
//! # ivnsec MKA pre-shared key: keep it secret (mode 0600)
//! cak = "135bd758b0ee5c11c55ff6ab19fdb199"   # 16 or 32 bytes (CAK of 128 or 256 bits)
//! ckn = "96437a93ccf10d9dfe347846cce52c7d"   # 1 to 32 bytes: names the CAK in every MKPDU
//! ```
//!
//! Read with the size bound of key files ([`keyfile::MAX_KEY_FILE`]); a file that group or
//! others may read is refused (whoever reads the CAK can join the CA, become key server and
//! hand out SAKs), and so is an all-zero CAK. Every member of the CA uses the same file.

use std::fmt;
use std::path::Path;

use anyhow::Result;
use serde::Deserialize;
use zeroize::{Zeroize, Zeroizing};

use super::keyfile::{self, MAX_KEY_FILE};
use crate::error::{parse_hex, usage};

/// Longest CKN (IEEE 802.1X-2020 9.3.1: 1 to 32 octets).
pub const MAX_CKN_LEN: usize = ivnsec_core::wire::mkpdu::MAX_CKN_LEN;
/// Length of the CKN `keygen --mka` draws when none is given.
pub const DEFAULT_CKN_LEN: usize = 16;

/// A CAK and its name. The CAK is zeroed when dropped; `Debug` shows its length only.
#[derive(Clone)]
pub struct Psk {
    cak: Zeroizing<Vec<u8>>,
    ckn: Vec<u8>,
}

impl fmt::Debug for Psk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Psk")
            .field("cak", &format_args!("<{} bytes>", self.cak.len()))
            .field("ckn", &hex::encode(&self.ckn))
            .finish()
    }
}

impl Psk {
    /// A PSK from bytes; the lengths are checked (CAK 16 or 32 octets and not all zero, CKN
    /// 1 to 32 octets). `what` names the source in the error.
    pub fn new(cak: &[u8], ckn: &[u8], what: &str) -> Result<Psk> {
        if cak.len() != 16 && cak.len() != 32 {
            return Err(usage(format!(
                "{what}: `cak` must be 16 or 32 bytes (a CAK of 128 or 256 bits: 32 or 64 hex \
                 digits), got {}",
                cak.len()
            )));
        }
        if cak.iter().all(|&b| b == 0) {
            return Err(usage(format!(
                "{what}: `cak` is all zeros: that is no secret (anyone could join the CA and \
                 hand out SAKs). Make one with `ivnsec keygen --mka --out FILE`"
            )));
        }
        if ckn.is_empty() || ckn.len() > MAX_CKN_LEN {
            return Err(usage(format!(
                "{what}: `ckn` must be 1 to {MAX_CKN_LEN} bytes (2 to {} hex digits), got {}",
                2 * MAX_CKN_LEN,
                ckn.len()
            )));
        }
        Ok(Psk {
            cak: Zeroizing::new(cak.to_vec()),
            ckn: ckn.to_vec(),
        })
    }

    /// A fresh random CAK of `cak_bits` (128 or 256) named `ckn`, or a random
    /// [`DEFAULT_CKN_LEN`]-byte name.
    pub fn generate(cak_bits: u32, ckn: Option<&[u8]>) -> Result<Psk> {
        let len = match cak_bits {
            128 => 16,
            256 => 32,
            b => return Err(usage(format!("--cak-bits must be 128 or 256, got {b}"))),
        };
        let rng = ivnsec_crypto::PORTABLE.rng;
        let mut cak = Zeroizing::new(vec![0u8; len]);
        rng.fill(&mut cak)
            .map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
        let ckn = match ckn {
            Some(c) => c.to_vec(),
            None => {
                let mut c = vec![0u8; DEFAULT_CKN_LEN];
                rng.fill(&mut c)
                    .map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
                c
            }
        };
        Psk::new(&cak, &ckn, "--ckn")
    }

    /// The CAK bytes.
    pub fn cak(&self) -> &[u8] {
        &self.cak
    }

    /// The CAK Name (not secret: every MKPDU carries it).
    pub fn ckn(&self) -> &[u8] {
        &self.ckn
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    cak: Option<String>,
    ckn: Option<String>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.cak.zeroize();
    }
}

/// Reads and checks the PSK file `path`. Every problem is a usage error (exit 2) naming the
/// file, the key and what is wrong.
pub fn load(path: &Path) -> Result<Psk> {
    let file = path.display();
    let hint = format!(
        "create one with `ivnsec keygen --mka --out {}` and copy it to every member",
        path.display()
    );
    let (text, mode) = keyfile::read_secret(path, "PSK file", MAX_KEY_FILE, &hint)?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "PSK file {file} is readable by group or others (mode {:o}); whoever reads the CAK \
             can join the CA and become its key server. Refusing it: `chmod 600 {file}`",
            mode & 0o777
        )));
    }
    let raw: Raw = toml::from_str(&text).map_err(|e| {
        usage(format!(
            "PSK file {file}: {} (expected keys: cak, ckn)",
            e.message()
        ))
    })?;
    let field = |name: &str, v: &Option<String>| -> Result<Zeroizing<Vec<u8>>> {
        let Some(s) = v.as_deref() else {
            return Err(usage(format!("PSK file {file}: no `{name}` ({hint})")));
        };
        Ok(Zeroizing::new(parse_hex(name, s).map_err(|e| {
            usage(format!("PSK file {file}: key `{name}`: {e:#}"))
        })?))
    };
    let cak = field("cak", &raw.cak)?;
    let ckn = field("ckn", &raw.ckn)?;
    Psk::new(&cak, &ckn, &format!("PSK file {file}"))
}

/// The text of a PSK file (wiped when dropped).
pub fn render(psk: &Psk) -> Zeroizing<String> {
    let cak = Zeroizing::new(hex::encode(psk.cak()));
    Zeroizing::new(format!(
        "# ivnsec MKA pre-shared key (IEEE 802.1X-2020 CAK and CKN). Keep it secret (mode 0600);\n\
         # every member of the CA uses the same file: `ivnsec macsec up --psk FILE`.\n\
         cak = \"{}\"\nckn = \"{}\"\n",
        *cak,
        hex::encode(psk.ckn())
    ))
}

/// Writes a new PSK file with mode 0600; refuses to overwrite an existing file.
pub fn write_new(path: &Path, psk: &Psk) -> Result<()> {
    keyfile::write_secret(path, &render(psk))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::keyfile::tests::Dir;
    use std::os::unix::fs::PermissionsExt;

    fn err(r: Result<Psk>) -> (u8, String) {
        let e = r.unwrap_err();
        (crate::error::exit_code(&e), format!("{e:#}"))
    }

    /// IEEE 802.1X-2020 Annex G's CAK and CKN, as a file, read back byte for byte.
    #[test]
    fn a_file_round_trips_and_is_private() {
        let d = Dir::new("psk");
        let cak = hex::decode("135bd758b0ee5c11c55ff6ab19fdb199").unwrap();
        let ckn = hex::decode("96437a93ccf10d9dfe347846cce52c7d").unwrap();
        let p = d.0.join("ca.psk");
        write_new(&p, &Psk::new(&cak, &ckn, "test").unwrap()).unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let l = load(&p).unwrap();
        assert_eq!((l.cak(), l.ckn()), (&cak[..], &ckn[..]));
        assert!(!format!("{l:?}").contains("135bd758"), "Debug shows no CAK");
        assert!(write_new(&p, &l).is_err(), "never overwrites");
        for bits in [128, 256] {
            let g = Psk::generate(bits, None).unwrap();
            assert_eq!(g.cak().len() * 8, bits as usize);
            assert_eq!(g.ckn().len(), DEFAULT_CKN_LEN);
        }
        assert_eq!(Psk::generate(128, Some(b"ab")).unwrap().ckn(), b"ab");
        assert_eq!(err(Psk::generate(192, None)).0, 2);
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        let d = Dir::new("psk");
        let cak = "00112233445566778899aabbccddeeff";
        let cases = [
            (
                format!("cak = \"{cak}\"\nckn = \"01\"\n"),
                0o640,
                "readable by group",
            ),
            (
                format!("cak = \"{cak}\"\nckn = \"01\"\n"),
                0o604,
                "chmod 600",
            ),
            (format!("cak = \"{cak}\"\n"), 0o600, "no `ckn`"),
            ("ckn = \"01\"\n".to_string(), 0o600, "no `cak`"),
            (
                format!("cak = \"{cak}00\"\nckn = \"01\"\n"),
                0o600,
                "16 or 32 bytes",
            ),
            (
                format!("cak = \"{}\"\nckn = \"01\"\n", "00".repeat(32)),
                0o600,
                "all zeros",
            ),
            (
                format!("cak = \"{cak}\"\nckn = \"\"\n"),
                0o600,
                "1 to 32 bytes",
            ),
            (
                format!("cak = \"{cak}\"\nckn = \"{}\"\n", "ab".repeat(33)),
                0o600,
                "1 to 32",
            ),
            (format!("cak = \"{cak}\"\nckn = \"xyz\"\n"), 0o600, "`ckn`"),
            (
                format!("cak = \"{cak}\"\nckn = \"01\"\nkey = \"\"\n"),
                0o600,
                "unknown field",
            ),
            (
                format!("profile = \"macsec-gcm-aes-128\"\nkey = \"{cak}\"\n"),
                0o600,
                "cak, ckn",
            ),
        ];
        for (i, (body, mode, want)) in cases.iter().enumerate() {
            let p = d.file(&format!("{i}.psk"), body, *mode);
            let (code, msg) = err(load(&p));
            assert_eq!(code, 2, "{body}: {msg}");
            assert!(
                msg.contains(want) && msg.contains(&p.display().to_string()),
                "{body}: {msg}"
            );
        }
        // Bounded reads: a device and an oversized file are refused before being read.
        let (code, msg) = err(load(Path::new("/dev/zero")));
        assert!(code == 2 && msg.contains("not a regular file"), "{msg}");
        let big = d.file("big.psk", &"#".repeat(20_000), 0o600);
        let (code, msg) = err(load(&big));
        assert!(code == 2 && msg.contains("more than the 16384"), "{msg}");
    }
}
