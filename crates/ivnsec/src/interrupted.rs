//! Ctrl-C of the long commands (`run`, `validate`, `attack`, `throughput`, `underload` (also
//! `--outage`), `pingpong` (also `--outage`), `playback`, `camera`, `tdma run`; issue 32). Each
//! calls [`watch`] before it builds anything;
//! a SIGINT, SIGTERM or SIGHUP then stops the nodes it started at once
//! (`ivnsec_lab::interrupt`), its loops end before the next measurement, and it writes its
//! usual output with what finished before the signal, marked: `"interrupted": true` in JSON, a
//! last line starting `interrupted:` in text. The testbed it built is removed, and the exit
//! status is 128 + the signal ([`code`]: 130 for Ctrl-C).

use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;

/// Installs the handler; call it before the command builds a testbed or starts a node.
pub fn watch() -> Result<()> {
    ivnsec_lab::interrupt::watch().context("installing the Ctrl-C handler")
}

/// Whether a termination signal arrived.
pub fn requested() -> bool {
    ivnsec_lab::interrupt::requested()
}

/// The exit status of an interrupted command (128 + the signal), said on stderr.
pub fn code() -> ExitCode {
    eprintln!(
        "ivnsec: interrupted; what finished before the signal was written, marked interrupted"
    );
    ExitCode::from(ivnsec_lab::interrupt::exit_code())
}

/// The last line of an interrupted command's text output.
pub fn line(what: &str) -> String {
    format!("interrupted: stopped by a signal before the end; {what}")
}

/// `v` (a struct) with `"interrupted": true` added after its fields, for `Json::print`.
pub fn marked<T: Serialize>(v: &T) -> Marked<'_, T> {
    Marked {
        inner: v,
        interrupted: true,
    }
}

/// See [`marked`].
#[derive(Serialize)]
pub struct Marked<'a, T: Serialize> {
    #[serde(flatten)]
    inner: &'a T,
    interrupted: bool,
}
