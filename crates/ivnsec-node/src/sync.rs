//! Locks shared by the data paths, their workers and the control loops.

use std::sync::{Mutex, MutexGuard};

/// A poisoned lock means a thread panicked; the state it guards is still the best there is.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
