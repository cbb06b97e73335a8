//! pcap files against independent tools: tshark reads what `PcapWriter` writes; `PcapReader`
//! reads what Python's `struct` module and scapy's `wrpcap` write (microsecond and nanosecond
//! magic, both byte orders). Tools that are missing make their test print a skip reason; CI
//! installs tshark (scripts/interop-macsec) and scapy in `.venv` (scripts/interop-esp).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use ivnsec_net::pcap::{MAX_CAPLEN, PcapReader, PcapWriter, Record, TsResolution};

fn skip(test: &str, why: &str) {
    // Straight to stderr: libtest captures eprintln!, and the reason should show.
    let _ = std::io::Write::write_fmt(
        &mut std::io::stderr(),
        format_args!("SKIPPED {test}: {why}\n"),
    );
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pcap-{}-{name}", std::process::id()))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// An Ethernet/IPv4/UDP frame with `n` payload bytes (checksums zero; tshark does not mind).
fn udp_frame(n: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = 20 + 8 + n;
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    let ulen = 8 + n;
    f.extend_from_slice(&[0x30, 0x39, 0x30, 0x3a, (ulen >> 8) as u8, ulen as u8, 0, 0]);
    f.extend((0..n).map(|i| (i * 7) as u8));
    f
}

fn at(secs: u64, nanos: u32) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
}

#[test]
fn tshark_reads_our_file() {
    if !have("tshark", "--version") {
        return skip(
            "tshark_reads_our_file",
            "tshark not installed (apt-get install -y tshark)",
        );
    }
    let path = tmp("ours.pcap");
    let mut ivnae = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5, 1, 0, 0, 0];
    ivnae.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0x08, 0x00, 0xaa, 0xbb]);
    let frames = [
        (at(1_700_000_000, 123_456_789), udp_frame(18)),
        (at(1_700_000_001, 1), ivnae),
        (at(1_700_000_002, 999_999_999), udp_frame(1472)),
    ];
    let mut w = PcapWriter::create(&path).unwrap();
    for (ts, f) in &frames {
        w.write_frame(*ts, f).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args(["-T", "fields", "-E", "separator=,"])
        .args(["-e", "frame.number", "-e", "frame.time_epoch"])
        .args(["-e", "frame.cap_len", "-e", "frame.len", "-e", "eth.type"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "1,1700000000.123456789,60,60,0x0800",
            "2,1700000001.000000001,30,30,0x88b5",
            "3,1700000002.999999999,1514,1514,0x0800",
        ],
        "tshark -r output"
    );
}

#[test]
fn tshark_sees_snaplen_cut() {
    if !have("tshark", "--version") {
        return skip("tshark_sees_snaplen_cut", "tshark not installed");
    }
    let path = tmp("cut.pcap");
    let file = std::fs::File::create(&path).unwrap();
    let mut w = PcapWriter::with_options(file, TsResolution::Micro, 64).unwrap();
    w.write_frame(at(5, 2_500_000), &udp_frame(100)).unwrap();
    drop(w);
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args(["-T", "fields", "-E", "separator=,"])
        .args([
            "-e",
            "frame.time_epoch",
            "-e",
            "frame.cap_len",
            "-e",
            "frame.len",
        ])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "5.002500000,64,142"
    );
}

/// Writes a capture with Python's `struct` module: magic, byte order and records chosen there.
const PY_STRUCT: &str = r#"
import struct, sys
path, order, magic = sys.argv[1], sys.argv[2], int(sys.argv[3], 16)
recs = [
    (1700000000, 123456, bytes(range(60)), 60),
    (1700000000, 999999, b"\xff" * 14 + b"tail", 18),
    (1700000005, 7, bytes(40), 1514),
]
with open(path, "wb") as f:
    f.write(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1))
    for sec, frac, data, orig in recs:
        f.write(struct.pack(order + "IIII", sec, frac, len(data), orig))
        f.write(data)
"#;

fn python_file(order: &str, magic: &str, name: &str) -> Option<Vec<Record>> {
    let path = tmp(name);
    let ok = Command::new("python3")
        .args(["-c", PY_STRUCT])
        .arg(&path)
        .args([order, magic])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return None;
    }
    let recs = PcapReader::open(&path)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    Some(recs)
}

#[test]
fn reads_python_struct_files() {
    if !have("python3", "--version") {
        return skip("reads_python_struct_files", "python3 not installed");
    }
    for (order, magic, unit) in [
        ("<", "a1b2c3d4", 1_000),
        ("<", "a1b23c4d", 1),
        (">", "a1b2c3d4", 1_000),
        (">", "a1b23c4d", 1),
    ] {
        let name = format!("py-{}-{magic}.pcap", if order == "<" { "le" } else { "be" });
        let recs = python_file(order, magic, &name).expect("python3 struct script failed");
        let what = format!("{order} {magic}");
        assert_eq!(recs.len(), 3, "{what}");
        assert_eq!(
            recs[0].timestamp,
            at(1_700_000_000, 123_456 * unit),
            "{what}"
        );
        assert_eq!(recs[0].data, (0..60).collect::<Vec<u8>>(), "{what}");
        assert_eq!((recs[0].number, recs[0].offset), (1, 24), "{what}");
        assert_eq!(
            recs[1].timestamp,
            at(1_700_000_000, 999_999 * unit),
            "{what}"
        );
        assert_eq!(&recs[1].data[14..], b"tail", "{what}");
        assert_eq!(
            (recs[1].number, recs[1].offset),
            (2, 24 + 16 + 60),
            "{what}"
        );
        assert_eq!(recs[2].timestamp, at(1_700_000_005, 7 * unit), "{what}");
        assert_eq!((recs[2].data.len(), recs[2].orig_len), (40, 1514), "{what}");
    }
}

/// scapy builds two frames, writes them with `wrpcap` (microseconds) and with `PcapWriter(...,
/// nano=True)`, and prints their bytes in hex and their times.
const PY_SCAPY: &str = r#"
import sys
from decimal import Decimal
from scapy.all import Ether, IP, UDP, Raw, wrpcap
from scapy.utils import PcapWriter
micro, nano = sys.argv[1], sys.argv[2]
a = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=4500, dport=4500) / Raw(b"\x00\x00\x01\x00" + bytes(30))
b = Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:03", type=0x88b5) / Raw(bytes(range(50)))
a.time = Decimal("1700000000.250001")
b.time = Decimal("1700000003.000002345")
wrpcap(micro, [a, b])
w = PcapWriter(nano, nano=True)
w.write(a)
w.write(b)
w.close()
for p in (a, b):
    print(bytes(p).hex())
"#;

#[test]
fn reads_scapy_files() {
    let py = workspace().join(".venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import scapy"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        return skip(
            "reads_scapy_files",
            "no scapy in .venv (bash scripts/interop-esp sets it up)",
        );
    }
    let (micro, nano) = (tmp("scapy-us.pcap"), tmp("scapy-ns.pcap"));
    let out = Command::new(&py)
        .args(["-c", PY_SCAPY])
        .arg(&micro)
        .arg(&nano)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scapy script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hex: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    for (path, res, b_nanos) in [
        (&micro, TsResolution::Micro, 2_000),
        (&nano, TsResolution::Nano, 2_345),
    ] {
        let mut r = PcapReader::open(path).unwrap();
        assert_eq!(r.header().resolution, res);
        assert!(r.header().snaplen <= MAX_CAPLEN);
        let recs = r.by_ref().collect::<Result<Vec<_>, _>>().unwrap();
        let _ = std::fs::remove_file(path);
        assert_eq!(recs.len(), 2, "{res:?}");
        for (rec, h) in recs.iter().zip(&hex) {
            assert_eq!(&to_hex(&rec.data), h, "{res:?} record {}", rec.number);
            assert_eq!(rec.orig_len as usize, rec.data.len());
        }
        assert_eq!(recs[0].timestamp, at(1_700_000_000, 250_001_000), "{res:?}");
        assert_eq!(recs[1].timestamp, at(1_700_000_003, b_nanos), "{res:?}");
    }
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
