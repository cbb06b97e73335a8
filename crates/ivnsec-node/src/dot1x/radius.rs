//! The RADIUS client of the authenticator (RFC 2865, RFC 3579, RFC 2548).
//!
//! One [`RadiusClient`] owns one nonblocking UDP socket towards one server. The authenticator
//! driver hands it each EAP-Response of a supplicant ([`RadiusClient::submit`]) and gets the
//! server's answers back from [`RadiusClient::poll`], which also retransmits and gives up.
//!
//! Every Access-Request carries a Message-Authenticator (RFC 3579 §3.2: "MUST be used to protect
//! all Access-Request packets containing an EAP-Message attribute"). A response is accepted only
//! from the server's address, for an identifier in flight, with the right Response Authenticator
//! (RFC 2865 §3) and, when it carries an EAP-Message, the right Message-Authenticator; everything
//! else is dropped and counted. The MSK of an Access-Accept is MS-MPPE-Recv-Key ‖ MS-MPPE-Send-Key
//! (RFC 5216 §2.3 and RFC 2548 §2.4), each decrypted with the shared secret and the Request
//! Authenticator.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use hmac::{Hmac, Mac};
use ivnsec_core::wire::radius::{
    self as wire, AUTHENTICATOR_LEN, Builder, CODE_ACCESS_ACCEPT, CODE_ACCESS_CHALLENGE,
    CODE_ACCESS_REJECT, CODE_ACCESS_REQUEST, Packet,
};
use md5::{Digest, Md5};
use zeroize::{Zeroize, Zeroizing};

use crate::error::usage;
use crate::keys::keyfile;

/// Largest shared-secret file read (bytes).
pub const MAX_SECRET_FILE: u64 = 1024;

/// Where and how to reach the RADIUS server.
pub struct RadiusConfig {
    /// The server's authentication address (port 1812).
    pub server: SocketAddr,
    /// The shared secret (RFC 2865 §3), as in the server's clients.conf.
    pub secret: Zeroizing<Vec<u8>>,
    /// NAS-Identifier sent in every request.
    pub nas_identifier: String,
    /// How long to wait for an answer before retransmitting (default 1 s).
    pub timeout: Duration,
    /// Retransmissions before giving up (default 3).
    pub retries: u32,
    /// Framed-MTU: the largest EAP packet the server may send (default 1400).
    pub framed_mtu: u16,
}

impl RadiusConfig {
    /// A configuration with the default timeout, retries and Framed-MTU.
    pub fn new(server: SocketAddr, secret: Zeroizing<Vec<u8>>, nas_identifier: &str) -> Self {
        RadiusConfig {
            server,
            secret,
            nas_identifier: nas_identifier.to_string(),
            timeout: Duration::from_secs(1),
            retries: 3,
            framed_mtu: 1400,
        }
    }
}

impl std::fmt::Debug for RadiusConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadiusConfig")
            .field("server", &self.server)
            .field("secret", &"<redacted>")
            .field("nas_identifier", &self.nas_identifier)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("framed_mtu", &self.framed_mtu)
            .finish()
    }
}

/// Reads the shared secret from `path`: one line (a trailing newline is not part of it), at most
/// [`MAX_SECRET_FILE`] bytes, from a file group and others cannot read. Errors are usage errors
/// naming the file.
pub fn read_secret(path: &Path) -> Result<Zeroizing<Vec<u8>>> {
    let file = path.display();
    let hint = "put the secret of the server's clients.conf in it, alone on one line, and \
                `chmod 600` it";
    let (text, mode) = keyfile::read_secret(path, "RADIUS secret file", MAX_SECRET_FILE, hint)?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "RADIUS secret file {file} is readable by group or others (mode {:o}); refusing it: \
             `chmod 600 {file}`",
            mode & 0o777
        )));
    }
    let line = text.strip_suffix('\n').unwrap_or(&text);
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.contains('\n') {
        return Err(usage(format!(
            "RADIUS secret file {file}: more than one line ({hint})"
        )));
    }
    if line.is_empty() {
        return Err(usage(format!("RADIUS secret file {file}: empty ({hint})")));
    }
    Ok(Zeroizing::new(line.as_bytes().to_vec()))
}

/// One Access-Request of the authenticator.
#[derive(Debug, Clone, Copy)]
pub struct AccessRequest<'a> {
    /// The supplicant's MAC address (Calling-Station-Id).
    pub supplicant: [u8; 6],
    /// The authenticator's port MAC address (Called-Station-Id).
    pub authenticator: [u8; 6],
    /// The identity of the EAP-Response/Identity (User-Name).
    pub identity: &'a [u8],
    /// The EAP-Response to forward.
    pub eap: &'a [u8],
}

/// What the server answered for one supplicant (exhaustive: a driver matches every case).
pub enum RadiusAnswer {
    /// Access-Challenge: the EAP-Request to pass on.
    Challenge {
        /// EAP packet.
        eap: Vec<u8>,
    },
    /// Access-Accept.
    Accept {
        /// The EAP-Success, when sent.
        eap: Option<Vec<u8>>,
        /// MS-MPPE-Recv-Key ‖ MS-MPPE-Send-Key.
        msk: Option<Zeroizing<[u8; 64]>>,
        /// EAP-Key-Name (the EAP Session-Id).
        key_name: Option<Vec<u8>>,
        /// Session-Timeout in seconds.
        session_timeout: Option<u32>,
    },
    /// Access-Reject.
    Reject {
        /// The EAP-Failure, when sent.
        eap: Option<Vec<u8>>,
        /// Reply-Message.
        reply_message: Option<String>,
    },
    /// No valid answer after every retransmission. Usually the server does not run, or it
    /// silently drops requests signed with another secret than its clients.conf holds.
    Timeout {
        /// Transmissions made.
        tries: u32,
    },
}

impl std::fmt::Debug for RadiusAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RadiusAnswer::Challenge { eap } => f
                .debug_struct("Challenge")
                .field("eap_len", &eap.len())
                .finish(),
            RadiusAnswer::Accept {
                eap,
                msk,
                key_name,
                session_timeout,
            } => f
                .debug_struct("Accept")
                .field("eap_len", &eap.as_ref().map(Vec::len))
                .field("msk", &msk.as_ref().map(|_| "<redacted>"))
                .field("key_name", &key_name.as_ref().map(hex::encode))
                .field("session_timeout", session_timeout)
                .finish(),
            RadiusAnswer::Reject { eap, reply_message } => f
                .debug_struct("Reject")
                .field("eap_len", &eap.as_ref().map(Vec::len))
                .field("reply_message", reply_message)
                .finish(),
            RadiusAnswer::Timeout { tries } => {
                f.debug_struct("Timeout").field("tries", tries).finish()
            }
        }
    }
}

impl RadiusAnswer {
    /// The sentence a user reads for a [`RadiusAnswer::Timeout`].
    pub fn timeout_message(server: SocketAddr, tries: u32) -> String {
        format!(
            "no answer from the RADIUS server {server} after {tries} tries; check that it runs \
             and that the secret matches its clients.conf"
        )
    }
}

/// What the client did and dropped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RadiusCounters {
    /// Access-Requests sent (first transmissions).
    pub sent: u64,
    /// Retransmissions.
    pub retransmitted: u64,
    /// Requests given up.
    pub timeouts: u64,
    /// Access-Accepts taken.
    pub accepts: u64,
    /// Access-Rejects taken.
    pub rejects: u64,
    /// Access-Challenges taken.
    pub challenges: u64,
    /// Dropped: not a RADIUS response.
    pub malformed: u64,
    /// Dropped: no request in flight with that identifier.
    pub unknown_id: u64,
    /// Dropped: not from the server's address.
    pub wrong_source: u64,
    /// Dropped: wrong Response Authenticator (another secret, or forged).
    pub bad_response_authenticator: u64,
    /// Dropped: wrong Message-Authenticator.
    pub bad_message_authenticator: u64,
    /// Dropped: EAP-Message without Message-Authenticator.
    pub missing_message_authenticator: u64,
    /// Dropped: MS-MPPE keys missing one half or not decrypting sanely.
    pub bad_mppe_key: u64,
}

/// One request in flight.
struct Pending {
    id: u8,
    auth: [u8; AUTHENTICATOR_LEN],
    packet: Vec<u8>,
    deadline: Instant,
    tries: u32,
}

/// The RADIUS client: one UDP socket, one request in flight per supplicant.
pub struct RadiusClient {
    cfg: RadiusConfig,
    sock: UdpSocket,
    pending: HashMap<[u8; 6], Pending>,
    by_id: HashMap<u8, [u8; 6]>,
    state: HashMap<[u8; 6], Vec<u8>>,
    next_id: u8,
    counters: RadiusCounters,
}

impl std::fmt::Debug for RadiusClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadiusClient")
            .field("cfg", &self.cfg)
            .field("in_flight", &self.pending.len())
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

type HmacMd5 = Hmac<Md5>;

fn hmac_md5(secret: &[u8], data: &[u8]) -> [u8; 16] {
    match <HmacMd5 as Mac>::new_from_slice(secret) {
        Ok(mut m) => {
            m.update(data);
            m.finalize().into_bytes().into()
        }
        // HMAC takes keys of every length: never taken. A zero MAC would only fail checks.
        Err(_) => [0; 16],
    }
}

fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

/// "AA-BB-CC-DD-EE-FF" (RFC 3580 §3.20/3.21).
pub fn station_id(mac: [u8; 6]) -> String {
    let [a, b, c, d, e, f] = mac;
    format!("{a:02X}-{b:02X}-{c:02X}-{d:02X}-{e:02X}-{f:02X}")
}

/// The Response Authenticator of `packet` answering a request with `request_auth`
/// (RFC 2865 §3): MD5(Code‖ID‖Length‖RequestAuth‖Attributes‖Secret).
pub fn response_authenticator(
    packet: &Packet<'_>,
    request_auth: &[u8; 16],
    secret: &[u8],
) -> [u8; 16] {
    let mut h = Md5::new();
    h.update(wire::with_authenticator(packet, request_auth));
    h.update(secret);
    h.finalize().into()
}

/// The Message-Authenticator of `packet` (RFC 3579 §3.2): HMAC-MD5 over the packet with the
/// Message-Authenticator's value zeroed and `auth` in the Authenticator field (the Request
/// Authenticator, for requests and responses alike). `None` without a Message-Authenticator.
pub fn message_authenticator(
    packet: &Packet<'_>,
    auth: &[u8; 16],
    secret: &[u8],
) -> Option<[u8; 16]> {
    let at = wire::message_authenticator_offset(packet)?;
    let data = wire::zero_message_authenticator(&wire::with_authenticator(packet, auth), at);
    Some(hmac_md5(secret, &data))
}

/// Decrypts an MS-MPPE-Send-Key or -Recv-Key value (RFC 2548 §2.4.2): Salt (2, high bit set) ‖
/// String, String = P xor b with b(1) = MD5(S‖R‖A), b(i) = MD5(S‖c(i-1)), P = Key-Length ‖ Key ‖
/// padding. `None` when it does not decrypt sanely.
pub fn decrypt_mppe_key(
    value: &[u8],
    secret: &[u8],
    request_auth: &[u8; 16],
) -> Option<Zeroizing<Vec<u8>>> {
    let (salt, cipher) = value.split_first_chunk::<2>()?;
    if salt[0] & 0x80 == 0 || cipher.is_empty() || cipher.len() % 16 != 0 {
        return None;
    }
    let mut plain = Zeroizing::new(Vec::with_capacity(cipher.len()));
    let mut prev: &[u8] = &[];
    for (i, c) in cipher.chunks(16).enumerate() {
        let mut h = Md5::new();
        h.update(secret);
        if i == 0 {
            h.update(request_auth);
            h.update(salt);
        } else {
            h.update(prev);
        }
        let mut b: [u8; 16] = h.finalize().into();
        plain.extend(c.iter().zip(b.iter()).map(|(x, y)| x ^ y));
        b.zeroize();
        prev = c;
    }
    let (&len, rest) = plain.split_first()?;
    let key = rest.get(..usize::from(len))?;
    Some(Zeroizing::new(key.to_vec()))
}

/// Encrypts a key as an MS-MPPE-Send-Key or -Recv-Key value (RFC 2548 §2.4.2); the inverse of
/// [`decrypt_mppe_key`], for tests and simulated servers.
pub fn encrypt_mppe_key(
    key: &[u8],
    salt: [u8; 2],
    secret: &[u8],
    request_auth: &[u8; 16],
) -> Option<Vec<u8>> {
    let len = u8::try_from(key.len()).ok()?;
    let mut p = Zeroizing::new(Vec::with_capacity(key.len() + 16));
    p.push(len);
    p.extend_from_slice(key);
    while p.len() % 16 != 0 {
        p.push(0);
    }
    let mut out = salt.to_vec();
    let mut prev = Vec::new();
    for (i, chunk) in p.chunks(16).enumerate() {
        let mut h = Md5::new();
        h.update(secret);
        if i == 0 {
            h.update(request_auth);
            h.update(salt);
        } else {
            h.update(&prev);
        }
        let b: [u8; 16] = h.finalize().into();
        prev = chunk.iter().zip(b.iter()).map(|(x, y)| x ^ y).collect();
        out.extend_from_slice(&prev);
    }
    Some(out)
}

/// Why a response was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseDrop {
    /// Not a RADIUS response.
    Malformed,
    /// Wrong Response Authenticator.
    BadResponseAuthenticator,
    /// Wrong Message-Authenticator.
    BadMessageAuthenticator,
    /// EAP-Message without Message-Authenticator.
    MissingMessageAuthenticator,
    /// MS-MPPE keys missing one half or not decrypting.
    BadMppeKey,
}

/// Checks a response to the request with `request_auth` and turns it into an answer. The
/// checks of RFC 2865 §3, RFC 3579 §3.2 and RFC 2548 §2.4; never panics on any input.
pub fn check_response(
    buf: &[u8],
    request_auth: &[u8; 16],
    secret: &[u8],
) -> Result<(RadiusAnswer, Option<Vec<u8>>), ResponseDrop> {
    let p = Packet::new_checked(buf).map_err(|_| ResponseDrop::Malformed)?;
    if !matches!(
        p.code(),
        CODE_ACCESS_ACCEPT | CODE_ACCESS_REJECT | CODE_ACCESS_CHALLENGE
    ) {
        return Err(ResponseDrop::Malformed);
    }
    if !ct_eq(
        &response_authenticator(&p, request_auth, secret),
        &p.authenticator(),
    ) {
        return Err(ResponseDrop::BadResponseAuthenticator);
    }
    let eap = p.eap_message();
    if p.count(wire::ATTR_MESSAGE_AUTHENTICATOR) > 0 {
        let got = wire::message_authenticator_offset(&p)
            .and_then(|at| p.as_bytes().get(at..at + AUTHENTICATOR_LEN));
        let want = message_authenticator(&p, request_auth, secret);
        match (got, want) {
            (Some(g), Some(w)) if ct_eq(g, &w) => {}
            _ => return Err(ResponseDrop::BadMessageAuthenticator),
        }
    } else if eap.is_some() {
        return Err(ResponseDrop::MissingMessageAuthenticator);
    }
    let state = p.attr(wire::ATTR_STATE).map(<[u8]>::to_vec);
    let answer = match p.code() {
        CODE_ACCESS_CHALLENGE => RadiusAnswer::Challenge {
            eap: eap.unwrap_or_default(),
        },
        CODE_ACCESS_REJECT => RadiusAnswer::Reject {
            eap,
            reply_message: p
                .attr(wire::ATTR_REPLY_MESSAGE)
                .map(|m| String::from_utf8_lossy(m).into_owned()),
        },
        _ => {
            let recv = p.vendor_attr(wire::VENDOR_MICROSOFT, wire::MS_MPPE_RECV_KEY);
            let send = p.vendor_attr(wire::VENDOR_MICROSOFT, wire::MS_MPPE_SEND_KEY);
            let msk = match (recv, send) {
                (None, None) => None,
                (Some(r), Some(s)) => {
                    let r = decrypt_mppe_key(r, secret, request_auth)
                        .ok_or(ResponseDrop::BadMppeKey)?;
                    let s = decrypt_mppe_key(s, secret, request_auth)
                        .ok_or(ResponseDrop::BadMppeKey)?;
                    let (Some(r), Some(s)) = (r.get(..32), s.get(..32)) else {
                        return Err(ResponseDrop::BadMppeKey);
                    };
                    let mut msk = Zeroizing::new([0u8; 64]);
                    let (lo, hi) = msk.split_at_mut(32);
                    lo.copy_from_slice(r);
                    hi.copy_from_slice(s);
                    Some(msk)
                }
                _ => return Err(ResponseDrop::BadMppeKey),
            };
            RadiusAnswer::Accept {
                eap,
                msk,
                key_name: p.attr(wire::ATTR_EAP_KEY_NAME).map(<[u8]>::to_vec),
                session_timeout: p.attr_u32(wire::ATTR_SESSION_TIMEOUT),
            }
        }
    };
    Ok((answer, state))
}

impl RadiusClient {
    /// Opens the client's socket (an ephemeral port of the server's address family).
    pub fn new(cfg: RadiusConfig) -> Result<RadiusClient> {
        if cfg.secret.is_empty() {
            return Err(usage("the RADIUS shared secret is empty"));
        }
        let bind: SocketAddr = if cfg.server.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let sock = UdpSocket::bind(bind).context("cannot open the RADIUS client's UDP socket")?;
        sock.set_nonblocking(true)
            .context("cannot make the RADIUS socket nonblocking")?;
        Ok(RadiusClient {
            cfg,
            sock,
            pending: HashMap::new(),
            by_id: HashMap::new(),
            state: HashMap::new(),
            next_id: 0,
            counters: RadiusCounters::default(),
        })
    }

    /// The server this client talks to.
    pub fn server(&self) -> SocketAddr {
        self.cfg.server
    }

    /// This client's own address: the port the server's answers come to.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.sock.local_addr().ok()
    }

    fn alloc_id(&mut self) -> Option<u8> {
        for _ in 0..=u8::MAX {
            let id = self.next_id;
            self.next_id = self.next_id.wrapping_add(1);
            if !self.by_id.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }

    /// Sends the EAP-Response `req.eap` of a supplicant in an Access-Request. A request still in
    /// flight for the same supplicant is abandoned (its answer will be dropped).
    pub fn submit(&mut self, now: Instant, req: &AccessRequest) -> Result<()> {
        self.drop_pending(req.supplicant);
        let id = self
            .alloc_id()
            .ok_or_else(|| anyhow!("256 RADIUS requests in flight; no identifier free"))?;
        let mut auth = [0u8; AUTHENTICATOR_LEN];
        getrandom::fill(&mut auth).map_err(|e| anyhow!("no randomness for RADIUS: {e}"))?;
        let packet = self.build_request(id, &auth, req)?;
        match self.sock.send_to(&packet, self.cfg.server) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {}
            Err(e) => {
                return Err(anyhow!(
                    "cannot send to the RADIUS server {}: {e}",
                    self.cfg.server
                ));
            }
        }
        self.counters.sent += 1;
        self.by_id.insert(id, req.supplicant);
        self.pending.insert(
            req.supplicant,
            Pending {
                id,
                auth,
                packet,
                deadline: now + self.cfg.timeout,
                tries: 1,
            },
        );
        Ok(())
    }

    fn build_request(&self, id: u8, auth: &[u8; 16], req: &AccessRequest) -> Result<Vec<u8>> {
        let mut b = Builder::new(CODE_ACCESS_REQUEST, id, auth);
        let identity = req.identity.get(..253).unwrap_or(req.identity);
        let e = |e: wire::RadiusError| anyhow!("cannot build the Access-Request: {e}");
        if !identity.is_empty() {
            b.attr(wire::ATTR_USER_NAME, identity).map_err(e)?;
        }
        let nas = self.cfg.nas_identifier.as_bytes();
        if !nas.is_empty() {
            b.attr(wire::ATTR_NAS_IDENTIFIER, nas.get(..253).unwrap_or(nas))
                .map_err(e)?;
        }
        b.attr_u32(wire::ATTR_SERVICE_TYPE, wire::SERVICE_TYPE_FRAMED)
            .map_err(e)?;
        b.attr_u32(wire::ATTR_NAS_PORT_TYPE, wire::NAS_PORT_TYPE_ETHERNET)
            .map_err(e)?;
        b.attr_u32(wire::ATTR_FRAMED_MTU, u32::from(self.cfg.framed_mtu))
            .map_err(e)?;
        b.attr(
            wire::ATTR_CALLED_STATION_ID,
            station_id(req.authenticator).as_bytes(),
        )
        .map_err(e)?;
        b.attr(
            wire::ATTR_CALLING_STATION_ID,
            station_id(req.supplicant).as_bytes(),
        )
        .map_err(e)?;
        if let Some(state) = self.state.get(&req.supplicant) {
            b.attr(wire::ATTR_STATE, state).map_err(e)?;
        }
        b.eap_message(req.eap).map_err(e)?;
        let at = b.message_authenticator().map_err(e)?;
        let mut packet = b.finish();
        let ma = hmac_md5(&self.cfg.secret, &packet);
        if let Some(v) = packet.get_mut(at..at + AUTHENTICATOR_LEN) {
            v.copy_from_slice(&ma);
        }
        Ok(packet)
    }

    fn drop_pending(&mut self, supplicant: [u8; 6]) {
        if let Some(p) = self.pending.remove(&supplicant) {
            self.by_id.remove(&p.id);
        }
    }

    /// Reads every datagram waiting, retransmits requests that are due and gives up on those
    /// out of retries. Returns the answers, per supplicant.
    pub fn poll(&mut self, now: Instant) -> Vec<([u8; 6], RadiusAnswer)> {
        let mut out = Vec::new();
        let mut buf = [0u8; wire::MAX_LEN + 1];
        loop {
            match self.sock.recv_from(&mut buf) {
                Ok((n, from)) => {
                    if let Some(a) = self.handle(buf.get(..n).unwrap_or_default(), from) {
                        out.push(a);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // WouldBlock ends the batch; ICMP errors (ConnectionRefused) say nothing useful
                // for a given request: the retransmission timer handles them.
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            }
        }
        let due: Vec<[u8; 6]> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(s, _)| *s)
            .collect();
        for s in due {
            let give_up = self
                .pending
                .get(&s)
                .is_some_and(|p| p.tries > self.cfg.retries);
            if give_up {
                if let Some(p) = self.pending.remove(&s) {
                    self.by_id.remove(&p.id);
                    self.state.remove(&s);
                    self.counters.timeouts += 1;
                    out.push((s, RadiusAnswer::Timeout { tries: p.tries }));
                }
            } else if let Some(p) = self.pending.get_mut(&s) {
                let _ = self.sock.send_to(&p.packet, self.cfg.server);
                p.tries += 1;
                p.deadline = now + self.cfg.timeout;
                self.counters.retransmitted += 1;
            }
        }
        out
    }

    fn handle(&mut self, buf: &[u8], from: SocketAddr) -> Option<([u8; 6], RadiusAnswer)> {
        if from != self.cfg.server {
            self.counters.wrong_source += 1;
            return None;
        }
        let Some(id) = buf.get(1).copied() else {
            self.counters.malformed += 1;
            return None;
        };
        let Some(&supplicant) = self.by_id.get(&id) else {
            self.counters.unknown_id += 1;
            return None;
        };
        let auth = self.pending.get(&supplicant)?.auth;
        match check_response(buf, &auth, &self.cfg.secret) {
            Ok((answer, state)) => {
                self.drop_pending(supplicant);
                match &answer {
                    RadiusAnswer::Challenge { .. } => {
                        self.counters.challenges += 1;
                        match state {
                            Some(s) => self.state.insert(supplicant, s),
                            None => self.state.remove(&supplicant),
                        };
                    }
                    RadiusAnswer::Accept { .. } => {
                        self.counters.accepts += 1;
                        self.state.remove(&supplicant);
                    }
                    _ => {
                        self.counters.rejects += 1;
                        self.state.remove(&supplicant);
                    }
                }
                Some((supplicant, answer))
            }
            Err(d) => {
                let c = &mut self.counters;
                match d {
                    ResponseDrop::Malformed => c.malformed += 1,
                    ResponseDrop::BadResponseAuthenticator => c.bad_response_authenticator += 1,
                    ResponseDrop::BadMessageAuthenticator => c.bad_message_authenticator += 1,
                    ResponseDrop::MissingMessageAuthenticator => {
                        c.missing_message_authenticator += 1
                    }
                    ResponseDrop::BadMppeKey => c.bad_mppe_key += 1,
                }
                None
            }
        }
    }

    /// When [`RadiusClient::poll`] must next be called for a retransmission or a timeout.
    pub fn next_timeout(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    /// The socket, to wait on with poll(2).
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// The counters.
    pub fn counters(&self) -> &RadiusCounters {
        &self.counters
    }

    /// Forgets a supplicant: its request in flight (a late answer is dropped) and its State.
    pub fn forget(&mut self, supplicant: [u8; 6]) {
        self.drop_pending(supplicant);
        self.state.remove(&supplicant);
    }
}

#[cfg(test)]
mod tests;
