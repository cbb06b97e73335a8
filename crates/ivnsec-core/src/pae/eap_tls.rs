//! EAP-TLS fragmentation and reassembly (RFC 5216 §2.1.5, kept by RFC 9190).
//!
//! A TLS message longer than the fragment size goes out in fragments of at most `fragment_len`
//! octets of TLS data: the first carries the L flag and the 4-octet TLS Message Length, every
//! fragment but the last the M flag. The receiver acknowledges each fragment with M by an
//! EAP-TLS message with no data (an ACK) and the sender then sends the next one. Reassembly is
//! bounded: a TLS Message Length over [`MAX_MESSAGE_LEN`], or more data than announced (or,
//! without a length, more than the bound), is refused ([`PaeDrop::TooLong`]).

use alloc::vec::Vec;

use super::types::PaeDrop;
use crate::wire::eap::{TlsRepr, tls_flags};

/// Largest reassembled EAP-TLS message accepted (64 KiB).
pub const MAX_MESSAGE_LEN: usize = 64 * 1024;
/// Default TLS data per fragment (hostapd and FreeRADIUS use about 1000–1400).
pub const DEFAULT_FRAGMENT_LEN: usize = 1000;

/// An outgoing TLS message cut into EAP-TLS fragments.
#[derive(Debug, Default, Clone)]
pub struct Fragmenter {
    msg: Vec<u8>,
    off: usize,
}

impl Fragmenter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the pending message.
    pub fn set(&mut self, msg: Vec<u8>) {
        self.msg = msg;
        self.off = 0;
    }

    /// Fragments are left to send.
    pub fn pending(&self) -> bool {
        self.off < self.msg.len()
    }

    /// The Type-Data of the next fragment (at most `fragment_len` octets of TLS data, at least
    /// 1), or `None` when the message is sent.
    pub fn next_fragment(&mut self, fragment_len: usize) -> Option<Vec<u8>> {
        let rest = self.msg.get(self.off..)?;
        if rest.is_empty() {
            return None;
        }
        let n = rest.len().min(fragment_len.max(1));
        let data = rest.get(..n)?;
        let first = self.off == 0;
        let more = n < rest.len();
        let message_len = if first && more {
            u32::try_from(self.msg.len()).ok()
        } else {
            None
        };
        let flags = if more { tls_flags::M } else { 0 };
        let v = TlsRepr {
            flags,
            message_len,
            data,
        }
        .to_vec();
        self.off += n;
        Some(v)
    }
}

/// Type-Data of an acknowledgement (no flags, no data).
pub fn ack() -> Vec<u8> {
    alloc::vec![0]
}

/// What one received fragment gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Reassembled {
    /// More fragments follow: acknowledge this one.
    NeedMore,
    /// The whole message.
    Complete(Vec<u8>),
}

/// Reassembly of one incoming TLS message, bounded by [`MAX_MESSAGE_LEN`].
#[derive(Debug, Default, Clone)]
pub struct Reassembler {
    buf: Vec<u8>,
    expected: Option<usize>,
    active: bool,
}

impl Reassembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// A message is half received.
    pub fn in_progress(&self) -> bool {
        self.active
    }

    pub fn reset(&mut self) {
        self.buf = Vec::new();
        self.expected = None;
        self.active = false;
    }

    /// Adds one fragment. On an error the partial message is discarded.
    pub fn push(&mut self, frag: &TlsRepr<'_>) -> Result<Reassembled, PaeDrop> {
        if !self.active {
            self.buf.clear();
            self.expected = None;
            if let Some(n) = frag.message_len {
                let n = usize::try_from(n).map_err(|_| PaeDrop::TooLong)?;
                if n > MAX_MESSAGE_LEN {
                    return Err(PaeDrop::TooLong);
                }
                self.expected = Some(n);
            }
        }
        let bound = self.expected.unwrap_or(MAX_MESSAGE_LEN);
        if self.buf.len().saturating_add(frag.data.len()) > bound {
            self.reset();
            return Err(PaeDrop::TooLong);
        }
        self.buf.extend_from_slice(frag.data);
        if frag.more() {
            self.active = true;
            return Ok(Reassembled::NeedMore);
        }
        self.active = false;
        self.expected = None;
        Ok(Reassembled::Complete(core::mem::take(&mut self.buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(len: usize, frag: usize) -> (usize, Vec<u8>) {
        let msg: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut f = Fragmenter::new();
        f.set(msg.clone());
        let mut r = Reassembler::new();
        let mut n = 0;
        loop {
            let td = f.next_fragment(frag).unwrap();
            n += 1;
            let t = TlsRepr::parse(&td).unwrap();
            assert!(t.data.len() <= frag);
            assert_eq!(t.message_len.is_some(), n == 1 && t.more());
            match r.push(&t).unwrap() {
                Reassembled::NeedMore => assert!(t.more()),
                Reassembled::Complete(m) => {
                    assert!(!f.pending());
                    assert_eq!(f.next_fragment(frag), None);
                    assert_eq!(m, msg);
                    return (n, m);
                }
            }
        }
    }

    #[test]
    fn round_trips() {
        assert_eq!(run(10, 1000).0, 1);
        assert_eq!(run(1000, 1000).0, 1);
        assert_eq!(run(1001, 1000).0, 2);
        assert_eq!(run(5000, 1000).0, 5);
        assert_eq!(run(MAX_MESSAGE_LEN, 1400).0, MAX_MESSAGE_LEN.div_ceil(1400));
        assert_eq!(ack(), [0]);
        assert_eq!(TlsRepr::parse(&ack()).unwrap().data, &[] as &[u8]);
    }

    #[test]
    fn bounds() {
        let mut r = Reassembler::new();
        let big = TlsRepr {
            flags: tls_flags::M | tls_flags::L,
            message_len: Some(MAX_MESSAGE_LEN as u32 + 1),
            data: &[0; 10],
        };
        assert_eq!(r.push(&big), Err(PaeDrop::TooLong));
        // More data than announced.
        let first = TlsRepr {
            flags: tls_flags::M | tls_flags::L,
            message_len: Some(15),
            data: &[0; 10],
        };
        assert_eq!(r.push(&first), Ok(Reassembled::NeedMore));
        let second = TlsRepr {
            flags: 0,
            message_len: None,
            data: &[0; 10],
        };
        assert_eq!(r.push(&second), Err(PaeDrop::TooLong));
        assert!(!r.in_progress());
        // Without a length, more than 64 KiB in all.
        let chunk = [0u8; 1400];
        let mut err = None;
        for _ in 0..100 {
            let t = TlsRepr {
                flags: tls_flags::M,
                message_len: None,
                data: &chunk,
            };
            if let Err(e) = r.push(&t) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(PaeDrop::TooLong));
    }
}
