//! Node processes: how an experiment starts a role (`ivnsec node KIND`) inside an ECU namespace,
//! hands it its settings and keys, and reads its line report.
//!
//! The settings travel on the child's stdin, never in its environment or on its command line:
//! first one line of JSON (the spec without keys), then one byte with the number of key sets and
//! each key set as [`DirectionKeys::to_bytes`] (binary, zeroed on both sides after use). After
//! that the stdin pipe stays open: roles that wait for a start signal read it as lines, and every
//! role stops when the orchestrator closes it ([`stop_on_stdin_eof`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{DirectionKeys, MAX_KEY_LEN};
use ivnsec_core::crypto::AEAD_NONCE_LEN;
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::netns_command;
use serde::Serialize;
use serde::de::DeserializeOwned;
use zeroize::Zeroizing;

/// Longest spec line a role accepts (timelines included).
pub const MAX_SPEC_LEN: usize = 16 << 20;
/// Most key sets one spec carries (a camera ECU: one per camera).
pub const MAX_KEY_SETS: usize = 64;

/// The settings of a node role: JSON for everything but the keys, which travel as bytes.
pub trait NodeSpec: Serialize + DeserializeOwned {
    /// The key sets, in a fixed order.
    fn keys(&self) -> Vec<&DirectionKeys>;
    /// Where [`keys`](Self::keys) go back after the transfer (same order, same count).
    fn keys_mut(&mut self) -> Vec<&mut DirectionKeys>;
}

/// Starts `ivnsec node KIND` (inside namespace `ns` when given) with piped stdin, stdout and
/// stderr, and writes `spec` and its keys to its stdin; `what` names it in errors. The child
/// dies with this process (also when this one is killed with SIGKILL).
pub fn spawn_role(ns: Option<&str>, kind: &str, spec: &impl NodeSpec, what: &str) -> Result<Child> {
    let place = match ns {
        Some(ns) => Place::Namespace(ns),
        None => Place::Here,
    };
    spawn_role_at(&place, kind, spec, what)
}

/// Where a node process runs.
#[derive(Clone, Copy, Debug)]
pub enum Place<'a> {
    /// Beside this process.
    Here,
    /// In a network namespace of this host.
    Namespace(&'a str),
    /// On a host reached over SSH (`ssh … ivnsec node KIND`; the spec and keys go over the SSH
    /// channel's stdin, the `ssh` client dies with this process, and the node ends when the
    /// channel closes).
    Host(&'a crate::hosts::Remote),
}

/// [`spawn_role`] at any [`Place`].
pub fn spawn_role_at(
    place: &Place<'_>,
    kind: &str,
    spec: &impl NodeSpec,
    what: &str,
) -> Result<Child> {
    let exe = std::env::current_exe().context("locating the ivnsec binary")?;
    let mut cmd = match place {
        Place::Namespace(ns) => netns_command(ns, &exe),
        Place::Here => Command::new(&exe),
        Place::Host(h) => h.ivnsec(&[]),
    };
    cmd.args(["node", kind])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = die_with_parent(&mut cmd)
        .spawn()
        .with_context(|| format!("starting the {what} process"))?;
    crate::interrupt::started(child.id());
    let sent = send_spec(child.stdin.as_mut().expect("piped"), spec);
    if let Err(e) = sent {
        let _ = child.kill();
        let err = child_stderr(&mut child);
        let _ = child.wait();
        return Err(e.context(format!("handing the {what} its settings: {err}")));
    }
    Ok(child)
}

/// Writes `spec` and its keys in the form [`read_spec`] reads.
pub fn send_spec(w: &mut impl Write, spec: &impl NodeSpec) -> Result<()> {
    let mut json = serde_json::to_vec(spec)?;
    json.push(b'\n');
    let keys = spec.keys();
    if keys.len() > MAX_KEY_SETS {
        bail!("{} key sets, at most {MAX_KEY_SETS}", keys.len());
    }
    let mut blob = Zeroizing::new(Vec::new());
    blob.push(keys.len() as u8);
    for k in keys {
        blob.extend_from_slice(&k.to_bytes());
    }
    w.write_all(&json)?;
    w.write_all(&blob)?;
    w.flush()?;
    Ok(())
}

/// The role side: reads the spec and its keys from stdin (bounded: a spec line of at most
/// [`MAX_SPEC_LEN`] bytes, keys of at most [`MAX_KEY_LEN`] bytes).
pub fn read_spec<S: NodeSpec>() -> Result<S> {
    read_spec_from(&mut std::io::stdin().lock())
}

/// [`read_spec`] from any reader.
pub fn read_spec_from<S: NodeSpec>(r: &mut impl BufRead) -> Result<S> {
    let mut line = Vec::new();
    r.take(MAX_SPEC_LEN as u64 + 1)
        .read_until(b'\n', &mut line)
        .context("reading the node spec")?;
    if line.last() != Some(&b'\n') {
        bail!("the node spec is missing, too long or not terminated");
    }
    let mut spec: S = serde_json::from_slice(&line).context("bad node spec")?;
    let mut byte = [0u8; 1];
    r.read_exact(&mut byte).context("reading the key count")?;
    let n = usize::from(byte[0]);
    let mut slots = spec.keys_mut();
    if n != slots.len() {
        bail!(
            "the node spec came with {n} key sets, expected {}",
            slots.len()
        );
    }
    for slot in slots.iter_mut() {
        **slot = read_keys(r)?;
    }
    drop(slots);
    Ok(spec)
}

fn read_keys(r: &mut impl Read) -> Result<DirectionKeys> {
    let mut part = |what: &str| -> Result<Zeroizing<Vec<u8>>> {
        let mut len = [0u8; 1];
        r.read_exact(&mut len)
            .with_context(|| format!("reading the {what} length"))?;
        let len = usize::from(len[0]);
        if len > MAX_KEY_LEN {
            bail!("{what} of {len} bytes, at most {MAX_KEY_LEN}");
        }
        let mut v = Zeroizing::new(vec![0u8; len]);
        r.read_exact(&mut v)
            .with_context(|| format!("reading the {what}"))?;
        Ok(v)
    };
    let key = part("key")?;
    let mac = part("MAC key")?;
    let mut iv = Zeroizing::new([0u8; AEAD_NONCE_LEN]);
    r.read_exact(&mut iv[..]).context("reading the IV")?;
    Ok(DirectionKeys::new(&key, &mac, *iv))
}

/// A flag that turns true when stdin reaches its end: how an orchestrator tells a node to stop
/// (it closes the node's stdin). Lines read before the end are ignored. The watching thread is
/// not joined; it ends with the process.
pub fn stop_on_stdin_eof() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut sink = String::new();
        while matches!(std::io::stdin().lock().read_line(&mut sink), Ok(n) if n > 0) {
            sink.clear();
        }
        flag.store(true, Ordering::Relaxed);
    });
    stop
}

/// Longest control line a node reads from its stdin; the rest of a longer line is read as the
/// next one.
const MAX_CONTROL_LINE: u64 = 256;

/// What an orchestrator tells a node that runs in segments (one run of its role per set of
/// keys, on the sockets it opened once), on the node's stdin after the first spec.
pub enum Control<S> {
    /// `EXPECT <n>`: how many units the node is to account for before its segment ends.
    Expect(u64),
    /// `END`, or the end of stdin: the segment ends (and at the end of stdin, the node).
    End,
    /// `NEXT` followed by a spec as [`send_spec`] writes it: the next segment.
    Next(Box<S>),
}

/// Reads [`Control`] messages from stdin in a thread of their own (not joined; it ends with the
/// process); other lines are ignored. The end of stdin, or a `NEXT` spec that does not read
/// (said on stderr), comes as [`Control::End`], after which the channel closes.
pub fn read_control<S: NodeSpec + Send + 'static>() -> Receiver<Control<S>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || read_controls(&mut std::io::stdin().lock(), &tx));
    rx
}

/// [`read_control`]'s loop, from any reader.
fn read_controls<S: NodeSpec>(r: &mut impl BufRead, tx: &Sender<Control<S>>) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.take(MAX_CONTROL_LINE).read_until(b'\n', &mut line) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
        let msg = match line.trim_ascii_end() {
            b"END" => Control::End,
            b"NEXT" => match read_spec_from(r) {
                Ok(s) => Control::Next(Box::new(s)),
                Err(e) => {
                    eprintln!("the next segment's spec: {e:#}");
                    break;
                }
            },
            l => match parse_expect(l) {
                Some(n) => Control::Expect(n),
                None => continue,
            },
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
    let _ = tx.send(Control::End);
}

/// Writes `NEXT` and `spec` (the next segment of a node that runs in segments).
pub fn send_next(w: &mut impl Write, spec: &impl NodeSpec) -> Result<()> {
    w.write_all(b"NEXT\n")?;
    send_spec(w, spec)
}

/// The count of an `EXPECT <n>` line (without its line end).
fn parse_expect(line: &[u8]) -> Option<u64> {
    std::str::from_utf8(line.strip_prefix(b"EXPECT ")?)
        .ok()?
        .parse()
        .ok()
}

/// Kills and reaps the node processes that are still running when it is dropped (a run that
/// failed half-way leaves none behind).
pub struct Reaper(pub Vec<Child>);

impl Reaper {
    /// `e` after a failed run: every node killed, what they wrote on stderr added to it.
    pub fn fail(&mut self, e: anyhow::Error) -> anyhow::Error {
        for c in &mut self.0 {
            let _ = c.kill();
        }
        let errs: Vec<String> = self
            .0
            .iter_mut()
            .map(child_stderr)
            .filter(|s| !s.is_empty())
            .collect();
        if errs.is_empty() {
            e
        } else {
            e.context(errs.join("; "))
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// What the child wrote to stderr (after it ended or closed it), trimmed.
pub fn child_stderr(c: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = c.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s.trim().to_string()
}

/// Reads the role's `READY <port>` line.
pub fn wait_ready(out: &mut BufReader<ChildStdout>) -> Result<u16> {
    let mut line = String::new();
    out.read_line(&mut line)?;
    let port = line
        .trim()
        .strip_prefix("READY ")
        .ok_or_else(|| anyhow!("no READY line (got {:?})", line.trim()))?;
    port.parse().map_err(|_| anyhow!("bad READY line {line:?}"))
}

/// Reads a node role's report from its stdout, one line of space-separated fields at a time:
/// `f` takes each line's fields and says whether it knew the line; returns once `END` came.
/// Errors name `who` and the line: an unknown, empty or malformed line, or no `END`.
pub fn read_report(
    out: impl BufRead,
    who: &str,
    mut f: impl FnMut(&[&str]) -> Result<bool>,
) -> Result<()> {
    for line in out.lines() {
        let line = line?;
        let fields: Vec<&str> = line.split_ascii_whitespace().collect();
        match fields.first() {
            Some(&"END") => return Ok(()),
            None => bail!("{who}: unexpected line {line:?}"),
            Some(_) => {}
        }
        if !f(&fields).with_context(|| format!("{who}: bad line {line:?}"))? {
            bail!("{who}: unexpected line {line:?}");
        }
    }
    bail!("the {who} ended without its report")
}

/// Field `i` of a report line as a number.
pub fn field_u64(f: &[&str], i: usize) -> Result<u64> {
    f.get(i)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("field {i} is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize)]
    struct Spec {
        name: String,
        #[serde(skip)]
        a: DirectionKeys,
        #[serde(skip)]
        b: DirectionKeys,
    }

    impl NodeSpec for Spec {
        fn keys(&self) -> Vec<&DirectionKeys> {
            vec![&self.a, &self.b]
        }
        fn keys_mut(&mut self) -> Vec<&mut DirectionKeys> {
            vec![&mut self.a, &mut self.b]
        }
    }

    /// The keys arrive intact and never appear in the JSON part; what follows stays readable.
    #[test]
    fn spec_and_keys_round_trip() {
        let spec = Spec {
            name: "x".into(),
            a: DirectionKeys::new(&[0xA5; 16], &[0x5A; 32], [7; 12]),
            b: DirectionKeys::new(&[0x11; 32], &[], [0; 12]),
        };
        let mut wire = Vec::new();
        send_spec(&mut wire, &spec).unwrap();
        wire.extend_from_slice(b"go\n");
        let line_end = wire.iter().position(|&b| b == b'\n').unwrap();
        let json = std::str::from_utf8(&wire[..line_end]).unwrap();
        assert_eq!(json, r#"{"name":"x"}"#);
        let mut r = &wire[..];
        let back: Spec = read_spec_from(&mut r).unwrap();
        assert_eq!(back.name, "x");
        assert_eq!(
            (back.a.key(), back.a.mac_key(), back.a.iv()),
            (spec.a.key(), spec.a.mac_key(), spec.a.iv())
        );
        assert_eq!(back.b.key(), spec.b.key());
        assert_eq!(r, b"go\n");
    }

    /// Truncated, oversized or miscounted input is an error, never a panic.
    #[test]
    fn bad_spec_input_is_refused() {
        let spec = Spec {
            name: "x".into(),
            a: DirectionKeys::new(&[1; 16], &[], [0; 12]),
            b: DirectionKeys::default(),
        };
        let mut wire = Vec::new();
        send_spec(&mut wire, &spec).unwrap();
        for cut in 0..wire.len() {
            let mut r = &wire[..cut];
            assert!(read_spec_from::<Spec>(&mut r).is_err(), "cut at {cut}");
        }
        let mut bad = wire.clone();
        let at = bad.iter().position(|&b| b == b'\n').unwrap() + 1;
        bad[at] = 3; // three key sets announced, two expected
        assert!(read_spec_from::<Spec>(&mut &bad[..]).is_err());
        bad[at] = 2;
        bad[at + 1] = 200; // a 200-byte key
        assert!(read_spec_from::<Spec>(&mut &bad[..]).is_err());
        assert!(read_spec_from::<Spec>(&mut &b"{\"name\":1}\n\x00"[..]).is_err());
    }

    /// `EXPECT <n>` gives its count; anything else (another word, no number, a negative or too
    /// large one, bytes that are not UTF-8) gives none.
    #[test]
    fn expect_lines() {
        assert_eq!(parse_expect(b"EXPECT 0"), Some(0));
        assert_eq!(parse_expect(b"EXPECT 41234"), Some(41234));
        assert_eq!(parse_expect(b"EXPECT 18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b"EXPECT"[..],
            b"EXPECT ",
            b"EXPECT -1",
            b"EXPECT 1 2",
            b"EXPECT 7\n",
            b"EXPECTED 5",
            b"expect 5",
            b"EXPECT 18446744073709551616",
            b"EXPECT \xff",
            b"go",
        ] {
            assert_eq!(
                parse_expect(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// The control stream of a node in segments: `EXPECT`, `END` and `NEXT` with a spec and its
    /// keys come in order, other lines are skipped, and the end of the input is one more `END`;
    /// a `NEXT` whose spec does not read ends the stream there.
    #[test]
    fn control_messages_in_order() {
        let next = Spec {
            name: "second".into(),
            a: DirectionKeys::new(&[0x42; 32], &[], [9; 12]),
            b: DirectionKeys::default(),
        };
        let mut wire = b"EXPECT 12\nnoise\nEND\nNEXT\n".to_vec();
        send_spec(&mut wire, &next).unwrap();
        wire.extend_from_slice(b"EXPECT 3\nEND\n");
        let read = |wire: &[u8]| {
            let (tx, rx) = mpsc::channel();
            read_controls::<Spec>(&mut &wire[..], &tx);
            drop(tx);
            rx.into_iter()
                .map(|c| match c {
                    Control::Expect(n) => format!("expect {n}"),
                    Control::End => "end".into(),
                    Control::Next(s) => format!("next {} {:02x?}", s.name, s.a.key()),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            read(&wire),
            [
                "expect 12".to_string(),
                "end".into(),
                format!("next second {:02x?}", [0x42u8; 32]),
                "expect 3".into(),
                "end".into(),
                "end".into(),
            ]
        );
        let cut = wire.len() - b"EXPECT 3\nEND\n".len() - 5;
        assert_eq!(read(&wire[..cut]), ["expect 12", "end", "end"]);
    }
}
