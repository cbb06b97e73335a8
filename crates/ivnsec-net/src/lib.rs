//! All I/O of ivnsec: sockets (the only place with `unsafe`, in [`sys`]), the namespace testbed,
//! timestamps. No protocol logic lives here.
//!
//! - [`sys`]: AF_PACKET raw sockets bound to an interface and an EtherType (blocking receive with
//!   a timeout, busy-poll receive, software RX timestamps), CPU pinning. The one module allowed
//!   to use `unsafe`; every block carries a `// SAFETY:` comment.
//! - [`link`]: one link of a node for any profile family (raw Ethernet, raw IPv4 for ESP, UDP),
//!   batched send and receive, timeouts and busy-poll.
//! - [`rawip`]: a raw IPv4 socket of one protocol (ESP on the testbed).
//! - [`wait`]: timed and busy-poll waiting, shared by every socket type.
//! - [`udp`]: a UDP transport (ESP/SOME-IP, and the no-root fallback over loopback).
//! - [`someip`]: the sockets of the SOME/IP bindings (UDP endpoints, SD unicast/multicast, TCP).
//! - [`topology`]: the testbed topologies (`pair`, `steer-by-wire`, `sensors:N`, `cascade:N`),
//!   their nodes, links, names, MAC and IPv4 addresses — pure data, no I/O.
//! - [`testbed`]: builds a topology as network namespaces, veth links and Linux bridges with the
//!   `ip` command, records it in a state file, and tears it down.
//! - [`tap`]: a TAP interface (frames between the host's network stack and this process),
//!   removed when dropped or when the process dies.
//! - [`pcap`]: classic pcap files (Ethernet link type): a cheap writer for recording the frames
//!   a node sends and receives, and a bounded reader for captures from anywhere.

#![deny(unsafe_code)]

mod error;
pub mod esp_outer;
pub mod link;
pub mod next_hop;
pub mod pcap;
pub mod rawip;
pub mod someip;
#[allow(unsafe_code)]
pub mod sys;
pub mod tap;
pub mod testbed;
pub mod topology;
pub mod udp;
pub mod wait;

pub use error::{Error, Result};
