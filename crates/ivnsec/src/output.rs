//! Where a `--json` document goes. A command that prints JSON claims standard output when it
//! starts ([`Json::claim`]), before it starts any process: from then on only the claim reaches
//! the real stdout, while descriptor 1 — what child processes inherit and `print!` writes to —
//! goes to stderr (`ivnsec_net::sys::set_aside_stdout`). So stdout carries exactly one JSON
//! document, written whole and flushed before the command returns, whatever else runs.

use std::fs::File;
use std::io::Write;

use anyhow::{Context, Result};
use serde::Serialize;

/// The standard output of a `--json` run (or, when no JSON was asked for, nothing: text goes
/// to stdout as usual).
pub struct Json(Option<File>);

impl Json {
    /// Claims stdout for one JSON document when `json`; does nothing otherwise.
    pub fn claim(json: bool) -> Result<Json> {
        if !json {
            return Ok(Json(None));
        }
        let file = ivnsec_net::sys::set_aside_stdout().context("setting stdout aside")?;
        Ok(Json(Some(file)))
    }

    /// Whether stdout was claimed (JSON was asked for).
    pub fn claimed(&self) -> bool {
        self.0.is_some()
    }

    /// Writes `v` as pretty JSON and a newline in one write to the claimed stdout (stdout when
    /// none was claimed), and flushes it.
    pub fn print(&mut self, v: &impl Serialize) -> Result<()> {
        let mut doc = serde_json::to_string_pretty(v)?;
        doc.push('\n');
        match &mut self.0 {
            Some(f) => f.write_all(doc.as_bytes())?,
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(doc.as_bytes())?;
                out.flush()?;
            }
        }
        Ok(())
    }

    /// A writer for a document written in parts (records streamed one by one; buffer it): the
    /// claimed stdout, or stdout when none was claimed.
    pub fn writer(&mut self) -> Box<dyn Write + '_> {
        match &mut self.0 {
            Some(f) => Box::new(f),
            None => Box::new(std::io::stdout().lock()),
        }
    }
}
