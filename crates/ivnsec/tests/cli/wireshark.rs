//! The Lua dissectors of contrib/wireshark read captures ivnsec wrote: every IVN-AE field tshark
//! shows with `-X lua_script:contrib/wireshark/ivnae.lua` is what `ivnsec pcap verify --json`
//! reports for the same frame (which also verifies each one), and the secured SOME/IP dissector
//! takes apart the messages of `ivnsec someip call --pcap` (key id, counter, body, tag) as
//! docs/wire-someip-sec.md lays them out. Skips with the reason printed without tshark
//! (scripts/setup installs it).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::net::have_tshark;
use crate::common::{BIN, Proc, TempDir, text};

fn lua(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/wireshark")
        .join(name)
}

macro_rules! require_tshark {
    () => {
        if !have_tshark() {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!(
                    "SKIPPED {}: tshark is not installed (bash scripts/setup)\n",
                    module_path!()
                ),
            );
            return;
        }
    };
}

/// tshark's fields of every frame (tab-separated rows).
fn tshark(script: &str, pcap: &Path, opts: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.arg("-X")
        .arg(format!("lua_script:{}", lua(script).display()))
        .arg("-r")
        .arg(pcap)
        .args(opts)
        .args(["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=;"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success(), "tshark: {err}");
    assert!(
        !err.contains("Lua: Error"),
        "the dissector failed to load: {err}"
    );
    text(&o.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// A boolean field as tshark prints it (1/0 or True/False, by version).
fn truth(v: &str) -> bool {
    match v {
        "1" | "True" => true,
        "0" | "False" => false,
        v => panic!("not a boolean field: {v:?}"),
    }
}

fn key_field(file: &Path, k: &str) -> String {
    let s = std::fs::read_to_string(file).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{k} = \"")))
        .map(|v| v.trim_end_matches('"').to_string())
        .unwrap_or_default()
}

#[test]
fn ivnae_dissector_fields_match_pcap_verify() {
    require_tshark!();
    let d = TempDir::new("ws-ivnae");
    // AEAD with and without confidentiality, HMAC only, and Encrypt-then-MAC; key ids 1..4.
    for (i, profile) in [
        "aes128-gcm",
        "aes256-gcm/auth",
        "hmac-sha256",
        "aes128-cbc-hmac-sha1",
        "chacha20-poly1305",
    ]
    .iter()
    .enumerate()
    {
        let keys = d.path(&format!("k{i}.toml"));
        let o = d.run(&[
            "keygen",
            "--profile",
            profile,
            "--out",
            keys.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let pcap = d.path(&format!("tx{i}.pcap"));
        let sink = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let o = d.run(&[
            "send",
            "--profile",
            profile,
            "--keys",
            keys.to_str().unwrap(),
            "--state-dir",
            d.path("hw").to_str().unwrap(),
            "--udp",
            &sink.local_addr().unwrap().to_string(),
            "--count",
            "4",
            "--payload",
            &(20 + 30 * i).to_string(),
            "--pcap",
            pcap.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "send {profile}: {}", text(&o.stderr));
        // What pcap verify reports (and that every frame verifies under the key file's keys).
        let mut args: Vec<String> = vec![
            "pcap".into(),
            "verify".into(),
            "--profile".into(),
            profile.to_string(),
        ];
        for (k, flag) in [("key", "--key"), ("mac_key", "--mac-key"), ("iv", "--iv")] {
            let v = key_field(&keys, k);
            if !v.is_empty() {
                args.extend([flag.to_string(), v]);
            }
        }
        args.extend([
            "--key-id".into(),
            "1".into(),
            "--json".into(),
            pcap.display().to_string(),
        ]);
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "pcap verify {profile}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let frames = v["frames"].as_array().unwrap();
        assert_eq!(frames.len(), 4, "{v}");
        let rows = tshark(
            "ivnae.lua",
            &pcap,
            &[],
            &[
                "ivnae.version",
                "ivnae.suite",
                "ivnae.key_id",
                "ivnae.flags",
                "ivnae.flags.conf",
                "ivnae.seq",
                "ivnae.body_len",
                "ivnae.tag",
            ],
        );
        assert_eq!(rows.len(), 4, "{rows:?}");
        for (f, r) in frames.iter().zip(&rows) {
            assert_eq!(f["verdict"], "ok", "{profile}: {f}");
            let h = &f["ivnae"];
            assert_eq!(r[0], h["version"].to_string(), "{profile} version");
            assert_eq!(
                r[1],
                format!("0x{:02x}", h["suite_id"].as_u64().unwrap()),
                "{profile} suite"
            );
            assert_eq!(r[2], h["key_id"].to_string(), "{profile} key id");
            assert_eq!(
                r[3],
                format!("0x{:02x}", h["flags"].as_u64().unwrap()),
                "{profile} flags"
            );
            let conf = h["flags"].as_u64().unwrap() & 1 == 1;
            assert_eq!(truth(&r[4]), conf, "{profile} conf");
            assert_eq!(r[5], h["seq"].to_string(), "{profile} seq");
            assert_eq!(r[6], h["body_len"].to_string(), "{profile} body length");
            assert_eq!(r[7], h["tag"].as_str().unwrap(), "{profile} tag");
        }
        let conf_expected = !profile.ends_with("/auth") && !profile.starts_with("hmac-");
        assert_eq!(truth(&rows[0][4]), conf_expected, "{profile}: {rows:?}");
    }
}

#[test]
fn someip_sec_dissector_takes_apart_secured_messages() {
    require_tshark!();
    let d = TempDir::new("ws-someip");
    let services = "[[service]]\nid = 0x1234\nlevel = \"conf\"\nsuite = \"aes128-gcm\"\n\
        key = \"000102030405060708090a0b0c0d0e0f\"\nkey_id = 7\necho_method = 1\n\
        [[service]]\nid = 0x1235\nlevel = \"auth\"\nsuite = \"chacha20-poly1305\"\n\
        key = \"000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f\"\necho_method = 1\n\
        [[service]]\nid = 0x1236\nlevel = \"nosec\"\necho_method = 1\n";
    let srv_cfg = d.path("server.toml");
    std::fs::write(
        &srv_cfg,
        format!("[node]\naddress = \"127.0.0.1\"\nudp_port = 0\ntcp_port = 0\n[sd]\nenabled = false\n{services}"),
    )
    .unwrap();
    let cli_cfg = d.path("client.toml");
    std::fs::write(
        &cli_cfg,
        format!("[node]\naddress = \"127.0.0.1\"\n[sd]\nenabled = false\n{services}"),
    )
    .unwrap();
    let mut c = Command::new(BIN);
    c.args(["someip", "serve", "--config"])
        .arg(&srv_cfg)
        // With --json the address line is on stderr (stdout holds the JSON document alone).
        .args(["--duration", "6", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _srv = Proc(Some(child));
    let udp: SocketAddr = line
        .split("udp ")
        .nth(1)
        .and_then(|s| s.split([',', ';']).next())
        .unwrap_or_else(|| panic!("no udp address in {line}"))
        .trim()
        .parse()
        .unwrap();
    for (service, size) in [("0x1234", "40"), ("0x1235", "24"), ("0x1236", "10")] {
        let o = Command::new(BIN)
            .args(["someip", "call", "--config"])
            .arg(&cli_cfg)
            .args([
                "--service",
                service,
                "--method",
                "1",
                "--endpoint",
                &udp.to_string(),
            ])
            .args(["--count", "2", "--payload-size", size, "--pcap"])
            .arg(d.path(&format!("c{service}.pcap")))
            .output()
            .unwrap();
        assert!(o.status.success(), "call {service}: {}", text(&o.stderr));
    }
    let port = format!("someipsec.udp_port:{}", udp.port());
    for (service, size, kid) in [("0x1234", 40, "7"), ("0x1235", 24, ""), ("0x1236", 10, "")] {
        let rows = tshark(
            "someip-sec.lua",
            &d.path(&format!("c{service}.pcap")),
            &["-o", &port, "-o", "someipsec.secured:1234,1235"],
            &[
                "someipsec.service",
                "someipsec.secured",
                "someipsec.key_id",
                "someipsec.counter",
                "someipsec.body_len",
                "someipsec.tag",
                "someipsec.length",
            ],
        );
        assert_eq!(rows.len(), 4, "{service}: requests and responses {rows:?}");
        let mut last_req_counter = 0u64;
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r[0], service, "{r:?}");
            let secured = service != "0x1236";
            assert_eq!(truth(&r[1]), secured, "{service} {r:?}");
            let len: usize = r[6].parse().unwrap();
            if secured {
                if !kid.is_empty() {
                    assert_eq!(r[2], kid, "{service} key id {r:?}");
                }
                let counter: u64 = r[3].parse().unwrap();
                assert!(counter >= 1);
                if i % 2 == 0 {
                    assert!(counter > last_req_counter, "counters grow: {rows:?}");
                    last_req_counter = counter;
                }
                assert_eq!(r[4], size.to_string(), "{service} body {r:?}");
                assert_eq!(r[5].len(), 32, "a 16-byte tag: {r:?}");
                assert_eq!(len, 8 + 1 + 8 + size + 16, "{service} Length {r:?}");
            } else {
                assert_eq!(r[4], size.to_string());
                assert_eq!(len, 8 + size);
            }
        }
    }
}
