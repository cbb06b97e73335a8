//! `ivnsec pcap verify`: checks every frame of a classic pcap capture offline with one receive SA
//! (IVN-AE, MACsec or ESP), the SA options being those of `ivnsec frame verify`. The SA state
//! (replay window, MACsec nextPN) carries over from frame to frame, as on a live receiver.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_core::sa::esp::EspRx;
use ivnsec_core::sa::ivnae::IvnAeRx;
use ivnsec_core::sa::macsec::{MacsecRx, RxStatus};
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_core::wire::ip::{self, IpError, protocol};
use ivnsec_core::wire::{ivnae, macsec};
use ivnsec_net::pcap::{MAX_CAPLEN, PcapReader};
use serde::Serialize;
use serde::ser::SerializeMap;

use super::frame::SaArgs;
use super::frame_esp::EspVerifyOpts;
use super::frame_macsec::MacsecVerifyOpts;
use crate::cli::usage;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Verify each frame of a capture (classic pcap, Ethernet) with one receive SA; prints
    /// `N ok`, `N drop <reason>` or `N skip <what>` per frame (N from 1, as tshark numbers
    /// frames), then the counters.
    #[command(after_help = "\
Frames of other protocols are skipped: an EtherType other than 0x88B5 for IVN-AE profiles,
other than 0x88E5 for MACsec, and for ESP anything but IPv4/IPv6 carrying ESP (protocol 50) or
UDP-encapsulated ESP on port 4500 (RFC 3948). Frames the capture cut short (snaplen) are skipped.
MACsec frames delivered without validation (--validate check|disabled) print `N not_validated
<status>`.

Exit codes: 0 every checked frame verified, 1 a frame was dropped or not validated, 2 bad
options or a bad capture file (the message names the record and its byte offset).

Example:
  ivnsec pcap verify --profile aes128-gcm --key 000102030405060708090a0b0c0d0e0f \\
      --iv 000000000000000000000000 capture.pcap")]
    Verify(Box<VerifyArgs>),
}

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    sa: SaArgs,
    /// Replay window W: 0 accepts only increasing sequence numbers; otherwise a frame within
    /// W of the highest is accepted once.
    #[arg(long, default_value_t = 64)]
    replay_window: u32,
    /// Print `{"frames": [{"index", "verdict", "reason"}], "counters": {...}}` instead of text.
    #[arg(long)]
    json: bool,
    /// The capture (classic pcap with the Ethernet link type; pcapng: `editcap -F pcap`).
    file: PathBuf,
    // The protocol option groups last: each sets a help heading for what follows it.
    #[command(flatten)]
    macsec: MacsecVerifyOpts,
    #[command(flatten)]
    esp: EspVerifyOpts,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Verify(a) => verify(&a),
    }
}

/// The receive SA, by protocol (boxed: MACsec's keeps its duplicate bitmap inline).
enum Rx {
    IvnAe(Box<IvnAeRx>),
    Macsec(Box<MacsecRx>),
    Esp(Box<EspRx>),
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

#[derive(Default)]
struct Totals {
    frames: u64,
    ok: u64,
    drop: u64,
    skip: u64,
    not_validated: u64,
    drops: DropCounters,
}

impl Totals {
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
    rx: Rx,
    /// Receives the verified frame (never read back: the verdict is what counts).
    out: Vec<u8>,
    /// Rebuilds a UDP-encapsulated ESP packet as plain ESP.
    scratch: Vec<u8>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

impl Checker {
    fn check(&mut self, frame: &[u8]) -> Verdict {
        let Some(ethertype) = be16(frame, 12) else {
            return Verdict::Skip(Skip::Runt(frame.len()));
        };
        match &mut self.rx {
            Rx::IvnAe(rx) => {
                if ethertype != ivnae::ETHERTYPE {
                    return Verdict::Skip(Skip::EtherType(ethertype));
                }
                match rx.verify(frame, &mut self.out) {
                    Ok(_) => Verdict::Ok,
                    Err(r) => Verdict::Drop(r),
                }
            }
            Rx::Macsec(rx) => {
                if ethertype != macsec::ETHERTYPE {
                    return Verdict::Skip(Skip::EtherType(ethertype));
                }
                match rx.verify(frame, &mut self.out) {
                    Ok((_, RxStatus::Ok)) => Verdict::Ok,
                    Ok((_, status)) => Verdict::NotValidated(status),
                    Err(r) => Verdict::Drop(r),
                }
            }
            Rx::Esp(_) => self.check_esp(frame, ethertype),
        }
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
        let Rx::Esp(rx) = &mut self.rx else {
            unreachable!("check_esp is called for ESP only")
        };
        let verify = |rx: &mut EspRx, pkt: &[u8], out: &mut Vec<u8>| match rx.verify(pkt, out) {
            Ok(_) => Verdict::Ok,
            Err(r) => Verdict::Drop(r),
        };
        let info = match ip::parse(pkt) {
            Ok(info) => info,
            // The receive path names the drop (fragment, truncated, malformed) for packets that
            // say they carry ESP; anything else is not ours to judge.
            Err(e) => {
                return match ip_protocol_hint(pkt) {
                    Some(protocol::ESP) => verify(rx, pkt, &mut self.out),
                    _ if e == IpError::Fragment => Verdict::Skip(Skip::IpFragment),
                    _ => Verdict::Skip(Skip::BadIp),
                };
            }
        };
        match info.next {
            protocol::ESP => verify(rx, pkt, &mut self.out),
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
                verify(rx, &self.scratch, &mut self.out)
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

fn build_rx(a: &VerifyArgs) -> Result<Rx> {
    let p = &a.sa.profile;
    Ok(if p.starts_with("macsec-") {
        Rx::Macsec(Box::new(super::frame_macsec::rx(
            &a.sa,
            a.replay_window,
            &a.macsec,
        )?))
    } else if p.starts_with("esp-") {
        Rx::Esp(Box::new(super::frame_esp::rx(
            &a.sa,
            a.replay_window,
            &a.esp,
        )?))
    } else {
        Rx::IvnAe(Box::new(super::frame::ivnae_rx(&a.sa, a.replay_window)?))
    })
}

/// The `--json` document, fields in the documented order.
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

fn bad_file(path: &Path, e: impl fmt::Display) -> anyhow::Error {
    usage(format!("{}: {e}", path.display()))
}

fn verify(a: &VerifyArgs) -> Result<ExitCode> {
    let rx = build_rx(a)?;
    let mut reader = PcapReader::open(&a.file).map_err(|e| match &e.kind {
        ivnsec_net::pcap::PcapErrorKind::Io(io) => bad_file(&a.file, io),
        _ => bad_file(&a.file, e),
    })?;
    let mut checker = Checker {
        rx,
        out: vec![0u8; MAX_CAPLEN as usize],
        scratch: Vec::with_capacity(usize::from(u16::MAX)),
    };
    let mut totals = Totals::default();
    let mut frames_json = Vec::new();
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    while let Some(rec) = reader.next_record() {
        let rec = match rec {
            Ok(rec) => rec,
            Err(e) => {
                w.flush()?;
                return Err(bad_file(&a.file, e));
            }
        };
        let verdict = if (rec.data.len() as u64) < u64::from(rec.orig_len) {
            Verdict::Skip(Skip::Cut {
                caplen: rec.data.len(),
                orig_len: rec.orig_len,
            })
        } else {
            checker.check(rec.data)
        };
        totals.count(&verdict);
        if a.json {
            frames_json.push(JsonFrame {
                index: rec.number,
                verdict: verdict.name(),
                reason: verdict.reason(),
            });
        } else {
            match verdict.reason() {
                None => writeln!(w, "{} {}", rec.number, verdict.name())?,
                Some(r) => writeln!(w, "{} {} {r}", rec.number, verdict.name())?,
            }
        }
    }
    let macsec = match &checker.rx {
        Rx::Macsec(rx) => Some(rx.counters().named()),
        _ => None,
    };
    if a.json {
        let doc = JsonDoc {
            frames: &frames_json,
            counters: JsonCounters {
                frames: totals.frames,
                ok: totals.ok,
                drop: totals.drop,
                skip: totals.skip,
                not_validated: totals.not_validated,
                drops: Pairs(totals.drops.iter().map(|(r, n)| (r.name(), n)).collect()),
                macsec: macsec.map(|named| Pairs(named.to_vec())),
            },
        };
        serde_json::to_writer_pretty(&mut w, &doc)?;
        writeln!(w)?;
    } else {
        write!(
            w,
            "counters: frames={} ok={} drop={} skip={}",
            totals.frames, totals.ok, totals.drop, totals.skip
        )?;
        if totals.not_validated > 0 {
            write!(w, " not_validated={}", totals.not_validated)?;
        }
        for (r, n) in totals.drops.iter() {
            write!(w, " {r}={n}")?;
        }
        writeln!(w)?;
        if let Some(named) = macsec {
            let nz: Vec<String> = named
                .iter()
                .filter(|(_, v)| *v > 0)
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            writeln!(w, "macsec: {}", nz.join(" "))?;
        }
    }
    w.flush()?;
    Ok(if totals.drop + totals.not_validated > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
