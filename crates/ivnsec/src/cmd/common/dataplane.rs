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
    /// the threads sleep as soon as their queues are empty. `macsec up` and `gateway` (MACsec
    /// profiles) without `--pipeline on` then move both directions on one thread, which polls
    /// both sides in turn: one CPU spins per SecY, not two.
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

/// Most microseconds `--cpu-latency-us` takes.
pub const MAX_CPU_LATENCY_US: u32 = 10_000;

/// `--cpu-latency-us`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CpuLatencyArgs {
    /// While the data plane runs, asks the kernel to keep every CPU's wake-up latency at or
    /// below US microseconds (0 … 10000; PM QoS, /dev/cpu_dma_latency, as tuned's latency
    /// profiles and cyclictest do): idle CPUs then stay out of the deep idle states (with 0
    /// they poll), so a data-plane thread woken on an idle CPU starts at once. It costs power
    /// (idle CPUs stay shallow or busy), not a spinning thread as `--busy-poll-us` does, and it
    /// is machine-wide while held. The kernel drops the request when the process ends, also on
    /// kill -9. Needs root. Off by default; when on, stderr says so at the start and the
    /// status file's `cpu_latency_us` says what is held (null: nothing).
    /// Example: `sudo ivnsec macsec up --iface eth0 --tap ms0 … --cpu-latency-us 0`
    #[arg(long, value_name = "US",
          value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_CPU_LATENCY_US)))]
    pub cpu_latency_us: Option<u32>,
}

/// `--pipeline`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PipelineArgs {
    /// How each direction of the data plane uses threads (`macsec up`, `gateway`, and `esp up`
    /// on its offload path). `on`: two per direction, in a pipeline (outgoing: reading,
    /// cutting super-frames and protecting on one, sending on the other; incoming: receiving
    /// on one, writing to the host side on the other, with the verifying on the first for
    /// `macsec up` and `gateway` and on the second for `esp up`), batch by batch in order,
    /// so one stream can use about twice the CPU; a batch of
    /// a few frames with nothing queued in the second stage is finished by the first, so a
    /// control frame pays no second thread wake-up. `off`: one thread per direction (the
    /// least CPU per frame when CPUs are few). `auto` (default): on with 4 CPUs or more.
    /// Example: `sudo ivnsec macsec up --iface eth0 --tap ms0 … --pipeline on`
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub pipeline: PipelineMode,
}

/// `--pipeline`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PipelineMode {
    #[default]
    Auto,
    On,
    Off,
}

impl PipelineArgs {
    /// `None` for `auto`.
    pub fn choice(&self) -> Option<bool> {
        match self.pipeline {
            PipelineMode::Auto => None,
            PipelineMode::On => Some(true),
            PipelineMode::Off => Some(false),
        }
    }
}

/// `--rx-ring`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RxRingArgs {
    /// How the frames of the protected interface (and of a gateway's plain port) are taken.
    /// `on` (default):
    /// from a receive ring that the kernel fills in memory shared with ivnsec (`PACKET_MMAP`,
    /// TPACKET_V2, as large as the socket buffer): no system call per batch and one copy less
    /// per frame; a busy-polling thread (`--busy-poll-us`) then polls memory, not the kernel.
    /// `off`: from the socket's queue with one `recvmmsg` per batch (the path before rings;
    /// for side-by-side measurements). A kernel that refuses the ring gets `off`, said on
    /// stderr; the status file's `rx_ring` (and a gateway's `plain_rx_ring`) says which runs
    /// (its size, or null).
    /// Example: `sudo ivnsec macsec up --iface eth0 --tap ms0 … --rx-ring off`
    #[arg(long, value_enum, value_name = "MODE", default_value = "on")]
    pub rx_ring: OnOff,
}

/// `on` or `off`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    #[default]
    On,
    Off,
}

impl RxRingArgs {
    /// Whether the ring is asked for.
    pub fn on(&self) -> bool {
        self.rx_ring == OnOff::On
    }
}

/// `--crypto-workers`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct CryptoWorkersArgs {
    /// How many threads seal and open the frames of a batch (`macsec up`, `gateway` with
    /// MACsec profiles, `esp up` on its offload path), besides the data-plane threads: `0`
    /// (none: each data-plane thread does its own crypto), a number up to 64, or `auto`
    /// (default: none: on the machines measured, 2 and 16 CPUs, handing a batch to workers cost
    /// more in thread wake-ups than its crypto; docs/benchmarks.md). Everything that
    /// decides stays on the data-plane thread, in order: each frame's PN (sequence number) is
    /// reserved and taken in order and the frames leave in that order; each received frame is
    /// replay-checked in order, opened by any worker, and judged again against the one replay
    /// window in order before it is delivered (a frame that comes twice in a batch is
    /// delivered once). A batch of fewer than 8 frames is done on its data-plane thread. The
    /// status file's `crypto_workers` says how many run.
    /// Example: `sudo ivnsec macsec up --iface eth0 --tap ms0 … --crypto-workers 4`
    #[arg(long, value_name = "N|auto", default_value = "auto", value_parser = parse_workers)]
    pub crypto_workers: WorkerCount,
}

/// `--crypto-workers`: a number, or `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkerCount {
    #[default]
    Auto,
    Count(usize),
}

fn parse_workers(s: &str) -> Result<WorkerCount, String> {
    let max = ivnsec_node::workers::MAX_WORKERS;
    if s == "auto" {
        return Ok(WorkerCount::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if n <= max => Ok(WorkerCount::Count(n)),
        _ => Err(format!("expected a number from 0 to {max}, or auto")),
    }
}

impl CryptoWorkersArgs {
    /// `None` for `auto`.
    pub fn count(&self) -> Option<usize> {
        match self.crypto_workers {
            WorkerCount::Auto => None,
            WorkerCount::Count(n) => Some(n),
        }
    }
}
