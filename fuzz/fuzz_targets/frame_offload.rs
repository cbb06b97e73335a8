//! The TAP offload path on arbitrary input: the first 10 bytes are the vnet header the kernel
//! would put in front of a frame read from a TAP with offloads, the rest the Ethernet frame. The
//! frame segmenter checks the header against the frame and cuts it; every frame then goes
//! through the receive coalescer, as the peer's TAP side would see them.
//!
//! Invariants: nothing panics; a segmenter that accepts the input writes each frame into a
//! buffer of the length it announces, never more, and each cut frame of a super-frame starts
//! with the super-frame's Ethernet header; the coalescer's output is a vnet header, that
//! Ethernet header and at most a 64 KiB packet, and a TCP super-frame cut and coalesced again
//! has the original's length.
#![no_main]

use ivnsec_core::wire::frame_offload::{
    FrameCoalescer, FrameSegmenter, MAX_L2_HEADER, ip_header_offset,
};
use ivnsec_core::wire::tcp_offload::{MAX_SUPER_PACKET, VNET_HDR_LEN, VnetHdr, gso};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(hdr) = VnetHdr::parse(data) else {
        return;
    };
    let frame = &data[VNET_HDR_LEN..];
    let Ok(seg) = FrameSegmenter::new(&hdr, frame) else {
        return;
    };
    let tcp = hdr.gso_type & !gso::ECN != gso::NONE;
    let l2 = if tcp {
        ip_header_offset(frame).expect("a super-frame has an IP header offset")
    } else {
        0
    };
    let mut buf = vec![0u8; seg.max_len(frame)];
    let mut co = FrameCoalescer::new();
    let mut merged = 0usize;
    let mut all_in = true;
    for i in 0..seg.count().min(2048) {
        let n = seg.write(frame, i, &mut buf).expect("a frame fits max_len");
        assert!(n <= buf.len());
        let f = &buf[..n];
        assert_eq!(&f[..l2], &frame[..l2], "Ethernet header of frame {i}");
        if co.push(f) {
            merged += 1;
        } else {
            all_in = false;
            if let Some(out) = co.finish() {
                assert!(out.l2.len() <= MAX_L2_HEADER);
                assert!(out.packet.len() <= MAX_SUPER_PACKET);
            }
            co.push(f);
        }
    }
    if let Some(out) = co.finish() {
        assert!(out.packet.len() <= MAX_SUPER_PACKET);
        if tcp && all_in && merged == seg.count() && merged > 1 {
            assert_eq!(out.frame_len(), frame.len());
        }
    }
});
