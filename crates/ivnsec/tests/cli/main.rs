//! The tests that need no root and build no network namespace: `ivnsec` run as a user runs
//! it, on files, stdin and loopback. One module per command or topic.
//!
//! Run alone: `cargo nextest run -p ivnsec --test cli` (docs/testing.md).

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod attack;
mod bench_scripts;
mod camera;
mod chunk_bench;
mod clock;
mod crypto_bench;
mod docs_links;
mod esp_tunnel;
mod examples;
mod exit_codes;
mod frame;
mod gateway;
mod gateway_attack;
mod gateway_experiments;
mod json_output;
mod keyserver;
mod macsec_tap;
mod metrics;
mod mka;
mod multihost;
mod node_keys;
mod nonce;
mod packaging;
mod pcap;
mod pingpong;
mod pki;
mod processes;
mod production;
mod protocols;
mod receive;
mod report;
mod seed001;
mod seed004;
mod someip;
mod someip_tcp;
mod tdma;
mod tdma_run;
mod testbed;
mod throughput;
mod tls_bench;
mod underload;
mod wireshark;
