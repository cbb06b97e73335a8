//! The loops of `ivnsec someip call`: finding a service with the core's SD client, calling a
//! method over the UDP or TCP binding, and subscribing to an eventgroup ([`run`] binds the
//! sockets and runs them in turn from [`CallSettings`]). Each loop feeds the core's state machines with what arrived and the time, and sends
//! what they return.

use std::io::Write;
use std::net::{SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use ivnsec_core::sa::someip::OVERHEAD;
use ivnsec_core::someip::sd::{Found, SdClient, SubscriptionState};
use ivnsec_core::someip::service::{Caller, EventTally, Message, Reply};
use ivnsec_core::wire::someip::{HEADER_LEN, StreamDeframer};
use ivnsec_net::someip as net;

use super::capture::{Capture, TcpFlow};
use super::{Config, Core, Service, protect_error, recv_sd, send_sd, send_udp, unix_ns};
use crate::error::usage;

/// The SD side of a client: the core's SD client, its socket and the origin of its time.
pub struct Discovery<'a> {
    pub client: SdClient,
    pub sock: &'a UdpSocket,
    pub epoch: Instant,
}

impl Discovery<'_> {
    /// Sends what is due, then reads the SD socket once (its timeout paces the loops).
    fn pump(&mut self, cfg: &Config, cap: &Capture, buf: &mut [u8]) -> Result<()> {
        self.client.handle_timeout(self.epoch.elapsed());
        self.flush(cap)?;
        let (client, epoch) = (&mut self.client, self.epoch);
        recv_sd(self.sock, buf, cap, super::sd_own(cfg), |src, data| {
            client.handle(epoch.elapsed(), src, data)
        })
    }

    fn flush(&mut self, cap: &Capture) -> Result<()> {
        while let Some(t) = self.client.poll_transmit() {
            send_sd(self.sock, &t, cap)?;
        }
        Ok(())
    }
}

/// Finds `svc` via SD within sd.find_timeout_ms.
pub fn find(cfg: &Config, svc: &Service, sd: &mut Discovery<'_>, cap: &Capture) -> Result<Found> {
    let targets = super::sd_targets(cfg);
    if targets.is_empty() {
        return Err(usage(format!(
            "{}: sd: no multicast group and no peers to find service 0x{:04x} with; set sd.multicast or sd.peers, or pass --endpoint",
            cfg.path.display(),
            svc.id
        )));
    }
    sd.client.find(sd.epoch.elapsed(), svc.id, svc.major);
    let deadline = Instant::now() + Duration::from_millis(cfg.sd.find_timeout_ms);
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    while Instant::now() < deadline {
        sd.pump(cfg, cap, &mut buf)?;
        if let Some(f) = sd.client.found() {
            return Ok(*f);
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

/// How requests travel: UDP datagrams (TP for large ones) or a TCP connection.
pub enum Transport<'a> {
    Udp {
        sock: &'a UdpSocket,
        target: SocketAddr,
    },
    Tcp {
        stream: TcpStream,
        target: SocketAddr,
        deframer: StreamDeframer,
        flow: TcpFlow,
    },
}

impl Transport<'_> {
    fn send(&mut self, wire: &[u8], cfg: &Config, cap: &Capture) -> Result<()> {
        match self {
            Transport::Udp { sock, target } => send_udp(sock, *target, wire, &cfg.node, cap),
            Transport::Tcp {
                stream,
                target,
                flow,
                ..
            } => {
                stream
                    .write_all(wire)
                    .with_context(|| format!("sending to {target}"))?;
                flow.data(true, wire);
                Ok(())
            }
        }
    }

    /// What arrived within the socket's read timeout, verified.
    fn receive(&mut self, core: &mut Core, cap: &Capture, buf: &mut [u8]) -> Result<Vec<Message>> {
        match self {
            Transport::Udp { sock, .. } => Ok(match net::recv_from(sock, buf)? {
                Some((n, src)) => {
                    cap.received(sock, src, &buf[..n]);
                    core.handle_datagram(src, &buf[..n])
                }
                None => Vec::new(),
            }),
            Transport::Tcp {
                stream,
                target,
                deframer: d,
                flow,
            } => {
                let space = d.space();
                match net::read_some(stream, space) {
                    Ok(Some(0)) => return Err(anyhow!("{target} closed the connection")),
                    Ok(Some(n)) => {
                        flow.data(false, &space[..n]);
                        d.commit(n)
                    }
                    Ok(None) => {}
                    Err(e) => return Err(anyhow!("reading from {target}: {e}")),
                }
                Ok(core.handle_stream(d))
            }
        }
    }
}

/// The calls to make.
#[derive(Clone, Copy, Debug)]
pub struct Calls {
    pub count: usize,
    pub payload_size: usize,
    /// How long to wait for each response.
    pub timeout: Duration,
    /// Pause between calls.
    pub interval: Duration,
    /// Require the response body to equal the request body.
    pub echo_check: bool,
}

/// Outcome of the calls.
#[derive(Clone, Debug, Default)]
pub struct CallResult {
    pub rtt_us: Vec<f64>,
    pub ok: usize,
    pub lost: usize,
    pub mismatched: usize,
    pub errors: usize,
}

/// Makes the calls one after the other, each waiting for its reply up to the timeout.
pub fn call(
    cfg: &Config,
    core: &mut Core,
    caller: &mut Caller,
    transport: &mut Transport<'_>,
    calls: &Calls,
    cap: &Capture,
) -> Result<CallResult> {
    let mut res = CallResult::default();
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    for i in 1..=calls.count as u64 {
        let (hdr, body) = caller.request(i, calls.payload_size);
        let wire = core.protect(&hdr, &body).map_err(protect_error)?;
        let t0 = Instant::now();
        transport.send(&wire, cfg, cap)?;
        let mut answered = false;
        while !answered && t0.elapsed() < calls.timeout {
            for m in transport.receive(core, cap, &mut buf)? {
                let Some(reply) = Caller::reply(&hdr, &body, calls.echo_check, &m) else {
                    continue;
                };
                answered = true;
                match reply {
                    Reply::Error => res.errors += 1,
                    Reply::Mismatched => res.mismatched += 1,
                    Reply::Ok => {
                        res.ok += 1;
                        res.rtt_us.push(t0.elapsed().as_secs_f64() * 1e6);
                    }
                }
            }
        }
        if !answered {
            res.lost += 1;
        }
        if !calls.interval.is_zero() {
            thread::sleep(calls.interval);
        }
    }
    Ok(res)
}

/// What a subscription brought.
#[derive(Clone, Debug)]
pub struct EventResult {
    pub wanted: usize,
    pub acked: bool,
    pub tally: EventTally,
}

/// Subscribes `udp`'s endpoint to the eventgroup of `svc` at the server that made the offer
/// `found`, counts events until `want` arrived (or the time for them at the configured period
/// plus `timeout`, at least 3 s, ran out), then stops the subscription.
#[allow(clippy::too_many_arguments)]
pub fn subscribe(
    cfg: &Config,
    svc: &Service,
    core: &mut Core,
    sd: &mut Discovery<'_>,
    udp: &UdpSocket,
    found: &Found,
    want: usize,
    timeout: Duration,
    cap: &Capture,
) -> Result<EventResult> {
    let endpoint = SocketAddrV4::new(cfg.node.address, udp.local_addr()?.port());
    sd.client
        .subscribe(sd.epoch.elapsed(), found, svc.id, svc.eventgroup, endpoint);
    let mut tally = EventTally::new(svc.id, svc.event);
    let mut acked = false;
    let mut buf = vec![0u8; net::MAX_DATAGRAM];
    let budget =
        timeout + Duration::from_millis(svc.event_period_ms.saturating_mul(want as u64 + 2));
    let deadline = Instant::now() + budget.max(Duration::from_secs(3));
    while Instant::now() < deadline && tally.received < want {
        // Until acknowledged, listen on the SD socket (its timeout paces the loop); then only
        // on the event endpoint, draining every queued datagram (renewals still go out).
        if acked {
            sd.client.handle_timeout(sd.epoch.elapsed());
            sd.flush(cap)?;
        } else {
            sd.pump(cfg, cap, &mut buf)?;
            match sd.client.subscription() {
                Some(SubscriptionState::Refused) => {
                    return Err(anyhow!(
                        "service 0x{:04x} refused the subscription to eventgroup 0x{:04x} (SubscribeEventgroupNack)",
                        svc.id,
                        svc.eventgroup
                    ));
                }
                Some(SubscriptionState::Acked) => acked = true,
                _ => {}
            }
        }
        while tally.received < want
            && let Some((n, src)) = net::recv_from(udp, &mut buf)?
        {
            cap.received(udp, src, &buf[..n]);
            for m in core.handle_datagram(src, &buf[..n]) {
                tally.handle(&m, unix_ns());
            }
        }
    }
    // Stop the subscription (TTL 0).
    sd.client.unsubscribe();
    let _ = sd.flush(cap);
    Ok(EventResult {
        wanted: want,
        acked,
        tally,
    })
}

/// What `ivnsec someip call` is asked to do (its options, parsed).
#[derive(Clone, Debug)]
pub struct CallSettings {
    /// The service's ID and the method's.
    pub service: u16,
    pub method: u16,
    /// The calls (count, payload size, timeout, interval, echo check).
    pub calls: Calls,
    /// The service's endpoint; without it the service is found via SOME/IP-SD.
    pub endpoint: Option<SocketAddrV4>,
    /// The TCP binding instead of UDP.
    pub tcp: bool,
    /// After the calls, subscribe to the eventgroup and wait for this many events.
    pub subscribe: Option<usize>,
    /// Record every datagram and TCP payload.
    pub pcap: Option<std::path::PathBuf>,
    pub nonce: super::NonceOptions,
}

/// What the calls (and the subscription) brought, and where they went.
pub struct CallOutcome {
    pub service: Service,
    pub target: SocketAddr,
    pub core: Core,
    pub calls: CallResult,
    pub events: Option<EventResult>,
}

/// Checks the settings against the configuration, finds the service (via SD unless an
/// endpoint is given), calls the method, subscribes when asked, and closes the capture.
pub fn run(cfg: &Config, s: &CallSettings) -> Result<CallOutcome> {
    let svc = check(cfg, s)?;
    let client_id = cfg.node.client_id;
    let mut core = super::service_core(cfg, &s.nonce, super::Side::Client(client_id))?;
    let cap = super::sockets::capture(s.pcap.as_deref(), cfg)?;

    // Find the service.
    let sd_sock = if s.endpoint.is_none() || s.subscribe.is_some() {
        if !cfg.sd.enabled && s.endpoint.is_none() {
            return Err(usage(format!(
                "{}: sd.enabled is false and no --endpoint was given",
                cfg.path.display()
            )));
        }
        Some(super::sockets::bind_sd(cfg)?)
    } else {
        None
    };
    let mut sd = sd_sock.as_ref().map(|sock| Discovery {
        client: SdClient::new(super::sd_own(cfg), super::sd_targets(cfg), cfg.sd.ttl),
        sock,
        epoch: Instant::now(),
    });
    let found = match (s.endpoint, &mut sd) {
        (Some(_), _) if s.subscribe.is_none() => None,
        (_, Some(sd)) => Some(find(cfg, &svc, sd, &cap)?),
        _ => None,
    };
    let target = target(s, &svc, found.as_ref())?;

    let udp = super::sockets::bind_udp(cfg, 20)?;
    let mut transport = connect(cfg, s, &udp, target, &cap)?;
    let mut caller = Caller::new(svc.id, s.method, client_id, svc.major);
    let calls = call(cfg, &mut core, &mut caller, &mut transport, &s.calls, &cap)?;

    // Events.
    let mut events = None;
    if let Some(want) = s.subscribe {
        let (Some(sd), Some(f)) = (&mut sd, &found) else {
            return Err(usage(
                "--subscribe needs SOME/IP-SD (sd.enabled) to reach the server",
            ));
        };
        let timeout = s.calls.timeout;
        let r = subscribe(cfg, &svc, &mut core, sd, &udp, f, want, timeout, &cap)?;
        events = Some(r);
    }
    cap.finish()?;
    Ok(CallOutcome {
        service: svc,
        target,
        core,
        calls,
        events,
    })
}

/// The configured service the settings name, with the method, payload and timeout checked.
fn check(cfg: &Config, s: &CallSettings) -> Result<Service> {
    let svc = cfg
        .service(s.service)
        .ok_or_else(|| {
            usage(format!(
                "--service 0x{:04x}: no [[service]] with this id in {} (its level, suite and key are needed)",
                s.service,
                cfg.path.display()
            ))
        })?
        .clone();
    if s.method & 0x8000 != 0 {
        return Err(usage(format!(
            "--method 0x{:04x}: method IDs are below 0x8000",
            s.method
        )));
    }
    if s.calls.payload_size + HEADER_LEN + OVERHEAD > cfg.node.max_message {
        return Err(usage(format!(
            "--payload-size {}: larger than node.max_message ({}) allows",
            s.calls.payload_size, cfg.node.max_message
        )));
    }
    if s.calls.timeout.is_zero() {
        return Err(usage("--timeout-ms must be at least 1"));
    }
    Ok(svc)
}

/// Where the requests go: the endpoint given, else the offer's endpoint of the transport.
fn target(s: &CallSettings, svc: &Service, found: Option<&Found>) -> Result<SocketAddr> {
    match (s.endpoint, found) {
        (Some(e), _) => Ok(SocketAddr::V4(e)),
        (None, Some(f)) => {
            let t = if s.tcp { f.tcp } else { f.udp };
            t.ok_or_else(|| {
                anyhow!(
                    "service 0x{:04x} offers no {} endpoint",
                    svc.id,
                    if s.tcp { "TCP" } else { "UDP" }
                )
            })
        }
        (None, None) => Err(anyhow!("no endpoint given and the service was not found")),
    }
}

/// The transport to `target`: the UDP socket, or a TCP connection.
fn connect<'a>(
    cfg: &Config,
    s: &CallSettings,
    udp: &'a UdpSocket,
    target: SocketAddr,
    cap: &Capture,
) -> Result<Transport<'a>> {
    if !s.tcp {
        return Ok(Transport::Udp { sock: udp, target });
    }
    let stream = net::connect_tcp(target, s.calls.timeout)
        .map_err(|e| anyhow!("cannot connect to {target}: {e}"))?;
    stream.set_read_timeout(Some(Duration::from_millis(20)))?;
    let flow = cap.tcp(stream.local_addr()?, target);
    let deframer = StreamDeframer::new(cfg.node.max_message);
    Ok(Transport::Tcp {
        stream,
        target,
        deframer,
        flow,
    })
}
