//! The two roles of the sensor-stream experiments (`ivnsec underload`, `ivnsec playback`; seed
//! 002 §5.2.1), each its own process in its own ECU namespace.
//!
//! - **sensor**: sends messages on a schedule (a steady rate, or the times of a timeline). A
//!   message starts with its sequence number (from 1) and its send time (CLOCK_MONOTONIC ns,
//!   read just before its first fragment is protected), both big-endian u64, then random bytes;
//!   it is cut into fragments that are protected one by one (`node::fragment`). Between sends
//!   the sensor waits for replies on its link and measures their round trips.
//! - **warm-up**: before its schedule the sensor sends [`WARMUP_MESSAGES`] messages with
//!   sequence number 0, [`WARMUP_GAP`] apart, and waits [`WARMUP_SETTLE`], as sockperf's
//!   "warmup stage" does before its measured messages: address resolution and the first writes
//!   of a fresh SA's nonce and replay state are not part of the stream's delay. The consumer
//!   drops them; neither side counts their units or CPU.
//! - **consumer**: verifies every unit, reassembles messages, and records each message's one-way
//!   delay: the moment its last fragment completed it − the send time inside (the namespaces
//!   share CLOCK_MONOTONIC). It sends every message whose sequence number is a multiple of
//!   `reply_every` back whole (as sockperf's server answers the messages the client marks).
//!
//! Nothing is allocated per message or per unit on either side once running (buffers, sample
//! vectors and the capture are reserved up front; the reassembler reuses its buffers).
//!
//! Protocol with the orchestrator (stdin/stdout lines):
//! - consumer: `READY <udp port>` once its link is open; on stdin EOF it takes the units still
//!   queued, then prints one `M <seq> <one-way ns>` per message delivered, `RECV <units> <bytes> <duplicates> <out of order>`,
//!   `REPLIED <n>`, `DROP <reason> <n>`, `CPU <user ns> <sys ns>`, `END`.
//! - sensor: `READY <udp port>` once its link is open; then waits for `GO <consumer udp port>` on
//!   stdin (the port matters on the loopback fallback only, where both roles talk UDP and the
//!   consumer was started knowing the sensor's port), sends, waits up to `drain_ns` for the last
//!   replies, then prints one `RTT <seq> <ns>` per reply, `SENT <messages> <units>
//!   <bytes> <start ns> <last send ns> <max late ns> <user ns> <sys ns>`, `REJECT <reason> <n>`
//!   and `END`. CPU times are `getrusage` deltas over the sending window and the drain.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{Channel, ChannelOptions, DirectionKeys, Ends};
use ivnsec_core::profile::Profile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::sys::{monotonic_ns, rusage_self};
use serde::{Deserialize, Serialize};

use super::{MIN_MESSAGE, TimelineEntry, parse_sockperf_csv};
use crate::fragment::{FragReceiver, FragSender, Limits};
use crate::process::{NodeSpec, read_spec, stop_on_stdin_eof};
use crate::throughput::node::{CAPTURE_FRAMES, write_capture};

/// Messages of the warm-up (sequence number 0) before the schedule.
pub const WARMUP_MESSAGES: usize = 8;
/// Between two warm-up messages.
pub const WARMUP_GAP: Duration = Duration::from_millis(2);
/// After the last warm-up message, before the schedule starts.
pub const WARMUP_SETTLE: Duration = Duration::from_millis(20);

/// Replay window of both roles' inbound SAs.
const RX_WINDOW: u32 = 1024;
/// Kernel socket buffers of both roles.
const SOCKET_BUFFER: usize = 8 << 20;
/// Units per `sendmmsg` / `recvmmsg`.
const BATCH: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamRole {
    Sensor,
    Consumer,
}

/// When the sensor sends what.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Schedule {
    /// `count` messages of `size` bytes, message `i` (from 0) at `i / mps` seconds.
    Rate { size: usize, mps: f64, count: u64 },
    /// The messages of a timeline file in sockperf's playback format (sizes below 16 bytes are
    /// sent as 16).
    Timeline {
        file: PathBuf,
        count: u64,
        max_size: usize,
    },
}

impl Schedule {
    pub fn count(&self) -> u64 {
        match self {
            Schedule::Rate { count, .. } | Schedule::Timeline { count, .. } => *count,
        }
    }

    pub fn max_size(&self) -> usize {
        match self {
            Schedule::Rate { size, .. } => *size,
            Schedule::Timeline { max_size, .. } => *max_size,
        }
        .max(MIN_MESSAGE)
    }
}

/// Everything a role needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StreamSpec {
    pub role: StreamRole,
    pub profile: Profile,
    pub provider: ProviderChoice,
    /// Sensor → consumer keys (sent over the pipe, not in the JSON).
    #[serde(skip)]
    pub forward: DirectionKeys,
    /// Consumer → sensor keys (the replies).
    #[serde(skip)]
    pub backward: DirectionKeys,
    /// This role's view of the two ends.
    pub ends: Ends,
    pub link: LinkSpec,
    pub schedule: Schedule,
    /// Reply to every message whose sequence number is a multiple of this (0: never).
    pub reply_every: u64,
    /// What may follow the Ethernet header of one unit.
    pub mtu: usize,
    /// Sensor: how long to wait for the last replies after the last send.
    pub drain_ns: u64,
    /// Sensor: record the first units it sends here.
    #[serde(default)]
    pub pcap: Option<PathBuf>,
    /// The clock of the send stamp in every message and of the consumer's receive time
    /// (one-way delays) and the sensor's reply time (round trips): CLOCK_MONOTONIC on one host,
    /// CLOCK_REALTIME across hosts (the clock PTP disciplines).
    #[serde(default)]
    pub stamp_clock: crate::clock_watch::StampClock,
}

impl NodeSpec for StreamSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        vec![&self.forward, &self.backward]
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        vec![&mut self.forward, &mut self.backward]
    }
}

impl StreamSpec {
    fn channel(&self) -> Result<Channel> {
        let opts = ChannelOptions {
            replay_window: RX_WINDOW,
            ..ChannelOptions::default()
        };
        let (tx, rx, dir) = match self.role {
            StreamRole::Sensor => (&self.forward, &self.backward, 0),
            StreamRole::Consumer => (&self.backward, &self.forward, 1),
        };
        ivnsec_node::channel::open(self.profile, self.provider, tx, rx, self.ends, dir, opts)
    }

    /// Reassembly bounds: messages up to the largest of the schedule, 8 in progress.
    fn limits(&self) -> Limits {
        let max = self.schedule.max_size();
        Limits {
            max_message: max,
            max_total: max.saturating_mul(8),
            ..Limits::default()
        }
    }
}

/// Runs the role whose spec arrives on stdin ([`crate::process`]).
pub fn run() -> Result<()> {
    let spec: StreamSpec = read_spec()?;
    match spec.role {
        StreamRole::Sensor => sensor(&spec),
        StreamRole::Consumer => consumer(&spec),
    }
}

/// The schedule as (offset ns, size) per message, sizes at least [`MIN_MESSAGE`].
pub(crate) fn entries(s: &Schedule) -> Result<Vec<TimelineEntry>> {
    match s {
        Schedule::Rate { size, mps, count } => {
            if !(mps.is_finite() && *mps > 0.0) {
                bail!("bad message rate {mps}");
            }
            Ok((0..*count)
                .map(|i| TimelineEntry {
                    at_ns: (i as f64 * 1e9 / mps).round() as u64,
                    size: (*size).max(MIN_MESSAGE),
                })
                .collect())
        }
        Schedule::Timeline { file, .. } => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let mut v =
                parse_sockperf_csv(&text).map_err(|e| anyhow!("{}: {e}", file.display()))?;
            for e in &mut v {
                e.size = e.size.max(MIN_MESSAGE);
            }
            Ok(v)
        }
    }
}

/// The sequence number and send time at the start of a message (`None` when shorter).
fn message_header(m: &[u8]) -> Option<(u64, u64)> {
    let seq = u64::from_be_bytes(m.get(0..8)?.try_into().ok()?);
    let at = u64::from_be_bytes(m.get(8..16)?.try_into().ok()?);
    Some((seq, at))
}

/// Receive buffers of one role: `BATCH` slots.
struct RxBuf {
    buf: Vec<u8>,
    lens: Vec<usize>,
    stride: usize,
    off: usize,
}

impl RxBuf {
    fn new(stride: usize, off: usize) -> RxBuf {
        RxBuf {
            buf: vec![0u8; stride * BATCH],
            lens: vec![0; BATCH],
            stride,
            off,
        }
    }
}

fn sensor(spec: &StreamSpec) -> Result<()> {
    let mut ch = spec.channel()?;
    let plan = entries(&spec.schedule)?;
    let mut link = Link::open(&spec.link).context("opening the link")?;
    link.set_buffers(SOCKET_BUFFER).context("socket buffers")?;
    let mut fs = FragSender::new(&ch, spec.mtu, 1, BATCH)?;
    let mut fr = FragReceiver::new(spec.limits());
    let mut rx = RxBuf::new(fs.slot_len(), ch.rx_offset());
    let max_size = spec.schedule.max_size();
    let mut msg = vec![0u8; max_size];
    getrandom::fill(&mut msg).map_err(|e| anyhow!("random payload: {e}"))?;
    let expected_replies = match spec.reply_every {
        0 => 0,
        n => plan.len() as u64 / n,
    };
    let mut rtts: Vec<(u64, u64)> = Vec::with_capacity(expected_replies as usize + 16);
    let capture = spec.pcap.is_some();
    let mut captured: Vec<u8> = Vec::with_capacity(if capture {
        CAPTURE_FRAMES * (fs.max_unit() + 128)
    } else {
        0
    });
    let mut captured_at: Vec<(u64, usize)> =
        Vec::with_capacity(if capture { CAPTURE_FRAMES } else { 0 });

    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "READY {}", link.local_port())?;
        out.flush()?;
    }
    // Start signal: `GO <consumer port>` on stdin.
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let port: u16 = line
        .trim()
        .strip_prefix("GO ")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| anyhow!("expected `GO <port>` on stdin, got {:?}", line.trim()))?;
    // Loopback: the sensor learns the consumer's port only now (a testbed link knows its peer).
    if let (
        Link::Udp {
            peer: peer @ None, ..
        },
        LinkSpec::Udp { local, .. },
    ) = (&mut link, &spec.link)
    {
        *peer = Some(std::net::SocketAddr::new(local.ip(), port));
    }
    link.connect_peer().context("setting the destination")?;

    // The warm-up: sequence number 0, the first message's size, nothing counted.
    if let Some(first) = plan.first() {
        let m = &mut msg[..first.size];
        m[0..8].copy_from_slice(&0u64.to_be_bytes());
        for i in 0..WARMUP_MESSAGES {
            m[8..16].copy_from_slice(&spec.stamp_clock.now_ns().to_be_bytes());
            fs.send(&mut ch, &link, m, |_| {})?;
            let wait = if i + 1 == WARMUP_MESSAGES {
                WARMUP_SETTLE
            } else {
                WARMUP_GAP
            };
            let until = monotonic_ns() + wait.as_nanos() as u64;
            // Replies to warm-up messages (none are expected) are taken and dropped.
            while monotonic_ns() < until {
                let left = Duration::from_nanos(until.saturating_sub(monotonic_ns()));
                let n = link.recv_batch(&mut rx.buf, rx.stride, rx.off, &mut rx.lens, left)?;
                for j in 0..n {
                    let len = rx.lens[j];
                    let slot = &mut rx.buf[j * rx.stride..(j + 1) * rx.stride];
                    let _ = fr.accept(&mut ch, 0, slot, len, monotonic_ns());
                }
            }
        }
    }

    let (u0, s0) = rusage_self();
    let start = monotonic_ns();
    let (mut sent, mut units, mut bytes, mut max_late) = (0u64, 0u64, 0u64, 0u64);
    let mut last = start;
    let mut next = 0usize;
    let drain_end = |last: u64| last + spec.drain_ns;
    loop {
        let now = monotonic_ns();
        if let Some(e) = plan.get(next) {
            let due = start + e.at_ns;
            if now >= due {
                let m = &mut msg[..e.size];
                let seq = next as u64 + 1;
                m[0..8].copy_from_slice(&seq.to_be_bytes());
                let t = monotonic_ns();
                m[8..16].copy_from_slice(&spec.stamp_clock.now_ns().to_be_bytes());
                max_late = max_late.max(t.saturating_sub(due));
                let (_, k) = fs.send(&mut ch, &link, m, |unit| {
                    if capture && captured_at.len() < CAPTURE_FRAMES {
                        captured.extend_from_slice(unit);
                        captured_at.push((monotonic_ns(), unit.len()));
                    }
                })?;
                last = monotonic_ns();
                sent += 1;
                units += k as u64;
                bytes += e.size as u64;
                next += 1;
                continue;
            }
        } else if now >= drain_end(last) || rtts.len() as u64 >= expected_replies {
            break;
        }
        let until = plan
            .get(next)
            .map_or_else(|| drain_end(last), |e| start + e.at_ns);
        let wait = Duration::from_nanos(until.saturating_sub(now));
        let n = link.recv_batch(&mut rx.buf, rx.stride, rx.off, &mut rx.lens, wait)?;
        for i in 0..n {
            let len = rx.lens[i];
            let slot = &mut rx.buf[i * rx.stride..(i + 1) * rx.stride];
            if let Ok(Some(m)) = fr.accept(&mut ch, 0, slot, len, monotonic_ns()) {
                if let Some((seq, at)) = message_header(m.data) {
                    if rtts.len() < rtts.capacity() {
                        rtts.push((seq, spec.stamp_clock.now_ns().saturating_sub(at)));
                    }
                }
            }
        }
    }
    let (u1, s1) = rusage_self();
    if let (true, Some(path)) = (capture, &spec.pcap) {
        write_capture(&ch, path, &captured, &captured_at)?;
    }
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    for (seq, rtt) in &rtts {
        writeln!(out, "RTT {seq} {rtt}")?;
    }
    writeln!(
        out,
        "SENT {sent} {units} {bytes} {start} {last} {max_late} {} {}",
        u1 - u0,
        s1 - s0
    )?;
    for (reason, n) in fr.drop_counts() {
        writeln!(out, "REJECT {reason} {n}")?;
    }
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

fn consumer(spec: &StreamSpec) -> Result<()> {
    let mut ch = spec.channel()?;
    let count = spec.schedule.count();
    let link = Link::open(&spec.link).context("opening the link")?;
    link.set_buffers(SOCKET_BUFFER).context("socket buffers")?;
    link.connect_peer().context("setting the destination")?;
    let mut fs = FragSender::new(&ch, spec.mtu, 1, BATCH)?;
    let mut fr = FragReceiver::new(spec.limits());
    let mut rx = RxBuf::new(fs.slot_len(), ch.rx_offset());
    let mut reply = vec![0u8; spec.schedule.max_size()];
    // Per message: sequence number and one-way delay; which sequence numbers were seen.
    let mut samples: Vec<(u64, u64)> = Vec::with_capacity(count as usize);
    let mut seen = vec![0u64; (count as usize + 1).div_ceil(64)];
    let (mut units, mut bytes, mut dups, mut reorder, mut replied) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut max_seq = 0u64;
    let stop = stop_on_stdin_eof();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "READY {}", link.local_port())?;
    out.flush()?;

    let (mut u0, mut s0) = rusage_self();
    let slice = Duration::from_millis(20);
    loop {
        // Once told to stop, take what is still queued (a consumer that fell behind) and stop at
        // the first empty slice.
        let stopping = stop.load(Ordering::Relaxed);
        let n = link.recv_batch(&mut rx.buf, rx.stride, rx.off, &mut rx.lens, slice)?;
        if n == 0 {
            if stopping {
                break;
            }
            fr.expire(monotonic_ns());
        }
        for i in 0..n {
            let len = rx.lens[i];
            units += 1;
            let slot = &mut rx.buf[i * rx.stride..(i + 1) * rx.stride];
            let Ok(Some(m)) = fr.accept(&mut ch, 0, slot, len, monotonic_ns()) else {
                continue;
            };
            let done = spec.stamp_clock.now_ns();
            let Some((seq, at)) = message_header(m.data) else {
                continue;
            };
            if seq == 0 {
                // A warm-up message: its units and the CPU so far are not the stream's.
                units = 0;
                (u0, s0) = rusage_self();
                continue;
            }
            if seq > count {
                continue;
            }
            let (w, b) = ((seq / 64) as usize, seq % 64);
            if seen[w] & (1 << b) != 0 {
                dups += 1;
                continue;
            }
            seen[w] |= 1 << b;
            if seq < max_seq {
                reorder += 1;
            }
            max_seq = max_seq.max(seq);
            bytes += m.data.len() as u64;
            samples.push((seq, done.saturating_sub(at)));
            let answer = spec.reply_every > 0 && seq % spec.reply_every == 0;
            let n = m.data.len();
            if answer {
                reply[..n].copy_from_slice(m.data);
                fs.send(&mut ch, &link, &reply[..n], |_| {})?;
                replied += 1;
            }
        }
    }
    let (u1, s1) = rusage_self();
    for (seq, owd) in &samples {
        writeln!(out, "M {seq} {owd}")?;
    }
    writeln!(out, "RECV {units} {bytes} {dups} {reorder}")?;
    writeln!(out, "REPLIED {replied}")?;
    for (reason, n) in fr.drop_counts() {
        writeln!(out, "DROP {reason} {n}")?;
    }
    writeln!(out, "CPU {} {}", u1 - u0, s1 - s0)?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        let r = Schedule::Rate {
            size: 24_938,
            mps: 950.0,
            count: 3,
        };
        let e = entries(&r).unwrap();
        assert_eq!(
            e.iter().map(|x| x.at_ns).collect::<Vec<_>>(),
            [0, 1_052_632, 2_105_263]
        );
        assert!(e.iter().all(|x| x.size == 24_938));
        assert_eq!(r.max_size(), 24_938);
        let small = Schedule::Rate {
            size: 14,
            mps: 1.0,
            count: 1,
        };
        assert_eq!(entries(&small).unwrap()[0].size, MIN_MESSAGE);
        assert_eq!(small.max_size(), MIN_MESSAGE);
        assert_eq!(
            message_header(&[0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 1, 0, 9]),
            Some((7, 256))
        );
        assert_eq!(message_header(&[0; 15]), None);
    }
}
