//! Two stages per direction of a data plane (`--pipeline`): the first stage (the direction's
//! own thread) fills a batch and either finishes it itself or hands it to the second stage, a
//! thread of its own that finishes the batches in the order they were handed over and hands
//! them back empty. Shared by the MACsec TAP and gateway ([`crate::macsec`]) and the ESP
//! tunnel ([`crate::esp_tunnel`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// How long a stage waits on its channel before it looks at the stop flag again.
const TICK: Duration = Duration::from_millis(100);

/// Batches that may be in the second stage of a direction at once (the first stage waits for a
/// free one beyond that: back-pressure).
const STAGE_DEPTH: usize = 4;
/// A batch of at most this many frames is finished by the first stage itself when nothing is in
/// the second one: a control frame crosses without a second thread wake-up.
const INLINE_MAX: usize = 4;

/// Whether a direction's work is split across two threads (`--pipeline`; `None`: auto, on
/// with 4 CPUs or more).
pub fn pipeline_on(asked: Option<bool>) -> bool {
    asked.unwrap_or_else(|| std::thread::available_parallelism().is_ok_and(|n| n.get() >= 4))
}

/// How the first stage of a direction hands batches to the second (a thread of its own) and
/// gets empty ones back. Without a second stage every batch is finished where it was made.
pub struct Handoff<'a, B> {
    work: Option<mpsc::SyncSender<B>>,
    free: mpsc::Receiver<B>,
    in_flight: &'a AtomicUsize,
}

impl<'a, B> Handoff<'a, B> {
    /// A handoff without a second stage: every batch is finished where it was made.
    pub fn alone(in_flight: &'a AtomicUsize) -> Handoff<'a, B> {
        let (_, free) = mpsc::channel();
        Handoff {
            work: None,
            free,
            in_flight,
        }
    }

    /// Whether a batch of `frames` is finished here: no second stage, or nothing in it (so the
    /// order of the frames is kept) and the batch is small.
    pub fn inline(&self, frames: usize) -> bool {
        self.work.is_none() || (frames <= INLINE_MAX && self.in_flight.load(Ordering::Acquire) == 0)
    }

    /// Hands `b` to the second stage and returns an empty batch; `None` once the data plane
    /// stops.
    pub fn pass(&mut self, b: B, stop: &AtomicBool) -> Option<B> {
        let work = self.work.as_ref()?;
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        work.send(b).ok()?;
        loop {
            match self.free.recv_timeout(TICK) {
                Ok(b) => return Some(b),
                Err(mpsc::RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => {}
                Err(_) => return None,
            }
        }
    }
}

/// Runs a direction: `first` on this thread with its [`Handoff`]; with `pipeline`, `second` on
/// a thread of its own, finishing the batches handed over in order (`false` from it: a failure
/// is recorded, the data plane stops; its second argument: another batch is already queued
/// behind this one). `make` makes each batch.
pub fn run_stages<B: Send>(
    stop: &AtomicBool,
    pipeline: bool,
    make: impl Fn() -> B,
    second: impl FnMut(&mut B, bool) -> bool + Send,
    first: impl FnOnce(Handoff<'_, B>, B),
) {
    let in_flight = AtomicUsize::new(0);
    let (free_tx, free_rx) = mpsc::channel();
    if !pipeline {
        return first(Handoff::alone(&in_flight), make());
    }
    for _ in 0..STAGE_DEPTH {
        let _ = free_tx.send(make());
    }
    let (work_tx, work_rx) = mpsc::sync_channel::<B>(STAGE_DEPTH);
    std::thread::scope(|s| {
        let in_flight = &in_flight;
        let mut second = second;
        // The second stage takes its first stage's name and a 2: `macsec-tx2`.
        let name = format!("{}2", std::thread::current().name().unwrap_or("stage"));
        crate::sync::spawn_named(s, &name, move || {
            loop {
                match work_rx.recv_timeout(TICK) {
                    Ok(mut b) => {
                        let queued = in_flight.load(Ordering::Acquire) > 1;
                        let ok = second(&mut b, queued);
                        in_flight.fetch_sub(1, Ordering::AcqRel);
                        if !ok || free_tx.send(b).is_err() {
                            return;
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) if !stop.load(Ordering::Relaxed) => {}
                    Err(_) => return,
                }
            }
        });
        first(
            Handoff {
                work: Some(work_tx),
                free: free_rx,
                in_flight,
            },
            make(),
        );
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::lock;
    use std::sync::Mutex;

    /// The second stage finishes the batches in the order they were handed over, and is told
    /// whether another is queued behind the one it finishes: true while one is, false for the
    /// last.
    #[test]
    fn the_second_stage_finishes_in_order_and_knows_what_is_queued() {
        let stop = AtomicBool::new(false);
        let seen = Mutex::new(Vec::new());
        let (gate_tx, gate_rx) = mpsc::channel::<()>();
        let gate_rx = Mutex::new(gate_rx);
        run_stages(
            &stop,
            true,
            || 0u32,
            |b: &mut u32, queued| {
                if *b == 1 {
                    // Held until the first stage has handed over all three.
                    let _ = lock(&gate_rx).recv_timeout(Duration::from_secs(5));
                }
                lock(&seen).push((*b, queued));
                true
            },
            |mut h, _| {
                for n in 1..=3 {
                    h.pass(n, &stop).expect("a free batch");
                }
                gate_tx.send(()).unwrap();
                // The handoff lives until the second stage has finished the three (dropping
                // it stops the second stage).
                let t0 = std::time::Instant::now();
                while lock(&seen).len() < 3 && t0.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(1));
                }
            },
        );
        let seen = lock(&seen).clone();
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(seen[1], (2, true));
        assert_eq!(seen[2], (3, false));
    }
}
