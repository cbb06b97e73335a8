//! The key server (`ivnsec keyserver`, docs/keys.md): hands the CAK of each network segment
//! (an MKA connectivity association) to the ECUs of that segment after mutual TLS 1.3
//! authentication against the vehicle CA and its CRL, and rolls a segment's CAK when one of
//! its ECUs is revoked.
//!
//! - **TLS**: rustls with the aws-lc-rs provider, TLS 1.3 only, key exchange X25519MLKEM768
//!   (preferred) then X25519; a client certificate is required and verified against `D/ca.pem`
//!   and `D/crl.pem` (end-entity revocation). The ECU is the certificate's dNSName.
//! - **Protocol** (over TLS, both ways): one JSON object per line, at most [`MAX_LINE`] bytes
//!   ([`parse_request`]). `{"op":"get"}` (optionally `"segment":"NAME"`) answers the keys of
//!   the ECU's segments; `{"op":"watch"}` answers them too and then keeps the connection open:
//!   the server pushes the keys again whenever a CAK of one of those segments changes, and a
//!   `{"ping":true}` line every [`PING_EVERY`] otherwise. An answer is
//!   `{"ok":true,"ecu":"ecu1","keys":[{"segment":"chassis","number":3,"ckn":"…","cak":"…"}]}`
//!   or `{"ok":false,"error":"…"}`.
//! - **Refusals** are counted by reason ([`REASONS`]) and logged on stderr (one JSON line,
//!   never a key), at most [`LOG_BURST`] lines a second; the rest of a second's refusals are one
//!   `refused_summary` line with their counts by reason, so a flood costs log lines in
//!   proportion to time, not to connections.
//! - **Connections in two stages** (docs/keys.md "Under a flood"): one thread accepts and
//!   drives every TLS handshake on non-blocking sockets under one `poll` (pre-handshake slots,
//!   [`Limits::max_pending`], at most [`Limits::max_per_address`] from one source, each given
//!   [`Limits::handshake_timeout`]); a connection that completed mutual TLS moves to a thread
//!   of its own (authenticated slots, [`Limits::max_authenticated`]). When pre-handshake slots
//!   are full, a new connection evicts the oldest one that has not yet sent a complete
//!   ClientHello (else the oldest): idle and slow clients cannot keep an ECU out, and they
//!   never take an authenticated slot.
//! - **One server per state file**: an exclusive `flock` on `STATE.lock` for the server's life
//!   (the file names the holder's pid and listen address); a second server exits 2.
//! - **Identity**: the certificate's one dNSName; a certificate with several is refused
//!   (`ambiguous_identity`), it never picks one of them.
//! - **State** (each segment's CAK, CKN, number and members, and the revoked serials already
//!   acted on) is written atomically with mode 0600 before a new CAK is handed out, and read
//!   again at start: a restarted server hands out the same CAKs, and a CAK's number only ever
//!   grows, so no old CAK is ever handed out as new.
//! - **Revocation**: `D/crl.pem` is watched ([`CRL_POLL`]); a newly revoked serial rolls the CAK
//!   of every segment of its ECU (fresh random CAK and CKN, number + 1), pushes it to the
//!   remaining members, and closes the revoked ECU's connections; the new CRL refuses its
//!   handshakes from then on.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConnection, RootCertStore, ServerConnection, StreamOwned};
use serde::Deserialize;
use serde_json::json;
use zeroize::{Zeroize, Zeroizing};

use super::{KEYSERVER_NAME, Layout, check_ecu_name, read_pem};
use crate::error::{env_error, usage};
use crate::keys::keyfile;
use crate::sync::lock;

mod client;
mod handshake;
mod refusals;
mod state;

pub use client::{Answer, Client, SegmentKey, client_tls, parse_answer};
use handshake::Handshakes;
use refusals::{RefusalLog, counters_json, log};
pub use state::lock_path;
use state::{Keys, Segment, load_state, lock_state, save_state, write_lock_owner};

/// Longest request or answer line (bytes, newline included).
pub const MAX_LINE: usize = 4096;
/// Default authenticated connections at once ([`Limits::max_authenticated`]); more are
/// refused (`too_many_connections`).
pub const MAX_CONNECTIONS: usize = 64;
/// Default [`Limits::handshake_timeout`].
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// Default [`Limits::max_pending`].
pub const MAX_PENDING: usize = 1024;
/// Default [`Limits::max_per_address`].
pub const MAX_PER_ADDRESS: usize = 8;
/// Refusal lines logged in one second at most; the rest are summed in one summary line.
pub const LOG_BURST: u32 = 5;
/// A watching connection gets a `{"ping":true}` line this often when nothing changed.
pub const PING_EVERY: Duration = Duration::from_secs(5);
/// How often `D/crl.pem` is read for new revocations.
pub const CRL_POLL: Duration = Duration::from_millis(250);
/// After the handshake: the request must arrive within this, and a write must not block longer.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest segments file and state file.
pub const MAX_SEGMENTS_FILE: u64 = 64 * 1024;
pub const MAX_STATE_FILE: u64 = 1 << 20;
/// CAK length handed out (128 bits: every MACsec cipher suite of MKA takes it).
pub const CAK_LEN: usize = 16;
pub const CKN_LEN: usize = 16;

/// The reasons a connection is refused, in the order the counters are shown.
///
/// - `handshake_timeout`: no complete TLS handshake within [`Limits::handshake_timeout`];
/// - `evicted`: a pre-handshake connection closed to give its slot to a newer one (all
///   [`Limits::max_pending`] slots taken, or no descriptor left);
/// - `address_limit`: the same, because its source had [`Limits::max_per_address`] pending;
/// - `ambiguous_identity`: a certificate with more than one dNSName.
pub const REASONS: [&str; 14] = [
    "no_certificate",
    "unknown_ca",
    "expired",
    "not_yet_valid",
    "revoked",
    "bad_certificate",
    "not_a_member",
    "bad_request",
    "too_many_connections",
    "tls_error",
    "handshake_timeout",
    "evicted",
    "address_limit",
    "ambiguous_identity",
];

/// The key server's TLS provider: aws-lc-rs, key exchange X25519MLKEM768 then X25519.
pub fn provider() -> Arc<CryptoProvider> {
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    p.kx_groups = vec![
        rustls::crypto::aws_lc_rs::kx_group::X25519MLKEM768,
        rustls::crypto::aws_lc_rs::kx_group::X25519,
    ];
    Arc::new(p)
}

// ---------------------------------------------------------------------------------------------
// Requests

/// A request of a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The keys of the ECU's segments (or of one).
    Get { segment: Option<String> },
    /// As `Get`, then a push whenever they change.
    Watch { segment: Option<String> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    op: String,
    segment: Option<String>,
}

/// Parses one request line (without or with its newline). Hostile input: never panics,
/// refuses more than [`MAX_LINE`] bytes, anything but one JSON object of the known keys, and
/// a segment name that is not a DNS label.
pub fn parse_request(line: &[u8]) -> std::result::Result<Request, String> {
    if line.len() > MAX_LINE {
        return Err(format!("request longer than {MAX_LINE} bytes"));
    }
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let raw: RawRequest =
        serde_json::from_slice(line).map_err(|e| format!("not a request: {e}"))?;
    if let Some(s) = &raw.segment {
        check_ecu_name(s).map_err(|_| "bad segment name".to_string())?;
    }
    match raw.op.as_str() {
        "get" => Ok(Request::Get {
            segment: raw.segment,
        }),
        "watch" => Ok(Request::Watch {
            segment: raw.segment,
        }),
        _ => Err("unknown op (expected get or watch)".to_string()),
    }
}

/// Reads one line of at most [`MAX_LINE`] bytes into `buf` (which keeps what followed it).
/// `Ok(None)`: no complete line yet (timeout); `Err`: too long, end of stream or I/O error.
fn read_line(r: &mut impl Read, buf: &mut Vec<u8>) -> std::result::Result<Option<Vec<u8>>, String> {
    loop {
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            // Copied out and drained in place: `buf` keeps its one allocation (a client wipes
            // it, spare capacity included, when dropped).
            let line = buf[..=i].to_vec();
            buf.drain(..=i);
            return Ok(Some(line));
        }
        if buf.len() >= MAX_LINE {
            return Err(format!("line longer than {MAX_LINE} bytes"));
        }
        let mut chunk = [0u8; 1024];
        let want = chunk.len().min(MAX_LINE - buf.len());
        match r.read(&mut chunk[..want]) {
            Ok(0) => return Err("connection closed".to_string()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(None);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Segments and CAKs

/// One segment of the segments file.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SegmentDef {
    pub name: String,
    pub ecus: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SegmentsFile {
    segment: Vec<SegmentDef>,
}

/// Reads and checks the segments file (TOML, `[[segment]]` tables with `name` and `ecus`).
pub fn load_segments(path: &Path) -> Result<Vec<SegmentDef>> {
    let file = path.display();
    let (text, _) = keyfile::read_secret(
        path,
        "segments file",
        MAX_SEGMENTS_FILE,
        "TOML: [[segment]] name = \"chassis\" ecus = [\"ecu1\", \"ecu2\"]",
    )?;
    let f: SegmentsFile = toml::from_str(&text).map_err(|e| {
        usage(format!(
            "segments file {file}: {} (expected [[segment]] tables with `name` and `ecus`)",
            e.message()
        ))
    })?;
    if f.segment.is_empty() {
        return Err(usage(format!("segments file {file}: no [[segment]]")));
    }
    let mut names = BTreeSet::new();
    for (i, s) in f.segment.iter().enumerate() {
        check_ecu_name(&s.name)
            .map_err(|e| usage(format!("segments file {file}: segment[{i}].name: {e:#}")))?;
        if !names.insert(&s.name) {
            return Err(usage(format!(
                "segments file {file}: segment {} appears twice",
                s.name
            )));
        }
        if s.ecus.is_empty() {
            return Err(usage(format!(
                "segments file {file}: segment {} has no ecus",
                s.name
            )));
        }
        let mut seen = BTreeSet::new();
        for e in &s.ecus {
            check_ecu_name(e).map_err(|err| {
                usage(format!("segments file {file}: segment {}: {err:#}", s.name))
            })?;
            if !seen.insert(e) {
                return Err(usage(format!(
                    "segments file {file}: segment {}: ECU {e} listed twice",
                    s.name
                )));
            }
        }
    }
    Ok(f.segment)
}

/// A CAK with its name and number. The CAK is zeroed when dropped; `Debug` hides it.
#[derive(Clone)]
pub struct Cak {
    pub number: u64,
    pub ckn: Vec<u8>,
    pub cak: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for Cak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cak")
            .field("number", &self.number)
            .field("ckn", &hex::encode(&self.ckn))
            .field("cak", &format_args!("<{} bytes>", self.cak.len()))
            .finish()
    }
}

impl Cak {
    fn fresh(number: u64) -> Result<Cak> {
        let mut cak = Zeroizing::new(vec![0u8; CAK_LEN]);
        let mut ckn = vec![0u8; CKN_LEN];
        getrandom::fill(&mut cak).map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
        getrandom::fill(&mut ckn).map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
        Ok(Cak { number, ckn, cak })
    }
}

// ---------------------------------------------------------------------------------------------
// The server

/// Where the key server gets its files from and listens.
#[derive(Clone, Debug)]
pub struct Config {
    pub pki: PathBuf,
    pub listen: String,
    pub segments: PathBuf,
    /// Default `D/keyserver-state.json`.
    pub state: Option<PathBuf>,
    /// The server's certificate and key; default the PKI's ECU named [`KEYSERVER_NAME`].
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub limits: Limits,
}

/// What keeps the key server serving its ECUs while others flood it with connections that
/// never authenticate (docs/keys.md "Under a flood").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// A TLS handshake must complete within this after the connection was accepted
    /// (`handshake_timeout`).
    pub handshake_timeout: Duration,
    /// Pre-handshake slots: connections whose handshake is under way, all sources together.
    /// A new connection beyond them evicts an older one (`evicted`).
    pub max_pending: usize,
    /// Pre-handshake slots one source address may hold (an IPv6 /64 is one source). A new
    /// connection beyond them evicts an older one of the same source (`address_limit`).
    pub max_per_address: usize,
    /// Authenticated slots: connections that completed mutual TLS (a watch holds one while it
    /// lasts). Beyond them an ECU is refused (`too_many_connections`).
    pub max_authenticated: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            handshake_timeout: HANDSHAKE_TIMEOUT,
            max_pending: MAX_PENDING,
            max_per_address: MAX_PER_ADDRESS,
            max_authenticated: MAX_CONNECTIONS,
        }
    }
}

impl Limits {
    /// Refuses values that would stop the server from serving anyone.
    pub fn check(&self) -> Result<()> {
        let t = self.handshake_timeout;
        if t < Duration::from_millis(100) || t > Duration::from_secs(60) {
            return Err(usage(format!(
                "--handshake-timeout {}: choose 0.1 to 60 seconds (default {})",
                t.as_secs_f64(),
                HANDSHAKE_TIMEOUT.as_secs_f64()
            )));
        }
        for (name, v, max, default) in [
            ("--max-pending", self.max_pending, 65_536, MAX_PENDING),
            (
                "--max-per-address",
                self.max_per_address,
                65_536,
                MAX_PER_ADDRESS,
            ),
            (
                "--max-authenticated",
                self.max_authenticated,
                4096,
                MAX_CONNECTIONS,
            ),
        ] {
            if v == 0 || v > max {
                return Err(usage(format!(
                    "{name} {v}: choose 1 to {max} (default {default})"
                )));
            }
        }
        Ok(())
    }
}

struct Shared {
    layout: Layout,
    limits: Limits,
    refusal_log: Mutex<RefusalLog>,
    log_suppressed: AtomicUsize,
    state_path: PathBuf,
    ca: CertificateDer<'static>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    tls: RwLock<Arc<rustls::ServerConfig>>,
    keys: Mutex<Keys>,
    changed: Condvar,
    revoked: RwLock<BTreeSet<Vec<u8>>>,
    counters: Mutex<BTreeMap<&'static str, u64>>,
    served: AtomicUsize,
    conns: AtomicUsize,
    stop: Arc<AtomicBool>,
}

impl Shared {
    fn keys(&self) -> MutexGuard<'_, Keys> {
        lock(&self.keys)
    }
}

/// The TLS server configuration: TLS 1.3, client certificates required against `ca` and `crl`.
pub fn server_tls(
    ca: &CertificateDer<'static>,
    crl: &CertificateRevocationListDer<'static>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ServerConfig>> {
    let p = provider();
    let mut roots = RootCertStore::empty();
    roots
        .add(ca.clone())
        .map_err(|e| usage(format!("the CA certificate cannot be a trust anchor: {e}")))?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), p.clone())
        .with_crls([crl.clone()])
        .only_check_end_entity_revocation()
        .build()
        .map_err(|e| usage(format!("client verifier: {e}")))?;
    let cfg = rustls::ServerConfig::builder_with_provider(p)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| anyhow::anyhow!("TLS 1.3: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| usage(format!("the key server's certificate and key: {e}")))?;
    Ok(Arc::new(cfg))
}

fn read_crl_der(l: &Layout) -> Result<(CertificateRevocationListDer<'static>, BTreeSet<Vec<u8>>)> {
    let pem = read_pem(&l.crl_pem(), "CRL")?;
    let der = CertificateRevocationListDer::from_pem_slice(pem.as_bytes())
        .map_err(|e| usage(format!("CRL {}: no PEM CRL ({e})", l.crl_pem().display())))?;
    let (_, entries) = super::parse_crl_pem(pem.as_bytes())
        .map_err(|e| usage(format!("CRL {}: {e}", l.crl_pem().display())))?;
    Ok((der, entries.into_iter().map(|r| r.serial).collect()))
}

pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let pem = read_pem(path, "certificate")?;
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| usage(format!("certificate {}: {e}", path.display())))?;
    if certs.is_empty() {
        return Err(usage(format!(
            "certificate {}: no PEM certificate in it",
            path.display()
        )));
    }
    Ok(certs)
}

/// Reads a private key for TLS (bounded, mode 0600).
pub fn read_tls_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    let (text, mode) = keyfile::read_secret(
        path,
        "private key file",
        super::MAX_PEM_FILE,
        "see `ivnsec pki --help`",
    )?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "private key file {} is readable by group or others (mode {:o}); refusing it: \
             `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| {
        usage(format!(
            "private key file {}: no PEM private key ({e})",
            path.display()
        ))
    })
}

/// A bound key server; [`KeyServer::run`] serves until `stop`.
pub struct KeyServer {
    listener: TcpListener,
    shared: Arc<Shared>,
    /// The lock on the state file, held while the server lives (released when dropped).
    _state_lock: std::fs::File,
}

/// Binds `listen` with a backlog deep enough for a burst of connections (the kernel caps it at
/// `net.core.somaxconn`), so that an ECU's SYN is not dropped while a flood is accepted.
fn bind_listener(listen: &str) -> Result<TcpListener> {
    use std::net::ToSocketAddrs;
    let addr = listen
        .to_socket_addrs()
        .map_err(|e| usage(format!("--listen {listen}: {e}")))?
        .next()
        .ok_or_else(|| usage(format!("--listen {listen}: no address")))?;
    let sock = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .map_err(|e| env_error(format!("--listen {listen}: socket: {e}")))?;
    let _ = sock.set_reuse_address(true);
    sock.bind(&addr.into())
        .map_err(|e| crate::error::bind_error("--listen", listen, &e))?;
    sock.listen(4096)
        .map_err(|e| env_error(format!("--listen {listen}: listen: {e}")))?;
    sock.set_nonblocking(true).context("listening socket")?;
    Ok(sock.into())
}

impl KeyServer {
    /// Takes the state file's lock, reads the PKI, the segments and the state, settles the
    /// CAKs (new segments get a fresh one; a segment that lost a member or whose member was
    /// revoked while the server was down gets a new one), writes the state, and binds `listen`.
    pub fn bind(cfg: &Config, stop: Arc<AtomicBool>) -> Result<KeyServer> {
        cfg.limits.check()?;
        let l = Layout::new(&cfg.pki);
        if !l.ca_pem().exists() {
            return Err(usage(format!(
                "--pki {}: no CA here ({} is missing); make one with `ivnsec pki init`",
                cfg.pki.display(),
                l.ca_pem().display()
            )));
        }
        let ca = read_certs(&l.ca_pem())?.remove(0);
        let (crl, revoked) = read_crl_der(&l)?;
        let cert_path = cfg
            .cert
            .clone()
            .unwrap_or_else(|| l.ecu_pem(KEYSERVER_NAME));
        let key_path = cfg.key.clone().unwrap_or_else(|| l.ecu_key(KEYSERVER_NAME));
        if !cert_path.exists() {
            return Err(usage(format!(
                "the key server's certificate {} is missing: issue it into the PKI with `ivnsec \
                 pki issue --dir {} --ecu {KEYSERVER_NAME}` (or give --cert and --key)",
                cert_path.display(),
                cfg.pki.display()
            )));
        }
        let chain = read_certs(&cert_path)?;
        let key = read_tls_key(&key_path)?;
        let tls = server_tls(&ca, &crl, chain.clone(), key.clone_key())?;
        let segments = load_segments(&cfg.segments)?;
        let state_path = cfg
            .state
            .clone()
            .unwrap_or_else(|| cfg.pki.join("keyserver-state.json"));
        let mut state_lock = lock_state(&state_path)?;
        let keys = settle(load_state(&state_path)?, &segments, &l, &revoked)?;
        save_state(&state_path, &keys)?;
        let listener = bind_listener(&cfg.listen)?;
        write_lock_owner(&mut state_lock, listener.local_addr().ok());
        let limits = fit_descriptors(&cfg.limits);
        for (name, s) in &keys.segments {
            log(
                "segment",
                json!({"segment": name, "number": s.cak.number, "ckn": hex::encode(&s.cak.ckn),
                       "members": s.members}),
            );
        }
        Ok(KeyServer {
            listener,
            _state_lock: state_lock,
            shared: Arc::new(Shared {
                layout: l,
                limits,
                refusal_log: Mutex::new(RefusalLog {
                    window: Instant::now(),
                    lines: 0,
                    suppressed: BTreeMap::new(),
                }),
                log_suppressed: AtomicUsize::new(0),
                state_path,
                ca,
                chain,
                key,
                tls: RwLock::new(tls),
                keys: Mutex::new(keys),
                changed: Condvar::new(),
                revoked: RwLock::new(revoked),
                counters: Mutex::new(BTreeMap::new()),
                served: AtomicUsize::new(0),
                conns: AtomicUsize::new(0),
                stop,
            }),
        })
    }

    pub fn local_addr(&self) -> Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// The limits in force (`max_pending` lowered where the descriptor limit is lower).
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// Refusals so far by reason (every reason of [`REASONS`], zeros included) and the number
    /// of requests answered with keys.
    pub fn counters(&self) -> serde_json::Value {
        counters_json(&self.shared)
    }

    /// The current CAK number of each segment.
    pub fn numbers(&self) -> BTreeMap<String, u64> {
        self.shared
            .keys()
            .segments
            .iter()
            .map(|(n, s)| (n.clone(), s.cak.number))
            .collect()
    }

    /// Serves until the stop flag is set; returns the counters.
    pub fn run(&self) -> Result<serde_json::Value> {
        let sh = self.shared.clone();
        let watcher = {
            let sh = sh.clone();
            std::thread::spawn(move || crl_watch(&sh))
        };
        let mut stage = Handshakes::default();
        while !sh.stop.load(Ordering::Relaxed) {
            stage.turn(&sh, &self.listener);
            sh.flush_refusal_log(false);
        }
        drop(stage);
        sh.flush_refusal_log(true);
        sh.changed.notify_all();
        let _ = watcher.join();
        Ok(counters_json(&sh))
    }
}

/// Descriptors the server may need: every pre-handshake and authenticated slot, and some for
/// the listener, the state, the CRL and the standard streams.
fn fit_descriptors(want: &Limits) -> Limits {
    const SPARE: usize = 64;
    let need = (want.max_pending + want.max_authenticated + SPARE) as u64;
    let have = ivnsec_net::sys::raise_open_files_limit(need).unwrap_or(1024);
    let mut l = want.clone();
    if have < need {
        let room = (have as usize).saturating_sub(want.max_authenticated + SPARE);
        l.max_pending = room.clamp(16, want.max_pending);
        log(
            "limits",
            json!({"max_pending": l.max_pending, "asked": want.max_pending,
                   "why": format!("the open-files limit is {have} (ulimit -n); raise it for more")}),
        );
    }
    l
}

/// The CAKs at start: the state's where the segment is unchanged, fresh ones (number above any
/// the state had) where the segment is new, lost a member, or has a member revoked since.
fn settle(
    prev: Option<Keys>,
    segments: &[SegmentDef],
    l: &Layout,
    revoked: &BTreeSet<Vec<u8>>,
) -> Result<Keys> {
    let prev = prev.unwrap_or_default();
    let names = super::serial_names(l);
    let newly: BTreeSet<String> = revoked
        .iter()
        .filter(|s| !prev.revoked_seen.contains(&hex::encode(s)))
        .filter_map(|s| names.get(s).cloned())
        .collect();
    let mut keys = Keys {
        revoked_seen: revoked.iter().map(hex::encode).collect(),
        generation: 1,
        ..Keys::default()
    };
    for def in segments {
        let members: BTreeSet<String> = def.ecus.iter().cloned().collect();
        let cak = match prev.segments.get(&def.name) {
            Some(old)
                if old.members.is_subset(&members)
                    && !old.members.iter().any(|m| newly.contains(m)) =>
            {
                old.cak.clone()
            }
            Some(old) => {
                log(
                    "cak_rolled",
                    json!({"segment": def.name, "number": old.cak.number + 1,
                           "reason": "membership changed or a member revoked while stopped"}),
                );
                Cak::fresh(old.cak.number + 1)?
            }
            None => Cak::fresh(1)?,
        };
        keys.segments
            .insert(def.name.clone(), Segment { members, cak });
    }
    Ok(keys)
}

/// Watches `D/crl.pem`; on a new revocation: new TLS config, CAKs rolled, state written, the
/// revoked ECU's connections closed (they check the revoked set), watchers woken.
fn crl_watch(sh: &Shared) {
    let mut last: Option<(std::time::SystemTime, u64)> = None;
    while !sh.stop.load(Ordering::Relaxed) {
        std::thread::sleep(CRL_POLL);
        let Ok(meta) = std::fs::metadata(sh.layout.crl_pem()) else {
            continue;
        };
        let stamp = (meta.modified().unwrap_or(std::time::UNIX_EPOCH), meta.len());
        if last == Some(stamp) {
            continue;
        }
        let (crl, revoked) = match read_crl_der(&sh.layout) {
            Ok(x) => x,
            Err(e) => {
                log("crl_error", json!({"error": format!("{e:#}")}));
                last = Some(stamp);
                continue;
            }
        };
        last = Some(stamp);
        match server_tls(&sh.ca, &crl, sh.chain.clone(), sh.key.clone_key()) {
            Ok(t) => *sh.tls.write().unwrap_or_else(|e| e.into_inner()) = t,
            Err(e) => {
                log("crl_error", json!({"error": format!("{e:#}")}));
                continue;
            }
        }
        *sh.revoked.write().unwrap_or_else(|e| e.into_inner()) = revoked.clone();
        let mut keys = sh.keys();
        let fresh: Vec<Vec<u8>> = revoked
            .iter()
            .filter(|s| !keys.revoked_seen.contains(&hex::encode(s)))
            .cloned()
            .collect();
        if fresh.is_empty() {
            continue;
        }
        let names = super::serial_names(&sh.layout);
        let mut next = keys.clone();
        let mut rolled = Vec::new();
        for s in &fresh {
            next.revoked_seen.insert(hex::encode(s));
            let ecu = names.get(s).cloned();
            let mut segs = Vec::new();
            if let Some(ecu) = &ecu {
                for (name, seg) in next.segments.iter_mut() {
                    if seg.members.contains(ecu) {
                        match Cak::fresh(seg.cak.number + 1) {
                            Ok(c) => seg.cak = c,
                            Err(e) => {
                                log("error", json!({"error": format!("{e:#}")}));
                                continue;
                            }
                        }
                        segs.push((name.clone(), seg.cak.number));
                    }
                }
            }
            rolled.push(json!({"serial": hex::encode(s), "ecu": ecu, "rolled": segs}));
        }
        next.generation += 1;
        // The new CAKs are durable before anyone gets them.
        if let Err(e) = save_state(&sh.state_path, &next) {
            log(
                "state_error",
                json!({"error": format!("{e:#}"), "what": "not rolling; the old CAKs stay"}),
            );
            continue;
        }
        *keys = next;
        drop(keys);
        for r in rolled {
            log("revoked", r);
        }
        sh.changed.notify_all();
    }
}

/// Why a handshake failed, as a counter name.
fn classify_tls(e: &rustls::Error) -> &'static str {
    use rustls::CertificateError as C;
    match e {
        rustls::Error::NoCertificatesPresented => "no_certificate",
        rustls::Error::InvalidCertificate(c) => match c {
            C::Revoked => "revoked",
            C::Expired | C::ExpiredContext { .. } => "expired",
            C::NotValidYet | C::NotValidYetContext { .. } => "not_yet_valid",
            C::UnknownIssuer | C::BadSignature => "unknown_ca",
            _ => "bad_certificate",
        },
        _ => "tls_error",
    }
}

fn keys_line(ecu: &str, keys: &Keys, only: Option<&str>, push: bool) -> Zeroizing<String> {
    use std::fmt::Write as _;
    // Room for everything up front (a String that grew leaves copies of the CAKs behind).
    let room = 128
        + ecu.len()
        + keys
            .segments
            .keys()
            .map(|n| 160 + 2 * n.len())
            .sum::<usize>();
    let mut out = Zeroizing::new(String::with_capacity(room));
    let _ = write!(
        &mut *out,
        "{{\"ok\":true,\"push\":{push},\"ecu\":{},\"keys\":[",
        json!(ecu)
    );
    let mut first = true;
    for (name, s) in &keys.segments {
        if !s.members.contains(ecu) || only.is_some_and(|o| o != name) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        let cak = Zeroizing::new(hex::encode(&*s.cak.cak));
        let _ = write!(
            &mut *out,
            "{{\"segment\":{},\"number\":{},\"ckn\":\"{}\",\"cak\":\"{}\"}}",
            json!(name),
            s.cak.number,
            hex::encode(&s.cak.ckn),
            *cak
        );
    }
    out.push_str("]}\n");
    out
}

/// The numbers of the ECU's segments (what a watcher compares).
fn numbers_of(ecu: &str, keys: &Keys, only: Option<&str>) -> Vec<(String, u64)> {
    keys.segments
        .iter()
        .filter(|(n, s)| s.members.contains(ecu) && only.is_none_or(|o| o == *n))
        .map(|(n, s)| (n.clone(), s.cak.number))
        .collect()
}

fn error_line(error: &str) -> String {
    format!("{}\n", json!({"ok": false, "error": error}))
}

/// An authenticated connection (its own thread): one request, the answer, and for a watch
/// the pushes until it ends.
fn serve(
    sh: &Shared,
    conn: ServerConnection,
    sock: TcpStream,
    peer: SocketAddr,
    ecu: &str,
    serial: Vec<u8>,
) {
    let _ = sock.set_nonblocking(false);
    let _ = sock.set_read_timeout(Some(IO_TIMEOUT));
    let _ = sock.set_write_timeout(Some(IO_TIMEOUT));
    let ecu = ecu.to_string();
    let mut stream = StreamOwned::new(conn, sock);
    if is_revoked(sh, &serial) {
        sh.refuse(
            peer,
            "revoked",
            "revoked after its handshake began",
            Some(&ecu),
        );
        return;
    }
    let mut buf = Vec::new();
    let line = match read_line(&mut stream, &mut buf) {
        Ok(Some(l)) => l,
        Ok(None) => {
            sh.refuse(peer, "bad_request", "no request in time", Some(&ecu));
            return;
        }
        Err(e) => {
            let _ = stream.write_all(error_line("bad_request").as_bytes());
            let _ = stream.flush();
            sh.refuse(peer, "bad_request", &e, Some(&ecu));
            return;
        }
    };
    let (watch, only) = match parse_request(&line) {
        Ok(Request::Get { segment }) => (false, segment),
        Ok(Request::Watch { segment }) => (true, segment),
        Err(e) => {
            let _ = stream.write_all(error_line("bad_request").as_bytes());
            let _ = stream.flush();
            sh.refuse(peer, "bad_request", &e, Some(&ecu));
            return;
        }
    };
    // Membership after the request: the client always reads why it gets nothing.
    let member = sh
        .keys()
        .segments
        .values()
        .any(|s| s.members.contains(&ecu));
    if !member {
        let _ = stream.write_all(error_line("not_a_member").as_bytes());
        stream.conn.send_close_notify();
        let _ = stream.flush();
        sh.refuse(peer, "not_a_member", "in no segment", Some(&ecu));
        return;
    }
    let (line, last, generation) = {
        let keys = sh.keys();
        if let Some(o) = &only
            && keys
                .segments
                .get(o)
                .is_none_or(|s| !s.members.contains(&ecu))
        {
            drop(keys);
            let _ = stream.write_all(error_line("not_a_member").as_bytes());
            let _ = stream.flush();
            sh.refuse(
                peer,
                "not_a_member",
                &format!("not in segment {o}"),
                Some(&ecu),
            );
            return;
        }
        (
            keys_line(&ecu, &keys, only.as_deref(), false),
            numbers_of(&ecu, &keys, only.as_deref()),
            keys.generation,
        )
    };
    if stream
        .write_all(line.as_bytes())
        .and_then(|_| stream.flush())
        .is_err()
    {
        return;
    }
    sh.served.fetch_add(1, Ordering::Relaxed);
    log(
        "served",
        json!({"peer": peer.to_string(), "ecu": ecu, "watch": watch,
               "numbers": last.iter().map(|(n, v)| json!({"segment": n, "number": v})).collect::<Vec<_>>()}),
    );
    if !watch {
        stream.conn.send_close_notify();
        let _ = stream.flush();
        return;
    }
    push_changes(
        sh,
        &mut stream,
        peer,
        &ecu,
        &serial,
        only.as_deref(),
        last,
        generation,
    );
}

/// Whether the certificate with `serial` is revoked now.
fn is_revoked(sh: &Shared, serial: &[u8]) -> bool {
    sh.revoked
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(serial)
}

/// A watch after its first answer: the ECU's keys again whenever their numbers change, a ping
/// when nothing was sent for [`PING_EVERY`]; it ends on stop, on revocation (the connection
/// closed without a word) or when the ECU is gone.
#[allow(clippy::too_many_arguments)]
fn push_changes(
    sh: &Shared,
    stream: &mut StreamOwned<ServerConnection, TcpStream>,
    peer: SocketAddr,
    ecu: &str,
    serial: &[u8],
    only: Option<&str>,
    mut last: Vec<(String, u64)>,
    mut generation: u64,
) {
    let mut next_ping = Instant::now() + PING_EVERY;
    loop {
        let keys = sh.keys();
        let (keys, _) = sh
            .changed
            .wait_timeout_while(keys, Duration::from_millis(200), |k| {
                k.generation == generation && !sh.stop.load(Ordering::Relaxed)
            })
            .unwrap_or_else(|e| e.into_inner());
        if sh.stop.load(Ordering::Relaxed) {
            drop(keys);
            stream.conn.send_close_notify();
            let _ = stream.flush();
            return;
        }
        if is_revoked(sh, serial) {
            drop(keys);
            // Nothing more for it: the connection ends without a word.
            let _ = stream.sock.shutdown(std::net::Shutdown::Both);
            sh.refuse(
                peer,
                "revoked",
                "connection closed on revocation",
                Some(ecu),
            );
            return;
        }
        let mut out: Option<Zeroizing<String>> = None;
        if keys.generation != generation {
            generation = keys.generation;
            let now = numbers_of(ecu, &keys, only);
            if now != last {
                last = now;
                out = Some(keys_line(ecu, &keys, only, true));
            }
        }
        drop(keys);
        let out = match out {
            Some(o) => o,
            None if Instant::now() >= next_ping => Zeroizing::new("{\"ping\":true}\n".into()),
            None => continue,
        };
        next_ping = Instant::now() + PING_EVERY;
        if stream
            .write_all(out.as_bytes())
            .and_then(|_| stream.flush())
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests;
