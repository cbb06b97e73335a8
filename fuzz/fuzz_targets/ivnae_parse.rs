//! IVN-AE parsing on arbitrary bytes: `Frame::new_checked`, `Repr::parse` and every getter must
//! never panic, and a parsed header must emit back to the same bytes.
#![no_main]

use ivnsec_core::wire::ivnae::{FLAG_CONF, Frame, HEADER_LEN, Repr};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let checked = Frame::new_checked(data);
    let parsed = Repr::parse(&Frame::new_unchecked(data));
    // The two entry points agree on what is well formed.
    assert_eq!(checked.is_ok(), parsed.is_ok());
    let (Ok(frame), Ok(repr)) = (checked, parsed) else {
        return;
    };

    // Every getter on a checked frame is in bounds.
    let _ = (frame.dst(), frame.src(), frame.ethertype(), frame.version());
    assert_eq!(frame.suite_id(), repr.suite_id);
    assert_eq!(frame.key_id(), repr.key_id);
    assert_eq!(frame.conf(), repr.conf);
    assert_eq!(frame.conf(), frame.flags() & FLAG_CONF != 0);
    assert_eq!(frame.seq(), repr.seq);
    assert_eq!(frame.header().len(), HEADER_LEN);
    assert_eq!(frame.header().len() + frame.rest().len(), data.len());

    // Emit round trip: a checked header re-emitted over the same MAC addresses is unchanged.
    let mut buf = [0u8; HEADER_LEN];
    buf.copy_from_slice(frame.header());
    let mut out = Frame::new_unchecked(&mut buf[..]);
    repr.emit(&mut out);
    assert_eq!(&buf[..], frame.header());
    assert_eq!(repr.buffer_len(), HEADER_LEN);
});
