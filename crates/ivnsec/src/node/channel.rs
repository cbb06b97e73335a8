//! Transitional: the string-keyed channel that `send`, `receive`, `keygen` and `someip` still
//! use until they move to [`ivnsec_core::channel`]; everything else uses the core channel.
#![allow(dead_code)]

//! A secured two-way channel between two nodes for one profile: the outbound SA that protects
//! what this node sends and the inbound SA that verifies what the peer sends, plus the framing
//! around a payload. Shared by every experiment that exchanges application payloads.
//!
//! What goes on the link per profile family:
//! - IVN-AE (`plain`, `crc32`, every suite): the whole protected Ethernet frame
//!   `dst ‖ src ‖ 0x88B5 ‖ … ‖ tag`, whose plain frame has the inner EtherType
//!   [`PAYLOAD_ETHERTYPE`].
//! - MACsec (`macsec-…`): the protected frame `dst ‖ src ‖ 0x88E5 ‖ SecTAG ‖ … ‖ ICV` of the plain
//!   frame `dst ‖ src ‖ PAYLOAD_ETHERTYPE ‖ payload`; the SCI is the sender's MAC ‖ 0001.
//! - ESP (`esp-…`), transport mode: the plain packet is IPv4 (protocol 253, RFC 3692
//!   experimental) from the sender's to the receiver's address carrying the payload; the link
//!   carries the ESP part (SPI onward): on the testbed as IPv4 protocol 50 through the kernel's IP
//!   layer (a raw IP socket), on the loopback fallback in a UDP datagram. The receiver verifies
//!   over an IPv4 header rebuilt from the two addresses (transport mode does not authenticate
//!   the IP header).
//! - SecOC (`secoc-…`): one UDP datagram per PDU, `PDU id (32) ‖ length (32) ‖ Secured I-PDU`
//!   (the AUTOSAR socket adaptor's PDU header, docs/secoc.md); the Secured I-PDU is the payload
//!   as the Authentic I-PDU ‖ the low 32 bits of a 64-bit freshness value ‖ the first 64 bits of
//!   the MAC ([`SECOC_FV_BITS`], [`SECOC_MAC_BITS`]). Each direction is its own I-PDU with its
//!   own Data ID ([`SECOC_DATA_ID`]), which is also the PDU id in the header.
//! - Secured SOME/IP (`someip-…`): one UDP datagram per SOME/IP message of service
//!   [`SOMEIP_SERVICE`], method [`SOMEIP_METHOD`]: requests from the initiator (client
//!   [`SOMEIP_CLIENT`]), responses from the responder, each direction under its own key
//!   (docs/wire-someip-sec.md).
//!
//! The UDP families use [`Family::udp_port`] at both ends on a testbed.

use std::net::Ipv4Addr;
use std::ops::Range;

use anyhow::{Result, anyhow};
use ivnsec_core::crypto::AeadAlg;
use ivnsec_core::crypto::{AEAD_NONCE_LEN, CryptoProvider};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};
use ivnsec_core::sa::someip::{self as sip, ServiceParams, ServiceSa};
use ivnsec_core::suite::{IvnAeProfile, Suite};
use ivnsec_core::wire::ethernet::{self, MacAddr};
use ivnsec_core::wire::ip::{fill_ipv4_checksum, protocol};
use ivnsec_core::wire::macsec::Sci;
use ivnsec_core::wire::secoc::{PDU_HEADER_LEN, PduError, PduPacket};
use ivnsec_core::wire::someip::{self as sipw, MessageType, ReturnCode};
use serde::{Deserialize, Serialize};

use crate::cli::usage;
use crate::providers::{self, ProviderChoice};

/// Inner EtherType of experiment payloads (IEEE 802 local experimental EtherType 2).
pub const PAYLOAD_ETHERTYPE: u16 = 0x88B6;
/// EtherType of MACsec frames.
pub const ETH_P_MACSEC: u16 = 0x88E5;
/// IP protocol of the inner packet of ESP experiments (RFC 3692: for experimentation).
pub const EXPERIMENT_IP_PROTOCOL: u8 = 253;
/// IPv4 header length (no options).
pub const IPV4_HLEN: usize = 20;
/// Replay window of experiment receivers unless [`ChannelOptions`] say otherwise.
pub const REPLAY_WINDOW: u32 = 64;
/// UDP header length.
pub const UDP_HLEN: usize = 8;
/// Where a UDP datagram's payload starts in an Ethernet frame.
pub const UDP_AT: usize = ethernet::HEADER_LEN + IPV4_HLEN + UDP_HLEN;
/// UDP port of SecOC PDUs (both ends, on a testbed).
pub const SECOC_PORT: u16 = 30_600;
/// UDP port of SOME/IP messages (both ends, on a testbed).
pub const SOMEIP_PORT: u16 = 30_509;
/// SecOC Data IDs (= PDU ids) of the two directions (initiator → responder, back).
pub const SECOC_DATA_ID: [u16; 2] = [0x0A01, 0x0A02];
/// SecOC full freshness value bits.
pub const SECOC_FULL_FV_BITS: u8 = 64;
/// SecOC freshness value bits on the wire (the low half: the intercepted range of
/// `ivnsec attack`, 2^31 up, must be reconstructible).
pub const SECOC_FV_BITS: u8 = 32;
/// SecOC authenticator bits on the wire.
pub const SECOC_MAC_BITS: u16 = 64;
/// SOME/IP service and method of the experiments.
pub const SOMEIP_SERVICE: u16 = 0x4956;
pub const SOMEIP_METHOD: u16 = 0x0001;
/// SOME/IP client ID of the initiator (plus [`ChannelOptions::spi_offset`]).
pub const SOMEIP_CLIENT: u16 = 0x0101;
/// SOME/IP key id of both directions (each has its own key).
pub const SOMEIP_KEY_ID: u8 = 1;

/// Settings of a [`Channel`] beyond its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelOptions {
    /// Replay window of the inbound SA (0: only strictly increasing numbers).
    pub replay_window: u32,
    /// Sequence number / PN of the first unit the outbound SA protects (≥ 1). A node that
    /// restarts under the same key starts above everything it may have used before.
    pub first_seq: u64,
    /// Added to both ESP SPIs, so several senders to one receiver have SAs the receiver can
    /// tell apart by SPI (0 for a single pair); likewise to the SecOC Data IDs and the SOME/IP
    /// client ID.
    #[serde(default)]
    pub spi_offset: u32,
}

impl Default for ChannelOptions {
    fn default() -> Self {
        ChannelOptions {
            replay_window: REPLAY_WINDOW,
            first_seq: 1,
            spi_offset: 0,
        }
    }
}

/// Key material of one direction; generated fresh for each run, never reused across runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DirectionKeys {
    /// Cipher key (hex): AEAD/AES key, MACsec SAK, ESP key (‖ salt).
    pub key: String,
    /// HMAC key (hex).
    pub mac_key: String,
    /// IVN-AE per-SA IV (hex, 12 bytes).
    pub iv: String,
}

impl DirectionKeys {
    /// Fresh random keys of the lengths `profile` needs (32-byte HMAC keys).
    pub fn random(profile: &str) -> Result<DirectionKeys> {
        let (key_len, mac_len) = key_lengths(profile)?;
        let rnd = |n: usize| -> Result<String> {
            let mut v = vec![0u8; n];
            getrandom::fill(&mut v).map_err(|e| anyhow!("system random generator: {e}"))?;
            Ok(hex::encode(v))
        };
        Ok(DirectionKeys {
            key: rnd(key_len)?,
            mac_key: rnd(mac_len)?,
            iv: rnd(AEAD_NONCE_LEN)?,
        })
    }
}

/// The MACsec cipher suite part of a node profile: `macsec-gcm-aes-128/auth` (integrity only)
/// and `macsec-gcm-aes-128/conf` name the same SA keys and frame length as `macsec-gcm-aes-128`.
fn macsec_suite_name(profile: &str) -> &str {
    profile
        .strip_suffix("/auth")
        .or_else(|| profile.strip_suffix("/conf"))
        .unwrap_or(profile)
}

/// The profile family of a profile name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    IvnAe(IvnAeProfile),
    Macsec(CipherSuite),
    Esp(EspAlg),
    Secoc(SecocAlg),
    Someip(SomeipProfile),
}

/// A secured SOME/IP profile: `someip-nosec`, or `someip-<aead>[/auth|/conf]` (conf by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SomeipProfile {
    pub level: sip::Level,
    /// Unused under `nosec`.
    pub alg: AeadAlg,
}

impl SomeipProfile {
    /// Every profile: nosec, then each AEAD at auth and conf.
    pub fn all() -> impl Iterator<Item = SomeipProfile> {
        std::iter::once(SomeipProfile {
            level: sip::Level::NoSec,
            alg: AeadAlg::Aes128Gcm,
        })
        .chain(AeadAlg::ALL.into_iter().flat_map(|alg| {
            [sip::Level::Auth, sip::Level::Conf]
                .into_iter()
                .map(move |level| SomeipProfile { level, alg })
        }))
    }

    fn parse(s: &str) -> Option<SomeipProfile> {
        let rest = s.strip_prefix("someip-")?;
        if rest == "nosec" {
            return Some(SomeipProfile {
                level: sip::Level::NoSec,
                alg: AeadAlg::Aes128Gcm,
            });
        }
        let (suite, level) = match rest.split_once('/') {
            None => (rest, sip::Level::Conf),
            Some((suite, "auth")) => (suite, sip::Level::Auth),
            Some((suite, "conf")) => (suite, sip::Level::Conf),
            Some(_) => return None,
        };
        let alg = sip::suite_from_name(suite)?;
        Some(SomeipProfile { level, alg })
    }
}

impl std::fmt::Display for SomeipProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.level {
            sip::Level::NoSec => f.write_str("someip-nosec"),
            l => write!(f, "someip-{}/{}", self.alg.name(), l.name()),
        }
    }
}

impl Family {
    /// Parses a profile name (as `ivnsec suites` lists them); the error is a usage error.
    pub fn parse(profile: &str) -> Result<Family> {
        let unknown = |what: &str| {
            usage(format!(
                "profile `{profile}`: unknown {what} profile (see `ivnsec suites`)"
            ))
        };
        if profile.starts_with("secoc-") {
            return SecocAlg::from_name(profile)
                .map(Family::Secoc)
                .ok_or_else(|| unknown("SecOC"));
        }
        if profile.starts_with("someip-") {
            return SomeipProfile::parse(profile)
                .map(Family::Someip)
                .ok_or_else(|| {
                    usage(format!(
                        "profile `{profile}`: unknown SOME/IP profile (someip-nosec, or \
                         someip-SUITE[/auth|/conf] with SUITE aes128-gcm, aes256-gcm, \
                         aes128-ccm, aes256-ccm or chacha20-poly1305)"
                    ))
                });
        }
        if profile.starts_with("esp-") {
            return EspAlg::from_name(profile)
                .map(Family::Esp)
                .ok_or_else(|| unknown("ESP"));
        }
        if profile.starts_with("macsec-") {
            // `/auth` = integrity only (E = C = 0), `/conf` (the default) = confidentiality.
            let suite = macsec_suite_name(profile);
            return CipherSuite::from_profile(suite)
                .map(Family::Macsec)
                .ok_or_else(|| unknown("MACsec"));
        }
        profile
            .parse::<IvnAeProfile>()
            .map(Family::IvnAe)
            .map_err(|e| usage(format!("profile `{profile}`: {e} (see `ivnsec suites`)")))
    }

    /// Whether the units travel in raw IPv4 packets (ESP) rather than raw Ethernet frames.
    pub fn is_ip(self) -> bool {
        matches!(self, Family::Esp(_))
    }

    /// Whether the units travel in UDP datagrams (SecOC, SOME/IP).
    pub fn is_udp(self) -> bool {
        matches!(self, Family::Secoc(_) | Family::Someip(_))
    }

    /// The UDP port of a UDP family (0 for the others).
    pub fn udp_port(self) -> u16 {
        match self {
            Family::Secoc(_) => SECOC_PORT,
            Family::Someip(_) => SOMEIP_PORT,
            _ => 0,
        }
    }

    /// The EtherType of the frames on the link (raw Ethernet families; IPv4 for the others).
    pub fn ethertype(self) -> u16 {
        match self {
            Family::IvnAe(_) => ivnsec_net::sys::ETH_P_IVNAE,
            Family::Macsec(_) => ETH_P_MACSEC,
            Family::Esp(_) | Family::Secoc(_) | Family::Someip(_) => 0x0800,
        }
    }
}

impl Family {
    /// Highest sequence number / PN the outbound SA of a [`Channel`] can carry: 2^32 − 1 for
    /// MACsec without XPN and for ESP (the channel's SAs use no ESN), 2^64 − 1 otherwise.
    pub fn max_seq(self) -> u64 {
        match self {
            Family::IvnAe(_) => u64::MAX,
            Family::Macsec(s) => s.max_pn(),
            Family::Esp(_) => u64::from(u32::MAX),
            Family::Secoc(_) | Family::Someip(_) => u64::MAX,
        }
    }

    /// Whether the profile uses the 12-byte `iv` of [`DirectionKeys`] (IVN-AE: per-SA IV;
    /// MACsec XPN: the salt).
    pub fn uses_iv(self) -> bool {
        match self {
            Family::IvnAe(_) => true,
            Family::Macsec(s) => s.is_xpn(),
            Family::Esp(_) | Family::Secoc(_) | Family::Someip(_) => false,
        }
    }
}

/// What separates the nonce space of the outbound SA of direction `direction` from others under
/// the same key, as the [`Channel`] builds it: IVN-AE key id, MACsec SCI (non-XPN: the nonce
/// starts with it) or SSCI (XPN), ESP SPI. Names the nonce state of that SA.
pub fn sa_identity(family: Family, ends: &Ends, direction: usize) -> String {
    let d = direction & 1;
    match family {
        Family::IvnAe(_) => format!("ivnae key-id {}", d + 1),
        Family::Macsec(s) if s.is_xpn() => format!("macsec-xpn ssci {}", d + 1),
        Family::Macsec(_) => format!("macsec sci {}0001", hex::encode(ends.local_mac)),
        Family::Esp(_) => format!("esp spi 0x{:08x}", SPI[d]),
        Family::Secoc(_) => format!("secoc data-id 0x{:04x}", SECOC_DATA_ID[d]),
        Family::Someip(_) if d == 0 => format!(
            "someip service 0x{SOMEIP_SERVICE:04x} key-id {SOMEIP_KEY_ID} sender client 0x{SOMEIP_CLIENT:04x}"
        ),
        Family::Someip(_) => {
            format!("someip service 0x{SOMEIP_SERVICE:04x} key-id {SOMEIP_KEY_ID} sender server")
        }
    }
}

/// The nonce domain of a profile: the family and suite whose nonce construction its outbound SA
/// uses, without what does not change the nonce (the level: IVN-AE AEADs build `iv XOR seq` at
/// `/auth` and `/conf` alike; MACsec `/auth`, `/conf` and the bare name are one SA; SOME/IP per
/// AEAD at either level). Every spelling of one suite gives the same string, which is also the
/// canonical profile name of the suite (`aes128-gcm`, `macsec-gcm-aes-128`, `esp-aes128-gcm`,
/// `secoc-cmac-aes128`, `someip-aes128-gcm`). The nonce state (node/highwater.rs) and the key
/// file's `profile` rule (node/keyfile.rs) are keyed by it; keep it the one place that says so.
pub fn nonce_domain(family: Family) -> String {
    match family {
        Family::IvnAe(p) => p.suite.to_string(),
        Family::Macsec(s) => s.profile().to_string(),
        Family::Esp(a) => a.name().to_string(),
        Family::Secoc(a) => a.name().to_string(),
        Family::Someip(p) if p.level == sip::Level::NoSec => "someip-nosec".to_string(),
        Family::Someip(p) => format!("someip-{}", p.alg.name()),
    }
}

/// Cipher and HMAC key lengths of a profile.
pub fn key_lengths(profile: &str) -> Result<(usize, usize)> {
    Ok(match Family::parse(profile)? {
        Family::IvnAe(p) => (
            p.suite.key_len().unwrap_or(0),
            if p.suite.needs_mac_key() { 32 } else { 0 },
        ),
        Family::Macsec(s) => (s.key_len(), 0),
        Family::Esp(a) => (a.key_len(), a.auth_key_len().unwrap_or(0)),
        // HMAC takes any length: 32 bytes, the hash's block-size half.
        Family::Secoc(a) => (a.key_len().unwrap_or(32), 0),
        Family::Someip(p) if p.level == sip::Level::NoSec => (0, 0),
        Family::Someip(p) => (p.alg.key_len(), 0),
    })
}

/// Addresses of the two ends.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Ends {
    pub local_mac: [u8; 6],
    pub peer_mac: [u8; 6],
    pub local_ip: Ipv4Addr,
    pub peer_ip: Ipv4Addr,
}

// One per node process: the size does not matter, an indirection on every frame would.
#[allow(clippy::large_enum_variant)]
impl Ends {
    /// The same two ends seen from the peer.
    pub fn reversed(self) -> Ends {
        Ends {
            local_mac: self.peer_mac,
            peer_mac: self.local_mac,
            local_ip: self.peer_ip,
            peer_ip: self.local_ip,
        }
    }
}

// One per node process: the size does not matter, an indirection on every frame would.
#[allow(clippy::large_enum_variant)]
enum Sas {
    IvnAe(IvnAeTx, IvnAeRx),
    Macsec(MacsecTx, MacsecRx),
    Esp(EspTx, EspRx),
    /// Outbound and inbound SA, and the PDU ids (= Data IDs) of the two directions.
    Secoc(SecocTx, SecocRx, u32, u32),
    Someip(ServiceSa, ServiceSa, SomeipHeader),
}

/// The SOME/IP header fields this end sends with.
struct SomeipHeader {
    client: u16,
    message_type: MessageType,
    /// Session ID of the next message (1..=0xFFFF, 0 is skipped on wrap as SOME/IP asks).
    session: u16,
}

impl SomeipHeader {
    /// The header of the next message, with a `payload_len`-byte payload.
    fn repr(&self, payload_len: usize) -> sipw::Repr {
        sipw::Repr {
            service_id: SOMEIP_SERVICE,
            method_id: SOMEIP_METHOD,
            client_id: self.client,
            session_id: self.session,
            interface_version: 1,
            message_type: self.message_type,
            tp: false,
            return_code: ReturnCode::E_OK,
            payload_len,
        }
    }
}

/// One node's end of a secured channel.
pub struct Channel {
    sas: Sas,
    family: Family,
    ends: Ends,
}

/// SPIs of the two directions (initiator → responder, back); XPN SSCIs likewise.
const SPI: [u32; 2] = [0x0000_1001, 0x0000_1002];

impl Channel {
    /// This node's end: `tx` protects what it sends, `rx` verifies what the peer sends.
    /// `direction` is 0 for the initiator (its outbound SA is the forward one), 1 for the
    /// responder; it picks SPIs, SSCIs and key ids so the two directions never share a nonce
    /// space even if keys were equal.
    pub fn new(
        profile: &str,
        provider: ProviderChoice,
        tx: &DirectionKeys,
        rx: &DirectionKeys,
        ends: Ends,
        direction: usize,
    ) -> Result<Channel> {
        Self::with_options(
            profile,
            provider,
            tx,
            rx,
            ends,
            direction,
            ChannelOptions::default(),
        )
    }

    /// [`new`](Self::new) with a replay window and a first sequence number of its own.
    pub fn with_options(
        profile: &str,
        provider: ProviderChoice,
        tx: &DirectionKeys,
        rx: &DirectionKeys,
        ends: Ends,
        direction: usize,
        opts: ChannelOptions,
    ) -> Result<Channel> {
        let (window, first) = (opts.replay_window, opts.first_seq);
        let family = Family::parse(profile)?;
        let hex = |what: &str, s: &str| crate::cli::parse_hex(what, s);
        let (txk, txm, txiv) = (hex("key", &tx.key)?, hex("mac key", &tx.mac_key)?, &tx.iv);
        let (rxk, rxm, rxiv) = (hex("key", &rx.key)?, hex("mac key", &rx.mac_key)?, &rx.iv);
        let iv = |s: &str| -> Result<[u8; AEAD_NONCE_LEN]> {
            hex("iv", s)?
                .as_slice()
                .try_into()
                .map_err(|_| usage("iv must be 12 bytes"))
        };
        let (out_dir, in_dir) = (direction & 1, (direction + 1) & 1);
        let sas = match family {
            Family::IvnAe(p) => {
                let prov = provider_for(provider, p.suite)?;
                fn params<'a>(
                    profile: IvnAeProfile,
                    key: &'a [u8],
                    mac_key: &'a [u8],
                    iv: [u8; AEAD_NONCE_LEN],
                    dir: usize,
                ) -> SaParams<'a> {
                    SaParams {
                        profile,
                        key,
                        mac_key,
                        iv,
                        key_id: dir as u8 + 1,
                        tag_len: None,
                    }
                }
                let t = IvnAeTx::new(prov, &params(p, &txk, &txm, iv(txiv)?, out_dir), first)
                    .map_err(|e| usage(e.to_string()))?;
                let r = IvnAeRx::new(prov, &params(p, &rxk, &rxm, iv(rxiv)?, in_dir), window)
                    .map_err(|e| usage(e.to_string()))?;
                Sas::IvnAe(t, r)
            }
            Family::Macsec(suite) => {
                let prov = provider_for(provider, Suite::Aead(suite.aead()))?;
                // XPN: the per-direction IV material serves as the 12-byte salt.
                let txsalt = suite.is_xpn().then(|| iv(txiv)).transpose()?;
                let rxsalt = suite.is_xpn().then(|| iv(rxiv)).transpose()?;
                let ssci = |d: usize| suite.is_xpn().then_some(d as u32 + 1);
                let t = MacsecTx::new(
                    prov,
                    &KeyParams {
                        suite,
                        key: &txk,
                        sci: Sci::end_station(MacAddr(ends.local_mac)),
                        an: 0,
                        ssci: ssci(out_dir),
                        salt: txsalt,
                    },
                    TxOptions {
                        confidentiality: !profile.ends_with("/auth"),
                        include_sci: true,
                        es: false,
                        scb: false,
                    },
                    first,
                )
                .map_err(|e| usage(e.to_string()))?;
                let r = MacsecRx::new(
                    prov,
                    &KeyParams {
                        suite,
                        key: &rxk,
                        sci: Sci::end_station(MacAddr(ends.peer_mac)),
                        an: 0,
                        ssci: ssci(in_dir),
                        salt: rxsalt,
                    },
                    RxOptions {
                        validate: ValidateFrames::Strict,
                        replay_protect: true,
                        replay_window: window,
                        lowest_pn: 1,
                    },
                )
                .map_err(|e| usage(e.to_string()))?;
                Sas::Macsec(t, r)
            }
            Family::Esp(alg) => {
                let prov = if alg.supported_by(&ivnsec_crypto_fast::PROVIDER)
                    && provider != ProviderChoice::Portable
                {
                    &ivnsec_crypto_fast::PROVIDER
                } else if provider == ProviderChoice::Fast {
                    return Err(usage(format!(
                        "provider 'fast' does not implement {}; use --provider portable or auto",
                        alg.name()
                    )));
                } else {
                    &ivnsec_crypto_portable::PROVIDER
                };
                fn params<'a>(
                    alg: EspAlg,
                    key: &'a [u8],
                    auth: &'a [u8],
                    spi: u32,
                ) -> EspParams<'a> {
                    EspParams {
                        alg,
                        spi,
                        key,
                        auth_key: auth,
                        esn: false,
                    }
                }
                let spi = |d: usize| SPI[d].wrapping_add(opts.spi_offset);
                let t = EspTx::new(
                    prov,
                    &params(alg, &txk, &txm, spi(out_dir)),
                    EspMode::Transport,
                    first,
                )
                .map_err(|e| usage(e.to_string()))?;
                let r = EspRx::new(prov, &params(alg, &rxk, &rxm, spi(in_dir)), window)
                    .map_err(|e| usage(e.to_string()))?;
                Sas::Esp(t, r)
            }
            Family::Secoc(alg) => {
                let prov = crate::cmd::frame_secoc::provider(provider, alg)?;
                let id = |d: usize| SECOC_DATA_ID[d].wrapping_add(opts.spi_offset as u16);
                fn params(alg: SecocAlg, key: &[u8], data_id: u16) -> SecocParams<'_> {
                    SecocParams {
                        fv_bits: SECOC_FV_BITS,
                        mac_bits: SECOC_MAC_BITS,
                        full_fv_bits: SECOC_FULL_FV_BITS,
                        ..SecocParams::new(alg, key, data_id)
                    }
                }
                let t = SecocTx::new(prov, &params(alg, &txk, id(out_dir)), first)
                    .map_err(|e| usage(e.to_string()))?;
                // SecOC has no replay window: the counter model accepts only freshness values
                // above the last accepted one, up to the default acceptance window (2^32).
                let r = SecocRx::new(
                    prov,
                    &params(alg, &rxk, id(in_dir)),
                    SecocRxOptions::default(),
                )
                .map_err(|e| usage(e.to_string()))?;
                Sas::Secoc(t, r, u32::from(id(out_dir)), u32::from(id(in_dir)))
            }
            Family::Someip(sp) => {
                let prov = match sp.level {
                    sip::Level::NoSec => &ivnsec_crypto_portable::PROVIDER,
                    _ => provider_for(provider, Suite::Aead(sp.alg))?,
                };
                fn params(
                    sp: SomeipProfile,
                    key: &[u8],
                    window: u32,
                    first_counter: u64,
                ) -> ServiceParams<'_> {
                    ServiceParams {
                        service_id: SOMEIP_SERVICE,
                        level: sp.level,
                        alg: sp.alg,
                        key_id: SOMEIP_KEY_ID,
                        key,
                        salt: [0; sip::SALT_LEN],
                        replay_window: window,
                        max_senders: sip::DEFAULT_MAX_SENDERS,
                        first_counter,
                    }
                }
                let t = ServiceSa::new(prov, &params(sp, &txk, window, first))
                    .map_err(|e| usage(e.to_string()))?;
                let r = ServiceSa::new(prov, &params(sp, &rxk, window, 1))
                    .map_err(|e| usage(e.to_string()))?;
                let header = SomeipHeader {
                    client: SOMEIP_CLIENT.wrapping_add(opts.spi_offset as u16),
                    message_type: if out_dir == 0 {
                        MessageType::Request
                    } else {
                        MessageType::Response
                    },
                    session: 1,
                };
                Sas::Someip(t, r, header)
            }
        };
        Ok(Channel { sas, family, ends })
    }

    /// The family of the channel's profile.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The sequence number / PN the next protected unit will carry; `None` once exhausted.
    #[allow(dead_code)] // for nodes that persist their high-water mark
    pub fn next_seq(&self) -> Option<u64> {
        match &self.sas {
            Sas::IvnAe(t, _) => t.next_seq(),
            Sas::Macsec(t, _) => t.next_pn(),
            Sas::Esp(t, _) => t.next_seq(),
            Sas::Secoc(t, ..) => t.next_freshness(),
            Sas::Someip(t, ..) => t.next_counter(),
        }
    }

    /// The addresses of the two ends, as this node sees them.
    pub fn ends(&self) -> Ends {
        self.ends
    }

    /// Length of the tag / ICV at the end of every protected unit.
    pub fn tag_len(&self) -> usize {
        match &self.sas {
            Sas::IvnAe(t, _) => t.tag_len(),
            Sas::Macsec(..) => ivnsec_core::wire::macsec::ICV_LEN,
            Sas::Esp(..) => ivnsec_core::sa::esp::ICV_LEN,
            Sas::Secoc(t, ..) => t.layout().mac_len(),
            Sas::Someip(t, ..) if t.level() == sip::Level::NoSec => 0,
            Sas::Someip(..) => sip::TAG_LEN,
        }
    }

    /// The Ethernet frame that carries `payload` from this node to the peer without any
    /// protection (raw families: EtherType [`PAYLOAD_ETHERTYPE`]; ESP: IPv4 protocol
    /// [`EXPERIMENT_IP_PROTOCOL`]; SecOC: the Authentic I-PDU alone behind the PDU header;
    /// SOME/IP: a `nosec` message): what a downgrade to "unprotected" puts on the link.
    pub fn unprotected_frame(&self, payload: &[u8], out: &mut Vec<u8>) {
        if self.family.is_udp() {
            let mut unit = Vec::with_capacity(payload.len() + sipw::HEADER_LEN);
            self.plain_unit(payload, &mut unit);
            self.capture_frame(&unit, true, out);
            return;
        }
        out.clear();
        out.extend_from_slice(&self.ends.peer_mac);
        out.extend_from_slice(&self.ends.local_mac);
        match self.family {
            Family::Esp(_) => {
                out.extend_from_slice(&0x0800u16.to_be_bytes());
                let mut ip = [0u8; IPV4_HLEN];
                write_ipv4_header(
                    &mut ip,
                    IPV4_HLEN + payload.len(),
                    EXPERIMENT_IP_PROTOCOL,
                    self.ends.local_ip,
                    self.ends.peer_ip,
                );
                out.extend_from_slice(&ip);
            }
            _ => out.extend_from_slice(&PAYLOAD_ETHERTYPE.to_be_bytes()),
        }
        out.extend_from_slice(payload);
    }

    /// Room a buffer needs for a `payload`-byte payload in either direction.
    pub fn buffer_len(payload: usize) -> usize {
        payload + 512
    }

    /// The Ethernet frame length (header to tag, no FCS, as seed 000 §4.2.3 counts it) that
    /// carries a `payload`-byte payload.
    pub fn frame_bytes(&self, payload: usize) -> usize {
        let plain_frame = ethernet::HEADER_LEN + payload;
        match &self.sas {
            Sas::IvnAe(t, _) => t.protected_len(plain_frame),
            Sas::Macsec(t, _) => t.protected_len(plain_frame),
            Sas::Esp(t, _) => ethernet::HEADER_LEN + IPV4_HLEN + t.alg().esp_len(payload),
            Sas::Secoc(t, ..) => UDP_AT + PDU_HEADER_LEN + t.secured_len(payload),
            Sas::Someip(t, ..) => UDP_AT + sipw::HEADER_LEN + payload + t.overhead(),
        }
    }

    /// Builds the plain unit around `payload` in `out` and protects it in place; returns the
    /// bytes to put on the link: `out[..n]`.
    pub fn protect(&mut self, payload: &[u8], out: &mut [u8]) -> Result<usize> {
        match &mut self.sas {
            Sas::IvnAe(t, _) => {
                let n = write_plain_frame(out, &self.ends, payload)?;
                t.protect_in_place(out, n)
                    .map_err(|e| anyhow!("protect: {e}"))
            }
            Sas::Macsec(t, _) => {
                let n = write_plain_frame(out, &self.ends, payload)?;
                t.protect_in_place(out, n)
                    .map_err(|e| anyhow!("protect: {e}"))
            }
            Sas::Esp(t, _) => {
                let n = IPV4_HLEN + payload.len();
                if out.len() < n + ivnsec_core::sa::esp::MAX_OVERHEAD {
                    return Err(anyhow!("protect: buffer too small"));
                }
                write_ipv4_header(
                    &mut out[..IPV4_HLEN],
                    n,
                    EXPERIMENT_IP_PROTOCOL,
                    self.ends.local_ip,
                    self.ends.peer_ip,
                );
                out[IPV4_HLEN..n].copy_from_slice(payload);
                let len = t
                    .protect_in_place(out, n, None)
                    .map_err(|e| anyhow!("protect: {e}"))?;
                // The datagram carries the ESP part; move it to the front.
                out.copy_within(IPV4_HLEN..len, 0);
                Ok(len - IPV4_HLEN)
            }
            Sas::Secoc(t, _, tx_id, _) => {
                let n = payload.len();
                let Some(body) = out.get_mut(PDU_HEADER_LEN..PDU_HEADER_LEN + n) else {
                    return Err(anyhow!("protect: buffer too small"));
                };
                body.copy_from_slice(payload);
                let m = t
                    .protect_in_place(&mut out[PDU_HEADER_LEN..], n)
                    .map_err(|e| anyhow!("protect: {e}"))?;
                let mut h = PduPacket::new_unchecked(&mut out[..PDU_HEADER_LEN]);
                h.set_id(*tx_id);
                h.set_length(m as u32);
                Ok(PDU_HEADER_LEN + m)
            }
            Sas::Someip(t, _, h) => {
                let n = t
                    .protect(&h.repr(0), payload, out)
                    .map_err(|e| anyhow!("protect: {e}"))?;
                h.session = h.session.checked_add(1).unwrap_or(1);
                Ok(n)
            }
        }
    }

    /// Where a received unit must be placed in the buffer given to [`verify`](Self::verify):
    /// ESP needs room in front for the IPv4 header it puts back.
    pub fn rx_offset(&self) -> usize {
        match self.family {
            Family::Esp(_) => IPV4_HLEN,
            _ => 0,
        }
    }

    /// Verifies the unit received into `buf[rx_offset()..rx_offset() + len]` in place and
    /// returns the range of the payload in `buf`.
    pub fn verify(&mut self, buf: &mut [u8], len: usize) -> Result<Range<usize>, DropReason> {
        match &mut self.sas {
            Sas::IvnAe(_, r) => {
                let range = r.verify_in_place(&mut buf[..len])?;
                payload_of_frame(buf, range)
            }
            Sas::Macsec(_, r) => {
                let d = r.verify_in_place(&mut buf[..len])?;
                payload_of_frame(buf, d.range)
            }
            Sas::Esp(_, r) => {
                let total = IPV4_HLEN + len;
                if total > buf.len() {
                    return Err(DropReason::Oversize);
                }
                write_ipv4_header(
                    &mut buf[..IPV4_HLEN],
                    total,
                    protocol::ESP,
                    self.ends.peer_ip,
                    self.ends.local_ip,
                );
                let range = r.verify_in_place(&mut buf[..total])?;
                if range.len() < IPV4_HLEN || buf[range.start + 9] != EXPERIMENT_IP_PROTOCOL {
                    return Err(DropReason::Malformed);
                }
                Ok(range.start + IPV4_HLEN..range.end)
            }
            Sas::Secoc(_, r, _, rx_id) => {
                // One PDU per datagram: the length field must cover exactly the rest.
                let dgram = buf.get(..len).ok_or(DropReason::Oversize)?;
                let p = PduPacket::new_checked(dgram).map_err(|e| match e {
                    PduError::Truncated => DropReason::Truncated,
                    _ => DropReason::BadLength,
                })?;
                if p.total_len() != len {
                    return Err(DropReason::BadLength);
                }
                if p.id() != *rx_id {
                    return Err(DropReason::UnknownSa);
                }
                let v = r.verify(&dgram[PDU_HEADER_LEN..])?;
                Ok(PDU_HEADER_LEN..PDU_HEADER_LEN + v.authentic_len)
            }
            Sas::Someip(_, r, _) => {
                // One message per datagram: its Length must cover exactly the rest.
                r.verify(buf.get_mut(..len).ok_or(DropReason::Oversize)?)
            }
        }
    }
}

impl Channel {
    /// The unit as an Ethernet frame for a capture: IVN-AE and MACsec units already are; an ESP
    /// unit gets the Ethernet and IPv4 headers it travels with (`outbound`: sent by this node).
    pub fn capture_frame(&self, unit: &[u8], outbound: bool, out: &mut Vec<u8>) {
        out.clear();
        if self.family.is_udp() {
            let (a, b) = (self.ends, self.ends.reversed());
            let (from, to) = if outbound { (a, b) } else { (b, a) };
            let port = self.family.udp_port();
            write_udp_frame(
                out,
                (from.local_mac, from.local_ip, port),
                (to.local_mac, to.local_ip, port),
                unit,
            );
            return;
        }
        match self.family {
            Family::Esp(_) => {
                let (src_mac, dst_mac, src, dst) = if outbound {
                    (
                        self.ends.local_mac,
                        self.ends.peer_mac,
                        self.ends.local_ip,
                        self.ends.peer_ip,
                    )
                } else {
                    (
                        self.ends.peer_mac,
                        self.ends.local_mac,
                        self.ends.peer_ip,
                        self.ends.local_ip,
                    )
                };
                out.extend_from_slice(&dst_mac);
                out.extend_from_slice(&src_mac);
                out.extend_from_slice(&0x0800u16.to_be_bytes());
                let mut ip = [0u8; IPV4_HLEN];
                write_ipv4_header(&mut ip, IPV4_HLEN + unit.len(), protocol::ESP, src, dst);
                out.extend_from_slice(&ip);
                out.extend_from_slice(unit);
            }
            _ => out.extend_from_slice(unit),
        }
    }
}

impl Channel {
    /// The unit of a UDP family without protection around `payload` (SecOC: the PDU header and
    /// the Authentic I-PDU; SOME/IP: a `nosec` message with this end's header fields).
    fn plain_unit(&self, payload: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match &self.sas {
            Sas::Secoc(_, _, tx_id, _) => {
                out.extend_from_slice(&tx_id.to_be_bytes());
                out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
            }
            Sas::Someip(_, _, h) => {
                out.resize(sipw::HEADER_LEN, 0);
                h.repr(payload.len()).emit_header(out);
            }
            _ => {}
        }
        out.extend_from_slice(payload);
    }
}

/// One end of a UDP datagram: MAC, IPv4 address, port.
pub type UdpEnd = ([u8; 6], Ipv4Addr, u16);

/// `out` = Ethernet ‖ IPv4 ‖ UDP ‖ `payload` from `src` to `dst`, with the IPv4 header checksum
/// and the UDP checksum (a receiving stack drops datagrams whose checksum is wrong).
pub fn write_udp_frame(out: &mut Vec<u8>, src: UdpEnd, dst: UdpEnd, payload: &[u8]) {
    out.clear();
    out.extend_from_slice(&dst.0);
    out.extend_from_slice(&src.0);
    out.extend_from_slice(&0x0800u16.to_be_bytes());
    out.resize(UDP_AT, 0);
    out[ethernet::HEADER_LEN + IPV4_HLEN..][..2].copy_from_slice(&src.2.to_be_bytes());
    out[ethernet::HEADER_LEN + IPV4_HLEN + 2..][..2].copy_from_slice(&dst.2.to_be_bytes());
    out.extend_from_slice(payload);
    fix_udp_frame(out, src.1, dst.1);
}

/// Rewrites the IPv4 header (from `src` to `dst`, protocol UDP, total length from the frame's
/// length) and the UDP length and checksum of an Ethernet/IPv4/UDP frame after its payload
/// changed. Frames shorter than the three headers are left alone.
pub fn fix_udp_frame(frame: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr) {
    if frame.len() < UDP_AT {
        return;
    }
    let ip_len = frame.len() - ethernet::HEADER_LEN;
    write_ipv4_header(
        &mut frame[ethernet::HEADER_LEN..ethernet::HEADER_LEN + IPV4_HLEN],
        ip_len,
        protocol::UDP,
        src,
        dst,
    );
    let udp = &mut frame[ethernet::HEADER_LEN + IPV4_HLEN..];
    let udp_len = udp.len() as u16;
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    fill_udp_checksum(frame);
}

/// Computes the UDP checksum of an Ethernet/IPv4 (no options)/UDP frame in place, over the
/// addresses of its IPv4 header and the datagram its UDP length gives. A frame captured on
/// the sending side of a veth carries a partial checksum (the kernel leaves it to the
/// "hardware"); this makes it what a wire carries. Anything else is left alone.
pub fn fill_udp_checksum(frame: &mut [u8]) {
    let ip = ethernet::HEADER_LEN;
    if frame.len() < UDP_AT || frame[ip] != 0x45 || frame[ip + 9] != protocol::UDP {
        return;
    }
    let src = Ipv4Addr::new(
        frame[ip + 12],
        frame[ip + 13],
        frame[ip + 14],
        frame[ip + 15],
    );
    let dst = Ipv4Addr::new(
        frame[ip + 16],
        frame[ip + 17],
        frame[ip + 18],
        frame[ip + 19],
    );
    let udp = &mut frame[ip + IPV4_HLEN..];
    let len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if len < UDP_HLEN || len > udp.len() {
        return;
    }
    udp[6..8].copy_from_slice(&[0, 0]);
    let c = ivnsec_core::wire::ip::udp_checksum_v4(src, dst, &udp[..len]);
    udp[6..8].copy_from_slice(&c.to_be_bytes());
}

fn provider_for(choice: ProviderChoice, suite: Suite) -> Result<&'static CryptoProvider> {
    providers::select(choice, suite).map_err(usage)
}

/// `dst ‖ src ‖ PAYLOAD_ETHERTYPE ‖ payload` into `out`; returns its length.
fn write_plain_frame(out: &mut [u8], ends: &Ends, payload: &[u8]) -> Result<usize> {
    let n = ethernet::HEADER_LEN + payload.len();
    if out.len() < n + 128 {
        return Err(anyhow!("protect: buffer too small"));
    }
    out[0..6].copy_from_slice(&ends.peer_mac);
    out[6..12].copy_from_slice(&ends.local_mac);
    out[12..14].copy_from_slice(&PAYLOAD_ETHERTYPE.to_be_bytes());
    out[14..n].copy_from_slice(payload);
    Ok(n)
}

/// The payload of a verified plain frame `buf[range]` (after dst, src and an inner EtherType
/// that must be [`PAYLOAD_ETHERTYPE`]).
fn payload_of_frame(buf: &[u8], range: Range<usize>) -> Result<Range<usize>, DropReason> {
    if range.len() < ethernet::HEADER_LEN {
        return Err(DropReason::Malformed);
    }
    let et = u16::from_be_bytes([buf[range.start + 12], buf[range.start + 13]]);
    if et != PAYLOAD_ETHERTYPE {
        return Err(DropReason::Malformed);
    }
    Ok(range.start + ethernet::HEADER_LEN..range.end)
}

/// A 20-byte IPv4 header (no options, DF set, TTL 64) with its checksum.
pub fn write_ipv4_header(h: &mut [u8], total_len: usize, proto: u8, src: Ipv4Addr, dst: Ipv4Addr) {
    h.fill(0);
    h[0] = 0x45;
    h[2..4].copy_from_slice(&(total_len as u16).to_be_bytes());
    h[6] = 0x40;
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    fill_ipv4_checksum(h);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ends() -> Ends {
        Ends {
            local_mac: [2, 0, 0, 0, 0, 1],
            peer_mac: [2, 0, 0, 0, 0, 2],
            local_ip: Ipv4Addr::new(10, 0, 0, 1),
            peer_ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    /// The outbound SA starts at the configured number in every family, and the peer accepts it.
    #[test]
    fn first_sequence_number_is_honoured() {
        for profile in ["aes128-gcm", "macsec-gcm-aes-128", "esp-aes128-gcm"] {
            let (f, b) = (
                DirectionKeys::random(profile).unwrap(),
                DirectionKeys::random(profile).unwrap(),
            );
            let opts = ChannelOptions {
                replay_window: 1,
                first_seq: 1 << 20,
                spi_offset: 0,
            };
            let prov = ProviderChoice::Auto;
            let mut a = Channel::with_options(profile, prov, &f, &b, ends(), 0, opts).unwrap();
            let mut z = Channel::new(profile, prov, &b, &f, ends().reversed(), 1).unwrap();
            assert_eq!(a.next_seq(), Some(1 << 20), "{profile}");
            assert!(!a.family().is_ip() || profile.starts_with("esp-"));
            let mut buf = vec![0u8; Channel::buffer_len(64)];
            let n = a.protect(&[7u8; 64], &mut buf).unwrap();
            assert_eq!(a.next_seq(), Some((1 << 20) + 1), "{profile}");
            let off = z.rx_offset();
            let mut rx = vec![0u8; Channel::buffer_len(64)];
            rx[off..off + n].copy_from_slice(&buf[..n]);
            let r = z.verify(&mut rx, n).unwrap();
            assert_eq!(&rx[r], &[7u8; 64][..], "{profile}");
        }
    }

    /// `/auth` sends MACsec integrity only (802.1AE §9.5: TCI E = C = 0, user data in clear),
    /// `/conf` and the bare name confidentiality (E = C = 1); each peer verifies every one.
    #[test]
    fn macsec_auth_is_integrity_only() {
        let payload = [0x5au8; 48];
        for (profile, conf) in [
            ("macsec-gcm-aes-128/auth", false),
            ("macsec-gcm-aes-128/conf", true),
            ("macsec-gcm-aes-128", true),
        ] {
            let (f, b) = (
                DirectionKeys::random(profile).unwrap(),
                DirectionKeys::random(profile).unwrap(),
            );
            let prov = ProviderChoice::Auto;
            let mut a = Channel::new(profile, prov, &f, &b, ends(), 0).unwrap();
            let mut z = Channel::new(profile, prov, &b, &f, ends().reversed(), 1).unwrap();
            let mut buf = vec![0u8; Channel::buffer_len(payload.len())];
            let n = a.protect(&payload, &mut buf).unwrap();
            // Ethernet header (12) + EtherType 0x88E5, then the TCI/AN octet.
            assert_eq!(&buf[12..14], &[0x88, 0xe5], "{profile}");
            assert_eq!(buf[14] & 0x0c, if conf { 0x0c } else { 0 }, "{profile}");
            let clear = buf[..n].windows(payload.len()).any(|w| w == payload);
            assert_eq!(clear, !conf, "{profile}");
            let off = z.rx_offset();
            let mut rx = vec![0u8; Channel::buffer_len(payload.len())];
            rx[off..off + n].copy_from_slice(&buf[..n]);
            let r = z.verify(&mut rx, n).unwrap();
            assert_eq!(&rx[r], &payload[..], "{profile}");
        }
        assert!(Family::parse("macsec-gcm-aes-128/none").is_err());
    }
}
