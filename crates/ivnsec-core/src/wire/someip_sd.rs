//! SOME/IP Service Discovery (AUTOSAR FO PRS_SOMEIPServiceDiscoveryProtocol §4.1.2): the SD
//! payload, its entries (FindService, OfferService, SubscribeEventgroup, SubscribeEventgroupAck
//! and their TTL-0 "stop"/"nack" forms) and options (IPv4 endpoint, multicast and SD endpoint;
//! others are skipped by their length).
//!
//! An SD message is a SOME/IP NOTIFICATION with message ID 0xFFFF8100, client ID 0, protocol and
//! interface version 1, whose payload is:
//!
//! ```text
//! 0       1          4                 8                   8+E               12+E
//! | flags | reserved | entries len (E) | entries (16 B each) | options len (O) | options
//! ```
//! Service entry (type 1): `type | idx1 | idx2 | #opt1:4 #opt2:4 | service | instance |
//! major | TTL (24) | minor (32)`. Eventgroup entry (type 2): the same up to the TTL, then
//! `reserved (12) | counter (4) | eventgroup (16)`. IPv4 endpoint option: `length 0x0009 | type
//! 0x04 | reserved | address | reserved | L4 protocol (0x06 TCP, 0x11 UDP) | port`.
//!
//! Parsing never panics; the owned form ([`SdRepr::parse`]) allocates at most one entry per 16
//! input bytes and one option per 3.

use super::bytes::{array, byte, put, put_byte, range, range_mut, tail_mut};
use alloc::vec::Vec;
use core::fmt;
use core::net::Ipv4Addr;

use super::someip::{HEADER_LEN, MessageType, Packet, Repr, ReturnCode};

/// Service ID of SD messages.
pub const SD_SERVICE_ID: u16 = 0xFFFF;
/// Method ID of SD messages.
pub const SD_METHOD_ID: u16 = 0x8100;
/// The UDP port of SD.
pub const SD_PORT: u16 = 30490;
/// Flag: the sender rebooted (its session IDs restarted).
pub const FLAG_REBOOT: u8 = 0x80;
/// Flag: the sender can receive unicast SD messages.
pub const FLAG_UNICAST: u8 = 0x40;
/// Length of one entry.
pub const ENTRY_LEN: usize = 16;
/// Length of an IPv4 endpoint / multicast / SD endpoint option, including length and type.
pub const IPV4_OPTION_LEN: usize = 12;
/// Layer-4 protocol numbers of endpoint options.
pub const PROTO_TCP: u8 = 0x06;
pub const PROTO_UDP: u8 = 0x11;
/// TTL meaning "until the next reboot".
pub const TTL_INFINITE: u32 = 0xFF_FFFF;

/// Why bytes are not an SD payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SdError {
    Truncated,
    /// The entries array length is not a multiple of 16.
    BadEntriesLength,
    /// An option's length runs past the options array, or is too short for its type.
    BadOptionLength,
    /// An entry type the protocol does not define.
    UnknownEntryType,
    /// An entry refers to options past the options array.
    BadOptionIndex,
    /// Not an SD message (message ID, type or versions).
    NotSd,
}

impl fmt::Display for SdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SdError::Truncated => "truncated SOME/IP-SD message",
            SdError::BadEntriesLength => "SOME/IP-SD entries length not a multiple of 16",
            SdError::BadOptionLength => "SOME/IP-SD option length inconsistent",
            SdError::UnknownEntryType => "unknown SOME/IP-SD entry type",
            SdError::BadOptionIndex => "SOME/IP-SD entry refers to a missing option",
            SdError::NotSd => "not a SOME/IP-SD message",
        })
    }
}

impl core::error::Error for SdError {}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(array(b, 0))
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes(array(b, 0))
}

/// A view of an SD payload (the bytes after the SOME/IP header).
#[derive(Debug, Clone)]
pub struct SdPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SdPacket<T> {
    pub const fn new_unchecked(buffer: T) -> SdPacket<T> {
        SdPacket { buffer }
    }

    /// Checks that the entries and options arrays fit the buffer.
    pub fn new_checked(buffer: T) -> Result<SdPacket<T>, SdError> {
        let p = SdPacket { buffer };
        p.check()?;
        Ok(p)
    }

    pub fn check(&self) -> Result<(), SdError> {
        let b = self.buffer.as_ref();
        if b.len() < 12 {
            return Err(SdError::Truncated);
        }
        let el = be32(range(b, 4..8)) as usize;
        if el % ENTRY_LEN != 0 {
            return Err(SdError::BadEntriesLength);
        }
        let opt_len_at = 8usize.checked_add(el).ok_or(SdError::Truncated)?;
        if b.len() < opt_len_at.saturating_add(4) {
            return Err(SdError::Truncated);
        }
        let ol = be32(range(b, opt_len_at..opt_len_at + 4)) as usize;
        if b.len() - (opt_len_at + 4) < ol {
            return Err(SdError::Truncated);
        }
        Ok(())
    }

    pub fn flags(&self) -> u8 {
        byte(self.buffer.as_ref(), 0)
    }

    pub fn entries_bytes(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let el = be32(range(b, 4..8)) as usize;
        range(b, 8..8 + el)
    }

    pub fn options_bytes(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let at = 8 + be32(range(b, 4..8)) as usize;
        let ol = be32(range(b, at..at + 4)) as usize;
        range(b, at + 4..at + 4 + ol)
    }

    /// Length of the SD payload (may be shorter than the buffer).
    pub fn total_len(&self) -> usize {
        let b = self.buffer.as_ref();
        let at = 8 + be32(range(b, 4..8)) as usize;
        at + 4 + be32(range(b, at..at + 4)) as usize
    }

    pub fn entries(&self) -> impl Iterator<Item = Result<Entry, SdError>> + '_ {
        self.entries_bytes()
            .chunks_exact(ENTRY_LEN)
            .map(Entry::parse)
    }

    pub fn options(&self) -> SdOptions<'_> {
        SdOptions {
            rest: self.options_bytes(),
        }
    }
}

/// An SD entry type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryType {
    /// 0x00.
    FindService,
    /// 0x01 (TTL 0: StopOfferService).
    OfferService,
    /// 0x06 (TTL 0: StopSubscribeEventgroup).
    SubscribeEventgroup,
    /// 0x07 (TTL 0: SubscribeEventgroupNack).
    SubscribeEventgroupAck,
}

impl EntryType {
    pub const fn value(self) -> u8 {
        match self {
            EntryType::FindService => 0x00,
            EntryType::OfferService => 0x01,
            EntryType::SubscribeEventgroup => 0x06,
            EntryType::SubscribeEventgroupAck => 0x07,
        }
    }

    pub const fn from_value(v: u8) -> Option<EntryType> {
        match v {
            0x00 => Some(EntryType::FindService),
            0x01 => Some(EntryType::OfferService),
            0x06 => Some(EntryType::SubscribeEventgroup),
            0x07 => Some(EntryType::SubscribeEventgroupAck),
            _ => None,
        }
    }

    /// True for the eventgroup (type 2) format.
    pub const fn is_eventgroup(self) -> bool {
        matches!(
            self,
            EntryType::SubscribeEventgroup | EntryType::SubscribeEventgroupAck
        )
    }
}

/// The last four bytes of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryBody {
    /// Service entries: the minor version (0xFFFF_FFFF = any in FindService).
    Service { minor_version: u32 },
    /// Eventgroup entries.
    Eventgroup { counter: u8, eventgroup_id: u16 },
}

/// One SD entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    pub entry_type: EntryType,
    pub index1: u8,
    pub index2: u8,
    pub num1: u8,
    pub num2: u8,
    pub service_id: u16,
    /// 0xFFFF = any instance (FindService).
    pub instance_id: u16,
    /// 0xFF = any version (FindService).
    pub major_version: u8,
    /// Seconds, 24 bits.
    pub ttl: u32,
    pub body: EntryBody,
}

impl Entry {
    /// Parses 16 bytes.
    pub fn parse(b: &[u8]) -> Result<Entry, SdError> {
        let b = b.get(..ENTRY_LEN).ok_or(SdError::Truncated)?;
        let entry_type = EntryType::from_value(byte(b, 0)).ok_or(SdError::UnknownEntryType)?;
        let body = if entry_type.is_eventgroup() {
            EntryBody::Eventgroup {
                counter: byte(b, 13) & 0x0F,
                eventgroup_id: be16(range(b, 14..16)),
            }
        } else {
            EntryBody::Service {
                minor_version: be32(range(b, 12..16)),
            }
        };
        Ok(Entry {
            entry_type,
            index1: byte(b, 1),
            index2: byte(b, 2),
            num1: byte(b, 3) >> 4,
            num2: byte(b, 3) & 0x0F,
            service_id: be16(range(b, 4..6)),
            instance_id: be16(range(b, 6..8)),
            major_version: byte(b, 8),
            ttl: be32(range(b, 8..12)) & 0xFF_FFFF,
            body,
        })
    }

    /// Writes 16 bytes (nothing when `b` is shorter).
    pub fn emit(&self, b: &mut [u8]) {
        let Some(b) = b.get_mut(..ENTRY_LEN) else {
            return;
        };
        put_byte(b, 0, self.entry_type.value());
        put_byte(b, 1, self.index1);
        put_byte(b, 2, self.index2);
        put_byte(b, 3, (self.num1 << 4) | (self.num2 & 0x0F));
        put(b, 4, &self.service_id.to_be_bytes());
        put(b, 6, &self.instance_id.to_be_bytes());
        let v = (u32::from(self.major_version) << 24) | (self.ttl & 0xFF_FFFF);
        put(b, 8, &v.to_be_bytes());
        match self.body {
            EntryBody::Service { minor_version } => put(b, 12, &minor_version.to_be_bytes()),
            EntryBody::Eventgroup {
                counter,
                eventgroup_id,
            } => {
                put_byte(b, 12, 0);
                put_byte(b, 13, counter & 0x0F);
                put(b, 14, &eventgroup_id.to_be_bytes());
            }
        }
    }

    /// Eventgroup ID of an eventgroup entry.
    pub fn eventgroup_id(&self) -> Option<u16> {
        match self.body {
            EntryBody::Eventgroup { eventgroup_id, .. } => Some(eventgroup_id),
            EntryBody::Service { .. } => None,
        }
    }

    /// The options this entry refers to: two runs of the options array.
    pub fn option_runs(&self) -> [core::ops::Range<usize>; 2] {
        let r = |i: u8, n: u8| usize::from(i)..usize::from(i) + usize::from(n);
        [r(self.index1, self.num1), r(self.index2, self.num2)]
    }

    /// Checks that both option runs lie inside an options array of `n` options.
    pub fn check_refs(&self, n: usize) -> Result<(), SdError> {
        if self.option_runs().iter().all(|r| r.end <= n) {
            Ok(())
        } else {
            Err(SdError::BadOptionIndex)
        }
    }

    /// The options of this entry, looked up in `options`.
    pub fn resolve<'o>(
        &self,
        options: &'o [SdOption],
    ) -> Result<impl Iterator<Item = &'o SdOption> + 'o, SdError> {
        let [a, b] = self.option_runs();
        let (Some(x), Some(y)) = (options.get(a), options.get(b)) else {
            return Err(SdError::BadOptionIndex);
        };
        Ok(x.iter().chain(y.iter()))
    }
}

/// The three IPv4 options with the endpoint layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ipv4Kind {
    /// 0x04: where a service or a subscriber listens.
    Endpoint,
    /// 0x14: the multicast group of an eventgroup.
    Multicast,
    /// 0x24: the SD endpoint of the sender.
    SdEndpoint,
}

impl Ipv4Kind {
    pub const fn value(self) -> u8 {
        match self {
            Ipv4Kind::Endpoint => 0x04,
            Ipv4Kind::Multicast => 0x14,
            Ipv4Kind::SdEndpoint => 0x24,
        }
    }
}

/// One SD option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SdOption {
    Ipv4 {
        kind: Ipv4Kind,
        addr: Ipv4Addr,
        /// 0x06 TCP, 0x11 UDP.
        proto: u8,
        port: u16,
    },
    /// Any other option (configuration, load balancing, IPv6 …), skipped by its length.
    Other {
        option_type: u8,
        /// Bytes after the length and type fields.
        len: u16,
    },
}

impl SdOption {
    /// An IPv4 endpoint option.
    pub const fn endpoint(addr: Ipv4Addr, proto: u8, port: u16) -> SdOption {
        SdOption::Ipv4 {
            kind: Ipv4Kind::Endpoint,
            addr,
            proto,
            port,
        }
    }

    /// Bytes on the wire (length and type fields included).
    pub const fn buffer_len(&self) -> usize {
        match self {
            SdOption::Ipv4 { .. } => IPV4_OPTION_LEN,
            SdOption::Other { len, .. } => 3 + *len as usize,
        }
    }

    /// Writes the option; `Other` options are written as zero-filled bodies. Nothing when `b` is
    /// shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, b: &mut [u8]) {
        let Some(b) = b.get_mut(..self.buffer_len()) else {
            return;
        };
        match *self {
            SdOption::Ipv4 {
                kind,
                addr,
                proto,
                port,
            } => {
                put(b, 0, &9u16.to_be_bytes());
                put_byte(b, 2, kind.value());
                put_byte(b, 3, 0);
                put(b, 4, &addr.octets());
                put_byte(b, 8, 0);
                put_byte(b, 9, proto);
                put(b, 10, &port.to_be_bytes());
            }
            SdOption::Other { option_type, len } => {
                put(b, 0, &len.to_be_bytes());
                put_byte(b, 2, option_type);
                tail_mut(b, 3).fill(0);
            }
        }
    }
}

/// Iterator over the options array; yields an error once and stops.
#[derive(Debug, Clone)]
pub struct SdOptions<'a> {
    rest: &'a [u8],
}

impl Iterator for SdOptions<'_> {
    type Item = Result<SdOption, SdError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() < 3 {
            self.rest = &[];
            return Some(Err(SdError::BadOptionLength));
        }
        let len = be16(self.rest);
        let total = 3 + usize::from(len);
        if total > self.rest.len() {
            self.rest = &[];
            return Some(Err(SdError::BadOptionLength));
        }
        let (b, rest) = self.rest.split_at(total);
        self.rest = rest;
        let option_type = byte(b, 2);
        let kind = match option_type {
            0x04 => Some(Ipv4Kind::Endpoint),
            0x14 => Some(Ipv4Kind::Multicast),
            0x24 => Some(Ipv4Kind::SdEndpoint),
            _ => None,
        };
        Some(match kind {
            Some(kind) if len == 9 => Ok(SdOption::Ipv4 {
                kind,
                addr: Ipv4Addr::new(byte(b, 4), byte(b, 5), byte(b, 6), byte(b, 7)),
                proto: byte(b, 9),
                port: be16(range(b, 10..12)),
            }),
            Some(_) => {
                self.rest = &[];
                Err(SdError::BadOptionLength)
            }
            None => Ok(SdOption::Other { option_type, len }),
        })
    }
}

/// An SD payload in owned form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SdRepr {
    pub flags: u8,
    pub entries: Vec<Entry>,
    pub options: Vec<SdOption>,
}

impl SdRepr {
    /// Parses and checks an SD payload: every entry type known, every option well formed, every
    /// option reference inside the options array.
    pub fn parse<T: AsRef<[u8]>>(p: &SdPacket<T>) -> Result<SdRepr, SdError> {
        p.check()?;
        let entries = p.entries().collect::<Result<Vec<_>, _>>()?;
        let options = p.options().collect::<Result<Vec<_>, _>>()?;
        for e in &entries {
            e.check_refs(options.len())?;
        }
        Ok(SdRepr {
            flags: p.flags(),
            entries,
            options,
        })
    }

    /// Parses a whole SOME/IP message that must be an SD message.
    pub fn parse_message(msg: &[u8]) -> Result<(Repr, SdRepr), SdError> {
        let p = Packet::new_checked(msg).map_err(|_| SdError::Truncated)?;
        let r = Repr::parse(&p).map_err(|_| SdError::NotSd)?;
        if !is_sd(&r) {
            return Err(SdError::NotSd);
        }
        let sd = SdRepr::parse(&SdPacket::new_checked(p.payload())?)?;
        Ok((r, sd))
    }

    pub fn buffer_len(&self) -> usize {
        12 + self.entries.len() * ENTRY_LEN + self.options_len()
    }

    fn options_len(&self) -> usize {
        self.options.iter().map(SdOption::buffer_len).sum()
    }

    /// Writes the SD payload; never panics on a buffer of at least
    /// [`buffer_len`](Self::buffer_len) bytes, does nothing on a shorter one.
    pub fn emit(&self, b: &mut [u8]) {
        if b.len() < self.buffer_len() {
            return;
        }
        put_byte(b, 0, self.flags);
        range_mut(b, 1..4).fill(0);
        let el = self.entries.len() * ENTRY_LEN;
        put(b, 4, &(el as u32).to_be_bytes());
        for (i, e) in self.entries.iter().enumerate() {
            e.emit(tail_mut(b, 8 + i * ENTRY_LEN));
        }
        let mut at = 8 + el;
        put(b, at, &(self.options_len() as u32).to_be_bytes());
        at += 4;
        for o in &self.options {
            o.emit(tail_mut(b, at));
            at += o.buffer_len();
        }
    }

    /// Writes a whole SD message (SOME/IP header with `session`, then the payload) into `out`
    /// and returns its length, or `None` when `out` is too short.
    pub fn emit_message(&self, session: u16, out: &mut [u8]) -> Option<usize> {
        let r = sd_header(session, self.buffer_len());
        let n = r.buffer_len();
        let out = out.get_mut(..n)?;
        r.emit_header(out);
        self.emit(tail_mut(out, HEADER_LEN));
        Some(n)
    }

    /// Adds `options` to the array (reusing equal ones already there) and returns the run
    /// (index, count) an entry should refer to. `None` when the run would not be contiguous or
    /// exceeds 15 options.
    pub fn add_options(&mut self, options: &[SdOption]) -> Option<(u8, u8)> {
        if options.is_empty() {
            return Some((0, 0));
        }
        let n = options.len();
        if n > 15 {
            return None;
        }
        let start = self
            .options
            .windows(n)
            .position(|w| w == options)
            .unwrap_or_else(|| {
                let s = self.options.len();
                self.options.extend_from_slice(options);
                s
            });
        Some((u8::try_from(start).ok()?, n as u8))
    }
}

/// The SOME/IP header of an SD message with `payload_len` bytes of payload.
pub fn sd_header(session: u16, payload_len: usize) -> Repr {
    Repr {
        service_id: SD_SERVICE_ID,
        method_id: SD_METHOD_ID,
        client_id: 0,
        session_id: session,
        interface_version: 1,
        message_type: MessageType::Notification,
        tp: false,
        return_code: ReturnCode::E_OK,
        payload_len,
    }
}

/// True when a header is that of an SD message.
pub fn is_sd(r: &Repr) -> bool {
    r.service_id == SD_SERVICE_ID
        && r.method_id == SD_METHOD_ID
        && r.message_type == MessageType::Notification
        && !r.tp
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// Known answer from scapy 2.8.0 (`scapy.contrib.automotive.someip`), not from this code:
    /// an SD message (session 1, flags 0xc0) with an OfferService entry (service 0x1234,
    /// instance 1, major 1, TTL 3, minor 0, option 0) and a SubscribeEventgroup entry
    /// (eventgroup 1, counter 0, option 1), options: IPv4 endpoint 10.77.0.1 UDP 30509 and
    /// 10.77.0.2 TCP 40000.
    const KA_SD: &str = concat!(
        "ffff81000000004c0000000101010200c0000000000000200100001012340001010000030000000006010010",
        "1234000101000003000000010000001800090400",
        "0a4d00010011772d000904000a4d000200069c40"
    );

    fn ka_repr() -> SdRepr {
        SdRepr {
            flags: FLAG_REBOOT | FLAG_UNICAST,
            entries: vec![
                Entry {
                    entry_type: EntryType::OfferService,
                    index1: 0,
                    index2: 0,
                    num1: 1,
                    num2: 0,
                    service_id: 0x1234,
                    instance_id: 1,
                    major_version: 1,
                    ttl: 3,
                    body: EntryBody::Service { minor_version: 0 },
                },
                Entry {
                    entry_type: EntryType::SubscribeEventgroup,
                    index1: 1,
                    index2: 0,
                    num1: 1,
                    num2: 0,
                    service_id: 0x1234,
                    instance_id: 1,
                    major_version: 1,
                    ttl: 3,
                    body: EntryBody::Eventgroup {
                        counter: 0,
                        eventgroup_id: 1,
                    },
                },
            ],
            options: vec![
                SdOption::endpoint(Ipv4Addr::new(10, 77, 0, 1), PROTO_UDP, 30509),
                SdOption::endpoint(Ipv4Addr::new(10, 77, 0, 2), PROTO_TCP, 40000),
            ],
        }
    }

    #[test]
    fn known_answer_parse_and_emit() {
        let b = unhex(KA_SD);
        let (h, sd) = SdRepr::parse_message(&b).unwrap();
        assert_eq!(h.session_id, 1);
        assert_eq!(sd, ka_repr());
        let mut out = vec![0u8; b.len()];
        assert_eq!(ka_repr().emit_message(1, &mut out), Some(b.len()));
        assert_eq!(out, b);
        let opts: Vec<_> = sd.entries[1].resolve(&sd.options).unwrap().collect();
        assert_eq!(opts, vec![&sd.options[1]]);
    }

    #[test]
    fn rejects_malformed() {
        let b = unhex(KA_SD);
        let payload = &b[16..];
        assert_eq!(
            SdPacket::new_checked(&payload[..11]).unwrap_err(),
            SdError::Truncated
        );
        let mut bad = payload.to_vec();
        bad[7] = 0x21;
        assert_eq!(
            SdPacket::new_checked(&bad[..]).unwrap_err(),
            SdError::BadEntriesLength
        );
        let mut bad = payload.to_vec();
        bad[8] = 0x03;
        assert_eq!(
            SdRepr::parse(&SdPacket::new_unchecked(&bad[..])).unwrap_err(),
            SdError::UnknownEntryType
        );
        let mut bad = payload.to_vec();
        bad[8 + 16 + 1] = 2; // second entry refers to option 2 of 2
        assert_eq!(
            SdRepr::parse(&SdPacket::new_unchecked(&bad[..])).unwrap_err(),
            SdError::BadOptionIndex
        );
        let mut bad = payload.to_vec();
        bad[8 + 32 + 4 + 1] = 8; // IPv4 option of length 8
        assert_eq!(
            SdRepr::parse(&SdPacket::new_unchecked(&bad[..])).unwrap_err(),
            SdError::BadOptionLength
        );
        let mut bad = payload.to_vec();
        bad[8 + 32 + 3] = 0x19; // options length past the end
        assert_eq!(
            SdPacket::new_checked(&bad[..]).unwrap_err(),
            SdError::Truncated
        );
    }

    #[test]
    fn unknown_options_are_skipped() {
        let mut sd = ka_repr();
        sd.options.push(SdOption::Other {
            option_type: 0x01,
            len: 5,
        });
        let mut b = vec![0u8; sd.buffer_len()];
        sd.emit(&mut b);
        let back = SdRepr::parse(&SdPacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(back, sd);
    }

    #[test]
    fn add_options_reuses_runs() {
        let mut sd = SdRepr::default();
        let a = SdOption::endpoint(Ipv4Addr::new(1, 2, 3, 4), PROTO_UDP, 1);
        let b = SdOption::endpoint(Ipv4Addr::new(1, 2, 3, 4), PROTO_TCP, 2);
        assert_eq!(sd.add_options(&[a, b]), Some((0, 2)));
        assert_eq!(sd.add_options(&[b]), Some((1, 1)));
        assert_eq!(sd.add_options(&[a]), Some((0, 1)));
        assert_eq!(sd.options.len(), 2);
    }

    proptest::proptest! {
        #[test]
        fn round_trip(entries in proptest::collection::vec((0usize..4, proptest::num::u16::ANY, proptest::num::u16::ANY, proptest::num::u8::ANY, 0u32..=0xFF_FFFF, proptest::num::u32::ANY), 0..6),
                      opts in proptest::collection::vec((proptest::num::u32::ANY, proptest::bool::ANY, proptest::num::u16::ANY), 0..4),
                      flags in proptest::num::u8::ANY) {
            let options: Vec<SdOption> = opts.iter().map(|&(a, tcp, port)| SdOption::endpoint(Ipv4Addr::from(a), if tcp { PROTO_TCP } else { PROTO_UDP }, port)).collect();
            let types = [EntryType::FindService, EntryType::OfferService, EntryType::SubscribeEventgroup, EntryType::SubscribeEventgroupAck];
            let entries: Vec<Entry> = entries.iter().map(|&(t, s, i, m, ttl, x)| {
                let entry_type = types[t];
                let n = options.len().min(1) as u8;
                Entry { entry_type, index1: 0, index2: 0, num1: n, num2: 0, service_id: s, instance_id: i, major_version: m, ttl,
                    body: if entry_type.is_eventgroup() { EntryBody::Eventgroup { counter: (x >> 16) as u8 & 0xF, eventgroup_id: x as u16 } } else { EntryBody::Service { minor_version: x } } }
            }).collect();
            let sd = SdRepr { flags, entries, options };
            let mut b = vec![0u8; sd.buffer_len()];
            sd.emit(&mut b);
            let back = SdRepr::parse(&SdPacket::new_checked(&b[..]).unwrap()).unwrap();
            proptest::prop_assert_eq!(back, sd);
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(proptest::num::u8::ANY, 0..100)) {
            if let Ok(p) = SdPacket::new_checked(&data[..]) {
                let _ = SdRepr::parse(&p);
            }
            let _ = SdRepr::parse_message(&data);
        }
    }
}
