//! Every command that takes `--json` prints exactly one JSON document on stdout, whatever the
//! processes it starts print (issue 22: `throughput --json` once ended in three stray lines).
//!
//! The commands are found by walking the clap tree (`--help` of every subcommand), and the list
//! must match the one this file runs, so a new `--json` command without a run here fails. Each
//! runs in a cheap configuration with `PATH` leading to wrappers of the programs ivnsec starts
//! (`ip`, `iperf3`, `sockperf`, `openssl`): each wrapper writes stray lines straight into its
//! parent's standard output (`/proc/$PPID/fd/1`, whatever its own stdout is) and then runs the
//! real program. Stdout must still parse as one document with nothing after it, and the stray
//! lines must show up on stderr (so the wrappers did run). The commands that need namespaces
//! run as root in `testbed_pair/json_output.rs`.

use std::collections::BTreeSet;
use std::process::Command;

use crate::common::cli::{help, subcommands};
use crate::common::frames::{KEY, pcap};
use crate::common::json_output::{MARK, STRAY, Stray, one_document, one_document_of, strayed};
use crate::common::tdma::TWO_FLOWS;
use crate::common::{Proc, TempDir, text, write};

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
