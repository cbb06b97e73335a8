//! MACsec for a host whose kernel has none (`ivnsec macsec up`, docs/macsec-tap.md): a TAP
//! interface carries the host's plain Ethernet frames; every frame the host sends on it leaves
//! the protected interface as MACsec under the SecY's encoding SA, and every MACsec frame that
//! arrives on the protected interface and verifies is handed to the host on the TAP.
//!
//! - [`dataplane`]: the two frame paths (TAP → protect → AF_PACKET, AF_PACKET (0x88E5 only) →
//!   verify → TAP), one thread each, batched, without allocation per frame.
//! - [`SecyControl`] and [`KeySource`]: the hook through which whatever owns the keys installs,
//!   enables and retires SAs and reads the transmit PN. [`static_keys`]: one SAK from a key
//!   file for the whole CA, the transmit PN reserved in the nonce state as `ivnsec send` does;
//!   [`mka`]: SAKs agreed and rotated by MKA (IEEE 802.1X-2020) with a pre-shared CAK, each
//!   transmit SA's PNs reserved in the same nonce state.
//! - [`status`]: the status file a running instance keeps (`ivnsec macsec status`), the events
//!   file (`--events`), and the cleanup after a killed instance (`ivnsec macsec down`).
//!
//! MTU: every protected frame is the plain frame plus the SecTAG (16 octets with the SCI, which
//! this SecY always sends) plus the ICV (16 octets), so the TAP's MTU is the protected
//! interface's MTU minus 32 ([`mtu_plan`]); [`run`] sets it, and refuses a protected interface
//! whose MTU leaves less than [`MIN_TAP_MTU`] for the TAP.

pub mod chain;
pub mod dataplane;
pub mod dot1x;
pub mod host;
pub mod keyserver;
pub mod mka;
pub mod sched;
pub mod source;
pub mod static_keys;
pub mod status;

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::profile::MacsecProfile;
use ivnsec_core::sa::macsec::{RxOptions, TxOptions, ValidateFrames};
use ivnsec_core::sa::secy::{SaKey, SecY, SecyConfig, SecyRx, SecyTx};
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::{ICV_LEN, SECTAG_SCI_LEN, Sci};
use ivnsec_net::pcap::PcapWriter;
use ivnsec_net::sys;
use ivnsec_net::tap::Tap;
use serde_json::{Value, json};

use crate::error::{env_error, usage};
use crate::keys::ahead::Durable;
use crate::keys::highwater::{HighWater, HwError};
use crate::keys::rxmark::RxMark;
use crate::sync::{lock, spawn_named};

pub use sched::Scheduling;
pub use status::EventLog;

/// Octets MACsec adds to every frame here: SecTAG with SCI (16) + ICV (16).
pub const OVERHEAD: u32 = (SECTAG_SCI_LEN + ICV_LEN) as u32;
/// Smallest TAP MTU accepted: the IPv4 minimum (RFC 791: every host must take 68 octets).
pub const MIN_TAP_MTU: u32 = 68;
/// How often the control loop runs (signals, key source, events); the status file is written
/// every [`STATUS_EVERY`].
pub const TICK: Duration = Duration::from_millis(100);
pub const STATUS_EVERY: Duration = Duration::from_millis(500);

/// The MTUs of a protected interface and its TAP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MtuPlan {
    pub iface: u32,
    pub tap: u32,
    pub overhead: u32,
    /// Octets a protected frame may exceed header + `iface` by: 4 on a gateway, whose plain
    /// frames may carry a VLAN tag (a link carries MTU + 18 octets with a tag); 0 on a TAP.
    pub vlan_slack: u32,
}

/// TAP MTU = protected interface MTU − SecTAG − ICV; refused (usage error) when the interface's
/// MTU leaves less than [`MIN_TAP_MTU`].
pub fn mtu_plan(iface: &str, iface_mtu: u32) -> Result<MtuPlan> {
    match iface_mtu.checked_sub(OVERHEAD) {
        Some(tap) if tap >= MIN_TAP_MTU => Ok(MtuPlan {
            iface: iface_mtu,
            tap,
            overhead: OVERHEAD,
            vlan_slack: 0,
        }),
        _ => Err(usage(format!(
            "--iface {iface} has an MTU of {iface_mtu} bytes; MACsec adds {OVERHEAD} bytes to \
             every frame (16-byte SecTAG with SCI, 16-byte ICV), which leaves no room for a TAP \
             MTU of at least {MIN_TAP_MTU} bytes. Raise the interface's MTU (`ip link set \
             {iface} mtu {}`) or use another interface",
            MIN_TAP_MTU + OVERHEAD
        ))),
    }
}

/// Frames moved, counted by the two paths (and read by the status writer).
#[derive(Debug, Default)]
pub struct FrameCounters {
    /// Frames the host sent on the TAP.
    pub tap_in: AtomicU64,
    /// MACsec frames sent on the protected interface.
    pub iface_out: AtomicU64,
    /// Frames the host sent on the TAP that the protected interface cannot carry.
    pub too_long: AtomicU64,
    /// Failed sends on the protected interface (frames lost).
    pub iface_send_errors: AtomicU64,
    /// MACsec frames received on the protected interface.
    pub iface_in: AtomicU64,
    /// Received frames longer than the receive buffer (dropped, not verified).
    pub truncated: AtomicU64,
    /// Verified frames handed to the host on the TAP.
    pub tap_out: AtomicU64,
    /// Verified frames the TAP did not take.
    pub tap_write_errors: AtomicU64,
    /// Gateway: frames from the plain port whose TCP/UDP checksum a local sender left to
    /// offload, computed before protection.
    pub checksums_completed: AtomicU64,
    /// Frames the kernel dropped because the host side's socket queue was full (a gateway's
    /// plain port; 0 for a TAP, whose queue the kernel does not count here).
    pub host_queue_drops: AtomicU64,
    /// Frames the kernel dropped because the protected interface's socket queue was full.
    pub iface_queue_drops: AtomicU64,
    /// Times a data-plane thread found a backlog and went to SCHED_FIFO
    /// ([`sched::Scheduling::Adaptive`]).
    pub backlog_raises: AtomicU64,
    /// TCP super-frames the host handed to the TAP (offloads), each cut into frames.
    pub gso_in: AtomicU64,
    /// Super-frames written to the TAP, each merged from verified frames of one TCP flow.
    pub gro_out: AtomicU64,
    /// Reads from the TAP whose vnet header did not fit the frame, or whose frames do not fit
    /// the link (dropped).
    pub offload_bad: AtomicU64,
    /// Frames sealed by the crypto workers (`--crypto-workers`; the rest on their data-plane
    /// thread).
    pub sealed_by_workers: AtomicU64,
    /// Frames opened (validated) by the crypto workers.
    pub opened_by_workers: AtomicU64,
    /// With the pipeline: times the receiving stage polled its ring before sleeping, after a
    /// batch of a stream ([`dataplane::RX_SPIN`]).
    pub rx_spins: AtomicU64,
    /// Of those, the times a frame came within the spin (the thread did not sleep).
    pub rx_spins_caught: AtomicU64,
}

impl FrameCounters {
    pub fn json(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "tap_in": g(&self.tap_in),
            "iface_out": g(&self.iface_out),
            "too_long": g(&self.too_long),
            "iface_send_errors": g(&self.iface_send_errors),
            "iface_in": g(&self.iface_in),
            "truncated": g(&self.truncated),
            "tap_out": g(&self.tap_out),
            "tap_write_errors": g(&self.tap_write_errors),
            "checksums_completed": g(&self.checksums_completed),
            "host_queue_drops": g(&self.host_queue_drops),
            "iface_queue_drops": g(&self.iface_queue_drops),
            "backlog_raises": g(&self.backlog_raises),
            "gso_in": g(&self.gso_in),
            "gro_out": g(&self.gro_out),
            "offload_bad": g(&self.offload_bad),
            "sealed_by_workers": g(&self.sealed_by_workers),
            "opened_by_workers": g(&self.opened_by_workers),
            "rx_spins": g(&self.rx_spins),
            "rx_spins_caught": g(&self.rx_spins_caught),
        })
    }
}

/// The transmit half with the nonce reservation of each transmit SA whose key is long-term
/// (a static key: its PNs must stay above everything it sent before a restart).
pub struct TxState {
    pub secy: SecyTx,
    pub reserve: [Option<Durable<HighWater>>; 4],
}

/// The acceptance mark of one receive SA under a long-term key (static keys): a frame of it is
/// delivered only once the mark on disk covers its PN.
pub struct RxMarkSlot {
    pub sci: Sci,
    pub an: u8,
    pub mark: Durable<RxMark>,
}

/// What the two paths, the control loop and the key source share.
pub struct Shared {
    pub tx: Mutex<TxState>,
    pub rx: Mutex<SecyRx>,
    /// The receive SAs' acceptance marks (static keys; empty under MKA). Locked after `rx`.
    pub rx_marks: Mutex<Vec<RxMarkSlot>>,
    pub frames: FrameCounters,
    pub events: Mutex<EventLog>,
    /// Set by a signal, a fatal error or the key source: every loop ends.
    pub stop: Arc<AtomicBool>,
    /// The first fatal error (a failed reservation, a dead socket): `run` returns it.
    pub fatal: Mutex<Option<anyhow::Error>>,
    /// `--pcap`: every frame sent and received on the protected interface.
    pub pcap: Option<Mutex<PcapWriter<BufWriter<File>>>>,
    /// `--busy-poll-us`.
    pub busy_poll: crate::busy_poll::BusyPoll,
    /// `--crypto-workers`: the threads that seal and open batches ([`crate::workers`]).
    pub workers: crate::workers::Workers,
}

impl Shared {
    pub fn tx(&self) -> MutexGuard<'_, TxState> {
        lock(&self.tx)
    }

    pub fn rx(&self) -> MutexGuard<'_, SecyRx> {
        lock(&self.rx)
    }

    pub fn rx_marks(&self) -> MutexGuard<'_, Vec<RxMarkSlot>> {
        lock(&self.rx_marks)
    }

    /// Records the first fatal error and stops everything.
    pub fn fail(&self, e: anyhow::Error) {
        let mut f = lock(&self.fatal);
        if f.is_none() {
            *f = Some(e);
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn emit(&self, event: &str, fields: Value) {
        lock(&self.events).emit(event, fields);
    }

    /// Writes the frames `buf[at..at + len]` to the `--pcap` file, if there is one (a write
    /// error ends the recording, not the data plane).
    pub fn record(&self, buf: &[u8], frames: &[(usize, usize)]) {
        let Some(p) = &self.pcap else { return };
        let mut w = lock(p);
        let now = std::time::SystemTime::now();
        for &(at, len) in frames {
            if w.write_frame(now, &buf[at..at + len]).is_err() {
                break;
            }
        }
    }
}

fn sci_hex(s: Sci) -> String {
    format!("{:016x}", s.to_u64())
}

/// The hook a key source drives the SecY through: install, enable and retire SAs, read the
/// transmit PN. Every change is logged as an event. Cheap to clone.
#[derive(Clone)]
pub struct SecyControl {
    shared: Arc<Shared>,
}

impl SecyControl {
    pub fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Installs a transmit SA under `an` starting at `first_pn`. With `reserve` (a long-term
    /// key), every PN is claimed there before a frame carries it; the first block is reserved
    /// now, so the first frame does not wait for that write.
    pub fn install_tx_sa(
        &self,
        an: u8,
        key: &SaKey<'_>,
        first_pn: u64,
        reserve: Option<HighWater>,
    ) -> Result<()> {
        let reserve = reserve.map(|hw| Durable::new(hw, "ivnsec-pn-ahead"));
        if let Some(d) = &reserve {
            d.use_number(first_pn).map_err(claim_error)?;
        }
        let mut tx = self.shared.tx();
        tx.secy
            .install(an, key, first_pn)
            .map_err(|e| usage(format!("installing the transmit SA (AN {an}): {e}")))?;
        tx.reserve[usize::from(an & 3)] = reserve;
        let sci = tx.secy.sci();
        drop(tx);
        self.shared.emit(
            "sa_installed",
            json!({"dir": "tx", "sci": sci_hex(sci), "an": an, "key_number": key.key_number,
                   "ssci": key.ssci, "first_pn": first_pn}),
        );
        Ok(())
    }

    /// Makes the transmit SA under `an` the one every frame goes out under.
    pub fn enable_tx_sa(&self, an: u8) -> Result<()> {
        self.shared
            .tx()
            .secy
            .enable(an)
            .map_err(|e| usage(format!("enabling the transmit SA: {e}")))?;
        self.shared
            .emit("sa_enabled", json!({"dir": "tx", "an": an}));
        Ok(())
    }

    pub fn retire_tx_sa(&self, an: u8) -> Result<()> {
        let mut tx = self.shared.tx();
        tx.secy
            .retire(an)
            .map_err(|e| usage(format!("retiring the transmit SA: {e}")))?;
        tx.reserve[usize::from(an & 3)] = None;
        drop(tx);
        self.shared
            .emit("sa_retired", json!({"dir": "tx", "an": an}));
        Ok(())
    }

    /// Installs a receive SA for the peer `sci` under `an`, accepting PNs from `lowest_pn`.
    pub fn install_rx_sa(&self, sci: Sci, an: u8, key: &SaKey<'_>, lowest_pn: u64) -> Result<()> {
        self.shared
            .rx()
            .install(sci, an, key, lowest_pn)
            .map_err(|e| usage(format!("installing the receive SA: {e}")))?;
        self.shared.emit(
            "sa_installed",
            json!({"dir": "rx", "sci": sci_hex(sci), "an": an, "key_number": key.key_number,
                   "ssci": key.ssci, "lowest_pn": lowest_pn}),
        );
        Ok(())
    }

    /// Keeps `mark` for the receive SA of `sci` under `an` (installed with its lowest PN above
    /// the restored mark): its frames are delivered only once the mark covers their PN.
    pub fn install_rx_mark(&self, sci: Sci, an: u8, mark: RxMark) {
        let mut marks = self.shared.rx_marks();
        marks.retain(|m| !(m.sci == sci && m.an == an));
        marks.push(RxMarkSlot {
            sci,
            an,
            mark: Durable::new(mark, "ivnsec-mark-ahead"),
        });
    }

    pub fn retire_rx_sa(&self, sci: Sci, an: u8) -> Result<()> {
        self.shared
            .rx()
            .retire(sci, an)
            .map_err(|e| usage(format!("retiring the receive SA: {e}")))?;
        self.shared.emit(
            "sa_retired",
            json!({"dir": "rx", "sci": sci_hex(sci), "an": an}),
        );
        Ok(())
    }

    /// The PN the next transmitted frame will carry (`None`: no SA in use, or exhausted).
    pub fn tx_next_pn(&self) -> Option<u64> {
        self.shared.tx().secy.next_pn()
    }

    /// Asks every loop to end (a key source that cannot go on).
    pub fn stop(&self, why: anyhow::Error) {
        self.shared.fail(why);
    }
}

/// Whatever owns the keys: static keys from a file, or MKA. `start` installs the first SAs
/// before frames move (MKA: opens its socket and says hello); `poll` runs on the control thread
/// after every [`wait`](KeySource::wait) of at most [`TICK`] (MKA: its timers, received
/// MKPDUs, SAK installation and retirement, rekeying before the PN runs out, read from
/// [`SecyControl::tx_next_pn`]).
pub trait KeySource: Send {
    /// `static` or `mka` (status and events).
    fn kind(&self) -> &'static str;
    fn start(&mut self, ctl: &SecyControl) -> Result<()>;
    fn poll(&mut self, now: Instant, ctl: &SecyControl) -> Result<()>;
    /// Waits up to `max` for the next [`poll`](KeySource::poll) to have work. The default
    /// sleeps; MKA wakes early when an MKPDU arrives or a timer falls due.
    fn wait(&mut self, max: Duration) {
        std::thread::sleep(max);
    }
    /// What the status file shows of the source (peers, key file, nonce state).
    fn describe(&self, ctl: &SecyControl) -> Value;
}

/// Where and how `ivnsec macsec up` runs.
#[derive(Debug)]
pub struct Config {
    pub iface: String,
    pub tap: String,
    pub profile: MacsecProfile,
    pub provider: &'static CryptoProvider,
    pub replay_window: u32,
    /// Where the status file is kept (`<run_dir>/macsec/`).
    pub run_dir: PathBuf,
    pub events: Option<PathBuf>,
    /// TCP offloads on the TAP ([`RunSpec::offload`]).
    pub offload: bool,
    /// [`RunSpec::busy_poll`].
    pub busy_poll: Option<std::time::Duration>,
    /// [`RunSpec::cpu_latency_us`].
    pub cpu_latency_us: Option<u32>,
    /// [`RunSpec::pipeline`].
    pub pipeline: Option<bool>,
    /// [`RunSpec::rx_ring`].
    pub rx_ring: bool,
    /// [`RunSpec::crypto_workers`].
    pub crypto_workers: Option<usize>,
}

/// The protected interface's MAC and MTU, read before anything is created (a missing interface
/// is a usage error).
pub fn iface_facts(iface: &str) -> Result<([u8; 6], u32)> {
    iface_facts_of("--iface", iface)
}

/// [`iface_facts`] of the interface given to option `opt`.
pub fn iface_facts_of(opt: &str, iface: &str) -> Result<([u8; 6], u32)> {
    ivnsec_net::topology::check_ifname(iface).map_err(|e| usage(format!("{opt}: {e}")))?;
    let missing = |e: std::io::Error| {
        usage(format!(
            "{opt} {iface}: no such interface in this network namespace ({e}); `ip link` \
             lists them"
        ))
    };
    sys::interface_index(iface).map_err(missing)?;
    let mac = sys::link_mac(iface).map_err(missing)?;
    let mtu = sys::link_mtu(iface).map_err(missing)?;
    Ok((mac, mtu))
}

/// Maps an error creating the TAP or the socket: privileges and a missing `/dev/net/tun` are
/// the environment (exit 3), a name in use is usage (exit 2).
pub(crate) fn open_err(what: &str, e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => env_error(format!(
            "{what}: {e}; creating a TAP interface and a raw socket needs root (CAP_NET_ADMIN and \
             CAP_NET_RAW): run it with sudo"
        )),
        std::io::ErrorKind::NotFound => env_error(format!(
            "{what}: {e}; the kernel has no TUN/TAP device here: `modprobe tun`, or in a \
             container give it /dev/net/tun"
        )),
        std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::InvalidInput => {
            usage(format!("{what}: {e}; choose another --tap name"))
        }
        _ => anyhow::anyhow!("{what}: {e}"),
    }
}

/// What `run` reports when it ends.
#[derive(Debug)]
pub struct Summary {
    pub status: Value,
}

/// Kernel receive buffer of the data plane's packet sockets unless set otherwise (`ivnsec
/// gateway --rcvbuf-mib`).
pub const DEFAULT_SOCKET_BUFFER: usize = 4 << 20;

/// Where the plain frames of a SecY come from and go to.
#[derive(Debug, Clone)]
pub enum HostSide {
    /// A TAP of this host, created here (`ivnsec macsec up --tap`).
    Tap(String),
    /// A plain interface in front of legacy ECUs (`ivnsec gateway --plain`).
    Plain(String),
}

/// Where and how a SecY runs: `ivnsec macsec up` ([`run`]) or `ivnsec gateway`.
#[derive(Debug)]
pub struct RunSpec {
    /// The protected interface.
    pub iface: String,
    pub host: HostSide,
    pub profile: MacsecProfile,
    pub provider: &'static CryptoProvider,
    pub replay_window: u32,
    pub run_dir: PathBuf,
    pub events: Option<PathBuf>,
    pub pcap: Option<PathBuf>,
    /// Kernel receive buffer of the plain port's and the protected interface's packet sockets.
    pub socket_buffer: usize,
    /// How the two data-plane threads are scheduled (`ivnsec gateway --scheduling`,
    /// `--realtime`).
    pub scheduling: Scheduling,
    /// A TAP host side with TCP offloads (segmentation and coalescing: [`host::TapPort`]);
    /// `ivnsec macsec up --no-offload` turns them off.
    pub offload: bool,
    /// How long a data-plane thread keeps polling its queue once it ran empty before it
    /// sleeps (`--busy-poll-us`); `None`: it sleeps at once.
    pub busy_poll: Option<std::time::Duration>,
    /// The CPU wake-up latency held while the SecY runs (`--cpu-latency-us`,
    /// [`crate::cpu_latency`]); `None`: none asked.
    pub cpu_latency_us: Option<u32>,
    /// Whether each direction splits its work across two threads (reading, cutting and
    /// protecting on one, sending on the other; receiving on one, verifying and writing to the
    /// host side on the other), batch by batch in order ([`crate::stages`], `--pipeline
    /// on|off`); `None`: on with 4 CPUs or more (`auto`).
    pub pipeline: Option<bool>,
    /// Whether the protected interface's frames are taken from a receive ring shared with the
    /// kernel (`PACKET_MMAP`, no system call per batch; [`sys::RxRing`]) of `socket_buffer`
    /// bytes, or from the socket's queue with `recvmmsg` (`--rx-ring on|off`).
    pub rx_ring: bool,
    /// How many threads seal and open the frames of a batch besides the data-plane threads
    /// (`--crypto-workers N|auto`, [`crate::workers`]); `None`: [`crate::workers::auto_count`].
    pub crypto_workers: Option<usize>,
}

/// Runs the SecY between `cfg.tap` (created here, MTU and MAC set, removed on return) and
/// `cfg.iface` until `stop` is set (a signal) or something fatal happens.
pub fn run(cfg: &Config, source: &mut dyn KeySource, stop: Arc<AtomicBool>) -> Result<Summary> {
    let spec = RunSpec {
        iface: cfg.iface.clone(),
        host: HostSide::Tap(cfg.tap.clone()),
        profile: cfg.profile,
        provider: cfg.provider,
        replay_window: cfg.replay_window,
        run_dir: cfg.run_dir.clone(),
        events: cfg.events.clone(),
        pcap: None,
        socket_buffer: DEFAULT_SOCKET_BUFFER,
        scheduling: Scheduling::Normal,
        offload: cfg.offload,
        busy_poll: cfg.busy_poll,
        cpu_latency_us: cfg.cpu_latency_us,
        pipeline: cfg.pipeline,
        rx_ring: cfg.rx_ring,
        crypto_workers: cfg.crypto_workers,
    };
    run_spec(&spec, source, stop)
}

/// Maps an error opening the plain port of a gateway.
fn plain_open_err(plain: &str, e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => env_error(format!(
            "raw socket on --plain {plain}: {e}; a gateway needs root (CAP_NET_RAW and \
             CAP_NET_ADMIN for promiscuous mode): run it with sudo"
        )),
        _ => anyhow::anyhow!("opening --plain {plain}: {e}"),
    }
}

/// The MTUs of a gateway: every frame of the plain port, protected, must fit the protected
/// port. Refused (usage error, naming the MTU needed) when it does not.
pub fn gateway_mtu_plan(
    plain: &str,
    plain_mtu: u32,
    protected: &str,
    protected_mtu: u32,
    overhead: u32,
) -> Result<MtuPlan> {
    let need = plain_mtu.saturating_add(overhead);
    if protected_mtu < need {
        let legacy = protected_mtu.saturating_sub(overhead);
        return Err(usage(format!(
            "--protected {protected} has an MTU of {protected_mtu} bytes, but the largest frame \
             of --plain {plain} (MTU {plain_mtu}) grows by {overhead} bytes when protected, so \
             the protected link needs an MTU of at least {need}: `ip link set {protected} mtu \
             {need}` (and the same on every link and switch port up to the peers), or, where the \
             protected link cannot carry that, set the legacy side's MTU to {legacy}: `ip link \
             set {plain} mtu {legacy}` and the same on the legacy ECU"
        )));
    }
    Ok(MtuPlan {
        iface: protected_mtu,
        tap: plain_mtu,
        overhead,
        vlan_slack: 4,
    })
}

/// Runs the SecY between the host side and `spec.iface` until `stop` is set (a signal) or
/// something fatal happens.
pub fn run_spec(
    spec: &RunSpec,
    source: &mut dyn KeySource,
    stop: Arc<AtomicBool>,
) -> Result<Summary> {
    let gateway = matches!(spec.host, HostSide::Plain(_));
    let (host_name, iface_opt) = match &spec.host {
        HostSide::Tap(t) => (t.as_str(), "--iface"),
        HostSide::Plain(p) => (p.as_str(), "--protected"),
    };
    let (mac, iface_mtu) = iface_facts_of(iface_opt, &spec.iface)?;
    let plan = match &spec.host {
        HostSide::Tap(_) => mtu_plan(&spec.iface, iface_mtu)?,
        HostSide::Plain(plain) => {
            if plain == &spec.iface {
                return Err(usage(format!(
                    "--plain and --protected are both {plain}: a gateway needs two interfaces, \
                     one towards the legacy ECUs and one towards the protected network"
                )));
            }
            let (_, plain_mtu) = iface_facts_of("--plain", plain)?;
            gateway_mtu_plan(plain, plain_mtu, &spec.iface, iface_mtu, OVERHEAD)?
        }
    };
    let sci = Sci::end_station(MacAddr(mac));
    let secy = SecY::new(
        spec.provider,
        &SecyConfig {
            suite: spec.profile.suite,
            sci,
            tx: TxOptions {
                confidentiality: spec.profile.confidentiality,
                include_sci: true,
                es: false,
                scb: false,
            },
            rx: RxOptions {
                validate: ValidateFrames::Strict,
                replay_protect: true,
                replay_window: spec.replay_window,
                lowest_pn: 1,
            },
        },
    )
    .map_err(|e| usage(format!("{e}")))?;
    let (tx, rx) = secy.into_parts();
    let events = EventLog::open(spec.events.as_deref())?;
    let pcap = match &spec.pcap {
        Some(path) => Some(Mutex::new(PcapWriter::create(path).map_err(|e| {
            usage(format!(
                "--pcap {}: {e}; give a file in a writable directory",
                path.display()
            ))
        })?)),
        None => None,
    };
    let mut status = status::StatusFile::claim(&spec.run_dir, host_name)?;
    let scheduling = sched::resolve(spec.scheduling)?;

    let mut tap = None;
    let mut link = None;
    match &spec.host {
        HostSide::Tap(name) => {
            let t = if spec.offload {
                let (t, offload) =
                    Tap::create_offload(name).map_err(|e| open_err(&format!("--tap {name}"), e))?;
                if let Err(e) = offload {
                    // The TAP still works, with the vnet header but one frame per read.
                    eprintln!("macsec: the kernel refused TCP offloads on --tap {name}: {e}");
                }
                t
            } else {
                Tap::create(name).map_err(|e| open_err(&format!("--tap {name}"), e))?
            };
            // The TAP looks like the protected interface to the host (as a kernel macsec
            // interface does): same MAC, so the peers' replies address it and the SCI names its
            // frames.
            t.set_mac(mac)
                .and_then(|_| t.set_mtu(plan.tap))
                .map_err(|e| open_err(&format!("configuring --tap {name}"), e))?;
            tap = Some(if spec.offload {
                host::TapPort::offload(t)
            } else {
                host::TapPort::plain(t)
            });
        }
        HostSide::Plain(name) => {
            link = Some(
                host::LinkPort::open_with_ring(
                    name,
                    spec.socket_buffer,
                    14 + host::VLAN_TAG_LEN + plan.tap as usize,
                    spec.rx_ring,
                )
                .map_err(|e| plain_open_err(name, e))?,
            );
        }
    }
    let host: &dyn host::HostPort = match (&tap, &link) {
        (Some(t), _) => t,
        (None, Some(l)) => l,
        (None, None) => return Err(anyhow::anyhow!("no host side was opened")),
    };
    let (sock, ring) = dataplane::open_protected(
        &spec.iface,
        ivnsec_core::wire::macsec::ETHERTYPE,
        dataplane::stride(plan),
        spec.socket_buffer,
        spec.rx_ring,
    )
    .map_err(|e| open_err(&format!("raw socket on {iface_opt} {}", spec.iface), e))?;
    if gateway {
        // The frames on the protected link are addressed to the legacy ECUs, not to this port.
        sock.set_promiscuous().map_err(|e| {
            open_err(
                &format!("promiscuous mode on --protected {}", spec.iface),
                e,
            )
        })?;
    } else {
        sock.drop_other_host()
            .context("filtering frames to other hosts")?;
    }
    let prot_buffer = sock.set_recv_buffer_force(spec.socket_buffer).unwrap_or(0);
    let out = dataplane::open_send(&spec.iface)
        .map_err(|e| open_err(&format!("raw socket on {iface_opt} {}", spec.iface), e))?;
    let workers =
        crate::workers::Workers::new(spec.crypto_workers, host_name, scheduling.priority())
            .map_err(|e| anyhow::anyhow!("starting the crypto workers: {e}"))?;

    // Held until the SecY stops (the kernel drops it with the process, however it ends).
    let _cpu_latency = crate::cpu_latency::hold(spec.cpu_latency_us)?;
    let shared = Arc::new(Shared {
        tx: Mutex::new(TxState {
            secy: tx,
            reserve: [None, None, None, None],
        }),
        rx: Mutex::new(rx),
        rx_marks: Mutex::new(Vec::new()),
        frames: FrameCounters::default(),
        events: Mutex::new(events),
        stop,
        fatal: Mutex::new(None),
        pcap,
        busy_poll: crate::busy_poll::BusyPoll::new(spec.busy_poll),
        workers,
    });
    let ctl = SecyControl {
        shared: shared.clone(),
    };
    let started = status::now_unix();
    let workers_count = shared.workers.count();
    let profile_name = ivnsec_core::profile::Profile::Macsec(spec.profile).to_string();
    let mut header = json!({
        "pid": std::process::id(),
        "started": started,
        "iface": spec.iface,
        "tap": host_name,
        "profile": profile_name,
        "sci": sci_hex(sci),
        "mac": MacAddr(mac).to_string(),
        "mtu": {"iface": plan.iface, "tap": plan.tap, "overhead": plan.overhead},
        "key_source": source.kind(),
        "provider": spec.provider.name,
        "replay_window": spec.replay_window,
        "busy_poll_us": spec.busy_poll.map(|d| d.as_micros() as u64),
        "cpu_latency_us": spec.cpu_latency_us,
        "pipeline": dataplane::pipeline_on(spec.pipeline),
        "threads": dataplane::threads(spec.busy_poll.is_some(), dataplane::pipeline_on(spec.pipeline)),
        "rx_ring": dataplane::ring_json(ring.as_ref()),
        "crypto_workers": workers_count,
    });
    if !gateway {
        header["offload"] = json!(tap.as_ref().is_some_and(|t| t.tap().vnet_hdr()));
    }
    if gateway {
        header["role"] = json!("gateway");
        header["plain"] = json!(host_name);
        header["protected"] = json!(spec.iface);
        header["mtu"]["plain"] = json!(plan.tap);
        header["mtu"]["protected"] = json!(plan.iface);
        header["plain_rx_ring"] = link.as_ref().map_or(Value::Null, host::LinkPort::ring_json);
        header["socket_buffers"] = json!({
            "plain": link.as_ref().map_or(0, host::LinkPort::buffer_bytes),
            "protected": prot_buffer,
        });
        header["realtime"] = json!(scheduling.fixed_realtime());
        header["scheduling"] = scheduling.json();
    }
    shared.emit("started", header.clone());
    source.start(&ctl)?;
    if let Some(t) = &tap {
        t.tap()
            .set_up(true)
            .map_err(|e| open_err(&format!("setting --tap {host_name} up"), e))?;
    }
    status.write(&status::snapshot(&header, &ctl, source))?;
    if gateway {
        eprintln!(
            "gateway: {host_name} (plain, MTU {}) ⇄ {} (protected, MTU {} ≥ {} + {}), {}, SCI \
             {}, key source {}; running until SIGINT/SIGTERM",
            plan.tap,
            spec.iface,
            plan.iface,
            plan.tap,
            plan.overhead,
            profile_name,
            sci_hex(sci),
            source.kind()
        );
    } else {
        eprintln!(
            "macsec: {} ⇄ {} ({}), SCI {}, TAP MTU {} (= {} − {}), key source {}; running until \
             SIGINT/SIGTERM",
            host_name,
            spec.iface,
            profile_name,
            sci_hex(sci),
            plan.tap,
            plan.iface,
            plan.overhead,
            source.kind()
        );
    }

    let stride = dataplane::stride(plan);
    let pipeline = dataplane::pipeline_on(spec.pipeline);
    let one_thread = dataplane::one_thread(spec.busy_poll.is_some(), pipeline);
    let result = std::thread::scope(|s| -> Result<()> {
        let sh = &*shared;
        let (k, o) = (&sock, &out);
        if one_thread {
            spawn_named(s, "macsec-poll", move || {
                let p = dataplane::Protected { sock: k, out: o };
                dataplane::busy_loop(sh, host, p, ring, plan, stride, scheduling)
            });
        } else {
            spawn_named(s, "macsec-tx", move || {
                dataplane::tx_loop(sh, host, o, plan, stride, scheduling, pipeline)
            });
            spawn_named(s, "macsec-rx", move || {
                dataplane::rx_loop(sh, host, k, ring, stride, scheduling, pipeline)
            });
        }
        let mut watch = status::DropWatch::default();
        let mut next_status = Instant::now() + STATUS_EVERY;
        while !sh.stop.load(Ordering::Relaxed) {
            source.wait(TICK);
            let now = Instant::now();
            if let Err(e) = source.poll(now, &ctl) {
                sh.fail(e);
                break;
            }
            watch.emit_new(&ctl);
            if now >= next_status {
                next_status = now + STATUS_EVERY;
                if let Err(e) = status.write(&status::snapshot(&header, &ctl, source)) {
                    eprintln!("ivnsec: warning: status file: {e:#}");
                }
            }
        }
        sh.stop.store(true, Ordering::Relaxed);
        watch.emit_new(&ctl);
        Ok(())
    });
    let final_status = status::snapshot(&header, &ctl, source);
    if let Some(p) = &shared.pcap {
        let _ = lock(p).flush();
    }
    drop(sock);
    drop(out);
    drop(tap);
    drop(link);
    status.remove();
    let fatal = lock(&shared.fatal).take();
    shared.emit(
        "stopped",
        json!({"reason": match &fatal { Some(e) => format!("{e:#}"), None => "signal".to_string() }}),
    );
    result?;
    match fatal {
        Some(e) => Err(e),
        None => Ok(Summary {
            status: final_status,
        }),
    }
}

impl Config {
    /// The profile's name as the user spells it canonically.
    pub fn profile_name(&self) -> String {
        ivnsec_core::profile::Profile::Macsec(self.profile).to_string()
    }
}

/// A claim failure as the error `run` ends with (exhaustion exits 1, I/O 3, the rest 2).
pub fn claim_error(e: HwError) -> anyhow::Error {
    e.into_anyhow()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 802.1AE §9: SecTAG with SCI 16 octets, ICV 16 octets (GCM-AES-*, XPN alike).
    #[test]
    fn tap_mtu_is_the_interface_mtu_less_sectag_and_icv() {
        assert_eq!(OVERHEAD, 32);
        let p = mtu_plan("eth0", 1500).unwrap();
        assert_eq!((p.iface, p.tap, p.overhead), (1500, 1468, 32));
        assert_eq!(mtu_plan("eth0", 9000).unwrap().tap, 8968);
        assert_eq!(mtu_plan("eth0", 100).unwrap().tap, 68);
        for small in [99, 32, 0] {
            let e = mtu_plan("eth0", small).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(e.to_string().contains("no room"), "{e}");
        }
        // A batch slot holds the largest frame the interface carries, VLAN tag included.
        let s = dataplane::stride(mtu_plan("eth0", 1500).unwrap());
        assert!(s >= 14 + 4 + 1500 && s % 64 == 0);
    }

    /// A gateway forwards the plain port's frames whole: the protected port needs the plain
    /// MTU + SecTAG with SCI (16) + ICV (16), and the refusal names exactly that MTU (and the
    /// legacy MTU that would fit instead).
    #[test]
    fn gateway_needs_the_plain_mtu_plus_sectag_and_icv() {
        let p = gateway_mtu_plan("eth1", 1500, "eth0", 1532, OVERHEAD).unwrap();
        assert_eq!(
            (p.tap, p.iface, p.overhead, p.vlan_slack),
            (1500, 1532, 32, 4)
        );
        assert!(gateway_mtu_plan("eth1", 1500, "eth0", 9000, OVERHEAD).is_ok());
        let e = gateway_mtu_plan("eth1", 1500, "eth0", 1500, OVERHEAD).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        let m = e.to_string();
        assert!(m.contains("at least 1532"), "{m}");
        assert!(m.contains("ip link set eth0 mtu 1532"), "{m}");
        assert!(m.contains("ip link set eth1 mtu 1468"), "{m}");
        assert!(gateway_mtu_plan("eth1", 1500, "eth0", 1531, OVERHEAD).is_err());
        // A slot holds a VLAN-tagged plain frame at full MTU, with room for SecTAG and ICV.
        let s = dataplane::stride(p);
        assert!(s >= 16 + 14 + 4 + 1500 + 16 + 4 && s % 64 == 0, "{s}");
    }
}
