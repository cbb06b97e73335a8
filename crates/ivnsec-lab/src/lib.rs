//! Experiments, statistics and reports. No sockets here: the lab drives the net crate.
#![forbid(unsafe_code)]

pub mod camera;
pub mod cpu;
pub mod pingpong;
pub mod report;
pub mod stats;
pub mod throughput;
pub mod underload;
