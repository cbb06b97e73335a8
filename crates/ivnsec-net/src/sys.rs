//! Operating-system calls that need `unsafe`: the only such module of ivnsec. Every `unsafe`
//! block says why it is sound in a `// SAFETY:` comment; everything outside is safe Rust.
//!
//! - [`RawSocket`]: an AF_PACKET `SOCK_RAW` socket bound to one interface and one EtherType. It
//!   sends and receives whole Ethernet frames (destination MAC first, no FCS). Receive blocks
//!   with a timeout ([`RawSocket::recv`]) or spins on non-blocking reads ([`RawSocket::recv_busy_poll`]),
//!   optionally with a kernel software RX timestamp (`SO_TIMESTAMPNS`).
//! - [`pin_current_thread`] / [`current_cpu`]: CPU affinity of the calling thread. On this VM a
//!   cross-CPU wake-up costs ≈27 µs per hop; latency mode pins and busy-polls.
//! - [`signal_process`]: used by testbed teardown to stop processes inside its own namespaces.
//! - [`try_lock_exclusive`]: an exclusive `flock` (one sender per nonce state file); [`open_at`],
//!   [`rename_at`], [`unlink_at`], [`stat_at`]: file operations relative to an open directory
//!   that never follow a symbolic link (the nonce state directory).
//! - [`die_with_parent`]: a child process that is killed when ivnsec dies, even by SIGKILL.
//!
//! Namespaces are not entered here: node processes are started with `ip netns exec NS …`, so a
//! process never switches namespace after start (no `setns`).

use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// EtherType of IVN-AE frames (IEEE 802 local experimental EtherType 1).
pub const ETH_P_IVNAE: u16 = 0x88B5;
/// Length of an Ethernet II header (dst, src, EtherType).
pub const ETH_HLEN: usize = 14;

/// `PACKET_IGNORE_OUTGOING` (Linux ≥ 4.20); defined here because not every libc version has it.
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

/// Where a received frame was headed (`sll_pkttype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketType {
    /// To this host's MAC.
    Host,
    /// Broadcast.
    Broadcast,
    /// Multicast.
    Multicast,
    /// To another host's MAC (seen because the interface is promiscuous).
    OtherHost,
    /// Sent by this host (looped back to packet sockets).
    Outgoing,
    /// Anything else.
    Other(u8),
}

impl PacketType {
    fn from_raw(t: u8) -> Self {
        match t {
            libc::PACKET_HOST => PacketType::Host,
            libc::PACKET_BROADCAST => PacketType::Broadcast,
            libc::PACKET_MULTICAST => PacketType::Multicast,
            libc::PACKET_OTHERHOST => PacketType::OtherHost,
            libc::PACKET_OUTGOING => PacketType::Outgoing,
            t => PacketType::Other(t),
        }
    }
}

/// What [`RawSocket::recv`] learned about a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvMeta {
    /// Bytes written into the buffer.
    pub len: usize,
    /// Length of the frame on the wire; larger than `len` when the buffer was too small.
    pub wire_len: usize,
    /// Where the frame was headed.
    pub packet_type: PacketType,
    /// Kernel software RX timestamp (CLOCK_REALTIME), when enabled with
    /// [`RawSocket::enable_timestamps`] and delivered by the kernel.
    pub timestamp: Option<SystemTime>,
}

impl RecvMeta {
    /// Whether the frame did not fit the buffer (the tail was dropped).
    pub fn truncated(&self) -> bool {
        self.wire_len > self.len
    }
}

/// The kernel's receive counters of an AF_PACKET socket (`struct tpacket_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacketStatistics {
    /// Frames that passed the socket filter (queued or dropped).
    pub packets: u64,
    /// Of those, frames dropped because the receive queue was full.
    pub drops: u64,
}

/// `ld [SKF_AD_OFF + SKF_AD_PKTTYPE]; jeq PACKET_OTHERHOST, drop; ret all; drop: ret 0`.
const OTHER_HOST_FILTER: [libc::sock_filter; 4] = [
    bpf_stmt(
        (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16,
        (libc::SKF_AD_OFF + libc::SKF_AD_PKTTYPE) as u32,
    ),
    libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 1,
        jf: 0,
        k: libc::PACKET_OTHERHOST as u32,
    },
    bpf_stmt((libc::BPF_RET | libc::BPF_K) as u16, u32::MAX),
    bpf_stmt((libc::BPF_RET | libc::BPF_K) as u16, 0),
];

const fn bpf_stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// Socket option values: plain C data for which every byte pattern is a valid value, so the
/// kernel may write any bytes into one.
///
/// # Safety
/// Implement only for types without padding invariants, references or niches.
unsafe trait OptionValue: Copy {}
// SAFETY: integers and arrays of integers accept any byte pattern.
unsafe impl OptionValue for libc::c_int {}
// SAFETY: as above.
unsafe impl OptionValue for [u32; 16] {}
// SAFETY: two u32 fields.
unsafe impl OptionValue for libc::tpacket_stats {}
// SAFETY: a length and a raw pointer (any value is valid to hold; the kernel only reads the
// program it points to, which the caller keeps alive across the call).
unsafe impl OptionValue for libc::sock_fprog {}

/// `setsockopt(fd, level, name, value)`.
fn set_option<T: OptionValue>(
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
fn get_option<T: OptionValue>(
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

/// Attaches a classic BPF program to a socket (`SO_ATTACH_FILTER`); the kernel copies it.
fn attach_filter(fd: BorrowedFd<'_>, prog: &[libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as libc::c_ushort,
        // The kernel only reads the program; the cast to *mut is what sock_fprog wants.
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // fprog points to `prog.len()` instructions that live across the call; the kernel copies
    // the program before returning.
    set_option(fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, &fprog)
}

/// An AF_PACKET raw socket bound to one interface and one EtherType.
#[derive(Debug)]
pub struct RawSocket {
    fd: OwnedFd,
    ifindex: u32,
    ethertype: u16,
}

impl RawSocket {
    /// Opens a socket on interface `ifname` that receives only frames of `ethertype` and sends
    /// whole Ethernet frames out of that interface. Frames this host sends are not received
    /// (`PACKET_IGNORE_OUTGOING`, and filtered again on receive for older kernels).
    /// Needs CAP_NET_RAW.
    pub fn open(ifname: &str, ethertype: u16) -> io::Result<Self> {
        let ifindex = interface_index(ifname)?;
        // Protocol 0 at creation: the socket receives nothing until bind() sets the EtherType,
        // so no frame of another interface or type slips in between the two calls.
        // SAFETY: socket() takes no pointers; the result is checked before use.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns; OwnedFd closes it on drop.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let sock = RawSocket {
            fd,
            ifindex,
            ethertype,
        };
        let addr = sockaddr_ll(ifindex, ethertype);
        // SAFETY: addr is a valid sockaddr_ll that lives across the call, and the length passed
        // is its size.
        let r = unsafe {
            libc::bind(
                sock.raw(),
                (&addr as *const libc::sockaddr_ll).cast::<libc::sockaddr>(),
                mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // Best effort: kernels before 4.20 lack it; recv filters outgoing frames anyway.
        let _ = sock.setsockopt_int(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1);
        Ok(sock)
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn setsockopt_int(
        &self,
        level: libc::c_int,
        name: libc::c_int,
        value: libc::c_int,
    ) -> io::Result<()> {
        set_option(self.fd.as_fd(), level, name, &value)
    }

    /// Interface index the socket is bound to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// EtherType the socket receives.
    pub fn ethertype(&self) -> u16 {
        self.ethertype
    }

    /// Hardware (MAC) address of the bound interface.
    pub fn mac_address(&self) -> io::Result<[u8; 6]> {
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { mem::zeroed() };
        let mut len = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: addr and len are valid for writes; len holds addr's size, so the kernel writes
        // at most that many bytes.
        let r = unsafe {
            libc::getsockname(
                self.raw(),
                (&mut addr as *mut libc::sockaddr_ll).cast::<libc::sockaddr>(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        if addr.sll_halen != 6 {
            return Err(io::Error::other(format!(
                "interface {} has a {}-byte hardware address, not an Ethernet MAC",
                self.ifindex, addr.sll_halen
            )));
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&addr.sll_addr[..6]);
        Ok(mac)
    }

    /// Asks the kernel for a software RX timestamp on every received frame (`SO_TIMESTAMPNS`,
    /// CLOCK_REALTIME, taken when the frame enters the network stack).
    pub fn enable_timestamps(&self) -> io::Result<()> {
        self.setsockopt_int(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
    }

    /// Sets the kernel receive buffer size (`SO_RCVBUF`; the kernel doubles it).
    pub fn set_recv_buffer(&self, bytes: usize) -> io::Result<()> {
        self.setsockopt_int(
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            bytes.min(i32::MAX as usize) as libc::c_int,
        )
    }

    /// Sets the kernel receive buffer to `bytes` beyond `net.core.rmem_max` (see
    /// [`set_recv_buffer_force`]).
    pub fn set_recv_buffer_force(&self, bytes: usize) -> io::Result<usize> {
        set_recv_buffer_force(self.fd.as_fd(), bytes)
    }

    /// The kernel's counters of this socket since the last call (`PACKET_STATISTICS`, which
    /// resets them on every read): frames that passed the socket filter, and of those the
    /// frames dropped because the receive queue was full.
    pub fn take_statistics(&self) -> io::Result<PacketStatistics> {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        get_option(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            &mut st,
        )?;
        Ok(PacketStatistics {
            packets: u64::from(st.tp_packets),
            drops: u64::from(st.tp_drops),
        })
    }

    /// Makes the kernel discard, before they are queued, frames addressed to another host's
    /// MAC (`PACKET_OTHERHOST`: seen only when a switch floods or the interface is
    /// promiscuous) — what a network interface outside promiscuous mode does in hardware. A
    /// classic BPF socket filter: such frames cost no queue space and no wake-up, and are not
    /// counted by [`take_statistics`](Self::take_statistics).
    pub fn drop_other_host(&self) -> io::Result<()> {
        attach_filter(self.fd.as_fd(), &OTHER_HOST_FILTER)
    }

    /// Receives up to `metas.len()` (≤ [`MAX_BATCH`]) frames with one non-blocking `recvmmsg`:
    /// frame `i` lands at `buf[i * stride + off..(i + 1) * stride]`, what is known about it in
    /// `metas[i]` (no timestamp). Frames this host sent come back with
    /// [`PacketType::Outgoing`] on kernels that ignore `PACKET_IGNORE_OUTGOING`; the caller
    /// skips them. Returns how many arrived (0: none queued).
    pub fn recv_batch(
        &self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        metas: &mut [RecvMeta],
    ) -> io::Result<usize> {
        let mut lens = [0usize; MAX_BATCH];
        let mut wire = [0usize; MAX_BATCH];
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut names: [libc::sockaddr_ll; MAX_BATCH] = unsafe { mem::zeroed() };
        let want = metas.len().min(MAX_BATCH);
        let got = recv_batch_named(
            self.fd.as_fd(),
            buf,
            stride,
            off,
            &mut lens[..want],
            Some((&mut names, &mut wire)),
        )?;
        for i in 0..got {
            metas[i] = RecvMeta {
                len: lens[i],
                wire_len: wire[i],
                packet_type: PacketType::from_raw(names[i].sll_pkttype),
                timestamp: None,
            };
        }
        Ok(got)
    }

    /// Sends one whole Ethernet frame (header included, no FCS) out of the bound interface.
    pub fn send(&self, frame: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: frame is valid for reads of frame.len() bytes for the duration of the call.
            let n = unsafe { libc::send(self.raw(), frame.as_ptr().cast(), frame.len(), 0) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    /// Receives one frame into `buf`, blocking up to `timeout` (`None` = forever).
    /// Returns `Ok(None)` when the timeout passed without a frame.
    pub fn recv(&self, buf: &mut [u8], timeout: Option<Duration>) -> io::Result<Option<RecvMeta>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(meta) = self.try_recv(buf)? {
                return Ok(Some(meta));
            }
            let left = match deadline {
                None => None,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    Some(d - now)
                }
            };
            wait_readable(self.fd.as_fd(), left)?;
        }
    }

    /// Receives one frame by spinning on non-blocking reads until `timeout` passes: no sleep,
    /// no wake-up latency, one CPU busy. Returns `Ok(None)` on timeout.
    pub fn recv_busy_poll(
        &self,
        buf: &mut [u8],
        timeout: Duration,
    ) -> io::Result<Option<RecvMeta>> {
        crate::wait::spin(timeout, || self.try_recv(buf))
    }

    /// Receives one frame if one is queued, without blocking.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<RecvMeta>> {
        loop {
            match self.recvmsg_nonblocking(buf)? {
                None => return Ok(None),
                Some(m) if m.packet_type == PacketType::Outgoing => continue,
                Some(m) => return Ok(Some(m)),
            }
        }
    }

    fn recvmsg_nonblocking(&self, buf: &mut [u8]) -> io::Result<Option<RecvMeta>> {
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // Room for one timespec control message (16-byte header + 16 bytes), u64-aligned as
        // cmsghdr requires.
        let mut control = [0u64; 8];
        // SAFETY: msghdr is plain data (pointers and integers, padding on some targets); all-zero
        // is a valid value.
        let mut msg: libc::msghdr = unsafe { mem::zeroed() };
        msg.msg_name = (&mut addr as *mut libc::sockaddr_ll).cast();
        msg.msg_namelen = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = mem::size_of_val(&control) as _;
        let n = loop {
            // SAFETY: every pointer in msg (addr, iov → buf, control) is valid for writes of the
            // length stored beside it and outlives the call; no other reference aliases them.
            let n = unsafe {
                libc::recvmsg(self.raw(), &mut msg, libc::MSG_DONTWAIT | libc::MSG_TRUNC)
            };
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(None),
                _ => return Err(e),
            }
        };
        let mut timestamp = None;
        // SAFETY: msg was filled by a successful recvmsg, so msg_control/msg_controllen describe
        // the control bytes the kernel wrote into `control`, which is still alive.
        let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        while !cmsg.is_null() {
            // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR return either null or a pointer to a complete,
            // aligned cmsghdr inside `control`.
            let hdr = unsafe { &*cmsg };
            if hdr.cmsg_level == libc::SOL_SOCKET && hdr.cmsg_type == libc::SCM_TIMESTAMPNS {
                // SAFETY: an SCM_TIMESTAMPNS message carries one struct timespec as its data;
                // read_unaligned makes no alignment assumption.
                let ts: libc::timespec =
                    unsafe { ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
                timestamp = Some(
                    SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                );
            }
            // SAFETY: msg and cmsg are as above; CMSG_NXTHDR stays within msg_controllen.
            cmsg = unsafe { libc::CMSG_NXTHDR(&msg, cmsg) };
        }
        Ok(Some(RecvMeta {
            len: n.min(buf.len()),
            wire_len: n,
            packet_type: PacketType::from_raw(addr.sll_pkttype),
            timestamp,
        }))
    }
}

impl AsFd for RawSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn sockaddr_ll(ifindex: u32, ethertype: u16) -> libc::sockaddr_ll {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut addr: libc::sockaddr_ll = unsafe { mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = ethertype.to_be();
    addr.sll_ifindex = ifindex as libc::c_int;
    addr
}

/// Index of interface `name` in the current network namespace.
pub fn interface_index(name: &str) -> io::Result<u32> {
    let c = CString::new(name).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL byte")
    })?;
    // SAFETY: c is a valid NUL-terminated string that outlives the call.
    let idx = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if idx == 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("interface `{name}`: {e}")));
    }
    Ok(idx)
}

/// Waits until `fd` is readable or `timeout` passes (`None` = forever). Returns `Ok(true)` when
/// readable. Uses `ppoll`, so timeouts have nanosecond resolution.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
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

/// CLOCK_MONOTONIC in nanoseconds. Unlike [`Instant`], the value is a plain number that means
/// the same in every process of the host: network namespaces share this clock (only a time
/// namespace, which the testbed never creates, would offset it), so a time taken in one ECU
/// namespace can be subtracted from one taken in another.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec that lives across the call; CLOCK_MONOTONIC is
    // always available on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

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
    let mut done = 0;
    while done < n {
        // SAFETY: msgs[done..n] are initialised headers whose single iovec points into `buf`
        // within its bounds (checked above); `buf`, `iov` and `msgs` outlive the call, and the
        // kernel only reads the data.
        let r = unsafe {
            libc::sendmmsg(
                fd.as_raw_fd(),
                msgs[done..].as_mut_ptr(),
                (n - done) as libc::c_uint,
                0,
            )
        };
        if r >= 0 {
            done += r as usize;
            continue;
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ENOBUFS) | Some(libc::EAGAIN) => std::thread::yield_now(),
            _ => return Err(e),
        }
    }
    Ok(())
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

/// [`recv_batch`] that, with `names`, also keeps each message's AF_PACKET source address and
/// its length before truncation; `lens[i]` is then the stored length (at most the slot).
/// Without `names`, a truncated message's `lens[i]` is larger than its slot.
fn recv_batch_named(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    stride: usize,
    off: usize,
    lens: &mut [usize],
    mut names: Option<(&mut [libc::sockaddr_ll; MAX_BATCH], &mut [usize; MAX_BATCH])>,
) -> io::Result<usize> {
    if off >= stride {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "offset must be below the stride",
        ));
    }
    let n = lens.len().min(MAX_BATCH).min(buf.len() / stride);
    // SAFETY: iovec and mmsghdr are plain data; all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
    let base = buf.as_mut_ptr();
    for i in 0..n {
        // SAFETY: (i + 1) * stride ≤ buf.len() because n ≤ buf.len() / stride, and off < stride,
        // so the slot lies inside `buf`.
        iov[i].iov_base = unsafe { base.add(i * stride + off) }.cast();
        iov[i].iov_len = stride - off;
        msgs[i].msg_hdr.msg_iov = &mut iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        if let Some((addrs, _)) = names.as_mut() {
            msgs[i].msg_hdr.msg_name = (&mut addrs[i] as *mut libc::sockaddr_ll).cast();
            msgs[i].msg_hdr.msg_namelen = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        }
    }
    // With names (AF_PACKET), MSG_TRUNC makes msg_len the frame's full length.
    let flags = libc::MSG_DONTWAIT | if names.is_some() { libc::MSG_TRUNC } else { 0 };
    let got = loop {
        // SAFETY: every header points at one iovec describing a disjoint, writable slot of
        // `buf` and, with names, at one sockaddr_ll of `addrs` with its size; `buf`, `iov`,
        // `msgs` and `addrs` outlive the call; a null timeout is allowed.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                flags,
                ptr::null_mut(),
            )
        };
        if r >= 0 {
            break r as usize;
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(0),
            _ => return Err(e),
        }
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

/// Sets a socket's kernel receive and send buffer sizes (`SO_RCVBUF`, `SO_SNDBUF`; the kernel
/// doubles them and caps them at `net.core.rmem_max`/`wmem_max`).
pub fn set_socket_buffers(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for name in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        set_option(fd, libc::SOL_SOCKET, name, &v)?;
    }
    Ok(())
}

/// CPU time this process has used so far (`getrusage(RUSAGE_SELF)`): (user ns, system ns),
/// every thread included, at the kernel's accounting resolution.
pub fn rusage_self() -> (u64, u64) {
    // SAFETY: rusage is plain data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { mem::zeroed() };
    // SAFETY: ru is valid for writes; RUSAGE_SELF is always valid, so the call cannot fail.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

/// Pins the calling thread to CPU `cpu` (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is out of range"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: cpu < CPU_SETSIZE (checked above), so CPU_SET writes inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is valid for reads of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The CPUs the calling thread may run on.
pub fn current_affinity() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid for writes of the size passed.
    let r = unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: every index is < CPU_SETSIZE, so CPU_ISSET reads inside `set`.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The CPU the calling thread runs on right now (`sched_getcpu`), if the kernel tells.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only returns a number.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// Write end of the self-pipe the termination-signal handler writes to (-1: not installed).
static SIGNAL_PIPE_WR: AtomicI32 = AtomicI32::new(-1);
/// Read end of that pipe, created once per process.
static SIGNAL_PIPE_RD: OnceLock<RawFd> = OnceLock::new();

extern "C" fn on_termination_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE_WR.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write(2) is async-signal-safe; `b` lives across the call. The write end is
        // non-blocking, so a full pipe drops the byte instead of blocking the handler.
        unsafe { libc::write(fd, (&b as *const u8).cast(), 1) };
    }
}

/// Termination signals (SIGINT, SIGTERM, SIGHUP) caught by a handler; see
/// [`termination_signals`].
#[derive(Debug, Clone, Copy)]
pub struct TerminationSignals {
    rd: RawFd,
}

impl TerminationSignals {
    /// Blocks until SIGINT, SIGTERM or SIGHUP arrives; returns the signal number.
    pub fn wait(&self) -> io::Result<i32> {
        let mut b = 0u8;
        loop {
            // SAFETY: rd is the read end of a pipe this module created and never closes; `b`
            // is valid for a 1-byte write.
            let n = unsafe { libc::read(self.rd, (&mut b as *mut u8).cast(), 1) };
            if n == 1 {
                return Ok(i32::from(b));
            }
            let e = io::Error::last_os_error();
            if n == 0 || e.kind() != io::ErrorKind::Interrupted {
                return Err(if n == 0 {
                    io::Error::from(io::ErrorKind::UnexpectedEof)
                } else {
                    e
                });
            }
        }
    }
}

/// Replaces the default action of SIGINT, SIGTERM and SIGHUP (which end the process without
/// running destructors) by a handler that records the signal, so a thread blocked in
/// [`TerminationSignals::wait`] can clean up and exit. Installed once per process; later calls
/// return the same handle. Whoever calls this must make sure someone waits, or the process
/// ignores those signals.
pub fn termination_signals() -> io::Result<TerminationSignals> {
    if let Some(&rd) = SIGNAL_PIPE_RD.get() {
        return Ok(TerminationSignals { rd });
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is valid for writes of two c_ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let [rd, wr] = fds;
    // SAFETY: fcntl on a descriptor we just created; no pointers.
    if unsafe { libc::fcntl(wr, libc::F_SETFL, libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    if SIGNAL_PIPE_RD.set(rd).is_err() {
        // Another thread won the race: drop our pipe, use theirs.
        // SAFETY: rd and wr are ours and not shared with anyone.
        unsafe {
            libc::close(rd);
            libc::close(wr);
        }
        return termination_signals();
    }
    SIGNAL_PIPE_WR.store(wr, Ordering::Relaxed);
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction is plain data; all-zero is a valid value.
        let mut sa: libc::sigaction = unsafe { mem::zeroed() };
        sa.sa_sigaction = on_termination_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESTART;
        // SAFETY: sa.sa_mask is a valid sigset_t to initialise; sa is fully initialised and
        // the handler only calls the async-signal-safe write(2).
        let r = unsafe {
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, ptr::null_mut())
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(TerminationSignals { rd })
}

/// Signals a process: `SIGTERM`, or `SIGKILL` when `force`. A process that no longer exists is
/// not an error.
pub fn signal_process(pid: u32, force: bool) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    if pid <= 0 {
        // 0 and negative pids address process groups; never do that here.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "pid must be positive",
        ));
    }
    let sig = if force { libc::SIGKILL } else { libc::SIGTERM };
    // SAFETY: kill() takes no pointers; pid is a single positive process id.
    let r = unsafe { libc::kill(pid, sig) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ESRCH) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

/// Makes the process `cmd` starts die with ivnsec: the kernel sends it `SIGKILL` when the
/// thread that spawns it ends, so an ivnsec killed by `SIGKILL` (no destructor, no signal
/// handler runs) leaves no node role, sockperf or iperf3 behind. Returns `cmd` for chaining:
/// `die_with_parent(&mut cmd).spawn()`. Every place ivnsec starts a process calls it.
///
/// How: a `pre_exec` hook sets `PR_SET_PDEATHSIG` in the forked child before it execs. Mind:
/// - The signal follows the *thread* that forked, not the process: spawn from a thread that
///   outlives the child (ivnsec's experiments spawn from the main thread). A child spawned
///   from a short-lived thread is killed when that thread returns.
/// - The parent may die between `fork` and `prctl`; the hook then sees another parent
///   (`getppid` changed) and the child exits before it execs anything.
/// - The setting survives `execve` of programs that gain no privilege (no set-user-ID bit, no
///   file capabilities): `ip netns exec NS PROGRAM` execs PROGRAM in the same process (no
///   fork), so PROGRAM itself dies with ivnsec.
/// - Processes the child forks itself are not covered; none of the programs ivnsec starts
///   (ivnsec node roles, sockperf, iperf3, ip, openssl) leaves one running.
///
/// Not for `CommandExt::exec` (no fork: the hook would compare against ivnsec's own pid).
pub fn die_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // std::process::id() fits a pid_t (the kernel hands out positive pid_t values).
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // operations are allowed: it makes two system calls (prctl, getppid) with integer
    // arguments and builds io::Errors from an errno (no allocation, no lock). It touches no
    // memory shared with the parent.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // The parent died before the death signal was armed: do not start at all.
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// Takes an exclusive advisory lock (`flock(LOCK_EX | LOCK_NB)`) on `file` without waiting.
/// `Ok(true)`: this open file now holds the lock until it is closed (the kernel releases it
/// when the process ends, even on SIGKILL). `Ok(false)`: another open file holds it.
pub fn try_lock_exclusive(file: &std::fs::File) -> io::Result<bool> {
    // SAFETY: flock() takes a descriptor `file` keeps open for the duration of the call and
    // an integer operation; no pointers.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Releases a `flock` taken with [`try_lock_exclusive`] on this open file (closing the file
/// releases it too).
pub fn unlock(file: &std::fs::File) -> io::Result<()> {
    // SAFETY: flock() takes a descriptor `file` keeps open for the duration of the call and
    // an integer operation; no pointers.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The effective user id of this process (who owns the files it creates).
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid() takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// How [`open_at`] opens a name inside a directory. Every mode adds `O_NOFOLLOW` and
/// `O_CLOEXEC`: a symbolic link at the name is an error (`ELOOP`, see [`is_symlink_error`]),
/// never followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenAt {
    /// Read an existing file.
    Read,
    /// Read and write; create with the given mode when missing (never truncates).
    ReadWriteCreate,
    /// Write a new file: `AlreadyExists` when the name exists, even as a dangling link
    /// (`O_CREAT | O_EXCL`).
    CreateNew,
    /// Append; create with the given mode when missing.
    AppendCreate,
}

/// `name` as a C string when it is one plain entry of a directory (no `/`, not `.` or `..`).
fn entry_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a plain file name"),
        ));
    }
    CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file name has a NUL byte"))
}

/// Opens the entry `name` of the open directory `dir` (`openat(2)`), relative to the directory
/// itself: renaming or replacing the directory's path afterwards does not redirect it. `mode`
/// is used when the file is created.
pub fn open_at(
    dir: &std::fs::File,
    name: &str,
    how: OpenAt,
    mode: u32,
) -> io::Result<std::fs::File> {
    let c = entry_name(name)?;
    let flags = libc::O_NOFOLLOW
        | libc::O_CLOEXEC
        | match how {
            OpenAt::Read => libc::O_RDONLY,
            OpenAt::ReadWriteCreate => libc::O_RDWR | libc::O_CREAT,
            OpenAt::CreateNew => libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
            OpenAt::AppendCreate => libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT,
        };
    // SAFETY: `dir` keeps its descriptor open across the call, `c` is a NUL-terminated string
    // that outlives it, and the mode is passed as the variadic argument openat() reads only
    // with O_CREAT.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat() just returned this descriptor and nothing else owns it.
    Ok(std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Whether an error of [`open_at`] means the name is a symbolic link (`ELOOP` under
/// `O_NOFOLLOW`).
pub fn is_symlink_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Renames the entry `from` of `dir` to `to` in the same directory (`renameat(2)`), replacing
/// `to` atomically (a link at `to` is replaced, never followed).
pub fn rename_at(dir: &std::fs::File, from: &str, to: &str) -> io::Result<()> {
    let (f, t) = (entry_name(from)?, entry_name(to)?);
    // SAFETY: `dir` keeps its descriptor open across the call; both names are NUL-terminated
    // strings that outlive it.
    let r = unsafe { libc::renameat(dir.as_raw_fd(), f.as_ptr(), dir.as_raw_fd(), t.as_ptr()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Removes the entry `name` of `dir` (`unlinkat(2)`; a link is removed, not its target).
pub fn unlink_at(dir: &std::fs::File, name: &str) -> io::Result<()> {
    let c = entry_name(name)?;
    // SAFETY: `dir` keeps its descriptor open across the call; `c` is NUL-terminated and
    // outlives it; flags 0 removes a non-directory.
    let r = unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What [`stat_at`] says about a directory entry (the entry itself, not a link's target).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryStat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    /// `st_mode`: file type and permission bits.
    pub mode: u32,
    pub uid: u32,
}

impl EntryStat {
    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry `name` of `dir` as it is now.
pub fn stat_at(dir: &std::fs::File, name: &str) -> io::Result<EntryStat> {
    let c = entry_name(name)?;
    // SAFETY: stat is plain data; all-zero is a valid value.
    let mut st: libc::stat = unsafe { mem::zeroed() };
    // SAFETY: `dir` keeps its descriptor open across the call, `c` is NUL-terminated and
    // outlives it, and `st` is a valid, writable stat buffer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(EntryStat {
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink,
        mode: st.st_mode,
        uid: st.st_uid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affinity_round_trip() {
        // Runs in a thread of its own so the test harness thread keeps its affinity.
        std::thread::spawn(|| {
            let cpus = current_affinity().unwrap();
            assert!(!cpus.is_empty());
            pin_current_thread(cpus[0]).unwrap();
            assert_eq!(current_affinity().unwrap(), vec![cpus[0]]);
            assert_eq!(current_cpu(), Some(cpus[0]));
            assert!(pin_current_thread(libc::CPU_SETSIZE as usize).is_err());
        })
        .join()
        .unwrap();
    }

    /// The directory-relative calls never follow a link and `CreateNew` never opens an
    /// existing name; a name with a `/` is refused.
    #[test]
    fn directory_relative_files_never_follow_links() {
        use std::io::{Read, Write};
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).unwrap();
        let tag: String = r.iter().map(|b| format!("{b:02x}")).collect();
        let p = std::env::temp_dir().join(format!("ivnsec-sys-at-{tag}"));
        std::fs::create_dir(&p).unwrap();
        let victim = p.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, p.join("link")).unwrap();
        let d = std::fs::File::open(&p).unwrap();
        for how in [OpenAt::Read, OpenAt::ReadWriteCreate, OpenAt::AppendCreate] {
            let e = open_at(&d, "link", how, 0o600).unwrap_err();
            assert!(is_symlink_error(&e), "{how:?}: {e}");
        }
        let e = open_at(&d, "link", OpenAt::CreateNew, 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(stat_at(&d, "link").unwrap().is_symlink());
        let mut f = open_at(&d, "new", OpenAt::CreateNew, 0o600).unwrap();
        f.write_all(b"x").unwrap();
        let st = stat_at(&d, "new").unwrap();
        assert!(st.is_file() && st.mode & 0o777 == 0o600 && st.nlink == 1);
        assert_eq!(st.uid, effective_uid());
        rename_at(&d, "new", "link").unwrap();
        assert!(
            stat_at(&d, "link").unwrap().is_file(),
            "the link was replaced"
        );
        let mut s = String::new();
        open_at(&d, "link", OpenAt::Read, 0)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "x");
        unlink_at(&d, "link").unwrap();
        assert_eq!(
            stat_at(&d, "link").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        for bad in ["", ".", "..", "a/b", "../victim"] {
            assert!(open_at(&d, bad, OpenAt::Read, 0).is_err(), "{bad}");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        // A directory lock is exclusive per open file and released by unlock.
        let d2 = std::fs::File::open(&p).unwrap();
        assert!(try_lock_exclusive(&d).unwrap());
        assert!(!try_lock_exclusive(&d2).unwrap());
        unlock(&d).unwrap();
        assert!(try_lock_exclusive(&d2).unwrap());
        std::fs::remove_dir_all(&p).unwrap();
    }

    #[test]
    fn unknown_interface_is_an_error() {
        let e = interface_index("ivn-no-such-if").unwrap_err();
        assert!(e.to_string().contains("ivn-no-such-if"), "{e}");
        assert!(RawSocket::open("ivn-no-such-if", ETH_P_IVNAE).is_err());
    }

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

    #[test]
    fn rusage_grows_with_work() {
        let (u0, s0) = rusage_self();
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let (u1, s1) = rusage_self();
        assert!(u1 + s1 > u0 + s0);
    }

    #[test]
    fn signal_rejects_group_pids() {
        assert!(signal_process(0, false).is_err());
    }
}
