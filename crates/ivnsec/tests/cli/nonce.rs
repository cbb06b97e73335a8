//! Nonce safety as a user meets it: `ivnsec send` killed with SIGKILL mid-stream and restarted
//! under the same key and `--state-dir` never repeats a sequence number (hence no (key, nonce)
//! pair), proven from the receiver's capture; over UDP on loopback (no root; on a testbed and
//! with a full state disk, as root: `testbed_pair/nonce.rs`). Also: refusal without a state directory,
//! exhaustion at `--seq-limit`, lock contention, bad key files, `keygen`; and the holes of
//! issue 15 (one key under several spellings of its suite, a deleted lock, a used key without
//! its state, links in the state directory, bounds), each proven from the units
//! the senders actually sent.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use crate::common::nonce::{
    PROFILES, Setup, Sink, assert_no_nonce_repeats, captured_units, kill_and_restart,
    start_receiver, stop_receiver, try_reserved_mark,
};
use crate::common::{BIN, Proc, TempDir, json, keygen, text};

#[test]
fn kill_9_and_restart_never_repeats_a_nonce_over_loopback() {
    let d = TempDir::new("lo");
    for profile in PROFILES {
        let keys = keygen(&d, profile, &format!("{profile}.toml"));
        let rx_pcap = d.path(&format!("rx-{profile}.pcap"));
        let mut rc = d.cmd();
        rc.args([
            "receive",
            "--profile",
            profile,
            "--keys",
            keys.to_str().unwrap(),
            "--udp",
            "127.0.0.1:0",
            "--replay-window",
            "0",
            "--json",
            "--pcap",
            rx_pcap.to_str().unwrap(),
        ]);
        let (rx, line) = start_receiver(rc);
        let addr = line
            .split_whitespace()
            .find(|w| w.starts_with("127.0.0.1:"))
            .unwrap_or_else(|| panic!("no address in `{line}`"))
            .to_string();
        let setup = Setup {
            sender: Box::new(|| Command::new(BIN)),
            link_args: vec!["--udp".into(), addr],
        };
        kill_and_restart(&d, profile, &keys, &setup, rx, &rx_pcap);
    }
}

#[test]
fn send_without_state_dir_refuses_with_exit_2() {
    let d = TempDir::new("nostate");
    let keys = keygen(&d, "aes128-gcm", "k.toml");
    let o = d.run(&[
        "send",
        "--profile",
        "aes128-gcm",
        "--keys",
        keys.to_str().unwrap(),
        "--udp",
        "127.0.0.1:9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("--state-dir") && e.contains("reuse") && e.contains("restart"),
        "{e}"
    );
}

#[test]
fn seq_limit_stops_after_exactly_n_units_with_exit_1() {
    let d = TempDir::new("limit");
    let profile = "macsec-gcm-aes-128";
    let keys = keygen(&d, profile, "k.toml");
    let rx_pcap = d.path("rx.pcap");
    let mut rc = d.cmd();
    rc.args(["receive", "--profile", profile, "--keys"])
        .arg(&keys)
        .args(["--udp", "127.0.0.1:0", "--json", "--pcap"])
        .arg(&rx_pcap);
    let (rx, line) = start_receiver(rc);
    let addr = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap()
        .to_string();
    let state = d.path("state");
    let send = |extra: &[&str]| {
        let mut c = d.cmd();
        c.args(["send", "--profile", profile, "--keys"])
            .arg(&keys)
            .args(["--udp", &addr, "--state-dir"])
            .arg(&state)
            .args(["--seq-limit", "25", "--reserve-block", "10", "--json"])
            .args(extra);
        c.output().unwrap()
    };
    let o = send(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("exhausted") && e.contains("new key must be installed"),
        "{e}"
    );
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["sent"], 25, "{s}");
    assert_eq!(s["first_seq"], 1);
    assert_eq!(s["last_seq"], 25);
    assert_eq!(s["stopped_by"], "exhausted");
    assert_eq!(
        try_reserved_mark(&state),
        Some(25),
        "never reserved past the limit"
    );
    // A restart under the same key refuses at once.
    let o = send(&["--count", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("new key must be installed"));
    std::thread::sleep(Duration::from_millis(200));
    let c = stop_receiver(rx);
    assert_eq!(c["accepted"], 25, "{c}");
    let units = captured_units(&rx_pcap, profile);
    assert_eq!(
        units.iter().map(|u| u.0).collect::<Vec<_>>(),
        (1..=25).collect::<Vec<_>>()
    );
}

#[test]
fn a_second_sender_on_the_same_state_is_locked_out() {
    let d = TempDir::new("lock");
    let keys = keygen(&d, "chacha20-poly1305", "k.toml");
    let state = d.path("state");
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = sink.local_addr().unwrap().to_string();
    let args = |c: &mut Command| {
        c.args(["send", "--profile", "chacha20-poly1305", "--keys"])
            .arg(&keys)
            .args(["--udp", &addr, "--rate", "200", "--state-dir"])
            .arg(&state);
    };
    let mut c = d.cmd();
    args(&mut c);
    let mut first = Proc(Some(
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    ));
    let t0 = Instant::now();
    while try_reserved_mark(&state).is_none() {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut c = d.cmd();
    args(&mut c);
    let o = c.args(["--count", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("locked by another process"));
    // SIGTERM: the first sender stops cleanly and prints its summary.
    ivnsec_net::sys::signal_process(first.child().id(), false).unwrap();
    let o = first.take().wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn corrupt_state_is_refused_with_exit_2() {
    let d = TempDir::new("corrupt");
    let keys = keygen(&d, "aes128-gcm", "k.toml");
    let state = d.path("state");
    let run = || {
        d.cmd()
            .args(["send", "--profile", "aes128-gcm", "--keys"])
            .arg(&keys)
            .args(["--udp", "127.0.0.1:9", "--count", "3", "--state-dir"])
            .arg(&state)
            .output()
            .unwrap()
    };
    assert_eq!(run().status.code(), Some(0));
    let hw = std::fs::read_dir(&state)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "hw"))
        .unwrap();
    let good = std::fs::read_to_string(&hw).unwrap();
    std::fs::write(&hw, good.replace("reserved 4096", "reserved 40x6")).unwrap();
    let o = run();
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains(hw.to_str().unwrap()) && e.contains("refusing"),
        "{e}"
    );
}

#[test]
fn bad_key_files_exit_2_naming_file_key_and_problem() {
    let d = TempDir::new("keys");
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "short.toml",
            "key = \"0011\"\niv = \"0102030405060708090a0b0c\"\n",
            &["`key`", "16 bytes"],
        ),
        (
            "nothex.toml",
            "key = \"zz112233445566778899aabbccddeeff\"\niv = \"0102030405060708090a0b0c\"\n",
            &["`key`", "hex"],
        ),
        (
            "noiv.toml",
            "key = \"00112233445566778899aabbccddeeff\"\n",
            &["`iv`", "12 bytes"],
        ),
        ("unknown.toml", "kee = \"00\"\n", &["kee"]),
        (
            "wrongprofile.toml",
            "profile = \"aes256-gcm\"\nkey = \"00112233445566778899aabbccddeeff\"\niv = \"0102030405060708090a0b0c\"\n",
            &["`profile`", "aes256-gcm"],
        ),
        (
            "macwithout.toml",
            "key = \"00112233445566778899aabbccddeeff\"\nmac_key = \"00\"\niv = \"0102030405060708090a0b0c\"\n",
            &["`mac_key`", "takes no"],
        ),
    ];
    for (name, body, want) in cases {
        let p = d.path(name);
        std::fs::write(&p, body).unwrap();
        for cmd in ["send", "receive"] {
            let st = d.path("st");
            let mut args = vec![
                cmd,
                "--profile",
                "aes128-gcm",
                "--keys",
                p.to_str().unwrap(),
                "--udp",
                "127.0.0.1:0",
            ];
            if cmd == "send" {
                args.extend(["--state-dir", st.to_str().unwrap()]);
            }
            let o = d.run(&args);
            let e = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{cmd} {name}: {e}");
            assert!(e.contains(p.to_str().unwrap()), "{cmd} {name}: {e}");
            for w in want {
                assert!(e.contains(w), "{cmd} {name}: `{w}` missing: {e}");
            }
        }
    }
    let o = d.run(&[
        "receive",
        "--profile",
        "aes128-gcm",
        "--keys",
        d.path("missing.toml").to_str().unwrap(),
        "--udp",
        "127.0.0.1:0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("keygen"));
}

#[test]
fn keygen_writes_a_private_file_and_never_overwrites() {
    use std::os::unix::fs::PermissionsExt;
    let d = TempDir::new("keygen");
    let p = keygen(&d, "esp-aes128-cbc-hmac-sha256", "k.toml");
    let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let t = std::fs::read_to_string(&p).unwrap();
    let v: toml::Value = toml::from_str(&t).unwrap();
    assert_eq!(v["key"].as_str().unwrap().len(), 32);
    assert_eq!(v["mac_key"].as_str().unwrap().len(), 64);
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        p.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("exists"));
    let o = d.run(&["keygen", "--profile", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let o = d.run(&["keygen", "--profile", "aes128-gcm"]);
    assert!(text(&o.stdout).contains("key = \""));
}

// ---------------------------------------------------------------------------------------------
// Issue 15: the holes in nonce safety, each closed with a test that collects the units the
// senders actually put on the wire (a UDP socket of the test's own, independent of `receive`
// and of our pcap writer) and proves that no (key, nonce) pair repeats.

/// `ivnsec send` to `addr` under `keys` and `state`, with `extra` arguments; JSON summary.
fn send(
    d: &TempDir,
    profile: &str,
    keys: &Path,
    state: &Path,
    addr: &str,
    extra: &[&str],
) -> std::process::Output {
    d.cmd()
        .args(["send", "--profile", profile, "--keys"])
        .arg(keys)
        .args(["--udp", addr, "--json", "--state-dir"])
        .arg(state)
        .args(extra)
        .output()
        .unwrap()
}

/// Issue 15 item 1: one key file, its suite under every spelling (`aes128-gcm`, `/conf`,
/// `/auth`; MACsec bare, `/auth`, `/conf`): one nonce state, so every run continues above the
/// last and no nonce repeats. Another suite under the key and a key file without `profile`
/// are refused before anything is sent.
#[test]
fn one_key_under_every_spelling_of_its_suite_never_repeats_a_nonce() {
    let d = TempDir::new("spell");
    for (suite, spellings, other) in [
        (
            "aes128-gcm",
            ["aes128-gcm", "aes128-gcm/conf", "aes128-gcm/auth"],
            "aes128-ccm",
        ),
        (
            "macsec-gcm-aes-128",
            [
                "macsec-gcm-aes-128",
                "macsec-gcm-aes-128/auth",
                "macsec-gcm-aes-128/conf",
            ],
            "esp-aes128-gcm",
        ),
    ] {
        let keys = keygen(&d, suite, &format!("{suite}.toml"));
        let state = d.path(&format!("st-{suite}"));
        let sink = Sink::new();
        let mut last = 0;
        for p in spellings {
            let o = send(
                &d,
                p,
                &keys,
                &state,
                &sink.addr,
                &["--count", "30", "--reserve-block", "10"],
            );
            assert_eq!(o.status.code(), Some(0), "{p}: {}", text(&o.stderr));
            let s = json::parse("summary", &o);
            assert_eq!(s["nonce_domain"], suite, "{s}");
            assert!(
                s["first_seq"].as_u64().unwrap() > last,
                "{p} restarted: {s}"
            );
            last = s["last_seq"].as_u64().unwrap();
        }
        // Same key length, another suite: refused (one key, one suite).
        let o = send(&d, other, &keys, &state, &sink.addr, &["--count", "5"]);
        assert_eq!(o.status.code(), Some(2), "{other}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("one key serves one suite"),
            "{}",
            text(&o.stderr)
        );
        let units = sink.finish();
        assert_eq!(units.len(), 90, "{suite}");
        let seqs = assert_no_nonce_repeats(suite, &units);
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{suite}: {seqs:?}");
        let hw = std::fs::read_dir(&state)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "hw")
            })
            .count();
        assert_eq!(hw, 1, "one state file for every spelling");
    }

    // A key file without `profile`: the receiver takes it, a sender does not.
    let bare = d.path("bare.toml");
    let t = std::fs::read_to_string(keygen(&d, "aes128-gcm", "full.toml")).unwrap();
    let body: String = t
        .lines()
        .filter(|l| !l.starts_with("profile"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&bare, body).unwrap();
    std::fs::set_permissions(&bare, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let sink = Sink::new();
    let st = d.path("st-bare");
    let o = send(&d, "aes128-gcm", &bare, &st, &sink.addr, &["--count", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no `profile` line"),
        "{}",
        text(&o.stderr)
    );
    assert!(sink.finish().is_empty(), "nothing sent");
    assert!(!st.exists(), "nothing reserved");
}

/// The fingerprint of the documented layout (docs/nonce-safety.md), computed with aws-lc-rs.
fn documented_fingerprint(profile: &str, sa: &str, key: &[u8]) -> String {
    let mac = ivnsec_crypto_fast::PROVIDER
        .keys
        .mac(
            ivnsec_core::crypto::MacAlg::HmacSha256,
            b"ivnsec highwater fingerprint v1",
        )
        .unwrap();
    let mut msg = Vec::new();
    for f in [profile.as_bytes(), sa.as_bytes(), key, &[]] {
        msg.extend_from_slice(&(f.len() as u64).to_be_bytes());
        msg.extend_from_slice(f);
    }
    let mut out = [0u8; ivnsec_core::crypto::MAX_MAC_LEN];
    let n = mac.compute(&[&msg], &mut out);
    hex::encode(&out[..n])
}

/// Issue 15 item 1, the upgrade: a state the previous version wrote under `aes128-gcm/conf`
/// (its file named after that spelling) is honoured by `--profile aes128-gcm`.
#[test]
fn state_written_under_another_spelling_by_the_previous_version_is_honoured() {
    let d = TempDir::new("upgrade");
    let keys = keygen(&d, "aes128-gcm", "k.toml");
    let t: toml::Value = toml::from_str(&std::fs::read_to_string(&keys).unwrap()).unwrap();
    let key = hex::decode(t["key"].as_str().unwrap()).unwrap();
    let state = d.path("st");
    std::fs::create_dir(&state).unwrap();
    let (profile, sa) = ("aes128-gcm/conf", "ivnae key-id 1");
    let fp = documented_fingerprint(profile, sa, &key);
    let old = state.join(format!("aes128-gcm_conf-{}.hw", &fp[..32]));
    std::fs::write(
        &old,
        format!("ivnsec-highwater 1\nprofile {profile}\nsa {sa}\nfingerprint {fp}\nreserved 700\n"),
    )
    .unwrap();
    let sink = Sink::new();
    let o = send(
        &d,
        "aes128-gcm",
        &keys,
        &state,
        &sink.addr,
        &["--count", "20"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let s = json::parse("summary", &o);
    assert_eq!(s["first_seq"], 701, "{s}");
    assert_eq!(
        s["migrated_from"][0],
        old.file_name().unwrap().to_str().unwrap()
    );
    let seqs = assert_no_nonce_repeats("aes128-gcm", &sink.finish());
    assert_eq!(seqs, (701..=720).collect::<Vec<_>>());
    assert!(
        !std::fs::read_to_string(&old)
            .unwrap()
            .starts_with("ivnsec-highwater 1\n"),
        "the old file is no longer a state the previous version would count from"
    );
}

/// Issue 15 item 2: the `.lock` file deleted under a running sender. A second sender can start
/// (nothing shows it the first), but it starts above the first's reservation, and the first
/// stops with `state_lock_lost` (exit 3) before it reserves again: no number goes out twice.
#[test]
fn deleting_the_lock_under_a_running_sender_never_lets_two_share_a_number() {
    let d = TempDir::new("rmlock");
    let profile = "chacha20-poly1305";
    let keys = keygen(&d, profile, "k.toml");
    let state = d.path("nonce-state");
    let sink = Sink::new();
    let args = |c: &mut Command| {
        c.args(["send", "--profile", profile, "--keys"])
            .arg(&keys)
            .args([
                "--udp",
                &sink.addr,
                "--json",
                "--reserve-block",
                "20",
                "--state-dir",
            ])
            .arg(&state);
    };
    let mut c = d.cmd();
    args(&mut c);
    let mut first = Proc(Some(
        c.args(["--rate", "500"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let t0 = Instant::now();
    while try_reserved_mark(&state).unwrap_or(0) < 40 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
    let lock = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "lock"))
        .unwrap();
    std::fs::remove_file(&lock).unwrap();
    let mut c = d.cmd();
    args(&mut c);
    let o = c.args(["--count", "100"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let second = json::parse("summary", &o);
    // The first sender stops at its next reservation (within 20 units at 500/s).
    let t0 = Instant::now();
    while first.child().try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the first sender went on"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = first.take().wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("lock"), "{}", text(&o.stderr));
    let first = json::parse("summary", &o);
    assert_eq!(first["stopped_by"], "state_lock_lost", "{first}");
    let units = sink.finish();
    let n = first["sent"].as_u64().unwrap() + second["sent"].as_u64().unwrap();
    assert_eq!(units.len() as u64, n);
    assert_no_nonce_repeats(profile, &units);
    assert!(
        second["first_seq"].as_u64().unwrap() > first["last_seq"].as_u64().unwrap(),
        "{first} {second}"
    );
}

/// Issue 15 item 3: a mistyped `--state-dir` or a deleted state file under a key that has sent
/// is refused (exit 2, naming the record, the old directory and the option); nothing is sent.
/// The explicit confirmation starts at 1 and says what it risks.
#[test]
fn a_used_key_whose_state_is_missing_is_refused_unless_confirmed() {
    let d = TempDir::new("used");
    let profile = "esp-aes128-gcm";
    let keys = keygen(&d, profile, "k.toml");
    let state = d.path("nonce-state");
    let sink = Sink::new();
    let o = send(&d, profile, &keys, &state, &sink.addr, &["--count", "30"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let e = text(&o.stderr);
    assert!(
        e.contains("warning")
            && e.contains("starting at sequence number 1")
            && e.contains("reused"),
        "{e}"
    );
    let record = d.path("k.toml.used");
    let rec = std::fs::read_to_string(&record).unwrap();
    assert!(rec.contains(state.to_str().unwrap()), "{rec}");
    let typo = d.path("stat");
    for why in ["mistyped", "deleted"] {
        let dir = if why == "mistyped" { &typo } else { &state };
        if why == "deleted" {
            let hw = std::fs::read_dir(&state)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.extension().is_some_and(|x| x == "hw"))
                .unwrap();
            std::fs::remove_file(hw).unwrap();
        }
        let o = send(&d, profile, &keys, dir, &sink.addr, &["--count", "30"]);
        assert_eq!(o.status.code(), Some(2), "{why}");
        let e = text(&o.stderr);
        for w in [
            "--i-know-this-key-is-new",
            record.to_str().unwrap(),
            state.to_str().unwrap(),
        ] {
            assert!(e.contains(w), "{why}: `{w}` missing: {e}");
        }
    }
    let units = sink.finish();
    assert_eq!(units.len(), 30, "the refused runs sent nothing");
    assert_no_nonce_repeats(profile, &units);
    // The confirmation does what it says: it starts at 1 (here reusing numbers on purpose).
    let sink = Sink::new();
    let o = send(
        &d,
        profile,
        &keys,
        &typo,
        &sink.addr,
        &["--count", "1", "--i-know-this-key-is-new"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(json::parse("summary", &o)["first_seq"], 1);
    assert!(
        text(&o.stderr).contains("--i-know-this-key-is-new was given"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(sink.finish().len(), 1);
}

/// Issue 15 item 4: a symlinked `.hw.tmp` is removed, not written through; a symlinked
/// `.lock` and a state directory others may write are refused; the target stays intact and no
/// nonce repeats across the runs.
#[test]
fn links_and_open_permissions_in_the_state_directory_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let d = TempDir::new("links");
    let profile = "aes256-gcm";
    let keys = keygen(&d, profile, "k.toml");
    let state = d.path("nonce-state");
    let victim = d.path("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let sink = Sink::new();
    let o = send(
        &d,
        profile,
        &keys,
        &state,
        &sink.addr,
        &["--count", "20", "--reserve-block", "10"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let hw = std::path::PathBuf::from(json::parse("summary", &o)["state_file"].as_str().unwrap());
    let tmp = std::path::PathBuf::from(format!("{}.tmp", hw.display()));
    let lock = hw.with_extension("lock");
    std::os::unix::fs::symlink(&victim, &tmp).unwrap();
    let o = send(
        &d,
        profile,
        &keys,
        &state,
        &sink.addr,
        &["--count", "20", "--reserve-block", "10"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(json::parse("summary", &o)["first_seq"], 21);
    assert!(std::fs::symlink_metadata(&tmp).is_err());
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let o = send(&d, profile, &keys, &state, &sink.addr, &["--count", "20"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("symbolic link"),
        "{}",
        text(&o.stderr)
    );
    std::fs::remove_file(&lock).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = send(&d, profile, &keys, &state, &sink.addr, &["--count", "20"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("chmod go-w"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let units = sink.finish();
    assert_eq!(units.len(), 40);
    assert_no_nonce_repeats(profile, &units);
}

/// `--reserve-block` is bounded; a `--payload` the link cannot carry is refused before any
/// state is created or any number reserved.
#[test]
fn reserve_block_and_payload_are_bounded_before_anything_is_reserved() {
    let d = TempDir::new("bounds");
    let keys = keygen(&d, "aes128-gcm", "k.toml");
    let state = d.path("nonce-state");
    for (extra, want) in [
        (&["--reserve-block", "0"][..], "1..=1048576"),
        (&["--reserve-block", "1048577"][..], "1..=1048576"),
        (&["--payload", "70000"][..], "65535"),
        (&["--payload", "65500"][..], "UDP datagram"),
    ] {
        let o = send(&d, "aes128-gcm", &keys, &state, "127.0.0.1:9", extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(
            text(&o.stderr).contains(want),
            "{extra:?}: {}",
            text(&o.stderr)
        );
        assert!(!state.exists(), "{extra:?}: state created");
        assert!(
            !d.path("k.toml.used").exists(),
            "{extra:?}: key recorded as used"
        );
    }
    let o = d.run(&["send", "--help"]);
    let h = text(&o.stdout);
    assert!(
        h.contains("1048576") && h.contains("--i-know-this-key-is-new") && h.contains("RISK"),
        "{h}"
    );
    // On an interface: its MTU (a veth interface in a network namespace of the command's own).
    if common::skip_reason().is_none() {
        let o = Command::new("unshare")
            .args(["--net", "--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount -t sysfs none /sys && ip link add d0 type veth peer name d1 && ip link set d0 mtu 1500 up && \
                 exec {BIN} send --profile aes128-gcm --keys {} --iface d0 \
                 --to 02:00:00:00:00:02 --payload 1500 --state-dir {}",
                keys.display(),
                state.display()
            ))
            .env("IVNSEC_STATE_DIR", d.state())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("MTU of d0"), "{}", text(&o.stderr));
        assert!(!state.exists());
    }
}

/// Key files: a device or a huge file is refused at once (bounded read); a file others may
/// read is refused by a sender and only warned about by a receiver; an all-zero key is refused
/// by both.
#[test]
fn key_files_are_read_bounded_private_and_not_all_zero() {
    use std::os::unix::fs::PermissionsExt;
    let d = TempDir::new("keyrules");
    let state = d.path("nonce-state");
    let big = d.path("big.toml");
    std::fs::write(&big, vec![b'#'; 1 << 20]).unwrap();
    for k in [Path::new("/dev/zero"), big.as_path()] {
        for cmd in ["send", "receive"] {
            let mut args = vec![
                cmd,
                "--profile",
                "aes128-gcm",
                "--keys",
                k.to_str().unwrap(),
                "--udp",
                "127.0.0.1:0",
            ];
            if cmd == "send" {
                args.extend(["--state-dir", state.to_str().unwrap()]);
            }
            let o = d.run(&args);
            assert_eq!(o.status.code(), Some(2), "{cmd} {k:?}");
            assert!(
                text(&o.stderr).contains(k.to_str().unwrap()),
                "{}",
                text(&o.stderr)
            );
        }
    }
    let open = keygen(&d, "aes128-gcm", "open.toml");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o640)).unwrap();
    let o = send(
        &d,
        "aes128-gcm",
        &open,
        &state,
        "127.0.0.1:9",
        &["--count", "1"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("chmod 600"), "{}", text(&o.stderr));
    let o = d.run(&[
        "receive",
        "--profile",
        "aes128-gcm",
        "--keys",
        open.to_str().unwrap(),
        "--udp",
        "127.0.0.1:0",
        "--seconds",
        "0.1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("readable by others"),
        "{}",
        text(&o.stderr)
    );
    let zero = d.path("zero.toml");
    std::fs::write(
        &zero,
        format!(
            "profile = \"aes128-gcm\"\nkey = \"{}\"\niv = \"0102030405060708090a0b0c\"\n",
            "0".repeat(32)
        ),
    )
    .unwrap();
    std::fs::set_permissions(&zero, std::fs::Permissions::from_mode(0o600)).unwrap();
    for cmd in ["send", "receive"] {
        let mut args = vec![
            cmd,
            "--profile",
            "aes128-gcm",
            "--keys",
            zero.to_str().unwrap(),
            "--udp",
            "127.0.0.1:0",
        ];
        if cmd == "send" {
            args.extend(["--state-dir", state.to_str().unwrap()]);
        }
        let o = d.run(&args);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        assert!(
            text(&o.stderr).contains("all zeros"),
            "{cmd}: {}",
            text(&o.stderr)
        );
    }
    assert!(!state.exists());
}
