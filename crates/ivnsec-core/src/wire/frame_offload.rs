//! TCP segmentation and coalescing for a TAP interface with offloads: the [`tcp_offload`]
//! machinery of the TUN, for whole Ethernet frames.
//!
//! A TAP opened with `IFF_VNET_HDR` and `TUNSETOFFLOAD` hands out frames behind a
//! `virtio_net_hdr` whose checksum offsets count from the start of the Ethernet header, and may
//! hand out TCP super-frames of up to 64 KiB (the IP part). [`FrameSegmenter`] cuts such a
//! super-frame into frames the protected link carries: every frame has the super-frame's
//! Ethernet header (and VLAN tag, if any) in front of one TCP segment cut as
//! [`Segmenter`] cuts a TUN's. [`FrameCoalescer`] merges verified frames of one TCP flow with
//! the same Ethernet header back into one super-frame for the TAP (receive-side GRO).
//!
//! Pure code, like [`tcp_offload`]: every field is bound-checked; nothing panics or allocates
//! per frame.
//!
//! [`tcp_offload`]: super::tcp_offload

use super::bytes::{be16, head, put, tail};
use super::tcp_offload::{
    Coalescer, F_NEEDS_CSUM, OffloadError, Segmenter, VNET_HDR_LEN, VnetHdr, gso,
};

/// Octets of an untagged Ethernet header.
const ETH_HEADER: usize = super::ethernet::HEADER_LEN;
/// Octets of one 802.1Q / 802.1ad tag.
const VLAN_TAG: usize = 4;
/// The longest Ethernet header a super-frame may have here: one tag.
pub const MAX_L2_HEADER: usize = ETH_HEADER + VLAN_TAG;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86DD;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88A8;

/// The length of the Ethernet header in front of an IPv4 or IPv6 packet in `frame`: 14, or 18
/// with one VLAN tag. `None` for any other frame (too short, another EtherType, two tags).
pub fn ip_header_offset(frame: &[u8]) -> Option<usize> {
    if frame.len() < ETH_HEADER {
        return None;
    }
    let (at, ty) = match be16(frame, 12) {
        ETHERTYPE_VLAN | ETHERTYPE_QINQ if frame.len() >= MAX_L2_HEADER => {
            (MAX_L2_HEADER, be16(frame, 16))
        }
        t => (ETH_HEADER, t),
    };
    matches!(ty, ETHERTYPE_IPV4 | ETHERTYPE_IPV6).then_some(at)
}

/// A frame read from a TAP with offloads, checked and ready to be written out as one or more
/// frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSegmenter {
    seg: Segmenter,
    /// Where the IP packet starts in the frame; 0 for a frame passed whole (no GSO).
    l2: usize,
}

impl FrameSegmenter {
    /// Checks the vnet header `hdr` against `frame` (what followed it). A frame without GSO
    /// passes as one (its checksum completed if `NEEDS_CSUM`: the offsets count from the
    /// frame's start); a TCP super-frame must carry IPv4 or IPv6 behind an Ethernet header
    /// with at most one VLAN tag, and is cut into `ceil(payload / gso_size)` frames.
    pub fn new(hdr: &VnetHdr, frame: &[u8]) -> Result<FrameSegmenter, OffloadError> {
        if hdr.gso_type & !gso::ECN == gso::NONE {
            return Ok(FrameSegmenter {
                seg: Segmenter::new(hdr, frame)?,
                l2: 0,
            });
        }
        let l2 = ip_header_offset(frame).ok_or(OffloadError::BadIp)?;
        Ok(FrameSegmenter {
            seg: Segmenter::new(hdr, tail(frame, l2))?,
            l2,
        })
    }

    /// How many frames [`write`](Self::write) makes.
    pub fn count(&self) -> usize {
        self.seg.count()
    }

    /// The longest frame [`write`](Self::write) makes.
    pub fn max_len(&self, frame: &[u8]) -> usize {
        self.l2 + self.seg.max_len(tail(frame, self.l2))
    }

    /// Writes frame `i` (< [`count`](Self::count)) of `frame` to the front of `dst` and
    /// returns its length; `None` when `dst` is too short or `i` out of range.
    pub fn write(&self, frame: &[u8], i: usize, dst: &mut [u8]) -> Option<usize> {
        let (l2_hdr, pkt) = (frame.get(..self.l2)?, frame.get(self.l2..)?);
        let (d_hdr, d_pkt) = dst.split_at_mut_checked(self.l2)?;
        let n = self.seg.write(pkt, i, d_pkt)?;
        d_hdr.copy_from_slice(l2_hdr);
        Some(self.l2 + n)
    }
}

/// Receive-side coalescing (GRO) of verified frames for a TAP: consecutive in-order TCP
/// segments of one flow behind the same Ethernet header become one super-frame
/// ([`Coalescer`] on the IP part). One buffer of 64 KiB, allocated once.
#[derive(Debug, Default)]
pub struct FrameCoalescer {
    co: Coalescer,
    l2: [u8; MAX_L2_HEADER],
    l2_len: usize,
}

/// A super-frame ready for one TAP write: the three parts in order.
#[derive(Debug)]
pub struct CoalescedFrame<'a> {
    /// The vnet header, its checksum offset counted from the frame's start.
    pub vnet: [u8; VNET_HDR_LEN],
    /// The Ethernet header (with its VLAN tag, if any).
    pub l2: &'a [u8],
    /// The IP packet.
    pub packet: &'a [u8],
}

impl CoalescedFrame<'_> {
    /// Octets of the frame behind the vnet header.
    pub fn frame_len(&self) -> usize {
        self.l2.len() + self.packet.len()
    }
}

impl FrameCoalescer {
    pub fn new() -> FrameCoalescer {
        FrameCoalescer::default()
    }

    /// Whether no frame is held.
    pub fn is_empty(&self) -> bool {
        self.co.is_empty()
    }

    /// Frames held.
    pub fn segments(&self) -> usize {
        self.co.segments()
    }

    /// Takes `frame` if it can start a super-frame (when empty) or continue the one held;
    /// `false` otherwise: then [`finish`](Self::finish) what is held first and try again, or
    /// pass `frame` alone if it cannot start one either.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        let Some(l2) = ip_header_offset(frame) else {
            return false;
        };
        let (hdr, pkt) = (head(frame, l2), tail(frame, l2));
        if self.co.is_empty() {
            if !self.co.push(pkt) {
                return false;
            }
            put(&mut self.l2, 0, hdr);
            self.l2_len = l2;
            return true;
        }
        if self.l2.get(..self.l2_len) != Some(hdr) {
            return false;
        }
        self.co.push(pkt)
    }

    /// Ends the super-frame held and returns its parts for one TAP write (a single frame as
    /// it came, with a vnet header saying no GSO); `None` when empty.
    pub fn finish(&mut self) -> Option<CoalescedFrame<'_>> {
        let l2 = self.l2_len;
        let out = self.co.finish()?;
        let mut hdr = VnetHdr::parse(out).ok()?;
        if hdr.flags & F_NEEDS_CSUM != 0 {
            // The TUN's offsets count from the IP header; the TAP's from the frame's start.
            hdr.csum_start = hdr.csum_start.checked_add(l2 as u16)?;
        }
        if hdr.gso_type != gso::NONE {
            hdr.hdr_len = hdr.hdr_len.checked_add(l2 as u16)?;
        }
        let mut vnet = [0u8; VNET_HDR_LEN];
        hdr.emit(&mut vnet);
        Some(CoalescedFrame {
            vnet,
            l2: self.l2.get(..l2)?,
            packet: tail(out, VNET_HDR_LEN),
        })
    }
}

#[cfg(test)]
mod tests;
