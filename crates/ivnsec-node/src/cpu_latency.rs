//! A CPU wake-up latency request for a data plane's lifetime (`--cpu-latency-us`): the kernel's
//! PM QoS interface (`/dev/cpu_dma_latency`, Documentation/power/pm_qos_interface.rst), the
//! machinery `tuned`'s latency profiles and `cyclictest` use. While the request is held, the
//! cpuidle governor puts no CPU into an idle state whose exit latency exceeds it (0: idle CPUs
//! poll), so a data-plane thread woken on an idle CPU runs without waiting for that CPU to leave
//! a deep idle state (on a virtual machine: a halted vCPU that the host must resume). The
//! kernel drops the request when the file is closed: when the holder is dropped and when the
//! process ends, however it ends (kill -9 included), so no setting outlives the data plane.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};

/// The kernel's CPU latency request device.
pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// A held request: the latency in force is at most [`us`](Self::us) until this is dropped.
#[derive(Debug)]
pub struct CpuLatency {
    _file: File,
    us: u32,
}

impl CpuLatency {
    /// Asks that no CPU take longer than `us` microseconds to wake (0: poll when idle). Needs
    /// root (the device is 0600).
    pub fn request(us: u32) -> io::Result<CpuLatency> {
        let value = i32::try_from(us)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "latency out of range"))?;
        let mut file = OpenOptions::new().write(true).open(DEVICE)?;
        // The device takes a binary s32 (or a hexadecimal string); a write of 4 bytes is taken
        // whole or refused.
        file.write_all(&value.to_ne_bytes())?;
        Ok(CpuLatency { _file: file, us })
    }

    /// The latency asked for, in microseconds.
    pub fn us(&self) -> u32 {
        self.us
    }
}

/// The latency in force now, in microseconds: the smallest of every request held on the
/// machine (the kernel's default when none, 2,000,000,000).
pub fn in_force() -> io::Result<i32> {
    let mut b = [0u8; 4];
    File::open(DEVICE)?.read_exact(&mut b)?;
    Ok(i32::from_ne_bytes(b))
}

/// Holds the request of `--cpu-latency-us US` for a data plane's run (until the returned value
/// is dropped), saying so on stderr; `None` when none was asked. An error names the option and
/// the device.
pub fn hold(us: Option<u32>) -> anyhow::Result<Option<CpuLatency>> {
    let Some(us) = us else {
        return Ok(None);
    };
    let held = CpuLatency::request(us)
        .map_err(|e| anyhow::anyhow!("--cpu-latency-us {us}: {DEVICE}: {e}"))?;
    eprintln!("ivnsec: CPU wake-up latency held at {us} µs or less while running ({DEVICE})");
    Ok(Some(held))
}
