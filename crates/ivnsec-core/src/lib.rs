//! ivnsec core: protocol logic without I/O.
//!
//! - [`wire`]: zero-copy views of the frame formats.
//! - [`suite`]: cipher suites and protection levels.
//! - [`crypto`]: the provider traits; providers live in their own crates.
//! - [`mka`]: the MACsec Key Agreement participant (802.1X-2020), time passed in.
//! - [`sa`]: security associations: protect and verify into caller buffers, replay windows,
//!   sequence numbers, counters and drop reasons.
//!
//! No sockets, no clock, no threads, no randomness of its own: time and randomness are
//! parameters.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod channel;
pub mod crypto;
pub mod mka;
pub mod profile;
pub mod sa;
pub mod someip;
pub mod suite;
pub mod wire;
