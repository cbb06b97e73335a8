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
//! The UDP families use [`Profile::udp_port`] at both ends on a testbed.

use alloc::string::String;
use alloc::vec::Vec;
use alloc::{format, vec};
use core::fmt;
use core::net::Ipv4Addr;
use core::ops::Range;

use zeroize::Zeroizing;

use crate::crypto::{AEAD_NONCE_LEN, CryptoProvider, SecureRandom};
use crate::profile::{Profile, SomeipProfile};
use crate::sa::DropReason;
use crate::sa::any::{
    AnyRx, AnyTx, EspOptions, IvnAeOptions, MacsecOptions, SaKeys, SaOptions, SecocOptions,
};
use crate::sa::esp::EspMode;
use crate::sa::secoc::SecocRxOptions;
use crate::sa::someip::{self as sip, ServiceParams, ServiceSa};
use crate::wire::bytes::{array, be16, byte, put, put_byte};
use crate::wire::ethernet::{self, MacAddr};
use crate::wire::ip::{fill_ipv4_checksum, protocol};
use crate::wire::macsec::Sci;
use crate::wire::secoc::{PDU_HEADER_LEN, PduError, PduPacket};
use crate::wire::someip::{self as sipw, MessageType, ReturnCode};

pub use crate::profile::{SECOC_PORT, SOMEIP_PORT};

/// Inner EtherType of experiment payloads (IEEE 802 local experimental EtherType 2).
pub const PAYLOAD_ETHERTYPE: u16 = 0x88B6;
/// EtherType of MACsec frames.
pub const ETH_P_MACSEC: u16 = crate::profile::ETHERTYPE_MACSEC;
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
/// Longest key or MAC key a [`DirectionKeys`] holds (HMAC keys may be long; 64 bytes is a
/// SHA-256 block).
pub const MAX_KEY_LEN: usize = 64;

/// Why a channel could not be built or a unit not protected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChannelError {
    /// The keys or options do not fit the profile: a configuration error.
    Config(String),
    /// The buffer given to [`Channel::protect`] cannot hold the protected unit.
    BufferTooSmall,
    /// The outbound SA refused (sequence numbers exhausted, unit too long, …).
    Protect(String),
}

impl fmt::Display for ChannelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelError::Config(m) => f.write_str(m),
            ChannelError::BufferTooSmall => f.write_str("protect: buffer too small"),
            ChannelError::Protect(m) => write!(f, "protect: {m}"),
        }
    }
}

impl core::error::Error for ChannelError {}

fn config(e: impl fmt::Display) -> ChannelError {
    ChannelError::Config(format!("{e}"))
}

fn protect_err(e: impl fmt::Display) -> ChannelError {
    ChannelError::Protect(format!("{e}"))
}

/// Settings of a [`Channel`] beyond its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ChannelOptions {
    /// Replay window of the inbound SA (0: only strictly increasing numbers).
    pub replay_window: u32,
    /// Sequence number / PN of the first unit the outbound SA protects (≥ 1). A node that
    /// restarts under the same key starts above everything it may have used before.
    pub first_seq: u64,
    /// Added to both ESP SPIs, so several senders to one receiver have SAs the receiver can
    /// tell apart by SPI (0 for a single pair); likewise to the SecOC Data IDs and the SOME/IP
    /// client ID.
    #[cfg_attr(feature = "serde", serde(default))]
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

/// Key material of one direction, as bytes that are zeroed when dropped. Its `Debug` shows
/// lengths only; it has no `Display` and is never serialized as text. The default is empty
/// (no key: `plain`, `crc32`, `someip-nosec`).
#[derive(Clone, Default)]
pub struct DirectionKeys {
    key: Zeroizing<Vec<u8>>,
    mac_key: Zeroizing<Vec<u8>>,
    iv: Zeroizing<[u8; AEAD_NONCE_LEN]>,
}

impl fmt::Debug for DirectionKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectionKeys")
            .field("key", &format_args!("<{} bytes>", self.key.len()))
            .field("mac_key", &format_args!("<{} bytes>", self.mac_key.len()))
            .finish_non_exhaustive()
    }
}

impl DirectionKeys {
    /// Keys from bytes (copied); `iv` is the 12-byte per-SA IV / XPN salt where the profile
    /// uses one (zeros otherwise).
    pub fn new(key: &[u8], mac_key: &[u8], iv: [u8; AEAD_NONCE_LEN]) -> DirectionKeys {
        DirectionKeys {
            key: Zeroizing::new(key.to_vec()),
            mac_key: Zeroizing::new(mac_key.to_vec()),
            iv: Zeroizing::new(iv),
        }
    }

    /// Fresh random keys of the lengths `profile` needs (32-byte HMAC keys), from `rng`.
    pub fn random(profile: Profile, rng: &dyn SecureRandom) -> Result<DirectionKeys, ChannelError> {
        let (key_len, mac_len) = profile.key_lengths();
        let mut k = DirectionKeys {
            key: Zeroizing::new(vec![0u8; key_len]),
            mac_key: Zeroizing::new(vec![0u8; mac_len]),
            iv: Zeroizing::new([0u8; AEAD_NONCE_LEN]),
        };
        let fail = |e| ChannelError::Config(format!("random generator: {e}"));
        rng.fill(&mut k.key).map_err(fail)?;
        rng.fill(&mut k.mac_key).map_err(fail)?;
        rng.fill(&mut k.iv[..]).map_err(fail)?;
        Ok(k)
    }

    /// Cipher key: AEAD/AES key, MACsec SAK, ESP key (‖ salt).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// HMAC key (empty where the profile has none).
    pub fn mac_key(&self) -> &[u8] {
        &self.mac_key
    }

    /// IVN-AE per-SA IV / MACsec XPN salt.
    pub fn iv(&self) -> &[u8; AEAD_NONCE_LEN] {
        &self.iv
    }

    /// The keys as the SA factory takes them ([`AnyTx::new`], [`AnyRx::new`]).
    pub fn sa_keys(&self) -> SaKeys<'_> {
        SaKeys {
            key: &self.key,
            mac_key: &self.mac_key,
            iv: *self.iv,
        }
    }

    /// Checks the lengths against `profile`: the error names the part and both lengths.
    pub fn check(&self, profile: Profile) -> Result<(), ChannelError> {
        let (key_len, mac_len) = profile.key_lengths();
        for (name, have, want) in [
            ("key", self.key.len(), key_len),
            ("mac_key", self.mac_key.len(), mac_len),
        ] {
            if have != want {
                return Err(ChannelError::Config(format!(
                    "{profile}: `{name}` must be {want} bytes, got {have}"
                )));
            }
        }
        Ok(())
    }

    /// The keys as bytes for a pipe to a child process: `len(key) ‖ key ‖ len(mac_key) ‖
    /// mac_key ‖ iv`, lengths as one byte each. The buffer zeroes itself when dropped.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut v = Zeroizing::new(Vec::with_capacity(
            2 + self.key.len() + self.mac_key.len() + AEAD_NONCE_LEN,
        ));
        v.push(self.key.len() as u8);
        v.extend_from_slice(&self.key);
        v.push(self.mac_key.len() as u8);
        v.extend_from_slice(&self.mac_key);
        v.extend_from_slice(&self.iv[..]);
        v
    }

    /// Parses [`to_bytes`](Self::to_bytes) from the front of `b`; returns the keys and the
    /// bytes used. `None` for anything malformed (lengths over [`MAX_KEY_LEN`], short input).
    pub fn from_bytes(b: &[u8]) -> Option<(DirectionKeys, usize)> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Option<&[u8]> {
            let s = b.get(at..at.checked_add(n)?)?;
            at += n;
            Some(s)
        };
        let kl = usize::from(*take(1)?.first()?);
        if kl > MAX_KEY_LEN {
            return None;
        }
        let key = take(kl)?.to_vec();
        let ml = usize::from(*take(1)?.first()?);
        if ml > MAX_KEY_LEN {
            return None;
        }
        let mac_key = take(ml)?.to_vec();
        let iv: [u8; AEAD_NONCE_LEN] = take(AEAD_NONCE_LEN)?.try_into().ok()?;
        Some((
            DirectionKeys {
                key: Zeroizing::new(key),
                mac_key: Zeroizing::new(mac_key),
                iv: Zeroizing::new(iv),
            },
            at,
        ))
    }
}

/// What separates the nonce space of the outbound SA of direction `direction` from others under
/// the same key, as the [`Channel`] builds it: IVN-AE key id, MACsec SCI (non-XPN: the nonce
/// starts with it) or SSCI (XPN), ESP SPI. Names the nonce state of that SA.
/// The SA identity of every ESP sender (`send`, `esp up`) in the nonce high-water state: one
/// sequence space per key, under any SPI (the ESP nonce does not contain the SPI).
pub const ESP_SA_IDENTITY: &str = "esp (any spi)";

pub fn sa_identity(profile: Profile, ends: &Ends, direction: usize) -> String {
    let d = direction & 1;
    match profile {
        Profile::IvnAe(_) => format!("ivnae key-id {}", d + 1),
        Profile::Macsec(m) if m.suite.is_xpn() => format!("macsec-xpn ssci {}", d + 1),
        Profile::Macsec(_) => {
            let m = ends.local_mac;
            format!(
                "macsec sci {:02x}{:02x}{:02x}{:02x}{:02x}{:02x}0001",
                m[0], m[1], m[2], m[3], m[4], m[5]
            )
        }
        // Not the SPI: the ESP nonce (salt ‖ sequence number) has none, so a key keeps one
        // sequence space whatever SPI it is used under.
        Profile::Esp(_) => alloc::string::String::from(ESP_SA_IDENTITY),
        Profile::Secoc(_) => format!("secoc data-id 0x{:04x}", of_direction(SECOC_DATA_ID, d)),
        Profile::Someip(_) if d == 0 => format!(
            "someip service 0x{SOMEIP_SERVICE:04x} key-id {SOMEIP_KEY_ID} sender client 0x{SOMEIP_CLIENT:04x}"
        ),
        Profile::Someip(_) => {
            format!("someip service 0x{SOMEIP_SERVICE:04x} key-id {SOMEIP_KEY_ID} sender server")
        }
    }
}

/// Addresses of the two ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

/// The SAs of a channel: the outbound and the inbound SA the core factory makes
/// ([`AnyTx::new`], [`AnyRx::new`]) for IVN-AE, MACsec, ESP and SecOC; SOME/IP's two service
/// SAs and the header this end sends with.
// One per node process: the size does not matter, an indirection on every frame would.
#[allow(clippy::large_enum_variant)]
enum Sas {
    Units(AnyTx, AnyRx),
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
    profile: Profile,
    ends: Ends,
    /// SecOC: the PDU ids (= Data IDs) of the outbound and the inbound direction.
    pdu_ids: [u32; 2],
}

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Channel")
            .field("profile", &self.profile)
            .field("ends", &self.ends)
            .finish_non_exhaustive()
    }
}

/// SPIs of the two directions (initiator → responder, back); XPN SSCIs likewise.
const SPI: [u32; 2] = [0x0000_1001, 0x0000_1002];

/// The entry of `pair` for direction `d` (0: initiator → responder, 1: back; only the low bit
/// counts).
fn of_direction<T: Copy>(pair: [T; 2], d: usize) -> T {
    let [forward, back] = pair;
    if d & 1 == 0 { forward } else { back }
}

/// The two service SAs of a SOME/IP channel and the header this end sends with (`out_dir` 0:
/// requests from the initiator's client, 1: responses).
#[allow(clippy::too_many_arguments)]
fn someip_sas(
    prov: &'static CryptoProvider,
    sp: SomeipProfile,
    tx: &DirectionKeys,
    rx: &DirectionKeys,
    window: u32,
    first: u64,
    out_dir: usize,
    spi_offset: u32,
) -> Result<Sas, ChannelError> {
    fn params(sp: SomeipProfile, key: &[u8], window: u32, first_counter: u64) -> ServiceParams<'_> {
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
    let t = ServiceSa::new(prov, &params(sp, tx.key(), window, first)).map_err(config)?;
    let r = ServiceSa::new(prov, &params(sp, rx.key(), window, 1)).map_err(config)?;
    let header = SomeipHeader {
        client: SOMEIP_CLIENT.wrapping_add(spi_offset as u16),
        message_type: if out_dir == 0 {
            MessageType::Request
        } else {
            MessageType::Response
        },
        session: 1,
    };
    Ok(Sas::Someip(t, r, header))
}

impl Channel {
    /// This node's end: `tx` protects what it sends, `rx` verifies what the peer sends, both
    /// with `provider` (see [`crate::crypto::select`]). `direction` is 0 for the initiator (its
    /// outbound SA is the forward one), 1 for the responder; it picks SPIs, SSCIs and key ids so
    /// the two directions never share a nonce space even if keys were equal.
    pub fn new(
        profile: Profile,
        provider: &'static CryptoProvider,
        tx: &DirectionKeys,
        rx: &DirectionKeys,
        ends: Ends,
        direction: usize,
    ) -> Result<Channel, ChannelError> {
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
        profile: Profile,
        prov: &'static CryptoProvider,
        tx: &DirectionKeys,
        rx: &DirectionKeys,
        ends: Ends,
        direction: usize,
        opts: ChannelOptions,
    ) -> Result<Channel, ChannelError> {
        let (window, first) = (opts.replay_window, opts.first_seq);
        tx.check(profile)?;
        rx.check(profile)?;
        let (out_dir, in_dir) = (direction & 1, (direction + 1) & 1);
        let pdu_id = |d: usize| of_direction(SECOC_DATA_ID, d).wrapping_add(opts.spi_offset as u16);
        let pdu_ids = [u32::from(pdu_id(out_dir)), u32::from(pdu_id(in_dir))];
        if let Profile::Someip(sp) = profile {
            return Ok(Channel {
                sas: someip_sas(prov, sp, tx, rx, window, first, out_dir, opts.spi_offset)?,
                profile,
                ends,
                pdu_ids,
            });
        }
        // The options of each direction's SA, for every family: the factory reads those of the
        // profile's. Key ids, SCIs / SSCIs, SPIs and Data IDs tell the two directions apart.
        let xpn = matches!(profile, Profile::Macsec(m) if m.suite.is_xpn());
        let sa_opts = |d: usize, mac: [u8; 6], keys: &DirectionKeys| SaOptions {
            ivnae: IvnAeOptions {
                key_id: d as u8 + 1,
                tag_len: None,
                accept_v1: false,
            },
            macsec: MacsecOptions {
                sci: Sci::end_station(MacAddr(mac)),
                an: 0,
                ssci: xpn.then_some(d as u32 + 1),
                // XPN: the per-direction IV material serves as the 12-byte salt.
                salt: xpn.then_some(*keys.iv()),
                ..MacsecOptions::default()
            },
            esp: EspOptions {
                spi: of_direction(SPI, d).wrapping_add(opts.spi_offset),
                esn: false,
                mode: EspMode::Transport,
            },
            // SecOC has no replay window: the counter model accepts only freshness values
            // above the last accepted one, up to the default acceptance window (2^32).
            secoc: SecocOptions {
                data_id: pdu_id(d),
                fv_bits: SECOC_FV_BITS,
                mac_bits: SECOC_MAC_BITS,
                full_fv_bits: SECOC_FULL_FV_BITS,
                rx: SecocRxOptions::default(),
            },
        };
        let t = AnyTx::new(
            prov,
            profile,
            tx.sa_keys(),
            &sa_opts(out_dir, ends.local_mac, tx),
            first,
        )
        .map_err(config)?;
        let r = AnyRx::new(
            prov,
            profile,
            rx.sa_keys(),
            &sa_opts(in_dir, ends.peer_mac, rx),
            window,
        )
        .map_err(config)?;
        Ok(Channel {
            sas: Sas::Units(t, r),
            profile,
            ends,
            pdu_ids,
        })
    }

    /// The channel's profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The sequence number / PN the next protected unit will carry; `None` once exhausted.
    pub fn next_seq(&self) -> Option<u64> {
        match &self.sas {
            Sas::Units(t, _) => t.next_seq(),
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
            Sas::Units(AnyTx::IvnAe(t), _) => t.tag_len(),
            Sas::Units(AnyTx::Macsec(_), _) => crate::wire::macsec::ICV_LEN,
            Sas::Units(AnyTx::Esp(_), _) => crate::sa::esp::ICV_LEN,
            Sas::Units(AnyTx::Secoc(t), _) => t.layout().mac_len(),
            Sas::Someip(t, ..) if t.level() == sip::Level::NoSec => 0,
            Sas::Someip(..) => sip::TAG_LEN,
        }
    }

    /// The Ethernet frame that carries `payload` from this node to the peer without any
    /// protection (raw families: EtherType [`PAYLOAD_ETHERTYPE`]; ESP: IPv4 protocol
    /// [`EXPERIMENT_IP_PROTOCOL`]; SecOC: the Authentic I-PDU alone behind the PDU header;
    /// SOME/IP: a `nosec` message): what a downgrade to "unprotected" puts on the link.
    pub fn unprotected_frame(&self, payload: &[u8], out: &mut Vec<u8>) {
        if self.profile.is_udp() {
            let mut unit = Vec::with_capacity(payload.len() + sipw::HEADER_LEN);
            self.plain_unit(payload, &mut unit);
            self.capture_frame(&unit, true, out);
            return;
        }
        out.clear();
        out.extend_from_slice(&self.ends.peer_mac);
        out.extend_from_slice(&self.ends.local_mac);
        match self.profile {
            Profile::Esp(_) => {
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
            Sas::Units(AnyTx::IvnAe(t), _) => t.protected_len(plain_frame),
            Sas::Units(AnyTx::Macsec(t), _) => t.protected_len(plain_frame),
            Sas::Units(AnyTx::Esp(t), _) => {
                ethernet::HEADER_LEN + IPV4_HLEN + t.alg().esp_len(payload)
            }
            Sas::Units(AnyTx::Secoc(t), _) => UDP_AT + PDU_HEADER_LEN + t.secured_len(payload),
            Sas::Someip(t, ..) => UDP_AT + sipw::HEADER_LEN + payload + t.overhead(),
        }
    }

    /// Builds the plain unit around `payload` in `out` and protects it in place; returns the
    /// bytes to put on the link: `out[..n]`.
    pub fn protect(&mut self, payload: &[u8], out: &mut [u8]) -> Result<usize, ChannelError> {
        match &mut self.sas {
            // The plain unit is written behind the SA's headroom, so protect encrypts the
            // payload where it lies.
            Sas::Units(AnyTx::IvnAe(t), _) => {
                let at = t.headroom();
                let n = write_plain_frame(out, at, &self.ends, payload)?;
                t.protect_in_place_at(out, at, n).map_err(protect_err)
            }
            Sas::Units(AnyTx::Macsec(t), _) => {
                let at = t.headroom();
                let n = write_plain_frame(out, at, &self.ends, payload)?;
                t.protect_in_place_at(out, at, n).map_err(protect_err)
            }
            Sas::Units(AnyTx::Esp(t), _) => {
                let n = IPV4_HLEN + payload.len();
                if out.len() < n + crate::sa::esp::MAX_OVERHEAD {
                    return Err(ChannelError::BufferTooSmall);
                }
                let at = t.headroom();
                write_ipv4_header(
                    out.get_mut(at..at + IPV4_HLEN)
                        .ok_or(ChannelError::BufferTooSmall)?,
                    n,
                    EXPERIMENT_IP_PROTOCOL,
                    self.ends.local_ip,
                    self.ends.peer_ip,
                );
                out.get_mut(at + IPV4_HLEN..at + n)
                    .ok_or(ChannelError::BufferTooSmall)?
                    .copy_from_slice(payload);
                let len = t
                    .protect_in_place_at(out, at, n, None)
                    .map_err(protect_err)?;
                // The datagram carries the ESP part; move it to the front.
                out.copy_within(IPV4_HLEN..len, 0);
                Ok(len - IPV4_HLEN)
            }
            Sas::Units(AnyTx::Secoc(t), _) => {
                let [tx_id, _] = self.pdu_ids;
                let n = payload.len();
                let (header, unit) = out
                    .split_at_mut_checked(PDU_HEADER_LEN)
                    .ok_or(ChannelError::BufferTooSmall)?;
                unit.get_mut(..n)
                    .ok_or(ChannelError::BufferTooSmall)?
                    .copy_from_slice(payload);
                let m = t.protect_in_place(unit, n).map_err(protect_err)?;
                let mut h = PduPacket::new_unchecked(header);
                h.set_id(tx_id);
                h.set_length(m as u32);
                Ok(PDU_HEADER_LEN + m)
            }
            Sas::Someip(t, _, h) => {
                let n = t.protect(&h.repr(0), payload, out).map_err(protect_err)?;
                h.session = h.session.checked_add(1).unwrap_or(1);
                Ok(n)
            }
        }
    }

    /// [`protect`](Self::protect) for a sender that writes whole Ethernet frames itself (a raw
    /// Ethernet link, past the kernel's IP layer): an ESP unit comes as the frame it travels in
    /// — Ethernet ‖ IPv4 ‖ ESP, the IPv4 header the one the SA protected in transport mode, so
    /// no byte moves after protection — and every other family's unit is what `protect` gives
    /// (IVN-AE and MACsec units already are frames). Returns the bytes to send: `out[..n]`.
    pub fn protect_frame(&mut self, payload: &[u8], out: &mut [u8]) -> Result<usize, ChannelError> {
        let Sas::Units(AnyTx::Esp(t), _) = &mut self.sas else {
            return self.protect(payload, out);
        };
        const ETH: usize = ethernet::HEADER_LEN;
        let n = IPV4_HLEN + payload.len();
        if out.len() < ETH + n + crate::sa::esp::MAX_OVERHEAD {
            return Err(ChannelError::BufferTooSmall);
        }
        let (eth, packet) = out
            .split_at_mut_checked(ETH)
            .ok_or(ChannelError::BufferTooSmall)?;
        put(eth, 0, &self.ends.peer_mac);
        put(eth, 6, &self.ends.local_mac);
        put(eth, 12, &crate::profile::ETHERTYPE_IPV4.to_be_bytes());
        write_ipv4_header(
            packet
                .get_mut(..IPV4_HLEN)
                .ok_or(ChannelError::BufferTooSmall)?,
            n,
            EXPERIMENT_IP_PROTOCOL,
            self.ends.local_ip,
            self.ends.peer_ip,
        );
        packet
            .get_mut(IPV4_HLEN..n)
            .ok_or(ChannelError::BufferTooSmall)?
            .copy_from_slice(payload);
        let len = t.protect_in_place(packet, n, None).map_err(protect_err)?;
        Ok(ETH + len)
    }

    /// Where a received unit must be placed in the buffer given to [`verify`](Self::verify):
    /// ESP needs room in front for the IPv4 header it puts back.
    pub fn rx_offset(&self) -> usize {
        match self.profile {
            Profile::Esp(_) => IPV4_HLEN,
            _ => 0,
        }
    }

    /// Restores the inbound SA from a receiver's persisted acceptance mark: every number ≤ `m`
    /// counts as seen and is refused as a replay. IVN-AE, MACsec (`m` below the suite's largest
    /// PN) and ESP; `false` (nothing done) for the other families.
    pub fn restore_rx_floor(&mut self, m: u64) -> bool {
        match &mut self.sas {
            Sas::Units(_, AnyRx::IvnAe(r)) => r.restore_floor(m),
            Sas::Units(_, AnyRx::Macsec(r)) => r.restore_floor(m),
            Sas::Units(_, AnyRx::Esp(r)) => r.restore_floor(m),
            Sas::Units(_, AnyRx::Secoc(_)) | Sas::Someip(..) => return false,
        }
        true
    }

    /// The highest sequence number / PN the inbound SA accepted (0: none; IVN-AE, MACsec, ESP;
    /// 0 for the other families).
    pub fn rx_highest(&self) -> u64 {
        match &self.sas {
            Sas::Units(_, AnyRx::Secoc(_)) | Sas::Someip(..) => 0,
            Sas::Units(_, r) => r.highest_seq(),
        }
    }

    /// Replay refusals of numbers at or below the restored mark
    /// ([`restore_rx_floor`](Self::restore_rx_floor)).
    pub fn rx_below_restored(&self) -> u64 {
        match &self.sas {
            Sas::Units(_, AnyRx::IvnAe(r)) => r.counters().below_restored,
            Sas::Units(_, AnyRx::Macsec(r)) => r.counters().below_restored,
            Sas::Units(_, AnyRx::Esp(r)) => r.counters().below_restored,
            Sas::Units(_, AnyRx::Secoc(_)) | Sas::Someip(..) => 0,
        }
    }

    /// Verifies the unit received into `buf[rx_offset()..rx_offset() + len]` in place and
    /// returns the range of the payload in `buf`.
    pub fn verify(&mut self, buf: &mut [u8], len: usize) -> Result<Range<usize>, DropReason> {
        match &mut self.sas {
            Sas::Units(_, AnyRx::IvnAe(r)) => {
                let range = r.verify_in_place(buf.get_mut(..len).ok_or(DropReason::Oversize)?)?;
                payload_of_frame(buf, range)
            }
            Sas::Units(_, AnyRx::Macsec(r)) => {
                let d = r.verify_in_place(buf.get_mut(..len).ok_or(DropReason::Oversize)?)?;
                payload_of_frame(buf, d.range)
            }
            Sas::Units(_, AnyRx::Esp(r)) => {
                let packet = IPV4_HLEN
                    .checked_add(len)
                    .and_then(|total| buf.get_mut(..total))
                    .ok_or(DropReason::Oversize)?;
                let total = packet.len();
                let (ip, _) = packet
                    .split_at_mut_checked(IPV4_HLEN)
                    .ok_or(DropReason::Oversize)?;
                write_ipv4_header(
                    ip,
                    total,
                    protocol::ESP,
                    self.ends.peer_ip,
                    self.ends.local_ip,
                );
                let range = r.verify_in_place(packet)?;
                if range.len() < IPV4_HLEN
                    || buf.get(range.start + 9) != Some(&EXPERIMENT_IP_PROTOCOL)
                {
                    return Err(DropReason::Malformed);
                }
                Ok(range.start + IPV4_HLEN..range.end)
            }
            Sas::Units(_, AnyRx::Secoc(r)) => {
                let [_, rx_id] = self.pdu_ids;
                // One PDU per datagram: the length field must cover exactly the rest.
                let dgram = buf.get(..len).ok_or(DropReason::Oversize)?;
                let p = PduPacket::new_checked(dgram).map_err(|e| match e {
                    PduError::Truncated => DropReason::Truncated,
                    _ => DropReason::BadLength,
                })?;
                if p.total_len() != len {
                    return Err(DropReason::BadLength);
                }
                if p.id() != rx_id {
                    return Err(DropReason::UnknownSa);
                }
                let unit = dgram.get(PDU_HEADER_LEN..).ok_or(DropReason::Truncated)?;
                let v = r.verify(unit)?;
                Ok(PDU_HEADER_LEN..PDU_HEADER_LEN + v.authentic_len)
            }
            Sas::Someip(_, r, _) => {
                // One message per datagram: its Length must cover exactly the rest.
                r.verify(buf.get_mut(..len).ok_or(DropReason::Oversize)?)
            }
        }
    }

    /// Verifies several received units as [`verify`](Self::verify) does one by one, with the
    /// same verdicts and counters: unit `i` is in `slots[i]` with length `lens[i]`, and `out[i]`
    /// gets the range of its payload in `slots[i]`. SOME/IP checks the tags of up to eight
    /// messages together ([`ServiceSa::verify_batch`](crate::sa::someip::ServiceSa::verify_batch):
    /// multi-buffer AES-CCM); the other families verify one by one.
    pub fn verify_batch(
        &mut self,
        slots: &mut [&mut [u8]],
        lens: &[usize],
        out: &mut [Result<Range<usize>, DropReason>],
    ) {
        let Sas::Someip(_, r, _) = &mut self.sas else {
            for ((slot, &len), res) in slots.iter_mut().zip(lens).zip(out.iter_mut()) {
                *res = self.verify(slot, len);
            }
            return;
        };
        for ((slots, lens), out) in slots
            .chunks_mut(8)
            .zip(lens.chunks(8))
            .zip(out.chunks_mut(8))
        {
            // Message `j` of the group is unit `at[j]`; a length past its slot is refused here,
            // uncounted, as `verify` refuses it.
            let mut msgs: [&mut [u8]; 8] = Default::default();
            let mut at = [0usize; 8];
            let mut n = 0;
            for (i, ((slot, &len), res)) in
                slots.iter_mut().zip(lens).zip(out.iter_mut()).enumerate()
            {
                match (slot.get_mut(..len), msgs.get_mut(n), at.get_mut(n)) {
                    (Some(m), Some(msg), Some(a)) => {
                        *msg = m;
                        *a = i;
                        n += 1;
                    }
                    _ => *res = Err(DropReason::Oversize),
                }
            }
            let mut verdicts: [Result<Range<usize>, DropReason>; 8] =
                core::array::from_fn(|_| Err(DropReason::Malformed));
            if let (Some(msgs), Some(v)) = (msgs.get_mut(..n), verdicts.get_mut(..n)) {
                r.verify_batch(msgs, v);
            }
            for (&i, v) in at.iter().zip(verdicts).take(n) {
                if let Some(res) = out.get_mut(i) {
                    *res = v;
                }
            }
        }
    }
}

impl Channel {
    /// The unit as an Ethernet frame for a capture: IVN-AE and MACsec units already are; an ESP
    /// unit gets the Ethernet and IPv4 headers it travels with (`outbound`: sent by this node).
    pub fn capture_frame(&self, unit: &[u8], outbound: bool, out: &mut Vec<u8>) {
        out.clear();
        if self.profile.is_udp() {
            let (a, b) = (self.ends, self.ends.reversed());
            let (from, to) = if outbound { (a, b) } else { (b, a) };
            let port = self.profile.udp_port();
            write_udp_frame(
                out,
                (from.local_mac, from.local_ip, port),
                (to.local_mac, to.local_ip, port),
                unit,
            );
            return;
        }
        match self.profile {
            Profile::Esp(_) => {
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
            Sas::Units(AnyTx::Secoc(_), _) => {
                let [tx_id, _] = self.pdu_ids;
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
    put(out, ethernet::HEADER_LEN + IPV4_HLEN, &src.2.to_be_bytes());
    put(
        out,
        ethernet::HEADER_LEN + IPV4_HLEN + 2,
        &dst.2.to_be_bytes(),
    );
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
    let Some((ip, udp)) = frame
        .get_mut(ethernet::HEADER_LEN..)
        .and_then(|packet| packet.split_at_mut_checked(IPV4_HLEN))
    else {
        return;
    };
    let udp_len = udp.len();
    write_ipv4_header(ip, IPV4_HLEN + udp_len, protocol::UDP, src, dst);
    put(udp, 4, &(udp_len as u16).to_be_bytes());
    fill_udp_checksum(frame);
}

/// Computes the UDP checksum of an Ethernet/IPv4 (no options)/UDP frame in place, over the
/// addresses of its IPv4 header and the datagram its UDP length gives. A frame captured on
/// the sending side of a veth carries a partial checksum (the kernel leaves it to the
/// "hardware"); this makes it what a wire carries. Anything else is left alone.
pub fn fill_udp_checksum(frame: &mut [u8]) {
    let ip = ethernet::HEADER_LEN;
    if frame.len() < UDP_AT || byte(frame, ip) != 0x45 || byte(frame, ip + 9) != protocol::UDP {
        return;
    }
    let src = Ipv4Addr::from(array::<4>(frame, ip + 12));
    let dst = Ipv4Addr::from(array::<4>(frame, ip + 16));
    let Some(udp) = frame.get_mut(ip + IPV4_HLEN..) else {
        return;
    };
    let len = usize::from(be16(udp, 4));
    let Some(datagram) = udp.get_mut(..len).filter(|_| len >= UDP_HLEN) else {
        return;
    };
    put(datagram, 6, &[0, 0]);
    let c = crate::wire::ip::udp_checksum_v4(src, dst, datagram);
    put(datagram, 6, &c.to_be_bytes());
}

/// `dst ‖ src ‖ PAYLOAD_ETHERTYPE ‖ payload` into `out`; returns its length.
/// Writes the plain frame around `payload` to `out[at..]` (`at` is an SA's headroom, well
/// under the 128 bytes of room asked for); returns its length.
fn write_plain_frame(
    out: &mut [u8],
    at: usize,
    ends: &Ends,
    payload: &[u8],
) -> Result<usize, ChannelError> {
    let n = ethernet::HEADER_LEN + payload.len();
    if out.len() < n + 128 || at > 64 {
        return Err(ChannelError::BufferTooSmall);
    }
    let f = out
        .get_mut(at..at + n)
        .ok_or(ChannelError::BufferTooSmall)?;
    put(f, 0, &ends.peer_mac);
    put(f, 6, &ends.local_mac);
    put(f, 12, &PAYLOAD_ETHERTYPE.to_be_bytes());
    put(f, ethernet::HEADER_LEN, payload);
    Ok(n)
}

/// The payload of a verified plain frame `buf[range]` (after dst, src and an inner EtherType
/// that must be [`PAYLOAD_ETHERTYPE`]).
fn payload_of_frame(buf: &[u8], range: Range<usize>) -> Result<Range<usize>, DropReason> {
    if range.len() < ethernet::HEADER_LEN {
        return Err(DropReason::Malformed);
    }
    // Outside `buf` the EtherType reads as 0: not ours either.
    if be16(buf, range.start + 12) != PAYLOAD_ETHERTYPE {
        return Err(DropReason::Malformed);
    }
    Ok(range.start + ethernet::HEADER_LEN..range.end)
}

/// A 20-byte IPv4 header (no options, DF set, TTL 64) with its checksum.
pub fn write_ipv4_header(h: &mut [u8], total_len: usize, proto: u8, src: Ipv4Addr, dst: Ipv4Addr) {
    h.fill(0);
    put_byte(h, 0, 0x45);
    put(h, 2, &(total_len as u16).to_be_bytes());
    put_byte(h, 6, 0x40);
    put_byte(h, 8, 64);
    put_byte(h, 9, proto);
    put(h, 12, &src.octets());
    put(h, 16, &dst.octets());
    fill_ipv4_checksum(h);
}
