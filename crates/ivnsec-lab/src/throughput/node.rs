//! The two roles of the throughput experiment (seed 002 §5.2.3), each its own process in its
//! own ECU namespace: senders protect and send as fast as the link (or the token bucket that
//! shapes it) allows for a fixed time; one receiver verifies everything that arrives, from every
//! sender, and counts.
//!
//! Hot path: one flat buffer of `batch` slots per process, allocated once; a batch is protected
//! slot by slot and handed to the kernel with one `sendmmsg`; the receiver takes up to a batch
//! per `recvmmsg` and verifies in place. Nothing is allocated per frame (the first
//! [`CAPTURE_FRAMES`] frames of a `--pcap` run are copied into a buffer reserved up front).
//!
//! Protocol with the orchestrator (stdin/stdout lines):
//! - receiver: `READY <udp port>` once its link is open; on stdin EOF it prints
//!   `RECV <sender index> <delivered>` per sender, `DROP <reason> <n>`, `CPU <user ns> <sys ns>`
//!   and `END`.
//! - sender: waits for one line on stdin (the start signal, so every sender starts together),
//!   sends for the given time, then prints `SENT <units> <start ns> <last send ns> <user ns>
//!   <sys ns> <pacing ns>` and `END`. CPU times are `getrusage` deltas over the sending window;
//!   `pacing` is the part of them the sender spent spinning to hold its link's rate (a NIC
//!   paces in hardware), which the orchestrator reports apart from protecting and sending.
//!
//! On a raw Ethernet link (a testbed), an ESP sender writes whole frames — Ethernet ‖ IPv4 ‖
//! ESP, [`Channel::protect_frame`] — so no packet goes through the sender's IP layer; the
//! receiver takes ESP through its IP layer (a raw IPv4 socket), as an IPsec host does.

use std::io::{BufRead, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{
    Channel, ChannelOptions, DirectionKeys, Ends, SECOC_DATA_ID, SOMEIP_CLIENT,
};
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::DropCounters;
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::sys::{MAX_BATCH, monotonic_ns, rusage_self};
use serde::{Deserialize, Serialize};

use super::{TokenBucket, wire_bytes};
use crate::process::{NodeSpec, read_spec, stop_on_stdin_eof};

/// Frames of the first sender a `--pcap` run records.
pub const CAPTURE_FRAMES: usize = 1000;
/// Receive window of the receiver's SAs (reordering never happens on a switch, but a big
/// window costs nothing and keeps a slow reader's burst from counting as replays).
const RX_WINDOW: u32 = 1024;
/// Frames the token bucket lets a sender catch up by (see `sender`).
const TX_RING: usize = 256;
/// Kernel socket buffers of both roles.
const SOCKET_BUFFER: usize = 8 << 20;

/// One sender as the receiver sees it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Peer {
    /// Sender → receiver keys (sent over the pipe, not in the JSON).
    #[serde(skip)]
    pub keys: DirectionKeys,
    /// Ends seen from the sender (local = sender).
    pub ends: Ends,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum TputRole {
    /// Sender number `index` (0-based) of `peers`.
    Sender {
        index: usize,
    },
    Receiver,
}

/// Everything a throughput role needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TputSpec {
    pub role: TputRole,
    pub profile: Profile,
    pub provider: ProviderChoice,
    pub payload: usize,
    pub seconds_ns: u64,
    /// Shaping per sender link (bits/s on the wire); `None`: as fast as possible.
    pub rate_bps: Option<u64>,
    pub batch: usize,
    pub link: LinkSpec,
    /// Every sender; a sender uses only its own entry.
    pub peers: Vec<Peer>,
    /// Sender 0: record its first frames here.
    #[serde(default)]
    pub pcap: Option<std::path::PathBuf>,
    /// SOME/IP messages on one TCP connection per sender ([`super::tcp`]) instead of datagrams;
    /// the addresses of `link` (a UDP link spec) are the TCP ones.
    #[serde(default)]
    pub tcp: bool,
    /// The receiver's coalescing ([`super::Config::rx_coalesce_us`]); 0 from an older sender of
    /// the spec.
    #[serde(default)]
    pub rx_coalesce_us: u32,
}

impl NodeSpec for TputSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        self.peers.iter().map(|p| &p.keys).collect()
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        self.peers.iter_mut().map(|p| &mut p.keys).collect()
    }
}

/// The channel of sender `index`: its outbound SA (the inbound one is unused).
pub fn sender_channel(
    profile: Profile,
    provider: ProviderChoice,
    peer: &Peer,
    index: usize,
) -> Result<Channel> {
    let opts = ChannelOptions {
        spi_offset: spi_offset(index),
        ..ChannelOptions::default()
    };
    ivnsec_node::channel::open(
        profile, provider, &peer.keys, &peer.keys, peer.ends, 0, opts,
    )
}

pub(super) fn receiver_channel(
    profile: Profile,
    provider: ProviderChoice,
    peer: &Peer,
    index: usize,
) -> Result<Channel> {
    let opts = ChannelOptions {
        replay_window: RX_WINDOW,
        first_seq: 1,
        spi_offset: spi_offset(index),
    };
    ivnsec_node::channel::open(
        profile,
        provider,
        &peer.keys,
        &peer.keys,
        peer.ends.reversed(),
        1,
        opts,
    )
}

/// ESP SPIs, SecOC Data IDs and SOME/IP client IDs of sender `index` are the pair's plus
/// `index × 0x100`.
pub(super) fn spi_offset(index: usize) -> u32 {
    (index as u32) << 8
}

/// The role's spec from stdin ([`crate::process`]), its batch size checked.
pub(super) fn read_checked_spec() -> Result<TputSpec> {
    let spec: TputSpec = read_spec()?;
    if spec.batch == 0 || spec.batch > MAX_BATCH {
        bail!("batch must be 1..={MAX_BATCH}");
    }
    Ok(spec)
}

/// Slot size: room for the largest unit plus the ESP header offset, cache-line aligned.
fn stride(payload: usize) -> usize {
    Channel::buffer_len(payload.max(1500)).next_multiple_of(64)
}

pub(super) fn sender(spec: &TputSpec, index: usize) -> Result<()> {
    let peer = spec
        .peers
        .get(index)
        .ok_or_else(|| anyhow!("no peer entry for sender {index}"))?;
    let mut ch = sender_channel(spec.profile, spec.provider, peer, index)?;
    // A raw Ethernet link carries whole frames: ESP units get their Ethernet and IPv4 headers
    // here (for the other families on such a link the unit already is the frame).
    let frames = matches!(spec.link, LinkSpec::Raw { .. });
    let link = Link::open(&spec.link).context("opening the link")?;
    link.set_buffers(SOCKET_BUFFER).context("socket buffers")?;
    link.connect_peer().context("setting the destination")?;
    let stride = stride(spec.payload);
    let batch = spec.batch;
    let mut buf = vec![0u8; stride * batch];
    let mut lens = vec![0usize; batch];
    let mut payload = vec![0u8; spec.payload];
    getrandom::fill(&mut payload).map_err(|e| anyhow!("random payload: {e}"))?;
    let wire = wire_bytes(ch.frame_bytes(spec.payload));
    let capture = spec.pcap.is_some() && index == 0;
    let mut captured: Vec<u8> = Vec::with_capacity(if capture {
        CAPTURE_FRAMES * (ch.frame_bytes(spec.payload) + 64)
    } else {
        0
    });
    let mut captured_at: Vec<(u64, usize)> =
        Vec::with_capacity(if capture { CAPTURE_FRAMES } else { 0 });

    // Start signal: one line on stdin. Its end instead (the orchestrator, or its SSH
    // connection, gone) ends the sender before it sends; after it, the sender stops early.
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        return Ok(());
    }
    let stop = stop_on_stdin_eof();

    let (u0, s0) = rusage_self();
    let start = monotonic_ns();
    let deadline = start + spec.seconds_ns;
    // Burst: a 256-descriptor TX ring, as a NIC has: credit a late sender (descheduled, or
    // woken late from sleep) may catch up with; the link never runs faster than the rate over
    // any window longer than that (at 1 Gb/s, 256 × 1538 bytes is 3.1 ms).
    let mut bucket = spec
        .rate_bps
        .map(|r| TokenBucket::new(r, wire * batch.max(TX_RING), start));
    let mut sent = 0u64;
    let mut pacing = 0u64;
    let mut last = start;
    loop {
        let now = monotonic_ns();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            break;
        }
        let mut k = 0;
        while k < batch {
            if ch.next_seq().is_none() {
                break;
            }
            let slot = &mut buf[k * stride..(k + 1) * stride];
            lens[k] = if frames {
                ch.protect_frame(&payload, slot)?
            } else {
                ch.protect(&payload, slot)?
            };
            k += 1;
        }
        if k == 0 {
            eprintln!("sender {index}: sequence numbers exhausted; stopping");
            break;
        }
        if let Some(b) = bucket.as_mut() {
            let wait = b.take(monotonic_ns(), wire * k);
            if wait > 0 {
                pacing += wait_until(monotonic_ns() + wait);
            }
        }
        link.send_batch(&buf, stride, &lens[..k])
            .context("sending a batch")?;
        last = monotonic_ns();
        if capture && captured_at.len() < CAPTURE_FRAMES {
            for (i, &len) in lens.iter().enumerate().take(k) {
                if captured_at.len() == CAPTURE_FRAMES {
                    break;
                }
                captured.extend_from_slice(&buf[i * stride..i * stride + len]);
                captured_at.push((last, len));
            }
        }
        sent += k as u64;
    }
    let (u1, s1) = rusage_self();
    if let (true, Some(path)) = (capture, &spec.pcap) {
        if frames {
            write_frames(path, &captured, &captured_at)?;
        } else {
            write_capture(&ch, path, &captured, &captured_at)?;
        }
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(
        out,
        "SENT {sent} {start} {last} {} {} {pacing}",
        u1 - u0,
        s1 - s0
    )?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

/// Sleeps most of the way to `t_ns` (CLOCK_MONOTONIC), then spins the last 100 µs: sleep
/// overshoots by tens of µs on a VM, and a late sender catching up sends bursts the switch and
/// the receiver may drop. Returns the CPU ns the spin burnt (`getrusage`, user + system): the
/// cost of pacing in software, which a NIC bears in hardware, kept apart from the cost of
/// protecting and sending.
pub(super) fn wait_until(t_ns: u64) -> u64 {
    const SPIN_NS: u64 = 100_000;
    let now = monotonic_ns();
    if t_ns > now + SPIN_NS {
        std::thread::sleep(Duration::from_nanos(t_ns - now - SPIN_NS));
    }
    if monotonic_ns() >= t_ns {
        return 0;
    }
    let (u0, s0) = rusage_self();
    while monotonic_ns() < t_ns {
        std::hint::spin_loop();
    }
    let (u1, s1) = rusage_self();
    (u1 - u0) + (s1 - s0)
}

/// Writes whole Ethernet frames (`frames`, back to back; `at`: each one's send time and
/// length) as a classic pcap.
fn write_frames(path: &std::path::Path, frames: &[u8], at: &[(u64, usize)]) -> Result<()> {
    write_frames_as(path, frames, at, |f, out| {
        out.clear();
        out.extend_from_slice(f);
    })
}

pub(crate) fn write_capture(
    ch: &Channel,
    path: &std::path::Path,
    frames: &[u8],
    at: &[(u64, usize)],
) -> Result<()> {
    write_frames_as(path, frames, at, |unit, out| {
        ch.capture_frame(unit, true, out)
    })
}

/// Writes `units` (back to back; `at`: each one's send time and length) as a classic pcap of
/// the Ethernet frames `frame_of` makes of them.
fn write_frames_as(
    path: &std::path::Path,
    units: &[u8],
    at: &[(u64, usize)],
    mut frame_of: impl FnMut(&[u8], &mut Vec<u8>),
) -> Result<()> {
    let base = (std::time::SystemTime::now(), monotonic_ns());
    let wall = |mono: u64| base.0 - Duration::from_nanos(base.1.saturating_sub(mono));
    let mut w = ivnsec_net::pcap::PcapWriter::create(path)
        .with_context(|| format!("creating {}", path.display()))?;
    let mut frame = Vec::new();
    let mut pos = 0;
    for &(t, len) in at {
        frame_of(&units[pos..pos + len], &mut frame);
        w.write_frame(wall(t), &frame)?;
        pos += len;
    }
    w.flush()?;
    Ok(())
}

pub(super) fn receiver(spec: &TputSpec) -> Result<()> {
    let provider = spec.provider;
    let mut chans: Vec<Channel> = spec
        .peers
        .iter()
        .enumerate()
        .map(|(i, p)| receiver_channel(spec.profile, provider, p, i))
        .collect::<Result<_>>()?;
    let family = chans
        .first()
        .map(|c| c.profile())
        .ok_or_else(|| anyhow!("no senders"))?;
    // How a unit names its sender: raw Ethernet frames by source MAC, ESP by SPI, SecOC by PDU
    // id (= Data ID), SOME/IP by client ID (each offset per sender as the SPI is).
    let macs: Vec<[u8; 6]> = spec.peers.iter().map(|p| p.ends.local_mac).collect();
    let spis: Vec<[u8; 4]> = (0..spec.peers.len())
        .map(|i| (0x0000_1001u32 + spi_offset(i)).to_be_bytes())
        .collect();
    let pdu_ids: Vec<[u8; 4]> = (0..spec.peers.len())
        .map(|i| u32::from(SECOC_DATA_ID[0].wrapping_add(spi_offset(i) as u16)).to_be_bytes())
        .collect();
    let clients: Vec<[u8; 2]> = (0..spec.peers.len())
        .map(|i| {
            SOMEIP_CLIENT
                .wrapping_add(spi_offset(i) as u16)
                .to_be_bytes()
        })
        .collect();
    let link = Link::open(&spec.link).context("opening the link")?;
    link.set_buffers(SOCKET_BUFFER).context("socket buffers")?;
    let stop = stop_on_stdin_eof();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "READY {}", link.local_port())?;
    out.flush()?;

    let (u0, s0) = rusage_self();
    let stride = stride(spec.payload);
    let batch = spec.batch;
    let mut buf = vec![0u8; stride * batch];
    let mut lens = vec![0usize; batch];
    let off = chans[0].rx_offset();
    let mut delivered = vec![0u64; chans.len()];
    let mut drops = DropCounters::default();
    let slice = Duration::from_millis(20);
    let coalesce = Duration::from_micros(u64::from(spec.rx_coalesce_us));
    while !stop.load(Ordering::Relaxed) {
        let n = link.recv_batch(&mut buf, stride, off, &mut lens, slice)?;
        if n > 0 && n < batch && !coalesce.is_zero() {
            // The queue ran dry: let the next frames gather, as a NIC's interrupt moderation
            // does, instead of waking for each (docs/experiments.md, "Receive coalescing").
            std::thread::sleep(coalesce);
        }
        let mut group = Group::default();
        for (slot, &len) in buf.chunks_mut(stride).zip(&lens).take(n) {
            let unit = &slot[off..off + len];
            let who = match family {
                Profile::Esp(_) => unit.get(..4).and_then(|s| spis.iter().position(|x| x == s)),
                Profile::Secoc(_) => unit
                    .get(..4)
                    .and_then(|s| pdu_ids.iter().position(|x| x == s)),
                Profile::Someip(_) => unit
                    .get(8..10)
                    .and_then(|s| clients.iter().position(|x| x == s)),
                _ => unit
                    .get(6..12)
                    .and_then(|s| macs.iter().position(|m| m == s)),
            };
            let Some(who) = who else {
                drops.bump(ivnsec_core::sa::DropReason::UnknownSa);
                continue;
            };
            if matches!(family, Profile::Someip(_)) {
                // SOME/IP: a sender's messages are verified in groups (tags checked together,
                // `Channel::verify_batch`), flushed when the sender changes or the group fills.
                if group.who != Some(who) || group.n == GROUP {
                    group.flush(&mut chans, &mut delivered, &mut drops, spec.payload);
                    group.who = Some(who);
                }
                group.push(slot, len);
                continue;
            }
            let verdict = chans[who].verify(slot, len);
            count(verdict, spec.payload, &mut delivered[who], &mut drops);
        }
        group.flush(&mut chans, &mut delivered, &mut drops, spec.payload);
    }
    let (u1, s1) = rusage_self();
    for (i, d) in delivered.iter().enumerate() {
        writeln!(out, "RECV {i} {d}")?;
    }
    for (reason, n) in drops.iter() {
        writeln!(out, "DROP {reason} {n}")?;
    }
    writeln!(out, "CPU {} {}", u1 - u0, s1 - s0)?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

/// Messages of one sender verified together ([`Channel::verify_batch`]).
const GROUP: usize = 8;

/// Up to [`GROUP`] received units of one sender, waiting to be verified together.
#[derive(Default)]
struct Group<'b> {
    who: Option<usize>,
    slots: [&'b mut [u8]; GROUP],
    lens: [usize; GROUP],
    n: usize,
}

impl<'b> Group<'b> {
    fn push(&mut self, slot: &'b mut [u8], len: usize) {
        if let (Some(s), Some(l)) = (self.slots.get_mut(self.n), self.lens.get_mut(self.n)) {
            *s = slot;
            *l = len;
            self.n += 1;
        }
    }

    fn flush(
        &mut self,
        chans: &mut [Channel],
        delivered: &mut [u64],
        drops: &mut DropCounters,
        payload: usize,
    ) {
        let n = std::mem::take(&mut self.n);
        let Some(who) = self.who else { return };
        let mut out: [Result<std::ops::Range<usize>, ivnsec_core::sa::DropReason>; GROUP] =
            std::array::from_fn(|_| Err(ivnsec_core::sa::DropReason::Malformed));
        chans[who].verify_batch(&mut self.slots[..n], &self.lens[..n], &mut out[..n]);
        for verdict in out.into_iter().take(n) {
            count(verdict, payload, &mut delivered[who], drops);
        }
    }
}

/// Counts one verdict: delivered when the payload has the length sent.
fn count(
    verdict: Result<std::ops::Range<usize>, ivnsec_core::sa::DropReason>,
    payload: usize,
    delivered: &mut u64,
    drops: &mut DropCounters,
) {
    match verdict {
        Ok(r) if r.len() == payload => *delivered += 1,
        Ok(_) => drops.bump(ivnsec_core::sa::DropReason::Malformed),
        Err(reason) => drops.bump(reason),
    }
}
