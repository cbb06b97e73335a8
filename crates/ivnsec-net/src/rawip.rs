//! A raw IPv4 socket for one IP protocol (ESP, protocol 50): the kernel's IP layer builds and
//! routes the outer IPv4 header on send; receive yields the whole IPv4 packet. Needs CAP_NET_RAW.
//! Built on socket2, whose safe API covers everything needed here (no `unsafe`).
//!
//! A raw socket for the protocol also tells the kernel that someone handles it, so a host without
//! an in-kernel ESP handler does not answer every packet with an ICMP "protocol unreachable".

use std::io::{self, Read};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// A raw IPv4 socket of one protocol.
#[derive(Debug)]
pub struct RawIpSocket {
    sock: Socket,
    protocol: u8,
    nonblocking: bool,
    read_timeout: Option<Duration>,
}

impl RawIpSocket {
    /// Opens a socket that sends and receives IPv4 packets of `protocol`.
    pub fn open(protocol: u8) -> io::Result<Self> {
        let sock = Socket::new(
            Domain::IPV4,
            Type::RAW,
            Some(Protocol::from(i32::from(protocol))),
        )?;
        sock.set_recv_buffer_size(4 << 20)?;
        Ok(RawIpSocket {
            sock,
            protocol,
            nonblocking: false,
            read_timeout: None,
        })
    }

    /// Makes `dst` the default destination (so batched sends need no address) and receives only
    /// from it.
    pub fn connect(&self, dst: Ipv4Addr) -> io::Result<()> {
        self.sock
            .connect(&SockAddr::from(SocketAddrV4::new(dst, 0)))
    }

    /// The socket, for batched I/O ([`crate::sys::send_batch`], [`crate::sys::recv_batch`]).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.sock.as_fd()
    }

    pub fn protocol(&self) -> u8 {
        self.protocol
    }

    /// Sends `payload` (what follows the IPv4 header) to `dst`; the kernel adds the header.
    pub fn send_to(&self, payload: &[u8], dst: Ipv4Addr) -> io::Result<usize> {
        self.sock
            .send_to(payload, &SockAddr::from(SocketAddrV4::new(dst, 0)))
    }

    /// Receives one IPv4 packet (header included) into `buf`, waiting up to `timeout`.
    /// `Ok(None)` on timeout.
    pub fn recv(&mut self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        self.set_nonblocking(false)?;
        let t = Some(timeout.max(Duration::from_micros(1)));
        if self.read_timeout != t {
            self.sock.set_read_timeout(t)?;
            self.read_timeout = t;
        }
        let sock = &self.sock;
        crate::wait::timed(|| (&*sock).read(buf))
    }

    /// Receives one packet by spinning on non-blocking reads until `timeout` passes.
    pub fn recv_busy_poll(
        &mut self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> io::Result<Option<usize>> {
        self.set_nonblocking(true)?;
        let sock = &self.sock;
        // Non-blocking: `timed` turns "nothing queued" (WouldBlock) into `None`.
        crate::wait::spin(timeout, || crate::wait::timed(|| (&*sock).read(&mut *buf)))
    }

    fn set_nonblocking(&mut self, on: bool) -> io::Result<()> {
        if self.nonblocking != on {
            self.sock.set_nonblocking(on)?;
            self.nonblocking = on;
        }
        Ok(())
    }
}
