//! The inputs of a TDMA schedule: durations and rates as people write them (`10ms`, `0.2ms`,
//! `115us`; `100M`, `54M`, `1G`), parsed exactly (no floating point), and the flows file.
//!
//! A flows file is TOML, one `[[flow]]` table per periodic message (docs/tdma-run.md):
//!
//! ```toml
//! description = "two control loops"   # optional, ignored
//!
//! [[flow]]
//! name = "steer"          # unique; letters, digits, `-`, `_`, `.` (at most 32)
//! from = "ecu1"           # the sending ECU
//! to = "ecu2"             # the receiving ECU
//! frame_bytes = 60        # the frame on the wire: Ethernet header to the last tag byte, no FCS
//! period = 1              # sent every `period` base periods (default 1)
//!
//! [[flow]]
//! name = "brake"
//! from = "ecu2"
//! to = "ecu1"
//! profile = "hmac-sha1"   # optional: the frame size comes from the profile…
//! payload = 46            # …and the payload (instead of frame_bytes)
//! period = 2
//! ```
//!
//! Every error names the file, the flow and the key.

use std::path::Path;

use anyhow::Result;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use serde::{Deserialize, Serialize};

use ivnsec_node::error::usage;

/// Largest flows file read (a schedule of [`MAX_FLOWS`] flows is far smaller).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Most flows in one file.
pub const MAX_FLOWS: usize = 1024;
/// Largest period, in base periods.
pub const MAX_PERIOD: u32 = 1000;
/// Longest flow name.
pub const MAX_NAME: usize = 32;
/// Largest frame: the 1500-byte MTU plus the 14-byte Ethernet header (no FCS).
pub const MAX_FRAME_BYTES: u32 = 1514;
/// Smallest frame: an Ethernet header.
pub const MIN_FRAME_BYTES: u32 = 14;
/// The flow header every payload starts with on `tdma run`: flow number (16 bits) and
/// sequence number (48 bits), big-endian.
pub const FLOW_HEADER: usize = 8;

/// Parses a duration with a unit (`ns`, `us` or `µs`, `ms`, `s`; `ps` too) and an optional
/// decimal fraction (`0.2ms`, `115us`, `10ms`, `1.5s`) into nanoseconds, exactly: the spelling
/// of [`super::Duration`], which must come to whole nanoseconds here; `what` names the option or
/// key in the error.
pub fn parse_duration(what: &str, s: &str) -> Result<u64, String> {
    let d: super::Duration = s
        .trim()
        .parse()
        .map_err(|e: super::QuantityError| format!("{what} `{s}`: {e}"))?;
    if d.ps() % 1_000 != 0 {
        return Err(format!(
            "{what} `{s}`: finer than 1 ns; schedules count whole nanoseconds"
        ));
    }
    Ok(d.ps() / 1_000)
}

/// Parses a rate in bits per second with an optional SI suffix `k`, `M`, `G` (powers of 1000)
/// and a decimal fraction (`100M`, `54M`, `1G`, `2.5G`, `250000000`), exactly: the spelling of
/// [`super::Rate`].
pub fn parse_rate(what: &str, s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<super::Rate>()
        .map(super::Rate::bps)
        .map_err(|e| format!("{what} `{s}`: {e}"))
}

/// `ns` for people: `10 ms`, `0.2 ms`, `204.8 µs`, `500 ns` (exact: as many decimals as needed).
pub fn fmt_duration(ns: u64) -> String {
    scaled(
        ns,
        &[
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "µs"),
            (1, "ns"),
        ],
    )
}

/// `bps` for people: `100 Mb/s`, `54 Mb/s`, `1 Gb/s`, `2.5 Gb/s`.
pub fn fmt_rate(bps: u64) -> String {
    scaled(
        bps,
        &[
            (1_000_000_000, "Gb/s"),
            (1_000_000, "Mb/s"),
            (1_000, "kb/s"),
            (1, "b/s"),
        ],
    )
}

/// `v` in the largest unit of `units` (powers of ten, largest first, ending with 1) it reaches,
/// with as many decimals as it takes to be exact.
fn scaled(v: u64, units: &[(u64, &str)]) -> String {
    let &(scale, unit) = units
        .iter()
        .find(|(s, _)| v >= *s)
        .unwrap_or(&units[units.len() - 1]);
    let (int, frac) = (v / scale, v % scale);
    if frac == 0 {
        return format!("{int} {unit}");
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{int}.{} {unit}", digits.trim_end_matches('0'))
}

/// Whether `name` is a flow name: 1..=[`MAX_NAME`] letters, digits, `-`, `_` or `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// How a flow's frame size is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// The frame on the wire, Ethernet header to the last tag byte (no FCS).
    FrameBytes(u32),
    /// The payload, framed and protected by the flow's (or the command's) profile.
    Payload(u32),
}

/// One flow as the file gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub name: String,
    pub from: String,
    pub to: String,
    pub size: Size,
    /// The flow's own profile (with the name the file spells), if any.
    pub profile: Option<NamedProfile>,
    /// Every `period` base periods.
    pub period: u32,
}

/// One flow of a schedule, its frame size known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FlowText")]
pub struct Flow {
    pub name: String,
    pub from: String,
    pub to: String,
    /// The frame on the wire (Ethernet header to the last tag byte, no FCS), in bytes.
    pub frame_bytes: u32,
    /// Sent every `period` base periods.
    pub period: u32,
    /// The profile the frame size came from, when the file named one (with that name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<NamedProfile>,
    /// The payload the frame size came from, when the file gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<u32>,
}

/// A [`Flow`] as a schedule file (`tdma schedule --json`) spells it: the edge where its
/// profile's name is parsed, so that an unknown one is refused naming the flow.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowText {
    name: String,
    from: String,
    to: String,
    frame_bytes: u32,
    period: u32,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    payload: Option<u32>,
}

impl TryFrom<FlowText> for Flow {
    type Error = String;

    fn try_from(f: FlowText) -> Result<Flow, String> {
        let profile = match f.profile {
            None => None,
            Some(p) => Some(
                p.parse::<NamedProfile>()
                    .map_err(|e| format!("flow `{}` key `profile`: {e}", f.name))?,
            ),
        };
        Ok(Flow {
            name: f.name,
            from: f.from,
            to: f.to,
            frame_bytes: f.frame_bytes,
            period: f.period,
            profile,
            payload: f.payload,
        })
    }
}

/// Reads and checks a flows file (at most [`MAX_FILE_BYTES`]); errors are usage errors that
/// name the file, the flow and the key.
pub fn load(path: &Path) -> Result<Vec<FlowSpec>> {
    let (text, _) = ivnsec_node::keys::keyfile::read_secret(
        path,
        "flows file",
        MAX_FILE_BYTES,
        "docs/tdma-run.md describes the format",
    )?;
    parse(&path.display().to_string(), &text)
}

/// Parses the text of a flows file; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<Vec<FlowSpec>> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        usage(format!("flows file {file}: {}", e.to_string().trim_end()))
    })?;
    for (k, v) in &table {
        match (k.as_str(), v) {
            ("flow", toml::Value::Array(_)) => {}
            ("description", toml::Value::String(_)) => {}
            ("flow", _) => {
                return Err(usage(format!(
                    "flows file {file}: key `flow`: write each flow as a [[flow]] table"
                )));
            }
            ("description", _) => {
                return Err(usage(format!(
                    "flows file {file}: key `description`: expected a string"
                )));
            }
            (k, _) => {
                return Err(usage(format!(
                    "flows file {file}: unknown key `{k}` (expected [[flow]] tables and an \
                     optional description)"
                )));
            }
        }
    }
    let Some(toml::Value::Array(list)) = table.get("flow") else {
        return Err(usage(format!(
            "flows file {file}: no [[flow]] table; docs/tdma-run.md describes the format"
        )));
    };
    if list.len() > MAX_FLOWS {
        return Err(usage(format!(
            "flows file {file}: {} flows, at most {MAX_FLOWS}",
            list.len()
        )));
    }
    let mut flows: Vec<FlowSpec> = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let f = parse_flow(file, i, v)?;
        if let Some(j) = flows.iter().position(|g| g.name == f.name) {
            return Err(usage(format!(
                "flows file {file}: flow[{i}] (`{}`) key `name`: `{}` is also the name of \
                 flow[{j}]; flow names must be unique",
                f.name, f.name
            )));
        }
        flows.push(f);
    }
    if flows.is_empty() {
        return Err(usage(format!("flows file {file}: no [[flow]] table")));
    }
    Ok(flows)
}

fn parse_flow(file: &str, i: usize, v: &toml::Value) -> Result<FlowSpec> {
    let toml::Value::Table(t) = v else {
        return Err(usage(format!(
            "flows file {file}: flow[{i}]: expected a [[flow]] table"
        )));
    };
    // Named as soon as the name is known.
    let label = match t.get("name") {
        Some(toml::Value::String(n)) => format!("flow[{i}] (`{n}`)"),
        _ => format!("flow[{i}]"),
    };
    let bad =
        |key: &str, why: String| usage(format!("flows file {file}: {label} key `{key}`: {why}"));
    for k in t.keys() {
        if !matches!(
            k.as_str(),
            "name" | "from" | "to" | "frame_bytes" | "payload" | "profile" | "period"
        ) {
            return Err(bad(
                k,
                "unknown key (a flow has name, from, to, frame_bytes or payload, profile, period)"
                    .to_string(),
            ));
        }
    }
    let string = |key: &str| -> Result<Option<String>> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(bad(key, format!("expected a string, got {}", show(other)))),
        }
    };
    let number = |key: &str, min: u64, max: u64| -> Result<Option<u64>> {
        match t.get(key) {
            None => Ok(None),
            Some(toml::Value::Integer(n))
                if (min as i128..=max as i128).contains(&(*n as i128)) =>
            {
                Ok(Some(*n as u64))
            }
            Some(other) => Err(bad(
                key,
                format!(
                    "expected a whole number from {min} to {max}, got {}",
                    show(other)
                ),
            )),
        }
    };
    let required = |key: &str| -> Result<String> {
        string(key)?.ok_or_else(|| bad(key, "missing".to_string()))
    };
    let name = required("name")?;
    if !valid_name(&name) {
        return Err(bad(
            "name",
            format!("`{name}`: use 1..={MAX_NAME} letters, digits, `-`, `_` or `.`"),
        ));
    }
    let from = required("from")?;
    let to = required("to")?;
    if from == to {
        return Err(bad("to", format!("`{to}` is also the sender (key `from`)")));
    }
    let frame = number(
        "frame_bytes",
        u64::from(MIN_FRAME_BYTES),
        u64::from(MAX_FRAME_BYTES),
    )?;
    let payload = number("payload", 0, u64::from(MAX_FRAME_BYTES))?;
    let size = match (frame, payload) {
        (Some(b), None) => Size::FrameBytes(b as u32),
        (None, Some(p)) => Size::Payload(p as u32),
        (Some(_), Some(_)) => {
            return Err(bad(
                "payload",
                "give frame_bytes or payload, not both".to_string(),
            ));
        }
        (None, None) => {
            return Err(bad(
                "frame_bytes",
                "missing (give frame_bytes, or payload with a profile)".to_string(),
            ));
        }
    };
    let profile = string("profile")?
        .map(|p| {
            p.parse::<NamedProfile>()
                .map_err(|e| bad("profile", e.to_string()))
        })
        .transpose()?;
    let period = number("period", 1, u64::from(MAX_PERIOD))?.unwrap_or(1) as u32;
    Ok(FlowSpec {
        name,
        from,
        to,
        size,
        profile,
        period,
    })
}

/// A TOML value in an error message.
fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => format!("{s:?}"),
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(_) => "a date".to_string(),
        toml::Value::Array(_) => "an array".to_string(),
        toml::Value::Table(_) => "a table".to_string(),
    }
}

/// Resolves the frame size of every flow: a flow that gives a payload is framed by its own
/// profile, else by `default_profile` (the command's `--profile`); `file` names the flows file
/// in errors.
pub fn resolve(
    file: &str,
    specs: &[FlowSpec],
    default_profile: Option<Profile>,
    provider: ProviderChoice,
) -> Result<Vec<Flow>> {
    let mut out = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let frame_bytes = match s.size {
            Size::FrameBytes(b) => b,
            Size::Payload(p) => {
                let profile = match &s.profile {
                    Some(p) => p.profile(),
                    None => default_profile.ok_or_else(|| {
                        usage(format!(
                            "flows file {file}: flow[{i}] (`{}`) key `payload`: needs a profile \
                             to know the frame size (key `profile` or --profile)",
                            s.name
                        ))
                    })?,
                };
                let b = ivnsec_node::channel::frame_bytes(profile, provider, p as usize)?;
                if b > MAX_FRAME_BYTES as usize {
                    return Err(usage(format!(
                        "flows file {file}: flow[{i}] (`{}`) key `payload`: {p} bytes make a \
                         {b}-byte frame under {}, more than {MAX_FRAME_BYTES} (the 1500-byte MTU)",
                        s.name,
                        s.profile
                            .as_ref()
                            .map_or("the --profile", NamedProfile::name)
                    )));
                }
                b as u32
            }
        };
        out.push(Flow {
            name: s.name.clone(),
            from: s.from.clone(),
            to: s.to.clone(),
            frame_bytes,
            period: s.period,
            profile: s.profile.clone(),
            payload: match s.size {
                Size::Payload(p) => Some(p),
                Size::FrameBytes(_) => None,
            },
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_node::error::exit_code;

    #[test]
    fn durations_parse_exactly() {
        let d = |s| parse_duration("--bp", s);
        assert_eq!(d("10ms"), Ok(10_000_000));
        assert_eq!(d("0.2ms"), Ok(200_000));
        assert_eq!(d("115us"), Ok(115_000));
        assert_eq!(d("115µs"), Ok(115_000));
        assert_eq!(d("4.8us"), Ok(4_800));
        assert_eq!(d(".5s"), Ok(500_000_000));
        assert_eq!(d("1.000s"), Ok(1_000_000_000));
        assert_eq!(d("0ms"), Ok(0));
        assert_eq!(d(" 7 ns "), Ok(7));
        // 0.1 in binary floating point is not 0.1: 0.3ms must still be exactly 300000 ns.
        assert_eq!(d("0.3ms"), Ok(300_000));
        for bad in [
            "",
            "10",
            "ms",
            "1.2.3ms",
            "-1ms",
            "1e3us",
            "0.5ns",
            "10 min",
            "1,5ms",
            "99999999999s",
        ] {
            let e = d(bad).unwrap_err();
            assert!(e.starts_with("--bp `"), "{bad}: {e}");
        }
    }

    #[test]
    fn rates_parse_exactly() {
        let r = |s| parse_rate("--rate", s);
        assert_eq!(r("100M"), Ok(100_000_000));
        assert_eq!(r("54M"), Ok(54_000_000));
        assert_eq!(r("1G"), Ok(1_000_000_000));
        assert_eq!(r("2.5G"), Ok(2_500_000_000));
        assert_eq!(r("10k"), Ok(10_000));
        assert_eq!(r("250000000"), Ok(250_000_000));
        for bad in ["", "0", "0M", "M", "fast", "1.5", "-1M", "1T"] {
            assert!(r(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_and_rates_print_exactly() {
        assert_eq!(fmt_duration(10_000_000), "10 ms");
        assert_eq!(fmt_duration(200_000), "200 µs");
        assert_eq!(fmt_duration(204_800), "204.8 µs");
        assert_eq!(fmt_duration(8_889), "8.889 µs");
        assert_eq!(fmt_duration(1_500_000_000), "1.5 s");
        assert_eq!(fmt_duration(0), "0 ns");
        assert_eq!(fmt_rate(100_000_000), "100 Mb/s");
        assert_eq!(fmt_rate(2_500_000_000), "2.5 Gb/s");
    }

    const GOOD: &str = r#"
description = "two loops"
[[flow]]
name = "steer"
from = "ecu1"
to = "ecu2"
frame_bytes = 60

[[flow]]
name = "brake"
from = "ecu2"
to = "ecu1"
profile = "hmac-sha1"
payload = 46
period = 2
"#;

    #[test]
    fn a_flows_file_parses() {
        let f = parse("f.toml", GOOD).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].size, Size::FrameBytes(60));
        assert_eq!(f[0].period, 1, "period defaults to 1");
        assert_eq!(f[1].size, Size::Payload(46));
        assert_eq!(
            f[1].profile.as_ref().map(NamedProfile::name),
            Some("hmac-sha1")
        );
        assert_eq!(f[1].period, 2);
    }

    /// Each mistake is a usage error (exit 2) that names the file, the flow and the key.
    #[test]
    fn flows_file_errors_name_the_file_and_key() {
        let flow = |body: &str| format!("[[flow]]\n{body}\n");
        let base = "name = \"a\"\nfrom = \"ecu1\"\nto = \"ecu2\"\n";
        let cases: Vec<(String, &str)> = vec![
            (flow(base), "key `frame_bytes`: missing"),
            (
                flow(&format!("{base}frame_bytes = 10")),
                "key `frame_bytes`: expected a whole number from 14 to 1514",
            ),
            (
                flow(&format!("{base}frame_bytes = 1515")),
                "key `frame_bytes`",
            ),
            (
                flow(&format!("{base}frame_bytes = \"60\"")),
                "key `frame_bytes`",
            ),
            (
                flow(&format!("{base}frame_bytes = 60\npayload = 4")),
                "key `payload`: give frame_bytes or payload, not both",
            ),
            (
                flow(&format!("{base}frame_bytes = 60\nperiod = 0")),
                "key `period`",
            ),
            (
                flow(&format!("{base}frame_bytes = 60\nperiod = 1001")),
                "key `period`",
            ),
            (
                flow(&format!("{base}frame_bytes = 60\nperiod = 1.5")),
                "key `period`",
            ),
            (
                flow(&format!("{base}frame_bytes = 60\nprofile = \"aes999-gcm\"")),
                "key `profile`",
            ),
            (
                flow(&format!("{base}frame_bytes = 60\nslot = 3")),
                "key `slot`: unknown key",
            ),
            (
                flow("from = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 60"),
                "flow[0] key `name`: missing",
            ),
            (
                flow("name = \"a b\"\nfrom = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 60"),
                "key `name`",
            ),
            (
                flow("name = \"a\"\nfrom = \"ecu1\"\nto = \"ecu1\"\nframe_bytes = 60"),
                "key `to`: `ecu1` is also the sender",
            ),
            (
                flow("name = \"a\"\nto = \"ecu2\"\nframe_bytes = 60"),
                "key `from`: missing",
            ),
            (
                format!(
                    "{}{}",
                    flow(&format!("{base}frame_bytes = 60")),
                    flow(&format!("{base}frame_bytes = 70"))
                ),
                "flow[1] (`a`) key `name`: `a` is also the name of flow[0]",
            ),
            ("flows = 3\n".to_string(), "unknown key `flows`"),
            (
                "flow = 3\n".to_string(),
                "key `flow`: write each flow as a [[flow]] table",
            ),
            ("description = \"x\"\n".to_string(), "no [[flow]] table"),
            ("[[flow]\n".to_string(), "flows file f.toml:"),
        ];
        for (text, want) in cases {
            let e = parse("f.toml", &text).unwrap_err();
            assert_eq!(exit_code(&e), 2, "{text}");
            let m = format!("{e:#}");
            assert!(m.starts_with("flows file f.toml: "), "{m}");
            assert!(m.contains(want), "{text}\nwant {want:?}\ngot  {m}");
        }
    }

    #[test]
    fn a_payload_needs_a_profile_and_takes_its_frame_size() {
        let specs = parse("f.toml", GOOD).unwrap();
        let flows = resolve("f.toml", &specs, None, ProviderChoice::Auto).unwrap();
        assert_eq!(flows[0].frame_bytes, 60);
        // docs/wire-ivnae.md §1: 26 bytes up to the sequence number, the 2-byte inner EtherType,
        // the payload, then the 20-byte HMAC-SHA1 tag: 26 + 2 + 46 + 20 = 94.
        assert_eq!(flows[1].frame_bytes, 94);
        assert_eq!(flows[1].payload, Some(46));
        let no_profile = parse(
            "f.toml",
            "[[flow]]\nname = \"a\"\nfrom = \"ecu1\"\nto = \"ecu2\"\npayload = 46\n",
        )
        .unwrap();
        let e = resolve("f.toml", &no_profile, None, ProviderChoice::Auto).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(
            e.to_string()
                .contains("flows file f.toml: flow[0] (`a`) key `payload`: needs a profile"),
            "{e}"
        );
        let plain = resolve(
            "f.toml",
            &no_profile,
            Some(Profile::IvnAe("plain".parse().unwrap())),
            ProviderChoice::Auto,
        )
        .unwrap();
        // Same layout without a tag: 26 + 2 + 46.
        assert_eq!(plain[0].frame_bytes, 74);
        let big = parse(
            "f.toml",
            "[[flow]]\nname = \"a\"\nfrom = \"ecu1\"\nto = \"ecu2\"\npayload = 1500\nprofile = \"hmac-sha256\"\n",
        )
        .unwrap();
        let e = resolve("f.toml", &big, None, ProviderChoice::Auto).unwrap_err();
        assert!(e.to_string().contains("more than 1514"), "{e}");
    }
}
