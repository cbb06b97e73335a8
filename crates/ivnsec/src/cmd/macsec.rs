//! `ivnsec macsec up|status|down`: MACsec on a TAP interface for a host whose kernel has none
//! (the SecY and its data plane are `ivnsec_node::macsec`; docs/macsec-tap.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::channel::provider;
use ivnsec_node::macsec::{self as lab, source, status};

use super::common::{KeySourceArgs, stop_on_signal};
use crate::error::usage;
use crate::output::Json;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Create TAP interface NAME whose frames leave --iface as MACsec, and hand verified MACsec
    /// frames from --iface to the host on NAME; runs until SIGINT/SIGTERM, then removes NAME.
    Up(Box<UpArgs>),
    /// Show the SAs, PNs and counters of the running instances in this network namespace.
    Status(StatusArgs),
    /// Stop the instances of this namespace (SIGTERM) and remove what a killed one left: its
    /// status file, and its TAP if another process still held it. Idempotent.
    ///
    /// Example: `sudo ivnsec macsec down --tap macsec0`
    Down(DownArgs),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Every frame the host sends on the TAP leaves --iface as a MACsec frame (EtherType 0x88E5, SecTAG \
with the SCI = MAC of --iface ‖ 0001, ICV), protected under the SecY's transmit SA; every MACsec \
frame that arrives on --iface from a listed peer and verifies is handed to the host on the TAP. \
Frames that do not verify never reach the TAP; they are counted by reason (`ivnsec macsec \
status`). The TAP gets the MAC of --iface and MTU = MTU of --iface − 32 (16-byte SecTAG with SCI \
+ 16-byte ICV); an --iface whose MTU leaves less than 68 bytes is refused. Unmodified programs \
(ping, iperf3, sockperf) use the TAP as they would a kernel macsec interface: give it the IP \
address, not --iface.

Static keys (--keys): one SAK for the whole connectivity association, from a key file that \
`ivnsec keygen --profile PROFILE` writes (mode 0600, with a `profile` line of this suite; every \
member uses the same file). This host's transmit SA and one receive SA per --peer use it under \
--an. XPN suites: the key file's `iv` is the salt, and each member's SSCI is derived from its own \
SCI alone (0x80000000 | the first 4 bytes of HMAC-SHA256 keyed \"ivnsec macsec static ssci v1\" \
over the SCI; `macsec status` lists them), so changing or reordering --peers never moves one; \
members whose SSCIs collide are refused, and KEYFILE.used binds each SSCI to the SCI that used \
it first. The transmit PN never repeats across restarts: PNs are reserved in \
--state-dir before use, exactly as `ivnsec send` does (docs/nonce-safety.md); when they run out \
the TAP stops sending and `up` exits 1: install a new key file. Each receive SA keeps an \
acceptance mark in --state-dir (every PN it ever accepted is <= the mark, moved ahead by one \
checkpoint before a PN above it is delivered): a restarted instance installs its receive SAs \
above the mark, so every recorded frame it may have accepted before is refused (InPktsLate, \
`late`, and rx.sas[].replay_mark.refused_below_mark in the status). The cost: at most one \
checkpoint of legitimate frames refused after a restart (--replay-checkpoint-frames, about \
--replay-checkpoint-ms of traffic). Under MKA a restarted member gets fresh SAKs instead.

MKA (--psk): the members agree and rotate the SAKs themselves (IEEE 802.1X-2020) from a \
pre-shared CAK that `ivnsec keygen --mka` writes (mode 0600; the same file on every member). \
MKPDUs (EtherType 0x888E, to 01-80-C2-00-00-03) go out on --iface every --hello-seconds; the \
member with the lowest --priority (then the lowest SCI) is elected key server and distributes a \
SAK, again every --rekey-seconds, when a transmit PN reaches --pn-threshold and when a member \
joins or leaves. Peers are learned: a member is accepted once its MKPDUs verify under the CAK and \
list this one. A new SAK is installed for receive first, then for transmit, and the old one \
retired last, so no frame is lost to a rekey. Every transmit SA's PNs are reserved in \
--state-dir under the SAK (a member restarted and handed the SAK it used before resumes above \
every PN it may have sent). Each SAK is also recorded (by fingerprint) in PSK.used beside the PSK \
file (KEY.used beside --key with --keyserver): a SAK recorded there whose state is missing (a lost \
--state-dir) is used for receive only, never to transmit, until the key server distributes a new \
one (event sak_refused_no_state). `--ramp-up-ms` sends the first MKPDUs faster for a quick start.

MKA with the key server (--keyserver ADDR --cert C --key K --ca CA [--segment NAME]): the CAK of \
this ECU's segment comes from `ivnsec keyserver` over mutual TLS 1.3 instead of a PSK file; a \
watch connection gets every new CAK pushed (e.g. after `ivnsec pki revoke` of another member), \
and MKA moves to it make-before-break. See docs/keys.md.

802.1X (--eap-tls on a supplicant, --authenticator on the other end; IEEE 802.1X-2020): the \
supplicant authenticates with its certificate over EAP-TLS to the authenticator, which passes \
EAP to a RADIUS server (FreeRADIUS: `ivnsec pki freeradius` writes its EAP-TLS configuration); \
both derive the CAK and CKN from the EAP keys (6.2.2) and run MKA on it. --group-ca hands one \
group CAK to every supplicant on the port (MKA Distributed CAK). --fallback-psk keeps the link \
protected while EAP fails or the RADIUS server is unreachable; --reauth-seconds renews the CAK. \
A failure without a fallback leaves no CAK: no data frame passes (events eap_failure, \
cak_removed; counts in the status). See docs/8021x.md.

The status file is DIR/macsec/TAP.NETNS.json in --run-dir; --events appends one JSON line per \
event (started, sa_installed, sa_enabled, sa_retired, icv_failure, unknown_sci, pn_exhausted, \
tx_stopped, stopped). If the process is killed (even with SIGKILL) the kernel removes the TAP \
with it; `ivnsec macsec down` removes the status file left behind. See docs/macsec-tap.md.

Example (two hosts on eth0, MACs 02:00:00:00:00:01 and 02:00:00:00:00:02):
  ivnsec keygen --profile macsec-gcm-aes-128 --out ca.toml      # copy ca.toml to both hosts
  sudo ivnsec macsec up --iface eth0 --tap macsec0 --profile macsec-gcm-aes-128 \\
      --keys ca.toml --peer 02:00:00:00:00:02 --state-dir /var/lib/ivnsec --events ev.jsonl
  sudo ip addr add 10.99.0.1/24 dev macsec0 && ping 10.99.0.2
  sudo ivnsec macsec status

Example with MKA (every member the same way, no --peer):
  ivnsec keygen --mka --out ca.psk                              # copy ca.psk to every member
  sudo ivnsec macsec up --iface eth0 --tap macsec0 --profile macsec-gcm-aes-128 \\
      --psk ca.psk --state-dir /var/lib/ivnsec --rekey-seconds 3600 --events ev.jsonl

Example with the key server (`ivnsec pki`, `ivnsec keyserver`):
  sudo ivnsec macsec up --iface eth0 --tap macsec0 --profile macsec-gcm-aes-128 \\
      --keyserver 10.0.0.1:8443 --cert brake1.pem --key brake1.key --ca ca.pem \\
      --state-dir /var/lib/ivnsec

Example with 802.1X (the authenticator reaches FreeRADIUS at 10.0.0.9):
  sudo ivnsec macsec up --iface eth0 --tap macsec0 --profile macsec-gcm-aes-128 \\
      --authenticator --radius 10.0.0.9 --radius-secret radius.secret --priority 0 \\
      --fallback-psk fallback.psk --state-dir /var/lib/ivnsec
  sudo ivnsec macsec up --iface eth0 --tap macsec0 --profile macsec-gcm-aes-128 \\
      --eap-tls --cert pki/ecu/lidar1.pem --key pki/ecu/lidar1.key --ca pki/ca.pem \\
      --fallback-psk fallback.psk --state-dir /var/lib/ivnsec")]
pub struct UpArgs {
    /// The protected interface: MACsec frames go out and come in here. Needs root.
    #[arg(long, value_name = "IF")]
    pub iface: String,
    /// Name of the TAP interface to create (must not exist).
    #[arg(long, value_name = "NAME")]
    pub tap: String,
    /// macsec-gcm-aes-128 | macsec-gcm-aes-256 | macsec-gcm-aes-xpn-128 |
    /// macsec-gcm-aes-xpn-256; `/auth` for integrity only (user data in clear).
    #[arg(long, value_parser = super::profile_arg)]
    pub profile: NamedProfile,
    #[command(flatten)]
    pub key_source: KeySourceArgs,
    /// Replay window of the receive SAs (0: only increasing PNs; at most 65536).
    #[arg(long, default_value_t = 0, value_name = "N",
          value_parser = super::replay_window_parser())]
    pub replay_window: u32,
    /// One frame per TAP read and write, no vnet header: without TCP offloads (the host's TCP
    /// super-frames of up to 64 KiB read from the TAP and cut into frames here, verified
    /// frames of one flow merged back into super-frames for the TAP). Offloads are the
    /// default; where the kernel refuses them the TAP carries one frame per read by itself.
    #[arg(long)]
    pub no_offload: bool,
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
    /// Append one JSON line per event to FILE (created mode 0600).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Where the status file is kept (DIR/macsec/). Default: $IVNSEC_STATE_DIR, else
    /// $XDG_RUNTIME_DIR/ivnsec, else /run/ivnsec.
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Crypto provider: portable, fast, openssl, or auto (the fastest per primitive: `ivnsec suites`).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
    /// Print the final status as JSON when stopping.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub daemon: crate::daemon::DaemonArgs,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Exit code 0 when every instance shown is running, 1 when one is not (a stale status file of a \
killed instance: `ivnsec macsec down` removes it) or none is found.

Example: sudo ivnsec macsec status --tap macsec0 --json")]
pub struct StatusArgs {
    /// Only the instance of this TAP.
    #[arg(long, value_name = "NAME")]
    pub tap: Option<String>,
    /// Where the status files are (as `up --run-dir`).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// Print the status files as a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct DownArgs {
    /// Only the instance of this TAP (default: every instance of this namespace).
    #[arg(long, value_name = "NAME")]
    pub tap: Option<String>,
    /// Where the status files are (as `up --run-dir`).
    #[arg(long, value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
}

fn run_dir(d: &Option<PathBuf>) -> PathBuf {
    d.clone()
        .unwrap_or_else(ivnsec_net::testbed::default_state_dir)
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a {
        Args::Up(a) => up(*a),
        Args::Status(a) => show(a),
        Args::Down(a) => down(a),
    }
}

fn up(a: UpArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let profile = match a.profile.profile() {
        Profile::Macsec(m) => m,
        p => {
            return Err(usage(format!(
                "--profile {p}: `macsec up` runs a MACsec SecY; give macsec-gcm-aes-128, \
                 macsec-gcm-aes-256, macsec-gcm-aes-xpn-128 or macsec-gcm-aes-xpn-256"
            )));
        }
    };
    let prov = provider(a.provider, Profile::Macsec(profile))?;
    let mut source = source::open(&a.key_source.settings()?, &a.iface, a.provider, profile)?;
    let cfg = lab::Config {
        iface: a.iface.clone(),
        tap: a.tap.clone(),
        profile,
        provider: prov,
        replay_window: a.replay_window,
        run_dir: run_dir(&a.run_dir),
        events: a.events.clone(),
        offload: !a.no_offload,
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
            "macsec",
            &a.tap,
            crate::daemon::macsec_status_path(Some(&cfg.run_dir), &a.tap)?,
            limit,
            a.key_source.cert.clone(),
        ),
    )?;
    let summary = lab::run(&cfg, source.as_mut(), stop)?;
    if a.json {
        json.print(&summary.status)?;
    } else {
        let s = &summary.status;
        println!(
            "macsec {} stopped: {} frames out (next PN {}), {} frames in, {} delivered, drops {}",
            a.tap,
            s["frames"]["iface_out"],
            s["tx"]["next_pn"],
            s["frames"]["iface_in"],
            s["frames"]["tap_out"],
            s["rx"]["drops"]
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn show(a: StatusArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let dir = run_dir(&a.run_dir);
    let found = status::find(&dir, a.tap.as_deref())?;
    if a.json {
        let v: Vec<serde_json::Value> = found
            .iter()
            .map(|f| {
                let mut s = f.status.clone();
                s["running"] = serde_json::json!(f.alive);
                s
            })
            .collect();
        json.print(&v)?;
    } else if found.is_empty() {
        eprintln!(
            "no `ivnsec macsec up` {}in this network namespace (status files in {})",
            a.tap
                .as_deref()
                .map(|t| format!("for TAP {t} "))
                .unwrap_or_default(),
            dir.join("macsec").display()
        );
    } else {
        for f in &found {
            print!("{}", status::render(f));
        }
    }
    Ok(if !found.is_empty() && found.iter().all(|f| f.alive) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn down(a: DownArgs) -> Result<ExitCode> {
    let d = status::down(
        &run_dir(&a.run_dir),
        a.tap.as_deref(),
        Duration::from_secs(5),
    )?;
    for pid in &d.stopped {
        println!("stopped pid {pid}");
    }
    for p in &d.stale_removed {
        println!("removed stale status file {}", p.display());
    }
    for t in &d.taps_removed {
        println!("removed TAP {t}");
    }
    if d.stopped.is_empty() && d.stale_removed.is_empty() && d.taps_removed.is_empty() {
        println!("nothing to do");
    }
    Ok(ExitCode::SUCCESS)
}
