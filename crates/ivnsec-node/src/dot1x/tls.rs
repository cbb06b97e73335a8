//! The TLS of EAP-TLS: rustls driven through its buffer API
//! ([`ivnsec_core::pae::TlsEngine`]), for TLS 1.2 (RFC 5216) and TLS 1.3 (RFC 9190).
//!
//! - **Records in, records out**: the PAE hands over each reassembled EAP-TLS message
//!   ([`TlsEngine::read_tls`]) and takes what TLS has to send ([`TlsEngine::write_tls`]); no
//!   socket anywhere.
//! - **Certificates**: the supplicant presents its `ivnsec pki` certificate and checks the EAP
//!   server's chain to the vehicle CA (and its CRL when given). The server's name is checked
//!   only when one is asked for (`--eap-server-name`): an EAP peer usually does not know the
//!   name of the RADIUS server behind the authenticator (RFC 5216 5.2), so by default any name
//!   is accepted, and everything else (chain, validity, revocation, signatures) still is checked.
//! - **Keys**: TLS 1.2: `Key_Material = TLS-PRF-128(master_secret, "client EAP encryption",
//!   client.random ‖ server.random)`, which is the RFC 5705 exporter with that label and no
//!   context; `Session-Id = 0x0D ‖ client.random ‖ server.random`, the randoms read from the
//!   hellos that passed through. TLS 1.3: the exporter with label
//!   `EXPORTER_EAP_TLS_Key_Material` and context 0x0D (128 octets), `Method-Id` from
//!   `EXPORTER_EAP_TLS_Method-Id` (64 octets), `Session-Id = 0x0D ‖ Method-Id`. MSK = octets
//!   0..64, EMSK = 64..128.
//! - **TLS 1.3 success**: the server sends one octet 0x00 of application data after the
//!   handshake (RFC 9190 2.5); the client is finished only once it has read it. Resumption is
//!   off on both roles (no tickets), as EAP-TLS peers do.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use ivnsec_core::pae::{
    CLIENT_HELLO, EAP_TYPE_TLS, EapKeys, EngineFactory, SERVER_HELLO, TlsEngine, TlsFailure,
    TlsVersion, hello_random, tls12_session_id,
};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConnection, DigitallySignedStruct, RootCertStore, ServerConnection,
    SignatureScheme,
};
use zeroize::Zeroizing;

use crate::error::usage;
use crate::pki::keyserver::{read_certs, read_tls_key};

/// RFC 5216 2.3: the label of the TLS 1.2 key material.
const LABEL_TLS12: &[u8] = b"client EAP encryption";
/// RFC 9190 2.3: the labels of the TLS 1.3 key material and Method-Id.
const LABEL_TLS13_KEYS: &[u8] = b"EXPORTER_EAP_TLS_Key_Material";
const LABEL_TLS13_METHOD_ID: &[u8] = b"EXPORTER_EAP_TLS_Method-Id";
/// Largest CRL file read.
const MAX_CRL: u64 = 4 << 20;
/// The server name sent when none is asked for (SNI only; not checked).
pub const DEFAULT_SERVER_NAME: &str = "eap-server";

/// The TLS versions offered or accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Versions {
    /// TLS 1.3 and 1.2 (the peer chooses).
    #[default]
    Both,
    Tls12Only,
    Tls13Only,
}

impl Versions {
    fn list(self) -> &'static [&'static rustls::SupportedProtocolVersion] {
        static BOTH: [&rustls::SupportedProtocolVersion; 2] =
            [&rustls::version::TLS13, &rustls::version::TLS12];
        static TLS12: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS12];
        static TLS13: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
        match self {
            Versions::Both => &BOTH,
            Versions::Tls12Only => &TLS12,
            Versions::Tls13Only => &TLS13,
        }
    }
}

/// The supplicant's certificate, key, trust anchor and checks.
#[derive(Clone, Debug)]
pub struct EapTlsSettings {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A CRL of `ca` the server's certificate is checked against.
    pub crl: Option<PathBuf>,
    /// The name the server's certificate must carry; `None`: not checked.
    pub server_name: Option<String>,
    pub versions: Versions,
}

/// The TLS provider of EAP-TLS: aws-lc-rs with all its key exchange groups. Not the key
/// server's (X25519MLKEM768 and X25519 only): under TLS 1.2 the client's supported groups also
/// name the curves of ECDSA certificates it accepts (RFC 8422 5.1), and an EAP server such as
/// FreeRADIUS with a P-256 certificate refuses a client that does not list P-256.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn roots(ca: &Path) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for c in read_certs(ca)? {
        roots
            .add(c)
            .map_err(|e| usage(format!("--ca {}: {e}", ca.display())))?;
    }
    Ok(roots)
}

fn read_crl(path: &Path) -> Result<CertificateRevocationListDer<'static>> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CRL).read_to_string(&mut text))
        .map_err(|e| usage(format!("--crl {}: {e}", path.display())))?;
    CertificateRevocationListDer::from_pem_slice(text.as_bytes())
        .map_err(|e| usage(format!("--crl {}: no PEM CRL ({e})", path.display())))
}

/// Accepts a server certificate whose only fault is its name (no name was asked for);
/// everything else is the wrapped verifier's.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The supplicant's TLS client configuration.
pub fn client_config(s: &EapTlsSettings) -> Result<Arc<rustls::ClientConfig>> {
    let p = provider();
    let mut b = WebPkiServerVerifier::builder_with_provider(Arc::new(roots(&s.ca)?), p.clone());
    if let Some(crl) = &s.crl {
        b = b
            .with_crls([read_crl(crl)?])
            .only_check_end_entity_revocation();
    }
    let webpki = b
        .build()
        .map_err(|e| usage(format!("--ca {}: {e}", s.ca.display())))?;
    let chain = read_certs(&s.cert)?;
    let key = read_tls_key(&s.key)?;
    let builder = rustls::ClientConfig::builder_with_provider(p)
        .with_protocol_versions(s.versions.list())
        .map_err(|e| anyhow::anyhow!("TLS versions: {e}"))?;
    let builder = match s.server_name {
        Some(_) => builder.with_webpki_verifier(webpki),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyName(webpki))),
    };
    let mut cfg = builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| usage(format!("--cert {} / --key: {e}", s.cert.display())))?;
    cfg.resumption = Resumption::disabled();
    Ok(Arc::new(cfg))
}

/// An EAP-TLS server's configuration (tests, and an in-process EAP server): a client
/// certificate of `ca` required, checked against `crl` when given.
pub fn server_config(
    ca: &Path,
    cert: &Path,
    key: &Path,
    crl: Option<&Path>,
    versions: Versions,
) -> Result<Arc<rustls::ServerConfig>> {
    let p = provider();
    let mut b = WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), p.clone());
    if let Some(crl) = crl {
        b = b
            .with_crls([read_crl(crl)?])
            .only_check_end_entity_revocation();
    }
    let verifier = b
        .build()
        .map_err(|e| usage(format!("client verifier: {e}")))?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(p)
        .with_protocol_versions(versions.list())
        .map_err(|e| anyhow::anyhow!("TLS versions: {e}"))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(read_certs(cert)?, read_tls_key(key)?)
        .map_err(|e| usage(format!("{} / {}: {e}", cert.display(), key.display())))?;
    cfg.send_tls13_tickets = 0;
    cfg.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    Ok(Arc::new(cfg))
}

enum Conn {
    Client(ClientConnection),
    Server(ServerConnection),
}

/// One EAP-TLS conversation's TLS.
pub struct RustlsEngine {
    conn: Conn,
    /// The hellos' randoms as they passed (TLS 1.2 Session-Id).
    client_random: Option<[u8; 32]>,
    server_random: Option<[u8; 32]>,
    /// Client: the server's success indication (TLS 1.3) was read. Server: it was queued.
    success_indication: bool,
}

impl std::fmt::Debug for RustlsEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RustlsEngine")
            .field("version", &self.version())
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

fn failure(e: impl std::fmt::Display) -> TlsFailure {
    TlsFailure::Handshake(e.to_string())
}

fn map_err(e: rustls::Error) -> TlsFailure {
    match e {
        rustls::Error::AlertReceived(a) => TlsFailure::Alert(format!("{a:?}")),
        e => TlsFailure::Handshake(e.to_string()),
    }
}

impl RustlsEngine {
    /// The supplicant's side.
    pub fn client(cfg: Arc<rustls::ClientConfig>, server_name: &str) -> Result<Self, TlsFailure> {
        let name = ServerName::try_from(server_name.to_string()).map_err(failure)?;
        let conn = ClientConnection::new(cfg, name).map_err(map_err)?;
        Ok(RustlsEngine {
            conn: Conn::Client(conn),
            client_random: None,
            server_random: None,
            success_indication: false,
        })
    }

    /// The EAP server's side.
    pub fn server(cfg: Arc<rustls::ServerConfig>) -> Result<Self, TlsFailure> {
        let conn = ServerConnection::new(cfg).map_err(map_err)?;
        Ok(RustlsEngine {
            conn: Conn::Server(conn),
            client_random: None,
            server_random: None,
            success_indication: false,
        })
    }

    /// The negotiated version, once known.
    pub fn version(&self) -> Option<TlsVersion> {
        let v = match &self.conn {
            Conn::Client(c) => c.protocol_version(),
            Conn::Server(c) => c.protocol_version(),
        }?;
        Some(if v == rustls::ProtocolVersion::TLSv1_3 {
            TlsVersion::Tls13
        } else {
            TlsVersion::Tls12
        })
    }

    fn handshaking(&self) -> bool {
        match &self.conn {
            Conn::Client(c) => c.is_handshaking(),
            Conn::Server(c) => c.is_handshaking(),
        }
    }

    /// The names (SAN dNSNames) of the peer's certificate, for logs.
    pub fn peer_names(&self) -> Vec<String> {
        let certs = match &self.conn {
            Conn::Client(c) => c.peer_certificates(),
            Conn::Server(c) => c.peer_certificates(),
        };
        certs
            .and_then(|c| c.first())
            .and_then(|ee| crate::pki::cert_info(ee.as_ref()).ok())
            .map(|i| i.dns_names)
            .unwrap_or_default()
    }

    fn export(
        &self,
        out: &mut [u8],
        label: &[u8],
        context: Option<&[u8]>,
    ) -> Result<(), TlsFailure> {
        let r = match &self.conn {
            Conn::Client(c) => c.export_keying_material(&mut *out, label, context),
            Conn::Server(c) => c.export_keying_material(&mut *out, label, context),
        };
        r.map(|_| ()).map_err(|_| TlsFailure::Export)
    }

    /// The RFC 5705 / RFC 8446 exporter with `label` and no context (tests compare it with
    /// other TLS implementations, whose command-line tools export without a context).
    pub fn export_no_context(
        &self,
        label: &[u8],
        len: usize,
    ) -> Result<Zeroizing<Vec<u8>>, TlsFailure> {
        let mut out = Zeroizing::new(vec![0u8; len]);
        self.export(&mut out, label, None)?;
        Ok(out)
    }

    /// Reads application data the peer sent: the server's success indication (one 0x00).
    fn read_plaintext(&mut self) -> Result<(), TlsFailure> {
        let Conn::Client(c) = &mut self.conn else {
            // An EAP server expects no application data from the peer.
            return Ok(());
        };
        let mut buf = [0u8; 64];
        loop {
            match c.reader().read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    if n == 1 && buf[0] == 0 && !self.success_indication {
                        self.success_indication = true;
                    } else {
                        return Err(TlsFailure::Handshake(
                            "unexpected application data from the EAP server".into(),
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(failure(e)),
            }
        }
    }
}

impl TlsEngine for RustlsEngine {
    fn read_tls(&mut self, data: &[u8]) -> Result<(), TlsFailure> {
        let first_in = match self.conn {
            Conn::Client(_) if self.server_random.is_none() => Some(SERVER_HELLO),
            Conn::Server(_) if self.client_random.is_none() => Some(CLIENT_HELLO),
            _ => None,
        };
        if let Some(t) = first_in
            && let Some(r) = hello_random(data, t)
        {
            match t {
                SERVER_HELLO => self.server_random = Some(r),
                _ => self.client_random = Some(r),
            }
        }
        let mut rest = data;
        while !rest.is_empty() {
            let n = match &mut self.conn {
                Conn::Client(c) => c.read_tls(&mut rest),
                Conn::Server(c) => c.read_tls(&mut rest),
            }
            .map_err(failure)?;
            if n == 0 {
                break;
            }
            let st = match &mut self.conn {
                Conn::Client(c) => c.process_new_packets(),
                Conn::Server(c) => c.process_new_packets(),
            };
            st.map_err(map_err)?;
        }
        self.read_plaintext()
    }

    fn write_tls(&mut self, out: &mut Vec<u8>) -> Result<(), TlsFailure> {
        // The server's success indication once its side of the handshake is done (TLS 1.3).
        if let Conn::Server(c) = &mut self.conn
            && !c.is_handshaking()
            && !self.success_indication
            && c.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3)
        {
            c.writer().write_all(&[0]).map_err(failure)?;
            self.success_indication = true;
        }
        let start = out.len();
        loop {
            let wants = match &self.conn {
                Conn::Client(c) => c.wants_write(),
                Conn::Server(c) => c.wants_write(),
            };
            if !wants {
                break;
            }
            match &mut self.conn {
                Conn::Client(c) => c.write_tls(out),
                Conn::Server(c) => c.write_tls(out),
            }
            .map_err(failure)?;
        }
        let written = out.get(start..).unwrap_or_default();
        let first_out = match self.conn {
            Conn::Client(_) if self.client_random.is_none() => Some(CLIENT_HELLO),
            Conn::Server(_) if self.server_random.is_none() => Some(SERVER_HELLO),
            _ => None,
        };
        if let Some(t) = first_out
            && let Some(r) = hello_random(written, t)
        {
            match t {
                CLIENT_HELLO => self.client_random = Some(r),
                _ => self.server_random = Some(r),
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        if self.handshaking() {
            return false;
        }
        match (&self.conn, self.version()) {
            (Conn::Client(_), Some(TlsVersion::Tls13)) => self.success_indication,
            _ => true,
        }
    }

    fn keys(&mut self) -> Result<EapKeys, TlsFailure> {
        if !self.is_finished() {
            return Err(TlsFailure::NotFinished);
        }
        let version = self.version().ok_or(TlsFailure::NotFinished)?;
        let mut km = Zeroizing::new([0u8; 128]);
        let session_id = match version {
            TlsVersion::Tls12 => {
                self.export(&mut km[..], LABEL_TLS12, None)?;
                let (Some(c), Some(s)) = (self.client_random, self.server_random) else {
                    return Err(TlsFailure::Export);
                };
                tls12_session_id(&c, &s)
            }
            TlsVersion::Tls13 => {
                let ctx = [EAP_TYPE_TLS];
                self.export(&mut km[..], LABEL_TLS13_KEYS, Some(&ctx))?;
                let mut method_id = [0u8; 64];
                self.export(&mut method_id, LABEL_TLS13_METHOD_ID, Some(&ctx))?;
                let mut id = Vec::with_capacity(65);
                id.push(EAP_TYPE_TLS);
                id.extend_from_slice(&method_id);
                id
            }
        };
        let mut msk = Zeroizing::new([0u8; 64]);
        let mut emsk = Zeroizing::new([0u8; 64]);
        msk.copy_from_slice(&km[..64]);
        emsk.copy_from_slice(&km[64..]);
        Ok(EapKeys {
            msk,
            emsk,
            session_id,
            version,
        })
    }
}

/// A new client engine per conversation, for [`ivnsec_core::pae::Supplicant`].
pub fn factory(cfg: Arc<rustls::ClientConfig>, server_name: String) -> EngineFactory {
    Box::new(move || {
        RustlsEngine::client(cfg.clone(), &server_name).map(|e| Box::new(e) as Box<dyn TlsEngine>)
    })
}

#[cfg(test)]
mod tests;
