//! Options and readiness of any socket (AF_PACKET, UDP, raw IP): typed `setsockopt` /
//! `getsockopt`, receive and send buffer sizes (forced beyond `rmem_max` where allowed), the
//! kernel's drop counter, and waiting until a descriptor (or one of many: [`poll_many`]) is
//! ready.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr;
use std::time::Duration;

/// Socket option values: plain C data for which every byte pattern is a valid value, so the
/// kernel may write any bytes into one.
///
/// # Safety
/// Implement only for types without padding invariants, references or niches.
pub(super) unsafe trait OptionValue: Copy {}
// SAFETY: integers and arrays of integers accept any byte pattern.
unsafe impl OptionValue for libc::c_int {}
// SAFETY: as above.
unsafe impl OptionValue for [u32; 16] {}
// SAFETY: two u32 fields.
unsafe impl OptionValue for libc::tpacket_stats {}
// SAFETY: a length and a raw pointer (any value is valid to hold; the kernel only reads the
// program it points to, which the caller keeps alive across the call).
unsafe impl OptionValue for libc::sock_fprog {}
// SAFETY: integers and a byte array.
unsafe impl OptionValue for libc::packet_mreq {}

/// `setsockopt(fd, level, name, value)`.
pub(super) fn set_option<T: OptionValue>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: value points to a T that lives across the call, and the length passed is its
    // size; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast::<libc::c_void>(),
            mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `getsockopt(fd, level, name)` into `value`; returns how many bytes the kernel wrote.
pub(super) fn get_option<T: OptionValue>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &mut T,
) -> io::Result<usize> {
    let mut len = mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: value and len are valid for writes; len holds T's size, so the kernel writes at
    // most that many bytes, and any bytes are a valid T (OptionValue).
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *mut T).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(len as usize)
    }
}

/// Waits until `fd` is readable or `timeout` passes (`None` = forever). Returns `Ok(true)` when
/// readable. Uses `ppoll`, so timeouts have nanosecond resolution.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    poll_one(fd, libc::POLLIN, timeout)
}

/// Waits until one of `fds` can be read (or is closed or in error) or `timeout` passes: one
/// `ppoll` over all of them ([`poll_many`]). Returns how many are ready (0: the time passed).
pub fn wait_readable_any(fds: &[BorrowedFd<'_>], timeout: Duration) -> io::Result<usize> {
    let mut entries: Vec<PollEntry<'_>> = fds
        .iter()
        .map(|&fd| PollEntry {
            fd,
            read: true,
            write: false,
            ready: false,
        })
        .collect();
    poll_many(&mut entries, Some(timeout))
}

/// Waits until `fd` can be written (room in its send queue) or `timeout` passes (`Ok(false)`),
/// as [`wait_readable`] does for reading.
pub fn wait_writable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    poll_one(fd, libc::POLLOUT, timeout)
}

/// One descriptor of [`poll_many`]: what to wait for, and what came (`ready`: readable,
/// writable, closed or in error, as asked; a closed or failed descriptor is always ready).
#[derive(Debug)]
pub struct PollEntry<'a> {
    pub fd: BorrowedFd<'a>,
    pub read: bool,
    pub write: bool,
    pub ready: bool,
}

/// Waits until one of `entries` is ready or `timeout` passes (`None` = forever); sets each
/// entry's `ready` and returns how many are. One `ppoll` over all of them: many idle sockets
/// cost nothing while they stay idle. An interrupted wait returns 0.
pub fn poll_many(entries: &mut [PollEntry<'_>], timeout: Option<Duration>) -> io::Result<usize> {
    let mut pfds: Vec<libc::pollfd> = entries
        .iter()
        .map(|e| libc::pollfd {
            fd: e.fd.as_raw_fd(),
            events: if e.read { libc::POLLIN } else { 0 } | if e.write { libc::POLLOUT } else { 0 },
            revents: 0,
        })
        .collect();
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: pfds is a live array of exactly pfds.len() pollfds (the kernel writes only their
    // revents); ts_ptr is null or points to a timespec alive across the call; a null signal
    // mask leaves the mask unchanged.
    let r = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            ts_ptr,
            ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            entries.iter_mut().for_each(|e| e.ready = false);
            Ok(0)
        } else {
            Err(e)
        };
    }
    let mut n = 0;
    for (e, p) in entries.iter_mut().zip(&pfds) {
        e.ready = p.revents != 0;
        n += usize::from(e.ready);
    }
    Ok(n)
}

fn poll_one(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    timeout: Option<Duration>,
) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: pfd is one valid pollfd; ts_ptr is null or points to a timespec alive across the
    // call; a null signal mask leaves the mask unchanged.
    let r = unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        // An interrupted wait counts as "not yet readable"; the caller loops on its deadline.
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

/// Sets a socket's kernel receive buffer to `bytes` (the kernel doubles it), beyond
/// `net.core.rmem_max` with `SO_RCVBUFFORCE` where the process may (CAP_NET_ADMIN), otherwise
/// with `SO_RCVBUF` (capped at `rmem_max`). Returns the size the kernel reports afterwards.
pub fn set_recv_buffer_force(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<usize> {
    let v = bytes.min(i32::MAX as usize / 2) as libc::c_int;
    let set = |name| set_option(fd, libc::SOL_SOCKET, name, &v);
    match set(libc::SO_RCVBUFFORCE) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => set(libc::SO_RCVBUF)?,
        Err(e) => return Err(e),
    }
    let mut got: libc::c_int = 0;
    get_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &mut got)?;
    Ok(got.max(0) as usize)
}

/// Packets the kernel dropped at this socket since it was opened because its receive queue
/// was full or its memory accounting refused them (`SO_MEMINFO`, `SK_MEMINFO_DROPS`): any
/// socket type, the counter is never reset.
pub fn socket_drops(fd: BorrowedFd<'_>) -> io::Result<u64> {
    // The kernel fills as many u32 as fit (SK_MEMINFO_VARS, 9 to date); room for growth.
    let mut info = [0u32; 16];
    let len = get_option(fd, libc::SOL_SOCKET, libc::SO_MEMINFO, &mut info)?;
    let at = libc::SK_MEMINFO_DROPS as usize;
    if len < (at + 1) * mem::size_of::<u32>() {
        return Err(io::Error::other("SO_MEMINFO has no drop counter"));
    }
    Ok(u64::from(info[at]))
}

/// The path MTU the kernel knows for the destination of a connected IPv4 (`v6 = false`) or IPv6
/// socket (`IP_MTU` / `IPV6_MTU`, ip(7) and ipv6(7)): the route's MTU, or the device's, lowered
/// by any ICMP "fragmentation needed" / "packet too big" learned since.
pub fn path_mtu(fd: BorrowedFd<'_>, v6: bool) -> io::Result<u32> {
    let mut mtu: libc::c_int = 0;
    let (level, name) = if v6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    get_option(fd, level, name, &mut mtu)?;
    u32::try_from(mtu).map_err(|_| io::Error::other(format!("negative path MTU {mtu}")))
}

/// Sets a socket's kernel receive and send buffer sizes (`SO_RCVBUF`, `SO_SNDBUF`; the kernel
/// doubles them and caps them at `net.core.rmem_max`/`wmem_max`).
pub fn set_socket_buffers(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for name in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        set_option(fd, libc::SOL_SOCKET, name, &v)?;
    }
    Ok(())
}

/// Turns UDP receive offload (`UDP_GRO`) on or off for a UDP socket: with it, one receive may
/// return several datagrams of one flow back to back (their size in a `UDP_GRO` control
/// message, [`super::recv_batch_gro`]).
pub fn set_udp_gro(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_option(fd, libc::SOL_UDP, libc::UDP_GRO, &libc::c_int::from(on))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A UDP socket with a tiny receive buffer: every datagram is either queued or counted by
    /// `SO_MEMINFO`; a forced buffer is at least what was asked for (beyond `rmem_max` as root).
    #[test]
    fn socket_drops_and_forced_buffers() {
        use std::net::UdpSocket;
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_nonblocking(true).unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        assert_eq!(socket_drops(b.as_fd()).unwrap(), 0);
        set_recv_buffer_force(b.as_fd(), 1).unwrap();
        let sent = 200u64;
        for _ in 0..sent {
            a.send(&[7u8; 1000]).unwrap();
        }
        let mut queued = 0u64;
        let mut buf = [0u8; 2048];
        while b.recv(&mut buf).is_ok() {
            queued += 1;
        }
        let drops = socket_drops(b.as_fd()).unwrap();
        assert!(drops > 0);
        assert_eq!(queued + drops, sent);

        let big = 64 << 20;
        let got = set_recv_buffer_force(b.as_fd(), big).unwrap();
        // SAFETY: geteuid takes no arguments and only returns a number.
        if unsafe { libc::geteuid() } == 0 {
            assert!(got >= big, "{got}");
        } else {
            assert!(got > 0);
        }
    }
}
