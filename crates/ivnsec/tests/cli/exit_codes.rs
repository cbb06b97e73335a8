//! The exit-code table of the README, checked: every command on the inputs the table names, one
//! row each, with the code and a part of the message the table promises. 0 success, 1 a
//! verification or verdict failed, 2 usage or configuration error, 3 environment problem.
//! 130/143 (interrupted by SIGINT/SIGTERM) is not checked here: it needs a long command holding
//! a testbed; testbed_pair/interrupt.rs checks it for each long command (and cli/report.rs for `run`).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, UdpSocket};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::frames::KEY;
use crate::common::frames::pcap;
use crate::common::{BIN, TempDir, text};

/// A plain Ethernet frame: dst, src, EtherType 0x0800, payload.
const SHORT_PLAIN: &str = "020000000002020000000001080045000014";
/// An address of the documentation range (RFC 5737) that no test host has.
const NOT_HERE: &str = "192.0.2.1";

/// One row: what runs, the code it must exit with, and a part of what it must say (stderr, or
/// stdout for the counters).
struct Row {
    what: &'static str,
    args: Vec<String>,
    code: i32,
    says: &'static str,
}

fn row(what: &'static str, args: &[&str], code: i32, says: &'static str) -> Row {
    Row {
        what,
        args: args.iter().map(|s| s.to_string()).collect(),
        code,
        says,
    }
}

/// `receive --udp 127.0.0.1:0 ARGS` fed `units` once it listens; its exit code and stderr.
fn receive_fed(d: &TempDir, keys: &str, units: &[&[u8]]) -> (i32, String) {
    let mut child = Command::new(BIN)
        .args(["receive", "--profile", "aes128-gcm", "--keys", keys])
        .args(["--udp", "127.0.0.1:0", "--seconds", "1.5", "--json"])
        .env("IVNSEC_STATE_DIR", d.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn receive");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let port = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let _ = child.wait();
            panic!("receive ended before listening: {seen}");
        }
        seen.push_str(&line);
        if let Some(rest) = line.split("listening on udp 127.0.0.1:").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap()
                .parse::<u16>()
                .unwrap();
        }
    };
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    for u in units {
        s.send_to(u, ("127.0.0.1", port)).unwrap();
    }
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    seen.push_str(&rest);
    let o = child.wait_with_output().unwrap();
    (o.status.code().unwrap_or(-1), seen + &text(&o.stdout))
}

#[test]
fn every_command_exits_with_the_documented_code() {
    let d = TempDir::new("exit-codes");
    let p = |n: &str| d.path(n).to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        o
    };

    // Fixtures: a key file, a PKI with the key server's certificate and a segments file, a good
    // protected frame and one with a flipped tag bit, captures good and bad.
    let keys = p("k.toml");
    run(&["keygen", "--profile", "aes128-gcm", "--out", &keys]);
    let pki = p("pki");
    run(&[
        "pki",
        "init",
        "--dir",
        &pki,
        "--vehicle",
        "WVWZZZ1JZXW000001",
    ]);
    run(&["pki", "issue", "--dir", &pki, "--ecu", "keyserver"]);
    let segments = p("segments.toml");
    std::fs::write(
        &segments,
        "[[segment]]\nname = \"chassis\"\necus = [\"brake1\"]\n",
    )
    .unwrap();
    let sa = ["--profile", "aes128-gcm", "--key", KEY];
    let mut a = vec!["frame", "protect", "--seq", "1"];
    a.extend(sa);
    a.push(SHORT_PLAIN);
    let good = text(&run(&a).stdout).trim().to_string();
    let mut bad = good.clone();
    let last = bad.pop().unwrap();
    bad.push(if last == '0' { '1' } else { '0' });
    let header_only = p("header-only.pcap");
    std::fs::write(&header_only, pcap::<&[u8]>(&[])).unwrap();
    // An ARP frame: skipped under an IVN-AE profile.
    let mut arp = hex::decode("ffffffffffff0200000000010806").unwrap();
    arp.resize(42, 0);
    let all_skipped = p("arp.pcap");
    std::fs::write(&all_skipped, pcap(&[&arp, &arp])).unwrap();
    let ok_pcap = p("ok.pcap");
    std::fs::write(&ok_pcap, pcap(&[&hex::decode(&good).unwrap()])).unwrap();
    // What `gzip`, `xz` and `zstd` write first (RFC 1952, xz format §2.1.1.1, RFC 8878), and a
    // pcapng Section Header Block; the rest of each file does not matter.
    let mut magics = vec![];
    for (name, head) in [
        ("c.pcap.gz", &[0x1f, 0x8b, 0x08, 0x00][..]),
        ("c.pcap.xz", &[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00][..]),
        ("c.pcap.zst", &[0x28, 0xb5, 0x2f, 0xfd][..]),
        ("c.pcapng", &[0x0a, 0x0d, 0x0d, 0x0a][..]),
    ] {
        let mut f = head.to_vec();
        f.resize(64, 0);
        std::fs::write(d.path(name), f).unwrap();
        magics.push(p(name));
    }
    // A TCP and a UDP port in use (held by this test until the end).
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_in_use = tcp.local_addr().unwrap().to_string();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_in_use = udp.local_addr().unwrap().to_string();
    let not_here_tcp = format!("{NOT_HERE}:8443");
    let not_here_udp = format!("{NOT_HERE}:7000");

    let verify = |frame: &str| -> Vec<String> {
        let mut v = vec!["frame", "verify"];
        v.extend(sa);
        v.push(frame);
        v.into_iter().map(String::from).collect()
    };
    let pcap_verify = |file: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec!["pcap", "verify"];
        v.extend(sa);
        v.extend(extra);
        v.push(file);
        v.into_iter().map(String::from).collect()
    };
    let keyserver = |listen: &str| -> Vec<String> {
        [
            "keyserver",
            "--pki",
            &pki,
            "--segments",
            &segments,
            "--listen",
            listen,
        ]
        .into_iter()
        .map(String::from)
        .collect()
    };
    let receive = |udp: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            "receive",
            "--profile",
            "aes128-gcm",
            "--keys",
            &keys,
            "--udp",
            udp,
        ];
        v.extend(extra);
        v.into_iter().map(String::from).collect()
    };
    let with = |what, args: Vec<String>, code, says| Row {
        what,
        args,
        code,
        says,
    };

    let rows = vec![
        // 0: success.
        with("frame verify: a good frame", verify(&good), 0, ""),
        with(
            "pcap verify: every frame verified",
            pcap_verify(&ok_pcap, &[]),
            0,
            "ok=1",
        ),
        // 1: a verification failed.
        with("frame verify: a bad tag", verify(&bad), 1, "bad_tag"),
        with(
            "pcap verify: a capture with no frame",
            pcap_verify(&header_only, &[]),
            1,
            "NOTHING VERIFIED",
        ),
        with(
            "pcap verify: every frame skipped",
            pcap_verify(&all_skipped, &[]),
            1,
            "NOTHING VERIFIED: all 2 frames",
        ),
        // 2: usage or configuration.
        row(
            "unknown option",
            &["frame", "verify", "--nope"],
            2,
            "unexpected argument",
        ),
        with("frame verify: an empty frame", verify(""), 2, "empty"),
        with(
            "frame verify: odd hex",
            verify("abc"),
            2,
            "odd number of hex digits",
        ),
        with("frame verify: not hex", verify("zz"), 2, "not hex"),
        with(
            "frame verify: --replay-window above its maximum",
            {
                let mut v = verify(&good);
                v.extend(["--replay-window".into(), "70000".into()]);
                v
            },
            2,
            "0..=65536",
        ),
        with(
            "pcap verify: --replay-window beyond u32",
            pcap_verify(&ok_pcap, &["--replay-window", "5000000000"]),
            2,
            "0..=65536",
        ),
        with(
            "receive: --replay-window above its maximum",
            receive("127.0.0.1:0", &["--replay-window", "65537"]),
            2,
            "0..=65536",
        ),
        with(
            "pcap verify: gzip",
            pcap_verify(&magics[0], &[]),
            2,
            "gzip-compressed file, not a pcap file itself; decompress it first: `zcat",
        ),
        with(
            "pcap verify: xz",
            pcap_verify(&magics[1], &[]),
            2,
            "xz-compressed file",
        ),
        with(
            "pcap verify: zstd",
            pcap_verify(&magics[2], &[]),
            2,
            "`zstdcat",
        ),
        with(
            "pcap verify: pcapng",
            pcap_verify(&magics[3], &[]),
            2,
            "editcap -F pcap",
        ),
        row(
            "suites --calibrate: --seconds out of range",
            &["suites", "--calibrate", "--seconds", "0"],
            2,
            "0.1..=600",
        ),
        with(
            "suites --calibrate: a cache path that is a directory",
            vec![
                "suites".into(),
                "--calibrate".into(),
                "--cache".into(),
                p(""),
            ],
            2,
            "is a directory",
        ),
        with(
            "receive: a missing key file",
            {
                let mut v = receive("127.0.0.1:0", &[]);
                v[4] = p("missing.toml");
                v
            },
            2,
            "ivnsec keygen",
        ),
        // 3: the environment.
        with(
            "keyserver --listen: not an address of this host",
            keyserver(&not_here_tcp),
            3,
            "not an address of this host",
        ),
        with(
            "keyserver --listen: a port in use",
            keyserver(&tcp_in_use),
            3,
            "another process listens there",
        ),
        with(
            "suites --calibrate: a cache that cannot be written",
            vec![
                "suites".into(),
                "--calibrate".into(),
                "--cache".into(),
                p("k.toml/auto-table.toml"),
            ],
            3,
            "cannot write the calibration",
        ),
        with(
            "receive --udp: not an address of this host",
            receive(&not_here_udp, &[]),
            3,
            "is not an address of this host",
        ),
        with(
            "receive --udp: a port in use",
            receive(&udp_in_use, &[]),
            3,
            "already in use",
        ),
    ];

    let mut failures = vec![];
    for r in &rows {
        let started = Instant::now();
        let mut c = d.cmd();
        c.args(&r.args).stdin(Stdio::null());
        let o = c.output().expect("spawn ivnsec");
        let err = text(&o.stderr) + &text(&o.stdout);
        let code = o.status.code().unwrap_or(-1);
        if code != r.code || !err.contains(r.says) {
            failures.push(format!(
                "{}: exit {code} (want {}), it must say {:?}: {err}",
                r.what, r.code, r.says
            ));
        }
        // None of these may wait on anything (a server that bound after all would).
        assert!(started.elapsed() < Duration::from_secs(20), "{}", r.what);
    }

    // `receive`: exit 1 when a unit failed verification, 0 when none did.
    let (code, out) = receive_fed(&d, &keys, &[b"not a unit"]);
    if code != 1 || !out.contains("\"dropped\": 1") {
        failures.push(format!(
            "receive: a dropped unit: exit {code} (want 1): {out}"
        ));
    }
    let (code, out) = receive_fed(&d, &keys, &[]);
    if code != 0 {
        failures.push(format!(
            "receive: nothing dropped: exit {code} (want 0): {out}"
        ));
    }
    drop((tcp, udp));
    let _ = std::io::stderr().write_all(format!("{} rows checked\n", rows.len() + 2).as_bytes());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
