//! `frame protect|verify` of any family: single units as hex, or one hex unit per stdin line
//! with the SA state kept across lines (so replay protection works over a batch). The reader
//! holds a bounded part of a line, whatever comes in; every line gets one answer; the SA is the
//! one [`AnyTx`](ivnsec_core::sa::any::AnyTx) / [`AnyRx`] that [`material`](super::material)
//! builds, so nothing here depends on the family beyond the messages it prints.

use std::io::{BufRead, BufWriter, Write};

use anyhow::{Context, Result};
use ivnsec_core::sa::any::Family;
use ivnsec_core::sa::macsec::RxStatus;
use ivnsec_core::sa::{DropCounters, DropReason};

use super::material::{self, Limits, ProtectSettings, Refusal, VerifySettings};
use crate::error::{parse_hex, usage};

/// What a protect run did.
#[derive(Debug, Default)]
pub struct ProtectOutcome {
    /// Units protected.
    pub protected: u64,
    /// Lines refused, by reason (batch only: a single refused unit is a usage error).
    pub refused: DropCounters,
}

impl ProtectOutcome {
    /// Exit code: 2 when any line was refused.
    pub fn exit_code(&self) -> u8 {
        if self.refused.total() == 0 { 0 } else { 2 }
    }
}

/// Protects the unit `arg` (hex), or for `-` each line of `input`, and prints the protected
/// units as hex on `out`, one line per input; what stderr should know goes to `err`.
///
/// A single input that is refused is a usage error (exit 2). In a batch, a refused line is
/// answered `DROP <reason>` on `out` (with the sentence on `err`) and the batch goes on, so
/// every input line has exactly one answer; a blank line is a zero-byte frame, which has no
/// header to protect (`DROP truncated`; no sequence number is spent on it); at the end, when any
/// line was refused, a summary goes to `err` (and [`ProtectOutcome::exit_code`] is 2).
pub fn protect(
    s: &ProtectSettings,
    arg: &str,
    input: impl BufRead,
    out: impl Write,
    err: &mut dyn Write,
) -> Result<ProtectOutcome> {
    let mut sender = material::sender(s)?;
    if let Some(warning) = sender.warning() {
        writeln!(err, "{warning}")?;
    }
    if let Some(note) = sender.note() {
        writeln!(err, "{note}")?;
    }
    let limits = Limits::of(sender.family());
    let mut buf = vec![0u8; sender.protected_len(limits.max_plain)];
    let batch = arg == "-";
    let mut w = BufWriter::new(out);
    let mut o = ProtectOutcome::default();
    let result = for_each_input(arg, limits.unit, limits.max_plain, input, |what, unit| {
        let answer = match unit {
            Input::Frame(bytes) => sender.protect(what, &bytes, &mut buf)?,
            Input::Blank => Err(Refusal::new(
                DropReason::Truncated,
                "empty line: a zero-byte frame has no header to protect",
            )),
            Input::Bad(r) => Err(r),
        };
        match answer {
            Ok(n) => {
                o.protected += 1;
                writeln!(w, "{}", hex::encode(&buf[..n]))?;
            }
            Err(r) if batch => {
                o.refused.bump(r.reason);
                writeln!(w, "DROP {}", r.reason)?;
                writeln!(err, "{what}: {}", r.detail)?;
            }
            Err(r) => return Err(usage(format!("{what}: {}", r.detail))),
        }
        Ok(())
    });
    // The units protected before a fatal error are shown (their numbers are spent).
    w.flush()?;
    result?;
    if o.refused.total() > 0 {
        writeln!(
            err,
            "protected {} refused {}: {}",
            o.protected,
            o.refused.total(),
            summary(&o.refused)
        )?;
    }
    Ok(o)
}

/// Totals of a verify run.
#[derive(Debug, Default)]
pub struct VerifyTotals {
    pub ok: u64,
    pub drops: DropCounters,
    /// MACsec frames delivered without validation (validateFrames check or disabled).
    pub not_validated: u64,
}

impl VerifyTotals {
    /// Exit code: 1 when anything was dropped or delivered without validation.
    pub fn exit_code(&self) -> u8 {
        if self.drops.total() == 0 && self.not_validated == 0 {
            0
        } else {
            1
        }
    }
}

/// Verifies the unit `arg` (hex), or for `-` each line of `input`. A single input prints the
/// plain hex on `out` or `DROP <reason>` on `err`; a batch prints exactly one line per input
/// line on `out` — the plain hex or `DROP <reason>` — and the totals on `err`. A line that is
/// no unit is answered without reaching the SA: a blank line is a zero-byte unit (`DROP
/// truncated`), a line that is not hex or not UTF-8 `DROP malformed`, one longer than the
/// largest unit `DROP oversize`; the sentence saying why goes to `err`.
///
/// MACsec also says which frames were delivered without validation (a single frame: `NOT
/// VALIDATED <status>`) and ends with its non-zero 802.1AE counters; SecOC says the freshness
/// value of a single PDU, or the last accepted one after a batch.
pub fn verify(
    s: &VerifySettings,
    arg: &str,
    input: impl BufRead,
    out: impl Write,
    err: &mut dyn Write,
) -> Result<VerifyTotals> {
    let family = s.sa.profile.family();
    let mut rx = material::receiver(s)?;
    let limits = Limits::of(family);
    let batch = arg == "-";
    let mut t = VerifyTotals::default();
    let mut w = BufWriter::new(out);
    let result = for_each_input(
        arg,
        limits.unit,
        limits.max_protected(),
        input,
        |what, unit| {
            let verdict = match unit {
                // The SA verifies in the line's own buffer.
                Input::Frame(mut bytes) => match rx.verify_in_place_status(&mut bytes) {
                    Ok(d) => {
                        if d.status != RxStatus::Ok {
                            t.not_validated += 1;
                            if !batch {
                                writeln!(
                                    err,
                                    "NOT VALIDATED {} (delivered as validateFrames allows)",
                                    d.status.name()
                                )?;
                            }
                        }
                        if !batch && family == Family::Secoc {
                            writeln!(err, "freshness {}", rx.highest_seq())?;
                        }
                        let len = d.range.len();
                        bytes.copy_within(d.range, 0);
                        bytes.truncate(len);
                        Ok(bytes)
                    }
                    Err(reason) => Err(reason),
                },
                Input::Blank => {
                    writeln!(err, "{what}: empty line: a zero-byte frame")?;
                    Err(DropReason::Truncated)
                }
                Input::Bad(r) => {
                    writeln!(err, "{what}: {}", r.detail)?;
                    Err(r.reason)
                }
            };
            match verdict {
                Ok(plain) => {
                    t.ok += 1;
                    writeln!(w, "{}", hex::encode(plain))?;
                }
                Err(reason) => {
                    t.drops.bump(reason);
                    if batch {
                        writeln!(w, "DROP {reason}")?;
                    } else {
                        writeln!(err, "DROP {reason}")?;
                    }
                }
            }
            Ok(())
        },
    );
    w.flush()?;
    result?;
    if batch {
        let drops = summary(&t.drops);
        writeln!(
            err,
            "verified {} dropped {}{}{}",
            t.ok,
            t.drops.total(),
            if drops.is_empty() { "" } else { ": " },
            drops
        )?;
    }
    if let Some(c) = rx.macsec_counters() {
        let counters: Vec<String> = c
            .named()
            .iter()
            .filter(|(_, v)| *v > 0)
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        writeln!(err, "counters: {}", counters.join(" "))?;
    }
    if batch && family == Family::Secoc {
        writeln!(err, "last freshness {}", rx.highest_seq())?;
    }
    Ok(t)
}

/// Runs `f` on the single hex argument, or (for `-`) on each line of `input` (stdin), with a
/// name for the input (`name` or `stdin line N`) to use in messages. Shared by every protocol.
///
/// `max_bytes` is the largest frame the caller accepts. A stdin line is read with a bound
/// ([`line_limit`] characters): a longer one is never held in memory, it is answered as
/// [`Input::Bad`] (oversize) and skipped to its end. Every other line is one [`Input`]: the
/// frame, [`Input::Blank`], or [`Input::Bad`] with the reason (not UTF-8, not hex, more than
/// `max_bytes` bytes). A hex argument that does not parse is a usage error, as before; one above
/// `max_bytes` is [`Input::Bad`].
pub fn for_each_input(
    arg: &str,
    name: &str,
    max_bytes: usize,
    input: impl BufRead,
    mut f: impl FnMut(&str, Input) -> Result<()>,
) -> Result<()> {
    if arg != "-" {
        // An empty argument is no frame at all (an unset shell variable, say): a usage error,
        // as odd hex is. A blank stdin line is different: one unit of a batch, answered
        // `DROP truncated` so the answers keep their lines.
        if arg.trim().is_empty() {
            return Err(usage(format!(
                "{name}: empty: give the frame in hex, or `-` to read frames from stdin"
            )));
        }
        let bytes = parse_hex(name, arg)?;
        return f(name, sized(bytes, max_bytes));
    }
    let mut lines = BoundedLines::new(input, line_limit(max_bytes));
    let mut number = 0u64;
    while let Some(line) = lines.next_line().context("reading stdin")? {
        number += 1;
        let what = format!("stdin line {number}");
        let input = match line {
            None => Input::Bad(Refusal::new(
                DropReason::Oversize,
                format!(
                    "line longer than {} characters (frames of at most {max_bytes} bytes); \
                     skipped without reading it into memory",
                    line_limit(max_bytes)
                ),
            )),
            Some(raw) => parse_line(&what, raw, max_bytes),
        };
        f(&what, input)?;
    }
    Ok(())
}

/// Longest stdin line read for frames of at most `max_bytes` bytes: two hex digits per byte, a
/// separator (`:`, `-`, `_`, space) after each, a `0x` prefix, `\r` and some whitespace.
pub fn line_limit(max_bytes: usize) -> usize {
    max_bytes.saturating_mul(3).saturating_add(64)
}

/// One input of a batch (or the single argument).
pub enum Input {
    /// The frame's bytes (at most the caller's maximum).
    Frame(Vec<u8>),
    /// An empty line, or one of whitespace only.
    Blank,
    /// Not a frame: the line's answer.
    Bad(Refusal),
}

fn sized(bytes: Vec<u8>, max_bytes: usize) -> Input {
    if bytes.len() > max_bytes {
        Input::Bad(Refusal::new(
            DropReason::Oversize,
            format!("frame of {} bytes exceeds {max_bytes}", bytes.len()),
        ))
    } else {
        Input::Frame(bytes)
    }
}

fn parse_line(what: &str, raw: &[u8], max_bytes: usize) -> Input {
    let Ok(text) = std::str::from_utf8(raw) else {
        return Input::Bad(Refusal::new(DropReason::Malformed, "not UTF-8 text"));
    };
    if text.trim().is_empty() {
        return Input::Blank;
    }
    match parse_hex(what, text) {
        Ok(bytes) => sized(bytes, max_bytes),
        // parse_hex names the input; the caller adds the name when it prints the detail.
        Err(e) => {
            let msg = e.to_string();
            let detail = msg
                .strip_prefix(what)
                .and_then(|m| m.strip_prefix(": "))
                .unwrap_or(&msg);
            Input::Bad(Refusal::new(DropReason::Malformed, detail))
        }
    }
}

/// Lines of a reader, each read with a bound: never more than `limit` bytes of a line (plus one
/// read buffer) are held, however long the line.
pub struct BoundedLines<R> {
    input: R,
    limit: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> BoundedLines<R> {
    pub fn new(input: R, limit: usize) -> BoundedLines<R> {
        BoundedLines {
            input,
            limit,
            buf: Vec::new(),
        }
    }

    /// The next line without its `\n` (or `\r\n`): `Some(Some(bytes))`, `Some(None)` for a line
    /// longer than the limit (consumed to its end, not kept), `None` at the end of the input. A
    /// last line without a newline counts.
    pub fn next_line(&mut self) -> std::io::Result<Option<Option<&[u8]>>> {
        self.buf.clear();
        let mut started = false;
        let mut over = false;
        loop {
            let avail = match self.input.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if !started {
                    return Ok(None);
                }
                break;
            }
            started = true;
            let (chunk, ended) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (&avail[..i], true),
                None => (avail, false),
            };
            if !over {
                if self.buf.len() + chunk.len() > self.limit {
                    over = true;
                    self.buf = Vec::new();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            let used = chunk.len() + usize::from(ended);
            self.input.consume(used);
            if ended {
                break;
            }
        }
        if over {
            return Ok(Some(None));
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(Some(&self.buf)))
    }

    /// Bytes the line buffer holds (for tests of the bound).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.buf.capacity()
    }
}

/// `reason=count …` of the non-zero counters.
fn summary(c: &DropCounters) -> String {
    let v: Vec<String> = c.iter().map(|(r, n)| format!("{r}={n}")).collect();
    v.join(" ")
}

#[cfg(test)]
mod tests {
    use std::io::{BufReader, Read};

    use super::*;

    fn all_lines(input: &[u8], limit: usize) -> Vec<Option<Vec<u8>>> {
        let mut r = BoundedLines::new(BufReader::with_capacity(4, input), limit);
        let mut v = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            v.push(l.map(<[u8]>::to_vec));
        }
        v
    }

    #[test]
    fn lines_split_like_bufread_lines() {
        let got = all_lines(b"ab\r\n\ncd\n\n  \nlast", 8);
        let want: Vec<Option<Vec<u8>>> = ["ab", "", "cd", "", "  ", "last"]
            .iter()
            .map(|s| Some(s.as_bytes().to_vec()))
            .collect();
        assert_eq!(got, want);
        assert!(all_lines(b"", 8).is_empty());
        assert_eq!(all_lines(b"\n", 8), vec![Some(vec![])]);
    }

    #[test]
    fn a_line_over_the_limit_is_refused_and_the_next_one_read() {
        // Exactly the limit passes; one more byte does not, wherever the read buffer splits it.
        let got = all_lines(b"12345678\n123456789\nok\n123456789", 8);
        assert_eq!(
            got,
            vec![Some(b"12345678".to_vec()), None, Some(b"ok".to_vec()), None]
        );
    }

    /// A 64 MiB line (generated, never in memory) is skipped holding at most about the limit,
    /// and the line after it is read.
    #[test]
    fn a_huge_line_is_never_buffered() {
        let huge = std::io::repeat(b'a').take(64 << 20);
        let input = huge.chain(&b"\n0a0b\n"[..]);
        let limit = line_limit(9216);
        let mut r = BoundedLines::new(BufReader::with_capacity(8192, input), limit);
        assert_eq!(r.next_line().unwrap(), Some(None));
        assert!(r.held() <= 2 * limit, "held {} bytes", r.held());
        assert_eq!(r.next_line().unwrap(), Some(Some(&b"0a0b"[..])));
        assert_eq!(r.next_line().unwrap(), None);
    }

    #[test]
    fn each_line_gets_its_answer() {
        let frame = |b: &[u8]| match parse_line("stdin line 1", b, 4) {
            Input::Frame(v) => Ok(v),
            Input::Blank => Err("blank".to_string()),
            Input::Bad(r) => Err(format!("{} {}", r.reason, r.detail)),
        };
        assert_eq!(frame(b"0x0a:0b-0c_0d"), Ok(vec![10, 11, 12, 13]));
        assert_eq!(frame(b" \t"), Err("blank".into()));
        assert_eq!(frame(b""), Err("blank".into()));
        assert_eq!(
            frame(b"abc"),
            Err("malformed odd number of hex digits (3)".into())
        );
        assert!(frame(b"zz").unwrap_err().starts_with("malformed not hex"));
        assert_eq!(frame(b"\xff0a"), Err("malformed not UTF-8 text".into()));
        assert_eq!(
            frame(b"0102030405"),
            Err("oversize frame of 5 bytes exceeds 4".into())
        );
    }

    use super::super::material::{SaSettings, SecocRxSettings, SecocTxSettings};
    use zeroize::Zeroizing;

    const KEY: &str = "000102030405060708090a0b0c0d0e0f";
    /// dst ‖ src ‖ EtherType 0x0800 ‖ 20 bytes.
    const PLAIN: &str = "020000000002020000000001080045000014000040004011000ac0a80001c0a8";

    fn sa(profile: &str) -> SaSettings {
        SaSettings {
            key: Some(Zeroizing::new(KEY.into())),
            ..SaSettings::new(profile.parse().unwrap())
        }
    }

    /// Runs `f` with `input` as stdin; its result, stdout and stderr.
    fn run<T>(
        input: &str,
        f: impl FnOnce(&[u8], &mut Vec<u8>, &mut dyn Write) -> Result<T>,
    ) -> (T, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let t = f(input.as_bytes(), &mut out, &mut err).unwrap();
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (t, text(out), text(err))
    }

    /// Every line gets exactly one answer, in order, whatever it holds; the SA state (the
    /// replay window) carries over from line to line.
    #[test]
    fn a_batch_answers_every_line_in_order() {
        let p = ProtectSettings {
            seq: Some(1),
            ..ProtectSettings::new(sa("aes128-gcm"))
        };
        let (o, frames, err) = run(&format!("{PLAIN}\n\n{PLAIN}\nzz\n"), |i, out, err| {
            protect(&p, "-", i, out, err)
        });
        assert_eq!(o.exit_code(), 2, "lines refused");
        assert!(
            err.ends_with("protected 2 refused 2: truncated=1 malformed=1\n"),
            "{err}"
        );
        let frames: Vec<&str> = frames.lines().collect();
        assert_eq!(frames.len(), 4, "one answer per line, blank ones included");
        assert_eq!(frames[1], "DROP truncated");
        assert_eq!(frames[3], "DROP malformed");

        let v = VerifySettings {
            replay_window: 64,
            ..VerifySettings::new(sa("aes128-gcm"))
        };
        let huge = "a".repeat(line_limit(9216 + 128) + 1);
        let input = [frames[0], "", "zz", frames[0], &huge, frames[2]].join("\n");
        let (t, out, err) = run(&input, |i, out, err| verify(&v, "-", i, out, err));
        let want = [
            PLAIN,
            "DROP truncated",
            "DROP malformed",
            "DROP replay_duplicate",
            "DROP oversize",
            PLAIN,
        ];
        assert_eq!(out.lines().collect::<Vec<_>>(), want);
        assert_eq!((t.ok, t.drops.total(), t.exit_code()), (2, 4, 1));
        assert!(
            err.contains("stdin line 2: empty line: a zero-byte frame\n"),
            "{err}"
        );
        assert!(
            err.ends_with(
                "verified 2 dropped 4: truncated=1 oversize=1 replay_duplicate=1 malformed=1\n"
            ),
            "{err}"
        );
    }

    /// SecOC says the freshness value of a single PDU and the last accepted one after a batch;
    /// a single unit that is refused is a usage error naming it.
    #[test]
    fn single_units_and_what_each_family_adds() {
        let p = ProtectSettings {
            secoc: SecocTxSettings {
                data_id: Some(1),
                freshness: Some(5),
                ..SecocTxSettings::default()
            },
            ..ProtectSettings::new(sa("secoc-cmac-aes128"))
        };
        let (_, pdus, _) = run("0102\n0304\n", |i, out, err| protect(&p, "-", i, out, err));
        let pdus: Vec<&str> = pdus.lines().collect();
        let v = VerifySettings {
            secoc: SecocRxSettings {
                data_id: Some(1),
                ..SecocRxSettings::default()
            },
            ..VerifySettings::new(sa("secoc-cmac-aes128"))
        };
        let (t, out, err) = run("", |i, out, err| verify(&v, pdus[0], i, out, err));
        assert_eq!(
            (t.exit_code(), out.as_str(), err.as_str()),
            (0, "0102\n", "freshness 5\n")
        );
        let (_, out, err) = run(&pdus.join("\n"), |i, out, err| verify(&v, "-", i, out, err));
        assert_eq!(out, "0102\n0304\n");
        assert_eq!(err, "verified 2 dropped 0\nlast freshness 6\n");

        let p = ProtectSettings {
            seq: Some(1),
            ..ProtectSettings::new(sa("aes128-gcm"))
        };
        let mut out = Vec::new();
        let e = protect(&p, "0011", &b""[..], &mut out, &mut Vec::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "FRAME: frame shorter than an Ethernet header (14 bytes)"
        );
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
