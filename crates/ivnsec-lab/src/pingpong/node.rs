//! The two roles of the ping-pong experiment (seed 000 §3.3, Fig. 16), each run as its own
//! process inside its own ECU namespace.
//!
//! Initiator, per exchange: part 1 create a random payload (its first 8 bytes carry the exchange
//! id, replication ‖ index), part 2 protect, part 3 send and wait for the reply, part 4 verify
//! the reply. Responder: verify (its part 4), protect the same payload as the reply (its part 2),
//! send. Every part is timed with CLOCK_MONOTONIC, which all namespaces of a host share, so the
//! responder also records when its verify finished and the forward one-way delay can be measured
//! directly (responder verify done − initiator part 1 start).
//!
//! The roles talk to the orchestrating `ivnsec` process over stdin/stdout in lines:
//! - responder: `READY <udp port>` once its link is open; on stdin EOF it prints one
//!   `R <id> <verify ns> <protect ns> <verify done ns>` per answered request, `DROP <reason> <n>`
//!   per drop reason, `SOCKDROPS <n>` (units the kernel dropped at its sockets because a receive
//!   queue was full), and `END`.
//! - initiator: one `E <replication> <index> <start ns> <payload ns> <protect ns> <round trip ns>
//!   <verify ns> <lost 0|1>` per exchange, `REJECT <reason> <n>` per reason its verify gave,
//!   `STALE <n>` (valid replies to an exchange already given up), `SOCKDROPS <n>`, and `END`.
//!
//! The responder drains its socket in batches (`recvmmsg`, up to [`RX_BATCH`] units per call),
//! so under a flood of invalid frames it spends one system call on many of them.
//!
//! In segments ([`RoleSpec::segments`], the attack experiment), a role runs one exchange after
//! another with one set of keys, reports as above when the segment ends, and goes on with the
//! next spec (`NEXT`, [`crate::process::Control`]) on the sockets it opened once; the counts of
//! every report are the segment's own. The responder then also prints `FIRST` once it accepted
//! the segment's first unit, `READY <udp port>` again when it has the next segment's keys, and
//! ends a segment on `END` after `EXPECT <n>` only once `n` units are accounted for: judged, or
//! dropped by its sockets' full queues (or after [`DRAIN_QUIET`] without a unit).

use std::io::Write;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{
    Channel, ChannelOptions, DirectionKeys, EXPERIMENT_IP_PROTOCOL, Ends, PAYLOAD_ETHERTYPE,
};
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::sys::monotonic_ns;
use serde::{Deserialize, Serialize};

use crate::process::{Control, NodeSpec, read_control, read_spec};

/// Units the responder takes from its socket per receive call.
pub const RX_BATCH: usize = ivnsec_net::sys::MAX_BATCH;

/// Smallest payload: the 8-byte exchange id.
pub const MIN_PAYLOAD: usize = 8;

/// How long a responder waits in one receive call before it looks at its stdin again: in
/// segments (it is told to end them), and otherwise.
const SEGMENT_SLICE: Duration = Duration::from_millis(2);
const SLICE: Duration = Duration::from_millis(20);
/// A responder whose accounts do not balance at the end of a segment ends it after this long
/// without a unit.
pub const DRAIN_QUIET: Duration = Duration::from_millis(300);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    Initiator,
    Responder,
}

/// Everything a role process needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RoleSpec {
    pub role: Role,
    pub profile: Profile,
    pub provider: ProviderChoice,
    pub payload: usize,
    pub count: u32,
    pub replications: u32,
    pub pause_ns: u64,
    pub timeout_ns: u64,
    pub busy_poll: bool,
    /// Pin the role's thread to this CPU.
    pub cpu: Option<usize>,
    pub link: LinkSpec,
    pub ends: Ends,
    /// Initiator → responder keys (sent over the pipe, not in the JSON).
    #[serde(skip)]
    pub forward: DirectionKeys,
    /// Responder → initiator keys.
    #[serde(skip)]
    pub backward: DirectionKeys,
    /// Initiator: record every request it sends and every reply it receives here (classic pcap).
    #[serde(default)]
    pub pcap: Option<std::path::PathBuf>,
    /// Replay window and first sequence number of this role's SAs.
    #[serde(default)]
    pub channel: ChannelOptions,
    /// Initiator: run exchanges (up to `count` × `replications`) until stdin closes.
    #[serde(default)]
    pub until_eof: bool,
    /// Responder: also listen for the payload sent unprotected (raw Ethernet: the plain
    /// EtherType; ESP: the plain IPv4 protocol) and count it as a drop (`untagged` /
    /// `not_esp`), as a port that requires protection does.
    #[serde(default)]
    pub watch_plain: bool,
    /// Kernel receive buffer of the role's sockets in bytes (the kernel doubles it; set beyond
    /// `net.core.rmem_max` where the process may). `None`: the link's default.
    #[serde(default)]
    pub rcvbuf: Option<usize>,
    /// Run in segments (module documentation): the role reads [`Control`] messages from stdin
    /// and goes on with each `NEXT` spec (same role, link and buffers) after it reported.
    #[serde(default)]
    pub segments: bool,
}

impl NodeSpec for RoleSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        vec![&self.forward, &self.backward]
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        vec![&mut self.forward, &mut self.backward]
    }
}

impl RoleSpec {
    fn channel(&self) -> Result<Channel> {
        let provider = self.provider;
        match self.role {
            Role::Initiator => ivnsec_node::channel::open(
                self.profile,
                provider,
                &self.forward,
                &self.backward,
                self.ends,
                0,
                self.channel,
            ),
            Role::Responder => ivnsec_node::channel::open(
                self.profile,
                provider,
                &self.backward,
                &self.forward,
                self.ends,
                1,
                self.channel,
            ),
        }
    }

    /// Whether `next` can be a segment after this spec: the same role on the same link, with
    /// the same buffers.
    fn same_node(&self, next: &RoleSpec) -> bool {
        let link = |s: &RoleSpec| serde_json::to_string(&s.link).ok();
        self.role == next.role
            && link(self) == link(next)
            && (
                self.watch_plain,
                self.payload,
                self.rcvbuf,
                self.busy_poll,
                self.cpu,
            ) == (
                next.watch_plain,
                next.payload,
                next.rcvbuf,
                next.busy_poll,
                next.cpu,
            )
            && next.segments
    }
}

/// Waits for the next segment's spec; `None` at the end of stdin.
fn next_segment(control: &Receiver<Control<RoleSpec>>, cur: &RoleSpec) -> Result<Option<RoleSpec>> {
    loop {
        match control.recv() {
            Ok(Control::Next(next)) if cur.same_node(&next) => return Ok(Some(*next)),
            Ok(Control::Next(_)) => bail!("the next segment must keep the role, link and buffers"),
            Ok(Control::Expect(_)) => {}
            Ok(Control::End) | Err(_) => return Ok(None),
        }
    }
}

/// Runs the role whose spec arrives on stdin ([`crate::process`]).
pub fn run() -> Result<()> {
    let spec: RoleSpec = read_spec()?;
    if let Some(cpu) = spec.cpu {
        ivnsec_net::sys::pin_current_thread(cpu)
            .with_context(|| format!("pinning to CPU {cpu}"))?;
    }
    match spec.role {
        Role::Initiator => initiator(spec),
        Role::Responder => responder(spec),
    }
}

/// The link that receives the payload sent without protection, for a responder that watches
/// for it, and the reason such a unit is counted under.
fn plain_watch(spec: &RoleSpec) -> Result<Option<(Link, DropReason)>> {
    if !spec.watch_plain {
        return Ok(None);
    }
    let (watch, reason) = match &spec.link {
        LinkSpec::Raw { ifname, .. } => (
            LinkSpec::Raw {
                ifname: ifname.clone(),
                ethertype: PAYLOAD_ETHERTYPE,
            },
            DropReason::Untagged,
        ),
        LinkSpec::RawIp { peer, .. } => (
            LinkSpec::RawIp {
                protocol: EXPERIMENT_IP_PROTOCOL,
                peer: *peer,
            },
            DropReason::NotEsp,
        ),
        // UDP families: the unprotected form arrives on the same socket and fails verify.
        LinkSpec::Udp { .. } | LinkSpec::UdpPeer { .. } => return Ok(None),
    };
    let link = open_link(&watch, spec.rcvbuf).context("the link for unprotected units")?;
    Ok(Some((link, reason)))
}

/// Opens a link with the receive buffer a role spec asks for.
fn open_link(link: &LinkSpec, rcvbuf: Option<usize>) -> Result<Link> {
    let link = Link::open(link).context("opening the link")?;
    if let Some(b) = rcvbuf {
        link.set_recv_buffer(b)
            .context("setting the receive buffer")?;
    }
    Ok(link)
}

/// Units from other sources that a link and the watch for unprotected units skipped.
fn foreign_drops(link: &Link, watch: &Option<(Link, DropReason)>) -> u64 {
    link.foreign_drops() + watch.as_ref().map_or(0, |(w, _)| w.foreign_drops())
}

/// Units the kernel dropped at the link's and the watch's sockets (full receive queues).
fn socket_drops(link: &Link, watch: &Option<(Link, DropReason)>) -> Result<u64> {
    let mut n = link
        .socket_drops()
        .context("reading the socket's drop counter")?;
    if let Some((w, _)) = watch {
        n += w
            .socket_drops()
            .context("reading the socket's drop counter")?;
    }
    Ok(n)
}

fn responder(mut spec: RoleSpec) -> Result<()> {
    let mut ch = spec.channel()?;
    let mut link = open_link(&spec.link, spec.rcvbuf)?;
    let mut watch = plain_watch(&spec)?;
    let control = read_control::<RoleSpec>();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "READY {}", link.local_port())?;
    out.flush()?;

    let cap = Channel::buffer_len(spec.payload.max(1500));
    let mut rx = vec![0u8; cap * RX_BATCH];
    let mut lens = [None; RX_BATCH];
    let mut tx = vec![0u8; cap];
    let expected = spec.count as usize * spec.replications as usize;
    let mut log: Vec<(u64, u64, u64, u64)> = Vec::with_capacity(expected.min(1 << 22));
    let slice = if spec.segments { SEGMENT_SLICE } else { SLICE };
    // What the sockets had counted before the segment.
    let (mut foreign_before, mut sock_before) = (0, 0);
    loop {
        let mut drops = DropCounters::default();
        let off = ch.rx_offset();
        // Units accepted (the log keeps at most 2^22), whether `FIRST` is still to be printed,
        // the count to account for, when the segment was told to end and when the last unit
        // came.
        let mut accepted = 0u64;
        let mut first = spec.segments;
        let mut expect = None;
        let mut ended: Option<Instant> = None;
        let mut last_unit: Option<Instant> = None;
        loop {
            loop {
                match control.try_recv() {
                    Ok(Control::Expect(n)) => expect = Some(n),
                    Ok(Control::End) => {
                        ended.get_or_insert_with(Instant::now);
                    }
                    Ok(Control::Next(_)) => bail!("a next segment before this one ended"),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            if let Some(at) = ended {
                let Some(n) = expect.filter(|_| spec.segments) else {
                    break;
                };
                let counted = accepted + drops.total() + foreign_drops(&link, &watch)
                    - foreign_before
                    + socket_drops(&link, &watch)?
                    - sock_before;
                if counted >= n || last_unit.map_or(at, |t| t.max(at)).elapsed() >= DRAIN_QUIET {
                    break;
                }
            }
            // One non-blocking look (a blocking call with a zero timeout would sleep a jiffy).
            if let Some((w, reason)) = watch.as_mut() {
                while w.recv(&mut tx, off, Duration::ZERO, true)?.is_some() {
                    drops.bump(*reason);
                    if spec.segments {
                        last_unit = Some(Instant::now());
                    }
                }
            }
            let n = link.recv_units(&mut rx, cap, off, &mut lens, slice, spec.busy_poll)?;
            if n > 0 && spec.segments {
                last_unit = Some(Instant::now());
            }
            for (slot, len) in rx.chunks_exact_mut(cap).zip(lens).take(n) {
                let Some(len) = len else { continue };
                let ta = monotonic_ns();
                let range = match ch.verify(slot, len) {
                    Ok(r) => r,
                    Err(reason) => {
                        drops.bump(reason);
                        continue;
                    }
                };
                let tb = monotonic_ns();
                if range.len() < MIN_PAYLOAD {
                    drops.bump(DropReason::Malformed);
                    continue;
                }
                let payload = &slot[range];
                let id = u64::from_be_bytes(payload[..8].try_into().expect("8 bytes"));
                // The reply carries the same payload, protected straight from the receive
                // buffer.
                let tc = monotonic_ns();
                let m = ch.protect(payload, &mut tx)?;
                let td = monotonic_ns();
                link.send(&tx[..m]).context("sending a reply")?;
                if log.len() < (1 << 22) {
                    log.push((id, tb - ta, td - tc, tb));
                }
                accepted += 1;
                if first {
                    writeln!(out, "FIRST")?;
                    out.flush()?;
                    first = false;
                }
            }
        }
        if let Some((w, reason)) = watch.as_mut() {
            while w.recv(&mut tx, off, Duration::ZERO, true)?.is_some() {
                drops.bump(*reason);
            }
        }
        let (foreign, sock_drops) = (foreign_drops(&link, &watch), socket_drops(&link, &watch)?);
        drops.add(DropReason::ForeignSource, foreign - foreign_before);
        for (id, v, p, at) in log.drain(..) {
            writeln!(out, "R {id} {v} {p} {at}")?;
        }
        for (reason, n) in drops.iter() {
            writeln!(out, "DROP {reason} {n}")?;
        }
        writeln!(out, "SOCKDROPS {}", sock_drops - sock_before)?;
        writeln!(out, "END")?;
        out.flush()?;
        if !spec.segments {
            return Ok(());
        }
        let Some(next) = next_segment(&control, &spec)? else {
            return Ok(());
        };
        (foreign_before, sock_before) = (foreign, sock_drops);
        spec = next;
        ch = spec.channel()?;
        writeln!(out, "READY {}", link.local_port())?;
        out.flush()?;
    }
}

/// Whether the orchestrator ended the segment, or closed stdin.
fn segment_ended(control: &Receiver<Control<RoleSpec>>) -> Result<bool> {
    loop {
        match control.try_recv() {
            Ok(Control::End) | Err(TryRecvError::Disconnected) => return Ok(true),
            Ok(Control::Expect(_)) => {}
            Ok(Control::Next(_)) => bail!("a next segment before this one ended"),
            Err(TryRecvError::Empty) => return Ok(false),
        }
    }
}

fn initiator(mut spec: RoleSpec) -> Result<()> {
    if spec.payload < MIN_PAYLOAD {
        bail!("payload must be at least {MIN_PAYLOAD} bytes");
    }
    let mut ch = spec.channel()?;
    let mut link = open_link(&spec.link, spec.rcvbuf)?;
    let cap = Channel::buffer_len(spec.payload.max(1500));
    let mut payload = vec![0u8; spec.payload];
    let mut tx = vec![0u8; cap];
    let mut rx = vec![0u8; cap];
    // Capture: frames are written between exchanges, never inside a timed part, except the copy
    // of each reply before it is verified in place (counted in part 4).
    let mut pcap = match &spec.pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    let clock_base = (std::time::SystemTime::now(), monotonic_ns());
    let wall = |mono: u64| clock_base.0 + Duration::from_nanos(mono.saturating_sub(clock_base.1));
    let control = (spec.until_eof || spec.segments).then(read_control::<RoleSpec>);
    let mut reply_copy: Vec<u8> = Vec::with_capacity(if pcap.is_some() { cap } else { 0 });
    let mut frame = Vec::with_capacity(if pcap.is_some() { cap } else { 0 });
    // Records stay in memory until the end, so no pipe write lands inside a measurement.
    let total = spec.count as usize * spec.replications as usize;
    let mut records: Vec<[u64; 8]> = Vec::with_capacity(total.min(1 << 22));
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    // What the socket had counted before the segment.
    let mut sock_before = 0;
    loop {
        let off = ch.rx_offset();
        let timeout = spec.timeout_ns;
        let pause = Duration::from_nanos(spec.pause_ns);
        let mut rejects = DropCounters::default();
        let mut stale = 0u64;
        'run: for rep in 0..spec.replications {
            for idx in 0..spec.count {
                if let Some(c) = &control
                    && segment_ended(c)?
                {
                    break 'run;
                }
                let id = (u64::from(rep) << 32) | u64::from(idx);
                // Part 1: create the payload.
                let t0 = monotonic_ns();
                getrandom::fill(&mut payload[8..]).map_err(|e| anyhow!("random payload: {e}"))?;
                payload[..8].copy_from_slice(&id.to_be_bytes());
                let t1 = monotonic_ns();
                // Part 2: protect.
                let n = ch.protect(&payload, &mut tx)?;
                let t2 = monotonic_ns();
                // Part 3: send, wait for the reply to this exchange.
                link.send(&tx[..n]).context("sending a request")?;
                let deadline = t2 + timeout;
                let mut done: Option<(u64, u64)> = None;
                loop {
                    let now = monotonic_ns();
                    if now >= deadline {
                        break;
                    }
                    let wait = Duration::from_nanos(deadline - now);
                    let Some(len) = link.recv(&mut rx, off, wait, spec.busy_poll)? else {
                        break;
                    };
                    let t3 = monotonic_ns();
                    // Part 4: verify.
                    if pcap.is_some() {
                        reply_copy.clear();
                        reply_copy.extend_from_slice(&rx[off..off + len]);
                    }
                    match ch.verify(&mut rx, len) {
                        Ok(r) if r.len() >= 8 && rx[r.start..r.start + 8] == id.to_be_bytes() => {
                            done = Some((t3, monotonic_ns()));
                            break;
                        }
                        Ok(_) => stale += 1,
                        Err(reason) => rejects.bump(reason),
                    }
                }
                let (rtt, verify, lost) = match done {
                    Some((t3, t4)) => (t3 - t2, t4 - t3, 0),
                    None => (0, 0, 1),
                };
                if let Some(w) = pcap.as_mut() {
                    ch.capture_frame(&tx[..n], true, &mut frame);
                    w.write_frame(wall(t2), &frame)?;
                    if let Some((t3, _)) = done {
                        ch.capture_frame(&reply_copy, false, &mut frame);
                        w.write_frame(wall(t3), &frame)?;
                    }
                }
                let (rep, idx) = (u64::from(rep), u64::from(idx));
                records.push([rep, idx, t0, t1 - t0, t2 - t1, rtt, verify, lost]);
                if !pause.is_zero() {
                    std::thread::sleep(pause);
                }
            }
        }
        if let Some(w) = pcap.as_mut() {
            w.flush()?;
        }
        for [rep, idx, t0, p1, p2, p3, p4, lost] in records.drain(..) {
            writeln!(out, "E {rep} {idx} {t0} {p1} {p2} {p3} {p4} {lost}")?;
        }
        for (reason, n) in rejects.iter() {
            writeln!(out, "REJECT {reason} {n}")?;
        }
        writeln!(out, "STALE {stale}")?;
        let sock_drops = link
            .socket_drops()
            .context("reading the socket's drop counter")?;
        writeln!(out, "SOCKDROPS {}", sock_drops - sock_before)?;
        writeln!(out, "END")?;
        out.flush()?;
        let Some(c) = control.as_ref().filter(|_| spec.segments) else {
            return Ok(());
        };
        let Some(next) = next_segment(c, &spec)? else {
            return Ok(());
        };
        sock_before = sock_drops;
        spec = next;
        ch = spec.channel()?;
    }
}
