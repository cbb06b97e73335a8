//! The settings of a throughput run, checked as the command line and plans give them.

use anyhow::Result;
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::error::usage;

use super::parse_rate;

/// Most senders one run starts.
pub const MAX_SENDERS: usize = 16;
/// The consumer's receive coalescing by default, µs (`--rx-coalesce-us`).
pub const DEFAULT_RX_COALESCE_US: u32 = 50;
/// The largest `--rx-coalesce-us`.
pub const MAX_RX_COALESCE_US: u32 = 10_000;

/// The settings of one run, checked.
#[derive(Clone, Debug)]
pub struct Config {
    pub payload: usize,
    pub seconds_ns: u64,
    pub rate_bps: Option<u64>,
    pub senders: usize,
    pub batch: usize,
    pub provider: ProviderChoice,
    /// SOME/IP over TCP (one connection per sender) instead of datagrams; `check_config` leaves
    /// it off, callers set it.
    pub tcp: bool,
    /// After a receive that did not fill its batch, the datagram consumer waits this long
    /// before the next (µs; 0 = never), as a NIC's interrupt moderation (`ethtool -C rx-usecs`)
    /// holds its interrupt. `check_config` sets the default; callers check theirs with
    /// [`check_rx_coalesce`].
    pub rx_coalesce_us: u32,
}

/// Checks `--rx-coalesce-us` (plans: `rx_coalesce_us`).
pub fn check_rx_coalesce(us: u32) -> Result<u32> {
    if us > MAX_RX_COALESCE_US {
        return Err(usage(format!(
            "--rx-coalesce-us must be from 0 to {MAX_RX_COALESCE_US}, got {us}"
        )));
    }
    Ok(us)
}

/// Checks the settings shared by the command line and plans; errors are usage errors naming the
/// option as the command line spells it.
pub fn check_config(
    payload: usize,
    seconds: f64,
    rate: &str,
    senders: usize,
    batch: usize,
    provider: ProviderChoice,
) -> Result<Config> {
    if senders == 0 || senders > MAX_SENDERS {
        return Err(usage(format!(
            "--senders must be from 1 to {MAX_SENDERS}, got {senders}"
        )));
    }
    if !(1..=ivnsec_net::sys::MAX_BATCH).contains(&batch) {
        return Err(usage(format!(
            "--batch must be from 1 to {}, got {batch}",
            ivnsec_net::sys::MAX_BATCH,
        )));
    }
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 3600.0 {
        return Err(usage(format!(
            "--seconds must be above 0 and at most 3600, got {seconds}"
        )));
    }
    let rate_bps = parse_rate(rate).map_err(usage)?;
    if payload == 0 {
        return Err(usage("--payload must be at least 1 byte"));
    }
    Ok(Config {
        payload,
        seconds_ns: (seconds * 1e9).round() as u64,
        rate_bps,
        senders,
        batch,
        provider,
        tcp: false,
        rx_coalesce_us: DEFAULT_RX_COALESCE_US,
    })
}
