//! Arbitrary bytes as an Ethernet frame to `wire::mkpdu::Frame::new_checked` and
//! `Repr::parse`.
//!
//! Invariants: nothing panics; a checked frame's body, parameter sets, signed part and ICV lie
//! inside the input and add up (signed = headers + parameter sets, ICV = 16 octets); a parsed
//! MKPDU has a CKN of 1..=32 octets and peer lists of whole entries; emitting the parsed Repr
//! (unknown sets dropped, the ICV Indicator kept) gives a frame that parses back to the same
//! values.
#![no_main]

use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::mkpdu::{Frame, HEADER_LEN, ICV_LEN, MAX_CKN_LEN, Repr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(f) = Frame::new_checked(data) else {
        return;
    };
    let n = f.body_len();
    assert!(HEADER_LEN + n <= data.len());
    assert_eq!(f.signed().len() + ICV_LEN, HEADER_LEN + n);
    assert_eq!(f.params().len() + ICV_LEN, n);
    assert_eq!(f.icv().len(), ICV_LEN);
    let Ok(r) = Repr::parse(&f) else {
        return;
    };
    assert!((1..=MAX_CKN_LEN).contains(&r.basic.ckn.len()));
    let mut buf = vec![0u8; r.buffer_len()];
    if r.emit(f.dst(), MacAddr::from_slice(&data[6..12]), &mut buf).is_err() {
        // Only what emit cannot write: a field out of range (e.g. a 2-bit value is always in
        // range after parsing, so this is a wrapped key of another length).
        assert!(r.check_emit().is_err());
        return;
    }
    let g = Frame::new_checked(&buf[..]).expect("emitted frame checks");
    let back = Repr::parse(&g).expect("emitted frame parses");
    assert_eq!(back.basic, r.basic);
    assert_eq!(back.sak_use, r.sak_use);
    assert_eq!(back.xpn, r.xpn);
    assert_eq!(back.distributed_sak, r.distributed_sak);
    assert_eq!(back.distributed_cak, r.distributed_cak);
    assert_eq!(back.icv_indicator, r.icv_indicator);
    assert_eq!(back.skipped, 0);
    for (a, b) in [(back.live_peers, r.live_peers), (back.potential_peers, r.potential_peers)] {
        assert_eq!(a.map(|l| l.iter().collect::<Vec<_>>()), b.map(|l| l.iter().collect::<Vec<_>>()));
    }
});
