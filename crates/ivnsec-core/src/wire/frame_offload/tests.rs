use super::*;
use crate::wire::tcp_offload::tests::{gso_hdr, reference_tcp_sum, super_packet};
use alloc::vec;
use alloc::vec::Vec;
use proptest::prelude::*;

const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// An Ethernet header (optionally one 802.1Q tag, VID 5) for `ethertype`.
fn eth(tag: bool, ethertype: u16) -> Vec<u8> {
    let mut h = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    if tag {
        h.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
    }
    h.extend_from_slice(&ethertype.to_be_bytes());
    h
}

/// A TCP super-frame as the kernel hands it to a TAP with TSO: the offsets of its vnet
/// header count from the frame's start.
fn super_frame(tag: bool, v6: bool, payload: &[u8], seq: u32) -> (VnetHdr, Vec<u8>) {
    let mut f = eth(tag, if v6 { 0x86DD } else { 0x0800 });
    let l2 = f.len() as u16;
    f.extend_from_slice(&super_packet(v6, 12, payload, ACK | PSH, seq));
    let mut h = gso_hdr(v6, 12, 1400);
    h.csum_start += l2;
    h.hdr_len += l2;
    (h, f)
}

fn cut(h: &VnetHdr, f: &[u8]) -> Vec<Vec<u8>> {
    let s = FrameSegmenter::new(h, f).unwrap();
    let mut buf = vec![0u8; s.max_len(f)];
    (0..s.count())
        .map(|i| {
            let n = s.write(f, i, &mut buf).unwrap();
            buf[..n].to_vec()
        })
        .collect()
}

#[test]
fn the_ip_header_offset_knows_untagged_and_tagged_ip_only() {
    let mut f = eth(false, 0x0800);
    f.resize(60, 0);
    assert_eq!(ip_header_offset(&f), Some(14));
    let mut f = eth(true, 0x86DD);
    f.resize(60, 0);
    assert_eq!(ip_header_offset(&f), Some(18));
    let mut f = eth(false, 0x0806);
    f.resize(60, 0);
    assert_eq!(ip_header_offset(&f), None, "ARP");
    assert_eq!(ip_header_offset(&f[..13]), None, "short");
    let mut f = eth(true, 0x8100);
    f.resize(60, 0);
    assert_eq!(ip_header_offset(&f), None, "two tags");
}

#[test]
fn a_super_frame_is_cut_into_frames_with_its_ethernet_header() {
    for (tag, v6) in [(false, false), (true, false), (false, true), (true, true)] {
        let payload: Vec<u8> = (0..4000u32).map(|i| (i * 13) as u8).collect();
        let (h, f) = super_frame(tag, v6, &payload, 7);
        let l2 = if tag { 18 } else { 14 };
        let segs = cut(&h, &f);
        assert_eq!(segs.len(), 3, "tag {tag} v6 {v6}");
        for (i, s) in segs.iter().enumerate() {
            assert_eq!(&s[..l2], &f[..l2], "Ethernet header of frame {i}");
            assert_eq!(reference_tcp_sum(&s[l2..]), 0, "TCP checksum of frame {i}");
            let ip = if v6 { 40 } else { 20 };
            let data = &s[l2 + ip + 32..];
            assert_eq!(data, &payload[i * 1400..(i * 1400 + 1400).min(4000)]);
        }
        let last = &segs[2];
        assert_eq!(last[l2 + if v6 { 40 } else { 20 } + 13] & PSH, PSH);
    }
}

#[test]
fn a_frame_without_gso_passes_with_its_checksum_completed_at_frame_offsets() {
    let (mut h, f) = super_frame(false, false, b"control", 1);
    h.gso_type = gso::NONE;
    h.gso_size = 0;
    let segs = cut(&h, &f);
    assert_eq!(segs.len(), 1);
    assert_eq!(reference_tcp_sum(&segs[0][14..]), 0);
    // An ARP frame with no flags passes byte for byte.
    let mut arp = eth(false, 0x0806);
    arp.resize(42, 7);
    assert_eq!(cut(&VnetHdr::default(), &arp), vec![arp.clone()]);
}

#[test]
fn a_super_frame_that_is_not_ip_behind_ethernet_is_refused() {
    let (h, mut f) = super_frame(false, false, &[1u8; 3000], 1);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    assert_eq!(FrameSegmenter::new(&h, &f), Err(OffloadError::BadIp));
    assert!(FrameSegmenter::new(&h, &f[..10]).is_err());
}

#[test]
fn cut_frames_coalesce_back_into_the_super_frame_with_frame_offsets() {
    for (tag, v6) in [(false, false), (true, true)] {
        let payload: Vec<u8> = (0..9000u32).map(|i| (i * 3) as u8).collect();
        let (h, f) = super_frame(tag, v6, &payload, 0xffff_ff00);
        let l2 = if tag { 18 } else { 14 };
        let mut co = FrameCoalescer::new();
        for s in cut(&h, &f) {
            assert!(co.push(&s));
        }
        assert_eq!(co.segments(), 7);
        let out = co.finish().unwrap();
        assert_eq!(out.l2, &f[..l2]);
        assert_eq!(out.frame_len(), f.len());
        assert_eq!(&out.packet[if v6 { 40 } else { 20 } + 32..], &payload[..]);
        let got = VnetHdr::parse(&out.vnet).unwrap();
        assert_eq!(
            got.csum_start, h.csum_start,
            "checksum offset counts from the frame"
        );
        assert_eq!(got.hdr_len, h.hdr_len);
        assert_eq!(got.gso_size, 1400);
        assert_eq!(got.gso_type, h.gso_type);
        assert!(co.is_empty());
    }
}

#[test]
fn frames_with_other_ethernet_headers_are_not_coalesced() {
    let (h, f) = super_frame(false, false, &[9u8; 2800], 1);
    let segs = cut(&h, &f);
    let mut co = FrameCoalescer::new();
    assert!(co.push(&segs[0]));
    let mut other = segs[1].clone();
    other[0] = 0x04; // another destination
    assert!(!co.push(&other));
    let mut arp = eth(false, 0x0806);
    arp.resize(42, 0);
    assert!(!co.push(&arp));
    assert!(co.push(&segs[1]));
    // A single frame comes back as it came, with no GSO.
    let mut one = FrameCoalescer::new();
    assert!(one.push(&segs[0]));
    let out = one.finish().unwrap();
    assert_eq!(VnetHdr::parse(&out.vnet).unwrap(), VnetHdr::default());
    assert_eq!([out.l2, out.packet].concat(), segs[0]);
}

proptest! {
    #[test]
    fn hostile_frames_never_panic(hdr in proptest::collection::vec(any::<u8>(), VNET_HDR_LEN),
                                  frame in proptest::collection::vec(any::<u8>(), 0..300)) {
        let h = VnetHdr::parse(&hdr).unwrap();
        if let Ok(s) = FrameSegmenter::new(&h, &frame) {
            let mut buf = vec![0u8; s.max_len(&frame)];
            let mut co = FrameCoalescer::new();
            for i in 0..s.count().min(64) {
                let n = s.write(&frame, i, &mut buf).unwrap();
                if !co.push(&buf[..n]) {
                    let _ = co.finish();
                    co.push(&buf[..n]);
                }
            }
            let _ = co.finish();
        }
    }
}
