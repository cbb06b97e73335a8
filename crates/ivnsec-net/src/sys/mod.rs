//! Operating-system calls that need `unsafe`: the only such module of ivnsec. Every `unsafe`
//! block says why it is sound in a `// SAFETY:` comment; everything outside is safe Rust.
//!
//! One file per concern; every name is re-exported here, so `ivnsec_net::sys::X` is the path
//! callers use:
//!
//! - [`packet`]: [`RawSocket`], an AF_PACKET `SOCK_RAW` socket bound to one interface and one
//!   EtherType, sending and receiving whole Ethernet frames (blocking with a timeout, busy-poll,
//!   batches, software RX timestamps, the kernel's drop counters, a filter for frames to other
//!   hosts, multicast group membership); [`interface_index`].
//! - [`ring`]: [`RxRing`], a receive ring (`PACKET_MMAP`, `TPACKET_V2`) on a [`RawSocket`]
//!   opened with [`RawSocket::open_with_rx_ring`]: frames taken from memory shared with the
//!   kernel, no system call per batch.
//! - [`batch`]: [`send_batch`] / [`recv_batch`], many units per `sendmmsg` / `recvmmsg` on any
//!   socket, at most [`MAX_BATCH`]; UDP with segmentation and receive offload
//!   ([`send_udp_gso_batch`], [`recv_batch_gro`]).
//! - [`socket`]: options and readiness of any socket: buffer sizes ([`set_socket_buffers`],
//!   [`set_recv_buffer_force`]), the drop counter ([`socket_drops`]), [`wait_readable`],
//!   [`poll_many`] (one wait over many sockets: the key server's connections before TLS).
//! - [`cpu`]: [`pin_current_thread`] / [`current_affinity`] / [`current_cpu`] (on this VM a
//!   cross-CPU wake-up costs ≈27 µs per hop; latency mode pins and busy-polls), [`rusage_self`],
//!   [`monotonic_ns`].
//! - [`signal`]: [`termination_signals`] (SIGINT/SIGTERM/SIGHUP as a value to wait for) and
//!   [`signal_process`], used by testbed teardown to stop processes inside its own namespaces.
//! - [`fs`]: [`try_lock_exclusive`], an exclusive `flock` (one sender per nonce state file);
//!   [`open_at`], [`rename_at`], [`unlink_at`], [`stat_at`]: file operations relative to an open
//!   directory that never follow a symbolic link (the nonce state directory).
//! - [`process`]: [`die_with_parent`], a child process that is killed when ivnsec dies, even by
//!   SIGKILL; [`raise_open_files_limit`].
//! - [`stdio`]: [`set_aside_stdout`], the real stdout kept for one `--json` document while
//!   descriptor 1 (what children inherit) goes to stderr.
//! - [`tap`]: [`tap_create`] (a non-persistent TAP interface, removed by the kernel when its
//!   descriptor closes), [`read_frame`] / [`write_frame`], and interface settings by ioctl
//!   ([`link_up`], [`link_mtu`], [`set_link_mtu`], [`link_mac`], [`set_link_mac`]).
//!
//! No protocol lives here: a raw socket is opened for an EtherType the caller names (IVN-AE's
//! is `ivnsec_core::wire::ivnae::ETHERTYPE`).
//!
//! Namespaces are not entered here: node processes are started with `ip netns exec NS …`, so a
//! process never switches namespace after start (no `setns`).

pub mod batch;
pub mod cpu;
pub mod fs;
pub mod packet;
pub mod process;
pub mod ring;
pub mod signal;
pub mod socket;
pub mod stdio;
pub mod tap;

pub use batch::{
    MAX_BATCH, recv_batch, recv_batch_gro, send_batch, send_batch_at, send_batch_prefixed,
    send_udp_gso_batch,
};
pub use cpu::{
    MAX_REALTIME_PRIORITY, current_affinity, current_cpu, current_thread_realtime, monotonic_ns,
    pin_current_thread, rusage_self, set_current_thread_realtime,
};
pub use fs::{
    EntryStat, OpenAt, effective_uid, is_symlink_error, open_at, rename_at, stat_at,
    try_lock_exclusive, unlink_at, unlock,
};
pub use packet::{
    ETH_HLEN, FrameAux, PacketStatistics, PacketType, RawSocket, RecvMeta, interface_index,
};
pub use process::{die_with_parent, raise_open_files_limit};
pub use ring::{MAX_RING_BYTES, RxRing};
pub use signal::{
    TerminationSignals, signal_process, termination_signal_received, termination_signals,
};
pub use socket::{
    PollEntry, path_mtu, poll_many, set_recv_buffer_force, set_socket_buffers, set_udp_gro,
    socket_drops, wait_readable, wait_readable_any, wait_writable,
};
pub use stdio::set_aside_stdout;
pub use tap::{
    link_is_up, link_mac, link_mtu, link_up, read_frame, set_link_mac, set_link_mtu, tap_create,
    tap_create_offload, tun_create, tun_create_offload, write_frame, write_frame_parts,
};
