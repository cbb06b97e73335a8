//! EAPOL: the EAP over LANs PDU of IEEE Std 802.1X-2020 clause 11.3.
//!
//! ```text
//! Ethernet  | DA (6) | SA (6) | EtherType 0x888E |
//! EAPOL     | Protocol Version (1) | Packet Type (1) | Packet Body Length (2) | Packet Body |
//! ```
//!
//! Packet types (Table 11-3): EAPOL-EAP (0), EAPOL-Start (1), EAPOL-Logoff (2), EAPOL-Key (3),
//! EAPOL-MKA (5), EAPOL-Announcement (7); others parse and are left to the caller. A driver
//! reads [`packet_type`] of a received frame to hand MKA (5) to the MKA participant and the
//! rest to the PAE. Octets after the packet body (Ethernet padding) are ignored. The EtherType,
//! the protocol version and the group address are shared with [`super::mkpdu`].

use super::bytes::{array, be16, byte, put, put_byte, range, tail};
use super::ethernet::MacAddr;
use super::{Field, WireError};

pub use super::mkpdu::{EAPOL_VERSION, ETHERTYPE_EAPOL, PAE_GROUP_ADDR};

/// EAPOL packet types (IEEE 802.1X-2020 Table 11-3).
pub mod packet_types {
    pub const EAP_PACKET: u8 = 0;
    pub const START: u8 = 1;
    pub const LOGOFF: u8 = 2;
    pub const KEY: u8 = 3;
    pub const MKA: u8 = 5;
    pub const ANNOUNCEMENT: u8 = 7;
}

mod field {
    use super::Field;
    pub const VERSION: usize = 0;
    pub const TYPE: usize = 1;
    pub const LEN: Field = 2..4;
    pub const BODY: usize = 4;
}

/// Length of the EAPOL header.
pub const HEADER_LEN: usize = field::BODY;
/// Length of the Ethernet and EAPOL headers in front of the packet body.
pub const FRAME_HEADER_LEN: usize = super::ethernet::HEADER_LEN + HEADER_LEN;

/// A view of an EAPOL PDU (without the Ethernet header).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Checks that the header and the packet body it announces are inside the buffer.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let p = Packet { buffer };
        let b = p.buffer.as_ref();
        if b.len() < HEADER_LEN || b.len() < HEADER_LEN + p.body_len() {
            return Err(WireError::Truncated);
        }
        Ok(p)
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::VERSION)
    }

    pub fn packet_type(&self) -> u8 {
        byte(self.buffer.as_ref(), field::TYPE)
    }

    pub fn body_len(&self) -> usize {
        usize::from(be16(self.buffer.as_ref(), field::LEN.start))
    }

    /// The packet body (without Ethernet padding).
    pub fn body(&self) -> &[u8] {
        range(
            self.buffer.as_ref(),
            field::BODY..field::BODY + self.body_len(),
        )
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::VERSION, v);
    }

    pub fn set_packet_type(&mut self, t: u8) {
        put_byte(self.buffer.as_mut(), field::TYPE, t);
    }

    pub fn set_body_len(&mut self, n: u16) {
        put(self.buffer.as_mut(), field::LEN.start, &n.to_be_bytes());
    }
}

/// An EAPOL PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr<'a> {
    pub version: u8,
    pub packet_type: u8,
    pub body: &'a [u8],
}

impl<'a> Repr<'a> {
    pub fn parse<T: AsRef<[u8]>>(packet: &'a Packet<T>) -> Repr<'a> {
        Repr {
            version: packet.version(),
            packet_type: packet.packet_type(),
            body: packet.body(),
        }
    }

    /// Parses an EAPOL PDU from bytes (padding after the body allowed).
    pub fn parse_bytes(b: &'a [u8]) -> Result<Repr<'a>, WireError> {
        let p = Packet::new_checked(b)?;
        let body = b
            .get(HEADER_LEN..HEADER_LEN + p.body_len())
            .ok_or(WireError::Truncated)?;
        Ok(Repr {
            version: p.version(),
            packet_type: p.packet_type(),
            body,
        })
    }

    /// A PDU of this implementation's version.
    pub const fn new(packet_type: u8, body: &'a [u8]) -> Repr<'a> {
        Repr {
            version: EAPOL_VERSION,
            packet_type,
            body,
        }
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.body.len()
    }

    /// Writes the PDU into `buf[..buffer_len()]`; `Malformed` for a body over 65535 octets,
    /// `Truncated` for a short buffer.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let n = u16::try_from(self.body.len()).map_err(|_| WireError::Malformed)?;
        let out = buf
            .get_mut(..self.buffer_len())
            .ok_or(WireError::Truncated)?;
        put_byte(out, field::VERSION, self.version);
        put_byte(out, field::TYPE, self.packet_type);
        put(out, field::LEN.start, &n.to_be_bytes());
        put(out, field::BODY, self.body);
        Ok(self.buffer_len())
    }
}

/// A whole Ethernet frame carrying an EAPOL PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRepr<'a> {
    pub dst: MacAddr,
    pub src: MacAddr,
    pub eapol: Repr<'a>,
}

impl<'a> FrameRepr<'a> {
    /// Parses DA, SA, the EtherType (must be 0x888E) and the EAPOL PDU.
    pub fn parse(frame: &'a [u8]) -> Result<FrameRepr<'a>, WireError> {
        let eth = super::ethernet::Frame::new_checked(frame)?;
        if eth.ethertype() != ETHERTYPE_EAPOL {
            return Err(WireError::WrongEtherType);
        }
        let eapol = Repr::parse_bytes(tail(frame, super::ethernet::HEADER_LEN))?;
        Ok(FrameRepr {
            dst: MacAddr(array(frame, 0)),
            src: MacAddr(array(frame, 6)),
            eapol,
        })
    }

    pub fn buffer_len(&self) -> usize {
        super::ethernet::HEADER_LEN + self.eapol.buffer_len()
    }

    /// Writes the frame into `buf[..buffer_len()]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if buf.len() < self.buffer_len() {
            return Err(WireError::Truncated);
        }
        put(buf, 0, &self.dst.0);
        put(buf, 6, &self.src.0);
        put(buf, 12, &ETHERTYPE_EAPOL.to_be_bytes());
        let rest = buf
            .get_mut(super::ethernet::HEADER_LEN..)
            .ok_or(WireError::Truncated)?;
        self.eapol.emit(rest)?;
        Ok(self.buffer_len())
    }

    /// The frame as a new vector.
    pub fn to_vec(&self) -> Result<alloc::vec::Vec<u8>, WireError> {
        let mut v = alloc::vec![0u8; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

/// The EAPOL packet type of a whole Ethernet frame, or `None` when it is not an EAPOL frame
/// (EtherType) or too short for the EAPOL header. Cheap: reads two fields, checks nothing else.
pub fn packet_type(frame: &[u8]) -> Option<u8> {
    if frame.len() < FRAME_HEADER_LEN || be16(frame, 12) != ETHERTYPE_EAPOL {
        return None;
    }
    frame.get(15).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);

    #[test]
    fn frame_round_trip_and_padding() {
        let body = [1u8, 2, 3, 4, 5];
        let f = FrameRepr {
            dst: PAE_GROUP_ADDR,
            src: A,
            eapol: Repr::new(packet_types::EAP_PACKET, &body),
        };
        let mut v = f.to_vec().unwrap();
        assert_eq!(v.len(), 18 + 5);
        assert_eq!(&v[12..18], &[0x88, 0x8e, 3, 0, 0, 5]);
        assert_eq!(FrameRepr::parse(&v).unwrap(), f);
        assert_eq!(packet_type(&v), Some(0));
        v.resize(60, 0);
        assert_eq!(FrameRepr::parse(&v).unwrap(), f);
        // Body longer than the frame.
        assert_eq!(FrameRepr::parse(&v[..20]), Err(WireError::Truncated));
        v[12] = 0x08;
        assert_eq!(FrameRepr::parse(&v), Err(WireError::WrongEtherType));
        assert_eq!(packet_type(&v), None);
        let start = FrameRepr {
            dst: PAE_GROUP_ADDR,
            src: A,
            eapol: Repr::new(packet_types::START, &[]),
        };
        let s = start.to_vec().unwrap();
        assert_eq!(s.len(), 18);
        assert_eq!(packet_type(&s), Some(packet_types::START));
        let mut short = [0u8; 3];
        assert_eq!(start.emit(&mut short), Err(WireError::Truncated));
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = FrameRepr::parse(&b);
            let _ = Repr::parse_bytes(&b);
            let _ = packet_type(&b);
            if let Ok(r) = FrameRepr::parse(&b) {
                let v = r.to_vec().unwrap();
                prop_assert_eq!(FrameRepr::parse(&v).unwrap(), r);
            }
        }
    }
}
