//! One module per subcommand, each with a `run()`.

pub mod crypto_bench;
pub mod frame;
pub mod frame_esp;
pub mod frame_macsec;
pub mod frame_secoc;
pub mod lab;
pub mod node;
pub mod pcap;
pub mod pingpong;
pub mod report;
pub mod run;
pub mod someip;
pub mod someip_config;
pub mod suites;
pub mod testbed;
pub mod throughput;
pub mod validate;
