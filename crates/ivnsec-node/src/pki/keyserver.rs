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
//! - **Refusals** are logged on stderr (one JSON line, never a key) and counted by reason
//!   ([`REASONS`]).
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

/// Longest request or answer line (bytes, newline included).
pub const MAX_LINE: usize = 4096;
/// Connections served at once; more are refused (`too_many_connections`).
pub const MAX_CONNECTIONS: usize = 64;
/// A watching connection gets a `{"ping":true}` line this often when nothing changed.
pub const PING_EVERY: Duration = Duration::from_secs(5);
/// How often `D/crl.pem` is read for new revocations.
pub const CRL_POLL: Duration = Duration::from_millis(250);
/// A handshake or request must arrive within this.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest segments file and state file.
pub const MAX_SEGMENTS_FILE: u64 = 64 * 1024;
pub const MAX_STATE_FILE: u64 = 1 << 20;
/// CAK length handed out (128 bits: every MACsec cipher suite of MKA takes it).
pub const CAK_LEN: usize = 16;
pub const CKN_LEN: usize = 16;

/// The reasons a connection is refused, in the order the counters are shown.
pub const REASONS: [&str; 10] = [
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

#[derive(Clone, Debug)]
struct Segment {
    members: BTreeSet<String>,
    cak: Cak,
}

/// The key server's state: what the state file holds.
#[derive(Clone, Debug, Default)]
struct Keys {
    segments: BTreeMap<String, Segment>,
    /// Revoked serials (hex) already acted on.
    revoked_seen: BTreeSet<String>,
    /// Bumped on every change (watchers compare it).
    generation: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawState {
    version: u32,
    segments: BTreeMap<String, RawSeg>,
    revoked_seen: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeg {
    number: u64,
    ckn: String,
    cak: String,
    members: Vec<String>,
}

impl Drop for RawSeg {
    fn drop(&mut self) {
        self.cak.zeroize();
    }
}

fn load_state(path: &Path) -> Result<Option<Keys>> {
    if !path.exists() {
        return Ok(None);
    }
    let file = path.display();
    let (text, mode) = keyfile::read_secret(
        path,
        "key server state file",
        MAX_STATE_FILE,
        "it is written by `ivnsec keyserver`",
    )?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "key server state file {file} is readable by group or others (mode {:o}); it holds \
             every segment's CAK. Refusing it: `chmod 600 {file}`",
            mode & 0o777
        )));
    }
    let raw: RawState = serde_json::from_str(&text)
        .map_err(|e| usage(format!("key server state file {file}: {e}")))?;
    if raw.version != 1 {
        return Err(usage(format!(
            "key server state file {file}: version {} (this build reads 1)",
            raw.version
        )));
    }
    let mut keys = Keys {
        revoked_seen: raw.revoked_seen.into_iter().collect(),
        ..Keys::default()
    };
    for (name, s) in &raw.segments {
        let cak = Zeroizing::new(
            hex::decode(&s.cak)
                .map_err(|e| usage(format!("key server state file {file}: {name}.cak: {e}")))?,
        );
        let ckn = hex::decode(&s.ckn)
            .map_err(|e| usage(format!("key server state file {file}: {name}.ckn: {e}")))?;
        if cak.len() != CAK_LEN || ckn.is_empty() || ckn.len() > 32 {
            return Err(usage(format!(
                "key server state file {file}: segment {name}: bad CAK or CKN length"
            )));
        }
        keys.segments.insert(
            name.clone(),
            Segment {
                members: s.members.iter().cloned().collect(),
                cak: Cak {
                    number: s.number,
                    ckn,
                    cak,
                },
            },
        );
    }
    Ok(Some(keys))
}

fn render_state(keys: &Keys) -> Zeroizing<String> {
    use std::fmt::Write as _;
    // Room for everything up front: a String that grew would leave copies of the CAKs behind
    // in the buffers it gave up (only the last one is wiped).
    let room = 256
        + keys.revoked_seen.len() * 48
        + keys
            .segments
            .iter()
            .map(|(n, s)| 256 + 2 * n.len() + s.members.iter().map(|m| m.len() + 8).sum::<usize>())
            .sum::<usize>();
    let mut out = Zeroizing::new(String::with_capacity(room));
    out.push_str("{\"version\":1,\"segments\":{");
    for (i, (name, s)) in keys.segments.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let cak = Zeroizing::new(hex::encode(&*s.cak.cak));
        let members: Vec<&String> = s.members.iter().collect();
        let _ = write!(
            &mut *out,
            "{}:{{\"number\":{},\"ckn\":\"{}\",\"cak\":\"{}\",\"members\":{}}}",
            json!(name),
            s.cak.number,
            hex::encode(&s.cak.ckn),
            *cak,
            json!(members)
        );
    }
    let _ = writeln!(
        &mut *out,
        "}},\"revoked_seen\":{}}}",
        json!(keys.revoked_seen)
    );
    out
}

fn save_state(path: &Path, keys: &Keys) -> Result<()> {
    super::write_atomic(path, render_state(keys).as_bytes(), 0o600)
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
}

struct Shared {
    layout: Layout,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn log(event: &str, mut fields: serde_json::Value) {
    if let Some(o) = fields.as_object_mut() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        o.insert("time".into(), json!((t * 1e4).round() / 1e4));
        o.insert("event".into(), json!(event));
    }
    eprintln!("{fields}");
}

impl Shared {
    fn refuse(&self, peer: SocketAddr, reason: &'static str, detail: &str, ecu: Option<&str>) {
        let n = {
            let mut c = lock(&self.counters);
            let n = c.entry(reason).or_default();
            *n += 1;
            *n
        };
        log(
            "refused",
            json!({"peer": peer.to_string(), "reason": reason, "detail": detail, "ecu": ecu,
                   "count": n}),
        );
    }

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

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
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
}

impl KeyServer {
    /// Reads the PKI, the segments and the state, settles the CAKs (new segments get a fresh
    /// one; a segment that lost a member or whose member was revoked while the server was down
    /// gets a new one), writes the state, and binds `listen`.
    pub fn bind(cfg: &Config, stop: Arc<AtomicBool>) -> Result<KeyServer> {
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
        let keys = settle(load_state(&state_path)?, &segments, &l, &revoked)?;
        save_state(&state_path, &keys)?;
        let listener = TcpListener::bind(&cfg.listen).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AddrInUse
                || e.kind() == std::io::ErrorKind::PermissionDenied
            {
                env_error(format!(
                    "--listen {}: {e}; choose another address or port",
                    cfg.listen
                ))
            } else {
                usage(format!("--listen {}: {e}", cfg.listen))
            }
        })?;
        listener.set_nonblocking(true).context("listening socket")?;
        for (name, s) in &keys.segments {
            log(
                "segment",
                json!({"segment": name, "number": s.cak.number, "ckn": hex::encode(&s.cak.ckn),
                       "members": s.members}),
            );
        }
        Ok(KeyServer {
            listener,
            shared: Arc::new(Shared {
                layout: l,
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
        while !sh.stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((sock, peer)) => {
                    if sh.conns.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                        sh.refuse(peer, "too_many_connections", "", None);
                        drop(sock);
                        continue;
                    }
                    sh.conns.fetch_add(1, Ordering::Relaxed);
                    let sh2 = sh.clone();
                    std::thread::spawn(move || {
                        serve(&sh2, sock, peer);
                        sh2.conns.fetch_sub(1, Ordering::Relaxed);
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    log("accept_error", json!({"error": e.to_string()}));
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        sh.changed.notify_all();
        let _ = watcher.join();
        Ok(counters_json(&sh))
    }
}

fn counters_json(sh: &Shared) -> serde_json::Value {
    let c = lock(&sh.counters);
    let refused: serde_json::Map<String, serde_json::Value> = REASONS
        .iter()
        .map(|r| (r.to_string(), json!(c.get(r).copied().unwrap_or(0))))
        .collect();
    json!({"served": sh.served.load(Ordering::Relaxed), "refused": refused})
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
fn classify(e: &std::io::Error) -> (&'static str, String) {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    use rustls::CertificateError as C;
    let reason = match inner {
        Some(rustls::Error::NoCertificatesPresented) => "no_certificate",
        Some(rustls::Error::InvalidCertificate(c)) => match c {
            C::Revoked => "revoked",
            C::Expired | C::ExpiredContext { .. } => "expired",
            C::NotValidYet | C::NotValidYetContext { .. } => "not_yet_valid",
            C::UnknownIssuer | C::BadSignature => "unknown_ca",
            _ => "bad_certificate",
        },
        _ => "tls_error",
    };
    (reason, e.to_string())
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

fn serve(sh: &Shared, sock: TcpStream, peer: SocketAddr) {
    let _ = sock.set_nonblocking(false);
    let _ = sock.set_read_timeout(Some(IO_TIMEOUT));
    let _ = sock.set_write_timeout(Some(IO_TIMEOUT));
    let _ = sock.set_nodelay(true);
    let tls = sh.tls.read().unwrap_or_else(|e| e.into_inner()).clone();
    let mut conn = match ServerConnection::new(tls) {
        Ok(c) => c,
        Err(e) => {
            sh.refuse(peer, "tls_error", &e.to_string(), None);
            return;
        }
    };
    let mut sock = sock;
    while conn.is_handshaking() {
        if let Err(e) = conn.complete_io(&mut sock) {
            let (reason, detail) = classify(&e);
            sh.refuse(peer, reason, &detail, None);
            return;
        }
    }
    let Some(cert) = conn.peer_certificates().and_then(|c| c.first()) else {
        sh.refuse(peer, "no_certificate", "", None);
        return;
    };
    let info = match super::cert_info(cert) {
        Ok(i) => i,
        Err(e) => {
            sh.refuse(peer, "bad_certificate", &e, None);
            return;
        }
    };
    let Some(ecu) = info.dns_names.first().cloned() else {
        sh.refuse(
            peer,
            "bad_certificate",
            "no dNSName in the certificate",
            None,
        );
        return;
    };
    let serial = info.serial.clone();
    let mut stream = StreamOwned::new(conn, sock);
    let is_revoked = |sh: &Shared| {
        sh.revoked
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&serial)
    };
    if is_revoked(sh) {
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
    let (line, mut last, mut generation) = {
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
        if is_revoked(sh) {
            drop(keys);
            // Nothing more for it: the connection ends without a word.
            let _ = stream.sock.shutdown(std::net::Shutdown::Both);
            sh.refuse(
                peer,
                "revoked",
                "connection closed on revocation",
                Some(&ecu),
            );
            return;
        }
        let mut out: Option<Zeroizing<String>> = None;
        if keys.generation != generation {
            generation = keys.generation;
            let now = numbers_of(&ecu, &keys, only.as_deref());
            if now != last {
                last = now;
                out = Some(keys_line(&ecu, &keys, only.as_deref(), true));
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

// ---------------------------------------------------------------------------------------------
// The client

/// The key of one segment as a client received it (the CAK zeroed when dropped).
#[derive(Clone, Debug)]
pub struct SegmentKey {
    pub segment: String,
    pub key: Cak,
}

/// A client's TLS configuration: TLS 1.3, the server verified against `ca`, our certificate.
pub fn client_tls(ca: &Path, cert: &Path, key: &Path) -> Result<Arc<rustls::ClientConfig>> {
    let mut roots = RootCertStore::empty();
    for c in read_certs(ca)? {
        roots
            .add(c)
            .map_err(|e| usage(format!("--ca {}: {e}", ca.display())))?;
    }
    let chain = read_certs(cert)?;
    let key = read_tls_key(key)?;
    let cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| anyhow::anyhow!("TLS 1.3: {e}"))?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .map_err(|e| usage(format!("--cert {} / --key: {e}", cert.display())))?;
    Ok(Arc::new(cfg))
}

#[derive(Deserialize)]
struct RawAnswer {
    ok: Option<bool>,
    error: Option<String>,
    ping: Option<bool>,
    keys: Option<Vec<RawKey>>,
}

#[derive(Deserialize)]
struct RawKey {
    segment: String,
    number: u64,
    ckn: String,
    cak: String,
}

impl Drop for RawKey {
    fn drop(&mut self) {
        self.cak.zeroize();
    }
}

/// What the server sent.
#[derive(Debug)]
pub enum Answer {
    Keys(Vec<SegmentKey>),
    Ping,
}

/// Parses an answer line of the server (hostile too: a client must not panic on it).
pub fn parse_answer(line: &[u8]) -> std::result::Result<Answer, String> {
    let raw: RawAnswer = serde_json::from_slice(line).map_err(|e| format!("not an answer: {e}"))?;
    if raw.ping == Some(true) {
        return Ok(Answer::Ping);
    }
    if raw.ok != Some(true) {
        return Err(format!(
            "refused: {}",
            raw.error.as_deref().unwrap_or("no reason")
        ));
    }
    let mut out = Vec::new();
    for k in raw.keys.iter().flatten() {
        let cak = Zeroizing::new(hex::decode(&k.cak).map_err(|_| "bad cak hex".to_string())?);
        let ckn = hex::decode(&k.ckn).map_err(|_| "bad ckn hex".to_string())?;
        if (cak.len() != 16 && cak.len() != 32) || ckn.is_empty() || ckn.len() > 32 {
            return Err("bad CAK or CKN length".into());
        }
        out.push(SegmentKey {
            segment: k.segment.clone(),
            key: Cak {
                number: k.number,
                ckn,
                cak,
            },
        });
    }
    Ok(Answer::Keys(out))
}

/// A client connection to the key server.
pub struct Client {
    stream: StreamOwned<ClientConnection, TcpStream>,
    buf: Vec<u8>,
}

impl Drop for Client {
    fn drop(&mut self) {
        // Answers carry CAKs: nothing of them stays in freed memory.
        self.buf.zeroize();
    }
}

impl Client {
    /// Connects to `addr`, verifies the server as `server_name` and completes the handshake.
    pub fn connect(
        tls: Arc<rustls::ClientConfig>,
        addr: &str,
        server_name: &str,
        timeout: Duration,
    ) -> Result<Client> {
        use std::net::ToSocketAddrs;
        let sa = addr
            .to_socket_addrs()
            .map_err(|e| usage(format!("--keyserver {addr}: {e}")))?
            .next()
            .ok_or_else(|| usage(format!("--keyserver {addr}: no address")))?;
        let sock = TcpStream::connect_timeout(&sa, timeout)
            .with_context(|| format!("connecting to the key server {addr}"))?;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        let _ = sock.set_nodelay(true);
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|e| usage(format!("key server name {server_name}: {e}")))?;
        let conn = ClientConnection::new(tls, name).context("TLS client")?;
        let mut stream = StreamOwned::new(conn, sock);
        while stream.conn.is_handshaking() {
            stream
                .conn
                .complete_io(&mut stream.sock)
                .with_context(|| format!("TLS handshake with the key server {addr}"))?;
        }
        Ok(Client {
            stream,
            buf: Vec::with_capacity(MAX_LINE),
        })
    }

    /// The key exchange group the handshake settled on (`X25519MLKEM768` with this server).
    pub fn kx_group(&self) -> Option<String> {
        self.stream
            .conn
            .negotiated_key_exchange_group()
            .map(|g| format!("{:?}", g.name()))
    }

    /// Sends one request line.
    pub fn send(&mut self, req: &str) -> Result<()> {
        self.stream.write_all(req.as_bytes())?;
        self.stream.write_all(b"\n")?;
        self.stream.flush()?;
        Ok(())
    }

    /// Sends bytes as they are (no newline added): for tests that feed the server hostile input.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()?;
        Ok(())
    }

    /// Sets how long [`Client::recv`] waits.
    pub fn set_timeout(&mut self, t: Duration) -> Result<()> {
        self.stream.sock.set_read_timeout(Some(t))?;
        Ok(())
    }

    /// The next answer; `Ok(None)` when none came within the read timeout.
    pub fn recv(&mut self) -> Result<Option<Answer>> {
        match read_line(&mut self.stream, &mut self.buf) {
            Ok(Some(line)) => {
                // The line holds the CAKs in hex: wiped once parsed.
                let line = Zeroizing::new(line);
                parse_answer(&line)
                    .map(Some)
                    .map_err(|e| anyhow::anyhow!("key server: {e}"))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(anyhow::anyhow!("key server: {e}")),
        }
    }

    /// One `get`: the keys of our segments (or of `segment`).
    pub fn get(&mut self, segment: Option<&str>) -> Result<Vec<SegmentKey>> {
        let req = match segment {
            Some(s) => json!({"op": "get", "segment": s}),
            None => json!({"op": "get"}),
        };
        self.send(&req.to_string())?;
        loop {
            match self.recv()? {
                Some(Answer::Keys(k)) => return Ok(k),
                Some(Answer::Ping) => {}
                None => anyhow::bail!("the key server did not answer in time"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_and_hostile_lines_are_refused() {
        assert_eq!(
            parse_request(b"{\"op\":\"get\"}\n"),
            Ok(Request::Get { segment: None })
        );
        assert_eq!(
            parse_request(b"{\"op\":\"watch\",\"segment\":\"chassis\"}"),
            Ok(Request::Watch {
                segment: Some("chassis".into())
            })
        );
        for bad in [
            &b""[..],
            b"{}",
            b"[]",
            b"get",
            b"{\"op\":\"put\"}",
            b"{\"op\":\"get\",\"x\":1}",
            b"{\"op\":\"get\",\"segment\":\"../etc\"}",
            b"{\"op\":\"get\",\"segment\":7}",
            b"{\"op\":\"get\"} {\"op\":\"get\"}",
            b"\xff\xfe",
        ] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
        let long = format!(
            "{{\"op\":\"get\",\"segment\":\"{}\"}}",
            "a".repeat(MAX_LINE)
        );
        assert!(
            parse_request(long.as_bytes())
                .unwrap_err()
                .contains("longer")
        );
    }

    #[test]
    fn lines_are_read_with_a_bound() {
        let mut buf = Vec::new();
        let mut r: &[u8] = b"{\"op\":\"get\"}\nrest";
        assert_eq!(
            read_line(&mut r, &mut buf).unwrap().unwrap(),
            b"{\"op\":\"get\"}\n"
        );
        assert_eq!(buf, b"rest");
        let big = vec![b'x'; MAX_LINE + 10];
        let mut buf = Vec::new();
        assert!(read_line(&mut &big[..], &mut buf).is_err());
        assert!(buf.len() <= MAX_LINE);
    }

    #[test]
    fn answers_carry_only_well_formed_keys_and_debug_hides_the_cak() {
        let ok = br#"{"ok":true,"push":false,"ecu":"e","keys":[{"segment":"s","number":2,"ckn":"0102","cak":"000102030405060708090a0b0c0d0e0f"}]}"#;
        let Ok(Answer::Keys(k)) = parse_answer(ok) else {
            panic!()
        };
        assert_eq!((k[0].segment.as_str(), k[0].key.number), ("s", 2));
        let dbg = format!("{k:?}");
        assert!(!dbg.contains("0a0b0c"), "{dbg}");
        assert!(dbg.contains("<16 bytes>"), "{dbg}");
        let short = br#"{"ok":true,"keys":[{"segment":"s","number":2,"ckn":"01","cak":"0001"}]}"#;
        assert!(parse_answer(short).is_err());
        assert!(matches!(
            parse_answer(br#"{"ping":true}"#),
            Ok(Answer::Ping)
        ));
        assert!(
            parse_answer(br#"{"ok":false,"error":"revoked"}"#)
                .unwrap_err()
                .contains("revoked")
        );
    }
}
