//! `ivnsec frame protect|verify`: single frames as hex, or one hex frame per line on stdin with SA
//! state kept across lines (so replay protection works over a batch).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use ivnsec_core::crypto::{AEAD_NONCE_LEN, CryptoProvider};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::{DropCounters, DropReason, ProtectError};
use ivnsec_core::suite::{IvnAeProfile, Suite};

use crate::error::{parse_hex, usage};
use crate::providers::{self, ProviderChoice};

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Protect a plain Ethernet frame (dst ‖ src ‖ EtherType ‖ payload) as IVN-AE; prints hex.
    #[command(
        after_help = "With `-`, each stdin line is answered by the protected frame in hex, or by
`DROP <reason>` (`malformed`: not hex or not UTF-8; `oversize`: above the largest frame;
`truncated`: too short) with the line named on stderr, and the batch goes on; blank lines are
skipped. Lines are read with a bound. The exit code is 2 when any line was refused. Without --iv,
stderr says which IV was used. See docs/frame.md.

Example:
  ivnsec frame protect --profile aes128-gcm --key 000102030405060708090a0b0c0d0e0f \\
      --seq 1 020000000002020000000001080045000014"
    )]
    Protect {
        #[command(flatten)]
        sa: SaArgs,
        /// Sequence number of the (first) frame, ≥ 1 (IVN-AE, ESP). With `-`, frames are numbered
        /// upward from it.
        #[arg(long)]
        seq: Option<u64>,
        #[command(flatten)]
        macsec: super::frame_macsec::MacsecProtectOpts,
        #[command(flatten)]
        esp: super::frame_esp::EspProtectOpts,
        #[command(flatten)]
        secoc: super::frame_secoc::SecocProtectOpts,
        /// Hex of the plain frame (IP packet for ESP, Authentic I-PDU for SecOC), or `-` to read
        /// one per line from stdin.
        frame: String,
    },
    /// Verify an IVN-AE frame; prints the recovered plain frame (exit 0) or the drop reason on
    /// stderr (exit 1).
    #[command(
        after_help = "With `-`, each stdin line is answered, in order, by the plain frame in hex or by
`DROP <reason>`; the exit code is 1 when any frame was dropped. A line that is no frame answers
for itself and the batch goes on: blank `DROP truncated` (a zero-byte frame), not hex or not
UTF-8 `DROP malformed`, above the largest frame `DROP oversize` (read with a bound, never held
whole); stderr names the line. See docs/frame.md.

Example:
  printf '%s\\n' \"$F1\" \"$F2\" | ivnsec frame verify --profile aes128-gcm \\
      --key 000102030405060708090a0b0c0d0e0f -"
    )]
    Verify {
        #[command(flatten)]
        sa: SaArgs,
        /// Replay window W: 0 accepts only increasing sequence numbers; otherwise a frame within
        /// W of the highest is accepted once. (SecOC: see --acceptance-window.)
        #[arg(long, default_value_t = 64)]
        replay_window: u32,
        #[command(flatten)]
        macsec: super::frame_macsec::MacsecVerifyOpts,
        #[command(flatten)]
        esp: super::frame_esp::EspVerifyOpts,
        #[command(flatten)]
        secoc: super::frame_secoc::SecocVerifyOpts,
        /// Hex of the protected frame (ESP packet for ESP, Secured I-PDU for SecOC), or `-` to
        /// read one per line from stdin.
        frame: String,
    },
}

/// The security association, as given on the command line.
#[derive(clap::Args, Debug)]
pub struct SaArgs {
    /// Profile: an IVN-AE suite name, with `/auth` or `/conf` for AEAD suites (default conf);
    /// or a standard protocol profile (`macsec-…`, `esp-…`, `secoc-…`). `ivnsec suites` lists
    /// them.
    #[arg(long)]
    pub profile: String,
    /// Cipher key in hex (AEAD and AES-CBC/CTR suites).
    #[arg(long)]
    pub key: Option<String>,
    /// HMAC key in hex, any length ≥ 1 byte (HMAC and AES-CBC/CTR-HMAC suites).
    #[arg(long)]
    pub mac_key: Option<String>,
    /// IVN-AE: per-SA IV in hex, 12 bytes, XORed with the sequence number to form the nonce.
    #[arg(long)]
    pub iv: Option<String>,
    /// Key id carried in the frame (0-255).
    #[arg(long)]
    pub key_id: Option<u8>,
    /// Truncate HMAC tags to this many bytes (≥ max(10, digest/2)); default full length.
    #[arg(long)]
    pub tag_len: Option<usize>,
    /// Crypto provider: portable, fast, or auto (fast when it has the suite).
    #[arg(long, default_value = "auto")]
    pub provider: ProviderChoice,
}

struct SaMaterial {
    key: Vec<u8>,
    mac_key: Vec<u8>,
    iv: [u8; AEAD_NONCE_LEN],
}

impl SaArgs {
    fn material(&self) -> Result<SaMaterial> {
        let key = self
            .key
            .as_deref()
            .map(|k| parse_hex("--key", k))
            .transpose()?
            .unwrap_or_default();
        let mac_key = self
            .mac_key
            .as_deref()
            .map(|k| parse_hex("--mac-key", k))
            .transpose()?
            .unwrap_or_default();
        let iv = match &self.iv {
            None => [0; AEAD_NONCE_LEN],
            Some(s) => {
                let v = parse_hex("--iv", s)?;
                v.as_slice().try_into().map_err(|_| {
                    usage(format!(
                        "--iv must be {AEAD_NONCE_LEN} bytes, got {}",
                        v.len()
                    ))
                })?
            }
        };
        Ok(SaMaterial { key, mac_key, iv })
    }

    fn ivnae_profile(&self) -> Result<IvnAeProfile> {
        self.profile.parse().map_err(|e| {
            usage(format!(
                "--profile {}: {e} (see `ivnsec suites`)",
                self.profile
            ))
        })
    }

    fn params<'a>(&self, profile: IvnAeProfile, m: &'a SaMaterial) -> SaParams<'a> {
        SaParams {
            profile,
            key: &m.key,
            mac_key: &m.mac_key,
            iv: m.iv,
            key_id: self.key_id.unwrap_or(0),
            tag_len: self.tag_len,
        }
    }

    fn provider(&self, profile: IvnAeProfile) -> Result<&'static CryptoProvider> {
        providers::select(self.provider, profile.suite).map_err(usage)
    }
}

/// Largest plain frame accepted: a jumbo frame.
const MAX_FRAME: usize = 9216;
/// Most an IVN-AE frame adds: 12 header bytes, up to 16 of CBC padding, a tag of at most 32
/// (with room to spare).
const MAX_OVERHEAD: usize = 128;

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Protect {
            sa,
            seq,
            macsec,
            esp,
            secoc,
            frame,
        } => {
            if sa.profile.starts_with("macsec-") {
                super::frame_macsec::protect(&sa, &macsec, &frame)
            } else if sa.profile.starts_with("esp-") {
                super::frame_esp::protect(&sa, seq, &esp, &frame)
            } else if sa.profile.starts_with("secoc-") {
                super::frame_secoc::protect(&sa, seq, &secoc, &frame)
            } else {
                let seq = seq.ok_or_else(|| usage("--seq is required for IVN-AE profiles"))?;
                protect(&sa, seq, &frame)
            }
        }
        Args::Verify {
            sa,
            replay_window,
            macsec,
            esp,
            secoc,
            frame,
        } => {
            if sa.profile.starts_with("macsec-") {
                super::frame_macsec::verify(&sa, replay_window, &macsec, &frame)
            } else if sa.profile.starts_with("esp-") {
                super::frame_esp::verify(&sa, replay_window, &esp, &frame)
            } else if sa.profile.starts_with("secoc-") {
                super::frame_secoc::verify(&sa, &secoc, &frame)
            } else {
                verify(&sa, replay_window, &frame)
            }
        }
    }
}

/// Runs `f` on the single hex argument, or (for `-`) on each stdin line, with a name for the
/// input (`name` or `stdin line N`) to use in messages. Shared by every protocol.
///
/// `max_bytes` is the largest frame the caller accepts. A stdin line is read with a bound
/// ([`line_limit`] characters): a longer one is never held in memory, it is answered as
/// [`Input::Bad`] (oversize) and skipped to its end. Every other line is one [`Input`]: the
/// frame, [`Input::Blank`], or [`Input::Bad`] with the reason (not UTF-8, not hex, more than
/// `max_bytes` bytes). A hex argument that does not parse is a usage error, as before; one above
/// `max_bytes` is [`Input::Bad`].
pub(crate) fn for_each_input(
    arg: &str,
    name: &str,
    max_bytes: usize,
    mut f: impl FnMut(&str, Input) -> Result<()>,
) -> Result<()> {
    if arg != "-" {
        let bytes = parse_hex(name, arg)?;
        return f(name, sized(bytes, max_bytes));
    }
    let stdin = std::io::stdin();
    let mut lines = BoundedLines::new(stdin.lock(), line_limit(max_bytes));
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
pub(crate) fn line_limit(max_bytes: usize) -> usize {
    max_bytes.saturating_mul(3).saturating_add(64)
}

/// One input of a batch (or the single argument).
pub(crate) enum Input {
    /// The frame's bytes (at most the caller's maximum).
    Frame(Vec<u8>),
    /// An empty line, or one of whitespace only.
    Blank,
    /// Not a frame: the line's answer.
    Bad(Refusal),
}

/// Why one input gets no result: its `DROP <reason>` answer and a sentence for stderr.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub reason: DropReason,
    pub detail: String,
}

impl Refusal {
    pub fn new(reason: DropReason, detail: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            detail: detail.into(),
        }
    }
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
pub(crate) struct BoundedLines<R> {
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

/// What protecting one input gave: the protected bytes, or a refusal of this input alone (the
/// batch goes on). An `Err` of the outer `Result` stops everything (the SA cannot go on: its
/// numbers are exhausted, the provider failed).
pub(crate) type Protected = std::result::Result<Vec<u8>, Refusal>;

/// Protects each input with `one` and prints the protected frames as hex, one line per input.
///
/// A single input that `one` refuses is a usage error (exit 2). In a batch, a refused line is
/// answered `DROP <reason>` on stdout (with the sentence on stderr) and the batch goes on; blank
/// lines are skipped (no frame, no sequence number spent); at the end, when any line was refused,
/// a summary goes to stderr and the exit code is 2.
pub(crate) fn protect_each(
    arg: &str,
    name: &str,
    max_bytes: usize,
    mut one: impl FnMut(&str, &[u8]) -> Result<Protected>,
) -> Result<ExitCode> {
    let batch = arg == "-";
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let mut protected = 0u64;
    let mut refused = DropCounters::default();
    let result = for_each_input(arg, name, max_bytes, |what, input| {
        let answer = match input {
            Input::Frame(bytes) => one(what, &bytes)?,
            Input::Blank => return Ok(()),
            Input::Bad(r) => Err(r),
        };
        match answer {
            Ok(out) => {
                protected += 1;
                writeln!(w, "{}", hex::encode(out))?;
            }
            Err(r) if batch => {
                refused.bump(r.reason);
                writeln!(w, "DROP {}", r.reason)?;
                eprintln!("{what}: {}", r.detail);
            }
            Err(r) => return Err(usage(format!("{what}: {}", r.detail))),
        }
        Ok(())
    });
    // The frames protected before a fatal error are shown (their numbers are spent).
    w.flush()?;
    result?;
    if refused.total() == 0 {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "protected {protected} refused {}: {}",
        refused.total(),
        summary(&refused)
    );
    Ok(ExitCode::from(2))
}

/// `reason=count …` of the non-zero counters.
fn summary(c: &DropCounters) -> String {
    let v: Vec<String> = c.iter().map(|(r, n)| format!("{r}={n}")).collect();
    v.join(" ")
}

/// Totals of a verify run.
#[derive(Debug, Default)]
pub(crate) struct VerifyTotals {
    pub ok: u64,
    pub drops: DropCounters,
}

/// Verifies each input with `one` (plain bytes or the drop reason). A single input prints the
/// plain hex on stdout or `DROP <reason>` on stderr; a batch prints exactly one line per input
/// line on stdout — the plain hex or `DROP <reason>` — and the totals on stderr. A line that is
/// no frame is answered without reaching the SA: a blank line is a zero-byte frame (`DROP
/// truncated`), a line that is not hex or not UTF-8 `DROP malformed`, one longer than the
/// largest frame `DROP oversize`; the sentence saying why goes to stderr.
pub(crate) fn verify_each(
    arg: &str,
    name: &str,
    max_bytes: usize,
    mut one: impl FnMut(&str, &[u8]) -> Result<std::result::Result<Vec<u8>, DropReason>>,
) -> Result<VerifyTotals> {
    let batch = arg == "-";
    let mut t = VerifyTotals::default();
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let result = for_each_input(arg, name, max_bytes, |what, input| {
        let verdict = match input {
            Input::Frame(bytes) => one(what, &bytes)?,
            Input::Blank => {
                eprintln!("{what}: empty line: a zero-byte frame");
                Err(DropReason::Truncated)
            }
            Input::Bad(r) => {
                eprintln!("{what}: {}", r.detail);
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
                    eprintln!("DROP {reason}");
                }
            }
        }
        Ok(())
    });
    w.flush()?;
    result?;
    if batch {
        let drops = summary(&t.drops);
        eprintln!(
            "verified {} dropped {}{}{}",
            t.ok,
            t.drops.total(),
            if drops.is_empty() { "" } else { ": " },
            drops
        );
    }
    Ok(t)
}

/// Exit code of a verify run: 1 when anything was dropped.
pub(crate) fn verify_exit(t: &VerifyTotals) -> ExitCode {
    if t.drops.total() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn protect(sa: &SaArgs, seq: u64, frame: &str) -> Result<ExitCode> {
    let profile = sa.ivnae_profile()?;
    let m = sa.material()?;
    let mut tx = IvnAeTx::new(sa.provider(profile)?, &sa.params(profile, &m), seq)
        .map_err(|e| usage(e.to_string()))?;
    if sa.iv.is_none() && matches!(profile.suite, Suite::Aead(_) | Suite::EncThenMac { .. }) {
        eprintln!(
            "frame protect: no --iv given: using the all-zero IV {} (nonce = IV XOR sequence \
             number); the receiver needs the same IV, and another SA under this key needs \
             another --iv",
            hex::encode(m.iv)
        );
    }
    let mut out = vec![0u8; MAX_FRAME + MAX_OVERHEAD];
    protect_each(frame, "FRAME", MAX_FRAME, |what, plain| {
        match tx.protect(plain, &mut out) {
            Ok(n) => Ok(Ok(out[..n].to_vec())),
            Err(e @ ProtectError::FrameTooShort) => {
                Ok(Err(Refusal::new(DropReason::Truncated, e.to_string())))
            }
            // Exhausted numbers or a failed provider: the SA cannot go on.
            Err(e) => Err(usage(format!("{what}: {e}"))),
        }
    })
}

/// The IVN-AE receive SA the options describe (also used by `pcap verify`).
pub(crate) fn ivnae_rx(sa: &SaArgs, replay_window: u32) -> Result<IvnAeRx> {
    let profile = sa.ivnae_profile()?;
    let m = sa.material()?;
    IvnAeRx::new(
        sa.provider(profile)?,
        &sa.params(profile, &m),
        replay_window,
    )
    .map_err(|e| usage(e.to_string()))
}

fn verify(sa: &SaArgs, replay_window: u32, frame: &str) -> Result<ExitCode> {
    let mut rx = ivnae_rx(sa, replay_window)?;
    // Room for the whole protected frame: the SA verifies in the output buffer.
    let mut out = vec![0u8; MAX_FRAME + MAX_OVERHEAD];
    let t = verify_each(frame, "FRAME", MAX_FRAME + MAX_OVERHEAD, |_, bytes| {
        Ok(rx.verify(bytes, &mut out).map(|n| out[..n].to_vec()))
    })?;
    Ok(verify_exit(&t))
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
}
