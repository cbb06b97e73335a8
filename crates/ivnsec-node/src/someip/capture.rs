//! `--pcap FILE` of `ivnsec someip serve` / `call`: every datagram and TCP payload the node
//! sends or receives, recorded as an Ethernet/IPv4/UDP or Ethernet/IPv4/TCP frame in one classic
//! pcap (link type Ethernet), so tshark's SOME/IP and SOME/IP-SD dissectors read it.
//!
//! The node talks through UDP and TCP sockets, which hand over payloads, not frames. The headers
//! around each payload are therefore synthesized (docs/pcap.md):
//! - addresses and ports are the real ones of the socket and the peer; where a socket is bound
//!   to the wildcard address (the SD socket when it listens to a multicast group), the local
//!   address is the node's configured one, and a received datagram is recorded as sent to it
//!   (a socket does not tell whether it came to the group or to the node);
//! - MAC addresses are made from the IPv4 addresses (`02:00:` + the four octets for a host; the
//!   IPv4 multicast MAC `01:00:5e:…` for a group; broadcast for 255.255.255.255): sockets do not
//!   reveal the real ones;
//! - IPv4 and UDP/TCP lengths and checksums are correct, the IPv4 identification counts up;
//! - a TCP connection starts with a synthesized handshake (SYN, SYN-ACK, ACK, initial sequence
//!   numbers 0) and each write of a message, and each read as the socket returned it, is one
//!   segment (PSH, ACK) whose sequence number counts the bytes sent before in that direction and
//!   acknowledges everything received; chunks above 65,495 bytes are split. No FIN, window
//!   updates or retransmissions: what the kernel put on the wire may have been cut differently.

use std::fs::File;
use std::io::{self, BufWriter};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use anyhow::{Context, Result};
use ivnsec_core::wire::ip::{internet_checksum, protocol};
use ivnsec_net::pcap::PcapWriter;

use ivnsec_core::channel::{IPV4_HLEN, write_ipv4_header};

/// Ethernet II header length.
const ETH_HLEN: usize = 14;
const UDP_HLEN: usize = 8;
const TCP_HLEN: usize = 20;
/// Largest TCP payload in one synthesized segment (IPv4 total length ≤ 65,535).
const TCP_MAX_CHUNK: usize = 65_535 - IPV4_HLEN - TCP_HLEN;
/// Largest UDP payload an IPv4 datagram carries.
const UDP_MAX_PAYLOAD: usize = 65_535 - IPV4_HLEN - UDP_HLEN;

const TCP_SYN: u8 = 0x02;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;

/// The capture of one node, shared by its threads; a no-op when off.
#[derive(Clone, Default)]
pub struct Capture {
    inner: Option<Arc<Mutex<Inner>>>,
}

struct Inner {
    w: PcapWriter<BufWriter<File>>,
    /// The node's address: the local one of a socket bound to the wildcard address.
    node: Ipv4Addr,
    /// The first write error; the run goes on and [`Capture::finish`] reports it.
    err: Option<io::Error>,
    ip_id: u16,
    frame: Vec<u8>,
}

impl Capture {
    /// A capture that records nothing.
    pub fn off() -> Capture {
        Capture::default()
    }

    /// Records into a new file at `path`, for a node whose address is `node`.
    pub fn create(path: &Path, node: Ipv4Addr) -> Result<Capture> {
        let w = PcapWriter::create(path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Capture {
            inner: Some(Arc::new(Mutex::new(Inner {
                w,
                node,
                err: None,
                ip_id: 0,
                frame: Vec::with_capacity(2048),
            }))),
        })
    }

    /// Records a datagram `sock` sent to `dst`.
    pub fn sent(&self, sock: &UdpSocket, dst: SocketAddr, data: &[u8]) {
        if let Some(local) = self.local(sock, dst) {
            self.udp(local, dst, data);
        }
    }

    /// Records a datagram `sock` received from `src`.
    pub fn received(&self, sock: &UdpSocket, src: SocketAddr, data: &[u8]) {
        if let Some(local) = self.local(sock, src) {
            self.udp(src, local, data);
        }
    }

    /// The address `sock` talks to `peer` from (`None`: capture off).
    fn local(&self, sock: &UdpSocket, peer: SocketAddr) -> Option<SocketAddr> {
        let node = self.lock()?.node;
        let bound = sock.local_addr().ok()?;
        Some(local_addr(bound, peer, Some(node)))
    }

    fn lock(&self) -> Option<MutexGuard<'_, Inner>> {
        self.inner
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Records one UDP datagram from `src` to `dst` (IPv6 ends are not recorded: the bindings
    /// here are IPv4).
    pub fn udp(&self, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        let (Some(mut c), SocketAddr::V4(s), SocketAddr::V4(d)) = (self.lock(), src, dst) else {
            return;
        };
        let payload = &payload[..payload.len().min(UDP_MAX_PAYLOAD)];
        let c = &mut *c;
        let id = next_id(&mut c.ip_id);
        udp_frame(&mut c.frame, s, d, id, payload);
        c.write();
    }

    /// Starts recording a TCP connection between `client` and `server` with a synthesized
    /// handshake.
    pub fn tcp(&self, client: SocketAddr, server: SocketAddr) -> TcpFlow {
        let mut f = TcpFlow {
            cap: self.clone(),
            ends: match (client, server) {
                (SocketAddr::V4(c), SocketAddr::V4(s)) => Some((c, s)),
                _ => None,
            },
            next_seq: [0, 0],
        };
        f.segment(true, TCP_SYN, &[]);
        f.next_seq[0] = 1;
        f.segment(false, TCP_SYN | TCP_ACK, &[]);
        f.next_seq[1] = 1;
        f.segment(true, TCP_ACK, &[]);
        f
    }

    /// Writes what is buffered; the first error any record met, if one did.
    pub fn finish(&self) -> Result<()> {
        let Some(mut c) = self.lock() else {
            return Ok(());
        };
        if let Some(e) = c.err.take() {
            return Err(e).context("writing the capture");
        }
        c.w.flush().context("writing the capture")
    }
}

impl Inner {
    fn write(&mut self) {
        if self.err.is_none()
            && let Err(e) = self.w.write_frame(SystemTime::now(), &self.frame)
        {
            self.err = Some(e);
        }
    }
}

fn next_id(id: &mut u16) -> u16 {
    *id = id.wrapping_add(1);
    *id
}

/// One recorded TCP connection: sequence numbers per direction.
pub struct TcpFlow {
    cap: Capture,
    /// (client, server); `None` for IPv6 ends, which are not recorded.
    ends: Option<(SocketAddrV4, SocketAddrV4)>,
    /// Next sequence number of the client (0) and of the server (1).
    next_seq: [u32; 2],
}

impl TcpFlow {
    /// Records `data` sent by the client (`from_client`) or by the server, as segments of at
    /// most 65,495 bytes.
    pub fn data(&mut self, from_client: bool, data: &[u8]) {
        for chunk in data.chunks(TCP_MAX_CHUNK) {
            self.segment(from_client, TCP_PSH | TCP_ACK, chunk);
            let i = usize::from(!from_client);
            self.next_seq[i] = self.next_seq[i].wrapping_add(chunk.len() as u32);
        }
    }

    fn segment(&mut self, from_client: bool, flags: u8, data: &[u8]) {
        let (Some(mut c), Some((client, server))) = (self.cap.lock(), self.ends) else {
            return;
        };
        let (src, dst, seq, ack) = if from_client {
            (client, server, self.next_seq[0], self.next_seq[1])
        } else {
            (server, client, self.next_seq[1], self.next_seq[0])
        };
        let ack = if flags & TCP_ACK != 0 { ack } else { 0 };
        let c = &mut *c;
        let id = next_id(&mut c.ip_id);
        tcp_frame(&mut c.frame, src, dst, id, (seq, ack, flags), data);
        c.write();
    }
}

/// The MAC address a capture gives an IPv4 address (see the module documentation).
pub fn mac_of(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    if ip.is_multicast() {
        [0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]]
    } else if ip.is_broadcast() {
        [0xff; 6]
    } else {
        [0x02, 0x00, o[0], o[1], o[2], o[3]]
    }
}

/// The address a socket bound to `bound` sends from towards `peer`: the bound one, or, for a
/// wildcard bind, `node` when given and specified, else the one the routing table picks (a
/// connected UDP socket that sends nothing).
pub fn local_addr(bound: SocketAddr, peer: SocketAddr, node: Option<Ipv4Addr>) -> SocketAddr {
    let node = node.filter(|n| !n.is_unspecified());
    if !bound.ip().is_unspecified() {
        return bound;
    }
    let ip = node.map(IpAddr::V4).or_else(|| {
        let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).ok()?;
        s.connect(peer).ok()?;
        s.local_addr().ok().map(|a| a.ip())
    });
    SocketAddr::new(ip.unwrap_or(bound.ip()), bound.port())
}

/// Ethernet + IPv4 header (protocol `proto`) for an L4 segment of `l4_len` bytes into `out`
/// (cleared first), with room for the segment; returns where the segment starts.
fn ip_frame(out: &mut Vec<u8>, src: Ipv4Addr, dst: Ipv4Addr, proto: u8, l4_len: usize) -> usize {
    out.clear();
    out.extend_from_slice(&mac_of(dst));
    out.extend_from_slice(&mac_of(src));
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    out.resize(ETH_HLEN + IPV4_HLEN + l4_len, 0);
    // The L4 checksum covers a pseudo header (src, dst, zero, protocol, L4 length): built in the
    // last 12 bytes of the IPv4 header's place, summed with the segment, then overwritten by
    // the real IPv4 header.
    let l4 = ETH_HLEN + IPV4_HLEN;
    let ph = &mut out[l4 - 12..l4];
    ph[..4].copy_from_slice(&src.octets());
    ph[4..8].copy_from_slice(&dst.octets());
    ph[8] = 0;
    ph[9] = proto;
    ph[10..12].copy_from_slice(&(l4_len as u16).to_be_bytes());
    l4
}

/// Sums the pseudo header and the segment (after [`ip_frame`] and the segment were written),
/// stores the L4 checksum at `at` (UDP: 0 becomes 0xffff), then writes the IPv4 header.
fn finish_ip(out: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr, id: u16, proto: u8, at: usize) {
    let l4 = ETH_HLEN + IPV4_HLEN;
    let mut sum = internet_checksum(&out[l4 - 12..]);
    if proto == protocol::UDP && sum == 0 {
        sum = 0xffff;
    }
    out[l4 + at..l4 + at + 2].copy_from_slice(&sum.to_be_bytes());
    let total = out.len() - ETH_HLEN;
    let ip = &mut out[ETH_HLEN..l4];
    write_ipv4_header(ip, total, proto, src, dst);
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ivnsec_core::wire::ip::fill_ipv4_checksum(ip);
}

/// An Ethernet/IPv4/UDP frame carrying `payload` (≤ 65,507 bytes) into `out`.
pub fn udp_frame(out: &mut Vec<u8>, src: SocketAddrV4, dst: SocketAddrV4, id: u16, payload: &[u8]) {
    let len = UDP_HLEN + payload.len();
    let l4 = ip_frame(out, *src.ip(), *dst.ip(), protocol::UDP, len);
    let u = &mut out[l4..];
    u[0..2].copy_from_slice(&src.port().to_be_bytes());
    u[2..4].copy_from_slice(&dst.port().to_be_bytes());
    u[4..6].copy_from_slice(&(len as u16).to_be_bytes());
    u[UDP_HLEN..].copy_from_slice(payload);
    finish_ip(out, *src.ip(), *dst.ip(), id, protocol::UDP, 6);
}

/// An Ethernet/IPv4/TCP frame (20-byte header, window 65,535) with `(seq, ack, flags)` carrying
/// `data` (≤ 65,495 bytes) into `out`.
pub fn tcp_frame(
    out: &mut Vec<u8>,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    id: u16,
    (seq, ack, flags): (u32, u32, u8),
    data: &[u8],
) {
    let len = TCP_HLEN + data.len();
    let l4 = ip_frame(out, *src.ip(), *dst.ip(), protocol::TCP, len);
    let t = &mut out[l4..];
    t[0..2].copy_from_slice(&src.port().to_be_bytes());
    t[2..4].copy_from_slice(&dst.port().to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((TCP_HLEN / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&u16::MAX.to_be_bytes());
    t[TCP_HLEN..].copy_from_slice(data);
    finish_ip(out, *src.ip(), *dst.ip(), id, protocol::TCP, 16);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddrV4 {
        s.parse().unwrap()
    }

    /// A datagram from RFC 768 / RFC 791 arithmetic done independently: the IPv4 header and UDP
    /// checksums verify (the one's-complement sum over header, or pseudo header and segment,
    /// is 0xffff, i.e. `internet_checksum` of it is 0), lengths and fields are where tshark
    /// looks for them.
    #[test]
    fn udp_frame_fields_and_checksums() {
        let mut f = Vec::new();
        let payload = b"\x12\x34\x00\x01\x00\x00\x00\x08\x00\x01\x00\x01\x01\x01\x00\x00odd";
        udp_frame(
            &mut f,
            a("10.77.0.1:30509"),
            a("10.77.0.2:40000"),
            7,
            payload,
        );
        assert_eq!(f.len(), 14 + 20 + 8 + payload.len());
        assert_eq!(&f[0..6], &[2, 0, 10, 77, 0, 2]);
        assert_eq!(&f[6..12], &[2, 0, 10, 77, 0, 1]);
        assert_eq!(&f[12..14], &[8, 0]);
        let ip = &f[14..34];
        assert_eq!(ip[0], 0x45);
        assert_eq!(
            usize::from(u16::from_be_bytes([ip[2], ip[3]])),
            f.len() - 14
        );
        assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 7);
        assert_eq!(ip[9], 17);
        assert_eq!(internet_checksum(ip), 0, "IPv4 header checksum");
        let udp = &f[34..];
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), 30509);
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 40000);
        assert_eq!(usize::from(u16::from_be_bytes([udp[4], udp[5]])), udp.len());
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&[10, 77, 0, 1, 10, 77, 0, 2, 0, 17]);
        pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(udp);
        assert_eq!(internet_checksum(&pseudo), 0, "UDP checksum");
        assert_eq!(&udp[8..], payload);
    }

    #[test]
    fn tcp_frame_fields_and_checksums() {
        let mut f = Vec::new();
        let data = [0xabu8; 1001];
        tcp_frame(
            &mut f,
            a("127.0.0.1:5000"),
            a("127.0.0.2:30510"),
            9,
            (1, 42, TCP_PSH | TCP_ACK),
            &data,
        );
        let ip = &f[14..34];
        assert_eq!(ip[9], 6);
        assert_eq!(internet_checksum(ip), 0);
        let tcp = &f[34..];
        assert_eq!(u32::from_be_bytes(tcp[4..8].try_into().unwrap()), 1);
        assert_eq!(u32::from_be_bytes(tcp[8..12].try_into().unwrap()), 42);
        assert_eq!(tcp[12] >> 4, 5);
        assert_eq!(tcp[13], 0x18);
        let mut pseudo = vec![127, 0, 0, 1, 127, 0, 0, 2, 0, 6];
        pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(tcp);
        assert_eq!(internet_checksum(&pseudo), 0, "TCP checksum");
        assert_eq!(&tcp[20..], &data[..]);
    }

    #[test]
    fn macs_of_hosts_groups_and_broadcast() {
        assert_eq!(
            mac_of(Ipv4Addr::new(224, 224, 224, 245)),
            [1, 0, 0x5e, 0x60, 224, 245]
        );
        assert_eq!(mac_of(Ipv4Addr::BROADCAST), [0xff; 6]);
        assert_eq!(mac_of(Ipv4Addr::new(10, 1, 2, 3)), [2, 0, 10, 1, 2, 3]);
    }

    /// Sequence numbers of a recorded connection: handshake at 0, then byte counts per
    /// direction; the records read back from the file.
    #[test]
    fn tcp_flow_sequence_numbers() {
        let dir = std::env::temp_dir().join(format!("ivnsec-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("flow.pcap");
        let cap = Capture::create(&path, Ipv4Addr::LOCALHOST).unwrap();
        let mut flow = cap.tcp(
            "127.0.0.1:40000".parse().unwrap(),
            "127.0.0.1:30510".parse().unwrap(),
        );
        flow.data(true, &[1u8; 100]);
        flow.data(false, &[2u8; 70_000]);
        flow.data(true, &[3u8; 5]);
        cap.udp(
            "[::1]:1".parse().unwrap(),
            "[::1]:2".parse().unwrap(),
            b"not recorded",
        );
        cap.finish().unwrap();
        let recs: Vec<_> = ivnsec_net::pcap::PcapReader::open(&path)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        let seg = |i: usize| {
            let t = &recs[i].data[34..];
            (
                u16::from_be_bytes([t[0], t[1]]),
                u32::from_be_bytes(t[4..8].try_into().unwrap()),
                u32::from_be_bytes(t[8..12].try_into().unwrap()),
                t[13],
                t.len() - 20,
            )
        };
        assert_eq!(recs.len(), 3 + 1 + 2 + 1);
        assert_eq!(seg(0), (40000, 0, 0, 0x02, 0));
        assert_eq!(seg(1), (30510, 0, 1, 0x12, 0));
        assert_eq!(seg(2), (40000, 1, 1, 0x10, 0));
        assert_eq!(seg(3), (40000, 1, 1, 0x18, 100));
        assert_eq!(seg(4), (30510, 1, 101, 0x18, TCP_MAX_CHUNK));
        assert_eq!(
            seg(5),
            (
                30510,
                1 + TCP_MAX_CHUNK as u32,
                101,
                0x18,
                70_000 - TCP_MAX_CHUNK
            )
        );
        assert_eq!(seg(6), (40000, 101, 70_001, 0x18, 5));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
