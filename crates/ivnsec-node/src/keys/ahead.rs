//! Durable moves ahead of the data path, on a thread of their own (docs/nonce-safety.md,
//! "Writes ahead of the frames").
//!
//! A sender's reservation ([`HighWater`]) and a receiver's acceptance mark ([`RxMark`]) are
//! written to disk before a number above them is used: two fsyncs, about 0.6 ms on this
//! project's test machine and several ms on a loaded one. Made by the data-plane thread, such a
//! write holds every frame that arrives meanwhile, even when it is made early (while the queue
//! is empty): a lidar message that arrives during it is late.
//!
//! [`Durable`] keeps the state behind a lock that only a slow path takes, publishes what the
//! disk covers in an atomic, and moves it ahead on a worker thread once half of the last move
//! is used:
//!
//! - [`Durable::use_number`] (a claim, an accept) is a load and a compare while the number is
//!   covered. A number above the cover takes the lock and moves the mark itself, waiting for
//!   the worker's write in flight if there is one: **no number is used before the disk covers
//!   it**, as before.
//! - The worker moves the mark with the same rules as before ([`HighWater::top_up`],
//!   [`RxMark::top_up`]): the reservation a block ahead, the acceptance mark by the step the
//!   frame passing it would have taken. It never holds the data path's locks.
//! - A failed early write is kept and returned by the next [`Durable::top_up`]: the data plane
//!   stops as it did when its own early write failed. A number above the cover is still moved
//!   by the data path, which then meets the failure itself.
//! - Dropping a [`Durable`] joins its worker, so the state's lock is released when the SA
//!   goes, as before.

use crate::sync::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use ivnsec_net::sys;
use serde_json::{Value, json};

use super::highwater::{HighWater, HwError};
use super::rxmark::RxMark;

/// A durable mark that a data path uses number by number and a worker moves ahead.
pub trait Ahead: Send + 'static {
    /// Every number up to this one is covered on disk.
    fn covered(&self) -> u64;
    /// An early move is due once a number above this one was used (`u64::MAX`: none is).
    fn due_above(&self) -> u64;
    /// Covers `seq` on disk now (the slow path of [`Durable::use_number`]).
    fn cover(&mut self, seq: u64) -> Result<(), HwError>;
    /// The early move, `highest` being the highest number used so far (≤ the cover).
    fn move_early(&mut self, highest: u64) -> Result<(), HwError>;
    /// The largest number the state may ever cover (fixed when it is opened).
    fn limit(&self) -> u64;
    /// What a status shows of it.
    fn status_json(&self) -> Value;
}

impl Ahead for HighWater {
    fn covered(&self) -> u64 {
        self.reserved()
    }

    fn due_above(&self) -> u64 {
        if self.reserved() >= self.limit() {
            return u64::MAX;
        }
        self.reserved().saturating_sub((self.block() / 2).max(1))
    }

    fn cover(&mut self, seq: u64) -> Result<(), HwError> {
        self.claim(seq)
    }

    fn move_early(&mut self, highest: u64) -> Result<(), HwError> {
        self.top_up(highest.saturating_add(1)).map(drop)
    }

    fn limit(&self) -> u64 {
        HighWater::limit(self)
    }

    fn status_json(&self) -> Value {
        json!({
            "state": self.path().display().to_string(),
            "reserved": self.reserved(),
            "writes": self.writes(),
            // Numbers the next reservation takes (grown under a fast stream).
            "block": self.block(),
        })
    }
}

impl Ahead for RxMark {
    fn covered(&self) -> u64 {
        self.mark()
    }

    fn due_above(&self) -> u64 {
        self.top_up_due_above()
    }

    fn cover(&mut self, seq: u64) -> Result<(), HwError> {
        self.accept(seq, sys::monotonic_ns)
    }

    fn move_early(&mut self, highest: u64) -> Result<(), HwError> {
        // A compare (the number is covered): brings the mark's own highest up to date.
        self.accept(highest, sys::monotonic_ns)?;
        self.top_up(sys::monotonic_ns).map(drop)
    }

    fn limit(&self) -> u64 {
        RxMark::limit(self)
    }

    /// [`RxMark::json`]; the caller fills in `refused_below_mark` (the SA counts it).
    fn status_json(&self) -> Value {
        self.json(0)
    }
}

struct Inner<T> {
    state: Mutex<T>,
    /// `state.covered()`, as last published.
    covered: AtomicU64,
    /// `state.due_above()`, as last published.
    due_above: AtomicU64,
    /// The highest number used.
    highest: AtomicU64,
    /// `state.limit()`.
    limit: u64,
    /// `state.status_json()`, as last published: a status never waits for a write in flight (it
    /// would hold the data path's locks meanwhile).
    status: Mutex<Value>,
    /// The first early write that failed, until [`Durable::top_up`] returns it.
    failed: Mutex<Option<HwError>>,
}

impl<T: Ahead> Inner<T> {
    fn publish(&self, s: &T) {
        self.covered.store(s.covered(), Ordering::Release);
        self.due_above.store(s.due_above(), Ordering::Release);
        *lock(&self.status) = s.status_json();
    }

    fn due(&self) -> bool {
        self.highest.load(Ordering::Relaxed) > self.due_above.load(Ordering::Acquire)
    }

    /// The worker's job: the early move if it is (still) due.
    fn move_early(&self) {
        let mut s = lock(&self.state);
        let highest = self.highest.load(Ordering::Relaxed);
        if highest <= s.due_above() {
            return;
        }
        let before = s.covered();
        let r = s.move_early(highest);
        self.publish(&s);
        if s.covered() == before {
            // Nothing moved (a slow stream): not due again before the data path moves it.
            self.due_above.store(before, Ordering::Release);
        }
        drop(s);
        if let Err(e) = r {
            lock(&self.failed).get_or_insert(e);
        }
    }
}

/// The worker thread: one early move per wake-up, wake-ups that come while it runs merged.
struct Worker {
    wake: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the channel ends the thread after the write in flight, if any.
        self.wake.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A durable mark used by one data path and moved ahead by a worker thread (module docs).
pub struct Durable<T: Ahead> {
    inner: Arc<Inner<T>>,
    /// None where no thread could be started: the early moves are then made inline, by
    /// [`top_up`](Self::top_up).
    worker: Option<Worker>,
    /// The highest number [`note`](Self::note)d since the last [`settle`](Self::settle).
    pending: u64,
}

impl<T: Ahead> Durable<T> {
    /// Takes `state` over and starts its worker (named `name`, as `ps` shows it).
    pub fn new(state: T, name: &str) -> Durable<T> {
        let inner = Arc::new(Inner {
            covered: AtomicU64::new(state.covered()),
            due_above: AtomicU64::new(state.due_above()),
            highest: AtomicU64::new(0),
            limit: state.limit(),
            status: Mutex::new(state.status_json()),
            state: Mutex::new(state),
            failed: Mutex::new(None),
        });
        let (tx, rx) = mpsc::sync_channel::<()>(1);
        let job = Arc::clone(&inner);
        let worker = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                while rx.recv().is_ok() {
                    job.move_early();
                }
            })
            .ok()
            .map(|t| Worker {
                wake: Some(tx),
                thread: Some(t),
            });
        Durable {
            inner,
            worker,
            pending: 0,
        }
    }

    /// Must return `Ok` before `seq` is used (a unit protected with it, a frame accepted with
    /// it): a compare while the disk covers it, else a durable move made now. On an error the
    /// number must not be used.
    #[inline]
    pub fn use_number(&self, seq: u64) -> Result<(), HwError> {
        if seq != 0 && seq <= self.inner.covered.load(Ordering::Acquire) {
            self.inner.highest.fetch_max(seq, Ordering::Relaxed);
            if self.inner.due()
                && let Some(w) = &self.worker
                && let Some(tx) = &w.wake
            {
                // Full: a wake-up is already pending.
                let _ = tx.try_send(());
            }
            return Ok(());
        }
        self.cover(seq)
    }

    #[cold]
    fn cover(&self, seq: u64) -> Result<(), HwError> {
        let mut s = lock(&self.inner.state);
        let r = s.cover(seq);
        self.inner.publish(&s);
        if r.is_ok() {
            self.inner.highest.fetch_max(seq, Ordering::Relaxed);
        }
        r
    }

    /// Notes the number of a verified frame accepted with the rest of its batch: nothing of the
    /// batch may be accepted before [`settle`](Self::settle) returned `Ok`.
    #[inline]
    pub fn note(&mut self, seq: u64) {
        self.pending = self.pending.max(seq);
    }

    /// [`use_number`](Self::use_number) for the highest number noted since the last call (at
    /// most one durable move for a whole batch).
    pub fn settle(&mut self) -> Result<(), HwError> {
        match std::mem::take(&mut self.pending) {
            0 => Ok(()),
            seq => self.use_number(seq),
        }
    }

    /// Called when the data path's queue ran empty: returns the failure of an early write
    /// made since the last call (the data plane stops on it), and makes the early move inline
    /// where there is no worker.
    pub fn top_up(&self) -> Result<(), HwError> {
        if let Some(e) = lock(&self.inner.failed).take() {
            return Err(e);
        }
        if self.worker.is_none() && self.inner.due() {
            self.inner.move_early();
            if let Some(e) = lock(&self.inner.failed).take() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// What the disk covers now.
    pub fn covered(&self) -> u64 {
        self.inner.covered.load(Ordering::Acquire)
    }

    /// The largest number the state may ever cover.
    pub fn limit(&self) -> u64 {
        self.inner.limit
    }

    /// What a status shows, as of the last write: never waits for a write in flight.
    pub fn status_json(&self) -> Value {
        lock(&self.inner.status).clone()
    }

    /// One field of [`status_json`](Self::status_json) (null when absent), without copying
    /// the rest.
    pub fn status_field(&self, key: &str) -> Value {
        lock(&self.inner.status)
            .get(key)
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// Reads the state, waiting for a write in flight: not for a thread that holds a lock the
    /// data path takes (use [`status_json`](Self::status_json)).
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> R {
        f(&lock(&self.inner.state))
    }
}

#[cfg(test)]
mod tests;
