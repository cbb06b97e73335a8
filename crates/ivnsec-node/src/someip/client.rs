//! The loops of `ivnsec someip call`: finding a service with the core's SD client, calling a
//! method over the UDP or TCP binding, and subscribing to an eventgroup, on sockets the command
//! bound. Each loop feeds the core's state machines with what arrived and the time, and sends
//! what they return.

use std::io::Write;
use std::net::{SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use ivnsec_core::someip::sd::{Found, SdClient, SubscriptionState};
use ivnsec_core::someip::service::{Caller, EventTally, Message, Reply};
use ivnsec_core::wire::someip::StreamDeframer;
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
