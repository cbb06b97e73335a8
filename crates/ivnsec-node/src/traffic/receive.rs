//! The receiver of `ivnsec receive`: verifies every unit a sender puts on an interface or a UDP
//! port under a key file, counts what was accepted and every drop by reason, and — with a state
//! directory — keeps the acceptance mark on disk so a restart refuses what it may have accepted
//! before (docs/nonce-safety.md).

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use ivnsec_core::channel::{Channel, ChannelOptions, DirectionKeys, Ends, sa_identity};
use ivnsec_core::profile::NamedProfile;
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::sys::monotonic_ns;

use super::{
    IPPROTO_ESP, On, Pcap, UDP_RECEIVER_MAC, UDP_SENDER_MAC, create_pcap, iface_mac, link_err,
    udp_only,
};
use crate::channel::open as open_channel;
use crate::error::{EnvError, usage};
use crate::keys::keyfile;
use crate::keys::rxmark::{self, Checkpoint, RxMark};

/// What `ivnsec receive` is asked to do (its options, parsed).
#[derive(Debug, Clone)]
pub struct ReceiveSettings {
    pub profile: NamedProfile,
    /// The key file of the sender's direction (`--keys`).
    pub keys: PathBuf,
    pub on: On,
    /// The sender's MAC (`--from`).
    pub from: Option<[u8; 6]>,
    /// This node's MAC (`--mac`).
    pub mac: Option<[u8; 6]>,
    /// ESP: the sender's and this node's IPv4 addresses.
    pub from_ip: Option<Ipv4Addr>,
    pub to_ip: Option<Ipv4Addr>,
    pub replay_window: u32,
    /// Stop after this many accepted units (0: no limit).
    pub count: u64,
    /// Stop after this many seconds.
    pub seconds: Option<f64>,
    /// Record every unit received, before verification.
    pub pcap: Option<PathBuf>,
    pub provider: ProviderChoice,
    /// The acceptance mark's directory (none: the replay window lives in memory only).
    pub state_dir: Option<PathBuf>,
    /// How far the acceptance mark moves ahead.
    pub checkpoint: Checkpoint,
}

/// A receiver whose key, acceptance mark, link and capture are open: [`Receiver::run`]
/// receives.
pub struct Receiver {
    ch: Channel,
    link: Link,
    mark: Option<RxMark>,
    pcap: Option<Pcap>,
    count: u64,
    deadline_ns: Option<u64>,
}

/// What a run received and why it ended.
pub struct ReceiveReport {
    pub received: u64,
    pub accepted: u64,
    pub drops: DropCounters,
    /// signal, count or seconds.
    pub stopped_by: &'static str,
    /// The acceptance mark, with `--state-dir`.
    pub mark: Option<RxMark>,
    /// Units refused because their number is at or below the restored mark.
    pub refused_below_mark: u64,
}

impl ReceiveReport {
    /// 1 when a unit failed verification: any drop but an ESP dummy packet (RFC 4303 §2.6),
    /// which verified and is discarded by design; 0 otherwise.
    pub fn exit_code(&self) -> u8 {
        let failed = self
            .drops
            .iter()
            .filter(|(r, _)| *r != DropReason::DummyPacket)
            .any(|(_, n)| n > 0);
        u8::from(failed)
    }
}

impl Receiver {
    /// Loads the key, opens the channel (the inbound SA is the sender's direction-0 SA), the
    /// acceptance mark, the link and the capture.
    pub fn open(s: &ReceiveSettings) -> Result<Receiver> {
        let family = s.profile.profile();
        let keys = keyfile::load(&s.keys, &s.profile, keyfile::Role::Receiver)?;
        let deadline_ns = match s.seconds {
            Some(t) if !t.is_finite() || t <= 0.0 || t > 1e7 => {
                return Err(usage(format!(
                    "--seconds must be a number of seconds above 0, got {t}"
                )));
            }
            Some(t) => Some(monotonic_ns() + (t * 1e9) as u64),
            None => None,
        };
        let (ends, spec) = addressing(s)?;
        let opts = ChannelOptions {
            replay_window: s.replay_window,
            first_seq: 1,
            spi_offset: 0,
        };
        // Direction 1: the inbound SA is the sender's direction-0 outbound SA.
        let mut ch = open_channel(family, s.provider, &keys, &keys, ends, 1, opts)?;
        let mark = open_mark(s, &mut ch, &ends, &keys)?;
        let link = Link::open(&spec).map_err(|e| open_err(e, &s.on))?;
        let pcap = create_pcap(s.pcap.as_deref())?;
        Ok(Receiver {
            ch,
            link,
            mark,
            pcap,
            count: s.count,
            deadline_ns,
        })
    }

    /// The UDP port the link is bound to (0 on an interface).
    pub fn local_port(&self) -> u16 {
        self.link.local_port()
    }

    /// Receives and verifies until `stop` is set, the count of accepted units or the deadline
    /// is reached.
    pub fn run(mut self, stop: &AtomicBool) -> Result<ReceiveReport> {
        let cap = Channel::buffer_len(9000);
        let mut rx = vec![0u8; cap];
        let mut frame_buf: Vec<u8> =
            Vec::with_capacity(if self.pcap.is_some() { cap + 64 } else { 0 });
        let off = self.ch.rx_offset();
        let (mut received, mut accepted) = (0u64, 0u64);
        let mut drops = DropCounters::default();
        let slice = Duration::from_millis(50);
        let stopped_by = loop {
            if stop.load(Ordering::Relaxed) {
                break "signal";
            }
            if self.count != 0 && accepted >= self.count {
                break "count";
            }
            if self.deadline_ns.is_some_and(|d| monotonic_ns() >= d) {
                break "seconds";
            }
            let Some(len) = self
                .link
                .recv(&mut rx, off, slice, false)
                .context("receiving")?
            else {
                continue;
            };
            received += 1;
            if let Some(w) = self.pcap.as_mut() {
                self.ch
                    .capture_frame(&rx[off..off + len], false, &mut frame_buf);
                w.write_frame_now(&frame_buf)?;
            }
            match self.ch.verify(&mut rx, len) {
                Ok(_) => {
                    // Verified: the mark covers its number on disk before it counts as accepted.
                    if let Some(m) = self.mark.as_mut() {
                        m.accept(self.ch.rx_highest(), monotonic_ns)
                            .map_err(rxmark::rx_error)?;
                    }
                    accepted += 1;
                }
                Err(reason) => drops.bump(reason),
            }
        };
        if let Some(mut w) = self.pcap {
            w.flush()?;
        }
        Ok(ReceiveReport {
            received,
            accepted,
            drops,
            stopped_by,
            refused_below_mark: self.ch.rx_below_restored(),
            mark: self.mark,
        })
    }
}

/// The channel's ends and the link to open.
fn addressing(s: &ReceiveSettings) -> Result<(Ends, LinkSpec)> {
    let family = s.profile.profile();
    let peer_mac = s.from.unwrap_or(UDP_SENDER_MAC);
    let (local_mac, local_ip, peer_ip, spec) = match &s.on {
        On::Iface(_) if family.is_udp() => return Err(udp_only(&s.profile)),
        On::Iface(ifname) => {
            let local = match s.mac {
                Some(m) => m,
                None => iface_mac(ifname)?,
            };
            let spec = if family.is_ip() {
                let Some(from) = s.from_ip else {
                    return Err(usage(
                        "ESP on an interface needs --from-ip (the sender's IPv4 address)",
                    ));
                };
                LinkSpec::RawIp {
                    protocol: IPPROTO_ESP,
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
                s.to_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                s.from_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
                spec,
            )
        }
        On::Udp(addr) => (
            s.mac.unwrap_or(UDP_RECEIVER_MAC),
            s.to_ip.unwrap_or(Ipv4Addr::LOCALHOST),
            s.from_ip.unwrap_or(Ipv4Addr::LOCALHOST),
            LinkSpec::Udp {
                local: *addr,
                peer: None,
            },
        ),
    };
    let ends = Ends {
        local_mac,
        peer_mac,
        local_ip,
        peer_ip,
    };
    Ok((ends, spec))
}

/// The acceptance mark of the sender's SA (keyed as the sender keys its nonce state: its ends,
/// direction 0), with `--state-dir`: every number <= the restored mark counts as seen.
fn open_mark(
    s: &ReceiveSettings,
    ch: &mut Channel,
    ends: &Ends,
    keys: &DirectionKeys,
) -> Result<Option<RxMark>> {
    let Some(dir) = &s.state_dir else {
        rxmark::warn_no_state_dir("receive");
        return Ok(None);
    };
    let family = s.profile.profile();
    let ident = sa_identity(family, &ends.reversed(), 0);
    let m = RxMark::open(
        dir,
        &family.nonce_domain(),
        &ident,
        keys,
        family.max_seq(),
        s.checkpoint,
    )?;
    if !ch.restore_rx_floor(m.restored()) {
        return Err(usage(format!(
            "--state-dir: {} keeps no acceptance mark (IVN-AE, MACsec and ESP do); leave \
             --state-dir out",
            s.profile
        )));
    }
    Ok(Some(m))
}

/// The error of opening the link: a UDP address in use or not of this host, in words that say
/// what to do (exit 3), else as [`link_err`].
fn open_err(e: std::io::Error, on: &On) -> anyhow::Error {
    match (e.kind(), on) {
        (std::io::ErrorKind::AddrInUse, On::Udp(addr)) => anyhow::Error::new(EnvError(format!(
            "receive: udp {addr} is already in use by another process ({e}): stop that process \
             (`ss -ulpn 'sport = :{port}'` shows it) or give another port (--udp {ip}:0 picks a \
             free one)",
            port = addr.port(),
            ip = addr.ip()
        ))),
        (std::io::ErrorKind::AddrNotAvailable, On::Udp(addr)) => {
            anyhow::Error::new(EnvError(format!(
                "receive: cannot bind udp {addr} ({e}): {} is not an address of this host; give \
                 one it has (e.g. 127.0.0.1)",
                addr.ip()
            )))
        }
        _ => link_err(e, "opening the link"),
    }
}
