//! Every command that takes `--json` prints exactly one JSON document on stdout, whatever the
//! processes it starts print (issue 22: `throughput --json` once ended in three stray lines).
//!
//! The commands are found by walking the clap tree (`--help` of every subcommand), and the list
//! must match the one this file runs, so a new `--json` command without a run here fails. Each
//! runs in a cheap configuration with `PATH` leading to wrappers of the programs ivnsec starts
//! (`ip`, `iperf3`, `sockperf`, `openssl`): each wrapper writes stray lines straight into its
//! parent's standard output (`/proc/$PPID/fd/1`, whatever its own stdout is) and then runs the
//! real program. Stdout must still parse as one document with nothing after it, and the stray
//! lines must show up on stderr (so the wrappers did run). Commands that need namespaces run
//! as root only (skipped with the reason otherwise).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use crate::common::{BIN, TempDir, text};

/// The commands with `--json` and the test of this file that runs each.
const COVERED: &[(&str, &str)] = &[
    ("attack", "root"),
    ("camera", "loopback"),
    ("clock check", "offline"),
    ("crypto-bench", "offline"),
    ("gateway", "root"),
    ("hosts check", "offline"),
    ("macsec status", "root"),
    ("macsec up", "root"),
    ("pcap verify", "offline"),
    ("pingpong", "loopback"),
    ("pki list", "offline"),
    ("playback", "loopback"),
    ("receive", "loopback"),
    ("send", "loopback"),
    ("someip call", "loopback"),
    ("someip serve", "loopback"),
    ("suites", "offline"),
    ("tdma capacity", "offline"),
    ("tdma run", "root"),
    ("tdma schedule", "offline"),
    ("testbed down", "root"),
    ("testbed status", "root"),
    ("testbed up", "root"),
    ("throughput", "loopback"),
    ("tls-bench", "offline"),
    ("underload", "loopback"),
];

/// What the wrappers write into their parent's stdout (the tail of a pretty-printed document,
/// as seen in issue 22) and the line that says which wrapper wrote it.
const STRAY: &str = "  }\n  }\n}\n";
const MARK: &str = "stray output of";

fn help(path: &[String]) -> String {
    let o = Command::new(BIN).args(path).arg("--help").output().unwrap();
    assert!(o.status.success(), "{path:?} --help: {}", text(&o.stderr));
    text(&o.stdout)
}

/// The subcommands listed under `Commands:` of a help text (`help` left out).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// Every command path (`testbed up`) whose help offers `--json`.
fn json_commands(path: &mut Vec<String>, found: &mut BTreeSet<String>) {
    let h = help(path);
    if h.lines().any(|l| l.trim_start().starts_with("--json")) {
        found.insert(path.join(" "));
    }
    for c in subcommands(&h) {
        path.push(c);
        json_commands(path, found);
        path.pop();
    }
}

#[test]
fn every_json_command_is_run_here() {
    let mut found = BTreeSet::new();
    json_commands(&mut Vec::new(), &mut found);
    let covered: BTreeSet<String> = COVERED.iter().map(|(c, _)| c.to_string()).collect();
    assert_eq!(
        found, covered,
        "commands with --json (left) vs run here (right)"
    );
}

/// A directory of wrappers and the `PATH` that puts it first.
struct Stray {
    _dir: TempDir,
    path: OsString,
    /// The programs wrapped (those installed here).
    wrapped: Vec<&'static str>,
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

impl Stray {
    fn new() -> Stray {
        let dir = TempDir::new("json-stray");
        let bin = dir.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let mut wrapped = Vec::new();
        for program in ["ip", "iperf3", "sockperf", "openssl"] {
            let Some(real) = which(program) else {
                continue;
            };
            let script = format!(
                "#!/bin/sh\nprintf '{}{MARK} {program}\\n' >/proc/$PPID/fd/1 2>/dev/null\nexec {} \"$@\"\n",
                STRAY.replace('\n', "\\n"),
                real.display()
            );
            let p = bin.join(program);
            std::fs::write(&p, script).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            wrapped.push(program);
        }
        let mut paths = vec![bin];
        paths.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        Stray {
            _dir: dir,
            path: std::env::join_paths(paths).unwrap(),
            wrapped,
        }
    }

    /// `ivnsec ARGS` with the wrappers first on PATH and `d`'s testbed state.
    fn cmd(&self, d: &TempDir, args: &[&str]) -> Command {
        let mut c = d.cmd();
        c.args(args).env("PATH", &self.path);
        c
    }

    fn run(&self, d: &TempDir, args: &[&str]) -> Output {
        self.cmd(d, args).output().expect("run ivnsec")
    }
}

/// Stdout of `what` as exactly one JSON document (serde_json refuses anything after it but
/// whitespace), ending in one newline; `codes` are the exit codes it may have.
fn one_document(what: &str, o: &Output, codes: &[i32]) -> Value {
    let out = text(&o.stdout);
    let err = text(&o.stderr);
    let code = o.status.code().unwrap_or(-1);
    assert!(
        codes.contains(&code),
        "{what}: exit {code}\nstderr: {err}\nstdout: {out}"
    );
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{what}: stdout is not one JSON document: {e}\n{out}"));
    assert!(v.is_object() || v.is_array(), "{what}: {v}");
    assert!(
        out.ends_with("}\n") || out.ends_with("]\n"),
        "{what}: `{out}`"
    );
    v
}

/// The wrapper of `program`, if it is installed, ran and its stray lines went to stderr.
fn strayed(s: &Stray, what: &str, stderr: &str, program: &str) {
    if s.wrapped.contains(&program) {
        assert!(
            stderr.contains(&format!("{MARK} {program}")),
            "{what}: the {program} wrapper did not run: {stderr}"
        );
    }
}

fn write(d: &TempDir, name: &str, body: &str) -> String {
    let p = d.path(name);
    std::fs::write(&p, body).unwrap();
    p.to_str().unwrap().to_string()
}

/// A classic pcap (microsecond magic, Ethernet) of `frames`, written byte by byte from the
/// format's definition.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65535, 1] {
        f.extend_from_slice(&v.to_le_bytes());
    }
    for (i, fr) in frames.iter().enumerate() {
        for v in [
            1_700_000_000 + i as u32,
            0,
            fr.len() as u32,
            fr.len() as u32,
        ] {
            f.extend_from_slice(&v.to_le_bytes());
        }
        f.extend_from_slice(fr);
    }
    f
}

const KEY: &str = "000102030405060708090a0b0c0d0e0f";

const TWO_FLOWS: &str = r#"
[[flow]]
name = "steer"
from = "ecu1"
to = "ecu2"
frame_bytes = 100

[[flow]]
name = "brake"
from = "ecu2"
to = "ecu1"
frame_bytes = 100
"#;

#[test]
fn offline_commands_print_one_document() {
    let s = Stray::new();
    let d = TempDir::new("json-offline");

    let v = one_document("suites", &s.run(&d, &["suites", "--json"]), &[0]);
    assert!(v["profiles"].as_array().is_some_and(|p| !p.is_empty()));

    // clock check: this host, asked on a socket where no ptp4l listens (exit 1; 3 without pmc).
    let uds = d.path("no-ptp4l.sock");
    let args = [
        "clock",
        "check",
        "--local",
        "--uds",
        uds.to_str().unwrap(),
        "--json",
    ];
    let v = one_document("clock check", &s.run(&d, &args), &[1, 3]);
    assert_eq!(v["hosts"][0]["host"], "local", "{v}");

    // pcap verify: two frames `frame protect` made, the second replayed.
    let o = s.run(
        &d,
        &[
            "frame",
            "protect",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "--seq",
            "1",
            "020000000002020000000001080045000014",
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let frame = hex::decode(text(&o.stdout).trim()).unwrap();
    let cap = d.path("two.pcap");
    std::fs::write(&cap, pcap(&[frame.clone(), frame])).unwrap();
    let args = [
        "pcap",
        "verify",
        "--profile",
        "aes128-gcm",
        "--key",
        KEY,
        "--json",
        cap.to_str().unwrap(),
    ];
    let v = one_document("pcap verify", &s.run(&d, &args), &[1]);
    assert_eq!(v["counters"]["ok"], 1, "{v}");

    // crypto-bench, against `openssl speed` when OpenSSL is installed (a process it starts).
    let mut args = vec![
        "crypto-bench",
        "--quick",
        "--batches",
        "2",
        "--provider",
        "fast",
        "--suite",
        "hmac-sha256",
        "--sizes",
        "64",
        "--json",
    ];
    if s.wrapped.contains(&"openssl") {
        args.push("--vs-openssl");
    }
    let o = s.run(&d, &args);
    let v = one_document("crypto-bench", &o, &[0]);
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
    strayed(&s, "crypto-bench", &text(&o.stderr), "openssl");

    // pki list: a PKI of two certificates, one revoked.
    let pki = d.path("pki");
    let pki = pki.to_str().unwrap();
    for args in [
        &[
            "pki",
            "init",
            "--dir",
            pki,
            "--vehicle",
            "WVWZZZ1JZXW000001",
        ][..],
        &["pki", "issue", "--dir", pki, "--ecu", "ecu1"],
        &["pki", "issue", "--dir", pki, "--ecu", "ecu2"],
        &["pki", "revoke", "--dir", pki, "--ecu", "ecu2"],
    ] {
        let o = s.run(&d, args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    }
    let v = one_document(
        "pki list",
        &s.run(&d, &["pki", "list", "--dir", pki, "--json"]),
        &[0],
    );
    assert_eq!(v["ecus"][1]["status"], "revoked", "{v}");

    // tls-bench, against OpenSSL s_server + s_time when installed (processes it starts).
    let mut args = vec![
        "tls-bench",
        "--algo",
        "ecdsa-p256",
        "--seconds",
        "1",
        "--concurrency",
        "1",
        "--dhe",
        "off",
        "--json",
    ];
    if !s.wrapped.contains(&"openssl") {
        args.extend(["--openssl", "off"]);
    }
    let o = s.run(&d, &args);
    let v = one_document("tls-bench", &o, &[0]);
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "{v}");
    strayed(&s, "tls-bench", &text(&o.stderr), "openssl");

    let args = [
        "tdma", "capacity", "--bp", "10ms", "--gp", "0.2ms", "--rate", "100M", "--frame", "60",
        "--json",
    ];
    one_document("tdma capacity", &s.run(&d, &args), &[0]);

    // hosts check of a host whose SSH port refuses (nothing listens on port 1 of loopback):
    // the finding in the document, exit 3.
    let plan = write(
        &d,
        "hosts.toml",
        "[[host]]\nname = \"nobody\"\nssh = \"root@127.0.0.1\"\niface = \"lo\"\n\
         ssh_options = [\"-o\", \"Port=1\"]\n",
    );
    let v = one_document(
        "hosts check",
        &s.run(&d, &["hosts", "check", &plan, "--json"]),
        &[3],
    );
    assert_eq!(v["ready"], false, "{v}");
    assert_eq!(v["hosts"][0]["checks"][0]["what"], "ssh", "{v}");
    assert_eq!(v["hosts"][0]["checks"][0]["status"], "missing", "{v}");

    let flows = write(&d, "flows.toml", TWO_FLOWS);
    for (bp, code) in [("10ms", 0), ("0.5ms", 1)] {
        let args = [
            "tdma",
            "schedule",
            "--bp",
            bp,
            "--gp",
            "0.2ms",
            "--flows",
            &flows,
            "--topology",
            "cascade:2",
            "--json",
        ];
        let v = one_document("tdma schedule", &s.run(&d, &args), &[code]);
        assert_eq!(v["fits"], code == 0, "{v}");
    }
}

/// A child SIGKILLed if still running when dropped.
struct Proc(Option<Child>);

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Proc {
    /// Spawns `c` with piped stdout and stderr and reads stderr up to a line containing
    /// `ready`; returns the process, that line, and what stderr said before it.
    fn start(mut c: Command, ready: &str) -> (Proc, String, String) {
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut p = Proc(Some(child));
        let mut seen = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            if err.read_line(&mut line).unwrap() == 0 {
                let o = p.0.take().unwrap().wait_with_output().unwrap();
                panic!("ended before `{ready}`: {seen}{}", text(&o.stdout));
            }
            if line.contains(ready) {
                break;
            }
            seen.push_str(&line);
        }
        // Keep draining stderr, so the process never blocks on it.
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
        });
        (p, line.trim().to_string(), seen)
    }

    /// Waits for the end (after SIGTERM when `stop`) and returns the exit code and stdout.
    fn finish(mut self, stop: bool) -> (i32, String) {
        let mut c = self.0.take().unwrap();
        if stop {
            ivnsec_net::sys::signal_process(c.id(), false).unwrap();
        }
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        (c.wait().unwrap().code().unwrap_or(-1), out)
    }
}

/// `one_document` for a process read by [`Proc::finish`].
fn one_document_of(what: &str, (code, out): (i32, String), codes: &[i32]) -> Value {
    assert!(codes.contains(&code), "{what}: exit {code}: {out}");
    let v: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{what}: stdout is not one JSON document: {e}\n{out}"));
    assert!(
        out.ends_with("}\n") || out.ends_with("]\n"),
        "{what}: `{out}`"
    );
    v
}

#[test]
fn loopback_commands_print_one_document() {
    let s = Stray::new();
    let d = TempDir::new("json-lo");
    let lo = ["--on", "loopback"];

    let o = s.run(
        &d,
        &[
            &["pingpong"][..],
            &lo,
            &[
                "--profile",
                "aes128-gcm",
                "--payload",
                "64",
                "--count",
                "20",
            ],
            &["--replications", "1", "--json"],
        ]
        .concat(),
    );
    one_document("pingpong", &o, &[0, 1]);

    // With its baselines: the plain run and iperf3 (a process it starts, when installed).
    let o = s.run(
        &d,
        &[
            &["throughput"][..],
            &lo,
            &[
                "--profile",
                "aes128-gcm",
                "--payload",
                "1000",
                "--seconds",
                "0.5",
            ],
            &["--rate", "100M", "--json"],
        ]
        .concat(),
    );
    one_document("throughput", &o, &[0]);
    strayed(&s, "throughput", &text(&o.stderr), "iperf3");

    let o = s.run(
        &d,
        &[
            &["camera"][..],
            &lo,
            &["--cameras", "1", "--level", "nosec", "--seconds", "1"],
            &["--frame-bytes", "5000", "--json"],
        ]
        .concat(),
    );
    one_document("camera", &o, &[0, 1]);

    // With the sockperf baseline (a process it starts, when installed).
    let o = s.run(
        &d,
        &[
            &["underload"][..],
            &lo,
            &["--profile", "aes128-gcm", "--size", "3000", "--mps", "100"],
            &["--seconds", "1", "--json"],
        ]
        .concat(),
    );
    one_document("underload", &o, &[0, 1]);
    strayed(&s, "underload", &text(&o.stderr), "sockperf");

    let mut t = String::from("# timeline\n");
    for i in 1..=30 {
        t.push_str(&format!("{:.6}, {}\n", i as f64 * 0.005, [14, 2000][i % 2]));
    }
    let csv = write(&d, "t.csv", &t);
    let o = s.run(
        &d,
        &[
            &["playback"][..],
            &lo,
            &["--profile", "aes128-gcm", "--timeline", &csv, "--json"],
        ]
        .concat(),
    );
    one_document("playback", &o, &[0, 1]);
    strayed(&s, "playback", &text(&o.stderr), "sockperf");

    // someip: a server for 3 s, one call to it.
    let services = "[[service]]\nid = 0x1236\nlevel = \"nosec\"\necho_method = 1\n";
    let server = write(
        &d,
        "server.toml",
        &format!(
            "[node]\naddress = \"127.0.0.1\"\nudp_port = 0\ntcp_port = 0\n[sd]\nenabled = false\n{services}"
        ),
    );
    let client = write(
        &d,
        "client.toml",
        &format!("[node]\naddress = \"127.0.0.1\"\n[sd]\nenabled = false\n{services}"),
    );
    let (srv, line, _) = Proc::start(
        s.cmd(
            &d,
            &[
                "someip",
                "serve",
                "--config",
                &server,
                "--duration",
                "3",
                "--json",
            ],
        ),
        "ivnsec someip serve: udp ",
    );
    let udp = line["ivnsec someip serve: udp ".len()..]
        .split([',', ';'])
        .next()
        .unwrap()
        .trim()
        .to_string();
    let o = s.run(
        &d,
        &[
            "someip",
            "call",
            "--config",
            &client,
            "--service",
            "0x1236",
            "--method",
            "1",
            "--endpoint",
            &udp,
            "--count",
            "2",
            "--json",
        ],
    );
    let v = one_document("someip call", &o, &[0]);
    assert_eq!(v["ok"], 2, "{v}");
    let v = one_document_of("someip serve", srv.finish(false), &[0]);
    assert_eq!(v["answered"], 2, "{v}");

    // send → receive over UDP under a fresh key file.
    let keys = d.path("k.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let keys = keys.to_str().unwrap();
    let (rx, line, _) = Proc::start(
        s.cmd(
            &d,
            &[
                "receive",
                "--profile",
                "aes128-gcm",
                "--keys",
                keys,
                "--udp",
                "127.0.0.1:0",
                "--count",
                "5",
                "--seconds",
                "10",
                "--json",
            ],
        ),
        "listening on",
    );
    let addr = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap()
        .trim_end_matches([',', ';'])
        .to_string();
    let state = d.path("nonce-state");
    let o = s.run(
        &d,
        &[
            "send",
            "--profile",
            "aes128-gcm",
            "--keys",
            keys,
            "--udp",
            &addr,
            "--state-dir",
            state.to_str().unwrap(),
            "--count",
            "5",
            "--json",
        ],
    );
    let v = one_document("send", &o, &[0]);
    assert_eq!(v["sent"], 5, "{v}");
    let v = one_document_of("receive", rx.finish(false), &[0]);
    assert_eq!(v["accepted"], 5, "{v}");
}

/// `ip ARGS`, checked.
fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
}

/// A namespace of this test's own with a veth pair inside; deleted on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn root_commands_print_one_document() {
    require_root!();
    let s = Stray::new();
    let d = TempDir::new("json-root");

    // testbed up / status / down (every one runs `ip`).
    let o = s.run(&d, &["testbed", "up", "--topology", "pair", "--json"]);
    let v = one_document("testbed up", &o, &[0]);
    strayed(&s, "testbed up", &text(&o.stderr), "ip");
    let prefix = v["prefix"].as_str().unwrap().to_string();
    let o = s.run(&d, &["testbed", "status", "--json"]);
    let v = one_document("testbed status", &o, &[0]);
    assert_eq!(v["testbeds"].as_array().map(Vec::len), Some(1), "{v}");
    let o = s.run(&d, &["testbed", "down", "--testbed", &prefix, "--json"]);
    one_document("testbed down", &o, &[0]);
    strayed(&s, "testbed down", &text(&o.stderr), "ip");

    // attack: one class on one profile, on a testbed of its own.
    let o = s.run(
        &d,
        &[
            "attack",
            "--profile",
            "aes128-gcm",
            "--attack",
            "replay-w1",
            "--count",
            "20",
            "--json",
        ],
    );
    one_document("attack", &o, &[0]);
    strayed(&s, "attack", &text(&o.stderr), "ip");

    // tdma run: a few base periods on cascade:2.
    let flows = write(&d, "flows.toml", TWO_FLOWS);
    let o = s.run(
        &d,
        &[
            "tdma",
            "run",
            "--flows",
            &flows,
            "--bp",
            "10ms",
            "--gp",
            "1ms",
            "--topology",
            "cascade:2",
            "--profile",
            "hmac-sha256",
            "--periods",
            "5",
            "--json",
        ],
    );
    one_document("tdma run", &o, &[0, 1]);
    strayed(&s, "tdma run", &text(&o.stderr), "ip");

    // macsec up / status on a veth end in a namespace of this test's own.
    let prefix = ivnsec_net::testbed::random_prefix().unwrap();
    let ns = Netns(format!("{prefix}-json"));
    ip(&["netns", "add", &ns.0]);
    let (va, vb) = (format!("{prefix}ja"), format!("{prefix}jb"));
    ip(&[
        "-n", &ns.0, "link", "add", &va, "type", "veth", "peer", "name", &vb,
    ]);
    for v in [&va, &vb] {
        ip(&["-n", &ns.0, "link", "set", v, "up"]);
    }
    let keys = d.path("m.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "macsec-gcm-aes-128",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run_dir = d.path("run");
    let exec = |args: &[&str]| {
        // The real ip: a wrapper started from here would write into this test's stdout.
        let mut c = Command::new(which("ip").unwrap());
        c.args(["netns", "exec", &ns.0, BIN])
            .args(args)
            .env("PATH", &s.path)
            .env("IVNSEC_STATE_DIR", d.state());
        c
    };
    let (up, _, _) = Proc::start(
        exec(&[
            "macsec",
            "up",
            "--iface",
            &va,
            "--tap",
            &format!("{prefix}jt"),
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            keys.to_str().unwrap(),
            "--peer",
            "02:00:00:00:00:0b",
            "--state-dir",
            d.path("mstate").to_str().unwrap(),
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--json",
        ]),
        "running until",
    );
    // The status file is written every 500 ms.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let o = exec(&[
        "macsec",
        "status",
        "--json",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let v = one_document("macsec status", &o, &[0]);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    let v = one_document_of("macsec up", up.finish(true), &[0]);
    assert!(v.get("tx").is_some(), "{v}");

    // gateway: plain port on one veth end, protected port (MTU + 32) on the other.
    ip(&["-n", &ns.0, "link", "set", &vb, "mtu", "1532"]);
    let (gw, _, _) = Proc::start(
        exec(&[
            "gateway",
            "--plain",
            &va,
            "--protected",
            &vb,
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            keys.to_str().unwrap(),
            "--peer",
            "02:00:00:00:00:0b",
            "--state-dir",
            d.path("gstate").to_str().unwrap(),
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--json",
        ]),
        "running until",
    );
    let v = one_document_of("gateway", gw.finish(true), &[0]);
    assert_eq!(v["role"], "gateway", "{v}");
    drop(ns);
}

/// The wrappers really do reach a parent's stdout: run under `sh -c` (whose stdout is this
/// test's pipe) with the wrapper's own stdout and stderr going elsewhere, the `ip` wrapper's
/// stray lines land in the shell's stdout. Without this, the tests
/// above would prove nothing.
#[test]
fn the_wrappers_write_into_the_parents_stdout() {
    let s = Stray::new();
    if !s.wrapped.contains(&"ip") {
        eprintln!("SKIPPED the_wrappers_write_into_the_parents_stdout: no ip command");
        return;
    }
    let o = Command::new("sh")
        .args(["-c", "ip -V 2>&1 | cat >/dev/null"])
        .env("PATH", &s.path)
        .output()
        .unwrap();
    assert_eq!(text(&o.stdout), format!("{STRAY}{MARK} ip\n"));
}
