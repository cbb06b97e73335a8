//! Root tests on testbeds of several ECUs on switches: `sensors:N` (MKA between three ECUs, the
//! key server, throughput, underload, SOME/IP over TCP) and `cascade:N` (TDMA, seed 001, a plan
//! that picks its topology). Each test builds its own testbed and removes it; without root or
//! `ip netns` they skip with the reason printed. docs/testing.md has the other binaries.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod dot1x;
mod eap_attack;
mod keyserver_mka;
mod mka;
mod pingpong;
mod seed001;
mod someip_tcp;
mod tdma_run;
mod throughput;
mod underload;
