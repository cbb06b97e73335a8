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

use std::net::Ipv4Addr;
use std::ops::Range;

use anyhow::{Result, anyhow};
use ivnsec_core::crypto::{AEAD_NONCE_LEN, CryptoProvider};
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions, ValidateFrames,
};
use ivnsec_core::suite::{Profile, Suite};
use ivnsec_core::wire::ethernet::{self, MacAddr};
use ivnsec_core::wire::ip::{fill_ipv4_checksum, protocol};
use ivnsec_core::wire::macsec::Sci;
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

/// Settings of a [`Channel`] beyond its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelOptions {
    /// Replay window of the inbound SA (0: only strictly increasing numbers).
    pub replay_window: u32,
    /// Sequence number / PN of the first unit the outbound SA protects (≥ 1). A node that
    /// restarts under the same key starts above everything it may have used before.
    pub first_seq: u64,
    /// Added to both ESP SPIs, so several senders to one receiver have SAs the receiver can
    /// tell apart by SPI (0 for a single pair).
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
    IvnAe(Profile),
    Macsec(CipherSuite),
    Esp(EspAlg),
}

impl Family {
    /// Parses a profile name (as `ivnsec suites` lists them); the error is a usage error.
    pub fn parse(profile: &str) -> Result<Family> {
        if profile.starts_with("esp-") {
            return EspAlg::from_name(profile).map(Family::Esp).ok_or_else(|| {
                usage(format!(
                    "profile `{profile}`: unknown ESP profile (see `ivnsec suites`)"
                ))
            });
        }
        if profile.starts_with("macsec-") {
            // `/auth` = integrity only (E = C = 0), `/conf` (the default) = confidentiality.
            let suite = macsec_suite_name(profile);
            return CipherSuite::from_profile(suite)
                .map(Family::Macsec)
                .ok_or_else(|| {
                    usage(format!(
                        "profile `{profile}`: unknown MACsec profile (see `ivnsec suites`)"
                    ))
                });
        }
        profile
            .parse::<Profile>()
            .map(Family::IvnAe)
            .map_err(|e| usage(format!("profile `{profile}`: {e} (see `ivnsec suites`)")))
    }

    /// Whether the units travel in IPv4 packets (ESP) rather than raw Ethernet frames.
    pub fn is_ip(self) -> bool {
        matches!(self, Family::Esp(_))
    }

    /// The EtherType of the frames on the link (raw Ethernet families).
    pub fn ethertype(self) -> u16 {
        match self {
            Family::IvnAe(_) => ivnsec_net::sys::ETH_P_IVNAE,
            Family::Macsec(_) => ETH_P_MACSEC,
            Family::Esp(_) => 0x0800,
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
        }
    }

    /// Whether the profile uses the 12-byte `iv` of [`DirectionKeys`] (IVN-AE: per-SA IV;
    /// MACsec XPN: the salt).
    pub fn uses_iv(self) -> bool {
        match self {
            Family::IvnAe(_) => true,
            Family::Macsec(s) => s.is_xpn(),
            Family::Esp(_) => false,
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
                    profile: Profile,
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
        }
    }

    /// The Ethernet frame that carries `payload` from this node to the peer without any
    /// protection (raw families: EtherType [`PAYLOAD_ETHERTYPE`]; ESP: IPv4 protocol
    /// [`EXPERIMENT_IP_PROTOCOL`]): what a downgrade to "unprotected" puts on the link.
    pub fn unprotected_frame(&self, payload: &[u8], out: &mut Vec<u8>) {
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
        }
    }
}

impl Channel {
    /// The unit as an Ethernet frame for a capture: IVN-AE and MACsec units already are; an ESP
    /// unit gets the Ethernet and IPv4 headers it travels with (`outbound`: sent by this node).
    pub fn capture_frame(&self, unit: &[u8], outbound: bool, out: &mut Vec<u8>) {
        out.clear();
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
