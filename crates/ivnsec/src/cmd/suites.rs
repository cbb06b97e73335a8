//! `ivnsec suites`: every profile `ivnsec frame` takes, with its parameters.

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::crypto::{CryptoProvider, Primitive, ProviderChoice};
use ivnsec_core::profile::{MacsecProfile, Profile};
use ivnsec_core::sa::esp::EspAlg;
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::sa::secoc::SecocAlg;
use ivnsec_core::suite::{IvnAeProfile, Suite};
use serde::Serialize;

use crate::output::Json;
use ivnsec_crypto::{PROVIDERS, has_suite};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print JSON (`{"profiles": [...]}`) instead of a table. Each profile lists the providers
    /// that implement it and, under "auto", which provider `--provider auto` runs each of its
    /// primitives on.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    profile: String,
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
            profile: p.to_string(),
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
        profile: c.profile().to_string(),
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
            profile: a.name().to_string(),
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
        profile: a.name().to_string(),
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
    let rows = rows();
    let splits = ivnsec_crypto::auto::splits();
    if args.json {
        let splits: Vec<serde_json::Value> = splits
            .iter()
            .map(|s| {
                serde_json::json!({
                    "primitive": ivnsec_crypto::auto::primitive_name(s.primitive),
                    "up_to": s.up_to,
                    "below": s.below,
                    "above": s.above,
                })
            })
            .collect();
        Json::claim(true)?.print(&serde_json::json!({
            "profiles": rows,
            "auto_break_even": splits,
            "seed004_break_even": ivnsec_lab::report::seed004::OFFLOAD_BREAK_EVEN_TEXT,
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
    println!(
        "\n--provider auto (the default) runs each primitive on the provider measured fastest for \
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
    let text: Vec<String> = splits
        .iter()
        .map(|s| {
            format!(
                "{} at {} B ({} up to it, {} above)",
                ivnsec_crypto::auto::primitive_name(s.primitive),
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
    println!(
        "beside {}.",
        ivnsec_lab::report::seed004::OFFLOAD_BREAK_EVEN_TEXT
    );
    Ok(ExitCode::SUCCESS)
}
