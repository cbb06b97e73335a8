//! What the tests that run `ivnsec` and build testbeds share: whether namespaces can be built
//! here, the `require_root!` guard that skips a test with the reason printed, and a temporary
//! directory with its own testbed state directory that cleans up after a failed run.
// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_ivnsec");

/// A directory of its own (testbed state files, reports, captures); on drop, `testbed down
/// --all` for whatever a failed run left behind, then removal.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let r = ivnsec_net::testbed::random_prefix().unwrap();
        let p = std::env::temp_dir().join(format!("ivnsec-test-{tag}-{r}"));
        std::fs::create_dir_all(p.join("state")).unwrap();
        TempDir(p)
    }
    /// The testbed state directory (`IVNSEC_STATE_DIR` of every command run through this).
    pub fn state(&self) -> PathBuf {
        self.0.join("state")
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    /// `ivnsec` with this directory's testbed state.
    pub fn cmd(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("IVNSEC_STATE_DIR", self.state());
        c
    }
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().expect("spawn ivnsec")
    }
    /// Testbed state files still present (a testbed not torn down).
    pub fn leftover_testbeds(&self) -> Vec<String> {
        std::fs::read_dir(self.state())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self
            .state()
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some())
        {
            let _ = self.run(&["testbed", "down", "--all"]);
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ivnsec ARGS` with `dir`'s testbed state.
pub fn ivnsec(dir: &TempDir, args: &[&str]) -> Output {
    dir.run(args)
}

/// The libtest name of test `name` in the module `module` (its `module_path!()`): the path
/// without the binary's crate name, what `--exact` matches when a test re-runs its own binary.
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, m)) => format!("{m}::{name}"),
        None => name.to_string(),
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Why namespaces cannot be built here, if they cannot.
pub fn skip_reason() -> Option<String> {
    let is_root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|u| u.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    if !is_root {
        return Some("not root".to_string());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`ip netns list` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("no `ip` command: {e}")),
    }
}

/// Returns from the test, printing why, when namespaces cannot be built here.
#[allow(unused_macros)]
macro_rules! require_root {
    () => {
        if let Some(why) = $crate::common::skip_reason() {
            // Straight to stderr: libtest captures eprintln!, and the reason should show.
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIPPED {}: {why}\n", module_path!()),
            );
            return;
        }
    };
}

/// `ivnsec run PLAN --on loopback --out DIR/report`: the exit code (0 or 1: the run completed)
/// and the report's summary.json.
pub fn run_plan_on_loopback(d: &TempDir, plan: &std::path::Path) -> (i32, serde_json::Value) {
    let out = d.0.join("report");
    let o = ivnsec(
        d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--on",
            "loopback",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let code = o.status.code().unwrap_or(-1);
    assert!(matches!(code, 0 | 1), "exit {code}: {}", text(&o.stderr));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    (code, serde_json::from_str(&summary).unwrap())
}

/// `ivnsec ARGS` without testbed state, with `stdin` (if any) written to its standard input,
/// which is then closed (at once when `None`). For the `frame` commands, whose `-` reads one unit
/// per stdin line. The input is written before the output is read: keep it under a pipe buffer
/// (64 KiB).
pub fn run_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ivnsec");
    let mut input = child.stdin.take().expect("piped stdin");
    if let Some(s) = stdin {
        // A command that stops before reading closes the pipe; its exit code and message are
        // what the test checks, so a broken pipe here is not an error of the test.
        if let Err(e) = input.write_all(s.as_bytes()) {
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe,
                "stdin of ivnsec: {e}"
            );
        }
    }
    drop(input);
    child.wait_with_output().expect("wait for ivnsec")
}

/// A spawned process, SIGKILLed if still running when dropped.
pub struct Proc(pub Option<Child>);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Spawns `c` with piped stdout and stderr and waits until its stderr says `ready` (a line
/// containing it); panics, naming `what` and what it printed, if it ends before. Its stderr is
/// drained from then on; its stdout stays for the caller.
pub fn spawn_until_ready(mut c: Command, ready: &str, what: &str) -> Proc {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut seen = String::new();
    loop {
        line.clear();
        if err.read_line(&mut line).unwrap() == 0 {
            let o = child.wait_with_output().unwrap();
            panic!("{what} ended: {seen}{}", text(&o.stdout));
        }
        seen.push_str(&line);
        if line.contains(ready) {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    Proc(Some(child))
}

/// The `reserved` mark of the one nonce state file (`*.hw`) in `dir`.
pub fn reserved_mark(dir: &Path) -> u64 {
    let hw: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "hw"))
        .collect();
    assert_eq!(hw.len(), 1, "{hw:?}");
    std::fs::read_to_string(&hw[0])
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("reserved "))
        .unwrap()
        .parse()
        .unwrap()
}
