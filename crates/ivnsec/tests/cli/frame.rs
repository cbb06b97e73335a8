//! `ivnsec frame protect|verify` as a user runs it: exit codes, messages and batch mode.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::common::frames::KEY;
use crate::common::{BIN, run_with_stdin, stderr, stdout_trimmed};

/// dst 02:00:00:00:00:02, src 02:00:00:00:00:01, EtherType 0x0800, 20-byte payload.
const PLAIN: &str = "020000000002020000000001080045000014000040004011000ac0a80001c0a8";

fn protect(profile: &str, extra: &[&str], seq: &str, frame: &str) -> String {
    let mut a = vec!["frame", "protect", "--profile", profile, "--seq", seq];
    a.extend_from_slice(extra);
    a.push(frame);
    let o = run_with_stdin(&a, None);
    assert_eq!(
        o.status.code(),
        Some(0),
        "protect {profile}: {}",
        stderr(&o)
    );
    stdout_trimmed(&o)
}

#[test]
fn round_trip_and_wire_layout() {
    let f = protect("aes128-gcm", &["--key", KEY, "--key-id", "7"], "258", PLAIN);
    let b = hex::decode(&f).unwrap();
    // dst, src kept; EtherType 0x88B5, version 2, suite 0x10, key id 7, conf flag, seq 258.
    assert_eq!(&b[..12], &hex::decode(&PLAIN[..24]).unwrap()[..]);
    assert_eq!(&b[12..18], &[0x88, 0xb5, 2, 0x10, 7, 1]);
    assert_eq!(&b[18..26], &258u64.to_be_bytes());
    // body = inner EtherType ‖ payload (22 bytes), tag 16.
    assert_eq!(b.len(), 26 + PLAIN.len() / 2 - 12 + 16);
    let o = run_with_stdin(
        &[
            "frame",
            "verify",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "--key-id",
            "7",
            &f,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout_trimmed(&o), PLAIN);
}

/// `--provider openssl` (OpenSSL's libcrypto) and `auto` write the same frames as the portable
/// provider and verify each other's; a MAC profile named on the OpenSSL provider (which has no
/// MAC) is a usage error.
#[test]
fn openssl_provider_frames_match_the_others() {
    let key32 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    for (profile, key) in [
        ("chacha20-poly1305", key32),
        ("aes128-ccm", KEY),
        ("aes256-gcm/auth", key32),
    ] {
        let with = |provider| protect(profile, &["--key", key, "--provider", provider], "9", PLAIN);
        let ours = with("openssl");
        assert_eq!(ours, with("portable"), "{profile}");
        assert_eq!(ours, with("auto"), "{profile}");
        for provider in ["portable", "auto", "openssl"] {
            let o = run_with_stdin(
                &[
                    "frame",
                    "verify",
                    "--profile",
                    profile,
                    "--key",
                    key,
                    "--provider",
                    provider,
                    &ours,
                ],
                None,
            );
            assert_eq!(
                o.status.code(),
                Some(0),
                "{profile} on {provider}: {}",
                stderr(&o)
            );
            assert_eq!(stdout_trimmed(&o), PLAIN);
        }
    }
    let o = run_with_stdin(
        &[
            "frame",
            "protect",
            "--profile",
            "hmac-sha256",
            "--mac-key",
            KEY,
            "--provider",
            "openssl",
            "--seq",
            "1",
            PLAIN,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("provider 'openssl' does not implement"),
        "{}",
        stderr(&o)
    );
    let o = run_with_stdin(&["frame", "protect", "--provider", "libressl", PLAIN], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected portable, fast, openssl or auto"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn auth_level_keeps_body_clear() {
    let f = protect(
        "chacha20-poly1305/auth",
        &["--key", &format!("{KEY}{KEY}")],
        "1",
        PLAIN,
    );
    let b = hex::decode(&f).unwrap();
    assert_eq!(b[17], 0, "auth level clears the conf flag");
    assert_eq!(
        &b[26..26 + PLAIN.len() / 2 - 12],
        &hex::decode(&PLAIN[24..]).unwrap()[..]
    );
}

#[test]
fn tampered_frame_exits_1_with_reason() {
    let f = protect("hmac-sha256", &["--mac-key", "0b0b0b0b"], "3", PLAIN);
    let mut b = hex::decode(&f).unwrap();
    b[30] ^= 0x01;
    let o = run_with_stdin(
        &[
            "frame",
            "verify",
            "--profile",
            "hmac-sha256",
            "--mac-key",
            "0b0b0b0b",
            &hex::encode(&b),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("DROP bad_tag"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn downgrade_is_refused() {
    let f = protect(
        "aes256-gcm/auth",
        &["--key", &format!("{KEY}{KEY}")],
        "3",
        PLAIN,
    );
    let o = run_with_stdin(
        &[
            "frame",
            "verify",
            "--profile",
            "aes256-gcm/conf",
            "--key",
            &format!("{KEY}{KEY}"),
            &f,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("DROP level_mismatch"), "{}", stderr(&o));
}

#[test]
fn batch_numbers_frames_and_keeps_replay_state() {
    let input = format!("{PLAIN}\n\n{PLAIN}00\n{PLAIN}0000\n");
    let args = [
        "frame",
        "protect",
        "--profile",
        "aes128-cbc-hmac-sha1",
        "--key",
        KEY,
        "--mac-key",
        "aa",
        "--seq",
        "5",
        "-",
    ];
    let o = run_with_stdin(&args, Some(&input));
    // One answer per input line: the blank one is refused (a zero-byte frame), which makes the
    // batch's exit code 2, and spends no sequence number.
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let mut answers: Vec<String> = stdout_trimmed(&o).lines().map(str::to_string).collect();
    assert_eq!(answers.len(), 4, "one answer per line");
    assert_eq!(answers.remove(1), "DROP truncated");
    let frames = answers;
    for (i, f) in frames.iter().enumerate() {
        let b = hex::decode(f).unwrap();
        assert_eq!(&b[18..26], &(5 + i as u64).to_be_bytes());
    }
    // Verify out of order inside the window, then replay one.
    let batch = format!(
        "{}\n{}\n{}\n{}\n",
        frames[2], frames[0], frames[1], frames[0]
    );
    let vargs = [
        "frame",
        "verify",
        "--profile",
        "aes128-cbc-hmac-sha1",
        "--key",
        KEY,
        "--mac-key",
        "aa",
        "-",
    ];
    let o = run_with_stdin(&vargs, Some(&batch));
    assert_eq!(
        o.status.code(),
        Some(1),
        "a dropped frame makes the batch exit 1"
    );
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(
        lines,
        [
            format!("{PLAIN}0000"),
            PLAIN.to_string(),
            format!("{PLAIN}00"),
            "DROP replay_duplicate".to_string()
        ]
    );
    assert!(
        stderr(&o).contains("verified 3 dropped 1: replay_duplicate=1"),
        "{}",
        stderr(&o)
    );

    // Window 0: strictly increasing only.
    let mut w0 = vargs.to_vec();
    w0.insert(2, "--replay-window");
    w0.insert(3, "0");
    let o = run_with_stdin(&w0, Some(&batch));
    let lines: Vec<&str> = std::str::from_utf8(&o.stdout).unwrap().lines().collect();
    assert_eq!(
        &lines[1..],
        [
            "DROP replay_too_old",
            "DROP replay_too_old",
            "DROP replay_too_old"
        ]
    );
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes128-gcm",
                "--key",
                "0011",
                "--seq",
                "1",
                PLAIN,
            ],
            "16-byte key",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes129-gcm",
                "--key",
                KEY,
                "--seq",
                "1",
                PLAIN,
            ],
            "unknown suite",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes128-gcm",
                "--key",
                KEY,
                "--seq",
                "1",
                "abc",
            ],
            "odd number of hex digits",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes128-gcm",
                "--key",
                KEY,
                "--seq",
                "0",
                PLAIN,
            ],
            "start at 1",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes128-gcm",
                "--key",
                KEY,
                PLAIN,
            ],
            "--seq is required",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "hmac-md5",
                "--seq",
                "1",
                PLAIN,
            ],
            "--mac-key",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "hmac-sha256",
                "--mac-key",
                "aa",
                "--tag-len",
                "8",
                "--seq",
                "1",
                PLAIN,
            ],
            "16..=32",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "plain",
                "--key",
                KEY,
                "--seq",
                "1",
                PLAIN,
            ],
            "takes no cipher key",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes128-ccm",
                "--key",
                KEY,
                "--provider",
                "fast",
                "--seq",
                "1",
                PLAIN,
            ],
            "does not implement",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "aes128-gcm",
                "--key",
                KEY,
                "--iv",
                "00",
                "--seq",
                "1",
                PLAIN,
            ],
            "--iv must be 12 bytes",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "hmac-sha1/conf",
                "--mac-key",
                "aa",
                "--seq",
                "1",
                PLAIN,
            ],
            "cannot run at level",
        ),
        (
            &[
                "frame",
                "protect",
                "--profile",
                "plain",
                "--seq",
                "1",
                "0200000000",
            ],
            "shorter than an Ethernet header",
        ),
        (
            &[
                "frame",
                "verify",
                "--profile",
                "aes128-gcm",
                "--key",
                KEY,
                "--replay-window",
                "70000",
                PLAIN,
            ],
            "70000 is not in 0..=65536",
        ),
        (
            &["frame", "verify", "--profile", "aes128-gcm", "--key", KEY],
            "FRAME",
        ),
    ];
    for (args, needle) in cases {
        let o = run_with_stdin(args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(needle),
            "{args:?}: expected '{needle}' in: {}",
            stderr(&o)
        );
    }
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        &["--help"][..],
        &["frame", "--help"],
        &["frame", "protect", "--help"],
        &["frame", "verify", "--help"],
        &["suites", "--help"],
        &["crypto-bench", "--help"],
    ] {
        let o = run_with_stdin(args, None);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(stdout_trimmed(&o).contains("Usage"), "{args:?}");
    }
}

#[test]
fn seq_exhaustion_stops_protecting() {
    let input = format!("{PLAIN}\n{PLAIN}\n");
    let o = run_with_stdin(
        &[
            "frame",
            "protect",
            "--profile",
            "crc32",
            "--seq",
            &u64::MAX.to_string(),
            "-",
        ],
        Some(&input),
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stdout_trimmed(&o).lines().count(),
        1,
        "the frame with seq 2^64-1 is still sent"
    );
    assert!(stderr(&o).contains("exhausted"), "{}", stderr(&o));
}

#[test]
fn suites_lists_every_profile() {
    let o = run_with_stdin(&["suites", "--json"], None);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let profiles = v["profiles"].as_array().unwrap();
    let count = |proto: &str| profiles.iter().filter(|p| p["protocol"] == proto).count();
    // IVN-AE: 42 suites; the 5 AEADs have two levels each. MACsec: 4 cipher suites. ESP: 8.
    assert_eq!(count("ivn-ae"), 47);
    assert_eq!(count("macsec"), 4);
    assert_eq!(count("esp"), 8);
    let ccm = profiles
        .iter()
        .find(|p| p["profile"] == "aes128-ccm/auth")
        .unwrap();
    assert_eq!(ccm["providers"], serde_json::json!(["openssl", "portable"]));
    // `--provider auto`: the portable provider for small CCM frames, OpenSSL's for large ones.
    assert_eq!(
        ccm["auto"],
        "aes128-ccm: portable up to 256 B, openssl above 256 B"
    );
    let xpn = profiles
        .iter()
        .find(|p| p["profile"] == "macsec-gcm-aes-xpn-256")
        .unwrap();
    assert_eq!(xpn["suite_id"], "0x0080c20001000004");
    let gcm = profiles
        .iter()
        .find(|p| p["profile"] == "aes128-gcm/conf")
        .unwrap();
    assert_eq!(gcm["suite_id"], "0x10");
    assert_eq!(
        gcm["providers"],
        serde_json::json!(["fast", "openssl", "portable"])
    );
    assert_eq!(gcm["auto"], "aes128-gcm: fast");
    let plain = profiles.iter().find(|p| p["profile"] == "plain").unwrap();
    assert_eq!(plain["auto"], "none");
}

/// `ivnsec ARGS` with `stdin` fed from a thread (for inputs larger than a pipe buffer).
fn run_bytes(args: &[&str], stdin: Vec<u8>) -> Output {
    run_cmd(Command::new(BIN).args(args), stdin)
}

fn run_cmd(cmd: &mut Command, stdin: Vec<u8>) -> Output {
    let mut c = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ivnsec");
    let mut w = c.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        // The reader may stop early (an error exit): a broken pipe is its answer, not ours.
        let _ = w.write_all(&stdin);
    });
    let o = c.wait_with_output().unwrap();
    feeder.join().unwrap();
    o
}

fn out_lines(o: &Output) -> Vec<String> {
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Plain frames `PLAIN ‖ i` (distinct payloads), protected in one batch from sequence number 1.
fn protected(profile_args: &[&str], n: usize) -> (Vec<String>, Vec<String>) {
    let plains: Vec<String> = (0..n).map(|i| format!("{PLAIN}{:04x}", i)).collect();
    let input: String = plains.iter().map(|p| format!("{p}\n")).collect();
    let mut a = vec!["frame", "protect"];
    a.extend_from_slice(profile_args);
    a.push("-");
    let o = run_bytes(&a, input.into_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let frames = out_lines(&o);
    assert_eq!(frames.len(), n);
    (plains, frames)
}

/// A verify batch answers every line, in order, whatever is on it: a blank line (a zero-byte
/// frame: `DROP truncated`), odd-length hex, non-hex, bytes that are not UTF-8 (`DROP
/// malformed`), a replay (the SA's verdict) — and the good frames after them still verify.
#[test]
fn verify_batch_answers_every_line_and_goes_on() {
    let sa = ["--profile", "aes128-gcm", "--key", KEY, "--seq", "1"];
    let (plains, f) = protected(&sa, 3);
    let mut input = Vec::new();
    for line in [&f[0][..], "", "abc", "zz", &f[1], &f[0]] {
        input.extend_from_slice(line.as_bytes());
        input.push(b'\n');
    }
    input.extend_from_slice(b"\xff\xfe0a\n");
    input.extend_from_slice(f[2].as_bytes()); // a last line without a newline
    let o = run_bytes(
        &[
            "frame",
            "verify",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "-",
        ],
        input,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        out_lines(&o),
        [
            plains[0].as_str(),
            "DROP truncated",
            "DROP malformed",
            "DROP malformed",
            &plains[1],
            "DROP replay_duplicate",
            "DROP malformed",
            &plains[2],
        ]
    );
    let err = stderr(&o);
    for needle in [
        "stdin line 2: empty line",
        "stdin line 3: odd number of hex digits (3)",
        "stdin line 4: not hex",
        "stdin line 7: not UTF-8 text",
        "verified 3 dropped 5: truncated=1 replay_duplicate=1 malformed=3",
    ] {
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
    }
    // --help says so.
    let help = stdout_trimmed(&run_with_stdin(&["frame", "verify", "--help"], None));
    assert!(
        help.contains("blank `DROP truncated`") && help.contains("`DROP oversize`"),
        "{help}"
    );
    let help = stdout_trimmed(&run_with_stdin(&["frame", "protect", "--help"], None));
    assert!(
        help.contains("exit code is 2 when any line was refused")
            && help.contains("which IV was used"),
        "{help}"
    );
}

/// The same for every protocol, with a line above its largest frame: MACsec's 9,249-byte line
/// (which used to end the batch with exit 2) and a 100,000-byte line answer `DROP oversize`
/// and the next frame still verifies.
#[test]
fn every_protocol_batch_answers_oversize_and_bad_lines_alone() {
    let macsec = [
        "--profile",
        "macsec-gcm-aes-128",
        "--key",
        KEY,
        "--sci",
        "0200000000010001",
        "--an",
        "1",
    ];
    let esp_key = format!("{KEY}01020304");
    let esp = [
        "--profile",
        "esp-aes128-gcm",
        "--key",
        &esp_key,
        "--spi",
        "300",
    ];
    let secoc = [
        "--profile",
        "secoc-cmac-aes128",
        "--key",
        KEY,
        "--data-id",
        "7",
    ];
    let ivnae = [
        "--profile",
        "chacha20-poly1305",
        "--key",
        &format!("{KEY}{KEY}"),
    ];
    let cases: [(&str, &[&str], &[&str]); 4] = [
        ("ivn-ae", &ivnae, &["--seq", "1"]),
        ("macsec", &macsec, &["--pn", "1"]),
        ("esp", &esp, &["--seq", "1"]),
        ("secoc", &secoc, &["--freshness", "1"]),
    ];
    for (name, sa, first) in cases {
        let (plains, f) = if name == "esp" {
            // ESP protects IP packets: an IPv4 header (UDP, 10.0.0.1 → 10.0.0.2, header
            // checksum 0x66cd = !(0x4500 + 0x001e + 0x4011 + 0x0a00 + 0x0001 + 0x0a00 + 0x0002),
            // RFC 791; the receiver hands the packet on with a valid checksum) and a payload.
            let plains: Vec<String> = (0..2)
                .map(|i| format!("4500001e00000000401166cd0a0000010a000002{:020x}", i))
                .collect();
            let input: String = plains.iter().map(|p| format!("{p}\n")).collect();
            let o = run_bytes(
                &[&["frame", "protect"][..], sa, first, &["-"]].concat(),
                input.into_bytes(),
            );
            assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
            (plains, out_lines(&o))
        } else {
            protected(&[sa, first].concat(), 2)
        };
        let lines = [
            f[0].clone(),
            "00".repeat(9249),
            "0".repeat(7),
            String::new(),
            "ab".repeat(100_000),
            f[1].clone(),
        ];
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let o = run_bytes(
            &[&["frame", "verify"][..], sa, &["-"]].concat(),
            input.into_bytes(),
        );
        assert_eq!(o.status.code(), Some(1), "{name}: {}", stderr(&o));
        let got = out_lines(&o);
        let want_9249 = if name == "macsec" {
            "DROP oversize".to_string()
        } else {
            // 9,249 bytes fit the largest IVN-AE frame, an ESP packet or a SecOC PDU: the SA
            // judges them (a zero EtherType, a bad header).
            got[1].clone()
        };
        assert!(got[1].starts_with("DROP "), "{name}: {got:?}");
        assert_eq!(
            got,
            [
                plains[0].clone(),
                want_9249,
                "DROP malformed".into(),
                "DROP truncated".into(),
                "DROP oversize".into(),
                plains[1].clone(),
            ],
            "{name}"
        );
    }
}

/// The count: 20,000 lines in (blank and bad lines among them), 20,000 answers out,
/// each on the line of its input.
#[test]
fn twenty_thousand_lines_in_twenty_thousand_answers_out() {
    const N: usize = 20_000;
    let good = (0..N).filter(|i| i % 10 != 3 && i % 10 != 7).count();
    let sa = ["--profile", "aes128-gcm", "--key", KEY, "--seq", "1"];
    let (plains, frames) = protected(&sa, good);
    let (mut input, mut want) = (String::new(), Vec::with_capacity(N));
    let mut k = 0;
    for i in 0..N {
        match i % 10 {
            3 => {
                input.push('\n');
                want.push("DROP truncated".to_string());
            }
            7 => {
                input.push_str("abc\n");
                want.push("DROP malformed".to_string());
            }
            _ => {
                input.push_str(&frames[k]);
                input.push('\n');
                want.push(plains[k].clone());
                k += 1;
            }
        }
    }
    let o = run_bytes(
        &[
            "frame",
            "verify",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "-",
        ],
        input.into_bytes(),
    );
    assert_eq!(o.status.code(), Some(1));
    let got = out_lines(&o);
    assert_eq!(got.len(), N);
    assert!(got == want, "answers do not line up with the input");
    assert!(
        stderr(&o).contains(&format!(
            "verified {good} dropped {}: truncated={} malformed={}",
            N - good,
            N / 10,
            N / 10
        )),
        "{}",
        stderr(&o)
    );
}

/// A protect batch answers a line it cannot protect with `DROP <reason>` (the sentence on
/// stderr) and goes on; refused lines spend no sequence number; a blank line is answered too
/// (`DROP truncated`); the exit code is 2 when any line was refused.
#[test]
fn protect_batch_refuses_bad_lines_alone() {
    let input = format!("{PLAIN}\nzz\n\n0200\n{PLAIN}\n{}\n", "00".repeat(9217));
    // Lines: 1 frame, 2 not hex, 3 blank, 4 too short, 5 frame, 6 too long.
    let o = run_bytes(
        &[
            "frame",
            "protect",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "--iv",
            "000000000000000000000000",
            "--seq",
            "5",
            "-",
        ],
        input.into_bytes(),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let got = out_lines(&o);
    assert_eq!(got.len(), 6, "one answer per line: {got:?}");
    assert_eq!(
        &got[1..],
        [
            "DROP malformed",
            "DROP truncated",
            "DROP truncated",
            &got[4],
            "DROP oversize"
        ]
    );
    for (line, seq) in [(&got[0], 5u64), (&got[4], 6)] {
        let b = hex::decode(line).unwrap();
        assert_eq!(
            &b[18..26],
            &seq.to_be_bytes(),
            "refused lines spend no number"
        );
    }
    let err = stderr(&o);
    for needle in [
        "stdin line 2: not hex",
        "stdin line 4: frame shorter than an Ethernet header",
        "stdin line 6: frame of 9217 bytes exceeds 9216",
        "stdin line 3: empty line",
        "protected 2 refused 4: truncated=2 oversize=1 malformed=1",
    ] {
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
    }
}

/// A 100 MB stdin line is answered `DROP oversize` and the next line still gets its answer,
/// under a 32 MiB data limit (`ulimit -d`): the line is never held in memory. Reading it whole,
/// as before, needs more than 100 MB.
#[test]
fn huge_stdin_line_is_answered_without_holding_it() {
    let frame = protect("aes128-gcm", &["--key", KEY], "1", PLAIN);
    let mut input = vec![b'a'; 100 << 20];
    input.push(b'\n');
    input.extend_from_slice(format!("{frame}\n").as_bytes());
    for cmd in ["verify", "protect"] {
        let mut args = vec!["frame", cmd, "--profile", "aes128-gcm", "--key", KEY];
        if cmd == "protect" {
            args.extend_from_slice(&["--seq", "1"]);
        }
        args.push("-");
        let mut c = Command::new("sh");
        c.args(["-c", "ulimit -d 32768 && exec \"$0\" \"$@\"", BIN])
            .args(&args);
        let o = run_cmd(&mut c, input.clone());
        let err = stderr(&o);
        assert!(
            err.contains("stdin line 1: line longer than"),
            "{cmd}: {err}"
        );
        let got = out_lines(&o);
        assert_eq!(got.len(), 2, "{cmd}: {got:?}");
        assert_eq!(got[0], "DROP oversize", "{cmd}");
        if cmd == "protect" {
            // The next line (a protected frame: hex, 62 bytes) is protected in turn.
            assert_eq!(&got[1][..24], &frame[..24]);
            assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        } else {
            assert_eq!(got[1], PLAIN);
            assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        }
    }
}

/// `frame protect` without `--iv` says on stderr which IV it used, and what it says is true:
/// IVN-AE's all-zero IV verifies with `--iv 00…00`; ESP's IV is the sequence number, found in
/// the packet after the SPI and sequence number (RFC 4106 §3.1).
#[test]
fn protect_says_which_iv_it_used() {
    let o = run_with_stdin(
        &[
            "frame",
            "protect",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "--seq",
            "9",
            PLAIN,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0));
    let zero = "000000000000000000000000";
    assert!(
        stderr(&o).contains(&format!("no --iv given: using the all-zero IV {zero}")),
        "{}",
        stderr(&o)
    );
    let v = run_with_stdin(
        &[
            "frame",
            "verify",
            "--profile",
            "aes128-gcm",
            "--key",
            KEY,
            "--iv",
            zero,
            &stdout_trimmed(&o),
        ],
        None,
    );
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));
    assert_eq!(stdout_trimmed(&v), PLAIN);
    // With --iv, and for a suite without a nonce, nothing to say.
    for extra in [
        &["--profile", "aes128-gcm", "--key", KEY, "--iv", zero][..],
        &["--profile", "hmac-sha256", "--mac-key", "0b0b"],
    ] {
        let o = run_with_stdin(
            &[&["frame", "protect"][..], extra, &["--seq", "1", PLAIN]].concat(),
            None,
        );
        assert_eq!(o.status.code(), Some(0));
        assert!(!stderr(&o).contains("--iv"), "{extra:?}: {}", stderr(&o));
    }
    // ESP AES-GCM: the IV is the sequence number.
    let packet = "4500001e00000000401100000a0000010a00000200000000000000000000";
    let o = run_with_stdin(
        &[
            "frame",
            "protect",
            "--profile",
            "esp-aes128-gcm",
            "--key",
            &format!("{KEY}01020304"),
            "--spi",
            "300",
            "--seq",
            "258",
            packet,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let iv = "0000000000000102";
    assert!(
        stderr(&o).contains("IV is its sequence number as 8 bytes"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains(&format!("the first {iv}")),
        "{}",
        stderr(&o)
    );
    let b = hex::decode(stdout_trimmed(&o)).unwrap();
    assert_eq!(
        hex::encode(&b[28..36]),
        iv,
        "IPv4 header 20, SPI 4, seq 4, IV 8"
    );
    // ESP CBC: a random IV per packet, said so.
    let o = run_with_stdin(
        &[
            "frame",
            "protect",
            "--profile",
            "esp-aes128-cbc-hmac-sha256",
            "--key",
            KEY,
            "--auth-key",
            &format!("{KEY}{KEY}"),
            "--spi",
            "300",
            "--seq",
            "1",
            packet,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fresh random 16-byte IV"),
        "{}",
        stderr(&o)
    );
}

/// `frame verify` of one frame under `--key-id id` (and `extra`): exit code and stdout.
fn verify_with(
    profile: &str,
    sa: &[&str],
    key_id: &str,
    extra: &[&str],
    frame: &str,
) -> (i32, String, String) {
    let mut a = vec!["frame", "verify", "--profile", profile, "--key-id", key_id];
    a.extend_from_slice(sa);
    a.extend_from_slice(extra);
    a.push(frame);
    let o = run_with_stdin(&a, None);
    (o.status.code().unwrap(), stdout_trimmed(&o), stderr(&o))
}

/// Issue 30: the key id is part of the IVN-AE nonce. The same key, IV, sequence number and frame
/// under key ids 1 and 2 give different ciphertext (before, identical), each verifies under its
/// own key id, and a frame whose key id byte was changed fails its tag.
#[test]
fn key_ids_1_and_2_under_one_key_give_different_ciphertext() {
    let sa = ["--key", KEY, "--iv", "0102030405060708090a0b0c"];
    for profile in [
        "aes128-gcm",
        "chacha20-poly1305",
        "aes128-ctr-hmac-sha256",
        "aes128-cbc-hmac-sha1",
    ] {
        let key32 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        let mut sa = sa.to_vec();
        if profile.starts_with("chacha") {
            sa[1] = key32;
        }
        if profile.contains("hmac") {
            sa.extend(["--mac-key", key32]);
        }
        let frame = |id: &str| {
            let mut extra = sa.clone();
            extra.extend(["--key-id", id]);
            hex::decode(protect(profile, &extra, "7", PLAIN)).unwrap()
        };
        let (f1, f2) = (frame("1"), frame("2"));
        assert_eq!((f1[16], f2[16]), (1, 2), "{profile}");
        assert_eq!(f1.len(), f2.len());
        // Everything after the header differs (body and tag): not one keystream.
        let same = f1[26..]
            .iter()
            .zip(&f2[26..])
            .filter(|(a, b)| a == b)
            .count();
        assert!(
            same < (f1.len() - 26) / 4,
            "{profile}: {same} equal bytes after the header"
        );
        for (id, f) in [("1", &f1), ("2", &f2)] {
            let (rc, out, err) = verify_with(profile, &sa, id, &[], &hex::encode(f));
            assert_eq!(
                (rc, out.as_str()),
                (0, PLAIN),
                "{profile} key id {id}: {err}"
            );
        }
        // Under the other key id: not its SA.
        let (rc, out, _) = verify_with(profile, &sa, "2", &[], &hex::encode(&f1));
        assert_eq!((rc, out.as_str()), (1, ""), "{profile}");
        // The key id byte changed to 2: the SA of key id 2 finds a bad tag.
        let mut moved = f1.clone();
        moved[16] = 2;
        let (rc, _, err) = verify_with(profile, &sa, "2", &[], &hex::encode(&moved));
        assert_eq!(rc, 1, "{profile}");
        assert!(err.contains("bad_tag"), "{profile}: {err}");
    }
}

/// Version 1 frames (the previous release; here the independent Python reference's) are `DROP
/// bad_version` unless `--accept-ivnae-v1`; the option is refused for other families.
#[test]
fn version_1_frames_need_accept_ivnae_v1() {
    use ivnsec_conformance::vectors::ivnae::{KATS, PLAIN as KAT_PLAIN};
    let mut seen = 0;
    for k in KATS.iter().filter(|k| k.version == 1) {
        let profile = k.profile;
        let mut sa = vec!["--iv", k.iv];
        if !k.key.is_empty() {
            sa.extend(["--key", k.key]);
        }
        if !k.mac_key.is_empty() {
            sa.extend(["--mac-key", k.mac_key]);
        }
        let tag_len = k.tag_len.map(|t| t.to_string());
        if let Some(t) = &tag_len {
            sa.extend(["--tag-len", t.as_str()]);
        }
        let (rc, out, err) = verify_with(profile, &sa, "3", &[], k.frame);
        assert_eq!((rc, out.as_str()), (1, ""), "{}", k.source);
        assert!(err.contains("bad_version"), "{}: {err}", k.source);
        let (rc, out, err) = verify_with(profile, &sa, "3", &["--accept-ivnae-v1"], k.frame);
        assert_eq!((rc, out.as_str()), (0, KAT_PLAIN), "{}: {err}", k.source);
        seen += 1;
    }
    assert!(seen >= 5);
    let o = run_with_stdin(
        &[
            "frame",
            "verify",
            "--profile",
            "macsec-gcm-aes-128",
            "--key",
            KEY,
            "--sci",
            "0200000000010001",
            "--an",
            "0",
            "--accept-ivnae-v1",
            "00",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--accept-ivnae-v1 is an IVN-AE option"),
        "{}",
        stderr(&o)
    );
}
