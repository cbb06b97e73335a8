//! Known-answer vectors as data tables, each entry with its citation. One loop per table drives
//! them: through the API once per provider (`tests/conformance/`), and through the binary
//! (`crates/ivnsec/tests/cli/protocols.rs`).

pub mod esp;
pub mod ivnae;
pub mod macsec;
pub mod mka;
pub mod secoc;
pub mod someip;
