//! Locks shared by the data paths, their workers and the control loops.

use std::sync::{Mutex, MutexGuard};

/// A poisoned lock means a thread panicked; the state it guards is still the best there is.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Spawns a scoped thread named `name`: what `top -H`, `ps -L` and `/proc/PID/task/*/comm`
/// show (the kernel keeps 15 octets), so that a data plane's CPU can be read per thread
/// (`macsec-tx`, `esp-rx`, a pipeline's second stage `macsec-tx2`, the crypto workers
/// `<name>-crypto<i>`). Panics where the thread cannot be made, as `Scope::spawn` does.
pub fn spawn_named<'scope, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn_scoped(s, f)
        .unwrap_or_else(|e| panic!("spawning thread {name}: {e}"))
}
