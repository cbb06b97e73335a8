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

pub mod dataplane;
pub mod keyserver;
pub mod mka;
pub mod static_keys;
pub mod status;

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
use ivnsec_net::sys::{self, RawSocket};
use ivnsec_net::tap::Tap;
use serde_json::{Value, json};

use crate::error::{env_error, usage};
use crate::keys::highwater::{HighWater, HwError};

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
}

/// TAP MTU = protected interface MTU − SecTAG − ICV; refused (usage error) when the interface's
/// MTU leaves less than [`MIN_TAP_MTU`].
pub fn mtu_plan(iface: &str, iface_mtu: u32) -> Result<MtuPlan> {
    match iface_mtu.checked_sub(OVERHEAD) {
        Some(tap) if tap >= MIN_TAP_MTU => Ok(MtuPlan {
            iface: iface_mtu,
            tap,
            overhead: OVERHEAD,
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
        })
    }
}

/// The transmit half with the nonce reservation of each transmit SA whose key is long-term
/// (a static key: its PNs must stay above everything it sent before a restart).
pub struct TxState {
    pub secy: SecyTx,
    pub reserve: [Option<HighWater>; 4],
}

/// What the two paths, the control loop and the key source share.
pub struct Shared {
    pub tx: Mutex<TxState>,
    pub rx: Mutex<SecyRx>,
    pub frames: FrameCounters,
    pub events: Mutex<EventLog>,
    /// Set by a signal, a fatal error or the key source: every loop ends.
    pub stop: Arc<AtomicBool>,
    /// The first fatal error (a failed reservation, a dead socket): `run` returns it.
    pub fatal: Mutex<Option<anyhow::Error>>,
}

/// A poisoned lock means a path panicked; the state it guards is still the best there is.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub fn tx(&self) -> MutexGuard<'_, TxState> {
        lock(&self.tx)
    }

    pub fn rx(&self) -> MutexGuard<'_, SecyRx> {
        lock(&self.rx)
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
    /// key), every PN is claimed there before a frame carries it.
    pub fn install_tx_sa(
        &self,
        an: u8,
        key: &SaKey<'_>,
        first_pn: u64,
        reserve: Option<HighWater>,
    ) -> Result<()> {
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
}

/// The protected interface's MAC and MTU, read before anything is created (a missing interface
/// is a usage error).
pub fn iface_facts(iface: &str) -> Result<([u8; 6], u32)> {
    ivnsec_net::topology::check_ifname(iface).map_err(|e| usage(format!("--iface: {e}")))?;
    let missing = |e: std::io::Error| {
        usage(format!(
            "--iface {iface}: no such interface in this network namespace ({e}); `ip link` \
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

/// Runs the SecY between `cfg.tap` (created here, MTU and MAC set, removed on return) and
/// `cfg.iface` until `stop` is set (a signal) or something fatal happens.
pub fn run(cfg: &Config, source: &mut dyn KeySource, stop: Arc<AtomicBool>) -> Result<Summary> {
    let (mac, iface_mtu) = iface_facts(&cfg.iface)?;
    let plan = mtu_plan(&cfg.iface, iface_mtu)?;
    let sci = Sci::end_station(MacAddr(mac));
    let secy = SecY::new(
        cfg.provider,
        &SecyConfig {
            suite: cfg.profile.suite,
            sci,
            tx: TxOptions {
                confidentiality: cfg.profile.confidentiality,
                include_sci: true,
                es: false,
                scb: false,
            },
            rx: RxOptions {
                validate: ValidateFrames::Strict,
                replay_protect: true,
                replay_window: cfg.replay_window,
                lowest_pn: 1,
            },
        },
    )
    .map_err(|e| usage(format!("{e}")))?;
    let (tx, rx) = secy.into_parts();
    let events = EventLog::open(cfg.events.as_deref())?;
    let mut status = status::StatusFile::claim(&cfg.run_dir, &cfg.tap)?;

    let tap = Tap::create(&cfg.tap).map_err(|e| open_err(&format!("--tap {}", cfg.tap), e))?;
    // The TAP looks like the protected interface to the host (as a kernel macsec interface
    // does): same MAC, so the peers' replies address it and the SCI names its frames.
    tap.set_mac(mac)
        .and_then(|_| tap.set_mtu(plan.tap))
        .map_err(|e| open_err(&format!("configuring --tap {}", cfg.tap), e))?;
    let sock = RawSocket::open(&cfg.iface, ivnsec_core::wire::macsec::ETHERTYPE)
        .map_err(|e| open_err(&format!("raw socket on --iface {}", cfg.iface), e))?;
    sock.drop_other_host()
        .context("filtering frames to other hosts")?;
    let _ = sock.set_recv_buffer_force(4 << 20);

    let shared = Arc::new(Shared {
        tx: Mutex::new(TxState {
            secy: tx,
            reserve: [None, None, None, None],
        }),
        rx: Mutex::new(rx),
        frames: FrameCounters::default(),
        events: Mutex::new(events),
        stop,
        fatal: Mutex::new(None),
    });
    let ctl = SecyControl {
        shared: shared.clone(),
    };
    let started = status::now_unix();
    let header = json!({
        "pid": std::process::id(),
        "started": started,
        "iface": cfg.iface,
        "tap": cfg.tap,
        "profile": cfg.profile_name(),
        "sci": sci_hex(sci),
        "mac": MacAddr(mac).to_string(),
        "mtu": {"iface": plan.iface, "tap": plan.tap, "overhead": plan.overhead},
        "key_source": source.kind(),
        "provider": cfg.provider.name,
        "replay_window": cfg.replay_window,
    });
    shared.emit("started", header.clone());
    source.start(&ctl)?;
    tap.set_up(true)
        .map_err(|e| open_err(&format!("setting --tap {} up", cfg.tap), e))?;
    status.write(&status::snapshot(&header, &ctl, source))?;
    eprintln!(
        "macsec: {} ⇄ {} ({}), SCI {}, TAP MTU {} (= {} − {}), key source {}; running until \
         SIGINT/SIGTERM",
        cfg.tap,
        cfg.iface,
        cfg.profile_name(),
        sci_hex(sci),
        plan.tap,
        plan.iface,
        plan.overhead,
        source.kind()
    );

    let stride = dataplane::stride(plan);
    let result = std::thread::scope(|s| -> Result<()> {
        let sh = &*shared;
        let (t, k) = (&tap, &sock);
        s.spawn(move || dataplane::tx_loop(sh, t, k, plan, stride));
        s.spawn(move || dataplane::rx_loop(sh, t, k, stride));
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
    drop(sock);
    drop(tap);
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
}
