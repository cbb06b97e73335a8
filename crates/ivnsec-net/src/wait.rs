//! The two ways every socket here waits for input, written once: a blocking call whose timeout
//! surfaces as `WouldBlock`/`TimedOut`, and a busy poll that spins on a non-blocking attempt.

use std::io;
use std::time::{Duration, Instant};

/// Runs a blocking socket call, retrying on `EINTR`; a timeout (`WouldBlock` or `TimedOut`, as
/// `SO_RCVTIMEO` reports it) is `Ok(None)`.
pub fn timed<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<Option<T>> {
    loop {
        match op() {
            Ok(r) => return Ok(Some(r)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
}

/// Spins on `try_once` (a non-blocking attempt: `Ok(None)` = nothing yet) until it yields or
/// `timeout` passes: no sleep, no wake-up latency, one CPU busy. `Ok(None)` on timeout.
pub fn spin<T>(
    timeout: Duration,
    mut try_once: impl FnMut() -> io::Result<Option<T>>,
) -> io::Result<Option<T>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(r) = try_once()? {
            return Ok(Some(r));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::hint::spin_loop();
    }
}
