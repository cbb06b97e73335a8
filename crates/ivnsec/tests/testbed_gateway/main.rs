//! Root tests on the bump-in-the-wire topologies (`bump`, `bump2`): legacy ECUs behind
//! `ivnsec gateway`. Each test builds its own testbed and removes it; without root or
//! `ip netns` they skip with the reason printed.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod gateway;
mod gateway_attack;
mod gateway_experiments;
mod gateway_replay;
mod gateway_sched;
mod metrics;
