//! Processes a test starts: killed (SIGKILL) and reaped when dropped, so a failed assertion
//! leaves nothing running; started until they say they are ready; stopped with SIGTERM and
//! read to the end. And waiting for a condition with a deadline.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::text;

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

impl Proc {
    /// Spawns `c` with piped stdout and stderr and reads stderr up to a line containing
    /// `ready`; returns the process, that line (trimmed), and what stderr said before it.
    /// Panics with what it printed if it ends before. Its stderr is drained from then on; its
    /// stdout stays for the caller.
    pub fn start(mut c: Command, ready: &str) -> (Proc, String, String) {
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut p = Proc(Some(child));
        let mut seen = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            if err.read_line(&mut line).unwrap() == 0 {
                let o = p.take().wait_with_output().unwrap();
                panic!("ended before `{ready}`: {seen}{}", text(&o.stdout));
            }
            if line.contains(ready) {
                break;
            }
            seen.push_str(&line);
        }
        // Keep draining stderr, so the process never blocks on it.
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
        });
        (p, line.trim().to_string(), seen)
    }

    /// The process id of the child.
    pub fn id(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// The running child.
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    /// The child, no longer killed on drop.
    pub fn take(&mut self) -> Child {
        self.0.take().unwrap()
    }

    /// Waits for the end (after SIGTERM when `stop`); the exit code and what it printed on
    /// stdout.
    pub fn finish(mut self, stop: bool) -> (Option<i32>, String) {
        let mut c = self.take();
        if stop {
            ivnsec_net::sys::signal_process(c.id(), false).unwrap();
        }
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        (c.wait().unwrap().code(), out)
    }

    /// SIGTERM, then the exit code and the JSON document it printed on stdout (the final
    /// status of `gateway --json` and `macsec up --json`).
    pub fn stop_json(self) -> (Option<i32>, Value) {
        let (code, out) = self.finish(true);
        (
            code,
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: `{out}`")),
        )
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

/// Waits up to `secs` for `cond` (checked every 200 ms), panicking with `what` otherwise.
pub fn wait_for(secs: u64, what: &str, cond: impl FnMut() -> bool) {
    wait_for_or(secs, what, cond, String::new)
}

/// [`wait_for`], and the panic message ends with `diag()`.
pub fn wait_for_or(
    secs: u64,
    what: &str,
    mut cond: impl FnMut() -> bool,
    diag: impl Fn() -> String,
) {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "not within {secs} s: {what}\n{}",
            diag()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Polls `f` every 20 ms until it returns `Some`, for at most `limit`.
pub fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if t.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
