//! AUTOSAR SecOC: the Secured I-PDU and the AUTOSAR PDU header used to carry PDUs over UDP.
//!
//! ## Secured I-PDU
//!
//! ```text
//! | Authentic I-PDU (n bytes) | truncated FV (fv_bits) | truncated MAC (mac_bits) | 0-pad |
//!                             \___________ authentication information ___________/
//!                              packed MSB-first from the first byte after the Authentic I-PDU
//! ```
//!
//! The truncated freshness value is the `fv_bits` least significant bits of the full freshness
//! value, most significant bit first; the truncated authenticator is the `mac_bits` most
//! significant (first) bits of the MAC. Both are bit strings: neither needs to be a multiple of
//! 8, and the authenticator starts right after the last FV bit, wherever that falls in a byte.
//! The last byte is filled with zero bits. The authentication information therefore takes
//! ⌈(fv_bits + mac_bits) / 8⌉ bytes ([`AuthLayout::len`]).
//!
//! Padding bits are not covered by the MAC, so a receiver that ignored them would accept changed
//! PDUs; [`SecuredPdu::new_checked`] refuses non-zero padding.
//!
//! The Authentic I-PDU length is whatever precedes the authentication information (the
//! "dynamic length" case): the view needs only the bit lengths.
//!
//! ## PDU header (AUTOSAR socket adaptor, UDP)
//!
//! ```text
//! 0         4          8
//! | PDU id  | length   | PDU (length bytes) | next header ... |
//! ```
//! Both fields are 32-bit big-endian; `length` counts the PDU bytes after the header. A datagram
//! carries one or more such PDUs back to back; [`Pdus`] walks them without allocating and stops
//! at the first malformed header.

use core::fmt;

use super::Field;
use super::bytes::{be32, head, put, range, tail};

/// Most freshness value bits (the full FV is at most 64 bits here).
pub const MAX_FV_BITS: u8 = 64;
/// Most authenticator bits: the longest MAC here (HMAC-SHA-256).
pub const MAX_MAC_BITS: u16 = 256;
/// [`MAX_MAC_BITS`] in bytes.
pub const MAX_MAC_BYTES: usize = MAX_MAC_BITS as usize / 8;

/// Bit lengths of the authentication information (truncated FV and truncated MAC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AuthLayout {
    fv_bits: u8,
    mac_bits: u16,
}

/// A bit length outside what [`AuthLayout`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// `fv_bits` above [`MAX_FV_BITS`].
    FvBits(u8),
    /// `mac_bits` of 0 or above [`MAX_MAC_BITS`].
    MacBits(u16),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::FvBits(n) => {
                write!(f, "truncated FV of {n} bits: 0..={MAX_FV_BITS} allowed")
            }
            LayoutError::MacBits(n) => {
                write!(
                    f,
                    "truncated authenticator of {n} bits: 1..={MAX_MAC_BITS} allowed"
                )
            }
        }
    }
}

impl core::error::Error for LayoutError {}

impl AuthLayout {
    /// `fv_bits` in 0..=64 (0: no FV on the wire), `mac_bits` in 1..=256.
    pub const fn new(fv_bits: u8, mac_bits: u16) -> Result<AuthLayout, LayoutError> {
        if fv_bits > MAX_FV_BITS {
            return Err(LayoutError::FvBits(fv_bits));
        }
        if mac_bits == 0 || mac_bits > MAX_MAC_BITS {
            return Err(LayoutError::MacBits(mac_bits));
        }
        Ok(AuthLayout { fv_bits, mac_bits })
    }

    pub const fn fv_bits(&self) -> u8 {
        self.fv_bits
    }

    pub const fn mac_bits(&self) -> u16 {
        self.mac_bits
    }

    /// Bits of FV and MAC together.
    pub const fn bits(&self) -> usize {
        self.fv_bits as usize + self.mac_bits as usize
    }

    /// Bytes the authentication information takes: ⌈(fv_bits + mac_bits) / 8⌉.
    #[allow(clippy::len_without_is_empty)] // never empty: mac_bits ≥ 1
    pub const fn len(&self) -> usize {
        self.bits().div_ceil(8)
    }

    /// Zero bits that pad the last byte.
    pub const fn pad_bits(&self) -> usize {
        self.len() * 8 - self.bits()
    }

    /// Bytes the truncated MAC takes when stored left-aligned: ⌈mac_bits / 8⌉.
    pub const fn mac_len(&self) -> usize {
        (self.mac_bits as usize).div_ceil(8)
    }

    /// The `fv_bits` least significant bits of `fv`.
    pub const fn truncate_fv(&self, fv: u64) -> u64 {
        fv & fv_mask(self.fv_bits)
    }
}

/// All ones in the `bits` least significant bits (`bits` ≤ 64).
pub const fn fv_mask(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Errors from parsing a Secured I-PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecuredError {
    /// Shorter than the authentication information.
    Truncated,
    /// The padding bits after the authenticator are not all zero.
    NonZeroPadding,
}

impl fmt::Display for SecuredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SecuredError::Truncated => "shorter than the authentication information",
            SecuredError::NonZeroPadding => "non-zero padding bits after the authenticator",
        })
    }
}

impl core::error::Error for SecuredError {}

fn get_bit(buf: &[u8], pos: usize) -> bool {
    buf.get(pos / 8)
        .is_some_and(|b| b & (0x80 >> (pos % 8)) != 0)
}

fn set_bit(buf: &mut [u8], pos: usize) {
    if let Some(b) = buf.get_mut(pos / 8) {
        *b |= 0x80 >> (pos % 8);
    }
}

/// A view of a Secured I-PDU with a given layout.
#[derive(Debug, Clone)]
pub struct SecuredPdu<T: AsRef<[u8]>> {
    buffer: T,
    layout: AuthLayout,
}

impl<T: AsRef<[u8]>> SecuredPdu<T> {
    pub const fn new_unchecked(buffer: T, layout: AuthLayout) -> SecuredPdu<T> {
        SecuredPdu { buffer, layout }
    }

    /// Checks that the authentication information is there and its padding bits are zero.
    pub fn new_checked(buffer: T, layout: AuthLayout) -> Result<SecuredPdu<T>, SecuredError> {
        let p = SecuredPdu { buffer, layout };
        p.check()?;
        Ok(p)
    }

    pub fn check(&self) -> Result<(), SecuredError> {
        let buf = self.buffer.as_ref();
        let n = self.layout.len();
        if buf.len() < n {
            return Err(SecuredError::Truncated);
        }
        let pad = self.layout.pad_bits();
        // pad < 8: the low `pad` bits of the last byte.
        let last = buf.last().copied().unwrap_or(0);
        if pad > 0 && last & ((1u8 << pad) - 1) != 0 {
            return Err(SecuredError::NonZeroPadding);
        }
        Ok(())
    }

    pub fn layout(&self) -> AuthLayout {
        self.layout
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Length of the Authentic I-PDU.
    pub fn authentic_len(&self) -> usize {
        self.buffer.as_ref().len() - self.layout.len()
    }

    /// The Authentic I-PDU.
    pub fn authentic(&self) -> &[u8] {
        head(self.buffer.as_ref(), self.authentic_len())
    }

    /// The authentication information bytes (FV ‖ MAC ‖ padding).
    pub fn auth_info(&self) -> &[u8] {
        tail(self.buffer.as_ref(), self.authentic_len())
    }

    /// The truncated freshness value (0 when `fv_bits` is 0).
    pub fn truncated_fv(&self) -> u64 {
        let info = self.auth_info();
        let mut v = 0u64;
        for i in 0..usize::from(self.layout.fv_bits) {
            v = (v << 1) | u64::from(get_bit(info, i));
        }
        v
    }

    /// The truncated authenticator, left-aligned in `out` with zero bits after `mac_bits`.
    /// Returns the bytes it takes ([`AuthLayout::mac_len`]).
    pub fn truncated_mac(&self, out: &mut [u8; MAX_MAC_BYTES]) -> usize {
        let info = self.auth_info();
        let off = usize::from(self.layout.fv_bits);
        *out = [0; MAX_MAC_BYTES];
        for j in 0..usize::from(self.layout.mac_bits) {
            if get_bit(info, off + j) {
                set_bit(out, j);
            }
        }
        self.layout.mac_len()
    }
}

/// The authentication information of a Secured I-PDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthInfo {
    pub layout: AuthLayout,
    /// The truncated freshness value (only its `fv_bits` low bits are used).
    pub fv: u64,
    /// The MAC, most significant bit first; only the first `mac_bits` bits are used.
    pub mac: [u8; MAX_MAC_BYTES],
}

impl AuthInfo {
    pub fn parse<T: AsRef<[u8]>>(p: &SecuredPdu<T>) -> Result<AuthInfo, SecuredError> {
        p.check()?;
        let mut mac = [0u8; MAX_MAC_BYTES];
        p.truncated_mac(&mut mac);
        Ok(AuthInfo {
            layout: p.layout(),
            fv: p.truncated_fv(),
            mac,
        })
    }

    pub const fn buffer_len(&self) -> usize {
        self.layout.len()
    }

    /// Writes FV ‖ MAC ‖ zero padding into `info`, which must be at least
    /// [`buffer_len`](Self::buffer_len) bytes (only those are written); never panics.
    pub fn emit(&self, info: &mut [u8]) {
        let n = self.layout.len();
        let Some(info) = info.get_mut(..n) else {
            return;
        };
        info.fill(0);
        let fv_bits = usize::from(self.layout.fv_bits);
        for i in 0..fv_bits {
            if (self.fv >> (fv_bits - 1 - i)) & 1 != 0 {
                set_bit(info, i);
            }
        }
        for j in 0..usize::from(self.layout.mac_bits) {
            if get_bit(&self.mac, j) {
                set_bit(info, fv_bits + j);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PDU header
// ---------------------------------------------------------------------------------------------

mod field {
    use super::Field;
    pub const ID: Field = 0..4;
    pub const LENGTH: Field = 4..8;
    pub const PAYLOAD: usize = 8;
}

/// Length of the PDU header (id ‖ length).
pub const PDU_HEADER_LEN: usize = field::PAYLOAD;

/// Errors from walking the PDUs of a datagram, or from writing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PduError {
    /// Fewer than 8 bytes left for a header.
    Truncated,
    /// The length field exceeds the bytes that follow the header.
    BadLength { declared: u32, available: usize },
    /// Writing: the buffer has no room for the header and PDU.
    NoRoom { needed: usize },
    /// Writing: a PDU longer than the 32-bit length field can say.
    TooLong,
}

impl fmt::Display for PduError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PduError::Truncated => f.write_str("PDU header truncated (8 bytes needed)"),
            PduError::BadLength {
                declared,
                available,
            } => write!(
                f,
                "PDU length {declared} exceeds the {available} bytes that follow"
            ),
            PduError::NoRoom { needed } => write!(f, "no room for the PDU: {needed} bytes needed"),
            PduError::TooLong => f.write_str("PDU longer than a 32-bit length can say"),
        }
    }
}

impl core::error::Error for PduError {}

/// A view of one PDU with its header at the start of `buffer` (more PDUs may follow).
#[derive(Debug, Clone)]
pub struct PduPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> PduPacket<T> {
    pub const fn new_unchecked(buffer: T) -> PduPacket<T> {
        PduPacket { buffer }
    }

    /// Checks that the header is there and the PDU it announces fits in the buffer.
    pub fn new_checked(buffer: T) -> Result<PduPacket<T>, PduError> {
        let p = PduPacket { buffer };
        p.check()?;
        Ok(p)
    }

    pub fn check(&self) -> Result<(), PduError> {
        let buf = self.buffer.as_ref();
        if buf.len() < PDU_HEADER_LEN {
            return Err(PduError::Truncated);
        }
        let available = buf.len() - PDU_HEADER_LEN;
        let declared = self.length();
        if usize::try_from(declared).map_or(true, |d| d > available) {
            return Err(PduError::BadLength {
                declared,
                available,
            });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn id(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ID.start)
    }

    pub fn length(&self) -> u32 {
        be32(self.buffer.as_ref(), field::LENGTH.start)
    }

    /// Header plus PDU (where the next PDU starts); on a checked view.
    pub fn total_len(&self) -> usize {
        PDU_HEADER_LEN + self.length() as usize
    }

    /// The PDU; on a checked view.
    pub fn payload(&self) -> &[u8] {
        range(self.buffer.as_ref(), field::PAYLOAD..self.total_len())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> PduPacket<T> {
    pub fn set_id(&mut self, id: u32) {
        put(self.buffer.as_mut(), field::ID.start, &id.to_be_bytes());
    }

    pub fn set_length(&mut self, len: u32) {
        put(
            self.buffer.as_mut(),
            field::LENGTH.start,
            &len.to_be_bytes(),
        );
    }
}

/// The PDU header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PduRepr {
    pub id: u32,
    pub length: u32,
}

impl PduRepr {
    pub fn parse<T: AsRef<[u8]>>(p: &PduPacket<T>) -> Result<PduRepr, PduError> {
        p.check()?;
        Ok(PduRepr {
            id: p.id(),
            length: p.length(),
        })
    }

    /// Header length (the PDU itself is the caller's).
    pub const fn buffer_len(&self) -> usize {
        PDU_HEADER_LEN
    }

    /// Writes the header; never panics on a buffer of at least [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut PduPacket<T>) {
        if p.buffer.as_ref().len() < PDU_HEADER_LEN {
            return;
        }
        p.set_id(self.id);
        p.set_length(self.length);
    }
}

/// Appends header ‖ `pdu` to `buf` at `offset`; returns the offset after it.
pub fn emit_pdu(buf: &mut [u8], offset: usize, id: u32, pdu: &[u8]) -> Result<usize, PduError> {
    let length = u32::try_from(pdu.len()).map_err(|_| PduError::TooLong)?;
    let end = offset
        .checked_add(PDU_HEADER_LEN)
        .and_then(|e| e.checked_add(pdu.len()))
        .ok_or(PduError::TooLong)?;
    let dst = buf
        .get_mut(offset..end)
        .ok_or(PduError::NoRoom { needed: end })?;
    let (header, body) = dst.split_at_mut(PDU_HEADER_LEN);
    PduRepr { id, length }.emit(&mut PduPacket::new_unchecked(header));
    body.copy_from_slice(pdu);
    Ok(end)
}

/// The PDUs of a datagram, in order: `Ok((id, pdu))` for each well-formed one, then at most one
/// `Err` for a malformed rest, after which the iterator ends. Never allocates.
#[derive(Debug, Clone)]
pub struct Pdus<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Pdus<'a> {
    pub fn new(datagram: &'a [u8]) -> Pdus<'a> {
        Pdus {
            rest: datagram,
            failed: false,
        }
    }
}

impl<'a> Iterator for Pdus<'a> {
    type Item = Result<(u32, &'a [u8]), PduError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match PduPacket::new_checked(self.rest) {
            Ok(p) => {
                let (id, n) = (p.id(), p.total_len());
                let (this, rest) = self.rest.split_at_checked(n).unwrap_or((self.rest, &[]));
                self.rest = rest;
                Some(Ok((id, tail(this, PDU_HEADER_LEN))))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    fn layout(fv: u8, mac: u16) -> AuthLayout {
        AuthLayout::new(fv, mac).unwrap()
    }

    #[test]
    fn layout_ranges() {
        assert_eq!(AuthLayout::new(65, 24), Err(LayoutError::FvBits(65)));
        assert_eq!(AuthLayout::new(8, 0), Err(LayoutError::MacBits(0)));
        assert_eq!(AuthLayout::new(8, 257), Err(LayoutError::MacBits(257)));
        assert_eq!(layout(8, 24).len(), 4);
        assert_eq!(layout(8, 24).pad_bits(), 0);
        assert_eq!(layout(3, 28).len(), 4);
        assert_eq!(layout(3, 28).pad_bits(), 1);
        assert_eq!(layout(0, 1).len(), 1);
        assert_eq!(layout(0, 1).pad_bits(), 7);
        assert_eq!(layout(64, 256).len(), 40);
        assert_eq!(layout(5, 13).mac_len(), 2);
        assert_eq!(layout(4, 8).truncate_fv(0x1234), 0x4);
        assert_eq!(layout(64, 8).truncate_fv(u64::MAX), u64::MAX);
        assert_eq!(layout(0, 8).truncate_fv(u64::MAX), 0);
    }

    /// fv_bits 3 / mac_bits 28 by hand. FV 0b101; the first 28 MAC bits of a1 b2 c3 d4 are
    /// 1010 0001 1011 0010 1100 0011 1101; one padding bit. Concatenated and regrouped:
    /// 101 1010000110110010110000111101 0 = 1011 0100 | 0011 0110 | 0101 1000 | 0111 1010.
    #[test]
    fn emit_non_aligned_by_hand() {
        let mut mac = [0u8; MAX_MAC_BYTES];
        mac[..4].copy_from_slice(&[0xa1, 0xb2, 0xc3, 0xd4]);
        let info = AuthInfo {
            layout: layout(3, 28),
            fv: 0b101,
            mac,
        };
        let mut out = [0xffu8; 5];
        info.emit(&mut out);
        assert_eq!(out, [0xb4, 0x36, 0x58, 0x7a, 0xff]);
        let pdu = [0x01, 0x02, 0xb4, 0x36, 0x58, 0x7a];
        let p = SecuredPdu::new_checked(&pdu[..], layout(3, 28)).unwrap();
        assert_eq!(p.authentic(), &[1, 2]);
        let back = AuthInfo::parse(&p).unwrap();
        assert_eq!(back.fv, 0b101);
        let mut want = [0u8; MAX_MAC_BYTES];
        want[..4].copy_from_slice(&[0xa1, 0xb2, 0xc3, 0xd0]);
        assert_eq!(back.mac, want);
    }

    #[test]
    fn padding_and_truncation_rejected() {
        let l = layout(3, 28);
        assert_eq!(
            SecuredPdu::new_checked(&[0xb4, 0x36, 0x58][..], l).unwrap_err(),
            SecuredError::Truncated
        );
        assert_eq!(
            SecuredPdu::new_checked(&[0xb4, 0x36, 0x58, 0x7b][..], l).unwrap_err(),
            SecuredError::NonZeroPadding
        );
        // An empty Authentic I-PDU is allowed.
        assert!(SecuredPdu::new_checked(&[0xb4, 0x36, 0x58, 0x7a][..], l).is_ok());
    }

    proptest::proptest! {
        #[test]
        fn auth_info_round_trip(
            fv_bits in 0u8..=64,
            mac_bits in 1u16..=256,
            fv in proptest::prelude::any::<u64>(),
            mac in proptest::collection::vec(proptest::prelude::any::<u8>(), 32),
            authentic in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20),
        ) {
            let l = layout(fv_bits, mac_bits);
            let mut m = [0u8; MAX_MAC_BYTES];
            m.copy_from_slice(&mac);
            let info = AuthInfo { layout: l, fv: l.truncate_fv(fv), mac: m };
            let mut pdu = authentic.clone();
            pdu.resize(authentic.len() + l.len(), 0xee);
            info.emit(&mut pdu[authentic.len()..]);
            let p = SecuredPdu::new_checked(&pdu[..], l).unwrap();
            proptest::prop_assert_eq!(p.authentic(), &authentic[..]);
            let back = AuthInfo::parse(&p).unwrap();
            proptest::prop_assert_eq!(back.fv, l.truncate_fv(fv));
            // The first mac_bits bits survive, the rest are zero.
            for j in 0..usize::from(mac_bits) {
                proptest::prop_assert_eq!(get_bit(&back.mac, j), get_bit(&m, j));
            }
            for j in usize::from(mac_bits)..256 {
                proptest::prop_assert!(!get_bit(&back.mac, j));
            }
        }

        #[test]
        fn secured_parse_never_panics(
            fv_bits in 0u8..=64,
            mac_bits in 1u16..=256,
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..60),
        ) {
            let l = layout(fv_bits, mac_bits);
            if let Ok(p) = SecuredPdu::new_checked(&bytes[..], l) {
                let _ = AuthInfo::parse(&p).unwrap();
                proptest::prop_assert_eq!(p.authentic_len() + l.len(), bytes.len());
            }
        }

        #[test]
        fn pdus_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)) {
            // Well-formed PDUs tile a prefix of the datagram; an error comes last, and without
            // one the PDUs cover all of it.
            let (mut total, mut errors) = (0usize, 0);
            for r in Pdus::new(&bytes) {
                proptest::prop_assert_eq!(errors, 0, "nothing after an error");
                match r {
                    Ok((_, pdu)) => total += PDU_HEADER_LEN + pdu.len(),
                    Err(_) => errors += 1,
                }
            }
            proptest::prop_assert!(total <= bytes.len());
            proptest::prop_assert!(errors == 1 || total == bytes.len());
        }
    }

    #[test]
    fn several_pdus_per_datagram() {
        let mut buf = vec![0u8; 64];
        let mut off = emit_pdu(&mut buf, 0, 0x0000_1234, &[1, 2, 3]).unwrap();
        off = emit_pdu(&mut buf, off, 0xdead_beef, &[]).unwrap();
        off = emit_pdu(&mut buf, off, 7, &[9; 5]).unwrap();
        assert_eq!(off, 3 * 8 + 3 + 5);
        assert_eq!(
            &buf[..11],
            &[0, 0, 0x12, 0x34, 0, 0, 0, 3, 1, 2, 3],
            "id and length big-endian"
        );
        let got: Vec<_> = Pdus::new(&buf[..off]).collect();
        assert_eq!(
            got,
            vec![
                Ok((0x1234, &[1u8, 2, 3][..])),
                Ok((0xdead_beef, &[][..])),
                Ok((7, &[9u8; 5][..])),
            ]
        );
        // A truncated last header and a length past the end each end the walk with a reason.
        let got: Vec<_> = Pdus::new(&buf[..off - 5 - 4]).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[2], Err(PduError::Truncated));
        let got: Vec<_> = Pdus::new(&buf[..off - 1]).collect();
        assert_eq!(
            got[2],
            Err(PduError::BadLength {
                declared: 5,
                available: 4
            })
        );
        let mut huge = [0u8; 8];
        huge[4..].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(
            Pdus::new(&huge).next(),
            Some(Err(PduError::BadLength { .. }))
        ));
        assert_eq!(
            emit_pdu(&mut [0u8; 10], 0, 1, &[0; 3]),
            Err(PduError::NoRoom { needed: 11 })
        );
        assert_eq!(
            emit_pdu(&mut [0u8; 10], usize::MAX, 1, &[]),
            Err(PduError::TooLong)
        );
    }
}
