//! `ivnsec someip serve|call` as a user runs them, on loopback with kernel-chosen ports: help,
//! configuration errors (exit 2), environment errors (exit 3), calls over UDP, UDP with
//! SOME/IP-TP and TCP at every level, TCP resynchronisation after garbage, lost calls (exit 1).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_ivnsec");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ivnsec")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ivnsec-cli-someip-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

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

struct Server {
    child: Child,
    udp: SocketAddr,
    tcp: SocketAddr,
}

impl Server {
    fn start(dir: &Path, secs: &str) -> Server {
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
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
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
        Server { child, udp, tcp }
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
    let srv = Server::start(&dir, "8");
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
    let srv = Server::start(&dir, "4");
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
    let srv = Server::start(&dir, "8");
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
