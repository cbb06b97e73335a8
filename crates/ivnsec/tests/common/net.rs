//! Network namespaces of a test's own and what runs in them: `ip`, ping, tshark captures,
//! raw frames injected by this test binary re-run inside a namespace.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use ivnsec_net::testbed::{Options, Testbed};
use ivnsec_net::topology::Topology;

use super::{Proc, TempDir, text};

/// A testbed of `topology` with the state of `d`, IPv4 addresses on the ECUs if `ipv4`;
/// taken down when `d` is dropped.
pub fn testbed(d: &TempDir, topology: &Topology, ipv4: bool) -> Testbed {
    Testbed::up(
        topology,
        &Options {
            ipv4,
            state_dir: d.state(),
            prefix: None,
        },
    )
    .unwrap()
}

/// `ip ARGS`, checked.
pub fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
}

/// `ip netns exec NS PROGRAM`.
pub fn exec(ns: &str, program: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, program]);
    c
}

/// `ping -c 5 -i 0.05 -W 2 EXTRA TO` in `ns` (a later `-c`, `-i` or `-W` in `extra` wins).
pub fn ping(ns: &str, to: &str, extra: &[&str]) -> Output {
    exec(ns, "ping")
        .args(["-c", "5", "-i", "0.05", "-W", "2"])
        .args(extra)
        .arg(to)
        .output()
        .unwrap()
}

/// [`ping`] that must succeed with no packet lost.
pub fn assert_ping(ns: &str, to: &str, extra: &[&str]) {
    let o = ping(ns, to, extra);
    assert!(
        o.status.success() && text(&o.stdout).contains(" 0% packet loss"),
        "ping {to} from {ns} {extra:?}: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// (transmitted, received) of a finished ping.
pub fn ping_counts(o: &Output) -> (u64, u64) {
    let out = text(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or_else(|| panic!("ping: {out}{}", text(&o.stderr)));
    let num = |w: &str| -> u64 {
        line.split(',')
            .find(|p| p.contains(w))
            .and_then(|p| p.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{w} in {line}"))
    };
    (num("transmitted"), num("received"))
}

/// A namespace of the test's own (created by the caller with `ip netns add`); on drop, the
/// processes still in it are sent SIGTERM and the namespace is deleted.
pub struct Netns(pub String);

impl Drop for Netns {
    fn drop(&mut self) {
        if let Ok(o) = Command::new("ip").args(["netns", "pids", &self.0]).output() {
            let pids = text(&o.stdout);
            for pid in pids.split_whitespace() {
                let _ = Command::new("kill").arg(pid).status();
            }
            if !pids.trim().is_empty() {
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// The two-host fixture of the tests that need no testbed state: namespaces `<prefix>-a` and
/// `<prefix>-b` joined by a veth pair `<prefix>a` / `<prefix>b` (loopback up, nothing else
/// configured: each test family gives the ends their addresses); deleted on drop, after the
/// processes of the test, which are declared later and dropped first.
pub struct VethPair {
    pub prefix: String,
}

impl VethPair {
    pub fn new() -> VethPair {
        let prefix = ivnsec_net::testbed::random_prefix().unwrap();
        let p = VethPair { prefix };
        ip(&["netns", "add", &p.ns('a')]);
        ip(&["netns", "add", &p.ns('b')]);
        ip(&[
            "link",
            "add",
            &p.veth('a'),
            "netns",
            &p.ns('a'),
            "type",
            "veth",
            "peer",
            "name",
            &p.veth('b'),
            "netns",
            &p.ns('b'),
        ]);
        for s in ['a', 'b'] {
            ip(&["-n", &p.ns(s), "link", "set", "lo", "up"]);
        }
        p
    }
    pub fn ns(&self, side: char) -> String {
        format!("{}-{side}", self.prefix)
    }
    pub fn veth(&self, side: char) -> String {
        format!("{}{side}", self.prefix)
    }
    /// The name of the TUN or TAP a test starts on `side`.
    pub fn tun(&self, side: char) -> String {
        format!("{}t{side}", self.prefix)
    }
    /// The same name as [`VethPair::tun`], for a TAP.
    pub fn tap(&self, side: char) -> String {
        self.tun(side)
    }
    /// `ip netns exec NS PROGRAM` on `side`.
    pub fn exec(&self, side: char, program: &str) -> Command {
        exec(&self.ns(side), program)
    }
    /// `PROGRAM ARGS` on `side`, run to the end.
    pub fn output(&self, side: char, program: &str, args: &[&str]) -> Output {
        self.exec(side, program).args(args).output().unwrap()
    }
    /// Whether link `dev` exists on `side`.
    pub fn link_exists(&self, side: char, dev: &str) -> bool {
        Command::new("ip")
            .args(["-n", &self.ns(side), "link", "show", dev])
            .stderr(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success()
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        for s in ['a', 'b'] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(s)])
                .status();
        }
    }
}

/// Whether tshark runs here.
pub fn have_tshark() -> bool {
    super::runs("tshark")
}

/// A tshark capture of interface `dev` in namespace `ns` into the classic pcap file `file`;
/// returns once tshark captures (half a second after it says so: its socket takes frames a
/// moment later).
pub fn capture(ns: &str, dev: &str, file: &Path) -> Proc {
    let mut c = exec(ns, "tshark")
        .args(["-i", dev, "-F", "pcap", "-w"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(c.stderr.take().unwrap());
    let mut line = String::new();
    let mut said = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "tshark ended before capturing: {said} (exit {:?})",
            c.wait().ok()
        );
        said.push_str(&line);
        if line.contains("Capturing on") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    std::thread::sleep(Duration::from_millis(500));
    Proc(Some(c))
}

/// Stops a [`capture`] (SIGTERM, 300 ms after the last frame of interest) and returns its frames.
pub fn stop_capture(mut pr: Proc, file: &Path) -> Vec<Vec<u8>> {
    std::thread::sleep(Duration::from_millis(300));
    let mut c = pr.take();
    ivnsec_net::sys::signal_process(c.id(), false).unwrap();
    c.wait().unwrap();
    let bytes = std::fs::read(file).unwrap();
    ivnsec_net::pcap::PcapReader::new(&bytes[..])
        .unwrap()
        .map(|r| r.unwrap().data)
        .collect()
}

/// Sends raw frames out of interface `dev` in namespace `ns` (from a packet socket of
/// `ethertype`), `gap` apart: this test binary, re-run inside the namespace, runs the ignored test
/// `MODULE::inject_helper` (`module` is the caller's `module_path!()`), whose body is
/// [`send_injected_frames`], with the frames in its environment.
pub fn inject(ns: &str, dev: &str, frames: &[&[u8]], ethertype: u16, gap: Duration, module: &str) {
    let exe = std::env::current_exe().unwrap();
    let hexes: Vec<String> = frames.iter().map(hex::encode).collect();
    let o = exec(ns, exe.to_str().unwrap())
        .args(["--exact", &super::test_name(module, "inject_helper")])
        .args(["--ignored", "--nocapture"])
        .env("IVNSEC_TEST_INJECT_IF", dev)
        .env("IVNSEC_TEST_INJECT_ETHERTYPE", ethertype.to_string())
        .env("IVNSEC_TEST_INJECT_GAP_US", gap.as_micros().to_string())
        .env("IVNSEC_TEST_INJECT_FRAMES", hexes.join(","))
        .output()
        .unwrap();
    assert!(
        o.status.success() && text(&o.stdout).contains("1 passed"),
        "inject: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// The body of the `inject_helper` test of a module that calls [`inject`]: sends the frames
/// its environment names.
pub fn send_injected_frames() {
    let ifname = std::env::var("IVNSEC_TEST_INJECT_IF").expect("run by inject()");
    let ethertype: u16 = std::env::var("IVNSEC_TEST_INJECT_ETHERTYPE")
        .unwrap()
        .parse()
        .unwrap();
    let gap = Duration::from_micros(
        std::env::var("IVNSEC_TEST_INJECT_GAP_US")
            .unwrap()
            .parse()
            .unwrap(),
    );
    let frames = std::env::var("IVNSEC_TEST_INJECT_FRAMES").unwrap();
    let sock = ivnsec_net::sys::RawSocket::open(&ifname, ethertype).unwrap();
    for f in frames.split(',') {
        let b = hex::decode(f).unwrap();
        assert_eq!(sock.send(&b).unwrap(), b.len());
        if !gap.is_zero() {
            std::thread::sleep(gap);
        }
    }
}
