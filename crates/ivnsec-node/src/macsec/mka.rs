//! MKA as the key source of the MACsec TAP (`ivnsec macsec up --psk FILE`; docs/mka.md
//! "Running it"): the SAKs come from the members of the connectivity association, agreed and
//! rotated by the MKA participant of the core ([`ivnsec_core::mka::Participant`]).
//!
//! - **I/O**: an AF_PACKET socket on the protected interface bound to EtherType 0x888E
//!   (EAPOL), member of the group 01-80-C2-00-00-03 the MKPDUs are sent to. The control thread
//!   of [`super::run`] waits on it ([`KeySource::wait`]) until an MKPDU arrives or the
//!   participant's next timer (hello, life, SAK retire, rekey) falls due, on CLOCK_MONOTONIC
//!   ([`sys::monotonic_ns`]).
//! - **Events to the SecY**, in the order the participant gives them, which is the order
//!   make-before-break needs: a new SAK is installed for receive first (one receive SA per
//!   live peer), then for transmit (the encoding SA switches), and the old one is retired
//!   last. Every event is also a line of the events file (`peer_live`, `peer_lost`,
//!   `key_server_elected`, `sak_distributed`, `sak_installed`, `sak_retired` with key number and
//!   AN, `mka_icv_failure`); the participant's state and counters are in the status file.
//! - **Transmit PN**: the encoding SA's next PN is reported to the participant on every poll,
//!   so the key server rekeys at the PN threshold (75 % of the PN space by default).
//! - **Nonces**: every transmit SA goes through the one high-water module
//!   ([`HighWater::open_agreed`]) keyed by the SAK's bytes and the SA identity
//!   ([`tx_sa_identity`]: the SCI, or the SSCI for XPN), in `--state-dir`. A SAK is fresh in
//!   the normal case and starts at PN 1; a member restarted while the CA still uses the SAK it
//!   transmitted under before (the key server may hand it the same SAK again) finds that SAK's
//!   state and resumes above every PN it may have used. The states of old SAKs stay in the
//!   directory (two small files per SAK this member transmitted under; docs/mka.md says when
//!   they may be removed).
//! - **A SAK met again without its state**: before its first reservation under a SAK the
//!   member records the SAK (by fingerprint, with its SCI) in the used-SAK record beside its
//!   CAK source ([`used_sak`]), which a lost `--state-dir` does not take with it. A SAK listed
//!   there whose state is missing is never transmitted under: it stays installed for receive,
//!   the member emits `sak_refused_no_state`, counts it, and announces the SAK as exhausted for
//!   its transmit (the Lowest Acceptable PN of its SAK Use set at the end of the PN space: the
//!   key server's PN-exhaustion rekey, 802.1X-2020 9.8) so that a new SAK is distributed; it
//!   transmits again under that one.
//! - **The same SAK under a new key identifier** (a key server restarted and distributing its
//!   SAK again under its new MI): the transmit SA holding that SAK's state is retired first, so
//!   the new one opens the same state and resumes above it.

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::mka::{self, Event, KeyStatus, Participant, RampUp, SaInstall};
use ivnsec_core::profile::{MacsecProfile, Profile};
use ivnsec_core::sa::secy::{SaKey, tx_sa_identity};
use ivnsec_core::wire::macsec::Sci;
use ivnsec_core::wire::mkpdu::{self, KeyId};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::sys::{self, RawSocket};
use serde_json::{Value, json};

use super::{KeySource, SecyControl, open_err, sci_hex};
use crate::error::usage;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::keys::psk::Psk;
use crate::keys::used_sak;

/// MKPDUs handled per poll before timers and transmission get their turn (a flood of MKPDUs
/// cannot starve the hellos).
const MAX_RX_PER_POLL: usize = 256;
/// Receive buffer. An MKPDU of this participant is at most [`Participant::max_frame_len`]
/// (about 1.2 KB with 32 peers); a longer frame is counted as truncated and not parsed.
const RX_BUF: usize = 2048;
/// At most one `mka_icv_failure` line per source address in this interval.
const ICV_EVENT_EVERY: Duration = Duration::from_millis(100);
/// Source addresses remembered between two `mka_icv_failure` flushes (the rest are summed).
const ICV_SOURCES: usize = 64;
/// Nonce states of recent transmit SAs shown in the status.
const STATES_SHOWN: usize = 8;

/// The MKA settings of `macsec up --psk` ([`Default`]: the standard's timers, Table 9-3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MkaSettings {
    /// Key Server Priority (`--priority`): lower wins, ties go to the lower SCI; 255 never
    /// acts as key server.
    pub priority: u8,
    /// MKA Hello Time (`--hello-seconds`, 2 s).
    pub hello: Duration,
    /// MKA Life Time (`--life-seconds`, 6 s).
    pub life: Duration,
    /// MKA SAK Retire Time (`--sak-retire-seconds`, 3 s).
    pub sak_retire: Duration,
    /// Rekey interval of the key server (`--rekey-seconds`; none by default).
    pub rekey: Option<Duration>,
    /// Transmit PN at which the key server rekeys (`--pn-threshold`; 75 % of the PN space).
    pub pn_threshold: Option<u64>,
    /// Start-up ramp-up (`--ramp-up-ms`, `--ramp-up-count`): the first MKPDUs after this
    /// interval, doubling, this many times.
    pub ramp_up: Option<(Duration, u32)>,
}

impl Default for MkaSettings {
    fn default() -> MkaSettings {
        MkaSettings {
            priority: 16,
            hello: Duration::from_nanos(mka::participant::HELLO_TIME),
            life: Duration::from_nanos(mka::participant::LIFE_TIME),
            sak_retire: Duration::from_nanos(mka::participant::SAK_RETIRE_TIME),
            rekey: None,
            pn_threshold: None,
            ramp_up: None,
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl MkaSettings {
    /// The participant's configuration for `profile`; an out-of-range value is a usage error
    /// naming its option.
    pub fn config(&self, profile: MacsecProfile) -> Result<mka::Config> {
        let suite = profile.suite;
        if self.hello.is_zero() {
            return Err(usage("--hello-seconds must be positive"));
        }
        if self.life <= self.hello {
            return Err(usage(format!(
                "--life-seconds ({:?}) must exceed --hello-seconds ({:?}): a peer is lost when \
                 nothing was heard from it for a life time (the standard has 6 s and 2 s)",
                self.life, self.hello
            )));
        }
        if self.rekey.is_some_and(|r| r.is_zero()) {
            return Err(usage("--rekey-seconds must be positive"));
        }
        if let Some(t) = self.pn_threshold
            && (t == 0 || t > suite.max_pn())
        {
            return Err(usage(format!(
                "--pn-threshold must be 1 to {} (the PN space of {}), got {t}",
                suite.max_pn(),
                suite.profile()
            )));
        }
        if let Some((first, count)) = self.ramp_up
            && (first.is_zero() || count == 0 || count > 32)
        {
            return Err(usage(
                "--ramp-up-ms must be positive and --ramp-up-count 1 to 32",
            ));
        }
        let mut c = mka::Config::new(suite);
        c.key_server_priority = self.priority;
        c.confidentiality_offset = u8::from(profile.confidentiality);
        c.hello_ns = ns(self.hello);
        c.life_ns = ns(self.life);
        c.sak_retire_ns = ns(self.sak_retire);
        c.rekey_interval_ns = self.rekey.map(ns);
        c.pn_threshold = self.pn_threshold;
        c.ramp_up = self.ramp_up.map(|(first, count)| RampUp {
            first_ns: ns(first),
            count,
        });
        Ok(c)
    }
}

/// A receive SAK as installed: the SCs that have an SA of it.
#[derive(Debug)]
struct RxKey {
    id: KeyId,
    an: u8,
    scis: Vec<Sci>,
}

/// A transmit SA as installed: its key, AN and the fingerprint naming its nonce state.
#[derive(Debug)]
struct TxKey {
    id: KeyId,
    an: u8,
    state: String,
}

/// `mka_icv_failure` events, summed per source and written at most every
/// [`ICV_EVENT_EVERY`] (a flood of forged MKPDUs must not become a flood of lines).
#[derive(Debug, Default)]
struct IcvEvents {
    pending: BTreeMap<[u8; 6], u64>,
    others: u64,
    last: Option<Instant>,
}

impl IcvEvents {
    fn note(&mut self, src: [u8; 6]) {
        if self.pending.len() < ICV_SOURCES || self.pending.contains_key(&src) {
            *self.pending.entry(src).or_default() += 1;
        } else {
            self.others += 1;
        }
    }

    fn flush(&mut self, ctl: &SecyControl) {
        if self.pending.is_empty() && self.others == 0 {
            return;
        }
        if self.last.is_some_and(|t| t.elapsed() < ICV_EVENT_EVERY) {
            return;
        }
        self.last = Some(Instant::now());
        for (src, n) in std::mem::take(&mut self.pending) {
            ctl.shared().emit(
                "mka_icv_failure",
                json!({"src": ivnsec_core::wire::ethernet::MacAddr(src).to_string(), "mkpdus": n}),
            );
        }
        if self.others > 0 {
            ctl.shared().emit(
                "mka_icv_failure",
                json!({"src": null, "mkpdus": self.others}),
            );
            self.others = 0;
        }
    }
}

/// The MKA key source: owns the participant and its socket.
pub struct MkaKeys {
    profile: MacsecProfile,
    settings: MkaSettings,
    psk_file: PathBuf,
    ckn: Vec<u8>,
    cak_bits: usize,
    iface: String,
    sci: Sci,
    state_dir: PathBuf,
    reserve_block: u64,
    provider: &'static CryptoProvider,
    p: Participant,
    sock: Option<RawSocket>,
    txbuf: Vec<u8>,
    rxbuf: Vec<u8>,
    rx_keys: Vec<RxKey>,
    tx_keys: Vec<TxKey>,
    states: VecDeque<Value>,
    /// The used-SAK record (beside the CAK source).
    sak_record: PathBuf,
    /// SAKs installed for receive only: listed in the used-SAK record without their state.
    refused_no_state: u64,
    truncated: u64,
    icv: IcvEvents,
    /// The last CAK the key server distributed (802.1X group CA), until taken.
    distributed: Option<Psk>,
}

impl std::fmt::Debug for MkaKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MkaKeys")
            .field("iface", &self.iface)
            .field("sci", &self.sci)
            .field("participant", &self.p)
            .finish_non_exhaustive()
    }
}

fn mi_hex(mi: &mkpdu::Mi) -> String {
    hex::encode(mi)
}

fn key_json(k: &Option<KeyStatus>) -> Value {
    match k {
        None => Value::Null,
        Some(k) => json!({
            "key_server_mi": mi_hex(&k.key.mi), "key_number": k.key.kn, "an": k.an,
            "rx": k.rx, "tx": k.tx, "tx_pn": k.tx_pn,
        }),
    }
}

impl MkaKeys {
    /// Checks what can be checked before anything is created: the settings, a provider with
    /// AES-CMAC and AES Key Wrap for the CAK's size, the participant itself. `sci` is this
    /// SecY's (the protected interface's MAC ‖ 0001). `sak_record` is the used-SAK record
    /// ([`used_sak::record_path`] of the CAK source), read and appended to at each transmit SA.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        profile: MacsecProfile,
        psk_file: PathBuf,
        sak_record: PathBuf,
        psk: &Psk,
        iface: &str,
        sci: Sci,
        settings: MkaSettings,
        state_dir: PathBuf,
        reserve_block: u64,
        choice: ProviderChoice,
    ) -> Result<MkaKeys> {
        let cfg = settings.config(profile)?;
        let needs = mka::kdf::primitives(psk.cak().len())
            .map_err(|e| usage(format!("PSK file {}: {e}", psk_file.display())))?;
        let provider = ivnsec_crypto::select_primitives(
            choice,
            &needs,
            &"MKA (AES-CMAC and AES Key Wrap of the CAK's size)",
        )
        .map_err(|e| usage(e.to_string()))?;
        if reserve_block == 0 || reserve_block > highwater::MAX_BLOCK {
            return Err(usage(format!(
                "--reserve-block must be between 1 and {}, got {reserve_block}",
                highwater::MAX_BLOCK
            )));
        }
        let p = Participant::new(
            cfg,
            psk.cak(),
            psk.ckn(),
            sci,
            provider,
            provider.rng,
            sys::monotonic_ns(),
        )
        .map_err(|e| usage(format!("MKA: {e}")))?;
        let txbuf = vec![0u8; p.max_frame_len()];
        Ok(MkaKeys {
            profile,
            settings,
            psk_file,
            ckn: psk.ckn().to_vec(),
            cak_bits: psk.cak().len() * 8,
            iface: iface.to_string(),
            sci,
            state_dir,
            reserve_block,
            provider,
            p,
            sock: None,
            txbuf,
            rxbuf: vec![0u8; RX_BUF],
            rx_keys: Vec::new(),
            tx_keys: Vec::new(),
            states: VecDeque::new(),
            sak_record,
            refused_no_state: 0,
            truncated: 0,
            icv: IcvEvents::default(),
            distributed: None,
        })
    }

    /// Applies the participant's events to the SecY, then sends the MKPDUs due (so an MKPDU
    /// never says a key is in use before the SecY uses it).
    fn step(&mut self, now: u64, ctl: &SecyControl) -> Result<()> {
        while let Some(ev) = self.p.poll_event() {
            self.apply(now, ev, ctl)?;
        }
        self.icv.flush(ctl);
        let Some(sock) = self.sock.as_ref() else {
            return Ok(());
        };
        while let Some(n) = self.p.poll_transmit(now, &mut self.txbuf) {
            if let Err(e) = sock.send(&self.txbuf[..n]) {
                // The link may be down for a moment; the next hello tries again. A missing
                // privilege or interface ends the instance.
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
                ) {
                    return Err(anyhow::anyhow!("sending an MKPDU on {}: {e}", self.iface));
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, now: u64, ev: Event, ctl: &SecyControl) -> Result<()> {
        let sh = ctl.shared();
        match ev {
            Event::PeerLive { sci, mi } => {
                sh.emit("peer_live", json!({"sci": sci_hex(sci), "mi": mi_hex(&mi)}))
            }
            Event::PeerLost { sci, mi } => {
                sh.emit("peer_lost", json!({"sci": sci_hex(sci), "mi": mi_hex(&mi)}))
            }
            Event::KeyServerElected { sci, is_self } => sh.emit(
                "key_server_elected",
                json!({"sci": sci.map(sci_hex), "is_self": is_self}),
            ),
            Event::SakDistributed { key, an, reason } => sh.emit(
                "sak_distributed",
                json!({"key_server_mi": mi_hex(&key.mi), "key_number": key.kn, "an": an,
                       "reason": reason.name()}),
            ),
            Event::InstallRx(sa) => self.install_rx(&sa, ctl)?,
            Event::InstallTx(sa) => self.install_tx(now, &sa, ctl)?,
            Event::RetireRx { key, an } => self.retire_rx(key, an, ctl),
            Event::RetireTx { key, an } => self.retire_tx(key, an, ctl),
            Event::IcvFailure { src } => self.icv.note(src.0),
            Event::CakDistributed { cak, ckn } => {
                sh.emit("cak_distributed", json!({"ckn": hex::encode(&ckn)}));
                match Psk::new(cak.as_bytes(), &ckn, "the distributed CAK") {
                    Ok(p) => self.distributed = Some(p),
                    Err(e) => sh.emit("cak_refused", json!({"reason": format!("{e:#}")})),
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn install_rx(&mut self, sa: &SaInstall, ctl: &SecyControl) -> Result<()> {
        let mut scis = Vec::with_capacity(sa.scs.len());
        for &(sci, ssci) in &sa.scs {
            // The SA of another key under this AN in this SC is replaced: forget it there.
            for k in self
                .rx_keys
                .iter_mut()
                .filter(|k| k.an == sa.an && k.id != sa.key)
            {
                k.scis.retain(|s| *s != sci);
            }
            let key = SaKey {
                sak: sa.sak.as_bytes(),
                ssci,
                salt: sa.salt,
                key_number: sa.key.kn,
            };
            ctl.install_rx_sa(sci, sa.an, &key, sa.lowest_pn)?;
            scis.push(sci);
        }
        ctl.shared().emit(
            "sak_installed",
            json!({"dir": "rx", "key_server_mi": mi_hex(&sa.key.mi), "key_number": sa.key.kn,
                   "an": sa.an, "peers": scis.iter().map(|s| sci_hex(*s)).collect::<Vec<_>>()}),
        );
        // A key may come again with the SC of a peer that became live since: one entry per key.
        match self.rx_keys.iter_mut().find(|k| k.id == sa.key) {
            Some(k) => {
                for sci in scis {
                    if !k.scis.contains(&sci) {
                        k.scis.push(sci);
                    }
                }
            }
            None => self.rx_keys.push(RxKey {
                id: sa.key,
                an: sa.an,
                scis,
            }),
        }
        self.rx_keys.retain(|k| !k.scis.is_empty());
        Ok(())
    }

    /// The transmit SA of a SAK: its first PN comes from the SAK's nonce state (1 for a fresh
    /// SAK, above every PN reserved before for one met again), and every PN is claimed there
    /// before a frame carries it. A SAK the used-SAK record lists for this SCI whose state is
    /// missing is refused (receive only; see the module documentation).
    fn install_tx(&mut self, now: u64, sa: &SaInstall, ctl: &SecyControl) -> Result<()> {
        let suite = self.profile.suite;
        let ssci = sa.scs.first().and_then(|s| s.1);
        let keys = DirectionKeys::new(sa.sak.as_bytes(), &[], sa.salt.unwrap_or([0u8; 12]));
        let ident = tx_sa_identity(suite, self.sci, ssci);
        let domain = Profile::Macsec(self.profile).nonce_domain();
        // The same SAK and SA installed under another key identifier (a key server that
        // restarted hands its SAK out again under its new MI): that SA holds the state's lock
        // and its PNs; retire it so the new SA opens the state and resumes above them.
        let state = highwater::fingerprint(&domain, &ident, sa.sak.as_bytes(), &[]);
        if let Some(i) = self.tx_keys.iter().position(|k| k.state == state) {
            let k = self.tx_keys.remove(i);
            let _ = ctl.retire_tx_sa(k.an);
        }
        let opts = highwater::Options {
            block: self.reserve_block,
            seq_limit: None,
            protocol_max: suite.max_pn(),
            used_record: None,
            grow: true,
            confirm_new_key: false,
        };
        let mut hw = HighWater::open_agreed(&self.state_dir, &domain, &ident, &keys, opts)
            .map_err(HwError::into_anyhow)?;
        let sak_fp = used_sak::fingerprint(&domain, self.sci, sa.sak.as_bytes());
        let listed = used_sak::lookup(&self.sak_record, &sak_fp).map_err(HwError::into_anyhow)?;
        if let (true, Some(entry)) = (hw.is_fresh(), &listed) {
            // Its PNs cannot be proven fresh: never transmit under it. The state was not
            // written (no reservation), so a later install finds the same situation.
            let missing = hw.path().display().to_string();
            drop(hw);
            self.refused_no_state += 1;
            eprintln!(
                "ivnsec: warning: SAK key number {} (key server MI {}) was transmitted under \
                 by this member before ({} lists it: {entry}), but its nonce state {missing} is \
                 missing: starting at PN 1 would reuse (SAK, nonce) pairs. It is installed for \
                 receive only; this member transmits again when the key server distributes a \
                 new SAK",
                sa.key.kn,
                mi_hex(&sa.key.mi),
                self.sak_record.display()
            );
            ctl.shared().emit(
                "sak_refused_no_state",
                json!({"key_server_mi": mi_hex(&sa.key.mi), "key_number": sa.key.kn,
                       "an": sa.an, "ssci": ssci, "record": self.sak_record.display().to_string(),
                       "entry": entry, "nonce_state": missing}),
            );
            // Ask for a new SAK by MKA's own means: this member's transmit PN under the SAK is
            // announced as exhausted, which makes the key server distribute a new one.
            self.p.report_tx_pn(now, sa.an, suite.max_pn());
            return Ok(());
        }
        let first = hw.first_seq().map_err(HwError::into_anyhow)?;
        let resumed = !hw.is_fresh();
        let state_path = hw.path().display().to_string();
        if listed.is_none() {
            let info = format!(
                "sci {} | {domain} | key-number {} key-server-mi {} an {} ssci {} | {state_path}",
                sci_hex(self.sci),
                sa.key.kn,
                mi_hex(&sa.key.mi),
                sa.an,
                ssci.map_or("-".to_string(), |s| s.to_string())
            );
            used_sak::record(&self.sak_record, &sak_fp, &info).map_err(HwError::into_anyhow)?;
        }
        // The state is on disk before the SA exists: a restart with this state directory
        // always finds it, whatever the record says.
        hw.claim(first).map_err(HwError::into_anyhow)?;
        let key = SaKey {
            sak: sa.sak.as_bytes(),
            ssci,
            salt: sa.salt,
            key_number: sa.key.kn,
        };
        self.tx_keys.retain(|k| k.an != sa.an && k.id != sa.key);
        ctl.install_tx_sa(sa.an, &key, first, Some(hw))?;
        ctl.enable_tx_sa(sa.an)?;
        self.tx_keys.push(TxKey {
            id: sa.key,
            an: sa.an,
            state,
        });
        // The participant says in its SAK Use set which PN it transmits from.
        self.p.report_tx_pn(now, sa.an, first);
        let info = json!({"dir": "tx", "key_server_mi": mi_hex(&sa.key.mi),
                          "key_number": sa.key.kn, "an": sa.an, "ssci": ssci,
                          "first_pn": first, "resumed": resumed, "nonce_state": state_path});
        ctl.shared().emit("sak_installed", info.clone());
        if self.states.len() >= STATES_SHOWN {
            self.states.pop_front();
        }
        self.states.push_back(info);
        Ok(())
    }

    fn retire_rx(&mut self, key: KeyId, an: u8, ctl: &SecyControl) {
        if let Some(i) = self.rx_keys.iter().position(|k| k.id == key) {
            let k = self.rx_keys.remove(i);
            for sci in k.scis {
                let _ = ctl.retire_rx_sa(sci, k.an);
                // A peer that left keeps no empty receive SC (the SecY bounds them).
                let mut rx = ctl.shared().rx();
                if !rx.sas().any(|s| s.sci == sci) {
                    let _ = rx.remove_sc(sci);
                }
            }
        }
        ctl.shared().emit(
            "sak_retired",
            json!({"dir": "rx", "key_server_mi": mi_hex(&key.mi), "key_number": key.kn, "an": an}),
        );
    }

    fn retire_tx(&mut self, key: KeyId, an: u8, ctl: &SecyControl) {
        if let Some(i) = self.tx_keys.iter().position(|k| (k.id, k.an) == (key, an)) {
            self.tx_keys.remove(i);
            let _ = ctl.retire_tx_sa(an);
        }
        ctl.shared().emit(
            "sak_retired",
            json!({"dir": "tx", "key_server_mi": mi_hex(&key.mi), "key_number": key.kn, "an": an}),
        );
    }
}

/// An AF_PACKET socket on `iface` for EtherType 0x888E (EAPOL: MKPDUs and 802.1X), member of
/// the PAE group address, frames to other hosts filtered out, with room for a burst (a flood
/// is judged, not lost in the queue).
pub fn open_eapol(iface: &str) -> Result<RawSocket> {
    let what = format!("EAPOL socket on --iface {iface}");
    let sock = RawSocket::open(iface, mkpdu::ETHERTYPE_EAPOL).map_err(|e| open_err(&what, e))?;
    sock.join_multicast(mkpdu::PAE_GROUP_ADDR.0)
        .with_context(|| format!("{what}: joining 01-80-C2-00-00-03"))?;
    sock.drop_other_host()
        .with_context(|| format!("{what}: filtering frames to other hosts"))?;
    let _ = sock.set_recv_buffer_force(1 << 20);
    Ok(sock)
}

impl KeySource for MkaKeys {
    fn kind(&self) -> &'static str {
        "mka"
    }

    fn start(&mut self, ctl: &SecyControl) -> Result<()> {
        self.sock = Some(open_eapol(&self.iface)?);
        let st = self.p.snapshot();
        ctl.shared().emit(
            "mka_started",
            json!({"sci": sci_hex(st.sci), "mi": mi_hex(&st.mi), "ckn": hex::encode(&self.ckn),
                   "priority": self.settings.priority}),
        );
        self.step(sys::monotonic_ns(), ctl)
    }

    fn poll(&mut self, _now: Instant, ctl: &SecyControl) -> Result<()> {
        let now = sys::monotonic_ns();
        for _ in 0..MAX_RX_PER_POLL {
            let Some(sock) = self.sock.as_ref() else {
                break;
            };
            let m = match sock.try_recv(&mut self.rxbuf) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) => {
                    return Err(anyhow::anyhow!("receiving MKPDUs on {}: {e}", self.iface));
                }
            };
            if m.truncated() {
                self.truncated += 1;
                continue;
            }
            // A dropped MKPDU is counted by the participant with its reason.
            let _ = self.p.handle_pdu(now, &self.rxbuf[..m.len]);
            while let Some(ev) = self.p.poll_event() {
                self.apply(now, ev, ctl)?;
            }
        }
        let (an, pn) = {
            let tx = ctl.shared().tx();
            (tx.secy.encoding_an(), tx.secy.next_pn())
        };
        if let (Some(an), Some(pn)) = (an, pn) {
            self.p.report_tx_pn(now, an, pn);
        }
        if self.p.poll_timeout().is_some_and(|t| t <= now) {
            self.p.handle_timeout(now);
        }
        self.step(now, ctl)
    }

    fn wait(&mut self, max: Duration) {
        let now = sys::monotonic_ns();
        let due = self.p.poll_timeout().unwrap_or(u64::MAX);
        let t = Duration::from_nanos(due.saturating_sub(now)).min(max);
        if t.is_zero() {
            return;
        }
        match self.sock.as_ref() {
            Some(s) => {
                if sys::wait_readable(s.as_fd(), Some(t)).is_err() {
                    std::thread::sleep(t);
                }
            }
            None => std::thread::sleep(t),
        }
    }

    fn describe(&self, _ctl: &SecyControl) -> Value {
        let st = self.p.snapshot();
        let c = st.counters;
        let drops: serde_json::Map<String, Value> = c
            .named_drops()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let s = &self.settings;
        json!({
            "psk_file": self.psk_file.display().to_string(),
            "ckn": hex::encode(&self.ckn),
            "cak_bits": self.cak_bits,
            "mka_provider": self.provider.name,
            "sci": sci_hex(st.sci),
            "mi": mi_hex(&st.mi),
            "mn": st.mn,
            "priority": s.priority,
            "key_server": st.key_server.map(sci_hex),
            "is_key_server": st.is_key_server,
            "timers": {
                "hello_ms": s.hello.as_millis() as u64,
                "life_ms": s.life.as_millis() as u64,
                "sak_retire_ms": s.sak_retire.as_millis() as u64,
                "rekey_seconds": s.rekey.map(|r| r.as_secs_f64()),
                "pn_threshold": self.p_threshold(),
                "ramp_up": s.ramp_up.map(|(f, n)| json!({"first_ms": f.as_millis() as u64, "count": n})),
            },
            "peers": st.peers.iter().map(|p| json!({
                "sci": sci_hex(p.sci), "mi": mi_hex(&p.mi), "mn": p.mn, "live": p.live,
                "priority": p.key_server_priority,
            })).collect::<Vec<_>>(),
            "latest": key_json(&st.latest),
            "old": key_json(&st.old),
            "counters": {
                "pdus_sent": c.pdus_sent,
                "pdus_accepted": c.pdus_accepted,
                "drops": drops,
                "saks_distributed": c.saks_distributed,
                "saks_installed": c.saks_installed,
                "saks_retired": c.saks_retired,
                "peers_live": c.peers_live,
                "peers_lost": c.peers_lost,
                "events_dropped": c.events_dropped,
                "ssci_deferred": c.ssci_deferred,
                "truncated": self.truncated,
                "tx_refused": {"no_state": self.refused_no_state},
            },
            "sak_record": self.sak_record.display().to_string(),
            "state_dir": self.state_dir.display().to_string(),
            "nonce_states": self.states.iter().cloned().collect::<Vec<_>>(),
        })
    }
}

impl MkaKeys {
    /// Ends this participant's MKPDU exchange (its socket closes); the SAs it installed stay
    /// in the SecY until [`MkaKeys::retire_superseded`] (a CAK handed over to a newer
    /// participant, `macsec up --keyserver`).
    pub fn close(&mut self) {
        self.sock = None;
    }

    /// This participant never distributes a SAK of its own, even as key server: it only carries
    /// a Distributed CAK ([`MkaKeys::distribute_cak`]; an 802.1X authenticator's pairwise CAs
    /// under a group CA).
    pub fn distribute_only(&mut self) {
        self.p.set_distribute_sak(false);
    }

    /// Hands `cak` (named `ckn`) to the live peers of this CA while this participant is the
    /// key server (802.1X-2020 9.8: the group CA).
    pub fn distribute_cak(&mut self, cak: &[u8], ckn: &[u8]) -> Result<()> {
        self.p
            .distribute_cak(sys::monotonic_ns(), cak, ckn)
            .map_err(|e| anyhow::anyhow!("distributing the group CAK: {e}"))
    }

    /// The CAK the key server distributed since the last call, if any.
    pub fn take_distributed_cak(&mut self) -> Option<Psk> {
        self.distributed.take()
    }

    /// The first SAK this participant distributes as key server takes AN `an`
    /// ([`Participant::prefer_first_an`]).
    pub fn prefer_first_an(&mut self, an: u8) {
        self.p.prefer_first_an(an);
    }

    /// The ANs of the SAKs this participant has installed in the SecY, the latest first (the
    /// last transmit SA installed, else the last receive SA).
    pub fn ans_in_use(&self) -> Vec<u8> {
        let mut out: Vec<u8> = Vec::new();
        let latest = self
            .tx_keys
            .last()
            .map(|k| k.an)
            .or_else(|| self.rx_keys.last().map(|k| k.an));
        for an in latest
            .into_iter()
            .chain(self.tx_keys.iter().map(|k| k.an))
            .chain(self.rx_keys.iter().map(|k| k.an))
        {
            if !out.contains(&an) {
                out.push(an);
            }
        }
        out
    }

    /// Whether this participant transmits under a SAK of its own.
    pub fn tx_in_use(&self) -> bool {
        !self.tx_keys.is_empty()
    }

    /// Retires every SA this (closed) participant installed that `newer` has not installed in
    /// its place (the same AN in the same SC), so that no SA of the old CAK stays.
    pub fn retire_superseded(&mut self, ctl: &SecyControl, newer: &MkaKeys) {
        self.retire_except(ctl, Some(newer));
    }

    /// Retires every SA this participant installed (its CAK ends with no successor).
    pub fn retire_all(&mut self, ctl: &SecyControl) {
        self.retire_except(ctl, None);
    }

    fn retire_except(&mut self, ctl: &SecyControl, newer: Option<&MkaKeys>) {
        let newer_rx = |sci: Sci, an: u8| {
            newer.is_some_and(|n| {
                n.rx_keys
                    .iter()
                    .any(|k| k.an == an && k.scis.contains(&sci))
            })
        };
        for k in std::mem::take(&mut self.rx_keys) {
            for sci in k.scis {
                if newer_rx(sci, k.an) {
                    continue;
                }
                let _ = ctl.retire_rx_sa(sci, k.an);
                let mut rx = ctl.shared().rx();
                if !rx.sas().any(|s| s.sci == sci) {
                    let _ = rx.remove_sc(sci);
                }
            }
        }
        for k in std::mem::take(&mut self.tx_keys) {
            if !newer.is_some_and(|n| n.tx_keys.iter().any(|t| t.an == k.an)) {
                let _ = ctl.retire_tx_sa(k.an);
            }
        }
    }

    /// The PN threshold in force (the configured one, or 75 % of the PN space).
    fn p_threshold(&self) -> u64 {
        self.settings
            .config(self.profile)
            .map(|c| c.pn_threshold())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(p: &str) -> MacsecProfile {
        match p.parse::<Profile>().unwrap() {
            Profile::Macsec(m) => m,
            _ => unreachable!(),
        }
    }

    /// The defaults are the standard's (IEEE 802.1X-2020 Table 9-3): hello 2 s, life 6 s, SAK
    /// retire 3 s; the PN threshold is 0xC0000000 for a 32-bit PN (wpa_supplicant's value).
    #[test]
    fn defaults_are_the_standards_and_bad_values_name_their_option() {
        let c = MkaSettings::default()
            .config(profile("macsec-gcm-aes-128"))
            .unwrap();
        assert_eq!(
            (c.hello_ns, c.life_ns, c.sak_retire_ns),
            (2_000_000_000, 6_000_000_000, 3_000_000_000)
        );
        assert_eq!(c.pn_threshold(), 0xC000_0000);
        assert_eq!((c.key_server_priority, c.confidentiality_offset), (16, 1));
        let auth = MkaSettings::default()
            .config(profile("macsec-gcm-aes-256/auth"))
            .unwrap();
        assert_eq!(auth.confidentiality_offset, 0);
        let bad = |s: MkaSettings, want: &str| {
            let e = s.config(profile("macsec-gcm-aes-128")).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(e.to_string().contains(want), "{e}");
        };
        let d = MkaSettings::default();
        bad(
            MkaSettings {
                life: Duration::from_secs(2),
                ..d
            },
            "--life-seconds",
        );
        bad(
            MkaSettings {
                hello: Duration::ZERO,
                ..d
            },
            "--hello-seconds",
        );
        bad(
            MkaSettings {
                pn_threshold: Some(1 << 32),
                ..d
            },
            "--pn-threshold",
        );
        bad(
            MkaSettings {
                rekey: Some(Duration::ZERO),
                ..d
            },
            "--rekey-seconds",
        );
        bad(
            MkaSettings {
                ramp_up: Some((Duration::from_millis(10), 0)),
                ..d
            },
            "--ramp-up",
        );
        // XPN has a 64-bit PN space.
        let x = MkaSettings {
            pn_threshold: Some(1 << 40),
            ..d
        };
        assert!(x.config(profile("macsec-gcm-aes-xpn-128")).is_ok());
    }
}
