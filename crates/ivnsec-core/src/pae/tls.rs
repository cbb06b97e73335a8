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

/// TLS handshake message type of a ClientHello.
pub const CLIENT_HELLO: u8 = 1;
/// TLS handshake message type of a ServerHello.
pub const SERVER_HELLO: u8 = 2;

/// The 32-octet random of the first handshake message of `records` if it is of type
/// `msg_type` ([`CLIENT_HELLO`] or [`SERVER_HELLO`]): what the TLS 1.2 EAP Session-Id is made of
/// (`0x0D ‖ client.random ‖ server.random`, RFC 5216 2.3). `records` are TLS records as they
/// travel in a reassembled EAP-TLS message; the hellos are never encrypted. `None` for anything
/// else, including a record too short to hold the random.
pub fn hello_random(records: &[u8], msg_type: u8) -> Option<[u8; 32]> {
    // Record header: type 22 (handshake), version (2), length (2).
    let (&content_type, rest) = records.split_first()?;
    if content_type != 22 {
        return None;
    }
    let len = usize::from(u16::from_be_bytes([*rest.get(2)?, *rest.get(3)?]));
    let fragment = rest.get(4..)?.get(..len)?;
    // Handshake header: type (1), length (3); then legacy_version (2) and the random (32).
    if *fragment.first()? != msg_type {
        return None;
    }
    let random = fragment.get(6..38)?;
    let mut out = [0u8; 32];
    out.copy_from_slice(random);
    Some(out)
}

/// The TLS 1.2 EAP-TLS Session-Id: `0x0D ‖ client.random ‖ server.random` (RFC 5216 2.3).
pub fn tls12_session_id(client_random: &[u8; 32], server_random: &[u8; 32]) -> Vec<u8> {
    let mut id = Vec::with_capacity(65);
    id.push(EAP_TYPE_TLS);
    id.extend_from_slice(client_random);
    id.extend_from_slice(server_random);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hello_random_reads_the_random_of_the_first_handshake_message_only() {
        let mut rec = alloc::vec![22, 3, 1, 0, 0];
        let mut hs = alloc::vec![CLIENT_HELLO, 0, 0, 40, 3, 3];
        hs.extend((0..32u8).map(|i| i + 1));
        hs.extend([0u8; 4]);
        rec[3] = 0;
        rec[4] = hs.len() as u8;
        rec.extend(&hs);
        let r = hello_random(&rec, CLIENT_HELLO).unwrap();
        assert_eq!(r[0], 1);
        assert_eq!(r[31], 32);
        assert_eq!(hello_random(&rec, SERVER_HELLO), None);
        // Application data, truncated records and empty input give nothing.
        let mut app = rec.clone();
        app[0] = 23;
        assert_eq!(hello_random(&app, CLIENT_HELLO), None);
        for n in 0..rec.len() - 4 {
            assert_eq!(hello_random(&rec[..n], CLIENT_HELLO), None, "{n}");
        }
        let id = tls12_session_id(&r, &[9; 32]);
        assert_eq!(id.len(), 65);
        assert_eq!(id[0], 13);
    }
}
