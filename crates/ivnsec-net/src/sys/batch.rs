//! Batched send and receive: many units (frames, datagrams) per system call with `sendmmsg`
//! and `recvmmsg`, at most [`MAX_BATCH`] at a time, message headers on the stack (no
//! allocation). Used by every link type; [`super::RawSocket::recv_batch`] adds what AF_PACKET
//! tells about each frame.

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr;

/// Most units one batched call ([`send_batch`], [`recv_batch`]) moves.
pub const MAX_BATCH: usize = 64;

/// Sends `lens.len()` (≤ [`MAX_BATCH`]) units with `sendmmsg`: unit `i` is
/// `buf[i * stride..i * stride + lens[i]]`. The socket must know where to send (an AF_PACKET
/// socket bound to an interface, a connected UDP or raw IP socket). Loops until every unit is
/// handed to the kernel: on a blocking socket the call waits for room; `EINTR` and `ENOBUFS` (a
/// full device queue) are retried. No allocation: the message headers live on the stack.
pub fn send_batch(fd: BorrowedFd<'_>, buf: &[u8], stride: usize, lens: &[usize]) -> io::Result<()> {
    let n = lens.len();
    if n > MAX_BATCH
        || (n > 0
            && ((n - 1) * stride + lens[n - 1] > buf.len() || lens.iter().any(|&l| l > stride)))
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "batch does not fit the buffer",
        ));
    }
    // SAFETY: iovec and mmsghdr are plain data (pointers and integers); all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    for i in 0..n {
        // The kernel only reads through iov_base for a send; the cast to *mut is what iovec wants.
        iov[i].iov_base = buf[i * stride..].as_ptr() as *mut libc::c_void;
        iov[i].iov_len = lens[i];
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: msgs[..n] are initialised headers whose single iovec points into `buf`
    // within its bounds (checked above); `buf`, `iov` and `msgs` outlive the call, and the
    // kernel only reads the data.
    match unsafe { sendmmsg_all(fd, &mut msgs[..n]) } {
        (_, Some(e)) => Err(e),
        (_, None) => Ok(()),
    }
}

/// The error of a batch of units (`(at, len)` in `buf`) that [`send_batch_at`] and
/// [`send_batch_prefixed`] refuse: more than [`MAX_BATCH`], or a unit beyond `buf`.
fn units_misfit(buf: &[u8], units: &[(usize, usize)]) -> Option<io::Error> {
    let misfit = units.len() > MAX_BATCH
        || units
            .iter()
            .any(|&(at, len)| at.checked_add(len).is_none_or(|end| end > buf.len()));
    misfit.then(|| io::Error::new(io::ErrorKind::InvalidInput, "batch does not fit the buffer"))
}

/// [`send_batch`] for units anywhere in `buf`: unit `i` is `buf[at..at + len]` with
/// `(at, len) = units[i]`. Returns how many the kernel took before an error other than
/// `EINTR`/`ENOBUFS`/`EAGAIN` (with that error), or all of them.
pub fn send_batch_at(
    fd: BorrowedFd<'_>,
    buf: &[u8],
    units: &[(usize, usize)],
) -> (usize, Option<io::Error>) {
    let n = units.len();
    if let Some(e) = units_misfit(buf, units) {
        return (0, Some(e));
    }
    // SAFETY: iovec and mmsghdr are plain data (pointers and integers); all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    for (i, &(at, len)) in units.iter().enumerate() {
        // The kernel only reads through iov_base for a send; the cast to *mut is what iovec wants.
        iov[i].iov_base = buf[at..].as_ptr() as *mut libc::c_void;
        iov[i].iov_len = len;
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: msgs[..n] are initialised headers whose single iovec points into `buf`
    // within its bounds (checked above); `buf`, `iov` and `msgs` outlive the call, and the
    // kernel only reads the data.
    unsafe { sendmmsg_all(fd, &mut msgs[..n]) }
}

/// [`send_batch_at`] with the same `prefix` in front of every unit: unit `i` leaves as
/// `prefix` followed by `buf[at..at + len]` for `(at, len) = units[i]` (two iovecs per message,
/// the kernel gathers them). For an AF_PACKET socket that sends frames whose link-layer header
/// is one for the whole batch (the ESP tunnel's protocol-50 path). Returns as
/// [`send_batch_at`] does.
pub fn send_batch_prefixed(
    fd: BorrowedFd<'_>,
    prefix: &[u8],
    buf: &[u8],
    units: &[(usize, usize)],
) -> (usize, Option<io::Error>) {
    let n = units.len();
    if let Some(e) = units_misfit(buf, units) {
        return (0, Some(e));
    }
    // SAFETY: iovec and mmsghdr are plain data (pointers and integers); all-zero is valid.
    let mut iov: [[libc::iovec; 2]; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    for (i, &(at, len)) in units.iter().enumerate() {
        // The kernel only reads through iov_base for a send; the casts to *mut are what iovec
        // wants.
        iov[i][0].iov_base = prefix.as_ptr() as *mut libc::c_void;
        iov[i][0].iov_len = prefix.len();
        iov[i][1].iov_base = buf[at..].as_ptr() as *mut libc::c_void;
        iov[i][1].iov_len = len;
        msgs[i].msg_hdr.msg_iov = iov[i].as_mut_ptr();
        msgs[i].msg_hdr.msg_iovlen = 2;
    }
    // SAFETY: msgs[..n] are initialised headers whose two iovecs point at `prefix` and into
    // `buf` within its bounds (checked above); `prefix`, `buf`, `iov` and `msgs` outlive the
    // call, and the kernel only reads the data.
    unsafe { sendmmsg_all(fd, &mut msgs[..n]) }
}

/// How long [`sendmmsg_all`] keeps retrying a batch the kernel refuses with `ENOBUFS`/`EAGAIN`
/// before it gives the rest up: a queue that drains is waited for (back-pressure), one that
/// does not (a device whose peer takes nothing) costs its frames, not the thread — a data-plane
/// thread stuck in this loop would never see its stop flag.
const SEND_RETRY_NS: u64 = 20_000_000;

/// Hands every header of `msgs` to the kernel with `sendmmsg`, as many calls as it takes:
/// `EINTR` is retried at once, `ENOBUFS`/`EAGAIN` (a full device queue, a non-blocking socket)
/// after a yield, for at most [`SEND_RETRY_NS`] without progress. Returns how many the kernel
/// took before any other error, or before that time ran out (with that error), or all of them.
/// The one send loop of the batch senders.
///
/// # Safety
/// Every header in `msgs` must be initialised, and its iovecs (and control buffer, if any) must
/// point at memory that stays valid for reads for the whole call.
unsafe fn sendmmsg_all(
    fd: BorrowedFd<'_>,
    msgs: &mut [libc::mmsghdr],
) -> (usize, Option<io::Error>) {
    let n = msgs.len();
    let mut done = 0;
    // Since when the kernel has refused without taking anything (0: it has not).
    let mut refused_since = 0u64;
    while done < n {
        // SAFETY: the caller guarantees the headers in msgs[done..] and what they point at;
        // the slice bounds the count the kernel reads.
        let r = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                msgs[done..].as_mut_ptr(),
                (n - done) as libc::c_uint,
                0,
            )
        };
        if r > 0 {
            done += r as usize;
            refused_since = 0;
            continue;
        }
        // Nothing taken without an error is a refusal like EAGAIN (never seen; bounded anyway).
        let e = if r == 0 {
            io::Error::from_raw_os_error(libc::EAGAIN)
        } else {
            io::Error::last_os_error()
        };
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                let now = super::monotonic_ns();
                if refused_since == 0 {
                    refused_since = now;
                } else if now.saturating_sub(refused_since) > SEND_RETRY_NS {
                    return (done, Some(e));
                }
                std::thread::yield_now();
            }
            _ => return (done, Some(e)),
        }
    }
    (n, None)
}

/// One `recvmmsg` into every header of `msgs`, with `flags` (which should hold `MSG_DONTWAIT`
/// on a blocking socket) and no timeout, retried on `EINTR`: how many units arrived, or `None`
/// when none was queued (`EAGAIN`). The one receive call of the batch receivers.
///
/// # Safety
/// Every header in `msgs` must be initialised, and its iovecs (and name and control buffers, if
/// any) must point at disjoint, writable memory of the sizes they give that stays valid for the
/// whole call.
pub(super) unsafe fn recvmmsg_nowait(
    fd: BorrowedFd<'_>,
    msgs: &mut [libc::mmsghdr],
    flags: libc::c_int,
) -> io::Result<Option<usize>> {
    loop {
        // SAFETY: the caller guarantees the headers and what they point at; the slice bounds
        // the count the kernel writes; a null timeout is allowed.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as libc::c_uint,
                flags,
                ptr::null_mut(),
            )
        };
        if r >= 0 {
            return Ok(Some(r as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Receives up to `lens.len()` (≤ [`MAX_BATCH`]) units with one non-blocking `recvmmsg`: unit
/// `i` lands at `buf[i * stride + off..(i + 1) * stride]` and its length in `lens[i]` (0 when it
/// did not fit: a truncated unit must not be verified). Returns how many arrived (0: none
/// queued).
pub fn recv_batch(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    stride: usize,
    off: usize,
    lens: &mut [usize],
) -> io::Result<usize> {
    let got = recv_batch_named(fd, buf, stride, off, lens, None)?;
    for len in lens.iter_mut().take(got) {
        if *len > stride - off {
            *len = 0;
        }
    }
    Ok(got)
}

/// Points `iov[i]` at the receive slot `buf[i * stride + off..(i + 1) * stride]` for as many
/// slots as `want`, [`MAX_BATCH`] and `buf` allow, and returns how many: the slots of the
/// batch receivers, each read `off` bytes into its stride. `off` must be below `stride`.
pub(super) fn slot_iovecs(
    buf: &mut [u8],
    stride: usize,
    off: usize,
    want: usize,
    iov: &mut [libc::iovec; MAX_BATCH],
) -> io::Result<usize> {
    if off >= stride {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "offset must be below the stride",
        ));
    }
    let n = want.min(MAX_BATCH).min(buf.len() / stride);
    for (i, slot) in buf.chunks_exact_mut(stride).take(n).enumerate() {
        let room = &mut slot[off..];
        iov[i].iov_base = room.as_mut_ptr().cast();
        iov[i].iov_len = room.len();
    }
    Ok(n)
}

/// [`recv_batch`] that, with `names`, also keeps each message's AF_PACKET source address and
/// its length before truncation; `lens[i]` is then the stored length (at most the slot).
/// Without `names`, a truncated message's `lens[i]` is larger than its slot.
pub(super) fn recv_batch_named(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    stride: usize,
    off: usize,
    lens: &mut [usize],
    mut names: Option<(&mut [libc::sockaddr_ll; MAX_BATCH], &mut [usize; MAX_BATCH])>,
) -> io::Result<usize> {
    // SAFETY: iovec and mmsghdr are plain data; all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    let n = slot_iovecs(buf, stride, off, lens.len(), &mut iov)?;
    for i in 0..n {
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        if let Some((addrs, _)) = names.as_mut() {
            msgs[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_ll).cast();
            msgs[i].msg_hdr.msg_namelen = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        }
    }
    // With names (AF_PACKET), MSG_TRUNC makes msg_len the frame's full length.
    let flags = libc::MSG_DONTWAIT | if names.is_some() { libc::MSG_TRUNC } else { 0 };
    // SAFETY: every header points at one iovec describing a disjoint, writable slot of
    // `buf` and, with names, at one sockaddr_ll of `addrs` with its size; `buf`, `iov`,
    // `msgs` and `addrs` outlive the call; a null timeout is allowed.
    let got = match unsafe { recvmmsg_nowait(fd, &mut msgs[..n], flags) }? {
        Some(got) => got,
        None => return Ok(0),
    };
    for i in 0..got {
        let truncated = msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        let len = msgs[i].msg_len as usize;
        match names.as_mut() {
            Some((_, wire)) => {
                wire[i] = if truncated {
                    len.max(stride - off + 1)
                } else {
                    len
                };
                lens[i] = len.min(stride - off);
            }
            None => lens[i] = if truncated { stride - off + 1 } else { len },
        }
    }
    Ok(got)
}

/// Room for one control message carrying a `u16` or `c_int` (`UDP_SEGMENT`, `UDP_GRO`), 8-byte
/// aligned as `cmsghdr` needs.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct CmsgRoom([u8; 32]);

/// Sends UDP datagrams with segmentation offload (`UDP_SEGMENT`, one `sendmmsg` for all):
/// group `g = (first, count, seg)` of `groups` is `units[first..first + count]` (each
/// `buf[at..at + len]`), gathered into one datagram that the kernel (or the device) cuts into
/// `count` datagrams of `seg` bytes, the last one possibly shorter. The caller forms the groups:
/// every unit but the last of a group exactly `seg` bytes, the last at most `seg`, at most
/// [`MAX_BATCH`] units and 64 KiB per group. Returns how many groups the kernel took before an
/// error other than `EINTR`/`ENOBUFS`/`EAGAIN` (with that error), or all of them.
pub fn send_udp_gso_batch(
    fd: BorrowedFd<'_>,
    buf: &[u8],
    units: &[(usize, usize)],
    groups: &[(usize, usize, u16)],
) -> (usize, Option<io::Error>) {
    let bad = || {
        Some(io::Error::new(
            io::ErrorKind::InvalidInput,
            "batch does not fit the buffer",
        ))
    };
    let n = groups.len();
    if n > MAX_BATCH
        || units.len() > MAX_BATCH
        || units
            .iter()
            .any(|&(at, len)| at.checked_add(len).is_none_or(|end| end > buf.len()))
        || groups.iter().any(|&(first, count, _)| {
            count == 0 || first.checked_add(count).is_none_or(|end| end > units.len())
        })
    {
        return (0, bad());
    }
    // SAFETY: iovec and mmsghdr are plain data (pointers and integers); all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    let mut control = [CmsgRoom([0; 32]); MAX_BATCH];
    for (i, &(at, len)) in units.iter().enumerate() {
        // The kernel only reads through iov_base for a send; the cast to *mut is what iovec wants.
        iov[i].iov_base = buf[at..].as_ptr() as *mut libc::c_void;
        iov[i].iov_len = len;
    }
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(mem::size_of::<u16>() as libc::c_uint) } as usize;
    for (g, &(first, count, seg)) in groups.iter().enumerate() {
        let h = &mut msgs[g].msg_hdr;
        h.msg_iov = &mut iov[first];
        h.msg_iovlen = count;
        h.msg_control = control[g].0.as_mut_ptr().cast();
        h.msg_controllen = space;
        // SAFETY: msg_control points at 32 writable, 8-aligned bytes of control[g] and
        // msg_controllen (CMSG_SPACE of a u16, 24 on 64-bit) is within them, so CMSG_FIRSTHDR
        // returns a header inside them with room for CMSG_LEN(2) bytes; the u16 is written
        // unaligned at CMSG_DATA.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(h);
            (*c).cmsg_level = libc::SOL_UDP;
            (*c).cmsg_type = libc::UDP_SEGMENT;
            (*c).cmsg_len = libc::CMSG_LEN(mem::size_of::<u16>() as libc::c_uint) as usize;
            ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), seg);
        }
    }
    // SAFETY: msgs[..n] are initialised headers whose iovecs point into `buf` within
    // its bounds (checked above) and whose control buffers are in `control`; `buf`, `iov`,
    // `control` and `msgs` outlive the call, and the kernel only reads them.
    unsafe { sendmmsg_all(fd, &mut msgs[..n]) }
}

/// [`recv_batch`] on a UDP socket with `UDP_GRO` on ([`super::set_udp_gro`]): a message may be
/// several datagrams of one flow back to back, all `segs[i]` bytes but the last;
/// `segs[i]` is 0 for a message that is one datagram. A message longer than its slot has
/// `lens[i]` 0.
pub fn recv_batch_gro(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    stride: usize,
    off: usize,
    lens: &mut [usize],
    segs: &mut [u16],
) -> io::Result<usize> {
    // SAFETY: iovec and mmsghdr are plain data; all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    let mut control = [CmsgRoom([0; 32]); MAX_BATCH];
    let n = slot_iovecs(buf, stride, off, lens.len().min(segs.len()), &mut iov)?;
    for i in 0..n {
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        msgs[i].msg_hdr.msg_control = control[i].0.as_mut_ptr().cast();
        msgs[i].msg_hdr.msg_controllen = control[i].0.len();
    }
    // SAFETY: every header points at one iovec describing a disjoint, writable slot of
    // `buf` and at one control buffer of `control` with its size; all outlive the call; a
    // null timeout is allowed.
    let got = match unsafe { recvmmsg_nowait(fd, &mut msgs[..n], libc::MSG_DONTWAIT) }? {
        Some(got) => got,
        None => return Ok(0),
    };
    for i in 0..got {
        let h = &msgs[i].msg_hdr;
        let truncated = h.msg_flags & libc::MSG_TRUNC != 0;
        let len = msgs[i].msg_len as usize;
        lens[i] = if truncated || len > stride - off {
            0
        } else {
            len
        };
        segs[i] = 0;
        // SAFETY: the kernel set msg_controllen to the bytes of control messages it wrote into
        // control[i] (at most its size; MSG_CTRUNC otherwise, which CMSG_NXTHDR's bound check
        // covers); CMSG_FIRSTHDR/CMSG_NXTHDR return headers inside that length or null, and a
        // UDP_GRO message carries a c_int, read unaligned.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_UDP
                    && (*c).cmsg_type == libc::UDP_GRO
                    && (*c).cmsg_len
                        >= libc::CMSG_LEN(mem::size_of::<libc::c_int>() as libc::c_uint) as usize
                {
                    let v = ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::c_int>());
                    segs[i] = u16::try_from(v).unwrap_or(0);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::time::Duration;

    #[test]
    fn batches_round_trip_over_udp() {
        use std::net::UdpSocket;
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        let stride = 100;
        let mut tx = vec![0u8; 3 * stride];
        for i in 0..3 {
            tx[i * stride..i * stride + 10].fill(i as u8 + 1);
        }
        send_batch(a.as_fd(), &tx, stride, &[10, 5, 100]).unwrap();
        let mut rx = vec![0u8; 4 * 60];
        let mut lens = [0usize; 4];
        let mut got = 0;
        for _ in 0..100 {
            got += recv_batch(b.as_fd(), &mut rx[got * 60..], 60, 10, &mut lens[got..]).unwrap();
            if got == 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(got, 3);
        assert_eq!(
            &lens[..3],
            &[10, 5, 0],
            "the 100-byte unit is truncated in a 50-byte slot"
        );
        assert_eq!(&rx[10..20], &[1u8; 10]);
        assert_eq!(&rx[70..75], &[2u8; 5]);
        assert_eq!(
            recv_batch(b.as_fd(), &mut rx, 60, 10, &mut lens).unwrap(),
            0
        );
        assert!(recv_batch(b.as_fd(), &mut rx, 60, 60, &mut lens).is_err());
        assert!(send_batch(a.as_fd(), &tx, stride, &[101]).is_err());
    }

    #[test]
    fn udp_gso_groups_arrive_as_segments_and_coalesce_with_gro() {
        use std::net::UdpSocket;
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        // Three 100-byte units and a 40-byte one as one GSO datagram, then one alone.
        let mut tx = vec![0u8; 1000];
        for (i, c) in tx.chunks_mut(100).enumerate() {
            c.fill(i as u8 + 1);
        }
        let units = [(0, 100), (100, 100), (200, 100), (300, 40), (500, 70)];
        let (sent, e) = send_udp_gso_batch(a.as_fd(), &tx, &units, &[(0, 4, 100), (4, 1, 70)]);
        assert!(e.is_none(), "{e:?}");
        assert_eq!(sent, 2);
        // Without UDP_GRO each segment arrives as its own datagram.
        let mut rx = vec![0u8; 8 * 200];
        let mut lens = [0usize; 8];
        let mut segs = [0u16; 8];
        let mut got = 0;
        for _ in 0..100 {
            got += recv_batch_gro(
                b.as_fd(),
                &mut rx[got * 200..],
                200,
                0,
                &mut lens[got..],
                &mut segs[got..],
            )
            .unwrap();
            if got == 5 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(&lens[..5], &[100, 100, 100, 40, 70]);
        assert_eq!(segs[..5], [0; 5]);
        assert_eq!(rx[200], 2);
        assert_eq!(rx[600], 4);
        assert_eq!(
            send_udp_gso_batch(a.as_fd(), &tx, &units, &[(4, 2, 70)]).0,
            0,
            "a group past the units is refused"
        );
    }
}
