//! `ivnsec esp up` (docs/esp-tunnel.md): two network namespaces of the test's own, joined by a
//! veth pair carrying the outer path, each running an ESP tunnel interface (TUN) towards the
//! other. Unmodified programs run through the TUNs: ping (IPv4 and IPv6 inside), iperf3 TCP and
//! UDP, scp and curl (a file copied and compared). ESP packets replayed and forged on the outer path (sent with a
//! raw socket of Python's, not ours) are dropped and counted by reason; a kill -9 and restart
//! never repeats a sequence number (every ESP packet on the outer path is recorded by a Python
//! raw socket); tshark decrypts the `--pcap` of the tunnel with the key files (an independent
//! implementation). Pings larger than the TUN's MTU cross as fragments. `--seq-limit` stops the
//! tunnel with exit 1; a used key without its state is refused. The tests
//! need root and skip with a printed reason otherwise; bad input (exit 2): `cli/esp_tunnel.rs`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use crate::common::esp::{Keys, PROFILE, keys};
use crate::common::net::{VethPair, exec, ip, ping};
use crate::common::{Proc, TempDir, spawn_until_ready, text};

const SPI_AB: &str = "0x1001";
const SPI_BA: &str = "0x1002";

/// The outer addresses of side a and b.
#[derive(Clone, Copy)]
enum Outer {
    V4,
    V6,
}

impl Outer {
    fn addr(self, side: char) -> &'static str {
        match (self, side) {
            (Outer::V4, 'a') => "192.0.2.1",
            (Outer::V4, _) => "192.0.2.2",
            (Outer::V6, 'a') => "2001:db8:ffff::1",
            (Outer::V6, _) => "2001:db8:ffff::2",
        }
    }
    fn prefix(self) -> &'static str {
        match self {
            Outer::V4 => "/24",
            Outer::V6 => "/64",
        }
    }
}

fn inner4(side: char) -> &'static str {
    if side == 'a' { "10.9.0.1" } else { "10.9.0.2" }
}

fn inner6(side: char) -> &'static str {
    if side == 'a' {
        "fd00:9::1"
    } else {
        "fd00:9::2"
    }
}

/// The ESP fixture: a [`VethPair`] whose ends carry the outer addresses (IPv4 or IPv6).
struct EspPair {
    veth: VethPair,
    outer: Outer,
}

impl EspPair {
    fn new(outer: Outer) -> EspPair {
        let p = EspPair {
            veth: VethPair::new(),
            outer,
        };
        for s in ['a', 'b'] {
            let (ns, dev) = (p.ns(s), p.veth(s));
            let addr = format!("{}{}", outer.addr(s), outer.prefix());
            let mut args = vec!["-n", &ns, "addr", "add", &addr, "dev", &dev];
            if matches!(outer, Outer::V6) {
                args.push("nodad");
            }
            ip(&args);
            ip(&["-n", &ns, "link", "set", &dev, "mtu", "1500", "up"]);
        }
        p
    }
}

impl std::ops::Deref for EspPair {
    type Target = VethPair;
    fn deref(&self) -> &VethPair {
        &self.veth
    }
}

/// Key and salt of a key file, as hex (for tshark's ESP SA table).
fn key_hex(file: &Path) -> String {
    let t = std::fs::read_to_string(file).unwrap();
    t.lines()
        .find_map(|l| l.strip_prefix("key = \""))
        .unwrap()
        .trim_end_matches('"')
        .to_string()
}

/// `esp up` on one side; `extra` after the usual options.
fn up(d: &TempDir, p: &EspPair, k: &Keys, side: char, extra: &[&str]) -> Proc {
    let (txs, rxs) = if side == 'a' {
        (SPI_AB, SPI_BA)
    } else {
        (SPI_BA, SPI_AB)
    };
    up_spis(d, p, k, side, (txs, rxs), extra)
}

/// [`up`] with the SPIs given (transmit, receive).
fn up_spis(
    d: &TempDir,
    p: &EspPair,
    k: &Keys,
    side: char,
    (txs, rxs): (&str, &str),
    extra: &[&str],
) -> Proc {
    let other = if side == 'a' { 'b' } else { 'a' };
    let (tx, rx) = if side == 'a' {
        (&k.ab, &k.ba)
    } else {
        (&k.ba, &k.ab)
    };
    let a4 = format!("{}/24", inner4(side));
    let a6 = format!("{}/64", inner6(side));
    let state = d.path(&format!("state-{side}"));
    let status = d.path(&format!("status-{side}.json"));
    let mut c = p.exec(side, common::BIN);
    c.args([
        "esp",
        "up",
        "--tun",
        &p.tun(side),
        "--local",
        p.outer.addr(side),
        "--remote",
        p.outer.addr(other),
        "--profile",
        PROFILE,
        "--tx-keys",
        tx.to_str().unwrap(),
        "--rx-keys",
        rx.to_str().unwrap(),
        "--tx-spi",
        txs,
        "--rx-spi",
        rxs,
        "--state-dir",
        state.to_str().unwrap(),
        "--status",
        status.to_str().unwrap(),
        "--addr",
        &a4,
        "--addr",
        &a6,
    ]);
    c.args(extra);
    spawn_until_ready(c, "running until", &format!("esp up ({side})"))
}

fn esp_status(d: &TempDir, side: char) -> Value {
    status_of(d, &side.to_string())
}

/// Waits (up to 5 s) until the status file of `side` satisfies `f`; returns it either way.
/// Every packet the SA verified has left through the TUN. The status file is written every
/// 500 ms from counters the receive thread bumps as it goes, so a file written in the middle of
/// a receive batch (verified, not yet written: the coalescer holds the batch's segments until
/// its end) shows fewer delivered than verified until the next write.
fn delivered_all(s: &Value) -> bool {
    s["packets"]["tun_out"] == s["rx"]["packets"]
}

fn status_when(d: &TempDir, side: char, f: impl Fn(&Value) -> bool) -> Value {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let s = esp_status(d, side);
        if f(&s) || Instant::now() > end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `side`'s status once its packet counters have stopped moving (two status files written
/// 500 ms apart agree, at most 5 s): traffic still in flight makes counters read one after
/// another disagree.
fn status_settled(d: &TempDir, side: char) -> Value {
    status_settled_of(d, &side.to_string())
}

fn require(programs: &[&str]) -> Option<String> {
    for prog in programs {
        let ok = Command::new("sh")
            .args(["-c", &format!("command -v {prog}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            return Some(format!(
                "{prog} is not installed (scripts/setup installs it)"
            ));
        }
    }
    None
}

/// Python: every ESP packet arriving in the namespace (a raw socket of protocol 50, which sees a
/// copy of each), printed as `SRC HEX-OF-ESP` per line, until its stdin closes.
const SNIFF: &str = r#"
import socket, select, sys
v6 = sys.argv[1] == "6"
s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_RAW, 50)
print("sniffing", flush=True)
while True:
    r, _, _ = select.select([s, sys.stdin], [], [], 1)
    if sys.stdin in r and not sys.stdin.readline():
        break
    if s in r:
        d, a = s.recvfrom(70000)
        if not v6:
            d = d[(d[0] & 15) * 4:]
        print(a[0], d.hex(), flush=True)
"#;

/// Python: sends each hex ESP packet given (protocol 50 from this namespace) to `argv[1]`.
const INJECT: &str = r#"
import socket, sys
dst = sys.argv[1]
s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET, socket.SOCK_RAW, 50)
for h in sys.argv[2:]:
    s.sendto(bytes.fromhex(h), (dst, 0))
"#;

struct Sniffer {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Sniffer {
    fn start(p: &EspPair, side: char) -> Sniffer {
        let v = match p.outer {
            Outer::V4 => "4",
            Outer::V6 => "6",
        };
        let mut child = p
            .exec(side, "python3")
            .args(["-c", SNIFF, v])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let first = lines.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(first, "sniffing");
        Sniffer { child, lines }
    }
    /// The packets seen so far: (source, ESP bytes).
    fn take(&self) -> Vec<(String, Vec<u8>)> {
        let mut v = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(300)) {
            let (src, hex) = l.split_once(' ').unwrap();
            v.push((src.to_string(), unhex(hex)));
        }
        v
    }
}

impl Drop for Sniffer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn spi_seq(esp: &[u8]) -> (u32, u32) {
    (
        u32::from_be_bytes(esp[0..4].try_into().unwrap()),
        u32::from_be_bytes(esp[4..8].try_into().unwrap()),
    )
}

#[test]
fn ping_iperf3_and_scp_run_through_the_tunnel() {
    require_root!();
    if let Some(why) = require(&["iperf3", "sshd", "scp", "ssh-keygen", "python3"]) {
        eprintln!("SKIPPED ping_iperf3_and_scp_run_through_the_tunnel: {why}");
        return;
    }
    let d = TempDir::new("esp-tun");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    let _a = up(&d, &p, &k, 'a', &[]);
    let _b = up(&d, &p, &k, 'b', &[]);
    let sniff = Sniffer::start(&p, 'b');

    // The TUN's MTU: the path's 1500 less 54 (AES-GCM over IPv4: 20 + 8 + 8 + 2 + 16).
    let s = esp_status(&d, 'a');
    assert_eq!(s["mtu"]["tun"], 1446, "{s}");
    let o = Command::new("ip")
        .args(["-n", &p.ns('a'), "link", "show", "dev", &p.tun('a')])
        .output()
        .unwrap();
    assert!(
        text(&o.stdout).contains(" mtu 1446 "),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );

    for to in [inner4('b'), inner6('b')] {
        let o = ping(&p.ns('a'), to, &["-c", "3", "-i", "0.2"]);
        assert!(o.status.success(), "ping {to}: {}", text(&o.stdout));
    }
    // A ping filling the TUN's MTU exactly, with DF: goes through in one outer packet.
    let o = p.output(
        'a',
        "ping",
        &["-c", "1", "-W", "2", "-M", "do", "-s", "1418", inner4('b')],
    );
    assert!(o.status.success(), "full-size ping: {}", text(&o.stdout));
    // Larger than the TUN's MTU: the host fragments, each fragment crosses the tunnel as its
    // own ESP packet (RFC 4301 §7), the peer's kernel reassembles them.
    for to in [inner4('b'), inner6('b')] {
        let o = p.output(
            'a',
            "ping",
            &["-c", "2", "-i", "0.2", "-W", "2", "-s", "4000", to],
        );
        assert!(
            o.status.success(),
            "fragmented ping {to}: {}",
            text(&o.stdout)
        );
    }

    // iperf3 TCP for 2 s.
    let server = p
        .exec('b', "iperf3")
        .args(["-s", "-1", "-B", inner4('b')])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Proc(Some(server));
    std::thread::sleep(Duration::from_millis(500));
    let o = p.output('a', "iperf3", &["-c", inner4('b'), "-t", "2", "-J"]);
    assert!(o.status.success(), "iperf3: {}", text(&o.stdout));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let received = j["end"]["sum_received"]["bytes"].as_f64().unwrap();
    assert!(received > 1e6, "iperf3 received {received} bytes");
    eprintln!(
        "iperf3 TCP through the tunnel: {:.0} Mbit/s",
        j["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            / 1e6
    );

    // iperf3 UDP (50 Mb/s for 1 s, 1400-byte datagrams: fit the TUN) to the same server.
    std::thread::sleep(Duration::from_millis(300));
    let server = p
        .exec('b', "iperf3")
        .args(["-s", "-1", "-B", inner4('b')])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Proc(Some(server));
    std::thread::sleep(Duration::from_millis(500));
    let o = p.output(
        'a',
        "iperf3",
        &[
            "-c",
            inner4('b'),
            "-u",
            "-b",
            "50M",
            "-l",
            "1400",
            "-t",
            "1",
            "-J",
        ],
    );
    assert!(o.status.success(), "iperf3 -u: {}", text(&o.stdout));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let packets = j["end"]["sum"]["packets"].as_f64().unwrap_or(0.0);
    let lost = j["end"]["sum"]["lost_packets"].as_f64().unwrap_or(f64::MAX);
    assert!(
        packets > 1000.0 && lost < packets / 10.0,
        "iperf3 -u: {}",
        j["end"]["sum"]
    );

    // The file is served over HTTP from b's inner address and fetched with curl through the
    // tunnel (python3 http.server), then compared byte for byte below with the scp copy.
    let served = d.path("www");
    std::fs::create_dir(&served).unwrap();

    // scp of a 2 MB file through the tunnel, to sshd in b listening on b's inner address only.
    let file = d.path("payload.bin");
    let body: Vec<u8> = (0..2_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&file, &body).unwrap();
    let (host, client) = (d.path("host_key"), d.path("client_key"));
    for k in [&host, &client] {
        let o = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f", k.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let auth = d.path("authorized_keys");
    std::fs::copy(client.with_extension("pub"), &auth).unwrap();
    let _ = std::fs::create_dir_all("/run/sshd");
    let sshd = spawn_until_ready(
        {
            let mut c = p.exec('b', "/usr/sbin/sshd");
            c.args([
                "-D",
                "-e",
                "-f",
                "/dev/null",
                "-p",
                "2222",
                "-o",
                &format!("ListenAddress={}", inner4('b')),
                "-o",
                &format!("HostKey={}", host.display()),
                "-o",
                &format!("AuthorizedKeysFile={}", auth.display()),
                "-o",
                "PidFile=none",
                "-o",
                "StrictModes=no",
                "-o",
                "PermitRootLogin=yes",
                "-o",
                "UsePAM=no",
                "-o",
                "Subsystem=sftp internal-sftp",
            ]);
            c
        },
        "listening",
        "sshd",
    );
    let copy = d.path("copy.bin");
    let o = p.output(
        'a',
        "scp",
        &[
            "-q",
            "-P",
            "2222",
            "-i",
            client.to_str().unwrap(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            file.to_str().unwrap(),
            &format!("root@{}:{}", inner4('b'), copy.display()),
        ],
    );
    assert!(o.status.success(), "scp: {}", text(&o.stderr));
    assert!(std::fs::read(&copy).unwrap() == body, "scp copy differs");
    drop(sshd);

    if require(&["curl"]).is_none() {
        std::fs::copy(&file, served.join("f.bin")).unwrap();
        let http = spawn_until_ready(
            {
                let mut c = p.exec('b', "python3");
                c.args(["-u", "-c"]).arg(
                    "import http.server, functools, sys\n\
                     h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[2])\n\
                     s = http.server.HTTPServer((sys.argv[1], 8080), h)\n\
                     print('serving', file=sys.stderr, flush=True)\n\
                     s.serve_forever()",
                );
                c.args([inner4('b'), served.to_str().unwrap()]);
                c
            },
            "serving",
            "http.server",
        );
        let fetched = d.path("fetched.bin");
        let url = format!("http://{}:8080/f.bin", inner4('b'));
        let o = p.output(
            'a',
            "curl",
            &["-sSf", "-o", fetched.to_str().unwrap(), &url],
        );
        assert!(o.status.success(), "curl: {}", text(&o.stderr));
        assert!(
            std::fs::read(&fetched).unwrap() == body,
            "curl copy differs"
        );
        drop(http);
    } else {
        eprintln!("curl not installed: the HTTP copy is skipped");
    }

    // ESP crossed the outer path, and every ESP packet that reached b verified and came out
    // of its TUN (a few of a's first packets, IPv6 neighbour and router solicitations, left
    // before b was up).
    let seen = sniff.take();
    assert!(seen.len() > 100, "{} ESP packets seen", seen.len());
    let sb = status_when(&d, 'b', |s| {
        delivered_all(s)
            && s["rx"]["packets"].as_u64().unwrap() + 3
                >= esp_status(&d, 'a')["tx"]["packets"].as_u64().unwrap()
    });
    let sa = esp_status(&d, 'a');
    assert_eq!(sb["rx"]["drops"], serde_json::json!({}), "{sb}");
    assert_eq!(sb["packets"]["esp_in"], sb["rx"]["packets"], "{sb}");
    assert_eq!(sb["packets"]["tun_out"], sb["rx"]["packets"], "{sb}");
    let (sent, got) = (
        sa["tx"]["packets"].as_u64().unwrap(),
        sb["rx"]["packets"].as_u64().unwrap(),
    );
    assert!(got <= sent && got + 3 >= sent, "{sa}\n{sb}");
    // The offload path carried the TCP transfers: a read TCP super-packets from its TUN (cut
    // into segments, one ESP packet each), b wrote coalesced super-packets to its TUN.
    assert_eq!(sa["offload"]["tso"], true, "{sa}");
    assert!(sa["packets"]["gso_in"].as_u64().unwrap() > 0, "{sa}");
    assert!(sb["packets"]["gro_out"].as_u64().unwrap() > 0, "{sb}");
    assert!(
        sb["packets"]["gro_segments"].as_u64().unwrap()
            > 2 * sb["packets"]["gro_out"].as_u64().unwrap(),
        "{sb}"
    );
    assert!(
        sa["packets"]["esp_out"].as_u64() > sa["packets"]["tun_in"].as_u64(),
        "{sa}"
    );
}

/// iperf3 TCP for 1 s from `from` to the other side's inner IPv4 (or, `v6`, IPv6) address; the
/// bytes received.
fn iperf3_tcp(p: &EspPair, from: char, v6: bool) -> f64 {
    let to = if from == 'a' { 'b' } else { 'a' };
    let addr = if v6 { inner6(to) } else { inner4(to) };
    let server = p
        .exec(to, "iperf3")
        .args(["-s", "-1", "-B", addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _server = Proc(Some(server));
    std::thread::sleep(Duration::from_millis(500));
    let o = p.output(from, "iperf3", &["-c", addr, "-t", "1", "-J"]);
    assert!(o.status.success(), "iperf3 {from}: {}", text(&o.stdout));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    j["end"]["sum_received"]["bytes"].as_f64().unwrap()
}

/// One iperf3 TCP stream each way, IPv4 then IPv6 inside, a 300 ms pause after each (`ctx`
/// names the round in a failure).
fn tcp_both_ways(p: &EspPair, ctx: &str) {
    for v6 in [false, true] {
        assert!(iperf3_tcp(p, 'a', v6) > 1e6, "{ctx}");
        std::thread::sleep(Duration::from_millis(300));
        assert!(iperf3_tcp(p, 'b', v6) > 1e6, "{ctx}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Both ends' status once the streams have passed: a has delivered everything and coalesced
/// some, b has received all but at most 3 of what a sent.
fn settled_after_tcp(d: &TempDir) -> (Value, Value) {
    let sa = status_when(d, 'a', |s| {
        delivered_all(s) && s["packets"]["gro_out"].as_u64() > Some(0)
    });
    let sb = status_when(d, 'b', |s| {
        delivered_all(s)
            && s["rx"]["packets"].as_u64().unwrap() + 3
                >= esp_status(d, 'a')["tx"]["packets"].as_u64().unwrap()
    });
    (sa, sb)
}

/// ESP in UDP on the offload path: batches leave with UDP segmentation offload and arrive with
/// UDP receive offload (several ESP packets per receive, split and verified one by one);
/// iperf3 TCP over IPv4 and IPv6 inside both ways; no drops, every packet that arrived
/// delivered.
#[test]
fn udp_encap_offload_carries_tcp_over_ipv4_and_ipv6() {
    require_root!();
    if let Some(why) = require(&["iperf3"]) {
        eprintln!("SKIPPED udp_encap_offload_carries_tcp_over_ipv4_and_ipv6: {why}");
        return;
    }
    let d = TempDir::new("esp-udpoff");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    // a in the latency mode: one thread moves both directions; b with two crypto workers
    // (without the pipeline, which `auto` gives a machine of 4 CPUs or more).
    let off: [&str; 2] = ["--pipeline", "off"];
    let _a = up(
        &d,
        &p,
        &k,
        'a',
        &[
            "--udp-encap",
            "--busy-poll-us",
            "300",
            "--cpu-latency-us",
            "100",
            off[0],
            off[1],
        ],
    );
    let _b = up(
        &d,
        &p,
        &k,
        'b',
        &["--udp-encap", "--crypto-workers", "2", off[0], off[1]],
    );
    let o = ping(&p.ns('a'), inner4('b'), &["-c", "2", "-i", "0.2"]);
    assert!(o.status.success(), "ping: {}", text(&o.stdout));
    tcp_both_ways(&p, "");
    let (sa, sb) = settled_after_tcp(&d);
    assert_eq!((&sa["threads"], &sb["threads"]), (&1.into(), &2.into()));
    assert_eq!(sa["cpu_latency_us"], 100, "{sa}");
    assert!(sb["cpu_latency_us"].is_null(), "{sb}");
    // b's workers sealed its TCP segments and opened a's (GRO trains taken apart included).
    assert_eq!(sb["crypto_workers"], 2, "{sb}");
    for k in ["sealed_by_workers", "opened_by_workers"] {
        assert!(sb["packets"][k].as_u64() > Some(0), "{k}: {sb}");
    }
    for s in [&sa, &sb] {
        assert_eq!(s["offload"]["udp_gso"], true, "{s}");
        assert_eq!(s["offload"]["udp_gro"], true, "{s}");
        assert!(s["packets"]["gso_in"].as_u64().unwrap() > 0, "{s}");
        assert!(s["packets"]["gro_out"].as_u64().unwrap() > 0, "{s}");
        assert_eq!(s["rx"]["drops"], serde_json::json!({}), "{s}");
        assert_eq!(s["packets"]["tun_out"], s["rx"]["packets"], "{s}");
        assert_eq!(s["packets"]["send_errors"], 0, "{s}");
    }
}

/// `--pipeline on` (two threads per direction: read, cut and protect | send; receive | verify
/// and write) over ESP in UDP and over protocol 50: ping (IPv4 and IPv6 inside) and iperf3 TCP
/// both ways, IPv4 and IPv6 inside, with b's crypto workers on top. Every packet verified is
/// written to the TUN, none dropped, super-packets cut and coalesced on both ends; the
/// status says 4 threads and the pipeline.
#[test]
fn the_pipeline_carries_tcp_and_ping_both_ways_over_udp_and_protocol_50() {
    require_root!();
    if let Some(why) = require(&["iperf3"]) {
        eprintln!(
            "SKIPPED the_pipeline_carries_tcp_and_ping_both_ways_over_udp_and_protocol_50: {why}"
        );
        return;
    }
    for udp in [true, false] {
        let d = TempDir::new("esp-pipe");
        let p = EspPair::new(Outer::V4);
        let k = keys(&d);
        let mut a_args = vec!["--pipeline", "on"];
        let mut b_args = vec!["--pipeline", "on", "--crypto-workers", "2"];
        if udp {
            a_args.push("--udp-encap");
            b_args.push("--udp-encap");
        }
        let _a = up(&d, &p, &k, 'a', &a_args);
        let _b = up(&d, &p, &k, 'b', &b_args);
        for to in [inner4('b'), inner6('b')] {
            let o = ping(&p.ns('a'), to, &["-c", "3", "-i", "0.2"]);
            assert!(
                o.status.success(),
                "udp {udp}: ping {to}: {}",
                text(&o.stdout)
            );
        }
        tcp_both_ways(&p, &format!("udp {udp}"));
        let (sa, sb) = settled_after_tcp(&d);
        for s in [&sa, &sb] {
            assert_eq!(s["pipeline"], true, "udp {udp}: {s}");
            assert_eq!(s["threads"], 4, "udp {udp}: {s}");
            assert!(
                s["packets"]["gso_in"].as_u64().unwrap() > 0,
                "udp {udp}: {s}"
            );
            assert!(
                s["packets"]["gro_out"].as_u64().unwrap() > 0,
                "udp {udp}: {s}"
            );
            assert_eq!(s["rx"]["drops"], serde_json::json!({}), "udp {udp}: {s}");
            assert_eq!(
                s["packets"]["tun_out"], s["rx"]["packets"],
                "udp {udp}: {s}"
            );
            assert_eq!(s["packets"]["send_errors"], 0, "udp {udp}: {s}");
        }
        assert_eq!(sb["crypto_workers"], 2, "{sb}");
        for k in ["sealed_by_workers", "opened_by_workers"] {
            assert!(sb["packets"][k].as_u64() > Some(0), "udp {udp}: {k}: {sb}");
        }
    }
}

/// `--no-offload` on one end, the offload path on the other: ping (IPv4 and IPv6 inside) and
/// iperf3 TCP both ways work across the mix; the `--no-offload` end reports the offload off and
/// never sees a super-packet, the other end cuts its own into segments and coalesces what it
/// receives.
#[test]
fn no_offload_interoperates_with_the_offload_path() {
    require_root!();
    if let Some(why) = require(&["iperf3"]) {
        eprintln!("SKIPPED no_offload_interoperates_with_the_offload_path: {why}");
        return;
    }
    let d = TempDir::new("esp-nooff");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    // Both in the latency mode: a (offload path) on one thread, b (--no-offload) on one per
    // direction.
    // a (protocol 50, offload path) seals and opens on two crypto workers.
    let _a = up(
        &d,
        &p,
        &k,
        'a',
        &[
            "--busy-poll-us",
            "300",
            "--crypto-workers",
            "2",
            "--pipeline",
            "off",
        ],
    );
    let _b = up(&d, &p, &k, 'b', &["--no-offload", "--busy-poll-us", "300"]);
    for to in [inner4('b'), inner6('b')] {
        let o = ping(&p.ns('a'), to, &["-c", "2", "-i", "0.2"]);
        assert!(o.status.success(), "ping {to}: {}", text(&o.stdout));
    }
    assert!(iperf3_tcp(&p, 'a', false) > 1e6);
    std::thread::sleep(Duration::from_millis(300));
    assert!(iperf3_tcp(&p, 'b', false) > 1e6);
    status_when(&d, 'b', |s| s["packets"]["tun_out"].as_u64() > Some(100));
    let sb = status_settled(&d, 'b');
    let sa = status_when(&d, 'a', |s| s["packets"]["gro_out"].as_u64() > Some(0));
    assert_eq!(sb["offload"]["enabled"], false, "{sb}");
    assert_eq!((&sa["threads"], &sb["threads"]), (&1.into(), &2.into()));
    assert_eq!(sb["packets"]["gso_in"], 0, "{sb}");
    assert_eq!(sb["packets"]["gro_out"], 0, "{sb}");
    // One packet per read and send: once the traffic has passed, every packet read from the
    // TUN has left as one ESP packet or is counted where it was dropped.
    let n = |k: &str| sb["packets"][k].as_u64().unwrap();
    let left = n("esp_out") + n("tun_bad") + n("too_long") + n("send_errors");
    assert_eq!(n("tun_in"), left, "{sb}");
    assert_eq!(sa["offload"]["enabled"], true, "{sa}");
    assert_eq!(sa["crypto_workers"], 2, "{sa}");
    for k in ["sealed_by_workers", "opened_by_workers"] {
        assert!(sa["packets"][k].as_u64() > Some(0), "{k}: {sa}");
    }
    assert!(sa["packets"]["gso_in"].as_u64().unwrap() > 0, "{sa}");
    assert!(sa["packets"]["gro_out"].as_u64().unwrap() > 0, "{sa}");
    for s in [&sa, &sb] {
        assert_eq!(s["rx"]["drops"], serde_json::json!({}), "{s}");
    }
}

/// IPv6 outer, ESP in UDP (RFC 3948): ping IPv4 and IPv6 inside; tshark decrypts the `--pcap`
/// of side a with the key files (ICV correct, the inner ICMP echo requests and replies found).
#[test]
fn ipv6_outer_udp_encap_and_tshark_decrypts_the_capture() {
    require_root!();
    if let Some(why) = require(&["tshark"]) {
        eprintln!("SKIPPED ipv6_outer_udp_encap_and_tshark_decrypts_the_capture: {why}");
        return;
    }
    let d = TempDir::new("esp-tun6");
    let p = EspPair::new(Outer::V6);
    let k = keys(&d);
    let pcap = d.path("a.pcap");
    let mut a = up(
        &d,
        &p,
        &k,
        'a',
        &["--udp-encap", "--pcap", pcap.to_str().unwrap()],
    );
    let _b = up(&d, &p, &k, 'b', &["--udp-encap"]);
    // 1500 − 40 (IPv6) − 8 (UDP) − 8 − 8 − 16, aligned: 1418.
    assert_eq!(esp_status(&d, 'a')["mtu"]["tun"], 1418);
    assert_eq!(esp_status(&d, 'a')["encapsulation"], "udp 4500");
    for to in [inner4('b'), inner6('b')] {
        let o = ping(&p.ns('a'), to, &["-c", "2", "-i", "0.2"]);
        assert!(o.status.success(), "ping {to}: {}", text(&o.stdout));
    }
    // SIGTERM: a stops cleanly and flushes the capture.
    let pid = a.0.as_ref().unwrap().id();
    let o = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = a.0.take().unwrap().wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("stopped"),
        "{}",
        text(&out.stdout)
    );

    let enc = "AES-GCM with 16 octet ICV [RFC4106]";
    let sa = |spi: &str, key: &Path| {
        format!(
            "uat:esp_sa:\"IPv6\",\"*\",\"*\",\"0x{:08x}\",\"{enc}\",\"0x{}\",\"NULL\",\"\"",
            u32::from_str_radix(spi.trim_start_matches("0x"), 16).unwrap(),
            key_hex(key)
        )
    };
    let o = Command::new("tshark")
        .args(["-r", pcap.to_str().unwrap()])
        .args(["-o", "esp.enable_encryption_decode:TRUE"])
        .args(["-o", "esp.enable_authentication_check:TRUE"])
        .args(["-o", &sa(SPI_AB, &k.ab), "-o", &sa(SPI_BA, &k.ba)])
        .args(["-T", "fields", "-E", "separator=|"])
        .args(["-e", "esp.spi", "-e", "esp.icv_good", "-e", "icmp.type"])
        .args(["-e", "icmpv6.type", "-e", "udp.dstport"])
        .output()
        .unwrap();
    assert!(o.status.success(), "tshark: {}", text(&o.stderr));
    let rows: Vec<Vec<String>> = text(&o.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect();
    assert!(rows.len() >= 8, "{rows:?}");
    for r in &rows {
        assert!(r[1] == "1" || r[1] == "True", "ICV not correct: {r:?}");
        assert_eq!(r[4], "4500", "{r:?}");
    }
    let icmp: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[2].as_str(), r[3].as_str()))
        .collect();
    // Echo request (8) and reply (0) of IPv4, 128 and 129 of IPv6, decrypted from the capture.
    for want in [("8", ""), ("0", "")] {
        assert!(icmp.contains(&want), "{want:?} not decrypted: {rows:?}");
    }
    assert!(
        icmp.iter().any(|(_, v6)| v6.split(',').any(|t| t == "128")),
        "{rows:?}"
    );
    assert!(
        icmp.iter().any(|(_, v6)| v6.split(',').any(|t| t == "129")),
        "{rows:?}"
    );
}

/// Packets injected on the outer path from a's address with a raw socket of Python's: an ESP
/// packet of a replayed twice (replay_duplicate), the same with a sequence number it never
/// carried (bad_tag: the number is authenticated),
/// with an SPI b has no SA for (unknown_sa); none reaches b's TUN, each is counted by reason.
#[test]
fn replayed_and_forged_esp_is_dropped_and_counted_by_reason() {
    require_root!();
    if let Some(why) = require(&["python3"]) {
        eprintln!("SKIPPED replayed_and_forged_esp_is_dropped_and_counted_by_reason: {why}");
        return;
    }
    let d = TempDir::new("esp-tun-attack");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    let events = d.path("events-b.jsonl");
    let _a = up(&d, &p, &k, 'a', &[]);
    let _b = up(&d, &p, &k, 'b', &["--events", events.to_str().unwrap()]);
    let sniff = Sniffer::start(&p, 'b');
    let o = ping(&p.ns('a'), inner4('b'), &["-c", "2", "-i", "0.2"]);
    assert!(o.status.success(), "{}", text(&o.stdout));
    let seen = sniff.take();
    let (_, esp) = seen
        .iter()
        .find(|(src, e)| src == "192.0.2.1" && spi_seq(e).0 == 0x1001)
        .expect("an ESP packet of a");
    let before = status_when(&d, 'b', |s| s["rx"]["packets"].as_u64() >= Some(2));
    let accepted = before["rx"]["packets"].as_u64().unwrap();
    assert!(accepted >= 2, "{before}");
    let delivered = before["packets"]["tun_out"].as_u64().unwrap();

    // A forgery: a sequence number never sent (the replay check passes), the rest as sent.
    let mut forged = esp.clone();
    forged[4..8].copy_from_slice(&1000u32.to_be_bytes());
    let mut other_spi = esp.clone();
    other_spi[0..4].copy_from_slice(&0x0bad_0bad_u32.to_be_bytes());
    let o = p.output(
        'a',
        "python3",
        &[
            "-c",
            INJECT,
            "192.0.2.2",
            &hex(esp),
            &hex(esp),
            &hex(&forged),
            &hex(&other_spi),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = status_when(&d, 'b', |s| {
        s["rx"]["drops"]["unknown_sa"] == 1 && s["rx"]["drops"]["bad_tag"] == 1
    });
    let drops = &s["rx"]["drops"];
    assert_eq!(drops["replay_duplicate"], 2, "{s}");
    assert_eq!(drops["bad_tag"], 1, "{s}");
    assert_eq!(drops["unknown_sa"], 1, "{s}");
    assert_eq!(
        s["rx"]["packets"].as_u64().unwrap(),
        accepted,
        "nothing injected was accepted: {s}"
    );
    assert_eq!(s["packets"]["tun_out"].as_u64().unwrap(), delivered, "{s}");
    // The tunnel still works, and the drops were logged as events.
    let o = ping(&p.ns('a'), inner4('b'), &["-c", "1", "-i", "0.2"]);
    assert!(o.status.success(), "{}", text(&o.stdout));
    let end = Instant::now() + Duration::from_secs(3);
    let has = |ev: &str, reason: &str| {
        ev.lines()
            .any(|l| l.contains("\"drop\"") && l.contains(reason))
    };
    loop {
        let ev = std::fs::read_to_string(&events).unwrap();
        let missing: Vec<&str> = ["replay_duplicate", "bad_tag", "unknown_sa"]
            .into_iter()
            .filter(|r| !has(&ev, r))
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(Instant::now() < end, "no drop event for {missing:?}: {ev}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// kill -9 of a, then a restart with the same keys and --state-dir: the restarted tunnel
/// resumes above every sequence number reserved before (the peer, not restarted, accepts its
/// packets: its replay window would drop repeats), and no sequence number appears twice under
/// a's SPI in the record of every ESP packet on the outer path.
#[test]
fn kill_9_and_restart_never_repeat_a_sequence_number() {
    require_root!();
    if let Some(why) = require(&["python3"]) {
        eprintln!("SKIPPED kill_9_and_restart_never_repeat_a_sequence_number: {why}");
        return;
    }
    let d = TempDir::new("esp-tun-kill");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    let _b = up(&d, &p, &k, 'b', &[]);
    let sniff = Sniffer::start(&p, 'b');
    // a with the pipeline: its sequence numbers are reserved and taken by the first stage.
    let a_args = ["--reserve-block", "16", "--pipeline", "on"];
    let mut a = up(&d, &p, &k, 'a', &a_args);
    let o = ping(&p.ns('a'), inner4('b'), &["-c", "5", "-i", "0.2"]);
    assert!(
        o.status.success(),
        "{}\n{}\n{}",
        text(&o.stdout),
        esp_status(&d, 'a'),
        esp_status(&d, 'b')
    );
    let first_run = esp_status(&d, 'a');
    assert_eq!(first_run["tx"]["first_seq"], 1);
    a.0.as_mut().unwrap().kill().unwrap(); // SIGKILL
    let _ = a.0.as_mut().unwrap().wait();
    drop(a);

    let _a2 = up(&d, &p, &k, 'a', &a_args);
    let second = esp_status(&d, 'a');
    let first2 = second["tx"]["first_seq"].as_u64().unwrap();
    assert!(first2 > 5, "restart began at {first2}: {second}");
    // Five pings 0.2 s apart reserve nothing back to back: the block stays as given.
    assert_eq!(first_run["tx"]["reserve_block"], 16, "{first_run}");
    let o = ping(&p.ns('a'), inner4('b'), &["-c", "5", "-i", "0.2"]);
    assert!(
        o.status.success(),
        "the peer dropped the restarted sender's packets: {}",
        text(&o.stdout)
    );

    let seqs: Vec<u32> = sniff
        .take()
        .into_iter()
        .filter(|(src, e)| src == "192.0.2.1" && spi_seq(e).0 == 0x1001)
        .map(|(_, e)| spi_seq(&e).1)
        .collect();
    assert!(seqs.len() >= 10, "{seqs:?}");
    let unique: HashSet<u32> = seqs.iter().copied().collect();
    assert_eq!(
        unique.len(),
        seqs.len(),
        "a sequence number repeated: {seqs:?}"
    );
    assert!(seqs.iter().any(|&s| u64::from(s) >= first2), "{seqs:?}");
    let sb = esp_status(&d, 'b');
    assert_eq!(sb["rx"]["drops"], serde_json::json!({}), "{sb}");

    // The same key under another SPI: the nonce (salt ‖ sequence number) has no SPI in it, so
    // the new SA goes on above every number the key was used with, never from 1 again.
    drop(_a2);
    let _a3 = up_spis(
        &d,
        &p,
        &k,
        'a',
        ("0x3001", SPI_BA),
        &["--reserve-block", "16"],
    );
    let third = esp_status(&d, 'a');
    let first3 = third["tx"]["first_seq"].as_u64().unwrap();
    let highest = seqs.iter().copied().max().unwrap_or(0);
    assert!(
        first3 > u64::from(highest),
        "the key under a new SPI began at {first3}, at or below {highest}: {third}"
    );
}

/// The `send` rules at the edges: with `--seq-limit 5` the tunnel sends sequence numbers 1 to 5
/// and then stops with exit code 1 (a new key is needed); a later start under the same key with
/// an empty `--state-dir` is refused (exit 2: the key's `.used` record says it has sent) unless
/// `--i-know-this-key-is-new` is given.
#[test]
fn sequence_limit_stops_with_exit_1_and_a_used_key_without_state_is_refused() {
    require_root!();
    let d = TempDir::new("esp-tun-limit");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    let _b = up(&d, &p, &k, 'b', &[]);
    let mut a = up(
        &d,
        &p,
        &k,
        'a',
        &["--seq-limit", "5", "--reserve-block", "1"],
    );
    let _ = ping(&p.ns('a'), inner4('b'), &["-c", "8", "-i", "0.2"]);
    let child = a.0.as_mut().unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        assert!(Instant::now() < end, "esp up did not stop at --seq-limit");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(1));
    let sb = esp_status(&d, 'b');
    assert_eq!(sb["rx"]["highest_seq"], 5, "{sb}");
    let sa = esp_status(&d, 'a');
    assert_eq!(sa["tx"]["packets"], 5, "{sa}");

    // The same key, a fresh state directory: refused before anything is created.
    let fresh = d.path("fresh-state");
    let args = |extra: &[&str]| -> Output {
        let mut c = p.exec('a', common::BIN);
        c.args([
            "esp",
            "up",
            "--tun",
            &p.tun('a'),
            "--local",
            "192.0.2.1",
            "--remote",
            "192.0.2.2",
            "--profile",
            PROFILE,
            "--tx-keys",
            k.ab.to_str().unwrap(),
            "--rx-keys",
            k.ba.to_str().unwrap(),
            "--tx-spi",
            SPI_AB,
            "--rx-spi",
            SPI_BA,
            "--state-dir",
            fresh.to_str().unwrap(),
        ]);
        c.args(extra);
        c.output().unwrap()
    };
    let o = args(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--i-know-this-key-is-new"),
        "{}",
        text(&o.stderr)
    );
    let o = Command::new("ip")
        .args(["-n", &p.ns('a'), "link", "show", "dev", &p.tun('a')])
        .output()
        .unwrap();
    assert!(!o.status.success(), "the refusal created the TUN");
}

/// Without privileges (root drops to `nobody` with setpriv) no raw socket or TUN can be made:
/// exit 3 with a sentence saying how to fix it (nothing is created).
#[test]
fn no_root_exits_3() {
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no setpriv to drop privileges");
        return;
    }
    if common::skip_reason().is_some() {
        eprintln!("SKIPPED: not root, so not able to drop to nobody");
        return;
    }
    let d = TempDir::new("esp-tun-nobody");
    let own = d.path("nobody");
    std::fs::create_dir(&own).unwrap();
    let k = Keys {
        ab: own.join("a2b.toml"),
        ba: own.join("b2a.toml"),
    };
    for f in [&k.ab, &k.ba] {
        let o = d.run(&["keygen", "--profile", PROFILE, "--out", f.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0));
        std::os::unix::fs::chown(f, Some(65534), Some(65534)).unwrap();
    }
    for p in [&d.0, &own] {
        std::os::unix::fs::chown(p, Some(65534), Some(65534)).unwrap();
    }
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            common::BIN,
        ])
        .args(["esp", "up", "--tun", "ivnesptest1", "--local", "127.0.0.1"])
        .args(["--remote", "127.0.0.2", "--profile", PROFILE, "--tx-keys"])
        .arg(&k.ab)
        .arg("--rx-keys")
        .arg(&k.ba)
        .args(["--tx-spi", SPI_AB, "--rx-spi", SPI_BA, "--state-dir"])
        .arg(own.join("st"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("need root"), "{}", text(&o.stderr));
}

/// The inbound SA's acceptance mark: ESP packets recorded on the path, b killed (-9) and
/// restarted, the recording injected into it again: not one is accepted (all counted as
/// replays below the restored mark), while fresh packets after the restart are.
#[test]
fn a_restarted_tunnel_accepts_no_replayed_packet() {
    require_root!();
    if let Some(why) = require(&["python3"]) {
        eprintln!("SKIPPED a_restarted_tunnel_accepts_no_replayed_packet: {why}");
        return;
    }
    let d = TempDir::new("esp-tun-rxmark");
    let p = EspPair::new(Outer::V4);
    let k = keys(&d);
    let cp = [
        "--replay-checkpoint-frames",
        "8",
        "--replay-checkpoint-ms",
        "1000",
    ];
    let _a = up(&d, &p, &k, 'a', &[]);
    let b = up(&d, &p, &k, 'b', &cp);
    let sniff = Sniffer::start(&p, 'b');
    let o = p.output(
        'a',
        "ping",
        &["-c", "20", "-i", "0.02", "-W", "2", inner4('b')],
    );
    assert!(o.status.success(), "{}", text(&o.stdout));
    let recorded: Vec<Vec<u8>> = sniff
        .take()
        .into_iter()
        .filter(|(src, e)| src == "192.0.2.1" && spi_seq(e).0 == 0x1001)
        .map(|(_, e)| e)
        .collect();
    assert!(recorded.len() >= 20, "{}", recorded.len());
    let s = status_when(&d, 'b', |s| s["rx"]["packets"].as_u64() >= Some(20));
    let highest = s["rx"]["highest_seq"].as_u64().unwrap();
    let mark = &s["rx"]["replay_mark"];
    assert_eq!(mark["restored_mark"], 0, "{s}");
    let m = mark["mark"].as_u64().unwrap();
    assert!(
        m >= highest && m < highest + 8,
        "one checkpoint ahead at most: {s}"
    );
    drop(b); // SIGKILL

    let _b2 = up(&d, &p, &k, 'b', &cp);
    let s = esp_status(&d, 'b');
    assert_eq!(
        s["rx"]["replay_mark"]["restored_mark"].as_u64(),
        Some(m),
        "{s}"
    );
    let hexes: Vec<String> = recorded.iter().map(|e| hex(e)).collect();
    let mut args = vec!["-c", INJECT, "192.0.2.2"];
    args.extend(hexes.iter().map(String::as_str));
    let o = p.output('a', "python3", &args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let n = recorded.len() as u64;
    let s = status_when(&d, 'b', |s| {
        s["rx"]["replay_mark"]["refused_below_mark"].as_u64() >= Some(n)
    });
    let drops = &s["rx"]["drops"];
    let replays = drops["replay_duplicate"].as_u64().unwrap_or(0)
        + drops["replay_too_old"].as_u64().unwrap_or(0);
    assert_eq!(replays, n, "every replayed packet refused as a replay: {s}");
    assert_eq!(
        s["rx"]["replay_mark"]["refused_below_mark"].as_u64(),
        Some(n),
        "{s}"
    );
    assert_eq!(
        s["rx"]["packets"], 0,
        "not one replayed packet accepted: {s}"
    );
    assert_eq!(s["packets"]["tun_out"], 0, "{s}");
    // Fresh traffic after the restart passes once above the mark: a's numbers between its
    // last one and the mark are the checkpoint a restart costs (at most 8 here).
    let _ = p.output(
        'a',
        "ping",
        &["-c", "16", "-i", "0.05", "-W", "1", inner4('b')],
    );
    let s = status_when(&d, 'b', |s| s["rx"]["packets"].as_u64() >= Some(8));
    assert!(s["rx"]["packets"].as_u64() >= Some(8), "{s}");
    assert!(s["rx"]["highest_seq"].as_u64() > Some(m), "{s}");
    let o = ping(&p.ns('a'), inner4('b'), &["-c", "2", "-i", "0.2"]);
    assert!(o.status.success(), "{}", text(&o.stdout));
}

/// Three namespaces of the test's own, a — r — b: a router between the two tunnel endpoints
/// (`<prefix>-a`, `-r`, `-b`; links `<prefix>ar`/`<prefix>ra` and `<prefix>rb`/`<prefix>br`),
/// so the next hop towards the peer is the router, not the peer. Deleted on drop.
struct Routed {
    prefix: String,
    _ns: Vec<common::net::Netns>,
}

impl Routed {
    fn new() -> Routed {
        let prefix = ivnsec_net::testbed::random_prefix().unwrap();
        let mut nss = Vec::new();
        for s in ["a", "r", "b"] {
            let ns = format!("{prefix}-{s}");
            ip(&["netns", "add", &ns]);
            nss.push(common::net::Netns(ns.clone()));
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        let r = Routed { prefix, _ns: nss };
        for (x, y) in [('a', 'r'), ('r', 'b')] {
            let (dx, dy) = (r.dev(x, y), r.dev(y, x));
            let (nx, ny) = (r.ns(x), r.ns(y));
            ip(&[
                "link", "add", &dx, "netns", &nx, "type", "veth", "peer", "name", &dy, "netns", &ny,
            ]);
            ip(&["-n", &nx, "link", "set", &dx, "up"]);
            ip(&["-n", &ny, "link", "set", &dy, "up"]);
        }
        let addr = |s: char, peer: char, a: &str| {
            let mut args = vec![
                "-n".to_string(),
                r.ns(s),
                "addr".into(),
                "add".into(),
                a.into(),
            ];
            args.extend(["dev".into(), r.dev(s, peer)]);
            if a.contains(':') {
                args.push("nodad".into());
            }
            ip(&args.iter().map(String::as_str).collect::<Vec<_>>());
        };
        addr('a', 'r', "192.0.2.1/24");
        addr('a', 'r', "2001:db8:a::1/64");
        addr('r', 'a', "192.0.2.254/24");
        addr('r', 'a', "2001:db8:a::fe/64");
        addr('r', 'b', "198.51.100.254/24");
        addr('r', 'b', "2001:db8:b::fe/64");
        addr('b', 'r', "198.51.100.2/24");
        addr('b', 'r', "2001:db8:b::2/64");
        ip(&[
            "-n",
            &r.ns('a'),
            "route",
            "add",
            "198.51.100.0/24",
            "via",
            "192.0.2.254",
        ]);
        ip(&[
            "-n",
            &r.ns('a'),
            "route",
            "add",
            "2001:db8:b::/64",
            "via",
            "2001:db8:a::fe",
        ]);
        ip(&[
            "-n",
            &r.ns('b'),
            "route",
            "add",
            "192.0.2.0/24",
            "via",
            "198.51.100.254",
        ]);
        ip(&[
            "-n",
            &r.ns('b'),
            "route",
            "add",
            "2001:db8:a::/64",
            "via",
            "2001:db8:b::fe",
        ]);
        for k in ["net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"] {
            let o = exec(&r.ns('r'), "sysctl")
                .args(["-qw", k])
                .output()
                .unwrap();
            assert!(o.status.success(), "sysctl {k}: {}", text(&o.stderr));
        }
        r
    }
    fn ns(&self, s: char) -> String {
        format!("{}-{s}", self.prefix)
    }
    /// The interface of `s` towards `peer`.
    fn dev(&self, s: char, peer: char) -> String {
        format!("{}{s}{peer}", self.prefix)
    }
    /// The outer address of tunnel endpoint `s` (a or b).
    fn outer(s: char, v6: bool) -> &'static str {
        match (s, v6) {
            ('a', false) => "192.0.2.1",
            ('a', true) => "2001:db8:a::1",
            (_, false) => "198.51.100.2",
            (_, true) => "2001:db8:b::2",
        }
    }
    fn mac(&self, s: char, peer: char) -> String {
        let o = exec(&self.ns(s), "ip")
            .args(["-j", "link", "show", "dev", &self.dev(s, peer)])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v[0]["address"].as_str().unwrap().to_string()
    }
}

/// `esp up` on tunnel endpoint `s` of a [`Routed`] network, outer IPv4 or IPv6; `tag` names
/// its state, status and events files.
fn up_routed(
    d: &TempDir,
    r: &Routed,
    k: &Keys,
    s: char,
    v6: bool,
    tag: &str,
    extra: &[&str],
) -> Proc {
    let other = if s == 'a' { 'b' } else { 'a' };
    let (tx, rx, txs, rxs) = if s == 'a' {
        (&k.ab, &k.ba, SPI_AB, SPI_BA)
    } else {
        (&k.ba, &k.ab, SPI_BA, SPI_AB)
    };
    let mut c = exec(&r.ns(s), common::BIN);
    c.args(["esp", "up", "--tun", &format!("{}t{s}", r.prefix)])
        .args([
            "--local",
            Routed::outer(s, v6),
            "--remote",
            Routed::outer(other, v6),
        ])
        .args(["--profile", PROFILE, "--tx-spi", txs, "--rx-spi", rxs])
        .arg("--tx-keys")
        .arg(tx)
        .arg("--rx-keys")
        .arg(rx)
        .arg("--state-dir")
        .arg(d.path(&format!("state-{tag}")))
        .arg("--status")
        .arg(d.path(&format!("status-{tag}.json")))
        .arg("--events")
        .arg(d.path(&format!("events-{tag}.jsonl")))
        .args(["--addr", &format!("{}/24", inner4(s))])
        .args(extra);
    spawn_until_ready(c, "running until", &format!("esp up ({tag})"))
}

/// The status file `status-TAG.json` of `d`.
fn status_of(d: &TempDir, tag: &str) -> Value {
    let p = d.path(&format!("status-{tag}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Protocol 50 on the offload path leaves as Ethernet frames to the next hop (`--outer-send
/// auto`), across a router, outer IPv4 and IPv6: before the router is resolved the raw socket
/// carries the packets, then (within the second after the first packet) the link path with
/// the router's MAC address, never the peer's, as the kernel's own neighbour table has it.
/// ping at the TUN's MTU and above it (inner fragments) and iperf3 TCP both ways; the router's
/// kernel forwards what a's link path built (so its IP header is valid), and tshark reads a
/// capture of a's frames as IPv4 with a good checksum, Don't Fragment and TTL 64, or IPv6 with
/// hop limit 64, carrying ESP. A packet longer than the link takes (a's `--path-mtu` above the
/// interface's MTU) goes through the raw socket, which fragments it. The other end runs
/// `--outer-send socket`: both paths interoperate.
#[test]
fn protocol_50_leaves_as_ethernet_frames_to_the_next_hop_across_a_router() {
    require_root!();
    if let Some(why) = require(&["iperf3", "tshark"]) {
        eprintln!(
            "SKIPPED protocol_50_leaves_as_ethernet_frames_to_the_next_hop_across_a_router: {why}"
        );
        return;
    }
    let r = Routed::new();
    let router_mac = r.mac('r', 'a');
    for v6 in [false, true] {
        // Keys of their own per round: a key that sent has a `.used` record.
        let d = TempDir::new(if v6 { "esp-link6" } else { "esp-link4" });
        let k = keys(&d);
        let (ta, tb) = if v6 { ("a6", "b6") } else { ("a4", "b4") };
        // a's path MTU 1600 on a 1500-byte link: its largest packets take the raw socket.
        let a = up_routed(&d, &r, &k, 'a', v6, ta, &["--path-mtu", "1600"]);
        let b = up_routed(&d, &r, &k, 'b', v6, tb, &["--outer-send", "socket"]);
        let s0 = status_of(&d, ta);
        assert_eq!(s0["outer_send"]["mode"], "auto", "{s0}");
        let o = ping(&r.ns('a'), inner4('b'), &["-c", "3", "-i", "0.2"]);
        assert!(o.status.success(), "ping: {}", text(&o.stdout));
        let sa = {
            let end = Instant::now() + Duration::from_secs(5);
            loop {
                let s = status_of(&d, ta);
                if s["outer_send"]["path"] == "link" || Instant::now() > end {
                    break s;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        };
        let os = &sa["outer_send"];
        assert_eq!(os["path"], "link", "{sa}");
        assert_eq!(os["interface"], r.dev('a', 'r'), "{sa}");
        let via = if v6 { "2001:db8:a::fe" } else { "192.0.2.254" };
        assert_eq!(os["next_hop"], via, "{sa}");
        assert_eq!(os["next_hop_mac"], router_mac.as_str(), "{sa}");
        assert_eq!(os["limit"], 1500, "{sa}");
        let sb = status_of(&d, tb);
        assert_eq!(sb["outer_send"]["path"], "socket", "{sb}");
        assert_eq!(
            sb["outer_send"]["why_socket"], "--outer-send socket",
            "{sb}"
        );
        let events = std::fs::read_to_string(d.path(&format!("events-{ta}.jsonl"))).unwrap();
        assert!(
            events
                .lines()
                .any(|l| l.contains("\"outer_send\"") && l.contains("\"link\"")),
            "{events}"
        );

        // On the link path now: a capture of what a sends, read by tshark.
        let pcap = d.path(&format!("link-{ta}.pcap"));
        let cap = common::net::capture(&r.ns('a'), &r.dev('a', 'r'), &pcap);
        let tun_mtu = sa["mtu"]["tun"].as_u64().unwrap();
        // 1500 − 54 − 28 (IPv4 + ICMP inside), 1500 − 74 − 28 outside IPv6: the largest
        // ping whose ESP packet the link takes whole; one byte more takes the raw socket, as
        // do pings up to the TUN's MTU and fragments of larger ones.
        let edge = if v6 { 1398 } else { 1418 };
        for size in [56, edge, edge + 1, tun_mtu - 28, 3000] {
            let o = ping(
                &r.ns('a'),
                inner4('b'),
                &["-c", "2", "-i", "0.2", "-s", &size.to_string()],
            );
            assert!(o.status.success(), "ping -s {size}: {}", text(&o.stdout));
        }
        common::net::stop_capture(cap, &pcap);
        let src_mac = os["source_mac"].as_str().unwrap().to_string();
        // Unfragmented packets: those above the link's 1500 bytes left by the raw socket,
        // which fragments them (counted as link_bypassed below).
        let filter = if v6 {
            format!("esp && eth.src == {src_mac} && !ipv6.fragment")
        } else {
            format!("esp && eth.src == {src_mac} && ip.flags.mf == 0 && ip.frag_offset == 0")
        };
        let fields: &[&str] = if v6 {
            &[
                "-e",
                "eth.dst",
                "-e",
                "ipv6.hlim",
                "-e",
                "ipv6.nxt",
                "-e",
                "esp.spi",
            ]
        } else {
            &[
                "-e",
                "eth.dst",
                "-e",
                "ip.ttl",
                "-e",
                "ip.flags.df",
                "-e",
                "ip.checksum.status",
                "-e",
                "esp.spi",
            ]
        };
        let o = Command::new("tshark")
            .args(["-r", pcap.to_str().unwrap(), "-o", "ip.check_checksum:TRUE"])
            .args(["-Y", &filter, "-T", "fields", "-E", "separator=|"])
            .args(fields)
            .output()
            .unwrap();
        assert!(o.status.success(), "tshark: {}", text(&o.stderr));
        let rows: Vec<String> = text(&o.stdout).lines().map(str::to_string).collect();
        assert!(rows.len() >= 4, "{rows:?}");
        for row in &rows {
            let f: Vec<&str> = row.split('|').collect();
            assert_eq!(f[0], router_mac, "{row}");
            assert_eq!(f[1], "64", "{row}");
            if v6 {
                assert_eq!(f[2], "50", "{row}");
            } else {
                assert!(f[2] == "1" || f[2] == "True", "DF: {row}");
                // tshark's checksum status: 0 bad, 1 good, 2 unverified.
                assert_eq!(f[3], "1", "checksum: {row}");
            }
            assert!(row.ends_with("0x00001001"), "{row}");
        }

        // TCP both ways across the mix of paths.
        for (from, to) in [('a', 'b'), ('b', 'a')] {
            let srv = exec(&r.ns(to), "iperf3")
                .args(["-s", "-1", "-B", inner4(to)])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let _srv = Proc(Some(srv));
            std::thread::sleep(Duration::from_millis(300));
            let o = exec(&r.ns(from), "iperf3")
                .args(["-c", inner4(to), "-t", "2", "-J"])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "iperf3 {from}→{to}: {}",
                text(&o.stdout)
            );
            let j: Value = serde_json::from_slice(&o.stdout).unwrap();
            assert!(
                j["end"]["sum_received"]["bits_per_second"]
                    .as_f64()
                    .unwrap()
                    > 1e6,
                "{j}"
            );
        }
        let sa = status_settled_of(&d, ta);
        let sb = status_settled_of(&d, tb);
        let p = &sa["packets"];
        assert!(p["link_sent"].as_u64().unwrap() > 100, "{sa}");
        // The 3000-byte pings' largest fragments were above 1500 bytes outside.
        assert!(p["link_bypassed"].as_u64().unwrap() > 0, "{sa}");
        assert_eq!(p["link_errors"], 0, "{sa}");
        assert_eq!(p["send_errors"], 0, "{sa}");
        assert_eq!(sb["packets"]["link_sent"], 0, "{sb}");
        for s in [&sa, &sb] {
            assert_eq!(s["rx"]["drops"], serde_json::json!({}), "{s}");
            assert_eq!(s["packets"]["tun_out"], s["rx"]["packets"], "{s}");
        }
        drop((a, b));
    }

    // `--outer-send link` towards a peer routed into a TUN (no Ethernet): refused at start,
    // exit 2, naming the interface, before the TUN is created.
    let ns = r.ns('a');
    let tun = format!("{}x", r.prefix);
    ip(&["-n", &ns, "tuntap", "add", &tun, "mode", "tun"]);
    ip(&["-n", &ns, "link", "set", &tun, "up"]);
    ip(&["-n", &ns, "route", "add", "203.0.113.0/24", "dev", &tun]);
    let d = TempDir::new("esp-link-tun");
    let k = keys(&d);
    let o = exec(&ns, common::BIN)
        .args(["esp", "up", "--tun", &format!("{}t9", r.prefix)])
        .args(["--local", "192.0.2.1", "--remote", "203.0.113.9"])
        .args(["--profile", PROFILE, "--tx-spi", SPI_AB, "--rx-spi", SPI_BA])
        .arg("--tx-keys")
        .arg(&k.ab)
        .arg("--rx-keys")
        .arg(&k.ba)
        .arg("--state-dir")
        .arg(d.path("state"))
        .args(["--outer-send", "link"])
        .output()
        .unwrap();
    let e = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--outer-send link") && e.contains(&tun) && e.contains("not an Ethernet"),
        "{e}"
    );
    assert!(!e.contains("running until"), "{e}");
}

/// [`status_settled`] of the status file `status-TAG.json`.
fn status_settled_of(d: &TempDir, tag: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(5);
    let mut last = status_of(d, tag);
    loop {
        std::thread::sleep(Duration::from_millis(600));
        let s = status_of(d, tag);
        if s["packets"] == last["packets"] || Instant::now() > end {
            return s;
        }
        last = s;
    }
}
