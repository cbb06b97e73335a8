//! [`Tap`]: a TAP (or, made with [`Tap::create_tun`], a TUN) interface of this namespace that carries whole Ethernet frames between the
//! kernel's network stack and this process. What the host sends on the interface is read here
//! ([`Tap::recv`]); what is written here ([`Tap::send`]) arrives on the interface as if from a
//! wire.
//!
//! The interface exists as long as the `Tap` lives: it is not persistent, so the kernel removes
//! it when the descriptor closes — on drop, and when the process dies however it dies (SIGKILL
//! included: the kernel closes a dead process's descriptors). No child process inherits the
//! descriptor (`O_CLOEXEC`). An existing interface of the same name is never taken over.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use crate::sys;
use crate::topology::check_ifname;

/// Creates a TUN or TAP with the offload path: the descriptor, the name, the kernel's answer
/// to the offload request.
type OffloadMaker = fn(&str) -> io::Result<(OwnedFd, String, io::Result<()>)>;

/// A TAP interface, removed when dropped.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    name: String,
    vnet_hdr: bool,
}

impl Tap {
    /// Creates the TAP interface `name` (down, no address, a random MAC the kernel picks).
    /// Refuses a name that is not a valid interface name (`InvalidInput`) or that an interface
    /// of this namespace already has (`AlreadyExists`). Needs CAP_NET_ADMIN (`PermissionDenied`
    /// otherwise).
    pub fn create(name: &str) -> io::Result<Tap> {
        Self::create_with(name, sys::tap_create)
    }

    /// Creates the TUN interface `name` (layer 3: [`recv`](Self::recv) yields and
    /// [`send`](Self::send) takes one whole IP packet, no Ethernet header, no packet-information
    /// header; down, no address), with the same rules as [`create`](Self::create).
    pub fn create_tun(name: &str) -> io::Result<Tap> {
        Self::create_with(name, sys::tun_create)
    }

    /// [`create_tun`](Self::create_tun) with the offload path: every [`recv`](Self::recv) and
    /// [`send`](Self::send) carries a `virtio_net_hdr` in front of the packet
    /// ([`vnet_hdr`](Self::vnet_hdr)), and the kernel is asked for checksum and TCP
    /// segmentation offload (`TUNSETOFFLOAD`), so reads may bring TCP super-packets of up to
    /// 64 KiB and writes may hand it coalesced ones. Returns the TUN and the kernel's answer to
    /// the offload request (`Err`: refused; the TUN then carries the vnet header but only
    /// ordinary packets).
    pub fn create_tun_offload(name: &str) -> io::Result<(Tap, io::Result<()>)> {
        Self::create_offload_with(name, sys::tun_create_offload)
    }

    /// [`create`](Self::create) with the offload path, as
    /// [`create_tun_offload`](Self::create_tun_offload) for a TUN: every read and write carries
    /// a `virtio_net_hdr` in front of the Ethernet frame, and reads may bring TCP super-frames
    /// of up to 64 KiB. Returns the TAP and the kernel's answer to the offload request.
    pub fn create_offload(name: &str) -> io::Result<(Tap, io::Result<()>)> {
        Self::create_offload_with(name, sys::tap_create_offload)
    }

    /// The offload path of a TUN or a TAP (`make`).
    fn create_offload_with(name: &str, make: OffloadMaker) -> io::Result<(Tap, io::Result<()>)> {
        Self::check_new(name)?;
        let (fd, got, offload) = make(name)?;
        Ok((
            Tap {
                fd,
                name: got,
                vnet_hdr: true,
            },
            offload,
        ))
    }

    fn check_new(name: &str) -> io::Result<()> {
        check_ifname(name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        if sys::interface_index(name).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("interface `{name}` exists already"),
            ));
        }
        Ok(())
    }

    fn create_with(name: &str, make: fn(&str) -> io::Result<(OwnedFd, String)>) -> io::Result<Tap> {
        Self::check_new(name)?;
        let (fd, got) = make(name)?;
        Ok(Tap {
            fd,
            name: got,
            vnet_hdr: false,
        })
    }

    /// Whether every packet read and written starts with a `virtio_net_hdr`
    /// ([`create_tun_offload`](Self::create_tun_offload), [`create_offload`](Self::create_offload)).
    pub fn vnet_hdr(&self) -> bool {
        self.vnet_hdr
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the interface administratively up or down.
    pub fn set_up(&self, up: bool) -> io::Result<()> {
        sys::link_up(&self.name, up)
    }

    /// Whether the interface is administratively up.
    pub fn is_up(&self) -> io::Result<bool> {
        sys::link_is_up(&self.name)
    }

    /// The interface MTU (the largest payload after the Ethernet header).
    pub fn mtu(&self) -> io::Result<u32> {
        sys::link_mtu(&self.name)
    }

    /// Sets the interface MTU.
    pub fn set_mtu(&self, mtu: u32) -> io::Result<()> {
        sys::set_link_mtu(&self.name, mtu)
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> io::Result<[u8; 6]> {
        sys::link_mac(&self.name)
    }

    /// Sets the interface's MAC address (the interface should be down).
    pub fn set_mac(&self, mac: [u8; 6]) -> io::Result<()> {
        sys::set_link_mac(&self.name, mac)
    }

    /// Reads one frame the host sent on the interface, without blocking: `Ok(None)` when none
    /// is queued. `buf` should hold the MTU plus 14 header bytes (a longer frame is cut).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        sys::read_frame(self.fd.as_fd(), buf)
    }

    /// Waits until a frame can be read or `timeout` passes; `Ok(false)` on timeout.
    pub fn wait_readable(&self, timeout: Option<Duration>) -> io::Result<bool> {
        sys::wait_readable(self.fd.as_fd(), timeout)
    }

    /// Hands one whole Ethernet frame to the host, as received on the interface.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        sys::write_frame(self.fd.as_fd(), frame)
    }
}

impl Tap {
    /// Hands one unit made of `parts` to the host with one `writev` (on a TAP with a vnet
    /// header: the header, then the frame, possibly in pieces; at most 4 parts).
    pub fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        sys::write_frame_parts(self.fd.as_fd(), parts)
    }
}

impl AsFd for Tap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
