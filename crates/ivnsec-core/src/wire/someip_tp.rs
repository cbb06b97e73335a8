//! SOME/IP-TP: segmentation of messages larger than one UDP datagram (AUTOSAR FO
//! PRS_SOMEIPProtocol §5.2.4 / §6.3) and their bounded reassembly.
//!
//! A segment is a SOME/IP message whose message type has the TP flag (0x20) and whose payload
//! starts with a 4-byte TP header:
//!
//! ```text
//! 0                                           28    31 32
//! | offset (upper 28 bits of a BE u32, ×16 bytes) | res | M | segment data
//! ```
//! The offset is in units of 16 bytes, so the 32-bit word with the low 4 bits cleared is the byte
//! offset of the segment in the original payload; `M` (bit 0) is "more segments". Every segment
//! but the last carries a multiple of 16 bytes. The header of each segment repeats the original
//! message ID, request ID, versions and return code; `length` is that of the segment.
//!
//! The [`Reassembler`] bounds memory three ways: each message at most `max_message` bytes, at
//! most `max_pending` messages in progress, and at most `max_total` bytes buffered over all of
//! them; the oldest incomplete message is evicted to make room. Out-of-order and overlapping
//! segments are accepted (later bytes overwrite earlier ones: the secured formats authenticate the
//! reassembled message, so a forged overlap only fails verification).

use super::bytes::{array, be16, put, tail, tail_mut};
use alloc::vec::Vec;
use core::fmt;

use super::someip::{HEADER_LEN, LENGTH_COVERED_HEADER, Packet, Repr, SomeIpError, TP_FLAG};

/// Length of the TP header.
pub const TP_HEADER_LEN: usize = 4;
/// Default segment data length: 87 × 16 = 1392 bytes, the value AUTOSAR's examples use; with the
/// SOME/IP, TP, UDP and IPv4 headers a segment is 1440 bytes, inside a 1500-byte MTU.
pub const MAX_SEGMENT_DATA: usize = 1392;

/// The TP header of one segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpHeader {
    /// Byte offset of the segment in the original payload (a multiple of 16).
    pub offset: u32,
    /// More segments follow.
    pub more: bool,
}

impl TpHeader {
    /// Parses the first four bytes of a segment's payload. Reserved bits are ignored.
    pub fn parse(b: &[u8]) -> Result<TpHeader, TpError> {
        let w = u32::from_be_bytes(*b.first_chunk::<TP_HEADER_LEN>().ok_or(TpError::Truncated)?);
        Ok(TpHeader {
            offset: w & !0xF,
            more: w & 1 != 0,
        })
    }

    /// Writes the header into the first four bytes of `b` (nothing when shorter).
    pub fn emit(&self, b: &mut [u8]) {
        if let Some(w) = b.get_mut(..TP_HEADER_LEN) {
            let v = (self.offset & !0xF) | u32::from(self.more);
            w.copy_from_slice(&v.to_be_bytes());
        }
    }
}

/// Why a segment was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TpError {
    /// The segment is shorter than the SOME/IP and TP headers.
    Truncated,
    /// Not a SOME/IP message.
    Header(SomeIpError),
    /// The message type lacks the TP flag.
    NotSegment,
    /// Empty segment, a non-last segment not a multiple of 16 bytes, data past the end announced
    /// by the last segment, or two different ends.
    BadSegment,
    /// The message would exceed `max_message` (or the memory bound).
    TooLarge,
}

impl fmt::Display for TpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TpError::Truncated => f.write_str("SOME/IP-TP segment truncated"),
            TpError::Header(e) => write!(f, "{e}"),
            TpError::NotSegment => f.write_str("not a SOME/IP-TP segment"),
            TpError::BadSegment => f.write_str("inconsistent SOME/IP-TP segment"),
            TpError::TooLarge => f.write_str("SOME/IP-TP message larger than allowed"),
        }
    }
}

impl core::error::Error for TpError {}

impl From<SomeIpError> for TpError {
    fn from(e: SomeIpError) -> TpError {
        TpError::Header(e)
    }
}

/// Cuts one message (its header fields and its whole payload) into TP segments.
#[derive(Debug, Clone)]
pub struct Segmenter<'a> {
    repr: Repr,
    payload: &'a [u8],
    seg_data: usize,
    offset: usize,
    done: bool,
}

impl<'a> Segmenter<'a> {
    /// `max_data` is rounded down to a multiple of 16 (at least 16).
    pub fn new(repr: Repr, payload: &'a [u8], max_data: usize) -> Segmenter<'a> {
        Segmenter {
            repr,
            payload,
            seg_data: (max_data & !0xF).max(16),
            offset: 0,
            done: false,
        }
    }

    /// Length of the largest segment this segmenter writes.
    pub fn max_segment_len(&self) -> usize {
        HEADER_LEN + TP_HEADER_LEN + self.seg_data
    }

    /// Number of segments.
    pub fn count(&self) -> usize {
        self.payload.len().div_ceil(self.seg_data).max(1)
    }

    /// Writes the next segment into `out` and returns its length; `None` when every segment has
    /// been written or `out` is shorter than the segment (offsets above 2^32 also end it).
    pub fn next_into(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.done {
            return None;
        }
        let n = (self.payload.len() - self.offset).min(self.seg_data);
        let total = HEADER_LEN + TP_HEADER_LEN + n;
        let out = out.get_mut(..total)?;
        let data = self.payload.get(self.offset..self.offset + n)?;
        let offset = u32::try_from(self.offset).ok()?;
        let more = self.offset + n < self.payload.len();
        let mut r = self.repr;
        r.tp = true;
        r.payload_len = TP_HEADER_LEN + n;
        r.emit_header(out);
        TpHeader { offset, more }.emit(tail_mut(out, HEADER_LEN));
        put(out, HEADER_LEN + TP_HEADER_LEN, data);
        self.offset += n;
        self.done = !more;
        Some(total)
    }
}

/// Limits of a [`Reassembler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReassemblyLimits {
    /// Largest reassembled message (header included).
    pub max_message: usize,
    /// Messages in progress at once.
    pub max_pending: usize,
    /// Bytes buffered over all messages in progress.
    pub max_total: usize,
}

impl Default for ReassemblyLimits {
    /// 1 MiB messages (a 425 kB camera frame fits), 4 in progress, 4 MiB in all.
    fn default() -> Self {
        ReassemblyLimits {
            max_message: 1 << 20,
            max_pending: 4,
            max_total: 4 << 20,
        }
    }
}

/// Identifies one message being reassembled: the peer (chosen by the caller, e.g. from the
/// source address) and the header fields every segment repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    peer: u64,
    service: u16,
    method: u16,
    client: u16,
    message_type: u8,
}

#[derive(Debug)]
struct Slot {
    key: Key,
    session: u16,
    header: [u8; HEADER_LEN],
    data: Vec<u8>,
    /// Sorted, disjoint, non-adjacent byte ranges received.
    have: Vec<(usize, usize)>,
    /// Payload length, known once the last segment arrived.
    total: Option<usize>,
    /// Order of last use, for eviction.
    touched: u64,
}

impl Slot {
    fn complete(&self) -> bool {
        matches!(self.total, Some(t) if self.have == [(0, t)])
    }

    fn add_range(&mut self, s: usize, e: usize) {
        let mut merged = (s, e);
        self.have.retain(|&(a, b)| {
            if b < merged.0 || a > merged.1 {
                true
            } else {
                merged = (merged.0.min(a), merged.1.max(b));
                false
            }
        });
        let pos = self.have.partition_point(|&(a, _)| a < merged.0);
        self.have.insert(pos, merged);
    }
}

/// Counters of a [`Reassembler`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    pub segments: u64,
    pub completed: u64,
    /// Incomplete messages dropped to make room or replaced by a newer session.
    pub evicted: u64,
    pub rejected: u64,
}

/// Reassembles SOME/IP-TP segments into whole messages within fixed memory bounds.
#[derive(Debug)]
pub struct Reassembler {
    limits: ReassemblyLimits,
    slots: Vec<Slot>,
    clock: u64,
    stats: ReassemblyStats,
}

impl Reassembler {
    pub fn new(limits: ReassemblyLimits) -> Reassembler {
        Reassembler {
            limits,
            slots: Vec::new(),
            clock: 0,
            stats: ReassemblyStats::default(),
        }
    }

    pub fn limits(&self) -> ReassemblyLimits {
        self.limits
    }

    pub fn stats(&self) -> ReassemblyStats {
        self.stats
    }

    /// Messages in progress.
    pub fn pending(&self) -> usize {
        self.slots.len()
    }

    /// Bytes buffered over all messages in progress.
    pub fn buffered(&self) -> usize {
        self.slots.iter().map(|s| s.data.len()).sum()
    }

    /// Adds one segment (a whole SOME/IP message with the TP flag) from `peer`. Returns the
    /// reassembled message — header with the TP flag cleared and `length` of the whole message,
    /// then the payload — once every byte arrived.
    pub fn push(&mut self, peer: u64, segment: &[u8]) -> Result<Option<Vec<u8>>, TpError> {
        let r = self.push_inner(peer, segment);
        match &r {
            Ok(_) => self.stats.segments += 1,
            Err(_) => self.stats.rejected += 1,
        }
        r
    }

    fn push_inner(&mut self, peer: u64, segment: &[u8]) -> Result<Option<Vec<u8>>, TpError> {
        let p = Packet::new_checked(segment)?;
        let repr = Repr::parse(&p)?;
        if !repr.tp {
            return Err(TpError::NotSegment);
        }
        let payload = p.payload();
        let tp = TpHeader::parse(payload)?;
        let data = tail(payload, TP_HEADER_LEN);
        if data.is_empty() || (tp.more && data.len() % 16 != 0) {
            return Err(TpError::BadSegment);
        }
        let start = tp.offset as usize;
        let end = start.checked_add(data.len()).ok_or(TpError::TooLarge)?;
        let max_payload = self
            .limits
            .max_message
            .min(self.limits.max_total)
            .saturating_sub(HEADER_LEN);
        if end > max_payload {
            return Err(TpError::TooLarge);
        }
        let key = Key {
            peer,
            service: repr.service_id,
            method: repr.method_id,
            client: repr.client_id,
            message_type: repr.message_type.value(),
        };
        self.clock += 1;
        let idx = match self.slots.iter().position(|s| s.key == key) {
            Some(i)
                if self
                    .slots
                    .get(i)
                    .is_some_and(|s| s.session == repr.session_id) =>
            {
                i
            }
            Some(i) => {
                // A new session of the same method: the old message will never complete.
                self.slots.swap_remove(i);
                self.stats.evicted += 1;
                self.new_slot(key, repr, segment)
            }
            None => self.new_slot(key, repr, segment),
        };
        // `position` or `new_slot` gave an index into `slots`.
        let slot = self.slots.get_mut(idx).ok_or(TpError::TooLarge)?;
        if let Some(t) = slot.total {
            if end > t || (!tp.more && end != t) {
                self.slots.swap_remove(idx);
                return Err(TpError::BadSegment);
            }
        } else if !tp.more {
            if slot.have.last().is_some_and(|&(_, e)| e > end) {
                self.slots.swap_remove(idx);
                return Err(TpError::BadSegment);
            }
            slot.total = Some(end);
        }
        slot.touched = self.clock;
        // Grow this message's buffer, evicting the least recently used others to stay in bounds.
        let grow = end.saturating_sub(slot.data.len());
        if grow > 0 {
            self.make_room(idx, grow)?;
        }
        let idx = self
            .slots
            .iter()
            .position(|s| s.key == key)
            .ok_or(TpError::TooLarge)?;
        let slot = self.slots.get_mut(idx).ok_or(TpError::TooLarge)?;
        if slot.data.len() < end {
            slot.data
                .try_reserve_exact(end - slot.data.len())
                .map_err(|_| TpError::TooLarge)?;
            slot.data.resize(end, 0);
        }
        // Resized to at least `end` above; `data` is `end - start` bytes.
        slot.data
            .get_mut(start..end)
            .ok_or(TpError::TooLarge)?
            .copy_from_slice(data);
        slot.add_range(start, end);
        if !slot.complete() {
            return Ok(None);
        }
        let slot = self.slots.swap_remove(idx);
        self.stats.completed += 1;
        let total = slot.data.len();
        let mut out = Vec::new();
        out.try_reserve_exact(HEADER_LEN + total)
            .map_err(|_| TpError::TooLarge)?;
        out.extend_from_slice(&slot.header);
        out.extend_from_slice(&slot.data);
        let mut p = Packet::new_unchecked(&mut out[..]);
        p.set_message_type_raw(slot.header[14] & !TP_FLAG);
        p.set_length(u32::try_from(total + LENGTH_COVERED_HEADER).map_err(|_| TpError::TooLarge)?);
        Ok(Some(out))
    }

    fn new_slot(&mut self, key: Key, _repr: Repr, segment: &[u8]) -> usize {
        if self.slots.len() >= self.limits.max_pending.max(1) {
            self.evict_oldest(None);
        }
        // `segment` is a checked SOME/IP message: its header is whole.
        let header: [u8; HEADER_LEN] = array(segment, 0);
        self.slots.push(Slot {
            key,
            session: be16(segment, 10),
            header,
            data: Vec::new(),
            have: Vec::new(),
            total: None,
            touched: self.clock,
        });
        self.slots.len() - 1
    }

    /// Evicts the least recently used slot other than `keep`; false when there is none.
    fn evict_oldest(&mut self, keep: Option<Key>) -> bool {
        let victim = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| Some(s.key) != keep)
            .min_by_key(|(_, s)| s.touched)
            .map(|(i, _)| i);
        match victim {
            Some(i) => {
                self.slots.swap_remove(i);
                self.stats.evicted += 1;
                true
            }
            None => false,
        }
    }

    fn make_room(&mut self, idx: usize, grow: usize) -> Result<(), TpError> {
        let key = self.slots.get(idx).ok_or(TpError::TooLarge)?.key;
        loop {
            let used: usize = self.slots.iter().map(|s| s.data.len()).sum();
            if used + grow <= self.limits.max_total {
                return Ok(());
            }
            if !self.evict_oldest(Some(key)) {
                if let Some(i) = self.slots.iter().position(|s| s.key == key) {
                    self.slots.swap_remove(i);
                }
                return Err(TpError::TooLarge);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::someip::{MessageType, ReturnCode};
    use alloc::vec;

    fn repr(len: usize, session: u16) -> Repr {
        Repr {
            service_id: 0x1234,
            method_id: 0x8001,
            client_id: 0,
            session_id: session,
            interface_version: 1,
            message_type: MessageType::Notification,
            tp: false,
            return_code: ReturnCode::E_OK,
            payload_len: len,
        }
    }

    fn segments(len: usize, session: u16, max: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let r = repr(len, session);
        let mut whole = vec![0u8; r.buffer_len()];
        r.emit_header(&mut whole);
        whole[HEADER_LEN..].copy_from_slice(&payload);
        let mut s = Segmenter::new(r, &payload, max);
        let mut out = Vec::new();
        let mut buf = vec![0u8; s.max_segment_len()];
        while let Some(n) = s.next_into(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        (whole, out)
    }

    /// Known answer from scapy 2.8.0 (`SOMEIP(srv_id=0x1234, sub_id=0x8001, client_id=0,
    /// session_id=7, iface_ver=1, msg_type=0x22, offset=0x5c0, more_seg=1) / Raw(b"\x11"*16)`):
    /// scapy's `offset` is in bytes, the wire holds offset/16 in the upper 28 bits.
    #[test]
    fn tp_header_known_answer() {
        let ka = "123480010000001c0000000701012200000005c1";
        let b: Vec<u8> = (0..ka.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&ka[i..i + 2], 16).unwrap())
            .collect();
        let p = Packet::new_unchecked(&b[..]);
        let r = Repr::parse(&Packet::new_unchecked(
            &{
                let mut v = b.clone();
                v.extend_from_slice(&[0x11; 16]);
                v
            }[..],
        ))
        .unwrap();
        assert!(r.tp);
        assert_eq!(p.length(), 0x1c);
        let h = TpHeader::parse(&b[16..]).unwrap();
        assert_eq!(
            h,
            TpHeader {
                offset: 0x5c0,
                more: true
            }
        );
        let mut w = [0u8; 4];
        h.emit(&mut w);
        assert_eq!(&w, &b[16..20]);
    }

    #[test]
    fn camera_frame_round_trip() {
        let (whole, segs) = segments(425_000, 9, MAX_SEGMENT_DATA);
        assert_eq!(segs.len(), 425_000usize.div_ceil(MAX_SEGMENT_DATA));
        assert!(segs.iter().all(|s| s.len() <= 16 + 4 + MAX_SEGMENT_DATA));
        let mut r = Reassembler::new(ReassemblyLimits::default());
        let mut done = None;
        for s in &segs {
            assert!(done.is_none());
            done = r.push(1, s).unwrap();
        }
        assert_eq!(done.unwrap(), whole);
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn out_of_order_and_overlap() {
        let (whole, segs) = segments(200, 1, 64);
        assert_eq!(segs.len(), 4);
        let mut r = Reassembler::new(ReassemblyLimits::default());
        assert_eq!(r.push(1, &segs[3]).unwrap(), None);
        assert_eq!(r.push(1, &segs[1]).unwrap(), None);
        assert_eq!(r.push(1, &segs[1]).unwrap(), None); // duplicate = full overlap
        // A segment overlapping segments 1 and 2: offset 48, 32 bytes.
        let (_, small) = segments(200, 1, 32);
        assert_eq!(r.push(1, &small[3]).unwrap(), None);
        assert_eq!(r.push(1, &segs[2]).unwrap(), None);
        assert_eq!(r.push(1, &segs[0]).unwrap(), Some(whole));
    }

    #[test]
    fn peers_and_sessions_are_separate() {
        let (w1, s1) = segments(100, 1, 32);
        let (w2, s2) = segments(100, 2, 32);
        let mut r = Reassembler::new(ReassemblyLimits::default());
        for s in &s1[..3] {
            assert_eq!(r.push(1, s).unwrap(), None);
            assert_eq!(r.push(2, s).unwrap(), None);
        }
        assert_eq!(r.push(2, &s1[3]).unwrap(), Some(w1.clone()));
        // A new session from peer 1 replaces its incomplete old one.
        for s in &s2[..3] {
            assert_eq!(r.push(1, s).unwrap(), None);
        }
        assert_eq!(r.stats().evicted, 1);
        assert_eq!(r.push(1, &s1[3]).unwrap(), None);
        let mut r2 = Reassembler::new(ReassemblyLimits::default());
        let mut last = None;
        for s in &s2 {
            last = r2.push(1, s).unwrap();
        }
        assert_eq!(last, Some(w2));
    }

    #[test]
    fn bad_segments_and_limits() {
        let (_, segs) = segments(100, 1, 32);
        let mut r = Reassembler::new(ReassemblyLimits::default());
        // Non-last segment whose length is not a multiple of 16.
        let mut odd = segs[0].clone();
        odd.pop();
        let l = (odd.len() - 8) as u32;
        odd[4..8].copy_from_slice(&l.to_be_bytes());
        assert_eq!(r.push(1, &odd), Err(TpError::BadSegment));
        // Not a segment.
        let mut plain = segs[0].clone();
        plain[14] &= !TP_FLAG;
        assert_eq!(r.push(1, &plain), Err(TpError::NotSegment));
        // Two different ends.
        r.push(1, &segs[3]).unwrap();
        let (_, other) = segments(120, 1, 32);
        assert_eq!(r.push(1, &other[3]), Err(TpError::BadSegment));
        // Too large for the limit.
        let mut small = Reassembler::new(ReassemblyLimits {
            max_message: 64,
            max_pending: 2,
            max_total: 1000,
        });
        assert_eq!(small.push(1, &segs[3]), Err(TpError::TooLarge));
        // Memory bound: the oldest message is evicted.
        let mut m = Reassembler::new(ReassemblyLimits {
            max_message: 1000,
            max_pending: 8,
            max_total: 150,
        });
        m.push(1, &segs[0]).unwrap();
        m.push(1, &segs[1]).unwrap();
        m.push(1, &segs[2]).unwrap();
        m.push(2, &segs[2]).unwrap();
        m.push(2, &segs[3]).unwrap();
        assert_eq!(m.stats().evicted, 1);
        assert!(m.buffered() <= 150 + 64);
    }

    proptest::proptest! {
        #[test]
        fn any_order_reassembles(len in 1usize..600, seg in 1usize..8, order in proptest::collection::vec(proptest::num::usize::ANY, 0..50)) {
            let (whole, segs) = segments(len, 3, seg * 16);
            let mut idx: Vec<usize> = (0..segs.len()).collect();
            for (i, o) in order.iter().enumerate() {
                let n = idx.len();
                idx.swap(i % n, o % n);
            }
            let mut r = Reassembler::new(ReassemblyLimits::default());
            let mut got = None;
            for (k, &i) in idx.iter().enumerate() {
                let out = r.push(5, &segs[i]).unwrap();
                if k + 1 < idx.len() { proptest::prop_assert!(out.is_none()); } else { got = out; }
            }
            proptest::prop_assert_eq!(got, Some(whole));
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            let mut r = Reassembler::new(ReassemblyLimits { max_message: 256, max_pending: 2, max_total: 512 });
            let _ = r.push(0, &data);
            proptest::prop_assert!(r.buffered() <= 512);
        }
    }
}
