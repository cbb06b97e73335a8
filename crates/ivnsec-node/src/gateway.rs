//! `ivnsec gateway` with an IVN-AE profile (docs/gateway.md#ivn-ae): the bump-in-the-wire of
//! [`crate::macsec`] with IVN-AE SAs (docs/wire-ivnae.md) instead of a SecY, static keys only.
//!
//! One SA per direction: this gateway transmits under its key file and key id (`--keys`,
//! `--key-id`), its sequence numbers reserved in `--state-dir` before use (the high-water
//! module, SA identity `ivnae key-id N`, as `ivnsec send`). The key id is part of the IVN-AE
//! version 2 nonce, so the state kept per (key, key id) is exactly what the nonce depends on
//! besides the key and the fixed IV: senders sharing a key file with different key ids never
//! share a nonce. Every peer's frames are verified under the peer's key file, selected by the
//! key id in byte 16 (`--rx-keys ID:FILE`), each with an acceptance mark in `--state-dir`
//! ([`RxMark`], the peer's SA identity `ivnae key-id ID`): a restarted gateway treats every
//! number ≤ the mark as seen, and a frame is delivered only once the mark on disk covers its
//! number. The plain
//! port is the [`LinkPort`] of the MACsec gateway (every frame, VLAN tags put back, offloaded
//! checksums completed); the protected port takes EtherType 0x88B5 only.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_core::sa::ivnae::{IvnAeReceiver, IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::suite::IvnAeProfile;
use ivnsec_net::sys::{self, MAX_BATCH, PacketType, RawSocket, RecvMeta, RxRing};
use serde_json::{Value, json};
use std::os::fd::AsFd;

use crate::error::usage;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::keys::keyfile::{self, Role};
use crate::keys::rxmark::{Checkpoint, RxMark, rx_error};
use crate::macsec::host::{HostPort, LinkPort, VLAN_TAG_LEN};
use crate::macsec::sched::{self, Scheduling, ThreadPolicy};
use crate::macsec::{EventLog, FrameCounters, Summary, TICK, iface_facts_of, status};
use crate::sync::{lock, spawn_named};

/// EtherType of IVN-AE frames.
pub const ETHERTYPE: u16 = ivnsec_core::wire::ivnae::ETHERTYPE;

/// Where and how an IVN-AE gateway runs.
#[derive(Debug)]
pub struct IvnAeGatewayConfig {
    pub plain: String,
    pub protected: String,
    pub profile: IvnAeProfile,
    pub provider: &'static CryptoProvider,
    /// This gateway's transmit key file and key id.
    pub keys: PathBuf,
    pub key_id: u8,
    /// Each peer's key id and key file.
    pub rx_keys: Vec<(u8, PathBuf)>,
    /// Also accept IVN-AE version 1 frames from the peers (`--accept-ivnae-v1`).
    pub accept_v1: bool,
    pub state_dir: PathBuf,
    pub reserve_block: u64,
    pub seq_limit: Option<u64>,
    pub confirm_new_key: bool,
    pub replay_window: u32,
    pub run_dir: PathBuf,
    pub events: Option<PathBuf>,
    /// Kernel receive buffer of both ports' packet sockets.
    pub socket_buffer: usize,
    /// How the two data-plane threads are scheduled.
    pub scheduling: Scheduling,
    /// How far the receive SAs' acceptance marks move ahead (`--replay-checkpoint-*`).
    pub rx_checkpoint: Checkpoint,
    /// `--busy-poll-us`: how long a data-plane thread keeps polling once its queue ran empty.
    pub busy_poll: Option<Duration>,
    /// `--cpu-latency-us`: the CPU wake-up latency held while the gateway runs
    /// ([`crate::cpu_latency`]); `None`: none asked.
    pub cpu_latency_us: Option<u32>,
    /// `--rx-ring`: the protected port's frames taken from a receive ring
    /// ([`crate::macsec::RunSpec::rx_ring`]).
    pub rx_ring: bool,
}

struct Tx {
    sa: IvnAeTx,
    hw: HighWater,
}

/// The receive SAs and their acceptance marks, by key id.
struct Rx {
    receiver: IvnAeReceiver,
    marks: Vec<(u8, RxMark)>,
}

struct Shared {
    tx: Mutex<Tx>,
    rx: Mutex<Rx>,
    frames: FrameCounters,
    stop: Arc<AtomicBool>,
    fatal: Mutex<Option<anyhow::Error>>,
    busy_poll: crate::busy_poll::BusyPoll,
}

impl Shared {
    fn fail(&self, e: anyhow::Error) {
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The largest number of octets IVN-AE adds to a plain frame of at most `max_plain` octets
/// under `sa` (header 14 + tag, + CBC padding).
pub fn overhead(sa: &IvnAeTx, max_plain: usize) -> usize {
    (0..16)
        .map(|d| {
            let p = max_plain.saturating_sub(d).max(14);
            sa.protected_len(p) - p
        })
        .max()
        .unwrap_or(0)
}

/// The transmit SA with its sequence numbers reserved through the high-water module, and a
/// receive SA per `--rx-keys` peer with its acceptance mark restored.
struct Sas {
    tx: IvnAeTx,
    hw: HighWater,
    first: u64,
    receiver: IvnAeReceiver,
    marks: Vec<(u8, RxMark)>,
}

fn open_sas(cfg: &IvnAeGatewayConfig, name: &NamedProfile, domain: &str) -> Result<Sas> {
    // Transmit SA: its own key, its sequence numbers reserved before use.
    let tx_keys = keyfile::load(&cfg.keys, name, Role::Sender)?;
    let ident = format!("ivnae key-id {}", cfg.key_id);
    let hw = HighWater::open(
        &cfg.state_dir,
        domain,
        &ident,
        &tx_keys,
        highwater::Options {
            block: cfg.reserve_block,
            seq_limit: cfg.seq_limit,
            protocol_max: u64::MAX,
            used_record: Some(keyfile::used_record(&cfg.keys)),
            grow: true,
            confirm_new_key: cfg.confirm_new_key,
        },
    )
    .map_err(HwError::into_anyhow)?;
    let first = hw.first_seq().map_err(HwError::into_anyhow)?;
    fn params(
        profile: IvnAeProfile,
        k: &ivnsec_core::channel::DirectionKeys,
        key_id: u8,
    ) -> SaParams<'_> {
        SaParams {
            profile,
            key: k.key(),
            mac_key: k.mac_key(),
            iv: *k.iv(),
            key_id,
            tag_len: None,
        }
    }
    let tx = IvnAeTx::new(
        cfg.provider,
        &params(cfg.profile, &tx_keys, cfg.key_id),
        first,
    )
    .map_err(|e| usage(format!("--keys {}: {e}", cfg.keys.display())))?;
    let mut receiver = IvnAeReceiver::new();
    let mut marks = Vec::with_capacity(cfg.rx_keys.len());
    for (id, file) in &cfg.rx_keys {
        if *id == cfg.key_id {
            return Err(usage(format!(
                "--rx-keys {id}:{}: key id {id} is this gateway's own (--key-id); every sender \
                 needs a key id of its own",
                file.display()
            )));
        }
        let k = keyfile::load(file, name, Role::Receiver)?;
        let mut sa = IvnAeRx::new(
            cfg.provider,
            &params(cfg.profile, &k, *id),
            cfg.replay_window,
        )
        .map_err(|e| usage(format!("--rx-keys {id}:{}: {e}", file.display())))?;
        // The peer's SA as its sender keys its nonce state: every number ≤ the restored mark
        // may have been accepted before a restart.
        let mark = RxMark::open(
            &cfg.state_dir,
            domain,
            &format!("ivnae key-id {id}"),
            &k,
            u64::MAX,
            cfg.rx_checkpoint,
        )?;
        sa.restore_floor(mark.restored());
        sa.set_accept_v1(cfg.accept_v1);
        receiver.install(sa);
        marks.push((*id, mark));
    }
    Ok(Sas {
        tx,
        hw,
        first,
        receiver,
        marks,
    })
}

/// Runs the IVN-AE gateway until `stop` is set (a signal) or something fatal happens.
pub fn run(cfg: &IvnAeGatewayConfig, stop: Arc<AtomicBool>) -> Result<Summary> {
    if cfg.plain == cfg.protected {
        return Err(usage(format!(
            "--plain and --protected are both {}: a gateway needs two interfaces",
            cfg.plain
        )));
    }
    let (mac, prot_mtu) = iface_facts_of("--protected", &cfg.protected)?;
    let (_, plain_mtu) = iface_facts_of("--plain", &cfg.plain)?;
    let profile = Profile::IvnAe(cfg.profile);
    let name = NamedProfile::from(profile);
    let domain = profile.nonce_domain();
    if cfg.rx_keys.is_empty() {
        return Err(usage(
            "give --rx-keys ID:FILE for each peer (the key id and key file it transmits under)",
        ));
    }
    let Sas {
        tx,
        hw,
        first,
        receiver,
        marks,
    } = open_sas(cfg, &name, &domain)?;
    let over = overhead(&tx, 14 + VLAN_TAG_LEN + plain_mtu as usize) as u32;
    let need = plain_mtu + over;
    if prot_mtu < need {
        return Err(usage(format!(
            "--protected {} has an MTU of {prot_mtu} bytes, but the largest frame of --plain {} \
             (MTU {plain_mtu}) grows by up to {over} bytes under {name}, so the protected link \
             needs an MTU of at least {need}: `ip link set {} mtu {need}` (and the same on every \
             link up to the peers), or set the legacy side's MTU to {}",
            cfg.protected,
            cfg.plain,
            cfg.protected,
            prot_mtu.saturating_sub(over)
        )));
    }
    let mut events = EventLog::open(cfg.events.as_deref())?;
    let mut status_file = status::StatusFile::claim(&cfg.run_dir, &cfg.plain)?;
    let scheduling = sched::resolve(cfg.scheduling)?;
    let link = LinkPort::open_with_ring(
        &cfg.plain,
        cfg.socket_buffer,
        14 + VLAN_TAG_LEN + plain_mtu as usize,
        cfg.rx_ring,
    )
    .map_err(|e| crate::macsec::open_err(&format!("--plain {}", cfg.plain), e))?;
    // The largest frame the protected port receives: header, a VLAN tag, its MTU.
    let frame_max = 14 + VLAN_TAG_LEN + prot_mtu as usize;
    let (sock, ring) = crate::macsec::dataplane::open_protected(
        &cfg.protected,
        ETHERTYPE,
        frame_max,
        cfg.socket_buffer,
        cfg.rx_ring,
    )
    .map_err(|e| crate::macsec::open_err(&format!("--protected {}", cfg.protected), e))?;
    sock.set_promiscuous()
        .map_err(|e| crate::macsec::open_err(&format!("--protected {}", cfg.protected), e))?;
    let prot_buffer = sock.set_recv_buffer_force(cfg.socket_buffer).unwrap_or(0);
    let out = crate::macsec::dataplane::open_send(&cfg.protected)
        .map_err(|e| crate::macsec::open_err(&format!("--protected {}", cfg.protected), e))?;
    // Held until the gateway stops (the kernel drops it with the process, however it ends).
    let _cpu_latency = crate::cpu_latency::hold(cfg.cpu_latency_us)?;
    let shared = Shared {
        tx: Mutex::new(Tx { sa: tx, hw }),
        rx: Mutex::new(Rx { receiver, marks }),
        frames: FrameCounters::default(),
        stop,
        fatal: Mutex::new(None),
        busy_poll: crate::busy_poll::BusyPoll::new(cfg.busy_poll),
    };
    let header = json!({
        "pid": std::process::id(),
        "started": status::now_unix(),
        "role": "gateway",
        "family": "ivnae",
        "tap": cfg.plain,
        "iface": cfg.protected,
        "plain": cfg.plain,
        "protected": cfg.protected,
        "profile": name.name(),
        "mac": ivnsec_core::wire::ethernet::MacAddr(mac).to_string(),
        "key_id": cfg.key_id,
        "rx_key_ids": cfg.rx_keys.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        "ivnae_version": ivnsec_core::wire::ivnae::VERSION,
        "accept_ivnae_v1": cfg.accept_v1,
        "mtu": {"iface": prot_mtu, "tap": plain_mtu, "overhead": over, "plain": plain_mtu,
                "protected": prot_mtu},
        "key_source": "static",
        "provider": cfg.provider.name,
        "replay_window": cfg.replay_window,
        "socket_buffers": {"plain": link.buffer_bytes(), "protected": prot_buffer},
        "realtime": scheduling.fixed_realtime(),
        "scheduling": scheduling.json(),
        "busy_poll_us": cfg.busy_poll.map(|d| d.as_micros() as u64),
        "cpu_latency_us": cfg.cpu_latency_us,
        "pipeline": false,
        "threads": 2,
        "rx_ring": crate::macsec::dataplane::ring_json(ring.as_ref()),
        "plain_rx_ring": link.ring_json(),
    });
    events.emit("started", header.clone());
    status_file.write(&snapshot(&header, &shared))?;
    eprintln!(
        "gateway: {} (plain, MTU {plain_mtu}) ⇄ {} (protected, MTU {prot_mtu} ≥ {plain_mtu} + \
         {over}), {name}, key id {} from sequence number {first}; running until SIGINT/SIGTERM",
        cfg.plain, cfg.protected, cfg.key_id
    );
    let headroom = lock(&shared.tx).sa.headroom();
    let stride = (headroom + 14 + VLAN_TAG_LEN + prot_mtu as usize + 64).div_ceil(64) * 64;
    let tail = stride - headroom - (14 + VLAN_TAG_LEN + plain_mtu as usize);
    let wire_max = 14 + VLAN_TAG_LEN + prot_mtu as usize;
    std::thread::scope(|s| {
        let sh = &shared;
        let (l, k, o) = (&link, &sock, &out);
        let geometry = Geometry {
            room: headroom,
            tail,
            stride,
            wire_max,
        };
        spawn_named(s, "gateway-tx", move || {
            tx_loop(sh, l, o, geometry, scheduling)
        });
        spawn_named(s, "gateway-rx", move || {
            rx_loop(sh, l, k, ring, stride, scheduling)
        });
        let mut next = Instant::now() + Duration::from_millis(500);
        while !sh.stop.load(Ordering::Relaxed) {
            std::thread::sleep(TICK);
            if Instant::now() >= next {
                next = Instant::now() + Duration::from_millis(500);
                if let Err(e) = status_file.write(&snapshot(&header, sh)) {
                    eprintln!("ivnsec: warning: status file: {e:#}");
                }
            }
        }
    });
    let final_status = snapshot(&header, &shared);
    drop(sock);
    drop(out);
    drop(link);
    status_file.remove();
    let fatal = lock(&shared.fatal).take();
    events.emit(
        "stopped",
        json!({"reason": match &fatal { Some(e) => format!("{e:#}"), None => "signal".to_string() }}),
    );
    match fatal {
        Some(e) => Err(e),
        None => Ok(Summary {
            status: final_status,
        }),
    }
}

fn snapshot(header: &Value, sh: &Shared) -> Value {
    let tx = {
        let t = lock(&sh.tx);
        json!({"next_seq": t.sa.next_seq(), "reserved": t.hw.reserved(),
               "reserve_block": t.hw.block(), "frames": t.sa.counters().frames})
    };
    let rx = {
        let r = lock(&sh.rx);
        let mut drops = serde_json::Map::new();
        for (reason, n) in r.receiver.total_drops().iter() {
            drops.insert(reason.name().to_string(), json!(n));
        }
        let marks: Vec<Value> = r
            .marks
            .iter()
            .map(|(id, m)| {
                let below = r
                    .receiver
                    .sa(*id)
                    .map_or(0, |s| s.counters().below_restored);
                let mut v = m.json(below);
                v["key_id"] = json!(id);
                v
            })
            .collect();
        json!({"drops": drops, "replay_marks": marks})
    };
    let mut v = header.clone();
    v["updated"] = json!(status::now_unix());
    v["tx"] = tx;
    v["rx"] = rx;
    v["frames"] = sh.frames.json();
    v
}

fn add(c: &std::sync::atomic::AtomicU64, n: usize) {
    c.fetch_add(n as u64, Ordering::Relaxed);
}

/// Where frames lie in the transmit thread's batch buffer.
#[derive(Clone, Copy)]
struct Geometry {
    /// Room before each frame for the IVN-AE header.
    room: usize,
    /// Room after each frame (tag, padding, a VLAN tag put back).
    tail: usize,
    /// One frame's slot.
    stride: usize,
    /// The largest frame the protected port sends.
    wire_max: usize,
}

fn tx_loop(sh: &Shared, host: &LinkPort, out: &RawSocket, g: Geometry, scheduling: Scheduling) {
    let Geometry {
        room,
        tail,
        stride,
        wire_max,
    } = g;
    let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
    let mut buf = vec![0u8; MAX_BATCH * stride];
    let mut got = [(0usize, 0usize); MAX_BATCH];
    let mut units = [(0usize, 0usize); MAX_BATCH];
    let mut full = false;
    while !sh.stop.load(Ordering::Relaxed) {
        if !full && !sh.busy_poll.keep_polling() {
            let wait = policy.before_sleep(TICK);
            match host.wait_readable(wait) {
                Ok(true) => {}
                Ok(false) => {
                    host.count_queue_drops(&sh.frames);
                    continue;
                }
                Err(e) => return sh.fail(anyhow::anyhow!("waiting on the plain port: {e}")),
            }
        }
        let n = match host.recv_frames(&mut buf, stride, room, tail, &mut got, &sh.frames) {
            Ok(n) => n,
            Err(e) => return sh.fail(anyhow::anyhow!("reading the plain port: {e}")),
        };
        full = n > 0;
        if n > 0 {
            sh.busy_poll.saw_frames();
        }
        policy.after_read(n);
        add(&sh.frames.tap_in, n);
        let mut k = 0;
        {
            let mut t = lock(&sh.tx);
            for &(slot, plain) in got.iter().take(n) {
                if t.sa.protected_len(plain) > wire_max {
                    add(&sh.frames.too_long, 1);
                    continue;
                }
                let Some(seq) = t.sa.next_seq() else {
                    return sh.fail(anyhow::anyhow!(
                        "the sequence numbers of --keys ran out: install a new key file"
                    ));
                };
                // The number this frame will carry is reserved on disk before it is used.
                if let Err(e) = t.hw.claim(seq) {
                    drop(t);
                    return sh.fail(e.into_anyhow());
                }
                let at = slot * stride;
                if let Ok(len) =
                    t.sa.protect_in_place_at(&mut buf[at..at + stride], room, plain)
                {
                    units[k] = (at, len);
                    k += 1;
                }
            }
        }
        if k == 0 {
            continue;
        }
        if let Err(e) =
            crate::macsec::dataplane::send_frames(out, &buf, &units[..k], &sh.frames, |_| {})
        {
            return sh.fail(anyhow::anyhow!("sending on the protected port: {e}"));
        }
    }
}

fn rx_loop(
    sh: &Shared,
    host: &LinkPort,
    sock: &RawSocket,
    mut ring: Option<RxRing>,
    stride: usize,
    scheduling: Scheduling,
) {
    let mut policy = ThreadPolicy::enter(scheduling, &sh.frames.backlog_raises);
    let mut buf = vec![0u8; MAX_BATCH * stride];
    let empty = RecvMeta {
        len: 0,
        wire_len: 0,
        packet_type: PacketType::Host,
        timestamp: None,
    };
    let mut metas = [empty; MAX_BATCH];
    let mut deliver = [(0usize, 0usize); MAX_BATCH];
    let mut full = false;
    while !sh.stop.load(Ordering::Relaxed) {
        if !full && !sh.busy_poll.keep_polling() {
            let wait = policy.before_sleep(TICK);
            match sys::wait_readable(sock.as_fd(), Some(wait)) {
                Ok(true) => {}
                Ok(false) => {
                    if let Ok(st) = sock.take_statistics() {
                        add(&sh.frames.iface_queue_drops, st.drops as usize);
                    }
                    continue;
                }
                Err(e) => return sh.fail(anyhow::anyhow!("waiting on the protected port: {e}")),
            }
        }
        let got = match crate::macsec::dataplane::take_frames(
            sock,
            ring.as_mut(),
            &mut buf,
            stride,
            &mut metas,
        ) {
            Ok(n) => n,
            Err(e) => return sh.fail(anyhow::anyhow!("receiving on the protected port: {e}")),
        };
        full = got == MAX_BATCH;
        if got > 0 {
            sh.busy_poll.saw_frames();
        }
        policy.after_read(got);
        let mut k = 0;
        let mut failed = None;
        {
            let mut rx = lock(&sh.rx);
            let Rx { receiver, marks } = &mut *rx;
            for (i, m) in metas.iter().enumerate().take(got) {
                if m.packet_type == PacketType::Outgoing {
                    continue;
                }
                add(&sh.frames.iface_in, 1);
                if m.truncated() {
                    add(&sh.frames.truncated, 1);
                    continue;
                }
                let at = i * stride;
                // The key id (byte 16) names the SA; verify reads it from the same place.
                let key_id = buf.get(at + 16).copied();
                if let Ok(r) = receiver.verify_in_place(&mut buf[at..at + m.len]) {
                    // Delivered only once the SA's acceptance mark covers its number, which
                    // the batch settles below.
                    if let Some(id) = key_id
                        && let Some((_, mark)) = marks.iter_mut().find(|(i, _)| *i == id)
                        && let Some(sa) = receiver.sa(id)
                    {
                        mark.note(sa.highest_seq());
                    }
                    deliver[k] = (at + r.start, r.len());
                    k += 1;
                }
            }
            // One durable move per mark for the whole batch, before any of its frames goes out.
            for (_, mark) in marks.iter_mut() {
                if let Err(e) = mark.settle(sys::monotonic_ns) {
                    failed = Some(e);
                    k = 0;
                    break;
                }
            }
        }
        host.send_frames(&buf, &deliver[..k], false, &sh.frames);
        if let Some(e) = failed {
            return sh.fail(rx_error(e));
        }
    }
}
