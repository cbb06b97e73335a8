//! The SOME/IP-SD state machines of `ivnsec_core::someip::sd` on a virtual clock: an `SdServer`
//! (two services, one with an eventgroup; a multicast and a unicast target; at most 4
//! subscriptions) and an `SdClient` that finds service 0x1234 and subscribes to eventgroup 1.
//!
//! The input is a list of records `dt | who | len (u16) | bytes`: the clock advances by dt × 10 ms,
//! `who` picks the receiver (bit 0: server or client) and the sender address (bits 1–2: the
//! client's SD endpoint, another peer, the server's SD endpoint, the server itself), then both
//! sides' timers run and their queues drain.
//!
//! Invariants: nothing panics; everything either side sends is a valid SD message, to the source
//! of what it answers or to one of its configured destinations; after `handle_timeout(now)` the
//! next timeout is later than `now`; the subscriber table never exceeds its bound and every
//! subscriber's expiry lies within 0xFFFFFE seconds of the time it was filed.
#![no_main]

use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use core::time::Duration;

use ivnsec_core::someip::sd::{
    Found, OfferedService, SdClient, SdServer, SdServerConfig, SubscriptionState,
};
use ivnsec_core::wire::someip_sd::SdRepr;
use libfuzzer_sys::fuzz_target;

const MAX_SUBSCRIBERS: usize = 4;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fuzz_target!(|data: &[u8]| {
    let server_sd = addr("10.77.0.1:30490");
    let client_sd = addr("10.77.0.2:30490");
    let group = addr("224.224.224.245:30490");
    let senders = [
        client_sd,
        addr("10.77.0.3:30490"),
        server_sd,
        addr("10.77.0.1:30509"),
    ];
    let cfg = SdServerConfig {
        own: server_sd,
        address: Ipv4Addr::new(10, 77, 0, 1),
        udp_port: 30509,
        tcp_port: Some(30510),
        services: vec![
            OfferedService {
                id: 0x1234,
                instance: 1,
                major: 1,
                minor: 0,
                eventgroup: Some(1),
            },
            OfferedService {
                id: 0x4321,
                instance: 2,
                major: 3,
                minor: 7,
                eventgroup: None,
            },
        ],
        targets: vec![group, client_sd],
        ttl: 3,
        offer_interval: Duration::from_millis(1000),
        max_subscribers: MAX_SUBSCRIBERS,
    };
    let mut now = Duration::ZERO;
    let mut server = SdServer::new(cfg, now);
    let mut client = SdClient::new(client_sd, vec![group, server_sd], 3);
    client.find(now, 0x1234, 1);
    let at = Found {
        udp: Some(addr("10.77.0.1:30509")),
        tcp: None,
        sd_source: server_sd,
        instance: 1,
        major: 1,
    };
    client.subscribe(
        now,
        &at,
        0x1234,
        1,
        SocketAddrV4::new(Ipv4Addr::new(10, 77, 0, 2), 40000),
    );

    let mut rest = data;
    while rest.len() >= 4 {
        let (dt, who) = (rest[0], rest[1]);
        let len = usize::from(u16::from_be_bytes([rest[2], rest[3]])).min(rest.len() - 4);
        let msg = &rest[4..4 + len];
        rest = &rest[4 + len..];
        now += Duration::from_millis(u64::from(dt) * 10);
        let src = senders[usize::from(who >> 1) & 3];
        if who & 1 == 0 {
            if !server.is_own(src) {
                server.handle(now, src, msg);
            }
        } else if !client.is_own(src) {
            client.handle(now, src, msg);
        }
        server.handle_timeout(now);
        client.handle_timeout(now);
        assert!(server.poll_timeout().is_none_or(|t| t > now));
        assert!(client.poll_timeout().is_none_or(|t| t > now));
        while let Some(t) = server.poll_transmit() {
            assert!(SdRepr::parse_message(&t.contents).is_ok());
            // Cyclic offers go to the configured targets, answers to whoever asked.
            if t.cyclic {
                assert!(t.destination == group || t.destination == client_sd);
            } else {
                assert_eq!(t.destination, src);
            }
        }
        while let Some(t) = client.poll_transmit() {
            assert!(SdRepr::parse_message(&t.contents).is_ok());
            assert!(t.destination == group || t.destination == server_sd);
            assert!(!t.cyclic);
        }
        let subs = server.subscribers();
        assert!(subs.len() <= MAX_SUBSCRIBERS);
        for s in subs.iter() {
            assert_eq!(s.service, 0x1234);
            assert_eq!(s.eventgroup, 1);
            if let Some(e) = s.expires {
                assert!(e <= now + Duration::from_secs(0xFF_FFFE));
            }
        }
        if client.subscription() == Some(SubscriptionState::Refused) {
            assert_eq!(client.poll_timeout().is_some(), client.found().is_none());
        }
    }
});
