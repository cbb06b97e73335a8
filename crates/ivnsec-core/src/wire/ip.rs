//! The IPv4 and IPv6 header bits ESP needs: where the protected part of a packet starts, which
//! byte names the protocol that follows, and how to fix lengths and the IPv4 header checksum
//! after ESP was inserted or removed.
//!
//! ```text
//! IPv4 (RFC 791)                            IPv6 (RFC 8200)
//! 0  ver|ihl  1 tos  2..4 total length      0..4 ver|tc|flow  4..6 payload length
//! 4..6 id     6..8 flags|fragment offset    6 next header     7 hop limit
//! 8 ttl       9 protocol  10..12 checksum   8..24 src         24..40 dst
//! 12..16 src  16..20 dst  20.. options      40.. extension headers, upper layer
//! ```
//!
//! For IPv6, ESP goes after the hop-by-hop, routing and (before a routing header) destination
//! options extension headers — the Linux placement, which scapy follows too (RFC 4303 §3.1.1
//! leaves destination options open). Fragments are refused: ESP is applied before fragmentation
//! and verified after reassembly.

use super::bytes::{array, byte, put, put_byte};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Field;

/// IP protocol numbers (IANA "Assigned Internet Protocol Numbers").
pub mod protocol {
    pub const HOP_BY_HOP: u8 = 0;
    pub const ICMP: u8 = 1;
    /// IPv4 encapsulation (tunnel mode with an IPv4 inner packet).
    pub const IPV4: u8 = 4;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    /// IPv6 encapsulation (tunnel mode with an IPv6 inner packet).
    pub const IPV6: u8 = 41;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const ESP: u8 = 50;
    /// "No next header": an ESP dummy packet (RFC 4303 §2.6).
    pub const NO_NEXT_HEADER: u8 = 59;
    pub const DEST_OPTS: u8 = 60;
}

mod v4 {
    use super::Field;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC: Field = 12..16;
    pub const DST: Field = 16..20;
}

mod v6 {
    use super::Field;
    pub const VER_TC_FL: Field = 0..4;
    pub const PAYLOAD_LEN: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: Field = 8..24;
    pub const DST: Field = 24..40;
}

/// Length of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of the fixed IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;
/// Hop limit / TTL of headers this module makes (tunnel mode outer headers).
pub const DEFAULT_TTL: u8 = 64;

/// Why bytes are not an IP packet this module can work with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpError {
    /// Shorter than the header or the length fields say.
    Truncated,
    /// Neither version 4 nor 6.
    BadVersion,
    /// A header field is impossible (IHL < 5, total length below the header length, jumbogram).
    BadHeader,
    /// An IPv4 fragment or an IPv6 packet with a fragment header.
    Fragment,
}

impl core::fmt::Display for IpError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            IpError::Truncated => "truncated IP packet",
            IpError::BadVersion => "not IPv4 or IPv6",
            IpError::BadHeader => "malformed IP header",
            IpError::Fragment => "IP fragment (ESP needs the whole packet)",
        })
    }
}

impl core::error::Error for IpError {}

/// What ESP needs to know about an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpInfo {
    /// 4 or 6.
    pub version: u8,
    /// Bytes in front of the ESP header / the protected payload: the IPv4 header with options,
    /// or the IPv6 header with the extension headers that precede ESP.
    pub header_len: usize,
    /// Index of the byte naming the protocol at `header_len` (IPv4 protocol, or the next header
    /// field of the base header or of the last extension header walked).
    pub nh_offset: usize,
    /// The protocol at `header_len`.
    pub next: u8,
    /// Length of the packet by its length field (≤ the buffer's length; bytes beyond are not
    /// part of the packet, e.g. Ethernet padding).
    pub total_len: usize,
}

/// Parses the IP header (and IPv6 extension headers before ESP) of `buf`. Never panics.
///
/// Inlined (the IPv4 part too): called once per packet on the ESP paths, where an `IpInfo`
/// returned through memory costs a store-to-load forwarding stall when its fields are read back.
#[inline]
pub fn parse(buf: &[u8]) -> Result<IpInfo, IpError> {
    let first = *buf.first().ok_or(IpError::Truncated)?;
    match first >> 4 {
        4 => parse_v4(buf, false),
        6 => parse_v6(buf, false),
        _ => Err(IpError::BadVersion),
    }
}

/// As [`parse`], but an IP fragment is a packet like any other: for the inner packet of ESP
/// tunnel mode, which carries whole IP packets, fragments included (RFC 4301 §7: a tunnel-mode
/// SA may carry non-initial and initial fragments). An IPv6 fragment header ends the walk (it is
/// `next`, with `header_len` in front of it). Never panics.
#[inline]
pub fn parse_inner(buf: &[u8]) -> Result<IpInfo, IpError> {
    let first = *buf.first().ok_or(IpError::Truncated)?;
    match first >> 4 {
        4 => parse_v4(buf, true),
        6 => parse_v6(buf, true),
        _ => Err(IpError::BadVersion),
    }
}

fn be16(b: &[u8], f: Field) -> u16 {
    u16::from_be_bytes(array(b, f.start))
}

#[inline]
fn parse_v4(buf: &[u8], fragments: bool) -> Result<IpInfo, IpError> {
    if buf.len() < IPV4_HEADER_LEN {
        return Err(IpError::Truncated);
    }
    let ihl = usize::from(byte(buf, v4::VER_IHL) & 0x0f) * 4;
    if ihl < IPV4_HEADER_LEN {
        return Err(IpError::BadHeader);
    }
    let total = usize::from(be16(buf, v4::LENGTH));
    if total < ihl {
        return Err(IpError::BadHeader);
    }
    if buf.len() < total {
        return Err(IpError::Truncated);
    }
    let fo = be16(buf, v4::FLG_OFF);
    // MF set or a non-zero fragment offset.
    if !fragments && (fo & 0x2000 != 0 || fo & 0x1fff != 0) {
        return Err(IpError::Fragment);
    }
    Ok(IpInfo {
        version: 4,
        header_len: ihl,
        nh_offset: v4::PROTOCOL,
        next: byte(buf, v4::PROTOCOL),
        total_len: total,
    })
}

fn parse_v6(buf: &[u8], fragments: bool) -> Result<IpInfo, IpError> {
    if buf.len() < IPV6_HEADER_LEN {
        return Err(IpError::Truncated);
    }
    let payload = usize::from(be16(buf, v6::PAYLOAD_LEN));
    let total = IPV6_HEADER_LEN + payload;
    if buf.len() < total {
        return Err(IpError::Truncated);
    }
    let mut nh_offset = v6::NEXT_HEADER;
    let mut off = IPV6_HEADER_LEN;
    let mut seen_routing = false;
    loop {
        let nh = byte(buf, nh_offset);
        let walk = match nh {
            protocol::HOP_BY_HOP => off == IPV6_HEADER_LEN,
            protocol::ROUTING => {
                seen_routing = true;
                true
            }
            protocol::DEST_OPTS => !seen_routing,
            protocol::FRAGMENT if fragments => false,
            protocol::FRAGMENT => return Err(IpError::Fragment),
            _ => false,
        };
        if !walk {
            return Ok(IpInfo {
                version: 6,
                header_len: off,
                nh_offset,
                next: nh,
                total_len: total,
            });
        }
        // Every walked extension header: next header (1), length in 8-octet units beyond the
        // first 8 (1), ... (RFC 8200 §4.3–4.6).
        if off + 2 > total {
            return Err(IpError::Truncated);
        }
        let len = (usize::from(byte(buf, off + 1)) + 1) * 8;
        if off + len > total {
            return Err(IpError::Truncated);
        }
        nh_offset = off;
        off += len;
    }
}

/// Sets the length field(s) of the packet at the front of `buf` to `total_len` bytes and, for
/// IPv4, recomputes the header checksum. `info` describes the packet's header (which must be at
/// the front of `buf`); writes nothing where `buf` is shorter than that header.
pub fn set_total_len(buf: &mut [u8], info: &IpInfo, total_len: usize) {
    if info.version == 4 {
        put(buf, v4::LENGTH.start, &(total_len as u16).to_be_bytes());
        if let Some(hdr) = buf.get_mut(..info.header_len.max(IPV4_HEADER_LEN)) {
            fill_ipv4_checksum(hdr);
        }
    } else {
        let payload = total_len.saturating_sub(IPV6_HEADER_LEN) as u16;
        put(buf, v6::PAYLOAD_LEN.start, &payload.to_be_bytes());
    }
}

/// Moves the IPv4 header without options at `buf[from..from + 20]` to `buf[to..to + 20]` (the
/// two may overlap) with `protocol` and `total_len` in it and the header checksum recomputed:
/// the bytes that a move, the protocol byte, [`set_total_len`] and [`fill_ipv4_checksum`] give,
/// but the header is read once (five 4-byte loads) and written once, and the checksum is summed
/// in registers. (Writing single fields and then summing them with wide loads stalls on
/// store-to-load forwarding, per packet.) Writes nothing if a range is outside `buf`.
pub fn move_ipv4_header(buf: &mut [u8], from: usize, to: usize, protocol: u8, total_len: u16) {
    let Some(src) = buf.get(from..from + IPV4_HEADER_LEN) else {
        return;
    };
    let mut w = [0u32; 5];
    for (word, b) in w.iter_mut().zip(src.chunks_exact(4)) {
        *word = u32::from_be_bytes(array(b, 0));
    }
    // Word 0: version, IHL, TOS ‖ total length. Word 2: TTL, protocol ‖ checksum (0 to sum).
    w[0] = (w[0] & 0xffff_0000) | u32::from(total_len);
    w[2] = (w[2] & 0xff00_0000) | (u32::from(protocol) << 16);
    let mut sum: u32 = w.iter().map(|&x| (x >> 16) + (x & 0xffff)).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    w[2] |= u32::from(!(sum as u16));
    let Some(dst) = buf.get_mut(to..to + IPV4_HEADER_LEN) else {
        return;
    };
    for (b, word) in dst.chunks_exact_mut(4).zip(w) {
        b.copy_from_slice(&word.to_be_bytes());
    }
}

/// One's-complement sum of `data` (RFC 1071: big-endian 16-bit words, a last odd octet padded
/// with zero) added to `acc`, not folded. Fold with [`fold`]; the Internet checksum is
/// `!fold(ones_sum(data, 0))`. Sums can be chained (`ones_sum(b, ones_sum(a, 0))`) where `a`
/// has an even length.
///
/// Every checksum of the data planes goes through here (the TCP segments cut from and merged
/// into TUN/TAP super-packets, the gateway's completed checksums, IP headers), so it is written
/// for speed: RFC 1071 §2 lets the words be summed in any order, any width and either byte
/// order. The octets are summed as little-endian 32-bit words into eight 64-bit lanes with no
/// carry to chase (2^32 words fit in a lane; a packet has at most 2^14), which the compiler
/// turns into vector additions; the total is folded to 16 bits and byte-swapped into the
/// big-endian sum (§2(B)) only once. About 2.5× the 8-octets-with-carry loop it replaces on
/// 1460-octet segments.
pub fn ones_sum(data: &[u8], acc: u64) -> u64 {
    const LANES: usize = 8;
    let mut blocks = data.chunks_exact(4 * LANES);
    let mut lanes = [0u64; LANES];
    for b in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            *lane += u64::from(u32::from_le_bytes(array(b, 4 * i)));
        }
    }
    let mut sum: u64 = lanes.iter().sum();
    let mut words = blocks.remainder().chunks_exact(4);
    for w in &mut words {
        sum += u64::from(u32::from_le_bytes(array(w, 0)));
    }
    // The last 1-3 octets keep their places in a zero-padded word (their parity decides which
    // half of a 16-bit word they are).
    let mut last = [0u8; 4];
    for (l, r) in last.iter_mut().zip(words.remainder()) {
        *l = *r;
    }
    sum += u64::from(u32::from_le_bytes(last));
    let be = u64::from(fold(sum).swap_bytes());
    let (s, carry) = acc.overflowing_add(be);
    s + u64::from(carry)
}

/// Folds a [`ones_sum`] to 16 bits (not complemented). 0 only for a sum of nothing but zeros.
pub fn fold(mut acc: u64) -> u16 {
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    acc = (acc & 0xffff) + (acc >> 16);
    acc as u16
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data, 0))
}

/// The UDP checksum (RFC 768) of the datagram `udp` (UDP header with a zero checksum field,
/// then the payload) from `src` to `dst` over IPv4: the Internet checksum of the pseudo header
/// `src ‖ dst ‖ 0 ‖ 17 ‖ UDP length` and the datagram. A computed 0 is sent as 0xFFFF (0 means
/// "no checksum").
pub fn udp_checksum_v4(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
    let len = (udp.len() as u16).to_be_bytes();
    let pseudo = [0, protocol::UDP, len[0], len[1]];
    let acc = ones_sum(&dst.octets(), ones_sum(&src.octets(), 0));
    // The datagram last: an odd length pads only its final byte.
    match !fold(ones_sum(udp, ones_sum(&pseudo, acc))) {
        0 => 0xffff,
        c => c,
    }
}

/// Recomputes the checksum of the IPv4 header `hdr` (exactly the header, options included).
pub fn fill_ipv4_checksum(hdr: &mut [u8]) {
    put(hdr, v4::CHECKSUM.start, &[0, 0]);
    let c = internet_checksum(hdr);
    put(hdr, v4::CHECKSUM.start, &c.to_be_bytes());
}

/// Traffic class (IPv6) or TOS (IPv4) of the packet at the front of `buf` (parsed before).
pub fn traffic_class(buf: &[u8], version: u8) -> u8 {
    if version == 4 {
        byte(buf, v4::TOS)
    } else {
        ((be16(buf, 0..2) >> 4) & 0xff) as u8
    }
}

/// Length of the outer header [`emit_outer`] writes for a tunnel endpoint address.
pub const fn outer_header_len(src: &IpAddr) -> usize {
    match src {
        IpAddr::V4(_) => IPV4_HEADER_LEN,
        IpAddr::V6(_) => IPV6_HEADER_LEN,
    }
}

/// Writes a tunnel-mode outer header (no options / extension headers) to the front of `buf`:
/// IPv4 with id 0, no flags, TTL 64; or IPv6 with flow label 0, hop limit 64. `src` and `dst`
/// must be of one family; `buf` must hold [`outer_header_len`] bytes.
pub fn emit_outer(
    buf: &mut [u8],
    src: &IpAddr,
    dst: &IpAddr,
    tclass: u8,
    protocol: u8,
    total_len: usize,
) {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => emit_v4(buf, s, d, tclass, protocol, total_len),
        (IpAddr::V6(s), IpAddr::V6(d)) => emit_v6(buf, s, d, tclass, protocol, total_len),
        // Mixed families are refused when the SA is made; write nothing sensible rather than panic.
        _ => buf.iter_mut().take(IPV4_HEADER_LEN).for_each(|b| *b = 0),
    }
}

/// [`emit_outer`] for a packet sized for its path and sent without the kernel's IP layer (the
/// ESP tunnel's link path): IPv4 with Don't Fragment set and identification `id` (RFC 6864: an
/// atomic datagram's identification carries no meaning, but a sender should still vary it);
/// IPv6 as [`emit_outer`] writes it.
pub fn emit_outer_unfragmented(
    buf: &mut [u8],
    src: &IpAddr,
    dst: &IpAddr,
    protocol: u8,
    total_len: usize,
    id: u16,
) {
    emit_outer(buf, src, dst, 0, protocol, total_len);
    if let (IpAddr::V4(_), Some(h)) = (src, buf.get_mut(..IPV4_HEADER_LEN)) {
        put(h, v4::IDENT.start, &id.to_be_bytes());
        put(h, v4::FLG_OFF.start, &0x4000u16.to_be_bytes());
        fill_ipv4_checksum(h);
    }
}

fn emit_v4(
    buf: &mut [u8],
    src: &Ipv4Addr,
    dst: &Ipv4Addr,
    tos: u8,
    protocol: u8,
    total_len: usize,
) {
    let Some(h) = buf.get_mut(..IPV4_HEADER_LEN) else {
        return;
    };
    h.fill(0);
    put_byte(h, v4::VER_IHL, 0x45);
    put_byte(h, v4::TOS, tos);
    put(h, v4::LENGTH.start, &(total_len as u16).to_be_bytes());
    put_byte(h, v4::TTL, DEFAULT_TTL);
    put_byte(h, v4::PROTOCOL, protocol);
    put(h, v4::SRC.start, &src.octets());
    put(h, v4::DST.start, &dst.octets());
    fill_ipv4_checksum(h);
}

fn emit_v6(
    buf: &mut [u8],
    src: &Ipv6Addr,
    dst: &Ipv6Addr,
    tclass: u8,
    protocol: u8,
    total_len: usize,
) {
    let Some(h) = buf.get_mut(..IPV6_HEADER_LEN) else {
        return;
    };
    let vtf: u32 = (6 << 28) | (u32::from(tclass) << 20);
    put(h, v6::VER_TC_FL.start, &vtf.to_be_bytes());
    put(
        h,
        v6::PAYLOAD_LEN.start,
        &(total_len.saturating_sub(IPV6_HEADER_LEN) as u16).to_be_bytes(),
    );
    put_byte(h, v6::NEXT_HEADER, protocol);
    put_byte(h, v6::HOP_LIMIT, DEFAULT_TTL);
    put(h, v6::SRC.start, &src.octets());
    put(h, v6::DST.start, &dst.octets());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071's definition, word by word with the end-around carry at every step: the
    /// independent computation [`ones_sum`] is checked against.
    fn by_words(data: &[u8], acc: u16) -> u16 {
        let mut s = u32::from(acc);
        for (i, &b) in data.iter().enumerate() {
            s += if i % 2 == 0 {
                u32::from(b) << 8
            } else {
                u32::from(b)
            };
            s = (s & 0xffff) + (s >> 16);
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    /// RFC 1071 §3's numerical example: the octets 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (the
    /// checksum is its complement, 220d).
    #[test]
    fn ones_sum_of_rfc_1071_example() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(ones_sum(&data, 0)), 0xddf2);
        assert_eq!(internet_checksum(&data), 0x220d);
        // In two pieces of even length, chained.
        assert_eq!(fold(ones_sum(&data[4..], ones_sum(&data[..4], 0))), 0xddf2);
    }

    /// Every length 0..=300 at every alignment 0..8, with several accumulated sums in front,
    /// against the word-by-word definition; then whole super-packets (64 KiB, all ones, all
    /// zeros) where the lanes hold the most.
    #[test]
    fn ones_sum_agrees_with_the_definition_at_every_length_and_alignment() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut data = alloc::vec![0u8; 65_536 + 8];
        for b in data.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        for len in 0..=300 {
            for off in 0..8 {
                for acc in [0u16, 1, 0x8000, 0xfffe, 0xffff] {
                    let d = &data[off..off + len];
                    assert_eq!(
                        fold(ones_sum(d, u64::from(acc))),
                        by_words(d, acc),
                        "{len} at {off}, acc {acc:#x}"
                    );
                }
            }
        }
        for d in [
            &data[..65_535],
            &data[3..65_536 + 3],
            &[0xff; 65_535][..],
            &[0; 1460][..],
        ] {
            assert_eq!(fold(ones_sum(d, 0)), by_words(d, 0), "{} octets", d.len());
        }
        // 0 stands for a sum of zeros only.
        assert_eq!(fold(ones_sum(&[0; 40], 0)), 0);
        assert_eq!(fold(ones_sum(&[0xff, 0xff], 0)), 0xffff);
    }

    /// RFC 791's header with DF and an identification: every field where the RFC puts it, and
    /// a checksum that sums the header to all ones (RFC 1071); IPv6 is the plain header.
    #[test]
    fn unfragmented_outer_headers() {
        let (s, d): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let mut h = [0xaau8; IPV4_HEADER_LEN];
        emit_outer_unfragmented(&mut h, &s, &d, protocol::ESP, 1500, 0x1234);
        assert_eq!(
            &h[..12],
            &[
                0x45, 0, 0x05, 0xdc, 0x12, 0x34, 0x40, 0, 64, 50, h[10], h[11]
            ]
        );
        assert_eq!(&h[12..], &[192, 0, 2, 1, 192, 0, 2, 2]);
        let sum: u32 = h
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff);
        let (s6, d6): (IpAddr, IpAddr) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        let mut a = [0u8; IPV6_HEADER_LEN];
        let mut b = [0u8; IPV6_HEADER_LEN];
        emit_outer_unfragmented(&mut a, &s6, &d6, protocol::ESP, 1500, 7);
        emit_outer(&mut b, &s6, &d6, 0, protocol::ESP, 1500);
        assert_eq!(a, b);
        assert_eq!(&a[4..8], &[0x05, 0xb4, 50, 64]);
    }

    // A UDP datagram 10.77.1.1:30600 → 10.77.0.1:30600 carrying the 19 bytes
    // "ivnsec udp checksum" (odd length: the last byte is padded); tshark 3.x/4.x with
    // `-o udp.check_checksum:TRUE` computes its checksum as 0x6c2f (`udp.checksum_calculated`).
    #[test]
    fn udp_checksum_matches_tshark() {
        let mut d = [0u8; 8 + 19];
        d[0..2].copy_from_slice(&30600u16.to_be_bytes());
        d[2..4].copy_from_slice(&30600u16.to_be_bytes());
        d[4..6].copy_from_slice(&27u16.to_be_bytes());
        d[8..].copy_from_slice(b"ivnsec udp checksum");
        let (src, dst) = (Ipv4Addr::new(10, 77, 1, 1), Ipv4Addr::new(10, 77, 0, 1));
        let c = udp_checksum_v4(src, dst, &d);
        assert_eq!(c, 0x6c2f);
        // RFC 1071: with the checksum in place, the sum over pseudo header and datagram is
        // all ones, so computing it again yields 0 (sent as 0xffff).
        d[6..8].copy_from_slice(&c.to_be_bytes());
        assert_eq!(udp_checksum_v4(src, dst, &d), 0xffff);
    }

    // A published IPv4 header (the inner packet of draft-mcgrew-gcm-test-01 §4 case 2), whose
    // checksum 4dcc is part of the published bytes.
    #[test]
    fn checksum_of_published_header_verifies() {
        let h = [
            0x45, 0x00, 0x00, 0x3e, 0x69, 0x8f, 0x00, 0x00, 0x80, 0x11, 0x4d, 0xcc, 0xc0, 0xa8,
            0x01, 0x02, 0xc0, 0xa8, 0x01, 0x01,
        ];
        assert_eq!(internet_checksum(&h), 0);
        let mut z = h;
        fill_ipv4_checksum(&mut z);
        assert_eq!(z, h);
    }

    /// The same published header (draft-mcgrew-gcm-test-01 §4 case 2), rebuilt by
    /// `move_ipv4_header` from a copy with other protocol, length and checksum values, in place
    /// and to offsets before and after it: the published bytes, checksum 4dcc included.
    #[test]
    fn move_ipv4_header_gives_the_published_header() {
        let h = [
            0x45, 0x00, 0x00, 0x3e, 0x69, 0x8f, 0x00, 0x00, 0x80, 0x11, 0x4d, 0xcc, 0xc0, 0xa8,
            0x01, 0x02, 0xc0, 0xa8, 0x01, 0x01,
        ];
        for (from, to) in [(0, 0), (16, 0), (0, 16), (3, 5), (5, 3), (20, 40)] {
            let mut buf = [0xa5u8; 64];
            buf[from..from + 20].copy_from_slice(&h);
            // ESP's values, and a wrong checksum: all three are replaced.
            buf[from + 2..from + 4].copy_from_slice(&[0x05, 0xdc]);
            buf[from + 9] = 50;
            buf[from + 10..from + 12].copy_from_slice(&[0xde, 0xad]);
            move_ipv4_header(&mut buf, from, to, 0x11, 0x3e);
            assert_eq!(buf[to..to + 20], h, "from {from} to {to}");
        }
    }

    proptest::proptest! {
        /// `move_ipv4_header` writes what moving the header, setting the protocol byte and
        /// [`set_total_len`] (which sums the header with [`internet_checksum`]) write, for any
        /// header bytes, values and overlapping positions.
        #[test]
        fn move_ipv4_header_is_move_then_set(
            header in proptest::array::uniform20(proptest::num::u8::ANY),
            from in 0usize..44,
            to in 0usize..44,
            protocol in proptest::num::u8::ANY,
            total in proptest::num::u16::ANY,
        ) {
            let mut buf = [0u8; 64];
            buf[from..from + 20].copy_from_slice(&header);
            let mut want = buf;
            want.copy_within(from..from + 20, to);
            want[to + 9] = protocol;
            let info = IpInfo {
                version: 4,
                header_len: 20,
                nh_offset: 9,
                next: protocol,
                total_len: usize::from(total),
            };
            set_total_len(&mut want[to..], &info, usize::from(total));
            move_ipv4_header(&mut buf, from, to, protocol, total);
            proptest::prop_assert_eq!(buf, want);
        }
    }

    #[test]
    fn parse_rejects_bad_packets() {
        assert_eq!(parse(&[]), Err(IpError::Truncated));
        assert_eq!(parse(&[0x55; 40]), Err(IpError::BadVersion));
        let mut p = [0u8; 28];
        p[0] = 0x44;
        assert_eq!(parse(&p), Err(IpError::BadHeader));
        p[0] = 0x45;
        p[3] = 28;
        p[9] = 17;
        assert_eq!(parse(&p).unwrap().next, 17);
        p[3] = 29;
        assert_eq!(parse(&p), Err(IpError::Truncated));
        p[3] = 28;
        p[6] = 0x20;
        assert_eq!(parse(&p), Err(IpError::Fragment));
    }

    #[test]
    fn ipv6_walks_hop_by_hop_and_stops_at_upper_layer() {
        let mut p = [0u8; 56];
        p[0] = 0x60;
        p[5] = 16;
        p[6] = protocol::HOP_BY_HOP;
        p[40] = protocol::UDP;
        p[41] = 0;
        let i = parse(&p).unwrap();
        assert_eq!(
            (i.header_len, i.nh_offset, i.next, i.total_len),
            (48, 40, protocol::UDP, 56)
        );
        // A hop-by-hop header claiming more than the packet holds.
        p[41] = 5;
        assert_eq!(parse(&p), Err(IpError::Truncated));
        p[41] = 0;
        p[40] = protocol::FRAGMENT;
        assert_eq!(parse(&p), Err(IpError::Fragment));
    }
}
