//! The TUN offload path on arbitrary input: the first 10 bytes are the vnet header the kernel
//! would put in front of a packet read from the TUN, the rest the packet. The segmenter checks
//! the header against the packet and cuts it; every segment then goes through the receive
//! coalescer, as the peer would see them.
//!
//! Invariants: nothing panics; a segmenter that accepts the input writes each segment into a
//! buffer of the length it announces, never more; the segments of a TCP super-packet carry IP
//! length fields equal to their length; the coalescer's output is a vnet header and at most a
//! 64 KiB packet, and a TCP super-packet cut and coalesced again has the original's length.
#![no_main]

use ivnsec_core::wire::tcp_offload::{
    Coalescer, MAX_SUPER_PACKET, Segmenter, VNET_HDR_LEN, VnetHdr, gso,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(hdr) = VnetHdr::parse(data) else {
        return;
    };
    let pkt = &data[VNET_HDR_LEN..];
    let Ok(seg) = Segmenter::new(&hdr, pkt) else {
        return;
    };
    let mut buf = vec![0u8; seg.max_len(pkt)];
    let mut co = Coalescer::new();
    let mut merged = 0usize;
    let mut all_in = true;
    let tcp = hdr.gso_type & !gso::ECN != gso::NONE;
    for i in 0..seg.count().min(2048) {
        let n = seg.write(pkt, i, &mut buf).expect("a segment fits max_len");
        assert!(n <= buf.len());
        let s = &buf[..n];
        if tcp {
            let len = if s[0] >> 4 == 4 {
                usize::from(u16::from_be_bytes([s[2], s[3]]))
            } else {
                40 + usize::from(u16::from_be_bytes([s[4], s[5]]))
            };
            assert_eq!(len, n, "IP length field of segment {i}");
        }
        if co.push(s) {
            merged += 1;
        } else {
            all_in = false;
            if let Some(out) = co.finish() {
                assert!(out.len() <= VNET_HDR_LEN + MAX_SUPER_PACKET);
            }
            co.push(s);
        }
    }
    if let Some(out) = co.finish() {
        assert!(out.len() <= VNET_HDR_LEN + MAX_SUPER_PACKET);
        if tcp && all_in && merged == seg.count() && merged > 1 {
            assert_eq!(out.len() - VNET_HDR_LEN, pkt.len());
        }
    }
});
