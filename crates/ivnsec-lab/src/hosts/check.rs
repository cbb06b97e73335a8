//! `ivnsec hosts check`: what each host of a plan has and lacks for a run, each finding with
//! how to fix it.

use serde::Serialize;

use super::{Host, Probe, version_line};

/// One finding.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Check {
    /// `ssh`, `privilege`, `interface`, `link`, `mtu`, `speed`, `ivnsec`, `pmc`.
    pub what: &'static str,
    /// `ok`, `warn` (the run works, but look) or `missing` (the run cannot work).
    pub status: &'static str,
    /// What was found.
    pub found: String,
    /// How to fix it (empty when ok).
    pub fix: String,
}

/// The findings of one host.
#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    pub name: String,
    pub ssh: String,
    pub iface: String,
    pub checks: Vec<Check>,
}

impl HostReport {
    /// Whether nothing is missing.
    pub fn ready(&self) -> bool {
        self.checks.iter().all(|c| c.status != "missing")
    }
}

fn ok(what: &'static str, found: impl Into<String>) -> Check {
    Check {
        what,
        status: "ok",
        found: found.into(),
        fix: String::new(),
    }
}

fn bad(
    what: &'static str,
    status: &'static str,
    found: impl Into<String>,
    fix: impl Into<String>,
) -> Check {
    Check {
        what,
        status,
        found: found.into(),
        fix: fix.into(),
    }
}

/// Checks `host`: SSH first (nothing else can be known without it), then what its probe said.
pub fn check(host: &Host, local_sha256: &str) -> HostReport {
    let mut r = HostReport {
        name: host.name.clone(),
        ssh: host.ssh.clone(),
        iface: host.iface.clone(),
        checks: Vec::new(),
    };
    match super::probe::run(host, local_sha256) {
        Ok(p) => {
            r.checks.push(ok("ssh", format!("reached {}", host.ssh)));
            r.checks.extend(judge(host, &p));
            if p.pmc.is_some() {
                r.checks.push(ptp(host));
            }
        }
        Err(e) => r.checks.push(bad(
            "ssh",
            "missing",
            format!("{e:#}"),
            "start sshd on the host, put the public key of ssh_options' -i KEYFILE in its \
             authorized_keys, and its host key in the known_hosts file ssh uses \
             (ssh-keyscan -H HOST >> ~/.ssh/known_hosts after checking it)",
        )),
    }
    r
}

/// The host's PTP state, read with pmc over its ssh (`clock::probe`): `ok` when synchronised
/// (or its grand master), else `warn` — a run works without it, with one-way delays estimated
/// from round trips.
fn ptp(host: &Host) -> Check {
    use crate::clock::{self, PtpState};
    let h = clock::probe(host, clock::DEFAULT_UDS, clock::DEFAULT_MAX_OFFSET_NS);
    let found = format!("{}: {}", h.state.as_str(), h.reason);
    if h.state == PtpState::Synchronised {
        ok("ptp", found)
    } else {
        bad(
            "ptp",
            "warn",
            found,
            format!(
                "run ptp4l on {} on every host (and phc2sys where the NIC timestamps in \
                 hardware); check with `ivnsec clock check`: docs/multihost.md#clocks-ptp",
                host.iface
            ),
        )
    }
}

/// The findings from a probe's answer.
pub fn judge(host: &Host, p: &Probe) -> Vec<Check> {
    let mut c = Vec::new();
    let uid = p.uid.map_or("?".to_string(), |u| u.to_string());
    c.push(if p.privileged() {
        ok(
            "privilege",
            if p.uid == Some(0) {
                "root".to_string()
            } else {
                format!("uid {uid} with CAP_NET_RAW")
            },
        )
    } else {
        bad(
            "privilege",
            "missing",
            format!("uid {uid} without CAP_NET_RAW"),
            "log in as root (ssh = \"root@HOST\") or give ivnsec raw sockets: setcap \
             cap_net_raw,cap_net_admin+ep $(command -v ivnsec)",
        )
    });
    if !p.iface {
        c.push(bad(
            "interface",
            "missing",
            format!("no interface {}", host.iface),
            "set iface to an interface of the host (ip -br link on it lists them)",
        ));
    } else {
        c.push(ok(
            "interface",
            format!(
                "{} {} {}",
                host.iface,
                p.mac.as_deref().unwrap_or("(no MAC)"),
                p.ipv4_cidr.as_deref().unwrap_or("(no IPv4)")
            ),
        ));
        c.push(if p.iface_up() {
            ok("link", p.operstate.clone().unwrap_or_default())
        } else {
            bad(
                "link",
                "missing",
                format!(
                    "{} is {}",
                    host.iface,
                    p.operstate.as_deref().unwrap_or("not up")
                ),
                format!(
                    "ip link set {} up, and check the cable and the switch port",
                    host.iface
                ),
            )
        });
        c.push(match p.mtu {
            Some(m) if m >= 1500 => ok("mtu", m.to_string()),
            Some(m) => bad(
                "mtu",
                "warn",
                format!("{m} (payloads up to 1500-byte frames need 1500)"),
                format!("ip link set {} mtu 1500", host.iface),
            ),
            None => bad(
                "mtu",
                "warn",
                "unknown",
                "check the interface's MTU (ip link)",
            ),
        });
        c.push(match p.speed_mbps {
            Some(s) => ok("speed", format!("{s} Mb/s")),
            None => bad(
                "speed",
                "warn",
                "the driver does not say (virtual interface?)",
                "throughput verdicts against the line rate need a known speed: ethtool IFACE \
                 on a physical NIC",
            ),
        });
    }
    c.push(match p.usable_ivnsec() {
        Some(path) => ok("ivnsec", format!("{} at {path}", version_line())),
        None => {
            let found = format!(
                "on the PATH: {}; in {}: {}",
                p.path_version.as_deref().unwrap_or("none"),
                p.dir,
                p.cached_version.as_deref().unwrap_or("none")
            );
            if host.may_copy() {
                bad(
                    "ivnsec",
                    "warn",
                    found,
                    format!(
                        "a run copies this ivnsec to {}/{}",
                        p.dir,
                        env!("CARGO_PKG_VERSION")
                    ),
                )
            } else {
                bad(
                    "ivnsec",
                    "missing",
                    found,
                    format!(
                        "install {} on the host's PATH, or allow copying it (copy = true)",
                        version_line()
                    ),
                )
            }
        }
    });
    c.push(match &p.pmc {
        Some(path) => ok("pmc", path.clone()),
        None => bad(
            "pmc",
            "warn",
            "no pmc (linuxptp): the run cannot read the host's PTP state",
            "apt-get install linuxptp (Debian), then run ptp4l on the interface",
        ),
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(copy: Option<bool>) -> Host {
        Host {
            name: "ecu1".into(),
            ssh: "root@192.0.2.10".into(),
            iface: "eth1".into(),
            ssh_options: vec![],
            ivnsec_dir: None,
            copy,
        }
    }

    /// A host without privilege, with its link down, a small MTU, no ivnsec and copying off:
    /// each is said with its fix; with copying allowed the missing ivnsec is only a warning.
    #[test]
    fn findings_and_fixes() {
        let p = Probe::parse(
            "dir=/d\nuid=1000\ncapeff=0\niface=yes\noperstate=down\nflags=0x1002\nmtu=1400\n\
             mac=02:00:00:00:00:01\nend=yes\n",
            "x",
        )
        .unwrap();
        let c = judge(&host(Some(false)), &p);
        let status = |w: &str| c.iter().find(|c| c.what == w).unwrap().status;
        assert_eq!(status("privilege"), "missing");
        assert_eq!(status("link"), "missing");
        assert_eq!(status("mtu"), "warn");
        assert_eq!(status("speed"), "warn");
        assert_eq!(status("ivnsec"), "missing");
        assert_eq!(status("pmc"), "warn");
        assert!(
            c.iter()
                .filter(|c| c.status != "ok")
                .all(|c| !c.fix.is_empty())
        );
        let c = judge(&host(None), &p);
        assert_eq!(
            c.iter().find(|c| c.what == "ivnsec").unwrap().status,
            "warn"
        );
        // No interface: said once, no link/MTU/speed findings about it.
        let p = Probe::parse("uid=0\niface=no\nend=yes\n", "x").unwrap();
        let c = judge(&host(None), &p);
        assert_eq!(
            c.iter().find(|c| c.what == "interface").unwrap().status,
            "missing"
        );
        assert!(!c.iter().any(|c| c.what == "mtu"));
        assert_eq!(
            c.iter().find(|c| c.what == "privilege").unwrap().status,
            "ok"
        );
    }
}
