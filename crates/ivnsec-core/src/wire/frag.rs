//! Fragmentation of messages larger than one protected unit, and their bounded reassembly.
//!
//! A message (a 24,938-byte lidar scan, a camera frame) is cut into fragments that each fit one
//! link MTU; every fragment is then protected on its own by the channel (IVN-AE, MACsec, ESP), as
//! MACsec protects every Ethernet frame with its own SecTAG and ICV. The fragment header travels
//! *inside* the protected payload, so it is authenticated (and, at a confidentiality level,
//! encrypted) with the fragment's data, and the receiver verifies each fragment before it looks
//! at the header. The format is specified in `docs/fragmentation.md`:
//!
//! ```text
//!  0         1          2                  6                  10                 14
//! +---------+----------+------------------+------------------+------------------+------------
//! | version | reserved |    message id    |   total length   |      offset      | data …
//! |   = 1   |   = 0    |  (u32, BE)       |  (u32, BE)       |  (u32, BE)       |
//! +---------+----------+------------------+------------------+------------------+------------
//! ```
//!
//! - *message id*: chosen by the sender, different for every message it sends (a counter); the
//!   receiver keys reassembly on (peer, message id), the peer being whatever the caller knows the
//!   sender by (its SA, its address).
//! - *total length*: the length of the whole message, the same in every fragment (≥ 1).
//! - *offset*: where this fragment's data starts in the message; `offset + data length ≤ total`.
//!   Fragments carry at least one byte of data.
//!
//! The [`Reassembler`] is written for hostile input (a compromised but authenticated sender, or a
//! bug): it never panics, never allocates beyond its [`Limits`] (message size, messages in
//! progress, bytes buffered, disjoint ranges per message), gives up incomplete messages after a
//! timeout (time is a parameter, as everywhere in the core), and every fragment it does not take
//! is a counted [`FragDrop`]. Overlapping fragments are rejected rather than merged: a fragment
//! never overwrites bytes already received. Message buffers are kept and reused, so a steady
//! stream allocates nothing per message once the first messages have been reassembled.

use super::bytes::{array, byte, head, put, put_byte, tail};
use alloc::vec::Vec;
use core::fmt;

use super::Field;

/// Length of the fragment header.
pub const HEADER_LEN: usize = 14;
/// The only version this implementation speaks.
pub const VERSION: u8 = 1;
/// How many recently finished messages (completed or given up) the reassembler remembers, so
/// that late fragments of them are dropped as [`FragDrop::Stale`] instead of opening a message
/// that can never complete.
pub const RECENT: usize = 64;

mod field {
    use super::Field;
    pub const VERSION: usize = 0;
    pub const RESERVED: usize = 1;
    pub const MSG_ID: Field = 2..6;
    pub const TOTAL: Field = 6..10;
    pub const OFFSET: Field = 10..14;
}

fn be32(b: &[u8], f: Field) -> u32 {
    u32::from_be_bytes(array(b, f.start))
}

/// The header of one fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub msg_id: u32,
    /// Length of the whole message.
    pub total_len: u32,
    /// Offset of this fragment's data in the message.
    pub offset: u32,
}

impl Repr {
    /// Parses the header at the start of `unit` (a verified payload) and returns it with the
    /// fragment's data. Checks the version, the reserved byte, that there is data, and that it
    /// lies inside the message (`offset + len ≤ total`).
    pub fn parse(unit: &[u8]) -> Result<(Repr, &[u8]), FragDrop> {
        if unit.len() < HEADER_LEN {
            return Err(FragDrop::Truncated);
        }
        if byte(unit, field::VERSION) != VERSION {
            return Err(FragDrop::BadVersion);
        }
        if byte(unit, field::RESERVED) != 0 {
            return Err(FragDrop::ReservedBits);
        }
        let r = Repr {
            msg_id: be32(unit, field::MSG_ID),
            total_len: be32(unit, field::TOTAL),
            offset: be32(unit, field::OFFSET),
        };
        let data = tail(unit, HEADER_LEN);
        if data.is_empty() || r.total_len == 0 {
            return Err(FragDrop::Empty);
        }
        let end = u64::from(r.offset) + data.len() as u64;
        if end > u64::from(r.total_len) {
            return Err(FragDrop::BadOffset);
        }
        Ok((r, data))
    }

    /// Header length (the data follows).
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header into `b[..HEADER_LEN]`; nothing when `b` is shorter.
    pub fn emit(&self, b: &mut [u8]) {
        let Some(h) = b.get_mut(..HEADER_LEN) else {
            return;
        };
        put_byte(h, field::VERSION, VERSION);
        put_byte(h, field::RESERVED, 0);
        put(h, field::MSG_ID.start, &self.msg_id.to_be_bytes());
        put(h, field::TOTAL.start, &self.total_len.to_be_bytes());
        put(h, field::OFFSET.start, &self.offset.to_be_bytes());
    }
}

macro_rules! frag_drops {
    ($($variant:ident => $name:literal, $doc:literal;)*) => {
        /// Why the reassembler did not take a (verified) fragment. Each has its own counter.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum FragDrop {
            $(#[doc = $doc] $variant,)*
        }

        impl FragDrop {
            /// Every reason, in counter order.
            pub const ALL: &'static [FragDrop] = &[$(FragDrop::$variant,)*];
            /// Number of reasons.
            pub const COUNT: usize = Self::ALL.len();

            /// Stable snake_case name for reports and JSON (all start with `frag_`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(FragDrop::$variant => $name,)*
                }
            }
        }
    };
}

frag_drops! {
    Truncated => "frag_truncated", "Shorter than the fragment header.";
    BadVersion => "frag_bad_version", "A header version this implementation does not speak.";
    ReservedBits => "frag_reserved_bits", "The reserved byte is not zero.";
    Empty => "frag_empty", "No data, or a total length of 0.";
    BadOffset => "frag_bad_offset", "Data past the total length (offset + length > total).";
    TooLarge => "frag_too_large", "The message is larger than the reassembler's limits allow.";
    TotalMismatch => "frag_total_mismatch", "A total length other than the one earlier fragments of the message gave.";
    Overlap => "frag_overlap", "Bytes of the message that were already received.";
    TooManyRanges => "frag_too_many_ranges", "The message would have more disjoint received ranges than allowed.";
    Stale => "frag_stale", "A fragment of a message already completed or given up.";
}

impl fmt::Display for FragDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a message cannot be fragmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FragError {
    /// An empty message (the format has no empty messages).
    Empty,
    /// Longer than 2^32 − 1 bytes.
    TooLarge,
    /// The unit size leaves no room for data after the header.
    UnitTooSmall,
}

impl fmt::Display for FragError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FragError::Empty => "an empty message cannot be fragmented",
            FragError::TooLarge => "message longer than 2^32 - 1 bytes",
            FragError::UnitTooSmall => "the unit size leaves no room for fragment data",
        })
    }
}

impl core::error::Error for FragError {}

/// Number of fragments of a `len`-byte message when each fragment (header included) is at most
/// `max_unit` bytes; 0 when `max_unit` leaves no room for data.
pub fn fragment_count(len: usize, max_unit: usize) -> usize {
    match max_unit.checked_sub(HEADER_LEN) {
        Some(d) if d > 0 => len.div_ceil(d).max(1),
        _ => 0,
    }
}

/// Cuts one message into fragments of at most `max_unit` bytes (header included), in order.
#[derive(Clone, Debug)]
pub struct Fragmenter<'a> {
    msg_id: u32,
    msg: &'a [u8],
    max_data: usize,
    offset: usize,
}

impl<'a> Fragmenter<'a> {
    /// `max_unit`: the largest payload one protected unit carries (the fragment header and its
    /// data).
    pub fn new(msg_id: u32, msg: &'a [u8], max_unit: usize) -> Result<Fragmenter<'a>, FragError> {
        if msg.is_empty() {
            return Err(FragError::Empty);
        }
        if u32::try_from(msg.len()).is_err() {
            return Err(FragError::TooLarge);
        }
        let max_data = match max_unit.checked_sub(HEADER_LEN) {
            Some(d) if d > 0 => d,
            _ => return Err(FragError::UnitTooSmall),
        };
        Ok(Fragmenter {
            msg_id,
            msg,
            max_data,
            offset: 0,
        })
    }

    pub fn msg_id(&self) -> u32 {
        self.msg_id
    }

    /// Number of fragments of the whole message.
    pub fn count(&self) -> usize {
        self.msg.len().div_ceil(self.max_data)
    }

    /// Fragments not yet written.
    pub fn remaining(&self) -> usize {
        (self.msg.len() - self.offset).div_ceil(self.max_data)
    }

    /// Data bytes per fragment (all but the last carry exactly this many).
    pub fn max_data(&self) -> usize {
        self.max_data
    }

    /// Writes the next fragment (header and data) into `out` and returns its length; `None` once
    /// every fragment was written, or when `out` is shorter than the fragment (give it at least
    /// `max_unit` bytes).
    pub fn next_into(&mut self, out: &mut [u8]) -> Option<usize> {
        let n = (self.msg.len() - self.offset).min(self.max_data);
        if n == 0 {
            return None;
        }
        let out = out.get_mut(..HEADER_LEN + n)?;
        let data = self.msg.get(self.offset..self.offset + n)?;
        Repr {
            msg_id: self.msg_id,
            // Both fit: checked in `new`.
            total_len: self.msg.len() as u32,
            offset: self.offset as u32,
        }
        .emit(out);
        put(out, HEADER_LEN, data);
        self.offset += n;
        Some(HEADER_LEN + n)
    }
}

/// Bounds of a [`Reassembler`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest message accepted.
    pub max_message: usize,
    /// Messages in progress at once (the least recently used is given up for a new one).
    pub max_pending: usize,
    /// Bytes of message buffers held at once, idle reusable buffers included.
    pub max_total: usize,
    /// Disjoint received ranges one message may have (fragments arriving out of order open
    /// ranges; in-order fragments extend one).
    pub max_ranges: usize,
    /// An incomplete message is given up this long after its first fragment arrived (ns).
    pub timeout_ns: u64,
}

impl Default for Limits {
    /// 1 MiB messages (a 425 kB camera frame fits), 8 in progress, 4 MiB buffered, 64 ranges,
    /// 500 ms.
    fn default() -> Self {
        Limits {
            max_message: 1 << 20,
            max_pending: 8,
            max_total: 4 << 20,
            max_ranges: 64,
            timeout_ns: 500_000_000,
        }
    }
}

/// Counters of a [`Reassembler`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Fragments taken.
    pub fragments: u64,
    /// Messages completed.
    pub completed: u64,
    /// Incomplete messages given up after the timeout.
    pub evicted_timeout: u64,
    /// Incomplete messages given up for a new message when `max_pending` were in progress.
    pub evicted_pending: u64,
    /// Incomplete messages given up to stay within `max_total`.
    pub evicted_memory: u64,
    drops: [u64; FragDrop::COUNT],
}

impl Default for ReassemblyStats {
    fn default() -> Self {
        ReassemblyStats {
            fragments: 0,
            completed: 0,
            evicted_timeout: 0,
            evicted_pending: 0,
            evicted_memory: 0,
            drops: [0; FragDrop::COUNT],
        }
    }
}

impl ReassemblyStats {
    /// Fragments dropped for `r`.
    pub fn dropped(&self, r: FragDrop) -> u64 {
        self.drops.get(r as usize).copied().unwrap_or(0)
    }

    /// Every fragment dropped.
    pub fn dropped_total(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// Messages given up, whatever the cause.
    pub fn evicted(&self) -> u64 {
        self.evicted_timeout + self.evicted_pending + self.evicted_memory
    }

    /// Non-zero drop counters.
    pub fn drops(&self) -> impl Iterator<Item = (FragDrop, u64)> + '_ {
        FragDrop::ALL
            .iter()
            .map(|&r| (r, self.dropped(r)))
            .filter(|&(_, n)| n > 0)
    }

    fn bump(&mut self, r: FragDrop) {
        if let Some(c) = self.drops.get_mut(r as usize) {
            *c = c.saturating_add(1);
        }
    }
}

/// A message the reassembler completed; `data` lives in the reassembler until its next call.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pub peer: u64,
    pub msg_id: u32,
    pub data: &'a [u8],
}

#[derive(Debug)]
struct Slot {
    active: bool,
    peer: u64,
    msg_id: u32,
    total: usize,
    received: usize,
    /// Sorted, disjoint, non-adjacent received byte ranges (start, end).
    ranges: Vec<(usize, usize)>,
    /// The message buffer (kept for reuse when the slot is idle).
    data: Vec<u8>,
    started_ns: u64,
    /// Order of last use, for eviction.
    touched: u64,
}

/// Why a slot was given up.
#[derive(Clone, Copy)]
enum Evict {
    Timeout,
    Pending,
    Memory,
}

/// Reassembles verified fragments into messages within fixed memory bounds.
#[derive(Debug)]
pub struct Reassembler {
    limits: Limits,
    slots: Vec<Slot>,
    /// Recently finished (peer, message id), a ring of [`RECENT`].
    recent: Vec<(u64, u32)>,
    recent_next: usize,
    clock: u64,
    stats: ReassemblyStats,
}

impl Reassembler {
    /// A reassembler within `limits` (`max_pending` and `max_ranges` are taken as at least 1).
    pub fn new(limits: Limits) -> Reassembler {
        let limits = Limits {
            max_pending: limits.max_pending.max(1),
            max_ranges: limits.max_ranges.max(1),
            ..limits
        };
        Reassembler {
            limits,
            slots: Vec::new(),
            recent: Vec::new(),
            recent_next: 0,
            clock: 0,
            stats: ReassemblyStats::default(),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn stats(&self) -> &ReassemblyStats {
        &self.stats
    }

    /// Messages in progress.
    pub fn pending(&self) -> usize {
        self.slots.iter().filter(|s| s.active).count()
    }

    /// Bytes of message buffers held (in progress and idle), never above `max_total`.
    pub fn buffered(&self) -> usize {
        self.slots.iter().map(|s| s.data.capacity()).sum()
    }

    /// Gives up every incomplete message whose first fragment arrived more than the timeout
    /// before `now_ns`. [`push`](Self::push) does this itself; call it when no fragment arrives
    /// for a while to free the messages early.
    pub fn expire(&mut self, now_ns: u64) {
        for i in 0..self.slots.len() {
            let timeout = self.limits.timeout_ns;
            if self
                .slots
                .get(i)
                .is_some_and(|s| s.active && now_ns.saturating_sub(s.started_ns) > timeout)
            {
                self.give_up(i, Evict::Timeout);
            }
        }
    }

    /// Takes one verified fragment from `peer` at time `now_ns` (any monotonic clock, in ns).
    /// Returns the whole message once its last missing byte arrived.
    pub fn push(
        &mut self,
        peer: u64,
        unit: &[u8],
        now_ns: u64,
    ) -> Result<Option<Message<'_>>, FragDrop> {
        self.expire(now_ns);
        match self.take(peer, unit, now_ns) {
            Ok(done) => {
                self.stats.fragments += 1;
                match done {
                    Some(i) => {
                        self.stats.completed += 1;
                        // `take` returned the index of a slot it just filled.
                        Ok(self.slots.get(i).map(|s| Message {
                            peer: s.peer,
                            msg_id: s.msg_id,
                            data: head(&s.data, s.total),
                        }))
                    }
                    None => Ok(None),
                }
            }
            Err(r) => {
                self.stats.bump(r);
                Err(r)
            }
        }
    }

    /// The work of [`push`](Self::push); returns the slot of a completed message.
    fn take(&mut self, peer: u64, unit: &[u8], now_ns: u64) -> Result<Option<usize>, FragDrop> {
        let (h, data) = Repr::parse(unit)?;
        let total = h.total_len as usize;
        if total > self.limits.max_message || total > self.limits.max_total {
            return Err(FragDrop::TooLarge);
        }
        if self.recent.contains(&(peer, h.msg_id)) {
            return Err(FragDrop::Stale);
        }
        let (start, end) = (h.offset as usize, h.offset as usize + data.len());
        self.clock += 1;
        let i = match self
            .slots
            .iter()
            .position(|s| s.active && s.peer == peer && s.msg_id == h.msg_id)
        {
            Some(i) => {
                let s = self.slots.get(i).ok_or(FragDrop::TooLarge)?;
                if s.total != total {
                    return Err(FragDrop::TotalMismatch);
                }
                insert_range(&s.ranges, start, end, self.limits.max_ranges)?;
                i
            }
            None => self.open(peer, h.msg_id, total, now_ns)?,
        };
        let clock = self.clock;
        // `position` or `open` returned an index into `slots`.
        let s = self.slots.get_mut(i).ok_or(FragDrop::TooLarge)?;
        // Checked above for an existing message; a new one has no ranges yet.
        let at = insert_range(&s.ranges, start, end, self.limits.max_ranges)?;
        // `Repr::parse` checked offset + data ≤ total, and `open` sized the buffer to total.
        let dst = s.data.get_mut(start..end).ok_or(FragDrop::BadOffset)?;
        apply_range(&mut s.ranges, at, start, end);
        dst.copy_from_slice(data);
        s.received += data.len();
        s.touched = clock;
        if s.received < s.total {
            return Ok(None);
        }
        s.active = false;
        let key = (s.peer, s.msg_id);
        self.remember(key);
        Ok(Some(i))
    }

    /// Opens a slot for a new message of `total` bytes, giving up others if the limits demand.
    fn open(
        &mut self,
        peer: u64,
        msg_id: u32,
        total: usize,
        now_ns: u64,
    ) -> Result<usize, FragDrop> {
        // An idle slot whose buffer already fits, else any idle slot, else a new slot, else the
        // least recently used message in progress.
        let idle = self
            .slots
            .iter()
            .position(|s| !s.active && s.data.capacity() >= total)
            .or_else(|| self.slots.iter().position(|s| !s.active));
        let i = match idle {
            Some(i) => i,
            None if self.slots.len() < self.limits.max_pending => {
                let mut ranges = Vec::new();
                ranges
                    .try_reserve_exact(self.limits.max_ranges)
                    .map_err(|_| FragDrop::TooLarge)?;
                self.slots.push(Slot {
                    active: false,
                    peer: 0,
                    msg_id: 0,
                    total: 0,
                    received: 0,
                    ranges,
                    data: Vec::new(),
                    started_ns: 0,
                    touched: 0,
                });
                self.slots.len() - 1
            }
            None => {
                let i = self.lru(None).ok_or(FragDrop::TooLarge)?;
                self.give_up(i, Evict::Pending);
                i
            }
        };
        // Memory: this slot's buffer must grow to `total` while every buffer together stays
        // within max_total. Idle buffers are released first, then messages in progress given up.
        if self.slots.get(i).is_some_and(|s| s.data.capacity() < total) {
            loop {
                let others: usize = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, s)| s.data.capacity())
                    .sum();
                if others + total <= self.limits.max_total {
                    break;
                }
                if let Some(j) = self
                    .slots
                    .iter()
                    .enumerate()
                    .position(|(j, s)| j != i && !s.active && s.data.capacity() > 0)
                {
                    if let Some(s) = self.slots.get_mut(j) {
                        s.data = Vec::new();
                    }
                    continue;
                }
                match self.lru(Some(i)) {
                    Some(j) => {
                        self.give_up(j, Evict::Memory);
                        if let Some(s) = self.slots.get_mut(j) {
                            s.data = Vec::new();
                        }
                    }
                    // Cannot happen (total ≤ max_total was checked), but never loop forever.
                    None => return Err(FragDrop::TooLarge),
                }
            }
            let s = self.slots.get_mut(i).ok_or(FragDrop::TooLarge)?;
            s.data = Vec::new();
            s.data
                .try_reserve_exact(total)
                .map_err(|_| FragDrop::TooLarge)?;
        }
        let s = self.slots.get_mut(i).ok_or(FragDrop::TooLarge)?;
        if s.data.len() < total {
            s.data.resize(total, 0);
        }
        s.active = true;
        s.peer = peer;
        s.msg_id = msg_id;
        s.total = total;
        s.received = 0;
        s.ranges.clear();
        s.started_ns = now_ns;
        s.touched = self.clock;
        Ok(i)
    }

    /// The least recently used message in progress other than `keep`.
    fn lru(&self, keep: Option<usize>) -> Option<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter(|&(j, s)| s.active && Some(j) != keep)
            .min_by_key(|(_, s)| s.touched)
            .map(|(j, _)| j)
    }

    fn give_up(&mut self, i: usize, why: Evict) {
        let Some(s) = self.slots.get_mut(i) else {
            return;
        };
        if !s.active {
            return;
        }
        s.active = false;
        let key = (s.peer, s.msg_id);
        match why {
            Evict::Timeout => self.stats.evicted_timeout += 1,
            Evict::Pending => self.stats.evicted_pending += 1,
            Evict::Memory => self.stats.evicted_memory += 1,
        }
        self.remember(key);
    }

    fn remember(&mut self, key: (u64, u32)) {
        if self.recent.len() < RECENT {
            self.recent.push(key);
        } else {
            if let Some(r) = self.recent.get_mut(self.recent_next) {
                *r = key;
            }
        }
        self.recent_next = (self.recent_next + 1) % RECENT;
    }
}

/// Where `[start, end)` goes among the sorted disjoint `ranges`: the index of the first range
/// after it. Errors when it overlaps one or when it would make more than `max` ranges.
fn insert_range(
    ranges: &[(usize, usize)],
    start: usize,
    end: usize,
    max: usize,
) -> Result<usize, FragDrop> {
    let at = ranges.partition_point(|&(a, _)| a < start);
    let before = at.checked_sub(1).and_then(|k| ranges.get(k)).copied();
    let after = ranges.get(at).copied();
    if before.is_some_and(|(_, e)| e > start) || after.is_some_and(|(a, _)| a < end) {
        return Err(FragDrop::Overlap);
    }
    let joins_before = before.is_some_and(|(_, e)| e == start);
    let joins_after = after.is_some_and(|(a, _)| a == end);
    if !joins_before && !joins_after && ranges.len() >= max {
        return Err(FragDrop::TooManyRanges);
    }
    Ok(at)
}

/// Adds `[start, end)` at `at` (from [`insert_range`]), merging with touching neighbours. Never
/// grows `ranges` past the capacity `insert_range` allowed.
fn apply_range(ranges: &mut Vec<(usize, usize)>, at: usize, start: usize, end: usize) {
    let after_end = ranges.get(at).and_then(|&(a, e)| (a == end).then_some(e));
    match (at.checked_sub(1).and_then(|k| ranges.get_mut(k)), after_end) {
        (Some(before), Some(e)) if before.1 == start => {
            before.1 = e;
            ranges.remove(at);
        }
        (Some(before), None) if before.1 == start => before.1 = end,
        (_, Some(_)) => {
            if let Some(after) = ranges.get_mut(at) {
                after.0 = start;
            }
        }
        _ => ranges.insert(at, (start, end)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn message(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    fn fragments(id: u32, msg: &[u8], max_unit: usize) -> Vec<Vec<u8>> {
        let mut f = Fragmenter::new(id, msg, max_unit).unwrap();
        let mut buf = vec![0u8; max_unit];
        let mut out = Vec::new();
        while let Some(n) = f.next_into(&mut buf) {
            out.push(buf[..n].to_vec());
        }
        out
    }

    fn unit(id: u32, total: u32, offset: u32, data: &[u8]) -> Vec<u8> {
        let mut u = vec![0u8; HEADER_LEN + data.len()];
        Repr {
            msg_id: id,
            total_len: total,
            offset,
        }
        .emit(&mut u);
        u[HEADER_LEN..].copy_from_slice(data);
        u
    }

    /// The header layout byte by byte (docs/fragmentation.md).
    #[test]
    fn header_layout() {
        let u = unit(0x0102_0304, 24_938, 0x1122_3344, &[0xAA]);
        assert_eq!(
            u,
            [
                1, 0, 1, 2, 3, 4, 0, 0, 0x61, 0x6A, 0x11, 0x22, 0x33, 0x44, 0xAA
            ]
        );
        let u = unit(7, 10, 9, &[5]);
        let (r, d) = Repr::parse(&u).unwrap();
        assert_eq!(
            r,
            Repr {
                msg_id: 7,
                total_len: 10,
                offset: 9
            }
        );
        assert_eq!(d, &[5]);
        let mut short = [0u8; 4];
        r.emit(&mut short);
        assert_eq!(short, [0; 4]);
    }

    #[test]
    fn lidar_message_round_trip() {
        // 24,938 bytes in fragments of at most 1,456 bytes: 17 of 1,442 data bytes and one of 424.
        let msg = message(24_938, 1);
        let frags = fragments(9, &msg, 1456);
        assert_eq!(frags.len(), 18);
        assert_eq!(fragment_count(24_938, 1456), 18);
        assert!(frags.iter().all(|f| f.len() <= 1456));
        let mut r = Reassembler::new(Limits::default());
        for (k, f) in frags.iter().enumerate() {
            let out = r.push(3, f, k as u64).unwrap();
            if k + 1 < frags.len() {
                assert!(out.is_none());
            } else {
                let m = out.unwrap();
                assert_eq!((m.peer, m.msg_id), (3, 9));
                assert_eq!(m.data, &msg[..]);
            }
        }
        assert_eq!(r.pending(), 0);
        assert_eq!(r.stats().completed, 1);
        assert_eq!(r.stats().fragments, 18);
        // The buffer is reused: a second message of the same size allocates nothing more.
        let held = r.buffered();
        let msg2 = message(24_938, 2);
        let mut last = None;
        for f in fragments(10, &msg2, 1456) {
            last = r.push(3, &f, 100).unwrap().map(|m| m.data.to_vec());
        }
        assert_eq!(last.unwrap(), msg2);
        assert_eq!(r.buffered(), held);
    }

    #[test]
    fn fragmenter_edges() {
        assert_eq!(Fragmenter::new(1, &[], 100).unwrap_err(), FragError::Empty);
        assert_eq!(
            Fragmenter::new(1, &[1], HEADER_LEN).unwrap_err(),
            FragError::UnitTooSmall
        );
        assert_eq!(fragment_count(10, HEADER_LEN), 0);
        // One byte per fragment.
        let f = fragments(1, &[1, 2, 3], HEADER_LEN + 1);
        assert_eq!(f.len(), 3);
        assert_eq!(f[2], unit(1, 3, 2, &[3]));
        // A buffer too small yields nothing and does not advance.
        let mut fr = Fragmenter::new(1, &[1, 2, 3], 100).unwrap();
        assert_eq!(fr.remaining(), 1);
        assert_eq!(fr.next_into(&mut [0u8; 10]), None);
        assert_eq!(fr.next_into(&mut [0u8; 17]), Some(17));
        assert_eq!(fr.remaining(), 0);
        assert_eq!(fr.next_into(&mut [0u8; 100]), None);
    }

    #[test]
    fn hostile_fragments_are_counted() {
        let mut r = Reassembler::new(Limits::default());
        let cases: [(Vec<u8>, FragDrop); 6] = [
            (vec![1, 0, 0], FragDrop::Truncated),
            (
                {
                    let mut u = unit(1, 4, 0, &[1]);
                    u[0] = 2;
                    u
                },
                FragDrop::BadVersion,
            ),
            (
                {
                    let mut u = unit(1, 4, 0, &[1]);
                    u[1] = 0x80;
                    u
                },
                FragDrop::ReservedBits,
            ),
            (unit(1, 4, 0, &[]), FragDrop::Empty),
            (unit(1, 0, 0, &[1]), FragDrop::Empty),
            (unit(1, 4, 3, &[1, 2]), FragDrop::BadOffset),
        ];
        for (u, want) in &cases {
            assert_eq!(r.push(1, u, 0).unwrap_err(), *want);
        }
        // offset + len overflowing u32 is past the total, not a wrap-around.
        assert_eq!(
            r.push(1, &unit(1, u32::MAX, u32::MAX, &[1, 2]), 0)
                .unwrap_err(),
            FragDrop::BadOffset
        );
        // Larger than the limit: nothing is allocated for it.
        assert_eq!(
            r.push(1, &unit(2, u32::MAX, 0, &[1]), 0).unwrap_err(),
            FragDrop::TooLarge
        );
        assert_eq!(r.buffered(), 0);
        // Overlaps: exact duplicate, partial on either side, containing.
        assert!(r.push(1, &unit(3, 100, 10, &[0; 10]), 0).unwrap().is_none());
        for (off, len) in [(10, 10), (5, 6), (19, 3), (0, 40), (12, 2)] {
            assert_eq!(
                r.push(1, &unit(3, 100, off, &vec![0; len]), 0).unwrap_err(),
                FragDrop::Overlap,
                "{off}+{len}"
            );
        }
        // Another total for the same message.
        assert_eq!(
            r.push(1, &unit(3, 99, 0, &[0; 10]), 0).unwrap_err(),
            FragDrop::TotalMismatch
        );
        // Adjacent fragments are fine and complete the message.
        assert!(r.push(1, &unit(3, 100, 0, &[0; 10]), 0).unwrap().is_none());
        let done = r.push(1, &unit(3, 100, 20, &[0; 80]), 0).unwrap().unwrap();
        assert_eq!(done.data.len(), 100);
        // Late fragments of a completed message are stale, not a new message.
        assert_eq!(
            r.push(1, &unit(3, 100, 0, &[0; 10]), 0).unwrap_err(),
            FragDrop::Stale
        );
        let s = r.stats();
        assert_eq!(s.dropped(FragDrop::Overlap), 5);
        assert_eq!(s.dropped(FragDrop::Empty), 2);
        assert_eq!(s.dropped(FragDrop::BadOffset), 2);
        assert_eq!(s.dropped_total(), 6 + 1 + 1 + 5 + 1 + 1);
        assert_eq!(s.drops().count(), 9);
        assert_eq!(r.pending(), 0);
    }

    #[test]
    fn too_many_ranges() {
        let mut r = Reassembler::new(Limits {
            max_ranges: 3,
            ..Limits::default()
        });
        for off in [0, 10, 20] {
            assert!(r.push(1, &unit(1, 100, off, &[1; 5]), 0).unwrap().is_none());
        }
        assert_eq!(
            r.push(1, &unit(1, 100, 30, &[1; 5]), 0).unwrap_err(),
            FragDrop::TooManyRanges
        );
        // Filling a gap (merging two ranges) or extending one is always possible.
        assert!(r.push(1, &unit(1, 100, 5, &[1; 5]), 0).unwrap().is_none());
        assert!(r.push(1, &unit(1, 100, 25, &[1; 5]), 0).unwrap().is_none());
        assert!(r.push(1, &unit(1, 100, 40, &[1; 5]), 0).unwrap().is_none());
    }

    #[test]
    fn timeout_and_pending_limits() {
        let mut r = Reassembler::new(Limits {
            max_pending: 2,
            timeout_ns: 1000,
            ..Limits::default()
        });
        r.push(1, &unit(1, 10, 0, &[1; 5]), 0).unwrap();
        r.push(1, &unit(2, 10, 0, &[1; 5]), 10).unwrap();
        // A third message gives up the least recently used (1).
        r.push(1, &unit(3, 10, 0, &[1; 5]), 20).unwrap();
        assert_eq!(r.stats().evicted_pending, 1);
        assert_eq!(r.pending(), 2);
        // Its late fragment is stale, not a new message.
        assert_eq!(
            r.push(1, &unit(1, 10, 5, &[1; 5]), 30).unwrap_err(),
            FragDrop::Stale
        );
        // Peers are separate: peer 2's message 2 is another message (it takes the place of the
        // least recently used, peer 1's message 2).
        assert!(r.push(2, &unit(2, 5, 0, &[1; 5]), 40).unwrap().is_some());
        assert_eq!(r.stats().evicted_pending, 2);
        r.push(1, &unit(4, 10, 0, &[1; 5]), 50).unwrap();
        // After the timeout both incomplete messages (3 and 4) are given up.
        r.expire(2000);
        assert_eq!(r.stats().evicted_timeout, 2);
        assert_eq!(r.pending(), 0);
        assert_eq!(r.stats().evicted(), 4);
    }

    #[test]
    fn memory_bound_evicts_and_releases() {
        let mut r = Reassembler::new(Limits {
            max_message: 1000,
            max_pending: 8,
            max_total: 1500,
            ..Limits::default()
        });
        r.push(1, &unit(1, 1000, 0, &[1; 10]), 0).unwrap();
        assert_eq!(r.buffered(), 1000);
        // 1000 + 800 > 1500: message 1 is given up for message 2, whose buffer replaces it.
        r.push(1, &unit(2, 800, 0, &[1; 10]), 1).unwrap();
        assert_eq!(r.stats().evicted_memory, 1);
        assert_eq!(r.buffered(), 800);
        assert!(
            r.push(1, &unit(2, 800, 10, &[1; 790]), 2)
                .unwrap()
                .is_some()
        );
        // A smaller message reuses the idle buffer.
        r.push(1, &unit(3, 500, 0, &[1; 10]), 3).unwrap();
        assert_eq!(r.buffered(), 800);
        // Two more: 800 + 600 + 100 = 1500 fits exactly.
        r.push(1, &unit(4, 600, 0, &[1; 10]), 4).unwrap();
        r.push(1, &unit(5, 100, 0, &[1; 10]), 5).unwrap();
        assert_eq!(r.buffered(), 1500);
        // Complete 4 and 5: two idle buffers (600, 100), message 3 in progress (800).
        assert!(
            r.push(1, &unit(4, 600, 10, &[1; 590]), 6)
                .unwrap()
                .is_some()
        );
        assert!(r.push(1, &unit(5, 100, 10, &[1; 90]), 7).unwrap().is_some());
        // 700 bytes: the idle 600 buffer is replaced, and the idle 100 one released before any
        // message in progress is given up: 800 + 700 = 1500.
        r.push(1, &unit(6, 700, 0, &[1; 10]), 8).unwrap();
        assert_eq!(r.stats().evicted_memory, 1, "idle buffers go first");
        assert_eq!(r.buffered(), 1500);
        assert_eq!(r.pending(), 2);
        // 1000 bytes: both messages in progress must go.
        r.push(1, &unit(7, 1000, 0, &[1; 10]), 9).unwrap();
        assert_eq!(r.stats().evicted_memory, 3);
        assert_eq!(r.buffered(), 1000);
        assert_eq!(r.pending(), 1);
    }

    proptest::proptest! {
        /// Any delivery order reassembles the message exactly once, at the last fragment.
        #[test]
        fn any_order_reassembles(
            len in 1usize..3000,
            unit_len in (HEADER_LEN + 1)..400,
            swaps in proptest::collection::vec((0usize..1000, 0usize..1000), 0..40),
        ) {
            let msg = message(len, 7);
            let frags = fragments(5, &msg, unit_len);
            let mut order: Vec<usize> = (0..frags.len()).collect();
            for (a, b) in swaps {
                let n = order.len();
                order.swap(a % n, b % n);
            }
            let mut r = Reassembler::new(Limits { max_ranges: 1000, ..Limits::default() });
            for (k, &i) in order.iter().enumerate() {
                let out = r.push(9, &frags[i], 0).unwrap().map(|m| m.data.to_vec());
                if k + 1 < order.len() {
                    proptest::prop_assert!(out.is_none());
                } else {
                    proptest::prop_assert_eq!(out.as_deref(), Some(&msg[..]));
                }
            }
        }

        /// Arbitrary units from several peers at arbitrary times: never a panic, the memory bound
        /// always holds, and every unit is either taken or counted as a drop.
        #[test]
        fn hostile_stream_stays_bounded(
            units in proptest::collection::vec(
                (0u64..3, 0u32..4, 1u32..5000, 0u32..5000, 0usize..300, 0u64..2_000_000, proptest::num::u8::ANY),
                0..200,
            ),
        ) {
            let limits = Limits {
                max_message: 4096,
                max_pending: 3,
                max_total: 6000,
                max_ranges: 4,
                timeout_ns: 1_000_000,
            };
            let mut r = Reassembler::new(limits);
            let mut now = 0u64;
            let mut taken_or_dropped = 0u64;
            for (peer, id, total, offset, len, dt, noise) in units {
                now += dt;
                let mut u = unit(id, total, offset, &vec![noise; len]);
                if noise < 8 {
                    // Corrupt a header byte now and then.
                    let i = usize::from(noise) % HEADER_LEN;
                    u[i] ^= 0x5A;
                }
                let _ = r.push(peer, &u, now);
                taken_or_dropped += 1;
                proptest::prop_assert!(r.buffered() <= limits.max_total);
                proptest::prop_assert!(r.pending() <= limits.max_pending);
            }
            let s = r.stats();
            proptest::prop_assert_eq!(s.fragments + s.dropped_total(), taken_or_dropped);
        }

        /// Raw bytes: parsing never panics and agrees with the length rules.
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            if let Ok((h, d)) = Repr::parse(&data) {
                proptest::prop_assert!(!d.is_empty());
                proptest::prop_assert!(u64::from(h.offset) + d.len() as u64 <= u64::from(h.total_len));
            }
        }
    }
}
