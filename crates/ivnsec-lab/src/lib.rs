//! The experiments of ivnsec, one folder each (its data model, node role, orchestration, plan
//! tables and report section, behind the traits of [`experiment`], listed once in
//! [`experiments`]), the plans that run them, the sites they run on (testbeds, loopback, hosts
//! over SSH), the node processes they start, statistics and the report page. What runs in the
//! vehicle (the data planes, keys, the key server) is the node crate's; the lab starts and
//! measures it. Reports import experiment data, never the reverse.
#![forbid(unsafe_code)]

pub mod attack;
pub mod bench;
pub mod camera;
pub mod clock;
pub mod clock_watch;
pub mod cpu;
pub mod experiment;
pub mod experiments;
pub mod fragment;
pub mod gateway_pingpong;
pub mod hosts;
pub mod interrupt;
pub mod outage;
pub mod pingpong;
pub mod plan;
pub mod process;
pub mod radius;
pub mod report;
pub mod seed004;
pub mod site;
pub mod sockperf;
pub mod stats;
pub mod table;
pub mod tdma;
pub mod throughput;
pub mod tlsbench;
pub mod tunnel;
pub mod underload;
