//! The spanning tree of a testbed as the kernel reports it: [`StpView`] and [`converged`].

use std::collections::BTreeSet;
use std::process::Command;

use serde::Serialize;

use super::{TestbedState, command_error};
use crate::{Error, Result, sys};

/// The spanning tree of a testbed as the kernel reports it (`ip -j -d link show` in every
/// node): what [`converged`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StpView {
    /// Every bridge port: `node/port` and its STP state (`forwarding`, `blocking`,
    /// `listening`, `learning`, `disabled`).
    pub ports: Vec<(String, String)>,
    /// Every port of a bridge with STP on that is not disabled: `node/port` and the root
    /// bridge id it hears of.
    pub roots: Vec<(String, String)>,
    /// Interfaces that are not up with carrier, `node/interface` (ports of links taken down
    /// on purpose among them).
    pub not_up: Vec<String>,
}

impl StpView {
    /// Whether the tree has settled: no port is listening or learning, and every port hears
    /// of the same root.
    pub fn is_settled(&self) -> bool {
        let transient = self
            .ports
            .iter()
            .any(|(_, s)| s == "listening" || s == "learning");
        let mut roots = self.roots.iter().map(|(_, r)| r);
        let one_root = match roots.next() {
            Some(r) => roots.all(|o| o == r),
            None => true,
        };
        !transient && one_root
    }

    /// [`is_settled`](Self::is_settled), and every interface is up with carrier.
    pub fn is_converged(&self) -> bool {
        self.is_settled() && self.not_up.is_empty()
    }

    /// The ports in state `state`, `node/port`.
    pub fn ports_in(&self, state: &str) -> Vec<&str> {
        self.ports
            .iter()
            .filter(|(_, s)| s == state)
            .map(|(p, _)| p.as_str())
            .collect()
    }

    /// Why the tree has not converged, for an error message.
    pub fn why_not(&self) -> String {
        let mut why = Vec::new();
        let transient: Vec<String> = self
            .ports
            .iter()
            .filter(|(_, s)| s == "listening" || s == "learning")
            .map(|(p, s)| format!("{p} {s}"))
            .collect();
        if !transient.is_empty() {
            why.push(format!("ports not settled: {}", transient.join(", ")));
        }
        let roots: BTreeSet<&str> = self.roots.iter().map(|(_, r)| r.as_str()).collect();
        if roots.len() > 1 {
            let each: Vec<String> = self.roots.iter().map(|(b, r)| format!("{b} {r}")).collect();
            why.push(format!("bridges disagree on the root: {}", each.join(", ")));
        }
        if !self.not_up.is_empty() {
            why.push(format!("not up: {}", self.not_up.join(", ")));
        }
        why.join("; ")
    }
}

/// Reads the spanning tree of testbed `state` from the kernel: every bridge's root id, every
/// bridge port's STP state, and which interfaces are not up.
pub fn converged(state: &TestbedState) -> Result<StpView> {
    let mut view = StpView::default();
    for node in &state.nodes {
        let shown = format!("ip -n {} -j -d link show", node.namespace);
        let out = sys::die_with_parent(&mut Command::new("ip"))
            .args(["-n", &node.namespace, "-j", "-d", "link", "show"])
            .output()?;
        if !out.status.success() {
            return Err(command_error(&shown, &out));
        }
        let links: Vec<serde_json::Value> =
            serde_json::from_slice(&out.stdout).map_err(|e| Error::Command {
                command: shown.clone(),
                status: None,
                stderr: format!("unreadable JSON: {e}"),
            })?;
        for i in &node.interfaces {
            let Some(l) = links
                .iter()
                .find(|l| l.get("ifname").and_then(|n| n.as_str()) == Some(i.name.as_str()))
            else {
                view.not_up.push(format!("{}/{}", node.name, i.name));
                continue;
            };
            let no_carrier = l
                .get("flags")
                .and_then(|f| f.as_array())
                .is_some_and(|f| f.iter().any(|f| f == "NO-CARRIER"));
            let up = l.get("operstate").and_then(|s| s.as_str()) == Some("UP");
            if no_carrier || !up {
                view.not_up.push(format!("{}/{}", node.name, i.name));
            }
            let info = l.get("linkinfo");
            if info
                .and_then(|x| x.get("info_slave_kind"))
                .and_then(|x| x.as_str())
                == Some("bridge")
            {
                let field = |f: &str| {
                    info.and_then(|x| x.pointer(&format!("/info_slave_data/{f}")))
                        .and_then(|x| x.as_str())
                };
                let name = format!("{}/{}", node.name, i.name);
                if let Some(st) = field("state") {
                    // The root a port hears of (its designated root; the bridge-level root
                    // id is not reliable on every kernel). A disabled port hears nothing.
                    if st != "disabled" && bridge_has_stp(&links, l) {
                        if let Some(r) = field("root_id") {
                            view.roots.push((name.clone(), r.to_string()));
                        }
                    }
                    view.ports.push((name, st.to_string()));
                }
            }
        }
    }
    Ok(view)
}

/// Whether the bridge port `port` (an `ip -j -d link show` entry of `links`) belongs to a
/// bridge with STP on.
fn bridge_has_stp(links: &[serde_json::Value], port: &serde_json::Value) -> bool {
    let Some(master) = port.get("master").and_then(|m| m.as_str()) else {
        return false;
    };
    links
        .iter()
        .find(|l| l.get("ifname").and_then(|n| n.as_str()) == Some(master))
        .and_then(|l| l.pointer("/linkinfo/info_data/stp_state"))
        .and_then(|x| x.as_u64())
        .is_some_and(|x| x != 0)
}
