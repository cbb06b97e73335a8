//! The link a node sends and receives protected units on: an AF_PACKET raw socket (whole
//! Ethernet frames of one EtherType), a raw IPv4 socket (ESP packets through the kernel's IP
//! layer), or a UDP socket (SecOC and SOME/IP units, and every profile's units on the no-root
//! loopback fallback, one per datagram).

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use crate::rawip::RawIpSocket;
use crate::sys::{self, PacketType, RawSocket};
use crate::udp::UdpTransport;
use serde::{Deserialize, Serialize};

/// How to open a link.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum LinkSpec {
    /// Raw Ethernet on interface `ifname`, frames of `ethertype`.
    Raw { ifname: String, ethertype: u16 },
    /// Raw IPv4 packets of `protocol` to and from `peer`; a received unit is what follows the
    /// IPv4 header (which lands in the 20 bytes before it).
    RawIp { protocol: u8, peer: Ipv4Addr },
    /// UDP bound to `local` (port 0: any); sends to `peer` until a datagram from elsewhere
    /// verified, then answers its source (`peer: None`: answer whoever sent the last unit).
    Udp {
        local: SocketAddr,
        peer: Option<SocketAddr>,
    },
    /// UDP bound to `local` that exchanges datagrams with `peer` only: a datagram from any
    /// other address or port is counted in [`Link::foreign_drops`] and skipped (a SecOC socket
    /// connection of the AUTOSAR socket adaptor is bound to its remote address).
    UdpPeer { local: SocketAddr, peer: SocketAddr },
}

/// An open link.
pub enum Link {
    Raw(RawSocket),
    /// The socket, the peer, and how many packets from other sources were dropped.
    RawIp(RawIpSocket, Ipv4Addr, u64),
    Udp {
        sock: UdpTransport,
        peer: Option<SocketAddr>,
        last_src: Option<SocketAddr>,
        /// Receive from `peer` only; datagrams from elsewhere are counted in `foreign`.
        only_peer: bool,
        foreign: u64,
    },
}

impl Link {
    pub fn open(spec: &LinkSpec) -> io::Result<Link> {
        match spec {
            LinkSpec::Raw { ifname, ethertype } => {
                let s = RawSocket::open(ifname, *ethertype)?;
                s.set_recv_buffer(4 << 20)?;
                // Frames to other hosts (a flooding switch) never reach the queue.
                s.drop_other_host()?;
                Ok(Link::Raw(s))
            }
            LinkSpec::RawIp { protocol, peer } => {
                Ok(Link::RawIp(RawIpSocket::open(*protocol)?, *peer, 0))
            }
            LinkSpec::Udp { local, peer } => Ok(Link::Udp {
                sock: UdpTransport::bind(*local)?,
                peer: *peer,
                last_src: None,
                only_peer: false,
                foreign: 0,
            }),
            LinkSpec::UdpPeer { local, peer } => Ok(Link::Udp {
                sock: UdpTransport::bind(*local)?,
                peer: Some(*peer),
                last_src: None,
                only_peer: true,
                foreign: 0,
            }),
        }
    }

    /// The local UDP port (0 for raw links).
    pub fn local_port(&self) -> u16 {
        match self {
            Link::Raw(_) | Link::RawIp(..) => 0,
            Link::Udp { sock, .. } => sock.local_addr().map(|a| a.port()).unwrap_or(0),
        }
    }

    /// Sends one unit. UDP without a known peer answers the source of the last received unit.
    pub fn send(&self, unit: &[u8]) -> io::Result<()> {
        match self {
            Link::Raw(s) => s.send(unit).map(|_| ()),
            Link::RawIp(s, peer, _) => s.send_to(unit, *peer).map(|_| ()),
            Link::Udp {
                sock,
                peer,
                last_src,
                ..
            } => {
                let to = peer.or(*last_src).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::NotConnected, "no UDP peer known yet")
                })?;
                sock.send_to(unit, to).map(|_| ())
            }
        }
    }

    /// Packets a raw IPv4 link dropped because they came from another source than its peer
    /// (a transport-mode SA is bound to its two addresses), likewise datagrams of a
    /// [`LinkSpec::UdpPeer`] link; 0 for other links.
    pub fn foreign_drops(&self) -> u64 {
        match self {
            Link::RawIp(_, _, n) => *n,
            Link::Udp { foreign, .. } => *foreign,
            _ => 0,
        }
    }

    /// Sets the kernel receive buffer (the kernel doubles `bytes`), beyond `net.core.rmem_max`
    /// where the process may; returns the size the kernel reports.
    pub fn set_recv_buffer(&self, bytes: usize) -> io::Result<usize> {
        sys::set_recv_buffer_force(self.fd(), bytes)
    }

    /// Units the kernel dropped at this link's socket since it was opened because its receive
    /// queue was full (`SO_MEMINFO`; for an AF_PACKET socket the same count as
    /// `PACKET_STATISTICS` `tp_drops`).
    pub fn socket_drops(&self) -> io::Result<u64> {
        sys::socket_drops(self.fd())
    }

    /// Receives up to `lens.len()` units at once (raw links: one `recvmmsg`; UDP: one unit),
    /// waiting up to `timeout` for the first by sleeping in the kernel or, with `busy`, by
    /// spinning. Unit `i` lands at `buf[i * stride + off..(i + 1) * stride]` as [`Link::recv`]
    /// places it, its length in `lens[i]`, or `None` for a frame [`Link::recv`] would skip
    /// (another host's, cut short, or from a foreign source, which is counted). Returns how
    /// many slots were filled (0: nothing arrived in time).
    pub fn recv_units(
        &mut self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        lens: &mut [Option<usize>],
        timeout: Duration,
        busy: bool,
    ) -> io::Result<usize> {
        const HLEN: usize = 20;
        let want = lens.len().min(sys::MAX_BATCH).min(buf.len() / stride);
        match self {
            Link::Raw(s) => {
                let mut metas = [sys::RecvMeta {
                    len: 0,
                    wire_len: 0,
                    packet_type: PacketType::Other(0),
                    timestamp: None,
                }; sys::MAX_BATCH];
                let n = wait_batch(s.as_fd(), timeout, busy, || {
                    s.recv_batch(buf, stride, off, &mut metas[..want])
                })?;
                for (len, m) in lens.iter_mut().zip(&metas).take(n) {
                    *len = match m.packet_type {
                        PacketType::OtherHost | PacketType::Outgoing => None,
                        _ if m.truncated() => None,
                        _ => Some(m.len),
                    };
                }
                Ok(n)
            }
            Link::RawIp(s, peer, foreign) => {
                let start = off.checked_sub(HLEN).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "raw IPv4 link needs offset ≥ 20",
                    )
                })?;
                let mut raw = [0usize; sys::MAX_BATCH];
                let fd = s.fd();
                let n = wait_batch(fd, timeout, busy, || {
                    sys::recv_batch(fd, buf, stride, start, &mut raw[..want])
                })?;
                for (i, (len, &got)) in lens.iter_mut().zip(&raw).take(n).enumerate() {
                    let h = &buf[i * stride + start..];
                    *len = if got >= HLEN && h[12..16] != peer.octets() {
                        *foreign += 1;
                        None
                    } else if got >= HLEN && h[0] == 0x45 {
                        Some(got - HLEN)
                    } else {
                        Some(0)
                    };
                }
                Ok(n)
            }
            Link::Udp { .. } => {
                if want == 0 {
                    return Ok(0);
                }
                Ok(
                    match self.recv_one(&mut buf[..stride], off, timeout, busy)? {
                        Received::Unit(n) => {
                            lens[0] = Some(n);
                            1
                        }
                        Received::Skipped => {
                            lens[0] = None;
                            1
                        }
                        Received::Nothing => 0,
                    },
                )
            }
        }
    }

    /// Receives one unit into `buf[off..]`, waiting up to `timeout` by sleeping in the kernel
    /// or, with `busy`, by spinning. `Ok(None)` on timeout. A raw IPv4 link needs `off` ≥ 20:
    /// the packet's IPv4 header goes just before the unit (a packet with IP options yields a
    /// 0-byte unit, which verification rejects; one from another source than the peer is
    /// counted in [`foreign_drops`](Self::foreign_drops) and skipped). A raw Ethernet link
    /// skips frames addressed to other hosts (seen only when the switch floods), as a network
    /// interface outside promiscuous mode does.
    pub fn recv(
        &mut self,
        buf: &mut [u8],
        off: usize,
        timeout: Duration,
        busy: bool,
    ) -> io::Result<Option<usize>> {
        // The clock is read only once something was skipped (not on the measured path); the
        // wait then runs `timeout` from that first skipped frame.
        let mut deadline = None;
        let mut left = timeout;
        loop {
            match self.recv_one(buf, off, left, busy)? {
                Received::Unit(n) => return Ok(Some(n)),
                Received::Nothing => return Ok(None),
                Received::Skipped if left.is_zero() => return Ok(None),
                Received::Skipped => {
                    let d = *deadline.get_or_insert_with(|| std::time::Instant::now() + timeout);
                    left = d.saturating_duration_since(std::time::Instant::now());
                }
            }
        }
    }

    fn recv_one(
        &mut self,
        buf: &mut [u8],
        off: usize,
        timeout: Duration,
        busy: bool,
    ) -> io::Result<Received> {
        match self {
            Link::Raw(s) => {
                let buf = &mut buf[off..];
                let m = if busy {
                    s.recv_busy_poll(buf, timeout)?
                } else {
                    s.recv(buf, Some(timeout))?
                };
                Ok(match m {
                    None => Received::Nothing,
                    Some(m) if m.packet_type == PacketType::OtherHost => Received::Skipped,
                    Some(m) if m.truncated() => Received::Skipped,
                    Some(m) => Received::Unit(m.len),
                })
            }
            Link::RawIp(s, peer, foreign) => {
                const HLEN: usize = 20;
                let start = off.checked_sub(HLEN).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "raw IPv4 link needs offset ≥ 20",
                    )
                })?;
                let buf = &mut buf[start..];
                let n = if busy {
                    s.recv_busy_poll(buf, timeout)?
                } else {
                    s.recv(buf, timeout)?
                };
                Ok(match n {
                    None => Received::Nothing,
                    Some(n) if n >= HLEN && buf[12..16] != peer.octets() => {
                        *foreign += 1;
                        Received::Skipped
                    }
                    Some(n) if n >= HLEN && buf[0] == 0x45 => Received::Unit(n - HLEN),
                    Some(_) => Received::Unit(0),
                })
            }
            Link::Udp {
                sock,
                last_src,
                peer,
                only_peer,
                foreign,
            } => {
                let buf = &mut buf[off..];
                let r = if busy {
                    sock.recv_busy_poll(buf, timeout)?
                } else {
                    sock.recv(buf, Some(timeout.max(Duration::from_micros(1))))?
                };
                Ok(match r {
                    None => Received::Nothing,
                    Some((_, src)) if *only_peer && Some(src) != *peer => {
                        *foreign += 1;
                        Received::Skipped
                    }
                    Some((n, src)) => {
                        *last_src = Some(src);
                        Received::Unit(n)
                    }
                })
            }
        }
    }
}

/// Batched I/O (`sendmmsg`/`recvmmsg`) for the throughput experiment: units live in one flat
/// buffer, unit `i` in the slot `buf[i * stride..(i + 1) * stride]`.
impl Link {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Link::Raw(s) => s.as_fd(),
            Link::RawIp(s, ..) => s.fd(),
            Link::Udp { sock, .. } => sock.socket().as_fd(),
        }
    }

    /// Larger kernel buffers (`bytes` each way), so bursts of a batch are not dropped by the
    /// sockets themselves.
    pub fn set_buffers(&self, bytes: usize) -> io::Result<()> {
        sys::set_socket_buffers(self.fd(), bytes)
    }

    /// For a sender: makes the peer the default destination of UDP and raw IPv4 links (raw
    /// Ethernet frames carry their own), as [`send_batch`](Self::send_batch) needs.
    pub fn connect_peer(&self) -> io::Result<()> {
        match self {
            Link::Raw(_) => Ok(()),
            Link::RawIp(s, peer, _) => s.connect(*peer),
            Link::Udp { sock, peer, .. } => match peer {
                Some(p) => sock.connect(*p),
                None => Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "no UDP peer to send to",
                )),
            },
        }
    }

    /// Sends the units `buf[i * stride..][..lens[i]]` with one `sendmmsg` per batch.
    pub fn send_batch(&self, buf: &[u8], stride: usize, lens: &[usize]) -> io::Result<()> {
        sys::send_batch(self.fd(), buf, stride, lens)
    }

    /// Receives up to `lens.len()` units, waiting up to `timeout` for the first; unit `i` lands
    /// at `buf[i * stride + off..]` (`off` as [`Link::recv`] takes it: ≥ 20 on a raw IPv4 link,
    /// whose IPv4 header lands just before the unit) with its length in `lens[i]` (0: truncated
    /// or not a plain IPv4 header, which verification rejects). Returns how many arrived.
    /// Datagrams of a [`LinkSpec::UdpPeer`] link are not filtered by source here.
    pub fn recv_batch(
        &self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        lens: &mut [usize],
        timeout: Duration,
    ) -> io::Result<usize> {
        const HLEN: usize = 20;
        let fd = self.fd();
        let raw_ip = matches!(self, Link::RawIp(..));
        let start = if raw_ip {
            off.checked_sub(HLEN).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "raw IPv4 link needs offset ≥ 20",
                )
            })?
        } else {
            off
        };
        let mut n = sys::recv_batch(fd, buf, stride, start, lens)?;
        if n == 0 {
            if !sys::wait_readable(fd, Some(timeout))? {
                return Ok(0);
            }
            n = sys::recv_batch(fd, buf, stride, start, lens)?;
        }
        if raw_ip {
            for (i, len) in lens.iter_mut().enumerate().take(n) {
                let h = &buf[i * stride + start..];
                *len = if *len >= HLEN && h[0] == 0x45 {
                    *len - HLEN
                } else {
                    0
                };
            }
        }
        Ok(n)
    }
}

/// Runs `batch` (a non-blocking batched receive: how many arrived); if nothing was queued,
/// waits up to `timeout` for `fd` to become readable (or spins on `batch`, with `busy`) and
/// tries again.
fn wait_batch(
    fd: BorrowedFd<'_>,
    timeout: Duration,
    busy: bool,
    mut batch: impl FnMut() -> io::Result<usize>,
) -> io::Result<usize> {
    let n = batch()?;
    if n > 0 || timeout.is_zero() {
        return Ok(n);
    }
    if busy {
        return Ok(
            crate::wait::spin(timeout, || batch().map(|n| (n > 0).then_some(n)))?.unwrap_or(0),
        );
    }
    if !sys::wait_readable(fd, Some(timeout))? {
        return Ok(0);
    }
    batch()
}

/// What one receive call produced.
enum Received {
    Unit(usize),
    /// A frame or packet the link does not hand on (see [`Link::recv`]).
    Skipped,
    Nothing,
}
