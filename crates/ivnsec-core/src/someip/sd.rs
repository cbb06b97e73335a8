//! SOME/IP-SD (AUTOSAR FO PRS_SOMEIPServiceDiscoveryProtocol) as state machines without I/O.
//!
//! - [`SdServer`]: offers the configured services cyclically to multicast groups and unicast
//!   peers, answers FindService with OfferService, and SubscribeEventgroup with
//!   SubscribeEventgroupAck (or Nack, TTL 0); StopSubscribeEventgroup (TTL 0) ends a
//!   subscription without an answer. Subscriptions live in a bounded [`Subscribers`] table and
//!   expire with their TTL.
//! - [`SdClient`]: finds one service (FindService repeated until an OfferService with an
//!   endpoint arrives) and subscribes to one of its eventgroups (repeated until acknowledged,
//!   renewed at half the TTL, stopped with TTL 0).
//!
//! Both number their messages with [`SdSessions`]. Time is a [`Duration`] since an origin of
//! the caller's choosing; received bytes come in through `handle`, what to send leaves through
//! `poll_transmit`, and `poll_timeout` says when `handle_timeout` wants to be called.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;
use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use core::time::Duration;

use crate::sa::{DropCounters, DropReason};
use crate::wire::someip::HEADER_LEN;
use crate::wire::someip_sd::{
    Entry, EntryBody, EntryType, FLAG_REBOOT, FLAG_UNICAST, Ipv4Kind, PROTO_TCP, PROTO_UDP,
    SdOption, SdRepr, TTL_INFINITE,
};

use super::next_session;

/// One SD message to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub destination: SocketAddr,
    /// The whole SOME/IP message (header and SD payload).
    pub contents: Vec<u8>,
    /// A cyclic offer (counted by [`SdServer::offer_sent`] once it left).
    pub cyclic: bool,
}

/// Session IDs and flags of one SD sender, one counter for multicast and one for unicast.
///
/// The session ID counts 1, 2, … 0xFFFF, 1, … (0 is never used); the reboot flag is set from
/// the first message until the session ID wraps and stays clear after (PRS_SOMEIPSD_00150ff),
/// so a receiver can tell a restarted sender from one whose counter wrapped. The unicast flag
/// is always set: this node takes unicast answers.
#[derive(Clone, Debug, Default)]
pub struct SdSessions {
    multicast: SessionCounter,
    unicast: SessionCounter,
}

#[derive(Clone, Debug, Default)]
struct SessionCounter {
    last: u16,
    wrapped: bool,
}

impl SdSessions {
    pub fn new() -> SdSessions {
        SdSessions::default()
    }

    /// Session ID and flags for the next message on the multicast or the unicast counter.
    pub fn next(&mut self, multicast: bool) -> (u16, u8) {
        let c = if multicast {
            &mut self.multicast
        } else {
            &mut self.unicast
        };
        if c.last == 0xFFFF {
            c.wrapped = true;
        }
        let id = next_session(&mut c.last);
        let flags = FLAG_UNICAST | if c.wrapped { 0 } else { FLAG_REBOOT };
        (id, flags)
    }

    /// Numbers `sd` for `destination` (multicast counter for a group address) and writes it as
    /// a whole SD message.
    pub fn emit(&mut self, sd: &mut SdRepr, destination: SocketAddr, cyclic: bool) -> Transmit {
        let (session, flags) = self.next(is_multicast(destination));
        sd.flags = flags;
        let mut contents = vec![0u8; HEADER_LEN + sd.buffer_len()];
        let n = sd.emit_message(session, &mut contents).unwrap_or(0);
        contents.truncate(n);
        Transmit {
            destination,
            contents,
            cyclic,
        }
    }
}

fn is_multicast(a: SocketAddr) -> bool {
    a.ip().is_multicast()
}

/// The first IPv4 endpoint option of `e` with L4 protocol `proto`.
fn endpoint(e: &Entry, options: &[SdOption], proto: u8) -> Option<SocketAddr> {
    e.resolve(options).ok()?.find_map(|o| match *o {
        SdOption::Ipv4 {
            kind: Ipv4Kind::Endpoint,
            addr,
            proto: p,
            port,
        } if p == proto => Some(SocketAddr::from((addr, port))),
        _ => None,
    })
}

// ---------------------------------------------------------------------------------------------
// Subscribers.

/// One subscription: events of `eventgroup` of `service` go to `addr` until `expires`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subscriber {
    pub service: u16,
    pub eventgroup: u16,
    pub addr: SocketAddr,
    /// `None` for TTL 0xFFFFFF (until stopped).
    pub expires: Option<Duration>,
}

/// Default bound of the subscriber table: a subscriber names its own endpoint, so without a
/// bound a peer could grow the table with made-up endpoints.
pub const DEFAULT_MAX_SUBSCRIBERS: usize = 1024;

/// The subscriptions of a server, at most `max` at once.
#[derive(Clone, Debug)]
pub struct Subscribers {
    list: Vec<Subscriber>,
    max: usize,
}

impl Subscribers {
    pub fn new(max: usize) -> Subscribers {
        Subscribers {
            list: Vec::new(),
            max,
        }
    }

    /// Adds the subscription of `addr`, or renews it (a new TTL from `now`); `ttl` in seconds,
    /// [`TTL_INFINITE`] for no expiry. False when the table is full (a renewal always fits).
    /// TTL 0 is a stop: see [`unsubscribe`](Self::unsubscribe).
    pub fn subscribe(
        &mut self,
        now: Duration,
        service: u16,
        eventgroup: u16,
        addr: SocketAddr,
        ttl: u32,
    ) -> bool {
        self.unsubscribe(service, eventgroup, addr);
        if ttl == 0 {
            return true;
        }
        if self.list.len() >= self.max {
            return false;
        }
        self.list.push(Subscriber {
            service,
            eventgroup,
            addr,
            expires: (ttl != TTL_INFINITE)
                .then(|| now.saturating_add(Duration::from_secs(u64::from(ttl)))),
        });
        true
    }

    /// Ends the subscription of `addr` (StopSubscribeEventgroup).
    pub fn unsubscribe(&mut self, service: u16, eventgroup: u16, addr: SocketAddr) {
        self.list
            .retain(|s| !(s.service == service && s.eventgroup == eventgroup && s.addr == addr));
    }

    /// Drops the subscriptions whose TTL ran out at `now`.
    pub fn expire(&mut self, now: Duration) {
        self.list.retain(|x| x.expires.is_none_or(|t| t > now));
    }

    /// Where events of `eventgroup` of `service` go at `now` (expired subscriptions dropped
    /// first).
    pub fn targets(&mut self, now: Duration, service: u16, eventgroup: u16) -> Vec<SocketAddr> {
        self.expire(now);
        self.list
            .iter()
            .filter(|x| x.service == service && x.eventgroup == eventgroup)
            .map(|x| x.addr)
            .collect()
    }

    /// Subscriptions held (expired ones included until the next `expire` or `targets`).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Subscriber> {
        self.list.iter()
    }

    /// When the next subscription expires.
    pub fn next_expiry(&self) -> Option<Duration> {
        self.list.iter().filter_map(|s| s.expires).min()
    }
}

// ---------------------------------------------------------------------------------------------
// The server.

/// A service as the SD server offers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OfferedService {
    pub id: u16,
    pub instance: u16,
    pub major: u8,
    pub minor: u32,
    /// The eventgroup subscribers may join (`None`: the service has no event).
    pub eventgroup: Option<u16>,
}

/// What an [`SdServer`] offers and where.
#[derive(Clone, Debug)]
pub struct SdServerConfig {
    /// This node's SD endpoint: messages from it are its own (multicast loopback).
    pub own: SocketAddr,
    /// The address in the endpoint options.
    pub address: Ipv4Addr,
    /// The UDP port of the services (always offered).
    pub udp_port: u16,
    /// The TCP port of the services, when they are served over TCP too.
    pub tcp_port: Option<u16>,
    pub services: Vec<OfferedService>,
    /// Where cyclic offers go: multicast groups and unicast peers, SD port included.
    pub targets: Vec<SocketAddr>,
    /// TTL of the offers, seconds.
    pub ttl: u32,
    pub offer_interval: Duration,
    pub max_subscribers: usize,
}

/// The SD server of one node.
#[derive(Clone, Debug)]
pub struct SdServer {
    cfg: SdServerConfig,
    sessions: SdSessions,
    subscribers: Subscribers,
    queue: VecDeque<Transmit>,
    next_offer: Duration,
    sent: u64,
    received: u64,
    drops: DropCounters,
}

impl SdServer {
    /// The first offers are due at `now`.
    pub fn new(cfg: SdServerConfig, now: Duration) -> SdServer {
        let subscribers = Subscribers::new(cfg.max_subscribers);
        SdServer {
            cfg,
            sessions: SdSessions::new(),
            subscribers,
            queue: VecDeque::new(),
            next_offer: now,
            sent: 0,
            received: 0,
            drops: DropCounters::default(),
        }
    }

    /// True for a message this node sent itself (looped back by multicast).
    pub fn is_own(&self, src: SocketAddr) -> bool {
        src == self.cfg.own
    }

    /// Queues the cyclic offers when they are due: every `offer_interval` after the first, on
    /// the same grid; rounds missed by more than a period are skipped.
    pub fn handle_timeout(&mut self, now: Duration) {
        if now < self.next_offer {
            return;
        }
        for i in 0..self.cfg.targets.len() {
            let Some(&t) = self.cfg.targets.get(i) else {
                break;
            };
            let mut sd = SdRepr::default();
            self.offer_entries(&mut sd, None);
            let tx = self.sessions.emit(&mut sd, t, true);
            self.queue.push_back(tx);
        }
        self.next_offer = self.next_offer.saturating_add(self.cfg.offer_interval);
        if self.next_offer <= now {
            // Late by more than a period (a stalled process): no burst of missed rounds.
            self.next_offer = now.saturating_add(self.cfg.offer_interval);
        }
    }

    /// When the next cyclic offers are due.
    pub fn poll_timeout(&self) -> Option<Duration> {
        Some(self.next_offer)
    }

    /// The next message to send.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.queue.pop_front()
    }

    /// Handles one datagram received on the SD socket from `src` (not this node's own: check
    /// [`is_own`](Self::is_own) first). Anything but a valid SD message is counted as
    /// `malformed` and otherwise ignored.
    pub fn handle(&mut self, now: Duration, src: SocketAddr, data: &[u8]) {
        let sd = match SdRepr::parse_message(data) {
            Ok((_, sd)) => sd,
            Err(_) => {
                self.drops.bump(DropReason::Malformed);
                return;
            }
        };
        self.received += 1;
        let mut reply = SdRepr::default();
        for e in &sd.entries {
            match e.entry_type {
                EntryType::FindService => {
                    let only = (e.service_id != 0xFFFF).then_some(e);
                    self.offer_entries(&mut reply, only);
                }
                EntryType::SubscribeEventgroup => {
                    if let Some(ack) = self.subscribe(now, e, &sd.options) {
                        reply.entries.push(ack);
                    }
                }
                _ => {}
            }
        }
        if !reply.entries.is_empty() {
            let tx = self.sessions.emit(&mut reply, src, false);
            self.queue.push_back(tx);
        }
    }

    /// Files a SubscribeEventgroup (or its stop); the Ack (or Nack) to answer with, `None` for a
    /// stop or an entry without an eventgroup.
    fn subscribe(&mut self, now: Duration, e: &Entry, options: &[SdOption]) -> Option<Entry> {
        let eg = e.eventgroup_id()?;
        let offered = self.cfg.services.iter().any(|s| {
            s.id == e.service_id
                && (e.instance_id == 0xFFFF || e.instance_id == s.instance)
                && s.major == e.major_version
                && s.eventgroup == Some(eg)
        });
        let addr = endpoint(e, options, PROTO_UDP);
        let mut ok = offered && addr.is_some();
        if let Some(addr) = addr {
            if ok {
                ok = self
                    .subscribers
                    .subscribe(now, e.service_id, eg, addr, e.ttl);
            } else {
                self.subscribers.unsubscribe(e.service_id, eg, addr);
            }
        }
        if e.ttl == 0 {
            return None; // StopSubscribeEventgroup: no answer.
        }
        Some(Entry {
            entry_type: EntryType::SubscribeEventgroupAck,
            index1: 0,
            index2: 0,
            num1: 0,
            num2: 0,
            ttl: if ok { e.ttl } else { 0 },
            ..*e
        })
    }

    /// Adds an OfferService entry (with the UDP and, when served, TCP endpoint) for each
    /// service, or each one `only` asks for (instance 0xFFFF and major 0xFF match any); a
    /// service already offered in `sd` is not offered twice.
    fn offer_entries(&self, sd: &mut SdRepr, only: Option<&Entry>) {
        for s in &self.cfg.services {
            if let Some(f) = only {
                let any_inst = f.instance_id == 0xFFFF || f.instance_id == s.instance;
                let any_major = f.major_version == 0xFF || f.major_version == s.major;
                if f.service_id != s.id || !any_inst || !any_major {
                    continue;
                }
            }
            let already = sd.entries.iter().any(|o| {
                o.entry_type == EntryType::OfferService
                    && o.service_id == s.id
                    && o.instance_id == s.instance
            });
            if already {
                continue;
            }
            let mut opts = vec![SdOption::endpoint(
                self.cfg.address,
                PROTO_UDP,
                self.cfg.udp_port,
            )];
            if let Some(t) = self.cfg.tcp_port {
                opts.push(SdOption::endpoint(self.cfg.address, PROTO_TCP, t));
            }
            let (i, n) = sd.add_options(&opts).unwrap_or((0, 0));
            sd.entries.push(Entry {
                entry_type: EntryType::OfferService,
                index1: i,
                index2: 0,
                num1: n,
                num2: 0,
                service_id: s.id,
                instance_id: s.instance,
                major_version: s.major,
                ttl: self.cfg.ttl,
                body: EntryBody::Service {
                    minor_version: s.minor,
                },
            });
        }
    }

    /// Counts a cyclic offer that left.
    pub fn offer_sent(&mut self) {
        self.sent += 1;
    }

    /// Cyclic offers sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Valid SD messages received.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Datagrams on the SD socket that were not SD messages.
    pub fn drops(&self) -> &DropCounters {
        &self.drops
    }

    pub fn subscribers(&self) -> &Subscribers {
        &self.subscribers
    }

    /// Where events of `eventgroup` of `service` go at `now`.
    pub fn targets(&mut self, now: Duration, service: u16, eventgroup: u16) -> Vec<SocketAddr> {
        self.subscribers.targets(now, service, eventgroup)
    }
}

// ---------------------------------------------------------------------------------------------
// The client.

/// How often FindService is repeated until an offer arrives.
pub const FIND_REPEAT: Duration = Duration::from_millis(1000);
/// How often SubscribeEventgroup is repeated until it is acknowledged.
pub const SUBSCRIBE_REPEAT: Duration = Duration::from_millis(500);

/// What SD found for a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub udp: Option<SocketAddr>,
    pub tcp: Option<SocketAddr>,
    /// Where the offer came from (the server's SD endpoint).
    pub sd_source: SocketAddr,
    pub instance: u16,
    pub major: u8,
}

/// Where a subscription stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubscriptionState {
    /// Sent, not yet acknowledged.
    Pending,
    /// Acknowledged (renewed at half the TTL from then on).
    Acked,
    /// The server answered with a Nack (SubscribeEventgroupAck with TTL 0).
    Refused,
}

#[derive(Clone, Debug)]
struct Finding {
    service: u16,
    major: u8,
    next: Duration,
}

#[derive(Clone, Debug)]
struct Subscription {
    sd: SdRepr,
    to: SocketAddr,
    service: u16,
    eventgroup: u16,
    next: Option<Duration>,
    state: SubscriptionState,
}

/// The SD client of one node: finds a service and subscribes to one of its eventgroups.
#[derive(Clone, Debug)]
pub struct SdClient {
    own: SocketAddr,
    targets: Vec<SocketAddr>,
    ttl: u32,
    sessions: SdSessions,
    queue: VecDeque<Transmit>,
    finding: Option<Finding>,
    found: Option<Found>,
    subscription: Option<Subscription>,
}

impl SdClient {
    /// `own`: this node's SD endpoint; `targets`: where FindService goes (groups and peers);
    /// `ttl`: of finds and subscriptions, seconds.
    pub fn new(own: SocketAddr, targets: Vec<SocketAddr>, ttl: u32) -> SdClient {
        SdClient {
            own,
            targets,
            ttl,
            sessions: SdSessions::new(),
            queue: VecDeque::new(),
            finding: None,
            found: None,
            subscription: None,
        }
    }

    pub fn is_own(&self, src: SocketAddr) -> bool {
        src == self.own
    }

    /// Starts looking for `service` with major version `major`; the first FindService is due
    /// at `now`.
    pub fn find(&mut self, now: Duration, service: u16, major: u8) {
        self.found = None;
        self.finding = Some(Finding {
            service,
            major,
            next: now,
        });
    }

    /// What the search found (an offer with a UDP or TCP endpoint).
    pub fn found(&self) -> Option<&Found> {
        self.found.as_ref()
    }

    /// Subscribes `endpoint` (where events go, over UDP) to `eventgroup` of `service` at the
    /// server that made the offer `at`; the first SubscribeEventgroup is due at `now`.
    pub fn subscribe(
        &mut self,
        now: Duration,
        at: &Found,
        service: u16,
        eventgroup: u16,
        endpoint: SocketAddrV4,
    ) {
        let mut sd = SdRepr::default();
        let (i, n) = sd
            .add_options(&[SdOption::endpoint(
                *endpoint.ip(),
                PROTO_UDP,
                endpoint.port(),
            )])
            .unwrap_or((0, 0));
        sd.entries.push(Entry {
            entry_type: EntryType::SubscribeEventgroup,
            index1: i,
            index2: 0,
            num1: n,
            num2: 0,
            service_id: service,
            instance_id: at.instance,
            major_version: at.major,
            ttl: self.ttl,
            body: EntryBody::Eventgroup {
                counter: 0,
                eventgroup_id: eventgroup,
            },
        });
        self.subscription = Some(Subscription {
            sd,
            to: at.sd_source,
            service,
            eventgroup,
            next: Some(now),
            state: SubscriptionState::Pending,
        });
    }

    pub fn subscription(&self) -> Option<SubscriptionState> {
        self.subscription.as_ref().map(|s| s.state)
    }

    /// Ends the subscription: queues a StopSubscribeEventgroup (TTL 0).
    pub fn unsubscribe(&mut self) {
        if let Some(mut s) = self.subscription.take() {
            for e in &mut s.sd.entries {
                e.ttl = 0;
            }
            let tx = self.sessions.emit(&mut s.sd, s.to, false);
            self.queue.push_back(tx);
        }
    }

    /// Handles one datagram received on the SD socket from `src` (check
    /// [`is_own`](Self::is_own) first); anything but a valid SD message is ignored.
    pub fn handle(&mut self, now: Duration, src: SocketAddr, data: &[u8]) {
        let Ok((_, sd)) = SdRepr::parse_message(data) else {
            return;
        };
        if let (Some(f), None) = (&self.finding, &self.found) {
            for e in &sd.entries {
                if e.entry_type != EntryType::OfferService
                    || e.service_id != f.service
                    || e.ttl == 0
                    || e.major_version != f.major
                {
                    continue;
                }
                let udp = endpoint(e, &sd.options, PROTO_UDP);
                let tcp = endpoint(e, &sd.options, PROTO_TCP);
                if udp.is_some() || tcp.is_some() {
                    self.found = Some(Found {
                        udp,
                        tcp,
                        sd_source: src,
                        instance: e.instance_id,
                        major: e.major_version,
                    });
                    self.finding = None;
                    break;
                }
            }
        }
        if let Some(s) = &mut self.subscription
            && s.state == SubscriptionState::Pending
        {
            for e in &sd.entries {
                if e.entry_type != EntryType::SubscribeEventgroupAck
                    || e.service_id != s.service
                    || e.eventgroup_id() != Some(s.eventgroup)
                {
                    continue;
                }
                if e.ttl == 0 {
                    s.state = SubscriptionState::Refused;
                    s.next = None;
                    return;
                }
                s.state = SubscriptionState::Acked;
                s.next = renewal(now, self.ttl);
            }
        }
    }

    /// Queues what is due: FindService to every target while searching, SubscribeEventgroup
    /// until acknowledged and again at half the TTL after.
    pub fn handle_timeout(&mut self, now: Duration) {
        if let Some(f) = &mut self.finding
            && now >= f.next
        {
            f.next = now.saturating_add(FIND_REPEAT);
            let (service, ttl) = (f.service, self.ttl);
            for i in 0..self.targets.len() {
                let Some(&t) = self.targets.get(i) else {
                    break;
                };
                let mut sd = SdRepr::default();
                sd.entries.push(Entry {
                    entry_type: EntryType::FindService,
                    index1: 0,
                    index2: 0,
                    num1: 0,
                    num2: 0,
                    service_id: service,
                    instance_id: 0xFFFF,
                    major_version: 0xFF,
                    ttl,
                    body: EntryBody::Service {
                        minor_version: 0xFFFF_FFFF,
                    },
                });
                let tx = self.sessions.emit(&mut sd, t, false);
                self.queue.push_back(tx);
            }
        }
        if let Some(s) = &mut self.subscription
            && s.next.is_some_and(|t| now >= t)
        {
            s.next = match s.state {
                SubscriptionState::Acked => renewal(now, self.ttl),
                _ => Some(now.saturating_add(SUBSCRIBE_REPEAT)),
            };
            let mut sd = s.sd.clone();
            let tx = self.sessions.emit(&mut sd, s.to, false);
            self.queue.push_back(tx);
        }
    }

    /// When `handle_timeout` has something to send.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let f = self.finding.as_ref().map(|f| f.next);
        let s = self.subscription.as_ref().and_then(|s| s.next);
        match (f, s) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.queue.pop_front()
    }
}

/// When an acknowledged subscription of `ttl` seconds is renewed: at half its TTL (never for
/// TTL 0xFFFFFF).
fn renewal(now: Duration, ttl: u32) -> Option<Duration> {
    (ttl != TTL_INFINITE).then(|| now.saturating_add(Duration::from_millis(u64::from(ttl) * 500)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::someip::unhex;
    use crate::wire::someip::Packet;
    use proptest::prelude::*;

    // Known answers made with scapy 2.6.1 (`scapy.contrib.automotive.someip`, SOMEIP / SD with
    // SDEntry_Service, SDEntry_EventGroup and SDOption_IP4_EndPoint), not with this code. Every
    // message has flags 0xc0 (reboot, unicast).
    /// FindService 0x1234, any instance, any major, TTL 3, any minor; session 1.
    const FIND: &str =
        "ffff8100000000240000000101010200c000000000000010000000001234ffffff000003ffffffff00000000";
    /// OfferService 0x1234 instance 1 major 1 TTL 3 minor 0, options 10.77.0.1 UDP 30509 and
    /// 10.77.0.1 TCP 30510; session 1.
    const OFFER: &str = "ffff81000000003c0000000101010200c0000000000000100100002012340001010000030000000000000018000904000a4d00010011772d000904000a4d00010006772e";
    /// SubscribeEventgroup 0x1234 instance 1 major 1 TTL 3 eventgroup 1, option 10.77.0.2 UDP
    /// 40000; session 2.
    const SUB: &str = "ffff8100000000300000000201010200c000000000000010060000101234000101000003000000010000000c000904000a4d000200119c40";
    /// The same with TTL 0 (StopSubscribeEventgroup); session 3.
    const STOP: &str = "ffff8100000000300000000301010200c000000000000010060000101234000101000000000000010000000c000904000a4d000200119c40";
    /// SubscribeEventgroupAck 0x1234 instance 1 major 1 TTL 3 eventgroup 1; session 2.
    const ACK: &str =
        "ffff8100000000240000000201010200c0000000000000100700000012340001010000030000000100000000";
    /// The same with TTL 0 (Nack); session 2.
    const NACK: &str =
        "ffff8100000000240000000201010200c0000000000000100700000012340001010000000000000100000000";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    const CLIENT_SD: &str = "10.77.0.2:30490";
    const SUBSCRIBER: &str = "10.77.0.2:40000";

    fn server_cfg(eventgroup: Option<u16>) -> SdServerConfig {
        SdServerConfig {
            own: sa("10.77.0.1:30490"),
            address: Ipv4Addr::new(10, 77, 0, 1),
            udp_port: 30509,
            tcp_port: Some(30510),
            services: vec![OfferedService {
                id: 0x1234,
                instance: 1,
                major: 1,
                minor: 0,
                eventgroup,
            }],
            targets: vec![sa("224.224.224.245:30490"), sa(CLIENT_SD)],
            ttl: 3,
            offer_interval: ms(1000),
            max_subscribers: DEFAULT_MAX_SUBSCRIBERS,
        }
    }

    fn drain(q: impl FnMut() -> Option<Transmit>) -> Vec<Transmit> {
        core::iter::from_fn(q).collect()
    }

    fn parse(t: &Transmit) -> (u16, SdRepr) {
        let (h, sd) = SdRepr::parse_message(&t.contents).unwrap();
        (h.session_id, sd)
    }

    #[test]
    fn sessions_count_per_counter_and_the_reboot_flag_clears_at_the_wrap() {
        let mut s = SdSessions::new();
        assert_eq!(s.next(true), (1, FLAG_REBOOT | FLAG_UNICAST));
        assert_eq!(s.next(false), (1, FLAG_REBOOT | FLAG_UNICAST));
        assert_eq!(s.next(true), (2, FLAG_REBOOT | FLAG_UNICAST));
        for want in 2..=0xFFFFu16 {
            assert_eq!(s.next(false), (want, FLAG_REBOOT | FLAG_UNICAST));
        }
        // After 0xFFFF the session ID is 1 again and the reboot flag stays clear.
        assert_eq!(s.next(false), (1, FLAG_UNICAST));
        assert_eq!(s.next(false), (2, FLAG_UNICAST));
        // The multicast counter has not wrapped.
        assert_eq!(s.next(true), (3, FLAG_REBOOT | FLAG_UNICAST));
    }

    #[test]
    fn server_offers_cyclically_on_a_virtual_clock() {
        let t0 = ms(5_000);
        let mut srv = SdServer::new(server_cfg(None), t0);
        assert_eq!(srv.poll_timeout(), Some(t0));
        srv.handle_timeout(t0);
        let tx = drain(|| srv.poll_transmit());
        assert_eq!(tx.len(), 2);
        assert!(tx.iter().all(|t| t.cyclic));
        // Offer to the group on the multicast counter, to the peer on the unicast one: both are
        // the first of their counter, so both equal scapy's offer (session 1).
        assert_eq!(tx[0].destination, sa("224.224.224.245:30490"));
        assert_eq!(tx[0].contents, unhex(OFFER));
        assert_eq!(tx[1].destination, sa(CLIENT_SD));
        assert_eq!(tx[1].contents, unhex(OFFER));
        assert_eq!(srv.poll_timeout(), Some(t0 + ms(1000)));
        srv.handle_timeout(t0 + ms(999));
        assert!(srv.poll_transmit().is_none());
        srv.handle_timeout(t0 + ms(1000));
        let tx = drain(|| srv.poll_transmit());
        assert_eq!(tx.len(), 2);
        assert_eq!(parse(&tx[0]).0, 2);
        assert_eq!(parse(&tx[1]).0, 2);
        assert_eq!(srv.poll_timeout(), Some(t0 + ms(2000)));
        // Late (the offers at 2 s and 3 s were missed): one round now, the next a period on.
        srv.handle_timeout(t0 + ms(3_500));
        assert_eq!(drain(|| srv.poll_transmit()).len(), 2);
        assert_eq!(srv.poll_timeout(), Some(t0 + ms(4_500)));
        // Slightly late: the grid is kept.
        srv.handle_timeout(t0 + ms(4_600));
        assert_eq!(drain(|| srv.poll_transmit()).len(), 2);
        assert_eq!(srv.poll_timeout(), Some(t0 + ms(5_500)));
    }

    #[test]
    fn server_offers_clear_the_reboot_flag_after_the_session_wraps() {
        let mut cfg = server_cfg(None);
        cfg.targets = vec![sa(CLIENT_SD)];
        let mut srv = SdServer::new(cfg, Duration::ZERO);
        let mut last = None;
        for i in 0..=0xFFFFu64 {
            srv.handle_timeout(ms(1000 * i));
            let t = srv.poll_transmit().unwrap();
            last = Some(parse(&t));
            if i == 0xFFFE {
                let (s, sd) = last.clone().unwrap();
                assert_eq!((s, sd.flags), (0xFFFF, FLAG_REBOOT | FLAG_UNICAST));
            }
        }
        let (s, sd) = last.unwrap();
        assert_eq!((s, sd.flags), (1, FLAG_UNICAST));
    }

    #[test]
    fn server_answers_find_service_with_the_offer_scapy_makes() {
        let mut srv = SdServer::new(server_cfg(None), Duration::ZERO);
        srv.handle(ms(1), sa(CLIENT_SD), &unhex(FIND));
        let tx = drain(|| srv.poll_transmit());
        assert_eq!(tx.len(), 1);
        assert_eq!(tx[0].destination, sa(CLIENT_SD));
        assert!(!tx[0].cyclic);
        assert_eq!(tx[0].contents, unhex(OFFER));
        assert_eq!(srv.received(), 1);

        // Another service, or another major version: no answer.
        let mut other = unhex(FIND);
        other[16 + 8 + 4..16 + 8 + 6].copy_from_slice(&0x9999u16.to_be_bytes());
        srv.handle(ms(2), sa(CLIENT_SD), &other);
        let mut major2 = unhex(FIND);
        major2[16 + 8 + 8] = 2;
        srv.handle(ms(3), sa(CLIENT_SD), &major2);
        assert!(srv.poll_transmit().is_none());
        // Two finds in one message get one offer.
        let mut sd = SdRepr::parse_message(&unhex(FIND)).unwrap().1;
        sd.entries.push(sd.entries[0]);
        let mut twice = vec![0u8; HEADER_LEN + sd.buffer_len()];
        sd.emit_message(9, &mut twice).unwrap();
        srv.handle(ms(4), sa(CLIENT_SD), &twice);
        let (_, reply) = parse(&srv.poll_transmit().unwrap());
        assert_eq!(reply.entries.len(), 1);
    }

    #[test]
    fn subscriptions_are_acknowledged_expire_with_their_ttl_renew_and_stop() {
        let mut srv = SdServer::new(server_cfg(Some(1)), Duration::ZERO);
        let client = sa(CLIENT_SD);
        let t0 = ms(10_000);
        // A find first, so the Ack is the second unicast message (session 2, as scapy's).
        srv.handle(t0, client, &unhex(FIND));
        srv.handle(t0, client, &unhex(SUB));
        let tx = drain(|| srv.poll_transmit());
        assert_eq!(tx.len(), 2);
        assert_eq!(tx[1].contents, unhex(ACK));
        let sub = sa(SUBSCRIBER);
        assert_eq!(srv.targets(t0 + ms(2_999), 0x1234, 1), vec![sub]);
        assert_eq!(srv.targets(t0 + ms(2_999), 0x1234, 2), vec![]);
        // TTL 3 s: gone at exactly 3 s.
        assert_eq!(srv.targets(t0 + ms(3_000), 0x1234, 1), vec![]);
        assert!(srv.subscribers().is_empty());

        // Renewed at 2 s, it lasts until 5 s.
        srv.handle(t0, client, &unhex(SUB));
        srv.handle(t0 + ms(2_000), client, &unhex(SUB));
        assert_eq!(srv.subscribers().len(), 1);
        assert_eq!(srv.subscribers().next_expiry(), Some(t0 + ms(5_000)));
        assert_eq!(srv.targets(t0 + ms(4_999), 0x1234, 1), vec![sub]);
        // StopSubscribeEventgroup ends it at once, without an answer.
        drain(|| srv.poll_transmit());
        srv.handle(t0 + ms(3_000), client, &unhex(STOP));
        assert!(srv.poll_transmit().is_none());
        assert_eq!(srv.targets(t0 + ms(3_000), 0x1234, 1), vec![]);
    }

    #[test]
    fn subscriptions_to_what_is_not_offered_get_a_nack() {
        // The service has no event: scapy's Nack.
        let mut srv = SdServer::new(server_cfg(None), Duration::ZERO);
        srv.handle(ms(1), sa(CLIENT_SD), &unhex(FIND));
        srv.handle(ms(1), sa(CLIENT_SD), &unhex(SUB));
        let tx = drain(|| srv.poll_transmit());
        assert_eq!(tx[1].contents, unhex(NACK));
        assert!(srv.subscribers().is_empty());

        // A subscriber with a TCP endpoint only (scapy 2.8.0's message in wire::someip_sd,
        // which also carries an offer, ignored by a server).
        let mut srv = SdServer::new(server_cfg(Some(1)), Duration::ZERO);
        let ka = unhex(concat!(
            "ffff81000000004c0000000101010200c0000000000000200100001012340001010000030000000006010010",
            "1234000101000003000000010000001800090400",
            "0a4d00010011772d000904000a4d000200069c40"
        ));
        srv.handle(ms(1), sa(CLIENT_SD), &ka);
        let (_, reply) = parse(&srv.poll_transmit().unwrap());
        assert_eq!(reply.entries.len(), 1);
        assert_eq!(
            reply.entries[0].entry_type,
            EntryType::SubscribeEventgroupAck
        );
        assert_eq!(reply.entries[0].ttl, 0);
        assert!(srv.subscribers().is_empty());
    }

    #[test]
    fn the_subscriber_table_is_bounded_but_renewals_fit() {
        let mut cfg = server_cfg(Some(1));
        cfg.max_subscribers = 2;
        let mut srv = SdServer::new(cfg, Duration::ZERO);
        let sub_from = |port: u16| {
            let mut m = unhex(SUB);
            let n = m.len();
            m[n - 2..].copy_from_slice(&port.to_be_bytes());
            m
        };
        let ttl_of_reply =
            |srv: &mut SdServer| parse(&srv.poll_transmit().unwrap()).1.entries[0].ttl;
        for (port, want) in [(40000, 3), (40001, 3), (40002, 0), (40000, 3)] {
            srv.handle(ms(1), sa(CLIENT_SD), &sub_from(port));
            assert_eq!(ttl_of_reply(&mut srv), want, "port {port}");
        }
        assert_eq!(srv.subscribers().len(), 2);
        // Once one expired, there is room again.
        srv.handle(ms(2), sa(CLIENT_SD), &sub_from(40001));
        ttl_of_reply(&mut srv);
        srv.subscribers.expire(ms(3_001));
        assert_eq!(srv.subscribers().len(), 1);
        srv.handle(ms(3_001), sa(CLIENT_SD), &sub_from(40002));
        assert_eq!(ttl_of_reply(&mut srv), 3);
    }

    #[test]
    fn junk_on_the_sd_socket_is_counted_not_answered() {
        let mut srv = SdServer::new(server_cfg(Some(1)), Duration::ZERO);
        let find = unhex(FIND);
        for bad in [
            &find[..10],
            &find[..find.len() - 1],
            b"not sd at all, 16+ bytes".as_slice(),
        ] {
            srv.handle(ms(1), sa(CLIENT_SD), bad);
        }
        assert!(srv.poll_transmit().is_none());
        assert_eq!(srv.drops().get(DropReason::Malformed), 3);
        assert_eq!(srv.received(), 0);
        assert!(srv.is_own(sa("10.77.0.1:30490")));
        assert!(!srv.is_own(sa(CLIENT_SD)));
    }

    fn client() -> SdClient {
        SdClient::new(sa("10.77.0.2:30490"), vec![sa("10.77.0.1:30490")], 3)
    }

    #[test]
    fn client_finds_a_service_from_scapys_offer() {
        let mut c = client();
        let t0 = ms(100);
        c.find(t0, 0x1234, 1);
        assert_eq!(c.poll_timeout(), Some(t0));
        c.handle_timeout(t0);
        let tx = drain(|| c.poll_transmit());
        assert_eq!(tx.len(), 1);
        assert_eq!(tx[0].destination, sa("10.77.0.1:30490"));
        assert_eq!(tx[0].contents, unhex(FIND));
        // Repeated every second until an offer arrives.
        c.handle_timeout(t0 + ms(999));
        assert!(c.poll_transmit().is_none());
        c.handle_timeout(t0 + ms(1000));
        assert_eq!(parse(&c.poll_transmit().unwrap()).0, 2);

        // An offer of another major version does not count.
        let server = sa("10.77.0.1:30490");
        let mut major2 = unhex(OFFER);
        major2[16 + 8 + 8] = 2;
        c.handle(t0 + ms(1100), server, &major2);
        assert!(c.found().is_none());
        c.handle(t0 + ms(1200), server, &unhex(OFFER));
        assert_eq!(
            c.found(),
            Some(&Found {
                udp: Some(sa("10.77.0.1:30509")),
                tcp: Some(sa("10.77.0.1:30510")),
                sd_source: server,
                instance: 1,
                major: 1,
            })
        );
        assert_eq!(c.poll_timeout(), None);
        c.handle_timeout(t0 + ms(5000));
        assert!(c.poll_transmit().is_none());
    }

    fn found() -> Found {
        Found {
            udp: Some(sa("10.77.0.1:30509")),
            tcp: None,
            sd_source: sa("10.77.0.1:30490"),
            instance: 1,
            major: 1,
        }
    }

    fn subscriber_endpoint() -> SocketAddrV4 {
        "10.77.0.2:40000".parse().unwrap()
    }

    #[test]
    fn client_subscribes_repeats_until_acked_renews_and_stops() {
        let mut c = client();
        // One message sent before, so the subscription is session 2 (as scapy's).
        c.find(Duration::ZERO, 0x1234, 1);
        c.handle_timeout(Duration::ZERO);
        c.handle(ms(10), sa("10.77.0.1:30490"), &unhex(OFFER));
        drain(|| c.poll_transmit());

        let t0 = ms(1_000);
        c.subscribe(t0, &found(), 0x1234, 1, subscriber_endpoint());
        assert_eq!(c.subscription(), Some(SubscriptionState::Pending));
        c.handle_timeout(t0);
        let tx = drain(|| c.poll_transmit());
        assert_eq!(tx.len(), 1);
        assert_eq!(tx[0].destination, sa("10.77.0.1:30490"));
        assert_eq!(tx[0].contents, unhex(SUB));
        assert_eq!(c.poll_timeout(), Some(t0 + SUBSCRIBE_REPEAT));
        c.handle_timeout(t0 + ms(500));
        assert_eq!(parse(&c.poll_transmit().unwrap()).0, 3);

        c.handle(t0 + ms(600), sa("10.77.0.1:30490"), &unhex(ACK));
        assert_eq!(c.subscription(), Some(SubscriptionState::Acked));
        // A Nack after the Ack changes nothing; renewal at half the TTL (1.5 s).
        c.handle(t0 + ms(700), sa("10.77.0.1:30490"), &unhex(NACK));
        assert_eq!(c.subscription(), Some(SubscriptionState::Acked));
        assert_eq!(c.poll_timeout(), Some(t0 + ms(2_100)));
        c.handle_timeout(t0 + ms(2_099));
        assert!(c.poll_transmit().is_none());
        c.handle_timeout(t0 + ms(2_100));
        let (s, sd) = parse(&c.poll_transmit().unwrap());
        assert_eq!((s, sd.entries[0].ttl), (4, 3));
        assert_eq!(c.poll_timeout(), Some(t0 + ms(3_600)));

        c.unsubscribe();
        let (s, sd) = parse(&c.poll_transmit().unwrap());
        assert_eq!(
            (s, sd.entries[0].entry_type, sd.entries[0].ttl),
            (5, EntryType::SubscribeEventgroup, 0)
        );
        assert_eq!(c.subscription(), None);
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn client_stop_is_scapys_stop_and_a_nack_refuses() {
        let mut c = client();
        c.find(Duration::ZERO, 0x1234, 1);
        c.handle_timeout(Duration::ZERO);
        c.subscribe(ms(1), &found(), 0x1234, 1, subscriber_endpoint());
        c.handle_timeout(ms(1));
        c.unsubscribe();
        let tx = drain(|| c.poll_transmit());
        assert_eq!(tx.len(), 3);
        assert_eq!(tx[1].contents, unhex(SUB));
        assert_eq!(tx[2].contents, unhex(STOP));

        let mut c = client();
        c.subscribe(ms(1), &found(), 0x1234, 1, subscriber_endpoint());
        c.handle_timeout(ms(1));
        // An Ack for another eventgroup is not ours.
        let mut other = unhex(ACK);
        let n = other.len();
        other[n - 1] = 2;
        c.handle(ms(2), sa("10.77.0.1:30490"), &other);
        assert_eq!(c.subscription(), Some(SubscriptionState::Pending));
        c.handle(ms(3), sa("10.77.0.1:30490"), &unhex(NACK));
        assert_eq!(c.subscription(), Some(SubscriptionState::Refused));
        assert_eq!(c.poll_timeout(), None);
    }

    proptest! {
        /// Hostile input never panics and never makes either side answer junk.
        #[test]
        fn hostile_sd_input_never_panics(
            data in proptest::collection::vec(any::<u8>(), 0..300),
            flips in proptest::collection::vec((0usize..120, any::<u8>()), 0..6),
        ) {
            let mut srv = SdServer::new(server_cfg(Some(1)), Duration::ZERO);
            let mut c = client();
            c.find(Duration::ZERO, 0x1234, 1);
            c.subscribe(Duration::ZERO, &found(), 0x1234, 1, subscriber_endpoint());
            let mut inputs = vec![data];
            for base in [FIND, OFFER, SUB, STOP, ACK, NACK] {
                let mut m = unhex(base);
                for &(at, v) in &flips {
                    let n = m.len();
                    m[at % n] ^= v;
                }
                inputs.push(m);
            }
            for m in &inputs {
                srv.handle(ms(1), sa(CLIENT_SD), m);
                c.handle(ms(1), sa("10.77.0.1:30490"), m);
            }
            srv.handle_timeout(ms(2));
            c.handle_timeout(ms(2));
            for t in drain(|| srv.poll_transmit()).iter().chain(drain(|| c.poll_transmit()).iter()) {
                // Whatever is sent is a valid SD message.
                prop_assert!(Packet::new_checked(&t.contents[..]).is_ok());
                prop_assert!(SdRepr::parse_message(&t.contents).is_ok());
            }
            prop_assert!(srv.subscribers().len() <= 1);
        }
    }
}
