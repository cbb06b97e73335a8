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

/// A TOML error for a person: where (line and column), the key of the value it is about
/// ([`key_at`]: `matrix[0].profiles[1]`), what (the allowed range where serde names only an
/// integer type), and the offending line cut to [`EXCERPT_CHARS`] characters (a 200 KB line is
/// not echoed whole).
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
    if let Some(key) = e.span().and_then(|span| key_at(text, &span)) {
        let n = key.chars().count();
        msg = format!("key `{}`: {msg}", excerpt(&key, n, EXCERPT_CHARS));
    }
    toml_error_at(msg, e.span(), text)
}

/// The key of the value of TOML `text` at `span` (`matrix[0].profiles[1]`, `scenario[2]`,
/// `run.count`): of the values whose span holds `span`, the smallest. `None` where the text has
/// none there (a syntax error, a top-level key).
///
/// Why the key comes from the span: a plan's tables are typed where serde reads them (a profile
/// is a [`NamedProfile`] from the text on, so an unknown one fails inside toml), and serde tells
/// a field's deserializer nothing of where it is — not the table, not the index of the table
/// or of the element — while toml's error keeps its keys to itself, without indices. What it
/// does give is the span of the value that failed (a profile's name fails inside the visit of
/// its string: the span of `"nope"`, not of the array around it). Reading the text once more,
/// each value with its span, finds the path to it, for whatever type failed there, with no
/// wrapper type or `deserialize_with` on the fields. A value under a table that has no span of
/// its own (one that only dotted keys `a.b = 1` or a `[a.b]` header make) is named by the
/// nearest table around it that has one (`t[0]`, not `t[0].a.b`), or not at all.
pub fn key_at(text: &str, span: &std::ops::Range<usize>) -> Option<String> {
    fn walk<'a>(
        places: &'a Places,
        path: &mut Vec<&'a Step>,
        span: &std::ops::Range<usize>,
        best: &mut Option<(usize, String)>,
    ) {
        for p in &places.0 {
            path.push(&p.step);
            if let Some(s) = &p.span {
                let len = s.end - s.start;
                // `<=`: a value that spans as much as its parent (the one table of an array of
                // tables) is the closer one; it comes after the parent.
                if s.start <= span.start
                    && span.end <= s.end
                    && best.as_ref().is_none_or(|(l, _)| len <= *l)
                {
                    *best = Some((len, render(path)));
                }
            }
            walk(&p.inner, path, span, best);
            path.pop();
        }
    }
    fn render(path: &[&Step]) -> String {
        let mut key = String::new();
        for step in path {
            match step {
                Step::Key(k) if key.is_empty() => key.push_str(k),
                Step::Key(k) => {
                    key.push('.');
                    key.push_str(k);
                }
                Step::Index(i) => key.push_str(&format!("[{i}]")),
            }
        }
        key
    }
    let root: Places = toml::from_str(text).ok()?;
    let mut best = None;
    walk(&root, &mut Vec::new(), span, &mut best);
    best.map(|(_, key)| key)
}

/// A step of a key: a table's key or an array's index.
enum Step {
    Key(String),
    Index(usize),
}

/// One value of a TOML text: its step from its parent, its span (a table that only dotted keys
/// or a `[a.b]` header make has none) and, for a table or an array, what it holds.
struct Place {
    step: Step,
    span: Option<std::ops::Range<usize>>,
    inner: Places,
}

/// The values of a TOML table or array, with their spans ([`key_at`]); a scalar holds none.
#[derive(Default)]
struct Places(Vec<Place>);

impl<'de> serde::Deserialize<'de> for Places {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Places, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Places;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any TOML value")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Places, A::Error> {
                let mut places = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    // A table without a span refuses `Spanned`: kept without span and inside.
                    let (span, inner) = match map.next_value::<toml::Spanned<Places>>() {
                        Ok(v) => (Some(v.span()), v.into_inner()),
                        Err(_) => (None, Places::default()),
                    };
                    places.push(Place {
                        step: Step::Key(key),
                        span,
                        inner,
                    });
                }
                Ok(Places(places))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Places, A::Error> {
                let mut places = Vec::new();
                // Every element has a span (a value, or an array's `[[table]]`).
                while let Some(v) = seq.next_element::<toml::Spanned<Places>>()? {
                    places.push(Place {
                        step: Step::Index(places.len()),
                        span: Some(v.span()),
                        inner: v.into_inner(),
                    });
                }
                Ok(Places(places))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Places, E> {
                Ok(Places::default())
            }

            fn visit_i64<E>(self, _: i64) -> Result<Places, E> {
                Ok(Places::default())
            }

            fn visit_u64<E>(self, _: u64) -> Result<Places, E> {
                Ok(Places::default())
            }

            fn visit_f64<E>(self, _: f64) -> Result<Places, E> {
                Ok(Places::default())
            }

            fn visit_str<E>(self, _: &str) -> Result<Places, E> {
                Ok(Places::default())
            }
        }
        d.deserialize_any(V)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of the value at a span: through arrays of tables (as `[[t]]` or inline),
    /// nested arrays, sub-tables after their parent's own keys; a whole table (a missing
    /// field) or a key in it (an unknown field) is the table's; nothing outside a value.
    #[test]
    fn key_at_names_the_value_at_a_span() {
        let text = "name = \"p\"\n\
                    [run]\n\
                    count = 5\n\
                    [[t]]\n\
                    a = [1, [2, 3]]\n\
                    [[t]]\n\
                    b = \"x\"\n\
                    [t.sub]\n\
                    c = { d = [4] }\n\
                    u = [{ v = 6 }, { v = 7 }]\n";
        let at = |needle: &str| {
            let start = text.find(needle).unwrap();
            key_at(text, &(start..start + needle.len()))
        };
        assert_eq!(at("\"p\"").as_deref(), Some("name"));
        assert_eq!(at("5").as_deref(), Some("run.count"));
        assert_eq!(at("3").as_deref(), Some("t[0].a[1][1]"));
        assert_eq!(at("[2, 3]").as_deref(), Some("t[0].a[1]"));
        assert_eq!(at("\"x\"").as_deref(), Some("t[1].b"));
        assert_eq!(at("4").as_deref(), Some("t[1].sub.c.d[0]"));
        assert_eq!(at("7").as_deref(), Some("t[1].sub.u[1].v"));
        // A key (an unknown field) is its table's; a whole table (a missing field) its own.
        assert_eq!(at("b =").as_deref(), Some("t[1]"));
        assert_eq!(at("[[t]]\nb = \"x\"").as_deref(), Some("t[1]"));
        assert_eq!(key_at(text, &(0..0)), None);
        assert_eq!(key_at("x = [", &(4..5)), None);
    }

    /// A table only dotted keys make has no span: what is under it is named by the table
    /// around it (its errors keep line and column); what is beside it is found.
    #[test]
    fn values_under_a_dotted_table_name_the_table_around() {
        let text = "[[t]]\na.b = 1\nc = 2\n";
        let at = |needle: &str| {
            let start = text.find(needle).unwrap();
            key_at(text, &(start..start + needle.len()))
        };
        assert_eq!(at("2").as_deref(), Some("t[0].c"));
        // `1` lies in `t[0]`'s span: the table is named, not `t[0].a.b`.
        assert_eq!(at("1").as_deref(), Some("t[0]"));
    }

    /// A TOML error names the key of the value it is about, ahead of the message, after the
    /// line and column.
    #[test]
    fn toml_errors_name_the_key() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            n: Vec<u32>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct F {
            t: Vec<T>,
        }
        for (text, want) in [
            (
                "[[t]]\nn = [1]\n[[t]]\nn = [2, -1]\n",
                "line 4, column 9: key `t[1].n[1]`: invalid value: integer `-1`, expected a \
                 whole number in 0..=4294967295\n  | n = [2, -1]",
            ),
            (
                "[[t]]\nn = [1]\nm = 2\n",
                "line 3, column 1: key `t[0]`: unknown field `m`, expected `n`\n  | m = 2",
            ),
        ] {
            let e = toml::from_str::<F>(text).unwrap_err();
            assert_eq!(toml_error(&e, text), want, "{text}");
        }
    }
}
