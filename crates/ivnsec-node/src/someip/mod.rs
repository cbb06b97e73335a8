//! `ivnsec someip serve|call` around the sans-I/O SOME/IP logic of the core
//! (`ivnsec_core::someip`): the TOML configuration ([`config`]), the `--pcap` capture
//! ([`capture`]), the sockets bound from it ([`sockets`]), the server's threads ([`server`])
//! and the client's loops ([`client`]) that feed the core's state machines, and here the glue — the
//! services' SAs with their freshness counters reserved in the persistent nonce state
//! ([`NonceStates`]), the core's configurations made from a [`Config`], and sending.

pub mod capture;
pub mod client;
pub mod config;
pub mod server;
pub mod sockets;

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use ivnsec_core::channel::DirectionKeys;
use ivnsec_core::crypto::{CryptoProvider, Primitive};
use ivnsec_core::sa::someip::{Level, ServiceParams, ServiceSa, SomeipSecurity};
use ivnsec_core::someip::sd::Transmit;
use ivnsec_core::someip::sd::{DEFAULT_MAX_SUBSCRIBERS, OfferedService, SdServerConfig};
use ivnsec_core::someip::service::{
    CounterReservation, EventSpec, ProtectError, Served, ServiceCore,
};
use ivnsec_core::someip::{UdpSendError, udp_datagrams};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::someip as net;

use crate::error::usage;
use crate::keys::highwater::{self, HighWater, HwError};
use crate::sync::lock;
use capture::Capture;
pub use config::{Config, Service};

/// The service core of a `serve` or `call` node.
pub type Core = ServiceCore<NonceStates>;

/// Unix time in nanoseconds: the first freshness counter of a run without `--state-dir` (a
/// restart under the same key starts above every counter sent before, since no sender reaches
/// 10^9 messages per second), and the time stamp events carry.
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(1)
        .max(1)
}

/// This process's sender identity per service: the server, or the client with `client_id`.
#[derive(Clone, Copy, Debug)]
pub enum Side {
    Server,
    Client(u16),
}

/// Where the freshness counters are kept across restarts.
#[derive(Clone, Debug)]
pub struct NonceOptions {
    /// Persistent state directory (docs/nonce-safety.md); `None`: the first counter is the
    /// Unix time in nanoseconds.
    pub state_dir: Option<PathBuf>,
    /// Counters reserved per state write.
    pub reserve_block: u64,
}

/// The persistent counter reservations of the secured services (with a state directory).
#[derive(Debug, Default)]
pub struct NonceStates {
    states: Vec<(u16, HighWater)>,
}

impl CounterReservation for NonceStates {
    type Error = HwError;
    fn claim(&mut self, service_id: u16, counter: u64) -> Result<(), HwError> {
        match self.states.iter_mut().find(|(id, _)| *id == service_id) {
            Some((_, hw)) => hw.claim(counter),
            None => Ok(()),
        }
    }
}

/// A protect error in the exit-code convention (a failed reservation says why, as the nonce
/// state's errors do everywhere).
pub fn protect_error(e: ProtectError<HwError>) -> anyhow::Error {
    match e {
        ProtectError::Reserve(hw) => hw.into_anyhow(),
        other => anyhow::anyhow!("{other}"),
    }
}

fn provider_for(choice: ProviderChoice, s: &Service) -> Result<&'static CryptoProvider> {
    let needs = [Primitive::Aead(s.suite)];
    ivnsec_crypto::select_primitives(choice, &needs, &s.suite.name()).map_err(|_| {
        usage(format!(
            "provider {choice} has no {} (service 0x{:04x}); use provider = \"portable\" or \"auto\"",
            s.suite.name(),
            s.id
        ))
    })
}

/// The services' SAs; with a state directory, their first counters come from (and are
/// reserved in) the persistent state, else from the clock.
pub fn security(
    cfg: &Config,
    nonce: &NonceOptions,
    side: Side,
) -> Result<(SomeipSecurity, NonceStates)> {
    let clock_first = unix_ns();
    let mut sas = Vec::new();
    let mut states = NonceStates::default();
    for s in &cfg.services {
        let provider = provider_for(cfg.node.provider, s)?;
        let mut first = clock_first;
        if let (Some(dir), false) = (&nonce.state_dir, s.level == Level::NoSec) {
            let sender = match side {
                Side::Server => "server".to_string(),
                Side::Client(c) => format!("client 0x{c:04x}"),
            };
            // The nonce is (salt XOR sender) ‖ counter (docs/wire-someip-sec.md): under one
            // key, the sender alone picks the nonce space, so the state is keyed by the sender
            // alone. Another service ID or key id under the same key continues the same counter,
            // and a second process sending as the same sender under the key is refused
            // (`locked`) instead of counting in the same space.
            let ident = format!("someip sender {sender}");
            // The salt is not part of the nonce state's fingerprint (as the IV is not).
            let keys = DirectionKeys::new(&s.key, &[], [0; 12]);
            let opts = highwater::Options {
                block: nonce.reserve_block,
                seq_limit: None,
                protocol_max: u64::MAX,
                ..Default::default()
            };
            let profile = format!("someip-{}", s.suite.name());
            // The previous version keyed the state by service and key id too: its state for
            // this configuration's service is taken over (this state continues above it).
            let previous = format!(
                "someip service 0x{:04x} key-id {} sender {sender}",
                s.id, s.key_id
            );
            let old_mark = if highwater::state_exists(dir, &profile, &previous, &keys) {
                let old = HighWater::open_agreed(dir, &profile, &previous, &keys, opts.clone())
                    .map_err(HwError::into_anyhow)?;
                Some(old.reserved())
            } else {
                None
            };
            let mut hw = match old_mark {
                Some(_) => HighWater::open_agreed(dir, &profile, &ident, &keys, opts),
                None => HighWater::open(dir, &profile, &ident, &keys, opts),
            }
            .map_err(HwError::into_anyhow)?;
            if let Some(m) = old_mark.filter(|m| *m > hw.reserved()) {
                hw.reserve_to(m).map_err(HwError::into_anyhow)?;
                eprintln!(
                    "ivnsec: note: the nonce state of service 0x{:04x} key id {} under this key \
                     was taken over: sender {sender} continues above {m} in {}",
                    s.id,
                    s.key_id,
                    hw.path().display()
                );
            }
            first = hw.first_seq().map_err(HwError::into_anyhow)?;
            states.states.push((s.id, hw));
        }
        let p = ServiceParams {
            service_id: s.id,
            level: s.level,
            alg: s.suite,
            key_id: s.key_id,
            key: &s.key,
            salt: s.salt,
            replay_window: s.replay_window,
            max_senders: s.max_senders,
            first_counter: first,
        };
        let sa = ServiceSa::new(provider, &p).map_err(|e| {
            usage(format!(
                "{}: service 0x{:04x}: {e}",
                cfg.path.display(),
                s.id
            ))
        })?;
        sas.push(sa);
    }
    Ok((SomeipSecurity::new(sas), states))
}

/// The service core of a node: its SAs (counters reserved per `nonce`), TP reassembly bounded
/// by `node.max_message`, and the echo methods it answers.
pub fn service_core(
    cfg: &Config,
    nonce: &NonceOptions,
    side: Side,
) -> Result<ServiceCore<NonceStates>> {
    let (security, states) = security(cfg, nonce, side)?;
    let served = cfg
        .services
        .iter()
        .map(|s| Served {
            service_id: s.id,
            echo_method: s.echo_method,
        })
        .collect();
    Ok(ServiceCore::new(
        security,
        states,
        served,
        cfg.node.max_message,
    ))
}

/// Where SD messages go: the multicast group and the unicast peers, at the SD port.
pub fn sd_targets(cfg: &Config) -> Vec<SocketAddr> {
    let mut t: Vec<SocketAddr> = cfg
        .sd
        .multicast
        .iter()
        .map(|g| SocketAddr::from((*g, cfg.sd.port)))
        .collect();
    t.extend(
        cfg.sd
            .peers
            .iter()
            .map(|p| SocketAddr::from((*p, cfg.sd.port))),
    );
    t
}

/// This node's SD endpoint (messages from it are its own, looped back by multicast).
pub fn sd_own(cfg: &Config) -> SocketAddr {
    SocketAddr::from((cfg.node.address, cfg.sd.port))
}

/// The SD server of `cfg`, offering the services at the ports the sockets were bound to.
pub fn sd_server_config(cfg: &Config, udp_port: u16, tcp_port: Option<u16>) -> SdServerConfig {
    SdServerConfig {
        own: sd_own(cfg),
        address: cfg.node.address,
        udp_port,
        tcp_port,
        services: cfg
            .services
            .iter()
            .map(|s| OfferedService {
                id: s.id,
                instance: s.instance,
                major: s.major,
                minor: s.minor,
                eventgroup: s.event.map(|_| s.eventgroup),
            })
            .collect(),
        targets: sd_targets(cfg),
        ttl: cfg.sd.ttl,
        offer_interval: Duration::from_millis(cfg.sd.offer_interval_ms),
        max_subscribers: DEFAULT_MAX_SUBSCRIBERS,
    }
}

/// The periodic events of the services that have one.
pub fn event_specs(cfg: &Config) -> Vec<EventSpec> {
    cfg.services
        .iter()
        .filter_map(|s| {
            Some(EventSpec {
                service_id: s.id,
                event_id: s.event?,
                eventgroup: s.eventgroup,
                interface_version: s.major,
                period: Duration::from_millis(s.event_period_ms),
                payload_size: s.event_payload_size,
            })
        })
        .collect()
}

/// Sends a whole message over UDP: one datagram, or SOME/IP-TP segments when the payload is
/// larger than `node.udp_max_payload`; each recorded in `cap`.
pub fn send_udp(
    sock: &UdpSocket,
    dst: SocketAddr,
    wire: &[u8],
    node: &config::Node,
    cap: &Capture,
) -> Result<()> {
    udp_datagrams(wire, node.udp_max_payload, node.tp_segment, |d, _| {
        sock.send_to(d, dst)?;
        cap.sent(sock, dst, d);
        Ok::<(), std::io::Error>(())
    })
    .map_err(|e| match e {
        UdpSendError::Header(h) => anyhow!("{h}"),
        UdpSendError::Send { segment, error } => anyhow::Error::new(error).context(if segment {
            format!("sending a segment to {dst}")
        } else {
            format!("sending to {dst}")
        }),
    })
}

fn send_sd(sock: &UdpSocket, t: &Transmit, cap: &Capture) -> Result<()> {
    sock.send_to(&t.contents, t.destination)
        .with_context(|| format!("sending SOME/IP-SD to {}", t.destination))?;
    cap.sent(sock, t.destination, &t.contents);
    Ok(())
}

/// Receives one SD datagram that is not this node's own (`own`), records it and hands it to
/// `handle`; nothing on a timeout or an own message.
fn recv_sd(
    sock: &UdpSocket,
    buf: &mut [u8],
    cap: &Capture,
    own: SocketAddr,
    handle: impl FnOnce(SocketAddr, &[u8]),
) -> Result<()> {
    if let Some((n, src)) = net::recv_from(sock, buf)?
        && src != own
    {
        cap.received(sock, src, &buf[..n]);
        handle(src, &buf[..n]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_core::someip::service::{Caller, Reply};
    use std::path::Path;

    fn cfg(level: &str, suite: &str, key_len: usize) -> Config {
        let key = if level == "nosec" {
            String::new()
        } else {
            format!("key = \"{}\"\n", "a5".repeat(key_len))
        };
        let text = format!(
            "[node]\naddress = \"127.0.0.1\"\nprovider = \"portable\"\n\
             [[service]]\nid = 0x1234\nlevel = \"{level}\"\nsuite = \"{suite}\"\n{key}echo_method = 1\n\
             [[service]]\nid = 0x4321\nlevel = \"nosec\"\nevent = 0x8001\neventgroup = 2\n"
        );
        config::parse(Path::new("t.toml"), &text).unwrap()
    }

    fn no_state() -> NonceOptions {
        NonceOptions {
            state_dir: None,
            reserve_block: highwater::DEFAULT_BLOCK,
        }
    }

    /// A client's request is verified and answered by a server made from the same
    /// configuration, and the answer verifies at the client: every suite at both levels (the
    /// portable provider).
    #[test]
    fn client_and_server_cores_talk_at_every_level() {
        let suites = [
            ("aes128-gcm", 16),
            ("aes256-gcm", 32),
            ("aes128-ccm", 16),
            ("aes256-ccm", 32),
            ("chacha20-poly1305", 32),
        ];
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        for (suite, n) in suites {
            for level in ["auth", "conf"] {
                let c = cfg(level, suite, n);
                let mut server = service_core(&c, &no_state(), Side::Server).unwrap();
                let mut client = service_core(&c, &no_state(), Side::Client(0x0101)).unwrap();
                let mut caller = Caller::new(0x1234, 1, 0x0101, 1);
                let (h, body) = caller.request(1, 100);
                let wire = client.protect(&h, &body).map_err(protect_error).unwrap();
                if level == "conf" {
                    assert!(
                        !wire.windows(8).any(|w| w == &body[8..16]),
                        "{suite}: in clear"
                    );
                }
                let got = server.handle_datagram(peer, &wire);
                assert_eq!(got.len(), 1, "{suite}/{level}");
                let answer = server.answer(&got[0]).unwrap().unwrap();
                let back = client.handle_datagram(peer, &answer);
                assert_eq!(
                    Caller::reply(&h, &body, true, &back[0]),
                    Some(Reply::Ok),
                    "{suite}/{level}"
                );
                // Replayed, the request is dropped.
                assert!(server.handle_datagram(peer, &wire).is_empty());
                assert_eq!(server.drops().total(), 1);
            }
        }
    }

    /// With a state directory, a secured service's counters come from the nonce state and are
    /// reserved on disk before a message carrying them is made; `nosec` services have none.
    #[test]
    fn counters_are_reserved_in_the_state_directory() {
        let dir = std::env::temp_dir().join(format!("ivnsec-someip-hw-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let nonce = NonceOptions {
            state_dir: Some(dir.clone()),
            reserve_block: 2,
        };
        let c = cfg("conf", "aes128-gcm", 16);
        let mut core = service_core(&c, &nonce, Side::Client(0x0101)).unwrap();
        let mut caller = Caller::new(0x1234, 1, 0x0101, 1);
        for i in 1..=3u64 {
            let (h, body) = caller.request(i, 8);
            let wire = core.protect(&h, &body).map_err(protect_error).unwrap();
            // The counter follows the key ID in the security header (docs/wire-someip-sec.md).
            assert_eq!(u64::from_be_bytes(wire[17..25].try_into().unwrap()), i);
        }
        let (h, _) = caller.request(4, 8);
        let mut event = h;
        event.service_id = 0x4321;
        core.protect(&event, b"plain")
            .map_err(protect_error)
            .unwrap();
        drop(core);
        // A restart under the same key starts above everything reserved (blocks of 2: 4).
        let mut core = service_core(&c, &nonce, Side::Client(0x0101)).unwrap();
        let (h, body) = caller.request(5, 8);
        let wire = core.protect(&h, &body).map_err(protect_error).unwrap();
        assert_eq!(u64::from_be_bytes(wire[17..25].try_into().unwrap()), 5);
        drop(core);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The nonce depends on the key, the salt and the sender only: another service ID or key id
    /// under the same key continues the sender's counter instead of starting at 1 again, and
    /// a second process sending as the same sender under the key is refused.
    #[test]
    fn another_service_or_key_id_under_one_key_continues_the_senders_counter() {
        let dir = std::env::temp_dir().join(format!("ivnsec-someip-sender-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let nonce = NonceOptions {
            state_dir: Some(dir.clone()),
            reserve_block: 2,
        };
        let counter_of = |c: &Config, service: u16| {
            let mut core = service_core(c, &nonce, Side::Client(0x0101)).unwrap();
            let mut caller = Caller::new(service, 1, 0x0101, 1);
            let (h, body) = caller.request(1, 8);
            let wire = core.protect(&h, &body).map_err(protect_error).unwrap();
            u64::from_be_bytes(wire[17..25].try_into().unwrap())
        };
        let c = cfg("conf", "aes128-gcm", 16);
        assert_eq!(counter_of(&c, 0x1234), 1);
        // The same key under another service ID and key id: above the reserved block (2).
        let mut other = c.clone();
        other.services[0].id = 0x5678;
        other.services[0].key_id = 7;
        assert_eq!(counter_of(&other, 0x5678), 3);
        // Two processes sending as one sender under one key: the second is refused.
        let _first = service_core(&c, &nonce, Side::Client(0x0101)).unwrap();
        let e = service_core(&other, &nonce, Side::Client(0x0101)).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        drop(_first);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A state written by the previous version (keyed by service and key id too) is taken
    /// over: the counter continues above its mark.
    #[test]
    fn the_previous_versions_state_of_the_service_is_taken_over() {
        let dir = std::env::temp_dir().join(format!("ivnsec-someip-prev-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let c = cfg("conf", "aes128-gcm", 16);
        let s = &c.services[0];
        let keys = DirectionKeys::new(&s.key, &[], [0; 12]);
        let opts = highwater::Options {
            block: 100,
            protocol_max: u64::MAX,
            ..Default::default()
        };
        let mut old = HighWater::open(
            &dir,
            "someip-aes128-gcm",
            "someip service 0x1234 key-id 1 sender client 0x0101",
            &keys,
            opts,
        )
        .unwrap();
        old.claim(1).unwrap();
        assert_eq!(old.reserved(), 100);
        drop(old);
        let nonce = NonceOptions {
            state_dir: Some(dir.clone()),
            reserve_block: 2,
        };
        let mut core = service_core(&c, &nonce, Side::Client(0x0101)).unwrap();
        let mut caller = Caller::new(0x1234, 1, 0x0101, 1);
        let (h, body) = caller.request(1, 8);
        let wire = core.protect(&h, &body).map_err(protect_error).unwrap();
        assert_eq!(u64::from_be_bytes(wire[17..25].try_into().unwrap()), 101);
        drop(core);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn sd_and_event_settings_come_from_the_configuration() {
        let mut c = cfg("nosec", "aes128-gcm", 0);
        c.sd.multicast = Some("224.224.224.245".parse().unwrap());
        c.sd.peers = vec!["127.0.0.2".parse().unwrap()];
        assert_eq!(
            sd_targets(&c),
            vec![
                "224.224.224.245:30490".parse::<SocketAddr>().unwrap(),
                "127.0.0.2:30490".parse().unwrap()
            ]
        );
        let s = sd_server_config(&c, 30509, Some(30510));
        assert_eq!(s.own, "127.0.0.1:30490".parse().unwrap());
        assert_eq!(s.services[0].eventgroup, None, "no event, no eventgroup");
        assert_eq!(s.services[1].eventgroup, Some(2));
        let e = event_specs(&c);
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].service_id, e[0].event_id, e[0].eventgroup),
            (0x4321, 0x8001, 2)
        );
        assert_eq!(e[0].period, Duration::from_millis(100));
    }
}
