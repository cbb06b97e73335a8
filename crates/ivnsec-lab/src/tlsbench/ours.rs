//! rustls (aws-lc-rs provider) client and server in this process over loopback TCP: N client
//! threads connect as fast as they can for the run's duration, N server threads accept on one
//! listener. Every connection is counted by its client: done (handshake, request, the exact
//! answer, close_notify) or failed (refused, broken, wrong answer), never dropped silently.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use rustls::crypto::{CryptoProvider, aws_lc_rs};
use rustls::pki_types::ServerName;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, ClientConnection, HandshakeKind, RootCertStore, ServerConfig};
use rustls::{ServerConnection, StreamOwned};

use super::certs::{CertSet, SERVER_NAME};
use super::{Case, Kx, Measured};
use crate::cpu::CpuTimes;

/// What every client sends once the handshake is done (as `openssl s_time -www /ok`).
pub const REQUEST: &[u8] = b"GET /ok HTTP/1.0\r\n\r\n";
/// What every server answers (byte for byte what `openssl s_server -WWW` sends for the
/// 2-byte file `ok`).
pub const RESPONSE: &[u8] = b"HTTP/1.0 200 ok\r\nContent-type: text/plain\r\n\r\nok";
/// Longest request a server reads.
const MAX_REQUEST: usize = 1024;
/// Longest answer a client reads.
const MAX_RESPONSE: usize = 1024;
/// A stuck peer fails its connection after this long.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Session tickets a resuming server sends per connection (`openssl s_server` sends 2).
const TICKETS: usize = 2;

/// One measurement of ours.
pub struct Ours {
    pub measured: Measured,
    pub resumed: u64,
    /// Connections the servers saw fail (the clients count theirs in `measured.failures`).
    pub server_failures: u64,
}

fn provider(kx: Kx) -> CryptoProvider {
    let mut p = aws_lc_rs::default_provider();
    p.kx_groups = vec![match kx {
        Kx::X25519 => aws_lc_rs::kx_group::X25519,
        Kx::X25519Mlkem768 => aws_lc_rs::kx_group::X25519MLKEM768,
    }];
    p
}

fn configs(set: &CertSet, case: Case) -> Result<(Arc<ServerConfig>, Arc<ClientConfig>)> {
    let prov = Arc::new(provider(case.kx));
    let mut roots = RootCertStore::empty();
    roots.add(set.ca.clone()).context("the CA certificate")?;
    let roots = Arc::new(roots);

    let builder = ServerConfig::builder_with_provider(prov.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?;
    let builder = if case.client_auth {
        let v = WebPkiClientVerifier::builder_with_provider(roots.clone(), prov.clone())
            .build()
            .map_err(|e| anyhow!("client certificate verifier: {e}"))?;
        builder.with_client_cert_verifier(v)
    } else {
        builder.with_no_client_auth()
    };
    let mut server = builder
        .with_single_cert(vec![set.server.cert.clone()], set.server.key())
        .context("the server certificate")?;
    if case.resumption {
        // Stateless tickets, as OpenSSL's default.
        server.ticketer = aws_lc_rs::Ticketer::new()?;
        server.send_tls13_tickets = TICKETS;
    } else {
        server.send_tls13_tickets = 0;
        server.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    }

    let builder = ClientConfig::builder_with_provider(prov)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots);
    let mut client = if case.client_auth {
        let id = set.client_identity();
        builder
            .with_client_auth_cert(vec![id.cert.clone()], id.key())
            .context("the client certificate")?
    } else {
        builder.with_no_client_auth()
    };
    client.resumption = if case.resumption {
        rustls::client::Resumption::in_memory_sessions(1024)
    } else {
        rustls::client::Resumption::disabled()
    };
    Ok((Arc::new(server), Arc::new(client)))
}

/// The server side of one connection: handshake, request, answer, close_notify.
fn serve(cfg: &Arc<ServerConfig>, sock: TcpStream) -> Result<()> {
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(IO_TIMEOUT))?;
    sock.set_write_timeout(Some(IO_TIMEOUT))?;
    let conn = ServerConnection::new(cfg.clone())?;
    let mut tls = StreamOwned::new(conn, sock);
    let mut req = Vec::with_capacity(64);
    let mut buf = [0u8; 256];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tls.read(&mut buf)?;
        if n == 0 {
            return Err(anyhow!("the client closed before its request"));
        }
        req.extend_from_slice(&buf[..n]);
        if req.len() > MAX_REQUEST {
            return Err(anyhow!("request longer than {MAX_REQUEST} bytes"));
        }
    }
    tls.write_all(RESPONSE)?;
    tls.conn.send_close_notify();
    tls.flush()?;
    while tls.conn.wants_write() {
        tls.conn.write_tls(&mut tls.sock)?;
    }
    Ok(())
}

/// The client side of one connection; `Ok(resumed)`.
fn connect(cfg: &Arc<ClientConfig>, name: &ServerName<'static>, addr: SocketAddr) -> Result<bool> {
    let sock = TcpStream::connect(addr)?;
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(IO_TIMEOUT))?;
    sock.set_write_timeout(Some(IO_TIMEOUT))?;
    let conn = ClientConnection::new(cfg.clone(), name.clone())?;
    let mut tls = StreamOwned::new(conn, sock);
    tls.write_all(REQUEST)?;
    let mut got = Vec::with_capacity(RESPONSE.len());
    let mut buf = [0u8; 256];
    loop {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.len() > MAX_RESPONSE {
                    return Err(anyhow!("answer longer than {MAX_RESPONSE} bytes"));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    if got != RESPONSE {
        return Err(anyhow!("unexpected answer ({} bytes)", got.len()));
    }
    Ok(tls.conn.handshake_kind() == Some(HandshakeKind::Resumed))
}

/// CPU ticks (user + system, USER_HZ = 100 per second) of the calling thread.
fn thread_ticks() -> u64 {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|s| stat_ticks(&s))
        .unwrap_or(0)
}

/// utime + stime (fields 14 and 15) of a `/proc/…/stat` line.
pub fn stat_ticks(stat: &str) -> Option<u64> {
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After `comm`: state is field 3, so utime (14) is index 11 and stime (15) index 12.
    let u: u64 = f.get(11)?.parse().ok()?;
    let s: u64 = f.get(12)?.parse().ok()?;
    Some(u + s)
}

/// Clock ticks per second of `/proc` CPU times (USER_HZ, 100 on Linux).
pub const USER_HZ: f64 = 100.0;

/// Measures one case for `dur` with `n` clients and `n` server threads.
pub fn measure(set: &CertSet, case: Case, n: usize, dur: Duration) -> Result<Ours> {
    let (scfg, ccfg) = configs(set, case)?;
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
    let addr = listener.local_addr()?;
    let listener = Arc::new(listener);
    let stop = Arc::new(AtomicBool::new(false));
    let server_failures = Arc::new(AtomicU64::new(0));
    let server_ticks = Arc::new(AtomicU64::new(0));

    let mut servers = Vec::new();
    for _ in 0..n {
        let (l, cfg, stop, fails, ticks) = (
            listener.clone(),
            scfg.clone(),
            stop.clone(),
            server_failures.clone(),
            server_ticks.clone(),
        );
        servers.push(std::thread::spawn(move || {
            let t0 = thread_ticks();
            loop {
                let accepted = l.accept();
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                match accepted {
                    Ok((sock, _)) => {
                        if serve(&cfg, sock).is_err() {
                            fails.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        fails.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            ticks.fetch_add(thread_ticks().saturating_sub(t0), Ordering::Relaxed);
        }));
    }

    let name = ServerName::try_from(SERVER_NAME)?.to_owned();
    let cpu0 = CpuTimes::now().ok();
    let (u0, s0) = ivnsec_net::sys::rusage_self();
    let start = Instant::now();
    let deadline = start + dur;
    let mut clients = Vec::new();
    for _ in 0..n {
        let (cfg, name) = (ccfg.clone(), name.clone());
        clients.push(std::thread::spawn(move || {
            let (mut ok, mut failed, mut resumed) = (0u64, 0u64, 0u64);
            while Instant::now() < deadline {
                match connect(&cfg, &name, addr) {
                    Ok(r) => {
                        ok += 1;
                        resumed += u64::from(r);
                    }
                    Err(_) => failed += 1,
                }
            }
            (ok, failed, resumed)
        }));
    }
    let (mut ok, mut failed, mut resumed) = (0u64, 0u64, 0u64);
    let mut panicked = false;
    for c in clients {
        match c.join() {
            Ok((a, b, r)) => {
                ok += a;
                failed += b;
                resumed += r;
            }
            Err(_) => panicked = true,
        }
    }
    let wall = start.elapsed();
    let (u1, s1) = ivnsec_net::sys::rusage_self();
    let cpu1 = CpuTimes::now().ok();
    // Wake every server thread blocked in accept().
    stop.store(true, Ordering::Relaxed);
    for _ in 0..n {
        let _ = TcpStream::connect(addr);
    }
    for s in servers {
        if s.join().is_err() {
            panicked = true;
        }
    }
    if panicked {
        return Err(anyhow!("a benchmark thread panicked"));
    }
    let cores = super::cores() as f64;
    let secs = wall.as_secs_f64();
    let mut m = Measured {
        handshakes: ok,
        failures: failed,
        seconds: secs,
        cpu_pct: match (cpu0, cpu1) {
            (Some(a), Some(b)) => a.busy_pct_until(&b).unwrap_or(0.0),
            _ => 0.0,
        },
        server_cpu_pct: 100.0 * server_ticks.load(Ordering::Relaxed) as f64
            / USER_HZ
            / (secs * cores),
        process_cpu_pct: 100.0 * ((u1 + s1).saturating_sub(u0 + s0)) as f64 / 1e9 / (secs * cores),
        ..Measured::default()
    };
    m.rates(cores);
    Ok(Ours {
        measured: m,
        resumed,
        server_failures: server_failures.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        // A comm with spaces and parentheses (as /proc allows).
        let s = "42 (a b) c) S 1 42 42 0 -1 4194304 100 0 0 0 17 5 0 0 20 0 3 0 99 0 0";
        assert_eq!(stat_ticks(s), Some(22));
        assert_eq!(stat_ticks("garbage"), None);
    }
}
