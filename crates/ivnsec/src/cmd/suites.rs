//! `ivnsec suites`: every profile `ivnsec frame` takes, with its parameters, and what
//! `--provider auto` runs them on; `--calibrate` measures the providers on this machine and
//! writes the table `auto` reads (ivnsec_crypto::calibrate, ivnsec_crypto::cache).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, anyhow};
use ivnsec_core::crypto::{CryptoProvider, Primitive, ProviderChoice};
use ivnsec_core::profile::{MacsecProfile, NamedProfile, Profile};
use ivnsec_core::sa::esp::EspAlg;
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::sa::secoc::SecocAlg;
use ivnsec_core::suite::{IvnAeProfile, Suite};
use serde::Serialize;

use crate::error::{env_error, usage};
use crate::output::Json;
use ivnsec_crypto::cache::{self, Location, PendingWrite};
use ivnsec_crypto::calibrate;
use ivnsec_crypto::{PROVIDERS, has_suite};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
`--provider auto` (the default everywhere) runs each primitive on the provider measured fastest \
for its size. The built-in table was measured on the project's benchmark machine; on another CPU \
another provider can be faster. --calibrate measures the providers on this machine (AEAD seal + \
open and MAC compute + verify, 16 B to 8 KiB, the fastest of many short batches; a few seconds), derives \
the picks with the built-in table's rule (docs/benchmarks.md) and writes them to the cache `auto` \
reads from then on: $IVNSEC_AUTO_TABLE if set, else $XDG_CACHE_HOME/ivnsec/auto-table.toml, else \
$HOME/.cache/ivnsec/auto-table.toml (--cache FILE writes elsewhere). A calibration made on \
another CPU, or one that cannot be read, is not used: `auto` runs the built-in table and says \
why on stderr. IVNSEC_AUTO_TABLE=builtin keeps the built-in table (runs that must not depend on \
the machine's calibration). Which table `auto` read is in `ivnsec --version`, in this command's \
output and in every report's environment (provider_auto_table_source).

Exit codes: 0 done; 2 a bad option (--seconds out of range, a cache path that is a directory); \
3 the cache cannot be written (give --cache FILE in a directory you can write).

Examples:
  ivnsec suites
  ivnsec suites --json
  ivnsec suites --calibrate --seconds 2 --cache auto-table.toml
  IVNSEC_AUTO_TABLE=auto-table.toml ivnsec suites")]
pub struct Args {
    /// Print JSON (`{"profiles": [...]}`) instead of a table. Each profile lists the providers
    /// that implement it and, under "auto", which provider `--provider auto` runs each of its
    /// primitives on. With --calibrate: the figures, the picks and the cache path.
    #[arg(long)]
    json: bool,
    /// Measure the providers on this machine and write the table `--provider auto` reads (see
    /// below).
    #[arg(long)]
    calibrate: bool,
    /// With --calibrate: about how long to measure, in seconds (0.1 to 600).
    #[arg(long, value_name = "S", default_value_t = 3.0, requires = "calibrate")]
    seconds: f64,
    /// With --calibrate: write the table to FILE instead of the cache `auto` reads (point
    /// IVNSEC_AUTO_TABLE at it to use it).
    #[arg(long, value_name = "FILE", requires = "calibrate")]
    cache: Option<PathBuf>,
}

#[derive(Serialize)]
struct Row {
    /// The canonical name (what `--profile` takes).
    profile: NamedProfile,
    /// `ivn-ae`, `macsec`, `esp` or `secoc`.
    protocol: &'static str,
    /// IVN-AE suite id byte, or the MACsec cipher suite identifier (802.1AE §14); none for ESP.
    suite_id: Option<String>,
    /// `none`, `auth`, `conf`, or `conf/auth` when a flag chooses.
    level: &'static str,
    /// Length of `--key` in bytes (ESP: key ‖ salt where the algorithm has a salt); none when any
    /// length goes (the SecOC HMAC key).
    key_len: Option<usize>,
    /// Whether a separate MAC key is needed (`--mac-key`, ESP `--auth-key`).
    mac_key: bool,
    /// Tag length in bytes (SecOC: the whole MAC; `--mac-bits` truncates it, default 24 bits).
    tag_len: usize,
    min_tag_len: usize,
    providers: Vec<&'static str>,
    /// What `--provider auto` runs each primitive on (`chacha20-poly1305: fast up to 2048 B,
    /// openssl above 2048 B`; `none` without cryptography).
    auto: String,
}

/// What `--provider auto` runs `profile`'s primitives on.
fn auto(profile: Profile) -> String {
    ivnsec_crypto::describe_choice(ProviderChoice::Auto, &profile.primitives(), &profile)
        .unwrap_or_else(|e| e.to_string())
}

fn providers_with(prims: &[Primitive]) -> Vec<&'static str> {
    PROVIDERS
        .iter()
        .filter(|p: &&&CryptoProvider| prims.iter().all(|x| p.supports(*x)))
        .map(|p| p.name)
        .collect()
}

fn ivnae_rows() -> impl Iterator<Item = Row> {
    IvnAeProfile::all().map(|p| {
        let s: Suite = p.suite;
        Row {
            profile: NamedProfile::from(Profile::IvnAe(p)),
            protocol: "ivn-ae",
            suite_id: Some(format!("0x{:02x}", s.id())),
            level: p.level.name(),
            key_len: s.key_len(),
            mac_key: s.needs_mac_key(),
            tag_len: s.full_tag_len(),
            min_tag_len: s.min_tag_len(),
            providers: PROVIDERS
                .iter()
                .filter(|pr| has_suite(pr, s))
                .map(|pr| pr.name)
                .collect(),
            auto: auto(Profile::IvnAe(p)),
        }
    })
}

fn macsec_rows() -> impl Iterator<Item = Row> {
    CipherSuite::ALL.into_iter().map(|c| Row {
        profile: NamedProfile::from(Profile::Macsec(MacsecProfile {
            suite: c,
            confidentiality: true,
        })),
        protocol: "macsec",
        suite_id: Some(format!("0x{:016x}", c.identifier())),
        level: "conf/auth",
        key_len: Some(c.key_len()),
        mac_key: false,
        tag_len: 16,
        min_tag_len: 16,
        providers: providers_with(&[Primitive::Aead(c.aead())]),
        auto: auto(Profile::Macsec(MacsecProfile {
            suite: c,
            confidentiality: true,
        })),
    })
}

fn esp_rows() -> impl Iterator<Item = Row> {
    EspAlg::ALL.into_iter().map(|a| {
        let level = if a.confidential() { "conf" } else { "auth" };
        // ICV: 16 bytes for every algorithm here (HMAC-SHA-256-128 truncates to 16).
        let tag = 16;
        Row {
            profile: NamedProfile::from(Profile::Esp(a)),
            protocol: "esp",
            suite_id: None,
            level,
            key_len: (a.key_len() > 0).then_some(a.key_len()),
            mac_key: a.auth_key_len().is_some(),
            tag_len: tag,
            min_tag_len: tag,
            providers: PROVIDERS
                .iter()
                .filter(|p| a.supported_by(p))
                .map(|p| p.name)
                .collect(),
            auto: auto(Profile::Esp(a)),
        }
    })
}

fn secoc_rows() -> impl Iterator<Item = Row> {
    SecocAlg::ALL.into_iter().map(|a| Row {
        profile: NamedProfile::from(Profile::Secoc(a)),
        protocol: "secoc",
        suite_id: None,
        level: "auth",
        key_len: a.key_len(),
        mac_key: false,
        tag_len: a.mac_alg().output_len(),
        // The truncated authenticator is counted in bits (1 ..= MAC bits): at least one byte.
        min_tag_len: 1,
        providers: PROVIDERS
            .iter()
            .filter(|p| a.supported_by(p))
            .map(|p| p.name)
            .collect(),
        auto: auto(Profile::Secoc(a)),
    })
}

fn rows() -> Vec<Row> {
    ivnae_rows()
        .chain(macsec_rows())
        .chain(esp_rows())
        .chain(secoc_rows())
        .collect()
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.calibrate {
        return calibrate(&args);
    }
    let rows = rows();
    let splits = ivnsec_crypto::auto::splits();
    if args.json {
        let splits: Vec<serde_json::Value> = splits
            .iter()
            .map(|s| {
                serde_json::json!({
                    "primitive": ivnsec_crypto::table::primitive_name(s.primitive),
                    "up_to": s.up_to,
                    "below": s.below,
                    "above": s.above,
                })
            })
            .collect();
        Json::claim(true)?.print(&serde_json::json!({
            "profiles": rows,
            "auto_break_even": splits,
            "auto_table_source": ivnsec_crypto::auto_table_source(),
            "auto_table_calibrated": ivnsec_crypto::auto::table().calibrated,
            "seed004_break_even": ivnsec_lab::seed004::OFFLOAD_BREAK_EVEN_TEXT,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<32} {:<7} {:>18} {:>9} {:>4} {:>8} {:>6}  providers",
        "profile", "proto", "id", "level", "key", "mac-key", "tag"
    );
    for r in rows {
        let key = r.key_len.map_or("-".to_string(), |k| k.to_string());
        let tag = if r.tag_len == r.min_tag_len {
            r.tag_len.to_string()
        } else {
            format!("{}-{}", r.min_tag_len, r.tag_len)
        };
        println!(
            "{:<32} {:<7} {:>18} {:>9} {:>4} {:>8} {:>6}  {}",
            r.profile,
            r.protocol,
            r.suite_id.as_deref().unwrap_or("-"),
            r.level,
            key,
            if r.mac_key { "yes" } else { "-" },
            tag,
            r.providers.join(",")
        );
    }
    let table = ivnsec_crypto::auto::table();
    println!(
        "\nauto table: {}{}",
        table.source,
        if table.calibrated {
            ""
        } else {
            " (`ivnsec suites --calibrate` measures this machine)"
        }
    );
    println!(
        "--provider auto (the default) runs each primitive on the provider measured fastest for \
its size (docs/benchmarks.md); the JSON's \"auto\" says it per profile:"
    );
    println!(
        "  {}",
        ivnsec_crypto::describe_auto_table().replace("; ", "\n  ")
    );
    println!(
        "  any other primitive: the first of {} that has it",
        ivnsec_crypto::PROVIDERS
            .iter()
            .map(|p| p.name)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let lanes = ivnsec_crypto::auto::multi_buffer_aeads();
    if !lanes.is_empty() {
        println!(
            "  batches of {} or more messages under one key ({}): the portable provider's \
multi-buffer lanes (docs/benchmarks.md, \"Secured SOME/IP at 1 Gb/s\")",
            ivnsec_crypto::auto::MIN_LANES,
            lanes
                .iter()
                .map(|a| a.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let text: Vec<String> = splits
        .iter()
        .map(|s| {
            format!(
                "{} at {} B ({} up to it, {} above)",
                ivnsec_crypto::table::primitive_name(s.primitive),
                s.up_to,
                s.below,
                s.above
            )
        })
        .collect();
    println!(
        "break-even sizes auto splits at (measured; `ivnsec crypto-bench --chunk-sizes …` measures \
them on this machine): {}; every other primitive has one provider at every size.",
        text.join("; ")
    );
    println!("beside {}.", ivnsec_lab::seed004::OFFLOAD_BREAK_EVEN_TEXT);
    Ok(ExitCode::SUCCESS)
}

/// The shortest --seconds and the longest.
const SECONDS: std::ops::RangeInclusive<f64> = 0.1..=600.0;

/// `suites --calibrate`: measure, derive, write atomically, say what was written and whether
/// `auto` reads it.
fn calibrate(args: &Args) -> Result<ExitCode> {
    if !SECONDS.contains(&args.seconds) {
        return Err(usage(format!(
            "--seconds {}: give {}..={} seconds",
            args.seconds,
            SECONDS.start(),
            SECONDS.end()
        )));
    }
    let loc = cache::location();
    let no_home = || {
        env_error(
            "neither IVNSEC_AUTO_TABLE, XDG_CACHE_HOME nor HOME is set, so there is no cache to \
             write: give --cache FILE (and IVNSEC_AUTO_TABLE=FILE to use it)",
        )
    };
    let (target, named_by) = match (&args.cache, &loc) {
        (Some(p), _) => (p.clone(), "--cache"),
        (None, Location::Path { path, explicit }) => (
            path.clone(),
            if *explicit {
                cache::ENV
            } else {
                "the cache path"
            },
        ),
        (None, Location::Builtin) => (cache::default_path().ok_or_else(no_home)?, "the cache path"),
        (None, Location::Nowhere) => return Err(no_home()),
    };
    if target.is_dir() {
        return Err(usage(format!(
            "{named_by} {}: is a directory; give a file (e.g. {})",
            target.display(),
            target.join("auto-table.toml").display()
        )));
    }
    // The file is made before anything is measured: an unwritable place fails at once.
    let pending = PendingWrite::prepare(&target).map_err(|e| {
        env_error(format!(
            "cannot write the calibration to {} ({named_by}): {e}; give --cache FILE in a \
             directory you can write",
            target.display()
        ))
    })?;
    let mut json = Json::claim(args.json)?;
    let cpu = cache::this_cpu();
    eprintln!(
        "measuring the providers on this machine ({}) for about {} s …",
        cpu.model, args.seconds
    );
    let cal = calibrate::measure(args.seconds, &calibrate::SIZES, &mut |_| {});
    let facts = cache::Facts {
        ivnsec: crate::version::short_version(),
        date: cache::now_unix(),
        cpu: cpu.clone(),
    };
    let text = cache::render(&cal, &facts);
    // What is written must be what `auto` can read (a primitive no provider could run would
    // leave it out).
    cache::parse(&text, &cpu)
        .map_err(|e| anyhow!("the calibration makes no table `auto` can read: {e}"))?;
    pending.commit(&text).map_err(|e| {
        env_error(format!(
            "cannot write the calibration to {}: {e}",
            target.display()
        ))
    })?;
    let note = reads_it(&loc, &target);
    if json.claimed() {
        print_calibration_json(&mut json, &cal, &cpu, &target, note)?;
    } else {
        print_calibration_text(&cal, &cpu, &target, note);
    }
    Ok(ExitCode::SUCCESS)
}

/// The calibration as one JSON document.
fn print_calibration_json(
    json: &mut Json,
    cal: &calibrate::Calibration,
    cpu: &cache::Cpu,
    target: &Path,
    note: Option<String>,
) -> Result<()> {
    let primitives: Vec<serde_json::Value> = cal
        .figures
        .iter()
        .map(|f| {
            let ns: serde_json::Map<String, serde_json::Value> = f
                .curves
                .iter()
                .map(|c| (c.provider.to_string(), serde_json::json!(c.ns)))
                .collect();
            let failed: serde_json::Map<String, serde_json::Value> = f
                .failed
                .iter()
                .map(|(p, why)| (p.to_string(), serde_json::json!(why)))
                .collect();
            let picks = f.picks.clone().unwrap_or_default();
            serde_json::json!({
                "primitive": ivnsec_crypto::table::primitive_name(f.primitive),
                "ns": ns,
                "failed": failed,
                "picks": picks
                    .iter()
                    .map(|p| serde_json::json!({
                        "provider": p.provider,
                        "up_to": (p.up_to != ivnsec_crypto::table::ALL).then_some(p.up_to),
                    }))
                    .collect::<Vec<_>>(),
                "auto": ivnsec_crypto::table::describe_pick_list(f.primitive, &picks),
            })
        })
        .collect();
    json.print(&serde_json::json!({
        "cache": target,
        "auto_reads_it": note.is_none(),
        "note": note,
        "cpu": cpu.model,
        "cpu_flags": cpu.flags,
        "seconds": cal.seconds,
        "batches": cal.batches,
        "sizes": cal.sizes,
        "ns_counts": "ns per AEAD seal + open, or per MAC computed twice and compared; the \
                      fastest of the batches",
        "primitives": primitives,
    }))?;
    Ok(())
}

/// The calibration as a table per primitive, with what `auto` picks and where it was written.
fn print_calibration_text(
    cal: &calibrate::Calibration,
    cpu: &cache::Cpu,
    target: &Path,
    note: Option<String>,
) {
    println!(
        "ns per AEAD seal + open (12 B AAD) or per MAC computed twice and compared, the fastest \
         of {} batches, on {} [{}] ({:.1} s):",
        cal.batches, cpu.model, cpu.flags, cal.seconds
    );
    let mut head = format!("{:<18} {:<9}", "primitive", "provider");
    for s in &cal.sizes {
        head.push_str(&format!(" {s:>7}"));
    }
    println!("{head}");
    for f in &cal.figures {
        let name = ivnsec_crypto::table::primitive_name(f.primitive);
        for (i, c) in f.curves.iter().enumerate() {
            let mut row = format!(
                "{:<18} {:<9}",
                if i == 0 { name.as_str() } else { "" },
                c.provider
            );
            for x in &c.ns {
                row.push_str(&format!(" {x:>7.0}"));
            }
            println!("{row}");
        }
        for (p, why) in &f.failed {
            println!("{:<18} {p:<9} failed: {why}", "");
        }
        let picks = f.picks.clone().unwrap_or_default();
        println!(
            "  auto: {}",
            ivnsec_crypto::table::describe_pick_list(f.primitive, &picks)
        );
    }
    println!("\nwritten to {}", target.display());
    match note {
        None => println!(
            "--provider auto reads it from now on (IVNSEC_AUTO_TABLE=builtin: the built-in table)."
        ),
        Some(n) => println!("{n}"),
    }
}

/// `None` when `auto` reads `written` from `loc`; otherwise what to do so that it does.
fn reads_it(loc: &Location, written: &Path) -> Option<String> {
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    };
    let use_it = format!(
        "set {}={} to use this calibration",
        cache::ENV,
        written.display()
    );
    match loc {
        Location::Path { path, .. } if same(path, written) => None,
        Location::Path { path, explicit } => Some(format!(
            "--provider auto reads {}{}, not this file: {use_it}.",
            path.display(),
            if *explicit {
                " (IVNSEC_AUTO_TABLE)"
            } else {
                ""
            }
        )),
        Location::Builtin => Some(format!(
            "IVNSEC_AUTO_TABLE=builtin is set: --provider auto keeps the built-in table until it \
             is unset (or {use_it})."
        )),
        Location::Nowhere => Some(format!("--provider auto has no cache path here: {use_it}.")),
    }
}
