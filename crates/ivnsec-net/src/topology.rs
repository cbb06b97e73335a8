//! Testbed topologies as pure data: which nodes exist, how they are linked, what every interface
//! is called and which MAC and IPv4 address it has. No I/O here; [`crate::testbed`] builds it.
//!
//! Naming (all deterministic except the per-run prefix):
//! - prefix `ivn-<6 hex>` (random per run); namespace of node `N` = `<prefix>-N`.
//! - an ECU has one interface, `eth0`; a switch has a bridge `br0` and one port per link,
//!   named `to-<peer node>` (`to-ecu1`, `to-sw1`, …). Interface names live inside the node's own
//!   namespace, so they need no prefix, and all fit IFNAMSIZ (15 bytes + NUL).
//! - ECU addresses: host `(group, host)` → MAC `02:49:56:00:group:host` (locally administered,
//!   unicast; 0x49 0x56 = "IV"), IPv4 `10.77.group.host/16`.
//! - switch `k`: bridge MAC `02:49:56:01:k:00`, port `p` (1-based) MAC `02:49:56:01:k:p`.
//! - gateway `k` (`gwk`, bump-in-the-wire topologies): plain port `plain0` (to its legacy ECU,
//!   MAC `02:49:56:02:k:01`, MTU 1500) and protected port `prot0` (to the switch, MAC
//!   `02:49:56:02:k:02`); every link of the protected network has MTU [`PROTECTED_MTU`], so the
//!   legacy ECUs keep 1500 (docs/gateway.md). No addresses on a gateway.

use std::fmt;
use std::str::FromStr;

use crate::{Error, Result};

/// Largest `N` in `sensors:N` (sensors use host numbers 1..=N in group 1).
pub const MAX_SENSORS: u16 = 254;
/// Largest `N` in `cascade:N`.
pub const MAX_SWITCHES: u16 = 32;
/// Linux IFNAMSIZ including the terminating NUL: names may have at most 15 bytes.
pub const IFNAMSIZ: usize = 16;
/// MTU of every link.
pub const MTU: u32 = 1500;
/// Name of the ECU interface.
pub const ECU_IF: &str = "eth0";
/// Name of the bridge inside a switch namespace.
pub const BRIDGE_IF: &str = "br0";
/// Prefix-length of the ECU IPv4 addresses.
pub const IPV4_PREFIX_LEN: u8 = 16;
/// MTU of the links of the protected network in the bump-in-the-wire topologies: [`MTU`] + the
/// 32 octets MACsec adds (SecTAG with SCI 16, ICV 16).
pub const PROTECTED_MTU: u32 = MTU + 32;
/// Name of a gateway's plain port (to its legacy ECU).
pub const GATEWAY_PLAIN_IF: &str = "plain0";
/// Name of a gateway's protected port (to the switch).
pub const GATEWAY_PROTECTED_IF: &str = "prot0";

/// A testbed topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// Two ECUs (`ecu1`, `ecu2`) on one switch (seed 000 Fig. 10).
    Pair,
    /// Central unit `cu` and wheel controllers `front`, `rear` on one switch (000 §3.2.3.1).
    SteerByWire,
    /// `N` sensors (`sensor1`..`sensorN`) and one `consumer` on one switch (002 testbench 1).
    Sensors(u16),
    /// `N` switches in a chain (`sw0`..), `ecu1` on the first and `ecu2` on the last
    /// (001 Fig. 11, 002 testbench 3).
    Cascade(u16),
    /// Bump-in-the-wire (002 testbench 2): legacy `sensor1` — its gateway `gw1` — switch `sw0`
    /// — `consumer` (a MACsec ECU: `ivnsec macsec up` on its `eth0`).
    Bump,
    /// Two legacy ECUs each behind a gateway: `ecu1` — `gw1` — `sw0` — `gw2` — `ecu2`.
    Bump2,
    /// A production-like network (002 testbench 3, Fig. 5.4): four switches with redundant
    /// links (`sw0`–`sw1`, `sw0`–`sw2`, `sw1`–`sw2`, `sw1`–`sw3`, `sw2`–`sw3`) running the
    /// kernel's spanning tree (802.1D STP) so the loops are legal; sensors attached unevenly:
    /// `sensor1`, `sensor2` (protecting themselves) and the legacy `sensor3` behind gateway
    /// `gw3` on `sw1`, the legacy `sensor4` behind `gw4` on `sw2`, none on `sw3`; the
    /// `consumer` attached to `sw0` by three links ([`PRODUCTION_UPLINKS`]), its `eth0` a
    /// small STP bridge of its own over them (see [`Plan::stp`]).
    Production,
}

/// The consumer's ports in [`Topology::Production`] (`uplink1`..`uplink3`; the switch's ends
/// are `to-consumer1`..`to-consumer3`).
pub const PRODUCTION_UPLINKS: u8 = 3;
/// Bridge priority of the root switch `sw0` of [`Topology::Production`] (the consumer's
/// switch, so every sensor's path to the consumer is a shortest one).
pub const STP_ROOT_PRIORITY: u16 = 4096;
/// Bridge priority of `sw1` (the root's stand-in should `sw0` fail).
pub const STP_BACKUP_ROOT_PRIORITY: u16 = 8192;
/// Bridge priority of every other switch (the 802.1D default).
pub const STP_DEFAULT_PRIORITY: u16 = 32768;
/// Bridge priority of an ECU's own bridge over several links (the worst: it never becomes
/// root and, having one switch as its only neighbour, never carries anyone's traffic).
pub const STP_ECU_PRIORITY: u16 = 65535;
/// STP timers in centiseconds, the smallest the kernel accepts with STP on
/// (`BR_MIN_FORWARD_DELAY` 2 s, `BR_MIN_HELLO_TIME` 1 s, `BR_MIN_MAX_AGE` 6 s): a port
/// forwards 2 × 2 s after it comes up or changes role.
pub const STP_FORWARD_DELAY_CS: u32 = 200;
/// Hello time (centiseconds).
pub const STP_HELLO_TIME_CS: u32 = 100;
/// Max age (centiseconds).
pub const STP_MAX_AGE_CS: u32 = 600;

impl Topology {
    /// The names accepted by [`FromStr`], for help texts.
    pub const SYNTAX: &'static str =
        "pair | steer-by-wire | sensors:N | cascade:N | bump | bump2 | production";

    /// The nodes and links of this topology.
    pub fn plan(&self) -> Plan {
        let mut p = PlanBuilder::default();
        match *self {
            Topology::Pair => {
                let sw = p.switch(0);
                for h in 1..=2 {
                    let e = p.ecu(format!("ecu{h}"), 0, h);
                    p.link(e, sw);
                }
            }
            Topology::SteerByWire => {
                let sw = p.switch(0);
                for (h, name) in ["cu", "front", "rear"].into_iter().enumerate() {
                    let e = p.ecu(name.to_string(), 0, h as u8 + 1);
                    p.link(e, sw);
                }
            }
            Topology::Sensors(n) => {
                let sw = p.switch(0);
                let c = p.ecu("consumer".to_string(), 0, 1);
                p.link(c, sw);
                for i in 1..=n {
                    let e = p.ecu(format!("sensor{i}"), 1, i as u8);
                    p.link(e, sw);
                }
            }
            Topology::Cascade(n) => {
                let first = p.ecu("ecu1".to_string(), 0, 1);
                let sws: Vec<usize> = (0..n).map(|k| p.switch(k as u8)).collect();
                let last = p.ecu("ecu2".to_string(), 0, 2);
                p.link(first, sws[0]);
                for w in sws.windows(2) {
                    p.link(w[0], w[1]);
                }
                p.link(last, sws[sws.len() - 1]);
            }
            Topology::Bump => {
                let sw = p.switch(0);
                let c = p.ecu("consumer".to_string(), 0, 1);
                p.link_mtu(c, sw, PROTECTED_MTU);
                let e = p.ecu("sensor1".to_string(), 1, 1);
                let g = p.gateway(1, e);
                p.link_mtu(g, sw, PROTECTED_MTU);
            }
            Topology::Bump2 => {
                let sw = p.switch(0);
                for h in 1..=2 {
                    let e = p.ecu(format!("ecu{h}"), 0, h);
                    let g = p.gateway(h, e);
                    p.link_mtu(g, sw, PROTECTED_MTU);
                }
            }
            Topology::Production => {
                p.stp = true;
                // ECUs first, in the order experiments pick them (first = initiator or first
                // sender, consumer = receiver): the sensors that protect themselves, then the
                // legacy ones, then the consumer.
                let s1 = p.ecu("sensor1".to_string(), 1, 1);
                let s2 = p.ecu("sensor2".to_string(), 1, 2);
                let s3 = p.ecu("sensor3".to_string(), 1, 3);
                let s4 = p.ecu("sensor4".to_string(), 1, 4);
                let c = p.ecu("consumer".to_string(), 0, 1);
                let sw: Vec<usize> = (0..4).map(|k| p.switch(k)).collect();
                for (a, b) in [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)] {
                    p.link_mtu(sw[a], sw[b], PROTECTED_MTU);
                }
                p.link_mtu(s1, sw[1], PROTECTED_MTU);
                p.link_mtu(s2, sw[1], PROTECTED_MTU);
                let g3 = p.gateway(3, s3);
                p.link_mtu(g3, sw[1], PROTECTED_MTU);
                let g4 = p.gateway(4, s4);
                p.link_mtu(g4, sw[2], PROTECTED_MTU);
                p.uplinks(c, sw[0], PRODUCTION_UPLINKS, PROTECTED_MTU);
            }
        }
        p.finish()
    }

    /// The ECU names in order (no switches).
    pub fn ecu_names(&self) -> Vec<String> {
        self.plan()
            .nodes
            .into_iter()
            .filter(|n| n.kind == NodeKind::Ecu)
            .map(|n| n.name)
            .collect()
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Pair => f.write_str("pair"),
            Topology::SteerByWire => f.write_str("steer-by-wire"),
            Topology::Sensors(n) => write!(f, "sensors:{n}"),
            Topology::Cascade(n) => write!(f, "cascade:{n}"),
            Topology::Bump => f.write_str("bump"),
            Topology::Bump2 => f.write_str("bump2"),
            Topology::Production => f.write_str("production"),
        }
    }
}

impl FromStr for Topology {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| {
            Error::Usage(format!(
                "topology `{s}`: {why} (expected {})",
                Topology::SYNTAX
            ))
        };
        let count = |what: &str, v: &str, max: u16| -> Result<u16> {
            let out_of_range = || bad(format!("the {what} count must be 1..={max}, got {v}"));
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(format!(
                    "the {what} count `{v}` is not a number (it must be 1..={max})"
                )));
            }
            // All digits: a number, though perhaps one too large for any integer type.
            let n: u16 = v.parse().map_err(|_| out_of_range())?;
            if n == 0 || n > max {
                return Err(out_of_range());
            }
            Ok(n)
        };
        match s.trim() {
            "pair" => Ok(Topology::Pair),
            "steer-by-wire" => Ok(Topology::SteerByWire),
            "bump" => Ok(Topology::Bump),
            "bump2" => Ok(Topology::Bump2),
            "production" => Ok(Topology::Production),
            t => match t.split_once(':') {
                Some(("sensors", v)) => Ok(Topology::Sensors(count("sensor", v, MAX_SENSORS)?)),
                Some(("cascade", v)) => Ok(Topology::Cascade(count("switch", v, MAX_SWITCHES)?)),
                _ => Err(bad("unknown topology".to_string())),
            },
        }
    }
}

/// Whether a node is an ECU (an end host) or a switch (a bridge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host with one interface, `eth0`.
    Ecu,
    /// A Linux bridge `br0` with one port per link.
    Switch,
    /// A bump-in-the-wire gateway (`ivnsec gateway`): `plain0` to its legacy ECU, `prot0` to
    /// the switch, no addresses.
    Gateway,
}

impl NodeKind {
    /// `"ecu"` or `"switch"`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Ecu => "ecu",
            NodeKind::Switch => "switch",
            NodeKind::Gateway => "gateway",
        }
    }
}

/// One interface of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceSpec {
    /// Interface name inside the node's namespace (≤ 15 bytes).
    pub name: String,
    /// MAC address.
    pub mac: [u8; 6],
    /// IPv4 address (ECUs only).
    pub ipv4: Option<[u8; 4]>,
    /// The node at the other end of the link (`None` for a bridge).
    pub peer_node: Option<String>,
    /// The interface at the other end of the link.
    pub peer_if: Option<String>,
}

/// One node: an ECU or a switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec {
    /// Node name (`ecu1`, `cu`, `sensor3`, `sw0`, …); the namespace is `<prefix>-<name>`.
    pub name: String,
    /// ECU or switch.
    pub kind: NodeKind,
    /// Interfaces: an ECU has `eth0`; a switch has `br0` first, then its ports.
    pub ifaces: Vec<IfaceSpec>,
}

/// A veth link between two nodes, named by node and interface at each end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSpec {
    /// Node at end A (the namespace in which the veth pair is created).
    pub a_node: String,
    /// Interface at end A.
    pub a_if: String,
    /// Node at end B.
    pub b_node: String,
    /// Interface at end B.
    pub b_if: String,
    /// MTU of both ends ([`MTU`], or [`PROTECTED_MTU`] in a protected network).
    pub mtu: u32,
}

/// Nodes and links of a topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// ECUs and switches, in a stable order.
    pub nodes: Vec<NodeSpec>,
    /// Links in creation order (switch-to-switch links from the lower to the higher switch).
    pub links: Vec<LinkSpec>,
    /// The links form loops: every switch runs the kernel's spanning tree (802.1D STP, the
    /// `STP_*` timers and priorities), and an ECU with several links (`eth0` plus ports
    /// `uplink1`..) makes `eth0` a bridge with STP over them, so that exactly one of its links
    /// forwards and another takes over, after the STP delays, when that one goes down. (A
    /// bond would also do, and spread the traffic; kernels without `CONFIG_BONDING`, such as
    /// this project's CI, cannot make one. RSTP needs the user-space `mstpd`, which Debian
    /// does not package.)
    pub stp: bool,
}

impl Plan {
    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeSpec> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The interface `ifname` of node `node`.
    pub fn iface(&self, node: &str, ifname: &str) -> Option<&IfaceSpec> {
        self.node(node)?.ifaces.iter().find(|i| i.name == ifname)
    }
}

#[derive(Default)]
struct PlanBuilder {
    nodes: Vec<NodeSpec>,
    links: Vec<LinkSpec>,
    /// Switch number of each switch node (by node index).
    switch_no: Vec<Option<u8>>,
    stp: bool,
}

impl PlanBuilder {
    fn ecu(&mut self, name: String, group: u8, host: u8) -> usize {
        self.nodes.push(NodeSpec {
            name,
            kind: NodeKind::Ecu,
            ifaces: vec![IfaceSpec {
                name: ECU_IF.to_string(),
                mac: ecu_mac(group, host),
                ipv4: Some(ecu_ipv4(group, host)),
                peer_node: None,
                peer_if: None,
            }],
        });
        self.switch_no.push(None);
        self.nodes.len() - 1
    }

    fn switch(&mut self, k: u8) -> usize {
        self.nodes.push(NodeSpec {
            name: format!("sw{k}"),
            kind: NodeKind::Switch,
            ifaces: vec![IfaceSpec {
                name: BRIDGE_IF.to_string(),
                mac: switch_mac(k, 0),
                ipv4: None,
                peer_node: None,
                peer_if: None,
            }],
        });
        self.switch_no.push(Some(k));
        self.nodes.len() - 1
    }

    /// Gateway `gw<k>` in front of ECU `ecu` (the link between them at [`MTU`]).
    fn gateway(&mut self, k: u8, ecu: usize) -> usize {
        let name = format!("gw{k}");
        let ecu_name = self.nodes[ecu].name.clone();
        let port = |n: &str, p: u8| IfaceSpec {
            name: n.to_string(),
            mac: gateway_mac(k, p),
            ipv4: None,
            peer_node: None,
            peer_if: None,
        };
        let mut plain = port(GATEWAY_PLAIN_IF, 1);
        plain.peer_node = Some(ecu_name.clone());
        plain.peer_if = Some(ECU_IF.to_string());
        self.nodes.push(NodeSpec {
            name: name.clone(),
            kind: NodeKind::Gateway,
            ifaces: vec![plain, port(GATEWAY_PROTECTED_IF, 2)],
        });
        self.switch_no.push(None);
        let e = &mut self.nodes[ecu].ifaces[0];
        e.peer_node = Some(name.clone());
        e.peer_if = Some(GATEWAY_PLAIN_IF.to_string());
        self.links.push(LinkSpec {
            a_node: ecu_name,
            a_if: ECU_IF.to_string(),
            b_node: name,
            b_if: GATEWAY_PLAIN_IF.to_string(),
            mtu: MTU,
        });
        self.nodes.len() - 1
    }

    /// Adds a link between nodes `a` and `b`; `b` must be a switch.
    fn link(&mut self, a: usize, b: usize) {
        self.link_mtu(a, b, MTU)
    }

    /// [`link`](Self::link) with MTU `mtu` at both ends.
    fn link_mtu(&mut self, a: usize, b: usize, mtu: u32) {
        let a_name = self.nodes[a].name.clone();
        let b_name = self.nodes[b].name.clone();
        let b_if = format!("to-{a_name}");
        let a_if = match self.switch_no[a] {
            None if self.nodes[a].kind == NodeKind::Gateway => GATEWAY_PROTECTED_IF.to_string(),
            None => ECU_IF.to_string(),
            Some(k) => {
                let name = format!("to-{b_name}");
                let port = self.nodes[a].ifaces.len() as u8;
                self.nodes[a].ifaces.push(IfaceSpec {
                    name: name.clone(),
                    mac: switch_mac(k, port),
                    ipv4: None,
                    peer_node: None,
                    peer_if: None,
                });
                name
            }
        };
        let kb = self.switch_no[b].expect("links end at a switch");
        let port = self.nodes[b].ifaces.len() as u8;
        self.nodes[b].ifaces.push(IfaceSpec {
            name: b_if.clone(),
            mac: switch_mac(kb, port),
            ipv4: None,
            peer_node: Some(a_name.clone()),
            peer_if: Some(a_if.clone()),
        });
        let ia = self.nodes[a]
            .ifaces
            .iter_mut()
            .find(|i| i.name == a_if)
            .expect("end A interface");
        ia.peer_node = Some(b_name.clone());
        ia.peer_if = Some(b_if.clone());
        self.links.push(LinkSpec {
            a_node: a_name,
            a_if,
            b_node: b_name,
            b_if,
            mtu,
        });
    }

    /// `n` links between ECU `ecu` and switch `sw`: the ECU's ports `uplink1`..`uplinkN`
    /// (MACs [`ecu_port_mac`]), the switch's `to-<ecu>1`..; the ECU's `eth0` keeps its MAC and
    /// address and becomes the bridge over its ports (see [`Plan::stp`]).
    fn uplinks(&mut self, ecu: usize, sw: usize, n: u8, mtu: u32) {
        let ecu_name = self.nodes[ecu].name.clone();
        let sw_name = self.nodes[sw].name.clone();
        let (group, host) = {
            let m = self.nodes[ecu].ifaces[0].mac;
            (m[4], m[5])
        };
        let k = self.switch_no[sw].expect("uplinks end at a switch");
        for j in 1..=n {
            let a_if = format!("uplink{j}");
            let b_if = format!("to-{ecu_name}{j}");
            self.nodes[ecu].ifaces.push(IfaceSpec {
                name: a_if.clone(),
                mac: ecu_port_mac(group, host, j),
                ipv4: None,
                peer_node: Some(sw_name.clone()),
                peer_if: Some(b_if.clone()),
            });
            let port = self.nodes[sw].ifaces.len() as u8;
            self.nodes[sw].ifaces.push(IfaceSpec {
                name: b_if.clone(),
                mac: switch_mac(k, port),
                ipv4: None,
                peer_node: Some(ecu_name.clone()),
                peer_if: Some(a_if.clone()),
            });
            self.links.push(LinkSpec {
                a_node: ecu_name.clone(),
                a_if,
                b_node: sw_name.clone(),
                b_if,
                mtu,
            });
        }
    }

    fn finish(self) -> Plan {
        Plan {
            nodes: self.nodes,
            links: self.links,
            stp: self.stp,
        }
    }
}

/// MAC of port `p` of gateway `k`: `02:49:56:02:k:p`.
pub fn gateway_mac(k: u8, port: u8) -> [u8; 6] {
    [0x02, 0x49, 0x56, 0x02, k, port]
}

/// MAC of port `p` (1-based) of ECU `(group, host)` when it has several links:
/// `02:49:56:1p:group:host` (its `eth0` keeps [`ecu_mac`]).
pub fn ecu_port_mac(group: u8, host: u8, p: u8) -> [u8; 6] {
    [0x02, 0x49, 0x56, 0x10 | (p & 0x0f), group, host]
}

/// MAC of ECU `(group, host)`: `02:49:56:00:group:host`.
pub fn ecu_mac(group: u8, host: u8) -> [u8; 6] {
    [0x02, 0x49, 0x56, 0x00, group, host]
}

/// MAC of switch `k`, port `port` (0 = the bridge itself): `02:49:56:01:k:port`.
pub fn switch_mac(k: u8, port: u8) -> [u8; 6] {
    [0x02, 0x49, 0x56, 0x01, k, port]
}

/// IPv4 of ECU `(group, host)`: `10.77.group.host` (inside the testbed namespaces only).
pub fn ecu_ipv4(group: u8, host: u8) -> [u8; 4] {
    [10, 77, group, host]
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    let parts: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// `a.b.c.d`.
pub fn format_ipv4(ip: &[u8; 4]) -> String {
    std::net::Ipv4Addr::from(*ip).to_string()
}

/// Checks an interface name the way the kernel does (`dev_valid_name`): 1..=15 bytes, not `.`
/// or `..`, no `/`, `:` or whitespace. Kept stricter: ASCII letters, digits, `-`, `_`, `.`.
pub fn check_ifname(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() < IFNAMSIZ
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "interface name `{name}` is not valid (1..=15 bytes of letters, digits, `-`, `_`, `.`)"
        )))
    }
}

/// Checks a testbed prefix: `ivn-` followed by 6 lowercase hex digits.
pub fn check_prefix(prefix: &str) -> Result<()> {
    let ok = prefix.len() == 10
        && prefix.starts_with("ivn-")
        && prefix[4..]
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "testbed prefix `{prefix}` is not valid (expected `ivn-` and 6 hex digits, e.g. ivn-3fa9c1)"
        )))
    }
}

/// Namespace name of `node` in testbed `prefix`.
pub fn namespace_name(prefix: &str, node: &str) -> String {
    format!("{prefix}-{node}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Topology> {
        let mut v = vec![Topology::Pair, Topology::SteerByWire];
        for n in [1, 2, 3, 10, MAX_SENSORS] {
            v.push(Topology::Sensors(n));
        }
        for n in [1, 2, 3, 8, MAX_SWITCHES] {
            v.push(Topology::Cascade(n));
        }
        v
    }

    #[test]
    fn parse_and_display_round_trip() {
        for t in all() {
            assert_eq!(t.to_string().parse::<Topology>().unwrap(), t);
        }
        assert_eq!(" pair ".parse::<Topology>().unwrap(), Topology::Pair);
        assert_eq!(
            "sensors:4".parse::<Topology>().unwrap(),
            Topology::Sensors(4)
        );
        assert_eq!(
            "cascade:3".parse::<Topology>().unwrap(),
            Topology::Cascade(3)
        );
    }

    #[test]
    fn parse_rejects_bad_strings() {
        for s in [
            "",
            "pairs",
            "Pair",
            "sensors",
            "sensors:",
            "sensors:0",
            "sensors:-1",
            "sensors:255",
            "sensors:x",
            "cascade:0",
            "cascade:33",
            "cascade:1:2",
            "ring:3",
            "steer_by_wire",
        ] {
            match s.parse::<Topology>() {
                Err(Error::Usage(m)) => assert!(m.contains("expected"), "{s}: {m}"),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn out_of_range_counts_name_the_range() {
        for (s, range) in [
            ("sensors:100000", "1..=254"),
            ("sensors:99999999999999999999999", "1..=254"),
            ("cascade:33", "1..=32"),
        ] {
            match s.parse::<Topology>() {
                Err(Error::Usage(m)) => {
                    assert!(!m.contains("not a number"), "{s}: {m}");
                    assert!(m.contains(range), "{s}: {m}");
                }
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn node_names() {
        let names =
            |t: Topology| -> Vec<String> { t.plan().nodes.into_iter().map(|n| n.name).collect() };
        assert_eq!(names(Topology::Pair), ["sw0", "ecu1", "ecu2"]);
        assert_eq!(names(Topology::SteerByWire), ["sw0", "cu", "front", "rear"]);
        assert_eq!(
            names(Topology::Sensors(2)),
            ["sw0", "consumer", "sensor1", "sensor2"]
        );
        assert_eq!(
            names(Topology::Cascade(3)),
            ["ecu1", "sw0", "sw1", "sw2", "ecu2"]
        );
        assert_eq!(Topology::Cascade(3).ecu_names(), ["ecu1", "ecu2"]);
    }

    #[test]
    fn every_name_fits_ifnamsiz_and_is_unique() {
        for t in all() {
            let plan = t.plan();
            let mut macs = Vec::new();
            let mut ips = Vec::new();
            for n in &plan.nodes {
                let mut ifs: Vec<&str> = n.ifaces.iter().map(|i| i.name.as_str()).collect();
                for i in &n.ifaces {
                    check_ifname(&i.name).unwrap();
                    macs.push(i.mac);
                    ips.extend(i.ipv4);
                    // Locally administered unicast.
                    assert_eq!(i.mac[0] & 0x03, 0x02, "{t} {} {}", n.name, i.name);
                }
                ifs.sort();
                ifs.dedup();
                assert_eq!(
                    ifs.len(),
                    n.ifaces.len(),
                    "{t} {}: duplicate interface",
                    n.name
                );
                // Namespace names are path components: no '/', and short.
                let ns = namespace_name("ivn-abcdef", &n.name);
                assert!(ns.len() < 32 && !ns.contains('/'), "{ns}");
            }
            let (m, i) = (macs.len(), ips.len());
            macs.sort();
            macs.dedup();
            ips.sort();
            ips.dedup();
            assert_eq!(macs.len(), m, "{t}: duplicate MAC");
            assert_eq!(ips.len(), i, "{t}: duplicate IPv4");
            assert_eq!(i, t.ecu_names().len(), "{t}: one IPv4 per ECU");
        }
    }

    #[test]
    fn links_are_consistent() {
        for t in all() {
            let plan = t.plan();
            let ecus = plan
                .nodes
                .iter()
                .filter(|n| n.kind == NodeKind::Ecu)
                .count();
            let switches = plan.nodes.len() - ecus;
            // A tree: one link per ECU plus the chain between switches.
            assert_eq!(plan.links.len(), ecus + switches - 1, "{t}");
            for l in &plan.links {
                let a = plan.iface(&l.a_node, &l.a_if).unwrap();
                let b = plan.iface(&l.b_node, &l.b_if).unwrap();
                assert_eq!(a.peer_node.as_deref(), Some(l.b_node.as_str()));
                assert_eq!(a.peer_if.as_deref(), Some(l.b_if.as_str()));
                assert_eq!(b.peer_node.as_deref(), Some(l.a_node.as_str()));
                assert_eq!(b.peer_if.as_deref(), Some(l.a_if.as_str()));
                assert_eq!(plan.node(&l.b_node).unwrap().kind, NodeKind::Switch);
            }
        }
    }

    #[test]
    fn deterministic_addresses() {
        let p = Topology::Pair.plan();
        let e1 = &p.node("ecu1").unwrap().ifaces[0];
        assert_eq!(format_mac(&e1.mac), "02:49:56:00:00:01");
        assert_eq!(format_ipv4(&e1.ipv4.unwrap()), "10.77.0.1");
        let s = Topology::Sensors(3).plan();
        assert_eq!(
            format_ipv4(&s.node("sensor3").unwrap().ifaces[0].ipv4.unwrap()),
            "10.77.1.3"
        );
        assert_eq!(
            format_ipv4(&s.node("consumer").unwrap().ifaces[0].ipv4.unwrap()),
            "10.77.0.1"
        );
        let c = Topology::Cascade(2).plan();
        let sw1 = c.node("sw1").unwrap();
        let names: Vec<&str> = sw1.ifaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["br0", "to-sw0", "to-ecu2"]);
        assert_eq!(format_mac(&sw1.ifaces[2].mac), "02:49:56:01:01:02");
        assert_eq!(p, Topology::Pair.plan());
    }

    #[test]
    fn mac_text_round_trip() {
        let m = [0x02, 0x49, 0x56, 0x01, 0xab, 0xff];
        assert_eq!(parse_mac(&format_mac(&m)), Some(m));
        for bad in [
            "",
            "02:49:56:01:ab",
            "02:49:56:01:ab:ff:00",
            "2:49:56:01:ab:ff",
            "zz:49:56:01:ab:ff",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn ifname_and_prefix_checks() {
        check_ifname("to-sensor254").unwrap();
        check_ifname("ivn-abcdef-a").unwrap();
        check_ifname("exactly15bytes_").unwrap();
        for bad in ["", "sixteen_bytes_xx", ".", "..", "a/b", "a:b", "a b"] {
            assert!(check_ifname(bad).is_err(), "{bad}");
        }
        check_prefix("ivn-0a9fc3").unwrap();
        for bad in [
            "ivn-0A9FC3",
            "ivn-0a9fc",
            "ivn-0a9fc33",
            "ivx-0a9fc3",
            "ivn-0a9fcg",
            "ivn-0a9fc/",
        ] {
            assert!(check_prefix(bad).is_err(), "{bad}");
        }
    }

    /// Seed 002 testbench 2 and its two-gateway variant: each legacy ECU's only link goes to
    /// its gateway's plain port at 1500; every other link is protected at 1532 (MTU + SecTAG
    /// with SCI + ICV), so the legacy ECUs keep 1500; gateways have no address; names, MACs and
    /// link ends are consistent.
    #[test]
    fn bump_topologies() {
        for (t, legacy, macsec_ecus) in [
            (Topology::Bump, vec!["sensor1"], vec!["consumer"]),
            (Topology::Bump2, vec!["ecu1", "ecu2"], vec![]),
        ] {
            assert_eq!(t.to_string().parse::<Topology>().unwrap(), t);
            let plan = t.plan();
            let mut macs = Vec::new();
            for n in &plan.nodes {
                for i in &n.ifaces {
                    check_ifname(&i.name).unwrap();
                    assert_eq!(i.mac[0] & 0x03, 0x02);
                    macs.push(i.mac);
                    if n.kind == NodeKind::Gateway {
                        assert_eq!(i.ipv4, None);
                    }
                }
            }
            let m = macs.len();
            macs.sort();
            macs.dedup();
            assert_eq!(macs.len(), m, "{t}: duplicate MAC");
            for l in &plan.links {
                let a = plan.iface(&l.a_node, &l.a_if).unwrap();
                let b = plan.iface(&l.b_node, &l.b_if).unwrap();
                assert_eq!(a.peer_node.as_deref(), Some(l.b_node.as_str()), "{t} {l:?}");
                assert_eq!(b.peer_node.as_deref(), Some(l.a_node.as_str()), "{t} {l:?}");
                assert_eq!(a.peer_if.as_deref(), Some(l.b_if.as_str()));
                assert_eq!(b.peer_if.as_deref(), Some(l.a_if.as_str()));
                let plain_link = legacy.contains(&l.a_node.as_str());
                if plain_link {
                    assert_eq!(plan.node(&l.b_node).unwrap().kind, NodeKind::Gateway);
                    assert_eq!(l.b_if, GATEWAY_PLAIN_IF);
                    assert_eq!(l.mtu, 1500);
                } else {
                    assert_eq!(l.mtu, 1532, "{t} {l:?}");
                }
            }
            for e in &legacy {
                assert_eq!(plan.links.iter().filter(|l| l.a_node == *e).count(), 1);
            }
            for e in &macsec_ecus {
                let l = plan.links.iter().find(|l| l.a_node == *e).unwrap();
                assert_eq!(
                    (l.mtu, plan.node(&l.b_node).unwrap().kind),
                    (1532, NodeKind::Switch)
                );
            }
            let gws = plan
                .nodes
                .iter()
                .filter(|n| n.kind == NodeKind::Gateway)
                .count();
            assert_eq!(gws, legacy.len());
            assert_eq!(t.ecu_names().len(), legacy.len() + macsec_ecus.len());
        }
        assert_eq!(
            format_mac(&Topology::Bump2.plan().iface("gw2", "prot0").unwrap().mac),
            "02:49:56:02:02:02"
        );
    }
    /// Seed 002 testbench 3 (§5.4.3): several switches with redundant links (more links
    /// between switches than a tree has, so STP is on), sensors attached unevenly (one switch
    /// with three, one with one, one with none), two behind gateways, and the consumer on three
    /// links to one switch; names, MACs and link ends consistent; protected MTU except on the
    /// legacy ECUs' links to their gateways.
    #[test]
    fn production_topology() {
        let t = Topology::Production;
        assert_eq!(t.to_string().parse::<Topology>().unwrap(), t);
        let plan = t.plan();
        assert!(plan.stp);
        assert!(!Topology::Cascade(3).plan().stp && !Topology::Bump2.plan().stp);
        // Experiments pick the first ECU and the consumer.
        assert_eq!(
            t.ecu_names(),
            ["sensor1", "sensor2", "sensor3", "sensor4", "consumer"]
        );
        let switches: Vec<&NodeSpec> = plan
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Switch)
            .collect();
        assert_eq!(switches.len(), 4);
        let is_switch = |n: &str| plan.node(n).unwrap().kind == NodeKind::Switch;
        let between_switches = plan
            .links
            .iter()
            .filter(|l| is_switch(&l.a_node) && is_switch(&l.b_node))
            .count();
        // A spanning tree of 4 switches has 3 links; 5 means two redundant ones.
        assert_eq!(between_switches, 5);
        // Every switch reaches every other over two disjoint first hops.
        for s in &switches {
            let peers = plan
                .links
                .iter()
                .filter(|l| {
                    (l.a_node == s.name && is_switch(&l.b_node))
                        || (l.b_node == s.name && is_switch(&l.a_node))
                })
                .count();
            assert!(peers >= 2, "{} has {peers} switch links", s.name);
        }
        // Sensors per switch (through a gateway or not): uneven, one switch without any.
        let mut per_switch: Vec<usize> = switches
            .iter()
            .map(|s| {
                plan.links
                    .iter()
                    .filter(|l| l.b_node == s.name)
                    .filter(|l| {
                        l.a_node.starts_with("sensor")
                            || plan.node(&l.a_node).unwrap().kind == NodeKind::Gateway
                    })
                    .count()
            })
            .collect();
        per_switch.sort();
        assert_eq!(per_switch, [0, 0, 1, 3]);
        let gws: Vec<&str> = plan
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Gateway)
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(gws, ["gw3", "gw4"]);
        assert_eq!(
            plan.iface("sensor3", "eth0").unwrap().peer_node.as_deref(),
            Some("gw3")
        );
        // The consumer: eth0 (its address, its MAC) and three ports, all to sw0.
        let c = plan.node("consumer").unwrap();
        let names: Vec<&str> = c.ifaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["eth0", "uplink1", "uplink2", "uplink3"]);
        assert_eq!(format_mac(&c.ifaces[0].mac), "02:49:56:00:00:01");
        assert_eq!(format_ipv4(&c.ifaces[0].ipv4.unwrap()), "10.77.0.1");
        assert_eq!(format_mac(&c.ifaces[2].mac), "02:49:56:12:00:01");
        let up: Vec<&LinkSpec> = plan
            .links
            .iter()
            .filter(|l| l.a_node == "consumer")
            .collect();
        assert_eq!(up.len(), usize::from(PRODUCTION_UPLINKS));
        assert!(up.iter().all(|l| l.b_node == "sw0"));
        let mut macs = Vec::new();
        let mut ips = Vec::new();
        for n in &plan.nodes {
            for i in &n.ifaces {
                check_ifname(&i.name).unwrap();
                assert_eq!(i.mac[0] & 0x03, 0x02);
                macs.push(i.mac);
                ips.extend(i.ipv4);
            }
        }
        let (m, k) = (macs.len(), ips.len());
        macs.sort();
        macs.dedup();
        ips.sort();
        ips.dedup();
        assert_eq!((macs.len(), ips.len()), (m, k), "duplicate MAC or IPv4");
        assert_eq!(k, 5);
        for l in &plan.links {
            let a = plan.iface(&l.a_node, &l.a_if).unwrap();
            let b = plan.iface(&l.b_node, &l.b_if).unwrap();
            assert_eq!(a.peer_node.as_deref(), Some(l.b_node.as_str()), "{l:?}");
            assert_eq!(b.peer_node.as_deref(), Some(l.a_node.as_str()), "{l:?}");
            assert_eq!(a.peer_if.as_deref(), Some(l.b_if.as_str()), "{l:?}");
            assert_eq!(b.peer_if.as_deref(), Some(l.a_if.as_str()), "{l:?}");
            let legacy = l.a_node == "sensor3" || l.a_node == "sensor4";
            assert_eq!(l.mtu, if legacy { MTU } else { PROTECTED_MTU }, "{l:?}");
        }
    }
}
