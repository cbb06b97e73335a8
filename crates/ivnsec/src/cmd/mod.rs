//! One module per subcommand, each with a `run()`.

pub mod attack;
pub mod camera;
pub mod crypto_bench;
pub mod frame;
pub mod frame_esp;
pub mod frame_macsec;
pub mod frame_secoc;
pub mod keygen;
pub mod lab;
pub mod macsec;
pub mod node;
pub mod pcap;
pub mod pingpong;
pub mod pki;
pub mod playback;
pub mod receive;
pub mod report;
pub mod run;
pub mod send;
pub mod someip;
pub mod suites;
pub mod tdma;
pub mod testbed;
pub mod throughput;
pub mod underload;
pub mod validate;
