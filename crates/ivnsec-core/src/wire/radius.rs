//! RADIUS packets (RFC 2865 §3, §5) as the 802.1X authenticator exchanges them with its server
//! (RFC 3579: EAP-Message, Message-Authenticator; RFC 2548: MS-MPPE keys). Parsing and building
//! only: the authenticators and key decryption (MD5, HMAC-MD5) are the node crate's RADIUS
//! client's.
//!
//! ```text
//! Code (1) | Identifier (1) | Length (2) | Authenticator (16) | Attributes: Type (1) Length (1) Value
//! ```
//!
//! A packet is 20 to 4096 octets; each attribute's length covers its two header octets and is
//! at least 2; a Vendor-Specific attribute (26) holds a 4-octet vendor id and the vendor's
//! attributes in the same type/length form.

use alloc::vec::Vec;

use super::WireError;

/// Packet codes.
pub mod code {
    pub const ACCESS_REQUEST: u8 = 1;
    pub const ACCESS_ACCEPT: u8 = 2;
    pub const ACCESS_REJECT: u8 = 3;
    pub const ACCESS_CHALLENGE: u8 = 11;
    pub const STATUS_SERVER: u8 = 12;
}

/// Attribute types.
pub mod attr {
    pub const USER_NAME: u8 = 1;
    pub const NAS_IP_ADDRESS: u8 = 4;
    pub const NAS_PORT: u8 = 5;
    pub const SERVICE_TYPE: u8 = 6;
    pub const FRAMED_MTU: u8 = 12;
    pub const REPLY_MESSAGE: u8 = 18;
    pub const STATE: u8 = 24;
    pub const VENDOR_SPECIFIC: u8 = 26;
    pub const SESSION_TIMEOUT: u8 = 27;
    pub const CALLED_STATION_ID: u8 = 30;
    pub const CALLING_STATION_ID: u8 = 31;
    pub const NAS_IDENTIFIER: u8 = 32;
    pub const NAS_PORT_TYPE: u8 = 61;
    pub const EAP_MESSAGE: u8 = 79;
    pub const MESSAGE_AUTHENTICATOR: u8 = 80;
    pub const EAP_KEY_NAME: u8 = 102;
}

/// Microsoft's vendor id and its MPPE key attributes (RFC 2548 2.4.2, 2.4.3).
pub mod microsoft {
    pub const VENDOR_ID: u32 = 311;
    pub const MPPE_SEND_KEY: u8 = 16;
    pub const MPPE_RECV_KEY: u8 = 17;
}

/// NAS-Port-Type Ethernet (RFC 2865 5.41).
pub const NAS_PORT_TYPE_ETHERNET: u32 = 15;
/// Service-Type Framed.
pub const SERVICE_TYPE_FRAMED: u32 = 2;
/// Length of the packet header.
pub const HEADER_LEN: usize = 20;
/// Largest RADIUS packet (RFC 2865 3).
pub const MAX_LEN: usize = 4096;
/// Largest attribute value.
pub const MAX_VALUE: usize = 253;
/// Offset of the 16-octet authenticator.
pub const AUTHENTICATOR: core::ops::Range<usize> = 4..20;

/// A checked RADIUS packet: the length field equals the bytes given (trailing bytes are cut
/// off as RFC 2865 3 says), and every attribute is well formed.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    bytes: &'a [u8],
}

impl<'a> Packet<'a> {
    /// Checks the header, the length and every attribute's length.
    pub fn parse(b: &'a [u8]) -> Result<Packet<'a>, WireError> {
        let len = b
            .get(2..4)
            .and_then(|l| <[u8; 2]>::try_from(l).ok())
            .map(|l| usize::from(u16::from_be_bytes(l)))
            .ok_or(WireError::Truncated)?;
        if !(HEADER_LEN..=MAX_LEN).contains(&len) {
            return Err(WireError::Malformed);
        }
        let bytes = b.get(..len).ok_or(WireError::Truncated)?;
        let p = Packet { bytes };
        let mut rest = p.attr_bytes();
        while !rest.is_empty() {
            let (_, _, r) = split_attr(rest)?;
            rest = r;
        }
        Ok(p)
    }

    pub fn code(&self) -> u8 {
        self.bytes.first().copied().unwrap_or(0)
    }

    pub fn identifier(&self) -> u8 {
        self.bytes.get(1).copied().unwrap_or(0)
    }

    /// The 16-octet Request or Response Authenticator.
    pub fn authenticator(&self) -> &'a [u8] {
        self.bytes.get(AUTHENTICATOR).unwrap_or_default()
    }

    /// The whole packet.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    fn attr_bytes(&self) -> &'a [u8] {
        self.bytes.get(HEADER_LEN..).unwrap_or_default()
    }

    /// Every attribute as (type, value), in order.
    pub fn attributes(&self) -> Attributes<'a> {
        Attributes {
            rest: self.attr_bytes(),
        }
    }

    /// The first value of attribute `t`.
    pub fn first(&self, t: u8) -> Option<&'a [u8]> {
        self.attributes().find(|(k, _)| *k == t).map(|(_, v)| v)
    }

    /// The values of every EAP-Message, joined (RFC 3579 3.1); `None` without one.
    pub fn eap_message(&self) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for (t, v) in self.attributes() {
            if t == attr::EAP_MESSAGE {
                out.get_or_insert_with(Vec::new).extend_from_slice(v);
            }
        }
        out
    }

    /// The value of vendor `vendor`'s attribute `t` inside a Vendor-Specific attribute.
    pub fn vendor_attribute(&self, vendor: u32, t: u8) -> Option<&'a [u8]> {
        self.attributes()
            .filter(|(k, _)| *k == attr::VENDOR_SPECIFIC)
            .filter_map(|(_, v)| {
                let id = <[u8; 4]>::try_from(v.get(..4)?).ok()?;
                (u32::from_be_bytes(id) == vendor).then_some(v.get(4..)?)
            })
            .flat_map(|inner| Attributes { rest: inner })
            .find(|(k, _)| *k == t)
            .map(|(_, v)| v)
    }

    /// Offset of the Message-Authenticator's value in the packet, if it has one.
    pub fn message_authenticator_offset(&self) -> Option<usize> {
        let mut off = HEADER_LEN;
        for (t, v) in self.attributes() {
            if t == attr::MESSAGE_AUTHENTICATOR && v.len() == 16 {
                return Some(off + 2);
            }
            off += 2 + v.len();
        }
        None
    }
}

/// (type, value, rest) of the first attribute of `b`.
fn split_attr(b: &[u8]) -> Result<(u8, &[u8], &[u8]), WireError> {
    let (&t, r) = b.split_first().ok_or(WireError::Truncated)?;
    let (&l, _) = r.split_first().ok_or(WireError::Truncated)?;
    let l = usize::from(l);
    if l < 2 {
        return Err(WireError::Malformed);
    }
    let value = b.get(2..l).ok_or(WireError::Truncated)?;
    let rest = b.get(l..).ok_or(WireError::Truncated)?;
    Ok((t, value, rest))
}

/// The attributes of a checked packet (or a vendor attribute's body); stops at the first
/// malformed one.
#[derive(Clone, Debug)]
pub struct Attributes<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Attributes<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match split_attr(self.rest) {
            Ok((t, v, r)) => {
                self.rest = r;
                Some((t, v))
            }
            Err(_) => {
                self.rest = &[];
                None
            }
        }
    }
}

/// Builds a packet: header, then attributes appended in order; [`Builder::finish`] writes the
/// length. Values longer than [`MAX_VALUE`] are refused, and so is a packet over [`MAX_LEN`].
#[derive(Clone, Debug)]
pub struct Builder {
    buf: Vec<u8>,
}

impl Builder {
    pub fn new(code: u8, identifier: u8, authenticator: &[u8; 16]) -> Builder {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&[code, identifier, 0, 0]);
        buf.extend_from_slice(authenticator);
        Builder { buf }
    }

    /// Appends attribute `t` with `value`.
    pub fn attr(&mut self, t: u8, value: &[u8]) -> Result<&mut Builder, WireError> {
        if value.len() > MAX_VALUE || self.buf.len() + 2 + value.len() > MAX_LEN {
            return Err(WireError::Malformed);
        }
        self.buf.push(t);
        self.buf.push((value.len() + 2) as u8);
        self.buf.extend_from_slice(value);
        Ok(self)
    }

    /// Appends a 4-octet integer attribute.
    pub fn attr_u32(&mut self, t: u8, v: u32) -> Result<&mut Builder, WireError> {
        self.attr(t, &v.to_be_bytes())
    }

    /// Appends `eap` as EAP-Message attributes of at most 253 octets each (RFC 3579 3.1).
    pub fn eap_message(&mut self, eap: &[u8]) -> Result<&mut Builder, WireError> {
        for chunk in eap.chunks(MAX_VALUE) {
            self.attr(attr::EAP_MESSAGE, chunk)?;
        }
        Ok(self)
    }

    /// Appends a zeroed Message-Authenticator; returns the offset of its value (the caller
    /// computes the HMAC over the finished packet and writes it there).
    pub fn message_authenticator(&mut self) -> Result<usize, WireError> {
        self.attr(attr::MESSAGE_AUTHENTICATOR, &[0u8; 16])?;
        Ok(self.buf.len() - 16)
    }

    /// The packet with its length written.
    pub fn finish(mut self) -> Vec<u8> {
        let len = (self.buf.len() as u16).to_be_bytes();
        if let Some(l) = self.buf.get_mut(2..4) {
            l.copy_from_slice(&len);
        }
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn build_then_parse_round_trips_and_joins_eap_messages() {
        let eap: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
        let mut b = Builder::new(code::ACCESS_REQUEST, 7, &[0xab; 16]);
        b.attr(attr::USER_NAME, b"sensor1").unwrap();
        b.eap_message(&eap).unwrap();
        let off = b.message_authenticator().unwrap();
        let pkt = b.finish();
        let p = Packet::parse(&pkt).unwrap();
        assert_eq!(p.code(), code::ACCESS_REQUEST);
        assert_eq!(p.identifier(), 7);
        assert_eq!(p.authenticator(), &[0xab; 16]);
        assert_eq!(p.first(attr::USER_NAME), Some(&b"sensor1"[..]));
        assert_eq!(p.eap_message().unwrap(), eap);
        assert_eq!(
            p.attributes()
                .filter(|(t, _)| *t == attr::EAP_MESSAGE)
                .count(),
            3
        );
        assert_eq!(p.message_authenticator_offset(), Some(off));
        assert_eq!(usize::from(u16::from_be_bytes([pkt[2], pkt[3]])), pkt.len());
    }

    #[test]
    fn vendor_attributes_are_found_by_vendor_and_type() {
        let mut vsa = 311u32.to_be_bytes().to_vec();
        vsa.extend_from_slice(&[microsoft::MPPE_RECV_KEY, 6, 1, 2, 3, 4]);
        vsa.extend_from_slice(&[microsoft::MPPE_SEND_KEY, 4, 9, 9]);
        let mut b = Builder::new(code::ACCESS_ACCEPT, 1, &[0; 16]);
        b.attr(attr::VENDOR_SPECIFIC, &vsa).unwrap();
        let pkt = b.finish();
        let p = Packet::parse(&pkt).unwrap();
        assert_eq!(
            p.vendor_attribute(311, microsoft::MPPE_RECV_KEY),
            Some(&[1, 2, 3, 4][..])
        );
        assert_eq!(
            p.vendor_attribute(311, microsoft::MPPE_SEND_KEY),
            Some(&[9, 9][..])
        );
        assert_eq!(p.vendor_attribute(9, microsoft::MPPE_SEND_KEY), None);
    }

    #[test]
    fn bad_lengths_are_refused() {
        let mut pkt = Builder::new(code::ACCESS_ACCEPT, 1, &[0; 16]).finish();
        assert!(Packet::parse(&pkt[..19]).is_err());
        pkt[3] = 19;
        assert_eq!(Packet::parse(&pkt).unwrap_err(), WireError::Malformed);
        let mut b = Builder::new(code::ACCESS_ACCEPT, 1, &[0; 16]);
        b.attr(attr::STATE, b"abc").unwrap();
        let mut pkt = b.finish();
        pkt[21] = 1; // attribute length below 2
        assert!(Packet::parse(&pkt).is_err());
        pkt[21] = 9; // past the end
        assert!(Packet::parse(&pkt).is_err());
        assert!(
            Builder::new(1, 1, &[0; 16])
                .attr(attr::STATE, &[0; 254])
                .is_err()
        );
        // Trailing bytes past the length field are ignored.
        let mut long = Builder::new(code::ACCESS_REJECT, 2, &[0; 16]).finish();
        long.extend_from_slice(&[0xff; 7]);
        assert_eq!(Packet::parse(&long).unwrap().bytes().len(), 20);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
            if let Ok(p) = Packet::parse(&b) {
                let _ = p.eap_message();
                let _ = p.vendor_attribute(311, 16);
                let _ = p.message_authenticator_offset();
                let _ = p.attributes().count();
            }
        }
    }
}
