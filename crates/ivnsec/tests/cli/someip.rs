//! `ivnsec someip serve|call` as a user runs them, on loopback with kernel-chosen ports: help,
//! configuration errors (exit 2), environment errors (exit 3), calls over UDP, UDP with
//! SOME/IP-TP and TCP at every level, TCP resynchronisation after garbage, lost calls (exit 1).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::{BIN, run, tmpdir, write};

const SERVICES: &str = r#"
[[service]]
id = 0x1234
level = "conf"
suite = "aes128-gcm"
key = "000102030405060708090a0b0c0d0e0f"
salt = "01020304"
echo_method = 1
[[service]]
id = 0x1235
level = "auth"
suite = "chacha20-poly1305"
key = "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f"
echo_method = 1
[[service]]
id = 0x1236
level = "nosec"
echo_method = 1
[[service]]
id = 0x1237
level = "conf"
suite = "aes256-ccm"
key = "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f"
echo_method = 1
"#;

struct SomeipServer {
    child: Child,
    udp: SocketAddr,
    tcp: SocketAddr,
}

impl SomeipServer {
    fn start(dir: &Path, secs: &str) -> SomeipServer {
        Self::start_with(dir, secs, &[])
    }

    fn start_with(dir: &Path, secs: &str, extra: &[&str]) -> SomeipServer {
        let cfg = write(
            dir,
            "server.toml",
            &format!(
                "[node]\naddress = \"127.0.0.1\"\nudp_port = 0\ntcp_port = 0\n[sd]\nenabled = false\n{SERVICES}"
            ),
        );
        let mut child = Command::new(BIN)
            .args([
                "someip",
                "serve",
                "--config",
                &cfg,
                "--duration",
                secs,
                "--json",
            ])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        // With --json, stdout carries the JSON document alone; the line is on stderr.
        BufReader::new(child.stderr.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "ivnsec someip serve: udp 127.0.0.1:P, tcp 127.0.0.1:Q; service ..."
        let addr = |tag: &str| -> SocketAddr {
            let i = line
                .find(tag)
                .unwrap_or_else(|| panic!("no {tag} in {line}"))
                + tag.len();
            line[i..]
                .split([',', ';'])
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap()
        };
        let (udp, tcp) = (addr("udp "), addr("tcp "));
        SomeipServer { child, udp, tcp }
    }

    /// Waits for the server to end and returns its JSON counters.
    fn finish(mut self) -> serde_json::Value {
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let st = self.child.wait().unwrap();
        assert!(st.success(), "serve failed: {out}");
        serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap()
    }
}

fn client_cfg(dir: &Path) -> String {
    write(
        dir,
        "client.toml",
        &format!("[node]\naddress = \"127.0.0.1\"\n[sd]\nenabled = false\n{SERVICES}"),
    )
}

fn call(
    cfg: &str,
    service: &str,
    endpoint: SocketAddr,
    extra: &[&str],
) -> (i32, serde_json::Value) {
    let ep = endpoint.to_string();
    let mut a = vec![
        "someip",
        "call",
        "--config",
        cfg,
        "--service",
        service,
        "--method",
        "1",
        "--endpoint",
        &ep,
        "--json",
    ];
    a.extend_from_slice(extra);
    let o = run(&a);
    let out = String::from_utf8_lossy(&o.stdout);
    let v = serde_json::from_str(&out[out.find('{').unwrap_or(0)..])
        .unwrap_or_else(|e| panic!("{e}: {out} {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap(), v)
}

#[test]
fn help_everywhere() {
    for args in [
        &["someip", "--help"][..],
        &["someip", "serve", "--help"],
        &["someip", "call", "--help"],
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.contains("--config") || s.contains("serve"), "{s}");
    }
    let s = String::from_utf8_lossy(&run(&["someip", "call", "--help"]).stdout).to_string();
    for flag in [
        "--service",
        "--method",
        "--payload-size",
        "--count",
        "--endpoint",
        "--tcp",
        "--json",
    ] {
        assert!(s.contains(flag), "call --help lacks {flag}");
    }
}

#[test]
fn calls_every_level_over_udp_tp_and_tcp() {
    let dir = tmpdir("calls");
    let srv = SomeipServer::start(&dir, "8");
    let cfg = client_cfg(&dir);
    let mut expected = 0;
    for service in ["0x1234", "0x1235", "0x1236", "0x1237"] {
        let (rc, v) = call(&cfg, service, srv.udp, &["--count", "5"]);
        assert_eq!((rc, v["ok"].as_u64()), (0, Some(5)), "{service} udp: {v}");
        assert_eq!(v["transport"], "udp");
        let (rc, v) = call(
            &cfg,
            service,
            srv.udp,
            &["--count", "2", "--payload-size", "6000"],
        );
        assert_eq!(
            (rc, v["ok"].as_u64()),
            (0, Some(2)),
            "{service} udp+tp: {v}"
        );
        let (rc, v) = call(
            &cfg,
            service,
            srv.tcp,
            &["--count", "3", "--tcp", "--payload-size", "3000"],
        );
        assert_eq!((rc, v["ok"].as_u64()), (0, Some(3)), "{service} tcp: {v}");
        assert!(v["rtt_us"]["median"].as_f64().unwrap() > 0.0);
        expected += 10;
    }
    // An unknown method gets an ERROR (E_UNKNOWN_METHOD): counted, exit 1.
    let ep = srv.udp.to_string();
    let o = run(&[
        "someip",
        "call",
        "--config",
        &cfg,
        "--service",
        "0x1236",
        "--method",
        "2",
        "--endpoint",
        &ep,
        "--count",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 errors"));
    let st = srv.finish();
    assert_eq!(st["answered"].as_u64(), Some(expected + 1), "{st}");
    assert_eq!(st["drops"], serde_json::json!({}), "{st}");
    assert!(st["tp"]["completed"].as_u64().unwrap() >= 8, "{st}");
}

#[test]
fn tcp_resynchronises_after_garbage_and_wrong_key_is_counted() {
    let dir = tmpdir("resync");
    let srv = SomeipServer::start(&dir, "4");
    let mut s = TcpStream::connect(srv.tcp).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    // Garbage, then a valid nosec request (service 0x1236, method 1, client 5, session 9).
    let mut req = vec![0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03];
    req.extend_from_slice(&[
        0x12, 0x36, 0x00, 0x01, 0, 0, 0, 11, 0, 5, 0, 9, 1, 1, 0, 0, b'a', b'b', b'c',
    ]);
    s.write_all(&req).unwrap();
    let mut resp = [0u8; 19];
    s.read_exact(&mut resp).unwrap();
    assert_eq!(&resp[..4], &[0x12, 0x36, 0x00, 0x01]);
    assert_eq!(resp[14], 0x80, "RESPONSE");
    assert_eq!(&resp[16..], b"abc");
    // A request to the conf service under a wrong key: no answer, counted as bad_tag.
    let dir2 = tmpdir("resync-client");
    let wrong = write(
        &dir2,
        "wrong.toml",
        &SERVICES
            .replace(
                "000102030405060708090a0b0c0d0e0f\"\nsalt",
                "ff0102030405060708090a0b0c0d0e0f\"\nsalt",
            )
            .replace(
                "[[service]]\nid = 0x1234",
                "[node]\naddress = \"127.0.0.1\"\n[[service]]\nid = 0x1234",
            ),
    );
    let (rc, v) = call(
        &wrong,
        "0x1234",
        srv.udp,
        &["--count", "1", "--timeout-ms", "300"],
    );
    assert_eq!((rc, v["lost"].as_u64()), (1, Some(1)), "{v}");
    // Garbage in a datagram: counted, nothing answered.
    let u = UdpSocket::bind("127.0.0.1:0").unwrap();
    u.send_to(&[0x12, 0x36, 0, 1, 0, 0, 0, 3], srv.udp).unwrap();
    drop(s);
    let st = srv.finish();
    let d = &st["drops"];
    assert!(d["stream_resync"].as_u64().unwrap() >= 1, "{st}");
    assert_eq!(d["bad_tag"].as_u64(), Some(1), "{st}");
    assert_eq!(d["truncated"].as_u64(), Some(1), "{st}");
}

#[test]
fn usage_and_environment_errors() {
    let dir = tmpdir("errors");
    // Missing file: exit 2, names the file.
    let o = run(&["someip", "serve", "--config", "/nonexistent/x.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/x.toml: cannot read"));
    // Bad key length: exit 2, names file, key and problem.
    let bad = write(
        &dir,
        "bad.toml",
        "[node]\naddress = \"127.0.0.1\"\n[[service]]\nid = 0x1234\nlevel = \"conf\"\nkey = \"0011\"\n",
    );
    let o = run(&["someip", "serve", "--config", &bad]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("bad.toml: service[0].key: aes128-gcm needs a 16-byte key, got 2 bytes"),
        "{e}"
    );
    // A service the config does not have.
    let cfg = client_cfg(&dir);
    let o = run(&[
        "someip",
        "call",
        "--config",
        &cfg,
        "--service",
        "0x9999",
        "--method",
        "1",
        "--endpoint",
        "127.0.0.1:9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--service 0x9999"));
    // An event ID as method, a bad number.
    let o = run(&[
        "someip",
        "call",
        "--config",
        &cfg,
        "--service",
        "0x1234",
        "--method",
        "0x8001",
        "--endpoint",
        "127.0.0.1:9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[
        "someip",
        "call",
        "--config",
        &cfg,
        "--service",
        "zz",
        "--method",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    // No SD and no endpoint.
    let o = run(&[
        "someip",
        "call",
        "--config",
        &cfg,
        "--service",
        "0x1234",
        "--method",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("sd.enabled is false"));
    // An address this host does not have: exit 3 with a hint.
    let far = write(
        &dir,
        "far.toml",
        &format!("[node]\naddress = \"192.0.2.1\"\n[sd]\nenabled = false\n{SERVICES}"),
    );
    let o = run(&["someip", "serve", "--config", &far, "--duration", "1"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot bind the UDP socket"));
    // Nobody listening: calls are lost, exit 1.
    let free = UdpSocket::bind("127.0.0.1:0").unwrap();
    let ep = free.local_addr().unwrap();
    drop(free);
    let (rc, v) = call(&cfg, "0x1236", ep, &["--count", "2", "--timeout-ms", "100"]);
    assert_eq!((rc, v["lost"].as_u64()), (1, Some(2)), "{v}");
}

/// The `reserved N` mark of the state file of `profile` in `dir` (one file per service).
fn someip_reserved(dir: &Path, profile: &str) -> Option<u64> {
    let f = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with(profile) && n.ends_with(".hw")
        })?;
    let t = std::fs::read_to_string(f).ok()?;
    t.lines()
        .find_map(|l| l.strip_prefix("reserved "))
        .and_then(|v| v.parse().ok())
}

/// With --state-dir a restarted `call` continues its freshness counter from the persistent
/// reservation (not from the clock), and the server accepts every call of both runs. With a
/// state directory that does not know the key, the counter starts at 1 again and the server,
/// which saw those counters, rejects the call as a replay: what the state prevents.
#[test]
fn state_dir_keeps_freshness_counters_across_restarts() {
    let dir = tmpdir("state");
    let srv = SomeipServer::start(&dir, "8");
    let cfg = client_cfg(&dir);
    let state = dir.join("nonce-state");
    let st = state.to_string_lossy().into_owned();
    let args = ["--count", "5", "--state-dir", &st, "--reserve-block", "3"];
    let (rc, v) = call(&cfg, "0x1234", srv.udp, &args);
    assert_eq!((rc, v["ok"].as_u64()), (0, Some(5)), "{v}");
    // Counters 1..=5 used: reserved 1..=3, then 4..=6.
    assert_eq!(someip_reserved(&state, "someip-aes128-gcm"), Some(6));
    let (rc, v) = call(&cfg, "0x1234", srv.udp, &args);
    assert_eq!((rc, v["ok"].as_u64()), (0, Some(5)), "restart: {v}");
    // The restart began at 7: 7..=9, 10..=12.
    assert_eq!(someip_reserved(&state, "someip-aes128-gcm"), Some(12));
    let fresh = dir.join("fresh-state").to_string_lossy().into_owned();
    let (rc, v) = call(
        &cfg,
        "0x1234",
        srv.udp,
        &["--count", "1", "--timeout-ms", "300", "--state-dir", &fresh],
    );
    assert_eq!((rc, v["ok"].as_u64()), (1, Some(0)), "reused counter: {v}");
    let st = srv.finish();
    assert_eq!(st["answered"].as_u64(), Some(10), "{st}");
    assert!(
        st["drops"].as_object().is_some_and(|d| !d.is_empty()),
        "{st}"
    );

    // `serve` takes a state directory too: one locked state per secured service (nosec has none).
    let server_state = dir.join("server-state");
    let o = run(&[
        "someip",
        "serve",
        "--config",
        dir.join("server.toml").to_str().unwrap(),
        "--duration",
        "0.3",
        "--state-dir",
        server_state.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let locks = std::fs::read_dir(&server_state)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "lock"))
        })
        .count();
    assert_eq!(locks, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One record of a `--pcap` capture, taken apart after checking what tshark would: EtherType
/// IPv4, IPv4 header checksum and total length, UDP/TCP length and checksum (with the pseudo
/// header).
struct Rec {
    src: SocketAddr,
    dst: SocketAddr,
    /// TCP (seq, ack, flags); `None` for UDP.
    tcp: Option<(u32, u32, u8)>,
    data: Vec<u8>,
}

fn records(path: &Path) -> Vec<Rec> {
    use ivnsec_core::wire::ip::internet_checksum;
    ivnsec_net::pcap::PcapReader::open(path)
        .unwrap()
        .map(|r| {
            let f = r.unwrap().data;
            assert_eq!(&f[12..14], &[8, 0], "IPv4");
            let ip = &f[14..34];
            assert_eq!(ip[0], 0x45);
            assert_eq!(
                usize::from(u16::from_be_bytes([ip[2], ip[3]])),
                f.len() - 14
            );
            assert_eq!(internet_checksum(ip), 0, "IPv4 header checksum");
            let l4 = &f[34..];
            let mut pseudo = ip[12..20].to_vec();
            pseudo.extend_from_slice(&[0, ip[9]]);
            pseudo.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            pseudo.extend_from_slice(l4);
            assert_eq!(internet_checksum(&pseudo), 0, "UDP/TCP checksum");
            let addr = |a: &[u8], p: &[u8]| -> SocketAddr {
                SocketAddr::from(([a[0], a[1], a[2], a[3]], u16::from_be_bytes([p[0], p[1]])))
            };
            let (src, dst) = (addr(&ip[12..16], &l4[0..2]), addr(&ip[16..20], &l4[2..4]));
            match ip[9] {
                17 => {
                    assert_eq!(usize::from(u16::from_be_bytes([l4[4], l4[5]])), l4.len());
                    Rec {
                        src,
                        dst,
                        tcp: None,
                        data: l4[8..].to_vec(),
                    }
                }
                6 => {
                    assert_eq!(l4[12] >> 4, 5);
                    let word = |i: usize| u32::from_be_bytes(l4[i..i + 4].try_into().unwrap());
                    Rec {
                        src,
                        dst,
                        tcp: Some((word(4), word(8), l4[13])),
                        data: l4[20..].to_vec(),
                    }
                }
                p => panic!("IP protocol {p}"),
            }
        })
        .collect()
}

/// (message ID, message type) of each SOME/IP message in `stream`, split by its Length field.
fn messages(mut stream: &[u8]) -> Vec<(u32, u8)> {
    let mut v = Vec::new();
    while stream.len() >= 16 {
        let len = u32::from_be_bytes(stream[4..8].try_into().unwrap()) as usize;
        v.push((
            u32::from_be_bytes(stream[..4].try_into().unwrap()),
            stream[14],
        ));
        stream = &stream[(8 + len).min(stream.len())..];
    }
    assert!(stream.is_empty(), "a message cut short");
    v
}

/// `--pcap` on `serve` and `call`: UDP, UDP with SOME/IP-TP and TCP exchanges on loopback are
/// recorded on both sides with the real addresses and ports, valid checksums and the SOME/IP
/// messages sent; server and clients recorded the same datagrams and byte streams; and, when
/// tshark is installed, its SOME/IP dissector reads the server's capture with the message IDs
/// and types we sent and no malformed packet.
#[test]
fn pcap_records_what_serve_and_call_send_and_receive() {
    let dir = tmpdir("pcap");
    let pcap = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let (sp, c1, c2, c3) = (
        pcap("serve.pcap"),
        pcap("c1.pcap"),
        pcap("c2.pcap"),
        pcap("c3.pcap"),
    );
    let srv = SomeipServer::start_with(&dir, "4", &["--pcap", &sp]);
    let cfg = client_cfg(&dir);
    let (udp, tcp) = (srv.udp, srv.tcp);
    let ok = |(rc, v): (i32, serde_json::Value), n: u64| {
        assert_eq!((rc, v["ok"].as_u64()), (0, Some(n)), "{v}")
    };
    ok(
        call(&cfg, "0x1236", udp, &["--count", "3", "--pcap", &c1]),
        3,
    );
    ok(
        call(
            &cfg,
            "0x1234",
            udp,
            &["--count", "1", "--payload-size", "5000", "--pcap", &c2],
        ),
        1,
    );
    ok(
        call(
            &cfg,
            "0x1236",
            tcp,
            &[
                "--count",
                "3",
                "--tcp",
                "--payload-size",
                "300",
                "--pcap",
                &c3,
            ],
        ),
        3,
    );
    let st = srv.finish();
    assert_eq!(st["answered"].as_u64(), Some(7), "{st}");

    // Plain UDP: request, response, three times, between the client's port and the server's.
    let r1 = records(Path::new(&c1));
    assert_eq!(r1.len(), 6);
    for (i, r) in r1.iter().enumerate() {
        assert!(r.tcp.is_none());
        let (peer, ty) = if i % 2 == 0 {
            (r.dst, 0x00)
        } else {
            (r.src, 0x80)
        };
        assert_eq!(peer, udp);
        assert_eq!(messages(&r.data), vec![(0x1236_0001, ty)], "record {i}");
    }
    // SOME/IP-TP: segments (type 0x20 / 0xa0) both ways, more than one each way.
    let r2 = records(Path::new(&c2));
    let types: Vec<u8> = r2
        .iter()
        .flat_map(|r| messages(&r.data))
        .map(|m| m.1)
        .collect();
    assert!(
        types.iter().filter(|&&t| t == 0x20).count() >= 2,
        "{types:?}"
    );
    assert!(
        types.iter().filter(|&&t| t == 0xa0).count() >= 2,
        "{types:?}"
    );
    assert!(r2.iter().all(|r| r.src == udp || r.dst == udp));
    // TCP: the handshake, then each direction's bytes in order, three messages each.
    let r3 = records(Path::new(&c3));
    let flags: Vec<u8> = r3.iter().take(3).map(|r| r.tcp.unwrap().2).collect();
    assert_eq!(flags, [0x02, 0x12, 0x10], "SYN, SYN-ACK, ACK");
    let stream = |recs: &[Rec], to_server: bool| -> Vec<u8> {
        let mut next = 1u32;
        let mut out = Vec::new();
        for r in recs
            .iter()
            .filter(|r| (r.dst == tcp) == to_server && !r.data.is_empty())
        {
            assert_eq!(r.tcp.unwrap().0, next, "sequence numbers count the bytes");
            next += r.data.len() as u32;
            out.extend_from_slice(&r.data);
        }
        out
    };
    let (up, down) = (stream(&r3, true), stream(&r3, false));
    assert_eq!(messages(&up), vec![(0x1236_0001, 0x00); 3]);
    assert_eq!(messages(&down), vec![(0x1236_0001, 0x80); 3]);

    // The server recorded the same datagrams and the same byte streams.
    let rs = records(Path::new(&sp));
    let key = |r: &Rec| (r.src, r.dst, r.data.clone());
    let mut server_udp: Vec<_> = rs.iter().filter(|r| r.tcp.is_none()).map(key).collect();
    let mut client_udp: Vec<_> = r1.iter().chain(&r2).map(key).collect();
    server_udp.sort();
    client_udp.sort();
    assert_eq!(server_udp, client_udp);
    let server_tcp: Vec<Rec> = rs.into_iter().filter(|r| r.tcp.is_some()).collect();
    assert_eq!(stream(&server_tcp, true), up);
    assert_eq!(stream(&server_tcp, false), down);

    // tshark, an independent reader, dissects the server's capture.
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!(
            "SKIPPED the tshark check: tshark is not installed (scripts/interop-someip installs it)"
        );
        return;
    }
    let fields = |filter: &str, fs: &[&str]| -> Vec<String> {
        let (u, t) = (
            format!("udp.port=={},someip", udp.port()),
            format!("tcp.port=={},someip", tcp.port()),
        );
        let mut a = vec![
            "-r",
            &sp,
            "-n",
            "-d",
            &u,
            "-d",
            &t,
            "-Y",
            filter,
            "-T",
            "fields",
            "-E",
            "separator=;",
        ];
        for f in fs {
            a.extend(["-e", f]);
        }
        let o = Command::new("tshark").args(&a).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    let bad = fields(
        "_ws.malformed || _ws.expert.severity == error",
        &["frame.number"],
    );
    assert!(bad.is_empty(), "tshark finds malformed frames: {bad:?}");
    let seen = fields(
        "someip",
        &["someip.serviceid", "someip.methodid", "someip.messagetype"],
    );
    for want in [
        "0x1236;0x0001;0x00",
        "0x1236;0x0001;0x80",
        "0x1234;0x0001;0x20",
        "0x1234;0x0001;0xa0",
    ] {
        assert!(
            seen.iter().any(|s| s == want),
            "tshark: no {want} in {seen:?}"
        );
    }
    let over_tcp = fields("tcp && someip", &["someip.messagetype"]);
    let n = |t: &str| {
        over_tcp
            .iter()
            .flat_map(|l| l.split(','))
            .filter(|x| *x == t)
            .count()
    };
    assert_eq!((n("0x00"), n("0x80")), (3, 3), "{over_tcp:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SOME/IP-SD end to end on loopback, two agents on two addresses sharing an SD port (unicast
/// peers): the server's cyclic offers and its answer to FindService carry the ports it is bound
/// to, the client finds the service, calls it, subscribes to its eventgroup (Ack) and receives
/// events, then stops the subscription; the server counts the SD traffic and the events.
#[test]
fn sd_find_call_subscribe_and_events_on_loopback() {
    let dir = tmpdir("sd");
    // An SD port both ends use on their own address (127.0.0.1 and 127.0.0.2).
    let sd_port = {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = a.local_addr().unwrap().port();
        drop(a);
        port
    };
    let service = "[[service]]\nid = 0x4711\nlevel = \"conf\"\nsuite = \"aes128-gcm\"\n\
        key = \"000102030405060708090a0b0c0d0e0f\"\necho_method = 1\nevent = 0x8001\n\
        eventgroup = 3\nevent_period_ms = 50\nevent_payload_size = 32\n";
    let scfg = write(
        &dir,
        "sd-server.toml",
        &format!(
            "[node]\naddress = \"127.0.0.1\"\nudp_port = 0\n[sd]\nport = {sd_port}\n\
             peers = [\"127.0.0.2\"]\noffer_interval_ms = 200\n{service}"
        ),
    );
    let ccfg = write(
        &dir,
        "sd-client.toml",
        &format!(
            "[node]\naddress = \"127.0.0.2\"\n[sd]\nport = {sd_port}\npeers = [\"127.0.0.1\"]\n\
             find_timeout_ms = 3000\n{service}"
        ),
    );
    let mut child = Command::new(BIN)
        .args([
            "someip",
            "serve",
            "--config",
            &scfg,
            "--duration",
            "4",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    // With --json, stdout carries the JSON document alone; the line is on stderr.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    let udp: SocketAddr = line["ivnsec someip serve: udp ".len()..]
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {line}"));
    assert!(
        line.contains(&format!(", sd 127.0.0.1:{sd_port};")),
        "{line}"
    );

    let o = run(&[
        "someip",
        "call",
        "--config",
        &ccfg,
        "--service",
        "0x4711",
        "--method",
        "1",
        "--count",
        "3",
        "--subscribe",
        "5",
        "--json",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    let v: serde_json::Value = serde_json::from_str(&out[out.find('{').unwrap_or(0)..])
        .unwrap_or_else(|e| panic!("{e}: {out} {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(o.status.code(), Some(0), "{v}");
    // Found via SD at the port the server was bound to (udp_port = 0 in its configuration).
    assert_eq!(v["endpoint"], udp.to_string(), "{v}");
    assert_eq!(v["ok"].as_u64(), Some(3), "{v}");
    let ev = &v["events"];
    assert_eq!(ev["acked"], true, "{v}");
    assert!(ev["received"].as_u64().unwrap() >= 5, "{v}");
    assert_eq!(
        ev["bytes"].as_u64(),
        Some(32 * ev["received"].as_u64().unwrap())
    );
    // Our server stamps its events: the delay is measured.
    assert!(ev["delay_us"]["median"].as_f64().unwrap() > 0.0, "{v}");

    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "serve failed: {rest}");
    let st: serde_json::Value = serde_json::from_str(&rest[rest.find('{').unwrap()..]).unwrap();
    assert_eq!(st["answered"].as_u64(), Some(3), "{st}");
    assert!(st["events_sent"].as_u64().unwrap() >= 5, "{st}");
    // Find, SubscribeEventgroup, StopSubscribeEventgroup at least; the stop emptied the table.
    assert!(st["sd_received"].as_u64().unwrap() >= 3, "{st}");
    assert_eq!(st["subscribers"].as_u64(), Some(0), "{st}");
    // Offers every 200 ms for 4 s.
    assert!(st["sd_sent"].as_u64().unwrap() >= 10, "{st}");
    assert_eq!(st["drops"], serde_json::json!({}), "{st}");
    let _ = std::fs::remove_dir_all(&dir);
}
