//! The command-line glue several commands share: the stop flag that SIGINT, SIGTERM and SIGHUP
//! set, the link choice `--iface IF | --udp ADDR:PORT`, and the option groups of more than one
//! command (the receivers' acceptance-mark checkpoint; the key source of `macsec up` and
//! `gateway`, [`key_source`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use ivnsec_node::keys::rxmark::{self, Checkpoint};
use ivnsec_node::traffic::On;

use crate::error::{parse_mac, usage};

pub mod dataplane;
pub mod frame;
pub mod key_source;
pub mod lab;
pub mod outage;
pub mod plan;
pub mod stream;

pub use key_source::KeySourceArgs;

/// Stops when SIGINT, SIGTERM or SIGHUP arrives.
pub fn stop_on_signal() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let sigs = ivnsec_net::sys::termination_signals().context("installing signal handlers")?;
    let s = stop.clone();
    std::thread::spawn(move || {
        if sigs.wait().is_ok() {
            s.store(true, Ordering::Relaxed);
        }
    });
    Ok(stop)
}

/// `--iface IF` or `--udp ADDR:PORT` (clap lets exactly one through).
pub fn on(iface: Option<String>, udp: Option<SocketAddr>) -> Result<On> {
    match (iface, udp) {
        (Some(i), _) => Ok(On::Iface(i)),
        (None, Some(addr)) => Ok(On::Udp(addr)),
        (None, None) => Err(usage("give --iface IF or --udp ADDR:PORT")),
    }
}

/// An optional MAC option (`--to`, `--from`, `--mac`), parsed.
pub fn mac_opt(what: &str, v: Option<&str>) -> Result<Option<[u8; 6]>> {
    v.map(|s| parse_mac(what, s)).transpose()
}

/// How far a receiver's acceptance mark moves ahead (`receive`, `macsec up`, `esp up`,
/// `gateway`): the cost bound of a restart (docs/nonce-safety.md, "Receivers after a restart").
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayCheckpointArgs {
    /// With --state-dir: the acceptance mark moves at most N numbers ahead, so a restart
    /// refuses at most N legitimate frames (1 to 1048576). E.g. `--replay-checkpoint-frames 1024`.
    #[arg(
        long,
        default_value_t = rxmark::DEFAULT_CHECKPOINT_FRAMES,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=rxmark::MAX_CHECKPOINT_FRAMES)
    )]
    pub replay_checkpoint_frames: u64,
    /// With --state-dir: the acceptance mark moves at most as far as the observed rate brings
    /// in T ms, so a restart refuses about T ms of traffic at most (1 to 60000); the mark is
    /// written about once per T ms. E.g. `--replay-checkpoint-ms 200`.
    #[arg(
        long,
        default_value_t = rxmark::DEFAULT_CHECKPOINT_MS,
        value_name = "T",
        value_parser = clap::value_parser!(u64).range(1..=rxmark::MAX_CHECKPOINT_MS)
    )]
    pub replay_checkpoint_ms: u64,
}

impl ReplayCheckpointArgs {
    /// The checked checkpoint (clap checked the ranges already).
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        Checkpoint::new(self.replay_checkpoint_frames, self.replay_checkpoint_ms).map_err(usage)
    }
}
