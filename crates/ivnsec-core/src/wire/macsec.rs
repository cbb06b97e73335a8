//! MACsec frames (IEEE 802.1AE-2018, clause 9): the SecTAG view.
//!
//! ```text
//! 0      6      12       14   15   16       20            28
//! | dst  | src  | 0x88E5 | TCI| SL | PN (BE) | SCI (opt.) | secure data | ICV (16) |
//!                         V ES SC SCB E C AN(2)
//! ```
//! The SCI is present when the SC bit is set (§9.9). SL (§9.7) is the length of the secure data
//! when it is shorter than 48 octets, else 0; its two top bits are reserved. The secure data
//! starts with the user frame's EtherType (confidentiality offset 0).
//!
//! [`Frame::new_checked`] applies the SecTAG validity rules of §9.12 / Figure 10-5 that do not
//! depend on the SA (a–i as the Linux driver numbers them): length, EtherType, V = 0, ES or SCB
//! only without SC, reserved SL bits clear, SL consistent with the frame length, and E = 0 with
//! C = 1 refused (reserved combination). A zero PN is refused by the receiver for non-XPN suites
//! only (XPN carries the low 32 bits of a 64-bit PN, which may be 0).

use super::bytes::{array, be16, be32, byte, put, put_byte, range};
use super::ethernet::MacAddr;
use super::{Field, WireError};

mod field {
    use super::Field;
    pub const DST: Field = 0..6;
    pub const SRC: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const TCI_AN: usize = 14;
    pub const SL: usize = 15;
    pub const PN: Field = 16..20;
    pub const SCI: Field = 20..28;
}

/// EtherType of MACsec (§9.4).
pub const ETHERTYPE: u16 = 0x88E5;
/// TCI bit: version (must be 0).
pub const TCI_V: u8 = 0x80;
/// TCI bit: end station (SCI = source address ‖ 0x0001, not in the frame).
pub const TCI_ES: u8 = 0x40;
/// TCI bit: the SCI is in the frame.
pub const TCI_SC: u8 = 0x20;
/// TCI bit: single copy broadcast (EPON).
pub const TCI_SCB: u8 = 0x10;
/// TCI bit: the user data is encrypted.
pub const TCI_E: u8 = 0x08;
/// TCI bit: changed text (the secure data differs from the user data).
pub const TCI_C: u8 = 0x04;
/// Association number mask.
pub const AN_MASK: u8 = 0x03;
/// Short length mask; the top two bits of octet 4 are reserved.
pub const SL_MASK: u8 = 0x3f;
/// SecTAG length without / with the SCI.
pub const SECTAG_LEN: usize = 8;
pub const SECTAG_SCI_LEN: usize = 16;
/// ICV length of every suite here.
pub const ICV_LEN: usize = 16;
/// Secure data of this many octets or more is signalled with SL = 0.
pub const SHORT_LEN_LIMIT: usize = 48;
/// Port identifier of an implicit end-station SCI (§9.5).
pub const ES_PORT: [u8; 2] = [0x00, 0x01];
/// Offset of the SecTAG (after the two MAC addresses).
pub const SECTAG_OFFSET: usize = field::ETHERTYPE.start;

/// A Secure Channel Identifier: a 48-bit MAC address and a 16-bit port number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sci(pub [u8; 8]);

impl Sci {
    /// The SCI of an end station: `mac ‖ 0x0001`.
    pub fn end_station(mac: MacAddr) -> Sci {
        let mut s = [0u8; 8];
        s[..6].copy_from_slice(&mac.0);
        s[6..].copy_from_slice(&ES_PORT);
        Sci(s)
    }

    pub fn from_u64(v: u64) -> Sci {
        Sci(v.to_be_bytes())
    }

    pub fn to_u64(self) -> u64 {
        u64::from_be_bytes(self.0)
    }
}

/// A view of a MACsec frame.
#[derive(Debug, Clone)]
pub struct Frame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Frame<T> {
    pub const fn new_unchecked(buffer: T) -> Frame<T> {
        Frame { buffer }
    }

    /// Checks the SecTAG as described in the module documentation.
    pub fn new_checked(buffer: T) -> Result<Frame<T>, WireError> {
        let f = Frame { buffer };
        f.check()?;
        Ok(f)
    }

    /// Length and EtherType only: is this a frame with a SecTAG at all?
    pub fn is_tagged(buffer: &[u8]) -> bool {
        buffer.get(field::ETHERTYPE) == Some(&ETHERTYPE.to_be_bytes()[..])
    }

    pub fn check(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < SECTAG_OFFSET + SECTAG_LEN {
            return Err(WireError::Truncated);
        }
        if self.ethertype() != ETHERTYPE {
            return Err(WireError::WrongEtherType);
        }
        let tci = self.tci();
        if tci & TCI_V != 0 {
            return Err(WireError::BadVersion);
        }
        if tci & (TCI_ES | TCI_SCB) != 0 && tci & TCI_SC != 0 {
            return Err(WireError::ReservedBits);
        }
        if tci & TCI_E != 0 && tci & TCI_C == 0 || tci & TCI_E == 0 && tci & TCI_C != 0 {
            // E = 1, C = 0 is reserved; E = 0, C = 1 is a changed-text integrity mode (non-default
            // ICV length) that no suite here uses.
            return Err(WireError::ReservedBits);
        }
        if byte(b, field::SL) & !SL_MASK != 0 {
            return Err(WireError::ReservedBits);
        }
        let hdr = self.header_len();
        if b.len() < hdr + ICV_LEN {
            return Err(WireError::Truncated);
        }
        let sd = b.len() - hdr - ICV_LEN;
        let sl = self.short_len();
        if sl != 0 {
            if usize::from(sl) != sd {
                return Err(WireError::Truncated);
            }
        } else if sd < SHORT_LEN_LIMIT {
            return Err(WireError::Truncated);
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

    /// TCI bits (octet 3 of the SecTAG without the AN).
    pub fn tci(&self) -> u8 {
        byte(self.buffer.as_ref(), field::TCI_AN) & !AN_MASK
    }

    pub fn an(&self) -> u8 {
        byte(self.buffer.as_ref(), field::TCI_AN) & AN_MASK
    }

    pub fn es(&self) -> bool {
        self.tci() & TCI_ES != 0
    }

    pub fn sc(&self) -> bool {
        self.tci() & TCI_SC != 0
    }

    pub fn scb(&self) -> bool {
        self.tci() & TCI_SCB != 0
    }

    pub fn e(&self) -> bool {
        self.tci() & TCI_E != 0
    }

    pub fn c(&self) -> bool {
        self.tci() & TCI_C != 0
    }

    pub fn short_len(&self) -> u8 {
        byte(self.buffer.as_ref(), field::SL) & SL_MASK
    }

    /// The 32-bit PN field.
    pub fn pn(&self) -> u32 {
        be32(self.buffer.as_ref(), field::PN.start)
    }

    /// The SCI carried in the frame (when SC is set).
    pub fn sci(&self) -> Option<Sci> {
        if !self.sc() {
            return None;
        }
        let s: [u8; 8] = array(self.buffer.as_ref(), field::SCI.start);
        Some(Sci(s))
    }

    /// Length of dst ‖ src ‖ SecTAG.
    pub fn header_len(&self) -> usize {
        SECTAG_OFFSET
            + if self.sc() {
                SECTAG_SCI_LEN
            } else {
                SECTAG_LEN
            }
    }

    /// The secure data (checked frames only).
    pub fn secure_data(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        range(b, self.header_len()..b.len().saturating_sub(ICV_LEN))
    }

    /// The ICV (checked frames only).
    pub fn icv(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        b.last_chunk::<ICV_LEN>().map_or(&[][..], |c| c.as_slice())
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

    /// Sets TCI bits and AN together (octet 3).
    pub fn set_tci_an(&mut self, tci: u8, an: u8) {
        put_byte(
            self.buffer.as_mut(),
            field::TCI_AN,
            (tci & !AN_MASK) | (an & AN_MASK),
        );
    }

    pub fn set_short_len(&mut self, sl: u8) {
        put_byte(self.buffer.as_mut(), field::SL, sl & SL_MASK);
    }

    pub fn set_pn(&mut self, pn: u32) {
        put(self.buffer.as_mut(), field::PN.start, &pn.to_be_bytes());
    }

    pub fn set_sci(&mut self, sci: Sci) {
        put(self.buffer.as_mut(), field::SCI.start, &sci.0);
    }
}

/// SecTAG fields after the MAC addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub es: bool,
    pub scb: bool,
    /// E and C (confidentiality); both clear for integrity only.
    pub encrypted: bool,
    pub an: u8,
    pub short_len: u8,
    pub pn: u32,
    /// Present = SC set.
    pub sci: Option<Sci>,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(frame: &Frame<T>) -> Result<Repr, WireError> {
        frame.check()?;
        Ok(Repr {
            es: frame.es(),
            scb: frame.scb(),
            encrypted: frame.e(),
            an: frame.an(),
            short_len: frame.short_len(),
            pn: frame.pn(),
            sci: frame.sci(),
        })
    }

    /// SL for `secure_data_len` octets of secure data.
    pub fn short_len_for(secure_data_len: usize) -> u8 {
        if secure_data_len < SHORT_LEN_LIMIT {
            secure_data_len as u8
        } else {
            0
        }
    }

    /// Length of the SecTAG itself.
    pub const fn sectag_len(&self) -> usize {
        if self.sci.is_some() {
            SECTAG_SCI_LEN
        } else {
            SECTAG_LEN
        }
    }

    /// Length of dst ‖ src ‖ SecTAG.
    pub const fn buffer_len(&self) -> usize {
        SECTAG_OFFSET + self.sectag_len()
    }

    pub fn tci(&self) -> u8 {
        let mut t = 0;
        if self.es {
            t |= TCI_ES;
        }
        if self.sci.is_some() {
            t |= TCI_SC;
        }
        if self.scb {
            t |= TCI_SCB;
        }
        if self.encrypted {
            t |= TCI_E | TCI_C;
        }
        t
    }

    /// Writes EtherType and SecTAG (bytes 12..buffer_len()); leaves the MAC addresses alone.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut Frame<T>) {
        frame.set_ethertype(ETHERTYPE);
        frame.set_tci_an(self.tci(), self.an);
        frame.set_short_len(self.short_len);
        frame.set_pn(self.pn);
        if let Some(sci) = self.sci {
            frame.set_sci(sci);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn frame(tci_an: u8, sl: u8, with_sci: bool, sd: usize) -> alloc::vec::Vec<u8> {
        let hdr = if with_sci { 28 } else { 20 };
        let mut b = vec![0u8; hdr + sd + ICV_LEN];
        b[12] = 0x88;
        b[13] = 0xe5;
        b[14] = tci_an;
        b[15] = sl;
        b[19] = 1;
        b
    }

    #[test]
    fn parse_annex_c_header() {
        // C.1.1: TCI/AN 0x22, SL 0x2a, PN B2C28465, SCI 12153524C0895E81, 42 octets secure data.
        let mut b = frame(0x22, 0x2a, true, 42);
        b[16..20].copy_from_slice(&[0xb2, 0xc2, 0x84, 0x65]);
        b[20..28].copy_from_slice(&[0x12, 0x15, 0x35, 0x24, 0xc0, 0x89, 0x5e, 0x81]);
        let f = Frame::new_checked(&b[..]).unwrap();
        let r = Repr::parse(&f).unwrap();
        assert_eq!(r.an, 2);
        assert_eq!(r.pn, 0xb2c2_8465);
        assert_eq!(r.sci, Some(Sci::from_u64(0x1215_3524_c089_5e81)));
        assert!(!r.encrypted && !r.es && !r.scb);
        assert_eq!(f.secure_data().len(), 42);
        let mut out = [0u8; 28];
        r.emit(&mut Frame::new_unchecked(&mut out[..]));
        assert_eq!(&out[12..28], &b[12..28]);
    }

    #[test]
    fn rejects_invalid_sectags() {
        assert_eq!(
            Frame::new_checked(&frame(0x20, 0, true, 48)[..19]).unwrap_err(),
            WireError::Truncated
        );
        let mut e = frame(0x20, 0, true, 48);
        e[12] = 0x08;
        assert_eq!(
            Frame::new_checked(&e[..]).unwrap_err(),
            WireError::WrongEtherType
        );
        assert_eq!(
            Frame::new_checked(&frame(0xa0, 0, true, 48)[..]).unwrap_err(),
            WireError::BadVersion
        );
        assert_eq!(
            Frame::new_checked(&frame(0x60, 0, true, 48)[..]).unwrap_err(),
            WireError::ReservedBits
        );
        assert_eq!(
            Frame::new_checked(&frame(0x30, 0, true, 48)[..]).unwrap_err(),
            WireError::ReservedBits
        );
        assert_eq!(
            Frame::new_checked(&frame(0x28, 0, true, 48)[..]).unwrap_err(),
            WireError::ReservedBits
        );
        assert_eq!(
            Frame::new_checked(&frame(0x24, 0, true, 48)[..]).unwrap_err(),
            WireError::ReservedBits
        );
        assert_eq!(
            Frame::new_checked(&frame(0x20, 0x40, true, 48)[..]).unwrap_err(),
            WireError::ReservedBits
        );
        // SL must match exactly, and SL = 0 needs ≥ 48 octets.
        assert_eq!(
            Frame::new_checked(&frame(0x20, 10, true, 11)[..]).unwrap_err(),
            WireError::Truncated
        );
        assert_eq!(
            Frame::new_checked(&frame(0x20, 0, true, 47)[..]).unwrap_err(),
            WireError::Truncated
        );
        assert!(Frame::new_checked(&frame(0x20, 10, true, 10)[..]).is_ok());
        assert!(Frame::new_checked(&frame(0x40, 0, false, 48)[..]).is_ok());
        assert!(Frame::new_checked(&frame(0x0c, 1, false, 1)[..]).is_ok());
        // No SCI: the header is 8 octets; a frame too short for SecTAG + ICV.
        assert_eq!(
            Frame::new_checked(&frame(0x00, 0, false, 0)[..30]).unwrap_err(),
            WireError::Truncated
        );
    }

    #[test]
    fn short_len_rule() {
        assert_eq!(Repr::short_len_for(0), 0);
        assert_eq!(Repr::short_len_for(47), 47);
        assert_eq!(Repr::short_len_for(48), 0);
        assert_eq!(Repr::short_len_for(1500), 0);
    }
}
