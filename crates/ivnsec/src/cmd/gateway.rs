//! `ivnsec gateway`: a bump-in-the-wire in front of legacy ECUs that cannot protect themselves
//! (the SecY, its data plane and the plain port are `ivnsec_lab::macsec`; docs/gateway.md).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_core::profile::Profile;
use ivnsec_crypto::ProviderChoice;
use ivnsec_lab::channel::provider;
use ivnsec_lab::keys::highwater;
use ivnsec_lab::macsec::{self as lab, HostSide, KeySource, RunSpec};

use crate::cmd::macsec::{UpArgs, mka_source, static_source};
use crate::cmd::send::stop_on_signal;
use crate::error::{parse_profile, usage};
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
pre-shared CAK; SAKs agreed and rotated). The peers are the other gateways and MACsec ECUs, named \
by the MAC of their protected interface. Status and stopping: `ivnsec macsec status` lists the \
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

IVN-AE (an IVN-AE profile such as aes128-gcm; static keys only): every sender has its own key \
file and key id; the gateway transmits under --keys with --key-id and verifies each peer under \
--rx-keys ID:FILE (the peer's key id and key file). Frames go out with EtherType 0x88B5; the \
protected MTU must leave room for the IVN-AE header and tag (30 bytes with aes128-gcm: 1530 for a \
legacy side at 1500; the gateway names the exact value). Example, two gateways:
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
    #[arg(long)]
    pub profile: String,
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
    /// MKA with the CAK of this gateway's segment from the vehicle's key server (`ivnsec
    /// keyserver`) at ADDR (host:port), over mutual TLS 1.3 with --cert, --key and --ca, as
    /// `macsec up --keyserver` (docs/keys.md). MACsec profiles only.
    #[arg(long, value_name = "ADDR", conflicts_with = "psk", requires_all = ["cert", "key", "ca"])]
    pub keyserver: Option<String>,
    /// With --keyserver: this gateway's certificate (`ivnsec pki issue`: D/ecu/NAME.pem).
    #[arg(long, value_name = "FILE", requires = "keyserver")]
    pub cert: Option<PathBuf>,
    /// With --keyserver: this gateway's private key (D/ecu/NAME.key, mode 0600).
    #[arg(long, value_name = "FILE", requires = "keyserver")]
    pub key: Option<PathBuf>,
    /// With --keyserver: the vehicle CA that issued the key server's certificate (D/ca.pem).
    #[arg(long, value_name = "FILE", requires = "keyserver")]
    pub ca: Option<PathBuf>,
    /// With --keyserver: the segment whose CAK MKA runs on (needed when the gateway is in
    /// several).
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
    #[arg(long = "peer", value_name = "MAC", conflicts_with = "psk")]
    pub peers: Vec<String>,
    /// IVN-AE: the key id this gateway's frames carry (byte 16), 0..=255; every sender of the
    /// network needs its own.
    #[arg(long, default_value_t = 1, value_name = "ID", conflicts_with = "psk")]
    pub key_id: u8,
    /// IVN-AE: a peer's key id and the key file it transmits under, as ID:FILE; repeat for
    /// each peer. E.g. `--rx-keys 2:gw2.toml`.
    #[arg(long = "rx-keys", value_name = "ID:FILE", conflicts_with = "psk")]
    pub rx_keys: Vec<String>,
    /// Association number of the static SAs (0..=3).
    #[arg(long, default_value_t = 0, value_name = "AN", conflicts_with = "psk")]
    pub an: u8,
    /// MKA: Key Server Priority, 0 to 255 (lowest wins; 255 never is key server).
    #[arg(long, default_value_t = 16, value_name = "N", conflicts_with = "keys")]
    pub priority: u8,
    /// MKA: the key server distributes a new SAK every S seconds (default: only when needed).
    #[arg(long, value_name = "S", conflicts_with = "keys")]
    pub rekey_seconds: Option<f64>,
    /// MKA: the key server rekeys when a transmit PN of the current SAK reaches N.
    #[arg(long, value_name = "N", conflicts_with = "keys")]
    pub pn_threshold: Option<u64>,
    /// MKA Hello Time in seconds.
    #[arg(long, default_value_t = 2.0, value_name = "S", conflicts_with = "keys")]
    pub hello_seconds: f64,
    /// MKA Life Time in seconds.
    #[arg(long, default_value_t = 6.0, value_name = "S", conflicts_with = "keys")]
    pub life_seconds: f64,
    /// MKA SAK Retire Time in seconds.
    #[arg(long, default_value_t = 3.0, value_name = "S", conflicts_with = "keys")]
    pub sak_retire_seconds: f64,
    /// MKA start-up ramp-up: the first MKPDUs after MS milliseconds, doubling. E.g. 20.
    #[arg(long, value_name = "MS", conflicts_with = "keys")]
    pub ramp_up_ms: Option<u64>,
    /// MKA: how many MKPDUs the ramp-up speeds up (1 to 32).
    #[arg(long, default_value_t = 5, value_name = "N", requires = "ramp_up_ms")]
    pub ramp_up_count: u32,
    /// Directory of the persistent nonce state (required: without it a restart would reuse
    /// PNs under the same key). Created if missing.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// PNs reserved per state write, 1 to 1048576.
    #[arg(
        long,
        default_value_t = highwater::DEFAULT_BLOCK,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=highwater::MAX_BLOCK)
    )]
    pub reserve_block: u64,
    /// Highest PN this key may carry; the gateway stops sending when it is used and exits 1.
    /// Static keys only.
    #[arg(long, value_name = "N", conflicts_with = "psk")]
    pub seq_limit: Option<u64>,
    /// Start at PN 1 although KEYFILE.used says this key has sent and --state-dir holds no
    /// state for it: only for a key you know is new.
    #[arg(long, conflicts_with = "psk")]
    pub i_know_this_key_is_new: bool,
    /// Replay window of the receive SAs (0: only increasing PNs).
    #[arg(long, default_value_t = 0, value_name = "N")]
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
}

impl Args {
    /// The same key options as `macsec up`, whose key sources the gateway shares.
    fn as_up(&self) -> UpArgs {
        UpArgs {
            iface: self.protected.clone(),
            tap: self.plain.clone(),
            profile: self.profile.clone(),
            keys: self.keys.clone(),
            psk: self.psk.clone(),
            keyserver: self.keyserver.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            ca: self.ca.clone(),
            segment: self.segment.clone(),
            keyserver_name: self.keyserver_name.clone(),
            peers: self.peers.clone(),
            an: self.an,
            priority: self.priority,
            rekey_seconds: self.rekey_seconds,
            pn_threshold: self.pn_threshold,
            hello_seconds: self.hello_seconds,
            life_seconds: self.life_seconds,
            sak_retire_seconds: self.sak_retire_seconds,
            ramp_up_ms: self.ramp_up_ms,
            ramp_up_count: self.ramp_up_count,
            state_dir: self.state_dir.clone(),
            reserve_block: self.reserve_block,
            seq_limit: self.seq_limit,
            i_know_this_key_is_new: self.i_know_this_key_is_new,
            replay_window: self.replay_window,
            events: self.events.clone(),
            run_dir: self.run_dir.clone(),
            provider: self.provider,
            json: self.json,
        }
    }
}

pub fn run(a: Args) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let profile = match parse_profile(&a.profile)? {
        Profile::Macsec(m) => m,
        Profile::IvnAe(p) => return run_ivnae(a, json, p),
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
    // Both ports exist, before any key is loaded (errors name the option).
    lab::iface_facts_of("--protected", &a.protected)?;
    lab::iface_facts_of("--plain", &a.plain)?;
    let prov = provider(a.provider, Profile::Macsec(profile))?;
    let up = a.as_up();
    let mut source: Box<dyn KeySource> = match (&a.psk, &a.keyserver) {
        (Some(file), _) => mka_source(&up, profile, Some(file))?,
        (None, Some(_)) => mka_source(&up, profile, None)?,
        (None, None) => static_source(&up, profile)?,
    };
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
    };
    let stop = stop_on_signal()?;
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
) -> Result<ExitCode> {
    let Some(keys) = a.keys.clone() else {
        return Err(usage(
            "IVN-AE gateways use static keys: give --keys FILE (this gateway's transmit key) and \
             --rx-keys ID:FILE per peer (MKA agrees MACsec keys only)",
        ));
    };
    if !a.peers.is_empty() || a.pcap.is_some() {
        return Err(usage(
            "--peer and --pcap are for MACsec profiles; IVN-AE peers are named by --rx-keys ID:FILE",
        ));
    }
    let Some(state_dir) = a.state_dir.clone() else {
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
    let cfg = ivnsec_lab::gateway::IvnAeGatewayConfig {
        plain: a.plain.clone(),
        protected: a.protected.clone(),
        profile,
        provider: prov,
        keys,
        key_id: a.key_id,
        rx_keys,
        state_dir,
        reserve_block: a.reserve_block,
        seq_limit: a.seq_limit,
        confirm_new_key: a.i_know_this_key_is_new,
        replay_window: a.replay_window,
        run_dir: a
            .run_dir
            .clone()
            .unwrap_or_else(ivnsec_net::testbed::default_state_dir),
        events: a.events.clone(),
    };
    let stop = stop_on_signal()?;
    let summary = ivnsec_lab::gateway::run(&cfg, stop)?;
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
