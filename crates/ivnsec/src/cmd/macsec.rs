//! `ivnsec macsec up|status|down`: MACsec on a TAP interface for a host whose kernel has none
//! (the SecY and its data plane are `ivnsec_node::macsec`; docs/macsec-tap.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_core::profile::{NamedProfile, Profile};
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_crypto::ProviderChoice;
use ivnsec_node::channel::provider;
use ivnsec_node::keys::{highwater, psk};
use ivnsec_node::macsec::mka::{MkaKeys, MkaSettings};
use ivnsec_node::macsec::static_keys::StaticKeys;
use ivnsec_node::macsec::{self as lab, KeySource, status};

use crate::cmd::receive::ReplayCheckpointArgs;
use crate::cmd::send::{parse_mac, stop_on_signal};
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
      --state-dir /var/lib/ivnsec")]
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

/// Where the keys of a SecY come from, and the nonce state (`macsec up`, `gateway`): static
/// keys, MKA on a PSK, or MKA on the key server's CAK.
#[derive(clap::Args, Debug)]
pub struct KeySourceArgs {
    /// Static keys: the CA's SAK as a key file (`ivnsec keygen --profile PROFILE --out FILE`).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present_any = ["psk", "keyserver"],
        conflicts_with_all = ["psk", "keyserver"]
    )]
    pub keys: Option<PathBuf>,
    /// MKA with a pre-shared CAK: TOML with `cak` and `ckn` in hex, mode 0600 (`ivnsec keygen
    /// --mka --out FILE`). The SAKs are agreed and rotated; peers are learned.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// MKA with the CAK from the vehicle's key server (`ivnsec keyserver`) at ADDR (host:port),
    /// over mutual TLS 1.3 with --cert, --key and --ca; fetched again when the key server
    /// pushes a new one (docs/keys.md).
    #[arg(long, value_name = "ADDR", conflicts_with = "psk", requires_all = ["cert", "key", "ca"])]
    pub keyserver: Option<String>,
    /// With --keyserver: this member's certificate (`ivnsec pki issue`: D/ecu/NAME.pem).
    #[arg(long, value_name = "FILE", requires = "keyserver")]
    pub cert: Option<PathBuf>,
    /// With --keyserver: this member's private key (D/ecu/NAME.key, mode 0600).
    #[arg(long, value_name = "FILE", requires = "keyserver")]
    pub key: Option<PathBuf>,
    /// With --keyserver: the vehicle CA that issued the key server's certificate (D/ca.pem).
    #[arg(long, value_name = "FILE", requires = "keyserver")]
    pub ca: Option<PathBuf>,
    /// With --keyserver: the segment whose CAK MKA runs on (needed when the member is in several).
    #[arg(long, value_name = "NAME", requires = "keyserver")]
    pub segment: Option<String>,
    /// With --keyserver: the name the key server's certificate must carry.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "keyserver",
        requires = "keyserver"
    )]
    pub keyserver_name: String,
    /// A peer of the CA by the MAC of its protected interface (its SCI is MAC ‖ 0001); repeat
    /// for each. Frames from SCIs not listed are discarded (unknown SCI). Static keys only.
    #[arg(long = "peer", value_name = "MAC", conflicts_with_all = ["psk", "keyserver"])]
    pub peers: Vec<String>,
    /// Association number of the static SAs (0..=3).
    #[arg(long, default_value_t = 0, value_name = "AN", conflicts_with_all = ["psk", "keyserver"])]
    pub an: u8,
    /// MKA: Key Server Priority, 0 to 255. The member with the lowest value (then the lowest
    /// SCI) is key server; 255 never is.
    #[arg(long, default_value_t = 16, value_name = "N", conflicts_with = "keys")]
    pub priority: u8,
    /// MKA: the key server distributes a new SAK every S seconds (default: only when needed:
    /// at election, membership change and the PN threshold). E.g. 3600.
    #[arg(long, value_name = "S", conflicts_with = "keys")]
    pub rekey_seconds: Option<f64>,
    /// MKA: the key server rekeys when a transmit PN of the current SAK reaches N (default 75 %
    /// of the PN space: 3221225472, or 2^63 + 2^62 with XPN).
    #[arg(long, value_name = "N", conflicts_with = "keys")]
    pub pn_threshold: Option<u64>,
    /// MKA Hello Time: an MKPDU every S seconds (the standard's 2).
    #[arg(long, default_value_t = 2.0, value_name = "S", conflicts_with = "keys")]
    pub hello_seconds: f64,
    /// MKA Life Time: a peer not heard from for S seconds is lost (the standard's 6).
    #[arg(long, default_value_t = 6.0, value_name = "S", conflicts_with = "keys")]
    pub life_seconds: f64,
    /// MKA SAK Retire Time: the old SAK stays installed for receive S seconds after every
    /// peer transmits with the new one (the standard's 3).
    #[arg(long, default_value_t = 3.0, value_name = "S", conflicts_with = "keys")]
    pub sak_retire_seconds: f64,
    /// MKA start-up ramp-up: the first MKPDUs after MS milliseconds, doubling each time
    /// (--ramp-up-count of them, never slower than the hello time), for a fast link start.
    /// E.g. 20. Default: none (the standard's behaviour).
    #[arg(long, value_name = "MS", conflicts_with = "keys")]
    pub ramp_up_ms: Option<u64>,
    /// MKA: how many MKPDUs the ramp-up speeds up (1 to 32).
    #[arg(long, default_value_t = 5, value_name = "N", requires = "ramp_up_ms")]
    pub ramp_up_count: u32,
    /// Directory of the persistent nonce state (required with --keys: without it a restart
    /// would reuse PNs under the same key). Created if missing.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// PNs reserved per state write, 1 to 1048576 (as `ivnsec send --reserve-block`).
    #[arg(
        long,
        default_value_t = highwater::DEFAULT_BLOCK,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=highwater::MAX_BLOCK)
    )]
    pub reserve_block: u64,
    /// Highest PN this key may carry (below the suite's own limit); sending stops when it is
    /// used and the command exits 1. Static keys only.
    #[arg(long, value_name = "N", conflicts_with_all = ["psk", "keyserver"])]
    pub seq_limit: Option<u64>,
    /// Start at PN 1 although KEYFILE.used says this key has sent under this SA and
    /// --state-dir holds no state for it (as `ivnsec send`): only for a key you know is new.
    #[arg(long, conflicts_with_all = ["psk", "keyserver"])]
    pub i_know_this_key_is_new: bool,
    /// Static keys: how far the receive SAs' acceptance marks in --state-dir move ahead.
    #[command(flatten)]
    pub checkpoint: ReplayCheckpointArgs,
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
    let mut source: Box<dyn KeySource> = match (&a.key_source.psk, &a.key_source.keyserver) {
        (Some(file), _) => mka_source(&a.key_source, &a.iface, a.provider, profile, Some(file))?,
        (None, Some(_)) => mka_source(&a.key_source, &a.iface, a.provider, profile, None)?,
        (None, None) => static_source(&a.key_source, &a.iface, profile)?,
    };
    let cfg = lab::Config {
        iface: a.iface.clone(),
        tap: a.tap.clone(),
        profile,
        provider: prov,
        replay_window: a.replay_window,
        run_dir: run_dir(&a.run_dir),
        events: a.events.clone(),
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

/// Seconds of an MKA timer option as a duration (positive, at most a day).
fn seconds(option: &str, s: f64) -> Result<Duration> {
    if !(s.is_finite() && s > 0.0 && s <= 86_400.0) {
        return Err(usage(format!(
            "{option} must be a number of seconds above 0 and at most 86400, got {s}"
        )));
    }
    Ok(Duration::from_secs_f64(s))
}

/// MKA (`--psk FILE`, or the CAK from `--keyserver` when `file` is `None`): the PSK file or
/// the key server's first CAK and the settings checked before anything is created.
pub(crate) fn mka_source(
    ks: &KeySourceArgs,
    iface: &str,
    provider: ProviderChoice,
    profile: ivnsec_core::profile::MacsecProfile,
    file: Option<&Path>,
) -> Result<Box<dyn KeySource>> {
    let Some(state_dir) = ks.state_dir.clone() else {
        return Err(usage(
            "refusing to run MKA without --state-dir: a member restarted while the CA still \
             uses the SAK it transmitted under may be handed that SAK again, and counting PNs \
             from 1 would reuse (key, nonce) pairs, which breaks GCM. Give --state-dir DIR (a \
             persistent directory for the reserved PNs of every SAK)",
        ));
    };
    let settings = MkaSettings {
        priority: ks.priority,
        hello: seconds("--hello-seconds", ks.hello_seconds)?,
        life: seconds("--life-seconds", ks.life_seconds)?,
        sak_retire: seconds("--sak-retire-seconds", ks.sak_retire_seconds)?,
        rekey: ks
            .rekey_seconds
            .map(|s| seconds("--rekey-seconds", s))
            .transpose()?,
        pn_threshold: ks.pn_threshold,
        ramp_up: ks
            .ramp_up_ms
            .map(|ms| (Duration::from_millis(ms), ks.ramp_up_count)),
    };
    let (mac, _) = lab::iface_facts(iface)?;
    let Some(file) = file else {
        return keyserver_source(
            ks,
            iface,
            provider,
            profile,
            settings,
            state_dir,
            Sci::end_station(MacAddr(mac)),
        );
    };
    let key = psk::load(file)?;
    Ok(Box::new(MkaKeys::new(
        profile,
        file.to_path_buf(),
        ivnsec_node::keys::used_sak::record_path(file),
        &key,
        iface,
        Sci::end_station(MacAddr(mac)),
        settings,
        state_dir,
        ks.reserve_block,
        provider,
    )?))
}

/// MKA on the CAK of the key server (`--keyserver`): fetched once now (refusals and an
/// unreachable server stop here), then watched.
fn keyserver_source(
    ks: &KeySourceArgs,
    iface: &str,
    provider: ProviderChoice,
    profile: ivnsec_core::profile::MacsecProfile,
    settings: MkaSettings,
    state_dir: PathBuf,
    sci: Sci,
) -> Result<Box<dyn KeySource>> {
    use ivnsec_node::macsec::keyserver::{KeyserverKeys, Params, Remote, fetch_initial};
    let (Some(addr), Some(cert), Some(key), Some(ca)) = (&ks.keyserver, &ks.cert, &ks.key, &ks.ca)
    else {
        return Err(usage("--keyserver needs --cert, --key and --ca"));
    };
    if let Some(s) = &ks.segment {
        ivnsec_node::pki::check_ecu_name(s).map_err(|e| usage(format!("--segment: {e:#}")))?;
    }
    let tls = ivnsec_node::pki::keyserver::client_tls(ca, cert, key)?;
    let remote = Remote {
        addr: addr.clone(),
        server_name: ks.keyserver_name.clone(),
        tls,
        segment: ks.segment.clone(),
    };
    let first = fetch_initial(&remote)?;
    eprintln!(
        "macsec: CAK number {} of segment {} (CKN {}) from the key server {addr}",
        first.key.number,
        first.segment,
        hex::encode(&first.key.ckn)
    );
    let params = Params {
        profile,
        iface: iface.to_string(),
        sci,
        settings,
        state_dir,
        reserve_block: ks.reserve_block,
        provider,
        sak_record: ivnsec_node::keys::used_sak::record_path(key),
    };
    Ok(Box::new(KeyserverKeys::new(remote, params, first)?))
}

/// Static keys (`--keys`).
pub(crate) fn static_source(
    ks: &KeySourceArgs,
    iface: &str,
    profile: ivnsec_core::profile::MacsecProfile,
) -> Result<Box<dyn KeySource>> {
    let Some(key_file) = ks.keys.clone() else {
        return Err(usage("give --keys FILE (static keys) or --psk FILE (MKA)"));
    };
    let Some(state_dir) = ks.state_dir.clone() else {
        return Err(usage(format!(
            "refusing to send under the long-term key in {} without --state-dir: the MACsec \
             nonce is derived from the PN, and an instance that restarts (crash, reboot, kill) \
             would count from 1 again and reuse (key, nonce) pairs, which breaks GCM. Give \
             --state-dir DIR (a persistent directory for the reserved PNs)",
            key_file.display()
        )));
    };
    if ks.an > 3 {
        return Err(usage(format!("--an must be 0, 1, 2 or 3, got {}", ks.an)));
    }
    let peers = ks
        .peers
        .iter()
        .map(|p| parse_mac("--peer", p).map(|m| Sci::end_station(MacAddr(m))))
        .collect::<Result<Vec<_>>>()?;
    let (mac, _) = lab::iface_facts(iface)?;
    let mut keys = StaticKeys::new(
        profile,
        key_file,
        Sci::end_station(MacAddr(mac)),
        peers,
        ks.an,
        state_dir,
        ks.reserve_block,
        ks.seq_limit,
        ks.i_know_this_key_is_new,
    )?;
    keys.rx_checkpoint = ks.checkpoint.checkpoint()?;
    Ok(Box::new(keys))
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
