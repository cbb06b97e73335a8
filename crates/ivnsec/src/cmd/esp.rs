//! `ivnsec esp up`: a userspace IPsec ESP tunnel interface (the tunnel and its data plane are
//! `ivnsec_node::esp_tunnel`; docs/esp-tunnel.md).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_net::esp_outer::UDP_ENCAP_PORT;
use ivnsec_node::channel::provider;
use ivnsec_node::esp_tunnel::{self as lab, Config, OuterSend};
use ivnsec_node::keys::highwater;

use super::common::ReplayCheckpointArgs;
use super::common::stop_on_signal;
use crate::error::usage;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Create TUN interface NAME: IP packets routed into it leave as ESP tunnel-mode packets from
    /// --local to --remote, verified ESP from the peer comes out of it; runs until
    /// SIGINT/SIGTERM, then removes NAME.
    Up(Box<UpArgs>),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every IP packet (IPv4 or IPv6) the host routes into the TUN leaves as an ESP tunnel-mode packet \
(RFC 4303 §3.1.2): a new outer IPv4 or IPv6 header from --local to --remote, protocol 50 (or UDP \
port 4500 with --udp-encap, RFC 3948), the ESP header with --tx-spi and the next sequence number, \
the encrypted inner packet, the ICV. Every ESP packet from --remote with --rx-spi that verifies \
under --rx-keys (replay window checked first, marked after the ICV) comes out of the TUN; \
everything else is dropped and counted by reason (--status, --events). \
--local and --remote are of one family; the TUN carries IPv4 and IPv6 inside either.

Keys: one key file per direction, as `ivnsec keygen --profile PROFILE --out FILE` writes them \
(mode 0600, a `profile` line of this suite). This host's --tx-keys is the peer's --rx-keys and the \
other way round; the same for the SPIs. The outbound sequence number never repeats under a key: \
numbers are reserved in --state-dir before use, exactly as `ivnsec send` does \
(docs/nonce-safety.md), so a restart, even after kill -9, resumes above everything sent. The \
inbound SA keeps an acceptance mark in --state-dir (on the full 64-bit number with --esn): every \
number it ever accepted is <= the mark, moved ahead by one checkpoint before a number above it \
is accepted, so a restarted tunnel refuses every recorded packet it may have accepted before \
(replay_duplicate/replay_too_old, and rx.replay_mark.refused_below_mark in --status); the cost is \
at most one checkpoint of legitimate packets refused after a restart \
(--replay-checkpoint-frames, about --replay-checkpoint-ms of traffic).

MTU: the TUN gets the largest MTU whose protected packet still fits the path MTU towards \
--remote (the kernel's, or --path-mtu); the difference is the tunnel's cost per packet (54 bytes \
for AES-GCM over IPv4: outer header 20, ESP header 8, IV 8, trailer 2, ICV 16). See \
docs/esp-tunnel.md.

Offload (default; --no-offload turns it off): the TUN is opened with a vnet header and TCP \
segmentation offload, so the host hands it TCP super-packets of up to 64 KiB; they are cut into \
MTU-sized segments here, each protected as its own ESP packet, and sent in batches \
(sendmmsg); received ESP packets are taken in batches (recvmmsg), verified one by one, and \
consecutive in-order TCP segments of one flow are coalesced into one super-packet for the TUN. \
Where the kernel refuses TUNSETOFFLOAD the TUN carries ordinary packets (said at start).

Example (hosts 192.0.2.1 and 192.0.2.2; inner addresses 10.9.0.1 and 10.9.0.2):
  ivnsec keygen --profile esp-aes128-gcm --out a2b.toml   # copy both files to both hosts
  ivnsec keygen --profile esp-aes128-gcm --out b2a.toml
  # on 192.0.2.1:
  sudo ivnsec esp up --tun esp0 --local 192.0.2.1 --remote 192.0.2.2 --profile esp-aes128-gcm \\
      --tx-keys a2b.toml --rx-keys b2a.toml --tx-spi 0x1001 --rx-spi 0x1002 \\
      --state-dir /var/lib/ivnsec/esp --addr 10.9.0.1/24 --addr fd00:9::1/64
  # on 192.0.2.2:
  sudo ivnsec esp up --tun esp0 --local 192.0.2.2 --remote 192.0.2.1 --profile esp-aes128-gcm \\
      --tx-keys b2a.toml --rx-keys a2b.toml --tx-spi 0x1002 --rx-spi 0x1001 \\
      --state-dir /var/lib/ivnsec/esp --addr 10.9.0.2/24 --addr fd00:9::2/64
  ping 10.9.0.2")]
pub struct UpArgs {
    /// Name of the TUN interface to create (must not exist).
    #[arg(long, value_name = "NAME")]
    pub tun: String,
    /// This tunnel endpoint's address (outer source; an address of this host).
    #[arg(long, value_name = "ADDR")]
    pub local: IpAddr,
    /// The peer's tunnel endpoint address (outer destination; same family as --local).
    #[arg(long, value_name = "ADDR")]
    pub remote: IpAddr,
    /// ESP profile: esp-aes128-gcm, esp-aes256-gcm, esp-chacha20-poly1305, esp-aes128-gmac,
    /// esp-aes256-gmac, esp-null-hmac-sha256, esp-aes128-cbc-hmac-sha256,
    /// esp-aes256-cbc-hmac-sha256.
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    /// Key file of the outbound SA (mode 0600, as `ivnsec keygen` writes it).
    #[arg(long, value_name = "FILE")]
    pub tx_keys: PathBuf,
    /// Key file of the inbound SA (the peer's --tx-keys; mode 0600).
    #[arg(long, value_name = "FILE")]
    pub rx_keys: PathBuf,
    /// SPI of the outbound SA, decimal or 0x-hex; 0 is refused, 1-255 warned about.
    #[arg(long, value_name = "N", value_parser = parse_spi)]
    pub tx_spi: u32,
    /// SPI of the inbound SA (the peer's --tx-spi), decimal or 0x-hex.
    #[arg(long, value_name = "N", value_parser = parse_spi)]
    pub rx_spi: u32,
    /// Directory of the persistent sequence-number state (required: without it a restart would
    /// reuse sequence numbers under the same key). Created if missing.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Carry ESP in UDP (RFC 3948) from and to port 4500 (--udp-port) instead of IP protocol
    /// 50: through NATs and firewalls that pass only UDP.
    #[arg(long)]
    pub udp_encap: bool,
    /// UDP port of --udp-encap (both ends use the same).
    #[arg(long, value_name = "PORT", default_value_t = UDP_ENCAP_PORT, requires = "udp_encap")]
    pub udp_port: u16,
    /// Extended (64-bit) sequence numbers, RFC 4303 §2.2.1 (both ends must agree).
    #[arg(long)]
    pub esn: bool,
    /// Replay window in packets (0: strictly increasing only; at most 65536).
    #[arg(long, value_name = "N", default_value_t = lab::DEFAULT_REPLAY_WINDOW,
          value_parser = super::replay_window_parser())]
    pub replay_window: u32,
    /// Address to give the TUN, ADDR/PREFIX (repeatable; IPv4 and IPv6), e.g. 10.9.0.1/24.
    #[arg(long, value_name = "ADDR/PREFIX")]
    pub addr: Vec<String>,
    /// Prefix to route into the TUN (repeatable), e.g. 10.20.0.0/16 or fd00:20::/64.
    #[arg(long, value_name = "PREFIX")]
    pub route: Vec<String>,
    /// Path MTU towards --remote, instead of the one the kernel knows (for a path whose
    /// narrowest link is further away). The TUN's MTU is derived from it.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub path_mtu: Option<u32>,
    /// Record every outer ESP packet sent and received (classic pcap, Ethernet framing;
    /// Wireshark decrypts it with the key files: docs/esp-tunnel.md).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Keep the counters (packets by path, drops by reason, sequence numbers) as JSON in FILE,
    /// rewritten every 0.5 s and once more at exit.
    #[arg(long, value_name = "FILE")]
    pub status: Option<PathBuf>,
    /// Append one JSON line per event to FILE (started, drop, stopped).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Sequence numbers reserved per state write, 1 to 1048576 (as `ivnsec send`): the first
    /// block; reservations less than 100 ms apart double it, up to 2^20 (docs/nonce-safety.md).
    #[arg(
        long,
        default_value_t = highwater::DEFAULT_BLOCK,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=highwater::MAX_BLOCK)
    )]
    pub reserve_block: u64,
    /// Highest sequence number the outbound key may carry; the tunnel stops (exit 1) there.
    #[arg(long, value_name = "N")]
    pub seq_limit: Option<u64>,
    /// Start at sequence number 1 although the key's `.used` record says it has sent under this
    /// SA and --state-dir holds no state for it. RISK: reuses nonces if the key did send before.
    #[arg(long)]
    pub i_know_this_key_is_new: bool,
    /// Crypto provider: portable, fast, openssl, or auto.
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// One packet per TUN read and write, no vnet header: without the offload path (TCP
    /// super-packets read from the TUN and cut into segments here, batched sends and receives,
    /// received segments coalesced into super-packets for the TUN). The offload path is the
    /// default and falls back to this by itself where the kernel refuses TUNSETOFFLOAD.
    #[arg(long)]
    pub no_offload: bool,
    /// How protocol-50 packets leave (the offload path): `auto` hands them to the outer
    /// interface as Ethernet frames to the next hop, with the outer IP header built here, when
    /// the route leaves by an Ethernet interface and the kernel has resolved the next hop (the
    /// raw IP socket until then, and for packets longer than the interface takes); `link` the
    /// same, refused at start if the route leaves by no Ethernet interface; `socket` always
    /// through the raw IP socket (the kernel routes, checksums and may fragment each packet,
    /// and the host's netfilter OUTPUT rules see it). Not with --udp-encap (UDP has
    /// segmentation offload) or --no-offload. Example: --outer-send socket
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub outer_send: OuterSendArg,
    #[command(flatten)]
    pub busy_poll: super::common::dataplane::BusyPollArgs,
    #[command(flatten)]
    pub cpu_latency: super::common::dataplane::CpuLatencyArgs,
    #[command(flatten)]
    pub pipeline: super::common::dataplane::PipelineArgs,
    #[command(flatten)]
    pub crypto_workers: super::common::dataplane::CryptoWorkersArgs,
    #[command(flatten)]
    pub checkpoint: ReplayCheckpointArgs,
    #[command(flatten)]
    pub daemon: crate::daemon::DaemonArgs,
}

/// `--outer-send`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OuterSendArg {
    Auto,
    Link,
    Socket,
}

impl From<OuterSendArg> for OuterSend {
    fn from(a: OuterSendArg) -> OuterSend {
        match a {
            OuterSendArg::Auto => OuterSend::Auto,
            OuterSendArg::Link => OuterSend::Link,
            OuterSendArg::Socket => OuterSend::Socket,
        }
    }
}

/// A 32-bit SPI in decimal or 0x-hex.
fn parse_spi(s: &str) -> Result<u32, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16),
        None => s.parse::<u32>(),
    }
    .map_err(|e| format!("not a 32-bit number: {e}"))
}

/// The status file `--metrics` and systemd's readiness read when --status is not given:
/// RUN_DIR/esp/TUN.json (run dir as `macsec up`'s default); none when neither is asked for.
fn daemon_status(d: &crate::daemon::DaemonArgs, tun: &str) -> Option<PathBuf> {
    if d.metrics.is_none() && std::env::var_os("NOTIFY_SOCKET").is_none() {
        return None;
    }
    let dir = ivnsec_net::testbed::default_state_dir().join("esp");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join(format!("{tun}.json")))
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a {
        Args::Up(a) => up(*a),
    }
}

fn up(a: UpArgs) -> Result<ExitCode> {
    let alg = match a.profile.profile() {
        Profile::Esp(alg) => alg,
        p => {
            return Err(usage(format!(
                "--profile {p}: `esp up` runs an IPsec ESP tunnel; give one of the esp-… \
                 profiles (esp-aes128-gcm, esp-aes256-gcm, esp-chacha20-poly1305, …; `ivnsec \
                 suites` lists them)"
            )));
        }
    };
    let Some(state_dir) = a.state_dir.clone() else {
        return Err(usage(format!(
            "refusing to send under the long-term key in {} without --state-dir: every nonce is \
             derived from the sequence number, and a tunnel that restarts (crash, reboot, kill) \
             would count from 1 again and reuse (key, nonce) pairs, which breaks the cipher. \
             Give --state-dir DIR (a persistent directory for the reserved sequence numbers)",
            a.tx_keys.display()
        )));
    };
    if a.no_offload && a.crypto_workers.count().is_some_and(|n| n > 0) {
        return Err(usage(
            "--crypto-workers seals and opens batches of packets, which only the offload path \
             has: drop --no-offload (which moves one packet per system call) or the workers",
        ));
    }
    if a.no_offload && a.pipeline.choice() == Some(true) {
        return Err(usage(
            "--pipeline on splits the offload path's batches across two threads per \
             direction: drop --no-offload (which moves one packet per system call) or the \
             pipeline",
        ));
    }
    if a.outer_send == OuterSendArg::Link && a.udp_encap {
        return Err(usage(
            "--outer-send link sends IP protocol 50 as Ethernet frames; with --udp-encap ESP \
             leaves in UDP (with segmentation offload): drop one of the two",
        ));
    }
    if a.outer_send == OuterSendArg::Link && a.no_offload {
        return Err(usage(
            "--outer-send link sends the offload path's batches as Ethernet frames; \
             --no-offload moves one packet per system call through the raw socket: drop one of \
             the two",
        ));
    }
    let status = daemon_status(&a.daemon, &a.tun);
    let cfg = Config {
        tun: a.tun,
        local: a.local,
        remote: a.remote,
        alg,
        provider: provider(a.provider, Profile::Esp(alg))?,
        tx_keys: a.tx_keys,
        rx_keys: a.rx_keys,
        tx_spi: a.tx_spi,
        rx_spi: a.rx_spi,
        esn: a.esn,
        replay_window: a.replay_window,
        state_dir,
        reserve_block: a.reserve_block,
        seq_limit: a.seq_limit,
        confirm_new_key: a.i_know_this_key_is_new,
        udp_port: a.udp_encap.then_some(a.udp_port),
        path_mtu: a.path_mtu,
        addrs: a.addr,
        routes: a.route,
        pcap: a.pcap,
        events: a.events,
        status: a.status.or(status),
        offload: !a.no_offload,
        busy_poll: a.busy_poll.duration(),
        cpu_latency_us: a.cpu_latency.cpu_latency_us,
        crypto_workers: a.crypto_workers.count(),
        pipeline: a.pipeline.choice(),
        outer_send: a.outer_send.into(),
        rx_checkpoint: a.checkpoint.checkpoint()?,
    };
    let keys = lab::check(&cfg)?;
    let stop = stop_on_signal()?;
    if let Some(status) = &cfg.status {
        let max = if cfg.esn {
            u64::MAX
        } else {
            u64::from(u32::MAX)
        };
        crate::daemon::start_status_daemon(
            &a.daemon,
            crate::daemon::status_source(
                "esp",
                &cfg.tun,
                status.clone(),
                cfg.seq_limit.unwrap_or(u64::MAX).min(max),
                None,
            ),
        )?;
    }
    let summary = lab::run(&cfg, keys, stop)?;
    let s = &summary.status;
    println!(
        "esp {} stopped: {} packets out (next sequence number {}), {} packets in, {} delivered, \
         drops {}",
        cfg.tun,
        s["packets"]["esp_out"],
        s["tx"]["next_seq"],
        s["packets"]["esp_in"],
        s["packets"]["tun_out"],
        s["rx"]["drops"]
    );
    Ok(ExitCode::SUCCESS)
}
