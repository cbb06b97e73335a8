//! The `openssl speed` comparison of the crypto benchmark: which OpenSSL measurement is
//! equivalent to a profile, running it once per (arguments, size), parsing its machine-readable
//! output, and the ratio fields of a row.

use std::collections::HashMap;
use std::process::Command;

use anyhow::Result;
use ivnsec_core::suite::{HashFn, IvnAeProfile, Level, Suite};

use super::Row;
use ivnsec_node::error::env_error;

/// The `openssl speed` arguments equivalent to a profile.
pub struct Equivalent {
    /// Per message: AEAD init + AAD + encrypt + tag (`-aead -evp X`), or HMAC (`-hmac H`).
    pub per_message: &'static [&'static str],
    /// AEAD streaming encryption (`-evp X`: EVP_EncryptUpdate over the buffer, no per-message tag).
    pub stream: Option<&'static [&'static str]>,
}

/// The OpenSSL measurement of the same work as protecting with `p`, if there is a single one.
pub fn openssl_equivalent(p: IvnAeProfile) -> Option<Equivalent> {
    use ivnsec_core::crypto::AeadAlg::*;
    let aead = |m: &'static [&'static str], s: &'static [&'static str]| {
        Some(Equivalent {
            per_message: m,
            stream: Some(s),
        })
    };
    let hmac = |m: &'static [&'static str]| {
        Some(Equivalent {
            per_message: m,
            stream: None,
        })
    };
    match p.suite {
        // Only the conf level encrypts N bytes; auth (GMAC-like, all AAD) has no speed equivalent.
        Suite::Aead(a) if p.level == Level::Conf => match a {
            Aes128Gcm => aead(&["-aead", "-evp", "aes-128-gcm"], &["-evp", "aes-128-gcm"]),
            Aes256Gcm => aead(&["-aead", "-evp", "aes-256-gcm"], &["-evp", "aes-256-gcm"]),
            Aes128Ccm => aead(&["-aead", "-evp", "aes-128-ccm"], &["-evp", "aes-128-ccm"]),
            Aes256Ccm => aead(&["-aead", "-evp", "aes-256-ccm"], &["-evp", "aes-256-ccm"]),
            ChaCha20Poly1305 => aead(
                &["-aead", "-evp", "chacha20-poly1305"],
                &["-evp", "chacha20-poly1305"],
            ),
            _ => None,
        },
        Suite::Hmac(h) => match h {
            HashFn::Md5 => hmac(&["-hmac", "md5"]),
            HashFn::Sha1 => hmac(&["-hmac", "sha1"]),
            HashFn::Sha224 => hmac(&["-hmac", "sha224"]),
            HashFn::Sha256 => hmac(&["-hmac", "sha256"]),
            HashFn::Sha3_256 => hmac(&["-hmac", "sha3-256"]),
        },
        _ => None,
    }
}

/// Fills the OpenSSL fields of a measured row: the command run, its MB/s, the ratios and a note
/// where there is no figure (no equivalent, OpenSSL failed, no thread CPU time).
pub fn compare(row: &mut Row, equivalent: Option<Equivalent>, openssl: &mut OpensslCache) {
    let size = row.size;
    // Same clock as OpenSSL (CPU time) when /proc has it, else the median batch.
    let ours = row.protect_mbps_cpu.unwrap_or(row.protect_mbps_median);
    let Some(eq) = equivalent else {
        row.openssl_note = Some("no single OpenSSL equivalent".into());
        return;
    };
    let (cmd, r) = openssl.get(eq.per_message, size);
    row.openssl_cmd = Some(cmd);
    match r {
        Ok(o) => {
            row.openssl_mbps = Some(o);
            row.ratio_vs_openssl = Some(ours / o);
            row.ratio_vs_openssl_median = Some(row.protect_mbps_median / o);
            row.ratio_vs_openssl_mean = Some(row.protect_mbps / o);
            if row.protect_mbps_cpu.is_none() {
                row.openssl_note = Some("no thread CPU time: ratio from the median batch".into());
            }
        }
        Err(e) => row.openssl_note = Some(e),
    }
    if let Some(stream) = eq.stream {
        match openssl.get(stream, size).1 {
            Ok(o) => {
                row.openssl_stream_mbps = Some(o);
                row.ratio_vs_openssl_stream = Some(ours / o);
            }
            Err(e) => {
                let note = row.openssl_note.take().map_or(String::new(), |n| n + "; ");
                row.openssl_note = Some(format!("{note}stream: {e}"));
            }
        }
    }
}

/// `openssl speed` arguments (after `speed -mr -seconds S -bytes N`).
type OpensslArgs = &'static [&'static str];

/// The command line run and its MB/s, or why there is none.
type OpensslResult = (String, Result<f64, String>);

/// `openssl speed` results by (arguments, size), so each runs once per invocation.
pub struct OpensslCache {
    seconds: u32,
    done: HashMap<(OpensslArgs, usize), OpensslResult>,
}

impl OpensslCache {
    pub fn new(seconds: u32) -> OpensslCache {
        OpensslCache {
            seconds,
            done: HashMap::new(),
        }
    }

    /// Seconds per `openssl speed` run.
    pub fn seconds(&self) -> u32 {
        self.seconds
    }

    /// The command line and its MB/s (payload bytes / s / 1e6), or why there is none.
    fn get(&mut self, alg: OpensslArgs, size: usize) -> OpensslResult {
        let seconds = self.seconds;
        self.done
            .entry((alg, size))
            .or_insert_with(|| {
                let mut argv: Vec<String> = [
                    "speed",
                    "-mr",
                    "-seconds",
                    &seconds.to_string(),
                    "-bytes",
                    &size.to_string(),
                ]
                .map(String::from)
                .into();
                argv.extend(alg.iter().map(|s| s.to_string()));
                let cmd = format!("openssl {}", argv.join(" "));
                (cmd, run_openssl(&argv, size))
            })
            .clone()
    }
}

fn run_openssl(argv: &[String], size: usize) -> Result<f64, String> {
    let out = ivnsec_net::sys::die_with_parent(&mut Command::new("openssl"))
        .args(argv)
        .output()
        .map_err(|e| format!("cannot run openssl: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match parse_openssl_mr(&stdout, size) {
        Some(bps) if out.status.success() => Ok(bps / 1e6),
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            let first = err
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no result line");
            Err(format!(
                "openssl speed failed ({}): {}",
                out.status,
                first.trim()
            ))
        }
    }
}

/// Bytes per second from `openssl speed -mr` output: the `+H:` line lists the sizes and the
/// `+F:` line the matching bytes/s (`+F:<idx>:<name>:<v1>:<v2>…`; the name may contain `:`
/// in no known case, but the values are taken from the end). A `+F:` line with fewer values
/// than sizes gives `None`, not the index or the name read as a value.
fn parse_openssl_mr(text: &str, size: usize) -> Option<f64> {
    let sizes: Vec<usize> = text
        .lines()
        .find_map(|l| l.strip_prefix("+H:"))
        .map(|h| h.split(':').filter_map(|s| s.trim().parse().ok()).collect())?;
    let pos = sizes.iter().position(|&s| s == size)?;
    let f = text.lines().find_map(|l| l.strip_prefix("+F:"))?;
    let fields: Vec<&str> = f.split(':').collect();
    // Index and name come first.
    let first = fields.len().checked_sub(sizes.len()).filter(|&i| i >= 2)?;
    let values = fields.get(first..)?;
    let v: f64 = values.get(pos)?.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// `openssl version`; an environment error (exit 3) saying how to fix it when it cannot run.
pub fn openssl_version() -> Result<String> {
    match ivnsec_net::sys::die_with_parent(Command::new("openssl").arg("version")).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(env_error(format!(
            "--vs-openssl: `openssl version` failed ({}); install OpenSSL or drop --vs-openssl",
            o.status
        ))),
        Err(e) => Err(env_error(format!(
            "--vs-openssl needs the `openssl` command ({e}); install OpenSSL (e.g. apt-get install openssl) or drop --vs-openssl"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_openssl_machine_readable() {
        let text = "+DT:AES-128-GCM:1:64\n+R:1694951:AES-128-GCM:0.640000\n+H:64\n+F:25:AES-128-GCM:169495100.00\n";
        assert_eq!(parse_openssl_mr(text, 64), Some(169495100.0));
        assert_eq!(parse_openssl_mr(text, 128), None);
        let hmac = "+H:16:64\n+F:9:hmac(sha256):1000.5:2000.25\n";
        assert_eq!(parse_openssl_mr(hmac, 64), Some(2000.25));
        assert_eq!(parse_openssl_mr("garbage", 64), None);
    }

    /// Hostile output: more sizes than values, values that are not positive numbers.
    #[test]
    fn rejects_malformed_speed_output() {
        assert_eq!(parse_openssl_mr("+H:16:64:128\n+F:9:x:1\n", 16), None);
        assert_eq!(parse_openssl_mr("+H:64\n+F:9:x:-5\n", 64), None);
        assert_eq!(parse_openssl_mr("+H:64\n+F:9:x:inf\n", 64), None);
        assert_eq!(parse_openssl_mr("+H:64\n+F:9:x:NaN\n", 64), None);
        assert_eq!(parse_openssl_mr("+H:64\n", 64), None);
    }

    #[test]
    fn equivalents_cover_the_targets() {
        for name in [
            "aes128-gcm",
            "aes256-gcm",
            "aes128-ccm",
            "chacha20-poly1305",
            "hmac-sha1",
            "hmac-sha256",
        ] {
            assert!(
                openssl_equivalent(name.parse().unwrap()).is_some(),
                "{name}"
            );
        }
        assert!(openssl_equivalent("aes128-gcm/auth".parse().unwrap()).is_none());
        assert!(openssl_equivalent("aes128-cbc-hmac-sha256".parse().unwrap()).is_none());
    }
}
