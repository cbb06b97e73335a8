//! IPsec ESP (RFC 4303 §2): header, trailer and padding.
//!
//! ```text
//! 0        4          8        8+iv          ...                           end-icv   end
//! | SPI    | seq (low 32 bits) | IV | payload | padding 1,2,3,… | pad len | next hdr | ICV |
//!                                   \_______________ encrypted (unless ENCR_NULL/GMAC) ____/
//! ```
//! The IV and ICV lengths are properties of the SA's algorithm, not of the wire, so this view
//! covers the fixed header and the trailer; `sa::esp` does the rest. With extended sequence
//! numbers the high 32 bits are never on the wire (RFC 4303 §2.2.1).

use super::Field;
use super::bytes::{be32, put, tail, tail_mut};

mod field {
    use super::Field;
    pub const SPI: Field = 0..4;
    pub const SEQ: Field = 4..8;
    pub const PAYLOAD: usize = 8;
}

/// Length of the SPI and sequence number fields.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// Length of the pad length and next header fields.
pub const TRAILER_LEN: usize = 2;

/// Errors from parsing ESP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EspError {
    /// Shorter than the header (or the trailer).
    Truncated,
    /// The padding bytes are not 1, 2, 3, … or the pad length exceeds the data.
    BadPadding,
}

/// A view of an ESP packet (from the SPI to the end of the ICV).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Checks that the SPI and sequence number are there.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, EspError> {
        let p = Packet { buffer };
        p.check()?;
        Ok(p)
    }

    pub fn check(&self) -> Result<(), EspError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(EspError::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn spi(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SPI.start)
    }

    /// The sequence number on the wire (the low 32 bits with ESN).
    pub fn seq(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SEQ.start)
    }

    /// Everything after the header: IV, ciphertext (payload and trailer) and ICV.
    pub fn payload(&self) -> &[u8] {
        tail(self.buffer.as_ref(), field::PAYLOAD)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_spi(&mut self, spi: u32) {
        put(self.buffer.as_mut(), field::SPI.start, &spi.to_be_bytes());
    }

    pub fn set_seq(&mut self, seq: u32) {
        put(self.buffer.as_mut(), field::SEQ.start, &seq.to_be_bytes());
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        tail_mut(self.buffer.as_mut(), field::PAYLOAD)
    }
}

/// The ESP header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repr {
    pub spi: u32,
    /// Sequence number as on the wire (low 32 bits).
    pub seq: u32,
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, EspError> {
        p.check()?;
        Ok(Repr {
            spi: p.spi(),
            seq: p.seq(),
        })
    }

    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header; never panics on a buffer of at least [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        p.set_spi(self.spi);
        p.set_seq(self.seq);
    }
}

/// Padding length for `payload_len` bytes so that payload ‖ padding ‖ pad length ‖ next header
/// is a multiple of `align` (4, or the cipher block size): the minimum RFC 4303 §2.4 allows.
pub const fn pad_len(payload_len: usize, align: usize) -> usize {
    let a = if align == 0 { 1 } else { align };
    (a - (payload_len + TRAILER_LEN) % a) % a
}

/// Writes padding 1, 2, 3, … (RFC 4303 §2.4), the pad length and the next header into `tail`,
/// which must be exactly `pad + 2` bytes with `pad ≤ 255`.
pub fn emit_trailer(tail: &mut [u8], next_header: u8) {
    let Some((padding, [pad_len, nh])) = tail.split_last_chunk_mut::<TRAILER_LEN>() else {
        return;
    };
    *pad_len = padding.len() as u8;
    *nh = next_header;
    for (i, b) in padding.iter_mut().enumerate() {
        *b = (i + 1) as u8;
    }
}

/// Parses the trailer at the end of decrypted `data` (payload ‖ padding ‖ pad length ‖ next
/// header). Returns the payload length and the next header. The padding must be 1, 2, 3, …
///
//= https://www.rfc-editor.org/rfc/rfc4303#section-2.4
//# If Padding bytes are needed but the encryption algorithm does not specify the padding
//# contents, then the following default processing MUST be used. The Padding bytes are
//# initialized with a series of (unsigned, 1-byte) integer values. [...] the receiver SHOULD
//# inspect the Padding field.
pub fn parse_trailer(data: &[u8]) -> Result<(usize, u8), EspError> {
    let (body, &[pad, nh]) = data
        .split_last_chunk::<TRAILER_LEN>()
        .ok_or(EspError::Truncated)?;
    let payload_len = body
        .len()
        .checked_sub(usize::from(pad))
        .ok_or(EspError::BadPadding)?;
    let ok = tail(body, payload_len)
        .iter()
        .enumerate()
        .all(|(i, &b)| usize::from(b) == i + 1);
    if ok {
        Ok((payload_len, nh))
    } else {
        Err(EspError::BadPadding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_short_input() {
        let mut b = [0u8; 12];
        Repr {
            spi: 0x0102_0304,
            seq: 5,
        }
        .emit(&mut Packet::new_unchecked(&mut b[..]));
        assert_eq!(&b[..8], &[1, 2, 3, 4, 0, 0, 0, 5]);
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])).unwrap(),
            Repr {
                spi: 0x0102_0304,
                seq: 5
            }
        );
        assert_eq!(
            Packet::new_checked(&b[..7]).unwrap_err(),
            EspError::Truncated
        );
    }

    #[test]
    fn padding_is_minimal() {
        assert_eq!(pad_len(84, 4), 2); // RFC 7634 Appendix A: 84-byte packet, pad 01 02.
        assert_eq!(pad_len(2, 4), 0);
        assert_eq!(pad_len(0, 16), 14);
        assert_eq!(pad_len(14, 16), 0);
        assert_eq!(pad_len(15, 16), 15);
    }

    #[test]
    fn trailer_round_trip_and_rejects() {
        let mut t = [0u8; 5];
        emit_trailer(&mut t, 4);
        assert_eq!(t, [1, 2, 3, 3, 4]);
        let mut d = [9u8, 9, 1, 2, 3, 3, 4];
        assert_eq!(parse_trailer(&d), Ok((2, 4)));
        d[3] = 7;
        assert_eq!(parse_trailer(&d), Err(EspError::BadPadding));
        assert_eq!(parse_trailer(&[5, 4]), Err(EspError::BadPadding));
        assert_eq!(parse_trailer(&[0, 4]), Ok((0, 4)));
        assert_eq!(parse_trailer(&[4]), Err(EspError::Truncated));
    }
}
