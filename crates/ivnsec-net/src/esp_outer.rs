//! The outer path of an ESP tunnel (`ivnsec esp up`, docs/esp-tunnel.md): one socket from this
//! tunnel endpoint to the peer's, carrying ESP packets either directly over IP (protocol 50, a
//! raw IPv4 or IPv6 socket) or inside UDP (RFC 3948, port 4500 by default). The kernel builds
//! and routes the outer IP (and UDP) header on send, and fragments an outer packet longer than
//! the path where it must; the socket is bound to the local and connected to the remote address,
//! so it only receives what the peer sent to this endpoint.
//!
//! What a receive yields differs: a raw IPv4 socket gives the whole packet with its IPv4 header
//! ([`OuterSocket::header_included`]); a raw IPv6 socket and a UDP socket give only the ESP part
//! (the caller puts an outer header in front where it needs one). Built on socket2's safe API.
//!
//! **The link path (protocol 50).** A raw IP socket routes, builds and checksums every packet
//! it sends, one by one; UDP gets segmentation offload instead. For protocol 50 the sender can
//! hand ESP packets to the outer interface as Ethernet frames ([`OuterSocket::use_link`]): the
//! caller writes the outer IP header in front of each ESP packet (the wire format is the core
//! crate's), the Ethernet header is the same for every frame (the
//! next hop's MAC address, learnt from the kernel by [`crate::next_hop`]), and a batch leaves
//! with one `sendmmsg` on an AF_PACKET socket bound to that interface (which receives nothing).
//! The interface's qdisc still applies; the host's IP output path (its routing per packet, its
//! netfilter OUTPUT hooks, local fragmentation) does not. A packet longer than the link's limit
//! (the interface MTU, and the path MTU the raw socket knows) still goes through the raw socket,
//! which fragments it; receiving is unchanged.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::next_hop::NextHop;
use crate::sys;

/// IP protocol number of ESP.
pub const ESP_PROTOCOL: u8 = 50;
/// The UDP port of ESP-in-UDP (RFC 3948 §2.1, the IKE NAT-traversal port).
pub const UDP_ENCAP_PORT: u16 = 4500;

/// A bound and connected socket for the ESP packets of one tunnel.
#[derive(Debug)]
pub struct OuterSocket {
    sock: Socket,
    v6: bool,
    udp: Option<u16>,
    peer_errors: AtomicU64,
    /// UDP: batches leave as UDP segmentation offload sends (`UDP_SEGMENT`) until the kernel
    /// refuses one.
    gso: AtomicBool,
    /// UDP: `UDP_GRO` is on (a receive may bring several datagrams back to back).
    gro: bool,
    /// Protocol 50: the link path in use, if any ([`OuterSocket::use_link`]).
    link: RwLock<Option<Arc<LinkPath>>>,
    /// Packets sent on the link path, and packets of a framed batch that went through the raw
    /// socket instead (longer than the link's limit, or after the link failed).
    link_sent: AtomicU64,
    link_bypassed: AtomicU64,
    /// Link path sends the kernel refused (the path is then dropped until learnt again).
    link_errors: AtomicU64,
}

/// The link path of protocol 50: an AF_PACKET socket on the next hop's interface and the
/// Ethernet header of every frame.
#[derive(Debug)]
struct LinkPath {
    sock: sys::RawSocket,
    eth: [u8; 14],
    /// The longest outer IP packet sent this way.
    limit: usize,
    hop: NextHop,
}

/// The state of the link path, for status reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    pub hop: NextHop,
    /// The longest outer IP packet sent on the link path (longer ones take the raw socket).
    pub limit: usize,
}

/// Most bytes one UDP segmentation offload send gathers (an IP packet's 64 KiB less the
/// headers, with margin).
const GSO_MAX_BYTES: usize = 65_000;

/// Groups `units` (ESP packets, `(at, len)`) for [`sys::send_udp_gso_batch`]: runs of packets of
/// one length, the last of a run possibly shorter, at most [`GSO_MAX_BYTES`] per run. Returns
/// how many groups were written to `groups`.
fn gso_groups(
    units: &[(usize, usize)],
    groups: &mut [(usize, usize, u16); sys::MAX_BATCH],
) -> usize {
    let mut g = 0;
    let mut i = 0;
    while i < units.len() && g < groups.len() {
        let seg = units[i].1;
        let mut total = seg;
        let mut j = i + 1;
        while j < units.len() && units[j].1 <= seg && total + units[j].1 <= GSO_MAX_BYTES {
            total += units[j].1;
            j += 1;
            if units[j - 1].1 < seg {
                break;
            }
        }
        groups[g] = (i, j - i, u16::try_from(seg).unwrap_or(u16::MAX));
        g += 1;
        i = j;
    }
    g
}

/// An error a connected socket reports because ICMP said an earlier packet did not arrive
/// (ip(7): `IP_RECVERR` off, such errors are still passed on once).
fn is_peer_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ECONNREFUSED
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::ENOPROTOOPT
                | libc::EPROTO
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::EMSGSIZE
                | libc::EACCES
        )
    )
}

impl OuterSocket {
    /// Opens the outer socket from `local` to `remote` (one address family, checked by the
    /// caller): raw ESP when `udp_port` is `None`, else UDP from and to `udp_port`. Needs
    /// CAP_NET_RAW for raw ESP (`PermissionDenied` otherwise); `AddrNotAvailable` when `local`
    /// is no address of this host; `AddrInUse` when the UDP port is taken.
    pub fn open(local: IpAddr, remote: IpAddr, udp_port: Option<u16>) -> io::Result<OuterSocket> {
        let v6 = local.is_ipv6();
        if v6 != remote.is_ipv6() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "local and remote addresses are of different families",
            ));
        }
        let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
        let port = udp_port.unwrap_or(0);
        let sock = match udp_port {
            None => Socket::new(
                domain,
                Type::RAW,
                Some(Protocol::from(i32::from(ESP_PROTOCOL))),
            )?,
            Some(_) => Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?,
        };
        if v6 && udp_port.is_some() {
            // A raw socket has its protocol as its port, and Linux refuses IPV6_V6ONLY on a
            // socket with a port (EINVAL); a raw IPv6 socket never sees IPv4 anyway.
            sock.set_only_v6(true)?;
        }
        sock.bind(&SockAddr::from(SocketAddr::new(local, port)))?;
        sock.connect(&SockAddr::from(SocketAddr::new(remote, port)))?;
        sock.set_nonblocking(true)?;
        let _ = sys::set_recv_buffer_force(sock.as_fd(), 4 << 20);
        let _ = sock.set_send_buffer_size(4 << 20);
        let gro = udp_port.is_some() && sys::set_udp_gro(sock.as_fd(), true).is_ok();
        Ok(OuterSocket {
            sock,
            v6,
            udp: udp_port,
            peer_errors: AtomicU64::new(0),
            gso: AtomicBool::new(udp_port.is_some()),
            gro,
            link: RwLock::new(None),
            link_sent: AtomicU64::new(0),
            link_bypassed: AtomicU64::new(0),
            link_errors: AtomicU64::new(0),
        })
    }

    /// Sends protocol-50 packets of [`send_batch_framed`](Self::send_batch_framed) as Ethernet
    /// frames to `hop` (see the module docs), or through the raw socket again (`None`, or a hop
    /// that is not [`usable`](NextHop::usable)). Packets up to `limit` bytes of outer IP packet
    /// (clamped to the interface's MTU) take the link. Returns whether the link path is in use.
    /// Errors: UDP encapsulation (the link path is protocol 50's), or opening the AF_PACKET
    /// socket (CAP_NET_RAW, the interface gone); the raw socket is used then.
    pub fn use_link(&self, hop: Option<&NextHop>, limit: usize) -> io::Result<bool> {
        let hop = match hop {
            Some(h) if h.usable() => h,
            _ => {
                *self.link.write().unwrap_or_else(|p| p.into_inner()) = None;
                return Ok(false);
            }
        };
        if self.udp.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the link path carries protocol 50 only, not ESP in UDP",
            ));
        }
        let limit = limit.min(hop.mtu as usize);
        if let Some(cur) = self.link.read().unwrap_or_else(|p| p.into_inner()).as_ref()
            && cur.hop == *hop
            && cur.limit == limit
        {
            return Ok(true);
        }
        let (Some(src), Some(dst)) = (hop.src_mac, hop.dst_mac) else {
            return Ok(false);
        };
        let sock = sys::RawSocket::open(&hop.ifname, 0)?;
        let mut eth = [0u8; 14];
        eth[0..6].copy_from_slice(&dst);
        eth[6..12].copy_from_slice(&src);
        eth[12..14].copy_from_slice(if self.v6 {
            &[0x86, 0xdd]
        } else {
            &[0x08, 0x00]
        });
        let path = LinkPath {
            sock,
            eth,
            limit,
            hop: hop.clone(),
        };
        *self.link.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(path));
        Ok(true)
    }

    /// The link path in use (`None`: protocol-50 packets go through the raw socket).
    pub fn link(&self) -> Option<LinkInfo> {
        self.link
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|l| LinkInfo {
                hop: l.hop.clone(),
                limit: l.limit,
            })
    }

    /// Packets sent on the link path; packets of framed batches that took the raw socket; link
    /// sends the kernel refused.
    pub fn link_counters(&self) -> (u64, u64, u64) {
        (
            self.link_sent.load(Ordering::Relaxed),
            self.link_bypassed.load(Ordering::Relaxed),
            self.link_errors.load(Ordering::Relaxed),
        )
    }

    /// The length of the outer IP header in front of each ESP packet on the link path (20 for
    /// IPv4, 40 for IPv6).
    pub fn ip_header_len(&self) -> usize {
        if self.v6 { 40 } else { 20 }
    }

    /// [`send_batch`](Self::send_batch) for ESP packets with room for the outer IP header in
    /// front of each: packet `i` is `buf[at..at + len]` for `(at, len) = units[i]`, and
    /// `buf[at - h..at]` (`h` = [`ip_header_len`](Self::ip_header_len)) is free to write. On
    /// the link path each packet gets its outer IP header there from `outer_ip(header, total)`
    /// (`total`: the outer IP packet's length) and leaves as an Ethernet frame; packets longer
    /// than the link's limit, and everything without a link path, go through the socket as
    /// [`send_batch`](Self::send_batch) sends them. A link send the kernel refuses drops the
    /// link path (the caller learns the next hop again) and the rest of the batch takes the
    /// socket. Returns how many packets were not sent and the last error.
    pub fn send_batch_framed(
        &self,
        buf: &mut [u8],
        units: &[(usize, usize)],
        mut outer_ip: impl FnMut(&mut [u8], usize),
    ) -> (usize, Option<io::Error>) {
        let link = self.link.read().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(link) = link else {
            return self.send_batch(buf, units);
        };
        let h = self.ip_header_len();
        let mut frames = [(0usize, 0usize); sys::MAX_BATCH];
        let (mut lost, mut last) = (0, None);
        let mut i = 0;
        while i < units.len() {
            // A run of packets that fit the link, then (if any) one that does not.
            let mut k = 0;
            while i < units.len() && k < frames.len() {
                let (at, len) = units[i];
                let total = h + len;
                if at < h || at + len > buf.len() || total > link.limit {
                    break;
                }
                outer_ip(&mut buf[at - h..at], total);
                frames[k] = (at - h, total);
                k += 1;
                i += 1;
            }
            if k > 0 {
                let (sent, err) =
                    sys::send_batch_prefixed(link.sock.as_fd(), &link.eth, buf, &frames[..k]);
                self.link_sent.fetch_add(sent as u64, Ordering::Relaxed);
                if let Some(e) = err {
                    if matches!(e.raw_os_error(), Some(libc::ENOBUFS | libc::EAGAIN)) {
                        // The device queue stayed full (a shaped link, a slow device): what
                        // the kernel did not take is lost here, as the raw socket loses it
                        // (which ignores ENOBUFS); the link path stays.
                        let rest = units.len() - (i - (k - sent));
                        return (lost + rest, Some(e));
                    }
                    // The interface went away or down, or refuses the frame: the socket takes
                    // this packet and the rest; the caller learns the next hop again.
                    self.link_errors.fetch_add(1, Ordering::Relaxed);
                    *self.link.write().unwrap_or_else(|p| p.into_inner()) = None;
                    let rest = &units[i - (k - sent)..];
                    self.link_bypassed
                        .fetch_add(rest.len() as u64, Ordering::Relaxed);
                    let (l, e2) = self.send_batch(buf, rest);
                    return (lost + l, e2.or(Some(e)));
                }
            }
            if i < units.len() && k < frames.len() {
                // Longer than the link takes (or not laid out for it): the raw socket.
                self.link_bypassed.fetch_add(1, Ordering::Relaxed);
                let (l, e) = self.send_batch(buf, &units[i..i + 1]);
                lost += l;
                if e.is_some() {
                    last = e;
                }
                i += 1;
            }
        }
        (lost, last)
    }

    /// Whether batches are sent with UDP segmentation offload (UDP encapsulation, until the
    /// kernel refuses it once).
    pub fn udp_gso(&self) -> bool {
        self.gso.load(Ordering::Relaxed)
    }

    /// Whether UDP receive offload is on ([`recv_batch`](Self::recv_batch) may return several
    /// ESP packets in one message).
    pub fn udp_gro(&self) -> bool {
        self.gro
    }

    /// Whether a received packet starts with its outer IP header (raw IPv4 only).
    pub fn header_included(&self) -> bool {
        !self.v6 && self.udp.is_none()
    }

    /// The UDP port, with UDP encapsulation.
    pub fn udp_port(&self) -> Option<u16> {
        self.udp
    }

    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    /// Sends one ESP packet (SPI to ICV) to the remote endpoint; the kernel adds the outer
    /// header(s). An error ICMP reported for an earlier send is counted and the send retried.
    pub fn send(&self, esp: &[u8]) -> io::Result<()> {
        let mut retried = false;
        loop {
            match self.sock.send(esp) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Send queue full: wait for room rather than lose the packet.
                    sys::wait_writable(self.sock.as_fd(), Some(Duration::from_millis(100)))?;
                }
                Err(e) if !retried && is_peer_error(&e) => {
                    self.peer_errors.fetch_add(1, Ordering::Relaxed);
                    retried = true;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends ESP packets with one `sendmmsg` per up to [`sys::MAX_BATCH`]: packet `i` is
    /// `buf[at..at + len]` for `(at, len) = units[i]`. An error ICMP reported for an earlier
    /// send is counted and the batch goes on from where it stopped; a packet the kernel refuses
    /// otherwise is skipped. Returns how many packets were not sent and the last error.
    pub fn send_batch(&self, buf: &[u8], units: &[(usize, usize)]) -> (usize, Option<io::Error>) {
        let mut at = 0;
        if self.udp.is_some() && self.gso.load(Ordering::Relaxed) && units.len() <= sys::MAX_BATCH {
            // UDP segmentation offload: runs of equal-length ESP packets leave as one send each.
            let mut groups = [(0usize, 0usize, 0u16); sys::MAX_BATCH];
            let g = gso_groups(units, &mut groups);
            let (done, err) = sys::send_udp_gso_batch(self.sock.as_fd(), buf, units, &groups[..g]);
            match err {
                None => return (0, None),
                Some(e) => {
                    if is_peer_error(&e) {
                        self.peer_errors.fetch_add(1, Ordering::Relaxed);
                    } else {
                        // Refused (no checksum offload on the route's device, an old kernel):
                        // one packet per datagram from now on.
                        self.gso.store(false, Ordering::Relaxed);
                    }
                    at = groups[done].0;
                }
            }
        }
        let mut lost = 0;
        let mut last = None;
        let mut retried = false;
        while at < units.len() {
            let end = (at + sys::MAX_BATCH).min(units.len());
            let (sent, err) = sys::send_batch_at(self.sock.as_fd(), buf, &units[at..end]);
            at += sent;
            match err {
                None => {}
                Some(e) if !retried && is_peer_error(&e) => {
                    self.peer_errors.fetch_add(1, Ordering::Relaxed);
                    retried = true;
                }
                Some(e) if e.kind() == io::ErrorKind::InvalidInput => {
                    // The units do not fit `buf`: a caller's error, nothing more is sent.
                    return (lost + units.len() - at, Some(e));
                }
                Some(e) => {
                    at += 1;
                    lost += 1;
                    last = Some(e);
                }
            }
        }
        (lost, last)
    }

    /// Receives up to `lens.len()` packets with one non-blocking `recvmmsg` (see
    /// [`sys::recv_batch`]: packet `i` at `buf[i * stride + off..]`, `lens[i]` 0 when it did not
    /// fit). Errors ICMP reported for earlier sends are skipped and counted as in
    /// [`recv`](Self::recv). Returns how many arrived (0: none queued).
    ///
    /// With UDP receive offload ([`udp_gro`](Self::udp_gro)), message `i` may hold several ESP
    /// packets back to back: each `segs[i]` bytes but the last (`segs[i]` is 0 for one packet).
    pub fn recv_batch(
        &self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        lens: &mut [usize],
        segs: &mut [u16],
    ) -> io::Result<usize> {
        loop {
            let r = if self.gro {
                sys::recv_batch_gro(self.sock.as_fd(), buf, stride, off, lens, segs)
            } else {
                segs.iter_mut().for_each(|s| *s = 0);
                sys::recv_batch(self.sock.as_fd(), buf, stride, off, lens)
            };
            match r {
                Err(e) if is_peer_error(&e) => {
                    self.peer_errors.fetch_add(1, Ordering::Relaxed);
                }
                r => return r,
            }
        }
    }

    /// Receives one packet without blocking: `Ok(None)` when none is queued. The errors ICMP
    /// brings back for an earlier send (the peer's host unreachable, no one there for ESP or
    /// the UDP port yet, `ECONNREFUSED`, `ENOPROTOOPT`, …: a connected socket reports each
    /// once) are skipped and counted ([`peer_errors`](Self::peer_errors)).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        use std::io::Read;
        loop {
            match (&self.sock).read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if is_peer_error(&e) => {
                    self.peer_errors.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Errors ICMP reported for earlier sends (skipped by [`recv`](Self::recv) and
    /// [`send`](Self::send)).
    pub fn peer_errors(&self) -> u64 {
        self.peer_errors.load(Ordering::Relaxed)
    }

    /// Waits until a packet can be read or `timeout` passes (`Ok(false)`).
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        sys::wait_readable(self.sock.as_fd(), Some(timeout))
    }

    /// The path MTU the kernel knows towards the remote endpoint.
    pub fn path_mtu(&self) -> io::Result<u32> {
        sys::path_mtu(self.sock.as_fd(), self.v6)
    }

    /// Packets the kernel dropped at this socket for a full receive queue.
    pub fn queue_drops(&self) -> u64 {
        sys::socket_drops(self.sock.as_fd()).unwrap_or(0)
    }
}

impl AsFd for OuterSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One family for both ends, refused before any socket is made (no privileges needed).
    #[test]
    fn mixed_families_are_refused() {
        let e = OuterSocket::open(
            "192.0.2.1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
            None,
        )
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    /// The errors ICMP brings back for an earlier send are told apart from real failures.
    #[test]
    fn icmp_reported_errors_are_peer_errors() {
        for code in [libc::ECONNREFUSED, libc::EHOSTUNREACH, libc::ENOPROTOOPT] {
            assert!(is_peer_error(&io::Error::from_raw_os_error(code)));
        }
        for code in [libc::EBADF, libc::ENOMEM, libc::EINVAL] {
            assert!(!is_peer_error(&io::Error::from_raw_os_error(code)));
        }
    }

    #[test]
    fn gso_groups_are_runs_of_one_length_with_a_shorter_last() {
        let mut g = [(0, 0, 0); sys::MAX_BATCH];
        let u = [
            (0, 100),
            (100, 100),
            (200, 60),
            (300, 100),
            (400, 100),
            (500, 120),
        ];
        let n = gso_groups(&u, &mut g);
        assert_eq!(&g[..n], &[(0, 3, 100), (3, 2, 100), (5, 1, 120)]);
        let big: Vec<(usize, usize)> = (0..50).map(|i| (i * 1500, 1500)).collect();
        let n = gso_groups(&big, &mut g);
        assert_eq!(&g[..n], &[(0, 43, 1500), (43, 7, 1500)]);
        assert_eq!(gso_groups(&[], &mut g), 0);
    }
}
