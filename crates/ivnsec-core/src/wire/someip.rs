//! SOME/IP message header (AUTOSAR FO PRS_SOMEIPProtocol §4.1) and the framing of several
//! messages in one UDP datagram or one TCP byte stream.
//!
//! ```text
//! 0          2          4                8          10         12   13   14   15   16
//! | service  | method   | length (BE u32) | client   | session  | pv | iv | mt | rc | payload
//!  \__ message ID ___/                     \__ request ID ___/
//! ```
//! `length` counts the bytes from the request ID to the end of the payload, so a message is
//! `8 + length` bytes long and `length ≥ 8`. The protocol version is 1. The message type's bit
//! 0x20 is the SOME/IP-TP flag ([`super::someip_tp`]).
//!
//! Parsing never panics and never allocates; [`Messages`] splits a datagram into messages and
//! [`StreamDeframer`] cuts a TCP byte stream into messages with a bounded buffer and resynchronises
//! after a corrupt header.

use super::bytes::{array, byte, head, put, put_byte, range, range_mut, tail, tail_mut};
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use super::Field;

mod field {
    use super::Field;
    pub const SERVICE: Field = 0..2;
    pub const METHOD: Field = 2..4;
    pub const LENGTH: Field = 4..8;
    pub const CLIENT: Field = 8..10;
    pub const SESSION: Field = 10..12;
    pub const PROTOCOL_VERSION: usize = 12;
    pub const INTERFACE_VERSION: usize = 13;
    pub const MESSAGE_TYPE: usize = 14;
    pub const RETURN_CODE: usize = 15;
    pub const PAYLOAD: usize = 16;
}

/// Length of the header.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// Bytes of the header that `length` covers (request ID to return code).
pub const LENGTH_COVERED_HEADER: usize = 8;
/// The protocol version this module speaks.
pub const PROTOCOL_VERSION: u8 = 1;
/// The SOME/IP-TP bit of the message type.
pub const TP_FLAG: u8 = 0x20;
/// Largest message the header can describe (`length` is a u32).
pub const MAX_LENGTH: u64 = 8 + u32::MAX as u64;

/// The message type without the TP flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageType {
    /// 0x00: a request expecting a response.
    Request,
    /// 0x01: a fire-and-forget request.
    RequestNoReturn,
    /// 0x02: an event or field notification.
    Notification,
    /// 0x80: the response to a request.
    Response,
    /// 0x81: a response carrying an error.
    Error,
}

impl MessageType {
    pub const ALL: [MessageType; 5] = [
        MessageType::Request,
        MessageType::RequestNoReturn,
        MessageType::Notification,
        MessageType::Response,
        MessageType::Error,
    ];

    pub const fn value(self) -> u8 {
        match self {
            MessageType::Request => 0x00,
            MessageType::RequestNoReturn => 0x01,
            MessageType::Notification => 0x02,
            MessageType::Response => 0x80,
            MessageType::Error => 0x81,
        }
    }

    /// Parses a message type byte without the TP flag.
    pub const fn from_value(v: u8) -> Option<MessageType> {
        match v {
            0x00 => Some(MessageType::Request),
            0x01 => Some(MessageType::RequestNoReturn),
            0x02 => Some(MessageType::Notification),
            0x80 => Some(MessageType::Response),
            0x81 => Some(MessageType::Error),
            _ => None,
        }
    }

    /// True for the types a client sends (requests); false for those a server sends.
    pub const fn from_client(self) -> bool {
        matches!(self, MessageType::Request | MessageType::RequestNoReturn)
    }

    pub const fn name(self) -> &'static str {
        match self {
            MessageType::Request => "REQUEST",
            MessageType::RequestNoReturn => "REQUEST_NO_RETURN",
            MessageType::Notification => "NOTIFICATION",
            MessageType::Response => "RESPONSE",
            MessageType::Error => "ERROR",
        }
    }
}

impl fmt::Display for MessageType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The return code byte (PRS_SOMEIP_00191). Values the spec does not name are kept as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReturnCode(pub u8);

impl ReturnCode {
    pub const E_OK: ReturnCode = ReturnCode(0x00);
    pub const E_NOT_OK: ReturnCode = ReturnCode(0x01);
    pub const E_UNKNOWN_SERVICE: ReturnCode = ReturnCode(0x02);
    pub const E_UNKNOWN_METHOD: ReturnCode = ReturnCode(0x03);
    pub const E_NOT_READY: ReturnCode = ReturnCode(0x04);
    pub const E_NOT_REACHABLE: ReturnCode = ReturnCode(0x05);
    pub const E_TIMEOUT: ReturnCode = ReturnCode(0x06);
    pub const E_WRONG_PROTOCOL_VERSION: ReturnCode = ReturnCode(0x07);
    pub const E_WRONG_INTERFACE_VERSION: ReturnCode = ReturnCode(0x08);
    pub const E_MALFORMED_MESSAGE: ReturnCode = ReturnCode(0x09);
    pub const E_WRONG_MESSAGE_TYPE: ReturnCode = ReturnCode(0x0a);
}

/// Why bytes are not a SOME/IP message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SomeIpError {
    /// Fewer bytes than the header or than `8 + length`.
    Truncated,
    /// `length` < 8.
    BadLength,
    /// The protocol version is not 1.
    BadProtocolVersion,
    /// A message type the protocol does not define.
    BadMessageType,
    /// The message is longer than the configured maximum.
    TooLong,
}

impl fmt::Display for SomeIpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SomeIpError::Truncated => "truncated SOME/IP message",
            SomeIpError::BadLength => "SOME/IP length field below 8",
            SomeIpError::BadProtocolVersion => "SOME/IP protocol version is not 1",
            SomeIpError::BadMessageType => "unknown SOME/IP message type",
            SomeIpError::TooLong => "SOME/IP message longer than the configured maximum",
        })
    }
}

impl core::error::Error for SomeIpError {}

/// A view of one SOME/IP message (header and payload). The buffer may extend past the message;
/// [`Packet::total_len`] says where it ends.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes(array(b, 0))
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(array(b, 0))
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Checks that the header is there, `length ≥ 8` and the buffer holds `8 + length` bytes.
    /// Does not check the protocol version or the message type ([`Repr::parse`] does).
    pub fn new_checked(buffer: T) -> Result<Packet<T>, SomeIpError> {
        let p = Packet { buffer };
        p.check()?;
        Ok(p)
    }

    pub fn check(&self) -> Result<(), SomeIpError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(SomeIpError::Truncated);
        }
        let len = self.length();
        if (len as usize) < LENGTH_COVERED_HEADER {
            return Err(SomeIpError::BadLength);
        }
        if (b.len() as u64) < 8 + u64::from(len) {
            return Err(SomeIpError::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn message_id(&self) -> u32 {
        be32(range(self.buffer.as_ref(), 0..4))
    }

    pub fn service_id(&self) -> u16 {
        be16(range(self.buffer.as_ref(), field::SERVICE))
    }

    pub fn method_id(&self) -> u16 {
        be16(range(self.buffer.as_ref(), field::METHOD))
    }

    pub fn length(&self) -> u32 {
        be32(range(self.buffer.as_ref(), field::LENGTH))
    }

    pub fn request_id(&self) -> u32 {
        be32(range(self.buffer.as_ref(), 8..12))
    }

    pub fn client_id(&self) -> u16 {
        be16(range(self.buffer.as_ref(), field::CLIENT))
    }

    pub fn session_id(&self) -> u16 {
        be16(range(self.buffer.as_ref(), field::SESSION))
    }

    pub fn protocol_version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::PROTOCOL_VERSION)
    }

    pub fn interface_version(&self) -> u8 {
        byte(self.buffer.as_ref(), field::INTERFACE_VERSION)
    }

    /// The message type byte, TP flag included.
    pub fn message_type_raw(&self) -> u8 {
        byte(self.buffer.as_ref(), field::MESSAGE_TYPE)
    }

    pub fn tp(&self) -> bool {
        self.message_type_raw() & TP_FLAG != 0
    }

    pub fn return_code(&self) -> ReturnCode {
        ReturnCode(byte(self.buffer.as_ref(), field::RETURN_CODE))
    }

    /// Length of the whole message: `8 + length`.
    pub fn total_len(&self) -> usize {
        8usize.saturating_add(self.length() as usize)
    }

    /// The payload (after the 16-byte header, up to `8 + length`).
    pub fn payload(&self) -> &[u8] {
        let end = self.total_len().min(self.buffer.as_ref().len());
        self.buffer.as_ref().get(HEADER_LEN..end).unwrap_or(&[])
    }

    /// The whole message (header and payload).
    pub fn message(&self) -> &[u8] {
        let end = self.total_len().min(self.buffer.as_ref().len());
        head(self.buffer.as_ref(), end)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    pub fn set_service_id(&mut self, v: u16) {
        put(self.buffer.as_mut(), field::SERVICE.start, &v.to_be_bytes());
    }

    pub fn set_method_id(&mut self, v: u16) {
        put(self.buffer.as_mut(), field::METHOD.start, &v.to_be_bytes());
    }

    pub fn set_length(&mut self, v: u32) {
        put(self.buffer.as_mut(), field::LENGTH.start, &v.to_be_bytes());
    }

    pub fn set_client_id(&mut self, v: u16) {
        put(self.buffer.as_mut(), field::CLIENT.start, &v.to_be_bytes());
    }

    pub fn set_session_id(&mut self, v: u16) {
        put(self.buffer.as_mut(), field::SESSION.start, &v.to_be_bytes());
    }

    pub fn set_protocol_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::PROTOCOL_VERSION, v);
    }

    pub fn set_interface_version(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::INTERFACE_VERSION, v);
    }

    pub fn set_message_type_raw(&mut self, v: u8) {
        put_byte(self.buffer.as_mut(), field::MESSAGE_TYPE, v);
    }

    pub fn set_return_code(&mut self, v: ReturnCode) {
        put_byte(self.buffer.as_mut(), field::RETURN_CODE, v.0);
    }

    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.total_len().min(self.buffer.as_ref().len());
        let b = self.buffer.as_mut();
        let start = HEADER_LEN.min(end);
        range_mut(b, start..end)
    }
}

/// The header fields of a SOME/IP message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    pub service_id: u16,
    pub method_id: u16,
    pub client_id: u16,
    pub session_id: u16,
    pub interface_version: u8,
    pub message_type: MessageType,
    /// The SOME/IP-TP flag: the payload starts with a TP header and is one segment.
    pub tp: bool,
    pub return_code: ReturnCode,
    /// Bytes after the 16-byte header.
    pub payload_len: usize,
}

impl Repr {
    /// Parses a checked header; fails on a protocol version other than 1 or an unknown type.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr, SomeIpError> {
        p.check()?;
        if p.protocol_version() != PROTOCOL_VERSION {
            return Err(SomeIpError::BadProtocolVersion);
        }
        let mt = p.message_type_raw();
        let message_type =
            MessageType::from_value(mt & !TP_FLAG).ok_or(SomeIpError::BadMessageType)?;
        Ok(Repr {
            service_id: p.service_id(),
            method_id: p.method_id(),
            client_id: p.client_id(),
            session_id: p.session_id(),
            interface_version: p.interface_version(),
            message_type,
            tp: mt & TP_FLAG != 0,
            return_code: p.return_code(),
            payload_len: p.total_len() - HEADER_LEN,
        })
    }

    pub const fn message_type_raw(&self) -> u8 {
        self.message_type.value() | if self.tp { TP_FLAG } else { 0 }
    }

    /// The `length` field: 8 + payload length (saturating at `u32::MAX`).
    pub fn length_field(&self) -> u32 {
        u32::try_from(self.payload_len.saturating_add(LENGTH_COVERED_HEADER)).unwrap_or(u32::MAX)
    }

    /// Header plus payload length.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the 16-byte header (not the payload). Never panics on a buffer of at least
    /// [`HEADER_LEN`] bytes; does nothing on a shorter one.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        if p.buffer.as_ref().len() < HEADER_LEN {
            return;
        }
        p.set_service_id(self.service_id);
        p.set_method_id(self.method_id);
        p.set_length(self.length_field());
        p.set_client_id(self.client_id);
        p.set_session_id(self.session_id);
        p.set_protocol_version(PROTOCOL_VERSION);
        p.set_interface_version(self.interface_version);
        p.set_message_type_raw(self.message_type_raw());
        p.set_return_code(self.return_code);
    }

    /// Writes the header into the first 16 bytes of `buf` (nothing when shorter).
    pub fn emit_header(&self, buf: &mut [u8]) {
        self.emit(&mut Packet::new_unchecked(buf));
    }
}

/// The messages of one UDP datagram, in order (the UDP binding may carry several). Yields an
/// error once and then stops: a corrupt length makes the rest of a datagram unreadable.
#[derive(Debug, Clone)]
pub struct Messages<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Messages<'a> {
    pub fn new(datagram: &'a [u8]) -> Messages<'a> {
        Messages {
            rest: datagram,
            failed: false,
        }
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Packet<&'a [u8]>, SomeIpError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match Packet::new_checked(self.rest) {
            Ok(p) => {
                let n = p.total_len();
                let (msg, rest) = self.rest.split_at(n);
                self.rest = rest;
                Some(Ok(Packet::new_unchecked(msg)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Magic cookie message IDs (PRS_SOMEIP_00160..00163): client→server and server→client.
pub const MAGIC_COOKIE_CLIENT: u32 = 0xFFFF_0000;
pub const MAGIC_COOKIE_SERVER: u32 = 0xFFFF_8000;

/// True when the 16 bytes at the front of `b` look like a SOME/IP header a peer would send:
/// protocol version 1, a known message type, `length ≥ 8` and `8 + length ≤ max_message`.
pub fn plausible_header(b: &[u8], max_message: usize) -> bool {
    if b.len() < HEADER_LEN {
        return false;
    }
    let p = Packet::new_unchecked(b);
    let len = p.length() as u64;
    p.protocol_version() == PROTOCOL_VERSION
        && MessageType::from_value(p.message_type_raw() & !TP_FLAG).is_some()
        && len >= LENGTH_COVERED_HEADER as u64
        && 8 + len <= max_message as u64
}

/// What [`StreamDeframer::poll`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Deframed<'a> {
    /// One whole message (header and payload), checked with [`plausible_header`].
    Message(&'a [u8]),
    /// `n` bytes were skipped to find the next plausible header after a corrupt one.
    Resync(usize),
    /// No whole message yet: feed more bytes.
    NeedMore,
}

/// Cuts a TCP byte stream into SOME/IP messages (the TCP binding frames by `length`).
///
/// The buffer is allocated once with room for one message of at most `max_message` bytes and
/// never grows. When the bytes at the front are not a plausible header (wrong version or type,
/// `length` < 8 or past the maximum), the deframer skips forward byte by byte to the next
/// position that is one, and reports how many bytes it skipped: this is the resynchronisation
/// PRS_SOMEIP_00154 asks for (with or without magic cookies, which are plausible headers).
#[derive(Debug)]
pub struct StreamDeframer {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Bytes of the message returned by the last `poll`, consumed at the next call.
    pending: usize,
    max_message: usize,
}

impl StreamDeframer {
    /// A deframer for messages of at most `max_message` bytes (header included, ≥ 16).
    pub fn new(max_message: usize) -> StreamDeframer {
        let max_message = max_message.max(HEADER_LEN);
        StreamDeframer {
            buf: vec![0; max_message],
            start: 0,
            end: 0,
            pending: 0,
            max_message,
        }
    }

    pub fn max_message(&self) -> usize {
        self.max_message
    }

    /// Bytes buffered and not yet returned.
    pub fn buffered(&self) -> usize {
        self.end - self.start - self.pending
    }

    fn consume_pending(&mut self) {
        self.start += self.pending;
        self.pending = 0;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Free space to read into (call [`commit`](Self::commit) with the bytes read). Never empty
    /// unless a whole message is waiting to be polled.
    pub fn space(&mut self) -> &mut [u8] {
        self.consume_pending();
        if self.start > 0 && self.end == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        tail_mut(&mut self.buf, self.end)
    }

    /// Marks `n` bytes of [`space`](Self::space) as filled.
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.len());
    }

    /// The message the last [`poll`](Self::poll) returned, writable, to verify or decrypt it in
    /// place; empty when that poll returned no message. It stays valid until the next call
    /// of any other method.
    pub fn message_mut(&mut self) -> &mut [u8] {
        range_mut(&mut self.buf, self.start..self.start + self.pending)
    }

    /// Copies as much of `data` as fits; returns how many bytes were taken.
    pub fn push(&mut self, data: &[u8]) -> usize {
        let space = self.space();
        let n = space.len().min(data.len());
        if let (Some(dst), Some(src)) = (space.get_mut(..n), data.get(..n)) {
            dst.copy_from_slice(src);
        }
        self.commit(n);
        n
    }

    /// The next message, a resynchronisation, or `NeedMore`.
    pub fn poll(&mut self) -> Deframed<'_> {
        self.consume_pending();
        let avail = range(&self.buf, self.start..self.end);
        if avail.len() < HEADER_LEN {
            return Deframed::NeedMore;
        }
        if plausible_header(avail, self.max_message) {
            let total = Packet::new_unchecked(avail).total_len();
            if avail.len() < total {
                return Deframed::NeedMore;
            }
            self.pending = total;
            return Deframed::Message(range(&self.buf, self.start..self.start + total));
        }
        // Corrupt header: find the next plausible one. Positions with fewer than 16 bytes left
        // cannot be judged yet; keep them.
        let mut skip = 1;
        while skip + HEADER_LEN <= avail.len()
            && !plausible_header(tail(avail, skip), self.max_message)
        {
            skip += 1;
        }
        self.start += skip;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Deframed::Resync(skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn parse_known_answer() {
        let b = unhex(KA_REQUEST);
        let p = Packet::new_checked(&b[..]).unwrap();
        let r = Repr::parse(&p).unwrap();
        assert_eq!(r.service_id, 0x1234);
        assert_eq!(r.method_id, 0x0001);
        assert_eq!(r.client_id, 0x0102);
        assert_eq!(r.session_id, 0x0304);
        assert_eq!(r.interface_version, 1);
        assert_eq!(r.message_type, MessageType::Request);
        assert!(!r.tp);
        assert_eq!(r.return_code, ReturnCode::E_OK);
        assert_eq!(p.payload(), b"abc");
        let mut out = vec![0u8; r.buffer_len()];
        r.emit_header(&mut out);
        out[HEADER_LEN..].copy_from_slice(b"abc");
        assert_eq!(out, b);
    }

    /// Known answer from scapy 2.8.0 (`scapy.contrib.automotive.someip`), not from this code:
    /// `bytes(SOMEIP(srv_id=0x1234, sub_id=0x0001, client_id=0x0102, session_id=0x0304,
    /// iface_ver=1, msg_type=0x00, retcode=0) / Raw(b"abc")).hex()`.
    const KA_REQUEST: &str = "123400010000000b0102030401010000616263";

    #[test]
    fn rejects_bad_headers() {
        let mut b = unhex(KA_REQUEST);
        assert_eq!(
            Packet::new_checked(&b[..10]).unwrap_err(),
            SomeIpError::Truncated
        );
        assert_eq!(
            Packet::new_checked(&b[..18]).unwrap_err(),
            SomeIpError::Truncated
        );
        b[12] = 2;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])).unwrap_err(),
            SomeIpError::BadProtocolVersion
        );
        b[12] = 1;
        b[14] = 0x40;
        assert_eq!(
            Repr::parse(&Packet::new_unchecked(&b[..])).unwrap_err(),
            SomeIpError::BadMessageType
        );
        b[14] = 0x22;
        let r = Repr::parse(&Packet::new_unchecked(&b[..])).unwrap();
        assert!(r.tp);
        assert_eq!(r.message_type, MessageType::Notification);
        b[7] = 7;
        assert_eq!(
            Packet::new_checked(&b[..]).unwrap_err(),
            SomeIpError::BadLength
        );
    }

    #[test]
    fn several_messages_per_datagram() {
        let one = unhex(KA_REQUEST);
        let mut d = one.clone();
        d.extend_from_slice(&one);
        d.extend_from_slice(&one[..5]);
        let v: Vec<_> = Messages::new(&d).collect();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].as_ref().unwrap().message(), &one[..]);
        assert_eq!(v[1].as_ref().unwrap().message(), &one[..]);
        assert_eq!(v[2].as_ref().unwrap_err(), &SomeIpError::Truncated);
    }

    #[test]
    fn deframer_splits_and_resyncs() {
        let one = unhex(KA_REQUEST);
        let mut stream = Vec::new();
        stream.extend_from_slice(&one);
        stream.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef, 0x00]);
        stream.extend_from_slice(&one);
        let mut d = StreamDeframer::new(64);
        let mut got = Vec::new();
        let mut skipped = 0;
        // Feed one byte at a time: the worst case for partial headers.
        for &byte in &stream {
            assert_eq!(d.push(&[byte]), 1);
            loop {
                match d.poll() {
                    Deframed::Message(m) => got.push(m.to_vec()),
                    Deframed::Resync(n) => skipped += n,
                    Deframed::NeedMore => break,
                }
            }
        }
        assert_eq!(got, vec![one.clone(), one.clone()]);
        assert_eq!(skipped, 5);
        assert_eq!(d.buffered(), 0);
    }

    /// The message a poll returned can be changed in place (decrypted) and is consumed by the
    /// next call; nothing is writable when no message was returned.
    #[test]
    fn deframer_message_is_writable_in_place() {
        let m = unhex(KA_REQUEST);
        let mut d = StreamDeframer::new(64);
        assert!(d.message_mut().is_empty());
        d.push(&m);
        d.push(&m);
        assert_eq!(d.poll(), Deframed::Message(&m[..]));
        let w = d.message_mut();
        assert_eq!(w, &m[..]);
        w[HEADER_LEN] = b'X';
        assert_eq!(d.poll(), Deframed::Message(&m[..]));
        assert_eq!(d.message_mut().len(), m.len());
        assert_eq!(d.poll(), Deframed::NeedMore);
        assert!(d.message_mut().is_empty());
    }

    #[test]
    fn deframer_refuses_oversize_length() {
        let mut big = unhex(KA_REQUEST);
        big[4..8].copy_from_slice(&1_000_000u32.to_be_bytes());
        let mut d = StreamDeframer::new(64);
        d.push(&big);
        // 19 bytes: positions 1..=3 can be judged and are not headers; 15 bytes stay.
        assert_eq!(d.poll(), Deframed::Resync(4));
        assert_eq!(d.buffered(), 15);
        assert_eq!(d.poll(), Deframed::NeedMore);
    }

    proptest::proptest! {
        #[test]
        fn header_round_trip(service in proptest::num::u16::ANY, method in proptest::num::u16::ANY,
                client in proptest::num::u16::ANY, session in proptest::num::u16::ANY,
                iv in proptest::num::u8::ANY, mt in 0usize..5, tp in proptest::bool::ANY,
                rc in proptest::num::u8::ANY, payload in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let r = Repr { service_id: service, method_id: method, client_id: client, session_id: session,
                interface_version: iv, message_type: MessageType::ALL[mt], tp, return_code: ReturnCode(rc),
                payload_len: payload.len() };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit_header(&mut buf);
            buf[HEADER_LEN..].copy_from_slice(&payload);
            let p = Packet::new_checked(&buf[..]).unwrap();
            proptest::prop_assert_eq!(Repr::parse(&p).unwrap(), r);
            proptest::prop_assert_eq!(p.payload(), &payload[..]);
        }

        #[test]
        fn parsers_never_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..80)) {
            for p in Messages::new(&data).flatten() {
                let _ = Repr::parse(&p);
            }
            let mut d = StreamDeframer::new(48);
            let mut rest = &data[..];
            let mut rounds = 0;
            while !rest.is_empty() || rounds == 0 {
                let n = d.push(rest);
                rest = &rest[n..];
                loop {
                    match d.poll() { Deframed::NeedMore => break, Deframed::Message(m) => proptest::prop_assert!(m.len() <= 48), Deframed::Resync(n) => proptest::prop_assert!(n > 0) }
                }
                rounds += 1;
                proptest::prop_assert!(rounds < 1000);
            }
        }
    }
}
