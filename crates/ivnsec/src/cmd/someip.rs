//! `ivnsec someip serve|call`: SOME/IP services with per-service security (docs/someip.md,
//! docs/wire-someip-sec.md) over the UDP binding (several messages per datagram, SOME/IP-TP) and
//! the TCP binding (framing by Length, resynchronisation), found with SOME/IP-SD.
//!
//! `serve` offers every configured service: an echo method (RESPONSE = the request's body) and
//! a periodic event of a configured size to every subscriber; it answers FindService and
//! SubscribeEventgroup and offers cyclically (multicast and/or unicast peers). `call` finds a
//! service via SD (or takes `--endpoint`), calls a method `--count` times and prints latency
//! statistics; `--subscribe N` also subscribes to the service's eventgroup and waits for N events.

use std::io::Write;
use std::net::{IpAddr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
use clap::Subcommand;
use ivnsec_core::crypto::{CryptoProvider, Primitive};
use ivnsec_core::sa::someip::{Level, OVERHEAD, ServiceParams, ServiceSa, SomeipSecurity};
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_core::someip::datagram_messages;
use ivnsec_core::wire::someip::{
    Deframed, HEADER_LEN, MessageType, Repr, ReturnCode, StreamDeframer,
};
use ivnsec_core::wire::someip_sd::{
    Entry, EntryBody, EntryType, FLAG_REBOOT, FLAG_UNICAST, PROTO_TCP, PROTO_UDP, SdOption, SdRepr,
    TTL_INFINITE,
};
use ivnsec_core::wire::someip_tp::{Reassembler, ReassemblyLimits, Segmenter};
use ivnsec_net::someip as net;
use serde_json::json;

use super::someip_capture::Capture;
use super::someip_config::{self as config, Config, Service};
use crate::error::{EnvError, usage};
use ivnsec_core::channel::DirectionKeys;
use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::keys::highwater::{self, HighWater, HwError};

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Offer the configured services: an echo method and a periodic event per service, over UDP
    /// (and TCP when node.tcp_port is set), discoverable with SOME/IP-SD.
    ///
    /// Runs until killed, or for --duration seconds and then prints its counters (messages,
    /// answers, events, subscribers and every drop reason).
    #[command(after_help = "\
Examples:
  ivnsec someip serve --config server.toml
  ivnsec someip serve --config server.toml --duration 10 --json --pcap serve.pcap
  tshark -r serve.pcap -d udp.port==30509,someip -d tcp.port==30510,someip")]
    Serve(ServeArgs),
    /// Call a method of a service (found via SOME/IP-SD, or at --endpoint) and print round-trip
    /// latency statistics.
    ///
    /// Exit code 0 when every call was answered (and every awaited event arrived), 1 otherwise.
    #[command(after_help = "\
Examples:
  ivnsec someip call --config client.toml --service 0x1234 --method 1 --count 100
  ivnsec someip call --config client.toml --service 0x1234 --method 1 --tcp \\
      --endpoint 127.0.0.1:30510 --pcap call.pcap")]
    Call(CallArgs),
}

/// Parses a 16-bit ID in decimal or 0x-hex.
fn parse_u16(s: &str) -> Result<u16, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a 16-bit number (decimal or 0x-hex)"))
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The TOML configuration (node, sd, services; see docs/someip.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Stop after this many seconds and print the counters.
    #[arg(long, value_name = "SECS")]
    duration: Option<f64>,
    /// Print the final counters as JSON.
    #[arg(long)]
    json: bool,
    /// Record every datagram and TCP payload sent and received (SD included) as
    /// Ethernet/IPv4/UDP or TCP frames in a classic pcap that tshark dissects (docs/pcap.md says
    /// which header fields are synthesized).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    #[command(flatten)]
    nonce: NonceStateArgs,
}

/// Where `serve` and `call` keep their freshness counters across restarts.
#[derive(clap::Args, Debug, Clone)]
pub struct NonceStateArgs {
    /// Persist each secured service's freshness counter in this directory (reserved ahead in
    /// blocks, fsynced before use; docs/nonce-safety.md), so a restart under the same key never
    /// reuses a counter whatever the clock does. Without it the first counter of a run is the
    /// Unix time in nanoseconds, which is safe only while the wall clock never goes back.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Counters reserved per state write (with --state-dir).
    #[arg(long, value_name = "N", default_value_t = ivnsec_lab::keys::highwater::DEFAULT_BLOCK)]
    reserve_block: u64,
}

#[derive(clap::Args, Debug)]
pub struct CallArgs {
    /// The TOML configuration (its [[service]] entry gives the level, suite and key).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Service ID (decimal or 0x-hex).
    #[arg(long, value_parser = parse_u16)]
    service: u16,
    /// Method ID (decimal or 0x-hex).
    #[arg(long, value_parser = parse_u16)]
    method: u16,
    /// Bytes of request body.
    #[arg(long, default_value_t = 64)]
    payload_size: usize,
    /// Number of calls.
    #[arg(long, default_value_t = 10)]
    count: usize,
    /// The service's endpoint (IPv4:port); without it the service is found via SOME/IP-SD.
    #[arg(long, value_name = "IP:PORT")]
    endpoint: Option<SocketAddrV4>,
    /// Use the TCP binding instead of UDP.
    #[arg(long)]
    tcp: bool,
    /// How long to wait for each response.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// Pause between calls.
    #[arg(long, default_value_t = 0)]
    interval_ms: u64,
    /// Do not require the response body to equal the request body (for non-echo methods).
    #[arg(long)]
    no_echo_check: bool,
    /// After the calls, subscribe to the service's eventgroup and wait for this many events.
    #[arg(long, value_name = "N")]
    subscribe: Option<usize>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    /// Record every datagram and TCP payload sent and received (SD included) as
    /// Ethernet/IPv4/UDP or TCP frames in a classic pcap that tshark dissects.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    #[command(flatten)]
    nonce: NonceStateArgs,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Serve(a) => serve(a),
        Args::Call(a) => call(a),
    }
}

// ---------------------------------------------------------------------------------------------
// Shared state and the receive path.

/// Unix time in nanoseconds: the first freshness counter of a run, so a restart under the same
/// key starts above every counter sent before (no sender reaches 10^9 messages per second).
fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(1)
        .max(1)
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

/// This process's sender identity per service: the server, or the client with `client_id`.
#[derive(Clone, Copy, Debug)]
enum Side {
    Server,
    Client(u16),
}

/// The nonce state of one secured service (with `--state-dir`).
struct ServiceState {
    service_id: u16,
    hw: HighWater,
}

/// The services' SAs; with `--state-dir`, their first counters come from (and are reserved in)
/// the persistent state, else from the clock.
fn make_security(
    cfg: &Config,
    nonce: &NonceStateArgs,
    side: Side,
) -> Result<(SomeipSecurity, Vec<ServiceState>)> {
    let clock_first = unix_ns();
    let mut sas = Vec::new();
    let mut states = Vec::new();
    for s in &cfg.services {
        let provider = provider_for(cfg.node.provider, s)?;
        let mut first = clock_first;
        if let (Some(dir), false) = (&nonce.state_dir, s.level == Level::NoSec) {
            let sender = match side {
                Side::Server => "server".to_string(),
                Side::Client(c) => format!("client 0x{c:04x}"),
            };
            let ident = format!(
                "someip service 0x{:04x} key-id {} sender {sender}",
                s.id, s.key_id
            );
            // The salt is not part of the nonce state's fingerprint (as the IV is not).
            let keys = DirectionKeys::new(&s.key, &[], [0; 12]);
            let opts = highwater::Options {
                block: nonce.reserve_block,
                seq_limit: None,
                protocol_max: u64::MAX,
                ..Default::default()
            };
            let profile = format!("someip-{}", s.suite.name());
            let hw = HighWater::open(dir, &profile, &ident, &keys, opts)
                .map_err(HwError::into_anyhow)?;
            first = hw.first_seq().map_err(HwError::into_anyhow)?;
            states.push(ServiceState {
                service_id: s.id,
                hw,
            });
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

/// Everything both sides share behind one lock.
struct Core {
    security: SomeipSecurity,
    /// Persistent counter reservations (with `--state-dir`), one per secured service.
    nonce_states: Vec<ServiceState>,
    reassembler: Reassembler,
    /// Drops before a message reached a service (framing, TP, SD).
    wire_drops: DropCounters,
    received: u64,
    answered: u64,
    events_sent: u64,
    sd_sent: u64,
    sd_received: u64,
}

impl Core {
    fn new(cfg: &Config, nonce: &NonceStateArgs, side: Side) -> Result<Core> {
        let (security, nonce_states) = make_security(cfg, nonce, side)?;
        Ok(Core {
            security,
            nonce_states,
            reassembler: Reassembler::new(ReassemblyLimits {
                max_message: cfg.node.max_message,
                max_pending: 8,
                max_total: cfg.node.max_message.saturating_mul(2),
            }),
            wire_drops: DropCounters::default(),
            received: 0,
            answered: 0,
            events_sent: 0,
            sd_sent: 0,
            sd_received: 0,
        })
    }

    fn drops(&self) -> DropCounters {
        let mut d = self.security.drops();
        d.merge(&self.wire_drops);
        d
    }

    /// Verifies one whole (non-segment) message; returns its header and body.
    fn accept(&mut self, mut msg: Vec<u8>) -> Option<(Repr, Vec<u8>)> {
        let r = match self.security.verify(&mut msg) {
            Ok(r) => r,
            Err(_) => return None,
        };
        self.received += 1;
        let hdr = Repr::parse(&ivnsec_core::wire::someip::Packet::new_unchecked(&msg[..])).ok()?;
        let body = msg[r].to_vec();
        Some((hdr, body))
    }

    /// Splits a datagram into messages, reassembles TP segments, verifies each whole message.
    fn datagram(&mut self, peer: SocketAddr, data: &[u8]) -> Vec<(Repr, Vec<u8>)> {
        let mut whole = Vec::new();
        datagram_messages(
            &mut self.reassembler,
            &mut self.wire_drops,
            peer_key(peer),
            data,
            |m| whole.push(m),
        );
        whole.into_iter().filter_map(|m| self.accept(m)).collect()
    }

    /// Protects a message for `header.service_id`; the wire bytes.
    fn protect(&mut self, header: &Repr, body: &[u8]) -> Result<Vec<u8>> {
        // The counter this message will carry must be reserved on disk first.
        if let Some(st) = self
            .nonce_states
            .iter_mut()
            .find(|st| st.service_id == header.service_id)
            && let Some(next) = self
                .security
                .service(header.service_id)
                .and_then(|sa| sa.next_counter())
        {
            st.hw.claim(next).map_err(HwError::into_anyhow)?;
        }
        let mut buf = vec![0u8; HEADER_LEN + OVERHEAD + body.len()];
        let n = self.security.protect(header, body, &mut buf).map_err(|e| {
            anyhow!(
                "protecting a message of service 0x{:04x}: {e}",
                header.service_id
            )
        })?;
        buf.truncate(n);
        Ok(buf)
    }
}

fn peer_key(a: SocketAddr) -> u64 {
    match a {
        SocketAddr::V4(v) => (u64::from(u32::from(*v.ip())) << 16) | u64::from(v.port()),
        SocketAddr::V6(v) => {
            let o = v.ip().octets();
            u64::from_be_bytes([o[8], o[9], o[10], o[11], o[12], o[13], o[14], o[15]])
                ^ u64::from(v.port())
        }
    }
}

fn lock(core: &Mutex<Core>) -> MutexGuard<'_, Core> {
    core.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sends a whole message over UDP: one datagram, or SOME/IP-TP segments when the payload is
/// larger than `udp_max_payload`.
fn send_udp(
    sock: &UdpSocket,
    dst: SocketAddr,
    wire: &[u8],
    node: &config::Node,
    cap: &Capture,
) -> Result<()> {
    let payload = wire.len() - HEADER_LEN;
    if payload <= node.udp_max_payload {
        sock.send_to(wire, dst)
            .with_context(|| format!("sending to {dst}"))?;
        cap.sent(sock, dst, wire);
        return Ok(());
    }
    let hdr = Repr::parse(&ivnsec_core::wire::someip::Packet::new_unchecked(wire))
        .map_err(|e| anyhow!("{e}"))?;
    let mut seg = Segmenter::new(hdr, &wire[HEADER_LEN..], node.tp_segment);
    let mut buf = vec![0u8; seg.max_segment_len()];
    while let Some(n) = seg.next_into(&mut buf) {
        sock.send_to(&buf[..n], dst)
            .with_context(|| format!("sending a segment to {dst}"))?;
        cap.sent(sock, dst, &buf[..n]);
    }
    Ok(())
}

fn next_session(s: &mut u16) -> u16 {
    *s = s.wrapping_add(1);
    if *s == 0 {
        *s = 1;
    }
    *s
}

pub(crate) fn bind_err(
    what: &str,
    addr: impl std::fmt::Display,
    e: std::io::Error,
) -> anyhow::Error {
    anyhow::Error::new(EnvError(format!(
        "cannot bind the {what} socket to {addr}: {e} (is the address on this host / in this namespace, and the port free?)"
    )))
}

fn drops_json(d: &DropCounters) -> serde_json::Value {
    serde_json::Value::Object(
        d.iter()
            .map(|(r, n)| (r.name().to_string(), json!(n)))
            .collect(),
    )
}

fn drops_text(d: &DropCounters) -> String {
    let v: Vec<String> = d.iter().map(|(r, n)| format!("{r} {n}")).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

// ---------------------------------------------------------------------------------------------
// SD.

struct SdState {
    multicast_session: u16,
    unicast_session: u16,
    multicast_wrapped: bool,
    unicast_wrapped: bool,
}

impl SdState {
    fn new() -> SdState {
        SdState {
            multicast_session: 0,
            unicast_session: 0,
            multicast_wrapped: false,
            unicast_wrapped: false,
        }
    }

    /// Session and flags for the next message (the reboot flag stays set until the session ID
    /// wraps, PRS_SOMEIPSD_00150ff).
    fn next(&mut self, multicast: bool) -> (u16, u8) {
        let (s, w) = if multicast {
            (&mut self.multicast_session, &mut self.multicast_wrapped)
        } else {
            (&mut self.unicast_session, &mut self.unicast_wrapped)
        };
        if *s == 0xFFFF {
            *w = true;
        }
        let id = next_session(s);
        let flags = FLAG_UNICAST | if *w { 0 } else { FLAG_REBOOT };
        (id, flags)
    }
}

fn send_sd(
    sock: &UdpSocket,
    st: &mut SdState,
    sd: &mut SdRepr,
    (dst, multicast): (SocketAddr, bool),
    cap: &Capture,
) -> Result<()> {
    let (session, flags) = st.next(multicast);
    sd.flags = flags;
    let mut buf = vec![0u8; HEADER_LEN + sd.buffer_len()];
    let n = sd
        .emit_message(session, &mut buf)
        .ok_or_else(|| anyhow!("SD message buffer"))?;
    sock.send_to(&buf[..n], dst)
        .with_context(|| format!("sending SOME/IP-SD to {dst}"))?;
    cap.sent(sock, dst, &buf[..n]);
    Ok(())
}

fn offer_entries(cfg: &Config, sd: &mut SdRepr, only: Option<&Entry>) {
    for s in &cfg.services {
        if let Some(f) = only {
            let any_inst = f.instance_id == 0xFFFF || f.instance_id == s.instance;
            let any_major = f.major_version == 0xFF || f.major_version == s.major;
            if f.service_id != s.id || !any_inst || !any_major {
                continue;
            }
        }
        let mut opts = vec![SdOption::endpoint(
            cfg.node.address,
            PROTO_UDP,
            cfg.node.udp_port,
        )];
        if let Some(t) = cfg.node.tcp_port {
            opts.push(SdOption::endpoint(cfg.node.address, PROTO_TCP, t));
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
            ttl: cfg.sd.ttl,
            body: EntryBody::Service {
                minor_version: s.minor,
            },
        });
    }
}

#[derive(Clone, Debug)]
struct Subscriber {
    service: u16,
    eventgroup: u16,
    addr: SocketAddr,
    expires: Option<Instant>,
}

/// Handles one received SD message on the server side.
fn serve_sd_message(
    cfg: &Config,
    (sock, cap): (&UdpSocket, &Capture),
    st: &mut SdState,
    subs: &Mutex<Vec<Subscriber>>,
    src: SocketAddr,
    sd: &SdRepr,
) -> Result<()> {
    let mut reply = SdRepr::default();
    for e in &sd.entries {
        match e.entry_type {
            EntryType::FindService => {
                if e.service_id == 0xFFFF {
                    offer_entries(cfg, &mut reply, None);
                } else {
                    offer_entries(cfg, &mut reply, Some(e));
                }
            }
            EntryType::SubscribeEventgroup => {
                let Some(eg) = e.eventgroup_id() else {
                    continue;
                };
                let svc = cfg.services.iter().find(|s| {
                    s.id == e.service_id
                        && (e.instance_id == 0xFFFF || e.instance_id == s.instance)
                        && s.major == e.major_version
                        && s.eventgroup == eg
                        && s.event.is_some()
                });
                let udp_ep = e.resolve(&sd.options).ok().and_then(|mut it| {
                    it.find_map(|o| match *o {
                        SdOption::Ipv4 {
                            kind: ivnsec_core::wire::someip_sd::Ipv4Kind::Endpoint,
                            addr,
                            proto: PROTO_UDP,
                            port,
                        } => Some(SocketAddr::from((addr, port))),
                        _ => None,
                    })
                });
                let ok = svc.is_some() && udp_ep.is_some();
                {
                    let mut subs = subs.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(addr) = udp_ep {
                        subs.retain(|s| {
                            !(s.service == e.service_id && s.eventgroup == eg && s.addr == addr)
                        });
                        if ok && e.ttl > 0 {
                            subs.push(Subscriber {
                                service: e.service_id,
                                eventgroup: eg,
                                addr,
                                expires: (e.ttl != TTL_INFINITE).then(|| {
                                    Instant::now() + Duration::from_secs(u64::from(e.ttl))
                                }),
                            });
                        }
                    }
                }
                if e.ttl == 0 {
                    continue; // StopSubscribeEventgroup: no answer.
                }
                reply.entries.push(Entry {
                    entry_type: EntryType::SubscribeEventgroupAck,
                    index1: 0,
                    index2: 0,
                    num1: 0,
                    num2: 0,
                    ttl: if ok { e.ttl } else { 0 },
                    ..*e
                });
            }
            _ => {}
        }
    }
    if !reply.entries.is_empty() {
        send_sd(sock, st, &mut reply, (src, false), cap)?;
    }
    Ok(())
}

fn sd_targets(cfg: &Config) -> Vec<SocketAddr> {
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

// ---------------------------------------------------------------------------------------------
// serve.

fn serve(a: ServeArgs) -> Result<ExitCode> {
    let cfg = Arc::new(config::load(&a.config)?);
    if cfg.services.is_empty() {
        return Err(usage(format!(
            "{}: service: no [[service]] to offer",
            cfg.path.display()
        )));
    }
    if let Some(d) = a.duration
        && !(d > 0.0 && d.is_finite())
    {
        return Err(usage("--duration must be a positive number of seconds"));
    }
    let core = Arc::new(Mutex::new(Core::new(&cfg, &a.nonce, Side::Server)?));
    let node = &cfg.node;
    let cap = match &a.pcap {
        Some(p) => Capture::create(p, node.address)?,
        None => Capture::off(),
    };
    let udp_addr = SocketAddrV4::new(node.address, node.udp_port);
    let udp = Arc::new(
        net::bind_udp(udp_addr, Duration::from_millis(100))
            .map_err(|e| bind_err("UDP", udp_addr, e))?,
    );
    let udp_local = udp.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let subs: Arc<Mutex<Vec<Subscriber>>> = Arc::new(Mutex::new(Vec::new()));
    let mut handles = Vec::new();

    // UDP service endpoint.
    {
        let (core, udp, stop, cfg, cap) = (
            core.clone(),
            udp.clone(),
            stop.clone(),
            cfg.clone(),
            cap.clone(),
        );
        handles.push(thread::spawn(move || -> Result<()> {
            let mut buf = vec![0u8; net::MAX_DATAGRAM];
            while !stop.load(Ordering::Relaxed) {
                let Some((n, src)) = net::recv_from(&udp, &mut buf)? else {
                    continue;
                };
                cap.received(&udp, src, &buf[..n]);
                let mut c = lock(&core);
                for (hdr, body) in c.datagram(src, &buf[..n]) {
                    if let Some(wire) = answer(&cfg, &mut c, &hdr, &body)? {
                        send_udp(&udp, src, &wire, &cfg.node, &cap)?;
                    }
                }
            }
            Ok(())
        }));
    }

    // TCP service endpoint.
    let mut tcp_local = None;
    if let Some(port) = node.tcp_port {
        let addr = SocketAddrV4::new(node.address, port);
        let listener = TcpListener::bind(addr).map_err(|e| bind_err("TCP", addr, e))?;
        listener.set_nonblocking(true)?;
        tcp_local = Some(listener.local_addr()?);
        let (core, stop, cfg, cap) = (core.clone(), stop.clone(), cfg.clone(), cap.clone());
        handles.push(thread::spawn(move || -> Result<()> {
            let mut conns = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (core, stop, cfg, cap) =
                            (core.clone(), stop.clone(), cfg.clone(), cap.clone());
                        conns.push(thread::spawn(move || {
                            serve_tcp(&cfg, &core, &stop, stream, &cap)
                        }));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(20));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            for c in conns {
                let _ = c.join();
            }
            Ok(())
        }));
    }

    // SD.
    let mut sd_local = None;
    if cfg.sd.enabled {
        let sd_sock = net::bind_sd(
            node.address,
            cfg.sd.port,
            cfg.sd.multicast,
            Duration::from_millis(50),
        )
        .map_err(|e| bind_err("SOME/IP-SD", format!("0.0.0.0:{}", cfg.sd.port), e))?;
        sd_local = Some(sd_sock.local_addr()?);
        let (core, stop, cfg, subs, cap) = (
            core.clone(),
            stop.clone(),
            cfg.clone(),
            subs.clone(),
            cap.clone(),
        );
        handles.push(thread::spawn(move || -> Result<()> {
            let mut st = SdState::new();
            let interval = Duration::from_millis(cfg.sd.offer_interval_ms);
            let mut next_offer = Instant::now();
            let mut buf = vec![0u8; net::MAX_DATAGRAM];
            let targets = sd_targets(&cfg);
            while !stop.load(Ordering::Relaxed) {
                if Instant::now() >= next_offer {
                    for t in &targets {
                        let mut sd = SdRepr::default();
                        offer_entries(&cfg, &mut sd, None);
                        let multicast = matches!(t.ip(), IpAddr::V4(a) if a.is_multicast());
                        if let Err(e) = send_sd(&sd_sock, &mut st, &mut sd, (*t, multicast), &cap) {
                            eprintln!("ivnsec someip serve: {e:#}");
                        } else {
                            lock(&core).sd_sent += 1;
                        }
                    }
                    next_offer += interval;
                }
                let Some((n, src)) = net::recv_from(&sd_sock, &mut buf)? else {
                    continue;
                };
                if is_own(&cfg, src) {
                    continue;
                }
                cap.received(&sd_sock, src, &buf[..n]);
                match SdRepr::parse_message(&buf[..n]) {
                    Ok((_, sd)) => {
                        lock(&core).sd_received += 1;
                        serve_sd_message(&cfg, (&sd_sock, &cap), &mut st, &subs, src, &sd)?;
                    }
                    Err(_) => lock(&core).wire_drops.bump(DropReason::Malformed),
                }
            }
            Ok(())
        }));
    }

    // Events.
    if cfg.services.iter().any(|s| s.event.is_some()) {
        let (core, stop, cfg, subs, udp, cap) = (
            core.clone(),
            stop.clone(),
            cfg.clone(),
            subs.clone(),
            udp.clone(),
            cap.clone(),
        );
        handles.push(thread::spawn(move || {
            event_loop(&cfg, &core, &stop, &subs, (&udp, &cap))
        }));
    }

    let mut line = format!("ivnsec someip serve: udp {udp_local}");
    if let Some(t) = tcp_local {
        line += &format!(", tcp {t}");
    }
    match (sd_local, cfg.sd.multicast) {
        (Some(s), Some(g)) => line += &format!(", sd {s} multicast {g}"),
        (Some(s), None) => line += &format!(", sd {s}"),
        _ => {}
    }
    for s in &cfg.services {
        line += &format!(
            "; service 0x{:04x} {}{}",
            s.id,
            s.level,
            if s.level == Level::NoSec {
                String::new()
            } else {
                format!(" {}", s.suite.name())
            }
        );
    }
    println!("{line}");
    std::io::stdout().flush()?;

    let started = Instant::now();
    match a.duration {
        Some(d) => {
            let end = started + Duration::from_secs_f64(d);
            while Instant::now() < end && !handles.iter().any(|h| h.is_finished()) {
                thread::sleep(Duration::from_millis(20));
            }
        }
        None => {
            while !handles.iter().any(|h| h.is_finished()) {
                thread::sleep(Duration::from_millis(100));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(anyhow!("a server thread panicked"));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    cap.finish()?;
    let c = lock(&core);
    let drops = c.drops();
    let nsubs = subs.lock().map(|s| s.len()).unwrap_or(0);
    let services: Vec<serde_json::Value> = c
        .security
        .services()
        .iter()
        .map(|s| {
            json!({
                "service": s.service_id(),
                "level": s.level().name(),
                "suite": if s.level() == Level::NoSec { serde_json::Value::Null } else { json!(s.alg().name()) },
                "rx_ok": s.rx_counters().ok_frames,
                "tx": s.tx_counters().frames,
                "senders": s.senders(),
                "drops": drops_json(&s.rx_counters().drops),
            })
        })
        .collect();
    let tp = c.reassembler.stats();
    if a.json {
        let v = json!({
            "seconds": started.elapsed().as_secs_f64(),
            "received": c.received,
            "answered": c.answered,
            "events_sent": c.events_sent,
            "subscribers": nsubs,
            "sd_sent": c.sd_sent,
            "sd_received": c.sd_received,
            "tp": { "segments": tp.segments, "completed": tp.completed, "evicted": tp.evicted, "rejected": tp.rejected },
            "drops": drops_json(&drops),
            "services": services,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "served {:.1} s: {} messages, {} answers, {} events, {} subscribers, {} SD sent, {} SD received; drops: {}",
            started.elapsed().as_secs_f64(),
            c.received,
            c.answered,
            c.events_sent,
            nsubs,
            c.sd_sent,
            c.sd_received,
            drops_text(&drops)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// True when an SD message came from this node's own SD socket (multicast loopback).
fn is_own(cfg: &Config, src: SocketAddr) -> bool {
    src == SocketAddr::from((cfg.node.address, cfg.sd.port))
}

/// The answer of the server to one verified message, protected, or `None`.
fn answer(cfg: &Config, core: &mut Core, hdr: &Repr, body: &[u8]) -> Result<Option<Vec<u8>>> {
    if hdr.message_type != MessageType::Request {
        return Ok(None);
    }
    let Some(svc) = cfg.service(hdr.service_id) else {
        return Ok(None);
    };
    let mut r = *hdr;
    r.message_type = MessageType::Response;
    r.return_code = ReturnCode::E_OK;
    let wire = if svc.echo_method == Some(hdr.method_id) {
        core.protect(&r, body)?
    } else {
        r.message_type = MessageType::Error;
        r.return_code = ReturnCode::E_UNKNOWN_METHOD;
        core.protect(&r, &[])?
    };
    core.answered += 1;
    Ok(Some(wire))
}

fn serve_tcp(
    cfg: &Config,
    core: &Mutex<Core>,
    stop: &AtomicBool,
    mut stream: TcpStream,
    cap: &Capture,
) -> Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    stream.set_nodelay(true)?;
    let mut flow = match (stream.peer_addr(), stream.local_addr()) {
        (Ok(client), Ok(server)) => Some(cap.tcp(client, server)),
        _ => None,
    };
    let mut d = StreamDeframer::new(cfg.node.max_message);
    while !stop.load(Ordering::Relaxed) {
        let space = d.space();
        match net::read_some(&mut stream, space) {
            Ok(Some(0)) | Err(_) => return Ok(()),
            Ok(Some(n)) => {
                if let Some(f) = flow.as_mut() {
                    f.data(true, &space[..n]);
                }
                d.commit(n)
            }
            Ok(None) => continue,
        }
        loop {
            let msg = match d.poll() {
                Deframed::NeedMore => break,
                Deframed::Resync(_) => {
                    lock(core).wire_drops.bump(DropReason::StreamResync);
                    continue;
                }
                Deframed::Message(m) => m.to_vec(),
            };
            let mut c = lock(core);
            let Some((hdr, body)) = c.accept(msg) else {
                continue;
            };
            if let Some(wire) = answer(cfg, &mut c, &hdr, &body)? {
                drop(c);
                if stream.write_all(&wire).is_err() {
                    return Ok(());
                }
                if let Some(f) = flow.as_mut() {
                    f.data(false, &wire);
                }
            }
        }
    }
    Ok(())
}

/// Builds an event body: sequence number and send time (Unix ns), then a pattern.
fn event_body(seq: u64, size: usize) -> Vec<u8> {
    let mut b: Vec<u8> = (0..size).map(|i| (i * 13 + 5) as u8).collect();
    let mut head = [0u8; 16];
    head[..8].copy_from_slice(&seq.to_be_bytes());
    head[8..].copy_from_slice(&unix_ns().to_be_bytes());
    let n = size.min(16);
    b[..n].copy_from_slice(&head[..n]);
    b
}

fn event_loop(
    cfg: &Config,
    core: &Mutex<Core>,
    stop: &AtomicBool,
    subs: &Mutex<Vec<Subscriber>>,
    (udp, cap): (&UdpSocket, &Capture),
) -> Result<()> {
    let services: Vec<&Service> = cfg.services.iter().filter(|s| s.event.is_some()).collect();
    let start = Instant::now();
    let mut next: Vec<Instant> = services.iter().map(|_| start).collect();
    let mut seq: Vec<u64> = services.iter().map(|_| 0).collect();
    let mut session: Vec<u16> = services.iter().map(|_| 0).collect();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        for (i, s) in services.iter().enumerate() {
            if now < next[i] {
                continue;
            }
            next[i] += Duration::from_millis(s.event_period_ms);
            if next[i] < now {
                next[i] = now + Duration::from_millis(s.event_period_ms);
            }
            let targets: Vec<SocketAddr> = {
                let mut subs = subs.lock().unwrap_or_else(|p| p.into_inner());
                subs.retain(|x| x.expires.is_none_or(|t| t > now));
                subs.iter()
                    .filter(|x| x.service == s.id && x.eventgroup == s.eventgroup)
                    .map(|x| x.addr)
                    .collect()
            };
            if targets.is_empty() {
                continue;
            }
            seq[i] += 1;
            let hdr = Repr {
                service_id: s.id,
                method_id: s.event.unwrap_or(0x8001),
                client_id: 0,
                session_id: next_session(&mut session[i]),
                interface_version: s.major,
                message_type: MessageType::Notification,
                tp: false,
                return_code: ReturnCode::E_OK,
                payload_len: 0,
            };
            let wire = lock(core).protect(&hdr, &event_body(seq[i], s.event_payload_size))?;
            for t in targets {
                if send_udp(udp, t, &wire, &cfg.node, cap).is_ok() {
                    lock(core).events_sent += 1;
                }
            }
        }
        let wake = next
            .iter()
            .min()
            .copied()
            .unwrap_or(now + Duration::from_millis(10));
        let nap = wake
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(20));
        thread::sleep(nap);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// call.

/// What SD found for a service.
struct Found {
    udp: Option<SocketAddr>,
    tcp: Option<SocketAddr>,
    /// Where the offer came from (the server's SD endpoint).
    sd_source: SocketAddr,
    instance: u16,
    major: u8,
}

fn find_via_sd(cfg: &Config, svc: &Service, sock: &UdpSocket, cap: &Capture) -> Result<Found> {
    let targets = sd_targets(cfg);
    if targets.is_empty() {
        return Err(usage(format!(
            "{}: sd: no multicast group and no peers to find service 0x{:04x} with; set sd.multicast or sd.peers, or pass --endpoint",
            cfg.path.display(),
            svc.id
        )));
    }
    let mut st = SdState::new();
    let deadline = Instant::now() + Duration::from_millis(cfg.sd.find_timeout_ms);
    let mut next_find = Instant::now();
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    while Instant::now() < deadline {
        if Instant::now() >= next_find {
            for t in &targets {
                let mut sd = SdRepr::default();
                sd.entries.push(Entry {
                    entry_type: EntryType::FindService,
                    index1: 0,
                    index2: 0,
                    num1: 0,
                    num2: 0,
                    service_id: svc.id,
                    instance_id: 0xFFFF,
                    major_version: 0xFF,
                    ttl: cfg.sd.ttl,
                    body: EntryBody::Service {
                        minor_version: 0xFFFF_FFFF,
                    },
                });
                let multicast = matches!(t.ip(), IpAddr::V4(a) if a.is_multicast());
                send_sd(sock, &mut st, &mut sd, (*t, multicast), cap)?;
            }
            next_find = Instant::now() + Duration::from_millis(1000);
        }
        let Some((n, src)) = net::recv_from(sock, &mut buf)? else {
            continue;
        };
        if is_own(cfg, src) {
            continue;
        }
        cap.received(sock, src, &buf[..n]);
        let Ok((_, sd)) = SdRepr::parse_message(&buf[..n]) else {
            continue;
        };
        for e in &sd.entries {
            if e.entry_type != EntryType::OfferService || e.service_id != svc.id || e.ttl == 0 {
                continue;
            }
            if e.major_version != svc.major {
                continue;
            }
            let (mut udp, mut tcp) = (None, None);
            if let Ok(it) = e.resolve(&sd.options) {
                for o in it {
                    if let SdOption::Ipv4 {
                        kind: ivnsec_core::wire::someip_sd::Ipv4Kind::Endpoint,
                        addr,
                        proto,
                        port,
                    } = *o
                    {
                        let a = SocketAddr::from((addr, port));
                        match proto {
                            PROTO_UDP => udp = udp.or(Some(a)),
                            PROTO_TCP => tcp = tcp.or(Some(a)),
                            _ => {}
                        }
                    }
                }
            }
            if udp.is_some() || tcp.is_some() {
                return Ok(Found {
                    udp,
                    tcp,
                    sd_source: src,
                    instance: e.instance_id,
                    major: e.major_version,
                });
            }
        }
    }
    Err(anyhow!(
        "service 0x{:04x} was not offered via SOME/IP-SD within {} ms (sd targets: {})",
        svc.id,
        cfg.sd.find_timeout_ms,
        targets
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn request_body(i: u64, size: usize) -> Vec<u8> {
    let mut b: Vec<u8> = (0..size).map(|k| (k as u64 * 29 + i) as u8).collect();
    let n = size.min(8);
    b[..n].copy_from_slice(&i.to_be_bytes()[..n]);
    b
}

/// Outcome of the calls.
#[derive(Default)]
struct CallResult {
    rtt_us: Vec<f64>,
    ok: usize,
    lost: usize,
    mismatched: usize,
    errors: usize,
}

fn call(a: CallArgs) -> Result<ExitCode> {
    let cfg = config::load(&a.config)?;
    let svc = cfg
        .service(a.service)
        .ok_or_else(|| {
            usage(format!(
                "--service 0x{:04x}: no [[service]] with this id in {} (its level, suite and key are needed)",
                a.service,
                cfg.path.display()
            ))
        })?
        .clone();
    if a.method & 0x8000 != 0 {
        return Err(usage(format!(
            "--method 0x{:04x}: method IDs are below 0x8000",
            a.method
        )));
    }
    if a.payload_size + HEADER_LEN + OVERHEAD > cfg.node.max_message {
        return Err(usage(format!(
            "--payload-size {}: larger than node.max_message ({}) allows",
            a.payload_size, cfg.node.max_message
        )));
    }
    if a.timeout_ms == 0 {
        return Err(usage("--timeout-ms must be at least 1"));
    }
    let mut core = Core::new(&cfg, &a.nonce, Side::Client(cfg.node.client_id))?;
    let node = cfg.node.clone();
    let cap = match &a.pcap {
        Some(p) => Capture::create(p, node.address)?,
        None => Capture::off(),
    };

    // Find the service.
    let sd_sock = if a.endpoint.is_none() || a.subscribe.is_some() {
        if !cfg.sd.enabled && a.endpoint.is_none() {
            return Err(usage(format!(
                "{}: sd.enabled is false and no --endpoint was given",
                cfg.path.display()
            )));
        }
        Some(
            net::bind_sd(
                node.address,
                cfg.sd.port,
                cfg.sd.multicast,
                Duration::from_millis(50),
            )
            .map_err(|e| bind_err("SOME/IP-SD", format!("0.0.0.0:{}", cfg.sd.port), e))?,
        )
    } else {
        None
    };
    let found = match (a.endpoint, &sd_sock) {
        (Some(_), _) if a.subscribe.is_none() => None,
        (_, Some(s)) => Some(find_via_sd(&cfg, &svc, s, &cap)?),
        _ => None,
    };
    let target: SocketAddr = match (a.endpoint, &found) {
        (Some(e), _) => SocketAddr::V4(e),
        (None, Some(f)) => {
            let t = if a.tcp { f.tcp } else { f.udp };
            t.ok_or_else(|| {
                anyhow!(
                    "service 0x{:04x} offers no {} endpoint",
                    svc.id,
                    if a.tcp { "TCP" } else { "UDP" }
                )
            })?
        }
        (None, None) => unreachable!("found is Some without --endpoint"),
    };

    let udp_addr = SocketAddrV4::new(node.address, node.udp_port);
    let udp = net::bind_udp(udp_addr, Duration::from_millis(20))
        .map_err(|e| bind_err("UDP", udp_addr, e))?;
    let timeout = Duration::from_millis(a.timeout_ms);
    let mut res = CallResult::default();
    let mut session = 0u16;
    let mut tcp = if a.tcp {
        let s = net::connect_tcp(target, timeout)
            .map_err(|e| anyhow!("cannot connect to {target}: {e}"))?;
        s.set_read_timeout(Some(Duration::from_millis(20)))?;
        let flow = cap.tcp(s.local_addr()?, target);
        Some((s, StreamDeframer::new(node.max_message), flow))
    } else {
        None
    };
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    for i in 1..=a.count as u64 {
        let body = request_body(i, a.payload_size);
        let hdr = Repr {
            service_id: svc.id,
            method_id: a.method,
            client_id: node.client_id,
            session_id: next_session(&mut session),
            interface_version: svc.major,
            message_type: MessageType::Request,
            tp: false,
            return_code: ReturnCode::E_OK,
            payload_len: 0,
        };
        let wire = core.protect(&hdr, &body)?;
        let t0 = Instant::now();
        match &mut tcp {
            Some((s, _, flow)) => {
                s.write_all(&wire)
                    .with_context(|| format!("sending to {target}"))?;
                flow.data(true, &wire);
            }
            None => send_udp(&udp, target, &wire, &node, &cap)?,
        }
        let mut answered = false;
        while !answered && t0.elapsed() < timeout {
            let got = match &mut tcp {
                Some((s, d, flow)) => {
                    let space = d.space();
                    match net::read_some(s, space) {
                        Ok(Some(0)) => return Err(anyhow!("{target} closed the connection")),
                        Ok(Some(n)) => {
                            flow.data(false, &space[..n]);
                            d.commit(n)
                        }
                        Ok(None) => {}
                        Err(e) => return Err(anyhow!("reading from {target}: {e}")),
                    }
                    let mut v = Vec::new();
                    loop {
                        match d.poll() {
                            Deframed::NeedMore => break,
                            Deframed::Resync(_) => core.wire_drops.bump(DropReason::StreamResync),
                            Deframed::Message(m) => {
                                let m = m.to_vec();
                                v.extend(core.accept(m));
                            }
                        }
                    }
                    v
                }
                None => match net::recv_from(&udp, &mut buf)? {
                    Some((n, src)) => {
                        cap.received(&udp, src, &buf[..n]);
                        core.datagram(src, &buf[..n])
                    }
                    None => Vec::new(),
                },
            };
            for (rh, rb) in got {
                let is_reply =
                    matches!(rh.message_type, MessageType::Response | MessageType::Error);
                if !is_reply
                    || rh.service_id != svc.id
                    || rh.method_id != a.method
                    || rh.session_id != hdr.session_id
                    || rh.client_id != hdr.client_id
                {
                    continue;
                }
                answered = true;
                if rh.message_type == MessageType::Error || rh.return_code != ReturnCode::E_OK {
                    res.errors += 1;
                } else if !a.no_echo_check && rb != body {
                    res.mismatched += 1;
                } else {
                    res.ok += 1;
                    res.rtt_us.push(t0.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
        if !answered {
            res.lost += 1;
        }
        if a.interval_ms > 0 {
            thread::sleep(Duration::from_millis(a.interval_ms));
        }
    }

    // Events.
    let mut events = None;
    if let Some(want) = a.subscribe {
        let (Some(sd), Some(f)) = (&sd_sock, &found) else {
            return Err(usage(
                "--subscribe needs SOME/IP-SD (sd.enabled) to reach the server",
            ));
        };
        events = Some(subscribe(
            &cfg,
            &svc,
            &mut core,
            (sd, &udp, &cap),
            f,
            want,
            timeout,
        )?);
    }
    cap.finish()?;

    let drops = core.drops();
    let summary = ivnsec_lab::stats::summarize(&res.rtt_us);
    let transport = if a.tcp { "tcp" } else { "udp" };
    let level = svc.level.name();
    let suite = (svc.level != Level::NoSec).then(|| svc.suite.name());
    let events_ok = events
        .as_ref()
        .is_none_or(|e: &EventResult| e.received >= e.wanted);
    if a.json {
        let v = json!({
            "service": svc.id,
            "method": a.method,
            "endpoint": target.to_string(),
            "transport": transport,
            "level": level,
            "suite": suite,
            "payload_size": a.payload_size,
            "count": a.count,
            "ok": res.ok,
            "lost": res.lost,
            "errors": res.errors,
            "mismatched": res.mismatched,
            "rtt_us": summary,
            "drops": drops_json(&drops),
            "events": events.as_ref().map(|e| json!({
                "wanted": e.wanted,
                "received": e.received,
                "acked": e.acked,
                "bytes": e.bytes,
                "delay_us": ivnsec_lab::stats::summarize(&e.delay_us),
            })),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!(
            "someip call: service 0x{:04x} method 0x{:04x} at {target} ({transport}, {level}{}), payload {} B",
            svc.id,
            a.method,
            suite.map(|s| format!(" {s}")).unwrap_or_default(),
            a.payload_size
        );
        println!(
            "  {} calls: {} ok, {} lost, {} errors, {} wrong echo",
            a.count, res.ok, res.lost, res.errors, res.mismatched
        );
        if let Some(s) = &summary {
            println!(
                "  RTT µs: min {:.1}  median {:.1}  mean {:.1}  p99 {:.1}  max {:.1}  std {:.1}",
                s.min, s.median, s.mean, s.p99, s.max, s.std
            );
        }
        if let Some(e) = &events {
            println!(
                "  events: {} of {} received ({} bytes), subscription {}",
                e.received,
                e.wanted,
                e.bytes,
                if e.acked {
                    "acknowledged"
                } else {
                    "not acknowledged"
                }
            );
            if let Some(s) = ivnsec_lab::stats::summarize(&e.delay_us) {
                println!(
                    "  event tx→rx delay µs: min {:.1}  median {:.1}  p99 {:.1}  max {:.1}",
                    s.min, s.median, s.p99, s.max
                );
            }
        }
        println!("  drops: {}", drops_text(&drops));
    }
    let all_ok = res.ok == a.count && events_ok;
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

struct EventResult {
    wanted: usize,
    received: usize,
    acked: bool,
    bytes: u64,
    delay_us: Vec<f64>,
}

fn subscribe(
    cfg: &Config,
    svc: &Service,
    core: &mut Core,
    (sd_sock, udp, cap): (&UdpSocket, &UdpSocket, &Capture),
    found: &Found,
    want: usize,
    timeout: Duration,
) -> Result<EventResult> {
    let local = udp.local_addr()?;
    let port = local.port();
    let mut sd = SdRepr::default();
    let (i, n) = sd
        .add_options(&[SdOption::endpoint(cfg.node.address, PROTO_UDP, port)])
        .unwrap_or((0, 0));
    sd.entries.push(Entry {
        entry_type: EntryType::SubscribeEventgroup,
        index1: i,
        index2: 0,
        num1: n,
        num2: 0,
        service_id: svc.id,
        instance_id: found.instance,
        major_version: found.major,
        ttl: cfg.sd.ttl,
        body: EntryBody::Eventgroup {
            counter: 0,
            eventgroup_id: svc.eventgroup,
        },
    });
    let mut st = SdState::new();
    let mut r = EventResult {
        wanted: want,
        received: 0,
        acked: false,
        bytes: 0,
        delay_us: Vec::new(),
    };
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    // Wait long enough for `want` events at the configured period, plus the timeout.
    let budget =
        timeout + Duration::from_millis(svc.event_period_ms.saturating_mul(want as u64 + 2));
    let deadline = Instant::now() + budget.max(Duration::from_secs(3));
    let mut next_sub = Instant::now();
    while Instant::now() < deadline && r.received < want {
        if !r.acked && Instant::now() >= next_sub {
            let mut m = sd.clone();
            send_sd(sd_sock, &mut st, &mut m, (found.sd_source, false), cap)?;
            next_sub = Instant::now() + Duration::from_millis(500);
        }
        // Until acknowledged, listen on the SD socket (its timeout paces the loop); then only
        // on the event endpoint, draining every queued datagram.
        if !r.acked
            && let Some((n, src)) = net::recv_from(sd_sock, &mut buf)?
            && !is_own(cfg, src)
            && let Ok((_, m)) = {
                cap.received(sd_sock, src, &buf[..n]);
                SdRepr::parse_message(&buf[..n])
            }
        {
            for e in &m.entries {
                if e.entry_type == EntryType::SubscribeEventgroupAck
                    && e.service_id == svc.id
                    && e.eventgroup_id() == Some(svc.eventgroup)
                {
                    if e.ttl == 0 {
                        return Err(anyhow!(
                            "service 0x{:04x} refused the subscription to eventgroup 0x{:04x} (SubscribeEventgroupNack)",
                            svc.id,
                            svc.eventgroup
                        ));
                    }
                    r.acked = true;
                }
            }
        }
        while r.received < want
            && let Some((n, src)) = net::recv_from(udp, &mut buf)?
        {
            cap.received(udp, src, &buf[..n]);
            for (h, body) in core.datagram(src, &buf[..n]) {
                if h.message_type != MessageType::Notification || h.service_id != svc.id {
                    continue;
                }
                if svc.event.is_some_and(|e| e != h.method_id) {
                    continue;
                }
                r.received += 1;
                r.bytes += body.len() as u64;
                if body.len() >= 16 {
                    let sent = u64::from_be_bytes(body[8..16].try_into().unwrap_or([0; 8]));
                    let now = unix_ns();
                    // Only our own servers stamp events; ignore values that are not a recent time.
                    if sent <= now && now - sent < 60_000_000_000 {
                        r.delay_us.push((now - sent) as f64 / 1e3);
                    }
                }
            }
        }
    }
    // Stop the subscription (TTL 0).
    let mut stop = sd.clone();
    stop.entries[0].ttl = 0;
    let _ = send_sd(sd_sock, &mut st, &mut stop, (found.sd_source, false), cap);
    Ok(r)
}
