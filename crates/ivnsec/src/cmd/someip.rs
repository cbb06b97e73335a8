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
//! events, caller); `ivnsec_node::someip` configures it, binds the sockets (`sockets`) and runs
//! the loops that feed it (`server`, `client`). This module turns the options into its settings
//! and prints.

use std::io::Write;
use std::net::SocketAddrV4;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Subcommand;
use ivnsec_core::sa::DropCounters;
use ivnsec_core::sa::someip::Level;
use ivnsec_core::someip::sd::SdServer;
use ivnsec_node::someip::client::{self, CallOutcome, CallSettings, Calls};
use ivnsec_node::someip::config::{self, Service};
use ivnsec_node::someip::server::{self, Sockets};
use ivnsec_node::someip::{self as lab, Core, NonceOptions, Side, sockets};
use serde_json::json;

use crate::error::usage;
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
    let cfg = Arc::new(server::load(&a.config)?);
    if let Some(d) = a.duration
        && !(d > 0.0 && d.is_finite())
    {
        return Err(usage("--duration must be a positive number of seconds"));
    }
    let core = lab::service_core(&cfg, &a.nonce.options(), Side::Server)?;
    let cap = sockets::capture(a.pcap.as_deref(), &cfg)?;
    let bound = sockets::bind_server(&cfg)?;
    let line = serving_line(&cfg, &bound)?;
    let running = server::start(cfg, core, bound, cap.clone())?;
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

/// `ivnsec someip serve: udp ADDR, tcp ADDR, sd ADDR multicast GROUP; service 0xID LEVEL SUITE…`
fn serving_line(cfg: &config::Config, bound: &Sockets) -> Result<String> {
    let mut line = format!("ivnsec someip serve: udp {}", bound.udp.local_addr()?);
    if let Some(t) = &bound.tcp {
        line += &format!(", tcp {}", t.local_addr()?);
    }
    match (&bound.sd, cfg.sd.multicast) {
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
    Ok(line)
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
    let settings = CallSettings {
        service: a.service,
        method: a.method,
        calls: Calls {
            count: a.count,
            payload_size: a.payload_size,
            timeout: Duration::from_millis(a.timeout_ms),
            interval: Duration::from_millis(a.interval_ms),
            echo_check: !a.no_echo_check,
        },
        endpoint: a.endpoint,
        tcp: a.tcp,
        subscribe: a.subscribe,
        pcap: a.pcap.clone(),
        nonce: a.nonce.options(),
    };
    let out = client::run(&cfg, &settings)?;
    print_calls(&a, &mut json, &out)
}

fn print_calls(a: &CallArgs, json: &mut Json, out: &CallOutcome) -> Result<ExitCode> {
    let (svc, target, core, res) = (&out.service, out.target, &out.core, &out.calls);
    let events = out.events.as_ref();
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
