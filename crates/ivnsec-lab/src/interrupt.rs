//! Ctrl-C for long runs: [`watch`] turns SIGINT, SIGTERM and SIGHUP into a stop flag the
//! experiment loops check between their measurements, and stops the node processes (and the
//! tools: sockperf, iperf3) this process started (so a measurement in progress ends at once).
//! The command then writes what it measured, marked as interrupted, removes the testbed it
//! built, and exits with [`exit_code`] (128 + the signal: 130 for SIGINT).
//!
//! What finished before the signal is kept; the measurement in progress when it came is left
//! out (its nodes were killed, their reports are lost).

use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status of a run stopped by SIGINT (128 + 2, as a shell reports it); see
/// [`exit_code`] for the other signals.
pub const EXIT_CODE: u8 = 130;

static WATCHING: AtomicBool = AtomicBool::new(false);
static STOP: AtomicBool = AtomicBool::new(false);
/// Node processes started by this process, by pid (see [`started`]).
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Installs the handler (once per process) and a thread that, on the first termination signal,
/// raises the stop flag and kills the node processes this process started.
pub fn watch() -> std::io::Result<()> {
    if WATCHING.swap(true, Ordering::SeqCst) {
        return Ok(());
    }
    let signals = ivnsec_net::sys::termination_signals()?;
    std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            if signals.wait().is_ok() {
                STOP.store(true, Ordering::SeqCst);
                eprintln!("ivnsec: interrupted; stopping the nodes and writing what was measured");
                stop_children();
            }
        })?;
    Ok(())
}

/// Whether [`watch`] is installed (then a testbed leaves the signal to it and is removed when
/// the run returns).
pub fn watching() -> bool {
    WATCHING.load(Ordering::SeqCst)
}

/// Whether a termination signal arrived since [`watch`] (known from the moment it is
/// delivered: a node that died of the same Ctrl-C is never taken for a failure).
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst) || (watching() && signal().is_some())
}

/// The termination signal that stopped the run, if one did.
pub fn signal() -> Option<i32> {
    ivnsec_net::sys::termination_signal_received()
}

/// The exit status of an interrupted command: 128 + the signal (130 SIGINT, 143 SIGTERM, 129
/// SIGHUP), as a shell reports a process killed by it.
pub fn exit_code() -> u8 {
    signal()
        .and_then(|s| u8::try_from(128 + s).ok())
        .unwrap_or(EXIT_CODE)
}

/// Removes the testbed `tb` and exits 128 + signal on a termination signal — unless [`watch`]
/// is installed: then the run stops itself and removes the testbed on return (two waiters
/// would race for the one signal).
pub fn remove_on_signal(tb: &ivnsec_net::testbed::Testbed) -> ivnsec_net::Result<()> {
    if watching() {
        return Ok(());
    }
    tb.down_on_termination_signal()
}

/// Spawns `cmd` (dying with this process, as every spawn site does), the process recorded with
/// [`started`] (killed at once on an interrupt).
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    let child = ivnsec_net::sys::die_with_parent(cmd).spawn()?;
    started(child.id());
    Ok(child)
}

/// Runs `cmd` to its end like `Command::output` (stdin from /dev/null, stdout and stderr
/// captured), through [`spawn`] (so it dies with this process and an interrupt ends it at once).
pub fn output(cmd: &mut Command) -> std::io::Result<Output> {
    let child = spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )?;
    child.wait_with_output()
}

/// Records a node process this process started; after an interrupt it is killed at once.
pub fn started(pid: u32) {
    if !watching() {
        return;
    }
    let mut c = CHILDREN.lock().unwrap_or_else(|p| p.into_inner());
    // Pids of children long gone are dropped (a pid whose parent is no longer us).
    c.retain(|&p| is_our_child(p));
    c.push(pid);
    drop(c);
    if requested() {
        stop_children();
    }
}

/// Whether `pid` is a child of this process (a reaped child's pid reused by someone else is
/// not: it is never signalled).
fn is_our_child(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) state ppid …`; comm may hold spaces and parentheses: read after the last ')'.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse::<u32>().ok())
        == Some(std::process::id())
}

fn stop_children() {
    let c = CHILDREN.lock().unwrap_or_else(|p| p.into_inner());
    for &pid in c.iter() {
        if is_our_child(pid) {
            let _ = ivnsec_net::sys::signal_process(pid, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_children_count() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(is_our_child(child.id()));
        assert!(!is_our_child(std::process::id()));
        assert!(!is_our_child(1));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!is_our_child(child.id()));
    }
}
