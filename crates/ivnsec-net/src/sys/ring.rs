//! A receive ring on an AF_PACKET socket (`PACKET_MMAP`, `TPACKET_V2`): the kernel copies each
//! frame into a slot of memory shared with this process and flags the slot, so taking frames
//! costs no system call, no socket-queue skb and no second copy — where
//! [`RawSocket::recv_batch`] pays a `recvmmsg`, the queued skbs and their copy out. A thread
//! that busy-polls the ring reads memory, not the kernel. Waiting is still `poll()` on the
//! socket ([`super::wait_readable`]): the kernel reports it readable while a filled slot waits.
//!
//! `TPACKET_V2`, not V3: a V3 block is handed over when it is full or its timer expires (at
//! least a millisecond), so a lone control frame would wait for the timer; a V2 slot is handed
//! over as soon as its frame is in.
//!
//! The ring is set up before the socket is bound ([`RawSocket::open_with_rx_ring`]), so no frame
//! can be queued the old way first (a frame left in the socket queue would keep `poll()`
//! reporting readable while the ring is empty).

use std::io;
use std::mem;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use super::batch::MAX_BATCH;
use super::packet::{FrameAux, PacketType, RawSocket, RecvMeta};
use super::socket::{OptionValue, set_option};

/// `TPACKET_V2` of `enum tpacket_versions` (not in every libc version).
const TPACKET_V2: libc::c_int = 1;
/// Largest ring this process maps (its pages are the kernel's, pinned).
pub const MAX_RING_BYTES: usize = 256 << 20;
/// Smallest ring (a few blocks: room for a burst while the thread wakes up).
const MIN_RING_BYTES: usize = 256 << 10;
/// Bytes per block (the kernel allocates a block in one piece; frames never cross one).
const BLOCK_BYTES: usize = 64 << 10;

/// `struct tpacket_req`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}
// SAFETY: four u32 fields, no padding; any bytes are a valid value.
unsafe impl OptionValue for TpacketReq {}

const fn align16(x: usize) -> usize {
    (x + 15) & !15
}

/// Where the `sockaddr_ll` of a slot starts (after the aligned `tpacket2_hdr`).
const SLL_OFFSET: usize = align16(mem::size_of::<libc::tpacket2_hdr>());
/// The most room in front of the frame's first octet in a slot: the kernel puts the network
/// header at `align16(TPACKET2_HDRLEN + 16)` and the 14-octet MAC header in front of it.
const MAX_MAC_OFFSET: usize = align16(SLL_OFFSET + mem::size_of::<libc::sockaddr_ll>() + 16);

/// The ring's shape for frames of up to `frame_max` octets in about `bytes` of memory.
fn geometry(frame_max: usize, bytes: usize, page: usize) -> io::Result<TpacketReq> {
    let frame_size = align16(MAX_MAC_OFFSET + frame_max.max(64));
    let block_size = BLOCK_BYTES.max(frame_size).div_ceil(page) * page;
    let per_block = block_size / frame_size;
    let bytes = bytes.clamp(MIN_RING_BYTES, MAX_RING_BYTES);
    let block_nr = (bytes / block_size).max(2);
    let too_big = || io::Error::new(io::ErrorKind::InvalidInput, "receive ring too large");
    Ok(TpacketReq {
        block_size: u32::try_from(block_size).map_err(|_| too_big())?,
        block_nr: u32::try_from(block_nr).map_err(|_| too_big())?,
        frame_size: u32::try_from(frame_size).map_err(|_| too_big())?,
        frame_nr: u32::try_from(block_nr * per_block).map_err(|_| too_big())?,
    })
}

/// The receive ring of one AF_PACKET socket, mapped into this process. Owned by the one thread
/// that receives on the socket; dropping it unmaps the ring.
#[derive(Debug)]
pub struct RxRing {
    map: NonNull<u8>,
    len: usize,
    req: TpacketReq,
    /// The slot to look at next.
    head: usize,
}

// SAFETY: the mapping belongs to this value alone (no copy of the pointer is kept anywhere
// else in the process); moving it to another thread moves that ownership, and the kernel's
// side of the ring does not depend on which thread reads it.
unsafe impl Send for RxRing {}

impl RawSocket {
    /// [`RawSocket::open`] with a receive ring of about `bytes` (clamped to 256 KiB …
    /// [`MAX_RING_BYTES`]) for frames of up to `frame_max` octets: longer frames arrive
    /// truncated ([`RecvMeta::truncated`]). Frames are then taken with
    /// [`RxRing::recv_batch`]; [`RawSocket::recv_batch`] on this socket finds nothing.
    pub fn open_with_rx_ring(
        ifname: &str,
        ethertype: u16,
        frame_max: usize,
        bytes: usize,
    ) -> io::Result<(RawSocket, RxRing)> {
        RawSocket::open_with(ifname, ethertype, |fd| RxRing::map(fd, frame_max, bytes))
    }
}

impl RxRing {
    fn map(fd: BorrowedFd<'_>, frame_max: usize, bytes: usize) -> io::Result<RxRing> {
        // SAFETY: sysconf takes no pointers.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|p| p.is_power_of_two())
            .unwrap_or(4096);
        let req = geometry(frame_max, bytes, page)?;
        set_option(fd, libc::SOL_PACKET, libc::PACKET_VERSION, &TPACKET_V2)?;
        set_option(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, &req)?;
        let len = req.block_size as usize * req.block_nr as usize;
        // SAFETY: a fresh shared mapping of the socket's ring, which the kernel sized to
        // exactly `len` (block_size × block_nr) in the setsockopt above; no existing memory
        // is touched. The result is checked before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = NonNull::new(p.cast::<u8>()).ok_or_else(io::Error::last_os_error)?;
        Ok(RxRing {
            map,
            len,
            req,
            head: 0,
        })
    }

    /// The ring's size in bytes.
    pub fn bytes(&self) -> usize {
        self.len
    }

    /// How many frames the ring holds.
    pub fn slots(&self) -> usize {
        self.req.frame_nr as usize
    }

    /// The offset of slot `i` in the mapping (frames do not cross blocks).
    fn slot_offset(&self, i: usize) -> usize {
        let per_block = (self.req.block_size / self.req.frame_size) as usize;
        (i / per_block) * self.req.block_size as usize
            + (i % per_block) * self.req.frame_size as usize
    }

    /// The status word of the slot at `off`.
    fn status(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is a slot offset inside the mapping (`slot_offset` of an index below
        // frame_nr), 16-aligned within a page-aligned mapping, so the u32 there is in bounds
        // and aligned. The word is shared with the kernel, which writes it with its own
        // barriers; here it is only ever accessed through this atomic, which lives no longer
        // than `&self` (the mapping).
        unsafe { AtomicU32::from_ptr(self.map.as_ptr().add(off).cast::<u32>()) }
    }

    /// Whether a frame waits in the ring: the next [`recv_batch`](Self::recv_batch) takes at
    /// least one.
    pub fn ready(&self) -> bool {
        self.status(self.slot_offset(self.head))
            .load(Ordering::Acquire)
            & libc::TP_STATUS_USER
            != 0
    }

    /// Takes up to `metas.len()` (≤ [`MAX_BATCH`]) frames, never waiting, as
    /// [`RawSocket::recv_batch`] does: frame `i` is copied to `buf[i * stride + off..(i + 1) *
    /// stride]`, what is known about it in `metas[i]` (no timestamp); each slot goes back to
    /// the kernel once copied. Returns how many were taken (0: the ring is empty).
    pub fn recv_batch(
        &mut self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        metas: &mut [RecvMeta],
    ) -> usize {
        self.take(buf, stride, off, metas, None)
    }

    /// [`recv_batch`](Self::recv_batch), and with each frame what
    /// [`RawSocket::recv_batch_aux`] tells from `PACKET_AUXDATA` (here from the slot's
    /// header): the VLAN tag the kernel took out of the frame, and whether its TCP/UDP checksum
    /// is still to be computed.
    pub fn recv_batch_aux(
        &mut self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        metas: &mut [RecvMeta],
        aux: &mut [FrameAux],
    ) -> usize {
        let want = metas.len().min(aux.len());
        self.take(buf, stride, off, &mut metas[..want], Some(aux))
    }

    fn take(
        &mut self,
        buf: &mut [u8],
        stride: usize,
        off: usize,
        metas: &mut [RecvMeta],
        mut aux: Option<&mut [FrameAux]>,
    ) -> usize {
        let want = metas.len().min(MAX_BATCH);
        let frame_size = self.req.frame_size as usize;
        let mut got = 0;
        while got < want {
            let Some(room) = buf
                .get_mut(got * stride + off..(got + 1) * stride)
                .filter(|_| off <= stride)
            else {
                break;
            };
            let at = self.slot_offset(self.head);
            let st = self.status(at);
            if st.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: the slot is this process's until its status goes back to
            // TP_STATUS_KERNEL below (the Acquire load above saw TP_STATUS_USER, which the
            // kernel sets after writing the slot), so nothing writes it meanwhile. The header
            // and the sockaddr_ll after it lie within the slot's first MAX_MAC_OFFSET octets,
            // inside the frame_size ≥ MAX_MAC_OFFSET octets of the slot; read_unaligned needs
            // no alignment.
            let (hdr, sll) = unsafe {
                let base = self.map.as_ptr().add(at);
                (
                    std::ptr::read_unaligned(base.cast::<libc::tpacket2_hdr>()),
                    std::ptr::read_unaligned(base.add(SLL_OFFSET).cast::<libc::sockaddr_ll>()),
                )
            };
            let mac = usize::from(hdr.tp_mac);
            let snap = hdr.tp_snaplen as usize;
            // The kernel keeps the frame inside the slot; a slot saying otherwise is taken as
            // empty rather than read past.
            let n = if mac.checked_add(snap).is_some_and(|end| end <= frame_size) {
                snap.min(room.len())
            } else {
                0
            };
            // SAFETY: as above, the slot is ours; `mac + n ≤ mac + snap ≤ frame_size`, so the
            // n octets are inside this slot of the mapping.
            let frame = unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(at + mac), n) };
            room[..n].copy_from_slice(frame);
            metas[got] = RecvMeta {
                len: n,
                wire_len: (hdr.tp_len as usize).max(n),
                packet_type: PacketType::from_raw(sll.sll_pkttype),
                timestamp: None,
            };
            if let Some(a) = aux.as_deref_mut().and_then(|a| a.get_mut(got)) {
                *a = FrameAux {
                    vlan: (hdr.tp_status & libc::TP_STATUS_VLAN_VALID != 0).then(|| {
                        let tpid = if hdr.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                            hdr.tp_vlan_tpid
                        } else {
                            0x8100
                        };
                        (tpid, hdr.tp_vlan_tci)
                    }),
                    csum_not_ready: hdr.tp_status & libc::TP_STATUS_CSUMNOTREADY != 0,
                };
            }
            // The slot goes back to the kernel after its content was copied.
            st.store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.head = (self.head + 1) % self.slots();
            got += 1;
        }
        got
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: map and len are the mapping made in `map`, not unmapped before; no slice
        // into it outlives a `recv_batch` call.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_fit_their_blocks_and_the_frames_they_are_for() {
        for (frame_max, bytes) in [(1536, 4 << 20), (9216, 4 << 20), (65_600, 1 << 20), (64, 0)] {
            let r = geometry(frame_max, bytes, 4096).unwrap();
            assert_eq!(r.block_size % 4096, 0);
            assert_eq!(r.frame_size % 16, 0);
            assert!(r.frame_size as usize >= MAX_MAC_OFFSET + frame_max);
            assert!(r.block_size >= r.frame_size);
            assert_eq!(r.frame_nr, r.block_nr * (r.block_size / r.frame_size));
            assert!(r.block_nr >= 2);
            let total = r.block_size as usize * r.block_nr as usize;
            assert!(
                total <= MAX_RING_BYTES.max(2 * r.block_size as usize),
                "{total}"
            );
        }
        // Asked for more than the most: clamped.
        let r = geometry(1536, usize::MAX, 4096).unwrap();
        assert!(r.block_size as usize * r.block_nr as usize <= MAX_RING_BYTES);
    }
}
