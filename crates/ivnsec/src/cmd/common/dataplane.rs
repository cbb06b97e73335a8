//! Options of the data planes that unmodified programs use (`macsec up`, `esp up`, `gateway`).

use std::time::Duration;

/// Most microseconds `--busy-poll-us` takes (10 ms: beyond it a thread would spin through
/// whole scheduler periods).
pub const MAX_BUSY_POLL_US: u32 = 10_000;

/// `--busy-poll-us`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BusyPollArgs {
    /// Latency mode for control traffic: a data-plane thread whose queue ran empty keeps
    /// polling it, without sleeping, for US microseconds (1 … 10000) before it waits for the
    /// kernel to wake it. A frame that arrives meanwhile is taken at once, so a crossing costs
    /// what the crypto costs, not a thread wake-up; the price is a CPU kept busy for US after
    /// every frame (a steady stream keeps each data-plane thread spinning). Off by default:
    /// the threads sleep as soon as their queues are empty.
    /// Example: `sudo ivnsec macsec up --iface eth0 --tap ms0 … --busy-poll-us 50`
    #[arg(long, value_name = "US",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_BUSY_POLL_US)))]
    pub busy_poll_us: Option<u32>,
}

impl BusyPollArgs {
    /// The spin time, `None` when off.
    pub fn duration(&self) -> Option<Duration> {
        self.busy_poll_us
            .map(|us| Duration::from_micros(u64::from(us)))
    }
}
