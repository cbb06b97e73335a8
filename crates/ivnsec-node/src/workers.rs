//! Crypto workers of a SecY's data plane (`--crypto-workers`): the sealing of a transmit batch
//! and the opening of a receive batch spread over a pool of threads, while everything that
//! decides (PNs reserved and taken, replay checks, the window, counters, the order frames
//! leave in) stays on the data-plane thread, in order:
//!
//! - transmit: each frame of a batch is prepared in order ([`SecyTx::prepare_at`]: its PN
//!   reserved on disk first, then taken), the batch sealed by the workers
//!   ([`SecyTx::seal`], any order), sent in PN order;
//! - receive: each frame checked in order ([`SecyRx::check`]: SC, SA, replay check), the batch
//!   opened by the workers ([`SecyRx::open`], any order), each frame committed in order
//!   ([`SecyRx::commit`]: the replay check again, the window moved), delivered in order. A frame
//!   that arrives twice in one batch is delivered once; every outcome and counter is the one
//!   of one-by-one verification (`frames_opened_out_of_order_by_workers_are_judged_by_one_
//!   replay_window` in the conformance tests).
//!
//! The pool is rayon's (work stealing, threads that spin briefly before they sleep), one per
//! SecY, shared by both directions. Where the data-plane threads run under SCHED_FIFO at times
//! (`--scheduling realtime|adaptive`), the workers run under SCHED_FIFO at that priority
//! throughout: they run only while a data-plane thread waits for its batch, and a raised
//! data-plane thread must not wait on a worker that a normal thread has preempted. A batch smaller than [`PARALLEL_MIN`] frames is done on the
//! data-plane thread: waking workers costs more than its crypto.
//!
//! [`SecyTx::prepare_at`]: ivnsec_core::sa::secy::SecyTx::prepare_at
//! [`SecyTx::seal`]: ivnsec_core::sa::secy::SecyTx::seal
//! [`SecyRx::check`]: ivnsec_core::sa::secy::SecyRx::check
//! [`SecyRx::open`]: ivnsec_core::sa::secy::SecyRx::open
//! [`SecyRx::commit`]: ivnsec_core::sa::secy::SecyRx::commit

use rayon::prelude::*;

/// Batches of fewer frames are done on the data-plane thread.
pub const PARALLEL_MIN: usize = 8;

/// The most workers `--crypto-workers` takes.
pub const MAX_WORKERS: usize = 64;

/// How many workers `auto` gives a SecY: none, on every machine measured. A batch handed to the pool wakes a worker and then the data-plane thread again:
/// two wake-ups across CPUs, 30–60 µs each at p50 on the VMs measured
/// (`scripts/wake-latency`), against about 14 µs for sealing a whole batch of 64 1.5-KB frames
/// on one thread with AES-NI. Measured side by side (docs/benchmarks.md, "16 cores"): on
/// 2 vCPUs workers cost a TCP stream 8 %; on 16 cores 4 workers cost one TCP stream through a
/// `macsec up` pair 9–22 % and through an ESP-in-UDP pair 37–42 %. `--crypto-workers N` stays
/// for a host whose wake-ups are cheap.
pub fn auto_count() -> usize {
    0
}

/// The crypto workers of one SecY: none, or a pool of threads.
pub struct Workers {
    pool: Option<rayon::ThreadPool>,
    count: usize,
}

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers")
            .field("count", &self.count)
            .finish()
    }
}

impl Workers {
    /// No workers: every batch is done on its data-plane thread.
    pub fn none() -> Workers {
        Workers {
            pool: None,
            count: 0,
        }
    }

    /// `count` workers (`None`: [`auto_count`]), their threads named
    /// `<name>-crypto<i>`, under SCHED_FIFO at `realtime` when given (a warning on stderr where
    /// the kernel refuses it: the worker then runs under the normal policy).
    pub fn new(count: Option<usize>, name: &str, realtime: Option<u8>) -> std::io::Result<Workers> {
        let count = count.unwrap_or_else(auto_count).min(MAX_WORKERS);
        if count == 0 {
            return Ok(Workers::none());
        }
        let name = name.to_string();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(count)
            .thread_name(move |i| format!("{name}-crypto{i}"))
            .start_handler(move |i| {
                if let Some(p) = realtime
                    && let Err(e) = ivnsec_net::sys::set_current_thread_realtime(Some(p))
                {
                    eprintln!("ivnsec: warning: crypto worker {i} not under SCHED_FIFO: {e}");
                }
            })
            .build()
            .map_err(std::io::Error::other)?;
        Ok(Workers {
            pool: Some(pool),
            count,
        })
    }

    /// How many workers there are (the status's `crypto_workers`).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Runs `f(frame, job, out)` for the frames of `buf` (frame `i` in the `i`-th `stride`
    /// octets) with `jobs[i]` and `outs[i]`, as many as `outs` has: on the workers when there
    /// are any and `busy` frames of them have work, else on this thread in order. Returns
    /// whether the workers ran it.
    pub fn each_frame<J: Sync, O: Send>(
        &self,
        buf: &mut [u8],
        stride: usize,
        jobs: &[J],
        outs: &mut [O],
        busy: usize,
        f: impl Fn(&mut [u8], &J, &mut O) + Sync + Send,
    ) -> bool {
        let n = outs.len().min(jobs.len());
        let end = (n * stride).min(buf.len());
        let buf = &mut buf[..end];
        match &self.pool {
            Some(pool) if busy >= PARALLEL_MIN => {
                pool.install(|| {
                    buf.par_chunks_mut(stride)
                        .zip(jobs.par_iter())
                        .zip(outs.par_iter_mut())
                        .for_each(|((frame, job), out)| f(frame, job, out));
                });
                true
            }
            _ => {
                for ((frame, job), out) in buf.chunks_mut(stride).zip(jobs).zip(outs.iter_mut()) {
                    f(frame, job, out);
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_gives_none() {
        assert_eq!(auto_count(), 0);
        assert_eq!(Workers::new(None, "test", None).unwrap().count(), 0);
    }

    /// Every frame gets its job and its out, on the workers and on this thread alike.
    #[test]
    fn each_frame_pairs_every_frame_with_its_job_and_out() {
        for w in [
            Workers::none(),
            Workers::new(Some(3), "test", None).unwrap(),
        ] {
            for n in [0, 1, 7, 8, 64] {
                let stride = 16;
                let mut buf = vec![0u8; 64 * stride];
                let jobs: Vec<u8> = (0..n as u8).collect();
                let mut outs = vec![0usize; n];
                let ran = w.each_frame(&mut buf, stride, &jobs, &mut outs, n, |frame, job, out| {
                    frame.fill(*job);
                    *out = usize::from(*job) * 2 + frame.len();
                });
                assert_eq!(ran, w.count() > 0 && n >= PARALLEL_MIN);
                for i in 0..n {
                    assert_eq!(outs[i], i * 2 + stride, "{} workers, {n} frames", w.count());
                    assert!(
                        buf[i * stride..(i + 1) * stride]
                            .iter()
                            .all(|&b| b == i as u8)
                    );
                }
                assert!(buf[n * stride..].iter().all(|&b| b == 0));
            }
        }
    }
}
