//! Protocol conformance of ivnsec's security associations, one module per protocol, every test
//! once per crypto provider that implements what it needs (`ivnsec_conformance::providers`), the
//! known answers driven from the tables in `ivnsec_conformance::vectors`.
//!
//! One test binary for all protocols (one link instead of five). The allocation test is
//! `tests/no_alloc.rs`, a binary of its own because it replaces the global allocator.
#![forbid(unsafe_code)]

mod any;
mod esp;
mod framing;
mod ivnae;
mod macsec;
mod mka;
mod secoc;
mod secy;
mod someip;
