//! IVN-AE version 2: the authenticated raw-Ethernet frame (docs/wire-ivnae.md).
//!
//! ```text
//! 0      6      12        14  15    16     17    18            26        26+n
//! | dst  | src  | 0x88B5  | v | suite| keyid| flags| seq (BE u64) | body  | tag |
//! ```
//! `A` = bytes 0..26 is authenticated by every suite with a tag. The body is the inner EtherType
//! followed by the payload (encrypted when flag 0x01 is set). The tag length is not on the wire:
//! it follows from the suite and the SA's configured truncation.
//!
//! The layout of versions 1 and 2 is the same; they differ in the nonce only (version 2 folds
//! the key id into it, docs/wire-ivnae.md §3). [`Frame::check`] accepts both; whether an SA
//! takes a version 1 frame is the SA's decision (`sa::ivnae`), not the parser's.

use super::bytes::{array, be16, be64, byte, head, put, put_byte, tail};
use super::ethernet::MacAddr;
use super::{Field, WireError};

mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const VERSION: usize = 14;
    pub const SUITE: usize = 15;
    pub const KEY_ID: usize = 16;
    pub const FLAGS: usize = 17;
    pub const SEQ: Field = 18..26;
    pub const BODY: usize = 26;
}

/// EtherType of IVN-AE (IEEE 802 local experimental EtherType 1).
pub const ETHERTYPE: u16 = 0x88B5;
/// The version every sender writes (the key id is part of the nonce).
pub const VERSION: u8 = 2;
/// The previous version (nonce without the key id): parsed, and accepted only by an SA
/// configured to (`IvnAeRx::set_accept_v1`).
pub const VERSION_1: u8 = 1;
/// Flag: the body is encrypted.
pub const FLAG_CONF: u8 = 0x01;
/// Length of the authenticated header `A`.
pub const HEADER_LEN: usize = field::BODY;
/// Bytes an IVN-AE header adds in front of a plain frame's EtherType.
pub const OVERHEAD: usize = HEADER_LEN - super::ethernet::HEADER_LEN + 2;

/// A view of an IVN-AE frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Checks the length, EtherType, version (1 or 2) and reserved flag bits.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, WireError> {
        let f = Frame { buffer };
        f.check()?;
        Ok(f)
    }

    pub fn check(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.ethertype() != ETHERTYPE {
            return Err(WireError::WrongEtherType);
        }
        if !matches!(self.version(), VERSION | VERSION_1) {
            return Err(WireError::BadVersion);
        }
        if self.flags() & !FLAG_CONF != 0 {
            return Err(WireError::ReservedBits);
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

    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), field::ETHERTYPE.start)
    }

    pub fn version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::VERSION)
    }

    pub fn suite_id(&self) -> u8 {
        byte(self.buffer.as_ref(), field::SUITE)
    }

    pub fn key_id(&self) -> u8 {
        byte(self.buffer.as_ref(), field::KEY_ID)
    }

    pub fn flags(&self) -> u8 {
        byte(self.buffer.as_ref(), field::FLAGS)
    }

    pub fn conf(&self) -> bool {
        self.flags() & FLAG_CONF != 0
    }

    pub fn seq(&self) -> u64 {
        be64(self.buffer.as_ref(), field::SEQ.start)
    }

    /// The authenticated header `A` (bytes 0..26).
    pub fn header(&self) -> &[u8] {
        head(self.buffer.as_ref(), HEADER_LEN)
    }

    /// Body and tag together (everything after `A`).
    pub fn rest(&self) -> &[u8] {
        tail(self.buffer.as_ref(), HEADER_LEN)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Frame<T> {
    pub fn set_ethertype(&mut self, t: u16) {
        put(
            self.buffer.as_mut(),
            field::ETHERTYPE.start,
            &t.to_be_bytes(),
        );
    }

    pub fn set_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::VERSION, v);
    }

    pub fn set_suite_id(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::SUITE, v);
    }

    pub fn set_key_id(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::KEY_ID, v);
    }

    pub fn set_flags(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::FLAGS, v);
    }

    pub fn set_seq(&mut self, seq: u64) {
        put(self.buffer.as_mut(), field::SEQ.start, &seq.to_be_bytes());
    }
}

/// The IVN-AE header fields after the MAC addresses (which the frame keeps from the plain frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    /// [`VERSION`] for every frame a sender writes; [`VERSION_1`] when parsed from a frame of
    /// the previous version.
    pub version: u8,
    pub suite_id: u8,
    pub key_id: u8,
    pub conf: bool,
    pub seq: u64,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr, WireError> {
        frame.check()?;
        Ok(Repr {
            version: frame.version(),
            suite_id: frame.suite_id(),
            key_id: frame.key_id(),
            conf: frame.conf(),
            seq: frame.seq(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes bytes 12..26 (EtherType to sequence number); leaves the MAC addresses alone.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_ethertype(ETHERTYPE);
        frame.set_version(self.version);
        frame.set_suite_id(self.suite_id);
        frame.set_key_id(self.key_id);
        frame.set_flags(if self.conf { FLAG_CONF } else { 0 });
        frame.set_seq(self.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_rejects_bad_headers() {
        let mut b = [0u8; 26];
        b[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
        b[14] = 2;
        b[17] = 1;
        b[25] = 7;
        let r = Repr::parse(&Frame::new_unchecked(&b[..])).unwrap();
        assert_eq!(
            r,
            Repr {
                version: VERSION,
                suite_id: 0,
                key_id: 0,
                conf: true,
                seq: 7
            }
        );
        assert_eq!(
            Frame::new_checked(&b[..25]).unwrap_err(),
            WireError::Truncated
        );
        for version in [0, 3, 0x81, 0xff] {
            let mut v = b;
            v[14] = version;
            assert_eq!(
                Frame::new_checked(&v[..]).unwrap_err(),
                WireError::BadVersion,
                "version {version}"
            );
        }
        // Version 1 parses (the SA decides whether it takes it).
        let mut v1 = b;
        v1[14] = VERSION_1;
        assert_eq!(
            Repr::parse(&Frame::new_unchecked(&v1[..])).unwrap().version,
            VERSION_1
        );
        let mut f = b;
        f[17] = 0x81;
        assert_eq!(
            Frame::new_checked(&f[..]).unwrap_err(),
            WireError::ReservedBits
        );
        let mut e = b;
        e[12] = 0x08;
        assert_eq!(
            Frame::new_checked(&e[..]).unwrap_err(),
            WireError::WrongEtherType
        );
    }

    #[test]
    fn emit_then_parse() {
        let mut b = [0u8; HEADER_LEN];
        let r = Repr {
            version: VERSION,
            suite_id: 0x43,
            key_id: 9,
            conf: true,
            seq: 0x0102_0304_0506_0708,
        };
        let mut f = Frame::new_unchecked(&mut b[..]);
        r.emit(&mut f);
        assert_eq!(Repr::parse(&Frame::new_unchecked(&b[..])).unwrap(), r);
        assert_eq!(&b[18..26], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(b[14], 2);
    }
}
