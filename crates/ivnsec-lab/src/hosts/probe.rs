//! One SSH round trip that reads what a run and `ivnsec hosts check` need to know about a host:
//! the SSH user's privilege, the interface (present, up, MTU, speed, addresses), ivnsec (on the
//! PATH, or a copy in `ivnsec_dir`) and `pmc`. The host answers `key=value` lines from a POSIX
//! shell script; the answer is read with a bound and every value is optional.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use super::{Host, ssh_error, ssh_failed, version_line};
use ivnsec_node::error::env_error;

/// The script the host runs (`sh -c SCRIPT sh IFACE DIR VERSION`).
const SCRIPT: &str = r#"IF="$1"; V="$3"; D="${2:-$HOME/.cache/ivnsec}"
echo "dir=$D"
echo "kernel=$(uname -r 2>/dev/null)"
echo "cores=$(nproc 2>/dev/null)"
echo "cpu=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)"
echo "uid=$(id -u)"
echo "capeff=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status 2>/dev/null)"
N="/sys/class/net/$IF"
if [ -n "$IF" ] && [ -d "$N" ]; then
  echo "iface=yes"
  echo "operstate=$(cat "$N/operstate" 2>/dev/null)"
  echo "flags=$(cat "$N/flags" 2>/dev/null)"
  echo "mtu=$(cat "$N/mtu" 2>/dev/null)"
  echo "speed=$(cat "$N/speed" 2>/dev/null)"
  if command -v ethtool >/dev/null 2>&1; then
    echo "ethtool_speed=$(ethtool "$IF" 2>/dev/null | sed -n 's/^[[:space:]]*Speed:[[:space:]]*//p')"
  fi
  echo "mac=$(cat "$N/address" 2>/dev/null)"
  echo "ipv4=$(ip -4 -o addr show dev "$IF" 2>/dev/null | awk '{print $4; exit}')"
else
  echo "iface=no"
fi
if P=$(command -v ivnsec 2>/dev/null); then
  echo "path_ivnsec=$P"
  echo "path_version=$("$P" --version 2>/dev/null | head -n 1)"
fi
C="$D/$V/ivnsec"
if [ -f "$C" ]; then
  echo "cached_ivnsec=$C"
  echo "cached_owner=$(stat -c '%u %a' "$C" 2>/dev/null) $(stat -c '%u %a' "$D/$V" 2>/dev/null)"
  # Only a copy of the SSH user's own is run (another's could be anything).
  if [ "$(stat -c %u "$C" 2>/dev/null)" = "$(id -u)" ]; then
    echo "cached_version=$("$C" --version 2>/dev/null | head -n 1)"
    echo "cached_sha256=$(sha256sum "$C" 2>/dev/null | awk '{print $1}')"
  fi
fi
if P=$(command -v pmc 2>/dev/null); then echo "pmc=$P"; fi
echo "end=yes"
"#;

/// What a host said about itself.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Probe {
    /// Where ivnsec copies of this version are looked for and put.
    pub dir: String,
    /// `uname -r`, `nproc` and the CPU model of the host.
    pub kernel: Option<String>,
    pub cores: Option<u32>,
    pub cpu: Option<String>,
    pub uid: Option<u32>,
    /// The SSH user's effective capabilities (hex mask of `/proc/self/status`).
    pub capeff: Option<u64>,
    /// The interface exists.
    pub iface: bool,
    pub operstate: Option<String>,
    /// `IFF_*` flags of the interface.
    pub flags: Option<u32>,
    pub mtu: Option<u32>,
    /// Link speed in Mb/s (`/sys/class/net/IF/speed`, else ethtool), when the driver says.
    pub speed_mbps: Option<u64>,
    pub mac: Option<String>,
    /// `ADDRESS/PREFIX` of the interface's first IPv4 address.
    pub ipv4_cidr: Option<String>,
    pub path_ivnsec: Option<String>,
    pub path_version: Option<String>,
    pub cached_ivnsec: Option<String>,
    pub cached_version: Option<String>,
    pub cached_sha256: Option<String>,
    /// Owner and mode (octal) of the copy and of its directory.
    pub cached_owner: Option<String>,
    /// This binary's SHA-256 (a copy in `dir` is used only when it is this very binary).
    pub local_sha256: String,
    pub pmc: Option<String>,
}

/// `CAP_NET_RAW`'s bit.
const CAP_NET_RAW: u32 = 13;
/// `IFF_UP`.
const IFF_UP: u32 = 1;

impl Probe {
    /// Parses the script's answer (unknown keys ignored; `end=yes` must come: a cut answer is
    /// an error).
    pub fn parse(text: &str, local_sha256: &str) -> Option<Probe> {
        let mut p = Probe {
            local_sha256: local_sha256.to_string(),
            ..Probe::default()
        };
        let mut ended = false;
        let some = |v: &str| (!v.is_empty()).then(|| v.to_string());
        for line in text.lines().take(1000) {
            let Some((k, v)) = line.split_once('=') else {
                continue;
            };
            let v = v.trim();
            match k {
                "dir" => p.dir = v.to_string(),
                "kernel" => p.kernel = some(v),
                "cores" => p.cores = v.parse().ok(),
                "cpu" => p.cpu = some(v),
                "uid" => p.uid = v.parse().ok(),
                "capeff" => p.capeff = u64::from_str_radix(v, 16).ok(),
                "iface" => p.iface = v == "yes",
                "operstate" => p.operstate = some(v),
                "flags" => {
                    p.flags = u32::from_str_radix(v.trim_start_matches("0x"), 16).ok();
                }
                "mtu" => p.mtu = v.parse().ok(),
                // The kernel says -1 (or fails to read) when the driver does not know.
                "speed" => {
                    p.speed_mbps = v.parse::<i64>().ok().filter(|&s| s > 0).map(|s| s as u64);
                }
                "ethtool_speed" if p.speed_mbps.is_none() => {
                    p.speed_mbps = v.strip_suffix("Mb/s").and_then(|s| s.parse().ok());
                }
                "mac" => p.mac = some(v),
                "ipv4" => p.ipv4_cidr = some(v),
                "path_ivnsec" => p.path_ivnsec = some(v),
                "path_version" => p.path_version = some(v),
                "cached_ivnsec" => p.cached_ivnsec = some(v),
                "cached_version" => p.cached_version = some(v),
                "cached_sha256" => p.cached_sha256 = some(v),
                "cached_owner" => p.cached_owner = some(v),
                "pmc" => p.pmc = some(v),
                "end" => ended = v == "yes",
                _ => {}
            }
        }
        ended.then_some(p)
    }

    /// Root, or `CAP_NET_RAW` (raw sockets).
    pub fn privileged(&self) -> bool {
        self.uid == Some(0) || self.capeff.is_some_and(|c| c & (1 << CAP_NET_RAW) != 0)
    }

    /// The interface is administratively up and its link is not down.
    pub fn iface_up(&self) -> bool {
        self.iface
            && self.flags.is_some_and(|f| f & IFF_UP != 0)
            && !matches!(
                self.operstate.as_deref(),
                Some("down" | "lowerlayerdown" | "notpresent")
            )
    }

    /// The interface's IPv4 address.
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        self.ipv4_cidr.as_deref()?.split('/').next()?.parse().ok()
    }

    /// The copy in `dir` and its directory belong to the SSH user and only it may write them
    /// (nobody else could have swapped the binary between the probe and the run).
    pub fn cached_is_own(&self) -> bool {
        let Some(owner) = &self.cached_owner else {
            return false;
        };
        let f: Vec<&str> = owner.split_whitespace().collect();
        let [file_uid, file_mode, dir_uid, dir_mode] = f[..] else {
            return false;
        };
        let uid = self.uid.map(|u| u.to_string());
        let private = |m: &str| u32::from_str_radix(m, 8).is_ok_and(|m| m & 0o022 == 0);
        uid.as_deref() == Some(file_uid)
            && uid.as_deref() == Some(dir_uid)
            && private(file_mode)
            && private(dir_mode)
    }

    /// The ivnsec to run there: the PATH's when it prints this version, else the copy in `dir`
    /// when it is this very binary.
    pub fn usable_ivnsec(&self) -> Option<String> {
        if self.path_version.as_deref() == Some(version_line().as_str()) {
            return self.path_ivnsec.clone();
        }
        if self.cached_version.as_deref() == Some(version_line().as_str())
            && self.cached_sha256.as_deref() == Some(self.local_sha256.as_str())
            && self.cached_is_own()
        {
            return self.cached_ivnsec.clone();
        }
        None
    }
}

/// Runs the probe on `host`; `local_sha256` is this binary's digest. An SSH failure (down,
/// unreachable, key refused, host key wrong) is an environment error naming the host.
pub fn run(host: &Host, local_sha256: &str) -> Result<Probe> {
    let dir = host.ivnsec_dir.clone().unwrap_or_default();
    let (status, out, err) = super::run(
        host,
        &[
            "sh",
            "-c",
            SCRIPT,
            "sh",
            &host.iface,
            &dir,
            env!("CARGO_PKG_VERSION"),
        ],
        None,
        Duration::from_secs(30),
    )?;
    if ssh_failed(&status) {
        return Err(ssh_error(host, &err));
    }
    Probe::parse(&out, local_sha256).ok_or_else(|| {
        env_error(format!(
            "{}: its shell did not answer the probe ({status}): {err}; the SSH user needs a \
             POSIX sh",
            host.label()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The script runs in this host's sh on its loopback interface and says what /sys says.
    #[test]
    fn script_answers_on_this_host() {
        let out = std::process::Command::new("sh")
            .args(["-c", SCRIPT, "sh", "lo", "/nonexistent-dir", "0.0.0"])
            .output()
            .unwrap();
        let p = Probe::parse(&String::from_utf8_lossy(&out.stdout), "x").unwrap();
        assert!(p.iface);
        let mtu: u32 = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(p.mtu, Some(mtu));
        assert_eq!(p.dir, "/nonexistent-dir");
        let cores = std::thread::available_parallelism().unwrap().get() as u32;
        assert!(p.cores.is_some_and(|c| c >= cores), "{:?}", p.cores);
        assert_eq!(
            p.kernel.as_deref(),
            Some(
                std::fs::read_to_string("/proc/sys/kernel/osrelease")
                    .unwrap()
                    .trim()
            )
        );
        assert_eq!(p.cached_ivnsec, None);
        let out = std::process::Command::new("sh")
            .args(["-c", SCRIPT, "sh", "no-such-if0", "", "0.0.0"])
            .output()
            .unwrap();
        let p = Probe::parse(&String::from_utf8_lossy(&out.stdout), "x").unwrap();
        assert!(!p.iface);
        assert!(p.dir.ends_with("/.cache/ivnsec"), "{}", p.dir);
    }

    /// Parsing: capabilities, flags, speeds, a cut answer, and which ivnsec is usable.
    #[test]
    fn parse_answers() {
        let v = version_line();
        let text = format!(
            "dir=/d\nuid=1000\ncapeff=0000000000002000\niface=yes\noperstate=up\nflags=0x1003\n\
             mtu=1500\nspeed=-1\nethtool_speed=1000Mb/s\nmac=02:00:00:00:00:01\n\
             ipv4=10.0.0.1/24\ncached_ivnsec=/d/x/ivnsec\ncached_version={v}\n\
             cached_sha256=abc\ncached_owner=1000 755 1000 755\nend=yes\n"
        );
        let p = Probe::parse(&text, "abc").unwrap();
        assert!(p.privileged());
        assert!(p.iface_up());
        assert_eq!(p.speed_mbps, Some(1000));
        assert_eq!(p.ipv4(), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(p.usable_ivnsec().as_deref(), Some("/d/x/ivnsec"));
        // Another build of the same version is not used.
        let p = Probe::parse(&text, "def").unwrap();
        assert_eq!(p.usable_ivnsec(), None);
        // Nor a copy another user owns, or others may write (or its directory).
        for owner in [
            "0 755 1000 755",
            "1000 775 1000 755",
            "1000 755 1000 777",
            "1000 755",
            "",
        ] {
            let t = text.replace(
                "cached_owner=1000 755 1000 755",
                &format!("cached_owner={owner}"),
            );
            let p = Probe::parse(&t, "abc").unwrap();
            assert_eq!(p.usable_ivnsec(), None, "{owner}");
        }
        // Without CAP_NET_RAW, not root: not privileged; an interface down is not up.
        let p = Probe::parse("uid=1000\ncapeff=0\niface=yes\nflags=0x1002\nend=yes\n", "").unwrap();
        assert!(!p.privileged());
        assert!(!p.iface_up());
        assert!(Probe::parse("uid=0\n", "").is_none());
    }
}
