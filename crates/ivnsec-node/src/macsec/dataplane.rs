//! The two frame paths of the SecY, one thread each, so a frame going out never waits for one
//! coming in:
//!
//! The host side is a [`HostPort`]: the TAP of `ivnsec macsec up`, or the plain interface of
//! `ivnsec gateway`.
//!
//! - [`tx_loop`]: frames the host sent on the TAP, read without blocking until none is queued
//!   or a batch of [`MAX_BATCH`] is full, protected in place under the encoding SA (each PN
//!   claimed in the SA's nonce reservation first, when it has one), sent on the protected
//!   interface with one `sendmmsg`.
//! - [`rx_loop`]: MACsec frames (the socket is bound to EtherType 0x88E5; nothing else reaches
//!   it) taken from the socket's receive ring ([`RxRing`], no system call; with
//!   `--rx-ring off` with one `recvmmsg`), verified in place, the plain frames written to the TAP (a
//!   TAP takes one frame per `write`).
//!
//! Each batch takes its half's lock once. Buffers are allocated once per thread; nothing is
//! allocated per frame. A loop wakes at least every [`TICK`] to see the stop flag.

use std::sync::atomic::Ordering;

use ivnsec_core::sa::macsec::{Opened, RxStatus};
use ivnsec_core::sa::secy::{Dropped, Received, SecyCheck, SecyRx, SecySealing, Ticket, TxError};
use ivnsec_core::wire::macsec::ICV_LEN;
use ivnsec_net::sys::{self, MAX_BATCH, PacketType, RawSocket, RecvMeta, RxRing};
use std::os::fd::AsFd;

use super::host::{HostPort, VLAN_TAG_LEN};
use super::sched::{Scheduling, ThreadPolicy};
use super::{MtuPlan, Shared, TICK};
use crate::keys::rxmark::rx_error;
use crate::stages::run_stages;

/// Room for one frame in a batch buffer: the largest frame the protected interface carries
/// (header + MTU) plus 4 octets for a VLAN tag, rounded up to a cache line.
pub fn stride(plan: MtuPlan) -> usize {
    (14 + 4 + (plan.vlan_slack as usize) + plan.iface as usize).div_ceil(64) * 64
}

fn add(c: &std::sync::atomic::AtomicU64, n: usize) {
    c.fetch_add(n as u64, Ordering::Relaxed);
}

/// Whether a direction's work is split across two threads ([`RunSpec::pipeline`]).
///
/// [`RunSpec::pipeline`]: super::RunSpec::pipeline
pub use crate::stages::pipeline_on;

/// Opens the protected interface's packet socket for `ethertype`, with a receive ring of
/// about `bytes` for frames of up to `frame_max` octets when `ring` ([`RunSpec::rx_ring`]). A
/// kernel that refuses the ring leaves the socket's queue in use, said on stderr.
///
/// [`RunSpec::rx_ring`]: super::RunSpec::rx_ring
pub fn open_protected(
    iface: &str,
    ethertype: u16,
    frame_max: usize,
    bytes: usize,
    ring: bool,
) -> std::io::Result<(RawSocket, Option<RxRing>)> {
    if !ring {
        return RawSocket::open(iface, ethertype).map(|s| (s, None));
    }
    match RawSocket::open_with_rx_ring(iface, ethertype, frame_max, bytes) {
        Ok((s, r)) => Ok((s, Some(r))),
        Err(e) => {
            let s = RawSocket::open(iface, ethertype)?;
            eprintln!(
                "{iface}: no receive ring ({e}); frames are taken from the socket queue \
                 (recvmmsg)"
            );
            Ok((s, None))
        }
    }
}

/// Opens a packet socket on `iface` that only sends: bound to the interface with protocol 0,
/// it receives nothing and no thread waits on it.
///
/// The data planes send on it rather than on the socket their receiving thread waits on. When
/// the kernel releases a sent frame (at once on a veth, where the peer takes it in the
/// sender's own softirq) it tells the socket's waiters that there is room to send again; on a
/// socket that a thread polls for frames, that is a pass over a wait queue under its lock for
/// every frame sent: 3.7 % of a `macsec up` transmit thread's CPU in `perf` (one TCP stream,
/// docs/benchmarks.md, "A socket that only sends"). On this socket nobody waits.
pub fn open_send(iface: &str) -> std::io::Result<RawSocket> {
    RawSocket::open(iface, 0)
}

/// The protected interface's two sockets: the one frames are received on (and waited on), and
/// the one they are sent on ([`open_send`]).
#[derive(Clone, Copy)]
pub struct Protected<'a> {
    pub sock: &'a RawSocket,
    pub out: &'a RawSocket,
}

/// The receive ring for the status file: its size and slots, or null.
pub fn ring_json(ring: Option<&RxRing>) -> serde_json::Value {
    ring.map_or(
        serde_json::Value::Null,
        |r| serde_json::json!({"bytes": r.bytes(), "slots": r.slots()}),
    )
}

/// Takes the frames waiting on the protected interface, at most [`MAX_BATCH`], without
/// blocking: from the receive ring where there is one, else with one `recvmmsg`. Frame `i` at
/// `buf[i * stride..]`, as [`RawSocket::recv_batch`] puts it.
pub fn take_frames(
    sock: &RawSocket,
    ring: Option<&mut RxRing>,
    buf: &mut [u8],
    stride: usize,
    metas: &mut [RecvMeta],
) -> std::io::Result<usize> {
    match ring {
        Some(r) => Ok(r.recv_batch(buf, stride, 0, metas)),
        None => sock.recv_batch(buf, stride, 0, metas),
    }
}

/// Whether one thread moves both directions ([`busy_loop`]): in the latency mode
/// (`--busy-poll-us`) without the pipeline.
pub fn one_thread(busy_poll: bool, pipeline: bool) -> bool {
    busy_poll && !pipeline
}

/// How many threads move frames (the status's `threads`): one in the latency mode without the
/// pipeline, four with the pipeline, else one per direction.
pub fn threads(busy_poll: bool, pipeline: bool) -> u8 {
    match (one_thread(busy_poll, pipeline), pipeline) {
        (true, _) => 1,
        (false, true) => 4,
        (false, false) => 2,
    }
}

/// Frames read from the host side, on their way out.
struct TxBatch {
    buf: Vec<u8>,
    /// The frames read: (slot, length).
    got: [(usize, usize); MAX_BATCH],
    n: usize,
    /// The frames protected: (offset, length), in PN order.
    out: [(usize, usize); MAX_BATCH],
    k: usize,
    /// By slot, while the batch is protected (reset for the slots in use only): the frame's
    /// sealing once prepared, its sealed length.
    jobs: Vec<Option<SecySealing>>,
    sealed: Vec<usize>,
}

/// Where the frames of a transmit batch lie and how long they may be.
#[derive(Clone, Copy)]
struct TxGeometry {
    stride: usize,
    /// Room in front of each frame for the SecTAG.
    room: usize,
    overhead: usize,
    /// The largest frame the protected interface sends.
    wire_max: usize,
}

impl TxGeometry {
    fn of(plan: MtuPlan, stride: usize) -> TxGeometry {
        let overhead = plan.overhead as usize;
        TxGeometry {
            stride,
            // Each frame is read behind room for the SecTAG (the overhead less the ICV), so
            // protect encrypts it where it lies: only the 12 address octets move.
            room: overhead.saturating_sub(ICV_LEN),
            overhead,
            // Header + the interface's MTU (+ a VLAN tag's length where the plan allows it: a
            // gateway's tagged frames).
            wire_max: 14 + plan.iface as usize + plan.vlan_slack as usize,
        }
    }
}

fn tx_batch(stride: usize) -> TxBatch {
    TxBatch {
        buf: vec![0u8; MAX_BATCH * stride],
        got: [(0, 0); MAX_BATCH],
        n: 0,
        out: [(0, 0); MAX_BATCH],
        k: 0,
        jobs: vec![None; MAX_BATCH],
        sealed: vec![0; MAX_BATCH],
    }
}

fn rx_batch(stride: usize) -> RxBatch {
    let empty = RecvMeta {
        len: 0,
        wire_len: 0,
        packet_type: PacketType::Host,
        timestamp: None,
    };
    RxBatch {
        buf: vec![0u8; MAX_BATCH * stride],
        metas: [empty; MAX_BATCH],
        got: 0,
        full: false,
        more: false,
        deliver: [(0, 0); MAX_BATCH],
        k: 0,
        jobs: vec![None; MAX_BATCH],
        decided: vec![None; MAX_BATCH],
        opened: vec![Opened::Skipped; MAX_BATCH],
    }
}

/// The latency mode on one thread (`--busy-poll-us` without `--pipeline`): one thread moves
/// both directions, taking what the host side and the protected interface have queued in
/// turn, without sleeping while frames crossed within the spin time (other runnable threads of
/// the CPU go first between polls), and waiting on both at once once none did. With a thread
/// per direction a SecY would keep two threads spinning, and on a host with few CPUs the
/// programs whose frames they carry would wait for a CPU behind them.
pub fn busy_loop(
    sh: &Shared,
    host: &dyn HostPort,
    Protected { sock, out }: Protected<'_>,
    ring: Option<RxRing>,
    plan: MtuPlan,
    stride: usize,
    scheduling: Scheduling,
) {
    let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
    let (mut tb, mut rb) = (tx_batch(stride), rx_batch(stride));
    let mut reader = TxReader::new(sh, host, TxGeometry::of(plan, stride));
    let mut receiver = RxTaker {
        sh,
        sock,
        ring,
        stride,
    };
    let mut batches = 0u32;
    while !sh.stop.load(Ordering::Relaxed) {
        batches = batches.wrapping_add(1);
        if batches % 64 == 0 {
            host.count_queue_drops(&sh.frames);
            count_iface_drops(sh, sock);
        }
        let Ok(sent) = reader.read_protect(&mut tb, &mut policy) else {
            return;
        };
        if tb.k > 0 && send(sh, out, &tb).is_err() {
            return;
        }
        let Ok(got) = receiver.take(&mut rb, &mut policy) else {
            return;
        };
        if got > 0 && verify_and_deliver(sh, host, stride, &mut rb).is_err() {
            return;
        }
        if sent > 0 || got > 0 || sh.busy_poll.keep_polling() {
            continue;
        }
        // Nothing crossed within the spin time: one wait over both sides.
        let wait = policy.before_sleep(TICK);
        if let Err(e) = sys::wait_readable_any(&[host.poll_fd(), sock.as_fd()], wait) {
            return sh.fail(anyhow::anyhow!("waiting on both sides: {e}"));
        }
    }
}

/// Frames of the host from the TAP (or the plain port), protected, out on the protected
/// interface (its send-only socket `out`, [`open_send`]). With `pipeline` the reading (with the cutting of super-frames) and the protection
/// run on this thread and the sending on a second one, batch by batch in order.
pub fn tx_loop(
    sh: &Shared,
    host: &dyn HostPort,
    out: &RawSocket,
    plan: MtuPlan,
    stride: usize,
    scheduling: Scheduling,
    pipeline: bool,
) {
    let g = TxGeometry::of(plan, stride);
    let make = || tx_batch(stride);
    let mut policy = None;
    let second = move |b: &mut TxBatch, _: bool| {
        // The second stage's thread runs under the same scheduling, from its first batch on.
        policy.get_or_insert_with(|| ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises));
        send(sh, out, b).is_ok()
    };
    run_stages(&sh.stop, pipeline, make, second, |mut handoff, mut b| {
        let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
        // After a full batch more frames are likely queued: read again without waiting.
        let mut full = false;
        let mut batches = 0u32;
        let mut reader = TxReader::new(sh, host, g);
        while !sh.stop.load(Ordering::Relaxed) {
            batches = batches.wrapping_add(1);
            if batches % 64 == 0 {
                host.count_queue_drops(&sh.frames);
            }
            if !full && !sh.busy_poll.keep_polling() {
                let wait = policy.before_sleep(TICK);
                match host.wait_readable(wait) {
                    Ok(true) => {}
                    Ok(false) => {
                        host.count_queue_drops(&sh.frames);
                        continue;
                    }
                    Err(e) => return sh.fail(anyhow::anyhow!("waiting on the host side: {e}")),
                }
            }
            let Ok(n) = reader.read_protect(&mut b, &mut policy) else {
                return;
            };
            full = n > 0;
            if b.k == 0 {
                continue;
            }
            if handoff.inline(b.k) {
                if send(sh, out, &b).is_err() {
                    return;
                }
            } else {
                match handoff.pass(b, &sh.stop) {
                    Some(next) => b = next,
                    None => return,
                }
            }
        }
    });
}

/// The reading half of the transmit direction: frames from the host side into a batch,
/// protected there.
struct TxReader<'a> {
    sh: &'a Shared,
    host: &'a dyn HostPort,
    g: TxGeometry,
    /// Room behind each frame (the ICV and a VLAN tag put back).
    tail: usize,
    /// Frames went out since the last time the queue ran empty.
    sent_since_top_up: bool,
}

impl<'a> TxReader<'a> {
    fn new(sh: &'a Shared, host: &'a dyn HostPort, g: TxGeometry) -> TxReader<'a> {
        TxReader {
            sh,
            host,
            g,
            tail: (g.overhead - g.room) + VLAN_TAG_LEN,
            sent_since_top_up: false,
        }
    }

    /// Reads the frames the host side has queued (at most a batch, without waiting) into `b`
    /// and protects them (`b.k` of them to send). Returns how many were read; when none was
    /// and frames went out since the queue last ran empty, the encoding SA's next block is
    /// reserved ahead first. `Err` once a failure is recorded (the data plane then stops).
    fn read_protect(&mut self, b: &mut TxBatch, policy: &mut ThreadPolicy) -> Result<usize, ()> {
        let (sh, g) = (self.sh, self.g);
        let n = self
            .host
            .recv_frames(
                &mut b.buf, g.stride, g.room, self.tail, &mut b.got, &sh.frames,
            )
            .map_err(|e| sh.fail(anyhow::anyhow!("reading the host side: {e}")))?;
        b.k = 0;
        if n == 0 {
            if self.sent_since_top_up {
                self.sent_since_top_up = false;
                top_up_tx(sh).map_err(|e| sh.fail(e))?;
            }
            return Ok(0);
        }
        self.sent_since_top_up = true;
        sh.busy_poll.saw_frames();
        policy.after_read(n);
        add(&sh.frames.tap_in, n);
        b.n = n;
        protect(sh, g, b)?;
        Ok(n)
    }
}

/// Protects the frames of `b` in place (each PN reserved on disk first) and lists them in
/// `b.out[..b.k]`, in PN order: each frame prepared in order (its PN reserved, then taken),
/// the batch sealed by the SecY's crypto workers ([`crate::workers`]) or here. `Err` once a
/// failure is recorded (the data plane then stops).
fn protect(sh: &Shared, g: TxGeometry, b: &mut TxBatch) -> Result<(), ()> {
    let mut tx = sh.tx();
    let (jobs, lens) = (&mut b.jobs, &mut b.sealed);
    // Every slot up to the last one in use (the workers go through them all).
    let top = b
        .got
        .iter()
        .take(b.n)
        .map(|&(slot, _)| slot + 1)
        .max()
        .unwrap_or(0);
    for slot in 0..top {
        (jobs[slot], lens[slot]) = (None, 0);
    }
    let (mut busy, mut slots) = (0, 0);
    for &(slot, plain) in b.got.iter().take(b.n) {
        if plain + g.overhead > g.wire_max {
            add(&sh.frames.too_long, 1);
            continue;
        }
        // The PN this frame will carry is reserved on disk before it is used.
        if let (Some(pn), Some(an)) = (tx.secy.next_pn(), tx.secy.encoding_an())
            && let Some(hw) = tx.reserve[usize::from(an)].as_ref()
            && let Err(e) = hw.use_number(pn)
        {
            drop(tx);
            sh.fail(tx_stopped(sh, pn, e));
            return Err(());
        }
        let at = slot * g.stride;
        match tx
            .secy
            .prepare_at(&mut b.buf[at..at + g.stride], g.room, plain)
        {
            Ok(s) => {
                jobs[slot] = Some(s);
                busy += 1;
                slots = slots.max(slot + 1);
            }
            Err(TxError::Exhausted) => {
                // Counted by the SecY; said once.
                if tx.secy.discards().pn_exhausted == 1 {
                    sh.emit("pn_exhausted", serde_json::json!({}));
                }
            }
            Err(_) => {} // no SA in use, or an unusable frame: counted by the SecY
        }
    }
    // Sealed lengths by slot (0: not sealed; with the SecY locked since the preparation, a
    // sealing is never void).
    let secy = &tx.secy;
    let parallel = sh.workers.each_frame(
        &mut b.buf,
        g.stride,
        &jobs[..slots],
        &mut lens[..slots],
        busy,
        |frame, job, len| {
            if let Some(s) = job {
                *len = secy.seal(frame, s).unwrap_or(0);
            }
        },
    );
    if parallel {
        add(&sh.frames.sealed_by_workers, busy);
    }
    let mut k = 0;
    for &(slot, _) in b.got.iter().take(b.n) {
        if jobs[slot].is_some() && lens[slot] > 0 {
            b.out[k] = (slot * g.stride, lens[slot]);
            k += 1;
        }
    }
    b.k = k;
    Ok(())
}

/// Sends the protected frames of `b` with one `sendmmsg`. `Err` once a failure is recorded.
fn send(sh: &Shared, sock: &RawSocket, b: &TxBatch) -> Result<(), ()> {
    send_frames(sock, &b.buf, &b.out[..b.k], &sh.frames, |sent| {
        sh.record(&b.buf, sent);
    })
    .map_err(|e| sh.fail(anyhow::anyhow!("sending on the protected interface: {e}")))
}

/// Sends the frames `units` of `buf` on `sock` (`sendmmsg`), counted in `iface_out`; `sent`
/// sees each run of frames the kernel took. A frame the kernel refuses (a frame above the
/// link's or the peer's MTU, a device queue that did not drain in time) is counted in
/// `iface_send_errors` and skipped, and the frames after it still go; after a second refusal
/// in one call the queue is taken as stuck and the rest are counted and dropped, so a thread
/// never waits on it for long. `Err` only for a refusal that no frame can pass
/// (`PermissionDenied`), after counting the rest.
pub fn send_frames(
    sock: &RawSocket,
    buf: &[u8],
    units: &[(usize, usize)],
    c: &super::FrameCounters,
    mut sent: impl FnMut(&[(usize, usize)]),
) -> std::io::Result<()> {
    let mut rest = units;
    let mut refused = 0;
    while !rest.is_empty() {
        let (n, err) = sys::send_batch_at(sock.as_fd(), buf, rest);
        add(&c.iface_out, n);
        sent(&rest[..n]);
        let Some(e) = err else { break };
        refused += 1;
        let denied = e.kind() == std::io::ErrorKind::PermissionDenied;
        if denied || refused == 2 {
            add(&c.iface_send_errors, rest.len() - n);
            return if denied { Err(e) } else { Ok(()) };
        }
        add(&c.iface_send_errors, 1);
        rest = &rest[(n + 1).min(rest.len())..];
    }
    Ok(())
}

/// Frames received on the protected interface, on their way to the host side.
struct RxBatch {
    buf: Vec<u8>,
    metas: [RecvMeta; MAX_BATCH],
    got: usize,
    /// The receive took a whole batch (more were likely queued).
    full: bool,
    /// Frames still waited in the receive ring once this batch was taken: the next batch
    /// follows without a wait, so a super-frame being merged for the TAP stays open for it.
    more: bool,
    /// The verified frames (where each lies in `buf`, its length), `deliver[..k]`, in order.
    deliver: [(usize, usize); MAX_BATCH],
    k: usize,
    /// By frame, while the batch is verified (reset for the frames of each batch only, so a
    /// lone control frame pays for one entry, not for the whole batch): its ticket and length
    /// when it is to be opened, what the check decided otherwise, what the opening found.
    jobs: Vec<Option<(Ticket, usize)>>,
    decided: Vec<Option<Result<Received, Dropped>>>,
    opened: Vec<Opened>,
}

/// With the pipeline, after a batch of at least [`SPIN_AFTER`] frames the receiving stage polls
/// its ring for up to this long before it sleeps. A stream's next frames then come without a
/// wake-up, which the sender would pay for: on a veth the sender's own thread runs the
/// receive, wake-up included. A lone control frame never starts a spin, and the pipeline is
/// on by default only with 4 CPUs or more, where the spin has a CPU to itself.
pub const RX_SPIN: std::time::Duration = std::time::Duration::from_micros(30);
/// The smallest batch after which the receiving stage spins ([`RX_SPIN`]).
const SPIN_AFTER: usize = 8;

/// MACsec frames from the protected interface, verified, to the host on the TAP (or the plain
/// port). With `pipeline` the receiving and the verifying run on this thread and the writing
/// to the host side (with the merging of super-frames) on a second one, batch by batch in
/// order; small batches with nothing in the second stage are finished here.
pub fn rx_loop(
    sh: &Shared,
    host: &dyn HostPort,
    sock: &RawSocket,
    ring: Option<RxRing>,
    stride: usize,
    scheduling: Scheduling,
    pipeline: bool,
) {
    let make = || rx_batch(stride);
    let mut policy = None;
    let second = move |b: &mut RxBatch, _: bool| {
        policy.get_or_insert_with(|| ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises));
        deliver(sh, host, b);
        true
    };
    run_stages(&sh.stop, pipeline, make, second, |mut handoff, mut b| {
        let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
        let mut full = false;
        // Frames of the last batch taken.
        let mut last = 0;
        let mut batches = 0u32;
        let count_drops = || count_iface_drops(sh, sock);
        let mut receiver = RxTaker {
            sh,
            sock,
            ring,
            stride,
        };
        while !sh.stop.load(Ordering::Relaxed) {
            batches = batches.wrapping_add(1);
            if batches % 64 == 0 {
                count_drops();
            }
            // After a stream's batch the pipeline's receiving stage spins briefly first.
            let spun = || pipeline && last >= SPIN_AFTER && receiver.spin(RX_SPIN);
            if !full && !sh.busy_poll.keep_polling() && !spun() {
                let wait = Some(policy.before_sleep(TICK));
                match sys::wait_readable(sock.as_fd(), wait) {
                    Ok(true) => {}
                    Ok(false) => {
                        count_drops();
                        continue;
                    }
                    Err(e) => {
                        return sh.fail(anyhow::anyhow!("waiting on the protected interface: {e}"));
                    }
                }
            }
            let Ok(got) = receiver.take(&mut b, &mut policy) else {
                return;
            };
            // More frames wait: take them before waiting (and before a super-frame left open
            // for them is written).
            full = b.full || b.more;
            last = got;
            if got == 0 {
                continue;
            }
            if handoff.inline(got) {
                if verify_and_deliver(sh, host, stride, &mut b).is_err() {
                    return;
                }
            } else {
                // Verified here, written to the host side by the second stage (after a failure,
                // what is covered still goes, and the data plane stops).
                let verified = verify(sh, stride, &mut b);
                match handoff.pass(b, &sh.stop) {
                    Some(next) if verified.is_ok() => b = next,
                    _ => return,
                }
            }
        }
    });
}

/// Adds the frames the kernel dropped for a full receive queue or ring on the protected
/// interface since the last call.
fn count_iface_drops(sh: &Shared, sock: &RawSocket) {
    if let Ok(st) = sock.take_statistics() {
        sh.frames
            .iface_queue_drops
            .fetch_add(st.drops, Ordering::Relaxed);
    }
}

/// The receiving half of the receive direction: the protected interface's frames into a batch.
struct RxTaker<'a> {
    sh: &'a Shared,
    sock: &'a RawSocket,
    ring: Option<RxRing>,
    stride: usize,
}

impl RxTaker<'_> {
    /// Polls the receive ring for up to `d` without sleeping (no system call); whether a frame
    /// came. Without a ring: `false` at once. Counted in `frames.rx_spins` and
    /// `frames.rx_spins_caught`.
    fn spin(&self, d: std::time::Duration) -> bool {
        let Some(ring) = self.ring.as_ref() else {
            return false;
        };
        add(&self.sh.frames.rx_spins, 1);
        let end = sys::monotonic_ns().saturating_add(d.as_nanos() as u64);
        loop {
            if ring.ready() {
                add(&self.sh.frames.rx_spins_caught, 1);
                return true;
            }
            if sys::monotonic_ns() >= end || self.sh.stop.load(Ordering::Relaxed) {
                return false;
            }
            std::hint::spin_loop();
        }
    }

    /// Takes the frames waiting (at most a batch, without waiting) into `b` (`b.got`, and
    /// `b.full` when the batch filled) and records them with `--pcap`. Returns how many. `Err`
    /// once a failure is recorded (the data plane then stops).
    fn take(&mut self, b: &mut RxBatch, policy: &mut ThreadPolicy) -> Result<usize, ()> {
        let (sh, stride) = (self.sh, self.stride);
        let got = take_frames(
            self.sock,
            self.ring.as_mut(),
            &mut b.buf,
            stride,
            &mut b.metas,
        )
        .map_err(|e| sh.fail(anyhow::anyhow!("receiving on the protected interface: {e}")))?;
        b.got = got;
        b.full = got == MAX_BATCH;
        b.more = got > 0 && self.ring.as_ref().is_some_and(RxRing::ready);
        if got == 0 {
            return Ok(0);
        }
        sh.busy_poll.saw_frames();
        policy.after_read(got);
        if sh.pcap.is_some() {
            let mut seen: [(usize, usize); MAX_BATCH] = [(0, 0); MAX_BATCH];
            let mut n = 0;
            for (i, m) in b.metas.iter().enumerate().take(got) {
                if m.packet_type != PacketType::Outgoing {
                    seen[n] = (i * stride, m.len);
                    n += 1;
                }
            }
            sh.record(&b.buf, &seen[..n]);
        }
        Ok(got)
    }
}

/// Verifies the frames of `b` in place (the replay check before the ICV, the acceptance mark
/// moved before delivery where the SA has one) and lists the verified ones in
/// `b.deliver[..b.k]`; after a batch that emptied the queue, the marks move ahead. `Err` once a
/// failure is recorded (the data plane then stops; nothing of the batch is listed).
fn verify(sh: &Shared, stride: usize, b: &mut RxBatch) -> Result<(), ()> {
    let mut k = 0;
    let mut failed = None;
    {
        let mut rx = sh.rx();
        let mut marks = sh.rx_marks();
        let (jobs, decided, opened) = (&mut b.jobs, &mut b.decided, &mut b.opened);
        for i in 0..b.got {
            (jobs[i], decided[i], opened[i]) = (None, None, Opened::Skipped);
        }
        let mut busy = 0;
        for (i, m) in b.metas.iter().enumerate().take(b.got) {
            if m.packet_type == PacketType::Outgoing {
                continue;
            }
            add(&sh.frames.iface_in, 1);
            if m.truncated() {
                add(&sh.frames.truncated, 1);
                continue;
            }
            let at = i * stride;
            match rx.check(&mut b.buf[at..at + m.len]) {
                SecyCheck::Validate(t) => {
                    jobs[i] = Some((t, m.len));
                    busy += 1;
                }
                SecyCheck::Done(r) => decided[i] = Some(r),
            }
        }
        let secy: &SecyRx = &rx;
        let parallel = sh.workers.each_frame(
            &mut b.buf,
            stride,
            &jobs[..b.got],
            &mut opened[..b.got],
            busy,
            |frame, job, o| {
                if let Some((t, len)) = job {
                    *o = secy.open(&mut frame[..*len], t);
                }
            },
        );
        if parallel {
            add(&sh.frames.opened_by_workers, busy);
        }
        for i in 0..b.got {
            let at = i * stride;
            let r = match (jobs[i], decided[i].take()) {
                (Some((t, len)), _) => rx.commit(&mut b.buf[at..at + len], &t, opened[i]),
                (None, Some(r)) => r,
                (None, None) => continue, // not ours, or cut short
            };
            if let Ok(r) = r {
                // Validated under an SA with an acceptance mark (static keys): delivered only
                // once the mark on disk covers its PN, which the batch settles below.
                if matches!(r.status, RxStatus::Ok | RxStatus::Delayed)
                    && let Some(slot) = marks.iter_mut().find(|s| s.sci == r.sci && s.an == r.an)
                {
                    slot.mark.note(r.pn);
                }
                b.deliver[k] = (at + r.range.start, r.range.len());
                k += 1;
            }
            // A discard is counted by the SecY with its reason.
        }
        // One durable move per mark for the whole batch, before any of its frames goes out.
        for slot in marks.iter_mut() {
            if let Err(e) = slot.mark.settle() {
                failed = Some(e);
                k = 0;
                break;
            }
        }
    }
    b.k = k;
    if let Some(e) = failed {
        sh.fail(rx_error(e));
        return Err(());
    }
    if !b.full
        && !b.more
        && k > 0
        && let Err(e) = top_up_rx(sh)
    {
        sh.fail(rx_error(e));
        return Err(());
    }
    Ok(())
}

/// Writes the frames [`verify`] listed in `b` to the host side (a super-frame being merged
/// stays open while `b.more`).
fn deliver(sh: &Shared, host: &dyn HostPort, b: &RxBatch) {
    host.send_frames(&b.buf, &b.deliver[..b.k], b.more, &sh.frames);
}

/// [`verify`], then [`deliver`] what it listed, on one thread. `Err` once a failure is
/// recorded.
fn verify_and_deliver(
    sh: &Shared,
    host: &dyn HostPort,
    stride: usize,
    b: &mut RxBatch,
) -> Result<(), ()> {
    let verified = verify(sh, stride, b);
    if verified.is_err() {
        // What is covered goes out before the data plane stops (nothing of a batch whose mark
        // could not move), with a super-frame held open from earlier batches.
        b.more = false;
    }
    deliver(sh, host, b);
    verified
}

/// The queue ran empty after frames went out: a failed early reservation of the encoding SA's
/// next block (made by its worker, [`crate::keys::ahead`], once half of the block is used)
/// stops the SecY, as a failed claim does.
fn top_up_tx(sh: &Shared) -> anyhow::Result<()> {
    let tx = sh.tx();
    if let (Some(pn), Some(an)) = (tx.secy.next_pn(), tx.secy.encoding_an())
        && let Some(hw) = tx.reserve[usize::from(an)].as_ref()
        && let Err(e) = hw.top_up()
    {
        drop(tx);
        return Err(tx_stopped(sh, pn, e));
    }
    Ok(())
}

/// A failed reservation (by a claim or a top-up) at PN `pn` stops the SecY: said in the
/// events, and the error the data plane fails with.
fn tx_stopped(sh: &Shared, pn: u64, e: crate::keys::highwater::HwError) -> anyhow::Error {
    sh.emit(
        "tx_stopped",
        serde_json::json!({"reason": e.stop_reason(), "pn": pn}),
    );
    super::claim_error(e)
}

/// The queue ran empty after frames were delivered: a failed early move of an acceptance mark
/// (made by its worker once half of its last step is used) stops the SecY.
fn top_up_rx(sh: &Shared) -> Result<(), crate::keys::highwater::HwError> {
    for slot in sh.rx_marks().iter_mut() {
        slot.mark.top_up()?;
    }
    Ok(())
}
