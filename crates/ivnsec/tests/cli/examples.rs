//! Every example a user is shown runs, and succeeds: the examples in the `--help` of every
//! command (found by walking `ivnsec --help` and each command's `Commands:` list) and every
//! fenced `sh` block of README.md and docs/*.md.
//!
//! Where the examples come from:
//! - `--help`: a paragraph whose first line holds "Example" and ends with `:` (`Examples:`,
//!   `Example (two hosts …):`, `…, two gateways:`), then its indented lines (a `\` joins the next
//!   line; `#` lines are comments; a later unindented line ending in `:` heads more examples of
//!   the same paragraph); and inline `Example: ivnsec …` / ``Example: `ivnsec …` `` in option
//!   texts. An inline example with `…` is a fragment of an option, not a command, and is left out.
//! - docs: a block fenced ```` ```sh ````. A block preceded by `<!-- no-run: REASON -->` is not
//!   run (the reason is printed). A block of `$ ` prompts is a transcript: its commands run as one
//!   script and what they print (stdout and stderr) must be the block's other lines. A block with
//!   a here-document or a loop runs as one script (`set -e`); any other block line by line.
//!
//! How each example runs: in a fresh directory of its own source (a help text, a doc block) with
//! what the examples name prepared there (key files of the profile they give, a PKI, the flows
//! file of docs/tdma-run.md, SOME/IP configs, captures, plans/ and contrib/ of the repository,
//! `target/release/ivnsec`), `ivnsec` first on PATH, `sudo` running the command as it is (CI is
//! root; without root the examples that need it are skipped with the reason printed), and its own
//! testbed state directory (torn down after the source's last example). Short commands must exit 0. Long ones —
//! experiments, benchmarks, daemons — must get past their start: exit 0, or still be running
//! after [`GRACE`], when they get SIGINT (a testbed they hold is removed on it); an exit other
//! than 0 before then fails. [`SKIP`] lists, with the reason, what cannot run here.

use crate::common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::common::cli::{help, subcommands};
use crate::common::frames::pcap;
use crate::common::repo;
use crate::common::{BIN, TempDir, text};

/// How long a long-running example may take to fail at its start.
const GRACE: Duration = Duration::from_millis(2500);
/// The most a short example may take.
const SHORT_LIMIT: Duration = Duration::from_secs(60);
/// How long an interrupted example has to stop (and remove its testbed).
const STOP_LIMIT: Duration = Duration::from_secs(30);
/// Examples run at once (each in its own directory; testbeds have random prefixes).
const WORKERS: usize = 3;

/// What cannot run in a test, and why: (a piece of the command, the reason). Kept short: each
/// entry is a kind of setup a test cannot make.
const SKIP: &[(&str, &str)] = &[
    // Other machines.
    ("--hosts ", "SSH hosts of a bench plan"),
    ("--ssh ", "SSH hosts"),
    ("bench.toml", "SSH hosts of a bench plan"),
    ("scp ", "a second machine"),
    (
        "192.0.2.",
        "a second machine (the tunnel's or the key server's peer)",
    ),
    ("10.0.0.", "an address of a vehicle network"),
    ("10.9.0.", "a second machine (through the ESP tunnel)"),
    ("10.99.0.", "a second machine (through the MACsec TAP)"),
    // Real interfaces and the host's own network configuration.
    (" eth0", "a real vehicle interface (eth0)"),
    (" eth1", "a real vehicle interface (eth1)"),
    (
        "macsec status",
        "the MACsec instances of the host's namespace, which other programs may own \
         (testbed_pair/macsec_tap.rs runs it in a testbed)",
    ),
    (
        "macsec down",
        "stops the MACsec instances of the host's namespace, which other programs may own \
         (testbed_pair/macsec_tap.rs runs it in a testbed)",
    ),
    // A testbed an earlier command printed the prefix of.
    (
        "ivn-3fa9c1",
        "the prefix an earlier `testbed up` printed, different every time",
    ),
    (
        "ivn-0377cf",
        "the prefix an earlier `testbed up` printed, different every time",
    ),
    // The system, not a directory of its own.
    ("/etc/", "the system's configuration files (/etc)"),
    ("~/", "the user's home"),
    ("/usr/share/", "the installed package's files"),
    ("apt ", "installs a package"),
    ("systemctl", "starts a systemd service"),
    ("sudoedit", "an interactive editor"),
    ("man -l", "opens a manual page in a pager"),
    // The project's own jobs, minutes long, run by CI itself.
    ("bash scripts/", "a project script that CI runs itself"),
    ("cargo build", "a release build of the workspace"),
    // Other programs on captures made elsewhere.
    ("tshark", "reads a capture with Wireshark's tshark"),
    ("editcap", "converts a capture made elsewhere"),
    ("tcpdump", "captures on a real interface"),
    (
        "someip call",
        "calls a SOME/IP service found by SD on the vehicle network (cli/someip.rs runs \
         serve and call on loopback)",
    ),
];

/// Commands that run until stopped or for long: started, checked to get past their start.
const LONG: &[&str] = &[
    "ivnsec pingpong",
    "ivnsec throughput",
    "ivnsec camera",
    "ivnsec underload",
    "ivnsec playback",
    "ivnsec run ",
    "ivnsec validate",
    "ivnsec attack",
    "ivnsec tdma run",
    "ivnsec crypto-bench",
    "ivnsec tls-bench",
    "ivnsec someip serve",
    "ivnsec keyserver",
    "ivnsec macsec up",
    "ivnsec esp up",
    "ivnsec gateway",
    "ivnsec testbed up",
    "ivnsec receive",
    "ivnsec send",
    "ivnsec-underload ",
    "ivnsec underload",
];

/// Commands that need root (also when their example gives no `sudo`).
const ROOT: &[&str] = &[
    "sudo ",
    "ivnsec testbed",
    "ivnsec attack",
    "ivnsec tdma run",
    "ivnsec macsec up",
    "ivnsec esp up",
    "ivnsec gateway",
    "ip netns",
];

/// One example: a command line, or a whole script.
#[derive(Debug, Clone)]
struct Example {
    script: String,
    /// A transcript's expected output (its lines that are no command).
    expect: Option<String>,
}

/// The examples of one source, run in order in one directory.
#[derive(Debug, Clone)]
struct Source {
    name: String,
    examples: Vec<Example>,
}

/// Lines joined across `\` line ends, with comment-only lines dropped.
fn commands(lines: &[&str]) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    for l in lines {
        let t = l.trim();
        if cur.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(head) = t.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
        } else {
            cur.push_str(t);
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

fn is_example_head(l: &str) -> bool {
    !l.starts_with(' ') && l.contains("Example") && l.trim_end().ends_with(':')
}

/// The examples of one help text.
fn help_examples(h: &str) -> Vec<String> {
    let lines: Vec<&str> = h.lines().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < lines.len() {
        if is_example_head(lines[i]) {
            let mut block = vec![];
            i += 1;
            while i < lines.len() {
                let l = lines[i];
                if l.starts_with("  ") {
                    block.push(l);
                } else if !l.trim().is_empty() && l.trim_end().ends_with(':') {
                    // A sub-heading of the same paragraph (crypto-bench, tls-bench).
                } else {
                    break;
                }
                i += 1;
            }
            out.extend(commands(&block));
            continue;
        }
        // Inline examples in option texts: `Example: ivnsec …` or ``Example: `ivnsec …` ``.
        for part in lines[i].split("Example: ").skip(1) {
            let part = part.trim_start_matches('`');
            let cmd = part.split('`').next().unwrap_or_default();
            let cmd = cmd.trim_end_matches(['.', ' ']);
            let first = cmd.trim_start_matches("sudo ");
            if first.starts_with("ivnsec ") && !cmd.contains('…') {
                // Inline examples that continue as prose after the command (no backticks)
                // end at the sentence.
                out.push(cmd.split(", then ").next().unwrap_or(cmd).to_string());
            }
        }
        i += 1;
    }
    out
}

/// Every help text's examples, one source per command.
fn help_sources() -> Vec<Source> {
    let mut sources = vec![];
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let h = help(&path);
        for s in subcommands(&h) {
            let mut p = path.clone();
            p.push(s);
            todo.push(p);
        }
        let name = if path.is_empty() {
            "--help of ivnsec".to_string()
        } else {
            format!("--help of {}", path.join(" "))
        };
        let examples: Vec<Example> = help_examples(&h)
            .into_iter()
            .map(|script| Example {
                script,
                expect: None,
            })
            .collect();
        if !examples.is_empty() {
            sources.push(Source { name, examples });
        }
    }
    sources
}

/// The fenced `sh` blocks of README.md and docs/*.md, and the blocks marked not to run with
/// their reasons.
fn doc_sources() -> (Vec<Source>, Vec<(String, String)>) {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut sources = vec![];
    let mut not_run = vec![];
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let body = std::fs::read_to_string(&f).unwrap();
        let lines: Vec<&str> = body.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            if lines[i].trim_end() != "```sh" {
                i += 1;
                continue;
            }
            let name = format!("{rel}:{}", i + 1);
            let marker = i
                .checked_sub(1)
                .and_then(|j| lines[j].trim().strip_prefix("<!-- no-run:"))
                .and_then(|m| m.strip_suffix("-->"))
                .map(|m| m.trim().to_string());
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && !lines[end].starts_with("```") {
                end += 1;
            }
            let block = &lines[start..end];
            i = end + 1;
            if let Some(reason) = marker {
                assert!(
                    !reason.is_empty(),
                    "{name}: a no-run marker without a reason"
                );
                not_run.push((name, reason));
                continue;
            }
            sources.push(Source {
                name: name.clone(),
                examples: block_examples(block),
            });
        }
    }
    (sources, not_run)
}

fn block_examples(block: &[&str]) -> Vec<Example> {
    let one = |script: String, expect: Option<String>| Example { script, expect };
    if block.iter().any(|l| l.starts_with("$ ")) {
        // A transcript: `$ ` lines (and the lines their `\` continues) are commands.
        let (mut script, mut expect) = (String::new(), String::new());
        let mut continued = false;
        for l in block {
            if let Some(c) = l.strip_prefix("$ ") {
                script.push_str(c);
                script.push('\n');
                continued = c.ends_with('\\');
            } else if continued {
                script.push_str(l);
                script.push('\n');
                continued = l.ends_with('\\');
            } else {
                expect.push_str(l.trim_end());
                expect.push('\n');
            }
        }
        return vec![one(script, Some(expect))];
    }
    let whole = block
        .iter()
        .any(|l| l.contains("<<") || l.trim_start().starts_with("for ") || l.starts_with('('));
    if whole {
        return vec![one(format!("set -e\n{}\n", block.join("\n")), None)];
    }
    commands(block).into_iter().map(|c| one(c, None)).collect()
}

fn why_skipped(script: &str, root: bool) -> Option<String> {
    if let Some((_, why)) = SKIP.iter().find(|(p, _)| script.contains(p)) {
        return Some(why.to_string());
    }
    if !root && ROOT.iter().any(|p| script.contains(p)) {
        return Some("needs root (CI runs as root)".into());
    }
    None
}

fn is_long(script: &str) -> bool {
    LONG.iter().any(|p| script.contains(p))
}

/// `NAME=value` (a shell variable set for the examples after it).
fn is_assignment(script: &str) -> bool {
    script.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// Experiments: they end with verdicts on the machine they ran on.
fn is_experiment(script: &str) -> bool {
    [
        "pingpong",
        "throughput",
        "camera",
        "underload",
        "playback",
        "ivnsec run ",
        "validate",
        "attack",
        "tdma run",
    ]
    .iter()
    .any(|p| script.contains(p))
}

fn is_root() -> bool {
    common::skip_reason().is_none()
}

/// The value after `--flag` in a command line.
fn option<'a>(cmd: &'a str, flag: &str) -> Option<&'a str> {
    let mut it = cmd.split_whitespace();
    while let Some(w) = it.next() {
        if w == flag {
            return it.next();
        }
    }
    None
}

const FLOWS: &str = "[[flow]]\nname = \"steer\"\nfrom = \"ecu1\"\nto = \"ecu2\"\npayload = 32\n\
                     [[flow]]\nname = \"brake\"\nfrom = \"ecu2\"\nto = \"ecu1\"\npayload = 32\n\
                     period = 2\n";
const SEGMENTS: &str = "[[segment]]\nname = \"chassis\"\necus = [\"brake1\", \"steering\"]\n";
const SOMEIP: &str = "[node]\naddress = \"127.0.0.1\"\nudp_port = 0\ntcp_port = 0\n\
                      [[service]]\nid = 0x1234\nlevel = \"conf\"\nsuite = \"aes128-gcm\"\n\
                      key = \"000102030405060708090a0b0c0d0e0f\"\nsalt = \"01020304\"\n\
                      echo_method = 1\n";

fn ivnsec_ok(dir: &Path, args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// What the source's examples name, made in `dir`.
fn prepare(dir: &Path, src: &Source) {
    let all: String = src
        .examples
        .iter()
        .map(|e| e.script.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let root = repo();
    for d in ["plans", "contrib"] {
        std::os::unix::fs::symlink(root.join(d), dir.join(d)).unwrap();
    }
    std::fs::create_dir_all(dir.join("target/release")).unwrap();
    std::os::unix::fs::symlink(BIN, dir.join("target/release/ivnsec")).unwrap();
    std::fs::copy(root.join("plans/quick.toml"), dir.join("my-plan.toml")).unwrap();
    std::fs::write(dir.join("flows.toml"), FLOWS).unwrap();
    std::fs::write(dir.join("segments.toml"), SEGMENTS).unwrap();
    std::fs::write(dir.join("server.toml"), SOMEIP).unwrap();
    std::fs::write(dir.join("client.toml"), SOMEIP).unwrap();
    if (all.contains("--dir pki") || all.contains("--pki pki")) && !all.contains("pki init") {
        ivnsec_ok(
            dir,
            &[
                "pki",
                "init",
                "--dir",
                "pki",
                "--vehicle",
                "WVWZZZ1JZXW000001",
            ],
        );
        ivnsec_ok(dir, &["pki", "issue", "--dir", "pki", "--ecu", "keyserver"]);
        if all.contains("revoke") {
            ivnsec_ok(dir, &["pki", "issue", "--dir", "pki", "--ecu", "brake1"]);
        }
    }
    {
        // Two frames under the help's key and the all-zero IV; the second capture ends inside
        // its last record, as a killed writer leaves it.
        let key = "000102030405060708090a0b0c0d0e0f";
        let frames: Vec<Vec<u8>> = (1..=2)
            .map(|seq| {
                let out = ivnsec_ok(
                    dir,
                    &[
                        "frame",
                        "protect",
                        "--profile",
                        "aes128-gcm",
                        "--key",
                        key,
                        "--iv",
                        "000000000000000000000000",
                        "--seq",
                        &seq.to_string(),
                        "020000000002020000000001080045000014",
                    ],
                );
                hex::decode(out.trim()).unwrap()
            })
            .collect();
        let whole = pcap(&frames);
        std::fs::write(dir.join("capture.pcap"), &whole).unwrap();
        std::fs::write(dir.join("killed-sender.pcap"), &whole[..whole.len() - 5]).unwrap();
    }
    // A schedule of the flows above, for examples that read one they did not write.
    if all.contains("s.json") && !all.contains("> s.json") {
        let s = ivnsec_ok(
            dir,
            &[
                "tdma",
                "schedule",
                "--bp",
                "10ms",
                "--gp",
                "0.2ms",
                "--flows",
                "flows.toml",
                "--topology",
                "cascade:2",
                "--profile",
                "hmac-sha1",
                "--json",
            ],
        );
        std::fs::write(dir.join("s.json"), s).unwrap();
    }
    // Key files the examples read, of the profile they give.
    for e in &src.examples {
        for cmd in e.script.lines() {
            let profile = option(cmd, "--profile");
            for flag in ["--keys", "--tx-keys", "--rx-keys", "--psk"] {
                let Some(file) = option(cmd, flag) else {
                    continue;
                };
                let file = file.rsplit(':').next().unwrap();
                if dir.join(file).exists() || all.contains(&format!("--out {file}")) {
                    continue;
                }
                let args: Vec<&str> = match (flag, profile) {
                    ("--psk", _) => vec!["keygen", "--mka", "--out", file],
                    (_, Some(p)) => vec!["keygen", "--profile", p, "--out", file],
                    _ => continue,
                };
                ivnsec_ok(dir, &args);
            }
        }
    }
}

/// A directory on PATH with `sudo` that runs its command as it is.
fn sudo_shim(d: &TempDir) -> PathBuf {
    let bin = d.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let sudo = bin.join("sudo");
    std::fs::write(&sudo, "#!/bin/sh\nexec \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&sudo, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// An example's script and how it went (`Ok`: how it passed or why it was skipped).
type Outcome = (String, Result<String, String>);

/// Examples that use a fixed local port run one at a time.
static FIXED_PORT: Mutex<()> = Mutex::new(());

fn signal_group(pgid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args(["-s", sig, "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// Runs one example; `Err` says how it failed.
fn run_example(e: &Example, dir: &Path, path: &str, state: &Path) -> Result<&'static str, String> {
    let long = is_long(&e.script) && e.expect.is_none();
    let _port = (long && e.script.contains("127.0.0.1:") && !e.script.contains("127.0.0.1:0"))
        .then(|| FIXED_PORT.lock().unwrap_or_else(|p| p.into_inner()));
    // A transcript shows stdout and stderr as a terminal does: one file, in the order written.
    let out = std::fs::File::create(dir.join(".example-output")).unwrap();
    let err = if e.expect.is_some() {
        out.try_clone().unwrap()
    } else {
        std::fs::File::create(dir.join(".example-stderr")).unwrap()
    };
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(&e.script)
        .current_dir(dir)
        .env("PATH", path)
        .env("IVNSEC_STATE_DIR", state)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = c.spawn().map_err(|err| format!("spawn bash: {err}"))?;
    let started = Instant::now();
    let limit = if long { GRACE } else { SHORT_LIMIT };
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break Some(st);
        }
        if started.elapsed() >= limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |name: &str| {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(dir.join(name)) {
            let _ = f.read_to_string(&mut s);
        }
        s
    };
    let Some(status) = status else {
        // Still running: past its start (long) or too slow (short).
        signal_group(child.id(), "INT");
        let stop = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if stop.elapsed() >= STOP_LIMIT {
                signal_group(child.id(), "KILL");
                let _ = child.wait();
                return Err(format!(
                    "did not stop within {STOP_LIMIT:?} of SIGINT: {}",
                    read(".example-stderr")
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // What it left behind (a pipeline's other end) goes with its group.
        signal_group(child.id(), "KILL");
        return if long {
            Ok("started")
        } else {
            Err(format!(
                "still running after {SHORT_LIMIT:?}: {}",
                read(".example-stderr")
            ))
        };
    };
    signal_group(child.id(), "KILL");
    let (out, err) = (read(".example-output"), read(".example-stderr"));
    if let Some(want) = &e.expect {
        let got: String = out.lines().map(|l| format!("{}\n", l.trim_end())).collect();
        return if got.trim_end() == want.trim_end() {
            Ok("output as shown")
        } else {
            Err(format!("printed\n{got}\nbut the transcript shows\n{want}"))
        };
    }
    if status.success() {
        Ok(if long { "finished" } else { "ok" })
    } else if long && status.code() == Some(1) && is_experiment(&e.script) {
        // An experiment that ran to its end and judged this machine: a failed verdict (exit 1)
        // is the measurement of a shared test host, not a broken example.
        Ok("finished (a verdict failed on this host)")
    } else {
        Err(format!("exit {:?}: {err}{out}", status.code()))
    }
}

#[test]
fn every_example_of_the_help_and_the_docs_runs() {
    let root = is_root();
    let d = TempDir::new("examples");
    let shim = sudo_shim(&d);
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        bin_dir.display(),
        shim.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut sources = help_sources();
    let (docs, not_run) = doc_sources();
    sources.extend(docs);
    assert!(
        sources.iter().any(|s| s.name == "--help of tdma schedule"),
        "the help walk found the leaf commands"
    );

    let queue = Mutex::new(sources.clone());
    let results: Mutex<BTreeMap<String, Vec<Outcome>>> = Mutex::new(BTreeMap::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| {
                loop {
                    let Some(src) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let dir = d.path(&format!(
                        "src-{}",
                        src.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                    ));
                    std::fs::create_dir_all(&dir).unwrap();
                    prepare(&dir, &src);
                    // A testbed state directory of its own: `testbed down --all` of one
                    // source's example must not remove another's testbed.
                    let state = dir.join("state");
                    std::fs::create_dir_all(&state).unwrap();
                    let mut rows = vec![];
                    // Shell variables an example sets (`K=…`, `F1=$(…)`) stay set for the
                    // examples after it, as in the user's shell.
                    let mut prelude = String::new();
                    for e in &src.examples {
                        let r = match why_skipped(&e.script, root) {
                            Some(why) => Ok(format!("skipped: {why}")),
                            None => {
                                let mut run = e.clone();
                                run.script = format!("{prelude}{}", e.script);
                                run_example(&run, &dir, &path, &state).map(String::from)
                            }
                        };
                        if r.as_ref().is_ok_and(|how| !how.starts_with("skipped"))
                            && is_assignment(&e.script)
                        {
                            prelude.push_str(&e.script);
                            prelude.push('\n');
                        }
                        rows.push((e.script.clone(), r));
                    }
                    // Whatever an interrupted example left (it should have removed it).
                    let _ = Command::new(BIN)
                        .args(["testbed", "down", "--all"])
                        .env("IVNSEC_STATE_DIR", &state)
                        .output();
                    results.lock().unwrap().insert(src.name.clone(), rows);
                }
            });
        }
    });

    let results = results.into_inner().unwrap();
    let mut report = String::new();
    let mut failures = vec![];
    let (mut ran, mut skipped) = (0, 0);
    for (src, rows) in &results {
        for (script, r) in rows {
            let first = script
                .lines()
                .find(|l| !l.starts_with("set -e"))
                .unwrap_or("");
            match r {
                Ok(how) if how.starts_with("skipped") => {
                    skipped += 1;
                    report.push_str(&format!("{src}: {how}: {first}\n"));
                }
                Ok(how) => {
                    ran += 1;
                    report.push_str(&format!("{src}: {how}: {first}\n"));
                }
                Err(why) => failures.push(format!("{src}: `{script}`\n  {why}")),
            }
        }
    }
    for (name, why) in &not_run {
        report.push_str(&format!("{name}: not run (marked): {why}\n"));
    }
    eprintln!(
        "{report}{ran} examples ran, {skipped} skipped, {} blocks marked no-run, {} failed, in {:?}",
        not_run.len(),
        failures.len(),
        started.elapsed()
    );
    assert!(ran > 50, "the examples were found ({ran} ran)");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
