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
//!   it) taken with one `recvmmsg`, verified in place, the plain frames written to the TAP (a
//!   TAP takes one frame per `write`).
//!
//! Each batch takes its half's lock once. Buffers are allocated once per thread; nothing is
//! allocated per frame. A loop wakes at least every [`TICK`] to see the stop flag.

use std::sync::atomic::Ordering;

use ivnsec_core::sa::macsec::RxStatus;
use ivnsec_core::sa::secy::TxError;
use ivnsec_core::wire::macsec::ICV_LEN;
use ivnsec_net::sys::{self, MAX_BATCH, PacketType, RawSocket, RecvMeta};
use std::os::fd::AsFd;

use super::host::{HostPort, VLAN_TAG_LEN};
use super::sched::{Scheduling, ThreadPolicy};
use super::{MtuPlan, Shared, TICK};
use crate::keys::rxmark::rx_error;

/// Room for one frame in a batch buffer: the largest frame the protected interface carries
/// (header + MTU) plus 4 octets for a VLAN tag, rounded up to a cache line.
pub fn stride(plan: MtuPlan) -> usize {
    (14 + 4 + (plan.vlan_slack as usize) + plan.iface as usize).div_ceil(64) * 64
}

fn add(c: &std::sync::atomic::AtomicU64, n: usize) {
    c.fetch_add(n as u64, Ordering::Relaxed);
}

/// Frames of the host from the TAP (or the plain port), protected, out on the protected
/// interface.
pub fn tx_loop(
    sh: &Shared,
    host: &dyn HostPort,
    sock: &RawSocket,
    plan: MtuPlan,
    stride: usize,
    scheduling: Scheduling,
) {
    let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
    let mut buf = vec![0u8; MAX_BATCH * stride];
    let mut got = [(0usize, 0usize); MAX_BATCH];
    let mut out = [(0usize, 0usize); MAX_BATCH];
    let overhead = plan.overhead as usize;
    // Each frame is read behind room for the SecTAG (the overhead less the ICV), so protect
    // encrypts it where it lies: only the 12 address octets move.
    let room = overhead.saturating_sub(ICV_LEN);
    // The largest frame the protected interface sends: header + its MTU (+ a VLAN tag's
    // length where the plan allows it: a gateway's tagged frames).
    let wire_max = 14 + plan.iface as usize + plan.vlan_slack as usize;
    // Behind each frame: the ICV, and room to put a VLAN tag back.
    let tail = (overhead - room) + VLAN_TAG_LEN;
    let wait = TICK;
    // After a full batch more frames are likely queued: read again without waiting.
    let mut full = false;
    let mut batches = 0u32;
    let mut sent_since_top_up = false;
    while !sh.stop.load(Ordering::Relaxed) {
        batches = batches.wrapping_add(1);
        if batches % 64 == 0 {
            host.count_queue_drops(&sh.frames);
        }
        if !full && !sh.busy_poll.keep_polling() {
            let wait = policy.before_sleep(wait);
            match host.wait_readable(wait) {
                Ok(true) => {}
                Ok(false) => {
                    host.count_queue_drops(&sh.frames);
                    continue;
                }
                Err(e) => return sh.fail(anyhow::anyhow!("waiting on the host side: {e}")),
            }
        }
        let n = match host.recv_frames(&mut buf, stride, room, tail, &mut got, &sh.frames) {
            Ok(n) => n,
            Err(e) => return sh.fail(anyhow::anyhow!("reading the host side: {e}")),
        };
        full = n > 0;
        if n == 0 {
            if sent_since_top_up {
                sent_since_top_up = false;
                if let Err(e) = top_up_tx(sh) {
                    return sh.fail(e);
                }
            }
            continue;
        }
        sent_since_top_up = true;
        sh.busy_poll.saw_frames();
        policy.after_read(n);
        add(&sh.frames.tap_in, n);
        let mut k = 0;
        {
            let mut tx = sh.tx();
            for &(slot, plain) in got.iter().take(n) {
                if plain + overhead > wire_max {
                    add(&sh.frames.too_long, 1);
                    continue;
                }
                // The PN this frame will carry is reserved on disk before it is used.
                if let (Some(pn), Some(an)) = (tx.secy.next_pn(), tx.secy.encoding_an())
                    && let Some(hw) = tx.reserve[usize::from(an)].as_mut()
                    && let Err(e) = hw.claim(pn)
                {
                    let stop = e.stop_reason();
                    drop(tx);
                    sh.emit("tx_stopped", serde_json::json!({"reason": stop, "pn": pn}));
                    return sh.fail(super::claim_error(e));
                }
                let at = slot * stride;
                match tx
                    .secy
                    .protect_in_place_at(&mut buf[at..at + stride], room, plain)
                {
                    Ok((len, _pn)) => {
                        out[k] = (at, len);
                        k += 1;
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
        }
        if k == 0 {
            continue;
        }
        let (sent, err) = sys::send_batch_at(sock.as_fd(), &buf, &out[..k]);
        add(&sh.frames.iface_out, sent);
        if sent < k {
            add(&sh.frames.iface_send_errors, k - sent);
        }
        sh.record(&buf, &out[..sent]);
        if let Some(e) = err
            && e.kind() == std::io::ErrorKind::PermissionDenied
        {
            return sh.fail(anyhow::anyhow!("sending on the protected interface: {e}"));
        }
    }
}

/// MACsec frames from the protected interface, verified, to the host on the TAP (or the plain
/// port).
pub fn rx_loop(
    sh: &Shared,
    host: &dyn HostPort,
    sock: &RawSocket,
    stride: usize,
    scheduling: Scheduling,
) {
    let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
    let mut buf = vec![0u8; MAX_BATCH * stride];
    let empty = RecvMeta {
        len: 0,
        wire_len: 0,
        packet_type: PacketType::Host,
        timestamp: None,
    };
    let mut metas = [empty; MAX_BATCH];
    let mut deliver: [(usize, usize); MAX_BATCH] = [(0, 0); MAX_BATCH];
    let mut seen: [(usize, usize); MAX_BATCH] = [(0, 0); MAX_BATCH];
    let mut full = false;
    let mut batches = 0u32;
    let count_drops = || {
        if let Ok(st) = sock.take_statistics() {
            sh.frames
                .iface_queue_drops
                .fetch_add(st.drops, Ordering::Relaxed);
        }
    };
    while !sh.stop.load(Ordering::Relaxed) {
        batches = batches.wrapping_add(1);
        if batches % 64 == 0 {
            count_drops();
        }
        if !full && !sh.busy_poll.keep_polling() {
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
        let got = match sock.recv_batch(&mut buf, stride, 0, &mut metas) {
            Ok(0) => {
                full = false;
                continue;
            }
            Ok(n) => {
                full = n == MAX_BATCH;
                sh.busy_poll.saw_frames();
                policy.after_read(n);
                n
            }
            Err(e) => return sh.fail(anyhow::anyhow!("receiving on the protected interface: {e}")),
        };
        if sh.pcap.is_some() {
            let mut s = 0;
            for (i, m) in metas.iter().enumerate().take(got) {
                if m.packet_type != PacketType::Outgoing {
                    seen[s] = (i * stride, m.len);
                    s += 1;
                }
            }
            sh.record(&buf, &seen[..s]);
        }
        let mut k = 0;
        let mut failed = None;
        {
            let mut rx = sh.rx();
            let mut marks = sh.rx_marks();
            for (i, m) in metas.iter().enumerate().take(got) {
                if m.packet_type == PacketType::Outgoing {
                    continue;
                }
                add(&sh.frames.iface_in, 1);
                if m.truncated() {
                    add(&sh.frames.truncated, 1);
                    continue;
                }
                let at = i * stride;
                if let Ok(r) = rx.verify_in_place(&mut buf[at..at + m.len]) {
                    // Validated under an SA with an acceptance mark (static keys): delivered
                    // only once the mark on disk covers its PN.
                    if matches!(r.status, RxStatus::Ok | RxStatus::Delayed)
                        && let Some(slot) =
                            marks.iter_mut().find(|s| s.sci == r.sci && s.an == r.an)
                        && let Err(e) = slot.mark.accept(r.pn, sys::monotonic_ns)
                    {
                        failed = Some(e);
                        break;
                    }
                    deliver[k] = (at + r.range.start, r.range.len());
                    k += 1;
                }
                // A discard is counted by the SecY with its reason.
            }
        }
        host.send_frames(&buf, &deliver[..k], &sh.frames);
        if let Some(e) = failed {
            return sh.fail(rx_error(e));
        }
        if !full
            && k > 0
            && let Err(e) = top_up_rx(sh)
        {
            return sh.fail(rx_error(e));
        }
    }
}

/// The queue ran empty after frames went out: the encoding SA's next block of PNs is reserved
/// now if half of the current one is used ([`crate::keys::HighWater::top_up`]), so no frame
/// waits for that durable write later. A failure stops the SecY, as a failed claim does.
fn top_up_tx(sh: &Shared) -> anyhow::Result<()> {
    let mut tx = sh.tx();
    if let (Some(pn), Some(an)) = (tx.secy.next_pn(), tx.secy.encoding_an())
        && let Some(hw) = tx.reserve[usize::from(an)].as_mut()
        && let Err(e) = hw.top_up(pn)
    {
        let stop = e.stop_reason();
        drop(tx);
        sh.emit("tx_stopped", serde_json::json!({"reason": stop, "pn": pn}));
        return Err(super::claim_error(e));
    }
    Ok(())
}

/// The queue ran empty after frames were delivered: each acceptance mark that half of its last
/// step has used moves ahead now ([`crate::keys::rxmark::RxMark::top_up`]).
fn top_up_rx(sh: &Shared) -> Result<(), crate::keys::highwater::HwError> {
    for slot in sh.rx_marks().iter_mut() {
        slot.mark.top_up(sys::monotonic_ns)?;
    }
    Ok(())
}
