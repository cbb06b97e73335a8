//! The experiments of ivnsec, one folder each (its data model, its node role, its
//! orchestration), the sites they run on, the node processes they start, statistics and
//! reports. The lab drives the core (profiles, channels) and the net crate (links, testbed).
//! Reports import experiment data, never the reverse.
#![forbid(unsafe_code)]

pub mod attack;
pub mod bench;
pub mod camera;
pub mod channel;
pub mod clock;
pub mod clock_watch;
pub mod cpu;
pub mod error;
pub mod esp_tunnel;
pub mod fragment;
pub mod frames;
pub mod gateway;
pub mod hosts;
pub mod keys;
pub mod macsec;
pub mod outage;
pub mod pingpong;
pub mod pki;
pub mod plan;
pub mod process;
pub mod report;
pub mod site;
pub mod sockperf;
pub mod someip;
pub mod stats;
pub mod tdma;
pub mod throughput;
pub mod tlsbench;
pub mod tunnel;
pub mod underload;
