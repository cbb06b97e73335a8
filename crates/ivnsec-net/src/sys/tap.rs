//! TAP and TUN interfaces and interface settings: [`tap_create`] opens `/dev/net/tun` and
//! attaches a new TAP interface to the descriptor (`TUNSETIFF` with `IFF_TAP | IFF_NO_PI |
//! IFF_TUN_EXCL`; [`tun_create`] the same with `IFF_TUN`: IP packets instead of frames);
//! [`read_frame`] / [`write_frame`] move one whole Ethernet frame (no FCS, no packet-information
//! header) per call; [`link_up`], [`link_mtu`], [`set_link_mtu`], [`link_mac`], [`set_link_mac`]
//! read and change any interface of this namespace through the `SIOC*IF*` ioctls of a datagram
//! socket.
//!
//! The TAP is not persistent: the kernel removes the interface when the last descriptor attached
//! to it is closed — when [`Tap`](crate::tap::Tap) is dropped, and equally when the process dies
//! by any signal, SIGKILL included, because the kernel closes the descriptors of a dead process.
//! The descriptor is opened with `O_CLOEXEC`, so no child process keeps the interface alive.
//! `IFF_TUN_EXCL` makes the kernel refuse a name that is already a TUN/TAP interface instead of
//! attaching to it (a persistent TAP of someone else is never taken over).

use std::ffi::CStr;
use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// An `ifreq` naming `name` (checked: 1..IFNAMSIZ bytes, no NUL), the rest zero.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.bytes().any(|b| b == 0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name `{name}` must be 1 to 15 bytes without NUL"),
        ));
    }
    // SAFETY: ifreq is plain data (a name array and a union of integers, addresses and a
    // pointer that stays null); all-zero is a valid value.
    let mut r: libc::ifreq = unsafe { mem::zeroed() };
    for (d, s) in r.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    Ok(r)
}

/// The name the kernel wrote back into an `ifreq`.
fn ifreq_name(r: &libc::ifreq) -> String {
    let bytes: Vec<u8> = r
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Creates the TAP interface `name` (down, no address) attached to a new descriptor, which is
/// returned with the name the kernel gave (the same). Fails with `AlreadyExists` when a TUN/TAP
/// interface of that name exists, and with the kernel's error (`EBUSY`/`EINVAL`) when another
/// kind of interface has it. Needs CAP_NET_ADMIN.
pub fn tap_create(name: &str) -> io::Result<(OwnedFd, String)> {
    tuntap_create(name, libc::IFF_TAP)
}

/// Creates the TUN interface `name` (`IFF_TUN | IFF_NO_PI | IFF_TUN_EXCL`: layer 3, one whole
/// IP packet per read and write, no packet-information header), otherwise as [`tap_create`].
pub fn tun_create(name: &str) -> io::Result<(OwnedFd, String)> {
    tuntap_create(name, libc::IFF_TUN)
}

/// [`tun_create`] with `IFF_VNET_HDR`: every read and write carries a 10-byte
/// `virtio_net_hdr` in front of the packet (`ivnsec_core::wire::tcp_offload::VnetHdr`). Then
/// asks for the offloads `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6` (`TUNSETOFFLOAD`): reads may
/// bring TCP super-packets of up to 64 KiB with a partial checksum. The descriptor is returned
/// with the name and the kernel's answer to `TUNSETOFFLOAD` (`Err`: refused; the interface
/// still works, with the vnet header but without super-packets).
pub fn tun_create_offload(name: &str) -> io::Result<(OwnedFd, String, io::Result<()>)> {
    tuntap_create_offload(name, libc::IFF_TUN)
}

/// [`tap_create`] with `IFF_VNET_HDR` and the same offload request as [`tun_create_offload`]:
/// every read and write carries a `virtio_net_hdr` in front of the Ethernet frame, and reads
/// may bring TCP super-frames of up to 64 KiB (plus the Ethernet header) with a partial
/// checksum. Its offsets (`csum_start`) count from the start of the Ethernet header.
pub fn tap_create_offload(name: &str) -> io::Result<(OwnedFd, String, io::Result<()>)> {
    tuntap_create_offload(name, libc::IFF_TAP)
}

fn tuntap_create_offload(
    name: &str,
    kind: libc::c_int,
) -> io::Result<(OwnedFd, String, io::Result<()>)> {
    let (fd, got) = tuntap_create(name, kind | libc::IFF_VNET_HDR)?;
    let flags = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
    // SAFETY: TUNSETOFFLOAD takes its argument by value (an unsigned long of TUN_F_* flags);
    // no memory is passed.
    let r = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            libc::TUNSETOFFLOAD,
            libc::c_ulong::from(flags),
        )
    };
    let offload = if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    };
    Ok((fd, got, offload))
}

/// [`tap_create`] / [`tun_create`]: `kind` is `IFF_TAP` or `IFF_TUN` (with `IFF_VNET_HDR`).
fn tuntap_create(name: &str, kind: libc::c_int) -> io::Result<(OwnedFd, String)> {
    let mut req = ifreq(name)?;
    let path = c"/dev/net/tun";
    // SAFETY: path is a NUL-terminated string literal; the result is checked before use.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("{}: {e}", path_str(path))));
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns; OwnedFd closes it on drop.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    req.ifr_ifru.ifru_flags = (kind | libc::IFF_NO_PI | libc::IFF_TUN_EXCL) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq; req is valid for both and outlives the call.
    let r = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            libc::TUNSETIFF,
            &mut req as *mut libc::ifreq,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return Err(if e.raw_os_error() == Some(libc::EBUSY) {
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("interface `{name}` exists already: {e}"),
            )
        } else {
            e
        });
    }
    Ok((fd, ifreq_name(&req)))
}

fn path_str(p: &CStr) -> String {
    p.to_string_lossy().into_owned()
}

/// Reads one frame from a TAP descriptor into `buf` without blocking: `Ok(None)` when none is
/// queued. A frame longer than `buf` is cut to it by the kernel (its length is then
/// `buf.len()`; size `buf` for the MTU plus the Ethernet header and it never happens).
pub fn read_frame(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: buf is valid for writes of buf.len() bytes for the duration of the call.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Writes one whole Ethernet frame to a TAP descriptor: the kernel receives it on the interface
/// as if it came from a wire.
pub fn write_frame(fd: BorrowedFd<'_>, frame: &[u8]) -> io::Result<()> {
    loop {
        // SAFETY: frame is valid for reads of frame.len() bytes for the duration of the call.
        let n = unsafe { libc::write(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n >= 0 {
            return if n as usize == frame.len() {
                Ok(())
            } else {
                Err(io::Error::other(format!(
                    "TAP took {n} of {} bytes of a frame",
                    frame.len()
                )))
            };
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Writes one unit made of `parts` (a vnet header, then a frame or packet, possibly in
/// pieces) to a TAP or TUN descriptor with one `writev`: the kernel receives them as one, with
/// no copy here. At most 4 parts.
pub fn write_frame_parts(fd: BorrowedFd<'_>, parts: &[&[u8]]) -> io::Result<()> {
    const MAX_PARTS: usize = 4;
    if parts.len() > MAX_PARTS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "more than 4 parts for one write",
        ));
    }
    // SAFETY: iovec is plain data (a pointer and a length); all-zero is valid.
    let mut iov: [libc::iovec; MAX_PARTS] = unsafe { std::mem::zeroed() };
    let mut total = 0;
    for (v, p) in iov.iter_mut().zip(parts) {
        // The kernel only reads through iov_base for a write; the cast to *mut is what iovec
        // wants.
        v.iov_base = p.as_ptr() as *mut libc::c_void;
        v.iov_len = p.len();
        total += p.len();
    }
    loop {
        // SAFETY: iov[..parts.len()] point into the borrowed slices of `parts`, valid for reads
        // of their lengths for the duration of the call; the kernel only reads them.
        let n = unsafe { libc::writev(fd.as_raw_fd(), iov.as_ptr(), parts.len() as libc::c_int) };
        if n >= 0 {
            return if n as usize == total {
                Ok(())
            } else {
                Err(io::Error::other(format!(
                    "the TAP took {n} of {total} bytes of a frame"
                )))
            };
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A datagram socket to carry interface ioctls (any socket of this namespace serves).
fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket() takes no pointers; the result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One `SIOC*IF*` ioctl on `req`.
fn if_ioctl(request: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
    let s = control_socket()?;
    // SAFETY: the SIOC*IF* requests used here read and write one ifreq; req is valid for both
    // and outlives the call.
    let r = unsafe { libc::ioctl(s.as_raw_fd(), request as _, req as *mut libc::ifreq) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets interface `name` administratively up or down (`IFF_UP`), keeping its other flags.
pub fn link_up(name: &str, up: bool) -> io::Result<()> {
    let mut req = ifreq(name)?;
    if_ioctl(libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let mut flags = unsafe { req.ifr_ifru.ifru_flags };
    if up {
        flags |= libc::IFF_UP as libc::c_short;
    } else {
        flags &= !(libc::IFF_UP as libc::c_short);
    }
    req.ifr_ifru.ifru_flags = flags;
    if_ioctl(libc::SIOCSIFFLAGS, &mut req)
}

/// Whether interface `name` is administratively up.
pub fn link_is_up(name: &str) -> io::Result<bool> {
    let mut req = ifreq(name)?;
    if_ioctl(libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_flags } & libc::IFF_UP as libc::c_short != 0)
}

/// The MTU of interface `name`.
pub fn link_mtu(name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    if_ioctl(libc::SIOCGIFMTU, &mut req)?;
    // SAFETY: SIOCGIFMTU filled the mtu member of the union.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    u32::try_from(mtu).map_err(|_| io::Error::other(format!("negative MTU {mtu}")))
}

/// Sets the MTU of interface `name`.
pub fn set_link_mtu(name: &str, mtu: u32) -> io::Result<()> {
    let mut req = ifreq(name)?;
    req.ifr_ifru.ifru_mtu = libc::c_int::try_from(mtu)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "MTU out of range"))?;
    if_ioctl(libc::SIOCSIFMTU, &mut req)
}

/// The Ethernet address of interface `name`.
pub fn link_mac(name: &str) -> io::Result<[u8; 6]> {
    let mut req = ifreq(name)?;
    if_ioctl(libc::SIOCGIFHWADDR, &mut req)?;
    // SAFETY: SIOCGIFHWADDR filled the hwaddr member of the union.
    let sa = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (m, &b) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *m = b as u8;
    }
    Ok(mac)
}

/// Sets the Ethernet address of interface `name`.
pub fn set_link_mac(name: &str, mac: [u8; 6]) -> io::Result<()> {
    let mut req = ifreq(name)?;
    // SAFETY: sockaddr is plain data; all-zero is a valid value.
    let mut sa: libc::sockaddr = unsafe { mem::zeroed() };
    sa.sa_family = libc::ARPHRD_ETHER;
    for (d, &b) in sa.sa_data.iter_mut().zip(mac.iter()) {
        *d = b as libc::c_char;
    }
    req.ifr_ifru.ifru_hwaddr = sa;
    if_ioctl(libc::SIOCSIFHWADDR, &mut req)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_any_call() {
        assert!(ifreq("").is_err());
        assert!(ifreq("sixteen-bytes-xx").is_err());
        assert!(ifreq("a\0b").is_err());
        assert_eq!(ifreq_name(&ifreq("tap-0").unwrap()), "tap-0");
        assert!(link_mtu("ivn-no-such-if").is_err());
    }
}
