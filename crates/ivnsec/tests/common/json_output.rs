//! `--json` commands checked for exactly one JSON document on stdout (`json_output` of cli and of
//! testbed_pair): wrappers of the programs ivnsec starts, first on `PATH`, that write stray
//! output into their parent's stdout, and the check of what the command printed.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use super::{TempDir, text};

/// What the wrappers write into their parent's stdout (the tail of a pretty-printed document,
/// as seen in issue 22) and the line that says which wrapper wrote it.
pub const STRAY: &str = "  }\n  }\n}\n";

pub const MARK: &str = "stray output of";

/// A directory of wrappers and the `PATH` that puts it first.
pub struct Stray {
    _dir: TempDir,
    pub path: OsString,
    /// The programs wrapped (those installed here).
    pub wrapped: Vec<&'static str>,
}

pub fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

impl Stray {
    pub fn new() -> Stray {
        let dir = TempDir::new("json-stray");
        let bin = dir.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let mut wrapped = Vec::new();
        for program in ["ip", "iperf3", "sockperf", "openssl"] {
            let Some(real) = which(program) else {
                continue;
            };
            let script = format!(
                "#!/bin/sh\nprintf '{}{MARK} {program}\\n' >/proc/$PPID/fd/1 2>/dev/null\nexec {} \"$@\"\n",
                STRAY.replace('\n', "\\n"),
                real.display()
            );
            let p = bin.join(program);
            std::fs::write(&p, script).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            wrapped.push(program);
        }
        let mut paths = vec![bin];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        Stray {
            _dir: dir,
            path: std::env::join_paths(paths).unwrap(),
            wrapped,
        }
    }

    /// `ivnsec ARGS` with the wrappers first on PATH and `d`'s testbed state.
    pub fn cmd(&self, d: &TempDir, args: &[&str]) -> Command {
        let mut c = d.cmd();
        c.args(args).env("PATH", &self.path);
        c
    }

    pub fn run(&self, d: &TempDir, args: &[&str]) -> Output {
        self.cmd(d, args).output().expect("run ivnsec")
    }
}

/// Stdout of `what` as exactly one JSON document (serde_json refuses anything after it but
/// whitespace), ending in one newline; `codes` are the exit codes it may have.
pub fn one_document(what: &str, o: &Output, codes: &[i32]) -> Value {
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    let code = o.status.code().unwrap_or(-1);
    assert!(
        codes.contains(&code),
        "{what}: exit {code}\nstderr: {err}\nstdout: {out}"
    );
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{what}: stdout is not one JSON document: {e}\n{out}"));
    assert!(v.is_object() || v.is_array(), "{what}: {v}");
    assert!(
        out.ends_with("}\n") || out.ends_with("]\n"),
        "{what}: `{out}`"
    );
    v
}

/// The wrapper of `program`, if it is installed, ran and its stray lines went to stderr.
pub fn strayed(s: &Stray, what: &str, stderr: &str, program: &str) {
    if s.wrapped.contains(&program) {
        assert!(
            stderr.contains(&format!("{MARK} {program}")),
            "{what}: the {program} wrapper did not run: {stderr}"
        );
    }
}

/// `one_document` for a process read by [`super::Proc::finish`].
pub fn one_document_of(what: &str, (code, out): (Option<i32>, String), codes: &[i32]) -> Value {
    let code = code.unwrap_or(-1);
    assert!(codes.contains(&code), "{what}: exit {code}: {out}");
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{what}: stdout is not one JSON document: {e}\n{out}"));
    assert!(
        out.ends_with("}\n") || out.ends_with("]\n"),
        "{what}: `{out}`"
    );
    v
}
