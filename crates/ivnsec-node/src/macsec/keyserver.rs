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
//!   ahead of the old CAK's latest SAK ([`super::mka::MkaKeys::prefer_first_an`]), so the receive SAs of
//!   both CAKs are installed side by side and no peer's frames are dropped while it switches.
//!   Every member uses the same priorities, so the key server of the new CAK is the one of the
//!   old, and it knows the old ANs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Value, json};

pub use super::chain::Params;
use super::chain::{CaChain, Stack, participant};
use super::{KeySource, SecyControl};
use crate::error::{env_error, usage};
use crate::keys::psk::Psk;
use crate::pki::keyserver::{Answer, Client, SegmentKey};

/// A watch connection that said nothing (not even a ping) for this long is opened again.
pub const SILENT: Duration = Duration::from_secs(15);
pub use super::chain::HANDOVER_LIMIT;

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

/// The key source of `macsec up --keyserver`.
pub struct KeyserverKeys {
    remote: Remote,
    number: u64,
    segment: String,
    chain: CaChain,
    rx: Receiver<SegmentKey>,
    stop: Arc<AtomicBool>,
    fails: Arc<AtomicU64>,
}

fn psk_of(k: &SegmentKey, addr: &str) -> Result<Psk> {
    Psk::new(&k.key.cak, &k.key.ckn, &format!("key server {addr}"))
}

/// The label of a key server CAK in the chain (its number).
fn label(number: u64) -> String {
    number.to_string()
}

fn source_name(addr: &str, k: &SegmentKey) -> String {
    format!("keyserver:{addr}/{}#{}", k.segment, k.key.number)
}

impl KeyserverKeys {
    /// MKA on `first` (from [`fetch_initial`]); the watch thread starts with [`KeySource::start`].
    pub fn new(remote: Remote, params: Params, first: SegmentKey) -> Result<KeyserverKeys> {
        let psk = psk_of(&first, &remote.addr)?;
        let mka = participant(&params, &psk, &source_name(&remote.addr, &first))?;
        let chain = CaChain::with(
            params,
            Stack::Retire,
            mka,
            &label(first.key.number),
            &first.key.ckn,
        );
        let (_tx, rx) = channel();
        Ok(KeyserverKeys {
            number: first.key.number,
            segment: first.segment.clone(),
            remote,
            chain,
            rx,
            stop: Arc::new(AtomicBool::new(false)),
            fails: Arc::new(AtomicU64::new(0)),
        })
    }

    fn switch(&mut self, k: SegmentKey, ctl: &SecyControl) -> Result<()> {
        let psk = psk_of(&k, &self.remote.addr)?;
        let source = source_name(&self.remote.addr, &k);
        self.chain
            .switch(&psk, &label(k.key.number), &source, ctl)?;
        ctl.shared().emit(
            "cak_changed",
            json!({"segment": k.segment, "number": k.key.number, "ckn": hex::encode(&k.key.ckn),
                   "previous": self.number}),
        );
        self.number = k.key.number;
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
                   "number": self.number, "ckn": self.chain.ckn().map(hex::encode)}),
        );
        self.chain.start(ctl)
    }

    fn poll(&mut self, now: Instant, ctl: &SecyControl) -> Result<()> {
        loop {
            match self.rx.try_recv() {
                Ok(k) if k.key.number > self.number => self.switch(k, ctl)?,
                Ok(_) => {}
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => break,
            }
        }
        for old in self.chain.poll(now, ctl)? {
            ctl.shared().emit(
                "cak_retired",
                json!({"segment": self.segment, "number": old.parse::<u64>().unwrap_or(0)}),
            );
        }
        Ok(())
    }

    fn wait(&mut self, max: Duration) {
        self.chain.wait(max)
    }

    fn describe(&self, ctl: &SecyControl) -> Value {
        let mut v = self.chain.describe(ctl);
        let handover = v
            .get("ca")
            .and_then(|c| c.get("handover"))
            .and_then(|h| h.as_array())
            .and_then(|h| h.first())
            .and_then(|l| l.as_str())
            .and_then(|l| l.parse::<u64>().ok());
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "keyserver".into(),
                json!({
                    "addr": self.remote.addr,
                    "segment": self.segment,
                    "cak_number": self.number,
                    "ckn": self.chain.ckn().map(hex::encode),
                    "cak_changes": self.chain.changes(),
                    "handover": handover.map(|n| json!({"from": n})),
                    "connection_failures": self.fails.load(Ordering::Relaxed),
                }),
            );
        }
        v
    }
}
