//! The client of the key server: what an ECU (`ivnsec macsec --keyserver`) uses to fetch and
//! follow its segments' CAKs.

use super::*;

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
    /// Connects to `addr`, verifies the server as `server_name` and completes the handshake,
    /// all within `timeout`.
    ///
    /// A server under a flood of connections that never authenticate frees slots by closing
    /// pending handshakes without a word (`evicted`, `address_limit`): a handshake the server
    /// closed (end of file, reset, broken pipe) is tried again on a new connection after a
    /// short pause (5 ms, doubling to 100 ms) while `timeout` lasts. A refusal the server
    /// states (a TLS alert: the certificate, the CA) and a failed connect are not tried again.
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
        let name = ServerName::try_from(server_name.to_string())
            .map_err(|e| usage(format!("key server name {server_name}: {e}")))?;
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(5);
        let mut closed = 0u32;
        loop {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1));
            let sock = TcpStream::connect_timeout(&sa, left)
                .with_context(|| format!("connecting to the key server {addr}"))?;
            sock.set_read_timeout(Some(left))?;
            sock.set_write_timeout(Some(left))?;
            let _ = sock.set_nodelay(true);
            let conn = ClientConnection::new(tls.clone(), name.clone()).context("TLS client")?;
            let mut stream = StreamOwned::new(conn, sock);
            let mut done = Ok(());
            while stream.conn.is_handshaking() {
                if let Err(e) = stream.conn.complete_io(&mut stream.sock) {
                    done = Err(e);
                    break;
                }
            }
            let e = match done {
                Ok(()) => {
                    return Ok(Client {
                        stream,
                        buf: Vec::with_capacity(MAX_LINE),
                    });
                }
                Err(e) => e,
            };
            let dropped = matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            );
            if !dropped || Instant::now() + pause >= deadline {
                let tried = if closed > 0 {
                    format!(" ({closed} earlier handshakes closed by the server)")
                } else {
                    String::new()
                };
                return Err(anyhow::Error::new(e)
                    .context(format!("TLS handshake with the key server {addr}{tried}")));
            }
            closed += 1;
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
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
