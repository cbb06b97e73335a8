//! The key server as the source of MKA's CAK (`ivnsec macsec up --keyserver ADDR`,
//! docs/keys.md): the CAK of this ECU's segment comes over mutual TLS 1.3 from `ivnsec
//! keyserver` ([`crate::pki::keyserver`]), and MKA ([`MkaKeys`]) runs on it.
//!
//! - **Fetch**: once before anything is created ([`fetch_initial`]: a refusal or an unreachable
//!   server stops `up` with its reason), then a background thread keeps a `watch` connection
//!   open: the server pushes the segment's keys whenever its CAK changes and a ping every 5 s;
//!   a connection silent for [`SILENT`] or broken is opened again (after 1 s, then up to 5 s).
//!   MKA keeps running on the CAK it has while the server is away.
//! - **A new CAK** (a higher number): a new participant starts on it at once (its own MKPDUs,
//!   under the new CKN), the old one stops sending MKPDUs, and its SAs stay in the SecY so the
//!   traffic goes on under the old SAK; once the new participant transmits under a SAK of the
//!   new CAK and the SAK retire time has passed — or at the latest after [`HANDOVER_LIMIT`] —
//!   every SA of the old CAK that the new one has not replaced is retired. From then on no
//!   frame protected under a SAK of the old CAK is accepted: an ECU the key server left out
//!   (revoked) cannot reach any TAP.
//!
//! - **ANs**: the new participant's first SAK (when it is the key server) takes an AN two
//!   ahead of the old CAK's latest SAK ([`MkaKeys::prefer_first_an`]), so the receive SAs of
//!   both CAKs are installed side by side and no peer's frames are dropped while it switches.
//!   Every member uses the same priorities, so the key server of the new CAK is the one of the
//!   old, and it knows the old ANs.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

use anyhow::Result;
use ivnsec_core::profile::MacsecProfile;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_crypto::ProviderChoice;
use serde_json::{Value, json};

use super::mka::{MkaKeys, MkaSettings};
use super::{KeySource, SecyControl};
use crate::error::{env_error, usage};
use crate::keys::psk::Psk;
use crate::pki::keyserver::{Answer, Client, SegmentKey};

/// A watch connection that said nothing (not even a ping) for this long is opened again.
pub const SILENT: Duration = Duration::from_secs(15);
/// The old CAK's SAs are retired at the latest this long after a new CAK arrived.
pub const HANDOVER_LIMIT: Duration = Duration::from_secs(30);

/// Where the key server is and who this ECU is.
#[derive(Clone)]
pub struct Remote {
    pub addr: String,
    /// The name the server's certificate must carry (default `keyserver`).
    pub server_name: String,
    pub tls: Arc<rustls::ClientConfig>,
    /// The segment to run MKA on (needed when the ECU is in several).
    pub segment: Option<String>,
}

/// Picks the segment's key out of an answer.
fn pick(keys: Vec<SegmentKey>, segment: Option<&str>, addr: &str) -> Result<SegmentKey> {
    let mut keys = keys;
    match segment {
        Some(s) => keys.into_iter().find(|k| k.segment == s).ok_or_else(|| {
            usage(format!(
                "the key server {addr} gave no key for segment {s}: this ECU is not a member"
            ))
        }),
        None if keys.len() == 1 => Ok(keys.remove(0)),
        None if keys.is_empty() => Err(usage(format!(
            "the key server {addr} gave this ECU no key: it is in no segment"
        ))),
        None => Err(usage(format!(
            "this ECU is in several segments ({}); choose one with --segment",
            keys.iter()
                .map(|k| k.segment.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The first CAK, before anything is created. An unreachable server is an environment error
/// (exit 3), a refusal a usage error (exit 2: the certificate, the CA or the segment).
pub fn fetch_initial(r: &Remote) -> Result<SegmentKey> {
    let mut c = Client::connect(
        r.tls.clone(),
        &r.addr,
        &r.server_name,
        Duration::from_secs(5),
    )
    .map_err(|e| {
        let msg = format!("{e:#}");
        if msg.contains("connecting to") {
            env_error(format!(
                "--keyserver {}: {msg}; is `ivnsec keyserver` running there and reachable?",
                r.addr
            ))
        } else {
            usage(format!(
                "--keyserver {}: {msg}; check --ca (the vehicle's D/ca.pem), --cert and --key",
                r.addr
            ))
        }
    })?;
    let keys = c.get(r.segment.as_deref()).map_err(|e| {
        usage(format!(
            "--keyserver {}: refused ({e:#}); is --cert issued by the key server's CA, valid, \
             not revoked, and its ECU in a segment?",
            r.addr
        ))
    })?;
    pick(keys, r.segment.as_deref(), &r.addr)
}

/// The watch thread: pushes every key with a number above `last` into `tx`.
fn watch(
    r: Remote,
    mut last: u64,
    tx: Sender<SegmentKey>,
    stop: Arc<AtomicBool>,
    fails: Arc<AtomicU64>,
) {
    let mut backoff = Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) {
        let res = (|| -> Result<()> {
            let mut c = Client::connect(
                r.tls.clone(),
                &r.addr,
                &r.server_name,
                Duration::from_secs(5),
            )?;
            let req = match &r.segment {
                Some(s) => json!({"op": "watch", "segment": s}),
                None => json!({"op": "watch"}),
            };
            c.send(&req.to_string())?;
            c.set_timeout(Duration::from_millis(500))?;
            let mut heard = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                match c.recv()? {
                    Some(Answer::Keys(k)) => {
                        heard = Instant::now();
                        backoff = Duration::from_secs(1);
                        let k = pick(k, r.segment.as_deref(), &r.addr)?;
                        if k.key.number > last {
                            last = k.key.number;
                            if tx.send(k).is_err() {
                                return Ok(());
                            }
                        }
                    }
                    Some(Answer::Ping) => heard = Instant::now(),
                    None if heard.elapsed() > SILENT => anyhow::bail!("silent for {SILENT:?}"),
                    None => {}
                }
            }
            Ok(())
        })();
        if let Err(e) = res {
            fails.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "ivnsec: key server {}: {e:#}; trying again in {backoff:?}",
                r.addr
            );
            let t = Instant::now();
            while t.elapsed() < backoff && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

/// How to make a participant on a CAK.
pub struct Params {
    pub profile: MacsecProfile,
    pub iface: String,
    pub sci: Sci,
    pub settings: MkaSettings,
    pub state_dir: PathBuf,
    pub reserve_block: u64,
    pub provider: ProviderChoice,
    /// The used-SAK record of every participant (beside the member's private key:
    /// `used_sak::record_path(--key)`; docs/mka.md).
    pub sak_record: PathBuf,
}

struct Old {
    mka: MkaKeys,
    number: u64,
    since: Instant,
    /// When the new participant was first seen transmitting under its own SAK.
    new_tx: Option<Instant>,
}

/// The key source of `macsec up --keyserver`.
pub struct KeyserverKeys {
    remote: Remote,
    params: Params,
    number: u64,
    segment: String,
    ckn: Vec<u8>,
    current: MkaKeys,
    old: Option<Old>,
    rx: Receiver<SegmentKey>,
    stop: Arc<AtomicBool>,
    fails: Arc<AtomicU64>,
    changes: u64,
}

fn participant(p: &Params, k: &SegmentKey, addr: &str) -> Result<MkaKeys> {
    let psk = Psk::new(&k.key.cak, &k.key.ckn, &format!("key server {addr}"))?;
    MkaKeys::new(
        p.profile,
        PathBuf::from(format!("keyserver:{addr}/{}#{}", k.segment, k.key.number)),
        p.sak_record.clone(),
        &psk,
        &p.iface,
        p.sci,
        p.settings,
        p.state_dir.clone(),
        p.reserve_block,
        p.provider,
    )
}

impl KeyserverKeys {
    /// MKA on `first` (from [`fetch_initial`]); the watch thread starts with [`KeySource::start`].
    pub fn new(remote: Remote, params: Params, first: SegmentKey) -> Result<KeyserverKeys> {
        let current = participant(&params, &first, &remote.addr)?;
        let (_tx, rx) = channel();
        Ok(KeyserverKeys {
            number: first.key.number,
            segment: first.segment.clone(),
            ckn: first.key.ckn.clone(),
            remote,
            params,
            current,
            old: None,
            rx,
            stop: Arc::new(AtomicBool::new(false)),
            fails: Arc::new(AtomicU64::new(0)),
            changes: 0,
        })
    }

    fn switch(&mut self, k: SegmentKey, ctl: &SecyControl) -> Result<()> {
        let mut next = participant(&self.params, &k, &self.remote.addr)?;
        // The new CAK's first SAK on an AN the old one's SAKs do not use (two ahead of its
        // latest: the next free after it is where the old one would rekey to), so the old SAs
        // stay whole until they are retired.
        let used = self.current.ans_in_use();
        let first = match used.first() {
            Some(&latest) => (0..4)
                .map(|i| (latest + 2 + i) % 4)
                .find(|a| !used.contains(a))
                .unwrap_or(0),
            None => 0,
        };
        next.prefer_first_an(first);
        next.start(ctl)?;
        let mut prev = std::mem::replace(&mut self.current, next);
        prev.close();
        // A CAK replaced before the previous handover ended: that one's SAs go now.
        if let Some(mut o) = self.old.take() {
            o.mka.retire_superseded(ctl, &self.current);
        }
        ctl.shared().emit(
            "cak_changed",
            json!({"segment": k.segment, "number": k.key.number, "ckn": hex::encode(&k.key.ckn),
                   "previous": self.number}),
        );
        self.old = Some(Old {
            mka: prev,
            number: self.number,
            since: Instant::now(),
            new_tx: None,
        });
        self.number = k.key.number;
        self.ckn = k.key.ckn.clone();
        self.changes += 1;
        Ok(())
    }
}

impl Drop for KeyserverKeys {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl KeySource for KeyserverKeys {
    fn kind(&self) -> &'static str {
        "mka"
    }

    fn start(&mut self, ctl: &SecyControl) -> Result<()> {
        let (tx, rx) = channel();
        self.rx = rx;
        let (r, last, stop, fails) = (
            self.remote.clone(),
            self.number,
            self.stop.clone(),
            self.fails.clone(),
        );
        std::thread::Builder::new()
            .name("keyserver-watch".into())
            .spawn(move || watch(r, last, tx, stop, fails))
            .map_err(|e| anyhow::anyhow!("starting the key server watch: {e}"))?;
        ctl.shared().emit(
            "cak_fetched",
            json!({"keyserver": self.remote.addr, "segment": self.segment,
                   "number": self.number, "ckn": hex::encode(&self.ckn)}),
        );
        self.current.start(ctl)
    }

    fn poll(&mut self, now: Instant, ctl: &SecyControl) -> Result<()> {
        loop {
            match self.rx.try_recv() {
                Ok(k) if k.key.number > self.number => self.switch(k, ctl)?,
                Ok(_) => {}
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
            }
        }
        self.current.poll(now, ctl)?;
        let retire_after = self.params.settings.sak_retire;
        let done = match self.old.as_mut() {
            None => false,
            Some(o) => {
                if o.new_tx.is_none() && self.current.tx_in_use() {
                    o.new_tx = Some(now);
                }
                o.new_tx
                    .is_some_and(|t| now.duration_since(t) >= retire_after)
                    || now.duration_since(o.since) >= HANDOVER_LIMIT
            }
        };
        if done && let Some(mut o) = self.old.take() {
            o.mka.retire_superseded(ctl, &self.current);
            ctl.shared().emit(
                "cak_retired",
                json!({"segment": self.segment, "number": o.number}),
            );
        }
        Ok(())
    }

    fn wait(&mut self, max: Duration) {
        self.current.wait(max)
    }

    fn describe(&self, ctl: &SecyControl) -> Value {
        let mut v = self.current.describe(ctl);
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "keyserver".into(),
                json!({
                    "addr": self.remote.addr,
                    "segment": self.segment,
                    "cak_number": self.number,
                    "ckn": hex::encode(&self.ckn),
                    "cak_changes": self.changes,
                    "handover": self.old.as_ref().map(|o| json!({"from": o.number})),
                    "connection_failures": self.fails.load(Ordering::Relaxed),
                }),
            );
        }
        v
    }
}
