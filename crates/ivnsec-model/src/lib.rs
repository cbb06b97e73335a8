//! Model checking of ivnsec's real state machines; everything is in `tests/`:
//!
//! - `tests/mka.rs`: three MKA participants of `ivnsec_core::mka` (the real ones, not a model
//!   of them) on one CAK, over a network that drops, duplicates and reorders MKPDUs, with a
//!   logical clock, restarts with and without the nonce state, and a data plane that sends
//!   numbered frames under the transmit SA (with the node driver's used-SAK rule).
//! - `tests/replay.rs`: the replay window and the recovery of MACsec XPN PNs, ESP ESNs and
//!   SecOC freshness values, exhaustively at small widths.
//!
//! Both are explored breadth-first by `stateright`. `cargo test -p ivnsec-model` runs the small
//! bounds (CI); `scripts/model-check` the deeper ones. docs/nonce-safety.md ("Model checking")
//! says what is modelled, the properties, and the state counts.
