//! Experiments across hosts reached by SSH: namespaces of a `steer-by-wire` testbed, each
//! running an sshd of its own. Root and openssh-server; skipped with the reason otherwise.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod multihost;
