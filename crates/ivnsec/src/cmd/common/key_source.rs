//! The key-source options of `macsec up` and `gateway` (static keys, MKA on a PSK, MKA on the
//! key server's CAK, and the nonce state), and their mapping onto the library's
//! [`KeySourceSettings`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use ivnsec_node::dot1x::tls::{EapTlsSettings, Versions};
use ivnsec_node::keys::highwater;
use ivnsec_node::macsec::dot1x::{
    AuthenticatorSettings, Dot1xSettings, PaeTimers, Role, SupplicantSettings,
};
use ivnsec_node::macsec::mka::MkaSettings;
use ivnsec_node::macsec::source::{
    KeyOrigin, KeySourceSettings, KeyserverSettings, StaticSettings,
};

use super::ReplayCheckpointArgs;
use crate::error::{parse_mac, usage};

/// Where the keys of a SecY come from, and the nonce state (`macsec up`, `gateway`): static
/// keys, MKA on a PSK, or MKA on the key server's CAK.
#[derive(clap::Args, Debug)]
pub struct KeySourceArgs {
    /// Static keys: the CA's SAK as a key file (`ivnsec keygen --profile PROFILE --out FILE`).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present_any = ["psk", "keyserver", "eap_tls", "authenticator"],
        conflicts_with_all = ["psk", "keyserver", "eap_tls", "authenticator"]
    )]
    pub keys: Option<PathBuf>,
    /// MKA with a pre-shared CAK: TOML with `cak` and `ckn` in hex, mode 0600 (`ivnsec keygen
    /// --mka --out FILE`). The SAKs are agreed and rotated; peers are learned.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// MKA with the CAK from the vehicle's key server (`ivnsec keyserver`) at ADDR (host:port),
    /// over mutual TLS 1.3 with --cert, --key and --ca; fetched again when the key server
    /// pushes a new one (docs/keys.md).
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with_all = ["psk", "eap_tls", "authenticator"],
        requires_all = ["cert", "key", "ca"]
    )]
    pub keyserver: Option<String>,
    /// With --keyserver or --eap-tls: this member's certificate (`ivnsec pki issue`:
    /// D/ecu/NAME.pem).
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// With --keyserver or --eap-tls: this member's private key (D/ecu/NAME.key, mode 0600).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// With --keyserver or --eap-tls: the vehicle CA that issued the server's certificate
    /// (D/ca.pem).
    #[arg(long, value_name = "FILE")]
    pub ca: Option<PathBuf>,
    /// 802.1X supplicant: authenticate this port to the authenticator on the link with
    /// EAP-TLS (--cert, --key, --ca); MKA runs on the CAK derived from EAP (IEEE 802.1X-2020
    /// 6.2.2), or on the group CAK the authenticator hands out (docs/8021x.md).
    #[arg(
        long,
        conflicts_with_all = ["psk", "keyserver", "authenticator"],
        requires_all = ["cert", "key", "ca"]
    )]
    pub eap_tls: bool,
    /// With --eap-tls: the EAP identity (default: the name of the --cert file without its
    /// extension, the ECU name of `ivnsec pki`).
    #[arg(long, value_name = "NAME", requires = "eap_tls")]
    pub identity: Option<String>,
    /// With --eap-tls: the name the EAP server's (RADIUS server's) certificate must carry.
    /// Default: its chain to --ca is checked, not its name.
    #[arg(long, value_name = "NAME", requires = "eap_tls")]
    pub eap_server_name: Option<String>,
    /// With --eap-tls: the CRL of --ca the EAP server's certificate is checked against
    /// (D/crl.pem).
    #[arg(long, value_name = "FILE", requires = "eap_tls")]
    pub crl: Option<PathBuf>,
    /// 802.1X authenticator: authenticate the supplicants on the link with EAP through the
    /// RADIUS server at --radius; MKA runs with each on the CAK derived from EAP. This end is
    /// normally the key server (give it the lowest --priority).
    #[arg(
        long,
        conflicts_with_all = ["psk", "keyserver", "eap_tls"],
        requires_all = ["radius", "radius_secret"]
    )]
    pub authenticator: bool,
    /// With --authenticator: the RADIUS server, HOST[:PORT] (port 1812 when omitted).
    #[arg(long, value_name = "ADDR", requires = "authenticator")]
    pub radius: Option<String>,
    /// With --authenticator: the file holding the RADIUS shared secret of this client (its
    /// entry in the server's clients.conf), mode 0600.
    #[arg(long, value_name = "FILE", requires = "authenticator")]
    pub radius_secret: Option<PathBuf>,
    /// With --authenticator: one group CA for every supplicant on this port: a random group
    /// CAK handed to each authenticated supplicant by MKA's Distributed CAK (IEEE 802.1X-2020
    /// 9.8), so that all of them reach each other. Without it the port keeps one pairwise CA:
    /// the supplicant authenticated last.
    #[arg(long, requires = "authenticator")]
    pub group_ca: bool,
    /// With --authenticator: supplicants served at once on this port (1 to 1024).
    #[arg(long, default_value_t = 16, value_name = "N", requires = "authenticator",
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub max_supplicants: u16,
    /// With --authenticator: re-authenticate every supplicant every S seconds (each success
    /// gives a new CAK, handed over without loss). Default: never.
    #[arg(long, value_name = "S", requires = "authenticator")]
    pub reauth_seconds: Option<f64>,
    /// With --authenticator: RADIUS retransmission timeout in seconds.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "S",
        requires = "authenticator"
    )]
    pub radius_timeout_seconds: f64,
    /// With --authenticator: RADIUS tries per request before the server counts as unreachable.
    #[arg(long, default_value_t = 3, value_name = "N", requires = "authenticator",
          value_parser = clap::value_parser!(u32).range(1..=10))]
    pub radius_tries: u32,
    /// 802.1X: the fallback CAK (a PSK file as --psk takes, the same on every member): MKA
    /// runs on it from the start and whenever EAP fails or the RADIUS server is unreachable,
    /// so the link stays protected; EAP-derived CAKs replace it without loss.
    #[arg(long, value_name = "FILE")]
    pub fallback_psk: Option<PathBuf>,
    /// 802.1X: supplicant: EAPOL-Start every S seconds until an authenticator answers (the
    /// standard's 30).
    #[arg(long, default_value_t = 30.0, value_name = "S")]
    pub eap_start_seconds: f64,
    /// 802.1X: after a failure the supplicant stays quiet, and the authenticator ignores that
    /// supplicant, for S seconds (the standard's 60).
    #[arg(long, default_value_t = 60.0, value_name = "S")]
    pub eap_held_seconds: f64,
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
    #[arg(long = "peer", value_name = "MAC", conflicts_with_all = ["psk", "keyserver", "eap_tls", "authenticator"])]
    pub peers: Vec<String>,
    /// Association number of the static SAs (0..=3).
    #[arg(long, default_value_t = 0, value_name = "AN", conflicts_with_all = ["psk", "keyserver", "eap_tls", "authenticator"])]
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
    /// PNs reserved per state write, 1 to 1048576 (as `ivnsec send --reserve-block`): the
    /// first block; reservations less than 100 ms apart double it, up to 2^20
    /// (docs/nonce-safety.md).
    #[arg(
        long,
        default_value_t = highwater::DEFAULT_BLOCK,
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=highwater::MAX_BLOCK)
    )]
    pub reserve_block: u64,
    /// Highest PN this key may carry (below the suite's own limit); sending stops when it is
    /// used and the command exits 1. Static keys only.
    #[arg(long, value_name = "N", conflicts_with_all = ["psk", "keyserver", "eap_tls", "authenticator"])]
    pub seq_limit: Option<u64>,
    /// Start at PN 1 although KEYFILE.used says this key has sent under this SA and
    /// --state-dir holds no state for it (as `ivnsec send`): only for a key you know is new.
    #[arg(long, conflicts_with_all = ["psk", "keyserver", "eap_tls", "authenticator"])]
    pub i_know_this_key_is_new: bool,
    /// Static keys: how far the receive SAs' acceptance marks in --state-dir move ahead.
    #[command(flatten)]
    pub checkpoint: ReplayCheckpointArgs,
}

impl KeySourceArgs {
    /// The library's settings: MKA's timers checked, the peers parsed.
    pub fn settings(&self) -> Result<KeySourceSettings> {
        let origin = match (&self.psk, &self.keyserver) {
            (Some(file), _) => KeyOrigin::Psk {
                file: file.clone(),
                mka: self.mka_settings()?,
            },
            (None, Some(addr)) => KeyOrigin::Keyserver {
                server: self.keyserver_settings(addr)?,
                mka: self.mka_settings()?,
            },
            (None, None) if self.eap_tls || self.authenticator => KeyOrigin::Dot1x {
                dot1x: self.dot1x_settings()?,
                mka: self.mka_settings()?,
            },
            (None, None) => KeyOrigin::Static(self.static_settings()?),
        };
        if self.fallback_psk.is_some() && !(self.eap_tls || self.authenticator) {
            return Err(usage(
                "--fallback-psk is the fallback CAK of 802.1X: give it with --eap-tls or \
                 --authenticator (for MKA on a PSK alone, --psk FILE)",
            ));
        }
        Ok(KeySourceSettings {
            origin,
            state_dir: self.state_dir.clone(),
            reserve_block: self.reserve_block,
        })
    }

    fn mka_settings(&self) -> Result<MkaSettings> {
        Ok(MkaSettings {
            priority: self.priority,
            hello: seconds("--hello-seconds", self.hello_seconds)?,
            life: seconds("--life-seconds", self.life_seconds)?,
            sak_retire: seconds("--sak-retire-seconds", self.sak_retire_seconds)?,
            rekey: self
                .rekey_seconds
                .map(|s| seconds("--rekey-seconds", s))
                .transpose()?,
            pn_threshold: self.pn_threshold,
            ramp_up: self
                .ramp_up_ms
                .map(|ms| (Duration::from_millis(ms), self.ramp_up_count)),
        })
    }

    fn dot1x_settings(&self) -> Result<Dot1xSettings> {
        let role = if self.authenticator {
            let (Some(radius), Some(secret)) = (&self.radius, &self.radius_secret) else {
                return Err(usage("--authenticator needs --radius and --radius-secret"));
            };
            Role::Authenticator(AuthenticatorSettings {
                radius: radius.clone(),
                secret: secret.clone(),
                group_ca: self.group_ca,
                max_supplicants: usize::from(self.max_supplicants),
                radius_timeout: seconds("--radius-timeout-seconds", self.radius_timeout_seconds)?,
                radius_tries: self.radius_tries,
            })
        } else {
            let (Some(cert), Some(key), Some(ca)) = (&self.cert, &self.key, &self.ca) else {
                return Err(usage("--eap-tls needs --cert, --key and --ca"));
            };
            Role::Supplicant(SupplicantSettings {
                tls: EapTlsSettings {
                    ca: ca.clone(),
                    cert: cert.clone(),
                    key: key.clone(),
                    crl: self.crl.clone(),
                    server_name: self.eap_server_name.clone(),
                    versions: Versions::default(),
                },
                identity: self.identity.clone(),
            })
        };
        Ok(Dot1xSettings {
            role,
            fallback: self.fallback_psk.clone(),
            timers: PaeTimers {
                start: seconds("--eap-start-seconds", self.eap_start_seconds)?,
                held: seconds("--eap-held-seconds", self.eap_held_seconds)?,
                auth: PaeTimers::default().auth,
                reauth: self
                    .reauth_seconds
                    .map(|s| seconds("--reauth-seconds", s))
                    .transpose()?,
            },
        })
    }

    fn keyserver_settings(&self, addr: &str) -> Result<KeyserverSettings> {
        let (Some(cert), Some(key), Some(ca)) = (&self.cert, &self.key, &self.ca) else {
            return Err(usage("--keyserver needs --cert, --key and --ca"));
        };
        Ok(KeyserverSettings {
            addr: addr.to_string(),
            cert: cert.clone(),
            key: key.clone(),
            ca: ca.clone(),
            segment: self.segment.clone(),
            server_name: self.keyserver_name.clone(),
        })
    }

    fn static_settings(&self) -> Result<StaticSettings> {
        let Some(key_file) = self.keys.clone() else {
            return Err(usage("give --keys FILE (static keys) or --psk FILE (MKA)"));
        };
        Ok(StaticSettings {
            key_file,
            peers: self
                .peers
                .iter()
                .map(|p| parse_mac("--peer", p))
                .collect::<Result<_>>()?,
            an: self.an,
            seq_limit: self.seq_limit,
            confirm_new_key: self.i_know_this_key_is_new,
            rx_checkpoint: self.checkpoint.checkpoint()?,
        })
    }
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
