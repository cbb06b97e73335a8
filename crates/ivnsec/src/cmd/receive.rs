//! `ivnsec receive`: verify every unit a sender (`ivnsec send`) puts on an interface or a UDP
//! port under a key file, and count what was accepted and every drop by reason.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::channel::REPLAY_WINDOW;
use ivnsec_core::profile::NamedProfile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::traffic::On;
use ivnsec_node::traffic::receive::{ReceiveReport, ReceiveSettings, Receiver};
use serde_json::json;

use super::common::{ReplayCheckpointArgs, mac_opt, on, stop_on_signal};
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Prints `listening on …` on stderr once the link is open, then verifies every unit (tag, replay \
window, format). At the end (--count accepted units, --seconds, or SIGINT/SIGTERM) it prints the \
units received and accepted and every drop by reason (bad_tag, replay_duplicate, replay_too_old, \
…), as a table or with --json. Exit codes: 0 every unit received verified (or none came), 1 a \
unit was dropped because it failed verification (any drop reason but dummy_packet, an ESP \
dummy packet that verified and is discarded by design; the counters say which), 2 bad options \
or key file, 3 an environment problem: a --udp port already in use, an address this host does \
not have, no privilege for --iface (the message says what to do).

After a restart: with --state-dir (IVN-AE, MACsec, ESP) the receiver keeps an acceptance mark per \
key and sender SA on disk (every number it ever accepted is <= the mark, moved ahead by one \
checkpoint before a number above it is accepted), so a restarted receiver refuses every frame it \
may have accepted before (counted as replay_duplicate/replay_too_old, MACsec late, and as \
refused_below_mark). The cost: at most one checkpoint of legitimate frames refused after a \
restart (--replay-checkpoint-frames, about --replay-checkpoint-ms of traffic). Without \
--state-dir the replay window lives only in memory: a restarted receiver accepts, once, every \
frame recorded before its restart (a warning says so). SecOC and SOME/IP profiles keep no mark \
yet (they refuse --state-dir): a restarted receiver of theirs accepts recorded units once more. \
See docs/nonce-safety.md.

Examples:
  ivnsec receive --profile aes128-gcm --keys k.toml --iface eth0 --from 02:00:00:00:00:01
  ivnsec receive --profile esp-aes128-gcm --keys esp.toml --iface eth0 --from-ip 10.0.0.1 --to-ip 10.0.0.2
  ivnsec receive --profile macsec-gcm-aes-128 --keys macsec.toml --udp 127.0.0.1:7000 --json --pcap rx.pcap
  ivnsec receive --profile aes128-gcm --keys k.toml --iface eth0 --state-dir /var/lib/ivnsec \\
      --replay-checkpoint-frames 1024 --replay-checkpoint-ms 200")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): IVN-AE suite[/auth|/conf], macsec-…, esp-…, secoc-…;
    /// or someip-SUITE[/auth|/conf], someip-nosec.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    /// Key file of the sender's direction (TOML with hex `key`, `mac_key`, `iv`; at most 16 KiB;
    /// an all-zero key is refused, a file others may read only warned about).
    #[arg(long, value_name = "FILE")]
    pub keys: PathBuf,
    /// Receive on this interface (raw Ethernet; ESP: IPv4 protocol 50). Needs root or
    /// CAP_NET_RAW.
    #[arg(
        long,
        value_name = "IF",
        required_unless_present = "udp",
        conflicts_with = "udp"
    )]
    pub iface: Option<String>,
    /// Receive UDP datagrams (one unit each) on ADDR:PORT instead (port 0: any free port).
    #[arg(long, value_name = "ADDR:PORT")]
    pub udp: Option<SocketAddr>,
    /// The sender's MAC (MACsec: its SCI is MAC ‖ 0001). Default 02:00:00:00:00:01, the
    /// sender's default over UDP.
    #[arg(long, value_name = "MAC")]
    pub from: Option<String>,
    /// This node's MAC. Default: the interface's, or 02:00:00:00:00:02 over UDP.
    #[arg(long, value_name = "MAC")]
    pub mac: Option<String>,
    /// ESP: the sender's IPv4 address (required with --iface; default 127.0.0.1 over UDP).
    #[arg(long, value_name = "IPV4")]
    pub from_ip: Option<Ipv4Addr>,
    /// ESP: this node's IPv4 address (default 127.0.0.1 over UDP, 0.0.0.0 on an interface).
    #[arg(long, value_name = "IPV4")]
    pub to_ip: Option<Ipv4Addr>,
    /// Replay window (0: only strictly increasing sequence numbers are accepted; at most 65536).
    #[arg(long, default_value_t = REPLAY_WINDOW, value_name = "W",
          value_parser = super::replay_window_parser())]
    pub replay_window: u32,
    /// Stop after this many accepted units (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub count: u64,
    /// Stop after this many seconds.
    #[arg(long, value_name = "S")]
    pub seconds: Option<f64>,
    /// Print the counters as JSON.
    #[arg(long)]
    pub json: bool,
    /// Record every unit received, before verification (classic pcap, Ethernet; ESP gets its
    /// Ethernet/IPv4 headers).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Directory of the acceptance mark (created if missing; IVN-AE, MACsec and ESP): a
    /// restarted receiver refuses every frame it may have accepted before. Without it a
    /// restart accepts recorded frames once more. E.g. `--state-dir /var/lib/ivnsec`.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    #[command(flatten)]
    pub checkpoint: ReplayCheckpointArgs,
}

/// The library's settings from the options.
fn settings(a: Args) -> Result<ReceiveSettings> {
    Ok(ReceiveSettings {
        from: mac_opt("--from", a.from.as_deref())?,
        mac: mac_opt("--mac", a.mac.as_deref())?,
        on: on(a.iface, a.udp)?,
        checkpoint: a.checkpoint.checkpoint()?,
        profile: a.profile,
        keys: a.keys,
        from_ip: a.from_ip,
        to_ip: a.to_ip,
        replay_window: a.replay_window,
        count: a.count,
        seconds: a.seconds,
        pcap: a.pcap,
        provider: a.provider,
        state_dir: a.state_dir,
    })
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let as_json = a.json;
    let s = settings(a)?;
    let receiver = Receiver::open(&s)?;
    let stop = stop_on_signal()?;
    match &s.on {
        On::Iface(i) => eprintln!("receive: listening on {i} ({})", s.profile),
        On::Udp(addr) => eprintln!(
            "receive: listening on udp {}:{} ({})",
            addr.ip(),
            receiver.local_port(),
            s.profile
        ),
    }
    let r = receiver.run(&stop)?;
    if as_json {
        print_json(&s, &r, &mut json)?;
    } else {
        print_text(&s, &r);
    }
    Ok(ExitCode::from(r.exit_code()))
}

fn print_json(s: &ReceiveSettings, r: &ReceiveReport, json: &mut Json) -> Result<()> {
    let d: serde_json::Map<String, serde_json::Value> = r
        .drops
        .iter()
        .map(|(r, n)| (r.name().to_string(), json!(n)))
        .collect();
    json.print(&json!({
        "profile": s.profile.name(),
        "received": r.received,
        "accepted": r.accepted,
        "dropped": r.drops.total(),
        "drops": d,
        "stopped_by": r.stopped_by,
        "replay_mark": r.mark.as_ref().map(|m| m.json(r.refused_below_mark)),
    }))
}

fn print_text(s: &ReceiveSettings, r: &ReceiveReport) {
    println!("profile   {}", s.profile);
    println!("received  {}", r.received);
    println!("accepted  {}", r.accepted);
    println!("dropped   {}", r.drops.total());
    for (reason, n) in r.drops.iter() {
        println!("  {:<22}{n}", reason.name());
    }
    if let Some(m) = &r.mark {
        println!(
            "replay mark restored {}, now {}, {} writes, {} refused below the mark",
            m.restored(),
            m.mark(),
            m.writes(),
            r.refused_below_mark
        );
    }
    println!("stopped by {}", r.stopped_by);
}
