//! Scheduling of a gateway's two data-plane threads (`ivnsec gateway --scheduling`,
//! docs/gateway.md, "Scheduling and queues").
//!
//! - [`Scheduling::Normal`]: the normal policy (SCHED_OTHER) throughout.
//! - [`Scheduling::Realtime`]: SCHED_FIFO throughout. A flooding sender on the same host never
//!   takes the gateway's CPU, but every wake-up pays a cross-CPU hop: the kernel does not pull a
//!   waking real-time thread to the waker's CPU as it does a normal one.
//! - [`Scheduling::Adaptive`] (the default): a thread raises itself to SCHED_FIFO when a read
//!   returns a batch of at least [`BACKLOG`] frames (frames are queuing faster than it runs) and
//!   drops back to the normal policy once its queue has stayed empty for the linger time
//!   (`--linger-ms`, default [`DEFAULT_LINGER`]; 0: as soon as it is empty). Under load it keeps
//!   the CPU, also across the short gaps of a stream, so it never waits behind a busy sender to
//!   be scheduled again; an idle frame wakes a normal thread, which the kernel places next to
//!   the waker.
//!
//! [`ThreadPolicy`] is the per-thread state: two system calls per busy period, none per frame.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use ivnsec_net::sys::{self, MAX_BATCH};
use serde_json::{Value, json};

use crate::error::env_error;

/// A read of at least this many frames means a backlog: the thread raises itself.
pub const BACKLOG: usize = MAX_BATCH / 2;

/// SCHED_FIFO priority of `--scheduling realtime|adaptive` unless `--realtime PRIO` gives one.
pub const DEFAULT_PRIORITY: u8 = 10;

/// How long a raised thread's queue stays empty before it drops back to the normal policy,
/// unless `--linger-ms` says otherwise.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(10);

/// How the data-plane threads are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    /// The normal policy throughout.
    Normal,
    /// SCHED_FIFO at this priority throughout.
    Realtime(u8),
    /// The normal policy while idle, SCHED_FIFO at `priority` from a backlog until the queue
    /// has stayed empty for `linger`.
    Adaptive { priority: u8, linger: Duration },
}

impl Scheduling {
    /// `normal`, `realtime` or `adaptive`.
    pub fn mode(self) -> &'static str {
        match self {
            Scheduling::Normal => "normal",
            Scheduling::Realtime(_) => "realtime",
            Scheduling::Adaptive { .. } => "adaptive",
        }
    }

    /// The SCHED_FIFO priority the threads run under at times, if any.
    pub fn priority(self) -> Option<u8> {
        match self {
            Scheduling::Normal => None,
            Scheduling::Realtime(p) | Scheduling::Adaptive { priority: p, .. } => Some(p),
        }
    }

    /// The status document's `scheduling` object: `{"mode", "priority", "linger_ms"}`
    /// (`linger_ms` null unless adaptive).
    pub fn json(self) -> Value {
        let linger = match self {
            Scheduling::Adaptive { linger, .. } => Some(linger.as_secs_f64() * 1e3),
            _ => None,
        };
        json!({"mode": self.mode(), "priority": self.priority(), "linger_ms": linger})
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
    linger: Duration,
    raised: bool,
    /// Since when a raised thread has found its queue empty.
    idle_since: Option<Instant>,
    raises: &'a AtomicU64,
}

impl<'a> ThreadPolicy<'a> {
    /// Called first on the data-plane thread, with the scheduling [`resolve`] returned.
    /// `raises` counts the times the thread went to SCHED_FIFO on a backlog (the status's
    /// `frames.backlog_raises`).
    pub fn enter(s: Scheduling, raises: &'a AtomicU64) -> ThreadPolicy<'a> {
        let (priority, linger) = match s {
            Scheduling::Adaptive { priority, linger } => (Some(priority), linger),
            Scheduling::Realtime(p) => {
                if let Err(e) = sys::set_current_thread_realtime(Some(p)) {
                    eprintln!("ivnsec: warning: data-plane thread not under SCHED_FIFO: {e}");
                }
                (None, Duration::ZERO)
            }
            Scheduling::Normal => (None, Duration::ZERO),
        };
        ThreadPolicy {
            priority,
            linger,
            raised: false,
            idle_since: None,
            raises,
        }
    }

    /// After a read of `frames` frames: a backlog raises the thread to SCHED_FIFO; any frame
    /// restarts the linger time.
    #[inline]
    pub fn after_read(&mut self, frames: usize) {
        if frames > 0 {
            self.idle_since = None;
        }
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

    /// Before the thread waits for frames: how long it may wait (at most `tick`). A raised
    /// thread whose queue has been empty for the linger time goes back to the normal policy;
    /// before that it waits at most for the rest of the linger time (still raised).
    #[inline]
    pub fn before_sleep(&mut self, tick: Duration) -> Duration {
        if !self.raised {
            return tick;
        }
        let now = Instant::now();
        let since = *self.idle_since.get_or_insert(now);
        let idle = now.duration_since(since);
        if idle >= self.linger {
            self.raised = false;
            self.idle_since = None;
            let _ = sys::set_current_thread_realtime(None);
            return tick;
        }
        (self.linger - idle).min(tick)
    }

    /// Whether the thread runs under SCHED_FIFO now.
    pub fn is_raised(&self) -> bool {
        self.raised
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's SCHED_FIFO priority, or None under the normal policy.
    fn policy() -> Option<u8> {
        sys::current_thread_realtime()
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
            let tick = Duration::from_millis(100);
            let mut a = ThreadPolicy::enter(
                Scheduling::Adaptive {
                    priority: 5,
                    linger: Duration::ZERO,
                },
                &raises,
            );
            a.after_read(BACKLOG - 1);
            assert!(!a.is_raised());
            assert_eq!(policy(), None);
            a.after_read(MAX_BATCH);
            if a.is_raised() {
                // Permitted (root): raised once, counted once.
                assert_eq!(policy(), Some(5));
                a.after_read(MAX_BATCH);
                assert_eq!(raises.load(Ordering::Relaxed), 1);
                assert_eq!(a.before_sleep(tick), tick);
                assert!(!a.is_raised());
                assert_eq!(policy(), None);
                a.after_read(BACKLOG);
                assert_eq!(raises.load(Ordering::Relaxed), 2);
                a.before_sleep(tick);
                // With a linger time the thread stays raised while its queue has been empty
                // for less, waiting at most the rest of it; frames restart it.
                let linger = Duration::from_millis(50);
                let mut l = ThreadPolicy::enter(
                    Scheduling::Adaptive {
                        priority: 5,
                        linger,
                    },
                    &raises,
                );
                l.after_read(MAX_BATCH);
                assert!(l.before_sleep(tick) <= linger);
                std::thread::sleep(Duration::from_millis(30));
                l.after_read(1);
                assert!(l.before_sleep(tick) > Duration::from_millis(30));
                assert!(l.is_raised());
                assert_eq!(policy(), Some(5));
                std::thread::sleep(linger);
                assert_eq!(l.before_sleep(tick), tick);
                assert!(!l.is_raised());
            } else {
                // Not permitted: stays normal, counts nothing.
                assert_eq!(raises.load(Ordering::Relaxed), 0);
            }
            assert_eq!(policy(), None);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn status_names_mode_and_priority() {
        let adaptive = Scheduling::Adaptive {
            priority: 10,
            linger: DEFAULT_LINGER,
        };
        assert_eq!(
            adaptive.json(),
            json!({"mode": "adaptive", "priority": 10, "linger_ms": 10.0})
        );
        assert_eq!(
            Scheduling::Normal.json(),
            json!({"mode": "normal", "priority": null, "linger_ms": null})
        );
        assert_eq!(Scheduling::Realtime(3).fixed_realtime(), Some(3));
        assert_eq!(adaptive.fixed_realtime(), None);
    }
}
