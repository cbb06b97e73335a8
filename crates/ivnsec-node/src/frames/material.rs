//! The security association of `frame protect|verify` and `pcap verify`, built from its options:
//! the options every family shares ([`SaSettings`]: profile, keys in hex, provider), the options
//! of one family (MACsec, ESP, SecOC), their checks and messages, and the one [`AnyTx`] /
//! [`AnyRx`] they make. Keys are parsed into zeroizing buffers and live there only until the SA
//! has scheduled them.

use std::net::IpAddr;

use anyhow::Result;
use ivnsec_core::crypto::{AEAD_NONCE_LEN, CryptoProvider};
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::any::{AnyProtectError, AnyRx, AnyTx, Family};
use ivnsec_core::sa::esp::{self, EspAlg, EspMode, EspParams, EspRx, EspTx, SpiRange};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::secoc::{
    DEFAULT_FULL_FV_BITS, DEFAULT_FV_BITS, DEFAULT_MAC_BITS, SecocAlg, SecocParams, SecocRx,
    SecocRxOptions, SecocTx,
};
use ivnsec_core::suite::{IvnAeProfile, Suite};
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_crypto::ProviderChoice;
use zeroize::Zeroizing;

use crate::error::{parse_hex, usage};

/// The family of a profile name, by its prefix (`macsec-`, `esp-`, `secoc-`); any other name is
/// read as IVN-AE, whose parser says what is wrong with it.
pub fn family_of(profile: &str) -> Family {
    if profile.starts_with("macsec-") {
        Family::Macsec
    } else if profile.starts_with("esp-") {
        Family::Esp
    } else if profile.starts_with("secoc-") {
        Family::Secoc
    } else {
        Family::IvnAe
    }
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
    /// limit for ESP packets and SecOC PDUs (SecOC over TP carries large PDUs).
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
#[derive(Default)]
pub struct SaSettings {
    /// IVN-AE suite (with `/auth` or `/conf`), or a `macsec-…`, `esp-…`, `secoc-…` profile.
    pub profile: String,
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
#[derive(Default)]
pub struct ProtectSettings {
    pub sa: SaSettings,
    /// First sequence number (IVN-AE, ESP).
    pub seq: Option<u64>,
    pub macsec: MacsecTxSettings,
    pub esp: EspTxSettings,
    pub secoc: SecocTxSettings,
}

/// Everything an inbound SA of any family is made from; each family reads its own options.
#[derive(Default)]
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
    match family_of(&s.sa.profile) {
        Family::IvnAe => ivnae_sender(s),
        Family::Macsec => macsec_sender(s),
        Family::Esp => esp_sender(s),
        Family::Secoc => secoc_sender(s),
    }
}

/// The inbound SA the settings describe, for the family of its profile.
pub fn receiver(s: &VerifySettings) -> Result<AnyRx> {
    receiver_of(family_of(&s.sa.profile), s)
}

/// The inbound SA of `family` the settings describe.
pub fn receiver_of(family: Family, s: &VerifySettings) -> Result<AnyRx> {
    if s.accept_ivnae_v1 && family != Family::IvnAe {
        return Err(usage(format!(
            "--accept-ivnae-v1 is an IVN-AE option; --profile {} does not take it",
            s.sa.profile
        )));
    }
    Ok(match family {
        Family::IvnAe => {
            let (profile, m, provider) = ivnae_parts(&s.sa)?;
            let params = ivnae_params(&s.sa, profile, &m);
            let mut rx = IvnAeRx::new(provider, &params, s.replay_window)
                .map_err(|e| usage(e.to_string()))?;
            rx.set_accept_v1(s.accept_ivnae_v1);
            rx.into()
        }
        Family::Macsec => {
            let o = &s.macsec;
            let m = macsec_material(&s.sa, o.sci, o.an, o.ssci, o.salt)?;
            let rx_opts = RxOptions {
                validate: o.validate,
                replay_protect: true,
                replay_window: s.replay_window,
                lowest_pn: o.lowest_pn,
            };
            MacsecRx::new(m.provider, &m.keys(), rx_opts)
                .map_err(|e| usage(e.to_string()))?
                .into()
        }
        Family::Esp => {
            let m = esp_material(&s.sa, s.esp.auth_key.as_ref())?;
            if s.sa.iv.is_some() {
                return Err(usage(
                    "--iv is for protect; ESP carries the IV in each packet",
                ));
            }
            let params = m.params(spi(s.esp.spi)?, s.esp.esn);
            EspRx::new(m.provider, &params, s.replay_window)
                .map_err(|e| usage(e.to_string()))?
                .into()
        }
        Family::Secoc => {
            let o = &s.secoc;
            let m = secoc_material(&s.sa, o.data_id)?;
            let rx_opts = SecocRxOptions {
                last_freshness: o.last_freshness.unwrap_or(0),
                acceptance_window: o.acceptance_window,
                verify_attempts: o.verify_attempts.unwrap_or(0),
            };
            SecocRx::new(m.provider, &m.params(o.lengths), rx_opts)
                .map_err(|e| usage(e.to_string()))?
                .into()
        }
    })
}

fn sender_of(tx: impl Into<AnyTx>) -> Sender {
    Sender {
        tx: tx.into(),
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

/// Profile, keys and provider of an IVN-AE SA.
fn ivnae_parts(sa: &SaSettings) -> Result<(IvnAeProfile, IvnAeMaterial, &'static CryptoProvider)> {
    let profile: IvnAeProfile = sa.profile.parse().map_err(|e| {
        usage(format!(
            "--profile {}: {e} (see `ivnsec suites`)",
            sa.profile
        ))
    })?;
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

fn ivnae_params<'a>(sa: &SaSettings, profile: IvnAeProfile, m: &'a IvnAeMaterial) -> SaParams<'a> {
    SaParams {
        profile,
        key: &m.key,
        mac_key: &m.mac_key,
        iv: m.iv,
        key_id: sa.key_id.unwrap_or(0),
        tag_len: sa.tag_len,
    }
}

fn ivnae_sender(s: &ProtectSettings) -> Result<Sender> {
    let seq = s
        .seq
        .ok_or_else(|| usage("--seq is required for IVN-AE profiles"))?;
    let (profile, m, provider) = ivnae_parts(&s.sa)?;
    let tx = IvnAeTx::new(provider, &ivnae_params(&s.sa, profile, &m), seq)
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
    fn keys(&self) -> KeyParams<'_> {
        KeyParams {
            suite: self.suite,
            key: &self.key,
            sci: self.sci,
            an: self.an,
            ssci: self.ssci,
            salt: self.salt,
        }
    }
}

fn macsec_material(
    sa: &SaSettings,
    sci: Option<[u8; 8]>,
    an: Option<u8>,
    ssci: Option<[u8; 4]>,
    salt: Option<[u8; 12]>,
) -> Result<MacsecMaterial> {
    let suite = CipherSuite::from_profile(&sa.profile).ok_or_else(|| {
        usage(format!(
            "--profile {}: unknown MACsec profile (macsec-gcm-aes-128, macsec-gcm-aes-256, macsec-gcm-aes-xpn-128, macsec-gcm-aes-xpn-256)",
            sa.profile
        ))
    })?;
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

fn macsec_sender(s: &ProtectSettings) -> Result<Sender> {
    let o = &s.macsec;
    let m = macsec_material(&s.sa, o.sci, o.an, o.ssci, o.salt)?;
    let pn =
        o.pn.ok_or_else(|| usage("MACsec protect needs --pn (≥ 1)"))?;
    let tx_opts = TxOptions {
        confidentiality: !o.integrity_only,
        include_sci: !(o.no_sci || o.es || o.scb),
        es: o.es,
        scb: o.scb,
    };
    let tx = MacsecTx::new(m.provider, &m.keys(), tx_opts, pn).map_err(|e| usage(e.to_string()))?;
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
    fn params(&self, spi: u32, esn: bool) -> EspParams<'_> {
        EspParams {
            alg: self.alg,
            spi,
            key: &self.key,
            auth_key: &self.auth_key,
            esn,
        }
    }
}

fn esp_material(sa: &SaSettings, auth_key: Option<&Zeroizing<String>>) -> Result<EspMaterial> {
    let alg = EspAlg::from_name(&sa.profile).ok_or_else(|| {
        let names: Vec<&str> = EspAlg::ALL.iter().map(|a| a.name()).collect();
        usage(format!(
            "--profile {}: unknown ESP profile (one of {})",
            sa.profile,
            names.join(", ")
        ))
    })?;
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

fn esp_sender(s: &ProtectSettings) -> Result<Sender> {
    let o = &s.esp;
    let m = esp_material(&s.sa, o.auth_key.as_ref())?;
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
    let params = m.params(spi, o.esn);
    let tx = EspTx::new(m.provider, &params, mode, seq).map_err(|e| usage(e.to_string()))?;
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
    alg: SecocAlg,
    key: Zeroizing<Vec<u8>>,
    data_id: u16,
    provider: &'static CryptoProvider,
}

impl SecocMaterial {
    fn params(&self, l: SecocLengths) -> SecocParams<'_> {
        SecocParams {
            fv_bits: l.fv_bits.unwrap_or(DEFAULT_FV_BITS),
            mac_bits: l.mac_bits.unwrap_or(DEFAULT_MAC_BITS),
            full_fv_bits: l.full_fv_bits.unwrap_or(DEFAULT_FULL_FV_BITS),
            ..SecocParams::new(self.alg, &self.key, self.data_id)
        }
    }
}

fn secoc_material(sa: &SaSettings, data_id: Option<u16>) -> Result<SecocMaterial> {
    let alg = SecocAlg::from_name(&sa.profile).ok_or_else(|| {
        let names: Vec<&str> = SecocAlg::ALL.iter().map(|a| a.name()).collect();
        usage(format!(
            "--profile {}: unknown SecOC profile (one of {})",
            sa.profile,
            names.join(", ")
        ))
    })?;
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
        alg,
        key,
        data_id,
        provider,
    })
}

fn secoc_sender(s: &ProtectSettings) -> Result<Sender> {
    if s.seq.is_some() {
        return Err(usage(
            "SecOC profiles take --freshness (the full freshness value), not --seq",
        ));
    }
    let o = &s.secoc;
    let m = secoc_material(&s.sa, o.data_id)?;
    let first = o.freshness.ok_or_else(|| {
        usage("SecOC protect needs --freshness (the full freshness value of the first PDU, ≥ 1)")
    })?;
    let tx =
        SecocTx::new(m.provider, &m.params(o.lengths), first).map_err(|e| usage(e.to_string()))?;
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
            profile: profile.into(),
            key: key.map(|k| Zeroizing::new(k.to_string())),
            ..SaSettings::default()
        }
    }

    fn with(sa: SaSettings, seq: Option<u64>) -> ProtectSettings {
        ProtectSettings {
            sa,
            seq,
            ..ProtectSettings::default()
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
    fn the_family_is_read_from_the_prefix() {
        assert_eq!(family_of("aes128-gcm/auth"), Family::IvnAe);
        assert_eq!(family_of("macsec-gcm-aes-128"), Family::Macsec);
        assert_eq!(family_of("esp-null-hmac-sha256"), Family::Esp);
        assert_eq!(family_of("secoc-cmac-aes128"), Family::Secoc);
        // Not a frame family: the IVN-AE parser refuses it by name.
        assert_eq!(family_of("someip-nosec"), Family::IvnAe);
        assert_eq!(
            err_text(sender(&with(sa("someip-nosec", None), Some(1)))),
            "--profile someip-nosec: unknown suite (see `ivnsec suites`)"
        );
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
        let v = VerifySettings {
            sa: SaSettings {
                iv: Some("00".into()),
                ..sa("esp-aes128-gcm", Some(ESP_KEY))
            },
            ..VerifySettings::default()
        };
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
            sa: sa("esp-aes128-gcm", Some(ESP_KEY)),
            esp: EspRxSettings {
                spi: Some(spi),
                ..EspRxSettings::default()
            },
            ..VerifySettings::default()
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
