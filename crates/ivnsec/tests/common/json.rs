//! JSON documents a command printed or wrote, and the figures in them.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::text;

/// The JSON document on `what`'s stdout, whatever its exit code; panics with both streams when
/// stdout is not one.
pub fn parse(what: &str, o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not JSON ({e}): {}\nstderr: {}",
            text(&o.stdout),
            text(&o.stderr)
        )
    })
}

/// [`parse`] of a command that exited with one of `codes` (checked first).
pub fn with_codes(what: &str, o: &Output, codes: &[i32]) -> Value {
    assert!(
        o.status.code().is_some_and(|c| codes.contains(&c)),
        "{what}: exit {:?}, expected one of {codes:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    parse(what, o)
}

/// The `summary.json` of the report directory `dir`.
pub fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// `v[key]` as an unsigned integer; panics naming the key when it is missing or not one.
pub fn u64_of(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing or not an unsigned integer in {v}"))
}

/// `v[key]` as a number; panics naming the key when it is missing or not one.
pub fn f64_of(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing or not a number in {v}"))
}

/// The number at `path` (`["messages", "sent"]`) in `v`.
pub fn f64_at(v: &Value, path: &[&str]) -> f64 {
    let mut x = v;
    for p in path {
        x = &x[*p];
    }
    x.as_f64()
        .unwrap_or_else(|| panic!("{} missing in {v}", path.join(".")))
}

/// The number at `path` in `v`, as an integer.
pub fn u64_at(v: &Value, path: &[&str]) -> u64 {
    f64_at(v, path) as u64
}
