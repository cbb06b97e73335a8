//! Root tests on two hosts: the `pair` testbed (the default of `testbed up` and of the commands
//! that build their own), or two namespaces of the test's own joined by a veth pair. Each test
//! builds its own and removes it; without root or `ip netns` they skip with the reason printed.
//! The root tests of these families that need no namespace (dropping to nobody, a full tmpfs)
//! are here too. docs/testing.md has the other binaries.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod attack;
mod camera;
mod clock;
mod esp_tunnel;
mod interrupt;
mod json_output;
mod macsec_tap;
mod nonce;
mod pingpong;
mod processes;
mod radius;
mod seed004;
mod testbed;
