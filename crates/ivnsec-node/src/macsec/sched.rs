//! Scheduling of a gateway's two data-plane threads (`ivnsec gateway --scheduling`,
//! docs/gateway.md, "Scheduling and queues").
//!
//! - [`Scheduling::Normal`] (the default): the normal policy (SCHED_OTHER) throughout. A thread
//!   woken by a frame runs next to its waker (the kernel's wake-affine placement) and, as the
//!   waker is not preempted at once, takes the frames queued meanwhile in one batch: the least
//!   CPU per frame, which is what a gateway with CPUs of its own needs.
//! - [`Scheduling::Realtime`]: SCHED_FIFO throughout. A flooding sender on the same host never
//!   takes the gateway's CPU, but every wake-up pays a cross-CPU hop: the kernel does not pull a
//!   waking real-time thread to the waker's CPU as it does a normal one.
//! - [`Scheduling::Adaptive`]: for a gateway sharing its host's CPUs with busy programs (a
//!   testbed on a loaded machine). A thread raises itself to SCHED_FIFO once its reads
//!   have found a full batch ([`MAX_BATCH`] frames: more were queued than one read takes) on
//!   every read for the raise time (`--raise-after-us`, default [`DEFAULT_RAISE_AFTER`]):
//!   frames have been arriving faster than it runs for that long. It drops back to the normal
//!   policy once no read has found a full batch for the linger time (`--linger-ms`, default
//!   [`DEFAULT_LINGER`]; 0: at the first read that drains its queue). Under a flood it keeps
//!   the CPU, also across the short gaps of the flood, so it never waits behind a busy program
//!   to be scheduled again. A stream it keeps up with, bursts included, never raises it: a
//!   real-time thread preempts its waker at every frame and takes frames one by one, which
//!   costs far more CPU per frame (docs/benchmarks.md: 1 Gb/s shaped through `bump`). When the
//!   only other busy programs are the ends of the flood, it loses to the normal policy.
//!
//! [`ThreadPolicy`] is the per-thread state: two system calls per busy period, none per frame.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use ivnsec_net::sys::{self, MAX_BATCH};
use serde_json::{Value, json};

use crate::error::env_error;

/// A read of this many frames found a backlog: more frames were queued than one read takes.
pub const BACKLOG: usize = MAX_BATCH;

/// SCHED_FIFO priority of `--scheduling realtime|adaptive` unless `--realtime PRIO` gives one.
pub const DEFAULT_PRIORITY: u8 = 10;

/// How long a raised thread's queue stays empty before it drops back to the normal policy,
/// unless `--linger-ms` says otherwise.
pub const DEFAULT_LINGER: Duration = Duration::from_millis(10);

/// How long every read must find a backlog before the thread raises itself, unless
/// `--raise-after-us` says otherwise: longer than the bursts of a shaped sender (a 64-frame
/// burst at 1 Gb/s lasts 0.8 ms), far shorter than what the socket buffer holds (4 MiB: 30 ms
/// of 1 Gb/s).
pub const DEFAULT_RAISE_AFTER: Duration = Duration::from_millis(1);

/// How the data-plane threads are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    /// The normal policy throughout.
    Normal,
    /// SCHED_FIFO at this priority throughout.
    Realtime(u8),
    /// The normal policy until every read has found a backlog for `raise_after`, then
    /// SCHED_FIFO at `priority` until no read has found one for `linger`.
    Adaptive {
        priority: u8,
        linger: Duration,
        raise_after: Duration,
    },
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

    /// The status document's `scheduling` object: `{"mode", "priority", "linger_ms",
    /// "raise_after_us"}` (the last two null unless adaptive).
    pub fn json(self) -> Value {
        let (linger, raise) = match self {
            Scheduling::Adaptive {
                linger,
                raise_after,
                ..
            } => (
                Some(linger.as_secs_f64() * 1e3),
                Some(raise_after.as_secs_f64() * 1e6),
            ),
            _ => (None, None),
        };
        json!({
            "mode": self.mode(),
            "priority": self.priority(),
            "linger_ms": linger,
            "raise_after_us": raise,
        })
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
    raise_after: Duration,
    raised: bool,
    /// Since when every read has found a backlog (None: the last read drained the queue).
    backlog_since: Option<Instant>,
    /// When a read last found a backlog.
    last_backlog: Option<Instant>,
    raises: &'a AtomicU64,
}

impl<'a> ThreadPolicy<'a> {
    /// Called first on the data-plane thread, with the scheduling [`resolve`] returned.
    /// `raises` counts the times the thread went to SCHED_FIFO on a backlog (the status's
    /// `frames.backlog_raises`).
    pub fn enter(s: Scheduling, raises: &'a AtomicU64) -> ThreadPolicy<'a> {
        let (priority, linger, raise_after) = match s {
            Scheduling::Adaptive {
                priority,
                linger,
                raise_after,
            } => (Some(priority), linger, raise_after),
            Scheduling::Realtime(p) => {
                if let Err(e) = sys::set_current_thread_realtime(Some(p)) {
                    eprintln!("ivnsec: warning: data-plane thread not under SCHED_FIFO: {e}");
                }
                (None, Duration::ZERO, Duration::ZERO)
            }
            Scheduling::Normal => (None, Duration::ZERO, Duration::ZERO),
        };
        ThreadPolicy {
            priority,
            linger,
            raise_after,
            raised: false,
            backlog_since: None,
            last_backlog: None,
            raises,
        }
    }

    /// After a read of `frames` frames. A full read ([`BACKLOG`]) that continues a run of
    /// full reads lasting the raise time raises the thread to SCHED_FIFO; a read that drains
    /// the queue ends the run, and drops a raised thread back once no read has found a
    /// backlog for the linger time.
    #[inline]
    pub fn after_read(&mut self, frames: usize) {
        if self.priority.is_none() {
            return;
        }
        if frames < BACKLOG {
            self.backlog_since = None;
            if self.raised {
                self.drop_if_lingered(Instant::now());
            }
            return;
        }
        let now = Instant::now();
        self.last_backlog = Some(now);
        if self.raised {
            return;
        }
        let since = *self.backlog_since.get_or_insert(now);
        if now.duration_since(since) < self.raise_after {
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

    /// Drops a raised thread back to the normal policy when no read has found a backlog for
    /// the linger time. Returns how much of the linger time is left (zero once dropped).
    fn drop_if_lingered(&mut self, now: Instant) -> Duration {
        let since = *self.last_backlog.get_or_insert(now);
        let calm = now.duration_since(since);
        if calm >= self.linger {
            self.raised = false;
            self.backlog_since = None;
            let _ = sys::set_current_thread_realtime(None);
            return Duration::ZERO;
        }
        self.linger - calm
    }

    /// Before the thread waits for frames: how long it may wait (at most `tick`). The queue
    /// is drained; a raised thread that has found no backlog for the linger time goes back to
    /// the normal policy, before that it waits at most for the rest of the linger time (still
    /// raised).
    #[inline]
    pub fn before_sleep(&mut self, tick: Duration) -> Duration {
        self.backlog_since = None;
        if !self.raised {
            return tick;
        }
        match self.drop_if_lingered(Instant::now()) {
            Duration::ZERO => tick,
            left => left.min(tick),
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

    /// The calling thread's SCHED_FIFO priority, or None under the normal policy.
    fn policy() -> Option<u8> {
        sys::current_thread_realtime()
    }

    /// A run of full reads lasting the raise time raises the thread once (further full reads
    /// cost nothing); a draining read ends the run; a raised thread drops back once no read has
    /// found a backlog for the linger time; the other modes never touch the policy.
    #[test]
    fn adaptive_raises_on_a_lasting_backlog_and_drops_after_the_linger() {
        std::thread::spawn(|| {
            let raises = AtomicU64::new(0);
            let mut n = ThreadPolicy::enter(Scheduling::Normal, &raises);
            std::thread::sleep(Duration::from_millis(2));
            n.after_read(MAX_BATCH);
            n.after_read(MAX_BATCH);
            assert!(!n.is_raised());
            let tick = Duration::from_millis(100);
            // Times far above a loaded machine's scheduling delays: a sleep meant to stay under the
            // raise time (or the linger) must not overrun it.
            let raise_after = Duration::from_millis(100);
            let mut a = ThreadPolicy::enter(
                Scheduling::Adaptive {
                    priority: 5,
                    linger: Duration::ZERO,
                    raise_after,
                },
                &raises,
            );
            // Partial reads never raise it, however long they go on.
            for _ in 0..3 {
                a.after_read(BACKLOG - 1);
                std::thread::sleep(raise_after);
            }
            assert!(!a.is_raised());
            // Full reads, but a draining read (or a wait) in between before the raise time:
            // bursts the thread keeps up with.
            a.after_read(MAX_BATCH);
            std::thread::sleep(raise_after / 2);
            a.after_read(MAX_BATCH);
            a.after_read(3);
            std::thread::sleep(raise_after / 2 + Duration::from_millis(1));
            a.after_read(MAX_BATCH);
            assert!(!a.is_raised());
            assert_eq!(a.before_sleep(tick), tick);
            std::thread::sleep(raise_after);
            a.after_read(MAX_BATCH);
            assert!(!a.is_raised());
            assert_eq!(policy(), None);
            // Every read full for the raise time: raised.
            std::thread::sleep(raise_after + Duration::from_millis(1));
            a.after_read(MAX_BATCH);
            if a.is_raised() {
                // Permitted (root): raised once, counted once.
                assert_eq!(policy(), Some(5));
                a.after_read(MAX_BATCH);
                assert_eq!(raises.load(Ordering::Relaxed), 1);
                // Linger 0: the first draining read drops it.
                a.after_read(1);
                assert!(!a.is_raised());
                assert_eq!(policy(), None);
                // With a linger time the thread stays raised while no read has found a backlog
                // for less, waiting at most the rest of it; a backlog restarts it.
                let linger = Duration::from_millis(500);
                let mut l = ThreadPolicy::enter(
                    Scheduling::Adaptive {
                        priority: 5,
                        linger,
                        raise_after: Duration::ZERO,
                    },
                    &raises,
                );
                l.after_read(MAX_BATCH);
                assert!(l.is_raised());
                assert_eq!(raises.load(Ordering::Relaxed), 2);
                assert!(l.before_sleep(tick) <= linger);
                std::thread::sleep(Duration::from_millis(100));
                l.after_read(1);
                assert!(l.is_raised());
                l.after_read(MAX_BATCH);
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
            raise_after: DEFAULT_RAISE_AFTER,
        };
        assert_eq!(
            adaptive.json(),
            json!({"mode": "adaptive", "priority": 10, "linger_ms": 10.0,
                   "raise_after_us": 1000.0})
        );
        assert_eq!(
            Scheduling::Normal.json(),
            json!({"mode": "normal", "priority": null, "linger_ms": null,
                   "raise_after_us": null})
        );
        assert_eq!(Scheduling::Realtime(3).fixed_realtime(), Some(3));
        assert_eq!(adaptive.fixed_realtime(), None);
    }
}
