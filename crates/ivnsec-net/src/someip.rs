//! Sockets of the SOME/IP bindings: UDP service endpoints, the SD socket (unicast and
//! multicast on port 30490) and TCP. Built with socket2/std: no `unsafe` here.

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// Largest UDP payload read at once.
pub const MAX_DATAGRAM: usize = 65_535;

fn udp_socket(reuse: bool) -> io::Result<Socket> {
    let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    if reuse {
        s.set_reuse_address(true)?;
    }
    Ok(s)
}

/// Receive buffer asked for on service sockets: a 425 kB camera frame arrives as ~300 SOME/IP-TP
/// segments in one burst. The kernel caps it at `net.core.rmem_max`.
pub const RECV_BUFFER: usize = 4 << 20;

/// A UDP socket bound to `addr`, with a receive timeout (so loops can check a stop flag) and a
/// receive buffer of up to [`RECV_BUFFER`] bytes.
pub fn bind_udp(addr: SocketAddrV4, read_timeout: Duration) -> io::Result<UdpSocket> {
    let s = udp_socket(false)?;
    // Best effort: a smaller buffer only risks losing bursts.
    let _ = s.set_recv_buffer_size(RECV_BUFFER);
    s.bind(&SocketAddr::V4(addr).into())?;
    let u: UdpSocket = s.into();
    u.set_read_timeout(Some(read_timeout))?;
    Ok(u)
}

/// The SD socket, with SO_REUSEADDR (other SD agents on the host may share the port). With a
/// multicast `group` it is bound to `0.0.0.0:port` (to receive both the group and unicast),
/// joined to the group on the interface that has `interface`, and sends multicast out of that
/// interface with loopback on; without one it is bound to `interface:port` (unicast only, so
/// several agents on different loopback addresses can share one host).
pub fn bind_sd(
    interface: Ipv4Addr,
    port: u16,
    group: Option<Ipv4Addr>,
    read_timeout: Duration,
) -> io::Result<UdpSocket> {
    let s = udp_socket(true)?;
    let bind_ip = if group.is_some() {
        Ipv4Addr::UNSPECIFIED
    } else {
        interface
    };
    s.bind(&SocketAddr::from((bind_ip, port)).into())?;
    if let Some(g) = group {
        s.join_multicast_v4(&g, &interface)?;
        s.set_multicast_if_v4(&interface)?;
        s.set_multicast_loop_v4(true)?;
        s.set_multicast_ttl_v4(1)?;
    }
    let u: UdpSocket = s.into();
    u.set_read_timeout(Some(read_timeout))?;
    Ok(u)
}

/// Receives one datagram; `Ok(None)` on timeout.
pub fn recv_from(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
    crate::wait::timed(|| sock.recv_from(buf))
}

/// Reads from a TCP stream into `buf`; `Ok(None)` on timeout, `Ok(Some(0))` at end of stream.
pub fn read_some(stream: &mut TcpStream, buf: &mut [u8]) -> io::Result<Option<usize>> {
    crate::wait::timed(|| stream.read(buf))
}

/// Connects with a timeout and sets TCP_NODELAY (request/response latency).
pub fn connect_tcp(addr: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_nodelay(true)?;
    Ok(s)
}
