//! `ivnsec attack --hosts PLAN`: the three nodes of the attack on hosts reached over SSH
//! ([`crate::hosts`]) instead of the ECU namespaces of a testbed. The legitimate sender runs on
//! the plan's first `[[host]]`, the receiver on its second, the attacker on a third (or the one
//! named by `--attacker`), else on the sender's host: a compromised ECU on the same link.
//!
//! What changes against a testbed: ivnsec sets no switch (the bench's switch forwards as its
//! owner configured it), so the flood with a static address table or a hub set by the run is
//! reported as not run, and the replays use what the attacker can capture on its interface (a
//! socket of every EtherType in promiscuous mode: its own host's egress when it shares the
//! sender's host, or what the bench's switch lets reach its port). Every node reads its own
//! socket drops on its own host.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use ivnsec_core::profile::Profile;

use crate::hosts::Remote;
use ivnsec_node::error::{env_error, usage};

/// Where the three nodes of an attack across hosts run.
#[derive(Clone, Debug)]
pub struct AttackHosts {
    pub sender: Arc<Remote>,
    pub receiver: Arc<Remote>,
    pub attacker: Arc<Remote>,
    /// The attacker runs on the sender's host (a compromised ECU on the same link).
    pub colocated: bool,
}

/// The roles of an attack across hosts, as the plan names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub sender: usize,
    pub receiver: usize,
    pub attacker: usize,
}

/// Which `[[host]]` runs which node: the sender on the first, the receiver on the second, the
/// attacker on the host `attacker` names, else on the third, else on the sender's. A usage
/// error for fewer than two hosts, an unknown name, or the attacker on the receiver's host
/// (its frames would leave that host's interface and never reach the receiver).
pub fn place(names: &[&str], attacker: Option<&str>, plan: &Path) -> Result<Placement> {
    if names.len() < 2 {
        return Err(usage(format!(
            "plan {}: {} [[host]] table(s); an attack across hosts needs two or three (the \
             legitimate sender on the first, the receiver on the second, the attacker on a \
             third or on the sender's host)",
            plan.display(),
            names.len()
        )));
    }
    let attacker = match attacker {
        Some(a) => names.iter().position(|n| *n == a).ok_or_else(|| {
            usage(format!(
                "--attacker {a}: plan {} has no [[host]] named `{a}` (it has {})",
                plan.display(),
                names.join(", ")
            ))
        })?,
        None if names.len() >= 3 => 2,
        None => 0,
    };
    if attacker == 1 {
        return Err(usage(format!(
            "--attacker {}: that host runs the receiver; an attacker there sends its frames out \
             of the receiver's interface, where they never reach the receiver. Name another \
             host, or the sender's ({}) for a compromised ECU beside it",
            names[1], names[0]
        )));
    }
    Ok(Placement {
        sender: 0,
        receiver: 1,
        attacker,
    })
}

/// Opens the hosts of `plan` for an attack: probes each over SSH, finds or copies ivnsec there
/// (same version), reads their interfaces' addresses ([`crate::hosts::prepare`]).
pub fn open(plan: &Path, attacker: Option<&str>) -> Result<AttackHosts> {
    let hosts = crate::plan::hosts_of(plan)?;
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let p = place(&names, attacker, plan)?;
    let sender = Arc::new(crate::hosts::prepare(&hosts[p.sender])?);
    let receiver = Arc::new(crate::hosts::prepare(&hosts[p.receiver])?);
    let colocated = p.attacker == p.sender;
    let attacker = if colocated {
        sender.clone()
    } else {
        Arc::new(crate::hosts::prepare(&hosts[p.attacker])?)
    };
    Ok(AttackHosts {
        sender,
        receiver,
        attacker,
        colocated,
    })
}

impl AttackHosts {
    /// The attacker's source address: its host's MAC, or beside the sender a locally
    /// administered address of its own (a compromised ECU spoofs one; the sender's own would
    /// make its "foreign" frames the sender's).
    pub(crate) fn attacker_mac(&self) -> [u8; 6] {
        let mut m = self.attacker.mac;
        if self.colocated {
            m[0] = (m[0] | 0x02) & !0x01;
            m[5] ^= 0xa5;
        }
        m
    }

    /// Checks that the hosts have what `profile` needs: an IPv4 address on each interface for
    /// the families carried in IP (ESP, SecOC, SOME/IP); an environment error (exit 3) naming
    /// the hosts otherwise.
    pub(crate) fn check_profile(&self, name: &str, profile: Profile) -> Result<()> {
        if !(profile.is_ip() || profile.is_udp()) {
            return Ok(());
        }
        let missing: Vec<String> = [&self.sender, &self.receiver, &self.attacker]
            .iter()
            .filter(|h| h.ip.is_none())
            .map(|h| format!("{} on {}", h.spec.iface, h.spec.name))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(env_error(format!(
            "{name} needs an IPv4 address on the interface of every host of the attack; none on \
             {}: add one (ip addr add ADDRESS/PREFIX dev IFACE)",
            missing.join(", ")
        )))
    }

    /// A sentence for the report.
    pub fn describe(&self) -> String {
        let h = |r: &Remote| format!("{} ({}, {})", r.spec.name, r.spec.ssh, r.spec.iface);
        format!(
            "hosts over SSH: sender {}, receiver {}, attacker {}",
            h(&self.sender),
            h(&self.receiver),
            if self.colocated {
                format!("on the sender's host {}", self.sender.spec.name)
            } else {
                h(&self.attacker)
            }
        )
    }

    /// The host of a node role (`sender`, `receiver`, `attacker`).
    fn of(&self, role: &str) -> &Remote {
        match role {
            "receiver" => &self.receiver,
            "attacker" => &self.attacker,
            _ => &self.sender,
        }
    }

    /// An error of the nodes as an environment error (exit 3) naming the hosts of the roles in
    /// `ended` (the nodes that ended early: their node failed or their SSH connection was
    /// lost), or of every role when none is known. Usage and environment errors pass.
    pub(crate) fn node_error(&self, e: anyhow::Error, ended: &[&str]) -> anyhow::Error {
        if e.chain().any(|x| {
            x.is::<ivnsec_node::error::EnvError>() || x.is::<ivnsec_node::error::UsageError>()
        }) {
            return e;
        }
        let roles: Vec<&str> = if ended.is_empty() {
            vec!["sender", "receiver", "attacker"]
        } else {
            ended.to_vec()
        };
        let mut named: Vec<String> = Vec::new();
        for role in roles {
            let label = format!("{} ({role})", self.of(role).spec.label());
            if !named.contains(&label) {
                named.push(label);
            }
        }
        env_error(format!(
            "{}: a node failed or its SSH connection was lost: {e:#}",
            named.join(" or ")
        ))
    }
}

/// Why the flood does not run across hosts with a switch mode the run would set.
pub(crate) fn flood_not_run(mode: &str) -> String {
    format!(
        "not run: the flood with --flood-switch {mode} sets the testbed's software switch \
         ({}); ivnsec does not configure a bench's switch. Run it with --flood-switch bench to \
         flood through the bench's switch as it is configured",
        if mode == "static" {
            "a static address table, learning off"
        } else {
            "flooding every frame to every port"
        }
    )
}

/// Why a replay class did not run: the attacker captured no legitimate frame to replay.
pub(crate) fn replay_not_run(h: &AttackHosts, captured: u64, needed: u64) -> String {
    format!(
        "not run: the attacker on host {} captured {captured} legitimate frame(s) on {} \
         (promiscuous, every EtherType) where the class needs at least {needed}: the bench's \
         switch does not forward the sender's frames to its port. Mirror the sender's port to \
         it (a SPAN port), put it behind a hub or a tap, or run it on the sender's host \
         (--attacker {})",
        h.attacker.spec.name, h.attacker.spec.iface, h.sender.spec.name
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sender on the first host, the receiver on the second, the attacker on the third, the
    /// named one, or the sender's; never the receiver's; too few hosts or an unknown name is a
    /// usage error.
    #[test]
    fn placement() {
        let plan = Path::new("bench.toml");
        let p = |names: &[&str], a| place(names, a, plan).map(|p| p.attacker);
        assert_eq!(p(&["a", "b"], None).unwrap(), 0);
        assert_eq!(p(&["a", "b", "c"], None).unwrap(), 2);
        assert_eq!(p(&["a", "b", "c"], Some("a")).unwrap(), 0);
        assert_eq!(p(&["a", "b", "c", "d"], Some("d")).unwrap(), 3);
        let err = |names: &[&str], a| format!("{:#}", place(names, a, plan).unwrap_err());
        assert!(err(&["a", "b"], Some("b")).contains("runs the receiver"));
        assert!(err(&["a", "b"], Some("x")).contains("no [[host]] named `x`"));
        assert!(err(&["a"], None).contains("needs two or three"));
    }
}
