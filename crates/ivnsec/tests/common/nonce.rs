//! Nonce safety (`nonce` of cli and of testbed_pair): a sender killed with SIGKILL and
//! restarted under the same key and state directory, its units captured at the receiver and
//! checked for a repeated (key, nonce) pair.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Proc, TempDir, text};

/// Starts a receiver (`prefix` e.g. `ip netns exec NS`), waits for its `listening on` line and
/// returns it with that line; its remaining stderr is drained by a thread.
pub fn start_receiver(mut cmd: Command) -> (Proc, String) {
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
pub fn stop_receiver(mut p: Proc) -> Value {
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
    let v: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("receiver JSON: {e}: {out}"));
    // Exit 1 exactly when a unit failed verification.
    let failed = v["dropped"].as_u64().unwrap_or(0) > 0;
    assert_eq!(st.code(), Some(i32::from(failed)), "receiver: {out}");
    v
}

/// The reserved mark in the single `.hw` file of `dir`.
pub fn try_reserved_mark(dir: &Path) -> Option<u64> {
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
pub fn captured_units(pcap: &Path, profile: &str) -> Vec<(u64, Vec<u8>)> {
    let bytes = std::fs::read(pcap).unwrap();
    let reader = ivnsec_net::pcap::PcapReader::new(&bytes[..]).unwrap();
    let mut out = Vec::new();
    for r in reader {
        let r = r.unwrap();
        let f = &r.data;
        let u = match profile {
            // IVN-AE: sequence number at bytes 18..26 (one key id per capture here); nonce =
            // iv XOR (key id ‖ seq).
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
pub struct Setup {
    /// Command prefix to run a sender (e.g. inside a namespace).
    pub sender: Box<dyn Fn() -> Command>,
    /// Arguments naming the link and addresses.
    pub link_args: Vec<String>,
}

/// The scenario: stream, SIGKILL when the second block is reserved, restart with --count 100,
/// stop the receiver, check the capture.
pub fn kill_and_restart(
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
    while try_reserved_mark(&state).unwrap_or(0) < 100 {
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
    let mark = try_reserved_mark(&state).unwrap();

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

pub const PROFILES: [&str; 3] = ["aes128-gcm", "macsec-gcm-aes-128", "esp-aes128-gcm"];

/// Collects every datagram sent to it, in a thread, until [`Sink::finish`].
pub struct Sink {
    pub addr: String,
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub thread: Option<std::thread::JoinHandle<Vec<Vec<u8>>>>,
}

impl Sink {
    pub fn new() -> Sink {
        use std::os::fd::AsFd;
        use std::sync::atomic::{AtomicBool, Ordering};
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let _ = ivnsec_net::sys::set_socket_buffers(sock.as_fd(), 8 << 20);
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = sock.local_addr().unwrap().to_string();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut buf = vec![0u8; 70_000];
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) => out.push(buf[..n].to_vec()),
                    Err(_) if s.load(Ordering::Relaxed) => return out,
                    Err(_) => {}
                }
            }
        });
        Sink {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    /// Waits for stragglers, stops and returns every datagram received.
    pub fn finish(mut self) -> Vec<Vec<u8>> {
        std::thread::sleep(Duration::from_millis(200));
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

/// (sequence number, the bytes that make the nonce unique under the key) of one unit as it
/// travels over `--udp`: IVN-AE and MACsec units are whole frames, ESP units the ESP part.
pub fn udp_unit(profile: &str, u: &[u8]) -> (u64, Vec<u8>) {
    if profile.starts_with("macsec") {
        // PN at 16..20, SCI at 20..28: nonce = SCI ‖ PN.
        let pn = u32::from_be_bytes(u[16..20].try_into().unwrap());
        (u64::from(pn), [&u[20..28], &u[16..20]].concat())
    } else if profile.starts_with("esp") {
        // SPI 0..4, sequence number 4..8, IV 8..16: nonce = salt ‖ IV.
        let s = u32::from_be_bytes(u[4..8].try_into().unwrap());
        (u64::from(s), [&u[0..4], &u[8..16]].concat())
    } else {
        // IVN-AE: key id at 16, sequence number at 18..26; nonce = iv XOR (key id ‖ seq).
        let s = u64::from_be_bytes(u[18..26].try_into().unwrap());
        (s, [&u[16..17], &u[18..26]].concat())
    }
}

/// Asserts that no nonce (and no sequence number) repeats among `units`; returns the numbers.
pub fn assert_no_nonce_repeats(profile: &str, units: &[Vec<u8>]) -> Vec<u64> {
    let parsed: Vec<(u64, Vec<u8>)> = units.iter().map(|u| udp_unit(profile, u)).collect();
    let nonces: HashSet<&Vec<u8>> = parsed.iter().map(|p| &p.1).collect();
    let seqs: Vec<u64> = parsed.iter().map(|p| p.0).collect();
    let distinct: HashSet<u64> = seqs.iter().copied().collect();
    assert_eq!(
        nonces.len(),
        units.len(),
        "{profile}: a (key, nonce) pair repeats"
    );
    assert_eq!(
        distinct.len(),
        units.len(),
        "{profile}: a sequence number repeats"
    );
    seqs
}
