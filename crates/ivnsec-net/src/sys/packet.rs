//! AF_PACKET raw sockets: [`RawSocket`], an AF_PACKET `SOCK_RAW` socket bound to one interface
//! and one EtherType. It sends and receives whole Ethernet frames (destination MAC first, no
//! FCS). Receive blocks with a timeout ([`RawSocket::recv`]) or spins on non-blocking reads
//! ([`RawSocket::recv_busy_poll`]), optionally with a kernel software RX timestamp
//! (`SO_TIMESTAMPNS`); [`RawSocket::recv_batch`] takes many frames with one `recvmmsg`.
//!
//! The socket knows no protocol: the caller names the EtherType (IVN-AE's is
//! `ivnsec_core::wire::ivnae::ETHERTYPE`).

use std::ffi::CString;
use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::time::{Duration, Instant, SystemTime};

use super::batch::{MAX_BATCH, recv_batch_named, recvmmsg_nowait, slot_iovecs};
use super::socket::{get_option, set_option, set_recv_buffer_force, wait_readable};

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
    pub(super) fn from_raw(t: u8) -> Self {
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

/// What `PACKET_AUXDATA` tells about a received frame ([`RawSocket::recv_batch_aux`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameAux {
    /// The VLAN tag (TPID, TCI) the kernel removed from the frame, if it had one.
    pub vlan: Option<(u16, u16)>,
    /// The frame's TCP/UDP checksum is not computed yet (`TP_STATUS_CSUMNOTREADY`).
    pub csum_not_ready: bool,
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
    /// Whether `PACKET_AUXDATA` is on ([`RawSocket::recv_batch_aux`]).
    auxdata: std::sync::atomic::AtomicBool,
}

impl RawSocket {
    /// Opens a socket on interface `ifname` that receives only frames of `ethertype` and sends
    /// whole Ethernet frames out of that interface. Frames this host sends are not received
    /// (`PACKET_IGNORE_OUTGOING`, and filtered again on receive for older kernels).
    /// Needs CAP_NET_RAW.
    pub fn open(ifname: &str, ethertype: u16) -> io::Result<Self> {
        Self::open_with(ifname, ethertype, |_| Ok(())).map(|(sock, ())| sock)
    }

    /// [`open`](Self::open), with `before_bind` run on the socket before it is bound (so
    /// before any frame can reach it): what must be set up on a socket that receives nothing
    /// yet, e.g. a receive ring ([`RawSocket::open_with_rx_ring`]).
    pub(super) fn open_with<T>(
        ifname: &str,
        ethertype: u16,
        before_bind: impl FnOnce(BorrowedFd<'_>) -> io::Result<T>,
    ) -> io::Result<(Self, T)> {
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
            auxdata: std::sync::atomic::AtomicBool::new(false),
        };
        let extra = before_bind(sock.fd.as_fd())?;
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
        Ok((sock, extra))
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

    /// Makes the bound interface accept frames to the multicast address `group` for this
    /// socket (`PACKET_ADD_MEMBERSHIP`, `PACKET_MR_MULTICAST`): e.g. the EAPOL group address
    /// 01-80-C2-00-00-03 of MKA. The membership ends when the socket closes.
    pub fn join_multicast(&self, group: [u8; 6]) -> io::Result<()> {
        let mut address = [0u8; 8];
        address[..6].copy_from_slice(&group);
        let mreq = libc::packet_mreq {
            mr_ifindex: self.ifindex as libc::c_int,
            mr_type: libc::PACKET_MR_MULTICAST as libc::c_ushort,
            mr_alen: 6,
            mr_address: address,
        };
        set_option(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mreq,
        )
    }

    /// Puts the bound interface in promiscuous mode for as long as this socket is open
    /// (`PACKET_ADD_MEMBERSHIP`, `PACKET_MR_PROMISC`; the kernel counts memberships, so the mode
    /// ends when the last one closes, even if the process is killed): a bump-in-the-wire sees
    /// the frames of the hosts behind it, not only its own.
    pub fn set_promiscuous(&self) -> io::Result<()> {
        let mreq = libc::packet_mreq {
            mr_ifindex: self.ifindex as libc::c_int,
            mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        set_option(
            self.fd.as_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            &mreq,
        )
    }

    /// Receives up to `metas.len()` (≤ [`MAX_BATCH`]) frames like
    /// [`recv_batch`](Self::recv_batch), and with each what `PACKET_AUXDATA` tells: the VLAN
    /// tag the kernel took out of the frame (it always does on receive; the frame in `buf`
    /// lacks it) and whether its TCP/UDP checksum is still to be computed (a frame from a local
    /// sender with checksum offload, e.g. over a veth). Turns `PACKET_AUXDATA` on at the first
    /// call.
    pub fn recv_batch_aux(
        &self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        metas: &mut [RecvMeta],
        aux: &mut [FrameAux],
    ) -> io::Result<usize> {
        if off >= stride {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "offset must be below the stride",
            ));
        }
        if !self.auxdata.load(std::sync::atomic::Ordering::Relaxed) {
            self.setsockopt_int(libc::SOL_PACKET, libc::PACKET_AUXDATA, 1)?;
            self.auxdata
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: iovec, mmsghdr and sockaddr_ll are plain data; all-zero is valid.
        let mut iov: [libc::iovec; MAX_BATCH] = unsafe { mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { mem::zeroed() };
        // SAFETY: as above.
        let mut names: [libc::sockaddr_ll; MAX_BATCH] = unsafe { mem::zeroed() };
        // Room for one tpacket_auxdata control message each (16-byte header + 20 bytes), u64
        // aligned as cmsghdr requires.
        let mut control = [[0u64; 8]; MAX_BATCH];
        let n = slot_iovecs(buf, stride, off, metas.len().min(aux.len()), &mut iov)?;
        for i in 0..n {
            let h = &mut msgs[i].msg_hdr;
            h.msg_iov = &mut iov[i];
            h.msg_iovlen = 1;
            h.msg_name = (&mut names[i] as *mut libc::sockaddr_ll).cast();
            h.msg_namelen = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            h.msg_control = control[i].as_mut_ptr().cast();
            h.msg_controllen = mem::size_of_val(&control[i]) as _;
        }
        // SAFETY: every header points at one iovec describing a disjoint, writable slot of
        // `buf`, at one sockaddr_ll of `names` and at one control buffer of `control`, each
        // with its size; all outlive the call; a null timeout is allowed.
        let got = match unsafe {
            recvmmsg_nowait(
                self.as_fd(),
                &mut msgs[..n],
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        }? {
            Some(got) => got,
            None => return Ok(0),
        };
        for i in 0..got {
            let wire_len = msgs[i].msg_len as usize;
            let mut a = FrameAux::default();
            let msg = &msgs[i].msg_hdr;
            // SAFETY: msg was filled by a successful recvmmsg, so msg_control/msg_controllen
            // describe the control bytes the kernel wrote into control[i], which is alive.
            let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
            while !cmsg.is_null() {
                // SAFETY: CMSG_FIRSTHDR/CMSG_NXTHDR return null or a pointer to a complete,
                // aligned cmsghdr inside control[i].
                let hdr = unsafe { &*cmsg };
                if hdr.cmsg_level == libc::SOL_PACKET && hdr.cmsg_type == libc::PACKET_AUXDATA {
                    // SAFETY: a PACKET_AUXDATA message carries one struct tpacket_auxdata;
                    // read_unaligned makes no alignment assumption.
                    let d: libc::tpacket_auxdata =
                        unsafe { ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast()) };
                    if d.tp_status & libc::TP_STATUS_VLAN_VALID != 0 {
                        let tpid = if d.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            d.tp_vlan_tpid
                        } else {
                            0x8100
                        };
                        a.vlan = Some((tpid, d.tp_vlan_tci));
                    }
                    a.csum_not_ready = d.tp_status & libc::TP_STATUS_CSUMNOTREADY != 0;
                }
                // SAFETY: msg and cmsg are as above; CMSG_NXTHDR stays within msg_controllen.
                cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
            }
            aux[i] = a;
            metas[i] = RecvMeta {
                len: wire_len.min(stride - off),
                wire_len,
                packet_type: PacketType::from_raw(names[i].sll_pkttype),
                timestamp: None,
            };
        }
        Ok(got)
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

    /// Lets the socket receive the frames this host sends out of its interface as well
    /// (`PACKET_IGNORE_OUTGOING` off), for [`RawSocket::try_recv_any`]: a capture of the host's
    /// own egress, as a tap on its link would see it.
    pub fn keep_outgoing(&self) -> io::Result<()> {
        self.setsockopt_int(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 0)
    }

    /// Receives one frame if one is queued, without blocking, the frames this host sent
    /// included ([`PacketType::Outgoing`]; see [`RawSocket::keep_outgoing`]).
    pub fn try_recv_any(&self, buf: &mut [u8]) -> io::Result<Option<RecvMeta>> {
        self.recvmsg_nonblocking(buf)
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

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_core::wire::ivnae::ETHERTYPE as ETH_P_IVNAE;

    #[test]
    fn unknown_interface_is_an_error() {
        let e = interface_index("ivn-no-such-if").unwrap_err();
        assert!(e.to_string().contains("ivn-no-such-if"), "{e}");
        assert!(RawSocket::open("ivn-no-such-if", ETH_P_IVNAE).is_err());
    }
}
