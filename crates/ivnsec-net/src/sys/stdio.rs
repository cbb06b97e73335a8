//! Standard output kept for one document: [`set_aside_stdout`].

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;

/// Keeps the process's standard output for the caller alone and returns it as a file: from the
/// call on, descriptor 1 — what `print!` writes to and what a child process inherits unless its
/// stdout is set — refers to standard error, and the real standard output is reachable only
/// through the returned file, whose descriptor is close-on-exec (no child inherits it).
///
/// For a `--json` document: whatever a child process or a stray `print!` writes lands on
/// stderr, never inside the document. Anything already buffered for stdout is flushed to the
/// real stdout first. When stderr is closed, descriptor 1 refers to `/dev/null` instead.
pub fn set_aside_stdout() -> io::Result<File> {
    io::stdout().flush()?;
    // A new descriptor for the same open file, close-on-exec (F_DUPFD_CLOEXEC).
    let kept = io::stdout().as_fd().try_clone_to_owned()?;
    // SAFETY: dup2 takes two integer descriptors and touches no memory of this process.
    // Descriptor 1 is replaced atomically; Rust's `Stdout` keeps using descriptor 1 by number,
    // so it now writes where stderr does. `kept` is a separate descriptor and stays valid.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        let null = File::options().write(true).open("/dev/null")?;
        // SAFETY: as above; `null` is a valid open descriptor for the duration of the call
        // (dup2 makes descriptor 1 a copy of it; dropping `null` afterwards closes only its own
        // descriptor).
        if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), libc::STDOUT_FILENO) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(File::from(kept))
}
