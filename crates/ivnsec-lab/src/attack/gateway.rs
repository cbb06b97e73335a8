//! `ivnsec attack --topology bump2|bump`: the frame classes against the protected port of the
//! bump-in-the-wire gateways (docs/gateway.md). A fresh `bump2` testbed with its gateways
//! started as a plan starts them ([`crate::site::start_gateways`]: static keys of
//! [`GATEWAY_PROFILE`], a fresh SAK); the legacy ECUs `ecu1` (sender) and `ecu2` (receiver) run
//! the legitimate ping-pong unprotected (profile `plain`: the protection is the gateways'), and
//! on `bump` the legacy `sensor1` sends through its gateway to the MACsec `consumer` (its
//! `ivnsec macsec up` started the same way: the victim is the consumer's SecY), and
//! the attacker is a device on the protected network: a packet socket on the switch's bridge
//! (`sw0`/`br0`, promiscuous), which sees every frame the switch forwards and injects into it.
//!
//! The attacker does not hold the gateways' key. Frames that claim the sending gateway's
//! identity (its SCI: no-key, bit-flip, length, unknown-id, flood) are protected under a key of
//! its own and altered, so the victim's gateway checks their ICV; frames of the legacy ECU's own
//! MAC address (foreign-source under the attacker's own SCI, downgrade's plain frames, garbage)
//! and replays of captured genuine frames complete the classes. The judge is the legacy ECU
//! behind the victim's gateway: its receiver counts every forged unit that reaches it
//! (`accepted`); the gateways' own counters (read from their status files) give the drops by
//! reason and what each forwarded to its legacy ECU ([`GatewayAccount`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{Context, Result};
use ivnsec_core::channel::Ends;
use ivnsec_net::testbed::Testbed;
use ivnsec_net::topology::{self, Topology};
use serde::Serialize;
use serde_json::Value;

use super::Attack;
use super::roles::{Gateways, Roles};
use crate::site::{GATEWAY_PROFILE, Layout, Where, net_err};
use ivnsec_node::error::usage;

/// The gateway in front of the legitimate sender: the SCI the forged frames claim.
const SENDER_GW: &str = "gw1";
/// The attacker device's own address (locally administered; no testbed node has it).
const ATTACKER_MAC: [u8; 6] = [0x02, 0x49, 0x56, 0x0f, 0x00, 0x01];
const ATTACKER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 15, 1);
/// Largest status file read back.
const MAX_STATUS: u64 = 1 << 20;

/// Checks the topology settings of a run: `--topology` is `bump2`, `bump` (their profile the
/// gateways') or `production` (any profile) only, and builds its own testbed.
pub fn check(
    topology: Option<&Topology>,
    testbed: Option<&str>,
    profiles: &[ivnsec_core::profile::NamedProfile],
) -> Result<()> {
    match topology {
        None => Ok(()),
        Some(t @ (Topology::Bump2 | Topology::Bump)) => {
            if testbed.is_some() {
                return Err(usage(format!(
                    "--topology {t} builds a fresh testbed and starts its gateways; give \
                     either --topology or --testbed, not both"
                )));
            }
            if let Some(p) = profiles.iter().find(|p| *p != GATEWAY_PROFILE) {
                return Err(usage(format!(
                    "--topology {t}: the gateways protect with {GATEWAY_PROFILE} and the \
                     attacker forges that; drop `--profile {p}` (or give --profile \
                     {GATEWAY_PROFILE})"
                )));
            }
            Ok(())
        }
        Some(t @ Topology::Production) => match testbed {
            Some(_) => Err(usage(format!(
                "--topology {t} builds a fresh testbed; give either --topology or --testbed, \
                 not both (a running production testbed given with --testbed is attacked the \
                 same way)"
            ))),
            None => Ok(()),
        },
        Some(t) => Err(usage(format!(
            "--topology {t}: the attack runs on production (sensor1 to the consumer across \
             the STP switches, sensor2 attacking), or through gateways on bump2 (two legacy ECUs, each \
             behind a gateway) or bump (a legacy sensor behind a gateway, a MACsec consumer); \
             without --topology the attack runs on sensors:2"
        ))),
    }
}

/// Builds a `bump2` (or `bump`) testbed and starts its gateways (and `bump`'s MACsec
/// consumer) as a plan does; the roles: `ecu1` sends, `ecu2` receives (on `bump`: `sensor1`
/// sends, `consumer` receives), the attacker sits on the switch's bridge. The victim is the
/// member in front of the receiver: `gw2`, or on `bump` the consumer's own SecY.
pub(crate) fn open_testbed(topology: Topology) -> Result<(Option<Testbed>, Roles)> {
    let layout = Layout::of(topology);
    let open = crate::site::open_site(Where::Testbed, None, &layout)?;
    let tb = open
        .testbed
        .with_context(|| format!("the {topology} testbed was not built"))?;
    let dir = tb.state_dir().join(format!("{}-gateways", tb.prefix()));
    let state = tb.state().clone();
    let mac = state
        .node(SENDER_GW)
        .and_then(|n| {
            n.interfaces
                .iter()
                .find(|i| i.name == topology::GATEWAY_PROTECTED_IF)
        })
        .map(|i| i.mac.clone())
        .with_context(|| format!("the {topology} testbed has no gw1/prot0"))?;
    let sender_gw_mac = parse_mac(&mac).context("the MAC of gw1/prot0")?;
    let (members, victim) = victim_of(topology);
    let run_dirs = members
        .iter()
        .map(|g| (g.to_string(), dir.join(format!("run-{g}"))))
        .collect();
    state.namespace_of("sw0").map_err(net_err)?;
    let roles = Roles {
        state,
        sender: layout.initiator,
        receiver: layout.responder,
        attacker: "sw0".into(),
        attacker_if: topology::BRIDGE_IF.into(),
        gateway: Some(Gateways {
            run_dirs,
            sender_gw_mac,
            victim: victim.to_string(),
        }),
    };
    Ok((Some(tb), roles))
}

/// The members whose status files a run reads (each by its run directory's name) and the
/// victim among them: the member in front of the receiver.
fn victim_of(topology: Topology) -> (&'static [&'static str], &'static str) {
    match topology {
        Topology::Bump => (&["gw1", "consumer"], "consumer"),
        _ => (&["gw1", "gw2"], "gw2"),
    }
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

impl Gateways {
    /// The attacker device's address.
    pub(crate) fn attacker_addr(&self) -> ([u8; 6], Ipv4Addr) {
        (ATTACKER_MAC, ATTACKER_IP)
    }

    /// Whose frames the forger makes for `attack`: the sending gateway's (its SCI, so the
    /// victim's gateway checks the ICV), or, for the replays (genuine frames as captured), the
    /// plain and garbage classes and the foreign source, the legacy ECUs' addresses as on the
    /// wire.
    pub(crate) fn forged_sender(&self, attack: Attack, legacy: Ends) -> Ends {
        match attack {
            Attack::ReplayW1
            | Attack::ReplayW1024
            | Attack::ForeignSource
            | Attack::Downgrade
            | Attack::Garbage => legacy,
            _ => Ends {
                local_mac: self.sender_gw_mac,
                ..legacy
            },
        }
    }

    /// The source address of the foreign-source class: the legacy sender's own MAC (frames
    /// that claim to come from the legacy ECU, under the attacker's own SCI and key).
    pub(crate) fn attacker_mac(&self, attack: Attack, legacy: Ends, own: [u8; 6]) -> [u8; 6] {
        match attack {
            Attack::ForeignSource => legacy.local_mac,
            _ => own,
        }
    }

    /// The gateways' counters now, read from their status files (written every
    /// [`ivnsec_node::macsec::STATUS_EVERY`]; this waits one period longer so they are current).
    pub(crate) fn counters(&self) -> Result<Counters> {
        std::thread::sleep(ivnsec_node::macsec::STATUS_EVERY + Duration::from_millis(200));
        let mut out = BTreeMap::new();
        for (name, run_dir) in &self.run_dirs {
            out.insert(name.clone(), read_status(&run_dir.join("macsec"), name)?);
        }
        Ok(Counters(out))
    }
}

/// Reads the one status file in `dir`.
fn read_status(dir: &std::path::Path, name: &str) -> Result<Value> {
    let rd = std::fs::read_dir(dir)
        .with_context(|| format!("the gateway {name} has no status in {}", dir.display()))?;
    for e in rd.take(1000).flatten() {
        if !e.file_name().to_string_lossy().ends_with(".json") {
            continue;
        }
        let mut s = String::new();
        std::fs::File::open(e.path())?
            .take(MAX_STATUS)
            .read_to_string(&mut s)?;
        return serde_json::from_str(&s)
            .with_context(|| format!("{}: not a status file", e.path().display()));
    }
    Err(anyhow::anyhow!(
        "the gateway {name} wrote no status file in {} (has it ended?)",
        dir.display()
    ))
}

/// Status documents of the gateways at one moment.
pub(crate) struct Counters(BTreeMap<String, Value>);

impl Counters {
    /// What the gateways counted from `before` to now, `victim` the member in front of the
    /// receiver.
    pub(crate) fn since(&self, before: &Counters, victim: &str) -> GatewayAccount {
        let mut acc = GatewayAccount::default();
        for (name, now) in &self.0 {
            let then = before.0.get(name).unwrap_or(&Value::Null);
            let frames = |v: &Value, k: &str| v["frames"][k].as_u64().unwrap_or(0);
            let mut drops = BTreeMap::new();
            if let Some(m) = now["rx"]["drops"].as_object() {
                for (reason, n) in m {
                    let d = n
                        .as_u64()
                        .unwrap_or(0)
                        .saturating_sub(then["rx"]["drops"][reason].as_u64().unwrap_or(0));
                    if d > 0 {
                        drops.insert(reason.clone(), d);
                    }
                }
            }
            if name == victim {
                acc.victim_drops = drops.clone();
            }
            acc.drops.insert(name.clone(), drops);
            acc.to_legacy.insert(
                name.clone(),
                frames(now, "tap_out").saturating_sub(frames(then, "tap_out")),
            );
            acc.protected_in.insert(
                name.clone(),
                frames(now, "iface_in").saturating_sub(frames(then, "iface_in")),
            );
            acc.queue_drops.insert(
                name.clone(),
                frames(now, "iface_queue_drops").saturating_sub(frames(then, "iface_queue_drops")),
            );
        }
        acc.victim = victim.to_string();
        acc
    }
}

/// What the gateways counted during one class.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GatewayAccount {
    /// The gateway in front of the receiver (the attack's target; on `bump` the MACsec
    /// consumer's own SecY, `consumer`).
    pub victim: String,
    /// Its drops by reason (also added into the result's `dropped`).
    #[serde(skip)]
    pub victim_drops: BTreeMap<String, u64>,
    /// Drops by reason, per gateway (the switch floods the injected frames to both).
    pub drops: BTreeMap<String, BTreeMap<String, u64>>,
    /// Frames each gateway wrote to its legacy ECU (verified: the legitimate exchanges).
    pub to_legacy: BTreeMap<String, u64>,
    /// MACsec frames each gateway took from the protected port.
    pub protected_in: BTreeMap<String, u64>,
    /// Frames the kernel dropped at each gateway's protected-port socket because its queue was
    /// full (the gateway fell behind a flood): never judged, part of the result's `not_seen`.
    pub queue_drops: BTreeMap<String, u64>,
    /// Forged units that reached the legacy receiver behind the victim (its ping-pong
    /// receiver and its watch for the forged MACsec's inner EtherType 0x88B6): must be 0.
    pub reached_legacy: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn macs_parse_and_reject_bad_input() {
        assert_eq!(
            parse_mac("02:49:56:02:01:02"),
            Some([2, 0x49, 0x56, 2, 1, 2])
        );
        assert_eq!(parse_mac("02:49:56:02:01"), None);
        assert_eq!(parse_mac("02:49:56:02:01:02:03"), None);
        assert_eq!(parse_mac("zz:49:56:02:01:02"), None);
    }

    /// On `bump` the run reads the gateway's and the consumer's status and the consumer's SecY
    /// is the victim (it is in front of the receiver); on `bump2` the second gateway.
    #[test]
    fn the_victim_is_the_member_in_front_of_the_receiver() {
        assert_eq!(
            victim_of(Topology::Bump),
            (&["gw1", "consumer"][..], "consumer")
        );
        assert_eq!(victim_of(Topology::Bump2), (&["gw1", "gw2"][..], "gw2"));
        for t in [Topology::Bump, Topology::Bump2] {
            let l = Layout::of(t);
            let st = ivnsec_net::testbed::TestbedState::planned("ivn-000000", &t);
            // The victim sits on the receiver's side: the receiver's only link goes to it
            // (bump2), or the victim is the receiver itself (bump).
            let (_, victim) = victim_of(t);
            let rx = st.node(&l.responder).unwrap();
            assert!(
                victim == l.responder
                    || rx.interfaces[0].peer.as_deref()
                        == Some(&format!("{victim}/{}", topology::GATEWAY_PLAIN_IF)),
                "{t}: {victim} {rx:?}"
            );
        }
    }

    #[test]
    fn the_account_is_the_difference_of_two_readings() {
        let st = |bad: u64, tap_out: u64| {
            json!({"rx": {"drops": {"bad_tag": bad, "late": 0}},
                   "frames": {"tap_out": tap_out, "iface_in": bad + tap_out,
                              "iface_queue_drops": 3 * bad}})
        };
        let before = Counters(BTreeMap::from([
            ("gw1".to_string(), st(1, 10)),
            ("gw2".to_string(), st(2, 20)),
        ]));
        let after = Counters(BTreeMap::from([
            ("gw1".to_string(), st(5, 15)),
            ("gw2".to_string(), st(9, 20)),
        ]));
        let a = after.since(&before, "gw2");
        assert_eq!(a.victim, "gw2");
        assert_eq!(a.victim_drops, BTreeMap::from([("bad_tag".into(), 7)]));
        assert_eq!(a.drops["gw1"], BTreeMap::from([("bad_tag".into(), 4)]));
        assert_eq!(a.to_legacy["gw1"], 5);
        assert_eq!(a.to_legacy["gw2"], 0);
        assert_eq!(a.protected_in["gw2"], 7);
        assert_eq!(a.queue_drops["gw2"], 21);
    }

    #[test]
    fn only_bump_topologies_without_a_testbed_and_with_the_gateway_profile() {
        let cfg = |t: Option<Topology>, tb: Option<&str>, p: &str| {
            check(t.as_ref(), tb, &[p.parse().unwrap()])
        };
        assert!((cfg(Some(Topology::Bump2), None, GATEWAY_PROFILE)).is_ok());
        assert!((cfg(None, None, "aes128-gcm")).is_ok());
        assert!((cfg(Some(Topology::Bump2), None, "aes128-gcm")).is_err());
        assert!(cfg(Some(Topology::Bump2), Some("ivn-000000"), GATEWAY_PROFILE).is_err());
        // bump (seed 002 testbench 2: the MACsec consumer is the victim) is a gateway
        // topology too; the plain topologies are not.
        assert!((cfg(Some(Topology::Bump), None, GATEWAY_PROFILE)).is_ok());
        assert!((cfg(Some(Topology::Bump), Some("ivn-000000"), GATEWAY_PROFILE)).is_err());
        assert!((cfg(Some(Topology::Pair), None, GATEWAY_PROFILE)).is_err());
        // production: any profile (sensor1 protects itself), a testbed of its own.
        assert!((cfg(Some(Topology::Production), None, "aes128-gcm")).is_ok());
        assert!(cfg(Some(Topology::Production), Some("ivn-000000"), "aes128-gcm").is_err());
    }
}
