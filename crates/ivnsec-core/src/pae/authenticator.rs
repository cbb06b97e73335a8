//! The authenticator PAE (IEEE Std 802.1X-2020 clause 8 authenticator) in EAP pass-through
//! mode (RFC 3748 §2): the EAP server is an authentication (RADIUS) server the caller reaches;
//! this machine moves EAP between each supplicant and the caller
//! ([`AuthenticatorEvent::ToServer`], [`Authenticator::server_answer`]).
//!
//! - One session per supplicant MAC, made by an EAPOL-Start or an EAP packet from a new MAC:
//!   the authenticator sends EAP-Request/Identity, again every `tx_period` up to `max_req`
//!   times. The table holds at most `max_sessions` sessions (`too_many_sessions` beyond);
//!   sessions whose supplicant never answers are removed after the retries, failed ones after
//!   their quiet period.
//! - Every Response whose identifier matches the outstanding Request goes to the server. A
//!   Challenge is forwarded to the supplicant (retransmitted every `supp_timeout` up to
//!   `max_req`); an Accept sends EAP-Success and reports the MSK and the EAP Session-Id (the
//!   server's, or `0x0D ‖ client.random ‖ server.random` of the hellos seen passing, TLS 1.2);
//!   a Reject or an unreachable server sends EAP-Failure and holds the MAC quiet for
//!   `quiet_period`.
//! - A repeated EAPOL-Start restarts a session at most once per second (`rate_limited`).
//!   EAPOL-Logoff ends that MAC's session only.
//! - Re-authentication every `reauth_period` (or on [`Authenticator::reauthenticate`]): the
//!   previous authentication stays valid until the new exchange fails
//!   ([`AuthenticatorEvent::SessionEnded`]).
//!
//! Memory is bounded: the session table, the per-session sniff buffers (the first TLS record of
//! each direction, at most 16 KiB + 5), the transmit and event queues.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::fmt;

use zeroize::Zeroizing;

use super::supplicant::SECOND;
use super::tls::{CLIENT_HELLO, SERVER_HELLO, hello_random, tls12_session_id};
use super::types::{AuthFailure, PaeCounters, PaeDrop};
use crate::wire::eap::{self, TlsRepr, code, eap_type};
use crate::wire::eapol::{FrameRepr, PAE_GROUP_ADDR, Repr as EapolRepr, packet_types};
use crate::wire::ethernet::MacAddr;

/// Longest EAP packet sent to a supplicant (an Ethernet payload of 1500 octets less the EAPOL
/// header).
pub const MAX_EAP_LEN: usize = 1496;
/// The largest TLS record (16 KiB plaintext) and its header: what the sniffer keeps.
const MAX_SNIFF: usize = 16 * 1024 + 5;
/// The ServerHello at the start of `records` selects TLS 1.3 (a supported_versions extension,
/// type 43, with 0x0304, RFC 8446 4.2.1). Bounded; `false` for anything it cannot read.
fn server_hello_is_tls13(records: &[u8]) -> bool {
    fn inner(records: &[u8]) -> Option<bool> {
        // Record header (5), handshake header (4), legacy_version (2), random (32).
        let body = records.get(5 + 4 + 2 + 32..)?;
        let (&sid_len, rest) = body.split_first()?;
        // Session id, cipher suite (2), compression (1).
        let rest = rest.get(usize::from(sid_len) + 3..)?;
        let (len, mut exts) = rest.split_first_chunk::<2>()?;
        exts = exts.get(..usize::from(u16::from_be_bytes(*len)))?;
        while let Some((hdr, tail)) = exts.split_first_chunk::<4>() {
            let ty = u16::from_be_bytes([hdr[0], hdr[1]]);
            let n = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
            let data = tail.get(..n)?;
            if ty == 43 {
                return Some(data == [3, 4]);
            }
            exts = tail.get(n..)?;
        }
        Some(false)
    }
    inner(records).unwrap_or(false)
}

/// Longest identity kept.
const MAX_IDENTITY: usize = 253;

/// Settings of an authenticator.
#[derive(Clone, Debug)]
pub struct AuthenticatorConfig {
    pub own_mac: [u8; 6],
    /// Most supplicants at once (64).
    pub max_sessions: usize,
    /// Quiet after a failure (quietPeriod, 60 s).
    pub quiet_period_ns: u64,
    /// Re-authenticate this long after each success (`None`: never).
    pub reauth_period_ns: Option<u64>,
    /// Wait for a supplicant's Response (suppTimeout, 30 s).
    pub supp_timeout_ns: u64,
    /// Wait for the server (serverTimeout, 30 s).
    pub server_timeout_ns: u64,
    /// Retransmissions of a Request (maxReq, 2).
    pub max_req: u32,
    /// Between Request/Identity retransmissions (txPeriod, 30 s).
    pub tx_period_ns: u64,
}

impl AuthenticatorConfig {
    /// The defaults of 802.1X-2020 clause 8.
    pub fn new(own_mac: [u8; 6]) -> Self {
        AuthenticatorConfig {
            own_mac,
            max_sessions: 64,
            quiet_period_ns: 60 * SECOND,
            reauth_period_ns: None,
            supp_timeout_ns: 30 * SECOND,
            server_timeout_ns: 30 * SECOND,
            max_req: 2,
            tx_period_ns: 30 * SECOND,
        }
    }
}

/// What the authenticator reports.
#[non_exhaustive]
pub enum AuthenticatorEvent {
    /// Send this EAP Response to the server (RADIUS EAP-Message), with the identity of the
    /// supplicant's Response/Identity (RADIUS User-Name).
    ToServer {
        supplicant: [u8; 6],
        eap: Vec<u8>,
        identity: Vec<u8>,
    },
    /// The server accepted. `session_id` is the server's EAP-Key-Name, else the TLS 1.2
    /// Session-Id made of the hellos seen passing, else empty (TLS 1.3 without EAP-Key-Name:
    /// its Session-Id is an exporter value only the ends know).
    Authenticated {
        supplicant: [u8; 6],
        msk: Zeroizing<[u8; 64]>,
        session_id: Vec<u8>,
    },
    Failed {
        supplicant: [u8; 6],
        reason: AuthFailure,
    },
    LoggedOff {
        supplicant: [u8; 6],
    },
    /// A session that was authenticated is no longer (a failed re-authentication).
    SessionEnded {
        supplicant: [u8; 6],
    },
}

impl fmt::Debug for AuthenticatorEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthenticatorEvent::ToServer {
                supplicant, eap, ..
            } => f
                .debug_struct("ToServer")
                .field("supplicant", &MacAddr(*supplicant))
                .field("eap_len", &eap.len())
                .finish(),
            AuthenticatorEvent::Authenticated {
                supplicant,
                session_id,
                ..
            } => f
                .debug_struct("Authenticated")
                .field("supplicant", &MacAddr(*supplicant))
                .field("msk", &"<secret>")
                .field("session_id_len", &session_id.len())
                .finish(),
            AuthenticatorEvent::Failed { supplicant, reason } => f
                .debug_struct("Failed")
                .field("supplicant", &MacAddr(*supplicant))
                .field("reason", reason)
                .finish(),
            AuthenticatorEvent::LoggedOff { supplicant } => f
                .debug_struct("LoggedOff")
                .field("supplicant", &MacAddr(*supplicant))
                .finish(),
            AuthenticatorEvent::SessionEnded { supplicant } => f
                .debug_struct("SessionEnded")
                .field("supplicant", &MacAddr(*supplicant))
                .finish(),
        }
    }
}

/// The server's answer to a [`AuthenticatorEvent::ToServer`].
pub enum ServerAnswer {
    /// Access-Challenge: an EAP-Request for the supplicant.
    Challenge { eap: Vec<u8> },
    /// Access-Accept with the EAP-Success (or none: one is built), the MSK and the EAP
    /// Session-Id (EAP-Key-Name) when the server sent one.
    Accept {
        eap: Option<Vec<u8>>,
        msk: Zeroizing<[u8; 64]>,
        session_id: Option<Vec<u8>>,
    },
    /// Access-Reject, with the EAP-Failure if the server sent one.
    Reject { eap: Option<Vec<u8>> },
    /// No answer from any server.
    Unreachable,
}

impl fmt::Debug for ServerAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAnswer::Challenge { eap } => write!(f, "Challenge({} octets)", eap.len()),
            ServerAnswer::Accept { .. } => f.write_str("Accept(<secret>)"),
            ServerAnswer::Reject { .. } => f.write_str("Reject"),
            ServerAnswer::Unreachable => f.write_str("Unreachable"),
        }
    }
}

/// Where a session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionPhase {
    /// Request/Identity sent, waiting for the Response.
    Identity,
    /// A Request from the server forwarded, waiting for the Response.
    Supplicant,
    /// A Response sent to the server, waiting for its answer.
    Server,
    /// No exchange running (authenticated, or between exchanges).
    Idle,
    /// Quiet after a failure.
    Quiet,
}

impl SessionPhase {
    pub fn name(self) -> &'static str {
        match self {
            SessionPhase::Identity => "identity",
            SessionPhase::Supplicant => "supplicant",
            SessionPhase::Server => "server",
            SessionPhase::Idle => "idle",
            SessionPhase::Quiet => "quiet",
        }
    }
}

/// One session, for status output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionStatus {
    pub supplicant: [u8; 6],
    pub phase: SessionPhase,
    pub authenticated: bool,
    pub identity: Vec<u8>,
}

/// The first EAP-TLS message of one direction, kept up to one TLS record.
#[derive(Default)]
struct Sniff {
    buf: Vec<u8>,
    done: bool,
}

impl Sniff {
    /// Adds one EAP-TLS fragment; returns the octets to look for a hello in once the first
    /// message is complete (or the first record surely is).
    fn push(&mut self, type_data: &[u8]) -> Option<&[u8]> {
        if self.done {
            return None;
        }
        let t = TlsRepr::parse(type_data).ok()?;
        if t.data.is_empty() {
            return None;
        }
        let room = MAX_SNIFF.saturating_sub(self.buf.len());
        self.buf
            .extend_from_slice(t.data.get(..room).unwrap_or(t.data));
        if t.more() && self.buf.len() < MAX_SNIFF {
            return None;
        }
        self.done = true;
        Some(&self.buf)
    }
}

struct Session {
    phase: SessionPhase,
    /// Identifier of the outstanding Request.
    id: u8,
    last_request: Vec<u8>,
    retries: u32,
    deadline: Option<u64>,
    identity: Vec<u8>,
    authenticated: bool,
    last_start: Option<u64>,
    sniff_sup: Sniff,
    sniff_srv: Sniff,
    client_random: Option<[u8; 32]>,
    server_random: Option<[u8; 32]>,
    /// A Response beyond the identity was seen in this exchange.
    conversation: bool,
}

impl Session {
    fn new() -> Session {
        Session {
            phase: SessionPhase::Idle,
            id: 0,
            last_request: Vec::new(),
            retries: 0,
            deadline: None,
            identity: Vec::new(),
            authenticated: false,
            last_start: None,
            sniff_sup: Sniff::default(),
            sniff_srv: Sniff::default(),
            client_random: None,
            server_random: None,
            conversation: false,
        }
    }
}

/// The authenticator PAE of one port, for any number of supplicants up to the bound.
pub struct Authenticator {
    cfg: AuthenticatorConfig,
    sessions: BTreeMap<[u8; 6], Session>,
    tx: VecDeque<Vec<u8>>,
    events: VecDeque<AuthenticatorEvent>,
    counters: PaeCounters,
    next_id: u8,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authenticator")
            .field("own_mac", &MacAddr(self.cfg.own_mac))
            .field("sessions", &self.sessions.len())
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    pub fn new(cfg: AuthenticatorConfig, now: u64) -> Self {
        // The first identifier varies with the start time.
        let next_id = (now >> 10) as u8;
        Authenticator {
            cfg,
            sessions: BTreeMap::new(),
            tx: VecDeque::new(),
            events: VecDeque::new(),
            counters: PaeCounters::default(),
            next_id,
        }
    }

    pub fn counters(&self) -> &PaeCounters {
        &self.counters
    }

    pub fn max_frame_len(&self) -> usize {
        crate::wire::eapol::FRAME_HEADER_LEN + MAX_EAP_LEN
    }

    pub fn sessions(&self) -> Vec<SessionStatus> {
        self.sessions
            .iter()
            .map(|(mac, s)| SessionStatus {
                supplicant: *mac,
                phase: s.phase,
                authenticated: s.authenticated,
                identity: s.identity.clone(),
            })
            .collect()
    }

    pub fn poll_event(&mut self) -> Option<AuthenticatorEvent> {
        self.events.pop_front()
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        self.sessions.values().filter_map(|s| s.deadline).min()
    }

    /// The next frame into `buf`; a frame longer than `buf` is discarded (counted in
    /// `tx_dropped`).
    pub fn poll_transmit(&mut self, _now: u64, buf: &mut [u8]) -> Option<usize> {
        while let Some(f) = self.tx.pop_front() {
            if let Some(dst) = buf.get_mut(..f.len()) {
                dst.copy_from_slice(&f);
                self.counters.frames_sent += 1;
                return Some(f.len());
            }
            self.counters.tx_dropped += 1;
        }
        None
    }

    /// A received EAPOL frame (EtherType 0x888E, not MKA). `Err` is a counted drop.
    pub fn handle_frame(&mut self, now: u64, frame: &[u8]) -> Result<(), PaeDrop> {
        self.counters.frames_received += 1;
        let r = self.handle_inner(now, frame);
        r.map_err(|d| self.counters.drop(d))
    }

    fn handle_inner(&mut self, now: u64, frame: &[u8]) -> Result<(), PaeDrop> {
        let f = FrameRepr::parse(frame).map_err(|_| PaeDrop::Malformed)?;
        if (f.dst.0 != self.cfg.own_mac && f.dst != PAE_GROUP_ADDR) || f.src.0 == self.cfg.own_mac {
            return Err(PaeDrop::NotForUs);
        }
        if f.src.0[0] & 1 != 0 {
            return Err(PaeDrop::Malformed);
        }
        let mac = f.src.0;
        let ptype = f.eapol.packet_type;
        let Some(mut s) = self.sessions.remove(&mac) else {
            match ptype {
                packet_types::START | packet_types::EAP_PACKET => {}
                packet_types::LOGOFF => return Err(PaeDrop::Unexpected),
                _ => return Err(PaeDrop::UnsupportedType),
            }
            if self.sessions.len() >= self.cfg.max_sessions {
                return Err(PaeDrop::TooManySessions);
            }
            let mut s = Session::new();
            s.last_start = Some(now);
            self.request_identity(now, mac, &mut s);
            self.sessions.insert(mac, s);
            return Ok(());
        };
        let r = self.on_frame(now, mac, &mut s, ptype, f.eapol.body);
        if r != Ok(Some(())) {
            self.sessions.insert(mac, s);
        }
        r.map(|_| ())
    }

    /// `Ok(Some(()))`: the session ended (not put back).
    fn on_frame(
        &mut self,
        now: u64,
        mac: [u8; 6],
        s: &mut Session,
        ptype: u8,
        body: &[u8],
    ) -> Result<Option<()>, PaeDrop> {
        match ptype {
            packet_types::START => {
                if s.phase == SessionPhase::Quiet {
                    return Err(PaeDrop::Quiet);
                }
                if s.last_start.is_some_and(|t| now.saturating_sub(t) < SECOND) {
                    return Err(PaeDrop::RateLimited);
                }
                s.last_start = Some(now);
                self.request_identity(now, mac, s);
                Ok(None)
            }
            packet_types::LOGOFF => {
                self.event(AuthenticatorEvent::LoggedOff { supplicant: mac });
                Ok(Some(()))
            }
            packet_types::EAP_PACKET => {
                if s.phase == SessionPhase::Quiet {
                    return Err(PaeDrop::Quiet);
                }
                let e = eap::Repr::parse(body).map_err(|_| PaeDrop::Malformed)?;
                if e.code != code::RESPONSE {
                    return Err(PaeDrop::Unexpected);
                }
                if !matches!(s.phase, SessionPhase::Identity | SessionPhase::Supplicant) {
                    return Err(PaeDrop::Unexpected);
                }
                if e.identifier != s.id {
                    return Err(PaeDrop::BadIdentifier);
                }
                match e.eap_type {
                    Some(eap_type::IDENTITY) => {
                        s.identity = e.data.get(..MAX_IDENTITY).unwrap_or(e.data).to_vec();
                    }
                    Some(eap_type::TLS) => {
                        s.conversation = true;
                        if let Some(b) = s.sniff_sup.push(e.data) {
                            s.client_random = hello_random(b, CLIENT_HELLO);
                        }
                    }
                    _ => s.conversation = true,
                }
                let packet = eap::Repr::to_vec(&e).map_err(|_| PaeDrop::Malformed)?;
                s.phase = SessionPhase::Server;
                s.deadline = Some(now.saturating_add(self.cfg.server_timeout_ns));
                self.event(AuthenticatorEvent::ToServer {
                    supplicant: mac,
                    eap: packet,
                    identity: s.identity.clone(),
                });
                Ok(None)
            }
            _ => Err(PaeDrop::UnsupportedType),
        }
    }

    /// The server's answer for `supplicant`. An answer for no pending request is counted
    /// (`unexpected`) and ignored.
    pub fn server_answer(&mut self, now: u64, supplicant: [u8; 6], answer: ServerAnswer) {
        let Some(mut s) = self.sessions.remove(&supplicant) else {
            self.counters.drop(PaeDrop::Unexpected);
            return;
        };
        if s.phase != SessionPhase::Server {
            self.counters.drop(PaeDrop::Unexpected);
            self.sessions.insert(supplicant, s);
            return;
        }
        match answer {
            ServerAnswer::Challenge { eap } => {
                let ok = match eap::Repr::parse(&eap) {
                    Ok(e) if e.code == code::REQUEST => {
                        if e.buffer_len() > MAX_EAP_LEN {
                            Err(PaeDrop::TooLong)
                        } else {
                            if e.eap_type == Some(eap_type::TLS) {
                                if let Some(b) = s.sniff_srv.push(e.data) {
                                    // The hellos make the Session-Id of TLS 1.2 only.
                                    s.server_random = hello_random(b, SERVER_HELLO)
                                        .filter(|_| !server_hello_is_tls13(b));
                                }
                            }
                            s.id = e.identifier;
                            Ok(e.to_vec().unwrap_or_default())
                        }
                    }
                    _ => Err(PaeDrop::Malformed),
                };
                match ok {
                    Ok(packet) => {
                        s.last_request = packet;
                        s.retries = 0;
                        s.phase = SessionPhase::Supplicant;
                        s.deadline = Some(now.saturating_add(self.cfg.supp_timeout_ns));
                        let p = s.last_request.clone();
                        self.send_eap(supplicant, &p);
                    }
                    Err(d) => {
                        // A bad Challenge: the exchange waits for the supplicant's retry or
                        // the server timeout.
                        self.counters.drop(d);
                    }
                }
                self.sessions.insert(supplicant, s);
            }
            ServerAnswer::Accept {
                eap,
                msk,
                session_id,
            } => {
                let packet = eap
                    .filter(|p| eap::Repr::parse(p).is_ok_and(|e| e.code == code::SUCCESS))
                    .unwrap_or_else(|| eap::Repr::success(s.id).to_vec().unwrap_or_default());
                self.send_eap(supplicant, &packet);
                let session_id =
                    session_id.unwrap_or_else(|| match (s.client_random, s.server_random) {
                        (Some(c), Some(sr)) => tls12_session_id(&c, &sr),
                        _ => Vec::new(),
                    });
                s.authenticated = true;
                s.phase = SessionPhase::Idle;
                s.deadline = self.cfg.reauth_period_ns.map(|p| now.saturating_add(p));
                self.counters.successes += 1;
                self.event(AuthenticatorEvent::Authenticated {
                    supplicant,
                    msk,
                    session_id,
                });
                self.sessions.insert(supplicant, s);
            }
            ServerAnswer::Reject { eap } => {
                let packet = eap
                    .filter(|p| eap::Repr::parse(p).is_ok_and(|e| e.code == code::FAILURE))
                    .unwrap_or_else(|| eap::Repr::failure(s.id).to_vec().unwrap_or_default());
                self.send_eap(supplicant, &packet);
                self.fail_quiet(now, supplicant, s, AuthFailure::EapFailure);
            }
            ServerAnswer::Unreachable => {
                let packet = eap::Repr::failure(s.id).to_vec().unwrap_or_default();
                self.send_eap(supplicant, &packet);
                self.fail_quiet(now, supplicant, s, AuthFailure::ServerUnreachable);
            }
        }
    }

    /// Starts a re-authentication of `supplicant` now (an authenticated session stays valid
    /// meanwhile). Nothing for an unknown MAC or one in an exchange or a quiet period.
    pub fn reauthenticate(&mut self, now: u64, supplicant: [u8; 6]) {
        if let Some(mut s) = self.sessions.remove(&supplicant) {
            if s.phase == SessionPhase::Idle {
                self.request_identity(now, supplicant, &mut s);
            }
            self.sessions.insert(supplicant, s);
        }
    }

    pub fn handle_timeout(&mut self, now: u64) {
        let due: Vec<[u8; 6]> = self
            .sessions
            .iter()
            .filter(|(_, s)| s.deadline.is_some_and(|d| d <= now))
            .map(|(m, _)| *m)
            .collect();
        for mac in due {
            let Some(mut s) = self.sessions.remove(&mac) else {
                continue;
            };
            match s.phase {
                SessionPhase::Identity | SessionPhase::Supplicant => {
                    if s.retries < self.cfg.max_req {
                        s.retries += 1;
                        self.counters.retransmissions += 1;
                        let p = s.last_request.clone();
                        self.send_eap(mac, &p);
                        let period = if s.phase == SessionPhase::Identity {
                            self.cfg.tx_period_ns
                        } else {
                            self.cfg.supp_timeout_ns
                        };
                        s.deadline = Some(now.saturating_add(period));
                        self.sessions.insert(mac, s);
                    } else if s.conversation || s.authenticated || !s.identity.is_empty() {
                        self.fail(mac, &s, AuthFailure::Timeout);
                    }
                    // A supplicant that never answered: the session is gone.
                }
                SessionPhase::Server => {
                    let packet = eap::Repr::failure(s.id).to_vec().unwrap_or_default();
                    self.send_eap(mac, &packet);
                    self.fail_quiet(now, mac, s, AuthFailure::ServerUnreachable);
                }
                SessionPhase::Idle => {
                    if s.authenticated {
                        self.request_identity(now, mac, &mut s);
                    } else {
                        s.deadline = None;
                    }
                    self.sessions.insert(mac, s);
                }
                // The quiet period is over: the MAC may start again.
                SessionPhase::Quiet => {}
            }
        }
    }

    fn fail(&mut self, mac: [u8; 6], s: &Session, reason: AuthFailure) {
        self.counters.failures += 1;
        self.event(AuthenticatorEvent::Failed {
            supplicant: mac,
            reason,
        });
        if s.authenticated {
            self.event(AuthenticatorEvent::SessionEnded { supplicant: mac });
        }
    }

    fn fail_quiet(&mut self, now: u64, mac: [u8; 6], mut s: Session, reason: AuthFailure) {
        self.fail(mac, &s, reason);
        s.authenticated = false;
        s.phase = SessionPhase::Quiet;
        s.deadline = Some(now.saturating_add(self.cfg.quiet_period_ns));
        s.last_request = Vec::new();
        s.sniff_sup = Sniff::default();
        s.sniff_srv = Sniff::default();
        self.sessions.insert(mac, s);
    }

    fn request_identity(&mut self, now: u64, mac: [u8; 6], s: &mut Session) {
        self.next_id = self.next_id.wrapping_add(1);
        s.id = self.next_id;
        s.retries = 0;
        s.phase = SessionPhase::Identity;
        s.conversation = false;
        s.sniff_sup = Sniff::default();
        s.sniff_srv = Sniff::default();
        s.client_random = None;
        s.server_random = None;
        s.deadline = Some(now.saturating_add(self.cfg.tx_period_ns));
        s.last_request = eap::Repr {
            code: code::REQUEST,
            identifier: s.id,
            eap_type: Some(eap_type::IDENTITY),
            data: &[],
        }
        .to_vec()
        .unwrap_or_default();
        let p = s.last_request.clone();
        self.send_eap(mac, &p);
    }

    fn event(&mut self, e: AuthenticatorEvent) {
        if self.events.len() < 4 * self.cfg.max_sessions + 16 {
            self.events.push_back(e);
        }
    }

    fn send_eap(&mut self, dst: [u8; 6], eap: &[u8]) {
        let f = FrameRepr {
            dst: MacAddr(dst),
            src: MacAddr(self.cfg.own_mac),
            eapol: EapolRepr::new(packet_types::EAP_PACKET, eap),
        };
        match f.to_vec() {
            Ok(v) if self.tx.len() < 4 * self.cfg.max_sessions + 16 => self.tx.push_back(v),
            _ => self.counters.tx_dropped += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn tls13_server_hello_is_recognised() {
        let mut hs = vec![SERVER_HELLO, 0, 0, 0, 3, 3];
        hs.extend([7u8; 32]);
        hs.push(0); // session id
        hs.extend([0x13, 0x01, 0]);
        let exts_13: &[u8] = &[0, 43, 0, 2, 3, 4];
        let exts_12: &[u8] = &[0, 23, 0, 0];
        for (exts, want) in [(exts_13, true), (exts_12, false)] {
            let mut h = hs.clone();
            h.extend((exts.len() as u16).to_be_bytes());
            h.extend(exts);
            let mut rec = vec![22, 3, 3];
            rec.extend((h.len() as u16).to_be_bytes());
            rec.extend(&h);
            assert_eq!(server_hello_is_tls13(&rec), want);
            assert!(hello_random(&rec, SERVER_HELLO).is_some());
            for n in 0..rec.len() {
                let _ = server_hello_is_tls13(&rec[..n]);
            }
        }
    }
}
