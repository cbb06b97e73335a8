//! SOME/IP parsers on arbitrary bytes: the header and the messages of a datagram, SOME/IP-SD
//! entries and options, the TCP deframer (fed in chunks whose sizes come from the input) and the
//! SOME/IP-TP reassembler with small bounds.
//!
//! Invariants: nothing panics; a parsed header re-emits to the same 16 bytes; a parsed SD payload
//! re-emits to bytes that parse to the same value; the deframer returns only plausible messages
//! no longer than its maximum; the reassembler never buffers past its memory bound and returns
//! only whole messages without the TP flag.
#![no_main]

use ivnsec_core::wire::someip::{
    Deframed, HEADER_LEN, Messages, Packet, Repr, StreamDeframer, TP_FLAG, plausible_header,
};
use ivnsec_core::wire::someip_sd::{SdPacket, SdRepr};
use ivnsec_core::wire::someip_tp::{ReassemblyLimits, Reassembler};
use libfuzzer_sys::fuzz_target;

const MAX: usize = 2048;

fuzz_target!(|data: &[u8]| {
    // Datagram: header round trip, SD round trip, TP reassembly.
    let limits = ReassemblyLimits { max_message: MAX, max_pending: 3, max_total: 3 * MAX };
    let mut reasm = Reassembler::new(limits);
    for p in Messages::new(data).flatten() {
        let msg = p.message();
        assert!(msg.len() >= HEADER_LEN && msg.len() <= data.len());
        if let Ok(r) = Repr::parse(&p) {
            let mut h = [0u8; HEADER_LEN];
            r.emit_header(&mut h);
            assert_eq!(&h[..], &msg[..HEADER_LEN]);
            if let Ok(sd) = SdPacket::new_checked(p.payload())
                && let Ok(v) = SdRepr::parse(&sd)
            {
                let mut b = vec![0u8; v.buffer_len()];
                v.emit(&mut b);
                let again = SdRepr::parse(&SdPacket::new_checked(&b[..]).unwrap()).unwrap();
                assert_eq!(again, v);
            }
            for peer in [1u64, 2] {
                if let Ok(Some(full)) = reasm.push(peer, msg) {
                    let fp = Packet::new_checked(&full[..]).unwrap();
                    assert_eq!(fp.total_len(), full.len());
                    assert_eq!(fp.message_type_raw() & TP_FLAG, 0);
                    assert!(full.len() <= MAX);
                }
                assert!(reasm.buffered() <= limits.max_total);
            }
        }
    }
    let _ = SdRepr::parse_message(data);

    // Stream: chunk sizes from the first byte.
    let step = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let mut d = StreamDeframer::new(256);
    let mut rest = data;
    let mut guard = 0;
    loop {
        let n = d.push(&rest[..rest.len().min(step)]);
        rest = &rest[n..];
        loop {
            match d.poll() {
                Deframed::NeedMore => break,
                Deframed::Message(m) => {
                    assert!(m.len() <= 256);
                    assert!(plausible_header(m, 256));
                    assert_eq!(Packet::new_unchecked(m).total_len(), m.len());
                }
                Deframed::Resync(n) => assert!(n > 0),
            }
        }
        guard += 1;
        assert!(guard <= data.len() + 2);
        if rest.is_empty() {
            break;
        }
    }
});
