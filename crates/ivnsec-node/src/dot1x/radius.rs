//! The RADIUS client of the 802.1X authenticator (RFC 2865; EAP over RADIUS, RFC 3579;
//! Message-Authenticator, RFC 2869 5.14; MS-MPPE keys, RFC 2548 2.4.2–2.4.3).
//!
//! - **Requests**: one Access-Request per EAP-Response of a supplicant, with its identity
//!   (User-Name), the EAP-Message(s), the State of the last Access-Challenge, the station ids
//!   (`AA-BB-CC-DD-EE-FF`), NAS-Port-Type Ethernet, Framed-MTU (so the server's EAP-TLS
//!   fragments fit one EAPOL frame) and a Message-Authenticator (HMAC-MD5 under the shared
//!   secret over the packet with the attribute zeroed). A fresh random Request Authenticator
//!   and identifier per request; a request is sent again unchanged every `timeout` until
//!   `retries` sends went unanswered, then it is a [`RadiusAnswer::Timeout`].
//! - **Answers** are hostile input: the source address and port must be the server's, the
//!   identifier one in flight, the Response Authenticator `MD5(Code ‖ ID ‖ Length ‖
//!   RequestAuth ‖ Attributes ‖ Secret)` right, and a Message-Authenticator present and right
//!   in every answer carrying EAP (computed with the Request Authenticator in place). Anything
//!   else is dropped and counted by reason ([`RadiusCounters`]), never acted on: a forged
//!   Access-Accept from a host that does not hold the secret cannot make a CAK.
//! - **Keys**: the MSK of an Access-Accept is MS-MPPE-Recv-Key ‖ MS-MPPE-Send-Key (32 octets
//!   each), each decrypted as RFC 2548 2.4.2 says (salt, `b(1) = MD5(secret ‖ RequestAuth ‖
//!   salt)`, `b(i) = MD5(secret ‖ c(i-1))`, plaintext = length ‖ key ‖ padding).
//!
//! MD5 and HMAC-MD5 come from RustCrypto (`md-5`, `hmac`): RADIUS needs them and nothing else
//! of ours does; the providers' HMAC-MD5 is for frames, not for this protocol's framing.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hmac::{Hmac, Mac};
use ivnsec_core::wire::radius::{
    self, Builder, NAS_PORT_TYPE_ETHERNET, Packet, SERVICE_TYPE_FRAMED, attr, code, microsoft,
};
use md5::{Digest, Md5};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::error::usage;
use crate::keys::keyfile;

type HmacMd5 = Hmac<Md5>;

/// Largest secret file read.
const MAX_SECRET_FILE: u64 = 4096;
/// Requests in flight at once (one per supplicant; identifiers are 8 bits).
const MAX_IN_FLIGHT: usize = 255;

/// Where the server is and how to talk to it.
pub struct RadiusConfig {
    pub server: SocketAddr,
    pub secret: Zeroizing<Vec<u8>>,
    pub nas_identifier: String,
    /// Wait this long for an answer before sending again.
    pub timeout: Duration,
    /// Sends of one request before it counts as unanswered.
    pub retries: u32,
    pub framed_mtu: u16,
}

impl std::fmt::Debug for RadiusConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadiusConfig")
            .field("server", &self.server)
            .field("secret", &"<secret>")
            .field("nas_identifier", &self.nas_identifier)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish()
    }
}

/// Reads a RADIUS shared secret: a file of mode 0600 (not readable by group or others), at
/// most 4 KiB, its text without a trailing newline, not empty.
pub fn read_secret(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    let (text, mode) = keyfile::read_secret(
        path,
        "RADIUS secret file",
        MAX_SECRET_FILE,
        "the file holds the shared secret of this client in the RADIUS server's clients.conf",
    )?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "--radius-secret {} is readable by group or others (mode {:o}); refusing it: \
             `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    let s = text.trim_end_matches(['\n', '\r']);
    if s.is_empty() {
        return Err(usage(format!(
            "--radius-secret {}: the file is empty",
            path.display()
        )));
    }
    Ok(Zeroizing::new(s.as_bytes().to_vec()))
}

/// One EAP-Response of a supplicant to pass on.
#[derive(Debug)]
pub struct AccessRequest<'a> {
    pub supplicant: [u8; 6],
    pub authenticator: [u8; 6],
    pub identity: &'a [u8],
    pub eap: &'a [u8],
}

/// What became of a request.
pub enum RadiusAnswer {
    /// Access-Challenge: the EAP-Request to pass to the supplicant.
    Challenge { eap: Vec<u8> },
    /// Access-Accept, with the MSK from the MS-MPPE keys and the EAP Session-Id (EAP-Key-Name)
    /// when the server sent them.
    Accept {
        eap: Option<Vec<u8>>,
        msk: Option<Zeroizing<[u8; 64]>>,
        key_name: Option<Vec<u8>>,
        session_timeout: Option<u32>,
    },
    Reject {
        eap: Option<Vec<u8>>,
        reply_message: Option<String>,
    },
    /// No valid answer after every try.
    Timeout { tries: u32 },
}

impl std::fmt::Debug for RadiusAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RadiusAnswer::Challenge { eap } => write!(f, "Challenge({} octets)", eap.len()),
            RadiusAnswer::Accept { msk, key_name, .. } => write!(
                f,
                "Accept(msk: {}, key name: {})",
                msk.is_some(),
                key_name.is_some()
            ),
            RadiusAnswer::Reject { reply_message, .. } => write!(f, "Reject({reply_message:?})"),
            RadiusAnswer::Timeout { tries } => write!(f, "Timeout({tries} tries)"),
        }
    }
}

/// Why an answer was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RadiusDrop {
    Malformed,
    WrongSource,
    UnknownId,
    BadResponseAuthenticator,
    BadMessageAuthenticator,
    MissingMessageAuthenticator,
    BadMppeKey,
    UnexpectedCode,
}

impl RadiusDrop {
    pub const ALL: [&'static str; 8] = [
        "malformed",
        "wrong_source",
        "unknown_id",
        "bad_response_authenticator",
        "bad_message_authenticator",
        "missing_message_authenticator",
        "bad_mppe_key",
        "unexpected_code",
    ];

    fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        Self::ALL.get(self.index()).copied().unwrap_or("unknown")
    }
}

/// What the client did and refused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RadiusCounters {
    pub requests: u64,
    pub retransmissions: u64,
    pub timeouts: u64,
    pub challenges: u64,
    pub accepts: u64,
    pub rejects: u64,
    /// Per [`RadiusDrop::ALL`].
    pub drops: [u64; 8],
}

impl RadiusCounters {
    pub fn named_drops(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        RadiusDrop::ALL
            .iter()
            .copied()
            .zip(self.drops.iter().copied())
    }

    pub fn json(&self) -> serde_json::Value {
        let drops: serde_json::Map<String, serde_json::Value> = self
            .named_drops()
            .map(|(k, v)| (k.to_string(), v.into()))
            .collect();
        serde_json::json!({
            "requests": self.requests, "retransmissions": self.retransmissions,
            "timeouts": self.timeouts, "challenges": self.challenges, "accepts": self.accepts,
            "rejects": self.rejects, "drops": drops,
        })
    }
}

struct InFlight {
    supplicant: [u8; 6],
    packet: Vec<u8>,
    request_auth: [u8; 16],
    sent: u32,
    due: Instant,
}

/// The authenticator's RADIUS client: one request in flight per supplicant.
pub struct RadiusClient {
    cfg: RadiusConfig,
    sock: UdpSocket,
    in_flight: BTreeMap<u8, InFlight>,
    /// The State of the last Access-Challenge, per supplicant.
    state: BTreeMap<[u8; 6], Vec<u8>>,
    next_id: u8,
    counters: RadiusCounters,
    buf: Vec<u8>,
}

impl std::fmt::Debug for RadiusClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadiusClient")
            .field("cfg", &self.cfg)
            .field("in_flight", &self.in_flight.len())
            .field("counters", &self.counters)
            .finish()
    }
}

fn station_id(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join("-")
}

fn hmac_md5(secret: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut m = <HmacMd5 as Mac>::new_from_slice(secret).expect("HMAC takes keys of any length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// Decrypts an MS-MPPE key attribute value (RFC 2548 2.4.2): salt (2, high bit set), then the
/// encrypted length ‖ key ‖ padding in 16-octet blocks.
pub fn decrypt_mppe_key(
    secret: &[u8],
    request_auth: &[u8; 16],
    value: &[u8],
) -> Option<Zeroizing<Vec<u8>>> {
    let (salt, c) = (value.get(..2)?, value.get(2..)?);
    if salt.first()? & 0x80 == 0 || c.is_empty() || c.len() % 16 != 0 {
        return None;
    }
    let mut plain = Zeroizing::new(Vec::with_capacity(c.len()));
    let mut prev: &[u8] = &[];
    for (i, block) in c.chunks(16).enumerate() {
        let b = if i == 0 {
            md5(&[secret, request_auth, salt])
        } else {
            md5(&[secret, prev])
        };
        plain.extend(block.iter().zip(b).map(|(x, y)| x ^ y));
        prev = block;
    }
    let len = usize::from(*plain.first()?);
    let key = plain.get(1..1 + len)?;
    Some(Zeroizing::new(key.to_vec()))
}

/// Encrypts an MS-MPPE key (the server's side of [`decrypt_mppe_key`]; tests).
pub fn encrypt_mppe_key(
    secret: &[u8],
    request_auth: &[u8; 16],
    salt: [u8; 2],
    key: &[u8],
) -> Vec<u8> {
    let mut p = vec![key.len() as u8];
    p.extend_from_slice(key);
    while p.len() % 16 != 0 {
        p.push(0);
    }
    let mut out = salt.to_vec();
    let mut prev: Vec<u8> = Vec::new();
    for (i, block) in p.chunks(16).enumerate() {
        let b = if i == 0 {
            md5(&[secret, request_auth, &salt])
        } else {
            md5(&[secret, &prev])
        };
        let c: Vec<u8> = block.iter().zip(b).map(|(x, y)| x ^ y).collect();
        out.extend_from_slice(&c);
        prev = c;
    }
    out
}

impl RadiusClient {
    /// A client of `cfg.server` on a fresh UDP socket.
    pub fn new(cfg: RadiusConfig) -> Result<RadiusClient> {
        let bind: SocketAddr = if cfg.server.is_ipv4() {
            "0.0.0.0:0".parse()?
        } else {
            "[::]:0".parse()?
        };
        let sock = UdpSocket::bind(bind).context("binding the RADIUS client's UDP socket")?;
        sock.set_nonblocking(true)?;
        let mut id = [0u8; 1];
        getrandom::fill(&mut id).map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
        Ok(RadiusClient {
            cfg,
            sock,
            in_flight: BTreeMap::new(),
            state: BTreeMap::new(),
            next_id: id[0],
            counters: RadiusCounters::default(),
            buf: vec![0u8; radius::MAX_LEN + 1],
        })
    }

    pub fn counters(&self) -> &RadiusCounters {
        &self.counters
    }

    /// The client's own address (the port answers come to).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Forgets a supplicant: its request in flight and its State.
    pub fn forget(&mut self, supplicant: [u8; 6]) {
        self.in_flight.retain(|_, f| f.supplicant != supplicant);
        self.state.remove(&supplicant);
    }

    /// When the next retransmission or timeout falls due.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.in_flight.values().map(|f| f.due).min()
    }

    fn alloc_id(&mut self) -> Option<u8> {
        if self.in_flight.len() >= MAX_IN_FLIGHT {
            return None;
        }
        for _ in 0..256 {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            if !self.in_flight.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }

    /// Sends an Access-Request for `req` (replacing the supplicant's request in flight).
    pub fn submit(&mut self, now: Instant, req: &AccessRequest<'_>) -> Result<()> {
        self.in_flight.retain(|_, f| f.supplicant != req.supplicant);
        let id = self
            .alloc_id()
            .ok_or_else(|| anyhow::anyhow!("RADIUS: too many requests in flight"))?;
        let mut request_auth = [0u8; 16];
        getrandom::fill(&mut request_auth).map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
        let packet = self.access_request(id, &request_auth, req)?;
        self.send(&packet);
        self.counters.requests += 1;
        self.in_flight.insert(
            id,
            InFlight {
                supplicant: req.supplicant,
                packet,
                request_auth,
                sent: 1,
                due: now + self.cfg.timeout,
            },
        );
        Ok(())
    }

    fn access_request(&self, id: u8, auth: &[u8; 16], req: &AccessRequest<'_>) -> Result<Vec<u8>> {
        let bad = |e| anyhow::anyhow!("building an Access-Request: {e}");
        let mut b = Builder::new(code::ACCESS_REQUEST, id, auth);
        let user = if req.identity.is_empty() {
            b"anonymous".as_slice()
        } else {
            req.identity
                .get(..req.identity.len().min(radius::MAX_VALUE))
                .unwrap_or_default()
        };
        b.attr(attr::USER_NAME, user).map_err(bad)?;
        b.attr(attr::NAS_IDENTIFIER, self.cfg.nas_identifier.as_bytes())
            .map_err(bad)?;
        b.attr_u32(attr::NAS_PORT_TYPE, NAS_PORT_TYPE_ETHERNET)
            .map_err(bad)?;
        b.attr_u32(attr::SERVICE_TYPE, SERVICE_TYPE_FRAMED)
            .map_err(bad)?;
        b.attr_u32(attr::FRAMED_MTU, u32::from(self.cfg.framed_mtu))
            .map_err(bad)?;
        b.attr(
            attr::CALLED_STATION_ID,
            station_id(req.authenticator).as_bytes(),
        )
        .map_err(bad)?;
        b.attr(
            attr::CALLING_STATION_ID,
            station_id(req.supplicant).as_bytes(),
        )
        .map_err(bad)?;
        if let Some(s) = self.state.get(&req.supplicant) {
            b.attr(attr::STATE, s).map_err(bad)?;
        }
        b.eap_message(req.eap).map_err(bad)?;
        let off = b.message_authenticator().map_err(bad)?;
        let mut pkt = b.finish();
        let mac = hmac_md5(&self.cfg.secret, &[&pkt]);
        if let Some(dst) = pkt.get_mut(off..off + 16) {
            dst.copy_from_slice(&mac);
        }
        Ok(pkt)
    }

    fn send(&self, packet: &[u8]) {
        // A send error (no route for a moment) is a lost datagram: the retransmission retries.
        let _ = self.sock.send_to(packet, self.cfg.server);
    }

    fn drop_answer(&mut self, why: RadiusDrop) {
        if let Some(c) = self.counters.drops.get_mut(why.index()) {
            *c += 1;
        }
    }

    /// Reads every answer waiting and runs the retransmission timers; returns what became of
    /// requests.
    pub fn poll(&mut self, now: Instant) -> Vec<([u8; 6], RadiusAnswer)> {
        let mut out = Vec::new();
        for _ in 0..256 {
            let (n, from) = match self.sock.recv_from(&mut self.buf) {
                Ok(x) => x,
                Err(_) => break,
            };
            let datagram = self.buf.get(..n).unwrap_or_default().to_vec();
            match self.answer(from, &datagram) {
                Ok(a) => out.push(a),
                Err(why) => self.drop_answer(why),
            }
        }
        let due: Vec<u8> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.due <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Some(f) = self.in_flight.get_mut(&id) else {
                continue;
            };
            if f.sent >= self.cfg.retries {
                let tries = f.sent;
                let sup = f.supplicant;
                self.in_flight.remove(&id);
                self.state.remove(&sup);
                self.counters.timeouts += 1;
                out.push((sup, RadiusAnswer::Timeout { tries }));
            } else {
                f.sent += 1;
                f.due = now + self.cfg.timeout;
                let p = f.packet.clone();
                self.send(&p);
                self.counters.retransmissions += 1;
            }
        }
        out
    }

    /// Checks one datagram against the request it answers.
    fn answer(
        &mut self,
        from: SocketAddr,
        d: &[u8],
    ) -> Result<([u8; 6], RadiusAnswer), RadiusDrop> {
        if from != self.cfg.server {
            return Err(RadiusDrop::WrongSource);
        }
        let p = Packet::parse(d).map_err(|_| RadiusDrop::Malformed)?;
        let f = self
            .in_flight
            .get(&p.identifier())
            .ok_or(RadiusDrop::UnknownId)?;
        let secret = &self.cfg.secret;
        // Response Authenticator (RFC 2865 3).
        let bytes = p.bytes();
        let want = md5(&[
            bytes.get(..4).unwrap_or_default(),
            &f.request_auth,
            bytes.get(radius::HEADER_LEN..).unwrap_or_default(),
            secret,
        ]);
        if !bool::from(want.ct_eq(p.authenticator())) {
            return Err(RadiusDrop::BadResponseAuthenticator);
        }
        // Message-Authenticator (RFC 3579 3.2): over the packet with the Request
        // Authenticator in place and the attribute's value zeroed.
        let eap = p.eap_message();
        match p.message_authenticator_offset() {
            Some(off) => {
                let mut copy = bytes.to_vec();
                if let Some(a) = copy.get_mut(radius::AUTHENTICATOR) {
                    a.copy_from_slice(&f.request_auth);
                }
                let got = copy.get(off..off + 16).unwrap_or_default().to_vec();
                if let Some(m) = copy.get_mut(off..off + 16) {
                    m.fill(0);
                }
                let mac = hmac_md5(secret, &[&copy]);
                if !bool::from(mac.ct_eq(&got)) {
                    return Err(RadiusDrop::BadMessageAuthenticator);
                }
            }
            None if eap.is_some() => return Err(RadiusDrop::MissingMessageAuthenticator),
            None => {}
        }
        let request_auth = f.request_auth;
        let supplicant = f.supplicant;
        let answer = match p.code() {
            code::ACCESS_CHALLENGE => {
                let eap = eap.ok_or(RadiusDrop::Malformed)?;
                match p.first(attr::STATE) {
                    Some(s) => {
                        self.state.insert(supplicant, s.to_vec());
                    }
                    None => {
                        self.state.remove(&supplicant);
                    }
                }
                self.counters.challenges += 1;
                RadiusAnswer::Challenge { eap }
            }
            code::ACCESS_ACCEPT => {
                let key = |t| {
                    p.vendor_attribute(microsoft::VENDOR_ID, t)
                        .map(|v| decrypt_mppe_key(secret, &request_auth, v))
                };
                let msk = match (key(microsoft::MPPE_RECV_KEY), key(microsoft::MPPE_SEND_KEY)) {
                    (Some(Some(r)), Some(Some(s))) if r.len() >= 32 && s.len() >= 32 => {
                        let mut m = Zeroizing::new([0u8; 64]);
                        m[..32].copy_from_slice(&r[..32]);
                        m[32..].copy_from_slice(&s[..32]);
                        Some(m)
                    }
                    (None, None) => None,
                    _ => return Err(RadiusDrop::BadMppeKey),
                };
                self.state.remove(&supplicant);
                self.counters.accepts += 1;
                RadiusAnswer::Accept {
                    eap,
                    msk,
                    key_name: p.first(attr::EAP_KEY_NAME).map(<[u8]>::to_vec),
                    session_timeout: p
                        .first(attr::SESSION_TIMEOUT)
                        .and_then(|v| v.try_into().ok())
                        .map(u32::from_be_bytes),
                }
            }
            code::ACCESS_REJECT => {
                self.state.remove(&supplicant);
                self.counters.rejects += 1;
                RadiusAnswer::Reject {
                    eap,
                    reply_message: p
                        .first(attr::REPLY_MESSAGE)
                        .map(|m| String::from_utf8_lossy(m).into_owned()),
                }
            }
            _ => return Err(RadiusDrop::UnexpectedCode),
        };
        self.in_flight.remove(&p.identifier());
        Ok((supplicant, answer))
    }
}

#[cfg(test)]
mod tests;
