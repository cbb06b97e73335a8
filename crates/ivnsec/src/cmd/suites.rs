//! `ivnsec suites`: the profile table.

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::suite::{Profile, Suite};
use serde::Serialize;

use crate::providers::{PROVIDERS, has_suite};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    profile: String,
    suite_id: String,
    level: &'static str,
    key_len: Option<usize>,
    mac_key: bool,
    tag_len: usize,
    min_tag_len: usize,
    providers: Vec<&'static str>,
}

fn rows() -> Vec<Row> {
    Profile::all()
        .map(|p| {
            let s: Suite = p.suite;
            Row {
                profile: p.to_string(),
                suite_id: format!("0x{:02x}", s.id()),
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
            }
        })
        .collect()
}

pub fn run(args: Args) -> Result<ExitCode> {
    let rows = rows();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "profiles": rows }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<32} {:>4} {:>5} {:>4} {:>8} {:>7}  providers",
        "profile", "id", "level", "key", "mac-key", "tag"
    );
    for r in rows {
        let key = r.key_len.map_or("-".to_string(), |k| k.to_string());
        let tag = if r.tag_len == r.min_tag_len {
            r.tag_len.to_string()
        } else {
            format!("{}-{}", r.min_tag_len, r.tag_len)
        };
        println!(
            "{:<32} {:>4} {:>5} {:>4} {:>8} {:>7}  {}",
            r.profile,
            r.suite_id,
            r.level,
            key,
            if r.mac_key { "yes" } else { "-" },
            tag,
            r.providers.join(",")
        );
    }
    Ok(ExitCode::SUCCESS)
}
