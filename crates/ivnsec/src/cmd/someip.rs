//! `ivnsec someip serve|call`: SOME/IP services with per-service security (docs/someip.md,
//! docs/wire-someip-sec.md) over the UDP binding (several messages per datagram, SOME/IP-TP) and
//! the TCP binding (framing by Length, resynchronisation), found with SOME/IP-SD.
//!
//! `serve` offers every configured service: an echo method (RESPONSE = the request's body) and
//! a periodic event of a configured size to every subscriber; it answers FindService and
//! SubscribeEventgroup and offers cyclically (multicast and/or unicast peers). `call` finds a
//! service via SD (or takes `--endpoint`), calls a method `--count` times and prints latency
//! statistics; `--subscribe N` also subscribes to the service's eventgroup and waits for N events.
//!
//! The protocol is the core's (`ivnsec_core::someip`: SD server and client, service core,
//! events, caller); `ivnsec_node::someip` configures it and runs the loops that feed it. This
//! module checks the options, binds the sockets (UDP, TCP, SD with multicast, via
//! `ivnsec_net::someip`), hands them over and prints.

use std::io::Write;
use std::net::{SocketAddr, SocketAddrV4, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use clap::Subcommand;
use ivnsec_core::sa::DropCounters;
use ivnsec_core::sa::someip::{Level, OVERHEAD};
use ivnsec_core::someip::sd::{SdClient, SdServer};
use ivnsec_core::someip::service::Caller;
use ivnsec_core::wire::someip::{HEADER_LEN, StreamDeframer};
use ivnsec_net::someip as net;
use ivnsec_node::someip::capture::Capture;
use ivnsec_node::someip::client::{self, CallResult, Calls, Discovery, EventResult, Transport};
use ivnsec_node::someip::config::{self, Config, Service};
use ivnsec_node::someip::server::{self, Sockets};
use ivnsec_node::someip::{self as lab, Core, NonceOptions, Side};
use serde_json::json;

use crate::error::{EnvError, usage};
use crate::output::Json;

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
    /// Unix time in nanoseconds, which is safe only while the wall clock never goes back. The
    /// receive side keeps no acceptance mark yet: a restarted `serve` or `call` accepts
    /// recorded messages of its peers once more (their replay windows live in memory).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Counters reserved per state write (with --state-dir).
    #[arg(long, value_name = "N", default_value_t = ivnsec_node::keys::highwater::DEFAULT_BLOCK)]
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
// Sockets and printing.

impl NonceStateArgs {
    fn options(&self) -> NonceOptions {
        NonceOptions {
            state_dir: self.state_dir.clone(),
            reserve_block: self.reserve_block,
        }
    }
}

fn bind_err(what: &str, addr: impl std::fmt::Display, e: std::io::Error) -> anyhow::Error {
    anyhow::Error::new(EnvError(format!(
        "cannot bind the {what} socket to {addr}: {e} (is the address on this host / in this namespace, and the port free?)"
    )))
}

fn bind_udp(cfg: &Config, read_timeout_ms: u64) -> Result<UdpSocket> {
    let addr = SocketAddrV4::new(cfg.node.address, cfg.node.udp_port);
    net::bind_udp(addr, Duration::from_millis(read_timeout_ms))
        .map_err(|e| bind_err("UDP", addr, e))
}

fn bind_sd(cfg: &Config) -> Result<UdpSocket> {
    net::bind_sd(
        cfg.node.address,
        cfg.sd.port,
        cfg.sd.multicast,
        Duration::from_millis(50),
    )
    .map_err(|e| bind_err("SOME/IP-SD", format!("0.0.0.0:{}", cfg.sd.port), e))
}

fn capture(pcap: &Option<PathBuf>, cfg: &Config) -> Result<Capture> {
    match pcap {
        Some(p) => Capture::create(p, cfg.node.address),
        None => Ok(Capture::off()),
    }
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

fn suite_of(s: &Service) -> Option<&'static str> {
    (s.level != Level::NoSec).then(|| s.suite.name())
}

// ---------------------------------------------------------------------------------------------
// serve.

fn serve(a: ServeArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
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
    let core = lab::service_core(&cfg, &a.nonce.options(), Side::Server)?;
    let cap = capture(&a.pcap, &cfg)?;
    let udp = bind_udp(&cfg, 100)?;
    let tcp = match cfg.node.tcp_port {
        Some(port) => {
            let addr = SocketAddrV4::new(cfg.node.address, port);
            let l = TcpListener::bind(addr).map_err(|e| bind_err("TCP", addr, e))?;
            l.set_nonblocking(true)?;
            Some(l)
        }
        None => None,
    };
    let sd = if cfg.sd.enabled {
        Some(bind_sd(&cfg)?)
    } else {
        None
    };
    let mut line = format!("ivnsec someip serve: udp {}", udp.local_addr()?);
    if let Some(t) = &tcp {
        line += &format!(", tcp {}", t.local_addr()?);
    }
    match (&sd, cfg.sd.multicast) {
        (Some(s), Some(g)) => line += &format!(", sd {} multicast {g}", s.local_addr()?),
        (Some(s), None) => line += &format!(", sd {}", s.local_addr()?),
        _ => {}
    }
    for s in &cfg.services {
        let suite = suite_of(s).map(|n| format!(" {n}"));
        line += &format!(
            "; service 0x{:04x} {}{}",
            s.id,
            s.level,
            suite.unwrap_or_default()
        );
    }
    let running = server::start(cfg, core, Sockets { udp, tcp, sd }, cap.clone())?;
    // With --json, stdout carries the document alone: the line goes to stderr.
    if a.json {
        eprintln!("{line}");
    } else {
        println!("{line}");
        std::io::stdout().flush()?;
    }

    let started = Instant::now();
    let stopped = running.wait(a.duration.map(Duration::from_secs_f64))?;
    cap.finish()?;
    print_served(
        &a,
        &mut json,
        started,
        &stopped.core(),
        stopped.sd().as_deref(),
    )
}

fn print_served(
    a: &ServeArgs,
    json: &mut Json,
    started: Instant,
    c: &Core,
    sd: Option<&SdServer>,
) -> Result<ExitCode> {
    let mut drops = c.drops();
    if let Some(sd) = sd {
        drops.merge(sd.drops());
    }
    let n = c.counters();
    let (nsubs, sd_sent, sd_received) = sd.map_or((0, 0, 0), |s| {
        (s.subscribers().len(), s.sent(), s.received())
    });
    let secs = started.elapsed().as_secs_f64();
    if !a.json {
        println!(
            "served {secs:.1} s: {} messages, {} answers, {} events, {nsubs} subscribers, {sd_sent} SD sent, {sd_received} SD received; drops: {}",
            n.received,
            n.answered,
            n.events_sent,
            drops_text(&drops)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let services: Vec<serde_json::Value> = c
        .security()
        .services()
        .iter()
        .map(|s| {
            json!({
                "service": s.service_id(),
                "level": s.level().name(),
                "suite": (s.level() != Level::NoSec).then(|| s.alg().name()),
                "rx_ok": s.rx_counters().ok_frames,
                "tx": s.tx_counters().frames,
                "senders": s.senders(),
                "drops": drops_json(&s.rx_counters().drops),
            })
        })
        .collect();
    let tp = c.tp_stats();
    let v = json!({
        "seconds": secs,
        "received": n.received,
        "answered": n.answered,
        "events_sent": n.events_sent,
        "subscribers": nsubs,
        "sd_sent": sd_sent,
        "sd_received": sd_received,
        "tp": { "segments": tp.segments, "completed": tp.completed, "evicted": tp.evicted, "rejected": tp.rejected },
        "drops": drops_json(&drops),
        "services": services,
    });
    json.print(&v)?;
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// call.

fn call(a: CallArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
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
    let client_id = cfg.node.client_id;
    let mut core = lab::service_core(&cfg, &a.nonce.options(), Side::Client(client_id))?;
    let cap = capture(&a.pcap, &cfg)?;

    // Find the service.
    let sd_sock = if a.endpoint.is_none() || a.subscribe.is_some() {
        if !cfg.sd.enabled && a.endpoint.is_none() {
            return Err(usage(format!(
                "{}: sd.enabled is false and no --endpoint was given",
                cfg.path.display()
            )));
        }
        Some(bind_sd(&cfg)?)
    } else {
        None
    };
    let mut sd = sd_sock.as_ref().map(|sock| Discovery {
        client: SdClient::new(lab::sd_own(&cfg), lab::sd_targets(&cfg), cfg.sd.ttl),
        sock,
        epoch: Instant::now(),
    });
    let found = match (a.endpoint, &mut sd) {
        (Some(_), _) if a.subscribe.is_none() => None,
        (_, Some(sd)) => Some(client::find(&cfg, &svc, sd, &cap)?),
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

    let udp = bind_udp(&cfg, 20)?;
    let timeout = Duration::from_millis(a.timeout_ms);
    let mut transport = if a.tcp {
        let stream = net::connect_tcp(target, timeout)
            .map_err(|e| anyhow!("cannot connect to {target}: {e}"))?;
        stream.set_read_timeout(Some(Duration::from_millis(20)))?;
        let flow = cap.tcp(stream.local_addr()?, target);
        let deframer = StreamDeframer::new(cfg.node.max_message);
        Transport::Tcp {
            stream,
            target,
            deframer,
            flow,
        }
    } else {
        Transport::Udp { sock: &udp, target }
    };
    let calls = Calls {
        count: a.count,
        payload_size: a.payload_size,
        timeout,
        interval: Duration::from_millis(a.interval_ms),
        echo_check: !a.no_echo_check,
    };
    let mut caller = Caller::new(svc.id, a.method, client_id, svc.major);
    let res = client::call(&cfg, &mut core, &mut caller, &mut transport, &calls, &cap)?;

    // Events.
    let mut events = None;
    if let Some(want) = a.subscribe {
        let (Some(sd), Some(f)) = (&mut sd, &found) else {
            return Err(usage(
                "--subscribe needs SOME/IP-SD (sd.enabled) to reach the server",
            ));
        };
        let r = client::subscribe(&cfg, &svc, &mut core, sd, &udp, f, want, timeout, &cap)?;
        events = Some(r);
    }
    cap.finish()?;
    print_calls(&a, &mut json, &svc, target, &core, &res, events.as_ref())
}

fn print_calls(
    a: &CallArgs,
    json: &mut Json,
    svc: &Service,
    target: SocketAddr,
    core: &Core,
    res: &CallResult,
    events: Option<&EventResult>,
) -> Result<ExitCode> {
    let drops = core.drops();
    let summary = ivnsec_lab::stats::summarize(&res.rtt_us);
    let transport = if a.tcp { "tcp" } else { "udp" };
    let level = svc.level.name();
    let suite = suite_of(svc);
    let events_ok = events.is_none_or(|e| e.tally.received >= e.wanted);
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
            "events": events.map(|e| json!({
                "wanted": e.wanted,
                "received": e.tally.received,
                "acked": e.acked,
                "bytes": e.tally.bytes,
                "delay_us": ivnsec_lab::stats::summarize(&e.tally.delays_us),
            })),
        });
        json.print(&v)?;
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
        if let Some(e) = events {
            let acked = if e.acked {
                "acknowledged"
            } else {
                "not acknowledged"
            };
            println!(
                "  events: {} of {} received ({} bytes), subscription {acked}",
                e.tally.received, e.wanted, e.tally.bytes
            );
            if let Some(s) = ivnsec_lab::stats::summarize(&e.tally.delays_us) {
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
