//! The fragment reassembler (`wire::frag`) on an arbitrary stream of units from several peers at
//! arbitrary times, with small bounds.
//!
//! Input: records `peer (1 byte) ‖ dt (1 byte, × 100 µs) ‖ length (2 bytes, big-endian) ‖ unit`
//! until the input ends (a record cut short takes what is left).
//!
//! Invariants: nothing panics; the buffers held never exceed `max_total` and the messages in
//! progress never exceed `max_pending`; every unit is either taken or counted as exactly one
//! drop; a completed message has the total length its fragments announced, within
//! `max_message`, and comes from the peer that sent its last fragment.
#![no_main]

use ivnsec_core::wire::frag::{Limits, Reassembler, Repr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_message: 4096,
        max_pending: 3,
        max_total: 6000,
        max_ranges: 8,
        timeout_ns: 5_000_000,
    };
    let mut r = Reassembler::new(limits);
    let mut now = 0u64;
    let mut units = 0u64;
    let mut rest = data;
    while rest.len() >= 4 {
        let peer = u64::from(rest[0] % 4);
        now += u64::from(rest[1]) * 100_000;
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]]));
        let body = &rest[4..];
        let unit = &body[..len.min(body.len())];
        rest = &body[unit.len()..];
        let announced = Repr::parse(unit).ok().map(|(h, _)| h.total_len as usize);
        units += 1;
        if let Ok(Some(m)) = r.push(peer, unit, now) {
            assert_eq!(m.peer, peer);
            assert_eq!(Some(m.data.len()), announced);
            assert!(m.data.len() <= limits.max_message);
        }
        assert!(r.buffered() <= limits.max_total);
        assert!(r.pending() <= limits.max_pending);
        let s = r.stats();
        assert_eq!(s.fragments + s.dropped_total(), units);
    }
    r.expire(now + limits.timeout_ns + 1);
    assert_eq!(r.pending(), 0);
});
