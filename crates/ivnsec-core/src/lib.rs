//! ivnsec core: protocol logic without I/O.
//!
//! - [`wire`]: zero-copy views of the frame formats.
//! - [`suite`]: cipher suites and protection levels.
//! - [`crypto`]: the provider traits; providers live in their own crates.
//! - [`mka`]: the MACsec Key Agreement participant (802.1X-2020), time passed in.
//! - [`pae`]: the 802.1X PAE (supplicant, pass-through authenticator, EAP-TLS framing, CAK/CKN
//!   from EAP), time passed in.
//! - [`sa`]: security associations: protect and verify into caller buffers, replay windows,
//!   sequence numbers, counters and drop reasons.
//!
//! No sockets, no clock, no threads, no randomness of its own: time and randomness are
//! parameters.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_debug_implementations)]
// The no-panic lints of Cargo.toml are for the library; tests index, unwrap and panic freely.
#![cfg_attr(
    test,
    allow(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::unreachable
    )
)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod channel;
pub mod crypto;
pub mod mka;
pub mod pae;
pub mod profile;
pub mod sa;
pub mod someip;
pub mod suite;
pub mod wire;
