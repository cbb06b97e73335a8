//! `ivnsec pcap verify`: checks every frame of a classic pcap capture offline with one receive SA
//! (IVN-AE, MACsec or ESP), the SA options being those of `ivnsec frame verify`. The SA state
//! (replay window, MACsec nextPN) carries over from frame to frame, as on a live receiver.
//!
//! Which frames belong to the SA's protocol is decided here (EtherType; for ESP the IP header,
//! VLAN tags and UDP encapsulation); the SA is the one [`AnyRx`] of
//! [`material`](super::material), verified through one call whatever the family.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::any::{AnyRx, Delivered, Family};
use ivnsec_core::sa::macsec::RxStatus;
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_core::wire::ip::{self, IpError, protocol};
use ivnsec_core::wire::{ivnae, macsec};
use ivnsec_net::pcap::{MAX_CAPLEN, PcapError, PcapReader};
use serde::Serialize;
use serde::ser::SerializeMap;

use super::material::{VerifySettings, no_frame_suite, receiver};
use crate::error::usage;

/// What `pcap verify` checks and how it reports.
pub struct CaptureSettings {
    /// The receive SA (its SecOC options are not used: SecOC PDUs do not travel in frames of
    /// their own).
    pub rx: VerifySettings,
    /// Print the JSON document instead of text.
    pub json: bool,
    /// A capture that ends inside its last record is checked up to it and the record is
    /// reported as skipped (the default of `pcap verify`); `false` makes it a bad file.
    pub allow_truncated: bool,
    /// The capture (classic pcap, Ethernet).
    pub file: PathBuf,
}

/// Why a frame was not checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// Shorter than an Ethernet header.
    Runt(usize),
    /// The capture holds fewer bytes than the frame had (snaplen).
    Cut {
        caplen: usize,
        orig_len: u32,
    },
    EtherType(u16),
    /// IP, but not carrying ESP.
    IpProtocol(u8),
    /// UDP on ports other than 4500.
    UdpPorts(u16, u16),
    /// UDP 4500 with the non-ESP marker (IKE, RFC 3948 §2.2).
    NonEspMarker,
    /// UDP 4500 with the one-byte NAT-keepalive (RFC 3948 §2.3).
    NatKeepalive,
    /// An IP fragment of a protocol other than ESP, or of unknown protocol.
    IpFragment,
    /// An EtherType of IP but no IP header we can read.
    BadIp,
    /// A malformed record: more bytes captured than the frame had on the wire.
    LongerThanWire {
        caplen: usize,
        orig_len: u32,
    },
    /// The capture ends inside this record (a writer stopped mid-record): its header (`header`) or its
    /// bytes, `got` of `want`.
    Truncated {
        header: bool,
        got: usize,
        want: u32,
    },
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Skip::Runt(n) => write!(f, "runt frame of {n} bytes"),
            Skip::Cut { caplen, orig_len } => {
                write!(f, "captured {caplen} of {orig_len} bytes (snaplen)")
            }
            Skip::EtherType(t) => write!(f, "ethertype {t:#06x}"),
            Skip::IpProtocol(p) => write!(f, "ip protocol {p}"),
            Skip::UdpPorts(s, d) => write!(f, "udp {s} -> {d}"),
            Skip::NonEspMarker => f.write_str("udp 4500 non-esp marker (ike)"),
            Skip::NatKeepalive => f.write_str("udp 4500 nat-keepalive"),
            Skip::IpFragment => f.write_str("ip fragment (not esp)"),
            Skip::BadIp => f.write_str("malformed ip header"),
            Skip::LongerThanWire { caplen, orig_len } => write!(
                f,
                "malformed record: captured length {caplen} above the original length {orig_len}"
            ),
            Skip::Truncated { header, got, want } => write!(
                f,
                "truncated record{}: {got} of {want} {}bytes (the capture ends inside it)",
                if header { " header" } else { "" },
                if header { "" } else { "captured " },
            ),
        }
    }
}

enum Verdict {
    Ok,
    Drop(DropReason),
    /// MACsec: delivered without validation (validateFrames check/disabled).
    NotValidated(RxStatus),
    Skip(Skip),
}

impl Verdict {
    fn name(&self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Drop(_) => "drop",
            Verdict::NotValidated(_) => "not_validated",
            Verdict::Skip(_) => "skip",
        }
    }

    fn reason(&self) -> Option<String> {
        match self {
            Verdict::Ok => None,
            Verdict::Drop(r) => Some(r.name().to_string()),
            Verdict::NotValidated(s) => Some(s.name().to_string()),
            Verdict::Skip(s) => Some(s.to_string()),
        }
    }
}

/// The verdicts of a capture, counted.
#[derive(Debug, Default)]
pub struct Totals {
    pub frames: u64,
    pub ok: u64,
    pub drop: u64,
    pub skip: u64,
    pub not_validated: u64,
    pub drops: DropCounters,
}

impl Totals {
    /// Exit code: 1 when a frame was dropped or not validated, or when nothing was verified
    /// (a capture without frames, or every frame skipped): no verdict can be given.
    pub fn exit_code(&self) -> u8 {
        let nothing_verified = self.skip == self.frames;
        if nothing_verified || self.drop + self.not_validated > 0 {
            1
        } else {
            0
        }
    }

    fn count(&mut self, v: &Verdict) {
        self.frames += 1;
        match v {
            Verdict::Ok => self.ok += 1,
            Verdict::Drop(r) => {
                self.drop += 1;
                self.drops.bump(*r);
            }
            Verdict::NotValidated(_) => self.not_validated += 1,
            Verdict::Skip(_) => self.skip += 1,
        }
    }
}

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
/// UDP port of IKE NAT traversal and UDP-encapsulated ESP (RFC 3948).
const NAT_T_PORT: u16 = 4500;

struct Checker {
    rx: AnyRx,
    /// Holds the unit the SA verifies in place (never read back: the verdict is what counts).
    buf: Vec<u8>,
    /// Rebuilds a UDP-encapsulated ESP packet as plain ESP.
    scratch: Vec<u8>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The verdict of the SA on a unit.
fn verdict(r: Result<Delivered, DropReason>) -> Verdict {
    match r {
        Ok(Delivered {
            status: RxStatus::Ok,
            ..
        }) => Verdict::Ok,
        Ok(d) => Verdict::NotValidated(d.status),
        Err(r) => Verdict::Drop(r),
    }
}

impl Checker {
    fn check(&mut self, frame: &[u8]) -> Verdict {
        let Some(ethertype) = be16(frame, 12) else {
            return Verdict::Skip(Skip::Runt(frame.len()));
        };
        let want = match self.rx.family() {
            Family::Esp => return self.check_esp(frame, ethertype),
            Family::Macsec => macsec::ETHERTYPE,
            Family::IvnAe | Family::Secoc | Family::Someip => ivnae::ETHERTYPE,
        };
        if ethertype != want {
            return Verdict::Skip(Skip::EtherType(ethertype));
        }
        self.verify(frame)
    }

    /// Verifies a copy of `unit` (the capture's bytes stay as they are).
    fn verify(&mut self, unit: &[u8]) -> Verdict {
        let Some(buf) = self.buf.get_mut(..unit.len()) else {
            return Verdict::Drop(DropReason::Oversize);
        };
        buf.copy_from_slice(unit);
        verdict(self.rx.verify_in_place_status(buf))
    }

    fn check_esp(&mut self, frame: &[u8], mut ethertype: u16) -> Verdict {
        // Up to two VLAN tags between the source address and the EtherType of IP.
        let mut l3 = 14;
        for _ in 0..2 {
            if ethertype != ETHERTYPE_VLAN && ethertype != ETHERTYPE_QINQ {
                break;
            }
            match be16(frame, l3 + 2) {
                Some(t) => ethertype = t,
                None => return Verdict::Skip(Skip::Runt(frame.len())),
            }
            l3 += 4;
        }
        if ethertype != ETHERTYPE_IPV4 && ethertype != ETHERTYPE_IPV6 {
            return Verdict::Skip(Skip::EtherType(ethertype));
        }
        let Some(pkt) = frame.get(l3..) else {
            return Verdict::Skip(Skip::Runt(frame.len()));
        };
        let info = match ip::parse(pkt) {
            Ok(info) => info,
            // The receive path names the drop (fragment, truncated, malformed) for packets that
            // say they carry ESP; anything else is not ours to judge.
            Err(e) => {
                return match ip_protocol_hint(pkt) {
                    Some(protocol::ESP) => self.verify(pkt),
                    _ if e == IpError::Fragment => Verdict::Skip(Skip::IpFragment),
                    _ => Verdict::Skip(Skip::BadIp),
                };
            }
        };
        match info.next {
            protocol::ESP => self.verify(pkt),
            protocol::UDP => {
                let udp = &pkt[info.header_len..info.total_len];
                let (Some(sport), Some(dport), Some(ulen)) =
                    (be16(udp, 0), be16(udp, 2), be16(udp, 4))
                else {
                    return Verdict::Skip(Skip::BadIp);
                };
                if sport != NAT_T_PORT && dport != NAT_T_PORT {
                    return Verdict::Skip(Skip::UdpPorts(sport, dport));
                }
                let ulen = usize::from(ulen);
                let Some(payload) = udp.get(8..ulen) else {
                    return Verdict::Skip(Skip::BadIp);
                };
                // RFC 3948 §2.3: a NAT-keepalive is the single octet 0xFF; §2.2: IKE on port
                // 4500 starts with the non-ESP marker, four zero octets where ESP has its SPI
                // (which is never zero).
                if payload == [0xff] {
                    return Verdict::Skip(Skip::NatKeepalive);
                }
                if payload.len() >= 4 && payload[..4] == [0; 4] {
                    return Verdict::Skip(Skip::NonEspMarker);
                }
                // RFC 3948 §3.3/§3.5: decapsulation removes the UDP header and sets the IP
                // protocol (next header) to ESP and the lengths to match; then ESP goes on as
                // usual.
                let hdr = &pkt[..info.header_len];
                self.scratch.clear();
                self.scratch.extend_from_slice(hdr);
                self.scratch[info.nh_offset] = protocol::ESP;
                self.scratch.extend_from_slice(payload);
                let total = self.scratch.len();
                if total > usize::from(u16::MAX) {
                    return Verdict::Drop(DropReason::Oversize);
                }
                ip::set_total_len(&mut self.scratch, &info, total);
                verdict(self.rx.verify_in_place_status(&mut self.scratch))
            }
            p => Verdict::Skip(Skip::IpProtocol(p)),
        }
    }
}

/// The protocol an IP packet that `ip::parse` refused says it carries, when it can be read:
/// the IPv4 protocol field; for IPv6 the next header after the extension headers (for a
/// fragment, the one its fragment header names).
fn ip_protocol_hint(pkt: &[u8]) -> Option<u8> {
    match pkt.first()? >> 4 {
        4 => pkt.get(9).copied(),
        6 => {
            let mut nh = *pkt.get(6)?;
            let mut off = ip::IPV6_HEADER_LEN;
            // Bounded walk: a hostile chain of extension headers ends here too.
            for _ in 0..16 {
                match nh {
                    protocol::HOP_BY_HOP | protocol::ROUTING | protocol::DEST_OPTS => {
                        let len = (usize::from(*pkt.get(off + 1)?) + 1) * 8;
                        nh = *pkt.get(off)?;
                        off += len;
                    }
                    protocol::FRAGMENT => return pkt.get(off).copied(),
                    other => return Some(other),
                }
            }
            None
        }
        _ => None,
    }
}

/// The `--json` document, fields in the documented order. Written by [`JsonStream`] frame by
/// frame; the struct is what the stream must equal (its tests compare the two).
#[cfg(test)]
#[derive(Serialize)]
struct JsonDoc<'a> {
    frames: &'a [JsonFrame],
    counters: JsonCounters,
}

#[derive(Serialize)]
struct JsonFrame {
    index: u64,
    verdict: &'static str,
    reason: Option<String>,
    /// IVN-AE profiles: the frame's header fields as on the wire (docs/wire-ivnae.md §1), for
    /// tools that decode captures (contrib/wireshark); absent for other frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    ivnae: Option<IvnAeFields>,
}

/// The fields of an IVN-AE frame (EtherType 0x88B5, at least the header and the SA's tag).
#[derive(Serialize)]
struct IvnAeFields {
    version: u8,
    suite_id: u8,
    key_id: u8,
    flags: u8,
    seq: u64,
    /// Bytes between the header and the tag (inner EtherType and payload, maybe encrypted).
    body_len: usize,
    /// The tag, in hex: the last `tag_len` bytes of the SA's profile.
    tag: String,
}

/// The IVN-AE fields of `frame` under an SA whose tag is `tag_len` bytes.
fn ivnae_fields(frame: &[u8], tag_len: usize) -> Option<IvnAeFields> {
    if be16(frame, 12)? != ivnae::ETHERTYPE || frame.len() < ivnae::HEADER_LEN + tag_len {
        return None;
    }
    let f = ivnae::Frame::new_unchecked(frame);
    Some(IvnAeFields {
        version: f.version(),
        suite_id: f.suite_id(),
        key_id: f.key_id(),
        flags: f.flags(),
        seq: f.seq(),
        body_len: frame.len() - ivnae::HEADER_LEN - tag_len,
        tag: hex::encode(&frame[frame.len() - tag_len..]),
    })
}

#[derive(Serialize)]
struct JsonCounters {
    frames: u64,
    ok: u64,
    drop: u64,
    skip: u64,
    not_validated: u64,
    /// Non-zero drop counters by reason, in `DropReason` order.
    drops: Pairs,
    /// MACsec profiles: every 802.1AE §10.7 receive counter, in the standard's order.
    #[serde(skip_serializing_if = "Option::is_none")]
    macsec: Option<Pairs>,
}

/// Name/value pairs serialized as a JSON object in their own order.
struct Pairs(Vec<(&'static str, u64)>);

impl Serialize for Pairs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// Writes the `--json` document as the frames come, byte for byte what `serde_json`'s pretty
/// printer makes of the whole document, holding nothing but the count of frames written: memory
/// stays the same for a capture of any length.
struct JsonStream<W: Write> {
    out: W,
    frames: u64,
}

/// Indents every line after the first by `indent` spaces: pretty JSON nested into a document.
/// (JSON strings escape their newlines, so every `\n` written is a line break.)
struct Indent<'a, W: Write> {
    out: &'a mut W,
    indent: &'static [u8],
}

impl<W: Write> Write for Indent<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut rest = buf;
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            self.out.write_all(&rest[..=i])?;
            self.out.write_all(self.indent)?;
            rest = &rest[i + 1..];
        }
        self.out.write_all(rest)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> JsonStream<W> {
    fn begin(mut out: W) -> std::io::Result<Self> {
        out.write_all(b"{\n  \"frames\": [")?;
        Ok(JsonStream { out, frames: 0 })
    }

    fn frame(&mut self, f: &JsonFrame) -> std::io::Result<()> {
        self.out.write_all(if self.frames == 0 {
            b"\n    "
        } else {
            b",\n    "
        })?;
        self.frames += 1;
        let mut w = Indent {
            out: &mut self.out,
            indent: b"    ",
        };
        serde_json::to_writer_pretty(&mut w, f).map_err(std::io::Error::from)
    }

    /// Closes the frame list and writes the counters (and, after a bad file, `error`: why the
    /// list ends early); returns the underlying writer, flushed.
    fn finish(mut self, c: &JsonCounters, error: Option<&str>) -> std::io::Result<W> {
        self.out
            .write_all(if self.frames == 0 { b"]" } else { b"\n  ]" })?;
        self.out.write_all(b",\n  \"counters\": ")?;
        let mut w = Indent {
            out: &mut self.out,
            indent: b"  ",
        };
        serde_json::to_writer_pretty(&mut w, c).map_err(std::io::Error::from)?;
        if let Some(e) = error {
            self.out.write_all(b",\n  \"error\": ")?;
            serde_json::to_writer(&mut self.out, e).map_err(std::io::Error::from)?;
        }
        self.out.write_all(b"\n}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Where the verdicts go: text lines or the streamed JSON document.
enum Sink<W: Write> {
    Text(W),
    Json(JsonStream<W>),
}

impl<W: Write> Sink<W> {
    fn frame(
        &mut self,
        number: u64,
        v: &Verdict,
        ivnae: Option<IvnAeFields>,
    ) -> std::io::Result<()> {
        match self {
            Sink::Text(w) => match v.reason() {
                None => writeln!(w, "{number} {}", v.name()),
                Some(r) => writeln!(w, "{number} {} {r}", v.name()),
            },
            Sink::Json(j) => j.frame(&JsonFrame {
                index: number,
                verdict: v.name(),
                reason: v.reason(),
                ivnae,
            }),
        }
    }
}

/// The skip of a record a writer stopped inside (one of the two truncations).
fn truncated_tail(e: &PcapError) -> Skip {
    match e.kind {
        ivnsec_net::pcap::PcapErrorKind::TruncatedRecordHeader { got } => Skip::Truncated {
            header: true,
            got,
            want: ivnsec_net::pcap::RECORD_HEADER_LEN as u32,
        },
        ivnsec_net::pcap::PcapErrorKind::TruncatedRecord { caplen, got } => Skip::Truncated {
            header: false,
            got,
            want: caplen,
        },
        _ => unreachable!("is_truncation() covers the two truncations"),
    }
}

/// The words on `err` after the frames: the account of a damaged file (then its error), or
/// that nothing was verified.
fn closing_words(
    s: &CaptureSettings,
    totals: &Totals,
    damage: Option<PcapError>,
    err: &mut dyn Write,
) -> Result<()> {
    if let Some(e) = damage {
        if e.is_truncation() {
            writeln!(
                err,
                "pcap verify: the capture ends inside record {} (a writer stopped mid-record?); \
                 the {} records before it were checked ({}); without --fail-on-truncated it \
                 is reported as skipped and the exit code follows the verdicts",
                e.record.unwrap_or(0),
                totals.frames,
                counters_line(totals)
            )?;
        } else {
            writeln!(
                err,
                "pcap verify: {} records checked before the damage ({})",
                totals.frames,
                counters_line(totals)
            )?;
        }
        return Err(bad_file(&s.file, e));
    }
    if totals.frames == 0 {
        writeln!(
            err,
            "pcap verify: NOTHING VERIFIED: {} holds no frames (a file header only); exit 1",
            s.file.display()
        )?;
    } else if totals.skip == totals.frames {
        writeln!(
            err,
            "pcap verify: NOTHING VERIFIED: all {} frames of {} were skipped, none was checked \
             under --profile {} (see the skip reasons: is it the capture's protocol?); exit 1",
            totals.frames,
            s.file.display(),
            s.rx.sa.profile
        )?;
    }
    Ok(())
}

fn bad_file(path: &Path, e: impl fmt::Display) -> anyhow::Error {
    usage(format!("{}: {e}", path.display()))
}

/// The counters line of the text output (without `macsec:`).
fn counters_line(t: &Totals) -> String {
    let mut s = format!(
        "counters: frames={} ok={} drop={} skip={}",
        t.frames, t.ok, t.drop, t.skip
    );
    if t.not_validated > 0 {
        s.push_str(&format!(" not_validated={}", t.not_validated));
    }
    for (r, n) in t.drops.iter() {
        s.push_str(&format!(" {r}={n}"));
    }
    s
}

/// Checks every frame of the capture: one line per frame (or the JSON document) on `out`, then
/// the counters; warnings and the account of a damaged file on `err`. A bad capture file is a
/// usage error naming the file, the record and its byte offset (after the frames before it were
/// reported); otherwise the [`Totals`], whose [`exit_code`](Totals::exit_code) is the verdict.
pub fn verify_capture(s: &CaptureSettings, out: impl Write, err: &mut dyn Write) -> Result<Totals> {
    // SecOC PDUs travel in UDP datagrams, not frames of their own: a `secoc-` name is refused
    // as the IVN-AE name it is not.
    if let Profile::Secoc(_) = s.rx.sa.profile.profile() {
        return Err(usage(no_frame_suite(s.rx.sa.profile.name())));
    }
    let rx = receiver(&s.rx)?;
    let mut reader = PcapReader::open(&s.file).map_err(|e| match &e.kind {
        ivnsec_net::pcap::PcapErrorKind::Io(io) => bad_file(&s.file, io),
        _ => bad_file(&s.file, e),
    })?;
    let mut checker = Checker {
        rx,
        buf: vec![0u8; MAX_CAPLEN as usize],
        scratch: Vec::with_capacity(usize::from(u16::MAX)),
    };
    // IVN-AE: the tag length the header fields of --json are read with (the SA's).
    let json = s.json;
    let ivnae_tag = match s.rx.sa.profile.profile() {
        Profile::IvnAe(p) => Some(s.rx.sa.tag_len.unwrap_or(p.suite.full_tag_len())),
        _ => None,
    };
    let mut totals = Totals::default();
    let w = std::io::BufWriter::new(out);
    let mut sink = if s.json {
        Sink::Json(JsonStream::begin(w)?)
    } else {
        Sink::Text(w)
    };
    let mut damage = None;
    while let Some(rec) = reader.next_record() {
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        let caplen = rec.data.len();
        let verdict = if caplen as u64 > u64::from(rec.orig_len) {
            Verdict::Skip(Skip::LongerThanWire {
                caplen,
                orig_len: rec.orig_len,
            })
        } else if (caplen as u64) < u64::from(rec.orig_len) {
            Verdict::Skip(Skip::Cut {
                caplen,
                orig_len: rec.orig_len,
            })
        } else {
            checker.check(rec.data)
        };
        totals.count(&verdict);
        let fields = ivnae_tag
            .filter(|_| json)
            .and_then(|t| ivnae_fields(rec.data, t));
        sink.frame(rec.number, &verdict, fields)?;
    }
    // The end of a capture whose writer stopped mid-record.
    if let Some(e) = damage.take_if(|e| s.allow_truncated && e.is_truncation()) {
        let verdict = Verdict::Skip(truncated_tail(&e));
        totals.count(&verdict);
        sink.frame(e.record.unwrap_or(totals.frames), &verdict, None)?;
        writeln!(
            err,
            "pcap verify: {}: {e}: the capture ends inside this record (a writer stopped \
             mid-record); it is counted as skipped",
            s.file.display()
        )?;
    }
    let macsec = checker.rx.macsec_counters().map(|c| c.named());
    let error = damage
        .as_ref()
        .map(|e| format!("{}: {e}", s.file.display()));
    match sink {
        Sink::Json(j) => {
            let counters = JsonCounters {
                frames: totals.frames,
                ok: totals.ok,
                drop: totals.drop,
                skip: totals.skip,
                not_validated: totals.not_validated,
                drops: Pairs(totals.drops.iter().map(|(r, n)| (r.name(), n)).collect()),
                macsec: macsec.map(|named| Pairs(named.to_vec())),
            };
            j.finish(&counters, error.as_deref())?;
        }
        // After a bad file, stdout keeps the per-frame lines only; the counters go to stderr.
        Sink::Text(mut w) if damage.is_some() => w.flush()?,
        Sink::Text(mut w) => {
            writeln!(w, "{}", counters_line(&totals))?;
            if let Some(named) = macsec {
                let nz: Vec<String> = named
                    .iter()
                    .filter(|(_, v)| *v > 0)
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect();
                writeln!(w, "macsec: {}", nz.join(" "))?;
            }
            w.flush()?;
        }
    }
    closing_words(s, &totals, damage, err)?;
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(index: u64, verdict: &'static str, reason: Option<&str>) -> JsonFrame {
        JsonFrame {
            index,
            verdict,
            reason: reason.map(str::to_string),
            ivnae: None,
        }
    }

    fn counters(n: u64, drops: &[(&'static str, u64)], macsec: bool) -> JsonCounters {
        JsonCounters {
            frames: n,
            ok: n / 2,
            drop: n - n / 2,
            skip: 0,
            not_validated: 0,
            drops: Pairs(drops.to_vec()),
            macsec: macsec.then(|| Pairs(vec![("InPktsUntagged", 0), ("InPktsOK", n)])),
        }
    }

    fn streamed(frames: &[JsonFrame], c: &JsonCounters, error: Option<&str>) -> String {
        let mut j = JsonStream::begin(Vec::new()).unwrap();
        for f in frames {
            j.frame(f).unwrap();
        }
        String::from_utf8(j.finish(c, error).unwrap()).unwrap()
    }

    /// The streamed document is byte for byte what serde_json's pretty printer makes of the
    /// whole document (what `--json` printed before it streamed): no frame, one, several,
    /// reasons that need escaping, with and without the MACsec counters.
    #[test]
    fn stream_equals_the_pretty_printed_document() {
        let cases: Vec<(Vec<JsonFrame>, JsonCounters)> = vec![
            (vec![], counters(0, &[], false)),
            (vec![frame(1, "ok", None)], counters(1, &[], true)),
            (
                vec![
                    frame(1, "ok", None),
                    frame(2, "drop", Some("bad_tag")),
                    frame(3, "skip", Some("quote \" backslash \\ newline \n tab \t é")),
                    frame(4, "not_validated", Some("invalid")),
                ],
                counters(4, &[("replay_duplicate", 1), ("bad_tag", 2)], true),
            ),
        ];
        for (frames, c) in &cases {
            let whole = serde_json::to_string_pretty(&JsonDoc {
                frames,
                counters: JsonCounters {
                    drops: Pairs(c.drops.0.clone()),
                    macsec: c.macsec.as_ref().map(|m| Pairs(m.0.clone())),
                    ..*c
                },
            })
            .unwrap()
                + "\n";
            assert_eq!(streamed(frames, c, None), whole);
        }
    }

    /// After a bad file the document still parses, with the frames before the damage, the
    /// counters and the error.
    #[test]
    fn stream_after_damage_is_valid_json_with_the_error() {
        let frames = [frame(1, "ok", None), frame(2, "ok", None)];
        let out = streamed(
            &frames,
            &counters(2, &[], false),
            Some("x.pcap: record 3 at byte offset 200: truncated record"),
        );
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 2);
        assert_eq!(v["counters"]["frames"], 2);
        assert_eq!(
            v["error"],
            "x.pcap: record 3 at byte offset 200: truncated record"
        );
    }

    /// The writer holds the output and a count, nothing per frame: 200,000 frames into a
    /// counting sink leave it as small as it started, and the output has exactly every frame.
    #[test]
    fn stream_keeps_no_per_frame_state() {
        struct Count(u64);
        impl Write for Count {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0 += b.len() as u64;
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert_eq!(
            std::mem::size_of::<JsonStream<Count>>(),
            std::mem::size_of::<Count>() + std::mem::size_of::<u64>()
        );
        const N: u64 = 200_000;
        let f = frame(1, "skip", Some("ethertype 0x0800"));
        let mut j = JsonStream::begin(Count(0)).unwrap();
        for _ in 0..N {
            j.frame(&f).unwrap();
        }
        assert_eq!(j.frames, N);
        let bytes = j.finish(&counters(0, &[], false), None).unwrap().0;
        let one = streamed(
            &[frame(1, "skip", Some("ethertype 0x0800"))],
            &counters(0, &[], false),
            None,
        );
        let two = streamed(
            &[
                frame(1, "skip", Some("ethertype 0x0800")),
                frame(1, "skip", Some("ethertype 0x0800")),
            ],
            &counters(0, &[], false),
            None,
        );
        let step = (two.len() - one.len()) as u64;
        assert_eq!(bytes, one.len() as u64 + (N - 1) * step);
    }
}
