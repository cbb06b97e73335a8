//! `send` and `receive` without the command line: a stream of protected units under the
//! long-term key of a key file, on an interface (raw Ethernet; ESP as IPv4 protocol 50) or over
//! UDP, every number reserved on disk before use ([`send`]), and the receiver that verifies them
//! and counts every drop by reason, with its acceptance mark on disk ([`receive`]). Each is
//! opened from typed settings first and run second, so the caller installs its signal handler
//! in between; the binary prints the reports.

use std::fs::File;
use std::io::BufWriter;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::anyhow;

use crate::error::{EnvError, parse_mac, usage};

pub mod receive;
pub mod send;

/// This node's MAC over UDP unless `--mac` says otherwise (sender side).
pub const UDP_SENDER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
/// The receiver's MAC over UDP unless `--to` / `--mac` say otherwise.
pub const UDP_RECEIVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// IP protocol number of ESP.
const IPPROTO_ESP: u8 = 50;

/// Where the units travel: an interface (raw Ethernet; ESP as IPv4 protocol 50) or UDP.
#[derive(Debug, Clone)]
pub enum On {
    /// `--iface IF`.
    Iface(String),
    /// `--udp ADDR:PORT`: the receiver's address (send) or the one to bind (receive).
    Udp(SocketAddr),
}

/// The MAC of interface `ifname` (from sysfs, which `ip netns exec` shows per namespace).
pub fn iface_mac(ifname: &str) -> anyhow::Result<[u8; 6]> {
    let p = Path::new("/sys/class/net").join(ifname).join("address");
    let s = std::fs::read_to_string(&p).map_err(|e| {
        usage(format!(
            "--iface {ifname}: no such interface here ({}: {e}); `ip link` lists them",
            p.display()
        ))
    })?;
    parse_mac("--iface", &s)
}

/// The MTU of interface `ifname` (from sysfs), if it can be read.
fn iface_mtu(ifname: &str) -> Option<usize> {
    let p = Path::new("/sys/class/net").join(ifname).join("mtu");
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// Maps a link-open error: permission problems are environment errors (exit 3).
fn link_err(e: std::io::Error, what: &str) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        anyhow::Error::new(EnvError(format!(
            "{what}: {e}; raw sockets need root or CAP_NET_RAW (or use --udp ADDR:PORT)"
        )))
    } else {
        anyhow!("{what}: {e}")
    }
}

/// The refusal of `--iface` for a profile that travels in UDP datagrams.
fn udp_only(profile: &impl std::fmt::Display) -> anyhow::Error {
    usage(format!(
        "{profile} travels in UDP datagrams, not raw frames: use --udp ADDR:PORT"
    ))
}

/// A capture file of units sent or received.
type Pcap = ivnsec_net::pcap::PcapWriter<BufWriter<File>>;

/// Creates the capture file `--pcap` names, if any.
fn create_pcap(path: Option<&Path>) -> anyhow::Result<Option<Pcap>> {
    use anyhow::Context;
    path.map(|p| {
        ivnsec_net::pcap::PcapWriter::create(p).with_context(|| format!("creating {}", p.display()))
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddr};
    use std::path::PathBuf;

    use ivnsec_core::sa::{DropCounters, DropReason};

    use super::On;
    use super::receive::ReceiveReport;
    use super::send::{SendSettings, Sender};
    use crate::error::exit_code;

    fn settings() -> SendSettings {
        SendSettings {
            profile: "aes128-gcm".parse().unwrap(),
            keys: PathBuf::from("/nonexistent/k.toml"),
            on: On::Udp(SocketAddr::from((Ipv4Addr::LOCALHOST, 9))),
            to: None,
            mac: None,
            to_ip: None,
            from_ip: None,
            payload: 64,
            count: 1,
            rate: 0.0,
            state_dir: Some(PathBuf::from("/nonexistent/state")),
            reserve_block: 16,
            seq_limit: None,
            confirm_new_key: false,
            pcap: None,
            provider: Default::default(),
        }
    }

    fn refusal(s: &SendSettings) -> anyhow::Error {
        match Sender::open(s) {
            Ok(_) => panic!("opened"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_sender_is_refused_before_its_key_is_read() {
        let mut s = settings();
        s.state_dir = None;
        let e = refusal(&s);
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("without --state-dir"), "{e}");

        let mut s = settings();
        s.rate = -1.0;
        assert!(refusal(&s).to_string().contains("--rate"));

        let mut s = settings();
        s.payload = 70_000;
        assert!(refusal(&s).to_string().contains("--payload 70000"));
    }

    fn report(reasons: &[DropReason]) -> ReceiveReport {
        let mut drops = DropCounters::default();
        for r in reasons {
            drops.bump(*r);
        }
        ReceiveReport {
            received: reasons.len() as u64,
            accepted: 0,
            drops,
            stopped_by: "count",
            mark: None,
            refused_below_mark: 0,
        }
    }

    #[test]
    fn only_a_failed_verification_makes_exit_1() {
        assert_eq!(report(&[]).exit_code(), 0);
        assert_eq!(report(&[DropReason::DummyPacket]).exit_code(), 0);
        assert_eq!(
            report(&[DropReason::DummyPacket, DropReason::BadTag]).exit_code(),
            1
        );
    }
}
