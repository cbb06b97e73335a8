//! How the vector tables are written: [`Data`] (bytes as the source document gives them) and
//! one vector type per kind of primitive.

use alloc::vec::Vec;

use crate::crypto::{AeadAlg, CipherAlg, MacAlg};

/// Bytes of a vector, written the way the source document writes them.
#[derive(Clone, Copy, Debug)]
pub(super) enum Data {
    /// Hex digits; whitespace is ignored.
    Hex(&'static str),
    /// ASCII text (the RFCs give some messages as strings).
    Text(&'static str),
    /// `n` copies of a byte (e.g. RFC 2202's `0xaa` repeated 80 times).
    Rep(u8, usize),
    /// `n` bytes counting up from a start value (e.g. `0x01 0x02 ... 0x19`).
    Count(u8, usize),
}

impl Data {
    pub(super) fn bytes(self) -> Result<Vec<u8>, &'static str> {
        match self {
            Data::Hex(s) => hex(s),
            Data::Text(s) => Ok(s.as_bytes().to_vec()),
            Data::Rep(b, n) => Ok(alloc::vec![b; n]),
            Data::Count(start, n) => Ok((0..n).map(|i| start.wrapping_add(i as u8)).collect()),
        }
    }
}

/// A small hex decoder: pairs of hex digits, whitespace ignored.
pub(super) fn hex(s: &str) -> Result<Vec<u8>, &'static str> {
    fn nibble(c: u8) -> Result<u8, &'static str> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err("vector table: bad hex digit"),
        }
    }
    let digits: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return Err("vector table: odd number of hex digits");
    }
    digits
        .chunks_exact(2)
        .map(|p| match p {
            [hi, lo] => Ok(nibble(*hi)? << 4 | nibble(*lo)?),
            _ => Err("vector table: odd number of hex digits"),
        })
        .collect()
}

pub(super) fn array<const N: usize>(d: Data) -> Result<[u8; N], &'static str> {
    d.bytes()?
        .try_into()
        .map_err(|_| "vector table: field has the wrong length")
}

pub(super) struct BlockVector {
    pub(super) name: &'static str,
    pub(super) alg: CipherAlg,
    pub(super) key: Data,
    pub(super) pt: Data,
    pub(super) ct: Data,
}

pub(super) struct ModeVector {
    pub(super) name: &'static str,
    pub(super) alg: CipherAlg,
    pub(super) key: Data,
    /// CBC: the IV. CTR: the initial counter block.
    pub(super) iv: Data,
    pub(super) pt: Data,
    pub(super) ct: Data,
}

pub(super) struct AeadVector {
    pub(super) name: &'static str,
    pub(super) alg: AeadAlg,
    pub(super) key: Data,
    pub(super) nonce: Data,
    pub(super) aad: Data,
    pub(super) pt: Data,
    pub(super) ct: Data,
    pub(super) tag: Data,
}

pub(super) struct MacVector {
    pub(super) name: &'static str,
    pub(super) alg: MacAlg,
    pub(super) key: Data,
    pub(super) msg: Data,
    /// The expected MAC; when shorter than the full output (a truncated test case), it is
    /// compared with the leftmost bytes.
    pub(super) mac: Data,
}
