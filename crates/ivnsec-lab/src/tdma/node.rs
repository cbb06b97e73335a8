//! The process roles of `ivnsec tdma run`, each started with [`crate::process::spawn_role`]
//! inside its own namespace of the testbed.
//!
//! **ECU** (one per ECU of the cascade): sends its flows' protected frames at their slot times
//! and receives the frames of the other ECU's flows, all in one thread, as a time-triggered ECU
//! does. Before a slot it waits for frames (`ppoll` on its socket, so an arriving frame is taken
//! at once) until [`EcuSpec::spin_ns`] before the slot start, then spins on CLOCK_MONOTONIC,
//! still taking frames while more than [`POLL_GUARD_NS`] remain, and sends at the slot start.
//! The frame was protected right after the previous send, so only the send itself lies in the
//! slot. Per frame it records the scheduled time, the time just before the send call and just
//! after it; per received frame the time its receive call returned (before verification) and
//! the verify time. With [`EcuSpec::probe`] it also opens a second packet socket on its
//! interface with kernel receive timestamps, to time when a frame reached it from the last
//! switch.
//!
//! **Switch probe** (one per switch): an AF_PACKET socket on every bridge port with kernel
//! receive timestamps (`SO_TIMESTAMPNS`); each socket sees the frames that enter the switch
//! through its port (frames the bridge sends out of a port are ignored). It drains its sockets
//! every [`PROBE_DRAIN`] and never touches a frame: the bridge forwards on its own.
//!
//! Frames are told apart on the wire without decrypting them by a 64-bit FNV-1a hash of the
//! unit the sender handed to its socket ([`unit_hash`], [`unit_of_frame`]): every protected
//! unit is different (its sequence number / PN / freshness value never repeats under a key).
//!
//! Lines on stdout (the orchestrator reads them with [`crate::process::read_report`]):
//! - ECU: `READY 0` once its sockets are open; then it waits for `START <t0 ns>` on stdin and
//!   runs; at the end `S <flow> <seq> <scheduled ns> <send ns> <sent ns> <hash>` per frame sent,
//!   `R <flow> <seq> <arrival ns> <verify ns>` per frame received and verified,
//!   `T eth0 <hash> <kernel rx ns, CLOCK_REALTIME>` per frame its interface received,
//!   `DROP <reason> <n>`, `SOCKDROPS <n>`, `PROBEDROPS <n>`, `END`.
//! - probe: `READY 0`; on stdin EOF `T <port> <hash> <kernel rx ns>` per frame, `PROBEDROPS <n>`,
//!   `END`.

use std::io::{BufRead, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{Channel, ChannelOptions, DirectionKeys, Ends};
use ivnsec_core::profile::{Carrier, ETHERTYPE_IPV4, Profile};
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::sys::{self, MAX_BATCH, RawSocket, monotonic_ns};
use serde::{Deserialize, Serialize};

use super::flows::FLOW_HEADER;
use crate::clock_watch::StampClock;
use crate::process::{NodeSpec, read_spec, stop_on_stdin_eof};

/// Most frames one role sends or records in a run.
pub const MAX_EVENTS: u64 = 1 << 21;
/// While spinning towards a slot start, the ECU still takes arriving frames while more than
/// this is left (a receive call costs about a microsecond).
pub const POLL_GUARD_NS: u64 = 5_000;
/// How often a switch probe drains its sockets (frames wait in the kernel with their
/// timestamps; a drain per frame would put the probe's wake-ups into the measurement).
pub const PROBE_DRAIN: Duration = Duration::from_millis(5);
/// Kernel receive buffer of the probe sockets.
pub const PROBE_RCVBUF: usize = 16 << 20;
/// Frames a `--pcap` run records per ECU.
pub const CAPTURE_FRAMES: usize = 100_000;
/// `ETH_P_ALL`: a packet socket of this protocol sees every frame of its interface, also on a
/// bridge port (where a socket of one EtherType sees nothing: the bridge takes the frame first).
const ETH_P_ALL: u16 = 0x0003;
/// Longest wait without looking at the stop flag.
const MAX_WAIT: Duration = Duration::from_millis(50);

/// One slot of an ECU: flow `flow` sends at `offset_ns` of the BPs `b` with
/// `b mod period = phase`, a payload of `payload` bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxSlot {
    pub flow: u16,
    pub offset_ns: u64,
    pub period: u32,
    pub phase: u32,
    pub payload: usize,
}

/// Everything an ECU role needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EcuSpec {
    pub name: String,
    pub profile: Profile,
    pub provider: ProviderChoice,
    pub link: LinkSpec,
    pub ends: Ends,
    /// 0 for ecu1 (its outbound SA is the forward one), 1 for ecu2.
    pub direction: usize,
    /// This ECU → its peer (sent over the pipe, not in the JSON).
    #[serde(skip)]
    pub tx: DirectionKeys,
    /// Its peer → this ECU.
    #[serde(skip)]
    pub rx: DirectionKeys,
    pub bp_ns: u64,
    /// Base periods to run.
    pub periods: u32,
    pub slots: Vec<TxSlot>,
    /// Keep receiving this long after the last base period.
    pub linger_ns: u64,
    /// Stop sleeping this long before a slot start and spin.
    pub spin_ns: u64,
    /// Timestamp the frames arriving at the interface (kernel receive timestamps).
    pub probe: bool,
    /// Record the frames this ECU sends here (classic pcap).
    #[serde(default)]
    pub pcap: Option<PathBuf>,
    /// The clock of the slot times, the start time and the send and arrival stamps:
    /// `CLOCK_MONOTONIC` on a testbed (every namespace shares it), `CLOCK_REALTIME` across hosts
    /// (the clock PTP keeps on the grand master's time).
    #[serde(default)]
    pub stamp_clock: StampClock,
    /// The interface the probe socket watches: the testbed ECU's `eth0` when absent, the
    /// host's `iface` across hosts.
    #[serde(default)]
    pub iface: Option<String>,
}

/// Everything a switch probe needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// The bridge ports (not the bridge itself).
    pub ports: Vec<String>,
    pub profile: Profile,
}

/// The spec of a `tdma` role.
// One per process: the size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Spec {
    Ecu(EcuSpec),
    Probe(ProbeSpec),
}

impl NodeSpec for Spec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        match self {
            Spec::Ecu(e) => vec![&e.tx, &e.rx],
            Spec::Probe(_) => Vec::new(),
        }
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        match self {
            Spec::Ecu(e) => vec![&mut e.tx, &mut e.rx],
            Spec::Probe(_) => Vec::new(),
        }
    }
}

/// 64-bit FNV-1a of `unit`: how the ECUs and the probes name a frame.
pub fn unit_hash(unit: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in unit {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The part of a received Ethernet frame the sender of `profile` handed to its socket: the
/// whole frame (IVN-AE, MACsec), the IPv4 payload of an ESP packet, or the UDP payload on the
/// profile's port (SecOC, SOME/IP); `None` for any other frame or a malformed one.
pub fn unit_of_frame(profile: Profile, frame: &[u8]) -> Option<&[u8]> {
    const ETH: usize = 14;
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    match profile.carrier() {
        Carrier::Ethernet => (ethertype == profile.ethertype()).then_some(frame),
        Carrier::Ipv4 | Carrier::Udp => {
            if ethertype != ETHERTYPE_IPV4 {
                return None;
            }
            let ip = frame.get(ETH..)?;
            let (vihl, proto) = (*ip.first()?, *ip.get(9)?);
            let ihl = usize::from(vihl & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
            if vihl >> 4 != 4 || ihl < 20 || total < ihl {
                return None;
            }
            let body = ip.get(ihl..total)?;
            match profile.carrier() {
                Carrier::Ipv4 => (proto == ivnsec_core::wire::ip::protocol::ESP).then_some(body),
                _ => {
                    if proto != 17 || body.len() < 8 {
                        return None;
                    }
                    let dst = u16::from_be_bytes([body[2], body[3]]);
                    let len = usize::from(u16::from_be_bytes([body[4], body[5]]));
                    (dst == profile.udp_port() && (8..=body.len()).contains(&len))
                        .then(|| &body[8..len])
                }
            }
        }
    }
}

/// Runs the role whose spec arrives on stdin.
pub fn run() -> Result<()> {
    match read_spec::<Spec>()? {
        Spec::Ecu(e) => ecu(&e),
        Spec::Probe(p) => probe(&p),
    }
}

/// A packet socket on `ifname` that timestamps every frame it receives.
fn probe_socket(ifname: &str) -> Result<RawSocket> {
    let s = RawSocket::open(ifname, ETH_P_ALL)
        .with_context(|| format!("opening a packet socket on {ifname}"))?;
    s.enable_timestamps()
        .context("asking for receive timestamps")?;
    s.set_recv_buffer_force(PROBE_RCVBUF)
        .context("setting the receive buffer")?;
    Ok(s)
}

/// Takes every frame queued at `s` without waiting; records `(port, hash, kernel rx ns)`.
fn drain_probe(
    s: &RawSocket,
    port: usize,
    profile: Profile,
    buf: &mut [u8],
    out: &mut Vec<(usize, u64, u64)>,
) -> Result<()> {
    while let Some(m) = s.try_recv(buf)? {
        if m.truncated() || out.len() as u64 >= MAX_EVENTS {
            continue;
        }
        let (Some(unit), Some(ts)) = (unit_of_frame(profile, &buf[..m.len]), m.timestamp) else {
            continue;
        };
        let ns = ts
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        out.push((port, unit_hash(unit), ns));
    }
    Ok(())
}

fn probe(spec: &ProbeSpec) -> Result<()> {
    let socks: Vec<RawSocket> = spec
        .ports
        .iter()
        .map(|p| probe_socket(p))
        .collect::<Result<_>>()?;
    let stop = stop_on_stdin_eof();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "READY 0")?;
    out.flush()?;
    let mut buf = vec![0u8; 2048];
    let mut seen = Vec::new();
    loop {
        let last = stop.load(Ordering::Relaxed);
        for (i, s) in socks.iter().enumerate() {
            drain_probe(s, i, spec.profile, &mut buf, &mut seen)?;
        }
        if last {
            break;
        }
        std::thread::sleep(PROBE_DRAIN);
    }
    let mut drops = 0;
    for s in &socks {
        drops += sys::socket_drops(s.as_fd()).context("reading a probe's drop counter")?;
    }
    for (port, hash, ns) in seen {
        writeln!(out, "T {} {hash} {ns}", spec.ports[port])?;
    }
    writeln!(out, "PROBEDROPS {drops}")?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

/// One frame to send: when (from t0), which flow, which occurrence, how much payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxEvent {
    pub at_ns: u64,
    pub flow: u16,
    pub seq: u64,
    pub payload: usize,
}

/// The frames `slots` send over `periods` base periods of `bp_ns`, in time order; at most
/// [`MAX_EVENTS`].
pub fn tx_events(slots: &[TxSlot], bp_ns: u64, periods: u32) -> Result<Vec<TxEvent>> {
    let mut n = 0u64;
    for s in slots {
        if s.period == 0 || s.phase >= s.period {
            bail!(
                "slot of flow {}: phase {} of period {}",
                s.flow,
                s.phase,
                s.period
            );
        }
        n += u64::from(periods).div_ceil(u64::from(s.period));
    }
    if n > MAX_EVENTS {
        bail!("{n} frames to send, at most {MAX_EVENTS}");
    }
    let mut ev = Vec::with_capacity(n as usize);
    for b in 0..u64::from(periods) {
        for s in slots {
            let (period, phase) = (u64::from(s.period), u64::from(s.phase));
            if b % period == phase {
                ev.push(TxEvent {
                    at_ns: b * bp_ns + s.offset_ns,
                    flow: s.flow,
                    seq: (b - phase) / period,
                    payload: s.payload,
                });
            }
        }
    }
    ev.sort_by_key(|e| (e.at_ns, e.flow));
    Ok(ev)
}

/// The payload of one frame: flow (16 bits) ‖ sequence number (48 bits) ‖ zeros.
pub fn write_payload(buf: &mut [u8], flow: u16, seq: u64) {
    let id = (u64::from(flow) << 48) | (seq & 0xFFFF_FFFF_FFFF);
    buf[..FLOW_HEADER].copy_from_slice(&id.to_be_bytes());
    buf[FLOW_HEADER..].fill(0);
}

/// Flow and sequence number of a payload ([`write_payload`]).
pub fn read_payload(p: &[u8]) -> Option<(u16, u64)> {
    let id = u64::from_be_bytes(p.get(..FLOW_HEADER)?.try_into().ok()?);
    Some(((id >> 48) as u16, id & 0xFFFF_FFFF_FFFF))
}

fn link_fd(link: &Link) -> BorrowedFd<'_> {
    match link {
        Link::Raw(s) => s.as_fd(),
        Link::RawIp(s, ..) => s.fd(),
        Link::Udp { sock, .. } => sock.socket().as_fd(),
    }
}

/// The receiving half of an ECU: its buffers, what arrived, what was dropped.
struct Receiver {
    buf: Vec<u8>,
    stride: usize,
    off: usize,
    lens: [Option<usize>; MAX_BATCH],
    /// `(flow, seq, arrival ns, verify ns)`.
    log: Vec<[u64; 4]>,
    drops: DropCounters,
    /// The clock of the arrival stamps.
    clock: StampClock,
}

impl Receiver {
    /// Takes every unit queued at the link without waiting, verifies each and logs it.
    fn take(&mut self, link: &mut Link, ch: &mut Channel) -> Result<()> {
        loop {
            // Busy mode with no time: one non-blocking attempt on every kind of link.
            let n = link.recv_units(
                &mut self.buf,
                self.stride,
                self.off,
                &mut self.lens,
                Duration::ZERO,
                true,
            )?;
            if n == 0 {
                return Ok(());
            }
            let arrival = self.clock.now_ns();
            for (slot, len) in self
                .buf
                .chunks_exact_mut(self.stride)
                .zip(self.lens)
                .take(n)
            {
                let Some(len) = len else { continue };
                let t0 = monotonic_ns();
                let range = match ch.verify(slot, len) {
                    Ok(r) => r,
                    Err(reason) => {
                        self.drops.bump(reason);
                        continue;
                    }
                };
                let verify = monotonic_ns() - t0;
                match read_payload(&slot[range]) {
                    Some((flow, seq)) if (self.log.len() as u64) < MAX_EVENTS => {
                        self.log.push([u64::from(flow), seq, arrival, verify]);
                    }
                    Some(_) => {}
                    None => self.drops.bump(DropReason::Malformed),
                }
            }
        }
    }

    /// Waits up to `wait` for the link to become readable (nanosecond timeout), then takes
    /// what is queued.
    fn wait_and_take(&mut self, link: &mut Link, ch: &mut Channel, wait: Duration) -> Result<()> {
        if sys::wait_readable(link_fd(link), Some(wait.min(MAX_WAIT)))? {
            self.take(link, ch)?;
        }
        Ok(())
    }
}

fn ecu(spec: &EcuSpec) -> Result<()> {
    let mut ch = ivnsec_node::channel::open(
        spec.profile,
        spec.provider,
        &spec.tx,
        &spec.rx,
        spec.ends,
        spec.direction,
        ChannelOptions::default(),
    )?;
    let mut link = Link::open(&spec.link).context("opening the link")?;
    let probe = if spec.probe {
        Some(probe_socket(
            spec.iface
                .as_deref()
                .unwrap_or(ivnsec_net::topology::ECU_IF),
        )?)
    } else {
        None
    };
    let events = tx_events(&spec.slots, spec.bp_ns, spec.periods)?;
    let largest = spec.slots.iter().map(|s| s.payload).max().unwrap_or(0);
    if spec.slots.iter().any(|s| s.payload < FLOW_HEADER) {
        bail!("a payload must hold the {FLOW_HEADER}-byte flow header");
    }
    let cap = Channel::buffer_len(largest.max(1500));
    let mut rx = Receiver {
        buf: vec![0u8; cap * MAX_BATCH],
        stride: cap,
        off: ch.rx_offset(),
        lens: [None; MAX_BATCH],
        log: Vec::with_capacity(1 << 12),
        drops: DropCounters::default(),
        clock: spec.stamp_clock,
    };
    let mut payload = vec![0u8; largest.max(FLOW_HEADER)];
    let mut tx = vec![0u8; cap];
    let mut sent: Vec<[u64; 6]> = Vec::with_capacity(events.len());
    let mut probe_buf = vec![0u8; 2048];
    let mut probed: Vec<(usize, u64, u64)> = Vec::new();
    let capture = spec.pcap.is_some();
    let capture_n = if capture {
        events.len().min(CAPTURE_FRAMES)
    } else {
        0
    };
    let mut captured: Vec<u8> = Vec::with_capacity(capture_n * (cap / 2));
    let mut captured_at: Vec<(u64, usize)> = Vec::with_capacity(capture_n);
    let mut frame = Vec::with_capacity(if capture { cap } else { 0 });

    // The first frame is protected before the run.
    let protect = |ch: &mut Channel, tx: &mut [u8], payload: &mut [u8], e: &TxEvent| {
        write_payload(&mut payload[..e.payload], e.flow, e.seq);
        ch.protect(&payload[..e.payload], tx)
            .map_err(|err| anyhow!("protecting a frame of flow {}: {err}", e.flow))
    };
    let mut n = match events.first() {
        Some(e) => protect(&mut ch, &mut tx, &mut payload, e)?,
        None => 0,
    };

    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "READY 0")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let t0: u64 = line
        .trim()
        .strip_prefix("START ")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("expected `START <ns>` on stdin, got {:?}", line.trim()))?;
    let stop = stop_on_stdin_eof();
    let clock = spec.stamp_clock;
    let clock_base = (SystemTime::now(), clock.now_ns());
    let spin = spec.spin_ns;

    'run: for (i, e) in events.iter().enumerate() {
        let at = t0 + e.at_ns;
        // Wait for frames until the spin starts.
        loop {
            if stop.load(Ordering::Relaxed) {
                break 'run;
            }
            let now = clock.now_ns();
            if now.saturating_add(spin) >= at {
                break;
            }
            rx.wait_and_take(&mut link, &mut ch, Duration::from_nanos(at - spin - now))?;
            if let Some(p) = &probe {
                drain_probe(p, 0, spec.profile, &mut probe_buf, &mut probed)?;
            }
        }
        // Spin to the slot start, still taking frames while there is time.
        loop {
            let now = clock.now_ns();
            if now >= at {
                break;
            }
            if at - now > POLL_GUARD_NS {
                rx.take(&mut link, &mut ch)?;
            }
            std::hint::spin_loop();
        }
        let t_send = clock.now_ns();
        link.send(&tx[..n]).context("sending a frame")?;
        let t_sent = clock.now_ns();
        let hash = unit_hash(&tx[..n]);
        sent.push([u64::from(e.flow), e.seq, at, t_send, t_sent, hash]);
        if captured_at.len() < capture_n {
            ch.capture_frame(&tx[..n], true, &mut frame);
            captured_at.push((t_send, frame.len()));
            captured.extend_from_slice(&frame);
        }
        if let Some(next) = events.get(i + 1) {
            n = protect(&mut ch, &mut tx, &mut payload, next)?;
        }
    }
    // Receive until the run is over.
    let end = t0 + u64::from(spec.periods) * spec.bp_ns + spec.linger_ns;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = clock.now_ns();
        if now >= end {
            break;
        }
        rx.wait_and_take(&mut link, &mut ch, Duration::from_nanos(end - now))?;
        if let Some(p) = &probe {
            drain_probe(p, 0, spec.profile, &mut probe_buf, &mut probed)?;
        }
    }
    rx.take(&mut link, &mut ch)?;
    let mut probe_drops = 0;
    if let Some(p) = &probe {
        drain_probe(p, 0, spec.profile, &mut probe_buf, &mut probed)?;
        probe_drops = sys::socket_drops(p.as_fd()).context("reading the probe's drop counter")?;
    }
    rx.drops
        .add(DropReason::ForeignSource, link.foreign_drops());
    let sock_drops = link
        .socket_drops()
        .context("reading the socket's drop counter")?;
    if let Some(path) = &spec.pcap {
        let mut w = ivnsec_net::pcap::PcapWriter::create(path)
            .with_context(|| format!("creating {}", path.display()))?;
        let mut at = 0;
        for &(t, len) in &captured_at {
            let wall = clock_base.0 + Duration::from_nanos(t.saturating_sub(clock_base.1));
            w.write_frame(wall, &captured[at..at + len])?;
            at += len;
        }
        w.flush()?;
    }
    for [flow, seq, at, send, done, hash] in &sent {
        writeln!(out, "S {flow} {seq} {at} {send} {done} {hash}")?;
    }
    for [flow, seq, arrival, verify] in &rx.log {
        writeln!(out, "R {flow} {seq} {arrival} {verify}")?;
    }
    for (_, hash, ns) in &probed {
        writeln!(out, "T {} {hash} {ns}", ivnsec_net::topology::ECU_IF)?;
    }
    for (reason, k) in rx.drops.iter() {
        writeln!(out, "DROP {reason} {k}")?;
    }
    writeln!(out, "SOCKDROPS {sock_drops}")?;
    writeln!(out, "PROBEDROPS {probe_drops}")?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FNV-1a 64 known answers (the reference values of the FNV authors, draft-eastlake-fnv).
    #[test]
    fn fnv1a_known_answers() {
        assert_eq!(unit_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(unit_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(unit_hash(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn payload_header_round_trips() {
        let mut p = [0xAAu8; 12];
        write_payload(&mut p, 0x0102, 0x0000_0304_0506_0708);
        assert_eq!(p[..8], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(p[8..], [0; 4]);
        assert_eq!(read_payload(&p), Some((0x0102, 0x0304_0506_0708)));
        assert_eq!(read_payload(&p[..7]), None);
    }

    /// Events come in time order over the BPs; a flow of period 2 and phase 1 sends in BPs 1, 3.
    #[test]
    fn events_follow_the_slots() {
        let slots = [
            TxSlot {
                flow: 0,
                offset_ns: 500,
                period: 1,
                phase: 0,
                payload: 8,
            },
            TxSlot {
                flow: 1,
                offset_ns: 100,
                period: 2,
                phase: 1,
                payload: 8,
            },
        ];
        let ev = tx_events(&slots, 1000, 4).unwrap();
        let got: Vec<(u64, u16, u64)> = ev.iter().map(|e| (e.at_ns, e.flow, e.seq)).collect();
        assert_eq!(
            got,
            [
                (500, 0, 0),
                (1100, 1, 0),
                (1500, 0, 1),
                (2500, 0, 2),
                (3100, 1, 1),
                (3500, 0, 3)
            ]
        );
        let bad = [TxSlot {
            phase: 2,
            ..slots[1].clone()
        }];
        assert!(tx_events(&bad, 1000, 4).is_err());
        assert!(
            tx_events(&slots, 1000, u32::MAX).is_err(),
            "too many events"
        );
    }

    /// The unit is found in each carrier's frame; anything else is not a unit.
    #[test]
    fn units_are_found_in_frames() {
        let ivnae: Profile = "hmac-sha1".parse().unwrap();
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&0x88B5u16.to_be_bytes());
        assert_eq!(unit_of_frame(ivnae, &f), Some(&f[..]));
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert_eq!(unit_of_frame(ivnae, &f), None);
        assert_eq!(unit_of_frame(ivnae, &f[..13]), None);

        // ESP: Ethernet ‖ IPv4 (20 bytes, protocol 50, total 20 + 24) ‖ 24 bytes, padded to 80.
        let esp: Profile = "esp-aes128-gcm".parse().unwrap();
        let mut p = vec![0u8; 80];
        p[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        p[14] = 0x45;
        p[16..18].copy_from_slice(&44u16.to_be_bytes());
        p[23] = 50;
        for (i, b) in p[34..58].iter_mut().enumerate() {
            *b = i as u8 + 1;
        }
        assert_eq!(unit_of_frame(esp, &p), Some(&p[34..58]));
        p[23] = 17;
        assert_eq!(unit_of_frame(esp, &p), None);
        p[16..18].copy_from_slice(&200u16.to_be_bytes());
        p[23] = 50;
        assert_eq!(unit_of_frame(esp, &p), None, "total length past the frame");

        // SecOC: UDP to its port, 8-byte header, the unit is the UDP payload.
        let secoc: Profile = "secoc-cmac-aes128".parse().unwrap();
        let mut u = vec![0u8; 14 + 20 + 8 + 16];
        u[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        u[14] = 0x45;
        u[16..18].copy_from_slice(&((20 + 8 + 16) as u16).to_be_bytes());
        u[23] = 17;
        u[36..38].copy_from_slice(&secoc.udp_port().to_be_bytes());
        u[38..40].copy_from_slice(&24u16.to_be_bytes());
        u[42..].fill(7);
        assert_eq!(unit_of_frame(secoc, &u), Some(&u[42..]));
        u[36..38].copy_from_slice(&9u16.to_be_bytes());
        assert_eq!(unit_of_frame(secoc, &u), None, "another port");
        u[36..38].copy_from_slice(&secoc.udp_port().to_be_bytes());
        u[38..40].copy_from_slice(&4u16.to_be_bytes());
        assert_eq!(
            unit_of_frame(secoc, &u),
            None,
            "UDP length below its header"
        );
        // Nothing short panics.
        for cut in 0..u.len() {
            let _ = unit_of_frame(secoc, &u[..cut]);
            let _ = unit_of_frame(esp, &p[..cut.min(p.len())]);
        }
    }
}
