//! The text of a plan as its experiments read it ([`PlanText`]): their own tables deserialized
//! from it, errors that name the file, the key and the line ([`toml_error`]), and what the
//! plan's frame settles for all of them (its hosts, provider, `[run]` settings of ping-pong
//! scenarios, where relative file names are found).

use std::path::PathBuf;

use anyhow::Result;
use ivnsec_core::profile::NamedProfile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::topology::Topology;
use ivnsec_node::error::{KeyError, usage};
use serde::de::DeserializeOwned;

use crate::pingpong::run::{Mode, Scenario};

/// Files the presets name (timelines), built into the binary: a preset runs from any directory.
pub const PRESET_FILES: [(&str, &str); 1] = [(
    "lidar-playback.csv",
    include_str!("../../../../plans/lidar-playback.csv"),
)];

/// Where a plan's relative file names (playback timelines) are found.
#[derive(Clone, Debug)]
pub enum Base {
    /// Beside the plan file.
    Dir(PathBuf),
    /// A preset: the files of [`PRESET_FILES`].
    Preset,
}

/// The `[run]` settings of the plan's ping-pong scenarios, the command line's overrides
/// applied (a table's own `count` and `replications` come between the two).
#[derive(Clone, Debug)]
pub struct ScenarioDefaults {
    pub count: u32,
    pub replications: u32,
    /// `--count`, `--replications`: they beat a table's own.
    pub count_override: Option<u32>,
    pub replications_override: Option<u32>,
    pub pause_ns: u64,
    pub timeout_ns: u64,
    pub mode: Mode,
    pub pin: bool,
    pub provider: ProviderChoice,
}

/// A plan's text and what its frame settled, as each experiment reads its own tables from it.
pub struct PlanText<'a> {
    /// The plan file as errors name it.
    pub file: &'a str,
    pub text: &'a str,
    /// Where relative file names are found.
    pub base: &'a Base,
    /// The plan has `[[host]]` tables: its experiments run between two hosts.
    pub across_hosts: bool,
    /// `run.provider` (or `--provider`).
    pub provider: ProviderChoice,
    pub scenarios: ScenarioDefaults,
}

impl PlanText<'_> {
    /// A usage error (exit 2) naming the plan file and the key.
    pub fn bad(&self, key: &str, why: String) -> anyhow::Error {
        key_error(self.file, key, why)
    }

    /// The plan's tables of type `T` (a struct of the tables an experiment reads; other keys
    /// are left to their owners), with the line and column of what is wrong.
    pub fn tables<T: DeserializeOwned>(&self) -> Result<T> {
        toml::from_str(self.text)
            .map_err(|e| usage(format!("plan {}: {}", self.file, toml_error(&e, self.text))))
    }

    /// Each of the tables `table` checked by `check`; an error names the table's index and
    /// the key `check` gives (`tdma[0].switches[1]`).
    pub fn checked<T, U>(
        &self,
        table: &str,
        tables: &[T],
        check: impl Fn(&T) -> Result<U, KeyError>,
    ) -> Result<Vec<U>> {
        tables
            .iter()
            .enumerate()
            .map(|(i, c)| check(c).map_err(|e| self.bad(&format!("{table}[{i}].{}", e.key), e.why)))
            .collect()
    }

    /// A table's own `count` and `replications`: the command line's, the table's, the plan's.
    pub fn counts(&self, count: Option<u32>, replications: Option<u32>) -> (u32, u32) {
        let d = &self.scenarios;
        (
            d.count_override.or(count).unwrap_or(d.count),
            d.replications_override
                .or(replications)
                .unwrap_or(d.replications),
        )
    }

    /// A profile the plan names at `key`, parsed: the plan is its edge (typed from here on).
    /// An unknown name is a usage error naming the key and the profile.
    pub fn profile(&self, key: &str, name: &str) -> Result<NamedProfile> {
        name.parse()
            .map_err(|e: ivnsec_core::profile::ProfileError| self.bad(key, e.to_string()))
    }

    /// One ping-pong scenario with the plan's settings, checked; errors name `key`.
    pub fn scenario(
        &self,
        key: &str,
        profile: &NamedProfile,
        payload: usize,
        count: u32,
        replications: u32,
    ) -> Result<Scenario> {
        let d = &self.scenarios;
        let s = Scenario {
            profile: profile.clone(),
            payload,
            count,
            replications,
            pause_ns: d.pause_ns,
            timeout_ns: d.timeout_ns,
            mode: d.mode,
            pin: d.pin,
            provider: d.provider,
        };
        s.check().map_err(|e| self.bad(key, format!("{e:#}")))?;
        Ok(s)
    }
}

/// A usage error (exit 2) about `key` of plan `file`.
pub fn key_error(file: &str, key: &str, why: String) -> anyhow::Error {
    usage(format!("plan {file}: key `{key}`: {why}"))
}

/// The bump-in-the-wire topology a table's `topology` names (`bump`, `bump2`), if it does.
pub fn gateway_topology(t: &str) -> Option<Topology> {
    match t {
        "bump" => Some(Topology::Bump),
        "bump2" => Some(Topology::Bump2),
        _ => None,
    }
}

/// How much of an offending line a TOML error shows, in characters.
const EXCERPT_CHARS: usize = 120;

/// `s` cut to at most `max` characters, an ellipsis marking each cut end; `at` (a character
/// index) stays inside the window.
fn excerpt(s: &str, at: usize, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let start = at.saturating_sub(max / 2).min(n - max);
    let body: String = s.chars().skip(start).take(max).collect();
    let head = if start > 0 { "…" } else { "" };
    let tail = if start + max < n { "…" } else { "" };
    format!("{head}{body}{tail}")
}

/// The largest value of an unsigned integer type serde names in "expected u32".
fn unsigned_range(ty: &str) -> Option<u64> {
    Some(match ty {
        "u8" => u8::MAX.into(),
        "u16" => u16::MAX.into(),
        "u32" => u32::MAX.into(),
        "u64" | "usize" => u64::MAX,
        _ => return None,
    })
}

/// A TOML error for a person: where (line and column), what (the allowed range where serde
/// names only an integer type), and the offending line cut to [`EXCERPT_CHARS`] characters (a
/// 200 KB line is not echoed whole).
pub fn toml_error(e: &toml::de::Error, text: &str) -> String {
    let mut msg = e.message().trim_end().to_string();
    for ty in ["u8", "u16", "u32", "u64", "usize"] {
        let from = format!("expected {ty}");
        if msg.ends_with(&from) {
            if let Some(max) = unsigned_range(ty) {
                msg.truncate(msg.len() - from.len());
                msg.push_str(&format!("expected a whole number in 0..={max}"));
            }
        }
    }
    toml_error_at(msg, e.span(), text)
}

/// [`toml_error`] of a message of our own about the text at `span`.
pub fn toml_error_at(mut msg: String, span: Option<std::ops::Range<usize>>, text: &str) -> String {
    // The message quotes the offending value: keep its head and its tail (the expectation).
    if msg.chars().count() > 2 * EXCERPT_CHARS {
        let head: String = msg.chars().take(EXCERPT_CHARS).collect();
        let tail: String = msg
            .chars()
            .skip(msg.chars().count() - EXCERPT_CHARS)
            .collect();
        msg = format!("{head}…{tail}");
    }
    let Some(span) = span else {
        return msg;
    };
    let at = span.start.min(text.len());
    let before = text.get(..at).unwrap_or("");
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text
        .get(line_start..)
        .and_then(|l| l.lines().next())
        .unwrap_or("");
    let col = text.get(line_start..at).map_or(0, |p| p.chars().count());
    format!(
        "line {line_no}, column {}: {msg}\n  | {}",
        col + 1,
        excerpt(line, col, EXCERPT_CHARS)
    )
}
