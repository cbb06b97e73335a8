//! The testbed's switches during an attack run: a hub, a fixed address table or the bench's own
//! switch ([`SwitchMode`]), set back to ordinary learning switches when the run ends.

use std::collections::HashSet;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::{self, TestbedState};
use ivnsec_net::topology;

use crate::site::net_err;

/// How the testbed's switches forward frames during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchMode {
    /// Every frame to every port (bridge ageing time 0: no address is learned): a tapped
    /// link, as the attacker of seed 002 has; learning nothing also keeps the attacker's
    /// spoofed source addresses from pulling the legitimate sender's traffic to its port.
    Hub,
    /// A fixed address table: each ECU's MAC on the port toward it, learning off on every
    /// port, as an in-vehicle switch configured at design time forwards. A frame reaches only
    /// the port of the address it is sent to, and a spoofed source address moves nothing.
    Static,
    /// Across hosts: the bench's own switch, as its owner configured it (ivnsec sets nothing).
    Bench,
}

impl SwitchMode {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            SwitchMode::Hub => "hub",
            SwitchMode::Static => "static",
            SwitchMode::Bench => "bench",
        }
    }
}

/// One entry of the static address table: on switch namespace `ns`, `mac` is behind `port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FdbEntry {
    pub(super) ns: String,
    pub(super) port: String,
    pub(super) mac: String,
}

/// The static address table of a testbed: for every switch and every ECU, the switch port
/// toward the ECU (the first port whose side of the network holds it). On a testbed whose
/// links form loops (`production`: switches under STP) only the spanning tree counts: a link
/// is followed only when neither of its ends is in `blocked` (bridge ports, `node/port`, that
/// are not forwarding), so each ECU's MAC sits on the one port the tree carries its frames on.
pub(super) fn static_table(state: &TestbedState, blocked: &HashSet<String>) -> Vec<FdbEntry> {
    let node_of = |peer: &str| peer.split('/').next().unwrap_or_default().to_string();
    let carries = |node: &str, port: &str, peer: &str| {
        !blocked.contains(&format!("{node}/{port}")) && !blocked.contains(peer)
    };
    let mut out = Vec::new();
    for sw in state.nodes.iter().filter(|n| n.kind == "switch") {
        let mut seen: HashSet<String> = HashSet::from([sw.name.clone()]);
        for port in &sw.interfaces {
            let Some(peer) = &port.peer else { continue };
            if !carries(&sw.name, &port.name, peer) {
                continue;
            }
            let mut queue = std::collections::VecDeque::from([node_of(peer)]);
            while let Some(name) = queue.pop_front() {
                if !seen.insert(name.clone()) {
                    continue;
                }
                let Some(node) = state.node(&name) else {
                    continue;
                };
                for i in &node.interfaces {
                    if node.kind == "ecu" && i.name == topology::ECU_IF {
                        out.push(FdbEntry {
                            ns: sw.namespace.clone(),
                            port: port.name.clone(),
                            mac: i.mac.clone(),
                        });
                    }
                    if let Some(p) = &i.peer {
                        if carries(&node.name, &i.name, p) {
                            queue.push_back(node_of(p));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The bridge ports of a testbed that do not forward (`node/port`): on a testbed with STP the
/// redundant links' blocked ends; none on the others (their bridges forward on every port).
fn blocked_ports(state: &TestbedState) -> Result<HashSet<String>> {
    let view = testbed::converged(state).map_err(net_err)?;
    if !view.is_settled() {
        bail!(
            "the spanning tree of testbed {} has not settled ({}); the switches' address \
             table follows the tree, so the attack waits for it: try again in a few seconds",
            state.prefix,
            view.why_not()
        );
    }
    Ok(view
        .ports
        .into_iter()
        .filter(|(_, s)| s != "forwarding")
        .map(|(p, _)| p)
        .collect())
}

/// The switches of a testbed in the mode of the run; set back to an ordinary learning switch
/// with the default ageing time when dropped.
pub(crate) struct Switches {
    pub(crate) switches: Vec<String>,
    /// Every switch port (namespace, port): learning is off on each while the run lasts.
    ports: Vec<(String, String)>,
    table: Vec<FdbEntry>,
    mode: SwitchMode,
}

/// The Linux bridge default ageing time (centiseconds).
const DEFAULT_AGEING: &str = "30000";

impl Switches {
    /// Every switch of `state` in hub mode.
    pub(crate) fn hub(state: &TestbedState) -> Result<Switches> {
        let switches: Vec<String> = state
            .nodes
            .iter()
            .filter(|n| n.kind == "switch")
            .map(|n| n.namespace.clone())
            .collect();
        let ports = state
            .nodes
            .iter()
            .filter(|n| n.kind == "switch")
            .flat_map(|n| {
                n.interfaces
                    .iter()
                    .filter(|i| i.peer.is_some())
                    .map(|i| (n.namespace.clone(), i.name.clone()))
            })
            .collect();
        let s = Switches {
            switches,
            ports,
            table: static_table(state, &blocked_ports(state)?),
            mode: SwitchMode::Hub,
        };
        // Ageing time 0 and no learning on any port: nothing is learned. Both are needed under
        // STP, where a topology change sets the ageing time to 2 × the forward delay for a
        // while, so a frame the attacker sends with another ECU's source address would
        // otherwise pull that ECU's traffic to the attacker's port for seconds.
        for ns in &s.switches {
            set_ageing(ns, "0")?;
        }
        for (ns, port) in &s.ports {
            bridge(ns, &["link", "set", "dev", port, "learning", "off"])?;
        }
        Ok(s)
    }

    /// Switches to `mode` (no change when already in it).
    pub(super) fn set(&mut self, mode: SwitchMode) -> Result<()> {
        if mode == self.mode {
            return Ok(());
        }
        match mode {
            SwitchMode::Bench => bail!("the bench's switch is not set by ivnsec"),
            SwitchMode::Static => {
                self.mode = SwitchMode::Static;
                for e in &self.table {
                    bridge(
                        &e.ns,
                        &["fdb", "replace", &e.mac, "dev", &e.port, "master", "static"],
                    )?;
                }
            }
            SwitchMode::Hub => {
                self.unset_static()?;
                self.mode = SwitchMode::Hub;
            }
        }
        Ok(())
    }

    /// Removes the static table (learning stays off and the ageing time 0: a hub again).
    fn unset_static(&self) -> Result<()> {
        let mut first_err = None;
        for e in &self.table {
            if let Err(err) = bridge(
                &e.ns,
                &["fdb", "del", &e.mac, "dev", &e.port, "master", "static"],
            ) {
                first_err.get_or_insert(err);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Switches {
    fn drop(&mut self) {
        if self.mode == SwitchMode::Static {
            let _ = self.unset_static();
        }
        for (ns, port) in &self.ports {
            let _ = bridge(ns, &["link", "set", "dev", port, "learning", "on"]);
        }
        for ns in &self.switches {
            let _ = set_ageing(ns, DEFAULT_AGEING);
        }
    }
}

fn set_ageing(ns: &str, centiseconds: &str) -> Result<()> {
    set_bridge(ns, "ageing_time", centiseconds)
}

/// Sets one option of the bridge of switch namespace `ns` (`ip link set br0 type bridge`).
pub(crate) fn set_bridge(ns: &str, option: &str, value: &str) -> Result<()> {
    ip(
        ns,
        &[
            "link",
            "set",
            "dev",
            topology::BRIDGE_IF,
            "type",
            "bridge",
            option,
            value,
        ],
    )
}

pub(super) fn bridge(ns: &str, args: &[&str]) -> Result<()> {
    tool("bridge", ns, args)
}

pub(crate) fn ip(ns: &str, args: &[&str]) -> Result<()> {
    tool("ip", ns, args)
}

/// Runs `ip` or `bridge` (iproute2) with `-n ns`.
pub(super) fn tool(name: &str, ns: &str, args: &[&str]) -> Result<()> {
    let out = die_with_parent(&mut Command::new(name))
        .arg("-n")
        .arg(ns)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {name}"))?;
    if !out.status.success() {
        bail!(
            "{name} -n {ns} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
