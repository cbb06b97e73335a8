//! `ivnsec receive`: verify every unit a sender (`ivnsec send`) puts on an interface or a UDP
//! port under a key file, and count what was accepted and every drop by reason.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use ivnsec_core::profile::NamedProfile;
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_net::sys::monotonic_ns;
use serde_json::json;

use super::send::{
    UDP_RECEIVER_MAC, UDP_SENDER_MAC, iface_mac, link_err, parse_mac, stop_on_signal,
};
use crate::error::{EnvError, usage};
use ivnsec_core::channel::{Channel, ChannelOptions, Ends, REPLAY_WINDOW, sa_identity};
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::channel::open as open_channel;
use ivnsec_node::keys::keyfile;
use ivnsec_node::keys::rxmark::{self, Checkpoint, RxMark};

use crate::output::Json;
use ivnsec_net::link::{Link, LinkSpec};

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Prints `listening on …` on stderr once the link is open, then verifies every unit (tag, replay \
window, format). At the end (--count accepted units, --seconds, or SIGINT/SIGTERM) it prints the \
units received and accepted and every drop by reason (bad_tag, replay_duplicate, replay_too_old, \
…), as a table or with --json. Exit codes: 0 every unit received verified (or none came), 1 a \
unit was dropped because it failed verification (any drop reason but dummy_packet, an ESP \
dummy packet that verified and is discarded by design; the counters say which), 2 bad options \
or key file, 3 an environment problem: a --udp port already in use, an address this host does \
not have, no privilege for --iface (the message says what to do).

After a restart: with --state-dir (IVN-AE, MACsec, ESP) the receiver keeps an acceptance mark per \
key and sender SA on disk (every number it ever accepted is <= the mark, moved ahead by one \
checkpoint before a number above it is accepted), so a restarted receiver refuses every frame it \
may have accepted before (counted as replay_duplicate/replay_too_old, MACsec late, and as \
refused_below_mark). The cost: at most one checkpoint of legitimate frames refused after a \
restart (--replay-checkpoint-frames, about --replay-checkpoint-ms of traffic). Without \
--state-dir the replay window lives only in memory: a restarted receiver accepts, once, every \
frame recorded before its restart (a warning says so). SecOC and SOME/IP profiles keep no mark \
yet (they refuse --state-dir): a restarted receiver of theirs accepts recorded units once more. \
See docs/nonce-safety.md.

Examples:
  ivnsec receive --profile aes128-gcm --keys k.toml --iface eth0 --from 02:00:00:00:00:01
  ivnsec receive --profile esp-aes128-gcm --keys esp.toml --iface eth0 --from-ip 10.0.0.1 --to-ip 10.0.0.2
  ivnsec receive --profile macsec-gcm-aes-128 --keys macsec.toml --udp 127.0.0.1:7000 --json --pcap rx.pcap
  ivnsec receive --profile aes128-gcm --keys k.toml --iface eth0 --state-dir /var/lib/ivnsec \\
      --replay-checkpoint-frames 1024 --replay-checkpoint-ms 200")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…;
    /// or someip-SUITE[/auth|/conf], someip-nosec.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    /// Key file of the sender's direction (TOML with hex `key`, `mac_key`, `iv`; at most 16 KiB;
    /// an all-zero key is refused, a file others may read only warned about).
    #[arg(long, value_name = "FILE")]
    pub keys: PathBuf,
    /// Receive on this interface (raw Ethernet; ESP: IPv4 protocol 50). Needs root or
    /// CAP_NET_RAW.
    #[arg(
        long,
        value_name = "IF",
        required_unless_present = "udp",
        conflicts_with = "udp"
    )]
    pub iface: Option<String>,
    /// Receive UDP datagrams (one unit each) on ADDR:PORT instead (port 0: any free port).
    #[arg(long, value_name = "ADDR:PORT")]
    pub udp: Option<SocketAddr>,
    /// The sender's MAC (MACsec: its SCI is MAC ‖ 0001). Default 02:00:00:00:00:01, the
    /// sender's default over UDP.
    #[arg(long, value_name = "MAC")]
    pub from: Option<String>,
    /// This node's MAC. Default: the interface's, or 02:00:00:00:00:02 over UDP.
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// ESP: the sender's IPv4 address (required with --iface; default 127.0.0.1 over UDP).
    #[arg(long, value_name = "IPV4")]
    pub from_ip: Option<Ipv4Addr>,
    /// ESP: this node's IPv4 address (default 127.0.0.1 over UDP, 0.0.0.0 on an interface).
    #[arg(long, value_name = "IPV4")]
    pub to_ip: Option<Ipv4Addr>,
    /// Replay window (0: only strictly increasing sequence numbers are accepted; at most 65536).
    #[arg(long, default_value_t = REPLAY_WINDOW, value_name = "W",
          value_parser = super::replay_window_parser())]
    pub replay_window: u32,
    /// Stop after this many accepted units (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub count: u64,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// Print the counters as JSON.
    #[arg(long)]
    pub json: bool,
    /// Record every unit received, before verification (classic pcap, Ethernet; ESP gets its
    /// Ethernet/IPv4 headers).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Directory of the acceptance mark (created if missing; IVN-AE, MACsec and ESP): a
    /// restarted receiver refuses every frame it may have accepted before. Without it a
    /// restart accepts recorded frames once more. E.g. `--state-dir /var/lib/ivnsec`.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub checkpoint: ReplayCheckpointArgs,
}

/// How far a receiver's acceptance mark moves ahead (`receive`, `macsec up`, `esp up`,
/// `gateway`): the cost bound of a restart (docs/nonce-safety.md, "Receivers after a restart").
#[derive(clap::Args, Debug, Clone)]
pub struct ReplayCheckpointArgs {
    /// With --state-dir: the acceptance mark moves at most N numbers ahead, so a restart
    /// refuses at most N legitimate frames (1 to 1048576). E.g. `--replay-checkpoint-frames 1024`.
    #[arg(
        long,
        default_value_t = rxmark::DEFAULT_CHECKPOINT_FRAMES,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=rxmark::MAX_CHECKPOINT_FRAMES)
    )]
    pub replay_checkpoint_frames: u64,
    /// With --state-dir: the acceptance mark moves at most as far as the observed rate brings
    /// in T ms, so a restart refuses about T ms of traffic at most (1 to 60000); the mark is
    /// written about once per T ms. E.g. `--replay-checkpoint-ms 200`.
    #[arg(
        long,
        default_value_t = rxmark::DEFAULT_CHECKPOINT_MS,
        value_name = "T",
        value_parser = clap::value_parser!(u64).range(1..=rxmark::MAX_CHECKPOINT_MS)
    )]
    pub replay_checkpoint_ms: u64,
}

impl ReplayCheckpointArgs {
    /// The checked checkpoint (clap checked the ranges already).
    pub fn checkpoint(&self) -> Result<Checkpoint> {
        Checkpoint::new(self.replay_checkpoint_frames, self.replay_checkpoint_ms).map_err(usage)
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let family = a.profile.profile();
    let keys = keyfile::load(&a.keys, &a.profile, keyfile::Role::Receiver)?;
    let deadline_ns = match a.seconds {
        Some(s) if !s.is_finite() || s <= 0.0 || s > 1e7 => {
            return Err(usage(format!(
                "--seconds must be a number of seconds above 0, got {s}"
            )));
        }
        Some(s) => Some(monotonic_ns() + (s * 1e9) as u64),
        None => None,
    };
    let mac = |what: &str, v: &Option<String>| v.as_deref().map(|s| parse_mac(what, s)).transpose();
    let peer_mac = mac("--from", &a.from)?.unwrap_or(UDP_SENDER_MAC);
    let (local_mac, local_ip, peer_ip, spec) = match (&a.iface, a.udp) {
        (Some(_), _) if family.is_udp() => {
            return Err(usage(format!(
                "{} travels in UDP datagrams, not raw frames: use --udp ADDR:PORT",
                a.profile
            )));
        }
        (Some(ifname), _) => {
            let local = match mac("--mac", &a.mac)? {
                Some(m) => m,
                None => iface_mac(ifname)?,
            };
            let spec = if family.is_ip() {
                let Some(from) = a.from_ip else {
                    return Err(usage(
                        "ESP on an interface needs --from-ip (the sender's IPv4 address)",
                    ));
                };
                LinkSpec::RawIp {
                    protocol: 50,
                    peer: from,
                }
            } else {
                LinkSpec::Raw {
                    ifname: ifname.clone(),
                    ethertype: family.ethertype(),
                }
            };
            (
                local,
                a.to_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                a.from_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                spec,
            )
        }
        (None, Some(addr)) => (
            mac("--mac", &a.mac)?.unwrap_or(UDP_RECEIVER_MAC),
            a.to_ip.unwrap_or(Ipv4Addr::LOCALHOST),
            a.from_ip.unwrap_or(Ipv4Addr::LOCALHOST),
            LinkSpec::Udp {
                local: addr,
                peer: None,
            },
        ),
        (None, None) => return Err(usage("give --iface IF or --udp ADDR:PORT")),
    };
    let ends = Ends {
        local_mac,
        peer_mac,
        local_ip,
        peer_ip,
    };
    let opts = ChannelOptions {
        replay_window: a.replay_window,
        first_seq: 1,
        spi_offset: 0,
    };
    // Direction 1: the inbound SA is the sender's direction-0 outbound SA.
    let mut ch = open_channel(family, a.provider, &keys, &keys, ends, 1, opts)?;
    let cp = a.checkpoint.checkpoint()?;
    // The acceptance mark of the sender's SA (keyed as the sender keys its nonce state: its
    // ends, direction 0): every number <= the restored mark counts as seen.
    let mut mark = match &a.state_dir {
        Some(dir) => {
            let ident = sa_identity(family, &ends.reversed(), 0);
            let m = RxMark::open(
                dir,
                &family.nonce_domain(),
                &ident,
                &keys,
                family.max_seq(),
                cp,
            )?;
            if !ch.restore_rx_floor(m.restored()) {
                return Err(usage(format!(
                    "--state-dir: {} keeps no acceptance mark (IVN-AE, MACsec and ESP do); \
                     leave --state-dir out",
                    a.profile
                )));
            }
            Some(m)
        }
        None => {
            rxmark::warn_no_state_dir("receive");
            None
        }
    };
    let mut link = Link::open(&spec).map_err(|e| match (e.kind(), a.udp) {
        (std::io::ErrorKind::AddrInUse, Some(addr)) => anyhow::Error::new(EnvError(format!(
            "receive: udp {addr} is already in use by another process ({e}): stop that process \
             (`ss -ulpn 'sport = :{port}'` shows it) or give another port (--udp {ip}:0 picks a \
             free one)",
            port = addr.port(),
            ip = addr.ip()
        ))),
        (std::io::ErrorKind::AddrNotAvailable, Some(addr)) => {
            anyhow::Error::new(EnvError(format!(
                "receive: cannot bind udp {addr} ({e}): {} is not an address of this host; give \
                 one it has (e.g. 127.0.0.1)",
                addr.ip()
            )))
        }
        _ => link_err(e, "opening the link"),
    })?;
    let stop = stop_on_signal()?;
    let mut pcap = match &a.pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    match (&a.iface, a.udp) {
        (Some(i), _) => eprintln!("receive: listening on {i} ({})", a.profile),
        (None, Some(addr)) => eprintln!(
            "receive: listening on udp {}:{} ({})",
            addr.ip(),
            link.local_port(),
            a.profile
        ),
        _ => {}
    }
    let cap = Channel::buffer_len(9000);
    let mut rx = vec![0u8; cap];
    let mut frame_buf: Vec<u8> = Vec::with_capacity(if pcap.is_some() { cap + 64 } else { 0 });
    let off = ch.rx_offset();
    let (mut received, mut accepted) = (0u64, 0u64);
    let mut drops = DropCounters::default();
    let slice = Duration::from_millis(50);
    let stopped_by = loop {
        if stop.load(Ordering::Relaxed) {
            break "signal";
        }
        if a.count != 0 && accepted >= a.count {
            break "count";
        }
        if deadline_ns.is_some_and(|d| monotonic_ns() >= d) {
            break "seconds";
        }
        let Some(len) = link.recv(&mut rx, off, slice, false).context("receiving")? else {
            continue;
        };
        received += 1;
        if let Some(w) = pcap.as_mut() {
            ch.capture_frame(&rx[off..off + len], false, &mut frame_buf);
            w.write_frame_now(&frame_buf)?;
        }
        match ch.verify(&mut rx, len) {
            Ok(_) => {
                // Verified: the mark covers its number on disk before it counts as accepted.
                if let Some(m) = mark.as_mut() {
                    m.accept(ch.rx_highest(), monotonic_ns)
                        .map_err(rxmark::rx_error)?;
                }
                accepted += 1;
            }
            Err(reason) => drops.bump(reason),
        }
    };
    if let Some(mut w) = pcap {
        w.flush()?;
    }
    if a.json {
        let d: serde_json::Map<String, serde_json::Value> = drops
            .iter()
            .map(|(r, n)| (r.name().to_string(), json!(n)))
            .collect();
        let v = json!({
            "profile": a.profile.name(),
            "received": received,
            "accepted": accepted,
            "dropped": drops.total(),
            "drops": d,
            "stopped_by": stopped_by,
            "replay_mark": mark.as_ref().map(|m| m.json(ch.rx_below_restored())),
        });
        json.print(&v)?;
    } else {
        println!("profile   {}", a.profile);
        println!("received  {received}");
        println!("accepted  {accepted}");
        println!("dropped   {}", drops.total());
        for (r, n) in drops.iter() {
            println!("  {:<22}{n}", r.name());
        }
        if let Some(m) = &mark {
            println!(
                "replay mark restored {}, now {}, {} writes, {} refused below the mark",
                m.restored(),
                m.mark(),
                m.writes(),
                ch.rx_below_restored()
            );
        }
        println!("stopped by {stopped_by}");
    }
    Ok(ExitCode::from(exit_code(&drops)))
}

/// 1 when a unit failed verification: any drop but an ESP dummy packet (RFC 4303 §2.6), which
/// verified and is discarded by design; 0 otherwise.
fn exit_code(drops: &DropCounters) -> u8 {
    let failed = drops
        .iter()
        .filter(|(r, _)| *r != DropReason::DummyPacket)
        .any(|(_, n)| n > 0);
    u8::from(failed)
}
