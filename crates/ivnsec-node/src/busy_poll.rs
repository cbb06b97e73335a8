//! The latency mode of the data planes (`--busy-poll-us`): a thread whose queue ran empty
//! keeps polling it without sleeping while any frame crossed its data plane, in either
//! direction, within the spin time. A reply that follows a request, and the next frame of a
//! control stream whose period is shorter than the spin time, are then taken without a thread
//! wake-up (the scheduler's latency and the cross-CPU hop), at the price of CPUs kept busy
//! while traffic flows.
//!
//! One [`BusyPoll`] per data plane, shared by its threads: the time of the last frame is one
//! relaxed atomic store per batch, and a spinning thread reads the monotonic clock (vDSO, no
//! system call) once per poll.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ivnsec_net::sys;

/// Shared by the threads of one data plane.
#[derive(Debug, Default)]
pub struct BusyPoll {
    /// The spin time in nanoseconds; 0: off.
    spin_ns: u64,
    /// Monotonic time of the last frame that crossed, in nanoseconds.
    last: AtomicU64,
}

impl BusyPoll {
    /// `spin`: how long to keep polling after the last frame; `None`: never spin.
    pub fn new(spin: Option<Duration>) -> BusyPoll {
        BusyPoll {
            spin_ns: spin.map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            last: AtomicU64::new(0),
        }
    }

    /// Whether busy polling is on.
    pub fn enabled(&self) -> bool {
        self.spin_ns > 0
    }

    /// The spin time in microseconds (for the status file); 0 when off.
    pub fn spin_us(&self) -> u64 {
        self.spin_ns / 1000
    }

    /// A read found frames: spinning goes on for the spin time from now.
    pub fn saw_frames(&self) {
        if self.spin_ns > 0 {
            self.last.store(sys::monotonic_ns(), Ordering::Relaxed);
        }
    }

    /// Whether a thread whose queue is empty should poll again instead of sleeping (and then
    /// it has paused the CPU briefly, as a spin loop should).
    pub fn keep_polling(&self) -> bool {
        if self.spin_ns == 0 {
            return false;
        }
        let since = sys::monotonic_ns().saturating_sub(self.last.load(Ordering::Relaxed));
        if since < self.spin_ns {
            // Other runnable threads of this CPU go first (the kernel's yield): on a host with
            // fewer CPUs than spinning threads the spin never starves the programs whose
            // frames it waits for; on an idle CPU it returns at once.
            std::thread::yield_now();
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_never_spins_and_on_spins_only_within_the_spin_time() {
        let off = BusyPoll::new(None);
        off.saw_frames();
        assert!(!off.enabled());
        assert!(!off.keep_polling());

        let on = BusyPoll::new(Some(Duration::from_millis(200)));
        assert!(on.enabled());
        assert_eq!(on.spin_us(), 200_000);
        // Nothing crossed yet (the clock started long before 0 + 200 ms on any booted host).
        assert!(!on.keep_polling());
        on.saw_frames();
        assert!(on.keep_polling());

        let short = BusyPoll::new(Some(Duration::from_micros(1)));
        short.saw_frames();
        std::thread::sleep(Duration::from_millis(2));
        assert!(!short.keep_polling(), "the spin time has passed");
    }
}
