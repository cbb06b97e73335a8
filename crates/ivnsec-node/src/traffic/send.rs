//! The sender of `ivnsec send`: protected units under a long-term key from a key file, never
//! reusing a sequence number / PN / nonce across restarts (every number reserved in the state
//! directory before use, docs/nonce-safety.md).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Result, anyhow};
use ivnsec_core::channel::{
    Channel, ChannelOptions, DirectionKeys, Ends, REPLAY_WINDOW, UDP_AT, sa_identity,
};
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::sys::monotonic_ns;

use super::{
    IPPROTO_ESP, On, Pcap, UDP_RECEIVER_MAC, UDP_SENDER_MAC, create_pcap, iface_mac, iface_mtu,
    link_err, udp_only,
};
use crate::channel::open as open_channel;
use crate::error::usage;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::keys::keyfile;

/// Largest payload: no link we send on carries a larger unit.
const MAX_PAYLOAD: usize = 65_535;
/// Largest UDP payload over IPv4 (65,535 − 20 − 8): the largest unit `--udp` can carry.
const MAX_UDP_UNIT: usize = 65_507;

/// What `ivnsec send` is asked to do (its options, parsed).
#[derive(Debug, Clone)]
pub struct SendSettings {
    pub profile: NamedProfile,
    /// The key file (`--keys`).
    pub keys: PathBuf,
    pub on: On,
    /// The receiver's MAC (`--to`).
    pub to: Option<[u8; 6]>,
    /// This node's MAC (`--mac`).
    pub mac: Option<[u8; 6]>,
    /// ESP: the receiver's and this node's IPv4 addresses.
    pub to_ip: Option<Ipv4Addr>,
    pub from_ip: Option<Ipv4Addr>,
    /// Payload bytes per unit.
    pub payload: usize,
    /// Units to send; 0: until stopped.
    pub count: u64,
    /// Units per second; 0: as fast as possible.
    pub rate: f64,
    /// The nonce state's directory; a sender without one is refused.
    pub state_dir: Option<PathBuf>,
    /// Numbers reserved per state write.
    pub reserve_block: u64,
    /// Highest number this key may carry.
    pub seq_limit: Option<u64>,
    /// `--i-know-this-key-is-new`.
    pub confirm_new_key: bool,
    /// Record every unit sent.
    pub pcap: Option<PathBuf>,
    pub provider: ProviderChoice,
}

/// A sender whose key, nonce state, link and capture are open: [`Sender::run`] sends.
pub struct Sender {
    ch: Channel,
    hw: HighWater,
    link: Link,
    pcap: Option<Pcap>,
    payload: usize,
    count: u64,
    interval_ns: u64,
}

/// What a run sent and why it ended.
pub struct SendReport {
    pub sent: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// Why sending ended: count, signal, exhausted, state_write_failed, state_lock_lost, error.
    pub stopped_by: &'static str,
    /// The nonce state as the run left it (reserved, writes, limit, file, domain).
    pub nonce: HighWater,
    /// The error that ended the run (every `stopped_by` but count and signal).
    pub failure: Option<anyhow::Error>,
}

impl Sender {
    /// Checks the settings, loads the key, checks that the unit fits the link, opens the nonce
    /// state (the first number is one above everything reserved), the link and the capture.
    pub fn open(s: &SendSettings) -> Result<Sender> {
        let state_dir = check(s)?;
        let keys: DirectionKeys = keyfile::load(&s.keys, &s.profile, keyfile::Role::Sender)?;
        let (ends, spec) = addressing(s)?;
        let family = s.profile.profile();
        // The unit must fit the link before any number is reserved.
        let probe = open_channel(
            family,
            s.provider,
            &keys,
            &keys,
            ends,
            0,
            ChannelOptions::default(),
        )?;
        check_fit(s, probe.frame_bytes(s.payload))?;

        let ident = sa_identity(family, &ends, 0);
        let hw_opts = highwater::Options {
            block: s.reserve_block,
            seq_limit: s.seq_limit,
            protocol_max: family.max_seq(),
            used_record: Some(keyfile::used_record(&s.keys)),
            confirm_new_key: s.confirm_new_key,
            // An experiment's sender keeps the block it is given: its figures count the writes.
            grow: false,
        };
        let hw = HighWater::open(&state_dir, &family.nonce_domain(), &ident, &keys, hw_opts)
            .map_err(HwError::into_anyhow)?;
        let first = hw.first_seq().map_err(HwError::into_anyhow)?;
        let opts = ChannelOptions {
            replay_window: REPLAY_WINDOW,
            first_seq: first,
            spi_offset: 0,
        };
        let ch = open_channel(family, s.provider, &keys, &keys, ends, 0, opts)?;
        let link = Link::open(&spec).map_err(|e| link_err(e, "opening the link"))?;
        let pcap = create_pcap(s.pcap.as_deref())?;
        let interval_ns = if s.rate > 0.0 {
            (1e9 / s.rate) as u64
        } else {
            0
        };
        Ok(Sender {
            ch,
            hw,
            link,
            pcap,
            payload: s.payload,
            count: s.count,
            interval_ns,
        })
    }

    /// Sends until the count is reached, `stop` is set, the numbers run out or a send fails.
    /// The payload's first 8 bytes carry the unit's index in this run (big-endian).
    pub fn run(mut self, stop: &AtomicBool) -> Result<SendReport> {
        let cap = Channel::buffer_len(self.payload.max(1500));
        let mut payload = vec![0u8; self.payload];
        let mut tx = vec![0u8; cap];
        let mut frame_buf: Vec<u8> =
            Vec::with_capacity(if self.pcap.is_some() { cap + 64 } else { 0 });
        let mut next_at = monotonic_ns();
        let (mut sent, mut first_seq, mut last_seq) = (0u64, None::<u64>, None::<u64>);
        let mut failure: Option<anyhow::Error> = None;
        let mut stopped_by = "count";
        loop {
            if self.count != 0 && sent >= self.count {
                break;
            }
            if stop.load(Ordering::Relaxed) {
                stopped_by = "signal";
                break;
            }
            // The number this unit will carry must be reserved on disk first.
            let seq = match self.claim() {
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
            let n = self.ch.protect(&payload, &mut tx)?;
            if let Err(e) = self.link.send(&tx[..n]) {
                stopped_by = "error";
                failure = Some(anyhow!("sending unit {seq}: {e}"));
                break;
            }
            sent += 1;
            first_seq.get_or_insert(seq);
            last_seq = Some(seq);
            if let Some(w) = self.pcap.as_mut() {
                self.ch.capture_frame(&tx[..n], true, &mut frame_buf);
                w.write_frame_now(&frame_buf)?;
            }
            pace(self.interval_ns, &mut next_at);
        }
        if let Some(mut w) = self.pcap {
            w.flush()?;
        }
        Ok(SendReport {
            sent,
            first_seq,
            last_seq,
            stopped_by,
            nonce: self.hw,
            failure,
        })
    }

    /// The channel's next number, reserved in the nonce state.
    fn claim(&mut self) -> Result<u64, HwError> {
        match self.ch.next_seq() {
            Some(seq) => self.hw.claim(seq).map(|_| seq),
            None => Err(HwError::Exhausted {
                limit: self.ch.profile().max_seq(),
                configured: false,
            }),
        }
    }
}

/// Waits for the next unit's time at `interval_ns` (0: no wait).
fn pace(interval_ns: u64, next_at: &mut u64) {
    if interval_ns == 0 {
        return;
    }
    *next_at += interval_ns;
    let now = monotonic_ns();
    if *next_at > now {
        std::thread::sleep(Duration::from_nanos(*next_at - now));
    } else if now - *next_at > 1_000_000_000 {
        *next_at = now; // fell far behind (suspended): do not burst
    }
}

/// The checks before the key is read: the state directory (returned), rate and payload.
fn check(s: &SendSettings) -> Result<PathBuf> {
    let Some(state_dir) = s.state_dir.clone() else {
        return Err(usage(format!(
            "refusing to send under the long-term key in {} without --state-dir: every nonce is \
             derived from the sequence number, and a sender that restarts (crash, reboot, kill) \
             would count from 1 again and reuse (key, nonce) pairs, which breaks the cipher. \
             Give --state-dir DIR (a persistent directory for the reserved sequence numbers) or \
             install a fresh key for every start",
            s.keys.display()
        )));
    };
    if !s.rate.is_finite() || s.rate < 0.0 {
        return Err(usage(format!(
            "--rate must be a number of units per second ≥ 0, got {}",
            s.rate
        )));
    }
    if s.payload > MAX_PAYLOAD {
        return Err(usage(format!(
            "--payload {}: no link carries a unit that large (at most {MAX_PAYLOAD} bytes)",
            s.payload
        )));
    }
    Ok(state_dir)
}

/// The channel's ends and the link to open.
fn addressing(s: &SendSettings) -> Result<(Ends, LinkSpec)> {
    let family = s.profile.profile();
    let (local_mac, peer_mac, local_ip, peer_ip, spec) = match &s.on {
        On::Iface(_) if family.is_udp() => return Err(udp_only(&s.profile)),
        On::Iface(ifname) => {
            let local = match s.mac {
                Some(m) => m,
                None => iface_mac(ifname)?,
            };
            let peer = match s.to {
                Some(m) => m,
                None if family.is_ip() => [0; 6],
                None => {
                    return Err(usage(format!(
                        "--to MAC is required with --iface for {} (the receiver's address)",
                        s.profile
                    )));
                }
            };
            let (from, to) = if family.is_ip() {
                match (s.from_ip, s.to_ip) {
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
        On::Udp(addr) => {
            let local: SocketAddr = if addr.is_ipv4() {
                (Ipv4Addr::UNSPECIFIED, 0).into()
            } else {
                (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
            };
            (
                s.mac.unwrap_or(UDP_SENDER_MAC),
                s.to.unwrap_or(UDP_RECEIVER_MAC),
                s.from_ip.unwrap_or(Ipv4Addr::LOCALHOST),
                s.to_ip.unwrap_or(Ipv4Addr::LOCALHOST),
                LinkSpec::Udp {
                    local,
                    peer: Some(*addr),
                },
            )
        }
    };
    let ends = Ends {
        local_mac,
        peer_mac,
        local_ip,
        peer_ip,
    };
    Ok((ends, spec))
}

/// Refuses a unit of `frame` bytes (as an Ethernet frame) that the link cannot carry.
fn check_fit(s: &SendSettings, frame: usize) -> Result<()> {
    match &s.on {
        On::Iface(ifname) => {
            let mtu = iface_mtu(ifname).unwrap_or(ivnsec_net::topology::MTU as usize);
            if frame > 14 + mtu {
                return Err(usage(format!(
                    "a {}-byte payload makes a {frame}-byte {} frame, more than the {mtu}-byte \
                     MTU of {ifname} allows; lower --payload",
                    s.payload, s.profile
                )));
            }
        }
        On::Udp(_) => {
            let unit = match s.profile.profile() {
                Profile::Esp(_) => frame.saturating_sub(14 + 20),
                f if f.is_udp() => frame.saturating_sub(UDP_AT),
                _ => frame,
            };
            if unit > MAX_UDP_UNIT {
                return Err(usage(format!(
                    "a {}-byte payload makes a {unit}-byte {} unit, more than one UDP datagram \
                     carries ({MAX_UDP_UNIT} bytes); lower --payload",
                    s.payload, s.profile
                )));
            }
        }
    }
    Ok(())
}
