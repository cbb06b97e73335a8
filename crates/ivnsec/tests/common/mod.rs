//! What the test binaries share, and the only place test helpers are defined (a module of
//! the tests defines tests and what no other module needs):
//!
//! - here: running `ivnsec` (with a temporary directory of its own and its own testbed state,
//!   or plain, or fed stdin), the `require_root!` and `require_tools!` guards that skip a test
//!   with the reason printed, key files, tools present on this machine;
//! - [`proc`]: spawned processes killed on drop, waiting for a line or a condition;
//! - [`json`]: JSON documents on stdout and figures in them;
//! - [`net`]: network namespaces, `ip`, ping, tshark captures, raw frames injected;
//! - [`frames`]: pcap files written by hand, MACsec frames taken apart;
//! - [`cli`]: the help tree of `ivnsec`;
//! - one module per command family whose checks two test binaries share (the root-free tests
//!   in `cli`, the root tests on a testbed): [`camera`], [`esp`], [`json_output`], [`macsec`],
//!   [`metrics`], [`mka`], [`nonce`], [`pingpong`], [`seed001`], [`tdma`], [`throughput`],
//!   [`underload`].
// Each test binary uses its own part of this module.
#![allow(dead_code)]

// The macros first: they are visible to what follows them, the modules below included.

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

/// Returns from the test, printing which, when one of these programs is not installed.
#[allow(unused_macros)]
macro_rules! require_tools {
    ($($t:expr),+) => {
        for t in [$($t),+] {
            if !$crate::common::have(t) {
                let _ = std::io::Write::write_fmt(
                    &mut std::io::stderr(),
                    format_args!("SKIPPED {}: `{t}` is not installed (bash scripts/setup)\n", module_path!()),
                );
                return;
            }
        }
    };
}

pub mod camera;
pub mod cli;
pub mod esp;
pub mod frames;
pub mod json;
pub mod json_output;
pub mod macsec;
pub mod metrics;
pub mod mka;
pub mod net;
pub mod nonce;
pub mod pingpong;
pub mod proc;
pub mod radius;
pub mod seed001;
pub mod tdma;
pub mod throughput;
pub mod underload;

pub use proc::{Proc, spawn_until_ready};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
pub const BIN: &str = env!("CARGO_BIN_EXE_ivnsec");

/// The vehicle of the test PKIs (`ivnsec pki init --vehicle`).
pub const VIN: &str = "WVWZZZ1JZXW000001";

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

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
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

/// `ivnsec ARGS`, nothing else set (no testbed state directory of its own).
pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ivnsec")
}

/// `ivnsec crypto-bench ARGS`.
pub fn crypto_bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("crypto-bench")
        .args(args)
        .output()
        .expect("run ivnsec")
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

/// Exit code, standard output and standard error (both trimmed) of `ivnsec ARGS` fed `stdin`
/// ([`run_with_stdin`]).
pub fn run_outcome(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let o = run_with_stdin(args, stdin);
    (
        o.status.code().unwrap_or(-1),
        text(&o.stdout).trim().to_string(),
        text(&o.stderr).trim().to_string(),
    )
}

/// `ivnsec run PLAN --on loopback --out DIR/report`: the exit code (0 or 1: the run completed)
/// and the report's summary.json.
pub fn run_plan_on_loopback(d: &TempDir, plan: &Path) -> (i32, serde_json::Value) {
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
    (code, json::summary(&out))
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

/// What a command printed on stdout.
pub fn stdout(o: &Output) -> String {
    text(&o.stdout)
}

/// What a command printed on stdout, trimmed.
pub fn stdout_trimmed(o: &Output) -> String {
    text(&o.stdout).trim().to_string()
}

/// What a command printed on stderr.
pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// The repository's root directory.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory of its own under the system's temporary directory (never removed: the
/// tests that use it leave what they wrote for a look after a failure).
pub fn tmpdir(tag: &str) -> PathBuf {
    let r = ivnsec_net::testbed::random_prefix().unwrap();
    let d = std::env::temp_dir().join(format!("ivnsec-test-{tag}-{r}"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `body` to `dir/name`; returns the path as a string (for a command line).
pub fn write(dir: impl AsRef<Path>, name: &str, body: &str) -> String {
    let p = dir.as_ref().join(name);
    std::fs::write(&p, body).unwrap();
    p.to_string_lossy().into_owned()
}

/// `ivnsec keygen --profile PROFILE --out DIR/NAME`, checked; the key file's path.
pub fn keygen(d: &TempDir, profile: &str, name: &str) -> PathBuf {
    let p = d.path(name);
    let o = d.run(&["keygen", "--profile", profile, "--out", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    p
}

/// Whether `tool` is a command on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `tool --version` runs (and succeeds).
pub fn runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `python3`, when it runs here.
pub fn python() -> Option<&'static str> {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    ok.then_some("python3")
}

/// A Python interpreter with the `cryptography` package (the workspace's `.venv` first).
pub fn python_with_cryptography() -> Option<String> {
    let venv = repo().join(".venv/bin/python");
    for py in [venv.to_string_lossy().into_owned(), "python3".to_string()] {
        if let Ok(o) = Command::new(&py)
            .args(["-c", "import cryptography, sys; print(sys.executable)"])
            .output()
            && o.status.success()
        {
            return Some(text(&o.stdout).trim().to_string());
        }
    }
    None
}

/// Whether linuxptp's `pmc` is installed.
pub fn have_linuxptp() -> bool {
    ["/usr/sbin/pmc", "/sbin/pmc", "/usr/bin/pmc"]
        .iter()
        .any(|p| Path::new(p).exists())
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
