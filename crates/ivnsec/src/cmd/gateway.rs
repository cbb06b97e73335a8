//! `ivnsec gateway`: a bump-in-the-wire in front of legacy ECUs that cannot protect themselves
//! (the SecY, its data plane and the plain port are `ivnsec_node::macsec`; docs/gateway.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::channel::provider;
use ivnsec_node::macsec::{self as lab, HostSide, RunSpec, Scheduling, source};

use super::common::{KeySourceArgs, stop_on_signal};
use crate::error::usage;
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every Ethernet frame that arrives on --plain (IPv4, IPv6, ARP, VLAN-tagged, multicast: anything, \
whatever its addresses) leaves --protected as a MACsec frame (EtherType 0x88E5, SecTAG with the \
SCI = MAC of --protected ‖ 0001, ICV) with its own destination and source MAC unchanged; every \
MACsec frame that arrives on --protected and verifies leaves --plain unprotected. Frames that do \
not verify never reach --plain; they are counted by reason (`ivnsec macsec status`). Nothing else \
crosses: plain frames arriving on --protected are not forwarded. Both ports are put in \
promiscuous mode while the gateway runs. The legacy ECUs need no change (addresses, routes, MTU).

MTU: a protected frame is the plain frame + 32 bytes (16-byte SecTAG with SCI + 16-byte ICV), so \
the MTU of --protected (and of every link and switch port up to the peers) must be at least the \
MTU of --plain + 32: 1532 for a legacy side at 1500. The gateway checks this at start-up and \
otherwise exits 2 naming the MTU needed. It changes no MTU itself.

Keys exactly as `ivnsec macsec up` (see its --help and docs/macsec-tap.md): --keys (one static SAK \
for the CA, --peer per member, PNs reserved in --state-dir across restarts) or --psk (MKA with a \
pre-shared CAK; SAKs agreed and rotated), --keyserver, or 802.1X: with --eap-tls --cert C --key K \
--ca CA the gateway authenticates the legacy sensor's port with the gateway's own certificate over \
EAP-TLS, and MKA runs on the CAK derived from EAP (--fallback-psk keeps it protected while EAP \
fails; docs/8021x.md). The peers are the other gateways and MACsec ECUs, named \
by the MAC of their protected interface. A restarted gateway with static keys (MACsec or IVN-AE) \
refuses every recorded frame it may have accepted before its restart: each receive SA keeps an \
acceptance mark in --state-dir, at the cost of at most one checkpoint of legitimate frames \
(--replay-checkpoint-frames, --replay-checkpoint-ms; docs/nonce-safety.md). Status and stopping: `ivnsec macsec status` lists the \
gateway under the name of --plain, `ivnsec macsec down --tap PLAIN` stops it; SIGINT/SIGTERM stop \
it (exit 0). See docs/gateway.md.

Example (legacy sensor on eth1, protected network on eth0, MAC 02:00:00:00:00:01; the consumer's \
eth0 is 02:00:00:00:00:02):
  ivnsec keygen --profile macsec-gcm-aes-128 --out ca.toml      # the same file on every member
  sudo ip link set eth0 mtu 1532
  sudo ivnsec gateway --plain eth1 --protected eth0 --profile macsec-gcm-aes-128 \\
      --keys ca.toml --peer 02:00:00:00:00:02 --state-dir /var/lib/ivnsec --events ev.jsonl

Example with MKA:
  ivnsec keygen --mka --out ca.psk
  sudo ivnsec gateway --plain eth1 --protected eth0 --profile macsec-gcm-aes-128 \\
      --psk ca.psk --state-dir /var/lib/ivnsec

Example with 802.1X (the consumer runs `macsec up --authenticator`):
  sudo ivnsec gateway --plain eth1 --protected eth0 --profile macsec-gcm-aes-128 \\
      --eap-tls --cert pki/ecu/bump1.pem --key pki/ecu/bump1.key --ca pki/ca.pem \\
      --state-dir /var/lib/ivnsec

IVN-AE (an IVN-AE profile such as aes128-gcm; static keys only): the gateway transmits under \
--keys with --key-id and verifies each peer under --rx-keys ID:FILE (the peer's key id and key \
file). Every sender of the network has a key id of its own; senders may share one key file, \
because IVN-AE version 2 puts the key id into the nonce (each key id its own nonce space; \
sequence numbers reserved in --state-dir per key and key id). Frames go out as IVN-AE version 2 \
with EtherType 0x88B5; version 1 frames of peers of the previous release are dropped \
(bad_version) unless --accept-ivnae-v1. The protected MTU must leave room for the IVN-AE header \
and tag (30 bytes with aes128-gcm: 1530 for a legacy side at 1500; the gateway names the exact \
value). Example, two gateways:
  ivnsec keygen --profile aes128-gcm --out gw1.toml; ivnsec keygen --profile aes128-gcm --out gw2.toml
  sudo ivnsec gateway --plain eth1 --protected eth0 --profile aes128-gcm --keys gw1.toml \\
      --key-id 1 --rx-keys 2:gw2.toml --state-dir /var/lib/ivnsec     # gw2: the other way round")]
pub struct Args {
    /// The plain port: the interface towards the legacy ECUs (frames in clear). Needs root.
    #[arg(long, value_name = "IF")]
    pub plain: String,
    /// The protected port: MACsec frames go out and come in here. Its MTU must be at least the
    /// plain port's + 32.
    #[arg(long, value_name = "IF")]
    pub protected: String,
    /// macsec-gcm-aes-128 | macsec-gcm-aes-256 | macsec-gcm-aes-xpn-128 |
    /// macsec-gcm-aes-xpn-256; `/auth` for integrity only (user data in clear).
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    #[command(flatten)]
    pub key_source: KeySourceArgs,
    /// IVN-AE: the key id this gateway's frames carry (byte 16), 0..=255. It is part of the
    /// nonce (IVN-AE version 2), so every sender under one key file needs a key id of its own:
    /// two senders with one key and one key id would reuse nonces; with different key ids they
    /// never do, even sharing the key file and --state-dir. E.g. `--key-id 2`.
    #[arg(long, default_value_t = 1, value_name = "ID", conflicts_with = "psk")]
    pub key_id: u8,
    /// IVN-AE: also accept version 1 frames from the peers (gateways of the previous release,
    /// whose nonce has no key id), verified with the version 1 nonce; without it they are
    /// dropped and counted as `bad_version`. This gateway still sends version 2 only, so the
    /// peers must be updated before they can read it. Example: `sudo ivnsec gateway … --keys
    /// gw1.toml --key-id 1 --rx-keys 2:gw2.toml --accept-ivnae-v1`
    #[arg(long, conflicts_with = "psk")]
    pub accept_ivnae_v1: bool,
    /// IVN-AE: a peer's key id and the key file it transmits under, as ID:FILE; repeat for
    /// each peer. E.g. `--rx-keys 2:gw2.toml`.
    #[arg(long = "rx-keys", value_name = "ID:FILE", conflicts_with = "psk")]
    pub rx_keys: Vec<String>,
    /// Replay window of the receive SAs (0: only increasing PNs; at most 65536).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = super::replay_window_parser())]
    pub replay_window: u32,
    /// Append one JSON line per event to FILE (created mode 0600).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Record every frame sent and received on --protected (MACsec as on the wire) in a pcap
    /// file. E.g. protected.pcap.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Where the status file is kept (DIR/macsec/PLAIN.NETNS.json). Default:
    /// $IVNSEC_STATE_DIR, else $XDG_RUNTIME_DIR/ivnsec, else /run/ivnsec.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Crypto provider: portable, fast, openssl, or auto.
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print the final status as JSON when stopping.
    #[arg(long)]
    pub json: bool,
    /// Kernel receive buffer of each port's packet socket, in MiB (1 … 1024): the frames the
    /// kernel holds while a data-plane thread is not running. A larger one rides out longer
    /// scheduling gaps on a busy host (docs/benchmarks.md); frames beyond it are dropped and
    /// counted (`host_queue_drops`, `iface_queue_drops`).
    /// Example: `sudo ivnsec gateway --plain eth1 --protected eth0 … --rcvbuf-mib 32`
    #[arg(long, value_name = "MIB", default_value_t = DEFAULT_RCVBUF_MIB,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub rcvbuf_mib: u16,
    /// How the two data-plane threads are scheduled. `normal` (the default): the normal
    /// policy throughout; a thread woken by a frame runs next to its waker and takes the
    /// frames queued meanwhile in one batch (the least CPU per frame, and what a gateway with
    /// CPUs of its own needs). `adaptive`: normal while the thread keeps up, SCHED_FIFO once
    /// every read has found a full batch queued for --raise-after-us, until no read has found
    /// one for --linger-ms: for a gateway sharing its host's CPUs with busy programs (a
    /// testbed on a loaded machine), which could otherwise take the gateway's CPU.
    /// `realtime`: SCHED_FIFO throughout (every wake-up then pays a cross-CPU hop).
    /// SCHED_FIFO needs root or CAP_SYS_NICE: `realtime` exits 3 without it, `adaptive` says
    /// so and runs as `normal` (docs/gateway.md, docs/benchmarks.md).
    /// Example: `sudo ivnsec gateway --plain eth1 --protected eth0 … --scheduling adaptive`
    #[arg(long, value_enum, value_name = "MODE")]
    pub scheduling: Option<SchedulingMode>,
    /// The SCHED_FIFO priority (1 … 99, default 10) of `--scheduling realtime|adaptive`. Given
    /// without --scheduling it means `--scheduling realtime` at PRIO: whenever frames wait the
    /// data plane runs before every normal process of the host (the kernel's real-time
    /// throttling still leaves the others 5 % of each CPU).
    /// Example: `sudo ivnsec gateway --plain eth1 --protected eth0 … --realtime 10`
    #[arg(long, value_name = "PRIO",
          value_parser = clap::value_parser!(u8).range(1..=99))]
    pub realtime: Option<u8>,
    /// `--scheduling adaptive`: how long, in milliseconds (0 … 1000, default 10), a data-plane
    /// thread that went to SCHED_FIFO on a backlog stays there once no read finds a full batch
    /// queued, so the short gaps of a flood do not hand it back to the normal scheduler (which
    /// may then run the busy sender first). 0: back to the normal policy at the first read
    /// that drains its queue.
    /// Example: `sudo ivnsec gateway --plain eth1 --protected eth0 … --linger-ms 0`
    #[arg(long, value_name = "MS", default_value_t = lab::sched::DEFAULT_LINGER.as_millis() as u16,
          value_parser = clap::value_parser!(u16).range(0..=1000))]
    pub linger_ms: u16,
    /// `--scheduling adaptive`: how long, in microseconds (0 … 1000000, default 1000), every
    /// read of a data-plane thread must find a full batch queued before it goes to SCHED_FIFO:
    /// longer than a sender's bursts the thread keeps up with, shorter than what the socket
    /// buffer holds. 0: at the first full read.
    /// Example: `sudo ivnsec gateway --plain eth1 --protected eth0 … --raise-after-us 5000`
    #[arg(long, value_name = "US",
          default_value_t = lab::sched::DEFAULT_RAISE_AFTER.as_micros() as u32,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub raise_after_us: u32,
    #[command(flatten)]
    pub busy_poll: super::common::dataplane::BusyPollArgs,
    #[command(flatten)]
    pub cpu_latency: super::common::dataplane::CpuLatencyArgs,
    #[command(flatten)]
    pub pipeline: super::common::dataplane::PipelineArgs,
    #[command(flatten)]
    pub rx_ring: super::common::dataplane::RxRingArgs,
    #[command(flatten)]
    pub crypto_workers: super::common::dataplane::CryptoWorkersArgs,
    #[command(flatten)]
    pub daemon: crate::daemon::DaemonArgs,
}

/// `--scheduling`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SchedulingMode {
    Adaptive,
    Realtime,
    Normal,
}

/// The scheduling `--scheduling` and `--realtime` ask for.
fn scheduling(a: &Args) -> Result<Scheduling> {
    let prio = a.realtime.unwrap_or(lab::sched::DEFAULT_PRIORITY);
    let adaptive = Scheduling::Adaptive {
        priority: prio,
        linger: std::time::Duration::from_millis(u64::from(a.linger_ms)),
        raise_after: std::time::Duration::from_micros(u64::from(a.raise_after_us)),
    };
    Ok(match (a.scheduling, a.realtime) {
        (Some(SchedulingMode::Adaptive), _) => adaptive,
        (None, Some(p)) => Scheduling::Realtime(p),
        (Some(SchedulingMode::Realtime), _) => Scheduling::Realtime(prio),
        (None, None) | (Some(SchedulingMode::Normal), None) => Scheduling::Normal,
        (Some(SchedulingMode::Normal), Some(p)) => {
            return Err(usage(format!(
                "--realtime {p} with --scheduling normal: the normal policy has no real-time \
                 priority; leave one of them out"
            )));
        }
    })
}

/// `--rcvbuf-mib` unless given.
pub const DEFAULT_RCVBUF_MIB: u16 = 4;

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let sched = scheduling(&a)?;
    let profile = match a.profile.profile() {
        Profile::Macsec(m) => m,
        Profile::IvnAe(p) => return run_ivnae(a, json, p, sched),
        p => {
            return Err(usage(format!(
                "--profile {p}: the gateway protects Ethernet frames with MACsec \
                 (macsec-gcm-aes-128, macsec-gcm-aes-256, macsec-gcm-aes-xpn-128, \
                 macsec-gcm-aes-xpn-256) or IVN-AE (e.g. aes128-gcm)"
            )));
        }
    };
    if !a.rx_keys.is_empty() {
        return Err(usage(
            "--rx-keys is for IVN-AE profiles; MACsec peers share the CA's key (--peer MAC)",
        ));
    }
    if a.accept_ivnae_v1 {
        return Err(usage(
            "--accept-ivnae-v1 is for IVN-AE profiles; a MACsec gateway has no IVN-AE peers",
        ));
    }
    // Both ports exist, before any key is loaded (errors name the option).
    lab::iface_facts_of("--protected", &a.protected)?;
    lab::iface_facts_of("--plain", &a.plain)?;
    let prov = provider(a.provider, Profile::Macsec(profile))?;
    let mut source = source::open(&a.key_source.settings()?, &a.protected, a.provider, profile)?;
    let spec = RunSpec {
        iface: a.protected.clone(),
        host: HostSide::Plain(a.plain.clone()),
        profile,
        provider: prov,
        replay_window: a.replay_window,
        run_dir: a
            .run_dir
            .clone()
            .unwrap_or_else(ivnsec_net::testbed::default_state_dir),
        events: a.events.clone(),
        pcap: a.pcap.clone(),
        socket_buffer: usize::from(a.rcvbuf_mib) << 20,
        scheduling: sched,
        offload: false,
        busy_poll: a.busy_poll.duration(),
        cpu_latency_us: a.cpu_latency.cpu_latency_us,
        pipeline: a.pipeline.choice(),
        rx_ring: a.rx_ring.on(),
        crypto_workers: a.crypto_workers.count(),
    };
    let stop = stop_on_signal()?;
    let limit = a
        .key_source
        .seq_limit
        .unwrap_or(u64::MAX)
        .min(profile.suite.max_pn());
    crate::daemon::start_status_daemon(
        &a.daemon,
        crate::daemon::status_source(
            "gateway",
            &a.plain,
            crate::daemon::macsec_status_path(Some(&spec.run_dir), &a.plain)?,
            limit,
            a.key_source.cert.clone(),
        ),
    )?;
    let summary = lab::run_spec(&spec, source.as_mut(), stop)?;
    if a.json {
        json.print(&summary.status)?;
    } else {
        let s = &summary.status;
        println!(
            "gateway {} ⇄ {} stopped: {} plain frames protected (next PN {}), {} MACsec frames \
             in, {} verified to the plain port, too long {}, drops {}",
            a.plain,
            a.protected,
            s["frames"]["iface_out"],
            s["tx"]["next_pn"],
            s["frames"]["iface_in"],
            s["frames"]["tap_out"],
            s["frames"]["too_long"],
            s["rx"]["drops"]
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `ivnsec gateway` with an IVN-AE profile: static keys, one per sender.
fn run_ivnae(
    a: Args,
    mut json: Json,
    profile: ivnsec_core::suite::IvnAeProfile,
    sched: Scheduling,
) -> Result<ExitCode> {
    if a.pipeline.choice() == Some(true) {
        return Err(usage(
            "--pipeline on is for MACsec profiles; an IVN-AE gateway runs one thread per \
             direction",
        ));
    }
    if a.crypto_workers.count().is_some_and(|n| n > 0) {
        return Err(usage(
            "--crypto-workers is for MACsec profiles; an IVN-AE gateway seals and verifies on \
             its data-plane threads",
        ));
    }
    let Some(keys) = a.key_source.keys.clone() else {
        return Err(usage(
            "IVN-AE gateways use static keys: give --keys FILE (this gateway's transmit key) and \
             --rx-keys ID:FILE per peer (MKA agrees MACsec keys only)",
        ));
    };
    if !a.key_source.peers.is_empty() || a.pcap.is_some() {
        return Err(usage(
            "--peer and --pcap are for MACsec profiles; IVN-AE peers are named by --rx-keys ID:FILE",
        ));
    }
    let Some(state_dir) = a.key_source.state_dir.clone() else {
        return Err(usage(format!(
            "refusing to send under the long-term key in {} without --state-dir: a restarted \
             gateway would count sequence numbers from 1 again and reuse nonces. Give \
             --state-dir DIR (a persistent directory for the reserved sequence numbers)",
            keys.display()
        )));
    };
    let rx_keys = a
        .rx_keys
        .iter()
        .map(|s| {
            let (id, file) = s.split_once(':').ok_or_else(|| {
                usage(format!(
                    "--rx-keys `{s}`: expected ID:FILE, e.g. 2:gw2.toml"
                ))
            })?;
            let id: u8 = id
                .parse()
                .map_err(|_| usage(format!("--rx-keys `{s}`: the key id must be 0..=255")))?;
            Ok((id, PathBuf::from(file)))
        })
        .collect::<Result<Vec<_>>>()?;
    let prov = provider(a.provider, Profile::IvnAe(profile))?;
    let cfg = ivnsec_node::gateway::IvnAeGatewayConfig {
        plain: a.plain.clone(),
        protected: a.protected.clone(),
        profile,
        provider: prov,
        keys,
        key_id: a.key_id,
        rx_keys,
        accept_v1: a.accept_ivnae_v1,
        state_dir,
        reserve_block: a.key_source.reserve_block,
        seq_limit: a.key_source.seq_limit,
        confirm_new_key: a.key_source.i_know_this_key_is_new,
        replay_window: a.replay_window,
        run_dir: a
            .run_dir
            .clone()
            .unwrap_or_else(ivnsec_net::testbed::default_state_dir),
        events: a.events.clone(),
        socket_buffer: usize::from(a.rcvbuf_mib) << 20,
        scheduling: sched,
        rx_checkpoint: a.key_source.checkpoint.checkpoint()?,
        busy_poll: a.busy_poll.duration(),
        cpu_latency_us: a.cpu_latency.cpu_latency_us,
        rx_ring: a.rx_ring.on(),
    };
    let stop = stop_on_signal()?;
    crate::daemon::start_status_daemon(
        &a.daemon,
        crate::daemon::status_source(
            "gateway",
            &a.plain,
            crate::daemon::macsec_status_path(Some(&cfg.run_dir), &a.plain)?,
            a.key_source.seq_limit.unwrap_or(u64::MAX),
            None,
        ),
    )?;
    let summary = ivnsec_node::gateway::run(&cfg, stop)?;
    if a.json {
        json.print(&summary.status)?;
    } else {
        let s = &summary.status;
        println!(
            "gateway {} ⇄ {} stopped: {} plain frames protected (next sequence number {}), {} \
             IVN-AE frames in, {} verified to the plain port, drops {}",
            a.plain,
            a.protected,
            s["frames"]["iface_out"],
            s["tx"]["next_seq"],
            s["frames"]["iface_in"],
            s["frames"]["tap_out"],
            s["rx"]["drops"]
        );
    }
    Ok(ExitCode::SUCCESS)
}
