//! `ivnsec send`: stream protected units under a long-term key from a key file, on an interface
//! (raw Ethernet; ESP as IPv4 protocol 50) or over UDP, never reusing a sequence number / PN /
//! nonce across restarts (the reservation in `--state-dir`, docs/nonce-safety.md).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use ivnsec_net::sys::monotonic_ns;
use serde_json::json;

use crate::error::{EnvError, usage};
use ivnsec_core::channel::{
    Channel, ChannelOptions, DirectionKeys, Ends, REPLAY_WINDOW, UDP_AT, sa_identity,
};
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::channel::open as open_channel;
use ivnsec_node::keys::highwater::{self, HighWater, HwError};
use ivnsec_node::keys::keyfile;

use crate::output::Json;
use ivnsec_net::link::{Link, LinkSpec};

/// This node's MAC over UDP unless `--mac` says otherwise (sender side).
pub const UDP_SENDER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
/// The receiver's MAC over UDP unless `--to` / `--mac` say otherwise.
pub const UDP_RECEIVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// IP protocol number of ESP.
const IPPROTO_ESP: u8 = 50;
/// Largest `--payload`: no link we send on carries a larger unit.
const MAX_PAYLOAD: usize = 65_535;
/// Largest UDP payload over IPv4 (65,535 − 20 − 8): the largest unit `--udp` can carry.
const MAX_UDP_UNIT: usize = 65_507;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every unit carries the next sequence number / PN of the SA. Before a number is used it is \
reserved on disk in --state-dir (blocks of --reserve-block, written to a temporary file, fsynced, \
renamed, directory fsynced), so a sender restarted under the same key — after a crash or kill -9 \
— resumes above every number it may have sent and never repeats a (key, nonce) pair. When the \
numbers run out (--seq-limit, or 2^32 − 1 for MACsec without XPN and for ESP) it stops with exit \
code 1: a new key must be installed. See docs/nonce-safety.md.

The key file must have a `profile` line naming the same suite as --profile (another level of it, \
e.g. aes128-gcm/auth for aes128-gcm, is fine): one key serves one suite, and the nonce state is \
kept per suite, not per spelling. The file must be private (mode 0600). The first reservation \
records the SA in KEYFILE.used beside the key file; a later start that finds the SA recorded but \
no state in --state-dir (a mistyped directory, a deleted file) refuses to count from 1 again \
unless --i-know-this-key-is-new is given.

The summary's `stopped_by` says why sending ended: count, signal, exhausted (new key needed, exit \
1), state_write_failed (the state could not be written, e.g. a full disk: exit 3, fix and \
restart), state_lock_lost (the state directory or lock was touched under the running sender: \
exit 3), error (a send failed).

The payload's first 8 bytes carry the unit's index in this run (big-endian), the rest are zero.

Examples (one key file per profile):
  ivnsec keygen --profile aes128-gcm --out k.toml
  ivnsec keygen --profile macsec-gcm-aes-128 --out macsec.toml
  ivnsec send --profile aes128-gcm --keys k.toml --iface eth0 --to 02:00:00:00:00:02 --state-dir /var/lib/ivnsec
  ivnsec send --profile esp-aes128-gcm --keys esp.toml --iface eth0 --to-ip 10.0.0.2 --from-ip 10.0.0.1 --state-dir st
  ivnsec send --profile macsec-gcm-aes-128 --keys macsec.toml --udp 127.0.0.1:7000 --state-dir st --count 1000 --rate 500
  # only for a key that is known never to have sent under this SA, whose record says otherwise:
  ivnsec send --profile aes128-gcm --keys k.toml --udp 127.0.0.1:7000 --state-dir st2 --i-know-this-key-is-new")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…;
    /// or someip-SUITE[/auth|/conf], someip-nosec.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    /// Key file (TOML with `profile` and hex `key`, `mac_key`, `iv`; `ivnsec keygen` writes
    /// one). Must be mode 0600 (no group/other access) and name --profile's suite.
    #[arg(long, value_name = "FILE")]
    pub keys: PathBuf,
    /// Send on this interface: raw Ethernet frames (ESP: IPv4 protocol 50 through the kernel's
    /// IP layer). Needs root or CAP_NET_RAW.
    #[arg(
        long,
        value_name = "IF",
        required_unless_present = "udp",
        conflicts_with = "udp"
    )]
    pub iface: Option<String>,
    /// Send every unit in a UDP datagram to ADDR:PORT instead of an interface (no root needed).
    #[arg(long, value_name = "ADDR:PORT")]
    pub udp: Option<SocketAddr>,
    /// Destination MAC (the receiver's), aa:bb:cc:dd:ee:ff. Needed with --iface for IVN-AE and
    /// MACsec; over UDP it defaults to 02:00:00:00:00:02.
    #[arg(long, value_name = "MAC")]
    pub to: Option<String>,
    /// This node's MAC (source address; the MACsec SCI is MAC ‖ 0001). Default: the
    /// interface's MAC, or 02:00:00:00:00:01 over UDP.
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// ESP: the receiver's IPv4 address (required with --iface; default 127.0.0.1 over UDP).
    #[arg(long, value_name = "IPV4")]
    pub to_ip: Option<Ipv4Addr>,
    /// ESP: this node's IPv4 address (required with --iface; default 127.0.0.1 over UDP).
    #[arg(long, value_name = "IPV4")]
    pub from_ip: Option<Ipv4Addr>,
    /// Payload bytes per unit. The protected unit must fit the link: the interface's MTU with
    /// --iface, one UDP datagram (65,507 bytes) with --udp; checked before anything is reserved.
    #[arg(long, default_value_t = 64)]
    pub payload: usize,
    /// Units to send; 0 sends until SIGINT or SIGTERM.
    #[arg(long, default_value_t = 0)]
    pub count: u64,
    /// Units per second; 0 sends as fast as possible.
    #[arg(long, default_value_t = 0.0, value_name = "PPS")]
    pub rate: f64,
    /// Directory of the persistent nonce state (required: without it a restart under the same
    /// key would reuse sequence numbers). Created if missing.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Sequence numbers reserved per state write, 1 to 1048576 (2^20). Larger: fewer fsyncs; a
    /// crash skips at most this many numbers. The bound keeps a crash from burning more than
    /// 1/4096 of a 32-bit PN space (MACsec without XPN, ESP) while still allowing one write per
    /// 0.7 s at 1.5 M units/s (1 Gb/s of minimum-size frames).
    #[arg(
        long,
        default_value_t = highwater::DEFAULT_BLOCK,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=highwater::MAX_BLOCK)
    )]
    pub reserve_block: u64,
    /// Highest sequence number / PN this key may carry (below the protocol's own limit); the
    /// sender stops with exit code 1 when it is used.
    #[arg(long, value_name = "N")]
    pub seq_limit: Option<u64>,
    /// Start at sequence number 1 although KEYFILE.used says this key has sent under this SA
    /// and --state-dir holds no state for it. RISK: if the key did send before, every (key,
    /// nonce) pair from 1 up is sent again, which breaks the cipher (GCM: forgeries). Only for a
    /// key you know never sent under this SA; otherwise give the old --state-dir or a new key.
    #[arg(long)]
    pub i_know_this_key_is_new: bool,
    /// Record every unit sent (classic pcap, Ethernet; ESP gets its Ethernet/IPv4 headers).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Parses `aa:bb:cc:dd:ee:ff`; `what` names the option in the error.
pub fn parse_mac(what: &str, s: &str) -> Result<[u8; 6]> {
    ivnsec_net::topology::parse_mac(s.trim()).ok_or_else(|| {
        usage(format!(
            "{what}: `{s}` is not a MAC address (write aa:bb:cc:dd:ee:ff)"
        ))
    })
}

/// The MAC of interface `ifname` (from sysfs, which `ip netns exec` shows per namespace).
pub fn iface_mac(ifname: &str) -> Result<[u8; 6]> {
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
pub fn link_err(e: std::io::Error, what: &str) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        anyhow::Error::new(EnvError(format!(
            "{what}: {e}; raw sockets need root or CAP_NET_RAW (or use --udp ADDR:PORT)"
        )))
    } else {
        anyhow!("{what}: {e}")
    }
}

/// Stops when SIGINT, SIGTERM or SIGHUP arrives.
pub fn stop_on_signal() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let sigs = ivnsec_net::sys::termination_signals().context("installing signal handlers")?;
    let s = stop.clone();
    std::thread::spawn(move || {
        if sigs.wait().is_ok() {
            s.store(true, Ordering::Relaxed);
        }
    });
    Ok(stop)
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let family = a.profile.profile();
    let Some(state_dir) = a.state_dir.clone() else {
        return Err(usage(format!(
            "refusing to send under the long-term key in {} without --state-dir: every nonce is \
             derived from the sequence number, and a sender that restarts (crash, reboot, kill) \
             would count from 1 again and reuse (key, nonce) pairs, which breaks the cipher. \
             Give --state-dir DIR (a persistent directory for the reserved sequence numbers) or \
             install a fresh key for every start",
            a.keys.display()
        )));
    };
    if !a.rate.is_finite() || a.rate < 0.0 {
        return Err(usage(format!(
            "--rate must be a number of units per second ≥ 0, got {}",
            a.rate
        )));
    }
    if a.payload > MAX_PAYLOAD {
        return Err(usage(format!(
            "--payload {}: no link carries a unit that large (at most {MAX_PAYLOAD} bytes)",
            a.payload
        )));
    }
    let keys: DirectionKeys = keyfile::load(&a.keys, &a.profile, keyfile::Role::Sender)?;
    let mac = |what: &str, v: &Option<String>| v.as_deref().map(|s| parse_mac(what, s)).transpose();
    let (local_mac, peer_mac, local_ip, peer_ip, spec) = match (&a.iface, a.udp) {
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
            let peer = match mac("--to", &a.to)? {
                Some(m) => m,
                None if family.is_ip() => [0; 6],
                None => {
                    return Err(usage(format!(
                        "--to MAC is required with --iface for {} (the receiver's address)",
                        a.profile
                    )));
                }
            };
            let (from, to) = if family.is_ip() {
                match (a.from_ip, a.to_ip) {
                    (Some(f), Some(t)) => (f, t),
                    _ => {
                        return Err(usage(
                            "ESP on an interface needs --from-ip (this node) and --to-ip (the receiver)",
                        ));
                    }
                }
            } else {
                (Ipv4Addr::UNSPECIFIED, Ipv4Addr::UNSPECIFIED)
            };
            let spec = if family.is_ip() {
                LinkSpec::RawIp {
                    protocol: IPPROTO_ESP,
                    peer: to,
                }
            } else {
                LinkSpec::Raw {
                    ifname: ifname.clone(),
                    ethertype: family.ethertype(),
                }
            };
            (local, peer, from, to, spec)
        }
        (None, Some(addr)) => {
            let local: SocketAddr = if addr.is_ipv4() {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            (
                mac("--mac", &a.mac)?.unwrap_or(UDP_SENDER_MAC),
                mac("--to", &a.to)?.unwrap_or(UDP_RECEIVER_MAC),
                a.from_ip.unwrap_or(Ipv4Addr::LOCALHOST),
                a.to_ip.unwrap_or(Ipv4Addr::LOCALHOST),
                LinkSpec::Udp {
                    local,
                    peer: Some(addr),
                },
            )
        }
        (None, None) => return Err(usage("give --iface IF or --udp ADDR:PORT")),
    };
    let ends = Ends {
        local_mac,
        peer_mac,
        local_ip,
        peer_ip,
    };

    // The unit must fit the link before any number is reserved.
    let frame = open_channel(
        family,
        a.provider,
        &keys,
        &keys,
        ends,
        0,
        ChannelOptions::default(),
    )?
    .frame_bytes(a.payload);
    match &a.iface {
        Some(ifname) => {
            let mtu = iface_mtu(ifname).unwrap_or(ivnsec_net::topology::MTU as usize);
            if frame > 14 + mtu {
                return Err(usage(format!(
                    "a {}-byte payload makes a {frame}-byte {} frame, more than the {mtu}-byte \
                     MTU of {ifname} allows; lower --payload",
                    a.payload, a.profile
                )));
            }
        }
        None => {
            let unit = match family {
                Profile::Esp(_) => frame.saturating_sub(14 + 20),
                f if f.is_udp() => frame.saturating_sub(UDP_AT),
                _ => frame,
            };
            if unit > MAX_UDP_UNIT {
                return Err(usage(format!(
                    "a {}-byte payload makes a {unit}-byte {} unit, more than one UDP datagram \
                     carries ({MAX_UDP_UNIT} bytes); lower --payload",
                    a.payload, a.profile
                )));
            }
        }
    }

    // The nonce state: locked, read, and the first number is one above everything reserved.
    let ident = sa_identity(family, &ends, 0);
    let hw_opts = highwater::Options {
        block: a.reserve_block,
        seq_limit: a.seq_limit,
        protocol_max: family.max_seq(),
        used_record: Some(keyfile::used_record(&a.keys)),
        confirm_new_key: a.i_know_this_key_is_new,
    };
    let mut hw = HighWater::open(&state_dir, &family.nonce_domain(), &ident, &keys, hw_opts)
        .map_err(HwError::into_anyhow)?;
    let first = hw.first_seq().map_err(HwError::into_anyhow)?;
    let opts = ChannelOptions {
        replay_window: REPLAY_WINDOW,
        first_seq: first,
        spi_offset: 0,
    };
    let mut ch = open_channel(family, a.provider, &keys, &keys, ends, 0, opts)?;
    let link = Link::open(&spec).map_err(|e| link_err(e, "opening the link"))?;
    let stop = stop_on_signal()?;

    let mut pcap = match &a.pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    let cap = Channel::buffer_len(a.payload.max(1500));
    let mut payload = vec![0u8; a.payload];
    let mut tx = vec![0u8; cap];
    let mut frame_buf: Vec<u8> = Vec::with_capacity(if pcap.is_some() { cap + 64 } else { 0 });
    let interval_ns = if a.rate > 0.0 {
        (1e9 / a.rate) as u64
    } else {
        0
    };
    let mut next_at = monotonic_ns();
    let (mut sent, mut first_sent, mut last_sent) = (0u64, None::<u64>, None::<u64>);
    let mut failure: Option<anyhow::Error> = None;
    let mut stopped_by = "count";
    loop {
        if a.count != 0 && sent >= a.count {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            stopped_by = "signal";
            break;
        }
        // The number this unit will carry must be reserved on disk first.
        let claimed = match ch.next_seq() {
            Some(seq) => hw.claim(seq).map(|_| seq),
            None => Err(HwError::Exhausted {
                limit: ch.profile().max_seq(),
                configured: false,
            }),
        };
        let seq = match claimed {
            Ok(s) => s,
            Err(e) => {
                stopped_by = e.stop_reason();
                failure = Some(e.into_anyhow());
                break;
            }
        };
        if payload.len() >= 8 {
            payload[..8].copy_from_slice(&sent.to_be_bytes());
        }
        let n = ch.protect(&payload, &mut tx)?;
        if let Err(e) = link.send(&tx[..n]) {
            stopped_by = "error";
            failure = Some(anyhow!("sending unit {seq}: {e}"));
            break;
        }
        sent += 1;
        first_sent.get_or_insert(seq);
        last_sent = Some(seq);
        if let Some(w) = pcap.as_mut() {
            ch.capture_frame(&tx[..n], true, &mut frame_buf);
            w.write_frame_now(&frame_buf)?;
        }
        if interval_ns > 0 {
            next_at += interval_ns;
            let now = monotonic_ns();
            if next_at > now {
                std::thread::sleep(Duration::from_nanos(next_at - now));
            } else if now - next_at > 1_000_000_000 {
                next_at = now; // fell far behind (suspended): do not burst
            }
        }
    }
    if let Some(mut w) = pcap {
        w.flush()?;
    }
    let summary = json!({
        "profile": a.profile.name(),
        "sent": sent,
        "first_seq": first_sent,
        "last_seq": last_sent,
        "reserved": hw.reserved(),
        "reservations": hw.writes(),
        "limit": hw.limit(),
        "state_file": hw.path().display().to_string(),
        "nonce_domain": hw.domain(),
        "fresh_state": hw.is_fresh(),
        "migrated_from": hw.migrated(),
        "stopped_by": stopped_by,
    });
    if a.json {
        json.print(&summary)?;
    } else {
        let range = match (first_sent, last_sent) {
            (Some(f), Some(l)) => format!("sequence numbers {f}..={l}"),
            _ => "no sequence number used".to_string(),
        };
        println!(
            "sent {sent} units ({}), {range}; reserved up to {} in {}; stopped by {stopped_by}",
            a.profile,
            hw.reserved(),
            hw.path().display()
        );
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(ExitCode::SUCCESS),
    }
}
