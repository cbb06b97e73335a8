//! `ivnsec throughput`: goodput, frames/s, loss and CPU of one profile between N sender
//! processes and one receiver process (seed 002 §5.2.3 and testbench 1), next to the theoretical
//! maximum of the profile on the shaped link (002 §6.1.2) and, in the same run, the `plain`
//! profile and iperf3 UDP on the same path. The experiment is `ivnsec_lab::throughput`; this
//! command reads the options and prints the result.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::throughput::ThroughputResult;
use ivnsec_lab::throughput::run::{
    check_config, check_profile, check_rx_coalesce, layout, run_set,
};
use serde_json::Value;

use super::common::lab::WhereArg;
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Senders (sensor1..N) protect frames of --payload bytes and send them for --seconds to one \
receiver (the consumer), which verifies every frame. Frames are batched (sendmmsg/recvmmsg), \
nothing is allocated per frame. With --rate, each sender's link is shaped by a token bucket that \
counts wire bytes (frame + FCS 4, padded to 64, + preamble/SFD 8 + inter-frame gap 12): 100M \
emulates 100BASE-T1, 1G 1000BASE-T1.

Reported: goodput (payload Mb/s delivered, all senders together), frames/s, loss (sent − \
delivered, verify rejects included), the theoretical maximum payload / wire bytes × rate × \
senders (seed 002 §6.1.2) and efficiency = goodput / theoretical; CPU: each process's user+sys \
(getrusage) and the whole machine (/proc/stat every second, like sar), as % of all cores, CPU ns \
per payload byte, and the increase over the `plain` run made first in the same invocation (seed \
002's < 5 % rule). CPU per role (cpu.roles): the consumer, each sensor and the switch (what is \
left of the machine), each also per Gb/s; seed 002 measured its consumer host alone, so its CPU \
rule is judged on the consumer. When iperf3 is installed, its UDP test (-u -b 0 -l 1472, and at the shaped \
rate) runs on the same path and its goodput sits beside ours (baseline.iperf3).

With --tcp (someip-… profiles; seed 003 Fig. 5c and 6), each sender opens one TCP connection to \
the receiver and writes protected SOME/IP messages back to back; the kernel segments them (no \
MTU limit on --payload, at most 1 MiB) and the receiver cuts the stream by the SOME/IP length \
field, bounded by the expected message size. The unprotected reference is someip-nosec (no \
`plain` run) and iperf3 TCP (-l PAYLOAD) on the same path; with --rate the bucket counts the \
wire bytes of full-MSS segments (1448 bytes, 90 bytes of headers and framing each).

As root, a `sensors:N` testbed (N sensors and a consumer on one switch; 002 testbench 1) is built \
and removed afterwards, or --testbed PREFIX uses a running one; otherwise every process talks UDP \
on loopback, which the output says. --topology bump2 builds two legacy ECUs, each behind an \
`ivnsec gateway` the run starts (macsec-gcm-aes-128, a fresh key): ecu1 sends to ecu2 through \
both gateways, and the gateways' CPU is reported as roles gw1 and gw2 (cpu.roles; the switch's \
share is what is left after them). --topology bump is seed 002's testbench 2: the legacy sensor1 \
sends through its gateway gw1 to a MACsec consumer whose `ivnsec macsec up` the run starts with \
the gateway's key (roles gw1 and consumer-macsec).

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its nodes, iperf3 and the \
testbed go): the runs that finished are printed (the `plain` baseline run among them), the one \
in progress is left out, marked `\"interrupted\": true` in JSON (with nothing of --profile \
finished: {\"interrupted\": true, \"profile\": …, \"finished\": [runs]}) and by a last line \
`interrupted: …` in text; exit 130 (128 + the signal).

Examples:
  ivnsec throughput --profile macsec-gcm-aes-128 --payload 1440
  ivnsec throughput --profile aes128-gcm --payload 1440 --rate 1G --json
  ivnsec throughput --profile esp-aes128-gcm --payload 1400 --rate 100M --senders 3 --seconds 10
  sudo ivnsec throughput --topology bump2 --profile plain --payload 1440 --rate 1G --json
  sudo ivnsec throughput --topology bump --profile plain --payload 1440 --rate 1G --json
  sudo ivnsec throughput --tcp --profile someip-aes128-gcm/conf --payload 65536 --json
  ivnsec throughput --hosts bench.toml --profile aes128-gcm --payload 1440   # across SSH hosts")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…;
    /// or someip-SUITE[/auth|/conf], someip-nosec.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: ivnsec_core::profile::NamedProfile,
    /// Payload bytes per frame (≥ 1; the frame must fit the 1500-byte MTU).
    #[arg(long)]
    pub payload: usize,
    /// How long each sender sends, in seconds.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Shaping of each sender's link in bits/s on the wire: unlimited, 100M (100BASE-T1), 1G
    /// (1000BASE-T1) or a number with an optional k/M/G suffix.
    #[arg(long, default_value = "unlimited")]
    pub rate: String,
    /// Senders sending at once to one receiver (3 reproduces seed 002 testbench 1).
    #[arg(long, default_value_t = 1)]
    pub senders: usize,
    /// Frames per sendmmsg/recvmmsg call (1..=64).
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// After a receive that did not fill its batch, the consumer waits this many µs before the
    /// next, as a NIC's interrupt moderation (`ethtool -C rx-usecs`) does, instead of waking
    /// for every frame (0..=10000; 0 = wake for each; datagram runs). Example:
    /// ivnsec throughput --profile someip-aes256-ccm/conf --payload 1400 --rate 1G --rx-coalesce-us 0
    #[arg(long, value_name = "US", default_value_t = ivnsec_lab::throughput::DEFAULT_RX_COALESCE_US)]
    pub rx_coalesce_us: u32,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Where the nodes run: auto (testbed when root, else loopback), testbed, loopback.
    #[arg(long = "on", value_enum, default_value = "auto")]
    pub on: WhereArg,
    /// Use this running testbed (`ivnsec testbed up`) instead of building one: its `consumer`
    /// (else its last ECU) receives, the other ECUs send.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
    /// Build this testbed topology instead of `sensors:N`: `bump2` (two legacy ECUs behind
    /// gateways the run starts; --senders 1), `bump` (legacy sensor1 behind a gateway, a
    /// MACsec consumer; --senders 1), or `production` (switches with redundant links under
    /// STP; sensor1 [and sensor2] send to the consumer across them; --senders 1 or 2). Not
    /// with --testbed.
    #[arg(long, value_name = "TOPOLOGY", conflicts_with = "testbed")]
    pub topology: Option<String>,
    /// Send from the first `[[host]]` of this plan to the second, over SSH, instead of on a
    /// testbed (docs/multihost.md; --senders 1, no iperf3 baseline, no --pcap). Example:
    /// ivnsec throughput --hosts bench.toml --profile aes128-gcm --payload 1440 --rate 1G
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["testbed", "topology"])]
    pub hosts: Option<PathBuf>,
    /// Skip the same-run baselines (the `plain` run and iperf3).
    #[arg(long)]
    pub no_baseline: bool,
    /// Send secured SOME/IP messages on one TCP connection per sender instead of datagrams
    /// (someip-… profiles only; the baselines are iperf3 TCP, no `plain` run). On a testbed or
    /// loopback, not with --hosts.
    #[arg(long, conflicts_with = "hosts")]
    pub tcp: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Record the first 1000 frames the first sender sends (classic pcap, Ethernet; ESP frames
    /// get the Ethernet/IPv4 headers they travel with).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let mut cfg = check_config(
        a.payload, a.seconds, &a.rate, a.senders, a.batch, a.provider,
    )?;
    cfg.tcp = a.tcp;
    cfg.rx_coalesce_us = check_rx_coalesce(a.rx_coalesce_us)?;
    check_profile(&a.profile, &cfg)?;
    if a.tcp && a.pcap.is_some() {
        return Err(crate::error::usage(
            "--pcap records datagram runs; capture a --tcp run's segments with tcpdump on the \
             testbed instead",
        ));
    }
    let layout = match &a.topology {
        Some(t) => {
            let topology = super::common::lab::parse_topology(t)?;
            use ivnsec_net::topology::Topology;
            if topology == Topology::Production {
                // The consumer receives; the sensors that protect themselves send.
                if cfg.senders > 2 {
                    return Err(crate::error::usage(
                        "--topology production has two sensors that send themselves (sensor1, \
                         sensor2; sensor3 and sensor4 are legacy ECUs behind gateways): give \
                         --senders 1 or 2",
                    ));
                }
            } else if !matches!(topology, Topology::Bump | Topology::Bump2) {
                return Err(crate::error::usage(format!(
                    "--topology {t}: throughput builds sensors:N by itself (--senders N); \
                     --topology takes bump, bump2 or production"
                )));
            } else if cfg.senders != 1 {
                let l = ivnsec_lab::site::Layout::of(topology);
                return Err(crate::error::usage(format!(
                    "--topology {t} has one sender ({}) and one receiver ({}): \
                     give --senders 1",
                    l.initiator, l.responder
                )));
            }
            ivnsec_lab::site::Layout::of(topology)
        }
        None => layout(cfg.senders),
    };
    let on = super::common::lab::where_for_topology(a.on.into(), a.topology.as_deref())?;
    crate::interrupted::watch()?;
    let open = match &a.hosts {
        Some(plan) => ivnsec_lab::plan::open_hosts_of(plan)?,
        None => ivnsec_lab::site::open_site(on, a.testbed.as_deref(), &layout)?,
    };
    if let Some(why) = &open.fallback_reason {
        eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
    }
    let mut results = run_set(
        &open.site,
        &cfg,
        std::slice::from_ref(&a.profile),
        !a.no_baseline,
        a.pcap.as_deref(),
    )?;
    // The testbed goes first (also when interrupted: before anything is printed).
    drop(open);
    if crate::interrupted::requested() {
        return interrupted(a.profile.name(), results, &mut json);
    }
    let r = results.pop().expect("one profile, one result");
    if let Some(p) = &a.pcap {
        eprintln!("capture: {} (the first frames of sender 1)", p.display());
    }
    if a.json {
        json.print(&r)?;
    } else {
        print_result(&r);
    }
    Ok(ExitCode::SUCCESS)
}

/// The output of a run stopped by a signal: the result of `profile` marked interrupted when
/// its run finished, else what did finish (the `plain` baseline run) under `finished`.
fn interrupted(profile: &str, results: Vec<ThroughputResult>, json: &mut Json) -> Result<ExitCode> {
    let ours = results.iter().position(|r| r.profile == profile);
    if json.claimed() {
        match ours {
            Some(i) => json.print(&crate::interrupted::marked(&results[i]))?,
            None => json.print(&serde_json::json!({
                "interrupted": true,
                "profile": profile,
                "finished": results,
            }))?,
        }
    } else {
        for r in &results {
            print_result(r);
        }
        let what = match ours {
            Some(_) => "the same-run baselines that had not run are missing".to_string(),
            None => format!("the {profile} run did not finish (not shown)"),
        };
        println!("{}", crate::interrupted::line(&what));
    }
    Ok(crate::interrupted::code())
}

fn print_result(r: &ThroughputResult) {
    println!("transport: {}", r.transport);
    let rate = r.rate_bps.map_or("unlimited".to_string(), |b| {
        format!("{} Mb/s per sender link", b as f64 / 1e6)
    });
    let unit = if r.tcp { "TCP message" } else { "frame" };
    println!(
        "{}@{}: {} sender(s), {:.2} s, link {rate}; {unit} {} B, {} B on the wire",
        r.profile, r.payload, r.senders, r.seconds, r.frame_bytes, r.wire_bytes
    );
    println!(
        "  goodput {:.1} Mb/s, {:.0} frames/s; sent {}, delivered {}, lost {} (loss {:.3} %)",
        r.goodput_mbps,
        r.frames_per_s,
        r.sent,
        r.delivered,
        r.lost,
        100.0 * r.loss
    );
    if let (Some(t), Some(e)) = (r.theoretical_mbps, r.efficiency) {
        println!(
            "  theoretical maximum {t:.1} Mb/s (seed 002 §6.1.2), efficiency {:.2} %",
            100.0 * e
        );
    }
    for (reason, n) in &r.rejected {
        println!("  receiver rejected {n}: {reason}");
    }
    for s in &r.per_sender {
        println!(
            "  {}: sent {}, delivered {}, {:.1} Mb/s",
            s.name, s.sent, s.delivered, s.goodput_mbps
        );
    }
    let c = &r.cpu;
    println!(
        "  CPU (% of {} cores): senders {:.1}, receiver {:.1}, machine {:.1}; ns per payload \
         byte: send {}, receive {}",
        c.cores,
        c.sender_pct,
        c.receiver_pct,
        c.system_pct,
        c.sender_ns_per_byte
            .map_or("-".into(), |v| format!("{v:.2}")),
        c.receiver_ns_per_byte
            .map_or("-".into(), |v| format!("{v:.2}"))
    );
    if let Some(i) = &c.increase_over_plain {
        println!(
            "  CPU increase over plain: machine {:+.1} points ({}), senders {:+.1}, receiver {:+.1}",
            i.system_pct,
            if i.within_5pct {
                "< 5: PASS"
            } else {
                "≥ 5: FAIL"
            },
            i.sender_pct,
            i.receiver_pct
        );
        println!(
            "  seed 002's CPU rule, judged on the consumer as the seed did: {:+.1} points ({})",
            i.receiver_pct,
            if i.consumer_within_5pct {
                "< 5: PASS"
            } else {
                "≥ 5: FAIL"
            }
        );
    }
    if !c.roles.is_empty() {
        let per = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let roles: Vec<String> = c
            .roles
            .iter()
            .map(|r| format!("{} {:.1} ({})", r.role, r.pct, per(r.pct_per_gbps)))
            .collect();
        println!(
            "  CPU per role, % of the machine (per Gb/s): {}; machine {:.1} ({})",
            roles.join(", "),
            c.system_pct,
            per(c.system_pct_per_gbps)
        );
    }
    if let Some(p) = r.baseline.get("plain") {
        println!(
            "  plain (same run): {:.1} Mb/s",
            p["goodput_mbps"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(Value::Object(i)) = r.baseline.get("iperf3") {
        for key in ["unlimited", "shaped"] {
            if let Some(v) = i.get(key) {
                println!(
                    "  iperf3 {} ({key}, same path): {:.1} Mb/s; ours / iperf3 = {}",
                    if r.tcp { "TCP" } else { "UDP" },
                    v["goodput_mbps"].as_f64().unwrap_or(0.0),
                    v["ratio"]
                        .as_f64()
                        .map_or("-".into(), |x| format!("{x:.2}"))
                );
            }
        }
    }
}
