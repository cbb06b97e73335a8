//! TCP segmentation and coalescing for a TUN interface with offloads (`IFF_VNET_HDR`,
//! `TUNSETOFFLOAD`), the way a virtio-net device does it in hardware: every packet read from or
//! written to such a TUN starts with a [`VnetHdr`] (the legacy 10-byte `virtio_net_hdr`, in the
//! host's byte order).
//!
//! - **Segmentation** ([`Segmenter`]): a packet the host reads out of the TUN may be a TCP
//!   *super-packet* of up to 64 KiB (`gso_type` TCPV4/TCPV6) whose checksum is left to the
//!   device (`NEEDS_CSUM`). [`Segmenter::write`] cuts it into `gso_size`-byte TCP segments as
//!   the kernel's `tcp_gso_segment` would: IPv4 total length, identification (+1 per segment)
//!   and header checksum, IPv6 payload length, TCP sequence numbers, PSH and FIN only on the
//!   last segment, CWR only on the first, and a full TCP checksum on each. A packet without GSO
//!   whose checksum is partial gets it completed.
//! - **Coalescing** ([`Coalescer`]): consecutive in-order TCP segments of one flow (same
//!   addresses, ports, header fields, options, ACK and window; each segment's sequence number
//!   where the previous one ended; every segment but the last of the same size; checksums
//!   valid) are merged into one super-packet written to the TUN with `gso_type`
//!   TCPV4/TCPV6, `gso_size` and `NEEDS_CSUM` — receive-side GRO, so the host's TCP stack runs
//!   once per super-packet instead of once per segment. Anything else passes alone.
//!
//! The vnet header comes from the kernel, which is trusted, but not fully: every field is
//! bound-checked against the packet ([`Segmenter::new`] refuses what does not fit, never
//! panics and never allocates). Pure code: the system calls are in `ivnsec-net`.

use super::bytes::{array, be16, byte, head, put, put_byte, range, range_mut, tail};
use alloc::vec;
use alloc::vec::Vec;

use super::ip::{self, fold, ones_sum, protocol};

/// Length of the legacy `virtio_net_hdr` in front of every packet on a TUN opened with
/// `IFF_VNET_HDR` (the kernel's default `TUNSETVNETHDRSZ`).
pub const VNET_HDR_LEN: usize = 10;
/// `virtio_net_hdr.flags`: the checksum from `csum_start` on is left to the device; the field
/// at `csum_start + csum_offset` holds the pseudo-header sum.
pub const F_NEEDS_CSUM: u8 = 1;
/// `virtio_net_hdr.flags`: the checksum was verified.
pub const F_DATA_VALID: u8 = 2;
/// `virtio_net_hdr.gso_type` values.
pub mod gso {
    pub const NONE: u8 = 0;
    pub const TCPV4: u8 = 1;
    pub const UDP: u8 = 3;
    pub const TCPV6: u8 = 4;
    /// Bit set with TCPV4/TCPV6 when the super-packet carries CWR (RFC 3168).
    pub const ECN: u8 = 0x80;
}
/// Largest packet a TUN read or write carries after the vnet header (the IPv4 total length's
/// limit; an IPv6 super-packet's payload length has the same).
pub const MAX_SUPER_PACKET: usize = 65_535;

const TCP_MIN_HEADER: usize = 20;
const TCP_SEQ: core::ops::Range<usize> = 4..8;
const TCP_ACK: core::ops::Range<usize> = 8..12;
const TCP_FLAGS: usize = 13;
const TCP_WINDOW: core::ops::Range<usize> = 14..16;
const TCP_CSUM_OFFSET: usize = 16;
const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const CWR: u8 = 0x80;

/// The sequence number of the TCP header at `pkt[t..]` (the caller has checked it is whole).
fn tcp_seq(pkt: &[u8], t: usize) -> u32 {
    u32::from_be_bytes(array(pkt, t + TCP_SEQ.start))
}

/// Why a packet from the TUN cannot be segmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffloadError {
    /// Shorter than the vnet header, or than the headers it describes.
    Truncated,
    /// A `gso_type` other than none, TCPV4 or TCPV6 (none other was offered), or `gso_size` 0.
    UnsupportedGso,
    /// The IP header is not one a TCP super-packet can have (version, options length, IPv6
    /// extension headers, a fragment, a length field that does not match the packet).
    BadIp,
    /// The TCP header is malformed (data offset), or the protocol is not TCP.
    BadTcp,
    /// `csum_start` / `csum_offset` point outside the packet.
    BadChecksumOffsets,
    /// More segments than the kernel's limit (`gso_size` too small for the packet).
    TooManySegments,
}

impl core::fmt::Display for OffloadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            OffloadError::Truncated => "truncated packet or headers",
            OffloadError::UnsupportedGso => "unsupported GSO type or size",
            OffloadError::BadIp => "bad IP header for a TCP super-packet",
            OffloadError::BadTcp => "bad TCP header",
            OffloadError::BadChecksumOffsets => "checksum offsets outside the packet",
            OffloadError::TooManySegments => "more segments than a super-packet may have",
        })
    }
}

impl core::error::Error for OffloadError {}

/// Most segments one super-packet may be cut into (the kernel's `GSO_MAX_SEGS`).
pub const MAX_SEGMENTS: usize = 65_535;

/// The legacy `virtio_net_hdr` (host byte order, as a little-endian host's TUN uses it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// Reads the header at the front of `buf`.
    pub fn parse(buf: &[u8]) -> Result<VnetHdr, OffloadError> {
        let b = buf.get(..VNET_HDR_LEN).ok_or(OffloadError::Truncated)?;
        let u = |i: usize| u16::from_ne_bytes(array(b, i));
        Ok(VnetHdr {
            flags: byte(b, 0),
            gso_type: byte(b, 1),
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    /// Writes the header to the front of `buf` (at least [`VNET_HDR_LEN`] bytes).
    pub fn emit(&self, buf: &mut [u8]) {
        put_byte(buf, 0, self.flags);
        put_byte(buf, 1, self.gso_type);
        put(buf, 2, &self.hdr_len.to_ne_bytes());
        put(buf, 4, &self.gso_size.to_ne_bytes());
        put(buf, 6, &self.csum_start.to_ne_bytes());
        put(buf, 8, &self.csum_offset.to_ne_bytes());
    }
}

/// The one's-complement sum of the TCP pseudo-header of a `tcp_len`-byte segment of the IP
/// packet whose header is at the front of `pkt` (`v6`: IPv6 with no extension header).
fn pseudo_sum(pkt: &[u8], v6: bool, tcp_len: usize) -> u64 {
    let addrs = if v6 {
        range(pkt, 8..40)
    } else {
        range(pkt, 12..20)
    };
    let acc = ones_sum(addrs, 0);
    // protocol and length as two 16-bit words (a 32-bit TCP length for IPv6 has a zero high half
    // here: ≤ 65535).
    let words = [0, protocol::TCP, (tcp_len >> 8) as u8, tcp_len as u8];
    ones_sum(&words, acc)
}

/// The headers of an IP packet carrying TCP at its front, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TcpHeaders {
    v6: bool,
    /// IP header length (20-60 for IPv4, 40 for IPv6).
    ip_len: usize,
    /// TCP header length (20-60).
    tcp_len: usize,
}

impl TcpHeaders {
    fn total(&self) -> usize {
        self.ip_len + self.tcp_len
    }
}

/// Parses the IP and TCP headers of `pkt` (IPv4 with any options but not a fragment, or IPv6
/// whose next header is TCP) and checks that the IP length field covers exactly `pkt`.
fn tcp_headers(pkt: &[u8]) -> Result<TcpHeaders, OffloadError> {
    let first = *pkt.first().ok_or(OffloadError::Truncated)?;
    let (v6, ip_len) = match first >> 4 {
        4 => {
            let ihl = usize::from(first & 0x0f) * 4;
            if ihl < ip::IPV4_HEADER_LEN || pkt.len() < ihl {
                return Err(OffloadError::BadIp);
            }
            let total = usize::from(be16(pkt, 2));
            // Not a fragment: MF clear and offset 0.
            if total != pkt.len() || be16(pkt, 6) & 0x3fff != 0 {
                return Err(OffloadError::BadIp);
            }
            if byte(pkt, 9) != protocol::TCP {
                return Err(OffloadError::BadTcp);
            }
            (false, ihl)
        }
        6 => {
            if pkt.len() < ip::IPV6_HEADER_LEN {
                return Err(OffloadError::BadIp);
            }
            let payload = usize::from(be16(pkt, 4));
            if payload + ip::IPV6_HEADER_LEN != pkt.len() {
                return Err(OffloadError::BadIp);
            }
            if byte(pkt, 6) != protocol::TCP {
                return Err(OffloadError::BadTcp);
            }
            (true, ip::IPV6_HEADER_LEN)
        }
        _ => return Err(OffloadError::BadIp),
    };
    let off_byte = *pkt.get(ip_len + 12).ok_or(OffloadError::Truncated)?;
    let tcp_len = usize::from(off_byte >> 4) * 4;
    if tcp_len < TCP_MIN_HEADER || pkt.len() < ip_len + tcp_len {
        return Err(OffloadError::BadTcp);
    }
    Ok(TcpHeaders {
        v6,
        ip_len,
        tcp_len,
    })
}

/// A packet read from the TUN, checked and ready to be written out as one or more packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segmenter {
    kind: Kind,
    count: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Passed as it is.
    Plain,
    /// Passed as it is once its checksum is completed: the 16-bit field at `field` holds the
    /// sum of everything from `start`.
    Checksum { start: usize, field: usize },
    /// A TCP super-packet cut into `count` segments of `size` payload bytes.
    Tcp {
        h: TcpHeaders,
        size: usize,
        ecn: bool,
    },
}

impl Segmenter {
    /// Checks the vnet header `hdr` against `pkt` (what followed it). A packet without GSO
    /// passes as one (its checksum completed if `NEEDS_CSUM`); a TCP super-packet is checked
    /// (IP and TCP headers, lengths) and cut into `ceil(payload / gso_size)` segments.
    pub fn new(hdr: &VnetHdr, pkt: &[u8]) -> Result<Segmenter, OffloadError> {
        let gso_type = hdr.gso_type & !gso::ECN;
        if gso_type == gso::NONE {
            let kind = if hdr.flags & F_NEEDS_CSUM != 0 {
                let start = usize::from(hdr.csum_start);
                let field = start + usize::from(hdr.csum_offset);
                if field + 2 > pkt.len() {
                    return Err(OffloadError::BadChecksumOffsets);
                }
                Kind::Checksum { start, field }
            } else {
                Kind::Plain
            };
            return Ok(Segmenter { kind, count: 1 });
        }
        if gso_type != gso::TCPV4 && gso_type != gso::TCPV6 {
            return Err(OffloadError::UnsupportedGso);
        }
        let size = usize::from(hdr.gso_size);
        if size == 0 {
            return Err(OffloadError::UnsupportedGso);
        }
        let h = tcp_headers(pkt)?;
        if h.v6 != (gso_type == gso::TCPV6) {
            return Err(OffloadError::BadIp);
        }
        let payload = pkt.len() - h.total();
        let count = payload.div_ceil(size).max(1);
        if count > MAX_SEGMENTS {
            return Err(OffloadError::TooManySegments);
        }
        Ok(Segmenter {
            kind: Kind::Tcp {
                h,
                size,
                ecn: hdr.gso_type & gso::ECN != 0,
            },
            count,
        })
    }

    /// How many packets [`write`](Self::write) makes.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The longest packet [`write`](Self::write) makes (size `dst` for it).
    pub fn max_len(&self, pkt: &[u8]) -> usize {
        match self.kind {
            Kind::Tcp { h, size, .. } => (h.total() + size).min(pkt.len()),
            _ => pkt.len(),
        }
    }

    /// Writes packet `i` (< [`count`](Self::count)) of `pkt` to the front of `dst` and returns
    /// its length; `None` when `dst` is too short or `i` out of range.
    pub fn write(&self, pkt: &[u8], i: usize, dst: &mut [u8]) -> Option<usize> {
        if i >= self.count {
            return None;
        }
        match self.kind {
            Kind::Plain => {
                dst.get_mut(..pkt.len())?.copy_from_slice(pkt);
                Some(pkt.len())
            }
            Kind::Checksum { start, field } => {
                let out = dst.get_mut(..pkt.len())?;
                out.copy_from_slice(pkt);
                let c = !fold(ones_sum(tail(out, start), 0));
                put(out, field, &c.to_be_bytes());
                Some(pkt.len())
            }
            Kind::Tcp { h, size, ecn } => {
                let hl = h.total();
                let from = hl + i * size;
                let to = (from + size).min(pkt.len());
                let len = hl + (to - from);
                let out = dst.get_mut(..len)?;
                let (headers, data) = (pkt.get(..hl)?, pkt.get(from..to)?);
                put(out, 0, headers);
                put(out, hl, data);
                let last = i + 1 == self.count;
                // IP header.
                if h.v6 {
                    let pl = (len - ip::IPV6_HEADER_LEN) as u16;
                    put(out, 4, &pl.to_be_bytes());
                } else {
                    put(out, 2, &(len as u16).to_be_bytes());
                    let id = be16(pkt, 4).wrapping_add(i as u16);
                    put(out, 4, &id.to_be_bytes());
                    ip::fill_ipv4_checksum(range_mut(out, 0..h.ip_len));
                }
                // TCP header.
                let t = h.ip_len;
                let seq = tcp_seq(pkt, t).wrapping_add((i * size) as u32);
                put(out, t + TCP_SEQ.start, &seq.to_be_bytes());
                let mut flags = byte(pkt, t + TCP_FLAGS);
                if !last {
                    flags &= !(FIN | PSH);
                }
                if i > 0 && (ecn || flags & CWR != 0) {
                    flags &= !CWR;
                }
                put_byte(out, t + TCP_FLAGS, flags);
                let tcp_len = len - t;
                put(out, t + TCP_CSUM_OFFSET, &[0, 0]);
                let sum = ones_sum(tail(out, t), pseudo_sum(out, h.v6, tcp_len));
                let c = !fold(sum);
                put(out, t + TCP_CSUM_OFFSET, &c.to_be_bytes());
                Some(len)
            }
        }
    }
}

/// Whether the TCP checksum of the segment `pkt` (headers `h`) is right.
fn tcp_checksum_ok(pkt: &[u8], h: &TcpHeaders) -> bool {
    let tcp_len = pkt.len() - h.ip_len;
    fold(ones_sum(
        tail(pkt, h.ip_len),
        pseudo_sum(pkt, h.v6, tcp_len),
    )) == 0xffff
}

/// The super-packet being built.
#[derive(Clone, Copy, Debug)]
struct Flow {
    h: TcpHeaders,
    /// Payload bytes of the first segment: every segment but the last has as many.
    size: usize,
    next_seq: u32,
    segments: usize,
    /// PSH seen or a short segment merged: nothing more may follow.
    closed: bool,
    psh: bool,
}

/// Receive-side coalescing (GRO) of consecutive in-order TCP segments of one flow into one
/// super-packet behind a vnet header. One buffer of [`VNET_HDR_LEN`] + [`MAX_SUPER_PACKET`]
/// bytes, allocated once.
#[derive(Debug)]
pub struct Coalescer {
    buf: Vec<u8>,
    len: usize,
    flow: Option<Flow>,
}

impl Default for Coalescer {
    fn default() -> Self {
        Self::new()
    }
}

/// A TCP segment that may be coalesced: only ACK (and PSH) set, some payload, checksum right.
fn mergeable(pkt: &[u8]) -> Option<(TcpHeaders, usize, u8)> {
    let h = tcp_headers(pkt).ok()?;
    let flags = byte(pkt, h.ip_len + TCP_FLAGS);
    if flags & !(ACK | PSH) != 0 || flags & ACK == 0 || flags & (SYN | RST | FIN) != 0 {
        return None;
    }
    let payload = pkt.len() - h.total();
    if payload == 0 || !tcp_checksum_ok(pkt, &h) {
        return None;
    }
    Some((h, payload, flags))
}

impl Coalescer {
    pub fn new() -> Coalescer {
        Coalescer {
            buf: vec![0; VNET_HDR_LEN + MAX_SUPER_PACKET],
            len: 0,
            flow: None,
        }
    }

    /// Whether no packet is held.
    pub fn is_empty(&self) -> bool {
        self.flow.is_none()
    }

    /// Segments held.
    pub fn segments(&self) -> usize {
        self.flow.map_or(0, |f| f.segments)
    }

    /// Takes the IP packet `pkt` if it can start a super-packet (when empty) or continue the one
    /// held; `false` otherwise: then [`finish`](Self::finish) what is held first and try again,
    /// or pass `pkt` alone if it cannot start one either.
    pub fn push(&mut self, pkt: &[u8]) -> bool {
        let Some((h, payload, flags)) = mergeable(pkt) else {
            return false;
        };
        let t = h.ip_len;
        let seq = tcp_seq(pkt, t);
        let Some(mut f) = self.flow else {
            put(&mut self.buf, VNET_HDR_LEN, pkt);
            self.len = pkt.len();
            self.flow = Some(Flow {
                h,
                size: payload,
                next_seq: seq.wrapping_add(payload as u32),
                segments: 1,
                closed: flags & PSH != 0,
                psh: flags & PSH != 0,
            });
            return true;
        };
        if f.closed
            || h != f.h
            || seq != f.next_seq
            || payload > f.size
            || self.len + payload > MAX_SUPER_PACKET
        {
            return false;
        }
        let held = range(&self.buf, VNET_HDR_LEN..VNET_HDR_LEN + h.total());
        // Both hold whole headers of the same shape (`h == f.h`): the ranges are inside both.
        let eq = |r: core::ops::Range<usize>| matches!((held.get(r.clone()), pkt.get(r)), (Some(a), Some(b)) if a == b);
        let same = if h.v6 {
            // Version, traffic class, flow label; next header, hop limit; addresses.
            eq(0..4) && eq(6..40)
        } else {
            // Version/IHL and TOS; flags (DF) with offset; TTL and protocol; addresses; options.
            eq(0..2) && eq(6..10) && eq(12..h.ip_len)
        };
        // Ports; ACK number; data offset; window; urgent pointer; options.
        let same = same
            && eq(t..t + 4)
            && eq(t + TCP_ACK.start..t + TCP_FLAGS)
            && eq(t + TCP_WINDOW.start..t + TCP_WINDOW.end)
            && eq(t + 18..t + h.tcp_len);
        if !same {
            return false;
        }
        let at = VNET_HDR_LEN + self.len;
        put(&mut self.buf, at, tail(pkt, h.total()));
        self.len += payload;
        f.next_seq = seq.wrapping_add(payload as u32);
        f.segments += 1;
        f.psh = flags & PSH != 0;
        f.closed = f.psh || payload < f.size;
        self.flow = Some(f);
        true
    }

    /// Ends the super-packet held and returns it behind its vnet header (a single segment as it
    /// came, with a header saying no GSO), ready for one TUN write; `None` when empty. The next
    /// [`push`](Self::push) starts a new one.
    pub fn finish(&mut self) -> Option<&[u8]> {
        let f = self.flow.take()?;
        let len = self.len;
        let pkt = range_mut(&mut self.buf, VNET_HDR_LEN..VNET_HDR_LEN + len);
        let h = f.h;
        let hdr = if f.segments == 1 {
            VnetHdr::default()
        } else {
            if h.v6 {
                let pl = (len - ip::IPV6_HEADER_LEN) as u16;
                put(pkt, 4, &pl.to_be_bytes());
            } else {
                put(pkt, 2, &(len as u16).to_be_bytes());
                ip::fill_ipv4_checksum(range_mut(pkt, 0..h.ip_len));
            }
            let t = h.ip_len;
            if f.psh {
                if let Some(b) = pkt.get_mut(t + TCP_FLAGS) {
                    *b |= PSH;
                }
            }
            // The device (here: the kernel) completes the checksum; the field holds the
            // pseudo-header sum, as a virtio device receives it.
            let partial = fold(pseudo_sum(pkt, h.v6, len - t));
            put(pkt, t + TCP_CSUM_OFFSET, &partial.to_be_bytes());
            VnetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: if h.v6 { gso::TCPV6 } else { gso::TCPV4 },
                hdr_len: h.total() as u16,
                gso_size: f.size as u16,
                csum_start: t as u16,
                csum_offset: TCP_CSUM_OFFSET as u16,
            }
        };
        hdr.emit(&mut self.buf);
        self.len = 0;
        Some(head(&self.buf, VNET_HDR_LEN + len))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 1071 by 16-bit words (the independent computation): the TCP checksum over the
    /// pseudo-header and the segment with its checksum field as it is.
    pub(crate) fn reference_tcp_sum(pkt: &[u8]) -> u16 {
        let v6 = pkt[0] >> 4 == 6;
        let ihl = if v6 { 40 } else { usize::from(pkt[0] & 15) * 4 };
        let mut pseudo = Vec::new();
        if v6 {
            pseudo.extend_from_slice(&pkt[8..40]);
            pseudo.extend_from_slice(&((pkt.len() - ihl) as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, 6]);
        } else {
            pseudo.extend_from_slice(&pkt[12..20]);
            pseudo.extend_from_slice(&[0, 6]);
            pseudo.extend_from_slice(&((pkt.len() - ihl) as u16).to_be_bytes());
        }
        pseudo.extend_from_slice(&pkt[ihl..]);
        ip::internet_checksum(&pseudo)
    }

    /// A TCP packet as the kernel hands a super-packet to the TUN: right lengths, IPv4 header
    /// checksum right, TCP checksum field holding the pseudo-header sum.
    pub(crate) fn super_packet(
        v6: bool,
        opts: usize,
        payload: &[u8],
        flags: u8,
        seq: u32,
    ) -> Vec<u8> {
        let ihl = if v6 { 40 } else { 20 };
        let th = 20 + opts;
        let len = ihl + th + payload.len();
        let mut p = vec![0u8; len];
        if v6 {
            p[0] = 0x60;
            p[1] = 0x01;
            p[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
            p[6] = 6;
            p[7] = 64;
            p[8..24].copy_from_slice(&[0xfd, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            p[24..40].copy_from_slice(&[0xfd, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        } else {
            p[0] = 0x45;
            p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            p[4..6].copy_from_slice(&0xfff0u16.to_be_bytes());
            p[6] = 0x40;
            p[8] = 64;
            p[9] = 6;
            p[12..16].copy_from_slice(&[10, 9, 0, 1]);
            p[16..20].copy_from_slice(&[10, 9, 0, 2]);
            ip::fill_ipv4_checksum(&mut p[..20]);
        }
        let t = ihl;
        p[t..t + 2].copy_from_slice(&40000u16.to_be_bytes());
        p[t + 2..t + 4].copy_from_slice(&5201u16.to_be_bytes());
        p[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
        p[t + 8..t + 12].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        p[t + 12] = ((th / 4) as u8) << 4;
        p[t + 13] = flags;
        p[t + 14..t + 16].copy_from_slice(&502u16.to_be_bytes());
        for (i, b) in p[t + 20..t + th].iter_mut().enumerate() {
            *b = if i % 4 == 0 { 1 } else { i as u8 };
        }
        p[t + th..].copy_from_slice(payload);
        let partial = fold(pseudo_sum(&p, v6, len - t));
        p[t + 16..t + 18].copy_from_slice(&partial.to_be_bytes());
        p
    }

    pub(crate) fn gso_hdr(v6: bool, opts: usize, size: u16) -> VnetHdr {
        let ihl: u16 = if v6 { 40 } else { 20 };
        VnetHdr {
            flags: F_NEEDS_CSUM,
            gso_type: if v6 { gso::TCPV6 } else { gso::TCPV4 },
            hdr_len: ihl + 20 + opts as u16,
            gso_size: size,
            csum_start: ihl,
            csum_offset: 16,
        }
    }

    fn cut(hdr: &VnetHdr, p: &[u8]) -> Vec<Vec<u8>> {
        let s = Segmenter::new(hdr, p).unwrap();
        let mut out = Vec::new();
        let mut buf = vec![0u8; s.max_len(p)];
        for i in 0..s.count() {
            let n = s.write(p, i, &mut buf).unwrap();
            out.push(buf[..n].to_vec());
        }
        out
    }

    #[test]
    fn vnet_header_round_trips_and_short_input_is_refused() {
        let h = gso_hdr(false, 12, 1394);
        let mut b = [0u8; VNET_HDR_LEN];
        h.emit(&mut b);
        assert_eq!(VnetHdr::parse(&b), Ok(h));
        assert_eq!(VnetHdr::parse(&b[..9]), Err(OffloadError::Truncated));
    }

    #[test]
    fn a_super_packet_is_cut_like_the_kernel_cuts_it() {
        let payload: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let p = super_packet(false, 12, &payload, ACK | PSH | FIN, 0xffff_fc00);
        let segs = cut(&gso_hdr(false, 12, 1400), &p);
        assert_eq!(segs.len(), 3);
        let lens: Vec<usize> = segs.iter().map(|s| s.len()).collect();
        assert_eq!(lens, [1452, 1452, 252]);
        for (i, s) in segs.iter().enumerate() {
            assert_eq!(
                ip::internet_checksum(&s[..20]),
                0,
                "IPv4 header checksum {i}"
            );
            assert_eq!(usize::from(u16::from_be_bytes([s[2], s[3]])), s.len());
            assert_eq!(
                u16::from_be_bytes([s[4], s[5]]),
                0xfff0u16.wrapping_add(i as u16)
            );
            assert_eq!(reference_tcp_sum(s), 0, "TCP checksum {i}");
            let seq = u32::from_be_bytes([s[24], s[25], s[26], s[27]]);
            assert_eq!(seq, 0xffff_fc00u32.wrapping_add(1400 * i as u32));
            let last = i == 2;
            assert_eq!(s[33] & (PSH | FIN) != 0, last, "PSH/FIN only on the last");
            assert_eq!(s[33] & ACK, ACK);
            assert_eq!(&s[52..], &payload[i * 1400..(i * 1400 + 1400).min(3000)]);
        }
    }

    #[test]
    fn cwr_stays_on_the_first_segment_only() {
        let p = super_packet(true, 0, &[5u8; 2500], ACK | CWR, 1);
        let mut h = gso_hdr(true, 0, 1000);
        h.gso_type |= gso::ECN;
        let segs = cut(&h, &p);
        assert_eq!(segs.len(), 3);
        assert_eq!(segs[0][53] & CWR, CWR);
        assert!(segs[1..].iter().all(|s| s[53] & CWR == 0));
        assert!(segs.iter().all(|s| reference_tcp_sum(s) == 0));
    }

    #[test]
    fn a_partial_checksum_without_gso_is_completed() {
        let p = super_packet(false, 0, b"hello", ACK | PSH, 9);
        let h = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 20,
            csum_offset: 16,
            ..VnetHdr::default()
        };
        let segs = cut(&h, &p);
        assert_eq!(segs.len(), 1);
        assert_eq!(reference_tcp_sum(&segs[0]), 0);
        // A packet without flags passes byte for byte.
        assert_eq!(cut(&VnetHdr::default(), &p), vec![p.clone()]);
    }

    #[test]
    fn bad_headers_are_refused_without_panic() {
        let p = super_packet(false, 0, &[1u8; 3000], ACK, 9);
        let ok = gso_hdr(false, 0, 1000);
        let bad_offsets = VnetHdr {
            flags: F_NEEDS_CSUM,
            csum_start: 3030,
            csum_offset: 16,
            ..VnetHdr::default()
        };
        assert_eq!(
            Segmenter::new(&bad_offsets, &p),
            Err(OffloadError::BadChecksumOffsets)
        );
        let udp = VnetHdr {
            gso_type: gso::UDP,
            ..ok
        };
        assert_eq!(Segmenter::new(&udp, &p), Err(OffloadError::UnsupportedGso));
        let zero = VnetHdr { gso_size: 0, ..ok };
        assert_eq!(Segmenter::new(&zero, &p), Err(OffloadError::UnsupportedGso));
        let v6 = VnetHdr {
            gso_type: gso::TCPV6,
            ..ok
        };
        assert_eq!(Segmenter::new(&v6, &p), Err(OffloadError::BadIp));
        assert_eq!(Segmenter::new(&ok, &p[..2000]), Err(OffloadError::BadIp));
        assert_eq!(Segmenter::new(&ok, &[]), Err(OffloadError::Truncated));
        let s = Segmenter::new(&ok, &p).unwrap();
        assert_eq!(s.write(&p, 3, &mut [0u8; 2000]), None);
        assert_eq!(s.write(&p, 0, &mut [0u8; 100]), None);
    }

    #[test]
    fn other_flows_gaps_and_flags_are_not_coalesced() {
        let a = super_packet(false, 0, &[1u8; 1000], ACK, 100);
        let b = super_packet(false, 0, &[2u8; 1000], ACK, 1100);
        let gap = super_packet(false, 0, &[2u8; 1000], ACK, 2200);
        let syn = super_packet(false, 0, &[2u8; 1000], ACK | SYN, 1100);
        let mut c = Coalescer::new();
        let fix = |mut p: Vec<u8>| {
            let s = cut(&VnetHdr::default(), &p);
            p.clone_from(&s[0]);
            let t = 20;
            p[t + 16..t + 18].fill(0);
            let sum = !fold(ones_sum(&p[t..], pseudo_sum(&p, false, p.len() - t)));
            p[t + 16..t + 18].copy_from_slice(&sum.to_be_bytes());
            p
        };
        let (a, b, gap, syn) = (fix(a), fix(b), fix(gap), fix(syn));
        assert!(c.push(&a));
        assert!(!c.push(&gap), "sequence gap");
        assert!(!c.push(&syn), "SYN");
        let mut bad = b.clone();
        bad[100] ^= 1;
        assert!(!c.push(&bad), "bad checksum");
        let mut other = b.clone();
        other[21] ^= 1; // source port
        let t = 20;
        other[t + 16..t + 18].fill(0);
        let sum = !fold(ones_sum(
            &other[t..],
            pseudo_sum(&other, false, other.len() - t),
        ));
        other[t + 16..t + 18].copy_from_slice(&sum.to_be_bytes());
        assert!(!c.push(&other), "other flow");
        assert!(c.push(&b));
        assert_eq!(c.segments(), 2);
        let out = c.finish().unwrap().to_vec();
        let h = VnetHdr::parse(&out).unwrap();
        assert_eq!(
            (h.gso_type, h.gso_size, h.flags),
            (gso::TCPV4, 1000, F_NEEDS_CSUM)
        );
        assert_eq!(out.len(), VNET_HDR_LEN + 40 + 2000);
        assert!(c.is_empty());
        // A single packet comes back as it was, behind a header saying no GSO.
        assert!(c.push(&a));
        let one = c.finish().unwrap();
        assert_eq!(VnetHdr::parse(one).unwrap(), VnetHdr::default());
        assert_eq!(&one[VNET_HDR_LEN..], &a[..]);
        assert!(c.finish().is_none());
    }

    proptest! {
        /// Cutting a super-packet and coalescing the segments gives back the same bytes and the
        /// same vnet header; every segment's checksums agree with RFC 1071 computed by words.
        #[test]
        fn segment_then_coalesce_is_the_identity(
            v6 in any::<bool>(),
            opts in 0usize..=10,
            len in 1usize..=60_000,
            size in 200u16..=1460,
            seq in any::<u32>(),
            psh in any::<bool>(),
            fill in any::<u8>(),
        ) {
            let opts = opts * 4;
            let payload: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(31) ^ fill).collect();
            let flags = ACK | if psh { PSH } else { 0 };
            let p = super_packet(v6, opts, &payload, flags, seq);
            let hdr = gso_hdr(v6, opts, size);
            let segs = cut(&hdr, &p);
            prop_assert_eq!(segs.len(), len.div_ceil(usize::from(size)));
            let mut c = Coalescer::new();
            for s in &segs {
                prop_assert_eq!(reference_tcp_sum(s), 0);
                if !v6 {
                    prop_assert_eq!(ip::internet_checksum(&s[..20]), 0);
                }
                prop_assert!(c.push(s));
            }
            let out = c.finish().unwrap();
            if segs.len() == 1 {
                prop_assert_eq!(VnetHdr::parse(out).unwrap(), VnetHdr::default());
                prop_assert_eq!(&out[VNET_HDR_LEN..], &segs[0][..]);
            } else {
                prop_assert_eq!(VnetHdr::parse(out).unwrap(), hdr);
                prop_assert_eq!(&out[VNET_HDR_LEN..], &p[..]);
            }
        }

        /// Arbitrary bytes behind an arbitrary vnet header never panic the segmenter or the
        /// coalescer, and every segment written fits the length announced.
        #[test]
        fn hostile_input_never_panics(
            raw in proptest::collection::vec(any::<u8>(), 0..3000),
        ) {
            let Ok(hdr) = VnetHdr::parse(&raw) else { return Ok(()) };
            let pkt = &raw[VNET_HDR_LEN..];
            if let Ok(s) = Segmenter::new(&hdr, pkt) {
                let mut buf = vec![0u8; s.max_len(pkt)];
                for i in 0..s.count().min(100) {
                    let n = s.write(pkt, i, &mut buf);
                    prop_assert!(n.is_some_and(|n| n <= buf.len()));
                }
            }
            let mut c = Coalescer::new();
            c.push(pkt);
            c.push(pkt);
            let _ = c.finish();
        }
    }
}
