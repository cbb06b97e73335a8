//! Root tests on the `production` topology (seed 002 testbench 3: four switches under STP).
//! Each test builds its own testbed and removes it; without root or `ip netns` they skip with
//! the reason printed.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod production;
