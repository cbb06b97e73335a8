//! A UDP transport over `std::net::UdpSocket`: for ESP-in-UDP / SOME/IP, and for the no-root
//! fallback where initiator and responder talk over loopback instead of a namespace testbed.
//! Same receive modes as the raw socket: blocking with a timeout, and busy-poll.

use std::cell::Cell;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

/// A UDP socket with blocking-with-timeout and busy-poll receive.
#[derive(Debug)]
pub struct UdpTransport {
    sock: UdpSocket,
    /// Mode the socket is in now, so a receive changes it only when the mode changes.
    nonblocking: Cell<bool>,
    read_timeout: Cell<Option<Duration>>,
}

impl UdpTransport {
    /// Binds to `addr`.
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        Ok(UdpTransport {
            sock: UdpSocket::bind(addr)?,
            nonblocking: Cell::new(false),
            read_timeout: Cell::new(None),
        })
    }

    /// Binds to `127.0.0.1` on a free port chosen by the kernel.
    pub fn bind_loopback() -> io::Result<Self> {
        Self::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
    }

    /// The local address (with the port the kernel chose).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// Sends to and receives only from `peer`.
    pub fn connect(&self, peer: SocketAddr) -> io::Result<()> {
        self.sock.connect(peer)
    }

    /// Sends one datagram to the connected peer.
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.sock.send(buf)
    }

    /// Sends one datagram to `peer`.
    pub fn send_to(&self, buf: &[u8], peer: SocketAddr) -> io::Result<usize> {
        self.sock.send_to(buf, peer)
    }

    /// Receives one datagram, blocking up to `timeout` (`None` = forever). `Ok(None)` on timeout.
    pub fn recv(
        &self,
        buf: &mut [u8],
        timeout: Option<Duration>,
    ) -> io::Result<Option<(usize, SocketAddr)>> {
        if timeout == Some(Duration::ZERO) {
            return self.try_recv(buf);
        }
        self.set_nonblocking(false)?;
        if self.read_timeout.get() != timeout {
            self.sock.set_read_timeout(timeout)?;
            self.read_timeout.set(timeout);
        }
        crate::wait::timed(|| self.sock.recv_from(buf))
    }

    /// Receives one datagram by spinning on non-blocking reads until `timeout` passes.
    pub fn recv_busy_poll(
        &self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> io::Result<Option<(usize, SocketAddr)>> {
        crate::wait::spin(timeout, || self.try_recv(buf))
    }

    /// Receives one datagram if one is queued, without blocking.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
        self.set_nonblocking(true)?;
        crate::wait::timed(|| self.sock.recv_from(buf))
    }

    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        if self.nonblocking.get() != on {
            self.sock.set_nonblocking(on)?;
            self.nonblocking.set(on);
        }
        Ok(())
    }

    /// The underlying socket.
    pub fn socket(&self) -> &UdpSocket {
        &self.sock
    }
}
