//! Nonce safety as a user meets it: `ivnsec send` killed with SIGKILL mid-stream and restarted
//! under the same key and `--state-dir` never repeats a sequence number (hence no (key, nonce)
//! pair), proven from the receiver's capture; over UDP on loopback (no root) and on a testbed of
//! its own (root; skipped with a reason otherwise). Also: refusal without a state directory,
//! exhaustion at `--seq-limit`, lock contention, bad key files, `keygen`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[macro_use]
mod common;

use common::{BIN, TempDir, text};

/// A child process killed (SIGKILL) if the test fails before it ended.
struct Proc(Option<Child>);

impl Proc {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }
    fn take(&mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `ivnsec keygen --profile P --out DIR/NAME`.
fn keygen(d: &TempDir, profile: &str, name: &str) -> PathBuf {
    let p = d.path(name);
    let o = d.run(&["keygen", "--profile", profile, "--out", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    p
}

/// Starts a receiver (`prefix` e.g. `ip netns exec NS`), waits for its `listening on` line and
/// returns it with that line; its remaining stderr is drained by a thread.
fn start_receiver(mut cmd: Command) -> (Proc, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn receiver");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut proc = Proc(Some(child));
    loop {
        line.clear();
        let n = err.read_line(&mut line).unwrap();
        if n == 0 {
            let o = proc.take().wait_with_output().unwrap();
            panic!("receiver ended before listening: {}", text(&o.stdout));
        }
        if line.contains("listening on") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = err.read_to_string(&mut sink);
        if !sink.is_empty() {
            eprintln!("receiver stderr: {sink}");
        }
    });
    (proc, line.trim().to_string())
}

/// Stops a receiver with SIGTERM and returns its JSON counters.
fn stop_receiver(mut p: Proc) -> Value {
    let pid = p.child().id();
    ivnsec_net::sys::signal_process(pid, false).unwrap();
    let mut out = String::new();
    let mut child = p.take();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(0), "receiver: {out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("receiver JSON: {e}: {out}"))
}

/// The reserved mark in the single `.hw` file of `dir`.
fn reserved_mark(dir: &Path) -> Option<u64> {
    let e = std::fs::read_dir(dir).ok()?;
    let hw: Vec<PathBuf> = e
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "hw"))
        .collect();
    assert!(hw.len() <= 1, "{hw:?}");
    let text = std::fs::read_to_string(hw.first()?).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("reserved "))
        .and_then(|v| v.parse().ok())
}

/// (sequence number, nonce-relevant bytes) of every unit in a capture.
fn captured_units(pcap: &Path, profile: &str) -> Vec<(u64, Vec<u8>)> {
    let bytes = std::fs::read(pcap).unwrap();
    let reader = ivnsec_net::pcap::PcapReader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    for r in reader {
        let r = r.unwrap();
        let f = &r.data;
        let u = match profile {
            // IVN-AE: sequence number at bytes 18..26; nonce = iv XOR seq.
            p if !p.starts_with("macsec") && !p.starts_with("esp") => {
                let s = u64::from_be_bytes(f[18..26].try_into().unwrap());
                (s, f[18..26].to_vec())
            }
            // MACsec: PN at 16..20, SCI at 20..28; nonce = SCI ‖ PN.
            p if p.starts_with("macsec") => {
                let s = u64::from(u32::from_be_bytes(f[16..20].try_into().unwrap()));
                (s, [&f[20..28], &f[16..20]].concat())
            }
            // ESP over IPv4 over Ethernet: SPI 34..38, seq 38..42, IV 42..50; nonce = salt ‖ IV.
            _ => {
                let s = u64::from(u32::from_be_bytes(f[38..42].try_into().unwrap()));
                (s, f[42..50].to_vec())
            }
        };
        out.push(u);
    }
    out
}

/// Where the sender is started and where it sends.
struct Setup {
    /// Command prefix to run a sender (e.g. inside a namespace).
    sender: Box<dyn Fn() -> Command>,
    /// Arguments naming the link and addresses.
    link_args: Vec<String>,
}

/// The scenario: stream, SIGKILL when the second block is reserved, restart with --count 100,
/// stop the receiver, check the capture.
fn kill_and_restart(
    d: &TempDir,
    profile: &str,
    keys: &Path,
    setup: &Setup,
    receiver: Proc,
    rx_pcap: &Path,
) {
    let state = d.path(&format!("state-{profile}"));
    let mut args: Vec<String> = vec![
        "send".into(),
        "--profile".into(),
        profile.into(),
        "--keys".into(),
        keys.to_str().unwrap().into(),
        "--state-dir".into(),
        state.to_str().unwrap().into(),
        "--reserve-block".into(),
        "50".into(),
        "--rate".into(),
        "2000".into(),
        "--json".into(),
    ];
    args.extend(setup.link_args.iter().cloned());
    let mut first = Proc(Some(
        (setup.sender)()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    // Mid-stream: once the second block (numbers 51..=100) is reserved, at least 51 went out.
    let t0 = Instant::now();
    while reserved_mark(&state).unwrap_or(0) < 100 {
        if let Ok(Some(st)) = first.child().try_wait() {
            let mut e = String::new();
            first.take().stderr.unwrap().read_to_string(&mut e).unwrap();
            panic!("{profile}: sender ended early ({st}): {e}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{profile}: no progress"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(20));
    first.child().kill().unwrap(); // SIGKILL: no destructor, no summary, no final write
    first.take().wait().unwrap();
    let mark = reserved_mark(&state).unwrap();

    // Restart under the same key and state: 100 more units.
    args.extend(["--count".into(), "100".into()]);
    let o = (setup.sender)().args(&args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{profile}: {}", text(&o.stderr));
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["sent"], 100, "{s}");
    assert_eq!(
        s["first_seq"],
        mark + 1,
        "restart resumes above the mark: {s}"
    );
    assert_eq!(s["last_seq"], mark + 100, "{s}");
    std::thread::sleep(Duration::from_millis(300));
    let counters = stop_receiver(receiver);

    let units = captured_units(rx_pcap, profile);
    assert_eq!(counters["received"], units.len() as u64, "{counters}");
    assert_eq!(
        counters["accepted"], counters["received"],
        "{profile}: every unit accepted (replay window 0: strictly increasing) {counters}"
    );
    assert_eq!(counters["dropped"], 0, "{counters}");
    // No sequence number and no nonce repeats.
    let seqs: HashSet<u64> = units.iter().map(|u| u.0).collect();
    let nonces: HashSet<&Vec<u8>> = units.iter().map(|u| &u.1).collect();
    assert_eq!(
        seqs.len(),
        units.len(),
        "{profile}: a sequence number repeats"
    );
    assert_eq!(nonces.len(), units.len(), "{profile}: a nonce repeats");
    // Everything after the restart is above everything before it.
    let before: Vec<u64> = units.iter().map(|u| u.0).filter(|&s| s <= mark).collect();
    let after: Vec<u64> = units.iter().map(|u| u.0).filter(|&s| s > mark).collect();
    assert!(
        before.len() >= 51,
        "{profile}: {} before the kill",
        before.len()
    );
    assert_eq!(
        after,
        (mark + 1..=mark + 100).collect::<Vec<_>>(),
        "{profile}"
    );
    let pos_last_before = units.iter().rposition(|u| u.0 <= mark).unwrap();
    let pos_first_after = units.iter().position(|u| u.0 > mark).unwrap();
    assert!(
        pos_last_before < pos_first_after,
        "{profile}: interleaved runs"
    );
    assert!(
        units.windows(2).all(|w| w[0].0 < w[1].0),
        "{profile}: order"
    );
    if profile.starts_with("esp") {
        // ESP GCM: the explicit IV is the 64-bit sequence number (RFC 4106 §3.1).
        assert!(
            units
                .iter()
                .all(|u| u64::from_be_bytes(u.1[..].try_into().unwrap()) == u.0)
        );
    }
}

const PROFILES: [&str; 3] = ["aes128-gcm", "macsec-gcm-aes-128", "esp-aes128-gcm"];

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
fn kill_9_and_restart_never_repeats_a_nonce_on_a_testbed() {
    require_root!();
    let d = TempDir::new("tb");
    let o = d.run(&["testbed", "up", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    let node = |name: &str| -> (String, String, String, String) {
        let n = st["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .unwrap();
        let i = &n["interfaces"][0];
        let ip = i["ipv4"].as_str().unwrap().split('/').next().unwrap();
        (
            n["namespace"].as_str().unwrap().to_string(),
            i["name"].as_str().unwrap().to_string(),
            i["mac"].as_str().unwrap().to_string(),
            ip.to_string(),
        )
    };
    let (ns1, if1, mac1, ip1) = node("ecu1");
    let (ns2, if2, mac2, ip2) = node("ecu2");
    for profile in PROFILES {
        let keys = keygen(&d, profile, &format!("{profile}.toml"));
        let rx_pcap = d.path(&format!("rx-{profile}.pcap"));
        let mut rc = Command::new("ip");
        rc.args(["netns", "exec", &ns2, BIN])
            .args(["receive", "--profile", profile, "--keys"])
            .arg(&keys)
            .args(["--iface", &if2, "--from", &mac1, "--from-ip", &ip1])
            .args(["--to-ip", &ip2, "--replay-window", "0", "--json", "--pcap"])
            .arg(&rx_pcap);
        let (rx, _) = start_receiver(rc);
        let ns = ns1.clone();
        let setup = Setup {
            sender: Box::new(move || {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns, BIN]);
                c
            }),
            link_args: vec![
                "--iface".into(),
                if1.clone(),
                "--to".into(),
                mac2.clone(),
                "--from-ip".into(),
                ip1.clone(),
                "--to-ip".into(),
                ip2.clone(),
            ],
        };
        kill_and_restart(&d, profile, &keys, &setup, rx, &rx_pcap);
    }
    let o = d.run(&["testbed", "down", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
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
        reserved_mark(&state),
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
    while reserved_mark(&state).is_none() {
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
