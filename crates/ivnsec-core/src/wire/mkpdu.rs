//! EAPOL-MKA: the MACsec Key Agreement PDU (IEEE Std 802.1X-2020 clause 11.11).
//!
//! ```text
//! Ethernet  | DA (6) | SA (6) | EtherType 0x888E |
//! EAPOL     | Protocol Version (3) | Packet Type (5 = EAPOL-MKA) | Packet Body Length (2) |
//! MKPDU     | Basic Parameter Set | parameter sets … | [ICV Indicator] | ICV (16) |
//! ```
//!
//! Every parameter set starts with a 4-octet header whose last 12 bits are the *body length*
//! (the octets after the header, without padding); bodies are padded to a multiple of 4 octets.
//! The Basic Parameter Set comes first and has no type octet of its own:
//!
//! ```text
//! octet 1      MKA Version Identifier
//! octet 2      Key Server Priority
//! octet 3      Key Server (0x80) | MACsec Desired (0x40) | MACsec Capability (0x30) | len 11..8
//! octet 4      len 7..0
//! 5..12  SCI   13..24 Actor Member Identifier (MI)   25..28 Actor Message Number (MN)
//! 29..32 Algorithm Agility (00-80-C2-01)             33..   CAK Name (CKN, 1..32 octets)
//! ```
//!
//! The other sets are `type | octet 2 | len (12 bits) | body`: Live Peer List (1, octet 2 the Key
//! Server SSCI with an XPN SAK), Potential Peer List (2), MACsec SAK Use (3), Distributed SAK (4),
//! Distributed CAK (5), XPN (8) and the ICV Indicator (255, a header only: the ICV follows). KMD
//! (6), Announcement (7) and types this implementation does not know are skipped, as
//! clause 11.11.3 requires ("parameter sets with an unrecognized type are ignored").
//!
//! The Distributed CAK parameter set (Figure 11-13) has octet 2 reserved and a body of the AES
//! Key Wrap of the CAK (24 octets for a 128-bit CAK, 40 for a 256-bit one) followed by the CAK's
//! name (CKN, 1..=32 octets) to the end of the body. The split is not encoded: a body of 41 to
//! 56 octets can be either, and the receiver tells them apart by the key wrap's integrity check
//! ([`DistributedCak::splits`]).
//!
//! The ICV is always the last 16 octets of the packet body; the ICV Indicator is optional with
//! the default ICV length, and this implementation does not send it (like wpa_supplicant).
//!
//! Validation follows clause 11.11.2: a packet body of at least 32 octets and a multiple of 4, a
//! Basic Parameter Set with a CKN of 1 to 32 octets and every parameter set inside the body. A
//! parameter set of a known type whose length contradicts its format, or a known type given
//! twice, makes the MKPDU malformed. Parsing borrows from the buffer and never allocates, so its
//! cost is bounded by the frame; it never panics.

use super::bytes::{array, be64, byte, head, put, put_byte, range, range_mut, tail};
use core::fmt;

use super::Field;
use super::ethernet::MacAddr;
use super::macsec::Sci;

/// The EAPOL EtherType (IEEE 802.1X-2020 11.1).
pub const ETHERTYPE_EAPOL: u16 = 0x888E;
/// EAPOL Protocol Version of IEEE 802.1X-2010 and -2020.
pub const EAPOL_VERSION: u8 = 3;
/// EAPOL Packet Type of an MKPDU.
pub const EAPOL_TYPE_MKA: u8 = 5;
/// The nearest non-TPMR bridge group address (Table 11-1), the default destination of MKPDUs.
pub const PAE_GROUP_ADDR: MacAddr = MacAddr([0x01, 0x80, 0xC2, 0x00, 0x00, 0x03]);
/// MKA Version Identifier of IEEE 802.1X-2020.
pub const MKA_VERSION: u8 = 3;
/// Algorithm Agility of IEEE 802.1X-2010/-2020 (AES-CMAC ICV, AES-CMAC KDF, AES Key Wrap).
pub const ALGORITHM_AGILITY: u32 = 0x0080_C201;
/// Length of the ICV.
pub const ICV_LEN: usize = 16;
/// Length of a Member Identifier.
pub const MI_LEN: usize = 12;
/// Longest CAK Name.
pub const MAX_CKN_LEN: usize = 32;
/// Shortest MKPDU (packet body) clause 11.11.2 accepts.
pub const MIN_BODY_LEN: usize = 32;
/// Length of the Ethernet and EAPOL headers in front of the MKPDU.
pub const HEADER_LEN: usize = field::BODY;
/// Length of a parameter set header.
pub const PARAM_HEADER_LEN: usize = 4;
/// Length of the Basic Parameter Set body without the CKN.
pub const BASIC_FIXED_LEN: usize = 28;
/// Length of one peer list entry (MI ‖ MN).
pub const PEER_ENTRY_LEN: usize = 16;
/// Body length of a MACsec SAK Use parameter set that names keys.
pub const SAK_USE_LEN: usize = 40;
/// Body length of the XPN parameter set.
pub const XPN_LEN: usize = 8;
/// AES Key Wrap of a 128-bit and of a 256-bit CAK in a Distributed CAK parameter set.
pub const WRAPPED_CAK_LENS: [usize; 2] = [24, 40];
/// Shortest Distributed CAK body: a wrapped 128-bit CAK and a 1-octet CKN.
pub const MIN_DISTRIBUTED_CAK_LEN: usize = 24 + 1;
/// Longest Distributed CAK body: a wrapped 256-bit CAK and a 32-octet CKN.
pub const MAX_DISTRIBUTED_CAK_LEN: usize = 40 + MAX_CKN_LEN;
/// The largest parameter set body the 12-bit length field can carry.
pub const MAX_PARAM_LEN: usize = 0x0FFF;

/// Parameter set types (Table 11-7).
pub mod param {
    pub const LIVE_PEER_LIST: u8 = 1;
    pub const POTENTIAL_PEER_LIST: u8 = 2;
    pub const SAK_USE: u8 = 3;
    pub const DISTRIBUTED_SAK: u8 = 4;
    pub const DISTRIBUTED_CAK: u8 = 5;
    pub const KMD: u8 = 6;
    pub const ANNOUNCEMENT: u8 = 7;
    pub const XPN: u8 = 8;
    pub const ICV_INDICATOR: u8 = 255;
}

mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const EAPOL_VERSION: usize = 14;
    pub const EAPOL_TYPE: usize = 15;
    pub const EAPOL_LEN: Field = 16..18;
    pub const BODY: usize = 18;
}

/// A Member Identifier: 96 random bits chosen by each participant.
pub type Mi = [u8; MI_LEN];

/// Why an MKPDU was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MkpduError {
    /// Shorter than the headers, or than the packet body length says.
    Truncated,
    /// The EtherType is not EAPOL.
    WrongEtherType,
    /// An EAPOL packet that is not EAPOL-MKA.
    NotMka,
    /// Packet body shorter than 32 octets or not a multiple of 4.
    BadBodyLength,
    /// Basic Parameter Set too short, too long for the body, or a CKN outside 1..=32 octets.
    BadBasicParameterSet,
    /// A parameter set of this type whose length contradicts its format or runs past the body.
    BadParameterSet(u8),
    /// A parameter set of this type given twice.
    DuplicateParameterSet(u8),
    /// The ICV Indicator is not followed directly by a 16-octet ICV.
    BadIcvIndicator,
}

impl fmt::Display for MkpduError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MkpduError::Truncated => f.write_str("truncated"),
            MkpduError::WrongEtherType => f.write_str("not an EAPOL frame"),
            MkpduError::NotMka => f.write_str("not an EAPOL-MKA packet"),
            MkpduError::BadBodyLength => {
                f.write_str("MKPDU shorter than 32 octets or not a multiple of 4")
            }
            MkpduError::BadBasicParameterSet => f.write_str("malformed Basic Parameter Set"),
            MkpduError::BadParameterSet(t) => write!(f, "malformed parameter set of type {t}"),
            MkpduError::DuplicateParameterSet(t) => {
                write!(f, "parameter set of type {t} given twice")
            }
            MkpduError::BadIcvIndicator => f.write_str("ICV Indicator not followed by the ICV"),
        }
    }
}

impl core::error::Error for MkpduError {}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes(array(b, 0))
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(array(b, 0))
}

fn mi_of(b: &[u8]) -> Mi {
    array(b, 0)
}

/// `n` rounded up to a multiple of 4.
pub const fn padded(n: usize) -> usize {
    (n + 3) & !3
}

/// A view of an Ethernet frame carrying an MKPDU.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Checks the EtherType, the EAPOL packet type and the packet body length (at least 32
    /// octets, a multiple of 4, inside the buffer). Octets after the packet body (Ethernet
    /// padding) are allowed and ignored.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, MkpduError> {
        let f = Frame { buffer };
        f.check()?;
        Ok(f)
    }

    pub fn check(&self) -> Result<(), MkpduError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(MkpduError::Truncated);
        }
        if be16(range(b, field::ETHERTYPE)) != ETHERTYPE_EAPOL {
            return Err(MkpduError::WrongEtherType);
        }
        if byte(b, field::EAPOL_TYPE) != EAPOL_TYPE_MKA {
            return Err(MkpduError::NotMka);
        }
        let n = usize::from(be16(range(b, field::EAPOL_LEN)));
        if n < MIN_BODY_LEN || n % 4 != 0 {
            return Err(MkpduError::BadBodyLength);
        }
        if b.len() < HEADER_LEN + n {
            return Err(MkpduError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn dst(&self) -> MacAddr {
        MacAddr(array(self.buffer.as_ref(), field::DST.start))
    }

    pub fn src(&self) -> MacAddr {
        MacAddr(array(self.buffer.as_ref(), field::SRC.start))
    }

    /// EAPOL Protocol Version.
    pub fn eapol_version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::EAPOL_VERSION)
    }

    /// EAPOL Packet Body Length.
    pub fn body_len(&self) -> usize {
        usize::from(be16(range(self.buffer.as_ref(), field::EAPOL_LEN)))
    }

    /// The MKPDU: the packet body, ICV included.
    pub fn body(&self) -> &[u8] {
        range(
            self.buffer.as_ref(),
            field::BODY..field::BODY + self.body_len(),
        )
    }

    /// The parameter sets: the packet body without the ICV.
    pub fn params(&self) -> &[u8] {
        let n = self.body_len();
        range(self.buffer.as_ref(), field::BODY..field::BODY + n - ICV_LEN)
    }

    /// What the ICV covers (clause 9.4.1): DA ‖ SA ‖ EtherType ‖ EAPOL header ‖ MKPDU up to the
    /// ICV.
    pub fn signed(&self) -> &[u8] {
        let n = self.body_len();
        head(self.buffer.as_ref(), field::BODY + n - ICV_LEN)
    }

    /// The ICV: the last 16 octets of the packet body.
    pub fn icv(&self) -> &[u8] {
        let n = self.body_len();
        range(
            self.buffer.as_ref(),
            field::BODY + n - ICV_LEN..field::BODY + n,
        )
    }

    /// The whole frame up to the end of the packet body (without Ethernet padding).
    pub fn frame(&self) -> &[u8] {
        head(self.buffer.as_ref(), field::BODY + self.body_len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    /// Writes the Ethernet and EAPOL headers for a packet body of `body_len` octets.
    pub fn emit_header(&mut self, dst: MacAddr, src: MacAddr, body_len: u16) {
        let b = self.buffer.as_mut();
        put(b, field::DST.start, &dst.0);
        put(b, field::SRC.start, &src.0);
        put(b, field::ETHERTYPE.start, &ETHERTYPE_EAPOL.to_be_bytes());
        put_byte(b, field::EAPOL_VERSION, EAPOL_VERSION);
        put_byte(b, field::EAPOL_TYPE, EAPOL_TYPE_MKA);
        put(b, field::EAPOL_LEN.start, &body_len.to_be_bytes());
    }

    /// The ICV field (call after [`emit_header`](Self::emit_header) on a checked length).
    pub fn icv_mut(&mut self) -> &mut [u8] {
        let n = self.body_len();
        range_mut(
            self.buffer.as_mut(),
            field::BODY + n - ICV_LEN..field::BODY + n,
        )
    }
}

/// The Basic Parameter Set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BasicParamSet<'a> {
    /// MKA Version Identifier (1, 2 or 3; later versions are read as 3, clause 11.11.2).
    pub version: u8,
    /// Key Server Priority: lower is preferred; 0xFF never acts as key server.
    pub key_server_priority: u8,
    /// The sender is the key server.
    pub key_server: bool,
    pub macsec_desired: bool,
    /// MACsec Capability 0..=3 (3: integrity and confidentiality with offsets 0, 30, 50).
    pub macsec_capability: u8,
    pub sci: Sci,
    pub mi: Mi,
    pub mn: u32,
    pub algorithm_agility: u32,
    /// CAK Name, 1..=32 octets.
    pub ckn: &'a [u8],
}

impl BasicParamSet<'_> {
    fn body_len(&self) -> usize {
        BASIC_FIXED_LEN + self.ckn.len()
    }
}

/// One peer list entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerEntry {
    pub mi: Mi,
    pub mn: u32,
}

/// A peer list: entries as received (borrowed octets) or as to be sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerList<'a> {
    /// The body of a received peer list (a multiple of 16 octets).
    Wire(&'a [u8]),
    /// Entries to send.
    Entries(&'a [PeerEntry]),
}

impl<'a> PeerList<'a> {
    pub fn len(&self) -> usize {
        match self {
            PeerList::Wire(b) => b.len() / PEER_ENTRY_LEN,
            PeerList::Entries(e) => e.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = PeerEntry> + 'a {
        let (wire, list): (&'a [u8], &'a [PeerEntry]) = match *self {
            PeerList::Wire(b) => (b, &[]),
            PeerList::Entries(e) => (&[], e),
        };
        wire.chunks_exact(PEER_ENTRY_LEN)
            .map(|c| PeerEntry {
                mi: mi_of(c),
                mn: be32(tail(c, MI_LEN)),
            })
            .chain(list.iter().copied())
    }

    /// The MN listed for `mi`, if any.
    pub fn find(&self, mi: &Mi) -> Option<u32> {
        self.iter().find(|e| &e.mi == mi).map(|e| e.mn)
    }

    fn body_len(&self) -> usize {
        self.len() * PEER_ENTRY_LEN
    }
}

/// A Key Identifier (KI): the key server's MI and the Key Number it gave the SAK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId {
    pub mi: Mi,
    pub kn: u32,
}

/// The MACsec SAK Use parameter set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SakUse {
    pub latest_an: u8,
    /// Latest Key tx: the sender transmits with the latest key.
    pub latest_tx: bool,
    /// Latest Key rx: the sender receives with the latest key.
    pub latest_rx: bool,
    pub old_an: u8,
    pub old_tx: bool,
    pub old_rx: bool,
    pub plain_tx: bool,
    pub plain_rx: bool,
    pub delay_protect: bool,
    /// The keys named, or `None` for a body of length 0.
    pub keys: Option<SakUseKeys>,
}

/// The key part of a SAK Use parameter set (body length 40).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SakUseKeys {
    pub latest: KeyId,
    /// Latest Key Lowest Acceptable PN (the 32 least significant bits with XPN).
    pub latest_lowest_pn: u32,
    pub old: KeyId,
    pub old_lowest_pn: u32,
}

/// The key carried by a Distributed SAK parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributedKey<'a> {
    pub kn: u32,
    /// The MACsec Cipher Suite identifier, absent for the default GCM-AES-128.
    pub cipher_suite: Option<u64>,
    /// AES Key Wrap of the SAK: 24 octets (128-bit SAK) or 40 octets (256-bit SAK).
    pub wrapped: &'a [u8],
}

/// The Distributed SAK parameter set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributedSak<'a> {
    /// Distributed AN, 0..=3.
    pub an: u8,
    /// Confidentiality Offset: 0 none (integrity only), 1 offset 0, 2 offset 30, 3 offset 50.
    pub confidentiality_offset: u8,
    /// `None`: a body of length 0 (MACsec without protection, "plain text").
    pub key: Option<DistributedKey<'a>>,
}

impl DistributedSak<'_> {
    fn body_len(&self) -> usize {
        match &self.key {
            None => 0,
            Some(k) => 4 + if k.cipher_suite.is_some() { 8 } else { 0 } + k.wrapped.len(),
        }
    }
}

/// The Distributed CAK parameter set (Figure 11-13): its body, the AES Key Wrap of the CAK
/// followed by the CAK's name (CKN), as on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributedCak<'a> {
    /// AES Key Wrap of the CAK ‖ CKN: 25..=72 octets once parsed or checked for emitting.
    pub body: &'a [u8],
}

impl<'a> DistributedCak<'a> {
    /// The body as `(wrapped CAK, CKN)` for a wrapped CAK of `wrapped_len` octets, when the
    /// CKN that leaves is 1..=32 octets.
    pub fn split(&self, wrapped_len: usize) -> Option<(&'a [u8], &'a [u8])> {
        let body = self.body;
        let ckn_len = body.len().checked_sub(wrapped_len)?;
        if !(1..=MAX_CKN_LEN).contains(&ckn_len) {
            return None;
        }
        Some((body.get(..wrapped_len)?, body.get(wrapped_len..)?))
    }

    /// The possible `(wrapped CAK, CKN)` readings of the body, a 128-bit CAK's first: one, or
    /// two for a body of 41 to 56 octets (the key wrap's integrity check decides).
    pub fn splits(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let this = *self;
        WRAPPED_CAK_LENS
            .into_iter()
            .filter_map(move |n| this.split(n))
    }

    fn is_valid(&self) -> bool {
        (MIN_DISTRIBUTED_CAK_LEN..=MAX_DISTRIBUTED_CAK_LEN).contains(&self.body.len())
    }
}

/// The XPN parameter set: the 32 most significant bits of the lowest acceptable PNs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct XpnParams {
    pub suspension_time: u8,
    pub latest_lowest_pn_high: u32,
    pub old_lowest_pn_high: u32,
}

/// A parsed MKPDU (without its ICV).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr<'a> {
    pub basic: BasicParamSet<'a>,
    /// Live Peer List, if present.
    pub live_peers: Option<PeerList<'a>>,
    /// Octet 2 of the Live Peer List: the least significant octet of the key server's SSCI when
    /// the MKPDU distributes an XPN SAK (clause 11.11.3), otherwise 0.
    pub key_server_ssci: u8,
    pub potential_peers: Option<PeerList<'a>>,
    pub sak_use: Option<SakUse>,
    pub distributed_sak: Option<DistributedSak<'a>>,
    pub distributed_cak: Option<DistributedCak<'a>>,
    pub xpn: Option<XpnParams>,
    /// Send (or received) an ICV Indicator in front of the ICV.
    pub icv_indicator: bool,
    /// Parameter sets of unknown or unused types that were skipped (never sent).
    pub skipped: u16,
}

impl<'a> Repr<'a> {
    /// Parses the parameter sets of a checked frame (everything but the ICV, which the caller
    /// verifies with [`Frame::signed`] and [`Frame::icv`]).
    pub fn parse<T: AsRef<[u8]>>(frame: &'a Frame<T>) -> Result<Repr<'a>, MkpduError> {
        frame.check()?;
        Repr::parse_params(frame.params())
    }

    /// Parses the parameter sets (the packet body without the ICV).
    pub fn parse_params(p: &'a [u8]) -> Result<Repr<'a>, MkpduError> {
        if p.len() < PARAM_HEADER_LEN {
            return Err(MkpduError::BadBasicParameterSet);
        }
        let blen = usize::from(be16(range(p, 2..4)) & 0x0FFF);
        if !(BASIC_FIXED_LEN + 1..=BASIC_FIXED_LEN + MAX_CKN_LEN).contains(&blen)
            || PARAM_HEADER_LEN + blen > p.len()
        {
            return Err(MkpduError::BadBasicParameterSet);
        }
        let b = range(p, PARAM_HEADER_LEN..PARAM_HEADER_LEN + blen);
        let flags = byte(p, 2);
        let basic = BasicParamSet {
            version: byte(p, 0),
            key_server_priority: byte(p, 1),
            key_server: flags & 0x80 != 0,
            macsec_desired: flags & 0x40 != 0,
            macsec_capability: (flags >> 4) & 0x03,
            sci: Sci(array(b, 0)),
            mi: mi_of(range(b, 8..20)),
            mn: be32(range(b, 20..24)),
            algorithm_agility: be32(range(b, 24..28)),
            ckn: tail(b, BASIC_FIXED_LEN),
        };
        let mut r = Repr {
            basic,
            live_peers: None,
            key_server_ssci: 0,
            potential_peers: None,
            sak_use: None,
            distributed_sak: None,
            distributed_cak: None,
            xpn: None,
            icv_indicator: false,
            skipped: 0,
        };
        // The padding of the Basic Parameter Set may be cut when nothing follows but the ICV.
        let mut off = (PARAM_HEADER_LEN + padded(blen)).min(p.len());
        while off < p.len() {
            let rest = tail(p, off);
            if rest.len() < PARAM_HEADER_LEN {
                return Err(MkpduError::BadParameterSet(byte(rest, 0)));
            }
            let kind = byte(rest, 0);
            let len = usize::from(be16(range(rest, 2..4)) & 0x0FFF);
            if kind == param::ICV_INDICATOR {
                if len != ICV_LEN || rest.len() != PARAM_HEADER_LEN || r.icv_indicator {
                    return Err(MkpduError::BadIcvIndicator);
                }
                r.icv_indicator = true;
                break;
            }
            if PARAM_HEADER_LEN + len > rest.len() {
                return Err(MkpduError::BadParameterSet(kind));
            }
            let body = range(rest, PARAM_HEADER_LEN..PARAM_HEADER_LEN + len);
            r.parse_set(kind, byte(rest, 1), byte(rest, 2), body)?;
            off += (PARAM_HEADER_LEN + padded(len)).min(rest.len());
        }
        Ok(r)
    }

    fn parse_set(&mut self, kind: u8, o2: u8, o3: u8, body: &'a [u8]) -> Result<(), MkpduError> {
        let bad = MkpduError::BadParameterSet(kind);
        let dup = MkpduError::DuplicateParameterSet(kind);
        match kind {
            param::LIVE_PEER_LIST | param::POTENTIAL_PEER_LIST => {
                if body.len() % PEER_ENTRY_LEN != 0 {
                    return Err(bad);
                }
                let slot = if kind == param::LIVE_PEER_LIST {
                    self.key_server_ssci = o2;
                    &mut self.live_peers
                } else {
                    &mut self.potential_peers
                };
                if slot.is_some() {
                    return Err(dup);
                }
                *slot = Some(PeerList::Wire(body));
            }
            param::SAK_USE => {
                if self.sak_use.is_some() {
                    return Err(dup);
                }
                let keys = match body.len() {
                    0 => None,
                    SAK_USE_LEN => Some(SakUseKeys {
                        latest: KeyId {
                            mi: mi_of(range(body, 0..12)),
                            kn: be32(range(body, 12..16)),
                        },
                        latest_lowest_pn: be32(range(body, 16..20)),
                        old: KeyId {
                            mi: mi_of(range(body, 20..32)),
                            kn: be32(range(body, 32..36)),
                        },
                        old_lowest_pn: be32(range(body, 36..40)),
                    }),
                    _ => return Err(bad),
                };
                self.sak_use = Some(SakUse {
                    latest_an: o2 >> 6,
                    latest_tx: o2 & 0x20 != 0,
                    latest_rx: o2 & 0x10 != 0,
                    old_an: (o2 >> 2) & 0x03,
                    old_tx: o2 & 0x02 != 0,
                    old_rx: o2 & 0x01 != 0,
                    plain_tx: o3 & 0x80 != 0,
                    plain_rx: o3 & 0x40 != 0,
                    delay_protect: o3 & 0x10 != 0,
                    keys,
                });
            }
            param::DISTRIBUTED_SAK => {
                if self.distributed_sak.is_some() {
                    return Err(dup);
                }
                let key = match body.len() {
                    0 => None,
                    28 => Some(DistributedKey {
                        kn: be32(range(body, 0..4)),
                        cipher_suite: None,
                        wrapped: tail(body, 4),
                    }),
                    36 | 52 => Some(DistributedKey {
                        kn: be32(range(body, 0..4)),
                        cipher_suite: Some(be64(body, 4)),
                        wrapped: tail(body, 12),
                    }),
                    _ => return Err(bad),
                };
                self.distributed_sak = Some(DistributedSak {
                    an: o2 >> 6,
                    confidentiality_offset: (o2 >> 4) & 0x03,
                    key,
                });
            }
            param::DISTRIBUTED_CAK => {
                if self.distributed_cak.is_some() {
                    return Err(dup);
                }
                let d = DistributedCak { body };
                if !d.is_valid() {
                    return Err(bad);
                }
                self.distributed_cak = Some(d);
            }
            param::XPN => {
                if self.xpn.is_some() {
                    return Err(dup);
                }
                if body.len() != XPN_LEN {
                    return Err(bad);
                }
                self.xpn = Some(XpnParams {
                    suspension_time: o2,
                    latest_lowest_pn_high: be32(range(body, 0..4)),
                    old_lowest_pn_high: be32(range(body, 4..8)),
                });
            }
            _ => self.skipped = self.skipped.saturating_add(1),
        }
        Ok(())
    }

    /// Length of the parameter sets this Repr emits (padded; without the ICV).
    pub fn params_len(&self) -> usize {
        let mut n = PARAM_HEADER_LEN + padded(self.basic.body_len());
        for l in [self.live_peers, self.potential_peers]
            .into_iter()
            .flatten()
        {
            n += PARAM_HEADER_LEN + l.body_len();
        }
        if let Some(s) = &self.sak_use {
            n += PARAM_HEADER_LEN + if s.keys.is_some() { SAK_USE_LEN } else { 0 };
        }
        if let Some(d) = &self.distributed_sak {
            n += PARAM_HEADER_LEN + padded(d.body_len());
        }
        if let Some(c) = &self.distributed_cak {
            n += PARAM_HEADER_LEN + padded(c.body.len());
        }
        if self.xpn.is_some() {
            n += PARAM_HEADER_LEN + XPN_LEN;
        }
        if self.icv_indicator {
            n += PARAM_HEADER_LEN;
        }
        n
    }

    /// Length of the whole frame: headers, parameter sets and ICV.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.params_len() + ICV_LEN
    }

    /// Checks what `emit` cannot write: a CKN of 1..=32 octets, lengths the 12-bit fields hold,
    /// a wrapped key of 24 or 40 octets, a Distributed CAK body of 25..=72 octets, 2-bit ANs and
    /// offsets.
    pub fn check_emit(&self) -> Result<(), MkpduError> {
        if self.basic.ckn.is_empty() || self.basic.ckn.len() > MAX_CKN_LEN {
            return Err(MkpduError::BadBasicParameterSet);
        }
        for (kind, l) in [
            (param::LIVE_PEER_LIST, self.live_peers),
            (param::POTENTIAL_PEER_LIST, self.potential_peers),
        ] {
            if l.is_some_and(|l| l.body_len() > MAX_PARAM_LEN) {
                return Err(MkpduError::BadParameterSet(kind));
            }
        }
        if let Some(d) = &self.distributed_sak {
            let ok_key = d.key.is_none_or(|k| {
                matches!(
                    (k.cipher_suite.is_some(), k.wrapped.len()),
                    (false, 24) | (true, 24) | (true, 40)
                )
            });
            if d.an > 3 || d.confidentiality_offset > 3 || !ok_key {
                return Err(MkpduError::BadParameterSet(param::DISTRIBUTED_SAK));
            }
        }
        if self.distributed_cak.is_some_and(|c| !c.is_valid()) {
            return Err(MkpduError::BadParameterSet(param::DISTRIBUTED_CAK));
        }
        if self
            .sak_use
            .is_some_and(|s| s.latest_an > 3 || s.old_an > 3)
        {
            return Err(MkpduError::BadParameterSet(param::SAK_USE));
        }
        if self.basic.macsec_capability > 3 || HEADER_LEN + self.params_len() + ICV_LEN > 0xFFFF {
            return Err(MkpduError::BadBodyLength);
        }
        Ok(())
    }

    /// Writes the frame (headers and parameter sets, the ICV field zeroed) into the front of
    /// `buf` and returns its length, [`buffer_len`](Self::buffer_len). The caller computes the
    /// ICV over [`Frame::signed`] and writes it with [`Frame::icv_mut`]. Errors (never panics)
    /// when `buf` is too short or [`check_emit`](Self::check_emit) fails.
    pub fn emit(&self, dst: MacAddr, src: MacAddr, buf: &mut [u8]) -> Result<usize, MkpduError> {
        self.check_emit()?;
        let total = self.buffer_len();
        let buf = buf.get_mut(..total).ok_or(MkpduError::Truncated)?;
        buf.fill(0);
        let body_len = (total - HEADER_LEN) as u16;
        Frame::new_unchecked(&mut *buf).emit_header(dst, src, body_len);
        let p = range_mut(buf, HEADER_LEN..total - ICV_LEN);
        let mut w = Writer { p, off: 0 };

        let b = &self.basic;
        let flags = (u8::from(b.key_server) << 7)
            | (u8::from(b.macsec_desired) << 6)
            | ((b.macsec_capability & 3) << 4);
        w.header(b.version, b.key_server_priority, flags, b.body_len());
        w.put(&b.sci.0);
        w.put(&b.mi);
        w.put(&b.mn.to_be_bytes());
        w.put(&b.algorithm_agility.to_be_bytes());
        w.put(b.ckn);
        w.align();

        for (kind, o2, list) in [
            (param::LIVE_PEER_LIST, self.key_server_ssci, self.live_peers),
            (param::POTENTIAL_PEER_LIST, 0, self.potential_peers),
        ] {
            if let Some(l) = list {
                w.header(kind, o2, 0, l.body_len());
                for e in l.iter() {
                    w.put(&e.mi);
                    w.put(&e.mn.to_be_bytes());
                }
            }
        }
        if let Some(s) = &self.sak_use {
            let o2 = (s.latest_an << 6)
                | (u8::from(s.latest_tx) << 5)
                | (u8::from(s.latest_rx) << 4)
                | (s.old_an << 2)
                | (u8::from(s.old_tx) << 1)
                | u8::from(s.old_rx);
            let o3 = (u8::from(s.plain_tx) << 7)
                | (u8::from(s.plain_rx) << 6)
                | (u8::from(s.delay_protect) << 4);
            let len = if s.keys.is_some() { SAK_USE_LEN } else { 0 };
            w.header(param::SAK_USE, o2, o3, len);
            if let Some(k) = &s.keys {
                w.put(&k.latest.mi);
                w.put(&k.latest.kn.to_be_bytes());
                w.put(&k.latest_lowest_pn.to_be_bytes());
                w.put(&k.old.mi);
                w.put(&k.old.kn.to_be_bytes());
                w.put(&k.old_lowest_pn.to_be_bytes());
            }
        }
        if let Some(d) = &self.distributed_sak {
            let o2 = (d.an << 6) | ((d.confidentiality_offset & 3) << 4);
            w.header(param::DISTRIBUTED_SAK, o2, 0, d.body_len());
            if let Some(k) = &d.key {
                w.put(&k.kn.to_be_bytes());
                if let Some(cs) = k.cipher_suite {
                    w.put(&cs.to_be_bytes());
                }
                w.put(k.wrapped);
            }
            w.align();
        }
        if let Some(c) = &self.distributed_cak {
            w.header(param::DISTRIBUTED_CAK, 0, 0, c.body.len());
            w.put(c.body);
            w.align();
        }
        if let Some(x) = &self.xpn {
            w.header(param::XPN, x.suspension_time, 0, XPN_LEN);
            w.put(&x.latest_lowest_pn_high.to_be_bytes());
            w.put(&x.old_lowest_pn_high.to_be_bytes());
        }
        if self.icv_indicator {
            w.header(param::ICV_INDICATOR, 0, 0, ICV_LEN);
        }
        Ok(total)
    }
}

/// Writes parameter sets into a buffer sized by `params_len` (so every `put` fits).
struct Writer<'b> {
    p: &'b mut [u8],
    off: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        if let Some(dst) = self.p.get_mut(self.off..self.off + b.len()) {
            dst.copy_from_slice(b);
        }
        self.off += b.len();
    }

    /// A parameter set header: type (or octet 1), octet 2, the high bits of octet 3 and the
    /// 12-bit body length.
    fn header(&mut self, o1: u8, o2: u8, o3_high: u8, len: usize) {
        let len = (len & MAX_PARAM_LEN) as u16;
        let o3 = (o3_high & 0xF0) | (len >> 8) as u8;
        self.put(&[o1, o2, o3, len as u8]);
    }

    fn align(&mut self) {
        self.off = padded(self.off);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    const CKN: &[u8] = &[0x96, 0x43, 0x7a, 0x93, 0xcc];

    fn basic() -> BasicParamSet<'static> {
        BasicParamSet {
            version: MKA_VERSION,
            key_server_priority: 16,
            key_server: true,
            macsec_desired: true,
            macsec_capability: 3,
            sci: Sci([2, 0, 0, 0, 0, 1, 0, 1]),
            mi: [7; 12],
            mn: 5,
            algorithm_agility: ALGORITHM_AGILITY,
            ckn: CKN,
        }
    }

    fn bare() -> Repr<'static> {
        Repr {
            basic: basic(),
            live_peers: None,
            key_server_ssci: 0,
            potential_peers: None,
            sak_use: None,
            distributed_sak: None,
            distributed_cak: None,
            xpn: None,
            icv_indicator: false,
            skipped: 0,
        }
    }

    fn emit(r: &Repr<'_>) -> vec::Vec<u8> {
        let mut b = vec![0u8; r.buffer_len()];
        let n = r
            .emit(PAE_GROUP_ADDR, MacAddr([2, 0, 0, 0, 0, 1]), &mut b)
            .unwrap();
        assert_eq!(n, b.len());
        b
    }

    /// The Basic Parameter Set laid out octet by octet as Figure 11-8 of 802.1X-2020 draws it.
    #[test]
    fn basic_parameter_set_layout() {
        let b = emit(&bare());
        // 18 header octets, 4 + 28 + 5 CKN (+3 padding) octets, 16 ICV octets.
        assert_eq!(b.len(), 18 + 40 + 16);
        assert_eq!(&b[..6], &[0x01, 0x80, 0xc2, 0, 0, 3]);
        assert_eq!(&b[12..18], &[0x88, 0x8e, 3, 5, 0, 56]);
        assert_eq!(&b[18..22], &[3, 16, 0x80 | 0x40 | 0x30, 33]);
        assert_eq!(&b[22..30], &[2, 0, 0, 0, 0, 1, 0, 1]);
        assert_eq!(&b[42..46], &[0, 0, 0, 5]);
        assert_eq!(&b[46..50], &[0x00, 0x80, 0xc2, 0x01]);
        assert_eq!(&b[50..55], CKN);
        assert_eq!(&b[55..58], &[0, 0, 0]);
        let f = Frame::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&f).unwrap(), bare());
        assert_eq!(f.signed().len(), b.len() - 16);
    }

    #[test]
    fn every_parameter_set_round_trips() {
        let live = [
            PeerEntry { mi: [1; 12], mn: 9 },
            PeerEntry {
                mi: [2; 12],
                mn: 0xffff_ffff,
            },
        ];
        let pot = [PeerEntry { mi: [3; 12], mn: 1 }];
        let wrapped = [0xaa; 40];
        let r = Repr {
            live_peers: Some(PeerList::Entries(&live)),
            key_server_ssci: 2,
            potential_peers: Some(PeerList::Entries(&pot)),
            sak_use: Some(SakUse {
                latest_an: 2,
                latest_tx: true,
                latest_rx: true,
                old_an: 1,
                old_tx: false,
                old_rx: true,
                plain_tx: false,
                plain_rx: false,
                delay_protect: true,
                keys: Some(SakUseKeys {
                    latest: KeyId { mi: [7; 12], kn: 3 },
                    latest_lowest_pn: 77,
                    old: KeyId { mi: [7; 12], kn: 2 },
                    old_lowest_pn: 1,
                }),
            }),
            distributed_sak: Some(DistributedSak {
                an: 3,
                confidentiality_offset: 1,
                key: Some(DistributedKey {
                    kn: 4,
                    cipher_suite: Some(0x0080_C200_0100_0004),
                    wrapped: &wrapped,
                }),
            }),
            xpn: Some(XpnParams {
                suspension_time: 0,
                latest_lowest_pn_high: 5,
                old_lowest_pn_high: 6,
            }),
            icv_indicator: true,
            ..bare()
        };
        let b = emit(&r);
        let f = Frame::new_checked(&b[..]).unwrap();
        let p = Repr::parse(&f).unwrap();
        assert_eq!(p.basic, r.basic);
        assert_eq!(p.key_server_ssci, 2);
        let got: vec::Vec<_> = p.live_peers.unwrap().iter().collect();
        assert_eq!(got, live);
        assert_eq!(p.potential_peers.unwrap().find(&[3; 12]), Some(1));
        assert_eq!(p.sak_use, r.sak_use);
        assert_eq!(p.xpn, r.xpn);
        assert!(p.icv_indicator);
        let d = p.distributed_sak.unwrap();
        assert_eq!((d.an, d.confidentiality_offset), (3, 1));
        let k = d.key.unwrap();
        assert_eq!(
            (k.kn, k.cipher_suite, k.wrapped),
            (4, Some(0x0080_C200_0100_0004), &wrapped[..])
        );
        // The SAK Use octets 2 and 3 as Figure 11-10 draws them.
        let sak_use = 18 + 40 + 4 + 32 + 4 + 16;
        assert_eq!(
            &b[sak_use..sak_use + 4],
            &[3, 0x80 | 0x30 | 0x04 | 0x01, 0x10, 40]
        );
    }

    #[test]
    fn default_suite_sak_has_no_cipher_suite_field() {
        let wrapped = [0x55; 24];
        let r = Repr {
            distributed_sak: Some(DistributedSak {
                an: 1,
                confidentiality_offset: 1,
                key: Some(DistributedKey {
                    kn: 1,
                    cipher_suite: None,
                    wrapped: &wrapped,
                }),
            }),
            ..bare()
        };
        let b = emit(&r);
        assert_eq!(&b[58..62], &[4, 0x40 | 0x10, 0, 28]);
        let f = Frame::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&f).unwrap().distributed_sak, r.distributed_sak);
    }

    #[test]
    fn unknown_sets_are_skipped_and_bad_ones_refused() {
        let mut b = emit(&bare());
        // Splice an Announcement (type 7) and an unknown type 200 in front of the ICV.
        let extra = [7u8, 0, 0, 2, 0xde, 0xad, 0, 0, 200, 0, 0, 4, 1, 2, 3, 4];
        let icv_at = b.len() - ICV_LEN;
        b.splice(icv_at..icv_at, extra);
        let n = (b.len() - HEADER_LEN) as u16;
        b[16..18].copy_from_slice(&n.to_be_bytes());
        let f = Frame::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&f).unwrap().skipped, 2);

        // A SAK Use of length 20 contradicts Figure 11-10.
        let mut c = b.clone();
        c[icv_at..icv_at + 4].copy_from_slice(&[3, 0, 0, 4]);
        let f = Frame::new_checked(&c[..]).unwrap();
        assert_eq!(Repr::parse(&f), Err(MkpduError::BadParameterSet(3)));
        // A set running past the body.
        let mut c = b.clone();
        c[icv_at + 3] = 200;
        let f = Frame::new_checked(&c[..]).unwrap();
        assert_eq!(Repr::parse(&f), Err(MkpduError::BadParameterSet(7)));
        // Two potential peer lists.
        let mut c = b.clone();
        c[icv_at..icv_at + 16].copy_from_slice(&[2, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let f = Frame::new_checked(&c[..]).unwrap();
        assert_eq!(Repr::parse(&f), Err(MkpduError::DuplicateParameterSet(2)));
    }

    fn with_dcak(body: &[u8]) -> Repr<'_> {
        Repr {
            distributed_cak: Some(DistributedCak { body }),
            ..bare()
        }
    }

    /// The Distributed CAK parameter set as Figure 11-13 draws it: type 5, octet 2 reserved,
    /// the body length, the AES Key Wrap of the CAK, the CKN, padding.
    #[test]
    fn distributed_cak_layout() {
        let mut body = vec![0xa5u8; 24];
        body.extend_from_slice(b"group");
        let b = emit(&with_dcak(&body));
        assert_eq!(b.len(), 18 + 40 + 4 + 32 + 16);
        assert_eq!(&b[58..62], &[5, 0, 0, 29]);
        assert_eq!(&b[62..86], &[0xa5; 24]);
        assert_eq!(&b[86..91], b"group");
        assert_eq!(&b[91..94], &[0, 0, 0]);
        let f = Frame::new_checked(&b[..]).unwrap();
        let r = Repr::parse(&f).unwrap();
        assert_eq!(r.skipped, 0);
        let d = r.distributed_cak.unwrap();
        assert_eq!(d.body, &body[..]);
        assert_eq!(d.split(24), Some((&body[..24], &b"group"[..])));
        assert_eq!(d.splits().count(), 1);
        assert_eq!(d.split(40), None);
    }

    #[test]
    fn distributed_cak_round_trips_for_both_cak_sizes() {
        for (wrapped_len, ckn_len) in [(24usize, 1usize), (24, 32), (40, 1), (40, 16), (40, 32)] {
            let mut body = vec![0x3cu8; wrapped_len];
            body.extend((0..ckn_len).map(|i| i as u8));
            let r = Repr {
                distributed_sak: Some(DistributedSak {
                    an: 1,
                    confidentiality_offset: 1,
                    key: Some(DistributedKey {
                        kn: 2,
                        cipher_suite: Some(0x0080_C200_0100_0002),
                        wrapped: &[0x77; 40],
                    }),
                }),
                ..with_dcak(&body)
            };
            let b = emit(&r);
            let f = Frame::new_checked(&b[..]).unwrap();
            let p = Repr::parse(&f).unwrap();
            assert_eq!(p.distributed_cak, r.distributed_cak);
            assert_eq!(p.distributed_sak, r.distributed_sak);
            let d = p.distributed_cak.unwrap();
            let want = (&body[..wrapped_len], &body[wrapped_len..]);
            assert!(d.splits().any(|s| s == want), "{wrapped_len}/{ckn_len}");
            // 41..=56 octets read both ways; the key wrap's integrity check decides.
            let n = body.len();
            assert_eq!(
                d.splits().count(),
                if (41..=56).contains(&n) { 2 } else { 1 }
            );
        }
    }

    #[test]
    fn distributed_cak_bad_lengths_and_duplicates_are_refused() {
        for n in [0usize, 1, 24, 73, 100] {
            let body = vec![1u8; n];
            let r = with_dcak(&body);
            assert_eq!(
                r.check_emit(),
                Err(MkpduError::BadParameterSet(param::DISTRIBUTED_CAK)),
                "{n}"
            );
            let mut buf = [0u8; 256];
            assert!(r.emit(PAE_GROUP_ADDR, PAE_GROUP_ADDR, &mut buf).is_err());
            // Spliced in by hand: malformed.
            let mut b = emit(&bare());
            let icv_at = b.len() - ICV_LEN;
            let mut set = vec![5u8, 0, (n >> 8) as u8, n as u8];
            set.extend(vec![1u8; padded(n)]);
            b.splice(icv_at..icv_at, set);
            let len = (b.len() - HEADER_LEN) as u16;
            b[16..18].copy_from_slice(&len.to_be_bytes());
            let f = Frame::new_checked(&b[..]).unwrap();
            assert_eq!(
                Repr::parse(&f),
                Err(MkpduError::BadParameterSet(param::DISTRIBUTED_CAK)),
                "{n}"
            );
        }
        let body = [2u8; 28];
        let mut b = emit(&with_dcak(&body));
        let icv_at = b.len() - ICV_LEN;
        let set = b[58..90].to_vec();
        b.splice(icv_at..icv_at, set);
        let len = (b.len() - HEADER_LEN) as u16;
        b[16..18].copy_from_slice(&len.to_be_bytes());
        let f = Frame::new_checked(&b[..]).unwrap();
        assert_eq!(
            Repr::parse(&f),
            Err(MkpduError::DuplicateParameterSet(param::DISTRIBUTED_CAK))
        );
    }

    proptest::proptest! {
        /// Any Distributed CAK body (and any octets after it) parses or is refused, never
        /// panics; a body that parses emits and parses back to itself.
        #[test]
        fn distributed_cak_never_panics_and_round_trips(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..120),
            any_len in 0u16..0x1000,
            true_len in proptest::bool::ANY,
            o2 in proptest::num::u8::ANY,
            tail_bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..12),
        ) {
            // Half the cases give the body's own length, so the valid ones are common.
            let len_field = if true_len { body.len() as u16 } else { any_len };
            let mut b = emit(&bare());
            let icv_at = b.len() - ICV_LEN;
            let mut set = vec![5u8, o2, (len_field >> 8) as u8, len_field as u8];
            set.extend_from_slice(&body);
            set.extend_from_slice(&tail_bytes);
            while set.len() % 4 != 0 {
                set.push(0);
            }
            b.splice(icv_at..icv_at, set);
            let len = (b.len() - HEADER_LEN) as u16;
            b[16..18].copy_from_slice(&len.to_be_bytes());
            let Ok(f) = Frame::new_checked(&b[..]) else { return Ok(()) };
            let Ok(r) = Repr::parse(&f) else { return Ok(()) };
            if let Some(d) = r.distributed_cak {
                proptest::prop_assert!((25..=72).contains(&d.body.len()));
                proptest::prop_assert!(d.splits().count() >= 1);
                let again = emit(&with_dcak(d.body));
                let g = Frame::new_checked(&again[..]).unwrap();
                proptest::prop_assert_eq!(Repr::parse(&g).unwrap().distributed_cak, Some(d));
            }
            // And the same octets as a whole parameter area.
            let _ = Repr::parse_params(&b[HEADER_LEN..b.len() - ICV_LEN]);
        }
    }

    #[test]
    fn frame_checks() {
        let b = emit(&bare());
        assert_eq!(
            Frame::new_checked(&b[..17]).unwrap_err(),
            MkpduError::Truncated
        );
        assert_eq!(
            Frame::new_checked(&b[..b.len() - 1]).unwrap_err(),
            MkpduError::Truncated
        );
        let mut c = b.clone();
        c[12] = 0x89;
        assert_eq!(
            Frame::new_checked(&c[..]).unwrap_err(),
            MkpduError::WrongEtherType
        );
        let mut c = b.clone();
        c[15] = 0; // EAPOL-Packet (EAP)
        assert_eq!(Frame::new_checked(&c[..]).unwrap_err(), MkpduError::NotMka);
        let mut c = b.clone();
        c[17] -= 2;
        assert_eq!(
            Frame::new_checked(&c[..]).unwrap_err(),
            MkpduError::BadBodyLength
        );
        // Ethernet padding after the body is ignored.
        let mut c = b.clone();
        c.extend_from_slice(&[0; 10]);
        let f = Frame::new_checked(&c[..]).unwrap();
        assert_eq!(f.frame(), &b[..]);
        // CKN of 0 and of 33 octets.
        let mut c = b.clone();
        c[21] = 28;
        let f = Frame::new_checked(&c[..]).unwrap();
        assert_eq!(Repr::parse(&f), Err(MkpduError::BadBasicParameterSet));
        let mut c = b.clone();
        c[21] = 28 + 33;
        let f = Frame::new_checked(&c[..]).unwrap();
        assert_eq!(Repr::parse(&f), Err(MkpduError::BadBasicParameterSet));
    }

    #[test]
    fn emit_refuses_what_it_cannot_write() {
        let mut b = [0u8; 200];
        let r = Repr {
            basic: BasicParamSet {
                ckn: &[],
                ..basic()
            },
            ..bare()
        };
        assert!(r.emit(PAE_GROUP_ADDR, PAE_GROUP_ADDR, &mut b).is_err());
        let wrapped = [0u8; 23];
        let r = Repr {
            distributed_sak: Some(DistributedSak {
                an: 0,
                confidentiality_offset: 0,
                key: Some(DistributedKey {
                    kn: 1,
                    cipher_suite: None,
                    wrapped: &wrapped,
                }),
            }),
            ..bare()
        };
        assert!(r.emit(PAE_GROUP_ADDR, PAE_GROUP_ADDR, &mut b).is_err());
        assert_eq!(
            bare().emit(PAE_GROUP_ADDR, PAE_GROUP_ADDR, &mut b[..40]),
            Err(MkpduError::Truncated)
        );
    }

    #[test]
    fn parser_never_panics_on_cut_or_mangled_input() {
        let wrapped = [0x11; 24];
        let live = [PeerEntry { mi: [1; 12], mn: 9 }];
        let r = Repr {
            live_peers: Some(PeerList::Entries(&live)),
            distributed_sak: Some(DistributedSak {
                an: 1,
                confidentiality_offset: 1,
                key: Some(DistributedKey {
                    kn: 1,
                    cipher_suite: None,
                    wrapped: &wrapped,
                }),
            }),
            ..bare()
        };
        let b = emit(&r);
        for cut in 0..b.len() {
            let _ = Repr::parse_params(&b[HEADER_LEN..cut.max(HEADER_LEN)]);
        }
        for i in HEADER_LEN..b.len() {
            for v in [0u8, 0x0f, 0xff] {
                let mut c = b.clone();
                c[i] = v;
                if let Ok(f) = Frame::new_checked(&c[..]) {
                    let _ = Repr::parse(&f);
                }
            }
        }
    }
}
