//! `ivnsec frame protect|verify` as a user runs it: exit codes, messages and batch mode.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_ivnsec");
const KEY: &str = "000102030405060708090a0b0c0d0e0f";
/// dst 02:00:00:00:00:02, src 02:00:00:00:00:01, EtherType 0x0800, 20-byte payload.
const PLAIN: &str = "020000000002020000000001080045000014000040004011000ac0a80001c0a8";

fn run(args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ivnsec");
    if let Some(s) = stdin {
        c.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(c.stdin.take());
    c.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn protect(profile: &str, extra: &[&str], seq: &str, frame: &str) -> String {
    let mut a = vec!["frame", "protect", "--profile", profile, "--seq", seq];
    a.extend_from_slice(extra);
    a.push(frame);
    let o = run(&a, None);
    assert_eq!(
        o.status.code(),
        Some(0),
        "protect {profile}: {}",
        stderr(&o)
    );
    stdout(&o)
}

#[test]
fn round_trip_and_wire_layout() {
    let f = protect("aes128-gcm", &["--key", KEY, "--key-id", "7"], "258", PLAIN);
    let b = hex::decode(&f).unwrap();
    // dst, src kept; EtherType 0x88B5, version 1, suite 0x10, key id 7, conf flag, seq 258.
    assert_eq!(&b[..12], &hex::decode(&PLAIN[..24]).unwrap()[..]);
    assert_eq!(&b[12..18], &[0x88, 0xb5, 1, 0x10, 7, 1]);
    assert_eq!(&b[18..26], &258u64.to_be_bytes());
    // body = inner EtherType ‖ payload (22 bytes), tag 16.
    assert_eq!(b.len(), 26 + PLAIN.len() / 2 - 12 + 16);
    let o = run(
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
    assert_eq!(stdout(&o), PLAIN);
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
    let o = run(
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
    let o = run(
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
    let o = run(&args, Some(&input));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let frames: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(frames.len(), 3, "blank lines are skipped");
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
    let o = run(&vargs, Some(&batch));
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
    let o = run(&w0, Some(&batch));
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
            "exceeds the maximum",
        ),
        (
            &["frame", "verify", "--profile", "aes128-gcm", "--key", KEY],
            "FRAME",
        ),
    ];
    for (args, needle) in cases {
        let o = run(args, None);
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
        let o = run(args, None);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        assert!(stdout(&o).contains("Usage"), "{args:?}");
    }
}

#[test]
fn seq_exhaustion_stops_protecting() {
    let input = format!("{PLAIN}\n{PLAIN}\n");
    let o = run(
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
        stdout(&o).lines().count(),
        1,
        "the frame with seq 2^64-1 is still sent"
    );
    assert!(stderr(&o).contains("exhausted"), "{}", stderr(&o));
}

#[test]
fn suites_lists_every_profile() {
    let o = run(&["suites", "--json"], None);
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
    assert_eq!(ccm["providers"], serde_json::json!(["portable"]));
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
    assert_eq!(gcm["providers"], serde_json::json!(["fast", "portable"]));
}
