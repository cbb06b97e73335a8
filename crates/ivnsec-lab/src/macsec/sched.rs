//! Scheduling of a gateway's two data-plane threads (`ivnsec gateway --scheduling`,
//! docs/gateway.md#scheduling-and-queues).
//!
//! - [`Scheduling::Normal`]: the normal policy (SCHED_OTHER) throughout.
//! - [`Scheduling::Realtime`]: SCHED_FIFO throughout. A flooding sender on the same host never
//!   takes the gateway's CPU, but every wake-up pays a cross-CPU hop: the kernel does not pull a
//!   waking real-time thread to the waker's CPU as it does a normal one.
//! - [`Scheduling::Adaptive`] (the default): a thread raises itself to SCHED_FIFO when a read
//!   returns a batch of at least [`BACKLOG`] frames (frames are queuing faster than it runs) and
//!   drops back to the normal policy just before it sleeps (its queue is empty). Under load it
//!   keeps the CPU until it has caught up; an idle frame wakes a normal thread, which the kernel
//!   places next to the waker.
//!
//! [`ThreadPolicy`] is the per-thread state: two system calls per busy period, none per frame.

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Result;
use ivnsec_net::sys::{self, MAX_BATCH};
use serde_json::{Value, json};

use crate::error::env_error;

/// A read of at least this many frames means a backlog: the thread raises itself.
pub const BACKLOG: usize = MAX_BATCH / 2;

/// SCHED_FIFO priority of `--scheduling realtime|adaptive` unless `--realtime PRIO` gives one.
pub const DEFAULT_PRIORITY: u8 = 10;

/// How the data-plane threads are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    /// The normal policy throughout.
    Normal,
    /// SCHED_FIFO at this priority throughout.
    Realtime(u8),
    /// The normal policy while idle, SCHED_FIFO at this priority while backlogged.
    Adaptive(u8),
}

impl Scheduling {
    /// `normal`, `realtime` or `adaptive`.
    pub fn mode(self) -> &'static str {
        match self {
            Scheduling::Normal => "normal",
            Scheduling::Realtime(_) => "realtime",
            Scheduling::Adaptive(_) => "adaptive",
        }
    }

    /// The SCHED_FIFO priority the threads run under at times, if any.
    pub fn priority(self) -> Option<u8> {
        match self {
            Scheduling::Normal => None,
            Scheduling::Realtime(p) | Scheduling::Adaptive(p) => Some(p),
        }
    }

    /// The status document's `scheduling` object: `{"mode", "priority"}`.
    pub fn json(self) -> Value {
        json!({"mode": self.mode(), "priority": self.priority()})
    }

    /// The status document's `realtime` key: the priority of SCHED_FIFO throughout, or null.
    pub fn fixed_realtime(self) -> Option<u8> {
        match self {
            Scheduling::Realtime(p) => Some(p),
            _ => None,
        }
    }
}

/// The scheduling the data plane can run under, checked on the calling thread (raised to
/// SCHED_FIFO and back). Realtime not permitted: an environment error (exit 3) naming what is
/// missing. Adaptive not permitted: said once, and the data plane runs normally.
pub fn resolve(s: Scheduling) -> Result<Scheduling> {
    let Some(p) = s.priority() else {
        return Ok(s);
    };
    match sys::set_current_thread_realtime(Some(p)) {
        Ok(()) => {
            if let Err(e) = sys::set_current_thread_realtime(None) {
                eprintln!("ivnsec: warning: the control thread stays under SCHED_FIFO: {e}");
            }
            Ok(s)
        }
        Err(e) if matches!(s, Scheduling::Realtime(_)) => Err(env_error(format!(
            "--realtime {p}: cannot run the data plane under SCHED_FIFO ({e}); it needs root or \
             CAP_SYS_NICE (run it with sudo), or leave --realtime out"
        ))),
        Err(e) => {
            eprintln!(
                "ivnsec: warning: --scheduling adaptive: SCHED_FIFO not permitted ({e}); the data \
                 plane runs under the normal policy (needs root or CAP_SYS_NICE)"
            );
            Ok(Scheduling::Normal)
        }
    }
}

/// One data-plane thread's scheduling: SCHED_FIFO from the start under
/// [`Scheduling::Realtime`], raised and dropped under [`Scheduling::Adaptive`].
pub struct ThreadPolicy<'a> {
    priority: Option<u8>,
    raised: bool,
    raises: &'a AtomicU64,
}

impl<'a> ThreadPolicy<'a> {
    /// Called first on the data-plane thread, with the scheduling [`resolve`] returned.
    /// `raises` counts the times the thread went to SCHED_FIFO on a backlog (the status's
    /// `frames.backlog_raises`).
    pub fn enter(s: Scheduling, raises: &'a AtomicU64) -> ThreadPolicy<'a> {
        let priority = match s {
            Scheduling::Adaptive(p) => Some(p),
            Scheduling::Realtime(p) => {
                if let Err(e) = sys::set_current_thread_realtime(Some(p)) {
                    eprintln!("ivnsec: warning: data-plane thread not under SCHED_FIFO: {e}");
                }
                None
            }
            Scheduling::Normal => None,
        };
        ThreadPolicy {
            priority,
            raised: false,
            raises,
        }
    }

    /// After a read of `frames` frames: a backlog raises the thread to SCHED_FIFO.
    #[inline]
    pub fn after_read(&mut self, frames: usize) {
        if frames < BACKLOG || self.raised {
            return;
        }
        if let Some(p) = self.priority {
            if sys::set_current_thread_realtime(Some(p)).is_ok() {
                self.raised = true;
                self.raises.fetch_add(1, Ordering::Relaxed);
            } else {
                // Refused although the start-up check passed (a capability dropped since):
                // stay normal rather than ask again for every batch.
                self.priority = None;
            }
        }
    }

    /// Before the thread waits for frames: back to the normal policy.
    #[inline]
    pub fn before_sleep(&mut self) {
        if self.raised {
            self.raised = false;
            let _ = sys::set_current_thread_realtime(None);
        }
    }

    /// Whether the thread runs under SCHED_FIFO now.
    pub fn is_raised(&self) -> bool {
        self.raised
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> i32 {
        // SAFETY: pid 0 is the calling thread; sched_getscheduler takes no pointers.
        unsafe { libc::sched_getscheduler(0) }
    }

    /// A backlog raises the thread once (further full reads cost nothing), sleeping drops it
    /// back; small reads never raise it; the other modes never touch the policy.
    #[test]
    fn adaptive_raises_on_backlog_and_drops_before_sleep() {
        std::thread::spawn(|| {
            let raises = AtomicU64::new(0);
            let mut n = ThreadPolicy::enter(Scheduling::Normal, &raises);
            n.after_read(MAX_BATCH);
            assert!(!n.is_raised());
            let mut a = ThreadPolicy::enter(Scheduling::Adaptive(5), &raises);
            a.after_read(BACKLOG - 1);
            assert!(!a.is_raised());
            assert_eq!(policy(), libc::SCHED_OTHER);
            a.after_read(MAX_BATCH);
            if a.is_raised() {
                // Permitted (root): raised once, counted once.
                assert_eq!(policy(), libc::SCHED_FIFO);
                a.after_read(MAX_BATCH);
                assert_eq!(raises.load(Ordering::Relaxed), 1);
                a.before_sleep();
                assert!(!a.is_raised());
                assert_eq!(policy(), libc::SCHED_OTHER);
                a.after_read(BACKLOG);
                assert_eq!(raises.load(Ordering::Relaxed), 2);
                a.before_sleep();
            } else {
                // Not permitted: stays normal, counts nothing.
                assert_eq!(raises.load(Ordering::Relaxed), 0);
            }
            assert_eq!(policy(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn status_names_mode_and_priority() {
        assert_eq!(
            Scheduling::Adaptive(10).json(),
            json!({"mode": "adaptive", "priority": 10})
        );
        assert_eq!(
            Scheduling::Normal.json(),
            json!({"mode": "normal", "priority": null})
        );
        assert_eq!(Scheduling::Realtime(3).fixed_realtime(), Some(3));
        assert_eq!(Scheduling::Adaptive(3).fixed_realtime(), None);
    }
}
