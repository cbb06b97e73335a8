//! RADIUS packets (RFC 2865 §3 and §5), with EAP over RADIUS (RFC 3579 §3.1).
//!
//! ```text
//! | Code (1) | Identifier (1) | Length (2) | Authenticator (16) | Attributes … |
//! Attribute: | Type (1) | Length (1, includes these 2 octets) | Value (Length - 2) |
//! Vendor-Specific (26): | 26 | Length | Vendor-Id (4) | Vendor-Type (1) | Vendor-Length (1) | … |
//! ```
//!
//! RFC 2865 §3: "The minimum length is 20 and maximum length is 4096." Octets past Length are
//! padding and ignored; a Length longer than the datagram makes the packet malformed. Every
//! attribute must have a Length of at least 2 and lie inside the packet.
//!
//! This module only parses and builds; the authenticators (MD5, HMAC-MD5) are computed by the
//! RADIUS client, which owns the shared secret. Parsing borrows from the buffer, never panics and
//! costs at most one pass over the packet.

use super::Field;
use super::bytes::{array, be16, byte, head, range, tail};
use alloc::vec::Vec;
use core::fmt;

/// Access-Request.
pub const CODE_ACCESS_REQUEST: u8 = 1;
/// Access-Accept.
pub const CODE_ACCESS_ACCEPT: u8 = 2;
/// Access-Reject.
pub const CODE_ACCESS_REJECT: u8 = 3;
/// Access-Challenge.
pub const CODE_ACCESS_CHALLENGE: u8 = 11;
/// Status-Server (RFC 5997).
pub const CODE_STATUS_SERVER: u8 = 12;

/// User-Name.
pub const ATTR_USER_NAME: u8 = 1;
/// NAS-IP-Address.
pub const ATTR_NAS_IP_ADDRESS: u8 = 4;
/// NAS-Port.
pub const ATTR_NAS_PORT: u8 = 5;
/// Service-Type.
pub const ATTR_SERVICE_TYPE: u8 = 6;
/// Framed-MTU.
pub const ATTR_FRAMED_MTU: u8 = 12;
/// Reply-Message.
pub const ATTR_REPLY_MESSAGE: u8 = 18;
/// State.
pub const ATTR_STATE: u8 = 24;
/// Vendor-Specific.
pub const ATTR_VENDOR_SPECIFIC: u8 = 26;
/// Session-Timeout.
pub const ATTR_SESSION_TIMEOUT: u8 = 27;
/// Called-Station-Id.
pub const ATTR_CALLED_STATION_ID: u8 = 30;
/// Calling-Station-Id.
pub const ATTR_CALLING_STATION_ID: u8 = 31;
/// NAS-Identifier.
pub const ATTR_NAS_IDENTIFIER: u8 = 32;
/// NAS-Port-Type.
pub const ATTR_NAS_PORT_TYPE: u8 = 61;
/// EAP-Message (RFC 3579 §3.1).
pub const ATTR_EAP_MESSAGE: u8 = 79;
/// Message-Authenticator (RFC 3579 §3.2), a 16-octet HMAC-MD5.
pub const ATTR_MESSAGE_AUTHENTICATOR: u8 = 80;
/// EAP-Key-Name (RFC 4072 §2.4 / RFC 7268).
pub const ATTR_EAP_KEY_NAME: u8 = 102;

/// NAS-Port-Type value Ethernet.
pub const NAS_PORT_TYPE_ETHERNET: u32 = 15;
/// Service-Type value Framed.
pub const SERVICE_TYPE_FRAMED: u32 = 2;

/// The Microsoft vendor id (RFC 2548).
pub const VENDOR_MICROSOFT: u32 = 311;
/// MS-MPPE-Send-Key (RFC 2548 §2.4.2).
pub const MS_MPPE_SEND_KEY: u8 = 16;
/// MS-MPPE-Recv-Key (RFC 2548 §2.4.3).
pub const MS_MPPE_RECV_KEY: u8 = 17;

/// Length of the header.
pub const HEADER_LEN: usize = 20;
/// Shortest packet (RFC 2865 §3).
pub const MIN_LEN: usize = 20;
/// Longest packet (RFC 2865 §3).
pub const MAX_LEN: usize = 4096;
/// Longest attribute value.
pub const MAX_ATTR_VALUE: usize = 253;
/// Length of the Authenticator field and of a Message-Authenticator value.
pub const AUTHENTICATOR_LEN: usize = 16;

mod field {
    use super::Field;
    pub const CODE: usize = 0;
    pub const IDENTIFIER: usize = 1;
    pub const LENGTH: usize = 2;
    pub const AUTHENTICATOR: Field = 4..20;
    pub const ATTRIBUTES: usize = 20;
}

/// Why a RADIUS packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RadiusError {
    /// Fewer than 20 octets, or fewer than the Length field says.
    Truncated,
    /// A Length outside 20..=4096.
    BadLength,
    /// An attribute with a Length below 2 or past the end of the packet.
    BadAttribute,
    /// A packet being built would exceed 4096 octets.
    TooLong,
    /// An attribute value longer than 253 octets (or a vendor value longer than 247).
    ValueTooLong,
}

impl fmt::Display for RadiusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RadiusError::Truncated => "truncated RADIUS packet",
            RadiusError::BadLength => "RADIUS Length outside 20..=4096",
            RadiusError::BadAttribute => "malformed RADIUS attribute",
            RadiusError::TooLong => "RADIUS packet would exceed 4096 octets",
            RadiusError::ValueTooLong => "RADIUS attribute value longer than 253 octets",
        })
    }
}

impl core::error::Error for RadiusError {}

/// A checked view of one RADIUS packet: the header and every attribute lie inside the buffer.
#[derive(Clone, Copy)]
pub struct Packet<'a> {
    /// Exactly `Length` octets.
    buf: &'a [u8],
}

impl fmt::Debug for Packet<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("radius::Packet")
            .field("code", &self.code())
            .field("identifier", &self.identifier())
            .field("length", &self.buf.len())
            .finish_non_exhaustive()
    }
}

impl<'a> Packet<'a> {
    /// Checks the header, the Length and every attribute. Octets past Length are ignored.
    pub fn new_checked(buf: &'a [u8]) -> Result<Packet<'a>, RadiusError> {
        if buf.len() < MIN_LEN {
            return Err(RadiusError::Truncated);
        }
        let len = usize::from(be16(buf, field::LENGTH));
        if !(MIN_LEN..=MAX_LEN).contains(&len) {
            return Err(RadiusError::BadLength);
        }
        let buf = buf.get(..len).ok_or(RadiusError::Truncated)?;
        let mut attrs = tail(buf, field::ATTRIBUTES);
        while !attrs.is_empty() {
            let alen = usize::from(*attrs.get(1).ok_or(RadiusError::BadAttribute)?);
            if alen < 2 {
                return Err(RadiusError::BadAttribute);
            }
            attrs = attrs.get(alen..).ok_or(RadiusError::BadAttribute)?;
        }
        Ok(Packet { buf })
    }

    /// Code.
    pub fn code(&self) -> u8 {
        byte(self.buf, field::CODE)
    }

    /// Identifier.
    pub fn identifier(&self) -> u8 {
        byte(self.buf, field::IDENTIFIER)
    }

    /// Authenticator (Request or Response).
    pub fn authenticator(&self) -> [u8; AUTHENTICATOR_LEN] {
        array(self.buf, field::AUTHENTICATOR.start)
    }

    /// The packet's octets (exactly Length of them).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// The attribute octets.
    pub fn attribute_bytes(&self) -> &'a [u8] {
        tail(self.buf, field::ATTRIBUTES)
    }

    /// The attributes in packet order.
    pub fn attributes(&self) -> Attributes<'a> {
        Attributes {
            rest: self.attribute_bytes(),
            offset: field::ATTRIBUTES,
        }
    }

    /// The value of the first attribute of type `ty`.
    pub fn attr(&self, ty: u8) -> Option<&'a [u8]> {
        self.attributes().find(|a| a.ty == ty).map(|a| a.value)
    }

    /// How many attributes of type `ty` the packet carries.
    pub fn count(&self, ty: u8) -> usize {
        self.attributes().filter(|a| a.ty == ty).count()
    }

    /// The 4-octet integer value of the first attribute `ty`; `None` when missing or not 4 octets.
    pub fn attr_u32(&self, ty: u8) -> Option<u32> {
        let v = self.attr(ty)?;
        let a: [u8; 4] = v.try_into().ok()?;
        Some(u32::from_be_bytes(a))
    }

    /// The EAP packet: every EAP-Message attribute concatenated in order (RFC 3579 §3.1);
    /// `None` when the packet has none.
    pub fn eap_message(&self) -> Option<Vec<u8>> {
        let mut out: Option<Vec<u8>> = None;
        for a in self.attributes().filter(|a| a.ty == ATTR_EAP_MESSAGE) {
            out.get_or_insert_with(Vec::new).extend_from_slice(a.value);
        }
        out
    }

    /// The value of the first Vendor-Specific sub-attribute `vendor`/`vtype`.
    pub fn vendor_attr(&self, vendor: u32, vtype: u8) -> Option<&'a [u8]> {
        self.vendor_attributes()
            .find(|v| v.vendor == vendor && v.vtype == vtype)
            .map(|v| v.value)
    }

    /// Every Vendor-Specific sub-attribute in the RFC 2865 §5.26 suggested format. Vendor-Specific
    /// attributes whose contents do not follow that format are skipped.
    pub fn vendor_attributes(&self) -> impl Iterator<Item = VendorAttribute<'a>> + 'a {
        self.attributes()
            .filter(|a| a.ty == ATTR_VENDOR_SPECIFIC)
            .flat_map(|a| VendorAttributes::new(a.value))
    }
}

/// One attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attribute<'a> {
    /// Type.
    pub ty: u8,
    /// Value (Length - 2 octets).
    pub value: &'a [u8],
    /// Offset of the attribute's Type octet in the packet.
    pub offset: usize,
}

/// Iterator over the attributes of a checked packet (or of raw attribute octets: it stops at
/// the first malformed one).
#[derive(Clone, Debug)]
pub struct Attributes<'a> {
    rest: &'a [u8],
    offset: usize,
}

impl<'a> Attributes<'a> {
    /// Iterates over raw attribute octets; stops at the first malformed attribute.
    pub fn new(attrs: &'a [u8]) -> Attributes<'a> {
        Attributes {
            rest: attrs,
            offset: field::ATTRIBUTES,
        }
    }
}

impl<'a> Iterator for Attributes<'a> {
    type Item = Attribute<'a>;

    fn next(&mut self) -> Option<Attribute<'a>> {
        let ty = *self.rest.first()?;
        let len = usize::from(*self.rest.get(1)?);
        if len < 2 {
            self.rest = &[];
            return None;
        }
        let Some(value) = self.rest.get(2..len) else {
            self.rest = &[];
            return None;
        };
        let offset = self.offset;
        self.rest = tail(self.rest, len);
        self.offset = self.offset.saturating_add(len);
        Some(Attribute { ty, value, offset })
    }
}

/// One Vendor-Specific sub-attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VendorAttribute<'a> {
    /// Vendor-Id (SMI Network Management Private Enterprise Code).
    pub vendor: u32,
    /// Vendor type.
    pub vtype: u8,
    /// Value.
    pub value: &'a [u8],
}

/// Iterator over the sub-attributes of one Vendor-Specific value.
#[derive(Clone, Debug)]
struct VendorAttributes<'a> {
    vendor: u32,
    rest: &'a [u8],
}

impl<'a> VendorAttributes<'a> {
    fn new(value: &'a [u8]) -> VendorAttributes<'a> {
        match value.split_first_chunk::<4>() {
            Some((v, rest)) => VendorAttributes {
                vendor: u32::from_be_bytes(*v),
                rest,
            },
            None => VendorAttributes {
                vendor: 0,
                rest: &[],
            },
        }
    }
}

impl<'a> Iterator for VendorAttributes<'a> {
    type Item = VendorAttribute<'a>;

    fn next(&mut self) -> Option<VendorAttribute<'a>> {
        let vtype = *self.rest.first()?;
        let len = usize::from(*self.rest.get(1)?);
        let value = if len >= 2 {
            self.rest.get(2..len)
        } else {
            None
        };
        let Some(value) = value else {
            self.rest = &[];
            return None;
        };
        self.rest = tail(self.rest, len);
        Some(VendorAttribute {
            vendor: self.vendor,
            vtype,
            value,
        })
    }
}

/// Builds one RADIUS packet. The Length field is written by [`Builder::finish`]; authenticators
/// are the caller's (the builder only reserves the Message-Authenticator's 16 octets).
#[derive(Clone)]
pub struct Builder {
    buf: Vec<u8>,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("radius::Builder")
            .field("len", &self.buf.len())
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A packet with `code`, `identifier` and `authenticator` and no attributes yet.
    pub fn new(code: u8, identifier: u8, authenticator: &[u8; AUTHENTICATOR_LEN]) -> Builder {
        let mut buf = Vec::with_capacity(256);
        buf.extend_from_slice(&[code, identifier, 0, 0]);
        buf.extend_from_slice(authenticator);
        Builder { buf }
    }

    /// The packet's length so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether no attribute was added yet (always false: the header is there).
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Appends one attribute.
    pub fn attr(&mut self, ty: u8, value: &[u8]) -> Result<&mut Builder, RadiusError> {
        if value.len() > MAX_ATTR_VALUE {
            return Err(RadiusError::ValueTooLong);
        }
        if self.buf.len() + 2 + value.len() > MAX_LEN {
            return Err(RadiusError::TooLong);
        }
        // Both fit in a u8: value.len() <= 253.
        let len = u8::try_from(value.len() + 2).map_err(|_| RadiusError::ValueTooLong)?;
        self.buf.extend_from_slice(&[ty, len]);
        self.buf.extend_from_slice(value);
        Ok(self)
    }

    /// Appends a 4-octet integer attribute.
    pub fn attr_u32(&mut self, ty: u8, value: u32) -> Result<&mut Builder, RadiusError> {
        self.attr(ty, &value.to_be_bytes())
    }

    /// Appends one Vendor-Specific attribute holding one sub-attribute.
    pub fn vendor_attr(
        &mut self,
        vendor: u32,
        vtype: u8,
        value: &[u8],
    ) -> Result<&mut Builder, RadiusError> {
        if value.len() > MAX_ATTR_VALUE - 6 {
            return Err(RadiusError::ValueTooLong);
        }
        let vlen = u8::try_from(value.len() + 2).map_err(|_| RadiusError::ValueTooLong)?;
        let mut v = Vec::with_capacity(value.len() + 6);
        v.extend_from_slice(&vendor.to_be_bytes());
        v.extend_from_slice(&[vtype, vlen]);
        v.extend_from_slice(value);
        self.attr(ATTR_VENDOR_SPECIFIC, &v)
    }

    /// Appends an EAP packet as EAP-Message attributes of at most 253 octets each
    /// (RFC 3579 §3.1). An empty `eap` adds nothing.
    pub fn eap_message(&mut self, eap: &[u8]) -> Result<&mut Builder, RadiusError> {
        let n = eap.len().div_ceil(MAX_ATTR_VALUE);
        if self.buf.len() + eap.len() + 2 * n > MAX_LEN {
            return Err(RadiusError::TooLong);
        }
        for chunk in eap.chunks(MAX_ATTR_VALUE) {
            self.attr(ATTR_EAP_MESSAGE, chunk)?;
        }
        Ok(self)
    }

    /// Appends a Message-Authenticator of 16 zero octets and returns the offset of its value,
    /// where the caller writes the HMAC-MD5 computed over the finished packet.
    pub fn message_authenticator(&mut self) -> Result<usize, RadiusError> {
        let at = self.buf.len() + 2;
        self.attr(ATTR_MESSAGE_AUTHENTICATOR, &[0; AUTHENTICATOR_LEN])?;
        Ok(at)
    }

    /// Writes the Length field and returns the packet.
    pub fn finish(mut self) -> Vec<u8> {
        // The builder never grows past MAX_LEN (4096), which fits in a u16.
        let len = u16::try_from(self.buf.len())
            .unwrap_or(u16::MAX)
            .to_be_bytes();
        if let Some(l) = self.buf.get_mut(field::LENGTH..field::LENGTH + 2) {
            l.copy_from_slice(&len);
        }
        self.buf
    }
}

/// The packet `buf` with the 16 value octets of the Message-Authenticator at `at` zeroed, as
/// RFC 3579 §3.2 computes it (a copy; `buf` is not changed).
pub fn zero_message_authenticator(buf: &[u8], at: usize) -> Vec<u8> {
    let mut v = buf.to_vec();
    if let Some(ma) = v.get_mut(at..at.saturating_add(AUTHENTICATOR_LEN)) {
        ma.fill(0);
    }
    v
}

/// The offset of the value of the (first) Message-Authenticator of `packet`, when it has one
/// of the right length.
pub fn message_authenticator_offset(packet: &Packet<'_>) -> Option<usize> {
    packet
        .attributes()
        .find(|a| a.ty == ATTR_MESSAGE_AUTHENTICATOR)
        .filter(|a| a.value.len() == AUTHENTICATOR_LEN)
        .map(|a| a.offset + 2)
}

/// The header's first 4 octets and the attributes with a different authenticator in between:
/// the input of the Response Authenticator, `Code‖ID‖Length‖RequestAuth‖Attributes` (RFC 2865
/// §3), without the secret.
pub fn with_authenticator(packet: &Packet<'_>, auth: &[u8; AUTHENTICATOR_LEN]) -> Vec<u8> {
    let bytes = packet.as_bytes();
    let mut v = Vec::with_capacity(bytes.len());
    v.extend_from_slice(head(bytes, 4));
    v.extend_from_slice(auth);
    v.extend_from_slice(range(bytes, field::ATTRIBUTES..bytes.len()));
    v
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn build_and_parse() {
        let mut b = Builder::new(CODE_ACCESS_REQUEST, 7, &[0xAA; 16]);
        b.attr(ATTR_USER_NAME, b"ecu1").unwrap();
        b.attr_u32(ATTR_NAS_PORT_TYPE, NAS_PORT_TYPE_ETHERNET)
            .unwrap();
        let eap: Vec<u8> = (0..600u32).map(|i| i as u8).collect();
        b.eap_message(&eap).unwrap();
        b.vendor_attr(VENDOR_MICROSOFT, MS_MPPE_RECV_KEY, &[1, 2, 3])
            .unwrap();
        let ma = b.message_authenticator().unwrap();
        let pkt = b.finish();
        let p = Packet::new_checked(&pkt).unwrap();
        assert_eq!(p.code(), CODE_ACCESS_REQUEST);
        assert_eq!(p.identifier(), 7);
        assert_eq!(p.authenticator(), [0xAA; 16]);
        assert_eq!(p.attr(ATTR_USER_NAME), Some(&b"ecu1"[..]));
        assert_eq!(p.attr_u32(ATTR_NAS_PORT_TYPE), Some(15));
        assert_eq!(p.count(ATTR_EAP_MESSAGE), 3);
        assert_eq!(p.eap_message().unwrap(), eap);
        assert_eq!(
            p.vendor_attr(VENDOR_MICROSOFT, MS_MPPE_RECV_KEY),
            Some(&[1u8, 2, 3][..])
        );
        assert_eq!(message_authenticator_offset(&p), Some(ma));
        assert_eq!(pkt.len(), usize::from(u16::from_be_bytes([pkt[2], pkt[3]])));
    }

    #[test]
    fn eap_split_at_253() {
        let mut b = Builder::new(CODE_ACCESS_REQUEST, 0, &[0; 16]);
        b.eap_message(&[9; 506]).unwrap();
        let pkt = b.finish();
        let p = Packet::new_checked(&pkt).unwrap();
        let lens: Vec<usize> = p.attributes().map(|a| a.value.len()).collect();
        assert_eq!(lens, vec![253, 253]);
        assert!(p.attr(ATTR_STATE).is_none());
        assert!(p.eap_message().is_some());
    }

    #[test]
    fn bounds() {
        assert_eq!(
            Packet::new_checked(&[0; 19]).unwrap_err(),
            RadiusError::Truncated
        );
        let mut p = vec![2, 1, 0, 19];
        p.extend_from_slice(&[0; 16]);
        assert_eq!(Packet::new_checked(&p).unwrap_err(), RadiusError::BadLength);
        p[2..4].copy_from_slice(&4097u16.to_be_bytes());
        assert_eq!(Packet::new_checked(&p).unwrap_err(), RadiusError::BadLength);
        p[2..4].copy_from_slice(&24u16.to_be_bytes());
        assert_eq!(Packet::new_checked(&p).unwrap_err(), RadiusError::Truncated);
        // Attribute with length 1, then one running past Length.
        p.extend_from_slice(&[1, 1, 0, 0]);
        assert_eq!(
            Packet::new_checked(&p).unwrap_err(),
            RadiusError::BadAttribute
        );
        p[21] = 5;
        assert_eq!(
            Packet::new_checked(&p).unwrap_err(),
            RadiusError::BadAttribute
        );
        p[21] = 4;
        assert!(Packet::new_checked(&p).is_ok());
        // Padding past Length is ignored.
        p.extend_from_slice(&[0xFF; 3]);
        assert_eq!(Packet::new_checked(&p).unwrap().as_bytes().len(), 24);
        // Builder bounds.
        let mut b = Builder::new(1, 0, &[0; 16]);
        assert_eq!(b.attr(1, &[0; 254]).unwrap_err(), RadiusError::ValueTooLong);
        assert_eq!(b.eap_message(&[0; 4096]).unwrap_err(), RadiusError::TooLong);
    }

    #[test]
    fn never_panics_on_junk() {
        let mut x: u32 = 1;
        for n in 0..2000usize {
            let len = n % 300;
            let mut buf = vec![0u8; len];
            for b in buf.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            if len >= 4 {
                buf[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            }
            if let Ok(p) = Packet::new_checked(&buf) {
                let _ = p.eap_message();
                let _ = p.vendor_attributes().count();
                let _ = message_authenticator_offset(&p);
            }
            let _ = Attributes::new(&buf).count();
        }
    }
}
