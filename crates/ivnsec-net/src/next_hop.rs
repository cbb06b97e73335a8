//! The next hop towards a remote address as the kernel routes it: the interface a packet to
//! the remote leaves by, the neighbour it is handed to there (the remote itself, or the route's
//! gateway) and that neighbour's link-layer address. The ESP tunnel's protocol-50 path
//! ([`crate::esp_outer`]) uses it to send ESP packets as Ethernet frames with the outer IP
//! header built here, instead of through a raw IP socket that routes every packet.
//!
//! The kernel is asked with iproute2 (`ip -j route get`, `ip -j neigh show`, `ip -j link
//! show`), as the testbed does, rather than by speaking netlink here: each question is a
//! command a person can type and compare, and the answers are the kernel's own (policy rules,
//! VRFs and multipath included). The answer goes stale when routes or neighbours change, so
//! the caller asks again from time to time and on send errors.

use std::io;
use std::net::IpAddr;
use std::process::Command;

use serde_json::Value;

use crate::sys;

/// What the kernel says about the next hop towards a remote address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextHop {
    /// The interface the route leaves by.
    pub ifname: String,
    pub ifindex: u32,
    /// The neighbour packets are handed to: the route's gateway, or the remote itself when it
    /// is on the link.
    pub via: IpAddr,
    /// The interface's MTU (the largest IP packet it sends whole).
    pub mtu: u32,
    /// The interface's link type as iproute2 names it (`ether`, `loopback`, `none`, …).
    pub link_type: String,
    /// The interface's own MAC address (Ethernet only).
    pub src_mac: Option<[u8; 6]>,
    /// The neighbour's MAC address, when the kernel has resolved it (`None` before the first
    /// packet went there, or after resolution failed).
    pub dst_mac: Option<[u8; 6]>,
    /// The neighbour entry's state (`REACHABLE`, `STALE`, `PERMANENT`, …; empty when there is
    /// no entry).
    pub neigh_state: String,
}

impl NextHop {
    /// Whether frames can be sent to the neighbour directly: an Ethernet interface and a
    /// resolved neighbour.
    pub fn usable(&self) -> bool {
        self.link_type == "ether" && self.src_mac.is_some() && self.dst_mac.is_some()
    }

    /// Why frames cannot be sent to the neighbour directly (`None` when [`usable`](Self::usable)).
    pub fn unusable_reason(&self) -> Option<String> {
        if self.link_type != "ether" {
            Some(format!(
                "the route to it leaves by {} ({}), not an Ethernet interface",
                self.ifname, self.link_type
            ))
        } else if self.src_mac.is_none() {
            Some(format!("{} has no MAC address", self.ifname))
        } else if self.dst_mac.is_none() {
            Some(format!(
                "the next hop {} on {} is not resolved yet{}",
                self.via,
                self.ifname,
                if self.neigh_state.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", self.neigh_state)
                }
            ))
        } else {
            None
        }
    }
}

/// Asks the kernel for the next hop from `local` to `remote` (three `ip -j` commands in this
/// process's network namespace). Errors: iproute2 missing or failing, no route, a route that
/// does not leave this host by an interface (a local address, blackhole, unreachable).
pub fn learn(local: IpAddr, remote: IpAddr) -> io::Result<NextHop> {
    let (l, r) = (local.to_string(), remote.to_string());
    let route = ip_json(&["route", "get", &r, "from", &l])?;
    let (dev, via) = parse_route(&route, remote).map_err(io::Error::other)?;
    let link = ip_json(&["link", "show", "dev", &dev])?;
    let (ifindex, mtu, link_type, src_mac) = parse_link(&link).map_err(io::Error::other)?;
    let neigh = ip_json(&["neigh", "show", "to", &via.to_string(), "dev", &dev])?;
    let (dst_mac, neigh_state) = parse_neigh(&neigh, via);
    Ok(NextHop {
        ifname: dev,
        ifindex,
        via,
        mtu,
        link_type,
        src_mac,
        dst_mac,
        neigh_state,
    })
}

/// Runs `ip -j ARGS` and parses its JSON.
fn ip_json(args: &[&str]) -> io::Result<Value> {
    let out = sys::die_with_parent(Command::new("ip").arg("-j").args(args))
        .output()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("running `ip -j {}`: {e} (iproute2)", args.join(" ")),
            )
        })?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "`ip -j {}`: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // An empty answer (no neighbour entry) is an empty list.
    if out.stdout.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Array(Vec::new()));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        io::Error::other(format!(
            "`ip -j {}` printed no JSON that this reads: {e}",
            args.join(" ")
        ))
    })
}

/// The first object of an `ip -j` answer (a list of one for `route get` and `link show`).
fn first(v: &Value) -> Option<&Value> {
    v.as_array().and_then(|a| a.first())
}

/// From `ip -j route get REMOTE from LOCAL`: the interface and the neighbour (the gateway, or
/// the remote itself).
pub fn parse_route(v: &Value, remote: IpAddr) -> Result<(String, IpAddr), String> {
    let r = first(v).ok_or("`ip route get` gave no route")?;
    if let Some(t) = r["type"].as_str()
        && t != "unicast"
    {
        return Err(format!(
            "the route to {remote} is of type {t}: it does not leave this host by an interface"
        ));
    }
    let dev = r["dev"]
        .as_str()
        .ok_or_else(|| format!("the route to {remote} names no interface"))?;
    let via = match r["gateway"].as_str() {
        Some(g) => g
            .parse::<IpAddr>()
            .map_err(|_| format!("the route to {remote} has a gateway `{g}` that is no address"))?,
        None => remote,
    };
    if via.is_ipv4() != remote.is_ipv4() {
        return Err(format!(
            "the route to {remote} goes through a gateway of the other family ({via})"
        ));
    }
    Ok((dev.to_string(), via))
}

/// What `ip -j link show` tells of an interface: index, MTU, link type, MAC address
/// (Ethernet only).
pub type LinkFacts = (u32, u32, String, Option<[u8; 6]>);

/// From `ip -j link show dev DEV`: [`LinkFacts`].
pub fn parse_link(v: &Value) -> Result<LinkFacts, String> {
    let l = first(v).ok_or("`ip link show` gave no interface")?;
    let ifindex = l["ifindex"]
        .as_u64()
        .and_then(|i| u32::try_from(i).ok())
        .ok_or("`ip link show` gave no interface index")?;
    let mtu = l["mtu"]
        .as_u64()
        .and_then(|m| u32::try_from(m).ok())
        .ok_or("`ip link show` gave no MTU")?;
    let link_type = l["link_type"].as_str().unwrap_or("").to_string();
    let mac = if link_type == "ether" {
        l["address"].as_str().and_then(parse_mac)
    } else {
        None
    };
    Ok((ifindex, mtu, link_type, mac))
}

/// From `ip -j neigh show to VIA dev DEV`: the neighbour's MAC address when the entry has one
/// (`FAILED` and `INCOMPLETE` entries have none), and the entry's states joined by `,`.
pub fn parse_neigh(v: &Value, via: IpAddr) -> (Option<[u8; 6]>, String) {
    let Some(entries) = v.as_array() else {
        return (None, String::new());
    };
    for e in entries {
        let dst = e["dst"].as_str().and_then(|d| d.parse::<IpAddr>().ok());
        if dst != Some(via) {
            continue;
        }
        let state = e["state"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        let failed = state.contains("FAILED") || state.contains("INCOMPLETE");
        let mac = e["lladdr"].as_str().and_then(parse_mac);
        return (if failed { None } else { mac }, state);
    }
    (None, String::new())
}

/// `aa:bb:cc:dd:ee:ff` as bytes; `None` for anything else (and for the all-zero address).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut mac {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    if parts.next().is_some() || mac == [0; 6] {
        return None;
    }
    Some(mac)
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(m: &[u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The answers below are iproute2's own, as printed (`ip -j …` in a namespace with a veth,
    // a route through a gateway of each family, a failed neighbour entry and a TUN).

    #[test]
    fn a_route_on_the_link_and_one_through_a_gateway() {
        let on_link: Value = serde_json::from_str(
            r#"[{"dst":"192.0.2.2","from":"192.0.2.1","dev":"v0","flags":[],"uid":0,"cache":[]}]"#,
        )
        .unwrap();
        let remote: IpAddr = "192.0.2.2".parse().unwrap();
        assert_eq!(
            parse_route(&on_link, remote).unwrap(),
            ("v0".to_string(), remote)
        );
        let routed: Value = serde_json::from_str(
            r#"[{"dst":"198.51.100.7","from":"192.0.2.1","gateway":"192.0.2.254","dev":"v0","flags":[],"uid":0,"cache":[]}]"#,
        )
        .unwrap();
        let (dev, via) = parse_route(&routed, "198.51.100.7".parse().unwrap()).unwrap();
        assert_eq!(dev, "v0");
        assert_eq!(via, "192.0.2.254".parse::<IpAddr>().unwrap());
        let v6: Value = serde_json::from_str(
            r#"[{"dst":"2001:db8:2::2","from":"2001:db8:1::1","gateway":"fe80::1","dev":"v0","prefsrc":"2001:db8:1::1","metric":1024,"flags":[],"pref":"medium"}]"#,
        )
        .unwrap();
        let (_, via) = parse_route(&v6, "2001:db8:2::2".parse().unwrap()).unwrap();
        assert_eq!(via, "fe80::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn routes_that_leave_by_no_interface_are_refused() {
        let local: Value = serde_json::from_str(
            r#"[{"type":"local","dst":"192.0.2.1","from":"192.0.2.1","dev":"lo","flags":[],"uid":0,"cache":["local"]}]"#,
        )
        .unwrap();
        let e = parse_route(&local, "192.0.2.1".parse().unwrap()).unwrap_err();
        assert!(e.contains("type local"), "{e}");
        let e = parse_route(&Value::Array(vec![]), "192.0.2.2".parse().unwrap()).unwrap_err();
        assert!(e.contains("no route"), "{e}");
        let bad: Value =
            serde_json::from_str(r#"[{"dst":"192.0.2.2","gateway":"nope","dev":"x"}]"#).unwrap();
        assert!(parse_route(&bad, "192.0.2.2".parse().unwrap()).is_err());
    }

    #[test]
    fn links_of_every_type() {
        let eth: Value = serde_json::from_str(
            r#"[{"ifindex":2,"link_index":2,"ifname":"v0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,"qdisc":"noqueue","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether","address":"26:2c:e4:c1:f8:c2","broadcast":"ff:ff:ff:ff:ff:ff","link_netnsid":0}]"#,
        )
        .unwrap();
        assert_eq!(
            parse_link(&eth).unwrap(),
            (
                2,
                1500,
                "ether".to_string(),
                Some([0x26, 0x2c, 0xe4, 0xc1, 0xf8, 0xc2])
            )
        );
        let lo: Value = serde_json::from_str(
            r#"[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK","UP","LOWER_UP"],"mtu":65536,"qdisc":"noqueue","operstate":"UNKNOWN","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"loopback","address":"00:00:00:00:00:00","broadcast":"00:00:00:00:00:00"}]"#,
        )
        .unwrap();
        assert_eq!(
            parse_link(&lo).unwrap(),
            (1, 65536, "loopback".to_string(), None)
        );
        let tun: Value = serde_json::from_str(
            r#"[{"ifindex":3,"ifname":"tun7","flags":["POINTOPOINT","MULTICAST","NOARP"],"mtu":1500,"qdisc":"noop","operstate":"DOWN","linkmode":"DEFAULT","group":"default","txqlen":500,"link_type":"none"}]"#,
        )
        .unwrap();
        let (_, _, t, mac) = parse_link(&tun).unwrap();
        assert_eq!((t.as_str(), mac), ("none", None));
        assert!(parse_link(&Value::Array(vec![])).is_err());
    }

    #[test]
    fn neighbours_resolved_stale_and_failed() {
        let via: IpAddr = "192.0.2.2".parse().unwrap();
        let ok: Value = serde_json::from_str(
            r#"[{"dst":"192.0.2.2","lladdr":"ce:ac:d9:15:74:aa","state":["REACHABLE"]}]"#,
        )
        .unwrap();
        assert_eq!(
            parse_neigh(&ok, via),
            (
                Some([0xce, 0xac, 0xd9, 0x15, 0x74, 0xaa]),
                "REACHABLE".to_string()
            )
        );
        let stale: Value = serde_json::from_str(
            r#"[{"dst":"192.0.2.1","dev":"eth0","lladdr":"02:fc:00:00:00:05","state":["STALE"]}]"#,
        )
        .unwrap();
        assert!(
            parse_neigh(&stale, "192.0.2.1".parse().unwrap())
                .0
                .is_some()
        );
        let failed: Value =
            serde_json::from_str(r#"[{"dst":"192.0.2.2","state":["FAILED"]}]"#).unwrap();
        assert_eq!(parse_neigh(&failed, via), (None, "FAILED".to_string()));
        let other: Value = serde_json::from_str(
            r#"[{"dst":"192.0.2.9","lladdr":"ce:ac:d9:15:74:aa","state":["REACHABLE"]}]"#,
        )
        .unwrap();
        assert_eq!(parse_neigh(&other, via), (None, String::new()));
        assert_eq!(
            parse_neigh(&Value::Array(vec![]), via),
            (None, String::new())
        );
    }

    #[test]
    fn macs_parse_and_print() {
        assert_eq!(
            parse_mac("02:00:5e:10:00:01"),
            Some([2, 0, 0x5e, 0x10, 0, 1])
        );
        assert_eq!(format_mac(&[2, 0, 0x5e, 0x10, 0, 1]), "02:00:5e:10:00:01");
        for bad in [
            "",
            "02:00:5e:10:00",
            "02:00:5e:10:00:01:02",
            "0g:00:5e:10:00:01",
            "00:00:00:00:00:00",
            "2:00:5e:10:00:01",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_reason_a_next_hop_is_not_usable() {
        let mut h = NextHop {
            ifname: "veth0".into(),
            ifindex: 7,
            via: "192.0.2.2".parse().unwrap(),
            mtu: 1500,
            link_type: "ether".into(),
            src_mac: Some([2, 0, 0, 0, 0, 1]),
            dst_mac: Some([2, 0, 0, 0, 0, 2]),
            neigh_state: "REACHABLE".into(),
        };
        assert!(h.usable());
        assert_eq!(h.unusable_reason(), None);
        h.dst_mac = None;
        h.neigh_state = "FAILED".into();
        assert!(!h.usable());
        assert!(
            h.unusable_reason()
                .unwrap()
                .contains("not resolved yet (FAILED)")
        );
        h.link_type = "loopback".into();
        assert!(
            h.unusable_reason()
                .unwrap()
                .contains("not an Ethernet interface")
        );
    }
}
