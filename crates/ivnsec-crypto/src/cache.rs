//! The calibration cache: the table `ivnsec suites --calibrate` measured on this machine, which
//! `--provider auto` reads instead of the built-in one.
//!
//! Where it is ([`location`]): `$IVNSEC_AUTO_TABLE` when set to a path (`builtin` there keeps the
//! built-in table, for runs that must not depend on the machine's calibration), else
//! `$XDG_CACHE_HOME/ivnsec/auto-table.toml`, else `$HOME/.cache/ivnsec/auto-table.toml`.
//!
//! What it holds ([`render`]): TOML with `version` ([`VERSION`]), the machine (`cpu`: the model
//! name of /proc/cpuinfo; `cpu_flags`: the crypto-relevant flags it has), `ivnsec` (the version
//! that wrote it), `build` (`release` or `debug`, [`this_build`]), `date` (unix seconds),
//! `seconds` (how long it measured), `batches` (each figure is the fastest of that many),
//! `sizes`, the providers' libraries, and one `[[primitive]]` per primitive with its `picks`
//! (what `auto` reads) and its `ns` figures (per provider, at `sizes`: what the picks were
//! derived from).
//!
//! How it is read ([`load_from`]): at most [`MAX_LEN`] bytes of a regular file. A missing file
//! is no calibration (the built-in table). A file that cannot be read, is too long, is no valid
//! TOML, has another version, was made on another CPU (model or flags) or by another kind of
//! build, or names an unknown primitive or provider, or picks that do not make a table
//! ([`crate::table::check_table`]) is not used: `auto` runs the built-in table and one warning says why on stderr. It never
//! panics and never runs a provider the file names wrongly.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::calibrate::Calibration;
use crate::providers::PROVIDERS;
use crate::table::{ALL, Entry, Pick, Table, by_name, primitive_name, tabled_primitives};

/// The version of the file format this build reads and writes.
pub const VERSION: i64 = 1;
/// The most bytes read of a cache file.
pub const MAX_LEN: u64 = 64 * 1024;
/// The environment variable naming the cache (or `builtin`).
pub const ENV: &str = "IVNSEC_AUTO_TABLE";
/// Its value that keeps the built-in table.
pub const BUILTIN: &str = "builtin";

/// Where `auto` looks for a calibration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `IVNSEC_AUTO_TABLE=builtin`: the built-in table, whatever is cached.
    Builtin,
    /// This file; `explicit` when `IVNSEC_AUTO_TABLE` named it (a missing file is then worth a
    /// warning).
    Path { path: PathBuf, explicit: bool },
    /// No `IVNSEC_AUTO_TABLE`, `XDG_CACHE_HOME` or `HOME`: nowhere.
    Nowhere,
}

/// [`Location`] from this process's environment.
pub fn location() -> Location {
    location_from(|k| std::env::var_os(k))
}

/// [`Location`] from the environment `env` gives.
pub fn location_from(env: impl Fn(&str) -> Option<OsString>) -> Location {
    match env(ENV).filter(|v| !v.is_empty()) {
        Some(v) if v == BUILTIN => Location::Builtin,
        Some(v) => Location::Path {
            path: PathBuf::from(v),
            explicit: true,
        },
        None => match default_path_from(env) {
            Some(path) => Location::Path {
                path,
                explicit: false,
            },
            None => Location::Nowhere,
        },
    }
}

/// The cache path when `IVNSEC_AUTO_TABLE` is not set: `$XDG_CACHE_HOME/ivnsec/auto-table.toml`
/// (an absolute `XDG_CACHE_HOME`, as the XDG base directory specification has it), else
/// `$HOME/.cache/ivnsec/auto-table.toml`.
pub fn default_path_from(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let file = Path::new("ivnsec").join("auto-table.toml");
    if let Some(x) = env("XDG_CACHE_HOME").map(PathBuf::from)
        && x.is_absolute()
    {
        return Some(x.join(file));
    }
    env("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".cache").join(file))
}

/// [`default_path_from`] this process's environment.
pub fn default_path() -> Option<PathBuf> {
    default_path_from(|k| std::env::var_os(k))
}

/// The CPU a calibration belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu {
    /// The model name (`model name` of /proc/cpuinfo; `Hardware` or `unknown` without one).
    pub model: String,
    /// The flags of [`CPU_FLAGS`] it has, in that order, space-separated.
    pub flags: String,
}

/// The CPU flags that decide which crypto code runs (x86-64 `flags`, AArch64 `Features`).
pub const CPU_FLAGS: &[&str] = &[
    "aes",
    "pclmulqdq",
    "sha_ni",
    "avx",
    "avx2",
    "bmi2",
    "adx",
    "avx512f",
    "avx512vl",
    "avx512bw",
    "vaes",
    "vpclmulqdq",
    "pmull",
    "sha1",
    "sha2",
    "sha3",
    "sha512",
    "asimd",
    "sve",
];

/// This machine's [`Cpu`] (from /proc/cpuinfo; `unknown` where it cannot be read).
pub fn this_cpu() -> Cpu {
    cpu_from_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
}

/// The [`Cpu`] the text of /proc/cpuinfo describes (its first processor).
pub fn cpu_from_cpuinfo(text: &str) -> Cpu {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let model = field("model name")
        .or_else(|| field("Hardware"))
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let have = field("flags")
        .or_else(|| field("Features"))
        .unwrap_or_default();
    let have: Vec<&str> = have.split_whitespace().collect();
    let flags = CPU_FLAGS
        .iter()
        .filter(|f| have.contains(f))
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    Cpu { model, flags }
}

/// What a cache file records besides the figures.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The ivnsec version (and build) that measured.
    pub ivnsec: String,
    /// Unix seconds.
    pub date: u64,
    pub cpu: Cpu,
}

/// `release` or `debug`: the kind of build a calibration measured (a debug build runs the
/// workspace's own crates, the portable provider's among them, unoptimised), recorded as
/// `build` and required to match.
pub fn this_build() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// Seconds since the Unix epoch now.
pub fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `YYYY-MM-DD` (UTC) of unix seconds (the civil-from-days algorithm of H. Hinnant).
pub fn date_string(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A cost as a TOML float (one decimal; a cost that is not finite is written as 0.0, which
/// nothing reads back as a figure to pick from).
fn toml_float(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}")
    } else {
        "0.0".to_string()
    }
}

/// The library of each provider, with OpenSSL's version.
pub fn provider_libraries() -> Vec<(&'static str, String)> {
    PROVIDERS
        .iter()
        .map(|p| {
            let lib = if p.name == "openssl" {
                format!("{}, {}", p.library, crate::providers::openssl_version())
            } else {
                p.library.to_string()
            };
            (p.name, lib)
        })
        .collect()
}

/// The cache file of `cal` measured on the machine `facts` describe. A primitive without picks
/// (no provider could be measured) is left out, so the file does not make a table.
pub fn render(cal: &Calibration, facts: &Facts) -> String {
    let mut s = String::new();
    let mut line = |l: &str| {
        s.push_str(l);
        s.push('\n');
    };
    line("# --provider auto's table for this machine, measured by `ivnsec suites --calibrate`.");
    line("# auto reads `picks` (a pick without up_to takes every larger size); `ns` are the");
    line("# figures they were derived from: ns per AEAD seal + open or per two MACs, the fastest");
    line("# of the batches, at `sizes` bytes. IVNSEC_AUTO_TABLE=builtin ignores this file.");
    line(&format!("version = {VERSION}"));
    line(&format!("ivnsec = {}", toml_string(&facts.ivnsec)));
    line(&format!("build = {}", toml_string(this_build())));
    line(&format!("date = {}", facts.date));
    line(&format!("cpu = {}", toml_string(&facts.cpu.model)));
    line(&format!("cpu_flags = {}", toml_string(&facts.cpu.flags)));
    line(&format!("seconds = {}", toml_float(cal.seconds)));
    line(&format!("batches = {}", cal.batches));
    let sizes: Vec<String> = cal.sizes.iter().map(|x| x.to_string()).collect();
    line(&format!("sizes = [{}]", sizes.join(", ")));
    line("");
    line("[providers]");
    for (name, lib) in provider_libraries() {
        line(&format!("{name} = {}", toml_string(&lib)));
    }
    for f in &cal.figures {
        let Some(picks) = &f.picks else { continue };
        line("");
        line("[[primitive]]");
        line(&format!(
            "name = {}",
            toml_string(&primitive_name(f.primitive))
        ));
        let picks: Vec<String> = picks
            .iter()
            .map(|p| {
                if p.up_to == ALL {
                    format!("{{ provider = {} }}", toml_string(p.provider))
                } else {
                    format!(
                        "{{ provider = {}, up_to = {} }}",
                        toml_string(p.provider),
                        p.up_to
                    )
                }
            })
            .collect();
        line(&format!("picks = [{}]", picks.join(", ")));
        line("[primitive.ns]");
        for c in &f.curves {
            let ns: Vec<String> = c.ns.iter().map(|x| toml_float(*x)).collect();
            line(&format!("{} = [{}]", c.provider, ns.join(", ")));
        }
    }
    s
}

#[derive(Deserialize)]
struct FileTable {
    version: i64,
    #[serde(default)]
    build: String,
    date: u64,
    cpu: String,
    #[serde(default)]
    cpu_flags: String,
    primitive: Vec<FilePrimitive>,
}

#[derive(Deserialize)]
struct FilePrimitive {
    name: String,
    picks: Vec<FilePick>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePick {
    provider: String,
    up_to: Option<u64>,
}

/// A calibration read back: the table and when and on what it was measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    pub date: u64,
    pub cpu: String,
}

/// The calibration in `text` if it is one this build reads and it was made on `cpu`; why not
/// otherwise.
pub fn parse(text: &str, cpu: &Cpu) -> Result<Loaded, String> {
    let raw: toml::Table = text.parse().map_err(|e| format!("not valid TOML: {e}"))?;
    match raw.get("version").and_then(toml::Value::as_integer) {
        Some(VERSION) => {}
        Some(v) => {
            return Err(format!("version {v} (this ivnsec reads version {VERSION})"));
        }
        None => return Err("no version (not a calibration of ivnsec)".to_string()),
    }
    let f: FileTable = toml::from_str(text).map_err(|e| e.message().to_string())?;
    if f.version != VERSION {
        return Err(format!("version {}", f.version));
    }
    if f.build != this_build() {
        return Err(format!(
            "made by a {} build of ivnsec (this is a {} build: the portable provider's speed \
             differs by an order of magnitude between them)",
            if f.build.is_empty() {
                "unknown"
            } else {
                &f.build
            },
            this_build()
        ));
    }
    if f.cpu != cpu.model || f.cpu_flags != cpu.flags {
        return Err(format!(
            "made on another CPU ({} [{}]; this machine: {} [{}])",
            f.cpu, f.cpu_flags, cpu.model, cpu.flags
        ));
    }
    let mut entries = Vec::with_capacity(f.primitive.len());
    for p in &f.primitive {
        let primitive = tabled_primitives()
            .find(|x| primitive_name(*x) == p.name)
            .ok_or_else(|| format!("unknown primitive {:?}", p.name))?;
        let mut picks = Vec::with_capacity(p.picks.len());
        for pk in &p.picks {
            let provider = by_name(&pk.provider)
                .ok_or_else(|| format!("{}: unknown provider {:?}", p.name, pk.provider))?;
            let up_to = match pk.up_to {
                None => ALL,
                Some(n) => usize::try_from(n).map_err(|_| format!("{}: up_to {n}", p.name))?,
            };
            picks.push(Pick {
                up_to,
                provider: provider.name,
            });
        }
        entries.push(Entry { primitive, picks });
    }
    crate::table::check_table(&entries)?;
    Ok(Loaded {
        entries,
        date: f.date,
        cpu: f.cpu,
    })
}

/// At most [`MAX_LEN`] bytes of the regular file at `path`: `Ok(None)` when there is none,
/// `Err` (why) when it is no regular file, cannot be read, is longer or is not UTF-8.
pub fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    let f = File::open(path).map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    f.take(MAX_LEN + 1)
        .read_to_end(&mut buf)
        .map_err(|e| e.to_string())?;
    if buf.len() as u64 > MAX_LEN {
        return Err(format!("longer than {} KiB", MAX_LEN / 1024));
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| "not UTF-8 text".to_string())
}

/// The table of the calibration at `path` for `cpu`: `Ok(None)` when there is no file, `Err`
/// (why) when it cannot be used.
pub fn load_from(path: &Path, cpu: &Cpu) -> Result<Option<Table>, String> {
    let Some(text) = read_bounded(path)? else {
        return Ok(None);
    };
    let l = parse(&text, cpu)?;
    let shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Ok(Some(Table {
        entries: l.entries,
        source: format!(
            "calibrated on this machine ({}, {}, {})",
            shown.display(),
            date_string(l.date),
            l.cpu
        ),
        calibrated: true,
    }))
}

/// The table `auto` reads in this process (see the module doc); the warning, when a calibration
/// is not used, goes to stderr once (this is called once per process).
pub fn load_active() -> Table {
    let (table, warning) = load_at(&location(), &this_cpu());
    if let Some(w) = warning {
        eprintln!("ivnsec: warning: {w}");
    }
    table
}

/// The table `auto` reads at `loc` on `cpu`, and the warning to print when a calibration was
/// there but is not used.
pub fn load_at(loc: &Location, cpu: &Cpu) -> (Table, Option<String>) {
    let (path, explicit) = match loc {
        Location::Builtin => return (Table::builtin(Some("IVNSEC_AUTO_TABLE=builtin")), None),
        Location::Nowhere => return (Table::builtin(None), None),
        Location::Path { path, explicit } => (path, *explicit),
    };
    let why = match load_from(path, cpu) {
        Ok(Some(t)) => return (t, None),
        Ok(None) if !explicit => return (Table::builtin(None), None),
        Ok(None) => "no such file".to_string(),
        Err(why) => why,
    };
    let note = format!("the calibration {} is not used: {why}", path.display());
    let warning = format!(
        "{note}; --provider auto runs the built-in table (`ivnsec suites --calibrate` measures \
         this machine again)"
    );
    (Table::builtin(Some(&note)), Some(warning))
}

/// A cache file being written: a temporary file beside the target, renamed over it by
/// [`PendingWrite::commit`] (so a reader sees the old file or the new one, never a part);
/// removed if dropped before.
pub struct PendingWrite {
    target: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

impl PendingWrite {
    /// Creates the target's directory and the temporary file (before anything is measured, so
    /// an unwritable place fails at once).
    pub fn prepare(target: &Path) -> std::io::Result<PendingWrite> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir)?;
        let name = target
            .file_name()
            .ok_or_else(|| std::io::Error::other("the path names no file"))?;
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = dir.join(tmp_name);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        Ok(PendingWrite {
            target: target.to_path_buf(),
            tmp,
            file: Some(file),
        })
    }

    /// Writes `text`, flushes it to disk and renames it over the target.
    pub fn commit(mut self, text: &str) -> std::io::Result<()> {
        let mut f = self
            .file
            .take()
            .ok_or_else(|| std::io::Error::other("already written"))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&self.tmp, &self.target)
    }
}

impl Drop for PendingWrite {
    fn drop(&mut self) {
        // After a commit the temporary file is the target; otherwise it goes.
        if self.file.is_some() || self.tmp.exists() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{Curve, Figures};
    use crate::table::only;
    use ivnsec_core::crypto::{AeadAlg, Primitive};

    fn cpu() -> Cpu {
        Cpu {
            model: "Test CPU @ 3.0GHz".to_string(),
            flags: "aes avx2 sha_ni".to_string(),
        }
    }

    /// A calibration with the built-in table's picks, except ChaCha20-Poly1305 on portable at
    /// every size and AES-128-GCM split fast → openssl at 1440 B.
    fn calibration() -> Calibration {
        let figures = crate::table::MEASURED
            .iter()
            .map(|m| {
                let picks = match m.primitive {
                    Primitive::Aead(AeadAlg::ChaCha20Poly1305) => vec![only("portable")],
                    Primitive::Aead(AeadAlg::Aes128Gcm) => vec![
                        Pick {
                            up_to: 1440,
                            provider: "fast",
                        },
                        only("openssl"),
                    ],
                    _ => m.picks.to_vec(),
                };
                Figures {
                    primitive: m.primitive,
                    curves: vec![Curve {
                        provider: picks[0].provider,
                        ns: vec![100.0, 2000.5],
                    }],
                    failed: vec![],
                    picks: Some(picks),
                }
            })
            .collect();
        Calibration {
            sizes: vec![64, 1440],
            figures,
            batches: 37,
            seconds: 2.5,
        }
    }

    fn facts() -> Facts {
        Facts {
            ivnsec: "0.1.0 (v0.1.0-5-g\"x\")".to_string(),
            date: 1_764_288_000,
            cpu: cpu(),
        }
    }

    #[test]
    fn a_written_calibration_reads_back() {
        let text = render(&calibration(), &facts());
        let l = parse(&text, &cpu()).unwrap();
        assert_eq!(l.date, 1_764_288_000);
        assert_eq!(l.cpu, "Test CPU @ 3.0GHz");
        let gcm = l
            .entries
            .iter()
            .find(|e| e.primitive == Primitive::Aead(AeadAlg::Aes128Gcm))
            .unwrap();
        assert_eq!(
            gcm.picks,
            vec![
                Pick {
                    up_to: 1440,
                    provider: "fast"
                },
                only("openssl")
            ]
        );
        let t = Table {
            entries: l.entries.clone(),
            source: String::new(),
            calibrated: true,
        };
        assert_eq!(
            crate::table::describe_picks_in(&t, Primitive::Aead(AeadAlg::ChaCha20Poly1305)),
            "chacha20-poly1305: portable"
        );
        assert_eq!(date_string(1_764_288_000), "2025-11-28");
        assert_eq!(date_string(0), "1970-01-01");
        assert_eq!(date_string(951_782_400), "2000-02-29");
    }

    /// Every way a file can be wrong gives a reason, never a table.
    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let good = render(&calibration(), &facts());
        let bad = |text: &str, says: &str| {
            let e = parse(text, &cpu()).unwrap_err();
            assert!(e.contains(says), "{e:?} lacks {says:?}");
        };
        bad("this is = not [toml", "not valid TOML");
        bad("", "no version");
        bad(&good.replace("version = 1", "version = 2"), "version 2");
        bad(
            &good.replace("version = 1", "version = \"1\""),
            "no version",
        );
        bad(&good.replace("Test CPU", "Other CPU"), "another CPU");
        let other_build = if this_build() == "debug" {
            "release"
        } else {
            "debug"
        };
        bad(
            &good.replace(
                &format!("build = \"{}\"", this_build()),
                &format!("build = \"{other_build}\""),
            ),
            &format!("made by a {other_build} build"),
        );
        bad(&good.replace("aes avx2 sha_ni", "aes avx2"), "another CPU");
        bad(
            &good.replace("\"aes128-gcm\"", "\"aes512-gcm\""),
            "unknown primitive \"aes512-gcm\"",
        );
        bad(
            &good.replace("provider = \"openssl\"", "provider = \"gpu\""),
            "unknown provider \"gpu\"",
        );
        // A provider that does not implement the primitive (aws-lc-rs has no CCM).
        bad(
            &good.replacen(
                "provider = \"portable\", up_to = 256",
                "provider = \"fast\", up_to = 256",
                1,
            ),
            "fast does not implement",
        );
        bad(
            &good.replace("\"chacha20-poly1305\"", "\"aes128-gcm\""),
            "listed twice",
        );
        bad(&good.replace("up_to = 1440", "up_to = -1"), "");
        bad(
            &good.replace("up_to = 1440", "upto = 1440"),
            "unknown field",
        );
        // The last pick must cover every size.
        bad(
            &good.replace(
                "{ provider = \"openssl\" }]",
                "{ provider = \"openssl\", up_to = 9000 }]",
            ),
            "every larger size",
        );
        // A primitive left out.
        let cut = good.find("[[primitive]]").unwrap();
        let one = good[cut..].find("\n[[primitive]]").unwrap() + cut + 1;
        bad(
            &format!("{}{}", &good[..cut], &good[one..]),
            "aes128-gcm is missing",
        );
        assert!(parse(&good, &cpu()).is_ok());
    }

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "ivnsec-cache-{tag}-{}-{}",
            std::process::id(),
            now_unix()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Missing: the built-in table, silently (unless IVNSEC_AUTO_TABLE named it); oversized,
    /// not a file, corrupt, or from another CPU: the built-in table with one warning; good: the
    /// calibration, its source saying so.
    #[test]
    fn the_active_table_falls_back_to_the_builtin_one() {
        let d = tmp("load");
        let p = d.join("auto-table.toml");
        let at = |explicit| Location::Path {
            path: p.clone(),
            explicit,
        };
        let (t, w) = load_at(&at(false), &cpu());
        assert!(!t.calibrated && w.is_none());
        assert_eq!(t.source, crate::table::BUILTIN_SOURCE);
        let (t, w) = load_at(&at(true), &cpu());
        assert!(!t.calibrated && w.unwrap().contains("no such file"));

        PendingWrite::prepare(&p)
            .unwrap()
            .commit(&render(&calibration(), &facts()))
            .unwrap();
        let (t, w) = load_at(&at(false), &cpu());
        assert!(w.is_none(), "{w:?}");
        assert!(t.calibrated);
        assert!(
            t.source.starts_with("calibrated on this machine ("),
            "{}",
            t.source
        );
        assert!(
            t.source.contains("2025-11-28, Test CPU @ 3.0GHz"),
            "{}",
            t.source
        );
        let picks = crate::table::picks_in(&t, Primitive::Aead(AeadAlg::ChaCha20Poly1305));
        assert_eq!(picks.len(), 1);
        assert_eq!(picks[0].1.name, "portable");
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![OsString::from("auto-table.toml")]);

        let other = Cpu {
            model: "Another".into(),
            flags: String::new(),
        };
        let (t, w) = load_at(&at(false), &other);
        assert!(!t.calibrated);
        assert!(w.unwrap().contains("made on another CPU"));
        assert!(t.source.starts_with(crate::table::BUILTIN_SOURCE));
        assert!(
            t.source.contains("is not used: made on another CPU"),
            "{}",
            t.source
        );

        std::fs::write(
            &p,
            "version = 1\n# ".to_string() + &"x".repeat(MAX_LEN as usize),
        )
        .unwrap();
        let (t, w) = load_at(&at(false), &cpu());
        assert!(!t.calibrated);
        assert!(w.unwrap().contains("longer than 64 KiB"));
        std::fs::write(&p, b"version = 1\n\xff\xfe").unwrap();
        assert!(load_at(&at(false), &cpu()).1.unwrap().contains("not UTF-8"));
        std::fs::write(&p, "version = 1\n[[primitive]]\nname = 3\n").unwrap();
        assert!(!load_at(&at(false), &cpu()).0.calibrated);
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        assert!(
            load_at(&at(false), &cpu())
                .1
                .unwrap()
                .contains("not a regular file")
        );

        let (t, w) = load_at(&Location::Builtin, &cpu());
        assert!(!t.calibrated && w.is_none());
        assert!(t.source.contains("IVNSEC_AUTO_TABLE=builtin"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_location_follows_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        assert_eq!(
            location_from(env(&[("HOME", "/home/u")])),
            Location::Path {
                path: "/home/u/.cache/ivnsec/auto-table.toml".into(),
                explicit: false
            }
        );
        assert_eq!(
            location_from(env(&[("HOME", "/home/u"), ("XDG_CACHE_HOME", "/c")])),
            Location::Path {
                path: "/c/ivnsec/auto-table.toml".into(),
                explicit: false
            }
        );
        // A relative XDG_CACHE_HOME is ignored, as the specification says.
        assert_eq!(
            location_from(env(&[("HOME", "/h"), ("XDG_CACHE_HOME", "rel")])),
            Location::Path {
                path: "/h/.cache/ivnsec/auto-table.toml".into(),
                explicit: false
            }
        );
        assert_eq!(
            location_from(env(&[("HOME", "/h"), (ENV, "t.toml")])),
            Location::Path {
                path: "t.toml".into(),
                explicit: true
            }
        );
        assert_eq!(
            location_from(env(&[("HOME", "/h"), (ENV, "builtin")])),
            Location::Builtin
        );
        assert_eq!(
            location_from(env(&[("HOME", "/h"), (ENV, "")])),
            Location::Path {
                path: "/h/.cache/ivnsec/auto-table.toml".into(),
                explicit: false
            }
        );
        assert_eq!(location_from(env(&[])), Location::Nowhere);
    }

    #[test]
    fn the_cpu_is_read_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) \
                   Platinum 8480+\nflags\t\t: fpu sse2 aes avx2 sha_ni avx512f vaes\n\nprocessor\t: 1\n\
                   model name\t: other\n";
        assert_eq!(
            cpu_from_cpuinfo(x86),
            Cpu {
                model: "Intel(R) Xeon(R) Platinum 8480+".into(),
                flags: "aes sha_ni avx2 avx512f vaes".into()
            }
        );
        let arm = "processor\t: 0\nFeatures\t: fp asimd aes pmull sha1 sha2\nCPU part\t: 0xd0c\n";
        assert_eq!(
            cpu_from_cpuinfo(arm),
            Cpu {
                model: "unknown".into(),
                flags: "aes pmull sha1 sha2 asimd".into()
            }
        );
        assert_eq!(cpu_from_cpuinfo("").model, "unknown");
    }

    /// The writer creates the directory, refuses a place it cannot write at once, and leaves no
    /// temporary file when dropped.
    #[test]
    fn the_cache_is_written_atomically() {
        let d = tmp("write");
        let p = d.join("sub").join("t.toml");
        let w = PendingWrite::prepare(&p).unwrap();
        drop(w);
        assert_eq!(std::fs::read_dir(d.join("sub")).unwrap().count(), 0);
        std::fs::write(&p, "old").unwrap();
        let w = PendingWrite::prepare(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        w.commit("new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(std::fs::read_dir(d.join("sub")).unwrap().count(), 1);
        let under_a_file = p.join("x.toml");
        assert!(PendingWrite::prepare(&under_a_file).is_err());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn strings_are_escaped() {
        let s = "a\"b\\c\nd\u{1}";
        let t: toml::Table = format!("k = {}", toml_string(s)).parse().unwrap();
        assert_eq!(t["k"].as_str(), Some(s));
    }
}
