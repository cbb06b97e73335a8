//! The two roles of the camera experiment (seed 003 §F), each its own process in its own ECU
//! namespace: the camera ECU runs one thread per camera, each sending one frame every 1/fps s
//! as a secured SOME/IP notification of its own service; the consumer (the ADAS ECU) runs one
//! receive thread per camera, verifies every whole frame and records its tx→rx delay.
//!
//! Transports: `tcp` (one connection per camera, as 003; SOME/IP framed by Length) and `udp-tp`
//! (one UDP socket pair per camera; each message protected whole, then cut into SOME/IP-TP
//! segments and sent with `sendmmsg`; the consumer reassembles, then verifies). Each camera is
//! a server of its own service with its own fresh random key, so its counter starting at 1
//! never repeats a nonce under that key.
//!
//! Frames carry [`FrameStamp`]: sequence number, the CLOCK_MONOTONIC time the camera started
//! protecting the frame and its due time. Namespaces share CLOCK_MONOTONIC, which stands in for
//! 003's PTP-synchronised clocks.
//!
//! Protocol with the orchestrator (stdin/stdout lines):
//! - consumer: `READY <port>…` (one port per camera) once its sockets are open; when every
//!   camera's stream ended (TCP end of stream, or every frame in for UDP) or stdin reaches EOF,
//!   `REPORT <json>` ([`ConsumerReport`]).
//! - camera ECU: connects every camera's socket, prints `READY`, waits for one line on stdin
//!   (the start signal), sends every frame on schedule and prints `REPORT <json>`
//!   ([`CameraEcuReport`]).

use std::io::{BufRead, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{Channel, ChannelOptions, DirectionKeys, Ends, write_ipv4_header};
use ivnsec_core::crypto::AeadAlg;
use ivnsec_core::crypto::Primitive;
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::DropCounters;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::someip::{
    DEFAULT_MAX_SENDERS, Level, OVERHEAD, SALT_LEN, ServiceParams, ServiceSa, suite_from_name,
};
use ivnsec_core::someip::datagram_messages;
use ivnsec_core::wire::ip::{internet_checksum, protocol};
use ivnsec_core::wire::someip::{
    Deframed, HEADER_LEN, MessageType, Repr, ReturnCode, StreamDeframer,
};
use ivnsec_core::wire::someip_tp::{
    MAX_SEGMENT_DATA, Reassembler, ReassemblyLimits, Segmenter, TP_HEADER_LEN,
};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::link::{Link, LinkSpec};
use ivnsec_net::someip as net;
use ivnsec_net::sys::{self, MAX_BATCH, monotonic_ns, rusage_self};
use ivnsec_net::topology;
use serde::{Deserialize, Serialize};

use super::{CameraLog, FrameStamp, Phase, Schedule};
use crate::fragment::{FragReceiver, FragSender, Limits, Reject, max_unit_payload, slot_len};
use crate::process::{NodeSpec, read_spec, stop_on_stdin_eof};

/// Frames of each run a `--pcap` records: the first ones the camera ECU sends.
pub const CAPTURE_FRAMES: usize = 4;
/// The event every camera service sends its frames as.
pub const FRAME_EVENT: u16 = 0x8001;
/// Kernel socket buffers of both roles (as the SOME/IP service sockets; capped by
/// `net.core.rmem_max` / `wmem_max`).
const SOCKET_BUFFER: usize = net::RECV_BUFFER;
/// Larger UDP payloads are sent as SOME/IP-TP segments (the SOME/IP UDP binding's limit that
/// 003 §E uses: 1,400-byte payloads).
pub const UDP_MAX_PAYLOAD: usize = 1400;
/// Time from the start signal to the first due frame, so every camera thread is running.
const LEAD_NS: u64 = 20_000_000;
/// How long the consumer waits for a camera to connect.
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Receive slot of the UDP consumer: any segment or single message of the binding fits.
const UDP_STRIDE: usize = 2048;

/// How frames travel from the camera ECU to the consumer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// Secured SOME/IP over TCP, one connection per camera (seed 003 §F).
    #[default]
    Tcp,
    /// Secured SOME/IP over UDP, each frame cut into SOME/IP-TP segments.
    UdpTp,
    /// The SOME/IP message (unprotected) in IVN-AE raw-Ethernet frames: cut into fragments
    /// ([`crate::fragment`]), each protected at the level by the channel (UDP on loopback).
    L2,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "tcp",
            Transport::UdpTp => "udp-tp",
            Transport::L2 => "l2",
        }
    }
}

/// One camera's stream.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Stream {
    /// SOME/IP service ID.
    pub service: u16,
    /// The service key (empty under `nosec`; sent over the pipe, not in the JSON).
    #[serde(skip)]
    pub key: DirectionKeys,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CameraRole {
    /// The camera ECU: every camera's sender thread.
    Cameras,
    /// The ADAS consumer: every camera's receive thread.
    Consumer,
}

/// Where the camera ECU records the first frames it sends, and the Ethernet addresses to put
/// around them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaptureSpec {
    pub path: PathBuf,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
}

/// Everything a camera role needs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CameraSpec {
    pub role: CameraRole,
    pub transport: Transport,
    /// `nosec`, `auth` or `conf`.
    pub level: String,
    /// AEAD suite name (ignored under `nosec`).
    pub suite: String,
    pub provider: ProviderChoice,
    pub fps: u32,
    pub frame_bytes: usize,
    /// Frames each camera sends.
    pub frames: u64,
    pub phase: Phase,
    pub streams: Vec<Stream>,
    /// This node's address (sockets bind to it).
    pub local_ip: Ipv4Addr,
    /// The consumer's address (camera ECU only).
    pub consumer_ip: Ipv4Addr,
    /// The consumer's port per camera (camera ECU only).
    #[serde(default)]
    pub ports: Vec<u16>,
    #[serde(default)]
    pub capture: Option<CaptureSpec>,
    /// The IVN-AE channel of the `l2` transport.
    #[serde(default)]
    pub l2: Option<L2Spec>,
    /// The clock of the frames' `sent`/`due` stamps and of the consumer's receive times (the
    /// tx→rx delay): CLOCK_MONOTONIC on one host, CLOCK_REALTIME across hosts (the clock PTP
    /// disciplines). The camera's schedule runs on CLOCK_MONOTONIC either way.
    #[serde(default)]
    pub stamp_clock: crate::clock_watch::StampClock,
}

/// The `l2` transport: one IVN-AE channel from the camera ECU to the consumer that every camera
/// shares (one SA, one sequence counter, one link, as one Ethernet port), with fragmentation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct L2Spec {
    /// IVN-AE profile: `plain` (nosec), `SUITE/auth`, `SUITE/conf`.
    pub profile: Profile,
    /// Camera ECU → consumer keys (sent over the pipe, not in the JSON).
    #[serde(skip)]
    pub keys: DirectionKeys,
    /// Ends seen from the camera ECU.
    pub ends: Ends,
    /// This node's link.
    pub link: LinkSpec,
}

/// The IVN-AE profile carrying a level: `plain` for nosec, else the suite at `/auth` or `/conf`.
pub fn l2_profile(level: Level, suite: AeadAlg) -> Profile {
    let at = |level| {
        Profile::IvnAe(ivnsec_core::suite::IvnAeProfile {
            suite: ivnsec_core::suite::Suite::Aead(suite),
            level,
        })
    };
    match level {
        Level::NoSec => Profile::PLAIN,
        Level::Auth => at(ivnsec_core::suite::Level::Auth),
        Level::Conf => at(ivnsec_core::suite::Level::Conf),
    }
}

/// What the camera ECU reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CameraEcuReport {
    /// Frames each camera sent.
    pub sent: Vec<u64>,
    /// The schedule's start (first due time of camera 0), CLOCK_MONOTONIC ns.
    pub start_ns: u64,
    /// When the last frame was handed to the kernel.
    pub end_ns: u64,
    pub user_ns: u64,
    pub sys_ns: u64,
}

/// What the consumer reports.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ConsumerReport {
    pub cameras: Vec<CameraLog>,
    pub user_ns: u64,
    pub sys_ns: u64,
}

impl NodeSpec for CameraSpec {
    fn keys(&self) -> Vec<&DirectionKeys> {
        let streams = self.streams.iter().map(|s| &s.key);
        streams.chain(self.l2.as_ref().map(|l| &l.keys)).collect()
    }
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
        let streams = self.streams.iter_mut().map(|s| &mut s.key);
        streams
            .chain(self.l2.as_mut().map(|l| &mut l.keys))
            .collect()
    }
}

impl CameraSpec {
    fn level(&self) -> Result<Level> {
        Level::from_name(&self.level).ok_or_else(|| anyhow!("bad level {}", self.level))
    }

    fn suite(&self) -> Result<AeadAlg> {
        suite_from_name(&self.suite).ok_or_else(|| anyhow!("bad suite {}", self.suite))
    }

    /// Bytes of one frame's message on the wire (SOME/IP header, security fields, frame, tag).
    pub fn message_bytes(&self) -> Result<usize> {
        Ok(message_bytes(self.level()?, self.frame_bytes))
    }

    /// The SA of camera `i`'s service.
    fn sa(&self, i: usize) -> Result<ServiceSa> {
        let level = self.level()?;
        let alg = self.suite()?;
        let s = &self.streams[i];
        let key = s.key.key();
        let provider =
            ivnsec_crypto::select_primitives(self.provider, &[Primitive::Aead(alg)], &alg.name())?;
        let p = ServiceParams {
            service_id: s.service,
            level,
            alg,
            key_id: 1,
            key,
            salt: [0; SALT_LEN],
            replay_window: 64,
            max_senders: DEFAULT_MAX_SENDERS,
            first_counter: 1,
        };
        ServiceSa::new(provider, &p).map_err(|e| anyhow!("service 0x{:04x}: {e}", s.service))
    }
}

/// Bytes of a frame's SOME/IP message at `level`.
pub fn message_bytes(level: Level, frame_bytes: usize) -> usize {
    HEADER_LEN + frame_bytes + if level == Level::NoSec { 0 } else { OVERHEAD }
}

/// Runs the role whose spec arrives on stdin ([`crate::process`]).
pub fn run() -> Result<()> {
    let spec: CameraSpec = read_spec()?;
    if spec.frame_bytes < FrameStamp::LEN || spec.streams.is_empty() {
        bail!("bad node spec: no streams, or frames shorter than their stamp");
    }
    match (spec.role, spec.transport) {
        (CameraRole::Cameras, Transport::L2) => cameras_l2(&spec),
        (CameraRole::Consumer, Transport::L2) => consumer_l2(&spec),
        (CameraRole::Cameras, _) => cameras(&spec),
        (CameraRole::Consumer, _) => consumer(&spec),
    }
}

fn print_report(tag: &str, v: &impl Serialize) -> Result<()> {
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "{tag} {}", serde_json::to_string(v)?)?;
    out.flush()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The camera ECU.

/// One camera's socket.
enum Sender {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

/// Frames claimed for the capture, and what was captured: (camera, frame, send time, message).
struct Capture {
    claimed: AtomicUsize,
    frames: Mutex<Vec<Captured>>,
}

struct Captured {
    seq: u64,
    /// `l2`: the protected units (whole Ethernet frames) the message went out in.
    units: Vec<Vec<u8>>,
    at_ns: u64,
    src: SocketAddr,
    dst: SocketAddr,
    message: Vec<u8>,
}

fn cameras(spec: &CameraSpec) -> Result<()> {
    let n = spec.streams.len();
    if spec.ports.len() != n {
        bail!("{} streams but {} consumer ports", n, spec.ports.len());
    }
    let mut socks = Vec::with_capacity(n);
    for &port in &spec.ports {
        let dst = SocketAddr::V4(SocketAddrV4::new(spec.consumer_ip, port));
        let s = match spec.transport {
            Transport::Tcp => {
                let s = net::connect_tcp(dst, Duration::from_secs(5))
                    .with_context(|| format!("connecting to the consumer at {dst}"))?;
                sys::set_socket_buffers(s.as_fd(), SOCKET_BUFFER).context("socket buffers")?;
                Sender::Tcp(s)
            }
            Transport::L2 => bail!("the l2 transport has its own camera ECU"),
            Transport::UdpTp => {
                let s = net::bind_udp(
                    SocketAddrV4::new(spec.local_ip, 0),
                    Duration::from_millis(100),
                )
                .context("binding a UDP socket")?;
                sys::set_socket_buffers(s.as_fd(), SOCKET_BUFFER).context("socket buffers")?;
                s.connect(dst)
                    .with_context(|| format!("connecting to {dst}"))?;
                Sender::Udp(s)
            }
        };
        socks.push(s);
    }
    let sas: Vec<ServiceSa> = (0..n).map(|i| spec.sa(i)).collect::<Result<_>>()?;
    let streams: Vec<(Sender, ServiceSa)> = socks.into_iter().zip(sas).collect();
    run_cameras(spec, streams, |i, (mut sock, mut sa), schedule, cap| {
        camera(spec, i, &mut sa, &mut sock, schedule, cap)
    })
}

/// The camera ECU once its sockets are open: prints `READY`, waits for the start signal, runs
/// `camera(i, item_i, schedule_i, capture)` for every camera in a thread of its own from one
/// common start time, writes the capture and prints the report.
fn run_cameras<T: Send>(
    spec: &CameraSpec,
    items: Vec<T>,
    camera: impl Fn(usize, T, Schedule, Option<&Capture>) -> Result<u64> + Sync,
) -> Result<()> {
    let n = items.len();
    let capture = spec.capture.as_ref().map(|_| Capture {
        claimed: AtomicUsize::new(0),
        frames: Mutex::new(Vec::new()),
    });
    print_report("READY", &n)?;
    // Start signal: one line on stdin.
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let (u0, s0) = rusage_self();
    let start = monotonic_ns() + LEAD_NS;
    // The schedule's start as the stamps' clock reads it (the consumer measures from it).
    let start_stamp = match spec.stamp_clock {
        crate::clock_watch::StampClock::Monotonic => start,
        realtime => realtime
            .now_ns()
            .saturating_add(start)
            .saturating_sub(monotonic_ns()),
    };
    let results: Vec<Result<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let schedule = Schedule::new(start, i, n, spec.fps, spec.phase);
                let (cap, camera) = (capture.as_ref(), &camera);
                scope.spawn(move || camera(i, item, schedule, cap))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a camera thread panicked")))
            })
            .collect()
    });
    let end = monotonic_ns();
    let (u1, s1) = rusage_self();
    let mut sent = Vec::with_capacity(n);
    for (i, r) in results.into_iter().enumerate() {
        sent.push(r.with_context(|| format!("camera {}", i + 1))?);
    }
    if let (Some(c), Some(cs)) = (capture, &spec.capture) {
        let frames = c.frames.into_inner().unwrap_or_else(|p| p.into_inner());
        write_capture(spec, cs, &frames)?;
    }
    print_report(
        "REPORT",
        &CameraEcuReport {
            sent,
            start_ns: start_stamp,
            end_ns: end,
            user_ns: u1 - u0,
            sys_ns: s1 - s0,
        },
    )
}

/// Sleeps until `t_ns` (CLOCK_MONOTONIC). No spinning: the camera threads' CPU time is part of
/// what is measured, and the deadline is three orders of magnitude above a sleep's overshoot.
fn sleep_until(t_ns: u64) {
    let now = monotonic_ns();
    if t_ns > now {
        std::thread::sleep(Duration::from_nanos(t_ns - now));
    }
}

/// One frame as a camera thread hands it to its transport.
struct Shot<'a> {
    /// Frame number, from 0.
    k: u64,
    /// SOME/IP session ID of its message (1..=0xFFFF, wrapping to 1).
    session: u16,
    /// When the frame was taken (its stamp's `sent`).
    sent_ns: u64,
    /// The frame: stamp, then image data.
    image: &'a [u8],
    /// Whether this frame is one of the run's first [`CAPTURE_FRAMES`] (with `--pcap`).
    capture: bool,
}

/// The loop of every camera thread: frame `k` waits for its due time on the absolute schedule,
/// gets its stamp, and goes to `send`. The image is random data made once; nothing is allocated
/// per frame here. Returns the frames sent.
fn each_frame(
    spec: &CameraSpec,
    schedule: Schedule,
    capture: Option<&Capture>,
    mut send: impl FnMut(Shot<'_>) -> Result<()>,
) -> Result<u64> {
    let mut image = vec![0u8; spec.frame_bytes];
    getrandom::fill(&mut image).map_err(|e| anyhow!("random image: {e}"))?;
    let mut session = 0u16;
    for k in 0..spec.frames {
        let due = schedule.due_ns(k);
        sleep_until(due);
        session = session.wrapping_add(1).max(1);
        let sent_ns = monotonic_ns();
        // Across hosts the stamp is on CLOCK_REALTIME, the due time moved with it (the lag,
        // sent − due, stays what the schedule's clock measured).
        let (stamp_sent, stamp_due) = match spec.stamp_clock {
            crate::clock_watch::StampClock::Monotonic => (sent_ns, due),
            realtime => {
                let rt = realtime.now_ns();
                (rt, rt.saturating_sub(sent_ns.saturating_sub(due)))
            }
        };
        FrameStamp {
            seq: k,
            sent_ns: stamp_sent,
            due_ns: stamp_due,
        }
        .write(&mut image)
        .ok_or_else(|| anyhow!("frame shorter than its stamp"))?;
        let capture =
            capture.is_some_and(|c| c.claimed.fetch_add(1, Ordering::Relaxed) < CAPTURE_FRAMES);
        send(Shot {
            k,
            session,
            sent_ns,
            image: &image,
            capture,
        })
        .with_context(|| format!("frame {k}"))?;
    }
    Ok(spec.frames)
}

impl Capture {
    fn push(&self, c: Captured) {
        self.frames
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(c);
    }
}

/// One camera over TCP or UDP/SOME/IP-TP: each frame protected whole with the camera's SA,
/// then written to its connection or segmented. The message and the segment batch are
/// allocated once.
fn camera(
    spec: &CameraSpec,
    index: usize,
    sa: &mut ServiceSa,
    sock: &mut Sender,
    schedule: Schedule,
    capture: Option<&Capture>,
) -> Result<u64> {
    let service = spec.streams[index].service;
    let mut msg = vec![0u8; message_bytes(sa.level(), spec.frame_bytes)];
    let seg_len = HEADER_LEN + TP_HEADER_LEN + MAX_SEGMENT_DATA;
    let stride = seg_len.next_multiple_of(64);
    let mut batch = match sock {
        Sender::Udp(_) => vec![0u8; stride * MAX_BATCH],
        Sender::Tcp(_) => Vec::new(),
    };
    let mut lens = [0usize; MAX_BATCH];
    let sent = each_frame(spec, schedule, capture, |f| {
        let hdr = frame_header(service, f.session);
        let len = sa
            .protect(&hdr, f.image, &mut msg)
            .map_err(|e| anyhow!("protecting: {e}"))?;
        let wire = &msg[..len];
        match sock {
            Sender::Tcp(s) => s.write_all(wire).context("sending")?,
            Sender::Udp(s) => {
                send_segments(s, wire, &mut batch, stride, &mut lens).context("sending")?
            }
        }
        if let (true, Some(c)) = (f.capture, capture) {
            let (src, dst) = match sock {
                Sender::Tcp(s) => (s.local_addr()?, s.peer_addr()?),
                Sender::Udp(s) => (s.local_addr()?, s.peer_addr()?),
            };
            c.push(Captured {
                seq: f.k,
                units: Vec::new(),
                at_ns: f.sent_ns,
                src,
                dst,
                message: wire.to_vec(),
            });
        }
        Ok(())
    })?;
    if let Sender::Tcp(s) = sock {
        // End of stream: the consumer's thread for this camera is done.
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    Ok(sent)
}

/// The header of a frame: a NOTIFICATION of [`FRAME_EVENT`] from the camera's service (the
/// Length is set by protect).
fn frame_header(service: u16, session: u16) -> Repr {
    Repr {
        service_id: service,
        method_id: FRAME_EVENT,
        client_id: 0,
        session_id: session,
        interface_version: 1,
        message_type: MessageType::Notification,
        tp: false,
        return_code: ReturnCode::E_OK,
        payload_len: 0,
    }
}

/// Sends one whole message over the connected UDP socket: one datagram when its payload fits
/// [`UDP_MAX_PAYLOAD`], else SOME/IP-TP segments of [`MAX_SEGMENT_DATA`] bytes, up to
/// [`MAX_BATCH`] per `sendmmsg`.
fn send_segments(
    sock: &UdpSocket,
    wire: &[u8],
    batch: &mut [u8],
    stride: usize,
    lens: &mut [usize; MAX_BATCH],
) -> Result<()> {
    if wire.len() - HEADER_LEN <= UDP_MAX_PAYLOAD {
        sock.send(wire)?;
        return Ok(());
    }
    let hdr = Repr::parse(&ivnsec_core::wire::someip::Packet::new_unchecked(wire))
        .map_err(|e| anyhow!("{e}"))?;
    let mut seg = Segmenter::new(hdr, &wire[HEADER_LEN..], MAX_SEGMENT_DATA);
    loop {
        let mut k = 0;
        while k < MAX_BATCH {
            match seg.next_into(&mut batch[k * stride..(k + 1) * stride]) {
                Some(n) => {
                    lens[k] = n;
                    k += 1;
                }
                None => break,
            }
        }
        if k == 0 {
            return Ok(());
        }
        sys::send_batch(sock.as_fd(), batch, stride, &lens[..k])?;
        if k < MAX_BATCH {
            return Ok(());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The consumer.

enum Receiver {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

fn consumer(spec: &CameraSpec) -> Result<()> {
    let n = spec.streams.len();
    let mut socks = Vec::with_capacity(n);
    let mut ports = Vec::with_capacity(n);
    for _ in 0..n {
        let addr = SocketAddrV4::new(spec.local_ip, 0);
        let s = match spec.transport {
            Transport::Tcp => {
                let l = TcpListener::bind(addr).with_context(|| format!("binding {addr}"))?;
                // Accepted connections inherit the buffers (and the window scale they allow).
                sys::set_socket_buffers(l.as_fd(), SOCKET_BUFFER).context("socket buffers")?;
                l.set_nonblocking(true)?;
                Receiver::Tcp(l)
            }
            Transport::L2 => bail!("the l2 transport has its own consumer"),
            Transport::UdpTp => {
                let s = net::bind_udp(addr, Duration::from_millis(100))
                    .with_context(|| format!("binding {addr}"))?;
                s.set_nonblocking(true)?;
                Receiver::Udp(s)
            }
        };
        ports.push(match &s {
            Receiver::Tcp(l) => l.local_addr()?.port(),
            Receiver::Udp(u) => u.local_addr()?.port(),
        });
        socks.push(s);
    }
    let mut sas: Vec<ServiceSa> = (0..n).map(|i| spec.sa(i)).collect::<Result<_>>()?;
    // Closing stdin stops every receive thread (the orchestrator does it when frames are
    // missing after the cameras finished).
    let stop = stop_on_stdin_eof();
    let (u0, s0) = rusage_self();
    let logs: Vec<Result<CameraLog>> = std::thread::scope(|scope| {
        let stop = &*stop;
        let handles: Vec<_> = socks
            .iter()
            .zip(sas.iter_mut())
            .map(|(sock, sa)| {
                scope.spawn(move || match sock {
                    Receiver::Tcp(l) => receive_tcp(spec, l, sa, stop),
                    Receiver::Udp(u) => receive_udp(spec, u, sa, stop),
                })
            })
            .collect();
        let ready = print_ready(&ports);
        let logs = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a receive thread panicked")))
            })
            .collect();
        ready.map(|()| logs)
    })?;
    let (u1, s1) = rusage_self();
    let mut cameras = Vec::with_capacity(n);
    for (i, r) in logs.into_iter().enumerate() {
        cameras.push(r.with_context(|| format!("camera {}", i + 1))?);
    }
    print_report(
        "REPORT",
        &ConsumerReport {
            cameras,
            user_ns: u1 - u0,
            sys_ns: s1 - s0,
        },
    )
}

fn stopped(stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
}

fn print_ready(ports: &[u16]) -> Result<()> {
    let out = std::io::stdout();
    let mut out = out.lock();
    let list: Vec<String> = ports.iter().map(u16::to_string).collect();
    writeln!(out, "READY {}", list.join(" "))?;
    out.flush()?;
    Ok(())
}

/// What a receive thread knows about its camera's frames.
struct Frames<'a> {
    spec: &'a CameraSpec,
    seen: Vec<bool>,
    log: CameraLog,
    drops: DropCounters,
}

impl<'a> Frames<'a> {
    fn new(spec: &'a CameraSpec) -> Frames<'a> {
        let n = usize::try_from(spec.frames).unwrap_or(usize::MAX);
        let mut log = CameraLog::default();
        log.delay_ns.reserve(n);
        log.lag_ns.reserve(n);
        Frames {
            spec,
            seen: vec![false; n],
            log,
            drops: DropCounters::default(),
        }
    }

    fn complete(&self) -> bool {
        self.log.received >= self.spec.frames
    }

    /// Verifies one whole message and records its frame.
    fn message(&mut self, sa: &mut ServiceSa, msg: &mut [u8]) {
        // Verify drops are counted by the SA itself.
        let Ok(body) = sa.verify(msg) else { return };
        let rx = self.spec.stamp_clock.now_ns();
        self.frame(&msg[body], rx);
    }

    /// Records the frame `body` that was received whole and verified at `rx`.
    fn frame(&mut self, body: &[u8], rx: u64) {
        if body.len() != self.spec.frame_bytes {
            self.log.drop_one("wrong_frame_length");
            return;
        }
        let Some(stamp) = FrameStamp::read(body) else {
            self.log.drop_one("wrong_frame_length");
            return;
        };
        match self
            .seen
            .get_mut(usize::try_from(stamp.seq).unwrap_or(usize::MAX))
        {
            Some(s) if !*s => *s = true,
            _ => {
                self.log.drop_one("unexpected_frame");
                return;
            }
        }
        self.log.record(&stamp, rx);
    }

    fn finish(mut self, sa: Option<&ServiceSa>) -> CameraLog {
        if let Some(sa) = sa {
            self.drops.merge(&sa.rx_counters().drops);
        }
        for (r, n) in self.drops.iter() {
            if n > 0 {
                *self.log.drops.entry(r.name().to_string()).or_default() += n;
            }
        }
        self.log
    }
}

fn receive_tcp(
    spec: &CameraSpec,
    listener: &TcpListener,
    sa: &mut ServiceSa,
    stop: &AtomicBool,
) -> Result<CameraLog> {
    let mut frames = Frames::new(spec);
    let t0 = monotonic_ns();
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stopped(stop) || monotonic_ns() - t0 > ACCEPT_TIMEOUT.as_nanos() as u64 {
                    return Ok(frames.finish(Some(sa)));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e).context("accepting the camera's connection"),
        }
    };
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let msg_len = spec.message_bytes()?;
    let mut d = StreamDeframer::new(2 * msg_len);
    let mut scratch: Vec<u8> = Vec::with_capacity(msg_len);
    while !stopped(stop) {
        match net::read_some(&mut stream, d.space()) {
            Ok(Some(0)) => break,
            Ok(Some(k)) => d.commit(k),
            Ok(None) => continue,
            Err(e) => return Err(e).context("reading the camera's stream"),
        }
        loop {
            match d.poll() {
                Deframed::NeedMore => break,
                Deframed::Resync(_) => frames.drops.bump(DropReason::StreamResync),
                Deframed::Message(m) => {
                    scratch.clear();
                    scratch.extend_from_slice(m);
                    frames.message(sa, &mut scratch);
                }
            }
        }
    }
    Ok(frames.finish(Some(sa)))
}

fn receive_udp(
    spec: &CameraSpec,
    sock: &UdpSocket,
    sa: &mut ServiceSa,
    stop: &AtomicBool,
) -> Result<CameraLog> {
    let mut frames = Frames::new(spec);
    let msg_len = spec.message_bytes()?;
    let mut reasm = Reassembler::new(ReassemblyLimits {
        max_message: msg_len,
        max_pending: 8,
        max_total: msg_len.saturating_mul(2),
    });
    let mut buf = vec![0u8; UDP_STRIDE * MAX_BATCH];
    let mut lens = [0usize; MAX_BATCH];
    let mut wire_drops = DropCounters::default();
    while !stopped(stop) && !frames.complete() {
        if !sys::wait_readable(sock.as_fd(), Some(Duration::from_millis(50)))? {
            continue;
        }
        let got = sys::recv_batch(sock.as_fd(), &mut buf, UDP_STRIDE, 0, &mut lens)?;
        for (i, &len) in lens.iter().enumerate().take(got) {
            if len == 0 {
                frames.drops.bump(DropReason::Oversize);
                continue;
            }
            let data = &buf[i * UDP_STRIDE..i * UDP_STRIDE + len];
            // One peer per socket: the camera's.
            datagram_messages(&mut reasm, &mut wire_drops, 0, data, |mut m| {
                frames.message(sa, &mut m)
            });
        }
    }
    frames.drops.merge(&wire_drops);
    Ok(frames.finish(Some(sa)))
}

// ---------------------------------------------------------------------------------------------
// The l2 transport: IVN-AE raw Ethernet with fragmentation.

/// Units handed to the kernel per `sendmmsg` on the l2 link.
const L2_BATCH: usize = 32;

/// The camera ECU's side of the shared channel: one SA, one fragmenter, one link.
struct L2Tx {
    ch: Channel,
    frag: FragSender,
    link: Link,
}

fn l2_spec(spec: &CameraSpec) -> Result<&L2Spec> {
    spec.l2
        .as_ref()
        .ok_or_else(|| anyhow!("the l2 transport needs its channel in the spec"))
}

/// The l2 message of a frame: the SOME/IP header (NOTIFICATION of the camera's service, Length
/// set) and the frame; the protection is the channel's, per fragment.
fn l2_message(service: u16, session: u16, image: &[u8], out: &mut [u8]) -> usize {
    let mut hdr = frame_header(service, session);
    hdr.payload_len = image.len();
    hdr.emit_header(out);
    out[HEADER_LEN..HEADER_LEN + image.len()].copy_from_slice(image);
    HEADER_LEN + image.len()
}

fn cameras_l2(spec: &CameraSpec) -> Result<()> {
    let l2 = l2_spec(spec)?;
    let n = spec.streams.len();
    let ch = ivnsec_node::channel::open(
        l2.profile,
        spec.provider,
        &l2.keys,
        &l2.keys,
        l2.ends,
        0,
        ChannelOptions::default(),
    )?;
    let link = Link::open(&l2.link).context("opening the link")?;
    link.set_buffers(SOCKET_BUFFER).context("socket buffers")?;
    link.connect_peer().context("setting the destination")?;
    let frag = FragSender::new(&ch, topology::MTU as usize, 1, L2_BATCH)?;
    let tx = Mutex::new(L2Tx { ch, frag, link });
    run_cameras(spec, vec![(); n], |i, (), schedule, cap| {
        camera_l2(spec, i, &tx, schedule, cap)
    })
}

/// One camera on the shared l2 channel: every frame on its schedule, sent whole (all its
/// fragments) under the channel's lock, as frames queue for one Ethernet port.
fn camera_l2(
    spec: &CameraSpec,
    index: usize,
    tx: &Mutex<L2Tx>,
    schedule: Schedule,
    capture: Option<&Capture>,
) -> Result<u64> {
    let service = spec.streams[index].service;
    let mut msg = vec![0u8; HEADER_LEN + spec.frame_bytes];
    each_frame(spec, schedule, capture, |f| {
        let len = l2_message(service, f.session, f.image, &mut msg);
        let mut units = Vec::new();
        {
            let mut t = tx.lock().unwrap_or_else(|p| p.into_inner());
            let L2Tx { ch, frag, link } = &mut *t;
            frag.send(ch, link, &msg[..len], |u| {
                if f.capture {
                    units.push(u.to_vec());
                }
            })
            .context("sending")?;
        }
        if let (true, Some(c)) = (f.capture, capture) {
            c.push(Captured {
                seq: f.k,
                units,
                at_ns: f.sent_ns,
                src: SocketAddr::from(([0, 0, 0, 0], 0)),
                dst: SocketAddr::from(([0, 0, 0, 0], 0)),
                message: Vec::new(),
            });
        }
        Ok(())
    })
}

fn consumer_l2(spec: &CameraSpec) -> Result<()> {
    let l2 = l2_spec(spec)?;
    let n = spec.streams.len();
    let mut ch = ivnsec_node::channel::open(
        l2.profile,
        spec.provider,
        &l2.keys,
        &l2.keys,
        l2.ends.reversed(),
        1,
        ChannelOptions {
            // Fragments of one frame arrive back to back; a wide window costs nothing.
            replay_window: 1024,
            ..ChannelOptions::default()
        },
    )?;
    let link = Link::open(&l2.link).context("opening the link")?;
    link.set_buffers(SOCKET_BUFFER).context("socket buffers")?;
    let stride = slot_len(max_unit_payload(&ch, topology::MTU as usize)?);
    let msg_len = HEADER_LEN + spec.frame_bytes;
    // Every camera may have a frame in progress (cameras interleave only between frames, but
    // a frame whose fragment was lost stays pending until its timeout).
    let mut rx = FragReceiver::new(Limits {
        max_message: msg_len,
        max_pending: n + 4,
        max_total: msg_len.saturating_mul(n + 4),
        ..Limits::default()
    });
    let stop = stop_on_stdin_eof();
    print_ready(&[link.local_port()])?;
    let (u0, s0) = rusage_self();
    let mut frames: Vec<Frames> = (0..n).map(|_| Frames::new(spec)).collect();
    let mut other = CameraLog::default();
    let off = ch.rx_offset();
    let mut buf = vec![0u8; stride * MAX_BATCH];
    let mut lens = [0usize; MAX_BATCH];
    while !stopped(&stop) && !frames.iter().all(Frames::complete) {
        let got = link.recv_batch(&mut buf, stride, off, &mut lens, Duration::from_millis(50))?;
        for (i, &len) in lens.iter().enumerate().take(got) {
            if len == 0 {
                rx.count_drop(DropReason::Oversize);
                continue;
            }
            let now = monotonic_ns();
            let slot = &mut buf[i * stride..(i + 1) * stride];
            let msg = match rx.accept(&mut ch, 0, slot, len, now) {
                Ok(Some(m)) => m.data,
                Ok(None) | Err(Reject::Verify(_) | Reject::Frag(_)) => continue,
            };
            // Verified fragment by fragment: the message is whole and authentic here.
            let rx_ns = spec.stamp_clock.now_ns();
            let who = ivnsec_core::wire::someip::Packet::new_checked(msg)
                .ok()
                .filter(|p| p.total_len() == msg.len())
                .and_then(|p| {
                    spec.streams
                        .iter()
                        .position(|s| s.service == p.service_id())
                });
            match who {
                Some(c) => frames[c].frame(&msg[HEADER_LEN..], rx_ns),
                None => other.drop_one("unknown_service"),
            }
        }
        rx.expire(monotonic_ns());
    }
    let (u1, s1) = rusage_self();
    let mut cameras: Vec<CameraLog> = frames.into_iter().map(|f| f.finish(None)).collect();
    // Drops of the shared channel belong to no camera: they are reported with camera 1's.
    for (r, k) in rx.drop_counts().into_iter().chain(other.drops) {
        *cameras[0].drops.entry(r).or_default() += k;
    }
    print_report(
        "REPORT",
        &ConsumerReport {
            cameras,
            user_ns: u1 - u0,
            sys_ns: s1 - s0,
        },
    )
}

// ---------------------------------------------------------------------------------------------
// Capture.

/// Maximum segment size of the TCP segments a capture shows (a 1500-byte MTU).
const CAPTURE_MSS: usize = 1448;

/// Writes the captured messages as the Ethernet frames they travelled in: IPv4/UDP datagrams
/// (one per SOME/IP-TP segment) or IPv4/TCP segments of at most [`CAPTURE_MSS`] bytes whose
/// sequence numbers place each message at its offset in the camera's stream (every message of
/// a run has the same length), with valid IPv4, UDP and TCP checksums.
fn write_capture(spec: &CameraSpec, cs: &CaptureSpec, frames: &[Captured]) -> Result<()> {
    let base = (std::time::SystemTime::now(), monotonic_ns());
    let wall = |mono: u64| base.0 - Duration::from_nanos(base.1.saturating_sub(mono));
    let mut w = ivnsec_net::pcap::PcapWriter::create(&cs.path)
        .with_context(|| format!("creating {}", cs.path.display()))?;
    let mut frame = Vec::new();
    let mut seg = vec![0u8; HEADER_LEN + TP_HEADER_LEN + MAX_SEGMENT_DATA];
    for c in frames {
        let ts = wall(c.at_ns);
        for u in &c.units {
            w.write_frame(ts, u)?;
        }
        let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (c.src, c.dst) else {
            continue;
        };
        match spec.transport {
            Transport::L2 => {}
            Transport::UdpTp => {
                if c.message.len() - HEADER_LEN <= UDP_MAX_PAYLOAD {
                    udp_frame(cs, src, dst, &c.message, &mut frame);
                    w.write_frame(ts, &frame)?;
                    continue;
                }
                let hdr = Repr::parse(&ivnsec_core::wire::someip::Packet::new_unchecked(
                    &c.message[..],
                ))
                .map_err(|e| anyhow!("{e}"))?;
                let mut s = Segmenter::new(hdr, &c.message[HEADER_LEN..], MAX_SEGMENT_DATA);
                while let Some(n) = s.next_into(&mut seg) {
                    udp_frame(cs, src, dst, &seg[..n], &mut frame);
                    w.write_frame(ts, &frame)?;
                }
            }
            Transport::Tcp => {
                let stream_at = c.seq * c.message.len() as u64;
                for (j, chunk) in c.message.chunks(CAPTURE_MSS).enumerate() {
                    let seq = 1 + stream_at + (j * CAPTURE_MSS) as u64;
                    tcp_frame(cs, src, dst, seq as u32, chunk, &mut frame);
                    w.write_frame(ts, &frame)?;
                }
            }
        }
    }
    w.flush()?;
    Ok(())
}

fn eth_ipv4(
    cs: &CaptureSpec,
    src: &SocketAddrV4,
    dst: &SocketAddrV4,
    proto: u8,
    l4: usize,
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&cs.dst_mac);
    out.extend_from_slice(&cs.src_mac);
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    let mut ip = [0u8; 20];
    write_ipv4_header(&mut ip, 20 + l4, proto, *src.ip(), *dst.ip());
    out.extend_from_slice(&ip);
}

/// The transport checksum over the IPv4 pseudo-header and `segment` (whose checksum field is 0).
fn l4_checksum(src: &SocketAddrV4, dst: &SocketAddrV4, proto: u8, segment: &[u8]) -> u16 {
    let mut p = Vec::with_capacity(12 + segment.len());
    p.extend_from_slice(&src.ip().octets());
    p.extend_from_slice(&dst.ip().octets());
    p.extend_from_slice(&[0, proto]);
    p.extend_from_slice(&(segment.len() as u16).to_be_bytes());
    p.extend_from_slice(segment);
    internet_checksum(&p)
}

fn udp_frame(
    cs: &CaptureSpec,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let len = 8 + payload.len();
    eth_ipv4(cs, &src, &dst, protocol::UDP, len, out);
    let mut u = Vec::with_capacity(len);
    u.extend_from_slice(&src.port().to_be_bytes());
    u.extend_from_slice(&dst.port().to_be_bytes());
    u.extend_from_slice(&(len as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    let c = match l4_checksum(&src, &dst, protocol::UDP, &u) {
        0 => 0xFFFF,
        c => c,
    };
    u[6..8].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&u);
}

fn tcp_frame(
    cs: &CaptureSpec,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    seq: u32,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    let len = 20 + payload.len();
    eth_ipv4(cs, &src, &dst, protocol::TCP, len, out);
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&src.port().to_be_bytes());
    t[2..4].copy_from_slice(&dst.port().to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&1u32.to_be_bytes()); // ack: the consumer sends nothing
    t[12] = 5 << 4; // data offset: 5 words
    t[13] = 0x18; // PSH | ACK
    t[14..16].copy_from_slice(&0xFFFFu16.to_be_bytes());
    t.extend_from_slice(payload);
    let c = l4_checksum(&src, &dst, protocol::TCP, &t);
    t[16..18].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&t);
}

/// Reads a capture written by [`write_capture`] back into SOME/IP messages (tests).
#[cfg(test)]
fn capture_payloads(path: &std::path::Path) -> Vec<Vec<u8>> {
    let mut r = ivnsec_net::pcap::PcapReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        let ip = &rec.data[14..];
        let hl = usize::from(ip[0] & 0xF) * 4;
        let l4 = &ip[hl..];
        let off = if ip[9] == protocol::TCP {
            usize::from(l4[12] >> 4) * 4
        } else {
            8
        };
        v.push(l4[off..].to_vec());
    }
    v
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
