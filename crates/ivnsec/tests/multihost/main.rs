//! Experiments across hosts reached by SSH: namespaces of a `steer-by-wire` testbed, each
//! running an sshd of its own. Root and openssh-server; skipped with the reason otherwise.
//!
//! Experiments across hosts reached by SSH (docs/multihost.md); what needs no host (option
//! errors, the plan of the docs, commands that refuse hosts) is in `cli/multihost.rs`. The "hosts" are ECU namespaces
//! of a testbed (steer-by-wire: `cu`, `front`, `rear`), `front` and `rear` each running its own
//! OpenSSH server (Debian's openssh-server) on its testbed address with a throwaway host key;
//! ivnsec runs in `cu` and reaches them with a throwaway client key, known hosts in a file of
//! the test (`UserKnownHostsFile` in the plan's ssh_options). The hosts' PATH has no ivnsec:
//! ivnsec copies itself into a directory of the test (`ivnsec_dir`) on each.
//!
//! Checked: a ping-pong and a throughput plan across the hosts give the same report shape as
//! the same plan on loopback; `hosts check` says what each host has; an unreachable host, a
//! wrong host key, a host without ivnsec (copying off) and an SSH connection dropped mid-run
//! each end the run with exit 3 and the host's name; so does Ctrl-C, whatever the nodes were
//! doing; afterwards no ivnsec of the test runs and the namespaces are gone. The test makes
//! sshd's privilege separation directory `/run/sshd` when it is missing (Debian's service
//! would make it at boot), and touches nothing else outside its temporary directory.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

#[macro_use]
mod bench;

mod attack;
mod failures;
mod plans;
