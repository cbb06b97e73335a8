//! EAP packets (RFC 3748 §4) and the EAP-TLS header (RFC 5216 §3.1, RFC 9190).
//!
//! ```text
//! | Code (1) | Identifier (1) | Length (2) | Type (1, Request/Response only) | Type-Data |
//! EAP-TLS Type-Data: | Flags (1): L 0x80, M 0x40, S 0x20 | [TLS Message Length (4) if L] | TLS Data |
//! ```
//!
//! Codes: Request 1, Response 2, Success 3, Failure 4 (other codes are malformed, RFC 3748 §4
//! says they are silently discarded). Success and Failure are exactly 4 octets of header.
//! Octets after `Length` are padding and ignored. Parsing is bounded and never panics.

use super::WireError;
use super::bytes::{be16, byte, put, put_byte, range};
use alloc::vec::Vec;

/// EAP codes (RFC 3748 §4).
pub mod code {
    pub const REQUEST: u8 = 1;
    pub const RESPONSE: u8 = 2;
    pub const SUCCESS: u8 = 3;
    pub const FAILURE: u8 = 4;
}

/// EAP method types used here (RFC 3748 §5, RFC 5216).
pub mod eap_type {
    pub const IDENTITY: u8 = 1;
    pub const NOTIFICATION: u8 = 2;
    pub const NAK: u8 = 3;
    pub const TLS: u8 = 13;
}

/// EAP-TLS flags (RFC 5216 §3.1).
pub mod tls_flags {
    /// Length included.
    pub const L: u8 = 0x80;
    /// More fragments.
    pub const M: u8 = 0x40;
    /// EAP-TLS start.
    pub const S: u8 = 0x20;
}

/// Length of the EAP header (Code, Identifier, Length).
pub const HEADER_LEN: usize = 4;

/// A view of an EAP packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Checks the code, that `Length` covers the header (and the Type of a Request or
    /// Response) and that the buffer holds `Length` octets.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, WireError> {
        let p = Packet { buffer };
        let b = p.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = p.length();
        let min = match p.code() {
            code::REQUEST | code::RESPONSE => HEADER_LEN + 1,
            code::SUCCESS | code::FAILURE => HEADER_LEN,
            _ => return Err(WireError::Malformed),
        };
        if len < min {
            return Err(WireError::Malformed);
        }
        if b.len() < len {
            return Err(WireError::Truncated);
        }
        Ok(p)
    }

    pub fn code(&self) -> u8 {
        byte(self.buffer.as_ref(), 0)
    }

    pub fn identifier(&self) -> u8 {
        byte(self.buffer.as_ref(), 1)
    }

    pub fn length(&self) -> usize {
        usize::from(be16(self.buffer.as_ref(), 2))
    }

    /// The method type of a Request or Response.
    pub fn eap_type(&self) -> Option<u8> {
        matches!(self.code(), code::REQUEST | code::RESPONSE).then(|| byte(self.buffer.as_ref(), 4))
    }

    /// The Type-Data of a Request or Response (empty for Success and Failure).
    pub fn type_data(&self) -> &[u8] {
        match self.code() {
            code::REQUEST | code::RESPONSE => range(self.buffer.as_ref(), 5..self.length()),
            _ => &[],
        }
    }

    /// The packet up to `Length` (without padding).
    pub fn packet(&self) -> &[u8] {
        range(self.buffer.as_ref(), 0..self.length())
    }
}

/// An EAP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr<'a> {
    pub code: u8,
    pub identifier: u8,
    /// The method type; `Some` exactly for a Request or Response.
    pub eap_type: Option<u8>,
    pub data: &'a [u8],
}

impl<'a> Repr<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Repr<'a>, WireError> {
        let p = Packet::new_checked(b)?;
        let (eap_type, data) = match p.code() {
            code::REQUEST | code::RESPONSE => (
                Some(byte(b, 4)),
                b.get(5..p.length()).ok_or(WireError::Truncated)?,
            ),
            _ => (None, &[][..]),
        };
        Ok(Repr {
            code: p.code(),
            identifier: p.identifier(),
            eap_type,
            data,
        })
    }

    pub fn success(identifier: u8) -> Repr<'static> {
        Repr {
            code: code::SUCCESS,
            identifier,
            eap_type: None,
            data: &[],
        }
    }

    pub fn failure(identifier: u8) -> Repr<'static> {
        Repr {
            code: code::FAILURE,
            identifier,
            eap_type: None,
            data: &[],
        }
    }

    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + usize::from(self.eap_type.is_some()) + self.data.len()
    }

    /// Writes the packet into `buf[..buffer_len()]`; `Malformed` when it exceeds 65535 octets.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let n = self.buffer_len();
        let len = u16::try_from(n).map_err(|_| WireError::Malformed)?;
        let out = buf.get_mut(..n).ok_or(WireError::Truncated)?;
        put_byte(out, 0, self.code);
        put_byte(out, 1, self.identifier);
        put(out, 2, &len.to_be_bytes());
        if let Some(t) = self.eap_type {
            put_byte(out, 4, t);
            put(out, 5, self.data);
        }
        Ok(n)
    }

    pub fn to_vec(&self) -> Result<Vec<u8>, WireError> {
        let mut v = alloc::vec![0u8; self.buffer_len()];
        self.emit(&mut v)?;
        Ok(v)
    }
}

/// The Type-Data of an EAP-TLS Request or Response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TlsRepr<'a> {
    pub flags: u8,
    /// TLS Message Length, present exactly when the L flag is set.
    pub message_len: Option<u32>,
    /// This fragment's TLS data.
    pub data: &'a [u8],
}

impl<'a> TlsRepr<'a> {
    /// Parses EAP-TLS Type-Data. An empty Type-Data is malformed (an acknowledgement still has
    /// its flags octet).
    pub fn parse(b: &'a [u8]) -> Result<TlsRepr<'a>, WireError> {
        let (&flags, rest) = b.split_first().ok_or(WireError::Truncated)?;
        if flags & tls_flags::L != 0 {
            let (len, data) = rest.split_first_chunk::<4>().ok_or(WireError::Truncated)?;
            Ok(TlsRepr {
                flags,
                message_len: Some(u32::from_be_bytes(*len)),
                data,
            })
        } else {
            Ok(TlsRepr {
                flags,
                message_len: None,
                data: rest,
            })
        }
    }

    pub fn more(&self) -> bool {
        self.flags & tls_flags::M != 0
    }

    pub fn start(&self) -> bool {
        self.flags & tls_flags::S != 0
    }

    pub fn buffer_len(&self) -> usize {
        1 + if self.message_len.is_some() { 4 } else { 0 } + self.data.len()
    }

    /// Type-Data bytes; the L flag follows `message_len`.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.buffer_len());
        match self.message_len {
            Some(n) => {
                v.push(self.flags | tls_flags::L);
                v.extend_from_slice(&n.to_be_bytes());
            }
            None => v.push(self.flags & !tls_flags::L),
        }
        v.extend_from_slice(self.data);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trips() {
        let r = Repr {
            code: code::REQUEST,
            identifier: 7,
            eap_type: Some(eap_type::IDENTITY),
            data: b"",
        };
        let v = r.to_vec().unwrap();
        assert_eq!(v, [1, 7, 0, 5, 1]);
        assert_eq!(Repr::parse(&v).unwrap(), r);
        let s = Repr::success(9).to_vec().unwrap();
        assert_eq!(s, [3, 9, 0, 4]);
        let mut padded = s.clone();
        padded.extend([0; 10]);
        assert_eq!(Repr::parse(&padded).unwrap(), Repr::success(9));
        assert_eq!(Repr::parse(&[5, 1, 0, 4]), Err(WireError::Malformed));
        assert_eq!(Repr::parse(&[1, 1, 0, 4]), Err(WireError::Malformed));
        assert_eq!(Repr::parse(&[1, 1, 0, 9, 1]), Err(WireError::Truncated));
        let t = TlsRepr {
            flags: tls_flags::M,
            message_len: Some(3000),
            data: &[1, 2, 3],
        };
        let tv = t.to_vec();
        assert_eq!(tv[0], 0xC0);
        let back = TlsRepr::parse(&tv).unwrap();
        assert_eq!(back.message_len, Some(3000));
        assert!(back.more() && !back.start());
        assert_eq!(back.data, &[1, 2, 3]);
        assert_eq!(TlsRepr::parse(&[0x80, 0, 0]), Err(WireError::Truncated));
        assert_eq!(TlsRepr::parse(&[]), Err(WireError::Truncated));
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(r) = Repr::parse(&b) {
                let v = r.to_vec().unwrap();
                prop_assert_eq!(Repr::parse(&v).unwrap(), r);
                let p = Packet::new_checked(&b[..]).unwrap();
                prop_assert_eq!(p.type_data(), r.data);
            }
            let _ = TlsRepr::parse(&b);
        }
    }
}
