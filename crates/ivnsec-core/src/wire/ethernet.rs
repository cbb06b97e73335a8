//! Ethernet II frames (without FCS, as sockets see them).

use core::fmt;

use super::bytes::{array, be16, put, range, tail, tail_mut};
use super::{Field, WireError};

/// A 48-bit MAC address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// The address in the first 6 bytes of `b` (callers pass a checked 6-byte field; a shorter
    /// slice reads as the zero address).
    pub fn from_slice(b: &[u8]) -> MacAddr {
        MacAddr(array(b, 0))
    }

    /// Parses `aa:bb:cc:dd:ee:ff` (also `-` separated).
    pub fn parse(s: &str) -> Option<MacAddr> {
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for b in out.iter_mut() {
            let p = parts.next()?;
            if p.len() != 2 {
                return None;
            }
            *b = u8::from_str_radix(p, 16).ok()?;
        }
        parts.next().is_none().then_some(MacAddr(out))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: usize = 14;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// Smallest frame a MAC sends (without FCS); shorter frames are padded on the wire.
pub const MIN_FRAME_LEN: usize = 60;

/// A view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Frame<T>, WireError> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Frame { buffer })
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn dst(&self) -> MacAddr {
        MacAddr::from_slice(range(self.buffer.as_ref(), field::DST))
    }

    pub fn src(&self) -> MacAddr {
        MacAddr::from_slice(range(self.buffer.as_ref(), field::SRC))
    }

    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE.start)
    }

    pub fn payload(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::PAYLOAD)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    pub fn set_dst(&mut self, a: MacAddr) {
        put(self.buffer.as_mut(), field::DST.start, &a.0);
    }

    pub fn set_src(&mut self, a: MacAddr) {
        put(self.buffer.as_mut(), field::SRC.start, &a.0);
    }

    pub fn set_ethertype(&mut self, t: u16) {
        put(
            self.buffer.as_mut(),
            field::ETHERTYPE.start,
            &t.to_be_bytes(),
        );
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        tail_mut(self.buffer.as_mut(), field::PAYLOAD)
    }
}

/// Ethernet II header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub dst: MacAddr,
    pub src: MacAddr,
    pub ethertype: u16,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Repr {
        Repr {
            dst: frame.dst(),
            src: frame.src(),
            ethertype: frame.ethertype(),
        }
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_dst(self.dst);
        frame.set_src(self.src);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn mac_parse_display() {
        let m = MacAddr::parse("02:00:00:00:00:0a").unwrap();
        assert_eq!(m.to_string(), "02:00:00:00:00:0a");
        assert!(MacAddr::parse("02:00:00:00:00").is_none());
        assert!(MacAddr::parse("02:00:00:00:00:0a:0b").is_none());
        assert!(MacAddr::parse("zz:00:00:00:00:0a").is_none());
    }

    #[test]
    fn short_frame_rejected() {
        assert_eq!(
            Frame::new_checked(&[0u8; 13][..]).unwrap_err(),
            WireError::Truncated
        );
        let f = Frame::new_checked(&[1u8; 14][..]).unwrap();
        assert_eq!(f.ethertype(), 0x0101);
        assert!(f.payload().is_empty());
    }
}
