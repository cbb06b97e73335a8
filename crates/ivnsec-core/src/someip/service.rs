//! The service side and the caller side of secured SOME/IP, without I/O.
//!
//! [`ServiceCore`] is what a node does with whole messages: it verifies them with the services'
//! SAs (after splitting datagrams and reassembling SOME/IP-TP, or deframing a TCP stream),
//! answers the echo method, protects outgoing messages and counts. Before a freshness counter
//! is used it is claimed from a [`CounterReservation`] (the caller's persistent nonce state),
//! so a restart under the same key never reuses one. [`EventTimer`] says when each periodic
//! event is due and to whom; [`Caller`] builds requests and recognises their replies;
//! [`EventTally`] counts the events a subscriber receives.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;
use core::net::SocketAddr;
use core::time::Duration;

use super::{datagram_messages, next_session, peer_key};
use crate::sa::someip::{OVERHEAD, SomeipProtectError, SomeipSecurity};
use crate::sa::{DropCounters, DropReason};
use crate::wire::someip::{
    Deframed, HEADER_LEN, MessageType, Packet, Repr, ReturnCode, StreamDeframer,
};
use crate::wire::someip_tp::{Reassembler, ReassemblyLimits, ReassemblyStats};

/// Where the freshness counters a node sends under are reserved before use (persistent state on
/// disk, in the caller's crate). `claim(service, counter)` must succeed before a message with
/// that counter leaves.
pub trait CounterReservation {
    type Error;
    fn claim(&mut self, service_id: u16, counter: u64) -> Result<(), Self::Error>;
}

/// No persistent reservation (the counters start from the clock, or nothing is secured).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoReservation;

impl CounterReservation for NoReservation {
    type Error = core::convert::Infallible;
    fn claim(&mut self, _: u16, _: u64) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Why a message was not protected.
#[derive(Debug)]
pub enum ProtectError<E> {
    /// The counter could not be reserved: nothing was sent under it.
    Reserve(E),
    /// The SA refused (unknown service, counter exhausted, …).
    Protect {
        service_id: u16,
        error: SomeipProtectError,
    },
}

impl<E: fmt::Display> fmt::Display for ProtectError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtectError::Reserve(e) => e.fmt(f),
            ProtectError::Protect { service_id, error } => write!(
                f,
                "protecting a message of service 0x{service_id:04x}: {error}"
            ),
        }
    }
}

/// One verified message: its header and its body (security header and tag removed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub header: Repr,
    pub body: Vec<u8>,
}

/// A service this node answers, and its echo method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    pub service_id: u16,
    /// Requests for this method are answered with their body; others with E_UNKNOWN_METHOD.
    pub echo_method: Option<u16>,
}

/// What a [`ServiceCore`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceCounters {
    /// Messages that verified.
    pub received: u64,
    /// Responses and errors protected for requests.
    pub answered: u64,
    /// Event datagrams (or TP sequences) handed to a socket successfully.
    pub events_sent: u64,
}

/// The services' SAs, TP reassembly and counters of one node.
pub struct ServiceCore<R> {
    security: SomeipSecurity,
    reserve: R,
    served: Vec<Served>,
    reassembler: Reassembler,
    /// Drops before a message reached a service (framing, TP, stream resynchronisation).
    wire_drops: DropCounters,
    counters: ServiceCounters,
}

impl<R> fmt::Debug for ServiceCore<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceCore")
            .field("security", &self.security)
            .field("served", &self.served)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

impl<R: CounterReservation> ServiceCore<R> {
    /// TP reassembly is bounded by `max_message` per message, 8 messages in progress and
    /// `2 × max_message` bytes in all.
    pub fn new(
        security: SomeipSecurity,
        reserve: R,
        served: Vec<Served>,
        max_message: usize,
    ) -> ServiceCore<R> {
        ServiceCore {
            security,
            reserve,
            served,
            reassembler: Reassembler::new(ReassemblyLimits {
                max_message,
                max_pending: 8,
                max_total: max_message.saturating_mul(2),
            }),
            wire_drops: DropCounters::default(),
            counters: ServiceCounters::default(),
        }
    }

    pub fn security(&self) -> &SomeipSecurity {
        &self.security
    }

    pub fn counters(&self) -> ServiceCounters {
        self.counters
    }

    pub fn tp_stats(&self) -> ReassemblyStats {
        self.reassembler.stats()
    }

    /// Every drop: the services' and those before a message reached one.
    pub fn drops(&self) -> DropCounters {
        let mut d = self.security.drops();
        d.merge(&self.wire_drops);
        d
    }

    /// Verifies one whole (non-segment) message.
    pub fn handle_message(&mut self, mut msg: Vec<u8>) -> Option<Message> {
        let r = self.security.verify(&mut msg).ok()?;
        self.counters.received += 1;
        let header = Repr::parse(&Packet::new_unchecked(&msg[..])).ok()?;
        let body = msg.get(r)?.to_vec();
        Some(Message { header, body })
    }

    /// Splits a UDP datagram from `peer` into messages, reassembles TP segments and verifies
    /// each whole message.
    pub fn handle_datagram(&mut self, peer: SocketAddr, data: &[u8]) -> Vec<Message> {
        let mut whole = Vec::new();
        datagram_messages(
            &mut self.reassembler,
            &mut self.wire_drops,
            peer_key(peer),
            data,
            |m| whole.push(m),
        );
        whole
            .into_iter()
            .filter_map(|m| self.handle_message(m))
            .collect()
    }

    /// Takes every whole message out of a TCP stream's deframer (counting resynchronisations)
    /// and verifies it.
    pub fn handle_stream(&mut self, d: &mut StreamDeframer) -> Vec<Message> {
        let mut out = Vec::new();
        loop {
            match d.poll() {
                Deframed::NeedMore => break,
                Deframed::Resync(_) => self.wire_drops.bump(DropReason::StreamResync),
                Deframed::Message(m) => {
                    let m = m.to_vec();
                    out.extend(self.handle_message(m));
                }
            }
        }
        out
    }

    /// Protects a message for `header.service_id` (its counter claimed first); the wire bytes.
    pub fn protect(
        &mut self,
        header: &Repr,
        body: &[u8],
    ) -> Result<Vec<u8>, ProtectError<R::Error>> {
        if let Some(next) = self
            .security
            .service(header.service_id)
            .and_then(|sa| sa.next_counter())
        {
            self.reserve
                .claim(header.service_id, next)
                .map_err(ProtectError::Reserve)?;
        }
        let mut buf = vec![0u8; HEADER_LEN + OVERHEAD + body.len()];
        let n = self
            .security
            .protect(header, body, &mut buf)
            .map_err(|error| ProtectError::Protect {
                service_id: header.service_id,
                error,
            })?;
        buf.truncate(n);
        Ok(buf)
    }

    /// The server's answer to one verified message, protected: the echo method's RESPONSE
    /// carries the request's body, another method gets an ERROR with E_UNKNOWN_METHOD. `None`
    /// for anything but a REQUEST of a served service.
    pub fn answer(&mut self, m: &Message) -> Result<Option<Vec<u8>>, ProtectError<R::Error>> {
        let hdr = &m.header;
        if hdr.message_type != MessageType::Request {
            return Ok(None);
        }
        let Some(svc) = self
            .served
            .iter()
            .find(|s| s.service_id == hdr.service_id)
            .copied()
        else {
            return Ok(None);
        };
        let mut r = *hdr;
        r.message_type = MessageType::Response;
        r.return_code = ReturnCode::E_OK;
        let wire = if svc.echo_method == Some(hdr.method_id) {
            self.protect(&r, &m.body)?
        } else {
            r.message_type = MessageType::Error;
            r.return_code = ReturnCode::E_UNKNOWN_METHOD;
            self.protect(&r, &[])?
        };
        self.counters.answered += 1;
        Ok(Some(wire))
    }

    /// Counts one event handed to a socket.
    pub fn event_sent(&mut self) {
        self.counters.events_sent += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Periodic events.

/// One periodic event a server sends to the subscribers of its eventgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub service_id: u16,
    /// The event ID (0x8000..).
    pub event_id: u16,
    pub eventgroup: u16,
    pub interface_version: u8,
    pub period: Duration,
    pub payload_size: usize,
}

/// An event that is due: its header (session counted per event), its sequence number (1, 2, …
/// counted only for events that had subscribers) and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueEvent {
    pub header: Repr,
    pub seq: u64,
    pub payload_size: usize,
    pub targets: Vec<SocketAddr>,
}

#[derive(Clone, Debug)]
struct EventState {
    spec: EventSpec,
    next: Duration,
    seq: u64,
    session: u16,
}

/// When each periodic event is due. The first round is due at the `now` given to
/// [`new`](Self::new); each event then every `period`, skipping rounds that were missed.
#[derive(Clone, Debug)]
pub struct EventTimer {
    events: Vec<EventState>,
}

impl EventTimer {
    pub fn new(specs: &[EventSpec], now: Duration) -> EventTimer {
        EventTimer {
            events: specs
                .iter()
                .map(|&spec| EventState {
                    spec,
                    next: now,
                    seq: 0,
                    session: 0,
                })
                .collect(),
        }
    }

    /// The next event due at `now` that has somewhere to go; `targets(service, eventgroup)`
    /// names the current subscribers. A due event without subscribers is skipped until its
    /// next period. Call until it returns `None`.
    pub fn poll_event(
        &mut self,
        now: Duration,
        mut targets: impl FnMut(u16, u16) -> Vec<SocketAddr>,
    ) -> Option<DueEvent> {
        for e in &mut self.events {
            if now < e.next {
                continue;
            }
            e.next = e.next.saturating_add(e.spec.period);
            if e.next < now {
                e.next = now.saturating_add(e.spec.period);
            }
            let to = targets(e.spec.service_id, e.spec.eventgroup);
            if to.is_empty() {
                continue;
            }
            e.seq += 1;
            let header = Repr {
                service_id: e.spec.service_id,
                method_id: e.spec.event_id,
                client_id: 0,
                session_id: next_session(&mut e.session),
                interface_version: e.spec.interface_version,
                message_type: MessageType::Notification,
                tp: false,
                return_code: ReturnCode::E_OK,
                payload_len: 0,
            };
            return Some(DueEvent {
                header,
                seq: e.seq,
                payload_size: e.spec.payload_size,
                targets: to,
            });
        }
        None
    }

    /// When the next event is due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        self.events.iter().map(|e| e.next).min()
    }
}

/// An event body of `size` bytes: the sequence number and the send time (Unix ns), both
/// big-endian, then a pattern (cut short when `size` < 16).
pub fn event_body(seq: u64, size: usize, sent_unix_ns: u64) -> Vec<u8> {
    let mut b: Vec<u8> = (0..size).map(|i| (i * 13 + 5) as u8).collect();
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&seq.to_be_bytes());
    head[8..].copy_from_slice(&sent_unix_ns.to_be_bytes());
    // The first min(size, 16) bytes.
    for (d, s) in b.iter_mut().zip(head) {
        *d = s;
    }
    b
}

/// The tx→rx delay of an event body made by [`event_body`], received at `now_unix_ns`: `None`
/// when the body is too short or its time stamp is not a time within the last minute (events of
/// other implementations carry no time stamp).
pub fn event_delay_ns(body: &[u8], now_unix_ns: u64) -> Option<u64> {
    let sent = u64::from_be_bytes(body.get(8..16)?.try_into().ok()?);
    (sent <= now_unix_ns && now_unix_ns - sent < 60_000_000_000).then(|| now_unix_ns - sent)
}

/// The events a subscriber received of one service (and event, when given).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventTally {
    pub service_id: u16,
    pub event_id: Option<u16>,
    pub received: usize,
    pub bytes: u64,
    /// Delays of the events that carried our time stamp, in µs.
    pub delays_us: Vec<f64>,
}

impl EventTally {
    pub fn new(service_id: u16, event_id: Option<u16>) -> EventTally {
        EventTally {
            service_id,
            event_id,
            ..EventTally::default()
        }
    }

    /// Counts `m` when it is a NOTIFICATION of the service (and event); true when it counted.
    pub fn handle(&mut self, m: &Message, now_unix_ns: u64) -> bool {
        let h = &m.header;
        if h.message_type != MessageType::Notification || h.service_id != self.service_id {
            return false;
        }
        if self.event_id.is_some_and(|e| e != h.method_id) {
            return false;
        }
        self.received += 1;
        self.bytes += m.body.len() as u64;
        if let Some(d) = event_delay_ns(&m.body, now_unix_ns) {
            self.delays_us.push(d as f64 / 1e3);
        }
        true
    }
}

// ---------------------------------------------------------------------------------------------
// The caller.

/// How a request was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A RESPONSE with E_OK (and, when checked, the request's body).
    Ok,
    /// An ERROR, or a RESPONSE with another return code.
    Error,
    /// A RESPONSE whose body is not the request's (echo check).
    Mismatched,
}

/// Builds the requests of one client to one method and recognises their replies.
#[derive(Clone, Debug)]
pub struct Caller {
    service_id: u16,
    method_id: u16,
    client_id: u16,
    interface_version: u8,
    session: u16,
}

impl Caller {
    pub fn new(service_id: u16, method_id: u16, client_id: u16, interface_version: u8) -> Caller {
        Caller {
            service_id,
            method_id,
            client_id,
            interface_version,
            session: 0,
        }
    }

    /// The header of the next REQUEST (next session ID) and the body of call `i`:
    /// [`request_body`].
    pub fn request(&mut self, i: u64, size: usize) -> (Repr, Vec<u8>) {
        let hdr = Repr {
            service_id: self.service_id,
            method_id: self.method_id,
            client_id: self.client_id,
            session_id: next_session(&mut self.session),
            interface_version: self.interface_version,
            message_type: MessageType::Request,
            tp: false,
            return_code: ReturnCode::E_OK,
            payload_len: 0,
        };
        (hdr, request_body(i, size))
    }

    /// `m` judged as the reply to the request `req` with `body`; `None` when it is not that
    /// request's reply (another type, service, method, client or session).
    pub fn reply(req: &Repr, body: &[u8], echo_check: bool, m: &Message) -> Option<Reply> {
        let rh = &m.header;
        let is_reply = matches!(rh.message_type, MessageType::Response | MessageType::Error);
        if !is_reply
            || rh.service_id != req.service_id
            || rh.method_id != req.method_id
            || rh.session_id != req.session_id
            || rh.client_id != req.client_id
        {
            return None;
        }
        Some(
            if rh.message_type == MessageType::Error || rh.return_code != ReturnCode::E_OK {
                Reply::Error
            } else if echo_check && m.body != body {
                Reply::Mismatched
            } else {
                Reply::Ok
            },
        )
    }
}

/// The body of call `i`: a pattern with `i` (big-endian) in its first eight bytes.
pub fn request_body(i: u64, size: usize) -> Vec<u8> {
    let mut b: Vec<u8> = (0..size).map(|k| (k as u64 * 29 + i) as u8).collect();
    // The first min(size, 8) bytes.
    for (d, s) in b.iter_mut().zip(i.to_be_bytes()) {
        *d = s;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{
        AeadAlg, AeadKey, CipherAlg, CipherKey, CryptoError, CryptoProvider, KeyFactory, MacAlg,
        MacKey, Primitive, SecureRandom,
    };
    use crate::sa::someip::{ServiceParams, ServiceSa};
    use crate::someip::unhex;
    use alloc::boxed::Box;
    use alloc::string::String;
    use proptest::prelude::*;

    /// A provider with no primitives: enough for `nosec` services (the secured levels are
    /// exercised per provider in ivnsec-lab and the conformance crate).
    struct NoKeys;
    impl KeyFactory for NoKeys {
        fn supports(&self, _: Primitive) -> bool {
            false
        }
        fn aead(&self, a: AeadAlg, _: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
            Err(CryptoError::Unsupported(Primitive::Aead(a)))
        }
        fn mac(&self, a: MacAlg, _: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
            Err(CryptoError::Unsupported(Primitive::Mac(a)))
        }
        fn cipher(&self, a: CipherAlg, _: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
            Err(CryptoError::Unsupported(Primitive::Cipher(a)))
        }
    }
    struct NoRng;
    impl SecureRandom for NoRng {
        fn fill(&self, _: &mut [u8]) -> Result<(), CryptoError> {
            Err(CryptoError::Rng)
        }
    }
    static NONE: CryptoProvider = CryptoProvider {
        name: "none",
        library: "test",
        keys: &NoKeys,
        rng: &NoRng,
    };

    // Known answers made with scapy 2.6.1 (`scapy.contrib.automotive.someip.SOMEIP`), not with
    // this code: service 0x1234, client 0x0101, session 7, interface version 1.
    /// REQUEST method 1, body "abc".
    const REQ: &str = "123400010000000b0101000701010000616263";
    /// RESPONSE method 1, E_OK, body "abc".
    const RESP: &str = "123400010000000b0101000701018000616263";
    /// REQUEST method 2, body "xyz".
    const REQ2: &str = "123400020000000b010100070101000078797a";
    /// ERROR method 2, E_UNKNOWN_METHOD (0x03), no body.
    const ERR: &str = "12340002000000080101000701018103";

    /// Records claims; refuses every claim once `refuse` is set.
    #[derive(Default)]
    struct Claims {
        seen: Vec<(u16, u64)>,
        refuse: bool,
    }
    impl CounterReservation for &mut Claims {
        type Error = String;
        fn claim(&mut self, service_id: u16, counter: u64) -> Result<(), String> {
            if self.refuse {
                return Err("disk full".into());
            }
            self.seen.push((service_id, counter));
            Ok(())
        }
    }

    fn core_with<R: CounterReservation>(reserve: R) -> ServiceCore<R> {
        let sa = ServiceSa::new(&NONE, &ServiceParams::nosec(0x1234)).unwrap();
        ServiceCore::new(
            SomeipSecurity::new(vec![sa]),
            reserve,
            vec![Served {
                service_id: 0x1234,
                echo_method: Some(1),
            }],
            4096,
        )
    }

    fn peer() -> SocketAddr {
        "10.77.0.2:40000".parse().unwrap()
    }

    #[test]
    fn answers_the_echo_method_and_refuses_other_methods_as_scapy_encodes_them() {
        let mut c = core_with(NoReservation);
        // Both requests in one datagram (the UDP binding may carry several).
        let mut d = unhex(REQ);
        d.extend(unhex(REQ2));
        let got = c.handle_datagram(peer(), &d);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].body, b"abc");
        assert_eq!(c.answer(&got[0]).unwrap(), Some(unhex(RESP)));
        assert_eq!(c.answer(&got[1]).unwrap(), Some(unhex(ERR)));
        // A RESPONSE is not answered.
        let resp = c.handle_datagram(peer(), &unhex(RESP));
        assert_eq!(c.answer(&resp[0]).unwrap(), None);
        assert_eq!(
            c.counters(),
            ServiceCounters {
                received: 3,
                answered: 2,
                events_sent: 0
            }
        );
        // Another service: dropped as unknown.
        let mut other = unhex(REQ);
        other[0] = 0x99;
        assert!(c.handle_datagram(peer(), &other).is_empty());
        assert_eq!(c.drops().get(DropReason::UnknownService), 1);
    }

    #[test]
    fn counters_are_claimed_before_protecting_and_a_refused_claim_sends_nothing() {
        let mut claims = Claims::default();
        {
            let mut c = core_with(&mut claims);
            let m = c.handle_datagram(peer(), &unhex(REQ)).remove(0);
            assert!(c.answer(&m).unwrap().is_some());
        }
        assert_eq!(claims.seen, vec![(0x1234, 1)]);
        claims.refuse = true;
        let mut c = core_with(&mut claims);
        let m = c.handle_datagram(peer(), &unhex(REQ)).remove(0);
        let e = c.answer(&m).unwrap_err();
        assert!(
            matches!(&e, ProtectError::Reserve(s) if s == "disk full"),
            "{e}"
        );
        assert_eq!(c.counters().answered, 0);
        assert_eq!(c.security().services()[0].tx_counters().frames, 0);
        // A message for a service without an SA is refused by the SA table.
        let mut h = m.header;
        h.service_id = 0x9999;
        let e = core_with(NoReservation).protect(&h, b"").unwrap_err();
        assert!(alloc::format!("{e}").starts_with("protecting a message of service 0x9999: "));
    }

    #[test]
    fn tcp_stream_resynchronises_and_counts_it() {
        let mut c = core_with(NoReservation);
        let mut d = StreamDeframer::new(4096);
        let mut bytes = b"garbage!garbage!".to_vec();
        bytes.extend(unhex(REQ));
        bytes.extend(&unhex(REQ2)[..10]);
        d.push(&bytes);
        let got = c.handle_stream(&mut d);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].header.method_id, 1);
        assert!(c.drops().get(DropReason::StreamResync) >= 1);
        // The rest of the second message completes it.
        d.push(&unhex(REQ2)[10..]);
        let got = c.handle_stream(&mut d);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].body, b"xyz");
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn spec(service_id: u16, period: u64) -> EventSpec {
        EventSpec {
            service_id,
            event_id: 0x8001,
            eventgroup: 1,
            interface_version: 1,
            period: ms(period),
            payload_size: 64,
        }
    }

    #[test]
    fn events_are_due_every_period_only_to_subscribers_and_skip_missed_rounds() {
        let t0 = ms(1_000);
        let mut t = EventTimer::new(&[spec(0x1234, 100), spec(0x4321, 250)], t0);
        let sub = peer();
        let only_1234 = |s: u16, _eg: u16| if s == 0x1234 { vec![sub] } else { vec![] };
        let e = t.poll_event(t0, only_1234).unwrap();
        assert_eq!(
            (e.header.service_id, e.seq, e.header.session_id),
            (0x1234, 1, 1)
        );
        assert_eq!(e.header.message_type, MessageType::Notification);
        assert_eq!(e.header.method_id, 0x8001);
        assert_eq!(e.targets, vec![sub]);
        // 0x4321 was due too but has no subscriber: skipped until its next period.
        assert!(t.poll_event(t0, only_1234).is_none());
        assert_eq!(t.poll_timeout(), Some(t0 + ms(100)));
        assert!(t.poll_event(t0 + ms(99), only_1234).is_none());
        let e = t.poll_event(t0 + ms(100), only_1234).unwrap();
        assert_eq!((e.seq, e.header.session_id), (2, 2));
        // Late by a second: one event, and the next one period after now.
        let all = |_: u16, _: u16| vec![sub];
        let late = t0 + ms(1_150);
        let a = t.poll_event(late, all).unwrap();
        let b = t.poll_event(late, all).unwrap();
        assert!(t.poll_event(late, all).is_none());
        assert_eq!((a.header.service_id, a.seq), (0x1234, 3));
        assert_eq!((b.header.service_id, b.seq), (0x4321, 1));
        assert_eq!(t.poll_timeout(), Some(late + ms(100)));
    }

    #[test]
    fn event_bodies_carry_sequence_and_time_and_give_the_delay() {
        let sent = 1_700_000_000_123_456_789u64;
        let b = event_body(5, 64, sent);
        assert_eq!(b.len(), 64);
        assert_eq!(&b[..8], &5u64.to_be_bytes());
        assert_eq!(&b[8..16], &sent.to_be_bytes());
        assert_eq!(b[16], (16 * 13 + 5) as u8);
        assert_eq!(event_body(5, 4, sent), vec![0, 0, 0, 0]);
        assert_eq!(event_delay_ns(&b, sent + 1_500), Some(1_500));
        assert_eq!(event_delay_ns(&b, sent - 1), None, "from the future");
        assert_eq!(
            event_delay_ns(&b, sent + 60_000_000_000),
            None,
            "a minute old"
        );
        assert_eq!(event_delay_ns(&b[..15], sent), None);

        let mut tally = EventTally::new(0x1234, Some(0x8001));
        let ev = |method_id, message_type| Message {
            header: Repr {
                service_id: 0x1234,
                method_id,
                client_id: 0,
                session_id: 1,
                interface_version: 1,
                message_type,
                tp: false,
                return_code: ReturnCode::E_OK,
                payload_len: 0,
            },
            body: b.clone(),
        };
        assert!(tally.handle(&ev(0x8001, MessageType::Notification), sent + 2_000));
        assert!(!tally.handle(&ev(0x8002, MessageType::Notification), sent));
        assert!(!tally.handle(&ev(0x8001, MessageType::Response), sent));
        assert_eq!((tally.received, tally.bytes), (1, 64));
        assert_eq!(tally.delays_us, vec![2.0]);
    }

    #[test]
    fn the_caller_numbers_requests_and_judges_replies() {
        let mut c = Caller::new(0x1234, 1, 0x0101, 1);
        let (h1, b1) = c.request(1, 3);
        let (h2, _) = c.request(2, 3);
        assert_eq!((h1.session_id, h2.session_id), (1, 2));
        assert_eq!(b1, vec![0, 0, 0]);
        assert_eq!(
            request_body(0x0102, 10),
            vec![0, 0, 0, 0, 0, 0, 1, 2, 0xea, 0x07]
        );
        let reply = |t, rc: ReturnCode, body: &[u8]| Message {
            header: Repr {
                message_type: t,
                return_code: rc,
                ..h1
            },
            body: body.to_vec(),
        };
        let ok = ReturnCode::E_OK;
        assert_eq!(
            Caller::reply(&h1, &b1, true, &reply(MessageType::Response, ok, &b1)),
            Some(Reply::Ok)
        );
        assert_eq!(
            Caller::reply(&h1, &b1, true, &reply(MessageType::Response, ok, b"x")),
            Some(Reply::Mismatched)
        );
        assert_eq!(
            Caller::reply(&h1, &b1, false, &reply(MessageType::Response, ok, b"x")),
            Some(Reply::Ok)
        );
        assert_eq!(
            Caller::reply(
                &h1,
                &b1,
                true,
                &reply(MessageType::Error, ReturnCode::E_UNKNOWN_METHOD, b"")
            ),
            Some(Reply::Error)
        );
        assert_eq!(
            Caller::reply(
                &h1,
                &b1,
                true,
                &reply(MessageType::Response, ReturnCode::E_NOT_OK, &b1)
            ),
            Some(Reply::Error)
        );
        assert_eq!(
            Caller::reply(&h2, &b1, true, &reply(MessageType::Response, ok, &b1)),
            None,
            "other session"
        );
        assert_eq!(
            Caller::reply(&h1, &b1, true, &reply(MessageType::Request, ok, &b1)),
            None
        );
    }

    proptest! {
        /// Hostile datagrams and streams never panic; what verifies is a whole message.
        #[test]
        fn hostile_service_input_never_panics(
            data in proptest::collection::vec(any::<u8>(), 0..600),
            cut in 0usize..600,
        ) {
            let mut c = core_with(NoReservation);
            for m in c.handle_datagram(peer(), &data) {
                prop_assert!(m.body.len() <= data.len());
                let _ = c.answer(&m);
            }
            let mut d = StreamDeframer::new(256);
            let (a, b) = data.split_at(cut.min(data.len()));
            d.push(a);
            let _ = c.handle_stream(&mut d);
            d.push(b);
            for m in c.handle_stream(&mut d) {
                let _ = c.answer(&m);
            }
        }
    }
}
