//! Checked byte access for the views and `Repr`s of this module (and the security associations
//! that fill their buffers), so that no getter or setter can panic.
//!
//! A checked view (`new_checked`) or an `emit` into a buffer of `buffer_len()` bytes only ever
//! asks for bytes inside the buffer, so these helpers return exactly what indexing would. On an
//! unchecked view of a buffer that is too short, a read returns zeros (or an empty slice) and a
//! write does nothing, instead of panicking. Parsers that can fail return their error with
//! `get(..).ok_or(..)?` rather than use these.

use super::Field;

/// `buf[r]`, or an empty slice when `r` is not inside `buf`.
#[inline]
pub(crate) fn range(buf: &[u8], r: Field) -> &[u8] {
    buf.get(r).unwrap_or_default()
}

/// `&mut buf[r]`, or an empty slice when `r` is not inside `buf`.
#[inline]
pub(crate) fn range_mut(buf: &mut [u8], r: Field) -> &mut [u8] {
    buf.get_mut(r).unwrap_or_default()
}

/// `buf[at..]`, or an empty slice when `at` is past the end.
#[inline]
pub(crate) fn tail(buf: &[u8], at: usize) -> &[u8] {
    buf.get(at..).unwrap_or_default()
}

/// `&mut buf[at..]`, or an empty slice when `at` is past the end.
#[inline]
pub(crate) fn tail_mut(buf: &mut [u8], at: usize) -> &mut [u8] {
    buf.get_mut(at..).unwrap_or_default()
}

/// `buf[..end]`, or an empty slice when `end` is past the end.
#[inline]
pub(crate) fn head(buf: &[u8], end: usize) -> &[u8] {
    buf.get(..end).unwrap_or_default()
}

/// The `N` bytes at `buf[at..]`, or zeros when they are not all inside `buf`.
#[inline]
pub(crate) fn array<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    buf.get(at..)
        .and_then(<[u8]>::first_chunk::<N>)
        .copied()
        .unwrap_or([0; N])
}

/// `buf[at]`, or 0 past the end.
#[inline]
pub(crate) fn byte(buf: &[u8], at: usize) -> u8 {
    buf.get(at).copied().unwrap_or(0)
}

/// The big-endian `u16` at `buf[at..]` (0 when not inside `buf`).
#[inline]
pub(crate) fn be16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(array(buf, at))
}

/// The big-endian `u32` at `buf[at..]` (0 when not inside `buf`).
#[inline]
pub(crate) fn be32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(array(buf, at))
}

/// The big-endian `u64` at `buf[at..]` (0 when not inside `buf`).
#[inline]
pub(crate) fn be64(buf: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(array(buf, at))
}

/// Copies `src` to `buf[at..at + src.len()]`; does nothing when that range is not inside `buf`.
#[inline]
pub(crate) fn put(buf: &mut [u8], at: usize, src: &[u8]) {
    if let Some(dst) = buf.get_mut(at..).and_then(|b| b.get_mut(..src.len())) {
        dst.copy_from_slice(src);
    }
}

/// Sets `buf[at]`; does nothing past the end.
#[inline]
pub(crate) fn put_byte(buf: &mut [u8], at: usize, v: u8) {
    if let Some(b) = buf.get_mut(at) {
        *b = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_reads_what_indexing_reads() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(range(&b, 1..3), &[2, 3]);
        assert_eq!(tail(&b, 7), &[8, 9]);
        assert_eq!(head(&b, 2), &[1, 2]);
        assert_eq!(byte(&b, 8), 9);
        assert_eq!(be16(&b, 0), 0x0102);
        assert_eq!(be32(&b, 5), 0x0607_0809);
        assert_eq!(be64(&b, 1), 0x0203_0405_0607_0809);
    }

    #[test]
    fn outside_reads_zero_or_empty_and_writes_nothing() {
        let mut b = [1u8, 2, 3];
        assert!(range(&b, 2..4).is_empty());
        assert!(tail(&b, 4).is_empty());
        assert!(tail(&b, 3).is_empty());
        assert!(head(&b, 4).is_empty());
        assert_eq!(byte(&b, 3), 0);
        assert_eq!(be32(&b, 0), 0);
        assert!(range_mut(&mut b, 3..5).is_empty());
        assert!(tail_mut(&mut b, 9).is_empty());
        put(&mut b, 2, &[9, 9]);
        put_byte(&mut b, 3, 9);
        assert_eq!(b, [1, 2, 3]);
        put(&mut b, 1, &[8, 9]);
        put_byte(&mut b, 0, 7);
        assert_eq!(b, [7, 8, 9]);
    }
}
