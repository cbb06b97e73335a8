//! The supplicant PAE (IEEE Std 802.1X-2020 clause 8 supplicant, with the EAP peer of RFC 3748
//! for the method EAP-TLS only), sans-I/O: time comes in as `now` (ns), frames go out through
//! [`Supplicant::poll_transmit`].
//!
//! - **Connecting**: EAPOL-Start to the PAE group address every `start_period`; after
//!   `max_start` Starts without an answer the port stays quiet for one more period (listening:
//!   an authenticator may begin with a Request/Identity), then starts over.
//! - **Authenticating**: the source MAC of the first EAP-Request fixes the authenticator of the
//!   conversation; EAP from any other MAC is dropped (`wrong_source`). Request/Identity is
//!   answered with the identity, EAP-TLS is run through a [`TlsEngine`] made per conversation
//!   (fragmented and acknowledged per [`super::eap_tls`]), other methods are answered with a
//!   Nak proposing EAP-TLS. A Request repeating the identifier last answered gets the same
//!   Response again. No Request within `auth_period`: `Failed{Timeout}` and Start again.
//! - **Success** is honoured only once the engine is finished (else `premature_success`);
//!   **Failure** ends the conversation (`Failed{EapFailure}`) and holds the port quiet for
//!   `held_period` before it starts again. A TLS error ends our part of the conversation
//!   (`Failed{TlsFailure}`) and sends nothing more for it.
//! - **Authenticated**: a new Request/Identity from the authenticator starts a
//!   re-authentication; Success or Failure outside a conversation are dropped (`unexpected`)
//!   and change nothing, so a spoofed Failure cannot end the session.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use super::eap_tls::{self, DEFAULT_FRAGMENT_LEN, Fragmenter, Reassembled, Reassembler};
use super::tls::{EapKeys, TlsEngine, TlsFailure};
use super::types::{AuthFailure, PaeCounters, PaeDrop};
use crate::wire::eap::{self, TlsRepr, code, eap_type};
use crate::wire::eapol::{FrameRepr, PAE_GROUP_ADDR, Repr as EapolRepr, packet_types};
use crate::wire::ethernet::MacAddr;

/// One second in nanoseconds.
pub const SECOND: u64 = 1_000_000_000;
/// Most frames waiting in a transmit queue.
const MAX_TX_QUEUE: usize = 64;
/// Most events waiting.
const MAX_EVENTS: usize = 64;

/// Settings of a supplicant.
#[derive(Clone, Debug)]
pub struct SupplicantConfig {
    pub own_mac: [u8; 6],
    /// The EAP identity (Response/Identity).
    pub identity: Vec<u8>,
    /// Between EAPOL-Starts (startPeriod, 30 s).
    pub start_period_ns: u64,
    /// Quiet after a failure (heldPeriod, 60 s).
    pub held_period_ns: u64,
    /// Without a Request for this long the conversation is abandoned (authPeriod, 30 s).
    pub auth_period_ns: u64,
    /// EAPOL-Starts before a quiet period (maxStart, 3).
    pub max_start: u32,
    /// TLS data per EAP-TLS fragment.
    pub fragment_len: usize,
}

impl SupplicantConfig {
    /// The defaults of 802.1X-2020 clause 8.
    pub fn new(own_mac: [u8; 6], identity: Vec<u8>) -> Self {
        SupplicantConfig {
            own_mac,
            identity,
            start_period_ns: 30 * SECOND,
            held_period_ns: 60 * SECOND,
            auth_period_ns: 30 * SECOND,
            max_start: 3,
            fragment_len: DEFAULT_FRAGMENT_LEN,
        }
    }
}

/// Makes a TLS engine for each conversation.
pub type EngineFactory = Box<dyn FnMut() -> Result<Box<dyn TlsEngine>, TlsFailure> + Send>;

/// What the supplicant reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum SupplicantEvent {
    Authenticated {
        authenticator: [u8; 6],
        keys: EapKeys,
    },
    Failed {
        authenticator: Option<[u8; 6]>,
        reason: AuthFailure,
    },
    LoggedOff,
    /// An EAPOL-Start was sent.
    Restarted,
}

/// The supplicant's state, for status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SupplicantState {
    Connecting,
    Authenticating,
    Authenticated,
    Held,
    LoggedOff,
}

impl SupplicantState {
    pub fn name(self) -> &'static str {
        match self {
            SupplicantState::Connecting => "connecting",
            SupplicantState::Authenticating => "authenticating",
            SupplicantState::Authenticated => "authenticated",
            SupplicantState::Held => "held",
            SupplicantState::LoggedOff => "logged_off",
        }
    }
}

/// A snapshot for status output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SupplicantStatus {
    pub state: SupplicantState,
    /// The authenticator of the conversation or of the authenticated session.
    pub authenticator: Option<[u8; 6]>,
    pub authenticated: bool,
    pub successes: u64,
    pub failures: u64,
    pub last_failure: Option<AuthFailure>,
}

/// One EAP conversation with one authenticator.
struct Conversation {
    authenticator: [u8; 6],
    /// Identifier and EAP packet of the last Response sent (for retransmitted Requests).
    last: Option<(u8, Vec<u8>)>,
    engine: Option<Box<dyn TlsEngine>>,
    out: Fragmenter,
    reasm: Reassembler,
    /// The TLS engine failed: nothing more is sent in this conversation.
    tls_failed: bool,
}

/// The supplicant PAE of one port.
pub struct Supplicant {
    cfg: SupplicantConfig,
    engines: EngineFactory,
    state: SupplicantState,
    conv: Option<Conversation>,
    /// The authenticator of the current authenticated session.
    session: Option<[u8; 6]>,
    starts: u32,
    deadline: Option<u64>,
    tx: VecDeque<Vec<u8>>,
    events: VecDeque<SupplicantEvent>,
    counters: PaeCounters,
    last_failure: Option<AuthFailure>,
}

impl fmt::Debug for Supplicant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supplicant")
            .field("own_mac", &MacAddr(self.cfg.own_mac))
            .field("state", &self.state)
            .field("authenticator", &self.authenticator().map(MacAddr))
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl Supplicant {
    /// A supplicant that sends its first EAPOL-Start at the first `poll_transmit`.
    pub fn new(cfg: SupplicantConfig, engines: EngineFactory, now: u64) -> Supplicant {
        let mut s = Supplicant {
            cfg,
            engines,
            state: SupplicantState::Connecting,
            conv: None,
            session: None,
            starts: 0,
            deadline: None,
            tx: VecDeque::new(),
            events: VecDeque::new(),
            counters: PaeCounters::default(),
            last_failure: None,
        };
        s.send_start(now);
        s
    }

    /// Longest frame this supplicant sends.
    pub fn max_frame_len(&self) -> usize {
        // Ethernet + EAPOL (18) + EAP header and type (5) + EAP-TLS flags and length (5).
        let tls = 18 + 5 + 5 + self.cfg.fragment_len.max(1);
        let id = 18 + 5 + self.cfg.identity.len();
        tls.max(id)
    }

    pub fn counters(&self) -> &PaeCounters {
        &self.counters
    }

    pub fn snapshot(&self) -> SupplicantStatus {
        SupplicantStatus {
            state: self.state,
            authenticator: self.authenticator(),
            authenticated: self.session.is_some(),
            successes: self.counters.successes,
            failures: self.counters.failures,
            last_failure: self.last_failure.clone(),
        }
    }

    fn authenticator(&self) -> Option<[u8; 6]> {
        self.conv.as_ref().map(|c| c.authenticator).or(self.session)
    }

    pub fn poll_timeout(&self) -> Option<u64> {
        self.deadline
    }

    pub fn poll_event(&mut self) -> Option<SupplicantEvent> {
        self.events.pop_front()
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

    /// Queues an EAPOL-Logoff and stops until [`restart`](Self::restart).
    pub fn logoff(&mut self, _now: u64) {
        self.queue(PAE_GROUP_ADDR.0, packet_types::LOGOFF, &[]);
        self.conv = None;
        self.session = None;
        self.state = SupplicantState::LoggedOff;
        self.deadline = None;
        self.event(SupplicantEvent::LoggedOff);
    }

    /// Sends an EAPOL-Start now and keeps starting (an authenticated session stays valid until
    /// the authenticator ends it).
    pub fn restart(&mut self, now: u64) {
        self.conv = None;
        self.starts = 0;
        if self.state == SupplicantState::LoggedOff || self.state == SupplicantState::Held {
            self.state = SupplicantState::Connecting;
        }
        self.send_start(now);
    }

    pub fn handle_timeout(&mut self, now: u64) {
        let Some(d) = self.deadline else { return };
        if now < d {
            return;
        }
        match self.state {
            SupplicantState::Connecting => {
                if self.starts >= self.cfg.max_start {
                    // maxStart Starts went unanswered: one period quiet (still listening),
                    // then start over.
                    self.starts = 0;
                    self.deadline = Some(now.saturating_add(self.cfg.start_period_ns));
                } else {
                    self.send_start(now);
                }
            }
            SupplicantState::Authenticating | SupplicantState::Authenticated => {
                if self.conv.is_some() {
                    let auth = self.conv.take().map(|c| c.authenticator);
                    self.fail(auth, AuthFailure::Timeout);
                    self.state = SupplicantState::Connecting;
                    self.starts = 0;
                    self.send_start(now);
                } else {
                    self.deadline = None;
                }
            }
            SupplicantState::Held => {
                self.state = SupplicantState::Connecting;
                self.starts = 0;
                self.send_start(now);
            }
            SupplicantState::LoggedOff => self.deadline = None,
        }
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
        if f.eapol.packet_type != packet_types::EAP_PACKET {
            return Err(PaeDrop::UnsupportedType);
        }
        if self.state == SupplicantState::LoggedOff {
            return Err(PaeDrop::Unexpected);
        }
        let e = eap::Repr::parse(f.eapol.body).map_err(|_| PaeDrop::Malformed)?;
        let src = f.src.0;
        if let Some(a) = self.authenticator() {
            if a != src {
                return Err(PaeDrop::WrongSource);
            }
        }
        match e.code {
            code::REQUEST => self.on_request(now, src, &e),
            code::SUCCESS => self.on_success(now, &e),
            code::FAILURE => self.on_failure(now, &e),
            _ => Err(PaeDrop::Unexpected),
        }
    }

    fn on_request(&mut self, now: u64, src: [u8; 6], e: &eap::Repr<'_>) -> Result<(), PaeDrop> {
        let t = e.eap_type.ok_or(PaeDrop::Malformed)?;
        // A retransmitted Request: the same Response again (nothing after a TLS failure).
        if let Some(c) = &self.conv {
            if c.tls_failed {
                return Err(PaeDrop::Unexpected);
            }
            if let Some((id, resp)) = &c.last {
                if *id == e.identifier {
                    let resp = resp.clone();
                    self.counters.retransmissions += 1;
                    self.send_eap(src, &resp);
                    self.deadline = Some(now.saturating_add(self.cfg.auth_period_ns));
                    return Ok(());
                }
            }
        }
        if t == eap_type::IDENTITY || self.conv.is_none() {
            // A new conversation (first, or a re-authentication).
            self.conv = Some(Conversation {
                authenticator: src,
                last: None,
                engine: None,
                out: Fragmenter::new(),
                reasm: Reassembler::new(),
                tls_failed: false,
            });
            self.state = SupplicantState::Authenticating;
        }
        self.deadline = Some(now.saturating_add(self.cfg.auth_period_ns));
        let (rtype, data) = match t {
            eap_type::IDENTITY => (eap_type::IDENTITY, self.cfg.identity.clone()),
            eap_type::NOTIFICATION => (eap_type::NOTIFICATION, Vec::new()),
            eap_type::NAK => return Err(PaeDrop::UnsupportedType),
            eap_type::TLS => match self.on_tls(e.data)? {
                Some(d) => (eap_type::TLS, d),
                None => return Ok(()),
            },
            // Any other method: Nak, proposing EAP-TLS.
            _ => (eap_type::NAK, alloc::vec![eap_type::TLS]),
        };
        let resp = eap::Repr {
            code: code::RESPONSE,
            identifier: e.identifier,
            eap_type: Some(rtype),
            data: &data,
        }
        .to_vec()
        .map_err(|_| PaeDrop::TooLong)?;
        self.send_eap(src, &resp);
        if let Some(c) = self.conv.as_mut() {
            c.last = Some((e.identifier, resp));
        }
        Ok(())
    }

    /// One EAP-TLS Request; `Some(type data)` to answer with, `None` to send nothing.
    fn on_tls(&mut self, data: &[u8]) -> Result<Option<Vec<u8>>, PaeDrop> {
        let t = TlsRepr::parse(data).map_err(|_| PaeDrop::Malformed)?;
        let frag_len = self.cfg.fragment_len;
        let Some(c) = self.conv.as_mut() else {
            return Err(PaeDrop::Unexpected);
        };
        let result: Result<Option<Vec<u8>>, AuthFailure> = if t.start() {
            match (self.engines)() {
                Err(e) => Err(AuthFailure::TlsFailure(e)),
                Ok(mut engine) => {
                    let mut out = Vec::new();
                    match engine.write_tls(&mut out) {
                        Err(e) => Err(AuthFailure::TlsFailure(e)),
                        Ok(()) => {
                            c.engine = Some(engine);
                            c.reasm.reset();
                            c.out.set(out);
                            Ok(Some(
                                c.out.next_fragment(frag_len).unwrap_or_else(eap_tls::ack),
                            ))
                        }
                    }
                }
            }
        } else if c.engine.is_none() {
            return Err(PaeDrop::Unexpected);
        } else if t.data.is_empty() && !t.more() && !c.reasm.in_progress() {
            // An acknowledgement of our fragment: the next one.
            Ok(Some(
                c.out.next_fragment(frag_len).unwrap_or_else(eap_tls::ack),
            ))
        } else {
            match c.reasm.push(&t)? {
                Reassembled::NeedMore => Ok(Some(eap_tls::ack())),
                Reassembled::Complete(msg) => {
                    let mut out = Vec::new();
                    let r = match c.engine.as_mut() {
                        Some(engine) => engine
                            .read_tls(&msg)
                            .and_then(|()| engine.write_tls(&mut out)),
                        None => Err(TlsFailure::NotFinished),
                    };
                    match r {
                        Err(e) => Err(AuthFailure::TlsFailure(e)),
                        Ok(()) => {
                            c.out.set(out);
                            Ok(Some(
                                c.out.next_fragment(frag_len).unwrap_or_else(eap_tls::ack),
                            ))
                        }
                    }
                }
            }
        };
        match result {
            Ok(v) => Ok(v),
            Err(reason) => {
                c.tls_failed = true;
                c.engine = None;
                let auth = Some(c.authenticator);
                self.fail(auth, reason);
                Ok(None)
            }
        }
    }

    fn on_success(&mut self, now: u64, e: &eap::Repr<'_>) -> Result<(), PaeDrop> {
        let Some(c) = self.conv.as_mut() else {
            return Err(PaeDrop::Unexpected);
        };
        if c.last.as_ref().map(|l| l.0) != Some(e.identifier) {
            return Err(PaeDrop::BadIdentifier);
        }
        let finished = c.engine.as_ref().is_some_and(|en| en.is_finished());
        if !finished || c.tls_failed {
            return Err(PaeDrop::PrematureSuccess);
        }
        let auth = c.authenticator;
        let keys = c.engine.as_mut().map(|en| en.keys());
        self.conv = None;
        match keys {
            Some(Ok(keys)) => {
                self.session = Some(auth);
                self.state = SupplicantState::Authenticated;
                self.deadline = None;
                self.counters.successes += 1;
                self.event(SupplicantEvent::Authenticated {
                    authenticator: auth,
                    keys,
                });
            }
            Some(Err(e)) => {
                self.fail(Some(auth), AuthFailure::TlsFailure(e));
                self.hold(now);
            }
            None => {
                self.fail(Some(auth), AuthFailure::TlsFailure(TlsFailure::NotFinished));
                self.hold(now);
            }
        }
        Ok(())
    }

    fn on_failure(&mut self, now: u64, e: &eap::Repr<'_>) -> Result<(), PaeDrop> {
        let Some(c) = self.conv.as_ref() else {
            return Err(PaeDrop::Unexpected);
        };
        if c.last.as_ref().map(|l| l.0) != Some(e.identifier) && !c.tls_failed {
            return Err(PaeDrop::BadIdentifier);
        }
        let auth = c.authenticator;
        let already = c.tls_failed;
        self.conv = None;
        self.session = None;
        if !already {
            self.fail(Some(auth), AuthFailure::EapFailure);
        }
        self.hold(now);
        Ok(())
    }

    fn hold(&mut self, now: u64) {
        self.state = SupplicantState::Held;
        self.deadline = Some(now.saturating_add(self.cfg.held_period_ns));
    }

    fn fail(&mut self, authenticator: Option<[u8; 6]>, reason: AuthFailure) {
        self.counters.failures += 1;
        self.last_failure = Some(reason.clone());
        self.event(SupplicantEvent::Failed {
            authenticator,
            reason,
        });
    }

    fn event(&mut self, e: SupplicantEvent) {
        if self.events.len() < MAX_EVENTS {
            self.events.push_back(e);
        }
    }

    fn send_start(&mut self, now: u64) {
        self.deadline = Some(now.saturating_add(self.cfg.start_period_ns));
        if self.starts >= self.cfg.max_start {
            // Quiet until the next period, still listening.
            return;
        }
        self.starts += 1;
        self.queue(PAE_GROUP_ADDR.0, packet_types::START, &[]);
        self.event(SupplicantEvent::Restarted);
    }

    fn send_eap(&mut self, dst: [u8; 6], eap: &[u8]) {
        self.queue(dst, packet_types::EAP_PACKET, eap);
    }

    fn queue(&mut self, dst: [u8; 6], ptype: u8, body: &[u8]) {
        let f = FrameRepr {
            dst: MacAddr(dst),
            src: MacAddr(self.cfg.own_mac),
            eapol: EapolRepr::new(ptype, body),
        };
        match f.to_vec() {
            Ok(v) if self.tx.len() < MAX_TX_QUEUE => self.tx.push_back(v),
            _ => self.counters.tx_dropped += 1,
        }
    }
}
