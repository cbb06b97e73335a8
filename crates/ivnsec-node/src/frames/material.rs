//! The security association of `frame protect|verify` and `pcap verify`, built from its options:
//! the options every family shares ([`SaSettings`]: the typed profile, keys in hex, provider),
//! the options of one family (MACsec, ESP, SecOC), their checks and messages, and the one
//! [`AnyTx`] / [`AnyRx`] the core's SA factory makes of them ([`AnyTx::new`],
//! [`AnyRx::new`]). The family is the profile's ([`Profile::family`]); keys are parsed into
//! zeroizing buffers and live there only until the SA has scheduled them.

use std::net::IpAddr;

use anyhow::Result;
use ivnsec_core::crypto::{AEAD_NONCE_LEN, CryptoProvider};
use ivnsec_core::profile::{Family, MacsecProfile, NamedProfile, Profile, ProfileError};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::any::{
    AnyProtectError, AnyRx, AnyTx, EspOptions, IvnAeOptions, MacsecOptions, SaKeys, SaOptions,
    SecocOptions,
};
use ivnsec_core::sa::esp::{self, EspAlg, EspMode, SpiRange};
use ivnsec_core::sa::macsec::{CipherSuite, ValidateFrames};
use ivnsec_core::sa::secoc::{
    DEFAULT_FULL_FV_BITS, DEFAULT_FV_BITS, DEFAULT_MAC_BITS, SecocAlg, SecocRxOptions,
};
use ivnsec_core::suite::{IvnAeProfile, Suite};
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_crypto::ProviderChoice;
use zeroize::Zeroizing;

use crate::error::{parse_hex, usage};

/// What `frame protect|verify` (`takes_secoc`) and `pcap verify` say of a `--profile` name
/// that is no profile, in the words of the family its prefix names
/// ([`ProfileError::family`]): the MACsec, ESP and SecOC names each family takes, or what the
/// IVN-AE parser says of any other name (`pcap verify` takes no SecOC and reads a `secoc-`
/// name as IVN-AE; no frame tool takes SOME/IP).
pub fn profile_error(e: &ProfileError, takes_secoc: bool) -> String {
    let name = e.name();
    match e.family() {
        Family::Macsec => unknown_macsec(name),
        Family::Esp => {
            let names: Vec<&str> = EspAlg::ALL.iter().map(|a| a.name()).collect();
            format!(
                "--profile {name}: unknown ESP profile (one of {})",
                names.join(", ")
            )
        }
        Family::Secoc if takes_secoc => {
            let names: Vec<&str> = SecocAlg::ALL.iter().map(|a| a.name()).collect();
            format!(
                "--profile {name}: unknown SecOC profile (one of {})",
                names.join(", ")
            )
        }
        Family::IvnAe => match e.ivnae() {
            Some(why) => format!("--profile {name}: {why} (see `ivnsec suites`)"),
            None => no_frame_suite(name),
        },
        Family::Secoc | Family::Someip => no_frame_suite(name),
    }
}

/// A MACsec name other than a suite's bare name.
fn unknown_macsec(name: &str) -> String {
    format!(
        "--profile {name}: unknown MACsec profile (macsec-gcm-aes-128, macsec-gcm-aes-256, macsec-gcm-aes-xpn-128, macsec-gcm-aes-xpn-256)"
    )
}

/// A profile the frame tools take no SA of, read as an IVN-AE name (which it is not).
pub(crate) fn no_frame_suite(name: &str) -> String {
    format!("--profile {name}: unknown suite (see `ivnsec suites`)")
}

/// What one input of a family may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The unit's name in messages (`FRAME`, `PACKET`, `PDU`).
    pub unit: &'static str,
    /// Largest plain unit accepted.
    pub max_plain: usize,
    /// Most the protection adds (so the largest protected unit is `max_plain + max_overhead`).
    pub max_overhead: usize,
}

impl Limits {
    /// The limits of `family`: a jumbo frame for IVN-AE and MACsec, the IPv4 total length
    /// limit for ESP packets and SecOC PDUs (SecOC over TP carries large PDUs); SOME/IP, which
    /// no frame tool takes, that of a UDP datagram.
    pub const fn of(family: Family) -> Limits {
        match family {
            // 12 header bytes, up to 16 of CBC padding, a tag of at most 32 (room to spare).
            Family::IvnAe => Limits {
                unit: "FRAME",
                max_plain: 9216,
                max_overhead: 128,
            },
            // SecTAG with SCI plus ICV.
            Family::Macsec => Limits {
                unit: "FRAME",
                max_plain: 9216,
                max_overhead: 32,
            },
            Family::Esp => Limits {
                unit: "PACKET",
                max_plain: 65535,
                max_overhead: esp::MAX_OVERHEAD,
            },
            // 64 FV bits and 256 MAC bits.
            Family::Secoc => Limits {
                unit: "PDU",
                max_plain: 65535,
                max_overhead: 40,
            },
            // The SOME/IP header, freshness and tag.
            Family::Someip => Limits {
                unit: "MESSAGE",
                max_plain: 65535,
                max_overhead: 64,
            },
        }
    }

    /// Largest protected unit accepted.
    pub const fn max_protected(self) -> usize {
        self.max_plain + self.max_overhead
    }
}

/// Why one input gets no result: its `DROP <reason>` answer and a sentence for stderr.
#[derive(Debug)]
pub struct Refusal {
    pub reason: DropReason,
    pub detail: String,
}

impl Refusal {
    pub fn new(reason: DropReason, detail: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            detail: detail.into(),
        }
    }
}

/// The SA options every family shares, as given (`--profile`, `--key`, …). Key text is held in
/// zeroizing buffers; there is no `Debug`.
pub struct SaSettings {
    /// IVN-AE suite (with `/auth` or `/conf`), or a `macsec-…`, `esp-…`, `secoc-…` profile, as
    /// named (messages echo the name).
    pub profile: NamedProfile,
    /// Cipher key in hex.
    pub key: Option<Zeroizing<String>>,
    /// HMAC key in hex (IVN-AE).
    pub mac_key: Option<Zeroizing<String>>,
    /// IVN-AE per-SA IV; ESP the IV of the first packet; in hex.
    pub iv: Option<String>,
    /// IVN-AE key id.
    pub key_id: Option<u8>,
    /// IVN-AE truncated HMAC tag length.
    pub tag_len: Option<usize>,
    pub provider: ProviderChoice,
}

impl SaSettings {
    /// Settings of `profile` with nothing else given.
    pub fn new(profile: NamedProfile) -> SaSettings {
        SaSettings {
            profile,
            key: None,
            mac_key: None,
            iv: None,
            key_id: None,
            tag_len: None,
            provider: ProviderChoice::default(),
        }
    }
}

/// MACsec options of a transmit SA.
#[derive(Clone, Copy, Debug, Default)]
pub struct MacsecTxSettings {
    pub sci: Option<[u8; 8]>,
    pub an: Option<u8>,
    /// PN of the first frame.
    pub pn: Option<u64>,
    pub integrity_only: bool,
    pub no_sci: bool,
    pub es: bool,
    pub scb: bool,
    pub ssci: Option<[u8; 4]>,
    pub salt: Option<[u8; 12]>,
}

/// MACsec options of a receive SA.
#[derive(Clone, Copy, Debug)]
pub struct MacsecRxSettings {
    pub sci: Option<[u8; 8]>,
    pub an: Option<u8>,
    pub ssci: Option<[u8; 4]>,
    pub salt: Option<[u8; 12]>,
    pub lowest_pn: u64,
    pub validate: ValidateFrames,
}

impl Default for MacsecRxSettings {
    fn default() -> Self {
        MacsecRxSettings {
            sci: None,
            an: None,
            ssci: None,
            salt: None,
            lowest_pn: 1,
            validate: ValidateFrames::Strict,
        }
    }
}

/// ESP encapsulation mode, as chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EspModeChoice {
    #[default]
    Transport,
    Tunnel,
}

/// ESP options of an outbound SA.
#[derive(Default)]
pub struct EspTxSettings {
    pub spi: Option<u32>,
    /// HMAC-SHA-256 key in hex.
    pub auth_key: Option<Zeroizing<String>>,
    pub esn: bool,
    pub mode: Option<EspModeChoice>,
    pub tunnel_src: Option<IpAddr>,
    pub tunnel_dst: Option<IpAddr>,
}

/// ESP options of an inbound SA.
#[derive(Default)]
pub struct EspRxSettings {
    pub spi: Option<u32>,
    /// HMAC-SHA-256 key in hex.
    pub auth_key: Option<Zeroizing<String>>,
    pub esn: bool,
}

/// SecOC bit lengths (defaults: those of [`SecocParams::new`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SecocLengths {
    pub fv_bits: Option<u8>,
    pub mac_bits: Option<u16>,
    pub full_fv_bits: Option<u8>,
}

/// SecOC options of an outbound SA.
#[derive(Clone, Copy, Debug, Default)]
pub struct SecocTxSettings {
    pub data_id: Option<u16>,
    /// Full freshness value of the first PDU.
    pub freshness: Option<u64>,
    pub lengths: SecocLengths,
}

/// SecOC options of an inbound SA.
#[derive(Clone, Copy, Debug, Default)]
pub struct SecocRxSettings {
    pub data_id: Option<u16>,
    pub lengths: SecocLengths,
    pub last_freshness: Option<u64>,
    pub acceptance_window: Option<u64>,
    pub verify_attempts: Option<u16>,
}

/// Everything an outbound SA of any family is made from; each family reads its own options.
pub struct ProtectSettings {
    pub sa: SaSettings,
    /// First sequence number (IVN-AE, ESP).
    pub seq: Option<u64>,
    pub macsec: MacsecTxSettings,
    pub esp: EspTxSettings,
    pub secoc: SecocTxSettings,
}

impl ProtectSettings {
    /// Settings of the SA `sa` with no family options given.
    pub fn new(sa: SaSettings) -> ProtectSettings {
        ProtectSettings {
            sa,
            seq: None,
            macsec: MacsecTxSettings::default(),
            esp: EspTxSettings::default(),
            secoc: SecocTxSettings::default(),
        }
    }
}

/// Everything an inbound SA of any family is made from; each family reads its own options.
pub struct VerifySettings {
    pub sa: SaSettings,
    /// Replay window (IVN-AE, MACsec, ESP).
    pub replay_window: u32,
    /// IVN-AE: also take version 1 frames (`--accept-ivnae-v1`, a peer of the previous
    /// release); without it they are dropped as `bad_version`.
    pub accept_ivnae_v1: bool,
    pub macsec: MacsecRxSettings,
    pub esp: EspRxSettings,
    pub secoc: SecocRxSettings,
}

impl VerifySettings {
    /// Settings of the SA `sa` with no family options given (replay window 0).
    pub fn new(sa: SaSettings) -> VerifySettings {
        VerifySettings {
            sa,
            replay_window: 0,
            accept_ivnae_v1: false,
            macsec: MacsecRxSettings::default(),
            esp: EspRxSettings::default(),
            secoc: SecocRxSettings::default(),
        }
    }
}

fn hex_key(name: &str, hex: Option<&Zeroizing<String>>) -> Result<Zeroizing<Vec<u8>>> {
    Ok(Zeroizing::new(match hex {
        Some(k) => parse_hex(name, k)?,
        None => Vec::new(),
    }))
}

fn required_key(name: &str, hex: Option<&Zeroizing<String>>) -> Option<Result<Zeroizing<Vec<u8>>>> {
    hex.map(|k| hex_key(name, Some(k)))
}

/// An outbound SA with what protecting through it needs beyond the SA.
pub struct Sender {
    tx: AnyTx,
    /// ESP `--iv`: the IV of the next packet (the AEADs count it up; CBC takes fresh random IVs
    /// after the first, so none is kept).
    iv: Option<Vec<u8>>,
    /// ESP: the transform's IVs must be unpredictable (CBC).
    random_iv: bool,
    /// MACsec `--es`: the SCI every frame's source MAC must give.
    es_sci: Option<Sci>,
    /// What to say on stderr about IVs before the first unit.
    note: Option<String>,
    /// A warning for stderr about the SA's settings (an ESP SPI in 1-255), before the note.
    warning: Option<String>,
}

/// What protecting one unit gave: the protected length, or a refusal of this unit alone (the
/// batch goes on). An `Err` of the outer `Result` stops everything: the SA cannot go on.
pub type Protected = std::result::Result<usize, Refusal>;

impl Sender {
    /// The SA's family.
    pub fn family(&self) -> Family {
        self.tx.family()
    }

    /// The note about IVs, if any (the IV used when none was given).
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// A warning about the SA's settings, if any (an ESP SPI that RFC 4303 reserves).
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// Room a buffer needs to protect a `plain_len`-byte unit.
    pub fn protected_len(&self, plain_len: usize) -> usize {
        self.tx.protected_len(plain_len)
    }

    /// The sequence number / PN / freshness value of the next unit.
    pub fn next_seq(&self) -> Option<u64> {
        self.tx.next_seq()
    }

    /// Protects `plain` into `buf` (which needs [`protected_len`](Self::protected_len) bytes);
    /// `what` names the input in the error that stops the SA.
    pub fn protect(&mut self, what: &str, plain: &[u8], buf: &mut [u8]) -> Result<Protected> {
        // ES = 1: the receiver takes the SCI from the source MAC, so it must give this SCI.
        if let Some(sci) = self.es_sci
            && let Some(src) = plain.get(6..12).and_then(|s| <[u8; 6]>::try_from(s).ok())
            && Sci::end_station(MacAddr(src)) != sci
        {
            return Ok(Err(Refusal::new(
                DropReason::ForeignSource,
                format!(
                    "--es needs --sci = source MAC ‖ 0001, but the source MAC is {}",
                    hex::encode(src)
                ),
            )));
        }
        let Some(dst) = buf.get_mut(..plain.len()) else {
            return Ok(Err(Refusal::new(
                DropReason::Oversize,
                format!("{} bytes do not fit the buffer", plain.len()),
            )));
        };
        dst.copy_from_slice(plain);
        match self
            .tx
            .protect_in_place_with_iv(buf, plain.len(), self.iv.as_deref())
        {
            Ok(n) => {
                self.iv = match self.iv.take() {
                    Some(v) if !self.random_iv => Some(increment(v)),
                    _ => None,
                };
                Ok(Ok(n))
            }
            Err(e) => refusal_or_stop(what, e),
        }
    }
}

fn refusal_or_stop(what: &str, e: AnyProtectError) -> Result<Protected> {
    match e.unit_refusal() {
        Some(reason) => Ok(Err(Refusal::new(reason, e.to_string()))),
        // Exhausted numbers or a failed provider: the SA cannot go on.
        None => Err(usage(format!("{what}: {e}"))),
    }
}

/// The IV as a big-endian counter, plus one (wrapping).
fn increment(mut v: Vec<u8>) -> Vec<u8> {
    for b in v.iter_mut().rev() {
        *b = b.wrapping_add(1);
        if *b != 0 {
            break;
        }
    }
    v
}

/// The outbound SA the settings describe, for the family of its profile. Each family checks
/// its own options, in the order and with the messages of `ivnsec frame protect`.
pub fn sender(s: &ProtectSettings) -> Result<Sender> {
    match s.sa.profile.profile() {
        // SOME/IP is no frame profile: it is refused as the IVN-AE name it is not.
        Profile::IvnAe(_) | Profile::Someip(_) => ivnae_sender(s),
        Profile::Macsec(m) => macsec_sender(s, m),
        Profile::Esp(alg) => esp_sender(s, alg),
        Profile::Secoc(alg) => secoc_sender(s, alg),
    }
}

/// The inbound SA the settings describe, for the family of its profile.
pub fn receiver(s: &VerifySettings) -> Result<AnyRx> {
    let profile = s.sa.profile.profile();
    if s.accept_ivnae_v1 && !matches!(profile, Profile::IvnAe(_) | Profile::Someip(_)) {
        return Err(usage(format!(
            "--accept-ivnae-v1 is an IVN-AE option; --profile {} does not take it",
            s.sa.profile
        )));
    }
    let refused = |e: ivnsec_core::sa::any::SaBuildError| usage(e.to_string());
    match profile {
        Profile::IvnAe(_) | Profile::Someip(_) => {
            let (profile, m, provider) = ivnae_parts(&s.sa)?;
            let opts = SaOptions {
                ivnae: IvnAeOptions {
                    accept_v1: s.accept_ivnae_v1,
                    ..ivnae_options(&s.sa)
                },
                ..SaOptions::default()
            };
            AnyRx::new(
                provider,
                Profile::IvnAe(profile),
                m.keys(),
                &opts,
                s.replay_window,
            )
            .map_err(refused)
        }
        Profile::Macsec(mp) => {
            let o = &s.macsec;
            let m = macsec_material(&s.sa, mp, o.sci, o.an, o.ssci, o.salt)?;
            let opts = SaOptions {
                macsec: MacsecOptions {
                    validate: o.validate,
                    lowest_pn: o.lowest_pn,
                    ..m.options()
                },
                ..SaOptions::default()
            };
            AnyRx::new(m.provider, profile, m.keys(), &opts, s.replay_window).map_err(refused)
        }
        Profile::Esp(alg) => {
            let m = esp_material(&s.sa, alg, s.esp.auth_key.as_ref())?;
            if s.sa.iv.is_some() {
                return Err(usage(
                    "--iv is for protect; ESP carries the IV in each packet",
                ));
            }
            let opts = SaOptions {
                esp: EspOptions {
                    spi: spi(s.esp.spi)?,
                    esn: s.esp.esn,
                    mode: EspMode::Transport,
                },
                ..SaOptions::default()
            };
            AnyRx::new(m.provider, profile, m.keys(), &opts, s.replay_window).map_err(refused)
        }
        Profile::Secoc(alg) => {
            let o = &s.secoc;
            let m = secoc_material(&s.sa, alg, o.data_id)?;
            let rx = SecocRxOptions {
                last_freshness: o.last_freshness.unwrap_or(0),
                acceptance_window: o.acceptance_window,
                verify_attempts: o.verify_attempts.unwrap_or(0),
            };
            let opts = SaOptions {
                secoc: SecocOptions {
                    rx,
                    ..m.options(o.lengths)
                },
                ..SaOptions::default()
            };
            AnyRx::new(m.provider, profile, m.keys(), &opts, s.replay_window).map_err(refused)
        }
    }
}

fn sender_of(tx: AnyTx) -> Sender {
    Sender {
        tx,
        iv: None,
        random_iv: false,
        es_sci: None,
        note: None,
        warning: None,
    }
}

// ---- IVN-AE -------------------------------------------------------------------------------

struct IvnAeMaterial {
    key: Zeroizing<Vec<u8>>,
    mac_key: Zeroizing<Vec<u8>>,
    iv: [u8; AEAD_NONCE_LEN],
}

impl IvnAeMaterial {
    fn keys(&self) -> SaKeys<'_> {
        SaKeys {
            key: &self.key,
            mac_key: &self.mac_key,
            iv: self.iv,
        }
    }
}

/// Profile, keys and provider of an IVN-AE SA.
fn ivnae_parts(sa: &SaSettings) -> Result<(IvnAeProfile, IvnAeMaterial, &'static CryptoProvider)> {
    let Profile::IvnAe(profile) = sa.profile.profile() else {
        return Err(usage(no_frame_suite(sa.profile.name())));
    };
    let key = hex_key("--key", sa.key.as_ref())?;
    let mac_key = hex_key("--mac-key", sa.mac_key.as_ref())?;
    let iv = match &sa.iv {
        None => [0; AEAD_NONCE_LEN],
        Some(s) => {
            let v = parse_hex("--iv", s)?;
            v.as_slice().try_into().map_err(|_| {
                usage(format!(
                    "--iv must be {AEAD_NONCE_LEN} bytes, got {}",
                    v.len()
                ))
            })?
        }
    };
    let provider = ivnsec_crypto::select_suite(sa.provider, profile.suite)
        .map_err(|e| usage(e.to_string()))?;
    Ok((profile, IvnAeMaterial { key, mac_key, iv }, provider))
}

fn ivnae_options(sa: &SaSettings) -> IvnAeOptions {
    IvnAeOptions {
        key_id: sa.key_id.unwrap_or(0),
        tag_len: sa.tag_len,
        accept_v1: false,
    }
}

fn ivnae_sender(s: &ProtectSettings) -> Result<Sender> {
    let seq = s
        .seq
        .ok_or_else(|| usage("--seq is required for IVN-AE profiles"))?;
    let (profile, m, provider) = ivnae_parts(&s.sa)?;
    let opts = SaOptions {
        ivnae: ivnae_options(&s.sa),
        ..SaOptions::default()
    };
    let tx = AnyTx::new(provider, Profile::IvnAe(profile), m.keys(), &opts, seq)
        .map_err(|e| usage(e.to_string()))?;
    let mut sender = sender_of(tx);
    if s.sa.iv.is_none() && matches!(profile.suite, Suite::Aead(_) | Suite::EncThenMac { .. }) {
        sender.note = Some(format!(
            "frame protect: no --iv given: using the all-zero IV {} (nonce = IV XOR (key id ‖ \
             sequence number)); the receiver needs the same IV, and another sender under this \
             key needs another --key-id",
            hex::encode(m.iv)
        ));
    }
    Ok(sender)
}

// ---- MACsec -------------------------------------------------------------------------------

struct MacsecMaterial {
    suite: CipherSuite,
    key: Zeroizing<Vec<u8>>,
    sci: Sci,
    an: u8,
    ssci: Option<u32>,
    salt: Option<[u8; 12]>,
    provider: &'static CryptoProvider,
}

impl MacsecMaterial {
    fn keys(&self) -> SaKeys<'_> {
        SaKeys {
            key: &self.key,
            mac_key: &[],
            iv: [0; AEAD_NONCE_LEN],
        }
    }

    fn options(&self) -> MacsecOptions {
        MacsecOptions {
            sci: self.sci,
            an: self.an,
            ssci: self.ssci,
            salt: self.salt,
            ..MacsecOptions::default()
        }
    }
}

fn macsec_material(
    sa: &SaSettings,
    profile: MacsecProfile,
    sci: Option<[u8; 8]>,
    an: Option<u8>,
    ssci: Option<[u8; 4]>,
    salt: Option<[u8; 12]>,
) -> Result<MacsecMaterial> {
    // The frame tools take the suite's bare name (integrity only is --integrity-only).
    let suite: CipherSuite = profile.suite;
    if sa.profile.name() != suite.profile() {
        return Err(usage(unknown_macsec(sa.profile.name())));
    }
    for (given, name) in [
        (sa.mac_key.is_some(), "--mac-key"),
        (sa.iv.is_some(), "--iv"),
        (sa.key_id.is_some(), "--key-id"),
        (sa.tag_len.is_some(), "--tag-len"),
    ] {
        if given {
            return Err(usage(format!(
                "{name} is an IVN-AE option; MACsec profiles do not take it"
            )));
        }
    }
    let key = required_key("--key", sa.key.as_ref())
        .ok_or_else(|| usage(format!("{suite} needs --key")))??;
    let sci = Sci(sci.ok_or_else(|| usage("MACsec profiles need --sci (8 bytes hex)"))?);
    let an = an.ok_or_else(|| usage("MACsec profiles need --an (0-3)"))?;
    let ssci = ssci.map(u32::from_be_bytes);
    if suite.is_xpn() && (ssci.is_none() || salt.is_none()) {
        return Err(usage(format!(
            "{suite} needs --ssci (4 bytes hex) and --salt (12 bytes hex)"
        )));
    }
    if !suite.is_xpn() && (ssci.is_some() || salt.is_some()) {
        return Err(usage(format!(
            "{suite} takes no --ssci/--salt (XPN profiles only)"
        )));
    }
    let provider = ivnsec_crypto::select_suite(sa.provider, Suite::Aead(suite.aead()))
        .map_err(|e| usage(e.to_string()))?;
    Ok(MacsecMaterial {
        suite,
        key,
        sci,
        an,
        ssci,
        salt,
        provider,
    })
}

fn macsec_sender(s: &ProtectSettings, profile: MacsecProfile) -> Result<Sender> {
    let o = &s.macsec;
    let m = macsec_material(&s.sa, profile, o.sci, o.an, o.ssci, o.salt)?;
    let pn =
        o.pn.ok_or_else(|| usage("MACsec protect needs --pn (≥ 1)"))?;
    let profile = Profile::Macsec(MacsecProfile {
        suite: m.suite,
        confidentiality: !o.integrity_only,
    });
    let opts = SaOptions {
        macsec: MacsecOptions {
            include_sci: !(o.no_sci || o.es || o.scb),
            es: o.es,
            scb: o.scb,
            ..m.options()
        },
        ..SaOptions::default()
    };
    let tx =
        AnyTx::new(m.provider, profile, m.keys(), &opts, pn).map_err(|e| usage(e.to_string()))?;
    let mut sender = sender_of(tx);
    sender.es_sci = o.es.then_some(m.sci);
    Ok(sender)
}

// ---- ESP ----------------------------------------------------------------------------------

struct EspMaterial {
    alg: EspAlg,
    key: Zeroizing<Vec<u8>>,
    auth_key: Zeroizing<Vec<u8>>,
    provider: &'static CryptoProvider,
}

impl EspMaterial {
    fn keys(&self) -> SaKeys<'_> {
        SaKeys {
            key: &self.key,
            mac_key: &self.auth_key,
            iv: [0; AEAD_NONCE_LEN],
        }
    }
}

fn esp_material(
    sa: &SaSettings,
    alg: EspAlg,
    auth_key: Option<&Zeroizing<String>>,
) -> Result<EspMaterial> {
    for (given, opt) in [
        (sa.mac_key.is_some(), "--mac-key (ESP takes --auth-key)"),
        (sa.key_id.is_some(), "--key-id"),
        (sa.tag_len.is_some(), "--tag-len (the ESP ICV is 16 bytes)"),
    ] {
        if given {
            return Err(usage(format!("{alg} does not take {opt}")));
        }
    }
    let key = hex_key("--key", sa.key.as_ref())?;
    let auth_key = hex_key("--auth-key", auth_key)?;
    let provider =
        ivnsec_crypto::select(sa.provider, Profile::Esp(alg)).map_err(|e| usage(e.to_string()))?;
    Ok(EspMaterial {
        alg,
        key,
        auth_key,
        provider,
    })
}

/// The `--spi` of an SA: required, and never 0, which RFC 4303 §2.1 keeps for local use off
/// the wire. 1-255 are accepted (published vectors and captures carry them); a sender is told
/// about them by [`spi_warning`].
fn spi(spi: Option<u32>) -> Result<u32> {
    let spi = spi.ok_or_else(|| usage("--spi is required for ESP profiles"))?;
    if SpiRange::of(spi) == SpiRange::Local {
        return Err(usage(
            "--spi 0 is reserved for local use and never sent on the wire (RFC 4303 §2.1); \
             give the SA's SPI, 256 or above for a new SA",
        ));
    }
    Ok(spi)
}

/// The warning a sender gets for an SPI in 1-255.
fn spi_warning(spi: u32) -> Option<String> {
    (SpiRange::of(spi) == SpiRange::IanaReserved).then(|| {
        format!(
            "frame protect: warning: SPI {spi} is in 1-255, which RFC 4303 §2.1 reserves for \
             future IANA assignment; some receivers refuse it (choose 256 or above for a new SA)"
        )
    })
}

fn esp_sender(s: &ProtectSettings, alg: EspAlg) -> Result<Sender> {
    let o = &s.esp;
    let m = esp_material(&s.sa, alg, o.auth_key.as_ref())?;
    let seq = s.seq.ok_or_else(|| {
        usage("--seq is required for ESP profiles (the first sequence number, ≥ 1)")
    })?;
    let mode = match (o.mode.unwrap_or_default(), o.tunnel_src, o.tunnel_dst) {
        (EspModeChoice::Transport, None, None) => EspMode::Transport,
        (EspModeChoice::Transport, _, _) => {
            return Err(usage("--tunnel-src/--tunnel-dst need --mode tunnel"));
        }
        (EspModeChoice::Tunnel, Some(src), Some(dst)) => EspMode::Tunnel { src, dst },
        (EspModeChoice::Tunnel, _, _) => {
            return Err(usage("--mode tunnel needs --tunnel-src and --tunnel-dst"));
        }
    };
    let spi = spi(o.spi)?;
    let opts = SaOptions {
        esp: EspOptions {
            spi,
            esn: o.esn,
            mode,
        },
        ..SaOptions::default()
    };
    let tx = AnyTx::new(m.provider, Profile::Esp(alg), m.keys(), &opts, seq)
        .map_err(|e| usage(e.to_string()))?;
    // --iv is the IV of the first packet; the AEADs count up from it (a unique IV per packet),
    // CBC uses fresh random IVs after the first (CBC IVs must be unpredictable).
    let iv =
        s.sa.iv
            .as_deref()
            .map(|h| parse_hex("--iv", h))
            .transpose()?;
    if let Some(v) = &iv
        && v.len() != m.alg.iv_len()
    {
        return Err(usage(format!(
            "--iv must be {} bytes for {}, got {}",
            m.alg.iv_len(),
            m.alg,
            v.len()
        )));
    }
    let note = match (&iv, m.alg.iv_len(), m.alg.random_iv()) {
        (_, 0, _) | (Some(_), _, _) => None,
        (None, _, true) => Some(format!(
            "frame protect: no --iv given: each packet gets a fresh random {}-byte IV (RFC 3602), \
             carried in the packet after the sequence number",
            m.alg.iv_len()
        )),
        (None, n, false) => Some(format!(
            "frame protect: no --iv given: each packet's IV is its sequence number as {n} bytes \
             (RFC 4106 §3.1), the first {}",
            hex::encode(&seq.to_be_bytes()[..n.min(8)])
        )),
    };
    Ok(Sender {
        iv,
        random_iv: m.alg.random_iv(),
        note,
        warning: spi_warning(spi),
        ..sender_of(tx)
    })
}

// ---- SecOC --------------------------------------------------------------------------------

struct SecocMaterial {
    key: Zeroizing<Vec<u8>>,
    data_id: u16,
    provider: &'static CryptoProvider,
}

impl SecocMaterial {
    fn keys(&self) -> SaKeys<'_> {
        SaKeys {
            key: &self.key,
            mac_key: &[],
            iv: [0; AEAD_NONCE_LEN],
        }
    }

    fn options(&self, l: SecocLengths) -> SecocOptions {
        SecocOptions {
            data_id: self.data_id,
            fv_bits: l.fv_bits.unwrap_or(DEFAULT_FV_BITS),
            mac_bits: l.mac_bits.unwrap_or(DEFAULT_MAC_BITS),
            full_fv_bits: l.full_fv_bits.unwrap_or(DEFAULT_FULL_FV_BITS),
            rx: SecocRxOptions::default(),
        }
    }
}

fn secoc_material(sa: &SaSettings, alg: SecocAlg, data_id: Option<u16>) -> Result<SecocMaterial> {
    for (given, opt) in [
        (
            sa.mac_key.is_some(),
            "--mac-key (SecOC takes its MAC key as --key)",
        ),
        (sa.iv.is_some(), "--iv"),
        (sa.key_id.is_some(), "--key-id"),
        (sa.tag_len.is_some(), "--tag-len (SecOC uses --mac-bits)"),
    ] {
        if given {
            return Err(usage(format!("{alg} does not take {opt}")));
        }
    }
    let key = required_key("--key", sa.key.as_ref()).ok_or_else(|| {
        usage(match alg.key_len() {
            Some(n) => format!("{alg} needs --key ({n} bytes hex)"),
            None => format!("{alg} needs --key (hex, at least 1 byte)"),
        })
    })??;
    let data_id = data_id.ok_or_else(|| usage("SecOC profiles need --data-id (0-65535)"))?;
    let provider = ivnsec_crypto::select(sa.provider, Profile::Secoc(alg))
        .map_err(|e| usage(e.to_string()))?;
    Ok(SecocMaterial {
        key,
        data_id,
        provider,
    })
}

fn secoc_sender(s: &ProtectSettings, alg: SecocAlg) -> Result<Sender> {
    if s.seq.is_some() {
        return Err(usage(
            "SecOC profiles take --freshness (the full freshness value), not --seq",
        ));
    }
    let o = &s.secoc;
    let m = secoc_material(&s.sa, alg, o.data_id)?;
    let first = o.freshness.ok_or_else(|| {
        usage("SecOC protect needs --freshness (the full freshness value of the first PDU, ≥ 1)")
    })?;
    let opts = SaOptions {
        secoc: m.options(o.lengths),
        ..SaOptions::default()
    };
    let tx = AnyTx::new(m.provider, Profile::Secoc(alg), m.keys(), &opts, first)
        .map_err(|e| usage(e.to_string()))?;
    Ok(sender_of(tx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f";
    const ESP_KEY: &str = "000102030405060708090a0b0c0d0e0f10111213";

    fn sa(profile: &str, key: Option<&str>) -> SaSettings {
        SaSettings {
            key: key.map(|k| Zeroizing::new(k.to_string())),
            ..SaSettings::new(profile.parse().unwrap())
        }
    }

    fn with(sa: SaSettings, seq: Option<u64>) -> ProtectSettings {
        ProtectSettings {
            seq,
            ..ProtectSettings::new(sa)
        }
    }

    /// A MACsec transmit SA with SCI 02:00:00:00:00:01 ‖ 0001, AN 0, first PN `pn`.
    fn macsec(pn: u64, es: bool) -> ProtectSettings {
        ProtectSettings {
            macsec: MacsecTxSettings {
                sci: Some([2, 0, 0, 0, 0, 1, 0, 1]),
                an: Some(0),
                pn: Some(pn),
                es,
                ..MacsecTxSettings::default()
            },
            ..with(sa("macsec-gcm-aes-128", Some(KEY)), None)
        }
    }

    /// An ESP (AES-128-GCM) outbound SA, SPI 0x1001, first sequence number `seq`.
    fn esp(seq: u64, iv: Option<&str>) -> ProtectSettings {
        let sa = SaSettings {
            iv: iv.map(str::to_string),
            ..sa("esp-aes128-gcm", Some(ESP_KEY))
        };
        ProtectSettings {
            esp: EspTxSettings {
                spi: Some(0x1001),
                ..EspTxSettings::default()
            },
            ..with(sa, Some(seq))
        }
    }

    /// A SecOC (CMAC) transmit SA for Data ID 1.
    fn secoc(key: Option<&str>, freshness: Option<u64>) -> ProtectSettings {
        ProtectSettings {
            secoc: SecocTxSettings {
                data_id: Some(1),
                freshness,
                ..SecocTxSettings::default()
            },
            ..with(sa("secoc-cmac-aes128", key), None)
        }
    }

    /// The text of a usage error (exit code 2).
    fn err_text<T>(r: Result<T>) -> String {
        match r {
            Ok(_) => panic!("expected an error"),
            Err(e) => {
                assert_eq!(exit_code(&e), 2, "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn the_family_is_the_profiles() {
        let family = |p: &str| sa(p, None).profile.family();
        assert_eq!(family("aes128-gcm/auth"), Family::IvnAe);
        assert_eq!(family("macsec-gcm-aes-128"), Family::Macsec);
        assert_eq!(family("esp-null-hmac-sha256"), Family::Esp);
        assert_eq!(family("secoc-cmac-aes128"), Family::Secoc);
        // Not a frame family: refused as the IVN-AE name it is not.
        assert_eq!(family("someip-nosec"), Family::Someip);
        assert_eq!(
            err_text(sender(&with(sa("someip-nosec", None), Some(1)))),
            "--profile someip-nosec: unknown suite (see `ivnsec suites`)"
        );
        // MACsec: the suite's bare name only (integrity only is --integrity-only).
        let mut s = macsec(1, false);
        s.sa.profile = "macsec-gcm-aes-128/conf".parse().unwrap();
        assert!(
            err_text(sender(&s))
                .starts_with("--profile macsec-gcm-aes-128/conf: unknown MACsec profile")
        );
        // A name that is no profile, as `frame` and `pcap verify` word it.
        let e = |name: &str, takes_secoc| {
            profile_error(&name.parse::<Profile>().unwrap_err(), takes_secoc)
        };
        assert_eq!(
            e("aes129-gcm", true),
            "--profile aes129-gcm: unknown suite (see `ivnsec suites`)"
        );
        assert_eq!(
            e("aes128-gcm/x", true),
            "--profile aes128-gcm/x: unknown level (expected auth or conf) (see `ivnsec suites`)"
        );
        assert!(e("esp-x", true).starts_with("--profile esp-x: unknown ESP profile (one of "));
        assert_eq!(
            e("secoc-x", true),
            "--profile secoc-x: unknown SecOC profile (one of secoc-cmac-aes128, secoc-hmac-sha256)"
        );
        assert_eq!(
            e("secoc-x", false),
            "--profile secoc-x: unknown suite (see `ivnsec suites`)"
        );
        assert_eq!(
            e("someip-x", true),
            "--profile someip-x: unknown suite (see `ivnsec suites`)"
        );
        assert!(e("macsec-x", true).starts_with("--profile macsec-x: unknown MACsec profile ("));
        assert_eq!(
            Limits::of(Family::Esp).max_protected(),
            65535 + esp::MAX_OVERHEAD
        );
    }

    #[test]
    fn each_family_builds_its_own_sa() {
        let t = sender(&with(sa("aes128-gcm", Some(KEY)), Some(5))).unwrap();
        assert_eq!((t.family(), t.next_seq()), (Family::IvnAe, Some(5)));
        assert!(t.note().unwrap().contains("all-zero IV"));
        let t = sender(&macsec(9, false)).unwrap();
        assert_eq!((t.family(), t.next_seq()), (Family::Macsec, Some(9)));
        let t = sender(&esp(3, None)).unwrap();
        assert_eq!((t.family(), t.next_seq()), (Family::Esp, Some(3)));
        assert!(t.note().unwrap().contains("RFC 4106"));
        let t = sender(&secoc(Some(KEY), Some(7))).unwrap();
        assert_eq!((t.family(), t.next_seq()), (Family::Secoc, Some(7)));
        assert!(t.note().is_none());
    }

    #[test]
    fn options_of_another_family_are_refused_by_name() {
        let mut s = macsec(1, false);
        s.sa.tag_len = Some(12);
        assert_eq!(
            err_text(sender(&s)),
            "--tag-len is an IVN-AE option; MACsec profiles do not take it"
        );
        let v = VerifySettings::new(SaSettings {
            iv: Some("00".into()),
            ..sa("esp-aes128-gcm", Some(ESP_KEY))
        });
        assert_eq!(
            err_text(receiver(&v)),
            "--iv is for protect; ESP carries the IV in each packet"
        );
        let mut s = secoc(Some(KEY), Some(1));
        s.seq = Some(1);
        assert_eq!(
            err_text(sender(&s)),
            "SecOC profiles take --freshness (the full freshness value), not --seq"
        );
        assert_eq!(
            err_text(sender(&secoc(None, Some(1)))),
            "secoc-cmac-aes128 needs --key (16 bytes hex)"
        );
    }

    /// A `--es` sender refuses, for that frame alone, a frame whose source MAC does not give
    /// its SCI; an ESP `--iv` counts up packet by packet.
    #[test]
    fn per_unit_rules_of_the_sender() {
        let mut t = sender(&macsec(1, true)).unwrap();
        let mut buf = vec![0u8; t.protected_len(64)];
        let mut frame = [0u8; 64];
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        let r = t.protect("FRAME", &frame, &mut buf).unwrap().unwrap_err();
        assert_eq!(r.reason, DropReason::ForeignSource);
        assert_eq!(t.next_seq(), Some(1), "no PN spent");
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        let n = t.protect("FRAME", &frame, &mut buf).unwrap().unwrap();
        assert_eq!(n, 64 + 8 + 16, "SecTAG without SCI (ES), ICV");

        let mut t = sender(&esp(1, Some("00000000000000ff"))).unwrap();
        assert!(t.note().is_none());
        let mut ip = [0u8; 28];
        ivnsec_core::channel::write_ipv4_header(
            &mut ip[..20],
            28,
            17,
            "192.0.2.1".parse().unwrap(),
            "192.0.2.2".parse().unwrap(),
        );
        let mut buf = vec![0u8; t.protected_len(ip.len())];
        for want in ["00000000000000ff", "0000000000000100"] {
            let n = t.protect("PACKET", &ip, &mut buf).unwrap().unwrap();
            assert!(n > ip.len());
            // IPv4 header, SPI, sequence number, then the IV.
            assert_eq!(hex::encode(&buf[28..36]), want);
        }
        // A packet that is no IP packet is refused alone; exhausted numbers stop the SA.
        let r = t.protect("PACKET", &[0x45], &mut buf).unwrap().unwrap_err();
        assert_eq!(r.reason, DropReason::Malformed);
        let mut t = sender(&esp(u64::from(u32::MAX), None)).unwrap();
        assert!(t.protect("PACKET", &ip, &mut buf).unwrap().is_ok());
        let e = t.protect("stdin line 2", &ip, &mut buf).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().starts_with("stdin line 2: "), "{e}");
    }

    /// RFC 4303 §2.1: SPI 0 is refused both ways; 1-255 are accepted, with a warning for a
    /// sender only; 256 and above say nothing.
    #[test]
    fn spi_0_is_refused_and_1_to_255_are_accepted() {
        let with_spi = |spi: u32| {
            let mut s = esp(1, None);
            s.esp.spi = Some(spi);
            s
        };
        let verify_spi = |spi: u32| VerifySettings {
            esp: EspRxSettings {
                spi: Some(spi),
                ..EspRxSettings::default()
            },
            ..VerifySettings::new(sa("esp-aes128-gcm", Some(ESP_KEY)))
        };
        assert!(err_text(sender(&with_spi(0))).starts_with("--spi 0 is reserved for local use"));
        assert!(
            err_text(receiver(&verify_spi(0))).starts_with("--spi 0 is reserved for local use")
        );
        for spi in [1, 52, 255] {
            let t = sender(&with_spi(spi)).unwrap();
            let w = t.warning().expect("a warning for a reserved SPI");
            assert!(w.contains(&format!("SPI {spi} is in 1-255")), "{w}");
            assert!(w.contains("RFC 4303 §2.1"), "{w}");
            assert!(receiver(&verify_spi(spi)).is_ok());
        }
        assert!(sender(&with_spi(256)).unwrap().warning().is_none());
        assert!(sender(&esp(1, None)).unwrap().warning().is_none());
    }
}
