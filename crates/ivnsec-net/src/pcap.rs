//! Classic pcap files (the libpcap savefile format) with the Ethernet link type: a cheap writer
//! for recording the frames a node sends and receives, and a reader for captures from anywhere.
//!
//! The format (pcap-savefile(5), draft-ietf-opsawg-pcap): a 24-byte file header (magic, version
//! 2.4, this-zone, sigfigs, snaplen, link type) and then records, each a 16-byte header (seconds,
//! micro- or nanoseconds, captured length, original length) followed by the captured bytes. The
//! magic tells the byte order and the timestamp resolution: `a1b2c3d4` microseconds,
//! `a1b23c4d` nanoseconds.
//!
//! The writer always writes nanosecond files in the machine's byte order (as libpcap does);
//! tshark, tcpdump and scapy read them.
//!
//! The reader treats the file as hostile input. It never panics, and the only buffer it sizes
//! from the file is bounded by [`MAX_CAPLEN`]. It refuses a bad magic, a version other than 2,
//! a link type other than Ethernet, a truncated file or record header, a truncated record, and a
//! captured length above the file's snaplen or above [`MAX_CAPLEN`]; every error names the record
//! (numbered from 1, as tshark numbers frames) and the byte offset of its header. A file that ends
//! inside a record (a writer killed mid-record) yields every whole record first, then an error
//! whose [`PcapError::is_truncation`] says so, so that a caller can report it and carry on.
//!
//! Why not the `pcap-file` crate: its reader sizes a record only by the file's own snaplen (so a
//! file that claims a 4 GiB snaplen may make it buffer a 4 GiB record), reports a record larger
//! than its fixed 8 MB read buffer as an end of file, refuses valid records whose original length
//! exceeds the snaplen (every capture taken with `-s`), and gives no record number or offset in
//! its errors. The format is small enough to read by hand with those bounds.

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// LINKTYPE_ETHERNET: IEEE 802.3 frames starting with the destination address (no preamble,
/// no FCS).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Largest captured length the reader accepts (and the default snaplen of the writer):
/// 256 KiB, libpcap's maximum snapshot length.
pub const MAX_CAPLEN: u32 = 256 * 1024;
/// Length of the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 16;

const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// The first word of a pcapng file (its Section Header Block type).
const PCAPNG_SHB: u32 = 0x0a0d_0d0a;
const VERSION_MAJOR: u16 = 2;
const VERSION_MINOR: u16 = 4;

/// The compression format whose magic `head` (the first bytes of a file) starts with: gzip
/// (RFC 1952: 1f 8b), xz (fd 37 7a 58 5a 00), zstd (RFC 8878: 28 b5 2f fd), bzip2 ("BZh" and
/// the block size digit). None of them is a pcap magic in either byte order.
fn compression(head: &[u8]) -> Option<&'static str> {
    const FORMATS: [(&[u8], &str); 4] = [
        (&[0x1f, 0x8b], "gzip"),
        (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz"),
        (&[0x28, 0xb5, 0x2f, 0xfd], "zstd"),
        (b"BZh", "bzip2"),
    ];
    FORMATS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|&(_, name)| name)
}

/// Resolution of the record timestamps, as the magic number says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsResolution {
    /// Magic `a1b2c3d4`: the second timestamp word counts microseconds.
    Micro,
    /// Magic `a1b23c4d`: the second timestamp word counts nanoseconds.
    Nano,
}

impl TsResolution {
    fn magic(self) -> u32 {
        match self {
            TsResolution::Micro => MAGIC_MICROS,
            TsResolution::Nano => MAGIC_NANOS,
        }
    }
}

/// Writes a classic pcap file, one record per frame.
///
/// Per frame it formats a 16-byte header on the stack and copies it and the frame into the
/// buffered writer (no allocation), then flushes it: one `write` system call per record, so a
/// writer killed at any instant (SIGKILL, a crash) leaves a file that ends with a whole record
/// and that every reader opens; no `fsync` (the page cache survives the process).
/// [`set_flush_each_record(false)`](Self::set_flush_each_record) lets a bulk writer (copying a
/// capture, writing frames recorded in memory) fill the buffer instead, a system call per 64 KiB.
/// Frames longer than the snaplen are cut to it (the record keeps the original length), as
/// libpcap does. Dropping the writer flushes too but cannot report an error.
///
/// To record from several threads, share it behind a `Mutex`.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    resolution: TsResolution,
    snaplen: u32,
    records: u64,
    flush_each_record: bool,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (or truncates) `path` and writes the file header: nanosecond timestamps,
    /// snaplen [`MAX_CAPLEN`], Ethernet.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = File::create(path)?;
        PcapWriter::new(BufWriter::with_capacity(64 * 1024, file))
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header to `out`: nanosecond timestamps, snaplen [`MAX_CAPLEN`], Ethernet.
    /// `out` should be buffered (a `BufWriter`, or a `Vec<u8>`).
    pub fn new(out: W) -> io::Result<Self> {
        PcapWriter::with_options(out, TsResolution::Nano, MAX_CAPLEN)
    }

    /// Writes the file header with the given timestamp resolution and snaplen (1..=
    /// [`MAX_CAPLEN`]).
    pub fn with_options(mut out: W, resolution: TsResolution, snaplen: u32) -> io::Result<Self> {
        if snaplen == 0 || snaplen > MAX_CAPLEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("pcap snaplen {snaplen} is outside 1..={MAX_CAPLEN}"),
            ));
        }
        let mut h = [0u8; FILE_HEADER_LEN];
        h[0..4].copy_from_slice(&resolution.magic().to_ne_bytes());
        h[4..6].copy_from_slice(&VERSION_MAJOR.to_ne_bytes());
        h[6..8].copy_from_slice(&VERSION_MINOR.to_ne_bytes());
        // thiszone (8..12) and sigfigs (12..16) are 0: timestamps are UTC.
        h[16..20].copy_from_slice(&snaplen.to_ne_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_ne_bytes());
        out.write_all(&h)?;
        // The header reaches the file at once: a writer killed before its first record leaves
        // an empty capture, not an unreadable one.
        out.flush()?;
        Ok(PcapWriter {
            out,
            resolution,
            snaplen,
            records: 0,
            flush_each_record: true,
        })
    }

    /// Whether each record is flushed as it is written (the default: a killed writer leaves a
    /// readable file). Off, records reach the underlying writer when its buffer fills or at
    /// [`flush`](Self::flush): for bulk copies where nobody reads the file before it is done.
    pub fn set_flush_each_record(&mut self, on: bool) {
        self.flush_each_record = on;
    }

    /// Appends `frame` (an Ethernet frame from the destination address on, without FCS) taken
    /// at `ts`. Fails for a time before 1970 or after 2106 (the format's 32-bit seconds) without
    /// writing anything.
    pub fn write_frame(&mut self, ts: SystemTime, frame: &[u8]) -> io::Result<()> {
        let since = ts.duration_since(SystemTime::UNIX_EPOCH).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "pcap timestamp before 1970")
        })?;
        let secs = u32::try_from(since.as_secs()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "pcap timestamp after 2106 (32-bit seconds)",
            )
        })?;
        let frac = match self.resolution {
            TsResolution::Nano => since.subsec_nanos(),
            TsResolution::Micro => since.subsec_micros(),
        };
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let caplen = orig_len.min(self.snaplen);
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&secs.to_ne_bytes());
        h[4..8].copy_from_slice(&frac.to_ne_bytes());
        h[8..12].copy_from_slice(&caplen.to_ne_bytes());
        h[12..16].copy_from_slice(&orig_len.to_ne_bytes());
        self.out.write_all(&h)?;
        // caplen ≤ frame.len() by construction.
        self.out.write_all(&frame[..caplen as usize])?;
        self.records += 1;
        if self.flush_each_record {
            self.out.flush()?;
        }
        Ok(())
    }

    /// Appends `frame` with the current time as its timestamp.
    pub fn write_frame_now(&mut self, frame: &[u8]) -> io::Result<()> {
        self.write_frame(SystemTime::now(), frame)
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The snaplen of the file header.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Flushes the buffered records to the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// What the file header of a capture says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcapHeader {
    pub resolution: TsResolution,
    /// The file is in big-endian byte order.
    pub big_endian: bool,
    pub version_major: u16,
    pub version_minor: u16,
    /// The snaplen as written in the file (0 is taken as "no limit", i.e. [`MAX_CAPLEN`]).
    pub snaplen: u32,
    pub linktype: u32,
}

/// One record, borrowed from the reader's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Record number, from 1 (tshark's frame number).
    pub number: u64,
    /// Byte offset of the record header in the file.
    pub offset: u64,
    /// Capture time.
    pub timestamp: SystemTime,
    /// Length of the frame on the wire, as the record header says: above `data.len()` when
    /// the capture cut the frame (snaplen); below it only in a malformed file (the reader
    /// passes the record on for the caller to judge).
    pub orig_len: u32,
    /// The captured bytes.
    pub data: &'a [u8],
}

/// One record, owned (what the [`Iterator`] impl of [`PcapReader`] yields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub number: u64,
    pub offset: u64,
    pub timestamp: SystemTime,
    pub orig_len: u32,
    pub data: Vec<u8>,
}

impl RecordRef<'_> {
    pub fn to_owned(&self) -> Record {
        Record {
            number: self.number,
            offset: self.offset,
            timestamp: self.timestamp,
            orig_len: self.orig_len,
            data: self.data.to_vec(),
        }
    }
}

/// What is wrong with a capture.
#[derive(Debug)]
#[non_exhaustive]
pub enum PcapErrorKind {
    /// Reading failed.
    Io(io::Error),
    /// The file ends inside the 24-byte file header.
    TruncatedFileHeader { got: usize },
    /// The first four bytes are no classic pcap magic.
    BadMagic(u32),
    /// A pcapng file (not supported: convert it with `editcap -F pcap`).
    Pcapng,
    /// A compressed file (gzip, xz, zstd, bzip2; `tcpdump -w - | gzip`, log rotation): the
    /// name of the format; decompress it first.
    Compressed(&'static str),
    /// A major version other than 2.
    UnsupportedVersion { major: u16, minor: u16 },
    /// A link type other than Ethernet.
    UnsupportedLinkType(u32),
    /// The file ends inside a 16-byte record header.
    TruncatedRecordHeader { got: usize },
    /// The file ends inside the captured bytes of a record.
    TruncatedRecord { caplen: u32, got: usize },
    /// The captured length exceeds the file's snaplen.
    CaplenOverSnaplen { caplen: u32, snaplen: u32 },
    /// The captured length exceeds [`MAX_CAPLEN`].
    CaplenTooLarge { caplen: u32 },
}

/// An error reading a capture: what, in which record, at which byte offset.
#[derive(Debug)]
pub struct PcapError {
    pub kind: PcapErrorKind,
    /// The record (from 1), or `None` for the file header.
    pub record: Option<u64>,
    /// Byte offset of the file header (0) or of the record header.
    pub offset: u64,
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record {
            None => write!(f, "file header at byte offset {}: ", self.offset)?,
            Some(n) => write!(f, "record {n} at byte offset {}: ", self.offset)?,
        }
        match &self.kind {
            PcapErrorKind::Io(e) => write!(f, "read error: {e}"),
            PcapErrorKind::TruncatedFileHeader { got } => {
                write!(
                    f,
                    "truncated: {got} of {FILE_HEADER_LEN} header bytes (not a pcap file)"
                )
            }
            PcapErrorKind::BadMagic(m) => write!(
                f,
                "bad magic {m:#010x} (not a classic pcap file; expected a1b2c3d4 or a1b23c4d)"
            ),
            PcapErrorKind::Pcapng => f.write_str(
                "a pcapng file; only classic pcap is read (convert: editcap -F pcap IN OUT)",
            ),
            PcapErrorKind::Compressed(format) => {
                let (cat, tool) = match *format {
                    "gzip" => ("zcat", "gunzip"),
                    "xz" => ("xzcat", "unxz"),
                    "zstd" => ("zstdcat", "unzstd"),
                    _ => ("bzcat", "bunzip2"),
                };
                write!(
                    f,
                    "a {format}-compressed file, not a pcap file itself; decompress it first: \
                     `{cat} IN > capture.pcap` (or `{tool} IN`), then give capture.pcap"
                )
            }
            PcapErrorKind::UnsupportedVersion { major, minor } => {
                write!(f, "unsupported version {major}.{minor} (expected 2.x)")
            }
            PcapErrorKind::UnsupportedLinkType(t) => write!(
                f,
                "link type {t} is not Ethernet ({LINKTYPE_ETHERNET}); capture on an Ethernet \
                 interface (not `any`)"
            ),
            PcapErrorKind::TruncatedRecordHeader { got } => write!(
                f,
                "truncated record header: {got} of {RECORD_HEADER_LEN} bytes"
            ),
            PcapErrorKind::TruncatedRecord { caplen, got } => {
                write!(f, "truncated record: {got} of {caplen} captured bytes")
            }
            PcapErrorKind::CaplenOverSnaplen { caplen, snaplen } => {
                write!(f, "captured length {caplen} exceeds the snaplen {snaplen}")
            }
            PcapErrorKind::CaplenTooLarge { caplen } => {
                write!(f, "captured length {caplen} exceeds the limit {MAX_CAPLEN}")
            }
        }
    }
}

impl PcapError {
    /// The file ends inside a record (its header or its bytes): what a writer stopped in the
    /// middle of a record leaves. Every record before it was read; nothing follows it.
    pub fn is_truncation(&self) -> bool {
        matches!(
            self.kind,
            PcapErrorKind::TruncatedRecordHeader { .. } | PcapErrorKind::TruncatedRecord { .. }
        )
    }
}

impl std::error::Error for PcapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            PcapErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads a classic pcap file with the Ethernet link type, one record at a time.
///
/// [`next_record`](Self::next_record) lends each record from one reused buffer (no allocation
/// per record once the buffer has grown to the largest record); the [`Iterator`] impl yields
/// owned [`Record`]s. After an error or the end of the file both return `None`.
#[derive(Debug)]
pub struct PcapReader<R: Read> {
    input: R,
    header: PcapHeader,
    /// Effective bound on a record's captured length: min(snaplen or MAX_CAPLEN, MAX_CAPLEN).
    limit: u32,
    buf: Vec<u8>,
    /// Byte offset of the next record header.
    offset: u64,
    /// Records read so far.
    count: u64,
    done: bool,
}

impl PcapReader<BufReader<File>> {
    /// Opens `path` and reads its file header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let file = File::open(path).map_err(|e| PcapError {
            kind: PcapErrorKind::Io(e),
            record: None,
            offset: 0,
        })?;
        PcapReader::new(BufReader::with_capacity(64 * 1024, file))
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn word(b: &[u8; 4], big_endian: bool) -> u32 {
    if big_endian {
        u32::from_be_bytes(*b)
    } else {
        u32::from_le_bytes(*b)
    }
}

fn half(b: [u8; 2], big_endian: bool) -> u16 {
    if big_endian {
        u16::from_be_bytes(b)
    } else {
        u16::from_le_bytes(b)
    }
}

fn field4(b: &[u8], at: usize) -> [u8; 4] {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    w
}

impl<R: Read> PcapReader<R> {
    /// Reads and checks the file header of `input` (best buffered, e.g. a `BufReader`; a
    /// `&[u8]` works as it is).
    pub fn new(mut input: R) -> Result<Self, PcapError> {
        let err = |kind| PcapError {
            kind,
            record: None,
            offset: 0,
        };
        let mut h = [0u8; FILE_HEADER_LEN];
        let got = read_full(&mut input, &mut h).map_err(|e| err(PcapErrorKind::Io(e)))?;
        if got < FILE_HEADER_LEN {
            // Still say "compressed", "pcapng" or "bad magic" when the magic alone is wrong.
            if let Some(format) = compression(&h[..got]) {
                return Err(err(PcapErrorKind::Compressed(format)));
            }
            if got >= 4 {
                let m = u32::from_le_bytes(field4(&h, 0));
                if m == PCAPNG_SHB {
                    return Err(err(PcapErrorKind::Pcapng));
                }
                let be = u32::from_be_bytes(field4(&h, 0));
                if ![MAGIC_MICROS, MAGIC_NANOS].contains(&m)
                    && ![MAGIC_MICROS, MAGIC_NANOS].contains(&be)
                {
                    return Err(err(PcapErrorKind::BadMagic(be)));
                }
            }
            return Err(err(PcapErrorKind::TruncatedFileHeader { got }));
        }
        if let Some(format) = compression(&h) {
            return Err(err(PcapErrorKind::Compressed(format)));
        }
        let magic = field4(&h, 0);
        let (resolution, big_endian) = match (u32::from_le_bytes(magic), u32::from_be_bytes(magic))
        {
            (MAGIC_MICROS, _) => (TsResolution::Micro, false),
            (MAGIC_NANOS, _) => (TsResolution::Nano, false),
            (_, MAGIC_MICROS) => (TsResolution::Micro, true),
            (_, MAGIC_NANOS) => (TsResolution::Nano, true),
            (PCAPNG_SHB, _) => return Err(err(PcapErrorKind::Pcapng)),
            (_, be) => return Err(err(PcapErrorKind::BadMagic(be))),
        };
        let version_major = half([h[4], h[5]], big_endian);
        let version_minor = half([h[6], h[7]], big_endian);
        if version_major != VERSION_MAJOR {
            return Err(err(PcapErrorKind::UnsupportedVersion {
                major: version_major,
                minor: version_minor,
            }));
        }
        let snaplen = word(&field4(&h, 16), big_endian);
        // The top bits of the link type field may carry the FCS length (pcap-savefile(5)); the
        // link type is the low 28 bits.
        let linktype = word(&field4(&h, 20), big_endian) & 0x0fff_ffff;
        if linktype != LINKTYPE_ETHERNET {
            return Err(err(PcapErrorKind::UnsupportedLinkType(linktype)));
        }
        let limit = if snaplen == 0 {
            MAX_CAPLEN
        } else {
            snaplen.min(MAX_CAPLEN)
        };
        Ok(PcapReader {
            input,
            header: PcapHeader {
                resolution,
                big_endian,
                version_major,
                version_minor,
                snaplen,
                linktype,
            },
            limit,
            buf: Vec::new(),
            offset: FILE_HEADER_LEN as u64,
            count: 0,
            done: false,
        })
    }

    /// The file header.
    pub fn header(&self) -> &PcapHeader {
        &self.header
    }

    /// The next record, borrowed until the next call; `None` at the end of the file or after
    /// an error.
    pub fn next_record(&mut self) -> Option<Result<RecordRef<'_>, PcapError>> {
        if self.done {
            return None;
        }
        let number = self.count + 1;
        let offset = self.offset;
        let fail = |done: &mut bool, kind| {
            *done = true;
            Some(Err(PcapError {
                kind,
                record: Some(number),
                offset,
            }))
        };
        let mut h = [0u8; RECORD_HEADER_LEN];
        let got = match read_full(&mut self.input, &mut h) {
            Ok(n) => n,
            Err(e) => return fail(&mut self.done, PcapErrorKind::Io(e)),
        };
        if got == 0 {
            self.done = true;
            return None;
        }
        if got < RECORD_HEADER_LEN {
            return fail(&mut self.done, PcapErrorKind::TruncatedRecordHeader { got });
        }
        let be = self.header.big_endian;
        let secs = word(&field4(&h, 0), be);
        let frac = word(&field4(&h, 4), be);
        let caplen = word(&field4(&h, 8), be);
        let orig_len = word(&field4(&h, 12), be);
        if caplen > MAX_CAPLEN {
            return fail(&mut self.done, PcapErrorKind::CaplenTooLarge { caplen });
        }
        if caplen > self.limit {
            let snaplen = self.header.snaplen;
            return fail(
                &mut self.done,
                PcapErrorKind::CaplenOverSnaplen { caplen, snaplen },
            );
        }
        // caplen ≤ MAX_CAPLEN: the buffer never grows beyond 256 KiB.
        let len = caplen as usize;
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let got = match read_full(&mut self.input, &mut self.buf[..len]) {
            Ok(n) => n,
            Err(e) => return fail(&mut self.done, PcapErrorKind::Io(e)),
        };
        if got < len {
            return fail(
                &mut self.done,
                PcapErrorKind::TruncatedRecord { caplen, got },
            );
        }
        let frac = match self.header.resolution {
            TsResolution::Micro => Duration::from_micros(u64::from(frac)),
            TsResolution::Nano => Duration::from_nanos(u64::from(frac)),
        };
        // At most 2^32 s + 2^32 µs: far inside SystemTime's range.
        let timestamp = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::from(secs)) + frac;
        self.count = number;
        self.offset = offset + (RECORD_HEADER_LEN + len) as u64;
        Some(Ok(RecordRef {
            number,
            offset,
            timestamp,
            orig_len,
            data: &self.buf[..len],
        }))
    }
}

impl<R: Read> Iterator for PcapReader<R> {
    type Item = Result<Record, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().map(|r| r.map(|r| r.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64, nanos: u32) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
    }

    fn sample() -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_frame(at(1_700_000_000, 123_456_789), &[1u8; 60])
            .unwrap();
        w.write_frame(at(1_700_000_001, 5), &[2u8; 1514]).unwrap();
        w.into_inner().unwrap()
    }

    #[test]
    fn round_trip_nanoseconds() {
        let bytes = sample();
        assert_eq!(bytes.len(), 24 + 16 + 60 + 16 + 1514);
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().resolution, TsResolution::Nano);
        assert_eq!(r.header().snaplen, MAX_CAPLEN);
        let a = r.next_record().unwrap().unwrap();
        assert_eq!((a.number, a.offset, a.orig_len), (1, 24, 60));
        assert_eq!(a.timestamp, at(1_700_000_000, 123_456_789));
        assert_eq!(a.data, &[1u8; 60][..]);
        let b = r.next_record().unwrap().unwrap().to_owned();
        assert_eq!((b.number, b.offset), (2, 24 + 16 + 60));
        assert_eq!(b.timestamp, at(1_700_000_001, 5));
        assert_eq!(b.data, vec![2u8; 1514]);
        assert!(r.next_record().is_none());
        assert!(r.next_record().is_none());
    }

    #[test]
    fn micro_writer_and_snaplen_cut() {
        let mut w = PcapWriter::with_options(Vec::new(), TsResolution::Micro, 100).unwrap();
        w.write_frame(at(10, 999_999_999), &[7u8; 300]).unwrap();
        assert_eq!(w.records(), 1);
        let bytes = w.into_inner().unwrap();
        let recs: Vec<Record> = PcapReader::new(&bytes[..])
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].data.len(), 100);
        assert_eq!(recs[0].orig_len, 300);
        assert_eq!(recs[0].timestamp, at(10, 999_999_000));
    }

    #[test]
    fn writer_refuses_unrepresentable_times() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let before = SystemTime::UNIX_EPOCH - Duration::from_secs(1);
        assert!(w.write_frame(before, &[0; 14]).is_err());
        assert!(w.write_frame(at(1 << 32, 0), &[0; 14]).is_err());
        assert_eq!(w.records(), 0);
        assert_eq!(w.get_ref().len(), FILE_HEADER_LEN);
        assert!(PcapWriter::with_options(Vec::new(), TsResolution::Nano, 0).is_err());
        assert!(PcapWriter::with_options(Vec::new(), TsResolution::Nano, MAX_CAPLEN + 1).is_err());
    }

    /// A file written by hand in big-endian order with the microsecond magic.
    #[test]
    fn big_endian_micro_file() {
        let mut f = Vec::new();
        f.extend_from_slice(&0xa1b2_c3d4u32.to_be_bytes());
        f.extend_from_slice(&2u16.to_be_bytes());
        f.extend_from_slice(&4u16.to_be_bytes());
        for w in [0u32, 0, 65535, 1] {
            f.extend_from_slice(&w.to_be_bytes());
        }
        for w in [7u32, 250_000, 3, 64] {
            f.extend_from_slice(&w.to_be_bytes());
        }
        f.extend_from_slice(&[9, 8, 7]);
        let mut r = PcapReader::new(&f[..]).unwrap();
        assert!(r.header().big_endian);
        assert_eq!(r.header().resolution, TsResolution::Micro);
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(rec.timestamp, at(7, 250_000_000));
        assert_eq!((rec.data, rec.orig_len), (&[9u8, 8, 7][..], 64));
    }

    fn kind(e: PcapError) -> PcapErrorKind {
        e.kind
    }

    /// Compressed captures are named as such with how to read them: the magics of RFC 1952
    /// (gzip), the xz file format 1.0.4 (§2.1.1.1), RFC 8878 (zstd) and bzip2, whole files and
    /// files shorter than a pcap header alike.
    #[test]
    fn names_compressed_files() {
        let files: [(&[u8], &str, &str); 4] = [
            (
                &[0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 3],
                "gzip",
                "zcat IN > capture.pcap",
            ),
            (
                &[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0x00, 0x04],
                "xz",
                "xzcat IN",
            ),
            (&[0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x58], "zstd", "zstdcat IN"),
            (b"BZh91AY&SY", "bzip2", "bzcat IN"),
        ];
        for (head, format, how) in files {
            for len in [head.len(), 40] {
                let mut f = head.to_vec();
                f.resize(len.max(head.len()), 0);
                let e = PcapReader::new(&f[..]).unwrap_err();
                let text = e.to_string();
                assert!(
                    matches!(e.kind, PcapErrorKind::Compressed(n) if n == format),
                    "{text}"
                );
                assert!(
                    text.contains(&format!("a {format}-compressed file")) && text.contains(how),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn rejects_bad_headers() {
        let good = sample();
        assert!(matches!(
            kind(PcapReader::new(&good[..10]).unwrap_err()),
            PcapErrorKind::TruncatedFileHeader { got: 10 }
        ));
        assert!(matches!(
            kind(PcapReader::new(&[][..]).unwrap_err()),
            PcapErrorKind::TruncatedFileHeader { got: 0 }
        ));
        let mut bad = good.clone();
        bad[0] ^= 0xff;
        let e = PcapReader::new(&bad[..]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("file header at byte offset 0: bad magic")
        );
        assert!(matches!(kind(e), PcapErrorKind::BadMagic(_)));
        // A short file with a bad magic is a bad magic, not just short.
        assert!(matches!(
            kind(PcapReader::new(&b"GIF89a"[..]).unwrap_err()),
            PcapErrorKind::BadMagic(_)
        ));
        let mut ng = good.clone();
        ng[0..4].copy_from_slice(&PCAPNG_SHB.to_le_bytes());
        assert!(matches!(
            kind(PcapReader::new(&ng[..]).unwrap_err()),
            PcapErrorKind::Pcapng
        ));
        let mut v = good.clone();
        v[4..6].copy_from_slice(&1u16.to_ne_bytes());
        assert!(matches!(
            kind(PcapReader::new(&v[..]).unwrap_err()),
            PcapErrorKind::UnsupportedVersion { major: 1, minor: 4 }
        ));
        let mut lt = good.clone();
        lt[20..24].copy_from_slice(&113u32.to_ne_bytes());
        assert!(matches!(
            kind(PcapReader::new(&lt[..]).unwrap_err()),
            PcapErrorKind::UnsupportedLinkType(113)
        ));
    }

    fn nth_error(bytes: &[u8]) -> PcapError {
        let mut r = PcapReader::new(bytes).unwrap();
        loop {
            match r.next_record() {
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    assert!(r.next_record().is_none(), "fused after an error");
                    return e;
                }
                None => panic!("no error"),
            }
        }
    }

    #[test]
    fn rejects_truncated_records_naming_index_and_offset() {
        let good = sample();
        let second = 24 + 16 + 60;
        let e = nth_error(&good[..second + 7]);
        assert_eq!((e.record, e.offset), (Some(2), second as u64));
        assert!(matches!(
            e.kind,
            PcapErrorKind::TruncatedRecordHeader { got: 7 }
        ));
        let e = nth_error(&good[..good.len() - 1]);
        assert_eq!(
            e.to_string(),
            format!(
                "record 2 at byte offset {second}: truncated record: 1513 of 1514 captured bytes"
            )
        );
    }

    #[test]
    fn rejects_huge_caplen_without_allocating_it() {
        let mut f = sample();
        // Record 1's caplen: u32::MAX.
        f[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_ne_bytes());
        let e = nth_error(&f);
        assert_eq!((e.record, e.offset), (Some(1), 24));
        assert!(matches!(
            e.kind,
            PcapErrorKind::CaplenTooLarge { caplen: u32::MAX }
        ));
        // Inside MAX_CAPLEN but above a small snaplen.
        let mut w = PcapWriter::with_options(Vec::new(), TsResolution::Nano, 64).unwrap();
        w.write_frame(at(1, 0), &[0; 64]).unwrap();
        let mut f = w.into_inner().unwrap();
        f[24 + 8..24 + 12].copy_from_slice(&65u32.to_ne_bytes());
        let e = nth_error(&f);
        assert!(matches!(
            e.kind,
            PcapErrorKind::CaplenOverSnaplen {
                caplen: 65,
                snaplen: 64
            }
        ));
        // A snaplen of 0 means no limit but ours.
        let mut f = sample();
        f[16..20].copy_from_slice(&0u32.to_ne_bytes());
        assert_eq!(PcapReader::new(&f[..]).unwrap().count(), 2);
    }

    #[test]
    fn truncation_is_told_apart_from_other_damage() {
        let good = sample();
        let second = 24 + 16 + 60;
        assert!(nth_error(&good[..second + 7]).is_truncation());
        assert!(nth_error(&good[..good.len() - 1]).is_truncation());
        let mut huge = good.clone();
        huge[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(!nth_error(&huge).is_truncation());
    }

    /// A temporary file path of this test process.
    fn temp_path(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("ivnsec-pcap-{tag}-{}.pcap", std::process::id()))
    }

    /// A writer that never runs its destructor (as when its process is killed) has still put
    /// every record it wrote into the file, whole; with per-record flushing off, the records are
    /// still in its buffer (which shows the check can fail).
    #[test]
    fn each_record_reaches_the_file_before_the_next_is_written() {
        let path = temp_path("flush");
        let mut w = PcapWriter::create(&path).unwrap();
        for i in 0..3u8 {
            w.write_frame(at(1_700_000_000, u32::from(i)), &[i; 60])
                .unwrap();
            let on_disk: Vec<Record> = PcapReader::open(&path)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(on_disk.len(), usize::from(i) + 1);
            assert_eq!(on_disk[usize::from(i)].data, vec![i; 60]);
        }
        std::mem::forget(w);
        assert_eq!(PcapReader::open(&path).unwrap().count(), 3);

        let mut w = PcapWriter::create(&path).unwrap();
        w.set_flush_each_record(false);
        w.write_frame(at(1, 0), &[0; 60]).unwrap();
        // The header went out at creation, the record is still buffered.
        assert_eq!(PcapReader::open(&path).unwrap().count(), 0);
        w.flush().unwrap();
        assert_eq!(PcapReader::open(&path).unwrap().count(), 1);
        drop(w);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn header_only_file_is_empty() {
        let bytes = PcapWriter::new(Vec::new()).unwrap().into_inner().unwrap();
        assert_eq!(PcapReader::new(&bytes[..]).unwrap().count(), 0);
    }

    proptest::proptest! {
        /// Arbitrary bytes after a valid file header, and arbitrary whole files: the reader ends
        /// (no panic, no endless loop) and every record it yields lies inside the input.
        #[test]
        fn never_panics(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..600),
                        whole in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let mut f = PcapWriter::new(Vec::new()).unwrap().into_inner().unwrap();
            f.extend_from_slice(&tail);
            let mut r = PcapReader::new(&f[..]).unwrap();
            let mut end = FILE_HEADER_LEN as u64;
            while let Some(rec) = r.next_record() {
                match rec {
                    Ok(rec) => {
                        proptest::prop_assert_eq!(rec.offset, end);
                        end += (RECORD_HEADER_LEN + rec.data.len()) as u64;
                        proptest::prop_assert!(end <= f.len() as u64);
                    }
                    Err(e) => proptest::prop_assert!(e.offset >= FILE_HEADER_LEN as u64),
                }
            }
            if let Ok(r) = PcapReader::new(&whole[..]) {
                let _ = r.count();
            }
        }
    }
}
