//! The TLS of EAP-TLS, as a sans-I/O engine the PAE drives (RFC 5216 for TLS 1.2, RFC 9190 for
//! TLS 1.3). The PAE moves TLS records between the engine and EAP-TLS fragments; the engine
//! does the handshake and, once it is complete, exports the EAP key material.

use alloc::vec::Vec;
use core::fmt;

use zeroize::Zeroizing;

/// EAP method type of EAP-TLS (RFC 5216), also the Type-Code of RFC 9190's exporter context.
pub const EAP_TYPE_TLS: u8 = 13;

/// The TLS version a finished handshake used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// Why a TLS engine stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFailure {
    /// The peer's bytes were not valid TLS, or the handshake failed (certificate not trusted,
    /// revoked, wrong name, no common parameters). The text is the TLS library's reason.
    Handshake(alloc::string::String),
    /// The peer sent an alert.
    Alert(alloc::string::String),
    /// Keys were asked for before the handshake (and, for TLS 1.3, the success indication)
    /// completed.
    NotFinished,
    /// The key exporter failed.
    Export,
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsFailure::Handshake(s) => write!(f, "TLS handshake failed: {s}"),
            TlsFailure::Alert(s) => write!(f, "TLS alert from the peer: {s}"),
            TlsFailure::NotFinished => f.write_str("TLS handshake not finished"),
            TlsFailure::Export => f.write_str("TLS key export failed"),
        }
    }
}

impl core::error::Error for TlsFailure {}

/// The key material of a successful EAP-TLS method (RFC 5216 2.3, RFC 9190 2.3).
///
/// - TLS 1.2: `Key_Material = TLS-PRF-128(master_secret, "client EAP encryption",
///   client.random ‖ server.random)` (the RFC 5705 exporter with that label and no context
///   gives the same octets); MSK = octets 0..64, EMSK = 64..128;
///   `Session-Id = 0x0D ‖ client.random ‖ server.random`.
/// - TLS 1.3: `Key_Material = TLS-Exporter("EXPORTER_EAP_TLS_Key_Material", 0x0D, 128)`;
///   `Method-Id = TLS-Exporter("EXPORTER_EAP_TLS_Method-Id", 0x0D, 64)`;
///   `Session-Id = 0x0D ‖ Method-Id`.
pub struct EapKeys {
    pub msk: Zeroizing<[u8; 64]>,
    pub emsk: Zeroizing<[u8; 64]>,
    /// The EAP Session-Id (65 octets for both versions).
    pub session_id: Vec<u8>,
    pub version: TlsVersion,
}

impl fmt::Debug for EapKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EapKeys")
            .field("msk", &"<secret>")
            .field("emsk", &"<secret>")
            .field("session_id_len", &self.session_id.len())
            .field("version", &self.version)
            .finish()
    }
}

/// A TLS connection driven through buffers, one per EAP-TLS conversation (a new one for every
/// (re-)authentication). Implemented in the node crate with rustls (client role for the
/// supplicant; a server role exists for tests).
pub trait TlsEngine: Send {
    /// Feeds TLS records received from the peer (a whole reassembled EAP-TLS message, which
    /// may hold several records) and processes them.
    fn read_tls(&mut self, data: &[u8]) -> Result<(), TlsFailure>;
    /// Appends the TLS records this side has to send now (none is fine: the PAE then sends an
    /// EAP-TLS acknowledgement).
    fn write_tls(&mut self, out: &mut Vec<u8>) -> Result<(), TlsFailure>;
    /// The handshake completed and, for TLS 1.3, the server's protected success indication
    /// (one application-data octet 0x00, RFC 9190 2.5) arrived: the keys may be exported.
    fn is_finished(&self) -> bool;
    /// The EAP key material; [`TlsFailure::NotFinished`] before [`is_finished`](Self::is_finished).
    fn keys(&mut self) -> Result<EapKeys, TlsFailure>;
}
