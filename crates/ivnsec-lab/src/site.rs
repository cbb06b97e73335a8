//! Where the nodes of an experiment run: two ECUs of a testbed of network namespaces (raw
//! Ethernet through its software switch), or this host's loopback (UDP, no root needed); how a
//! run opens one, and the link each node opens there.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};
use ivnsec_core::channel::Ends;
use ivnsec_core::profile::Profile;
use ivnsec_net::link::LinkSpec;
use ivnsec_net::testbed::{self, Options, Testbed, TestbedState};
use ivnsec_net::topology::{self, Topology};

pub use ivnsec_node::error::net_err;
use ivnsec_node::error::usage;

/// Where the two nodes run.
#[derive(Clone, Debug)]
pub enum Site {
    /// Two ECUs of a testbed: raw Ethernet through the software switch (ESP: UDP between their
    /// addresses).
    Testbed {
        state: TestbedState,
        initiator: String,
        responder: String,
    },
    /// Both on this host's loopback, every frame in a UDP datagram (no root needed).
    Loopback,
    /// Two hosts reached over SSH (a plan's `[[host]]` tables): raw Ethernet between their
    /// interfaces; each node started there with `ssh … ivnsec node KIND`.
    Hosts {
        initiator: std::sync::Arc<crate::hosts::Remote>,
        responder: std::sync::Arc<crate::hosts::Remote>,
    },
}

impl Site {
    /// A sentence for reports.
    pub fn transport(&self) -> String {
        match self {
            Site::Testbed {
                state,
                initiator,
                responder,
            } => format!(
                "testbed {} ({}): {initiator} → switch → {responder}, raw Ethernet (AF_PACKET) \
                 over veth and a Linux bridge; ESP as IPv4 protocol 50 through the kernel's IP layer; \
                 SecOC and SOME/IP in UDP datagrams",
                state.prefix, state.topology
            ),
            Site::Loopback => "UDP on loopback (no testbed: not root), one frame per datagram; \
                               not a vehicle-network path"
                .to_string(),
            Site::Hosts {
                initiator,
                responder,
            } => format!(
                "hosts over SSH: {} ({}, {}) → {} ({}, {}), raw Ethernet (AF_PACKET) between \
                 their interfaces; ESP as IPv4 protocol 50; SecOC and SOME/IP in UDP datagrams",
                initiator.spec.name,
                initiator.spec.ssh,
                initiator.spec.iface,
                responder.spec.name,
                responder.spec.ssh,
                responder.spec.iface
            ),
        }
    }
}

/// Opens the hosts `initiator` and `responder` of a plan for a run: probes each over SSH, finds
/// or copies ivnsec there (same version), reads their interfaces' addresses.
pub fn open_hosts(
    initiator: &crate::hosts::Host,
    responder: &crate::hosts::Host,
) -> Result<OpenSite> {
    let a = crate::hosts::prepare(initiator)?;
    let b = crate::hosts::prepare(responder)?;
    Ok(OpenSite {
        site: Site::Hosts {
            initiator: std::sync::Arc::new(a),
            responder: std::sync::Arc::new(b),
        },
        testbed: None,
        fallback_reason: None,
    })
}

/// Where to run, as asked on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// A testbed when root, else UDP on loopback (and say so).
    Auto,
    /// Build a testbed (needs root).
    Testbed,
    /// UDP on loopback, no root needed.
    Loopback,
}

/// A site plus the testbed it owns (removed when dropped).
pub struct OpenSite {
    pub site: Site,
    pub testbed: Option<Testbed>,
    /// Why the loopback was used, when `auto` fell back.
    pub fallback_reason: Option<String>,
}

/// The testbed to build and the two ECUs that exchange on it.
pub struct Layout {
    pub topology: Topology,
    pub initiator: String,
    pub responder: String,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            topology: Topology::Pair,
            initiator: "ecu1".into(),
            responder: "ecu2".into(),
        }
    }
}

impl Layout {
    /// A fresh testbed of `topology` (e.g. `bump2` from `--topology`), its first ECU the
    /// initiator and its last the responder. On `bump2` these are the legacy ECUs `ecu1` and
    /// `ecu2`, and [`open_site`] starts the gateways in front of them; on `bump` the legacy
    /// `sensor1` initiates and the MACsec `consumer` responds ([`open_site`] starts the
    /// gateway and the consumer's `ivnsec macsec up`).
    pub fn of(topology: Topology) -> Layout {
        let ecus = topology.ecu_names();
        if topology == Topology::Bump {
            // Seed 002 testbench 2: the legacy sensor sends to the MACsec consumer.
            return Layout {
                topology,
                initiator: "sensor1".into(),
                responder: "consumer".into(),
            };
        }
        Layout {
            initiator: ecus.first().cloned().unwrap_or_default(),
            responder: ecus.last().cloned().unwrap_or_default(),
            topology,
        }
    }
}

/// Opens the site: an existing testbed (`prefix`; its first and last ECUs unless the layout
/// names two of its ECUs), a fresh testbed of `layout`, or loopback.
pub fn open_site(choice: Where, existing: Option<&str>, layout: &Layout) -> Result<OpenSite> {
    if let Some(prefix) = existing {
        let state = testbed::load(&testbed::default_state_dir(), prefix).map_err(net_err)?;
        let ecus: Vec<String> = state.ecus().map(|n| n.name.clone()).collect();
        if ecus.len() < 2 {
            return Err(usage(format!("testbed {prefix} has fewer than two ECUs")));
        }
        let (initiator, responder) =
            if ecus.contains(&layout.initiator) && ecus.contains(&layout.responder) {
                (layout.initiator.clone(), layout.responder.clone())
            } else {
                (ecus[0].clone(), ecus[ecus.len() - 1].clone())
            };
        return Ok(OpenSite {
            site: Site::Testbed {
                state,
                initiator,
                responder,
            },
            testbed: None,
            fallback_reason: None,
        });
    }
    let env = testbed::check_environment();
    match (choice, env) {
        (Where::Loopback, _) => Ok(OpenSite {
            site: Site::Loopback,
            testbed: None,
            fallback_reason: None,
        }),
        (Where::Auto, Err(e)) => Ok(OpenSite {
            site: Site::Loopback,
            testbed: None,
            fallback_reason: Some(e.to_string()),
        }),
        (Where::Testbed, Err(e)) => Err(net_err(e)),
        (_, Ok(())) => {
            let tb = Testbed::up(&layout.topology, &Options::default()).map_err(net_err)?;
            // A run that watches for Ctrl-C stops itself and removes the testbed on return.
            crate::interrupt::remove_on_signal(&tb).map_err(net_err)?;
            start_gateways(&tb)?;
            Ok(OpenSite {
                site: Site::Testbed {
                    state: tb.state().clone(),
                    initiator: layout.initiator.clone(),
                    responder: layout.responder.clone(),
                },
                testbed: Some(tb),
                fallback_reason: None,
            })
        }
    }
}

/// The gateway profile of the bump-in-the-wire topologies in experiments.
pub const GATEWAY_PROFILE: &str = "macsec-gcm-aes-128";

/// Starts `ivnsec gateway` in every gateway node of a fresh testbed (topologies `bump` and
/// `bump2`) and `ivnsec macsec up` in every ECU that is not behind a gateway (`bump`'s
/// `consumer`, a MACsec ECU): static keys (a fresh random SAK in a 0600 key file beside the
/// testbed's state, the nonce state of each member there too; every member has its own SCI, so
/// the one SAK never repeats a nonce), each member listing the others' protected ports as
/// peers; waits until each runs. The experiment's nodes then talk through them unchanged
/// (profile `plain`: the protection is the gateways' and the MACsec ECU's). The members end
/// with the testbed (`down` stops every process in its namespaces) or with this process
/// (`die_with_parent`).
///
/// A MACsec ECU keeps its name, MAC and address for the experiments: its link `eth0` is
/// renamed [`topology::GATEWAY_PROTECTED_IF`] (the protected port, no address) and the TAP
/// of its `macsec up` is called `eth0` (the MAC of the link, MTU 1500 = 1532 − 32) and carries
/// the address, so every experiment node opens `eth0` there as on any ECU.
pub fn start_gateways(tb: &Testbed) -> Result<()> {
    let (gws, ecus) = members(tb.state());
    if gws.is_empty() {
        return Ok(());
    }
    let dir = tb.state_dir().join(format!("{}-gateways", tb.prefix()));
    std::fs::create_dir_all(&dir).map_err(|e| anyhow!("creating {}: {e}", dir.display()))?;
    let profile: Profile = GATEWAY_PROFILE.parse().map_err(|e| anyhow!("{e}"))?;
    let keys = ivnsec_node::channel::random_keys(profile)?;
    let key_file = dir.join("ca.toml");
    let _ = std::fs::remove_file(&key_file);
    ivnsec_node::keys::keyfile::write_new(&key_file, GATEWAY_PROFILE, &keys)?;
    // Every member of the connectivity association by the MAC of its protected port.
    let all: Vec<(&str, String)> = gws
        .iter()
        .map(|g| {
            (
                g.name.as_str(),
                iface_mac(g, topology::GATEWAY_PROTECTED_IF),
            )
        })
        .chain(
            ecus.iter()
                .map(|e| (e.name.as_str(), iface_mac(e, topology::ECU_IF))),
        )
        .collect();
    let exe = std::env::current_exe().map_err(|e| anyhow!("locating the ivnsec binary: {e}"))?;
    let member_args = |cmd: &mut std::process::Command, name: &str| {
        cmd.args(["--profile", GATEWAY_PROFILE, "--keys"])
            .arg(&key_file)
            .arg("--state-dir")
            .arg(dir.join(format!("state-{name}")))
            .arg("--run-dir")
            .arg(dir.join(format!("run-{name}")))
            .arg("--events")
            .arg(dir.join(format!("events-{name}.jsonl")));
        for (_, mac) in all.iter().filter(|(n, _)| *n != name) {
            cmd.args(["--peer", mac]);
        }
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
    };
    for g in &gws {
        let mut cmd = testbed::netns_command(&g.namespace, &exe);
        cmd.args([
            "gateway",
            "--plain",
            topology::GATEWAY_PLAIN_IF,
            "--protected",
            topology::GATEWAY_PROTECTED_IF,
        ]);
        member_args(&mut cmd, &g.name);
        let what = format!("the gateway of {}", g.name);
        wait_running(cmd, &dir, &g.name, &what)?;
    }
    for e in &ecus {
        let ns = e.namespace.as_str();
        let addr = e
            .interfaces
            .iter()
            .find(|i| i.name == topology::ECU_IF)
            .and_then(|i| i.ipv4.clone())
            .ok_or_else(|| anyhow!("node {} has no address on {}", e.name, topology::ECU_IF))?;
        let prot = topology::GATEWAY_PROTECTED_IF;
        ip(ns, &["addr", "flush", "dev", topology::ECU_IF])?;
        ip(ns, &["link", "set", topology::ECU_IF, "down"])?;
        ip(ns, &["link", "set", topology::ECU_IF, "name", prot])?;
        ip(ns, &["link", "set", prot, "up"])?;
        let mut cmd = testbed::netns_command(ns, &exe);
        cmd.args(["macsec", "up", "--iface", prot, "--tap", topology::ECU_IF]);
        member_args(&mut cmd, &e.name);
        let what = format!("the MACsec of {} (ivnsec macsec up)", e.name);
        wait_running(cmd, &dir, &e.name, &what)?;
        ip(ns, &["addr", "add", &addr, "dev", topology::ECU_IF])?;
        ip(ns, &["link", "set", topology::ECU_IF, "up"])?;
    }
    Ok(())
}

/// The members of a bump-in-the-wire testbed's connectivity association: its gateways, and
/// its MACsec ECUs (the ECUs whose link does not go to a gateway's plain port). No gateways:
/// no members.
fn members(state: &TestbedState) -> (Vec<&testbed::NodeState>, Vec<&testbed::NodeState>) {
    let gws: Vec<&testbed::NodeState> = state
        .nodes
        .iter()
        .filter(|n| n.kind == topology::NodeKind::Gateway.as_str())
        .collect();
    if gws.is_empty() {
        return (gws, Vec::new());
    }
    let behind_gateway = |n: &testbed::NodeState| {
        n.interfaces.iter().any(|i| {
            i.peer.as_deref().is_some_and(|p| {
                p.split_once('/').is_some_and(|(node, port)| {
                    port == topology::GATEWAY_PLAIN_IF && gws.iter().any(|g| g.name == node)
                })
            })
        })
    };
    // Only `bump` has a MACsec ECU whose SecY the run starts (its consumer). On `production`
    // the ECUs that are not behind a gateway protect themselves per experiment (their profile),
    // and the consumer's `eth0` is a bridge over its uplinks: the gateways run alone there.
    if state.topology != Topology::Bump.to_string() {
        return (gws, Vec::new());
    }
    let ecus = state.ecus().filter(|n| !behind_gateway(n)).collect();
    (gws, ecus)
}

fn iface_mac(n: &testbed::NodeState, name: &str) -> String {
    n.interfaces
        .iter()
        .find(|i| i.name == name)
        .map(|i| i.mac.clone())
        .unwrap_or_default()
}

/// `ip -n NS ARGS…` (a namespace of the run's own testbed).
fn ip(ns: &str, args: &[&str]) -> Result<()> {
    let o = ivnsec_net::sys::die_with_parent(&mut std::process::Command::new("ip"))
        .args(["-n", ns])
        .args(args)
        .output()
        .map_err(|e| anyhow!("running ip: {e}"))?;
    if !o.status.success() {
        return Err(anyhow!(
            "ip -n {ns} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(())
}

/// Spawns `cmd` (a gateway or a `macsec up` of member `name`) and waits until its status file
/// says it runs (written before frames move).
fn wait_running(mut cmd: std::process::Command, dir: &Path, name: &str, what: &str) -> Result<()> {
    let mut child = ivnsec_net::sys::die_with_parent(&mut cmd)
        .spawn()
        .map_err(|e| anyhow!("starting {what}: {e}"))?;
    let status_dir = dir.join(format!("run-{name}")).join("macsec");
    let t0 = std::time::Instant::now();
    loop {
        let up = std::fs::read_dir(&status_dir)
            .map(|mut d| {
                d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json")))
            })
            .unwrap_or(false);
        if up {
            break;
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(anyhow!(
                "{what} ended at start ({st}); see {}",
                dir.display()
            ));
        }
        if t0.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            return Err(anyhow!("{what} did not start within 10 s"));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Reaped when it ends (with the testbed).
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// The members [`start_gateways`] started on testbed `state` (in its default state
/// directory) with the process id each wrote into its status file: the gateways by name, the
/// MACsec ECUs' `macsec up` as `<ECU>-macsec` (after the gateways). Empty for a testbed
/// without gateways or whose gateways were started by hand.
pub fn gateway_pids(state: &TestbedState) -> Vec<(String, u32)> {
    let dir = testbed::default_state_dir().join(format!("{}-gateways", state.prefix));
    let (gws, ecus) = members(state);
    let named = gws
        .iter()
        .map(|g| (g.name.clone(), g))
        .chain(ecus.iter().map(|e| (format!("{}-macsec", e.name), e)));
    named
        .filter_map(|(role, g)| {
            let st = dir.join(format!("run-{}", g.name)).join("macsec");
            let rd = std::fs::read_dir(st).ok()?;
            rd.take(100).flatten().find_map(|e| {
                if !e.file_name().to_string_lossy().ends_with(".json") {
                    return None;
                }
                let mut text = String::new();
                std::io::Read::read_to_string(
                    &mut std::io::Read::take(std::fs::File::open(e.path()).ok()?, 1 << 20),
                    &mut text,
                )
                .ok()?;
                let v: serde_json::Value = serde_json::from_str(&text).ok()?;
                let pid = u32::try_from(v["pid"].as_u64()?).ok()?;
                Some((role.clone(), pid))
            })
        })
        .collect()
}

/// CPU time a process has used so far, in ns: the sum over its threads of
/// `/proc/PID/task/TID/schedstat`'s first field (time on a CPU, user and system). `None` when
/// the process is gone.
pub fn process_cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = 0u64;
    for t in tasks.take(4096).flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        sum += text
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(sum)
}

/// The link of a node with `ends`: raw Ethernet (IVN-AE, MACsec), raw IPv4 (ESP) or UDP between
/// the two addresses on the family's port (SecOC: from the peer's address and port only;
/// SOME/IP: from any client) on a testbed; UDP on loopback, where the initiator sends to the
/// responder's `peer_port` and the responder answers whoever sent.
pub fn link_spec(testbed: bool, profile: Profile, ends: &Ends, peer_port: Option<u16>) -> LinkSpec {
    if testbed {
        return link_spec_on(topology::ECU_IF, profile, ends);
    }
    link_spec_inner(false, profile, ends, peer_port)
}

/// The link of a node whose frames use interface `ifname` (a testbed ECU's, or a host's):
/// raw Ethernet, raw IPv4 (ESP) or UDP between the two addresses.
pub fn link_spec_on(ifname: &str, profile: Profile, ends: &Ends) -> LinkSpec {
    match link_spec_inner(true, profile, ends, None) {
        LinkSpec::Raw { ethertype, .. } => LinkSpec::Raw {
            ifname: ifname.to_string(),
            ethertype,
        },
        other => other,
    }
}

fn link_spec_inner(
    testbed: bool,
    profile: Profile,
    ends: &Ends,
    peer_port: Option<u16>,
) -> LinkSpec {
    if testbed && profile.is_udp() {
        let port = profile.udp_port();
        let local = SocketAddr::new(IpAddr::V4(ends.local_ip), port);
        let peer = SocketAddr::new(IpAddr::V4(ends.peer_ip), port);
        return match profile {
            Profile::Secoc(_) => LinkSpec::UdpPeer { local, peer },
            _ => LinkSpec::Udp {
                local,
                peer: Some(peer),
            },
        };
    }
    match (testbed, profile.is_ip()) {
        (true, false) => LinkSpec::Raw {
            ifname: topology::ECU_IF.to_string(),
            ethertype: profile.ethertype(),
        },
        (true, true) => LinkSpec::RawIp {
            protocol: ivnsec_core::wire::ip::protocol::ESP,
            peer: ends.peer_ip,
        },
        (false, _) => LinkSpec::Udp {
            local: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            peer: peer_port.map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p)),
        },
    }
}

/// A testbed node as an experiment starts a process in it: its namespace, and the MAC and IPv4
/// address of its ECU interface.
pub fn testbed_node(
    state: &TestbedState,
    node: &str,
) -> Result<(Option<String>, [u8; 6], Ipv4Addr)> {
    let (mac, ip) = node_addr(state, node)?;
    let ns = state.namespace_of(node).map_err(|e| anyhow!("{e}"))?;
    Ok((Some(ns.to_string()), mac, ip))
}

/// MAC and IPv4 address of a testbed node's ECU interface.
pub fn node_addr(state: &TestbedState, node: &str) -> Result<([u8; 6], Ipv4Addr)> {
    let n = state
        .node(node)
        .ok_or_else(|| usage(format!("testbed {} has no node `{node}`", state.prefix)))?;
    let i = n
        .interfaces
        .iter()
        .find(|i| i.name == topology::ECU_IF)
        .ok_or_else(|| anyhow!("node {node} has no {} interface", topology::ECU_IF))?;
    let mac = topology::parse_mac(&i.mac).ok_or_else(|| anyhow!("bad MAC {}", i.mac))?;
    let ip = i
        .ipv4
        .as_deref()
        .and_then(|s| s.split('/').next())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("node {node} has no IPv4 address"))?;
    Ok((mac, ip))
}

/// Whether the reference tool `tool` (sockperf, iperf3) can be run; when not, says on stderr
/// that `command` runs without that baseline and how to get it.
pub fn baseline_tool_installed(command: &str, tool: &str) -> bool {
    let ok = ivnsec_net::sys::die_with_parent(&mut std::process::Command::new(tool))
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok();
    if !ok {
        eprintln!(
            "ivnsec {command}: {tool} is not installed; no baseline (Debian: apt-get install {tool})"
        );
    }
    ok
}

/// Where a run writes one node's capture before it joins the run's capture `file`.
pub fn part_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    file.with_file_name(name)
}

/// Appends every record of the capture `part` (if a node wrote one) to `w` and removes it.
pub fn append_pcap(
    w: &mut ivnsec_net::pcap::PcapWriter<impl std::io::Write>,
    part: &Path,
) -> Result<()> {
    if !part.exists() {
        return Ok(());
    }
    let mut r = ivnsec_net::pcap::PcapReader::open(part)
        .map_err(|e| anyhow!("reading {}: {e}", part.display()))?;
    while let Some(rec) = r.next_record() {
        let rec = rec.map_err(|e| anyhow!("reading {}: {e}", part.display()))?;
        w.write_frame(rec.timestamp, rec.data)?;
    }
    std::fs::remove_file(part).map_err(|e| anyhow!("removing {}: {e}", part.display()))?;
    Ok(())
}

/// Creates `dir` (and parents) or explains why not (exit 2).
pub fn ensure_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        usage(format!(
            "cannot create the output directory {}: {e}",
            dir.display()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The members of the connectivity association on the bump-in-the-wire topologies: every
    /// gateway, plus on `bump` the consumer (its link goes to the switch, not to a gateway's
    /// plain port); the legacy ECUs behind the gateways are not members; no gateways, no
    /// members (the plain topologies start nothing).
    #[test]
    fn members_are_the_gateways_and_the_ecus_not_behind_one() {
        let names = |t: Topology| {
            let st = TestbedState::planned("ivn-000000", &t);
            let (g, e) = members(&st);
            (
                g.iter().map(|n| n.name.clone()).collect::<Vec<_>>(),
                e.iter().map(|n| n.name.clone()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            names(Topology::Bump),
            (vec!["gw1".into()], vec!["consumer".into()])
        );
        assert_eq!(
            names(Topology::Bump2),
            (vec!["gw1".into(), "gw2".into()], vec![])
        );
        assert_eq!(
            names(Topology::Production),
            (vec!["gw3".into(), "gw4".into()], vec![])
        );
        assert_eq!(names(Topology::Pair), (vec![], vec![]));
        assert_eq!(names(Topology::Sensors(2)), (vec![], vec![]));
    }

    /// On `bump` the legacy sensor sends to the MACsec consumer (seed 002 testbench 2); on
    /// `bump2` the first legacy ECU to the last.
    #[test]
    fn bump_layouts_send_from_the_legacy_sensor() {
        let l = Layout::of(Topology::Bump);
        assert_eq!(
            (l.initiator.as_str(), l.responder.as_str()),
            ("sensor1", "consumer")
        );
        let l = Layout::of(Topology::Bump2);
        assert_eq!(
            (l.initiator.as_str(), l.responder.as_str()),
            ("ecu1", "ecu2")
        );
    }
}
