//! Signals: [`termination_signals`] turns SIGINT, SIGTERM and SIGHUP into a value a thread can
//! wait for (so the process cleans up before it exits); [`signal_process`] stops one process
//! (testbed teardown stops the processes inside its own namespaces with it).

use std::io;
use std::mem;
use std::os::fd::RawFd;
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

/// Write end of the self-pipe the termination-signal handler writes to (-1: not installed).
static SIGNAL_PIPE_WR: AtomicI32 = AtomicI32::new(-1);
/// Read end of that pipe, created once per process.
static SIGNAL_PIPE_RD: OnceLock<RawFd> = OnceLock::new();
/// The first termination signal caught (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_termination_signal(sig: libc::c_int) {
    // An atomic store is async-signal-safe: the signal is known at once, before any thread
    // reads the pipe.
    let _ = RECEIVED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
    let fd = SIGNAL_PIPE_WR.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; `b` lives across the call. The write end is
        // non-blocking, so a full pipe drops the byte instead of blocking the handler.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

/// Termination signals (SIGINT, SIGTERM, SIGHUP) caught by a handler; see
/// [`termination_signals`].
#[derive(Debug, Clone, Copy)]
pub struct TerminationSignals {
    rd: RawFd,
}

impl TerminationSignals {
    /// Blocks until SIGINT, SIGTERM or SIGHUP arrives; returns the signal number.
    pub fn wait(&self) -> io::Result<i32> {
        let mut b = 0u8;
        loop {
            // SAFETY: rd is the read end of a pipe this module created and never closes; `b`
            // is valid for a 1-byte write.
            let n = unsafe { libc::read(self.rd, (&mut b as *mut u8).cast(), 1) };
            if n == 1 {
                return Ok(i32::from(b));
            }
            let e = io::Error::last_os_error();
            if n == 0 || e.kind() != io::ErrorKind::Interrupted {
                return Err(if n == 0 {
                    io::Error::from(io::ErrorKind::UnexpectedEof)
                } else {
                    e
                });
            }
        }
    }
}

/// Replaces the default action of SIGINT, SIGTERM and SIGHUP (which end the process without
/// running destructors) by a handler that records the signal, so a thread blocked in
/// [`TerminationSignals::wait`] can clean up and exit. Installed once per process; later calls
/// return the same handle. Whoever calls this must make sure someone waits, or the process
/// ignores those signals.
pub fn termination_signals() -> io::Result<TerminationSignals> {
    if let Some(&rd) = SIGNAL_PIPE_RD.get() {
        return Ok(TerminationSignals { rd });
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is valid for writes of two c_ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let [rd, wr] = fds;
    // SAFETY: fcntl on a descriptor we just created; no pointers.
    if unsafe { libc::fcntl(wr, libc::F_SETFL, libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if SIGNAL_PIPE_RD.set(rd).is_err() {
        // Another thread won the race: drop our pipe, use theirs.
        // SAFETY: rd and wr are ours and not shared with anyone.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
        return termination_signals();
    }
    SIGNAL_PIPE_WR.store(wr, Ordering::Relaxed);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction is plain data; all-zero is a valid value.
        let mut sa: libc::sigaction = unsafe { mem::zeroed() };
        sa.sa_sigaction = on_termination_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        // SAFETY: sa.sa_mask is a valid sigset_t to initialise; sa is fully initialised and
        // the handler only calls the async-signal-safe write(2).
        let r = unsafe {
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, ptr::null_mut())
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(TerminationSignals { rd })
}

/// The first termination signal the handler of [`termination_signals`] caught, if any: known as
/// soon as the signal is delivered, before a thread waiting in [`TerminationSignals::wait`] has
/// run.
pub fn termination_signal_received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// Signals a process: `SIGTERM`, or `SIGKILL` when `force`. A process that no longer exists is
/// not an error.
pub fn signal_process(pid: u32, force: bool) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    if pid <= 0 {
        // 0 and negative pids address process groups; never do that here.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "pid must be positive",
        ));
    }
    let sig = if force { libc::SIGKILL } else { libc::SIGTERM };
    // SAFETY: kill() takes no pointers; pid is a single positive process id.
    let r = unsafe { libc::kill(pid, sig) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_rejects_group_pids() {
        assert!(signal_process(0, false).is_err());
    }
}
