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
    pub limits: Limits,
}

/// How long a pending connection may stay silent before eviction takes it for an idle one.
const SILENT_GRACE: Duration = Duration::from_millis(200);

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

/// Refusal lines of the current second, and what was not logged of it.
struct RefusalLog {
    window: Instant,
    lines: u32,
    suppressed: BTreeMap<&'static str, u64>,
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
    /// Counts a refusal and logs it, unless [`LOG_BURST`] lines were logged this second already:
    /// then it is summed in the second's `refused_summary` line.
    fn refuse(&self, peer: SocketAddr, reason: &'static str, detail: &str, ecu: Option<&str>) {
        let n = {
            let mut c = lock(&self.counters);
            let n = c.entry(reason).or_default();
            *n += 1;
            *n
        };
        let mut l = lock(&self.refusal_log);
        Self::roll_refusal_window(&mut l, false);
        if l.lines < LOG_BURST {
            l.lines += 1;
            drop(l);
            log(
                "refused",
                json!({"peer": peer.to_string(), "reason": reason, "detail": detail, "ecu": ecu,
                       "count": n}),
            );
        } else {
            *l.suppressed.entry(reason).or_default() += 1;
            self.log_suppressed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes the summary of refusals not logged once their second is over (or now, `force`).
    fn flush_refusal_log(&self, force: bool) {
        Self::roll_refusal_window(&mut lock(&self.refusal_log), force);
    }

    fn roll_refusal_window(l: &mut RefusalLog, force: bool) {
        let elapsed = l.window.elapsed();
        if elapsed < Duration::from_secs(1) && !force {
            return;
        }
        if !l.suppressed.is_empty() {
            let total: u64 = l.suppressed.values().sum();
            log(
                "refused_summary",
                json!({"seconds": (elapsed.as_secs_f64() * 1e3).round() / 1e3,
                       "not_logged": total, "by_reason": std::mem::take(&mut l.suppressed)}),
            );
        }
        l.window = Instant::now();
        l.lines = 0;
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
    /// The lock on the state file, held while the server lives (released when dropped).
    _state_lock: std::fs::File,
}

/// The lock file beside the state file: `STATE.lock`.
pub fn lock_path(state: &Path) -> PathBuf {
    let mut name = state
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".lock");
    state.with_file_name(name)
}

/// Takes the exclusive lock of the state file for this process's life, or says which server
/// holds it (exit 2: one state file, one key server; two would hand out different CAKs under
/// the same number and keep only one of them).
fn lock_state(state: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = lock_path(state);
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            usage(format!(
                "key server lock file {} (beside the state file): {e}",
                path.display()
            ))
        })?;
    let held = ivnsec_net::sys::try_lock_exclusive(&f)
        .map_err(|e| env_error(format!("locking {}: {e}", path.display())))?;
    if !held {
        let mut text = String::new();
        let _ = (&f).take(4096).read_to_string(&mut text);
        let holder = serde_json::from_str::<serde_json::Value>(text.trim())
            .ok()
            .map(|v| {
                let mut h = format!("pid {}", v["pid"]);
                if let Some(l) = v["listen"].as_str() {
                    h.push_str(&format!(", listening on {l}"));
                }
                h
            })
            .unwrap_or_else(|| "a process that has not recorded itself yet".to_string());
        return Err(usage(format!(
            "key server state file {} is in use by another key server ({holder}; lock {}): two \
             servers on one state file would hand out different CAKs under one number. Stop \
             that one, or give this one a state file of its own with --state",
            state.display(),
            path.display()
        )));
    }
    write_lock_owner(&mut f, None);
    Ok(f)
}

/// Records who holds the lock (pid, and the listen address once bound) in the lock file.
fn write_lock_owner(f: &mut std::fs::File, listen: Option<SocketAddr>) {
    use std::io::Seek;
    let mut v = json!({"pid": std::process::id()});
    if let Some(l) = listen {
        v["listen"] = json!(l.to_string());
    }
    let _ = f.set_len(0);
    let _ = f.seek(std::io::SeekFrom::Start(0));
    let _ = writeln!(f, "{v}");
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

/// One connection whose TLS handshake is under way, on a non-blocking socket.
struct Pending {
    sock: TcpStream,
    conn: ServerConnection,
    peer: SocketAddr,
    source: std::net::IpAddr,
    since: Instant,
    /// The client sent bytes: evicted after the silent ones.
    received: bool,
    /// The client sent a whole ClientHello (the server answered it): evicted last.
    answered: bool,
    /// Refused after its handshake, the answer sent: read until the client closes (or
    /// [`Limits::handshake_timeout`]), then dropped without a word; evicted first.
    closing: bool,
}

/// What a turn of the handshake stage did with one connection.
enum Step {
    Wait,
    /// A closing connection is done.
    Closed,
    Authenticated,
    Refused(&'static str, String),
}

/// The source a connection counts against: its IPv4 address, or the /64 of its IPv6 address.
fn source_of(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.into(),
            None => {
                let mut o = v6.octets();
                o[8..].fill(0);
                std::net::Ipv6Addr::from(o).into()
            }
        },
        v4 => v4,
    }
}

/// The pre-handshake stage: every connection not yet authenticated, in order of arrival, each
/// driven without blocking under one `poll`.
#[derive(Default)]
struct Handshakes {
    pending: BTreeMap<u64, Pending>,
    per_source: std::collections::HashMap<std::net::IpAddr, usize>,
    next: u64,
    last_accept_error: Option<Instant>,
}

impl Handshakes {
    /// Waits (100 ms at most) for the listener or a pending connection, accepts, drives the
    /// handshakes that can move, hands authenticated connections to threads of their own and
    /// closes the ones past their time.
    fn turn(&mut self, sh: &Arc<Shared>, listener: &TcpListener) {
        use std::os::fd::AsFd;
        let now = Instant::now();
        let timeout = self
            .pending
            .values()
            .next()
            .map(|p| (p.since + sh.limits.handshake_timeout).saturating_duration_since(now))
            .unwrap_or(Duration::MAX)
            .min(Duration::from_millis(100));
        let (listener_ready, ready) = {
            let mut entries = Vec::with_capacity(self.pending.len() + 1);
            entries.push(ivnsec_net::sys::PollEntry {
                fd: listener.as_fd(),
                read: true,
                write: false,
                ready: false,
            });
            for p in self.pending.values() {
                entries.push(ivnsec_net::sys::PollEntry {
                    fd: p.sock.as_fd(),
                    read: true,
                    write: !p.closing && p.conn.wants_write(),
                    ready: false,
                });
            }
            if let Err(e) = ivnsec_net::sys::poll_many(&mut entries, Some(timeout)) {
                log("poll_error", json!({"error": e.to_string()}));
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
            let ready: Vec<u64> = entries[1..]
                .iter()
                .zip(self.pending.keys())
                .filter(|(e, _)| e.ready)
                .map(|(_, k)| *k)
                .collect();
            (entries[0].ready, ready)
        };
        for id in ready {
            self.step(sh, id);
        }
        if listener_ready {
            self.accept(sh, listener);
        }
        // Past their time, oldest first.
        let now = Instant::now();
        while let Some((&id, p)) = self.pending.first_key_value() {
            if now.duration_since(p.since) < sh.limits.handshake_timeout {
                break;
            }
            let p = self.remove(id).expect("present");
            if p.closing {
                continue; // refused already
            }
            sh.refuse(
                p.peer,
                "handshake_timeout",
                &format!(
                    "no TLS handshake within {} s",
                    sh.limits.handshake_timeout.as_secs_f64()
                ),
                None,
            );
        }
    }

    fn insert(&mut self, p: Pending) -> u64 {
        let id = self.next;
        self.next += 1;
        *self.per_source.entry(p.source).or_default() += 1;
        self.pending.insert(id, p);
        id
    }

    fn remove(&mut self, id: u64) -> Option<Pending> {
        let p = self.pending.remove(&id)?;
        if let Some(n) = self.per_source.get_mut(&p.source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&p.source);
            }
        }
        Some(p)
    }

    /// Drives one pending connection and acts on the outcome; `true` if it is still pending.
    fn step(&mut self, sh: &Arc<Shared>, id: u64) -> bool {
        let Some(p) = self.pending.get_mut(&id) else {
            return false;
        };
        match drive(p) {
            Step::Wait => true,
            Step::Closed => {
                self.remove(id);
                false
            }
            Step::Authenticated => {
                let p = self.remove(id).expect("present");
                if let Some(p) = authenticated(sh, p) {
                    self.insert(p);
                }
                false
            }
            Step::Refused(reason, detail) => {
                let p = self.remove(id).expect("present");
                sh.refuse(p.peer, reason, &detail, None);
                false
            }
        }
    }

    /// Frees one pre-handshake slot (of `source` only, if given) for a newer connection. The
    /// victim is the oldest connection that has sent nothing for [`SILENT_GRACE`] (each
    /// candidate is read once before it is judged silent), else the oldest that has not sent a
    /// whole ClientHello, else the oldest: idle and slow clients go before an ECU in the middle
    /// of its handshake, and before one that connected a moment ago.
    fn make_room(&mut self, sh: &Arc<Shared>, source: Option<std::net::IpAddr>, why: &str) {
        let mine: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| source.is_none_or(|s| p.source == s))
            .map(|(id, _)| *id)
            .collect();
        // A connection already refused goes first, without a word.
        if let Some(id) = mine
            .iter()
            .copied()
            .find(|id| self.pending.get(id).is_some_and(|p| p.closing))
        {
            self.remove(id);
            return;
        }
        let mut victim = None;
        for &id in &mine {
            // A connection just accepted has had no time to speak: silence counts only after
            // a grace period, or the newest client (an ECU about to send its ClientHello)
            // would be the first victim of a flood from its own address.
            let silent = self
                .pending
                .get(&id)
                .is_some_and(|p| !p.received && p.since.elapsed() >= SILENT_GRACE);
            if !silent {
                continue;
            }
            if !self.step(sh, id) {
                return; // done or refused: a slot is free
            }
            if self.pending.get(&id).is_some_and(|p| !p.received) {
                victim = Some(id);
                break;
            }
        }
        let victim = victim
            .or_else(|| {
                mine.iter()
                    .copied()
                    .find(|id| self.pending.get(id).is_some_and(|p| !p.answered))
            })
            .or_else(|| {
                mine.iter()
                    .copied()
                    .find(|id| self.pending.contains_key(id))
            });
        let Some(p) = victim.and_then(|id| self.remove(id)) else {
            return;
        };
        let reason = if source.is_some() {
            "address_limit"
        } else {
            "evicted"
        };
        sh.refuse(p.peer, reason, why, None);
    }

    /// Accepts what is waiting (a bounded number per turn, so that handshakes move too).
    fn accept(&mut self, sh: &Arc<Shared>, listener: &TcpListener) {
        for _ in 0..256 {
            let (sock, peer) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors: a pending connection makes room for the new one.
                    let out_of_fds = matches!(e.raw_os_error(), Some(23 | 24)); // ENFILE, EMFILE
                    if out_of_fds && !self.pending.is_empty() {
                        self.make_room(sh, None, "no descriptor left");
                        continue;
                    }
                    if self
                        .last_accept_error
                        .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
                    {
                        self.last_accept_error = Some(Instant::now());
                        log("accept_error", json!({"error": e.to_string()}));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    return;
                }
            };
            let source = source_of(peer.ip());
            if self.per_source.get(&source).copied().unwrap_or(0) >= sh.limits.max_per_address {
                let why = format!(
                    "{} pending connections from this source (--max-per-address)",
                    sh.limits.max_per_address
                );
                self.make_room(sh, Some(source), &why);
            }
            if self.pending.len() >= sh.limits.max_pending {
                let why = format!(
                    "{} pending connections (--max-pending)",
                    sh.limits.max_pending
                );
                self.make_room(sh, None, &why);
            }
            let tls = sh.tls.read().unwrap_or_else(|e| e.into_inner()).clone();
            let conn = match ServerConnection::new(tls) {
                Ok(c) => c,
                Err(e) => {
                    sh.refuse(peer, "tls_error", &e.to_string(), None);
                    continue;
                }
            };
            if sock.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = sock.set_nodelay(true);
            let id = self.insert(Pending {
                sock,
                conn,
                peer,
                source,
                since: Instant::now(),
                received: false,
                answered: false,
                closing: false,
            });
            // A client sends its ClientHello at once: read it now if it is there, so that the
            // connection counts as live before the next eviction looks at it.
            self.step(sh, id);
        }
    }
}

/// Moves one handshake on as far as the socket allows, without blocking.
fn drive(p: &mut Pending) -> Step {
    use std::io::ErrorKind::{Interrupted, WouldBlock};
    if p.closing {
        let mut scratch = [0u8; 4096];
        loop {
            match std::io::Read::read(&mut p.sock, &mut scratch) {
                Ok(0) => return Step::Closed,
                Ok(_) => {}
                Err(e) if e.kind() == WouldBlock => return Step::Wait,
                Err(e) if e.kind() == Interrupted => {}
                Err(_) => return Step::Closed,
            }
        }
    }
    let mut closed = false;
    while p.conn.is_handshaking() {
        match p.conn.read_tls(&mut p.sock) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(_) => {
                p.received = true;
                if let Err(e) = p.conn.process_new_packets() {
                    // The alert rustls queued, if the socket takes it.
                    let _ = p.conn.write_tls(&mut p.sock);
                    return Step::Refused(classify_tls(&e), e.to_string());
                }
            }
            Err(e) if e.kind() == WouldBlock => break,
            Err(e) if e.kind() == Interrupted => {}
            Err(e) => return Step::Refused("tls_error", e.to_string()),
        }
    }
    while p.conn.wants_write() {
        match p.conn.write_tls(&mut p.sock) {
            Ok(_) => p.answered = true,
            Err(e) if e.kind() == WouldBlock => break,
            Err(e) if e.kind() == Interrupted => {}
            Err(e) => return Step::Refused("tls_error", e.to_string()),
        }
    }
    if !p.conn.is_handshaking() {
        Step::Authenticated
    } else if closed {
        Step::Refused(
            "tls_error",
            "closed before the handshake completed".to_string(),
        )
    } else {
        Step::Wait
    }
}

/// A connection that completed mutual TLS: its identity checked, then a thread of its own in
/// an authenticated slot, or refused: then it is returned, closing, for the pending stage to
/// drain until the client closes too.
fn authenticated(sh: &Arc<Shared>, mut p: Pending) -> Option<Pending> {
    let peer = p.peer;
    // A refusal after the handshake tells the client why, inside TLS, then closes.
    let refuse = |p: &mut Pending, reason: &'static str, detail: &str, ecu: Option<&str>| {
        let _ = p.conn.writer().write_all(error_line(reason).as_bytes());
        p.conn.send_close_notify();
        while p.conn.wants_write() {
            if p.conn.write_tls(&mut p.sock).is_err() {
                break;
            }
        }
        // No more from us; what the client still sends is read and dropped (a close with
        // unread input would reset the connection before the client read why).
        let _ = p.sock.shutdown(std::net::Shutdown::Write);
        p.closing = true;
        p.since = Instant::now();
        sh.refuse(peer, reason, detail, ecu);
    };
    let Some(cert) = p.conn.peer_certificates().and_then(|c| c.first()) else {
        refuse(&mut p, "no_certificate", "", None);
        return Some(p);
    };
    let info = match super::cert_info(cert) {
        Ok(i) => i,
        Err(e) => {
            refuse(&mut p, "bad_certificate", &e, None);
            return Some(p);
        }
    };
    let ecu = match info.dns_names.as_slice() {
        [one] => one.clone(),
        [] => {
            refuse(
                &mut p,
                "bad_certificate",
                "no dNSName in the certificate",
                None,
            );
            return Some(p);
        }
        several => {
            // The CA issues one name per certificate: one with several is forged or foreign,
            // and must not choose which ECU it is.
            let detail = format!(
                "{} dNSNames in the certificate ({}); an ECU's has one",
                several.len(),
                several.join(", ")
            );
            refuse(&mut p, "ambiguous_identity", &detail, None);
            return Some(p);
        }
    };
    if check_ecu_name(&ecu).is_err() {
        refuse(
            &mut p,
            "bad_certificate",
            "its dNSName is no ECU name",
            None,
        );
        return Some(p);
    }
    if sh.conns.load(Ordering::Relaxed) >= sh.limits.max_authenticated {
        let detail = format!(
            "{} authenticated connections (--max-authenticated)",
            sh.limits.max_authenticated
        );
        refuse(&mut p, "too_many_connections", &detail, Some(&ecu));
        return Some(p);
    }
    sh.conns.fetch_add(1, Ordering::Relaxed);
    let sh2 = sh.clone();
    let serial = info.serial;
    let spawned = std::thread::Builder::new()
        .name("keyserver-conn".into())
        .spawn(move || {
            serve(&sh2, p.conn, p.sock, peer, &ecu, serial);
            sh2.conns.fetch_sub(1, Ordering::Relaxed);
        });
    if let Err(e) = spawned {
        sh.conns.fetch_sub(1, Ordering::Relaxed);
        log("thread_error", json!({"error": e.to_string()}));
    }
    None
}

fn counters_json(sh: &Shared) -> serde_json::Value {
    let c = lock(&sh.counters);
    let refused: serde_json::Map<String, serde_json::Value> = REASONS
        .iter()
        .map(|r| (r.to_string(), json!(c.get(r).copied().unwrap_or(0))))
        .collect();
    json!({"served": sh.served.load(Ordering::Relaxed), "refused": refused,
           "refusals_not_logged": sh.log_suppressed.load(Ordering::Relaxed)})
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
    fn limits_are_checked_and_sources_group_an_ipv6_64() {
        assert!(Limits::default().check().is_ok());
        for bad in [
            Limits {
                handshake_timeout: Duration::from_millis(50),
                ..Limits::default()
            },
            Limits {
                handshake_timeout: Duration::from_secs(61),
                ..Limits::default()
            },
            Limits {
                max_pending: 0,
                ..Limits::default()
            },
            Limits {
                max_per_address: 0,
                ..Limits::default()
            },
            Limits {
                max_authenticated: 5000,
                ..Limits::default()
            },
        ] {
            let e = bad.check().unwrap_err();
            assert!(format!("{e:#}").contains("choose"), "{bad:?}: {e:#}");
        }
        let ip = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        assert_eq!(source_of(ip("10.0.0.7")), ip("10.0.0.7"));
        assert_eq!(source_of(ip("::ffff:10.0.0.7")), ip("10.0.0.7"));
        assert_eq!(
            source_of(ip("2001:db8:1:2:aaaa:bbbb:cccc:dddd")),
            source_of(ip("2001:db8:1:2::1"))
        );
        assert_ne!(
            source_of(ip("2001:db8:1:2::1")),
            source_of(ip("2001:db8:1:3::1"))
        );
        assert_eq!(
            lock_path(Path::new("pki/keyserver-state.json")),
            Path::new("pki/keyserver-state.json.lock")
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
