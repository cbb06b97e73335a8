//! One module per subcommand, each with a `run()`.

pub mod crypto_bench;
pub mod frame;
pub mod frame_esp;
pub mod frame_macsec;
pub mod frame_secoc;
pub mod suites;
pub mod testbed;
