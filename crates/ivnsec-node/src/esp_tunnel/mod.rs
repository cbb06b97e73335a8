//! A userspace IPsec ESP tunnel interface (`ivnsec esp up`, docs/esp-tunnel.md): a TUN
//! interface carries the host's IP packets; every packet routed into it leaves as an ESP
//! tunnel-mode packet (RFC 4303 §3.1.2) from `--local` to `--remote`, directly over IP (protocol
//! 50) or inside UDP (RFC 3948, port 4500); every ESP packet from the peer that verifies under
//! the inbound SA comes out of the TUN.
//!
//! - The SAs are `ivnsec_core::sa::esp::{EspTx, EspRx}`: replay window checked before and marked
//!   after the ICV, ESN (RFC 4303 §2.2.1, the high half inferred as Appendix A2.2 says), drops
//!   counted by reason. One key file per direction, as `ivnsec keygen` writes them.
//! - **No sequence number twice under one key**: the outbound SA's numbers are reserved in
//!   `--state-dir` through [`HighWater`] before a packet carries them, exactly as `ivnsec send`
//!   and `macsec up` do (docs/nonce-safety.md): a restart, even after `kill -9`, resumes above
//!   every number reserved; a used key without its state is refused unless confirmed new.
//! - **No packet accepted twice across restarts**: the inbound SA keeps an acceptance mark
//!   ([`RxMark`], on the full 64-bit number with ESN) in the same directory; a restarted tunnel
//!   treats every number ≤ it as seen.
//! - Two threads move packets (TUN → protect → outer socket; outer socket → verify → TUN), the
//!   control loop writes the status file, turns growing drop counters into events and stops on
//!   a signal or the first fatal error. `--pcap` records the outer packets both ways.
//! - MTU ([`mtu_plan`]): the TUN's MTU is the largest inner packet whose ESP packet, with the
//!   outer IP (and UDP) header, fits the path MTU towards the peer; the difference is what the
//!   tunnel costs per packet.
//!
//! The TUN is not persistent: the kernel removes it (with its addresses and routes) when this
//! process ends, however it ends.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{
    EspAlg, EspCheck, EspChecked, EspMode, EspOpened, EspParams, EspProtectError, EspRx,
    EspSealing, EspTx, MAX_OVERHEAD, SpiRange,
};
use ivnsec_core::wire::ip::{self, protocol};
use ivnsec_core::wire::tcp_offload::{Coalescer, Segmenter, VNET_HDR_LEN, VnetHdr};
use ivnsec_net::esp_outer::OuterSocket;
use ivnsec_net::pcap::PcapWriter;
use ivnsec_net::sys;
use ivnsec_net::tap::Tap;
use serde_json::{Value, json};

use crate::error::{env_error, usage};
use crate::keys::ahead::Durable;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::keys::keyfile;
use crate::keys::rxmark::{Checkpoint, RxMark, rx_error};
use crate::macsec::EventLog;
use crate::stages::{Handoff, run_stages};
use crate::sync::{lock, spawn_named};

mod mtu;
pub use mtu::{IPV6_MIN_MTU, MIN_TUN_MTU, MtuPlan, UDP_HEADER_LEN, mtu_plan};

/// Largest IP packet read from the TUN or the outer socket.
const MAX_PACKET: usize = 65_535;
/// How often the loops look at the stop flag; the status file is written every
/// [`STATUS_EVERY`].
const TICK: Duration = Duration::from_millis(100);
const STATUS_EVERY: Duration = Duration::from_millis(500);
/// Packets per batch on the offload path (one `sendmmsg` / `recvmmsg`).
const BATCH: usize = sys::MAX_BATCH;
/// Default replay window (`--replay-window`).
pub const DEFAULT_REPLAY_WINDOW: u32 = 64;

/// The SPI of an SA given on the command line: 0 is refused (RFC 4303 §2.1: local use, never
/// on the wire); 1-255 are warned about.
pub fn check_spi(option: &str, spi: u32) -> Result<()> {
    match SpiRange::of(spi) {
        SpiRange::Local => Err(usage(format!(
            "{option} 0 is reserved for local use and never sent on the wire (RFC 4303 §2.1); \
             give the SA's SPI, 256 or above for a new SA (the peer's --rx-spi is this \
             host's --tx-spi and the other way round)"
        ))),
        SpiRange::IanaReserved => {
            eprintln!(
                "ivnsec: warning: {option} {spi} is in 1-255, which RFC 4303 §2.1 reserves for \
                 future IANA assignment; some peers refuse it (choose 256 or above)"
            );
            Ok(())
        }
        SpiRange::Assignable => Ok(()),
    }
}

/// Everything `ivnsec esp up` is told.
#[derive(Debug)]
pub struct Config {
    pub tun: String,
    pub local: IpAddr,
    pub remote: IpAddr,
    pub alg: EspAlg,
    pub provider: &'static CryptoProvider,
    pub tx_keys: PathBuf,
    pub rx_keys: PathBuf,
    pub tx_spi: u32,
    pub rx_spi: u32,
    pub esn: bool,
    pub replay_window: u32,
    pub state_dir: PathBuf,
    pub reserve_block: u64,
    pub seq_limit: Option<u64>,
    pub confirm_new_key: bool,
    /// `--udp-encap`: the UDP port (4500 unless changed).
    pub udp_port: Option<u16>,
    /// `--path-mtu`: instead of the kernel's path MTU towards `remote`.
    pub path_mtu: Option<u32>,
    /// `--addr`: addresses (`ADDR/PREFIX`) given to the TUN.
    pub addrs: Vec<String>,
    /// `--route`: prefixes routed into the TUN.
    pub routes: Vec<String>,
    pub pcap: Option<PathBuf>,
    pub events: Option<PathBuf>,
    pub status: Option<PathBuf>,
    /// The offload path (default; `--no-offload` clears it): vnet header and TSO on the TUN,
    /// segmentation here, batched sends and receives, coalescing towards the TUN.
    pub offload: bool,
    /// How far the inbound SA's acceptance mark moves ahead (`--replay-checkpoint-*`).
    pub rx_checkpoint: Checkpoint,
    /// `--busy-poll-us`: how long a data-plane thread keeps polling once its queue ran empty.
    pub busy_poll: Option<std::time::Duration>,
    /// `--cpu-latency-us`: the CPU wake-up latency held while the tunnel runs
    /// ([`crate::cpu_latency`]); `None`: none asked.
    pub cpu_latency_us: Option<u32>,
    /// `--crypto-workers`: threads that seal and open the packets of a batch on the offload
    /// path ([`crate::workers`]); `None`: [`crate::workers::auto_count`].
    pub crypto_workers: Option<usize>,
    /// `--outer-send`: how protocol-50 packets leave ([`OuterSend`]).
    pub outer_send: OuterSend,
    /// `--pipeline`: each direction of the offload path on two threads ([`crate::stages`]);
    /// `None`: auto (on with 4 CPUs or more).
    pub pipeline: Option<bool>,
}

/// How the offload path sends protocol-50 packets (`--outer-send`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OuterSend {
    /// As Ethernet frames to the next hop when the route leaves by an Ethernet interface and
    /// the next hop is resolved, through the raw IP socket otherwise (the default).
    Auto,
    /// As [`Auto`](Self::Auto), but the route must leave by an Ethernet interface (refused at
    /// start otherwise).
    Link,
    /// Always through the raw IP socket (the kernel routes each packet).
    Socket,
}

impl OuterSend {
    pub fn name(self) -> &'static str {
        match self {
            OuterSend::Auto => "auto",
            OuterSend::Link => "link",
            OuterSend::Socket => "socket",
        }
    }
}

/// How often the next hop is asked again while the link path is in use, and while it is not
/// (the neighbour not resolved yet, the link path dropped after a send error).
const RELEARN_EVERY: Duration = Duration::from_secs(10);
const RELEARN_WAITING: Duration = Duration::from_secs(1);

/// The key files, loaded and checked before anything is created.
pub struct Keys {
    tx: DirectionKeys,
    rx: DirectionKeys,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys { .. }")
    }
}

/// Checks what can be checked before anything is created: address families, SPIs, the key
/// files (a sender's rules for both: private, a `profile` line of this suite, right lengths)
/// and that the two directions do not share a key.
pub fn check(cfg: &Config) -> Result<Keys> {
    if cfg.local.is_ipv4() != cfg.remote.is_ipv4() {
        return Err(usage(format!(
            "--local {} and --remote {} are of different families (IPv4/IPv6 mix); the outer \
             header has one family: give two IPv4 or two IPv6 addresses (the TUN carries both \
             IPv4 and IPv6 inside either)",
            cfg.local, cfg.remote
        )));
    }
    if cfg.local == cfg.remote {
        return Err(usage(format!(
            "--local and --remote are both {}; --remote is the peer's tunnel endpoint",
            cfg.local
        )));
    }
    for (opt, a) in [("--local", cfg.local), ("--remote", cfg.remote)] {
        if a.is_unspecified() || a.is_multicast() {
            return Err(usage(format!(
                "{opt} {a}: a tunnel endpoint is one unicast address"
            )));
        }
    }
    check_spi("--tx-spi", cfg.tx_spi)?;
    check_spi("--rx-spi", cfg.rx_spi)?;
    let name = cfg.alg.name();
    let profile = NamedProfile::from(Profile::Esp(cfg.alg));
    let tx = keyfile::load(&cfg.tx_keys, &profile, keyfile::Role::Sender)?;
    let rx = keyfile::load(&cfg.rx_keys, &profile, keyfile::Role::Sender)?;
    if tx.key() == rx.key() && tx.mac_key() == rx.mac_key() {
        return Err(usage(format!(
            "--tx-keys {} and --rx-keys {} hold the same key: both ends would send under one \
             key from sequence number 1 and reuse each other's nonces. Make one key file per \
             direction (`ivnsec keygen --profile {name} --out FILE` twice)",
            cfg.tx_keys.display(),
            cfg.rx_keys.display()
        )));
    }
    if cfg.udp_port == Some(0) {
        return Err(usage(
            "--udp-port 0: give the UDP port both ends use (4500)",
        ));
    }
    Ok(Keys { tx, rx })
}

/// Packets moved, by path (read by the status writer).
#[derive(Debug, Default)]
pub struct PacketCounters {
    /// IP packets the host routed into the TUN.
    pub tun_in: AtomicU64,
    /// ESP packets sent towards the peer.
    pub esp_out: AtomicU64,
    /// Packets read from the TUN that are no IP packet the SA can protect.
    pub tun_bad: AtomicU64,
    /// Packets too long to protect (more than an IP packet can carry once protected).
    pub too_long: AtomicU64,
    /// Failed sends on the outer socket (packets lost).
    pub send_errors: AtomicU64,
    /// Packets received on the outer socket.
    pub esp_in: AtomicU64,
    /// UDP datagrams that are no ESP (RFC 3948: NAT keepalive, or the non-ESP marker of IKE).
    pub udp_not_esp: AtomicU64,
    /// Verified inner packets handed to the host on the TUN.
    pub tun_out: AtomicU64,
    /// Verified packets the TUN did not take.
    pub tun_write_errors: AtomicU64,
    /// Offload path: TCP super-packets read from the TUN (each cut into segments, every
    /// segment its own ESP packet).
    pub gso_in: AtomicU64,
    /// Offload path: super-packets written to the TUN, coalesced from received segments.
    pub gro_out: AtomicU64,
    /// Offload path: the segments those super-packets carried (counted in `tun_out` too).
    pub gro_segments: AtomicU64,
    /// Offload path: outer packets longer than an IP packet can be, cut by the kernel.
    pub rx_truncated: AtomicU64,
    /// Offload path: packets sealed by the crypto workers (`--crypto-workers`).
    pub sealed_by_workers: AtomicU64,
    /// Offload path: packets of batches opened by the crypto workers.
    pub opened_by_workers: AtomicU64,
}

fn add(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl PacketCounters {
    pub fn json(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "tun_in": g(&self.tun_in),
            "esp_out": g(&self.esp_out),
            "tun_bad": g(&self.tun_bad),
            "too_long": g(&self.too_long),
            "send_errors": g(&self.send_errors),
            "esp_in": g(&self.esp_in),
            "udp_not_esp": g(&self.udp_not_esp),
            "tun_out": g(&self.tun_out),
            "tun_write_errors": g(&self.tun_write_errors),
            "gso_in": g(&self.gso_in),
            "gro_out": g(&self.gro_out),
            "gro_segments": g(&self.gro_segments),
            "rx_truncated": g(&self.rx_truncated),
            "sealed_by_workers": g(&self.sealed_by_workers),
            "opened_by_workers": g(&self.opened_by_workers),
        })
    }
}

struct TxState {
    sa: EspTx,
    /// Written ahead by its worker ([`crate::keys::ahead`]).
    reserve: Durable<HighWater>,
}

/// The inbound SA and its acceptance mark.
struct RxState {
    sa: EspRx,
    /// Written ahead by its worker ([`crate::keys::ahead`]).
    mark: Durable<RxMark>,
}

struct Shared {
    tx: Mutex<TxState>,
    rx: Mutex<RxState>,
    packets: PacketCounters,
    stop: Arc<AtomicBool>,
    fatal: Mutex<Option<anyhow::Error>>,
    pcap: Option<Mutex<PcapWriter<BufWriter<File>>>>,
    local: IpAddr,
    remote: IpAddr,
    udp_port: Option<u16>,
    /// `--busy-poll-us`.
    busy_poll: crate::busy_poll::BusyPoll,
    /// `--crypto-workers`.
    workers: crate::workers::Workers,
    /// The IPv4 identification of the next packet sent on the link path.
    ipv4_id: std::sync::atomic::AtomicU16,
    /// Why protocol-50 packets take the raw socket, while they do (`--outer-send`).
    outer_note: Mutex<String>,
    /// Whether protocol-50 packets may take the link path (the next hop is asked again from
    /// time to time), and when to ask next.
    link_wanted: bool,
    next_learn: Mutex<Instant>,
}

impl Shared {
    fn fail(&self, e: anyhow::Error) {
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Records the ESP packet `esp` (SPI to ICV) from `src` to `dst` in the `--pcap` file, with
    /// an Ethernet header and the outer IP (and UDP) header in front, as it crossed the path
    /// (header fields the kernel chose, such as the IPv4 identification, are not known here).
    fn record(&self, scratch: &mut Vec<u8>, src: IpAddr, dst: IpAddr, esp: &[u8]) {
        let Some(p) = &self.pcap else { return };
        let hdr = ip::outer_header_len(&src);
        let udp = if self.udp_port.is_some() { 8 } else { 0 };
        let total = hdr + udp + esp.len();
        scratch.clear();
        scratch.resize(14 + total, 0);
        scratch[12..14].copy_from_slice(if src.is_ipv4() {
            &[0x08, 0x00]
        } else {
            &[0x86, 0xdd]
        });
        let proto = if udp > 0 {
            protocol::UDP
        } else {
            protocol::ESP
        };
        ip::emit_outer(&mut scratch[14..], &src, &dst, 0, proto, total);
        if let Some(port) = self.udp_port {
            let u = &mut scratch[14 + hdr..14 + hdr + 8];
            u[0..2].copy_from_slice(&port.to_be_bytes());
            u[2..4].copy_from_slice(&port.to_be_bytes());
            u[4..6].copy_from_slice(&((8 + esp.len()) as u16).to_be_bytes());
        }
        scratch[14 + hdr + udp..].copy_from_slice(esp);
        let _ = lock(p).write_frame(std::time::SystemTime::now(), scratch);
    }
}

/// What `run` reports when it ends.
#[derive(Debug)]
pub struct Summary {
    pub status: Value,
}

fn open_err(what: &str, e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => env_error(format!(
            "{what}: {e}; a TUN interface and a raw socket need root (CAP_NET_ADMIN and \
             CAP_NET_RAW): run it with sudo"
        )),
        std::io::ErrorKind::NotFound => env_error(format!(
            "{what}: {e}; the kernel has no TUN/TAP device here: `modprobe tun`, or in a \
             container give it /dev/net/tun"
        )),
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::InvalidInput => {
            usage(format!("{what}: {e}; choose another --tun name"))
        }
        std::io::ErrorKind::AddrNotAvailable => env_error(format!(
            "{what}: {e}; --local must be an address of this host (`ip addr` lists them)"
        )),
        std::io::ErrorKind::AddrInUse => env_error(format!(
            "{what}: {e}; another process uses that UDP port on --local (an IKE daemon, or \
             another tunnel): stop it or give another --udp-port to both ends"
        )),
        _ => anyhow::anyhow!("{what}: {e}"),
    }
}

/// `ip ARGS` in this network namespace (addresses and routes of the TUN).
fn ip_cmd(args: &[&str]) -> Result<()> {
    let out = sys::die_with_parent(&mut Command::new("ip"))
        .args(args)
        .output()
        .map_err(|e| {
            env_error(format!(
                "running `ip {}`: {e}; install iproute2 (`apt-get install iproute2`)",
                args.join(" ")
            ))
        })?;
    if !out.status.success() {
        return Err(usage(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

fn status_write(path: &std::path::Path, v: &Value) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    let text = serde_json::to_string_pretty(v)?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.write_all(b"\n"))
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| anyhow::anyhow!("renaming {}: {e}", tmp.display()))
}

fn drops_json(sa: &EspRx) -> Value {
    let mut m = serde_json::Map::new();
    for (r, n) in sa.counters().drops.iter() {
        m.insert(r.name().into(), json!(n));
    }
    Value::Object(m)
}

fn snapshot(header: &Value, sh: &Shared, outer: &OuterSocket, state: &str) -> Value {
    let mut v = header.clone();
    {
        let tx = lock(&sh.tx);
        let c = tx.sa.counters();
        v["tx"]["next_seq"] = json!(tx.sa.next_seq());
        v["tx"]["reserved"] = json!(tx.reserve.covered());
        // Sequence numbers the next reservation takes (grown under a fast stream).
        v["tx"]["reserve_block"] = tx.reserve.status_field("block");
        v["tx"]["packets"] = json!(c.frames);
        v["tx"]["bytes"] = json!(c.bytes);
    }
    {
        let rx = lock(&sh.rx);
        let c = rx.sa.counters();
        v["rx"]["highest_seq"] = json!(rx.sa.highest_seq());
        v["rx"]["packets"] = json!(c.ok_frames);
        v["rx"]["bytes"] = json!(c.ok_bytes);
        v["rx"]["drops"] = drops_json(&rx.sa);
        let mut mark = rx.mark.status_json();
        mark["refused_below_mark"] = json!(c.below_restored);
        v["rx"]["replay_mark"] = mark;
    }
    v["packets"] = sh.packets.json();
    v["packets"]["icmp_errors"] = json!(outer.peer_errors());
    v["packets"]["queue_drops"] = json!(outer.queue_drops());
    if v["offload"]["enabled"] == true {
        // With --udp-encap: UDP segmentation offload on sends (off once the kernel refused
        // one) and UDP receive offload.
        v["offload"]["udp_gso"] = json!(outer.udp_gso());
        v["offload"]["udp_gro"] = json!(outer.udp_gro());
    }
    let (sent, bypassed, errors) = outer.link_counters();
    v["packets"]["link_sent"] = json!(sent);
    v["packets"]["link_bypassed"] = json!(bypassed);
    v["packets"]["link_errors"] = json!(errors);
    let link = outer.link();
    v["outer_send"]["path"] = json!(if link.is_some() { "link" } else { "socket" });
    match link {
        Some(l) => {
            let mac = |m: Option<[u8; 6]>| m.map(|m| ivnsec_net::next_hop::format_mac(&m));
            v["outer_send"]["interface"] = json!(l.hop.ifname);
            v["outer_send"]["next_hop"] = json!(l.hop.via.to_string());
            v["outer_send"]["next_hop_mac"] = json!(mac(l.hop.dst_mac));
            v["outer_send"]["source_mac"] = json!(mac(l.hop.src_mac));
            v["outer_send"]["neighbour_state"] = json!(l.hop.neigh_state);
            v["outer_send"]["limit"] = json!(l.limit);
            v["outer_send"]["why_socket"] = Value::Null;
        }
        None => v["outer_send"]["why_socket"] = json!(lock(&sh.outer_note).clone()),
    }
    v["running"] = json!(state == "running");
    v
}

/// Creates the TUN, opens the outer socket and moves packets until `stop` is set (a signal)
/// or something fatal happens (then its error is returned: sequence numbers exhausted exit 1,
/// a lost nonce state or socket 3).
pub fn run(cfg: &Config, keys: Keys, stop: Arc<AtomicBool>) -> Result<Summary> {
    let alg = cfg.alg;
    let v6 = cfg.local.is_ipv6();
    let events = EventLog::open(cfg.events.as_deref())?;
    let events = Mutex::new(events);
    let emit = |e: &str, f: Value| lock(&events).emit(e, f);

    // The nonce state first: a refusal (used key without state) creates nothing.
    let sas = open_sas(cfg, keys)?;
    let first = sas.first;
    let pcap = match &cfg.pcap {
        Some(path) => Some(Mutex::new(PcapWriter::create(path).map_err(|e| {
            usage(format!(
                "--pcap {}: {e}; give a file in a writable directory",
                path.display()
            ))
        })?)),
        None => None,
    };
    let outer = OuterSocket::open(cfg.local, cfg.remote, cfg.udp_port).map_err(|e| {
        open_err(
            &format!(
                "opening the outer socket {} → {}{}",
                cfg.local,
                cfg.remote,
                match cfg.udp_port {
                    Some(p) => format!(" (UDP port {p})"),
                    None => " (ESP, IP protocol 50)".into(),
                }
            ),
            e,
        )
    })?;
    let path_mtu = match cfg.path_mtu {
        Some(m) => m,
        None => outer.path_mtu().map_err(|e| {
            usage(format!(
                "finding the path MTU towards --remote {}: {e}; is there a route to it (`ip \
                 route get {}`)? Or give --path-mtu",
                cfg.remote, cfg.remote
            ))
        })?,
    };
    let plan = mtu_plan(alg, v6, cfg.udp_port.is_some(), path_mtu)?;
    // Before the TUN exists: `--outer-send link` on a route that cannot take it is refused.
    let link_wanted = outer_link_wanted(cfg)?;
    if plan.tun < IPV6_MIN_MTU {
        eprintln!(
            "ivnsec: warning: TUN MTU {} is below 1280: the kernel carries no IPv6 on it",
            plan.tun
        );
    }

    let (tun, offload) = open_tun(cfg, &plan)?;
    let gro = offload["gro"] == true;

    let nonce_state = sas.hw.path().display().to_string();
    let fresh = sas.hw.is_fresh();
    // The first block is reserved now, so the first packet does not wait for that write.
    let reserve = Durable::new(sas.hw, "ivnsec-seq-ahead");
    if let Some(seq) = sas.tx.next_seq() {
        reserve.use_number(seq).map_err(HwError::into_anyhow)?;
    }
    let workers = crate::workers::Workers::new(cfg.crypto_workers, &cfg.tun, None)
        .map_err(|e| anyhow::anyhow!("starting the crypto workers: {e}"))?;
    // Held until the tunnel stops (the kernel drops it with the process, however it ends).
    let _cpu_latency = crate::cpu_latency::hold(cfg.cpu_latency_us)?;
    let shared = Shared {
        tx: Mutex::new(TxState {
            sa: sas.tx,
            reserve,
        }),
        rx: Mutex::new(RxState {
            sa: sas.rx,
            mark: Durable::new(sas.mark, "ivnsec-mark-ahead"),
        }),
        packets: PacketCounters::default(),
        stop,
        fatal: Mutex::new(None),
        pcap,
        local: cfg.local,
        remote: cfg.remote,
        udp_port: cfg.udp_port,
        busy_poll: crate::busy_poll::BusyPoll::new(cfg.busy_poll),
        workers,
        ipv4_id: std::sync::atomic::AtomicU16::new(std::process::id() as u16),
        outer_note: Mutex::new(String::new()),
        link_wanted: link_wanted.0,
        next_learn: Mutex::new(Instant::now()),
    };
    if let Some(why) = &link_wanted.1 {
        *lock(&shared.outer_note) = why.clone();
    }
    if link_wanted.0 {
        let after = learn_link(cfg, &shared, &outer);
        *lock(&shared.next_learn) = Instant::now() + after;
    }
    let mut header = header(cfg, &plan, first, &nonce_state, fresh, offload);
    header["crypto_workers"] = json!(shared.workers.count());
    header["outer_send"] = json!({"mode": cfg.outer_send.name()});
    emit("started", header.clone());
    if let Some(p) = &cfg.status {
        status_write(p, &snapshot(&header, &shared, &outer, "running"))?;
    }
    banner(cfg, &plan, first, &tun, gro);
    supervise(cfg, &shared, &tun, &outer, &header, gro, &emit);
    let final_status = snapshot(&header, &shared, &outer, "stopped");
    if let Some(p) = &shared.pcap {
        let _ = lock(p).flush();
    }
    if let Some(p) = &cfg.status
        && let Err(e) = status_write(p, &final_status)
    {
        eprintln!("ivnsec: warning: --status: {e:#}");
    }
    drop(tun);
    let fatal = lock(&shared.fatal).take();
    emit(
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

/// The SAs of both directions and their nonce state: the outbound sequence numbers reserved
/// through the high-water module, the inbound acceptance mark restored.
struct Sas {
    tx: EspTx,
    hw: HighWater,
    first: u64,
    rx: EspRx,
    mark: RxMark,
}

fn open_sas(cfg: &Config, keys: Keys) -> Result<Sas> {
    let alg = cfg.alg;
    // One sequence space per key, whatever the SPI: the ESP nonce (salt ‖ sequence number)
    // does not contain the SPI, so the same key under another SPI must go on above the numbers
    // it already used, never start again from 1 (docs/esp-tunnel.md, "SPIs").
    let ident = ivnsec_core::channel::ESP_SA_IDENTITY;
    let protocol_max = if cfg.esn {
        u64::MAX
    } else {
        u64::from(u32::MAX)
    };
    let opts = highwater::Options {
        block: cfg.reserve_block,
        seq_limit: cfg.seq_limit,
        protocol_max,
        used_record: Some(keyfile::used_record(&cfg.tx_keys)),
        grow: true,
        confirm_new_key: cfg.confirm_new_key,
    };
    let domain = Profile::Esp(alg).nonce_domain();
    let hw = HighWater::open(&cfg.state_dir, &domain, ident, &keys.tx, opts)
        .map_err(HwError::into_anyhow)?;
    let first = hw.first_seq().map_err(HwError::into_anyhow)?;
    let tx_params = EspParams {
        alg,
        spi: cfg.tx_spi,
        key: keys.tx.key(),
        auth_key: keys.tx.mac_key(),
        esn: cfg.esn,
    };
    let mode = EspMode::Tunnel {
        src: cfg.local,
        dst: cfg.remote,
    };
    let tx = EspTx::new(cfg.provider, &tx_params, mode, first)
        .map_err(|e| usage(format!("the outbound SA: {e}")))?;
    let rx_params = EspParams {
        alg,
        spi: cfg.rx_spi,
        key: keys.rx.key(),
        auth_key: keys.rx.mac_key(),
        esn: cfg.esn,
    };
    let mut rx = EspRx::new(cfg.provider, &rx_params, cfg.replay_window)
        .map_err(|e| usage(format!("the inbound SA (--replay-window): {e}")))?;
    // The inbound SA's acceptance mark (the peer's sender keys its state the same way): every
    // number ≤ the restored mark counts as seen.
    let mark = RxMark::open(
        &cfg.state_dir,
        &domain,
        ident,
        &keys.rx,
        protocol_max,
        cfg.rx_checkpoint,
    )?;
    rx.restore_floor(mark.restored());
    drop(keys);

    Ok(Sas {
        tx,
        hw,
        first,
        rx,
        mark,
    })
}

/// The TUN, its MTU, addresses and routes; the offload state as the status reports it.
fn open_tun(cfg: &Config, plan: &MtuPlan) -> Result<(Tap, Value)> {
    let tun_err = |e| open_err(&format!("--tun {}", cfg.tun), e);
    // The offload path: vnet header and TSO; where the kernel refuses TUNSETOFFLOAD the TUN
    // keeps its vnet header and carries ordinary packets (no super-packets either way).
    let (tun, offload) = if cfg.offload {
        let (tun, r) = Tap::create_tun_offload(&cfg.tun).map_err(tun_err)?;
        let offload = match r {
            Ok(()) => json!({"enabled": true, "tso": true, "gro": true, "batch": true}),
            Err(e) => {
                eprintln!(
                    "ivnsec: warning: the kernel refused TCP segmentation offload on --tun {} \
                     ({e}): running with batches but without super-packets",
                    cfg.tun
                );
                json!({"enabled": true, "tso": false, "gro": false, "batch": true, "refused": e.to_string()})
            }
        };
        (tun, offload)
    } else {
        let tun = Tap::create_tun(&cfg.tun).map_err(tun_err)?;
        (
            tun,
            json!({"enabled": false, "tso": false, "gro": false, "batch": false}),
        )
    };
    tun.set_mtu(plan.tun)
        .map_err(|e| open_err(&format!("setting the MTU of --tun {}", cfg.tun), e))?;
    for a in &cfg.addrs {
        let mut args = vec!["addr", "add", a.as_str(), "dev", cfg.tun.as_str()];
        if a.contains(':') {
            // No duplicate address detection on a point-to-point tunnel: usable at once.
            args.push("nodad");
        }
        ip_cmd(&args)?;
    }
    tun.set_up(true)
        .map_err(|e| open_err(&format!("setting --tun {} up", cfg.tun), e))?;
    for r in &cfg.routes {
        ip_cmd(&["route", "add", r.as_str(), "dev", cfg.tun.as_str()])?;
    }
    Ok((tun, offload))
}

/// The `started` event's and the status file's head: what runs, how it is configured.
fn header(
    cfg: &Config,
    plan: &MtuPlan,
    first: u64,
    nonce_state: &str,
    fresh: bool,
    offload: Value,
) -> Value {
    let alg = cfg.alg;
    // One thread for both directions in the latency mode on the offload path without the
    // pipeline (`busy_loop`); two per direction with it.
    let on = offload["enabled"] == true;
    let pipeline = on && crate::stages::pipeline_on(cfg.pipeline);
    let threads = match (on && cfg.busy_poll.is_some() && !pipeline, pipeline) {
        (true, _) => 1,
        (false, true) => 4,
        (false, false) => 2,
    };
    json!({
        "pid": std::process::id(),
        "tun": cfg.tun,
        "local": cfg.local.to_string(),
        "remote": cfg.remote.to_string(),
        "profile": alg.name(),
        "provider": cfg.provider.name,
        "encapsulation": match cfg.udp_port { Some(p) => format!("udp {p}"), None => "esp".into() },
        "esn": cfg.esn,
        "replay_window": cfg.replay_window,
        "mtu": {"path": plan.path, "tun": plan.tun, "overhead": plan.overhead},
        "addrs": cfg.addrs,
        "routes": cfg.routes,
        "tx": {"spi": cfg.tx_spi, "first_seq": first, "nonce_state": nonce_state, "fresh_key": fresh},
        "rx": {"spi": cfg.rx_spi},
        "offload": offload,
        "busy_poll_us": cfg.busy_poll.map(|d| d.as_micros() as u64),
        "cpu_latency_us": cfg.cpu_latency_us,
        "threads": threads,
        "pipeline": pipeline,
    })
}

/// The line on stderr that says the tunnel runs.
fn banner(cfg: &Config, plan: &MtuPlan, first: u64, tun: &Tap, gro: bool) {
    let alg = cfg.alg;
    eprintln!(
        "esp: {} ⇄ {} → {} ({}, {}), SPI out {:#010x} in {:#010x}, first sequence number {}, \
         TUN MTU {} (= path MTU {} − {} tunnel overhead), offload {}; running until \
         SIGINT/SIGTERM",
        cfg.tun,
        cfg.local,
        cfg.remote,
        alg.name(),
        match cfg.udp_port {
            Some(p) => format!("ESP in UDP port {p}"),
            None => "ESP, IP protocol 50".into(),
        },
        cfg.tx_spi,
        cfg.rx_spi,
        first,
        plan.tun,
        plan.path,
        plan.overhead,
        if gro {
            "on (TSO/GRO, batches)"
        } else if tun.vnet_hdr() {
            "batches only (TSO refused)"
        } else {
            "off"
        }
    );
}

/// Whether protocol-50 packets may take the link path (`--outer-send`, protocol 50, the
/// offload path), and if not, why (for the status file). `--outer-send link` on a route that
/// leaves by no Ethernet interface is refused here, before the tunnel runs.
fn outer_link_wanted(cfg: &Config) -> Result<(bool, Option<String>)> {
    let not = |why: &str| Ok((false, Some(why.to_string())));
    if cfg.outer_send == OuterSend::Socket {
        return not("--outer-send socket");
    }
    if cfg.udp_port.is_some() {
        return not("--udp-encap: ESP in UDP leaves by the UDP socket (segmentation offload)");
    }
    if !cfg.offload {
        return not("--no-offload: one packet per system call through the raw socket");
    }
    if cfg.outer_send == OuterSend::Link {
        let hop = ivnsec_net::next_hop::learn(cfg.local, cfg.remote).map_err(|e| {
            env_error(format!(
                "--outer-send link: asking the kernel for the next hop towards {}: {e}",
                cfg.remote
            ))
        })?;
        if hop.link_type != "ether" {
            return Err(usage(format!(
                "--outer-send link: the route to {} leaves by {} ({}), not an Ethernet                  interface; use --outer-send auto or socket",
                cfg.remote, hop.ifname, hop.link_type
            )));
        }
    }
    Ok((true, None))
}

/// Asks the kernel for the next hop towards the peer and puts protocol-50 sends on the link
/// path when it is usable (or back on the raw socket when it is not), with the largest outer
/// packet the link path takes: the interface's MTU and the path MTU the kernel knows. Returns
/// when to ask again: soon while the next hop may become usable any moment (not resolved yet,
/// no route yet), later while the link path is in use or the route leaves by an interface
/// that is not Ethernet.
fn learn_link(cfg: &Config, sh: &Shared, outer: &OuterSocket) -> Duration {
    let (note, again) = match ivnsec_net::next_hop::learn(cfg.local, cfg.remote) {
        Ok(hop) => {
            let limit = outer.path_mtu().map_or(hop.mtu as usize, |m| m as usize);
            match outer.use_link(Some(&hop), limit) {
                Ok(true) => (String::new(), RELEARN_EVERY),
                Ok(false) if hop.link_type != "ether" => {
                    (hop.unusable_reason().unwrap_or_default(), RELEARN_EVERY)
                }
                Ok(false) => (hop.unusable_reason().unwrap_or_default(), RELEARN_WAITING),
                Err(e) => (
                    format!("opening a packet socket on {}: {e}", hop.ifname),
                    RELEARN_EVERY,
                ),
            }
        }
        Err(e) => {
            let _ = outer.use_link(None, 0);
            (
                format!("asking the kernel for the next hop: {e}"),
                RELEARN_WAITING,
            )
        }
    };
    *lock(&sh.outer_note) = note;
    again
}

/// The `outer_send` event: which path protocol-50 packets take now.
fn outer_send_event(sh: &Shared, link: Option<&ivnsec_net::esp_outer::LinkInfo>) -> Value {
    match link {
        Some(l) => json!({
            "path": "link",
            "interface": l.hop.ifname,
            "next_hop": l.hop.via.to_string(),
            "next_hop_mac": l.hop.dst_mac.map(|m| ivnsec_net::next_hop::format_mac(&m)),
        }),
        None => json!({"path": "socket", "why": lock(&sh.outer_note).clone()}),
    }
}

/// Runs the two data-plane threads until a signal or a fatal error, and meanwhile reports new
/// drops as events and writes the status file.
fn supervise(
    cfg: &Config,
    shared: &Shared,
    tun: &Tap,
    outer: &OuterSocket,
    header: &Value,
    gro: bool,
    emit: &dyn Fn(&str, Value),
) {
    let mut last_drops: Vec<(DropReason, u64)> = Vec::new();
    let mut next_learn = *lock(&shared.next_learn);
    let pipeline = header["pipeline"] == true;
    std::thread::scope(|s| {
        let sh = shared;
        let (t, o) = (tun, outer);
        if t.vnet_hdr() && sh.busy_poll.enabled() && !pipeline {
            spawn_named(s, "esp-poll", move || busy_loop(sh, t, o, gro));
        } else if t.vnet_hdr() && pipeline {
            spawn_named(s, "esp-tx", move || tx_loop_offload(sh, t, o, true));
            spawn_named(s, "esp-rx", move || rx_loop_offload(sh, t, o, gro, true));
        } else if t.vnet_hdr() {
            spawn_named(s, "esp-tx", move || tx_loop_offload(sh, t, o, false));
            spawn_named(s, "esp-rx", move || rx_loop_offload(sh, t, o, gro, false));
        } else {
            spawn_named(s, "esp-tx", move || tx_loop(sh, t, o));
            spawn_named(s, "esp-rx", move || rx_loop(sh, t, o));
        }
        let mut next_status = Instant::now() + STATUS_EVERY;
        while !sh.stop.load(Ordering::Relaxed) {
            std::thread::sleep(TICK);
            let drops: Vec<(DropReason, u64)> = lock(&sh.rx).sa.counters().drops.iter().collect();
            for &(r, n) in &drops {
                let before = last_drops
                    .iter()
                    .find(|(q, _)| *q == r)
                    .map_or(0, |&(_, m)| m);
                if n > before {
                    emit(
                        "drop",
                        json!({"reason": r.name(), "new": n - before, "total": n}),
                    );
                }
            }
            last_drops = drops;
            let now = Instant::now();
            if sh.link_wanted && now >= next_learn {
                let was = outer.link();
                let after = learn_link(cfg, sh, outer);
                let is = outer.link();
                if was.as_ref().map(|l| &l.hop) != is.as_ref().map(|l| &l.hop) {
                    emit("outer_send", outer_send_event(sh, is.as_ref()));
                }
                next_learn = Instant::now() + after;
            }
            if now >= next_status {
                next_status = now + STATUS_EVERY;
                if let Some(p) = &cfg.status
                    && let Err(e) = status_write(p, &snapshot(header, sh, outer, "running"))
                {
                    eprintln!("ivnsec: warning: --status: {e:#}");
                }
            }
        }
    });
}

/// What became of one packet handed to the outbound SA.
enum Protected {
    /// Protected: the ESP packet ends at this index of the buffer (it starts after the outer
    /// header's room).
    Ok(usize),
    /// Not protectable (counted).
    Dropped,
    /// The tunnel must stop (recorded in `fatal`).
    Fatal,
}

/// Reserves the next sequence number through the high-water mark and protects the IP packet
/// `buf[room..room + len]` in place (one packet: [`prepare`], then the seal here).
fn protect(sh: &Shared, buf: &mut [u8], room: usize, len: usize) -> Protected {
    let mut tx = lock(&sh.tx);
    let s = match prepare(sh, &mut tx, buf, room, len) {
        Prepared::Ok(s) => s,
        Prepared::Dropped => return Protected::Dropped,
        Prepared::Fatal => return Protected::Fatal,
    };
    match tx.sa.seal(buf, &s) {
        Ok(total) => Protected::Ok(total),
        Err(e) => {
            drop(tx);
            sh.fail(anyhow::anyhow!("protecting a packet: {e}"));
            Protected::Fatal
        }
    }
}

/// What became of one packet prepared for the outbound SA.
enum Prepared {
    /// Its sequence number reserved on disk and taken, the packet laid out: to be sealed.
    Ok(EspSealing),
    /// Not protectable (counted).
    Dropped,
    /// The tunnel must stop (recorded in `fatal`).
    Fatal,
}

/// The first stage of protecting the IP packet `buf[room..room + len]` with the outbound SA
/// locked (`tx`): the next sequence number reserved through the high-water mark, then taken,
/// the packet laid out for its seal ([`EspTx::prepare_at`]).
fn prepare(sh: &Shared, tx: &mut TxState, buf: &mut [u8], room: usize, len: usize) -> Prepared {
    let exhausted = |limit| {
        HwError::Exhausted {
            limit,
            configured: false,
        }
        .into_anyhow()
    };
    let Some(seq) = tx.sa.next_seq() else {
        sh.fail(exhausted(tx.reserve.limit()));
        return Prepared::Fatal;
    };
    if let Err(e) = tx.reserve.use_number(seq) {
        sh.fail(e.into_anyhow());
        return Prepared::Fatal;
    }
    match tx.sa.prepare_at(buf, room, len, None) {
        Ok(s) => Prepared::Ok(s),
        Err(EspProtectError::BadPacket(_)) => {
            add(&sh.packets.tun_bad);
            Prepared::Dropped
        }
        Err(EspProtectError::TooLong | EspProtectError::BufferTooSmall { .. }) => {
            add(&sh.packets.too_long);
            Prepared::Dropped
        }
        Err(EspProtectError::SeqExhausted) => {
            sh.fail(exhausted(tx.reserve.limit()));
            Prepared::Fatal
        }
        Err(e) => {
            sh.fail(anyhow::anyhow!("protecting a packet: {e}"));
            Prepared::Fatal
        }
    }
}

/// The outcome `r` of waiting on `what` (the TUN, the outer socket): whether a packet is
/// queued, `Err` once a failure is recorded (the loop then ends).
/// With `--busy-poll-us`, while packets crossed within the spin time, it does not wait: the
/// loop polls again at once.
fn ready(
    sh: &Shared,
    what: &str,
    wait: impl FnOnce() -> std::io::Result<bool>,
) -> Result<bool, ()> {
    if sh.busy_poll.keep_polling() {
        return Ok(true);
    }
    wait().map_err(|e| sh.fail(anyhow::anyhow!("waiting on {what}: {e}")))
}

/// Reads one packet from the TUN into `buf`: its length, `None` when none is queued, `Err`
/// once the failure is recorded (the loop then ends).
fn read_tun(sh: &Shared, tun: &Tap, buf: &mut [u8]) -> Result<Option<usize>, ()> {
    let r = tun
        .recv(buf)
        .map_err(|e| sh.fail(anyhow::anyhow!("reading the TUN: {e}")));
    if matches!(r, Ok(Some(_))) {
        sh.busy_poll.saw_frames();
    }
    r
}

/// TUN → protect → outer socket, one packet per system call (`--no-offload`). Each packet is
/// read behind the SA's headroom, so it is encrypted where it lies; its sequence number is
/// reserved on disk before it is used.
fn tx_loop(sh: &Shared, tun: &Tap, outer: &OuterSocket) {
    let room = lock(&sh.tx).sa.headroom();
    let outer_hdr = ip::outer_header_len(&sh.local);
    let mut buf = vec![0u8; room + MAX_PACKET + MAX_OVERHEAD];
    let mut scratch = Vec::new();
    while !sh.stop.load(Ordering::Relaxed) {
        match ready(sh, "the TUN", || tun.wait_readable(Some(TICK))) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(()) => return,
        }
        loop {
            let n = match read_tun(sh, tun, &mut buf[room..room + MAX_PACKET]) {
                Ok(Some(n)) => n,
                Ok(None) => break,
                Err(()) => return,
            };
            add(&sh.packets.tun_in);
            match protect(sh, &mut buf, room, n) {
                Protected::Ok(total) => {
                    let esp = &buf[outer_hdr..total];
                    sh.record(&mut scratch, sh.local, sh.remote, esp);
                    match outer.send(esp) {
                        Ok(()) => add(&sh.packets.esp_out),
                        Err(_) => add(&sh.packets.send_errors),
                    }
                }
                Protected::Dropped => {}
                Protected::Fatal => return,
            }
        }
    }
}

/// Sends the ESP packets `units` of `slots` with batched system calls and counts them. Each
/// has room for its outer IP header in front (the offload path's slots): on the link path the
/// header is written here and the packets leave as Ethernet frames
/// ([`OuterSocket::send_batch_framed`]).
fn send_framed(sh: &Shared, outer: &OuterSocket, slots: &mut [u8], units: &[(usize, usize)]) {
    let (lost, _) = outer.send_batch_framed(slots, units, |hdr, total| {
        let id = sh.ipv4_id.fetch_add(1, Ordering::Relaxed);
        ip::emit_outer_unfragmented(hdr, &sh.local, &sh.remote, protocol::ESP, total, id);
    });
    sh.packets
        .esp_out
        .fetch_add((units.len() - lost) as u64, Ordering::Relaxed);
    sh.packets
        .send_errors
        .fetch_add(lost as u64, Ordering::Relaxed);
}

/// TUN → segment → protect → outer socket, the offload path: each read brings a vnet header
/// and a packet, possibly a TCP super-packet, which [`Segmenter`] cuts into segments straight
/// into the slots of a reused batch buffer (behind the SA's headroom); each segment is
/// protected in its slot under its own reserved sequence number, and the batch leaves with one
/// `sendmmsg` when it is full or the TUN has nothing more queued.
fn tx_loop_offload(sh: &Shared, tun: &Tap, outer: &OuterSocket, pipeline: bool) {
    let mut tx = TxOffload::new(sh);
    let stride = tx.stride;
    let second = |b: &mut TxBatch, _: bool| {
        send_batch(sh, outer, b);
        true
    };
    run_stages(
        &sh.stop,
        pipeline,
        || TxBatch::new(stride),
        second,
        |mut h, b| {
            tx.b = b;
            while !sh.stop.load(Ordering::Relaxed) {
                match ready(sh, "the TUN", || tun.wait_readable(Some(TICK))) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(()) => return,
                }
                if tx.drain(sh, tun, outer, &mut h).is_err() {
                    return;
                }
            }
        },
    );
}

/// Most TUN reads (or outer-socket batches) one turn of a side takes before it lets the other
/// side run ([`busy_loop`]; a thread of its own then simply turns again).
const TURN: usize = BATCH;

/// A batch of packets on their way out: cut into the slots and protected in place by the
/// first stage, sent by the second (or by the first, [`Handoff::inline`]).
struct TxBatch {
    slots: Vec<u8>,
    /// The protected packets to send, in sequence order: (offset of the ESP packet, length).
    units: [(usize, usize); BATCH],
    k: usize,
    /// Packets cut into the slots and not yet protected: the `i`-th is `lens[i]` long at
    /// `slots[i * stride + room..]`.
    n: usize,
    lens: [usize; BATCH],
    /// By slot, while the batch is protected (reset for the slots in use only): the packet's
    /// sealing once prepared, its protected length.
    jobs: Vec<Option<EspSealing>>,
    totals: Vec<usize>,
    scratch: Vec<u8>,
}

impl TxBatch {
    fn new(stride: usize) -> TxBatch {
        TxBatch {
            slots: vec![0u8; BATCH * stride],
            units: [(0, 0); BATCH],
            k: 0,
            n: 0,
            lens: [0; BATCH],
            jobs: vec![None; BATCH],
            totals: vec![0; BATCH],
            scratch: Vec::new(),
        }
    }

    /// A batch with no room, standing in while the real one is in the second stage.
    fn none() -> TxBatch {
        TxBatch {
            slots: Vec::new(),
            units: [(0, 0); BATCH],
            k: 0,
            n: 0,
            lens: [0; BATCH],
            jobs: Vec::new(),
            totals: Vec::new(),
            scratch: Vec::new(),
        }
    }
}

/// Records the protected packets of `b` with `--pcap` and sends them on the outer socket.
fn send_batch(sh: &Shared, outer: &OuterSocket, b: &mut TxBatch) {
    if b.k == 0 {
        return;
    }
    for &(at, len) in &b.units[..b.k] {
        sh.record(&mut b.scratch, sh.local, sh.remote, &b.slots[at..at + len]);
    }
    send_framed(sh, outer, &mut b.slots, &b.units[..b.k]);
    b.k = 0;
}

/// The transmit side of the offload path: TUN reads (super-packets cut into packets straight
/// into the batch slots), protected in place, out on the outer socket a batch at a time (by
/// the second stage with `--pipeline`).
struct TxOffload {
    room: usize,
    outer_hdr: usize,
    stride: usize,
    stage: Vec<u8>,
    b: TxBatch,
}

impl TxOffload {
    fn new(sh: &Shared) -> TxOffload {
        let room = lock(&sh.tx).sa.headroom();
        let stride = room + MAX_PACKET + MAX_OVERHEAD;
        TxOffload {
            room,
            outer_hdr: ip::outer_header_len(&sh.local),
            stride,
            stage: vec![0u8; VNET_HDR_LEN + MAX_PACKET],
            b: TxBatch::none(),
        }
    }

    /// Protects the packets cut into the slots and hands them on to be sent: each prepared in
    /// order (its sequence number reserved, then taken) with the outbound SA locked, the batch
    /// sealed by the crypto workers or here, sent in sequence order, here or by the second
    /// stage. `Err` once a failure is recorded or the tunnel stops.
    fn flush(
        &mut self,
        sh: &Shared,
        outer: &OuterSocket,
        h: &mut Handoff<'_, TxBatch>,
    ) -> Result<(), ()> {
        self.protect(sh)?;
        if self.b.k == 0 {
            return Ok(());
        }
        if h.inline(self.b.k) {
            send_batch(sh, outer, &mut self.b);
        } else {
            let b = std::mem::replace(&mut self.b, TxBatch::none());
            self.b = h.pass(b, &sh.stop).ok_or(())?;
        }
        Ok(())
    }

    /// Protects the packets cut into the slots of `self.b`, listing them in `units[..k]`.
    fn protect(&mut self, sh: &Shared) -> Result<(), ()> {
        let (room, stride, hdr) = (self.room, self.stride, self.outer_hdr);
        let b = &mut self.b;
        let n = std::mem::take(&mut b.n);
        let (jobs, totals) = (&mut b.jobs, &mut b.totals);
        for i in 0..n {
            (jobs[i], totals[i]) = (None, 0);
        }
        let mut busy = 0;
        {
            let mut tx = lock(&sh.tx);
            for (i, job) in jobs.iter_mut().enumerate().take(n) {
                let slot = &mut b.slots[i * stride..(i + 1) * stride];
                match prepare(sh, &mut tx, slot, room, b.lens[i]) {
                    Prepared::Ok(s) => {
                        *job = Some(s);
                        busy += 1;
                    }
                    Prepared::Dropped => {}
                    Prepared::Fatal => return Err(()),
                }
            }
            let sa = &tx.sa;
            let parallel = sh.workers.each_frame(
                &mut b.slots,
                stride,
                &jobs[..n],
                &mut totals[..n],
                busy,
                |slot, job, total| {
                    if let Some(s) = job {
                        *total = sa.seal(slot, s).unwrap_or(0);
                    }
                },
            );
            if parallel {
                sh.packets
                    .sealed_by_workers
                    .fetch_add(busy as u64, Ordering::Relaxed);
            }
        }
        let mut k = 0;
        for (i, &total) in totals.iter().enumerate().take(n) {
            if total == 0 {
                continue;
            }
            let at = i * stride;
            b.units[k] = (at + hdr, total - hdr);
            k += 1;
        }
        b.k = k;
        Ok(())
    }

    /// Reads what the TUN has queued (at most [`TURN`] reads), protects it and hands it on to
    /// be sent; once the TUN ran empty after packets went out, the next block of sequence
    /// numbers is reserved ahead. Returns how many reads brought a packet. `Err` once a
    /// failure is recorded (the loop then ends).
    fn drain(
        &mut self,
        sh: &Shared,
        tun: &Tap,
        outer: &OuterSocket,
        h: &mut Handoff<'_, TxBatch>,
    ) -> Result<usize, ()> {
        // The read buffer apart from the batch, which is protected and sent while a read's
        // super-packet is still being cut.
        let mut stage = std::mem::take(&mut self.stage);
        let r = self.drain_into(sh, tun, outer, &mut stage, h);
        self.stage = stage;
        r
    }

    fn drain_into(
        &mut self,
        sh: &Shared,
        tun: &Tap,
        outer: &OuterSocket,
        stage: &mut [u8],
        h: &mut Handoff<'_, TxBatch>,
    ) -> Result<usize, ()> {
        let (room, stride) = (self.room, self.stride);
        let mut reads = 0;
        let mut empty = false;
        while reads < TURN {
            let Some(m) = read_tun(sh, tun, stage)? else {
                empty = true;
                break;
            };
            reads += 1;
            add(&sh.packets.tun_in);
            let got = &stage[..m];
            let Some(pkt) = got.get(VNET_HDR_LEN..) else {
                add(&sh.packets.tun_bad);
                continue;
            };
            let seg = match VnetHdr::parse(got).and_then(|h| Segmenter::new(&h, pkt)) {
                Ok(s) => s,
                Err(_) => {
                    add(&sh.packets.tun_bad);
                    continue;
                }
            };
            if seg.count() > 1 {
                add(&sh.packets.gso_in);
            }
            for i in 0..seg.count() {
                if self.b.n == BATCH {
                    self.flush(sh, outer, h)?;
                }
                let at = self.b.n * stride;
                let slot = &mut self.b.slots[at..at + stride];
                let Some(len) = seg.write(pkt, i, &mut slot[room..room + MAX_PACKET]) else {
                    add(&sh.packets.too_long);
                    continue;
                };
                self.b.lens[self.b.n] = len;
                self.b.n += 1;
            }
        }
        if self.b.n > 0 {
            self.flush(sh, outer, h)?;
            if empty && !top_up_tx(sh) {
                return Err(());
            }
        }
        Ok(reads)
    }
}

/// The TUN ran empty after packets went out: a failed early reservation of the next block
/// (made by the worker once half of the current one is used) ends the loop: `false` once a
/// failure is recorded.
fn top_up_tx(sh: &Shared) -> bool {
    let tx = lock(&sh.tx);
    if let Err(e) = tx.reserve.top_up() {
        drop(tx);
        sh.fail(e.into_anyhow());
        return false;
    }
    true
}

/// The outer socket ran empty after packets were delivered: a failed early move of the
/// acceptance mark (made by its worker) ends the loop: `false` once a failure is recorded.
fn top_up_rx(sh: &Shared) -> bool {
    if let Err(e) = lock(&sh.rx).mark.top_up() {
        sh.fail(rx_error(e));
        return false;
    }
    true
}

/// Makes the `n` bytes received at `buf[pre..]` an IP packet the inbound SA can read: counts
/// it, sets aside UDP datagrams that are no ESP (RFC 3948), puts an outer header in front
/// where the socket stripped it, records it in `--pcap`. Returns the packet's length from the
/// front of `buf`, `None` when it is not for the SA.
fn rx_prepare(
    sh: &Shared,
    outer: &OuterSocket,
    buf: &mut [u8],
    pre: usize,
    n: usize,
    scratch: &mut Vec<u8>,
) -> Option<usize> {
    add(&sh.packets.esp_in);
    let got = &buf[pre..pre + n];
    if outer.udp_port().is_some() && (got == [0xff] || got.starts_with(&[0, 0, 0, 0])) {
        // RFC 3948 §2.2/§2.3: a NAT-keepalive, or IKE behind the non-ESP marker.
        add(&sh.packets.udp_not_esp);
        return None;
    }
    let len = pre + n;
    if pre > 0 {
        ip::emit_outer(buf, &sh.remote, &sh.local, 0, protocol::ESP, len);
    }
    if sh.pcap.is_some() {
        let esp_at = if pre > 0 {
            pre
        } else {
            match ip::parse(&buf[..len]) {
                Ok(i) => i.header_len,
                Err(_) => 0,
            }
        };
        sh.record(scratch, sh.remote, sh.local, &buf[esp_at..len]);
    }
    Some(len)
}

/// Where the received bytes go: raw IPv4 gives the outer header; otherwise one is put in
/// front (the SA reads the packet as IP).
fn rx_pre(sh: &Shared, outer: &OuterSocket) -> usize {
    if outer.header_included() {
        0
    } else {
        ip::outer_header_len(&sh.local)
    }
}

/// Outer socket → verify → TUN, one packet per system call (`--no-offload`). Packets that do
/// not verify never reach the TUN; the SA counts them by reason.
fn rx_loop(sh: &Shared, tun: &Tap, outer: &OuterSocket) {
    let pre = rx_pre(sh, outer);
    let mut buf = vec![0u8; pre + MAX_PACKET];
    let mut scratch = Vec::new();
    while !sh.stop.load(Ordering::Relaxed) {
        match ready(sh, "the outer socket", || outer.wait_readable(TICK)) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(()) => return,
        }
        loop {
            let n = match outer.recv(&mut buf[pre..]) {
                Ok(Some(n)) => {
                    sh.busy_poll.saw_frames();
                    n
                }
                Ok(None) => break,
                Err(e) => {
                    sh.fail(anyhow::anyhow!("reading the outer socket: {e}"));
                    return;
                }
            };
            let Some(len) = rx_prepare(sh, outer, &mut buf, pre, n, &mut scratch) else {
                continue;
            };
            if let Some(range) = verify(sh, &mut buf[..len]) {
                match tun.send(&buf[range]) {
                    Ok(()) => add(&sh.packets.tun_out),
                    Err(_) => add(&sh.packets.tun_write_errors),
                }
            }
        }
    }
}

/// Verifies the ESP packet in `buf` in place under the inbound SA; a verified packet is
/// accepted (its range returned) only once the acceptance mark on disk covers its number. A
/// mark that cannot be written stops the tunnel (the packet is not accepted).
fn verify(sh: &Shared, buf: &mut [u8]) -> Option<std::ops::Range<usize>> {
    let mut rx = lock(&sh.rx);
    let range = rx.sa.verify_in_place(buf).ok()?;
    let seq = rx.sa.highest_seq();
    if let Err(e) = rx.mark.use_number(seq) {
        drop(rx);
        sh.fail(rx_error(e));
        return None;
    }
    Some(range)
}

/// Writes the super-packet `Coalescer` held (vnet header in front) to the TUN and counts it.
fn write_coalesced(sh: &Shared, tun: &Tap, co: &mut Coalescer) {
    let segments = co.segments() as u64;
    let Some(out) = co.finish() else { return };
    match tun.send(out) {
        Ok(()) => {
            sh.packets.tun_out.fetch_add(segments, Ordering::Relaxed);
            if segments > 1 {
                add(&sh.packets.gro_out);
                sh.packets
                    .gro_segments
                    .fetch_add(segments, Ordering::Relaxed);
            }
        }
        Err(_) => {
            sh.packets
                .tun_write_errors
                .fetch_add(segments, Ordering::Relaxed);
        }
    }
}

/// Hands on the verified inner packet `slot[range]`: into `co` when it continues (or starts) a
/// super-packet, else alone behind a vnet header saying "no offload" (written over the ESP
/// header and IV in front of it).
fn hand_on(
    sh: &Shared,
    tun: &Tap,
    co: &mut Coalescer,
    gro: bool,
    slot: &mut [u8],
    range: std::ops::Range<usize>,
) {
    if gro {
        if co.push(&slot[range.clone()]) {
            return;
        }
        if !co.is_empty() {
            write_coalesced(sh, tun, co);
            if co.push(&slot[range.clone()]) {
                return;
            }
        }
    }
    let Some(h) = range.start.checked_sub(VNET_HDR_LEN) else {
        add(&sh.packets.tun_write_errors);
        return;
    };
    if !co.is_empty() {
        // Order: what the coalescer holds arrived first.
        write_coalesced(sh, tun, co);
    }
    VnetHdr::default().emit(&mut slot[h..]);
    match tun.send(&slot[h..range.end]) {
        Ok(()) => add(&sh.packets.tun_out),
        Err(_) => add(&sh.packets.tun_write_errors),
    }
}

/// Where a packet of a receive batch lies: in the slot of its message, or (taken out of a UDP
/// GRO train) in a slot of the train buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lies {
    Slot,
    Train,
}

/// Outer socket → verify → TUN, the offload path: ESP packets arrive in batches (one
/// `recvmmsg` into the slots of a reused buffer; with `--udp-encap` and UDP receive offload a
/// message may hold several ESP packets back to back, each then copied behind room for its
/// outer header), are verified one by one in place (the replay window and the counters by
/// reason as on the per-packet path), and the verified inner packets go to the TUN behind a
/// vnet header — with `gro`, consecutive in-order TCP segments of one flow coalesced into one
/// super-packet ([`Coalescer`]), everything else alone.
fn rx_loop_offload(sh: &Shared, tun: &Tap, outer: &OuterSocket, gro: bool, pipeline: bool) {
    let work = Mutex::new(RxOffload::new(sh, outer, gro));
    let mut rx = RxTaker::new(sh, outer, &work);
    let stride = rx.stride;
    // A super-frame being merged stays open while another batch is queued behind this one.
    let second =
        |b: &mut RxBatch, queued: bool| lock(&work).deliver(sh, tun, outer, b, queued).is_ok();
    run_stages(
        &sh.stop,
        pipeline,
        || RxBatch::new(stride),
        second,
        |mut h, b| {
            rx.b = b;
            while !sh.stop.load(Ordering::Relaxed) {
                match ready(sh, "the outer socket", || outer.wait_readable(TICK)) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(()) => return,
                }
                if rx.drain(sh, tun, outer, &mut h).is_err() {
                    return;
                }
            }
        },
    );
}

/// A batch from the outer socket: `got` messages in the slots (one `recvmmsg`), each
/// `lens[i]` long at `slots[i * stride + pre..]` (`segs[i]`: the UDP GRO segment size, 0 for
/// one packet).
struct RxBatch {
    slots: Vec<u8>,
    lens: [usize; BATCH],
    segs: [u16; BATCH],
    got: usize,
}

impl RxBatch {
    fn new(stride: usize) -> RxBatch {
        RxBatch {
            slots: vec![0u8; BATCH * stride],
            lens: [0; BATCH],
            segs: [0; BATCH],
            got: 0,
        }
    }

    /// A batch with no room, standing in while the real one is in the second stage.
    fn none() -> RxBatch {
        RxBatch {
            slots: Vec::new(),
            lens: [0; BATCH],
            segs: [0; BATCH],
            got: 0,
        }
    }
}

/// The first stage of the receive side: batches from the outer socket, verified and written
/// to the TUN here or by the second stage (`--pipeline`), in the order they came.
struct RxTaker<'a> {
    pre: usize,
    stride: usize,
    b: RxBatch,
    /// What verifies and delivers a batch: the second stage's, lent to this one for a small
    /// batch when the second stage has nothing ([`Handoff::inline`]).
    work: &'a Mutex<RxOffload>,
}

impl<'a> RxTaker<'a> {
    fn new(sh: &Shared, outer: &OuterSocket, work: &'a Mutex<RxOffload>) -> RxTaker<'a> {
        let pre = rx_pre(sh, outer);
        RxTaker {
            pre,
            stride: pre + MAX_PACKET,
            b: RxBatch::none(),
            work,
        }
    }

    /// Takes what the outer socket has queued (at most [`TURN`] batches) and has it verified
    /// and written to the TUN; once the socket ran empty after packets came, the acceptance
    /// mark moves ahead. Returns how many batches brought packets. `Err` once a failure is
    /// recorded or the tunnel stops (the loop then ends).
    fn drain(
        &mut self,
        sh: &Shared,
        tun: &Tap,
        outer: &OuterSocket,
        h: &mut Handoff<'_, RxBatch>,
    ) -> Result<usize, ()> {
        let (pre, stride) = (self.pre, self.stride);
        let mut batches = 0;
        let mut empty = false;
        // A batch verified here leaves its super-frame open for the next one; it is written
        // once the socket ran empty (or the turn is over).
        let mut held = false;
        while batches < TURN {
            let b = &mut self.b;
            let got = match outer.recv_batch(&mut b.slots, stride, pre, &mut b.lens, &mut b.segs) {
                Ok(0) => {
                    empty = true;
                    break;
                }
                Ok(g) => {
                    sh.busy_poll.saw_frames();
                    g
                }
                Err(e) => {
                    sh.fail(anyhow::anyhow!("reading the outer socket: {e}"));
                    return Err(());
                }
            };
            b.got = got;
            batches += 1;
            if h.inline(got) {
                lock(self.work).deliver(sh, tun, outer, b, true)?;
                held = true;
            } else {
                // The second stage writes what is open once nothing is queued behind.
                held = false;
                let b = std::mem::replace(&mut self.b, RxBatch::none());
                self.b = h.pass(b, &sh.stop).ok_or(())?;
            }
        }
        if held {
            lock(self.work).write_held(sh, tun);
        }
        if batches > 0 && empty && !top_up_rx(sh) {
            return Err(());
        }
        Ok(batches)
    }
}

/// The receive side's verifying and delivering: a batch's messages (UDP GRO trains split into
/// their ESP packets), verified, written to the TUN (TCP segments coalesced with `gro`).
struct RxOffload {
    pre: usize,
    stride: usize,
    gro: bool,
    /// Packets taken out of UDP GRO trains, each behind room for its outer header.
    train: Vec<u8>,
    /// The packets to verify, in their order of arrival: where each lies, its slot, its length.
    list: Vec<(Lies, usize, usize)>,
    /// By place and slot, while a list is verified (reset for the listed packets only): the
    /// packet's check and length when it is to be opened, what the opening found.
    checked: [Vec<Option<(EspChecked, usize)>>; 2],
    opened: [Vec<EspOpened>; 2],
    /// The packets verified, in order: where each lies, its slot, the inner packet's range.
    good: Vec<(Lies, usize, std::ops::Range<usize>)>,
    co: Coalescer,
    scratch: Vec<u8>,
}

impl RxOffload {
    fn new(sh: &Shared, outer: &OuterSocket, gro: bool) -> RxOffload {
        let pre = rx_pre(sh, outer);
        let stride = pre + MAX_PACKET;
        RxOffload {
            pre,
            stride,
            gro,
            train: vec![0u8; BATCH * stride],
            list: Vec::with_capacity(2 * BATCH),
            checked: [vec![None; BATCH], vec![None; BATCH]],
            opened: [
                vec![EspOpened::Skipped; BATCH],
                vec![EspOpened::Skipped; BATCH],
            ],
            good: Vec::with_capacity(2 * BATCH),
            co: Coalescer::new(),
            scratch: Vec::new(),
        }
    }
    /// Verifies the packets of `self.list` and hands the good ones on, in their order: each
    /// checked in order with the inbound SA locked, the batch opened by the crypto workers or
    /// here, each committed in order (the replay check again, the window moved, the acceptance
    /// mark covering it), then written towards the TUN. `Err` once a failure is recorded.
    fn settle(&mut self, sh: &Shared, tun: &Tap, slots: &mut [u8]) -> Result<(), ()> {
        let stride = self.stride;
        let (checked, opened) = (&mut self.checked, &mut self.opened);
        // Every slot up to the last one listed, of each place (the workers go through them all).
        let mut top = [0usize; 2];
        for &(lies, i, _) in &self.list {
            top[lies as usize] = top[lies as usize].max(i + 1);
        }
        for w in 0..2 {
            for i in 0..top[w] {
                checked[w][i] = None;
                opened[w][i] = EspOpened::Skipped;
            }
        }
        let mut busy = [0usize; 2];
        self.good.clear();
        {
            let mut rx = lock(&sh.rx);
            for &(lies, i, len) in &self.list {
                let buf = match lies {
                    Lies::Slot => &mut slots[i * stride..i * stride + len],
                    Lies::Train => &mut self.train[i * stride..i * stride + len],
                };
                if let EspCheck::Validate(c) = rx.sa.check(buf) {
                    checked[lies as usize][i] = Some((c, len));
                    busy[lies as usize] += 1;
                }
            }
            let sa = &rx.sa;
            let open = |slot: &mut [u8], job: &Option<(EspChecked, usize)>, o: &mut EspOpened| {
                if let Some((c, len)) = job {
                    *o = sa.open(&mut slot[..*len], c);
                }
            };
            let [o_slot, o_train] = opened;
            for (buf, jobs, o, n, top) in [
                (&mut *slots, &checked[0], o_slot, busy[0], top[0]),
                (&mut self.train, &checked[1], o_train, busy[1], top[1]),
            ] {
                if sh
                    .workers
                    .each_frame(buf, stride, &jobs[..top], &mut o[..top], n, open)
                {
                    sh.packets
                        .opened_by_workers
                        .fetch_add(n as u64, Ordering::Relaxed);
                }
            }
            for &(lies, i, len) in &self.list {
                let Some((c, _)) = checked[lies as usize][i] else {
                    continue;
                };
                let buf = match lies {
                    Lies::Slot => &mut slots[i * stride..i * stride + len],
                    Lies::Train => &mut self.train[i * stride..i * stride + len],
                };
                let o = std::mem::replace(&mut opened[lies as usize][i], EspOpened::Skipped);
                let Ok(range) = rx.sa.commit(buf, &c, o) else {
                    continue;
                };
                // Accepted only once the acceptance mark on disk covers its number.
                let seq = rx.sa.highest_seq();
                if let Err(e) = rx.mark.use_number(seq) {
                    drop(rx);
                    self.list.clear();
                    sh.fail(rx_error(e));
                    return Err(());
                }
                self.good.push((lies, i, range));
            }
        }
        self.list.clear();
        for (lies, i, range) in self.good.drain(..) {
            let slot = match lies {
                Lies::Slot => &mut slots[i * stride..(i + 1) * stride],
                Lies::Train => &mut self.train[i * stride..(i + 1) * stride],
            };
            hand_on(sh, tun, &mut self.co, self.gro, slot, range);
        }
        Ok(())
    }

    /// Verifies the messages of `b` and writes the good packets to the TUN, in their order:
    /// a UDP GRO train's packets each copied behind room for its outer header first. With
    /// `open`, a super-frame being merged stays open for the next batch (which is to come
    /// without a wait, or [`write_held`](Self::write_held) writes it). `Err` once a failure is
    /// recorded (the data plane then stops).
    fn deliver(
        &mut self,
        sh: &Shared,
        tun: &Tap,
        outer: &OuterSocket,
        b: &mut RxBatch,
        open: bool,
    ) -> Result<(), ()> {
        let (pre, stride) = (self.pre, self.stride);
        let mut trained = 0;
        for i in 0..b.got {
            let (n, seg) = (b.lens[i], usize::from(b.segs[i]));
            if n == 0 {
                // Longer than an IP packet can be: cut by the kernel.
                add(&sh.packets.esp_in);
                add(&sh.packets.rx_truncated);
                continue;
            }
            if seg == 0 || n <= seg {
                let slot = &mut b.slots[i * stride..(i + 1) * stride];
                if let Some(len) = rx_prepare(sh, outer, slot, pre, n, &mut self.scratch) {
                    self.list.push((Lies::Slot, i, len));
                }
                continue;
            }
            // Several ESP packets back to back (UDP GRO): each behind room for its header.
            let mut off = 0;
            while off < n {
                let c = (n - off).min(seg);
                if trained == BATCH {
                    self.settle(sh, tun, &mut b.slots)?;
                    trained = 0;
                }
                let at = i * stride + pre + off;
                let t = &mut self.train[trained * stride..(trained + 1) * stride];
                t[pre..pre + c].copy_from_slice(&b.slots[at..at + c]);
                if let Some(len) = rx_prepare(sh, outer, t, pre, c, &mut self.scratch) {
                    self.list.push((Lies::Train, trained, len));
                    trained += 1;
                }
                off += c;
            }
        }
        self.settle(sh, tun, &mut b.slots)?;
        if !open {
            self.write_held(sh, tun);
        }
        Ok(())
    }

    /// Writes the super-frame being merged, if any.
    fn write_held(&mut self, sh: &Shared, tun: &Tap) {
        if !self.co.is_empty() {
            write_coalesced(sh, tun, &mut self.co);
        }
    }
}

/// The latency mode on one thread (`--busy-poll-us` on the offload path): one thread moves
/// both directions, draining the TUN and the outer socket in turn without sleeping while
/// packets crossed within the spin time (other runnable threads of the CPU go first between
/// polls), and waiting on both at once once none did: one CPU spins per tunnel, not two.
fn busy_loop(sh: &Shared, tun: &Tap, outer: &OuterSocket, gro: bool) {
    let mut tx = TxOffload::new(sh);
    tx.b = TxBatch::new(tx.stride);
    let work = Mutex::new(RxOffload::new(sh, outer, gro));
    let mut rx = RxTaker::new(sh, outer, &work);
    rx.b = RxBatch::new(rx.stride);
    let (tx_flight, rx_flight) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let (mut htx, mut hrx) = (Handoff::alone(&tx_flight), Handoff::alone(&rx_flight));
    while !sh.stop.load(Ordering::Relaxed) {
        let Ok(sent) = tx.drain(sh, tun, outer, &mut htx) else {
            return;
        };
        let Ok(got) = rx.drain(sh, tun, outer, &mut hrx) else {
            return;
        };
        if sent > 0 || got > 0 || sh.busy_poll.keep_polling() {
            continue;
        }
        if let Err(e) = sys::wait_readable_any(&[tun.as_fd(), outer.as_fd()], TICK) {
            sh.fail(anyhow::anyhow!(
                "waiting on the TUN and the outer socket: {e}"
            ));
            return;
        }
    }
}

#[cfg(test)]
mod tests;
