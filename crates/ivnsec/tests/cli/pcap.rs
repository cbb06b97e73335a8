//! `ivnsec pcap verify` on captures written by an independent tool: frames come from `ivnsec
//! frame protect`, and Python's `struct` module wraps them into a classic pcap file (microsecond
//! magic), so the file format side is not our own writer. Covers IVN-AE, MACsec and ESP: all ok,
//! tampered and replayed frames (exact reasons and counters), skipped foreign frames, truncated
//! and malformed files (exit 2), and the `--json` shape. Also the hostile-input answers: a record
//! longer than the wire, a capture with every frame skipped (exit 1), a truncated last record
//! (reported, not fatal; `--fail-on-truncated`), `--json` of 500,000 records in bounded memory, and the capture a
//! sender killed with SIGKILL leaves.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::common;
use crate::common::{python, run_with_stdin, text};

/// `frame protect` of each plain frame (hex) in one batch, so sequence numbers count up.
fn protect_batch(sa: &[&str], plains: &[String]) -> Vec<String> {
    let input: String = plains.iter().map(|p| format!("{p}\n")).collect();
    let o = run_with_stdin(
        &[&["frame", "protect"][..], sa, &["-"]].concat(),
        Some(&input),
    );
    assert!(o.status.success(), "protect: {}", text(&o.stderr));
    text(&o.stdout).lines().map(str::to_string).collect()
}

/// Writes `frames` (hex, or `hex/orig_len` for a record the capture cut short) as a classic pcap
/// with Python's struct module.
const PY_WRAP: &str = r#"
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i, line in enumerate(sys.stdin.read().split()):
        hexdata, _, orig = line.partition("/")
        data = bytes.fromhex(hexdata)
        orig = int(orig) if orig else len(data)
        f.write(struct.pack("<IIII", 1700000000 + i, 1000 * i, len(data), orig))
        f.write(data)
"#;

struct Capture(PathBuf);

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn skip(test: &str, why: &str) {
    // Straight to stderr: libtest captures eprintln!, and the reason should show.
    let _ = std::io::Write::write_fmt(
        &mut std::io::stderr(),
        format_args!("SKIPPED {test}: {why}\n"),
    );
}

fn python_capture(name: &str, frames: &[String]) -> Capture {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-pcap-{}-{name}.pcap", std::process::id()));
    let input: String = frames.iter().map(|f| format!("{f}\n")).collect();
    let mut child = Command::new(python().unwrap())
        .args(["-c", PY_WRAP])
        .arg(&path)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    assert!(child.wait().unwrap().success(), "python3 pcap writer");
    Capture(path)
}

fn verify(sa: &[&str], cap: &Capture, extra: &[&str]) -> (i32, String, String) {
    let file = cap.0.to_str().unwrap();
    let o = run_with_stdin(
        &[&["pcap", "verify"][..], sa, extra, &[file]].concat(),
        None,
    );
    (o.status.code().unwrap(), text(&o.stdout), text(&o.stderr))
}

/// Flips one bit of byte `at` (counted from the end when negative) of a hex frame.
fn flip(hex_frame: &str, at: isize) -> String {
    let mut b = hex::decode(hex_frame).unwrap();
    let i = if at < 0 {
        (b.len() as isize + at) as usize
    } else {
        at as usize
    };
    b[i] ^= 0x04;
    hex::encode(b)
}

fn eth_plain(payload: &str) -> String {
    format!("0200000000020200000000010800{payload}")
}

macro_rules! need_python {
    ($name:literal) => {
        if python().is_none() {
            return skip($name, "python3 not installed");
        }
    };
}

const IVNAE: [&str; 6] = [
    "--profile",
    "aes128-gcm",
    "--key",
    "000102030405060708090a0b0c0d0e0f",
    "--iv",
    "a0a1a2a3a4a5a6a7a8a9aaab",
];

fn ivnae_frames(n: usize) -> Vec<String> {
    let plains: Vec<String> = (0..n)
        .map(|i| eth_plain(&format!("4500{i:02x}0102030405060708090a0b0c0d0e0f")))
        .collect();
    protect_batch(&[&IVNAE[..], &["--seq", "1"]].concat(), &plains)
}

#[test]
fn ivnae_all_ok() {
    need_python!("ivnae_all_ok");
    let f = ivnae_frames(3);
    let cap = python_capture("ivnae-ok", &f);
    let (rc, out, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        "1 ok\n2 ok\n3 ok\ncounters: frames=3 ok=3 drop=0 skip=0\n"
    );
}

#[test]
fn ivnae_tampered_and_replayed() {
    need_python!("ivnae_tampered_and_replayed");
    let f = ivnae_frames(3);
    // 2 has a flipped tag bit; 4 replays 1; 5 is the untampered 2, still new to the window
    // because the tampered copy never entered it.
    let frames = [
        f[0].clone(),
        flip(&f[1], -1),
        f[2].clone(),
        f[0].clone(),
        f[1].clone(),
    ];
    let cap = python_capture("ivnae-attacks", &frames);
    let (rc, out, _) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 1);
    assert_eq!(
        out,
        "1 ok\n2 drop bad_tag\n3 ok\n4 drop replay_duplicate\n5 ok\n\
         counters: frames=5 ok=3 drop=2 skip=0 replay_duplicate=1 bad_tag=1\n"
    );
    // With a window of 1, frame 2 after frame 3 is too old; the replay state carries over.
    let cap = python_capture("ivnae-old", &[f[0].clone(), f[2].clone(), f[1].clone()]);
    let (rc, out, _) = verify(&IVNAE, &cap, &["--replay-window", "1"]);
    assert_eq!(rc, 1);
    assert_eq!(
        out,
        "1 ok\n2 ok\n3 drop replay_too_old\ncounters: frames=3 ok=2 drop=1 skip=0 replay_too_old=1\n"
    );
    // A flipped header bit (the sequence number) and a payload bit.
    let cap = python_capture("ivnae-flips", &[flip(&f[0], 25), flip(&f[0], 30)]);
    let (rc, out, _) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 1);
    assert_eq!(
        out,
        "1 drop bad_tag\n2 drop bad_tag\ncounters: frames=2 ok=0 drop=2 skip=0 bad_tag=2\n"
    );
}

#[test]
fn ivnae_skips_foreign_frames() {
    need_python!("ivnae_skips_foreign_frames");
    let f = ivnae_frames(1);
    let frames = [
        eth_plain("450000140000000040110000"),
        f[0].clone(),
        "ffffffffffff0200000000010806000108000604000102".to_string(),
        "02000000000202000000000188e52c00000000010203".to_string(),
        "02000000".to_string(),
        // A record that kept only 20 of the 46 bytes on the wire (cut by a snaplen).
        format!("{}/46", &f[0][..40]),
    ];
    let cap = python_capture("ivnae-skip", &frames);
    let (rc, out, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        "1 skip ethertype 0x0800\n2 ok\n3 skip ethertype 0x0806\n4 skip ethertype 0x88e5\n\
         5 skip runt frame of 4 bytes\n6 skip captured 20 of 46 bytes (snaplen)\n\
         counters: frames=6 ok=1 drop=0 skip=5\n"
    );
    // A capture without frames: nothing verified, exit 1 (as when every frame is skipped).
    let cap = python_capture("empty", &[]);
    let (rc, out, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 1, "{err}");
    assert_eq!(out, "counters: frames=0 ok=0 drop=0 skip=0\n");
}

/// A capture of a sender of the previous release (IVN-AE version 1, frame of the independent
/// Python reference) next to a version 2 frame: `bad_version` unless `--accept-ivnae-v1`.
#[test]
fn ivnae_version_1_frames_need_accept_ivnae_v1() {
    need_python!("ivnae_version_1_frames_need_accept_ivnae_v1");
    use ivnsec_conformance::vectors::ivnae::KATS;
    let kat = |v: u8| {
        KATS.iter()
            .find(|k| k.profile == "aes128-gcm/conf" && k.key_id == 3 && k.version == v)
            .unwrap()
    };
    let (v1, v2) = (kat(1), kat(2));
    let sa = [
        "--profile",
        "aes128-gcm",
        "--key",
        v1.key,
        "--iv",
        v1.iv,
        "--key-id",
        "3",
        "--replay-window",
        "0",
    ];
    // Sequence number 42 as version 1, then the same number as version 2 (a replay either way).
    let cap = python_capture("ivnae-v1", &[v1.frame.to_string(), v2.frame.to_string()]);
    let (rc, out, _) = verify(&sa, &cap, &[]);
    assert_eq!(rc, 1);
    assert_eq!(
        out,
        "1 drop bad_version\n2 ok\ncounters: frames=2 ok=1 drop=1 skip=0 bad_version=1\n"
    );
    let (rc, out, _) = verify(&sa, &cap, &["--accept-ivnae-v1"]);
    assert_eq!(rc, 1);
    assert_eq!(
        out,
        "1 ok\n2 drop replay_duplicate\ncounters: frames=2 ok=1 drop=1 skip=0 replay_duplicate=1\n"
    );
}

#[test]
fn bad_files_exit_2_naming_file_record_and_offset() {
    need_python!("bad_files_exit_2_naming_file_record_and_offset");
    let f = ivnae_frames(3);
    let cap = python_capture("trunc", &f);
    let bytes = std::fs::read(&cap.0).unwrap();
    // Cut the last record short by 5 bytes.
    std::fs::write(&cap.0, &bytes[..bytes.len() - 5]).unwrap();
    let len = f[0].len() / 2;
    let third = 24 + 2 * (16 + len);
    let (rc, out, err) = verify(&IVNAE, &cap, &["--fail-on-truncated"]);
    assert_eq!(rc, 2, "{err}");
    assert_eq!(out, "1 ok\n2 ok\n", "frames before the damage are reported");
    let want = format!(
        "{}: record 3 at byte offset {third}: truncated record: {} of {len} captured bytes",
        cap.0.display(),
        len - 5
    );
    assert!(err.contains(&want), "{err}\nwanted: {want}");
    // A cut record header.
    std::fs::write(&cap.0, &bytes[..third + 9]).unwrap();
    let (rc, _, err) = verify(&IVNAE, &cap, &["--json", "--fail-on-truncated"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains(&format!(
            "record 3 at byte offset {third}: truncated record header: 9 of 16 bytes"
        )),
        "{err}"
    );
    // Not a pcap at all; a huge captured length; a missing file.
    std::fs::write(&cap.0, b"this is not a capture file").unwrap();
    let (rc, _, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 2);
    assert!(err.contains("bad magic"), "{err}");
    let mut huge = bytes.clone();
    huge[24 + 8..24 + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    std::fs::write(&cap.0, &huge).unwrap();
    let (rc, _, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("record 1 at byte offset 24: captured length 2147483647 exceeds the limit"),
        "{err}"
    );
    let missing = Capture(cap.0.with_extension("missing"));
    let (rc, _, err) = verify(&IVNAE, &missing, &[]);
    assert_eq!(rc, 2);
    assert!(err.contains(missing.0.to_str().unwrap()), "{err}");
}

#[test]
fn json_shape() {
    need_python!("json_shape");
    let f = ivnae_frames(2);
    let frames = [f[0].clone(), f[0].clone(), eth_plain("00"), f[1].clone()];
    let cap = python_capture("json", &frames);
    let (rc, out, _) = verify(&IVNAE, &cap, &["--json"]);
    assert_eq!(rc, 1);
    let mut v: Value = serde_json::from_str(&out).unwrap();
    // IVN-AE frames carry their header fields (read here from the frames' own bytes,
    // docs/wire-ivnae.md §1: version 14, suite 15, key id 16, flags 17, sequence 18..26, the
    // 16-byte tag last); other frames none.
    for (i, frame) in frames.iter().enumerate() {
        let got = v["frames"][i].as_object_mut().unwrap().remove("ivnae");
        if i == 2 {
            assert!(got.is_none(), "{got:?}");
            continue;
        }
        let b = hex::decode(frame).unwrap();
        let want = serde_json::json!({
            "version": b[14], "suite_id": b[15], "key_id": b[16], "flags": b[17],
            "seq": u64::from_be_bytes(b[18..26].try_into().unwrap()),
            "body_len": b.len() - 26 - 16,
            "tag": hex::encode(&b[b.len() - 16..]),
        });
        assert_eq!(got, Some(want), "frame {}", i + 1);
    }
    let want = serde_json::json!({
        "frames": [
            {"index": 1, "verdict": "ok", "reason": null},
            {"index": 2, "verdict": "drop", "reason": "replay_duplicate"},
            {"index": 3, "verdict": "skip", "reason": "ethertype 0x0800"},
            {"index": 4, "verdict": "ok", "reason": null},
        ],
        "counters": {
            "frames": 4, "ok": 2, "drop": 1, "skip": 1, "not_validated": 0,
            "drops": {"replay_duplicate": 1},
        },
    });
    assert_eq!(v, want);
}

const MACSEC_KEY: &str = "ad7a2bd03eac835a6f620fdcb506b345";

fn macsec_sa(extra: &[&'static str]) -> Vec<&'static str> {
    let mut v = vec![
        "--profile",
        "macsec-gcm-aes-128",
        "--key",
        MACSEC_KEY,
        "--sci",
        "0200000000010001",
        "--an",
        "2",
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn macsec_verdicts_and_counters() {
    need_python!("macsec_verdicts_and_counters");
    let plains: Vec<String> = (0..3)
        .map(|i| eth_plain(&format!("45{i:02x}aabb")))
        .collect();
    let f = protect_batch(&macsec_sa(&["--pn", "1"]), &plains);
    let ok = python_capture("macsec-ok", &f);
    let (rc, out, err) = verify(&macsec_sa(&[]), &ok, &[]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        "1 ok\n2 ok\n3 ok\ncounters: frames=3 ok=3 drop=0 skip=0\n\
         macsec: InOctetsDecrypted=18 InPktsOK=3\n"
    );
    // Tampered ICV, a replay inside the window, an IVN-AE frame (skipped), and with window 0 the
    // replay is below the lowest acceptable PN: late.
    let ivnae = ivnae_frames(1).remove(0);
    let frames = [
        f[0].clone(),
        flip(&f[1], -1),
        f[2].clone(),
        f[0].clone(),
        ivnae,
    ];
    let cap = python_capture("macsec-attacks", &frames);
    let (rc, out, _) = verify(&macsec_sa(&[]), &cap, &[]);
    assert_eq!(rc, 1);
    assert_eq!(
        out,
        "1 ok\n2 drop bad_tag\n3 ok\n4 drop replay_duplicate\n5 skip ethertype 0x88b5\n\
         counters: frames=5 ok=2 drop=2 skip=1 replay_duplicate=1 bad_tag=1\n\
         macsec: InOctetsDecrypted=18 InPktsOK=2 InPktsNotValid=1\n"
    );
    let (rc, out, _) = verify(&macsec_sa(&[]), &cap, &["--replay-window", "0"]);
    assert_eq!(rc, 1);
    assert!(out.contains("4 drop late\n"), "{out}");
    // validateFrames check: an integrity-only frame with a bad ICV is delivered, not validated.
    let io = protect_batch(&macsec_sa(&["--pn", "1", "--integrity-only"]), &plains[..1]);
    let cap = python_capture("macsec-check", &[flip(&io[0], -1)]);
    let (rc, out, _) = verify(&macsec_sa(&["--validate", "check"]), &cap, &["--json"]);
    assert_eq!(rc, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["frames"],
        serde_json::json!([{"index": 1, "verdict": "not_validated", "reason": "invalid"}])
    );
    assert_eq!(v["counters"]["not_validated"], 1);
    assert_eq!(v["counters"]["macsec"]["InPktsInvalid"], 1);
}

const ESP_SA: [&str; 6] = [
    "--profile",
    "esp-aes128-gcm",
    "--key",
    "000102030405060708090a0b0c0d0e0f10111213",
    "--spi",
    "4096",
];

/// IPv4 (10.0.0.1 → 10.0.0.2, checksum filled) carrying `proto` and `payload`.
fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    let total = 20 + payload.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        proto,
        0,
        0,
    ];
    p.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let mut sum = 0u32;
    for w in p.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// IPv6 (2001:db8::1 → 2001:db8::2) carrying `nh` and `payload`.
fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut p = vec![0x60, 0, 0, 0, (n >> 8) as u8, n as u8, nh, 64];
    for last in [1u8, 2] {
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 11]);
        p.push(last);
    }
    p.extend_from_slice(payload);
    p
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut u = Vec::with_capacity(len);
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&(len as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn eth(ethertype: &str, packet: &[u8]) -> String {
    format!("020000000002020000000001{ethertype}{}", hex::encode(packet))
}

/// ESP over UDP 4500 (RFC 3948): the ESP header and the rest of an IPv4 ESP packet after a
/// UDP header.
fn udp_encap(esp_packet_hex: &str) -> Vec<u8> {
    let p = hex::decode(esp_packet_hex).unwrap();
    ipv4(17, &udp(4500, 4500, &p[20..]))
}

#[test]
fn esp_verdicts_with_ipv4_ipv6_udp_encapsulation_and_vlan() {
    need_python!("esp_verdicts_with_ipv4_ipv6_udp_encapsulation_and_vlan");
    let inner = udp(5000, 5001, b"steering angle");
    let plain = [
        hex::encode(ipv4(17, &inner)),
        hex::encode(ipv6(17, &inner)),
        hex::encode(ipv4(17, &inner)),
        hex::encode(ipv4(17, &inner)),
        hex::encode(ipv4(17, &inner)),
    ];
    let p = protect_batch(&[&ESP_SA[..], &["--seq", "1"]].concat(), &plain);
    let pkt = |i: usize| hex::decode(&p[i]).unwrap();
    let frames = [
        eth("0800", &pkt(0)),
        eth("86dd", &pkt(1)),
        // Sequence number 3 over UDP 4500.
        eth("0800", &udp_encap(&p[2])),
        // Sequence number 4 behind an 802.1Q tag (VLAN 5).
        format!("0200000000020200000000018100000508 00{}", p[3]).replace(' ', ""),
        // Tampered ICV (sequence number 5).
        eth("0800", &hex::decode(flip(&p[4], -1)).unwrap()),
        // Replays: number 1 again as plain ESP, number 3 again over UDP.
        eth("0800", &pkt(0)),
        eth("0800", &udp_encap(&p[2])),
        // Not ESP: IKE on 4500 (non-ESP marker), a NAT-keepalive, DNS, TCP, ARP.
        eth(
            "0800",
            &ipv4(17, &udp(4500, 4500, &[0, 0, 0, 0, 1, 2, 3, 4])),
        ),
        eth("0800", &ipv4(17, &udp(4500, 4500, &[0xff]))),
        eth("0800", &ipv4(17, &udp(53, 53, b"q"))),
        eth("86dd", &ipv6(6, &[0; 20])),
        "ffffffffffff0200000000010806000108000604000102".to_string(),
    ];
    let cap = python_capture("esp", &frames);
    let (rc, out, err) = verify(&ESP_SA, &cap, &[]);
    assert_eq!(rc, 1, "{err}");
    assert_eq!(
        out,
        "1 ok\n2 ok\n3 ok\n4 ok\n5 drop bad_tag\n6 drop replay_duplicate\n\
         7 drop replay_duplicate\n8 skip udp 4500 non-esp marker (ike)\n\
         9 skip udp 4500 nat-keepalive\n10 skip udp 53 -> 53\n11 skip ip protocol 6\n\
         12 skip ethertype 0x0806\n\
         counters: frames=12 ok=4 drop=3 skip=5 replay_duplicate=2 bad_tag=1\n"
    );
    // The good ones alone: exit 0.
    let cap = python_capture("esp-ok", &frames[..4]);
    let (rc, out, err) = verify(&ESP_SA, &cap, &[]);
    assert_eq!(rc, 0, "{err}");
    assert!(
        out.ends_with("counters: frames=4 ok=4 drop=0 skip=0\n"),
        "{out}"
    );
    // Another SPI is not ours: unknown_sa.
    let (rc, out, _) = verify(
        &[&ESP_SA[..4], &["--spi", "4097"]].concat(),
        &cap,
        &["--json"],
    );
    assert_eq!(rc, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["counters"]["drops"]["unknown_sa"], 4);
}

/// An SPI in 1-255 (reserved for IANA by RFC 4303 §2.1, not forbidden on the wire) is verified
/// like any other; SPI 0 (local use, never on the wire) is a usage error.
#[test]
fn esp_spi_52_is_verified_and_spi_0_refused() {
    need_python!("esp_spi_52_is_verified_and_spi_0_refused");
    let sa = [&ESP_SA[..4], &["--spi", "52"]].concat();
    let inner = udp(5000, 5001, b"wheel speed");
    let plain = [hex::encode(ipv4(17, &inner)), hex::encode(ipv6(17, &inner))];
    let p = protect_batch(&[&sa[..], &["--seq", "1"]].concat(), &plain);
    // SPI 52 on the wire, right after the IPv4 header.
    assert_eq!(&p[0][40..48], "00000034");
    let pkt = |i: usize| hex::decode(&p[i]).unwrap();
    let cap = python_capture("esp-spi-52", &[eth("0800", &pkt(0)), eth("86dd", &pkt(1))]);
    let (rc, out, err) = verify(&sa, &cap, &["--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["counters"]["ok"], 2, "{out}");
    let (rc, out, err) = verify(&[&ESP_SA[..4], &["--spi", "0"]].concat(), &cap, &[]);
    assert_eq!((rc, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("--spi 0 is reserved for local use"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    need_python!("usage_errors_exit_2");
    let cap = python_capture("usage", &ivnae_frames(1));
    let (rc, _, err) = verify(&["--profile", "aes999-gcm"], &cap, &[]);
    assert_eq!(rc, 2, "{err}");
    let (rc, _, err) = verify(&["--profile", "esp-aes128-gcm"], &cap, &[]);
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("--spi"), "{err}");
    let o = run_with_stdin(&["pcap", "verify", "--help"], None);
    assert!(o.status.success());
    assert!(text(&o.stdout).contains("--replay-window"));
}

/// A record that claims fewer bytes on the wire than it captured is malformed: skipped with
/// that reason and counted, and the frames around it are checked as usual.
#[test]
fn record_longer_than_the_wire_is_skipped_as_malformed() {
    need_python!("record_longer_than_the_wire_is_skipped_as_malformed");
    let f = ivnae_frames(2);
    let len = f[0].len() / 2;
    let cap = python_capture(
        "longer",
        &[f[0].clone(), format!("{}/20", f[1]), f[1].clone()],
    );
    let (rc, out, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "1 ok\n2 skip malformed record: captured length {len} above the original length 20\n\
             3 ok\ncounters: frames=3 ok=2 drop=0 skip=1\n"
        )
    );
}

/// Frames read but none checked (a MACsec capture under an IVN-AE profile: all skipped) is no
/// success: exit 1 and a sentence on stderr. An empty capture (a file header only) is the same:
/// nothing was verified, exit 1, and stderr says it holds no frames.
#[test]
fn a_capture_with_every_frame_skipped_exits_1_and_says_so() {
    need_python!("a_capture_with_every_frame_skipped_exits_1_and_says_so");
    let plains: Vec<String> = (0..2)
        .map(|i| eth_plain(&format!("45{i:02x}aabb")))
        .collect();
    let macsec = protect_batch(&macsec_sa(&["--pn", "1"]), &plains);
    let cap = python_capture("all-skipped", &macsec);
    let (rc, out, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 1, "{err}");
    assert_eq!(
        out,
        "1 skip ethertype 0x88e5\n2 skip ethertype 0x88e5\n\
         counters: frames=2 ok=0 drop=0 skip=2\n"
    );
    assert!(
        err.contains("NOTHING VERIFIED: all 2 frames") && err.contains("--profile aes128-gcm"),
        "{err}"
    );
    // The right profile checks them.
    let (rc, _, err) = verify(&macsec_sa(&[]), &cap, &[]);
    assert_eq!(rc, 0, "{err}");
    let cap = python_capture("nothing", &[]);
    let (rc, _, err) = verify(&IVNAE, &cap, &["--json"]);
    assert_eq!(rc, 1, "{err}");
    assert!(
        err.contains("NOTHING VERIFIED: ") && err.contains("holds no frames"),
        "{err}"
    );
}

/// A capture that ends inside its last record (what a writer killed mid-record leaves): by
/// default the record is reported and counted as skipped and the exit code follows the
/// verdicts; with --fail-on-truncated it is a bad file (exit 2) that still reports the records
/// before it — their counters on stderr, and with --json a whole document with an `error` key.
#[test]
fn truncated_last_record_is_reported_not_fatal() {
    need_python!("truncated_last_record_is_reported_not_fatal");
    let f = ivnae_frames(3);
    let cap = python_capture("tail", &f);
    let bytes = std::fs::read(&cap.0).unwrap();
    let len = f[0].len() / 2;
    let third = 24 + 2 * (16 + len);
    std::fs::write(&cap.0, &bytes[..bytes.len() - 5]).unwrap();

    let (rc, _, err) = verify(&IVNAE, &cap, &["--fail-on-truncated"]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("the capture ends inside record 3")
            && err.contains("counters: frames=2 ok=2 drop=0 skip=0")
            && err.contains("--fail-on-truncated"),
        "{err}"
    );
    let (rc, out, _) = verify(&IVNAE, &cap, &["--json", "--fail-on-truncated"]);
    assert_eq!(rc, 2);
    let v: Value = serde_json::from_str(&out).expect("a whole JSON document");
    assert_eq!(v["frames"].as_array().unwrap().len(), 2);
    assert_eq!(v["counters"]["ok"], 2);
    assert!(
        v["error"].as_str().unwrap().ends_with(&format!(
            "record 3 at byte offset {third}: truncated record: {} of {len} captured bytes",
            len - 5
        )),
        "{v}"
    );

    let (rc, out, err) = verify(&IVNAE, &cap, &[]);
    assert_eq!(rc, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "1 ok\n2 ok\n3 skip truncated record: {} of {len} captured bytes (the capture ends \
             inside it)\ncounters: frames=3 ok=2 drop=0 skip=1\n",
            len - 5
        )
    );
    assert!(err.contains("the capture ends inside this record"), "{err}");
    // Cut inside the record header, as JSON.
    std::fs::write(&cap.0, &bytes[..third + 9]).unwrap();
    let (rc, out, err) = verify(&IVNAE, &cap, &["--json"]);
    assert_eq!(rc, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["frames"][2],
        serde_json::json!({"index": 3, "verdict": "skip",
            "reason": "truncated record header: 9 of 16 bytes (the capture ends inside it)"})
    );
    assert_eq!(v["counters"]["frames"], 3);
    assert!(v.get("error").is_none());
    let help = text(&run_with_stdin(&["pcap", "verify", "--help"], None).stdout);
    assert!(
        help.contains("--fail-on-truncated") && help.contains("every one was skipped"),
        "{help}"
    );
}

/// `--json` is streamed: 500,000 records verify under a 32 MiB data limit (`ulimit -d`; the
/// document held in memory needed about 50 MB for them), and the output is one whole document
/// with every frame in order and the counters.
#[test]
fn json_of_half_a_million_records_streams_in_bounded_memory() {
    need_python!("json_of_half_a_million_records_streams_in_bounded_memory");
    const N: usize = 500_000;
    let f = ivnae_frames(1);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-pcap-{}-many.pcap", std::process::id()));
    // The file by hand (pcap-savefile(5)): header, then one IVN-AE frame and N − 1 IPv4 frames.
    let mut file = Vec::with_capacity(24 + N * 80);
    file.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    file.extend_from_slice(&2u16.to_le_bytes());
    file.extend_from_slice(&4u16.to_le_bytes());
    for w in [0u32, 0, 65535, 1] {
        file.extend_from_slice(&w.to_le_bytes());
    }
    let good = hex::decode(&f[0]).unwrap();
    let other = hex::decode(eth_plain("450000140000000040110000")).unwrap();
    for i in 0..N {
        let d = if i == 0 { &good } else { &other };
        for w in [1_700_000_000u32, i as u32, d.len() as u32, d.len() as u32] {
            file.extend_from_slice(&w.to_le_bytes());
        }
        file.extend_from_slice(d);
    }
    std::fs::write(&path, &file).unwrap();
    let cap = Capture(path);
    let o = Command::new("sh")
        .args([
            "-c",
            "ulimit -d 32768 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_ivnsec"),
            "pcap",
            "verify",
        ])
        .args(IVNAE)
        .arg("--json")
        .arg(&cap.0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));

    #[derive(serde::Deserialize)]
    struct Frame {
        index: u64,
        verdict: String,
        reason: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Doc {
        frames: Vec<Frame>,
        counters: Value,
    }
    let doc: Doc = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc.frames.len(), N);
    for (i, fr) in doc.frames.iter().enumerate() {
        assert_eq!(fr.index, i as u64 + 1);
        let want = if i == 0 {
            ("ok", None)
        } else {
            ("skip", Some("ethertype 0x0800"))
        };
        assert_eq!(
            (fr.verdict.as_str(), fr.reason.as_deref()),
            want,
            "frame {}",
            i + 1
        );
    }
    assert_eq!(
        doc.counters,
        serde_json::json!({"frames": N, "ok": 1, "drop": 0, "skip": N - 1,
            "not_validated": 0, "drops": {}})
    );
}

/// A sender killed with SIGKILL leaves a capture of whole records: every unit that reached the
/// receiver before the kill is in it (the writer flushes each record; a buffered writer would
/// still hold them), byte for byte as the receiver got it.
#[test]
fn killed_sender_leaves_a_readable_capture() {
    let d = common::TempDir::new("pcap-kill");
    let keys = d.path("k.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let pcap = d.path("tx.pcap");
    let mut child = d
        .cmd()
        .args(["send", "--profile", "aes128-gcm", "--keys"])
        .arg(&keys)
        .arg("--state-dir")
        .arg(d.path("hw"))
        .args(["--udp", &sink.local_addr().unwrap().to_string()])
        .args(["--rate", "400", "--pcap"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    const GOT: usize = 40;
    let mut units = Vec::new();
    let mut buf = [0u8; 2048];
    while units.len() < GOT {
        match sink.recv(&mut buf) {
            Ok(n) => units.push(buf[..n].to_vec()),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("sender sent nothing: {e}");
            }
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no flush at exit
    child.wait().unwrap();
    let mut r = ivnsec_net::pcap::PcapReader::open(&pcap).unwrap();
    let mut records = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap_or_else(|e| panic!("the capture ends cleanly: {e}"));
        records.push(rec.data.to_vec());
    }
    // The last unit received may have been killed between its send and its record.
    assert!(records.len() >= GOT - 1, "{} records", records.len());
    for (i, u) in units.iter().take(GOT - 1).enumerate() {
        assert_eq!(&records[i], u, "record {} is the unit sent", i + 1);
    }
}
