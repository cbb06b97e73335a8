//! One module per subcommand, each with a `run()`.

pub mod attack;
pub mod camera;
pub mod clock;
pub mod crypto_bench;
pub mod dist;
pub mod esp;
pub mod frame;
pub mod frame_esp;
pub mod frame_macsec;
pub mod frame_secoc;
pub mod gateway;
pub mod hosts;
pub mod keygen;
pub mod lab;
pub mod macsec;
pub mod node;
pub mod outage;
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
pub mod tls_bench;
pub mod underload;
pub mod validate;

/// The parser of every `--replay-window`: 0 to the largest window the replay check keeps
/// ([`ivnsec_core::sa::replay::MAX_WINDOW`]), so an error names the real range.
pub fn replay_window_parser() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(0..=i64::from(ivnsec_core::sa::replay::MAX_WINDOW))
}
