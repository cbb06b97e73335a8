//! Wire formats: one file per format, each a zero-copy view over a byte buffer plus a `Repr`.
//!
//! Rules every format here follows (after smoltcp's `wire`):
//! - Parsing untrusted input never panics: `new_checked` checks lengths before any getter is
//!   used, and getters on a checked view only index inside the checked length.
//! - `Repr::emit` never panics on a buffer of at least `Repr::buffer_len()` bytes.
//! - Byte ranges live in a private `field` module, named after the spec's fields.
//! - The crate denies clippy's `indexing_slicing`, `unwrap_used`, `expect_used` and `panic`
//!   (Cargo.toml): getters and setters go through the crate-private `bytes` helpers, parsers through
//!   `get(..).ok_or(error)?` and checked splits.

pub(crate) mod bytes;
pub mod eap;
pub mod eapol;
pub mod esp;
pub mod ethernet;
pub mod frag;
pub mod frame_offload;
pub mod ip;
pub mod ivnae;
pub mod macsec;
pub mod mkpdu;
pub mod radius;
pub mod secoc;
pub mod someip;
pub mod someip_sd;
pub mod someip_tp;
pub mod tcp_offload;

use core::ops::Range;

/// A byte range inside a header.
pub(crate) type Field = Range<usize>;

/// Errors from parsing a wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireError {
    /// Fewer bytes than the format needs.
    Truncated,
    /// The EtherType is not the format's.
    WrongEtherType,
    /// A version this implementation does not speak.
    BadVersion,
    /// Reserved bits set.
    ReservedBits,
    /// A length or code field that contradicts the format.
    Malformed,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "truncated",
            WireError::WrongEtherType => "wrong EtherType",
            WireError::BadVersion => "unsupported version",
            WireError::ReservedBits => "reserved bits set",
            WireError::Malformed => "malformed",
        })
    }
}

impl core::error::Error for WireError {}
