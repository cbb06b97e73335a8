//! `ivnsec camera`: seed 003's ADAS scenario (§F, Fig. 7). N cameras on one camera ECU, each
//! sending a 42.5 KiB frame (21 Mb/s) every 1/60 s as secured SOME/IP to the ADAS consumer on another ECU,
//! which measures the tx→rx delay of every whole frame against the 16 ms deadline; CPU of both
//! ECUs and of the machine, and its increase over a `nosec` run of the same camera count.
//!
//! The command line and the printing; the experiment (its config, orchestration and nodes) is
//! `ivnsec_lab::camera`, which plans call too.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::camera::node::Transport;
use ivnsec_lab::camera::run::{CameraConfig, layout, run_camera};
use ivnsec_lab::camera::{
    CameraReport, DEFAULT_DEADLINE_MS, DEFAULT_FPS, DEFAULT_FRAME_BYTES, Phase,
};

use super::common::lab::{self, WhereArg};
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Seed 003 §F (Fig. 7): cameras on one camera ECU (ecu1 of a `pair` testbed) each send one \
compressed video frame of --frame-bytes every 1/--fps s, on an absolute schedule (no drift; \
cameras spread over the period unless --phase aligned), as a SOME/IP notification of its own \
service secured at --level with --suite and a fresh key; the ADAS consumer (ecu2) verifies every \
whole frame and measures its tx→rx delay (CLOCK_MONOTONIC, shared by the namespaces, stands in \
for 003's PTP). Transports: tcp = one TCP connection per camera (as 003); udp-tp = UDP with \
SOME/IP-TP segments of 1392 bytes; l2 = the SOME/IP message in IVN-AE raw-Ethernet frames, cut \
into fragments that one channel of the camera ECU protects one by one (the level picks plain, \
SUITE/auth or SUITE/conf).

Reported per camera count and level: frames sent/received/lost, delay p1/p25/p50/p75/p99/max \
(003 Fig. 7's box plot), frames past --deadline-ms (16: one frame period), how late the sender \
was, goodput, CPU of the camera ECU, the consumer and the machine (% of all cores), and the CPU \
increase over the nosec run of the same camera count (when --level includes nosec). Exit 1 when \
a frame was lost or late.

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its nodes and the testbed \
go): the report holds the runs (camera count and level) that finished before it, marked \
`\"interrupted\": true` in JSON and by a last line `interrupted: …` in text; exit 130 (128 + \
the signal).

As root a `pair` testbed is built and removed afterwards (or --testbed PREFIX uses a running \
one); otherwise both ECUs run on loopback, which the output says. --topology bump|bump2 builds a \
bump-in-the-wire testbed instead, the frames going through gateways the run starts (seed 002 \
testbench 2; docs/gateway.md); --topology production runs sensor1 → consumer across seed 002's \
testbench 3 (switches under STP).

Examples:
  ivnsec camera --cameras 2,4,8,12,16 --level nosec --level conf --suite aes128-gcm
  ivnsec camera --cameras 16 --level auth,conf --suite chacha20-poly1305 --seconds 10 --json
  ivnsec camera --cameras 4 --transport udp-tp --level conf --pcap cam.pcap
  sudo ivnsec camera --topology bump2 --cameras 4 --level nosec,conf")]
pub struct Args {
    /// Camera counts to run, one run each (003 Fig. 7: 2,4,8,12,16).
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,12,16")]
    pub cameras: Vec<usize>,
    /// Frames per second of each camera.
    #[arg(long, default_value_t = DEFAULT_FPS)]
    pub fps: u32,
    /// Bytes of one frame (the SOME/IP body). Default 42.5 KiB: 003's 21 Mb/s per camera at 60
    /// fps (its text prints "425 kB"; see docs/camera.md).
    #[arg(long, default_value_t = DEFAULT_FRAME_BYTES)]
    pub frame_bytes: usize,
    /// Security levels to run (repeat or comma-separate): nosec, auth, conf. nosec runs first
    /// for each camera count and is the reference of the CPU increase.
    #[arg(
        long = "level",
        value_delimiter = ',',
        default_value = "nosec,auth,conf"
    )]
    pub levels: Vec<String>,
    /// AEAD suite of auth and conf: aes128-gcm, aes256-gcm, aes128-ccm, aes256-ccm,
    /// chacha20-poly1305.
    #[arg(long, default_value = "aes128-gcm")]
    pub suite: String,
    /// How frames travel: tcp (one connection per camera), udp-tp (SOME/IP-TP segments), or
    /// l2 (IVN-AE raw Ethernet, each fragment protected; UDP datagrams on loopback).
    #[arg(long, value_enum, default_value = "tcp")]
    pub transport: TransportArg,
    /// Seconds of frames per run (frames per camera = seconds × fps).
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// The delay bound per frame in ms (003: 16, one period at 60 fps).
    #[arg(long, default_value_t = DEFAULT_DEADLINE_MS)]
    pub deadline_ms: f64,
    /// spread: camera i starts i/N of a period after camera 1; aligned: all at once.
    #[arg(long, value_enum, default_value = "spread")]
    pub phase: PhaseArg,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: String,
    /// Where the ECUs run: auto (testbed when root, else loopback), testbed, loopback.
    #[arg(long = "on", value_enum, default_value = "auto")]
    pub on: WhereArg,
    /// Use this running testbed (`ivnsec testbed up`): its ecu1 (else first ECU) is the camera
    /// ECU, its ecu2 (else last ECU) the consumer.
    #[arg(long, value_name = "PREFIX")]
    pub testbed: Option<String>,
    /// Build this bump-in-the-wire topology instead of `pair`, its gateways started by the run
    /// (macsec-gcm-aes-128, a fresh key): `bump` (the camera ECU is the legacy sensor1 behind
    /// its gateway, the consumer a MACsec ECU whose `ivnsec macsec up` the run starts) or
    /// `bump2` (ecu1 → ecu2, both legacy ECUs behind gateways); or `production` (seed 002
    /// testbench 3: sensor1 → consumer across switches under STP). Not with --testbed.
    /// Example: `sudo ivnsec camera --topology bump --cameras 4 --level nosec`
    #[arg(long, value_name = "TOPOLOGY", conflicts_with = "testbed")]
    pub topology: Option<String>,
    /// Run across the hosts of this plan's `[[host]]` tables (docs/multihost.md): the camera ECU
    /// on the first host, the consumer on the second, over SSH. The tx→rx delay needs one
    /// clock: allowed when both hosts are this machine (namespaces of it) or PTP-synchronised
    /// (`ivnsec clock check --plan PLAN`), else exit 3; the delays are then timed on
    /// CLOCK_REALTIME. No --pcap. Example:
    /// ivnsec camera --hosts bench.toml --cameras 2 --transport l2 --seconds 5
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["testbed", "topology"])]
    pub hosts: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Record the first 4 frames the camera ECU sends in each run (classic pcap, Ethernet;
    /// rebuilt as the IPv4/TCP or IPv4/UDP packets that carried them).
    #[arg(long)]
    pub pcap: Option<PathBuf>,
}

/// `--transport` on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TransportArg {
    /// Secured SOME/IP over TCP, one connection per camera (seed 003 §F).
    Tcp,
    /// Secured SOME/IP over UDP, each frame cut into SOME/IP-TP segments.
    UdpTp,
    /// The SOME/IP message (unprotected) in IVN-AE raw-Ethernet frames: cut into fragments,
    /// each protected at the level by the channel (UDP on loopback).
    L2,
}

impl From<TransportArg> for Transport {
    fn from(t: TransportArg) -> Transport {
        match t {
            TransportArg::Tcp => Transport::Tcp,
            TransportArg::UdpTp => Transport::UdpTp,
            TransportArg::L2 => Transport::L2,
        }
    }
}

/// `--phase` on the command line.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum PhaseArg {
    Spread,
    Aligned,
}

impl From<&Args> for CameraConfig {
    fn from(a: &Args) -> Self {
        CameraConfig {
            cameras: a.cameras.clone(),
            fps: a.fps,
            frame_bytes: a.frame_bytes,
            levels: a.levels.clone(),
            suite: a.suite.clone(),
            transport: a.transport.into(),
            seconds: a.seconds,
            deadline_ms: a.deadline_ms,
            phase: match a.phase {
                PhaseArg::Spread => Phase::Spread,
                PhaseArg::Aligned => Phase::Aligned,
            },
            provider: a.provider.clone(),
        }
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let cfg = CameraConfig::from(&a);
    cfg.check()?;
    // Ctrl-C: the runs that finished are printed, marked interrupted.
    crate::interrupted::watch()?;
    let open = match &a.hosts {
        Some(plan) => ivnsec_lab::plan::open_hosts_of(plan)?,
        None => {
            let layout = match &a.topology {
                Some(t) => super::common::lab::bump_layout("camera", t, "pair")?,
                None => layout(),
            };
            let on = super::common::lab::where_for_topology(a.on.into(), a.topology.as_deref())?;
            ivnsec_lab::site::open_site(on, a.testbed.as_deref(), &layout)?
        }
    };
    if let Some(why) = &open.fallback_reason {
        eprintln!("ivnsec: no testbed ({why}); running both ECUs on loopback instead");
    }
    let report = run_camera(&open.site, &cfg, a.pcap.as_deref())?;
    drop(open);
    if let Some(p) = &a.pcap {
        eprintln!(
            "capture: {} (the first {} frames of each run)",
            p.display(),
            ivnsec_lab::camera::node::CAPTURE_FRAMES
        );
    }
    if crate::interrupted::requested() {
        if a.json {
            json.print(&crate::interrupted::marked(&report))?;
        } else {
            print_report(&report);
            println!(
                "{}",
                crate::interrupted::line("the run in progress and those after it are left out")
            );
        }
        return Ok(crate::interrupted::code());
    }
    if a.json {
        json.print(&report)?;
    } else {
        print_report(&report);
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn ms(v: f64) -> String {
    format!("{:.2}", v / 1e3)
}

fn print_report(rep: &CameraReport) {
    println!("site: {}", rep.site);
    if let Some(f) = &rep.clock_flag {
        println!("{f}");
    }
    if let Some(r) = rep.results.first() {
        println!(
            "{} fps × {} B frames per camera ({:.1} Mb/s each), deadline {} ms, phases {}",
            r.fps,
            r.frame_bytes,
            r.offered_mbps / r.cameras.max(1) as f64,
            r.deadline_ms,
            r.phase.name()
        );
    }
    println!(
        "{:>4} {:<6} {:<18} {:>7} {:>7} {:>5}  {:>6} {:>6} {:>6} {:>6} {:>6} {:>7}  {:>5} {:>8}  {:>5} {:>5} {:>5} {:>7}",
        "cams",
        "level",
        "suite",
        "sent",
        "recv",
        "lost",
        "p1",
        "p25",
        "p50",
        "p75",
        "p99",
        "max ms",
        "late",
        "Mb/s",
        "cpu-t",
        "cpu-r",
        "sys",
        "Δsys"
    );
    for r in &rep.results {
        let d = r.delay_us.unwrap_or_default();
        println!(
            "{:>4} {:<6} {:<18} {:>7} {:>7} {:>5}  {:>6} {:>6} {:>6} {:>6} {:>6} {:>7}  {:>5} {:>8.1}  {:>5.1} {:>5.1} {:>5.1} {:>7}",
            r.cameras,
            r.level,
            r.suite.as_deref().unwrap_or("-"),
            r.frames_sent,
            r.frames_received,
            r.lost,
            ms(d.p1),
            ms(d.p25),
            ms(d.p50),
            ms(d.p75),
            ms(d.p99),
            ms(d.max),
            r.past_deadline,
            r.goodput_mbps,
            r.cpu.sender_pct,
            r.cpu.receiver_pct,
            r.cpu.system_pct,
            r.cpu
                .increase_over_nosec
                .map_or("-".into(), |i| format!("{:+.1}", i.system_pct)),
        );
        if r.past_deadline_from_due > r.past_deadline {
            let lag = r.lag_us.unwrap_or_default();
            println!(
                "       the camera ECU fell behind its schedule (lag p99 {} ms, max {} ms): {} frames arrived more than {} ms after they were due",
                ms(lag.p99),
                ms(lag.max),
                r.past_deadline_from_due,
                r.deadline_ms
            );
        }
        for (reason, n) in &r.drops {
            println!("       consumer rejected {n}: {reason}");
        }
    }
    println!(
        "delay: tx→rx in ms (camera ECU before protect → consumer after verify, one \
         CLOCK_MONOTONIC); late: frames past the deadline; CPU: % of all {} cores (t = camera \
         ECU, r = consumer, sys = machine); Δsys: machine CPU minus the nosec run's",
        rep.results.first().map_or(0, |r| r.cpu.cores)
    );
    let passed = rep.passed();
    println!(
        "verdict: {} (requirement: every frame received, none later than the deadline after it \
         was sent or due)",
        lab::pass(passed)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }

    /// The command line's defaults and a plan's `[[camera]]` defaults are written apart; they
    /// must be the same experiment.
    #[test]
    fn command_line_defaults_are_the_plan_defaults() {
        let cli = Cli::try_parse_from(["camera"]).unwrap();
        assert_eq!(CameraConfig::from(&cli.args), CameraConfig::default());
    }

    #[test]
    fn command_line_builds_the_config() {
        let cli = Cli::try_parse_from([
            "camera",
            "--cameras",
            "4,16",
            "--level",
            "conf",
            "--transport",
            "udp-tp",
            "--phase",
            "aligned",
            "--fps",
            "30",
        ])
        .unwrap();
        let c = CameraConfig::from(&cli.args);
        assert_eq!(c.cameras, vec![4, 16]);
        assert_eq!(c.levels, vec!["conf".to_string()]);
        assert_eq!(c.transport, Transport::UdpTp);
        assert_eq!(c.phase, Phase::Aligned);
        assert_eq!(c.fps, 30);
    }
}
