//! Ctrl-C for long runs: [`watch`] turns SIGINT, SIGTERM and SIGHUP into a stop flag the plan
//! loop checks between scenarios and experiments, and stops the node processes this process
//! started (so a measurement in progress ends at once). The run then writes what it measured,
//! marked as interrupted, and the command exits with [`EXIT_CODE`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status of a run stopped by a signal (128 + SIGINT, as a shell reports it).
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

/// Whether a termination signal arrived since [`watch`].
pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
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
