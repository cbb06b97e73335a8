//! `ivnsec gateway` (docs/gateway.md): legacy ECUs behind bump-in-the-wire gateways on testbeds
//! of the test's own (`bump2`: two legacy ECUs each behind a gateway; `bump`: a legacy sensor
//! behind a gateway and a MACsec consumer running `ivnsec macsec up`), random prefixes, own
//! state directories, removed on drop even when a test fails.
//!
//! - static keys: ping (full 1500-byte MTU on the legacy side), ping over a VLAN (tagged frames
//!   and ARP cross), iperf3 UDP 1472-byte datagrams and TCP between the legacy ECUs; a tshark
//!   capture of the protected link holds MACsec frames only and never the ping payload;
//! - MKA (`--psk`): the gateway and a MACsec consumer agree on a SAK; ping and iperf3 UDP;
//! - forged frames (bad ICV, unknown SCI), a replayed frame and plain frames carrying the legacy
//!   ECUs' MACs, injected on the protected side, never reach the legacy ECU (its own capture)
//!   and are counted by reason;
//! - kill -9 of a gateway and a restart never repeat a PN under the key (from a capture);
//! - bad options exit 2 with a reason (the MTU the protected link needs named exactly).
//!
//! The tests need root and skip with a printed reason otherwise; the `--keyserver` options are
//! checked without root in `cli/gateway.rs`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use ivnsec_net::testbed::Testbed;
use ivnsec_net::topology::Topology;
use serde_json::Value;

use crate::common::frames::{ETH_MACSEC, macsec_pns};
use crate::common::net::{
    self, assert_ping, capture, exec, have_tshark, inject, ip, ping, stop_capture, testbed,
};
use crate::common::proc::wait_for_or;
use crate::common::{BIN, Proc, TempDir, keygen, spawn_until_ready, text};

const ETH_EAPOL: [u8; 2] = [0x88, 0x8E];
/// SCIs of the gateways' protected ports (`02:49:56:02:K:02` ‖ 0001).
const SCI_GW1: u64 = 0x0249_5602_0102_0001;
const SCI_GW2: u64 = 0x0249_5602_0202_0001;
const MAC_GW1_PROT: &str = "02:49:56:02:01:02";
const MAC_GW2_PROT: &str = "02:49:56:02:02:02";

fn ns(tb: &Testbed, node: &str) -> String {
    tb.namespace(node).unwrap().to_string()
}

/// One gateway node of the testbed and where its files go.
struct Gw {
    ns: String,
    name: String,
    dir: PathBuf,
    /// `--state-dir` (its own unless [`sharing_state`](Self::sharing_state)).
    state: PathBuf,
}

impl Gw {
    fn new(tb: &Testbed, d: &TempDir, name: &str) -> Gw {
        Gw {
            ns: ns(tb, name),
            name: name.to_string(),
            dir: d.0.clone(),
            state: d.0.join(format!("{name}-state")),
        }
    }
    /// The same gateway with `other`'s nonce-state directory.
    fn sharing_state(self, other: &Gw) -> Gw {
        Gw {
            state: other.state.clone(),
            ..self
        }
    }
    fn path(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}-{what}", self.name))
    }
    fn args(&self, keys: &[&str], extra: &[&str]) -> Command {
        let mut c = exec(&self.ns, BIN);
        c.args(["gateway", "--plain", "plain0", "--protected", "prot0"]);
        if !keys.contains(&"--profile") {
            c.args(["--profile", "macsec-gcm-aes-128"]);
        }
        c.args(keys)
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--run-dir")
            .arg(self.path("run"))
            .arg("--events")
            .arg(self.path("events.jsonl"))
            .args(["--reserve-block", "16", "--json"])
            .args(extra);
        c
    }
    fn start(&self, keys: &[&str], extra: &[&str]) -> Proc {
        spawn_until_ready(
            self.args(keys, extra),
            "running until",
            &format!("gateway {}", self.name),
        )
    }
    /// `macsec status --json` of this gateway (after the next status write).
    fn status(&self) -> Value {
        std::thread::sleep(Duration::from_millis(600));
        let o = exec(&self.ns, BIN)
            .args(["macsec", "status", "--json", "--run-dir"])
            .arg(self.path("run"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
        assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
        v[0].clone()
    }
}

/// iperf3 from `client` to `server_ip` (server in `server`), `-J` report.
fn iperf3(server: &str, client: &str, server_ip: &str, extra: &[&str]) -> Value {
    let mut srv = Proc(Some(
        exec(server, "iperf3")
            .args(["-s", "-1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    ));
    std::thread::sleep(Duration::from_millis(300));
    let o = exec(client, "iperf3")
        .args(["-c", server_ip, "-J", "-t", "2"])
        .args(extra)
        .output()
        .unwrap();
    let _ = srv.0.as_mut().unwrap().wait();
    srv.0 = None;
    assert!(
        o.status.success(),
        "iperf3: {}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn legacy_ecus_talk_through_two_gateways_with_static_keys() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture the protected link");
        return;
    }
    let d = TempDir::new("gw2");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (e1, e2, sw) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"), ns(&tb, "sw0"));
    // Before the gateways run, nothing crosses them.
    let o = ping(&e1, "10.77.0.2", &["-c", "1", "-W", "1"]);
    assert!(
        !o.status.success(),
        "ping crossed a gateway that is not running"
    );

    let pcap = d.path("protected.pcap");
    let cap = capture(&sw, "to-gw1", &pcap);
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let recorded = d.path("gw1-recorded.pcap");
    let r = recorded.to_str().unwrap();
    let p1 = g1.start(&["--keys", k, "--peer", MAC_GW2_PROT], &["--pcap", r]);
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);

    // The legacy ECUs keep MTU 1500 and are not touched: a full-size unfragmentable ping, and
    // one with a marker payload.
    assert_ping(&e1, "10.77.0.2", &["-s", "1472", "-M", "do"]);
    assert_ping(&e1, "10.77.0.2", &["-p", "c0ffee5ec0de"]);
    // Any frame crosses as it was: VLAN-tagged (the kernel takes the tag out on receive; the
    // gateway puts it back), multicast, broadcast IPv6, an unknown EtherType. Sent raw on
    // ecu1's link, captured on ecu2's.
    let pcap2 = d.path("ecu2.pcap");
    let cap2 = capture(&e2, "eth0", &pcap2);
    let mark = b"IVNSEC-ANY-FRAME";
    let mut sent = Vec::new();
    for (dst, ethertype_and_more) in [
        ("024956000002", "8100 0064 88b5"),
        ("024956000002", "88a8 00c8 8100 0064 88b5"),
        ("01005e000101", "88b5"),
        ("ffffffffffff", "86dd"),
    ] {
        let mut f = hex::decode(format!(
            "{dst}024956000001{}",
            ethertype_and_more.replace(' ', "")
        ))
        .unwrap();
        f.extend_from_slice(mark);
        f.resize(f.len().max(60), 0x5A);
        sent.push(f);
    }
    let refs: Vec<&[u8]> = sent.iter().map(Vec::as_slice).collect();
    inject(
        &e1,
        "eth0",
        &refs,
        0x88B5,
        Duration::from_millis(5),
        module_path!(),
    );
    let got = stop_capture(cap2, &pcap2);
    for f in &sent {
        assert!(
            got.iter().any(|g| g == f),
            "{} did not arrive whole; got {:?}",
            hex::encode(f),
            got.iter().map(hex::encode).collect::<Vec<_>>()
        );
    }

    // iperf3: UDP with 1472-byte datagrams (the seed's load), both ways, and TCP. A modest
    // rate with room for loss: this checks that the traffic crosses whole (a datagram with a
    // wrong checksum or a lost fragment counts as lost), not how fast (scripts/gateway-bench).
    let udp = iperf3(&e2, &e1, "10.77.0.2", &["-u", "-b", "5M", "-l", "1472"]);
    let sum = &udp["end"]["sum"];
    let (lost, packets) = (
        sum["lost_packets"].as_u64().unwrap(),
        sum["packets"].as_u64().unwrap(),
    );
    assert!(
        packets > 700 && lost * 10 <= packets,
        "UDP lost {lost} of {packets}"
    );
    let udp = iperf3(
        &e2,
        &e1,
        "10.77.0.2",
        &["-u", "-b", "5M", "-l", "1472", "-R"],
    );
    let sum = &udp["end"]["sum"];
    let (lost, packets) = (
        sum["lost_packets"].as_u64().unwrap(),
        sum["packets"].as_u64().unwrap(),
    );
    assert!(
        packets > 700 && lost * 10 <= packets,
        "UDP -R lost {lost} of {packets}"
    );
    let tcp = iperf3(&e2, &e1, "10.77.0.2", &[]);
    let bytes = tcp["end"]["sum_received"]["bytes"].as_u64().unwrap();
    assert!(bytes > 1_000_000, "TCP moved only {bytes} bytes");

    // The gateways' view: everything counted, nothing dropped, MTUs as planned.
    let st = g1.status();
    assert_eq!(st["role"], "gateway", "{st}");
    assert_eq!(
        (&st["mtu"]["plain"], &st["mtu"]["protected"]),
        (&Value::from(1500), &Value::from(1532)),
        "{st}"
    );
    assert_eq!(st["rx"]["drops"], serde_json::json!({}), "{st}");
    assert_eq!(st["frames"]["too_long"], 0, "{st}");
    assert!(st["frames"]["iface_out"].as_u64().unwrap() > 1000, "{st}");

    // On the protected link: MACsec from gw1 and gw2 only, never the ping's marker in clear.
    let frames = stop_capture(cap, &pcap);
    assert!(frames.len() > 1000, "{} frames", frames.len());
    for f in &frames {
        assert_eq!(
            &f[12..14],
            &ETH_MACSEC,
            "a frame that is not MACsec crossed the protected link: {}",
            hex::encode(&f[..f.len().min(64)])
        );
        assert!(!contains(f, &[0xc0, 0xff, 0xee, 0x5e, 0xc0, 0xde]));
    }
    let scis: std::collections::BTreeSet<u64> = macsec_pns(&frames).iter().map(|p| p.0).collect();
    assert_eq!(scis, [SCI_GW1, SCI_GW2].into_iter().collect());
    // The legacy ECUs' own MACs stay in the frames; the SCI names the gateway.
    assert!(
        frames
            .iter()
            .any(|f| f[..12] == [0x02, 0x49, 0x56, 0, 0, 2, 0x02, 0x49, 0x56, 0, 0, 1])
    );

    let (c1, f1) = p1.stop_json();
    let (c2, _) = p2.stop_json();
    assert_eq!((c1, c2), (Some(0), Some(0)));
    assert!(f1["tx"]["next_pn"].as_u64().unwrap() > 1000, "{f1}");
    // --pcap: gw1 recorded what it sent and received on its protected port, as on the wire.
    let bytes = std::fs::read(&recorded).unwrap();
    let rec: Vec<Vec<u8>> = ivnsec_net::pcap::PcapReader::new(&bytes[..])
        .unwrap()
        .map(|r| r.unwrap().data)
        .collect();
    let pns = macsec_pns(&rec);
    assert_eq!(
        pns.len(),
        rec.len(),
        "only MACsec frames in the --pcap file"
    );
    let sent = pns.iter().filter(|p| p.0 == SCI_GW1).count() as u64;
    let got = pns.iter().filter(|p| p.0 == SCI_GW2).count() as u64;
    assert_eq!(sent, f1["frames"]["iface_out"].as_u64().unwrap(), "{f1}");
    assert_eq!(got, f1["frames"]["iface_in"].as_u64().unwrap(), "{f1}");
}

/// Not a test of its own: the injector `inject` runs inside a namespace.
#[test]
#[ignore = "run by the namespace tests inside their namespaces"]
fn inject_helper() {
    net::send_injected_frames();
}

fn drops(st: &Value, reason: &str) -> u64 {
    st["rx"]["drops"][reason].as_u64().unwrap_or(0)
}

#[test]
fn forged_replayed_and_plain_frames_on_the_protected_side_never_reach_the_legacy_ecu() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture");
        return;
    }
    let d = TempDir::new("gwf");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (e1, e2, sw) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"), ns(&tb, "sw0"));
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let _p1 = g1.start(&["--keys", k, "--peer", MAC_GW2_PROT], &[]);
    let _p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);

    // Genuine frames from gw1 to gw2, recorded on the switch port towards gw2.
    let rec = d.path("towards-gw2.pcap");
    let cap = capture(&sw, "to-gw2", &rec);
    assert_ping(&e1, "10.77.0.2", &[]);
    let recorded = stop_capture(cap, &rec);
    let genuine = recorded
        .iter()
        .find(|f| f.len() > 60 && macsec_pns(std::slice::from_ref(f))[0].0 == SCI_GW1)
        .expect("a frame of gw1 on the way to gw2")
        .clone();
    let before = g2.status();

    // What an attacker on the protected link sends to gw2.
    let replayed = genuine.clone();
    let mut bad_icv = genuine.clone();
    // A fresh PN (so the replay check passes) that the ICV does not cover.
    let pn = u32::from_be_bytes(bad_icv[16..20].try_into().unwrap());
    bad_icv[16..20].copy_from_slice(&(pn + 100_000).to_be_bytes());
    let mut unknown_sci = genuine.clone();
    unknown_sci[20..26].copy_from_slice(&[0x02, 0x66, 0x66, 0x66, 0x66, 0x66]);
    let mark = b"IVNSEC-FORGED";
    let plain = |dst: &str, ethertype: &str| {
        let mut f = hex::decode(format!("{dst}024956000001{ethertype}")).unwrap();
        f.extend_from_slice(mark);
        f.resize(60, 0x5A);
        f
    };
    // Plain frames carrying the legacy ECUs' MACs (to ecu2, as if from ecu1), and broadcast.
    let plain_unicast = plain("024956000002", "88b5");
    let plain_arp = plain("ffffffffffff", "0806");
    let plain_ipv4 = plain("024956000002", "0800");
    let legacy = d.path("ecu2.pcap");
    let cap = capture(&e2, "eth0", &legacy);
    inject(
        &sw,
        "to-gw2",
        &[
            &replayed,
            &bad_icv,
            &unknown_sci,
            &plain_unicast,
            &plain_arp,
            &plain_ipv4,
        ],
        0x88B5,
        Duration::from_millis(5),
        module_path!(),
    );
    let after = g2.status();
    let seen = stop_capture(cap, &legacy);
    // Nothing reached the legacy ECU: no frame at all (its link is otherwise quiet).
    assert!(
        seen.is_empty(),
        "frames reached ecu2: {:?}",
        seen.iter().map(hex::encode).collect::<Vec<_>>()
    );
    assert_eq!(
        after["frames"]["tap_out"], before["frames"]["tap_out"],
        "{after}"
    );
    // Counted by reason: the replay, the ICV failure, the unknown SCI; the plain frames never
    // even reach the SecY (the protected port takes MACsec only).
    let grew = |r: &str| drops(&after, r) - drops(&before, r);
    assert_eq!(grew("late"), 1, "{after}");
    assert_eq!(grew("bad_tag"), 1, "{after}");
    assert_eq!(grew("no_sci"), 1, "{after}");
    assert_eq!(
        after["frames"]["iface_in"].as_u64().unwrap()
            - before["frames"]["iface_in"].as_u64().unwrap(),
        3,
        "{after}"
    );
    // And the genuine traffic still flows.
    assert_ping(&e1, "10.77.0.2", &[]);
}

#[test]
fn a_gateway_killed_and_restarted_never_repeats_a_pn() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture");
        return;
    }
    let d = TempDir::new("gwk");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (e1, sw) = (ns(&tb, "ecu1"), ns(&tb, "sw0"));
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let key1 = ["--keys", k, "--peer", MAC_GW2_PROT];
    let _p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let pcap = d.path("from-gw1.pcap");
    let cap = capture(&sw, "to-gw1", &pcap);
    // gw1's acceptance mark of gw2's SA moves one frame at a time at ping rates, so its
    // restart refuses none of gw2's replies (a restart costs up to one checkpoint).
    let cp1 = ["--replay-checkpoint-ms", "1"];
    let mut p1 = g1.start(&key1, &cp1);
    assert_ping(&e1, "10.77.0.2", &[]);
    let reserved = g1.status()["tx"]["sas"][0]["reserved_pn"].as_u64().unwrap();
    // SIGKILL: no chance to write anything more.
    let mut c = p1.0.take().unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
    drop(p1);
    let p1 = g1.start(&key1, &cp1);
    assert_ping(&e1, "10.77.0.2", &[]);
    let frames = stop_capture(cap, &pcap);
    let pns: Vec<u32> = macsec_pns(&frames)
        .into_iter()
        .filter(|p| p.0 == SCI_GW1)
        .map(|p| p.1)
        .collect();
    assert!(pns.len() >= 10, "{pns:?}");
    // One sender, one key, one SA: every PN once, in increasing order, across the kill.
    assert!(
        pns.windows(2).all(|w| w[0] < w[1]),
        "a PN repeated or went back: {pns:?}"
    );
    // The restart resumed just above what was reserved before the kill.
    let first_after = pns.iter().copied().find(|&p| u64::from(p) > reserved);
    assert_eq!(
        first_after.map(u64::from),
        Some(reserved + 1),
        "reserved {reserved}: {pns:?}"
    );
    let (code, _) = p1.stop_json();
    assert_eq!(code, Some(0));
}

/// `bump`: a legacy sensor behind its gateway and a consumer running `ivnsec macsec up`, all on
/// one pre-shared CAK: MKA agrees on a SAK between the gateway and the consumer, and the sensor
/// talks to the consumer (ping both ways, iperf3 UDP); the protected link carries MACsec and
/// MKA only.
#[test]
fn mka_between_a_gateway_and_a_macsec_consumer() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture");
        return;
    }
    let d = TempDir::new("gwm");
    let tb = testbed(&d, &Topology::Bump, true);
    let psk = d.path("ca.psk");
    let o = d.run(&["keygen", "--mka", "--out", psk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let p = psk.to_str().unwrap();
    let (sensor, consumer, sw) = (ns(&tb, "sensor1"), ns(&tb, "consumer"), ns(&tb, "sw0"));
    let mka = ["--ramp-up-ms", "20", "--hello-seconds", "1"];
    let pcap = d.path("protected.pcap");
    let cap = capture(&sw, "to-gw1", &pcap);

    // The consumer's address moves from its link to its TAP.
    ip(&["-n", &consumer, "addr", "flush", "dev", "eth0"]);
    let mut c = exec(&consumer, BIN);
    c.args(["macsec", "up", "--iface", "eth0", "--tap", "mka0"])
        .args(["--profile", "macsec-gcm-aes-128", "--psk", p, "--state-dir"])
        .arg(d.path("consumer-state"))
        .arg("--run-dir")
        .arg(d.path("consumer-run"))
        .args(mka)
        .arg("--json");
    let pc = spawn_until_ready(c, "running until", "macsec up (consumer)");
    ip(&[
        "-n",
        &consumer,
        "addr",
        "add",
        "10.77.0.1/16",
        "dev",
        "mka0",
    ]);
    let g1 = Gw::new(&tb, &d, "gw1");
    let p1 = g1.start(&["--psk", p], &mka);

    wait_for_or(
        20,
        "the gateway transmits under an agreed SAK with one live peer",
        || {
            let st = g1.status();
            !st["tx"]["encoding_an"].is_null()
                && st["key_source_state"]["peers"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|p| p["live"] == true))
                && st["rx"]["sas"].as_array().is_some_and(|v| !v.is_empty())
        },
        || format!("{}", g1.status()),
    );
    // The consumer resolves the sensor's address through the gateway (ARP crosses it).
    wait_for_or(
        10,
        "ping sensor → consumer",
        || {
            ping(&sensor, "10.77.0.1", &["-c", "1", "-W", "1"])
                .status
                .success()
        },
        || format!("{}", g1.status()),
    );
    assert_ping(&sensor, "10.77.0.1", &["-s", "1472", "-M", "do"]);
    assert_ping(&consumer, "10.77.1.1", &[]);
    let udp = iperf3(
        &consumer,
        &sensor,
        "10.77.0.1",
        &["-u", "-b", "5M", "-l", "1472"],
    );
    let sum = &udp["end"]["sum"];
    let (lost, packets) = (
        sum["lost_packets"].as_u64().unwrap(),
        sum["packets"].as_u64().unwrap(),
    );
    assert!(
        packets > 700 && lost * 10 <= packets,
        "UDP lost {lost} of {packets}"
    );

    let frames = stop_capture(cap, &pcap);
    let (mut macsec, mut eapol) = (0, 0);
    for f in &frames {
        match [f[12], f[13]] {
            ETH_MACSEC => macsec += 1,
            ETH_EAPOL => eapol += 1,
            _ => panic!(
                "a frame that is neither MACsec nor MKA on the protected link: {}",
                hex::encode(&f[..f.len().min(64)])
            ),
        }
    }
    assert!(macsec > 700 && eapol > 0, "{macsec} MACsec, {eapol} MKA");
    let (cg, fg) = p1.stop_json();
    let (cc, _) = pc.stop_json();
    assert_eq!((cg, cc), (Some(0), Some(0)));
    assert_eq!(fg["key_source"], "mka", "{fg}");
}

#[test]
fn bad_options_exit_2_with_a_reason() {
    require_root!();
    let d = TempDir::new("gwo");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let g1 = Gw::new(&tb, &d, "gw1");
    let run = |args: Vec<&str>| -> (Option<i32>, String) {
        let o = exec(&g1.ns, BIN).args(args).output().unwrap();
        (o.status.code(), text(&o.stderr))
    };
    let base = |plain: &'static str, prot: &'static str| -> Vec<&str> {
        vec![
            "gateway",
            "--plain",
            plain,
            "--protected",
            prot,
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            k,
            "--peer",
            MAC_GW2_PROT,
            "--state-dir",
        ]
    };
    let state = g1.path("state");
    let s = state.to_str().unwrap();
    // The protected MTU leaves no room: the MTU needed is named exactly (and the legacy MTU
    // that would fit instead).
    ip(&["-n", &g1.ns, "link", "set", "prot0", "mtu", "1500"]);
    let mut v = base("plain0", "prot0");
    v.push(s);
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("at least 1532") && err.contains("mtu 1532") && err.contains("mtu 1468"),
        "{err}"
    );
    ip(&["-n", &g1.ns, "link", "set", "prot0", "mtu", "1532"]);
    // The same interface twice, a missing one, a profile that is not MACsec, no --state-dir.
    let mut v = base("prot0", "prot0");
    v.push(s);
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("two interfaces"), "{err}");
    let mut v = base("nosuch0", "prot0");
    v.push(s);
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--plain nosuch0: no such interface"), "{err}");
    let mut v = base("plain0", "prot0");
    v.push(s);
    v[6] = "esp-aes128-gcm";
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("MACsec"), "{err}");
    let mut v = base("plain0", "prot0");
    v.pop();
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--state-dir"), "{err}");
    // IVN-AE: --rx-keys malformed, the own key id as a peer's, missing; --rx-keys with MACsec.
    let ik = d.path("ivnae.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        ik.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let ik = ik.to_str().unwrap();
    let own = format!("1:{ik}");
    for (rx, want) in [
        (Some("nonsense"), "expected ID:FILE"),
        (Some(own.as_str()), "this gateway's own"),
        (None, "--rx-keys ID:FILE"),
    ] {
        let mut v = vec![
            "gateway",
            "--plain",
            "plain0",
            "--protected",
            "prot0",
            "--profile",
            "aes128-gcm",
            "--keys",
            ik,
            "--key-id",
            "1",
            "--state-dir",
            s,
        ];
        if let Some(r) = rx {
            v.extend(["--rx-keys", r]);
        }
        let (code, err) = run(v);
        assert_eq!(code, Some(2), "{rx:?}: {err}");
        assert!(err.contains(want), "{rx:?}: {err}");
    }
    let mut v = base("plain0", "prot0");
    v.extend([s, "--rx-keys", "2:x.toml"]);
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--rx-keys is for IVN-AE"), "{err}");
    let mut v = base("plain0", "prot0");
    v.extend([s, "--accept-ivnae-v1"]);
    let (code, err) = run(v);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--accept-ivnae-v1 is for IVN-AE"), "{err}");
    // Neither --keys nor --psk: clap's usage error.
    let (code, _) = run(vec![
        "gateway",
        "--plain",
        "plain0",
        "--protected",
        "prot0",
        "--profile",
        "macsec-gcm-aes-128",
    ]);
    assert_eq!(code, Some(2));
}

/// `bump2` with MKA: the two gateways agree on a SAK from one pre-shared CAK, and the legacy
/// ECUs behind them ping each other and run iperf3 (UDP and TCP).
#[test]
fn mka_between_two_gateways_carries_ping_and_iperf3() {
    require_root!();
    let d = TempDir::new("gwm2");
    let tb = testbed(&d, &Topology::Bump2, true);
    let psk = d.path("ca.psk");
    let o = d.run(&["keygen", "--mka", "--out", psk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let p = psk.to_str().unwrap();
    let (e1, e2) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"));
    let mka = ["--ramp-up-ms", "20", "--hello-seconds", "1"];
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let p1 = g1.start(&["--psk", p], &mka);
    let p2 = g2.start(&["--psk", p], &mka);
    wait_for_or(
        20,
        "ping ecu1 → ecu2 once the SAK is agreed",
        || {
            ping(&e1, "10.77.0.2", &["-c", "1", "-W", "1"])
                .status
                .success()
        },
        || format!("{}\n{}", g1.status(), g2.status()),
    );
    assert_ping(&e1, "10.77.0.2", &["-s", "1472", "-M", "do"]);
    let udp = iperf3(&e2, &e1, "10.77.0.2", &["-u", "-b", "5M", "-l", "1472"]);
    let sum = &udp["end"]["sum"];
    let (lost, packets) = (
        sum["lost_packets"].as_u64().unwrap(),
        sum["packets"].as_u64().unwrap(),
    );
    assert!(
        packets > 700 && lost * 10 <= packets,
        "UDP lost {lost} of {packets}"
    );
    let tcp = iperf3(&e2, &e1, "10.77.0.2", &[]);
    let bytes = tcp["end"]["sum_received"]["bytes"].as_u64().unwrap();
    assert!(bytes > 1_000_000, "TCP moved only {bytes} bytes");
    let st = g2.status();
    assert_eq!(st["key_source"], "mka", "{st}");
    assert_eq!(st["rx"]["drops"], serde_json::json!({}), "{st}");
    let (c1, _) = p1.stop_json();
    let (c2, _) = p2.stop_json();
    assert_eq!((c1, c2), (Some(0), Some(0)));
}

/// IVN-AE on the gateways (static keys, one key file and key id per sender): ping at full MTU,
/// iperf3 UDP and TCP; the protected link carries IVN-AE (EtherType 0x88B5) frames only, with
/// strictly increasing sequence numbers per key id across a kill -9 and restart; a frame with a
/// flipped bit and a replayed frame never reach the legacy ECU and are counted.
#[test]
fn ivnae_gateways_carry_traffic_and_drop_forgeries() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture");
        return;
    }
    let d = TempDir::new("gwi");
    let tb = testbed(&d, &Topology::Bump2, true);
    let mut files = Vec::new();
    for n in ["gw1", "gw2"] {
        let p = d.path(&format!("{n}.toml"));
        let o = d.run(&[
            "keygen",
            "--profile",
            "aes128-gcm",
            "--out",
            p.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        files.push(p.to_str().unwrap().to_string());
    }
    let rx1 = format!("2:{}", files[1]);
    let rx2 = format!("1:{}", files[0]);
    let k1 = [
        "--profile",
        "aes128-gcm",
        "--keys",
        &files[0],
        "--key-id",
        "1",
        "--rx-keys",
        &rx1,
    ];
    let k2 = [
        "--profile",
        "aes128-gcm",
        "--keys",
        &files[1],
        "--key-id",
        "2",
        "--rx-keys",
        &rx2,
    ];
    let (e1, e2, sw) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"), ns(&tb, "sw0"));
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let pcap = d.path("protected.pcap");
    let cap = capture(&sw, "to-gw1", &pcap);
    // gw1 is restarted below: a short checkpoint of its acceptance mark of gw2's SA (a restart
    // refuses up to one checkpoint of gw2's frames, here at most 256; a warm-up ping of 300
    // echo replies carries gw2's numbers past it).
    let cp1 = [
        "--replay-checkpoint-frames",
        "256",
        "--replay-checkpoint-ms",
        "100",
    ];
    let mut p1 = g1.start(&k1, &cp1);
    let p2 = g2.start(&k2, &[]);
    // ARP and the first marks on disk first (each a pair of fsyncs, slow on a loaded disk).
    let _ = ping(&e1, "10.77.0.2", &[]);
    assert_ping(&e1, "10.77.0.2", &["-s", "1472", "-M", "do"]);
    let udp = iperf3(&e2, &e1, "10.77.0.2", &["-u", "-b", "5M", "-l", "1472"]);
    let sum = &udp["end"]["sum"];
    let (lost, packets) = (
        sum["lost_packets"].as_u64().unwrap(),
        sum["packets"].as_u64().unwrap(),
    );
    assert!(
        packets > 700 && lost * 10 <= packets,
        "UDP lost {lost} of {packets}"
    );
    let tcp = iperf3(&e2, &e1, "10.77.0.2", &[]);
    assert!(tcp["end"]["sum_received"]["bytes"].as_u64().unwrap() > 1_000_000);

    // kill -9 and restart gw1: its sequence numbers go on increasing.
    let mut c = p1.0.take().unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
    drop(p1);
    let p1 = g1.start(&k1, &cp1);
    let _ = ping(&e1, "10.77.0.2", &["-c", "300", "-i", "0.002", "-W", "1"]);
    assert_ping(&e1, "10.77.0.2", &[]);
    let frames = stop_capture(cap, &pcap);
    let mut last = [0u64; 3];
    let mut from_gw1 = Vec::new();
    for f in &frames {
        assert_eq!(
            [f[12], f[13]],
            [0x88, 0xB5],
            "a frame that is not IVN-AE on the protected link: {}",
            hex::encode(&f[..f.len().min(64)])
        );
        let (key_id, seq) = (f[16], u64::from_be_bytes(f[18..26].try_into().unwrap()));
        assert!(key_id == 1 || key_id == 2, "key id {key_id}");
        assert!(
            seq > last[usize::from(key_id)],
            "key id {key_id}: {seq} after {}",
            last[usize::from(key_id)]
        );
        last[usize::from(key_id)] = seq;
        if key_id == 1 {
            from_gw1.push(f.clone());
        }
    }
    assert!(from_gw1.len() > 700);

    // Forgeries towards gw2: a replay, and a fresh sequence number with a flipped bit.
    let before = g2.status();
    // IVN-AE gateways are scheduled as MACsec ones: normal by default.
    assert_eq!(before["scheduling"]["mode"], "normal", "{before}");
    let replayed = from_gw1[from_gw1.len() / 2].clone();
    let mut flipped = from_gw1[from_gw1.len() - 1].clone();
    flipped[18..26].copy_from_slice(&(last[1] + 1000).to_be_bytes());
    let n = flipped.len();
    flipped[n - 1] ^= 0x01;
    let legacy = d.path("ecu2.pcap");
    let cap = capture(&e2, "eth0", &legacy);
    inject(
        &sw,
        "to-gw2",
        &[&replayed, &flipped],
        0x88B5,
        Duration::from_millis(5),
        module_path!(),
    );
    let after = g2.status();
    let seen = stop_capture(cap, &legacy);
    assert!(seen.is_empty(), "{} frames reached ecu2", seen.len());
    assert_eq!(after["frames"]["tap_out"], before["frames"]["tap_out"]);
    let total = |s: &Value| -> u64 {
        s["rx"]["drops"]
            .as_object()
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    };
    assert_eq!(total(&after) - total(&before), 2, "{after}");
    assert_eq!(
        drops(&after, "bad_tag") - drops(&before, "bad_tag"),
        1,
        "{after}"
    );
    assert_ping(&e1, "10.77.0.2", &[]);
    let (c1, _) = p1.stop_json();
    let (c2, _) = p2.stop_json();
    assert_eq!((c1, c2), (Some(0), Some(0)));
}

/// Issue 30: IVN-AE key ids under one key file. Two gateways share one key file and one state
/// directory with key ids 1 and 2, then gateway 1 is restarted under key id 3 (its sequence
/// numbers start at 1 again: a new SA). From a capture of the protected link, the nonce of every
/// frame is computed independently from its header and the key file's IV (docs/wire-ivnae.md §3:
/// `iv XOR (000000 ‖ key id ‖ seq)`), checked by opening the frame with it (AES-128-GCM), and no
/// (key, nonce) pair appears twice. The sequence numbers themselves do repeat across key ids, so
/// the version 1 nonce (`iv XOR seq`) would have. Then a version 1 frame is forwarded by the
/// gateway with `--accept-ivnae-v1` and dropped as `bad_version` by the one without.
#[test]
fn ivnae_key_ids_under_one_key_file_never_share_a_nonce() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture");
        return;
    }
    let d = TempDir::new("gwn");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "aes128-gcm", "ca.toml");
    let k = keys.to_str().unwrap();
    let key_file = std::fs::read_to_string(&keys).unwrap();
    let field = |name: &str| -> Vec<u8> {
        key_file
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} = \"")))
            .and_then(|v| hex::decode(v.trim_end_matches('"')).ok())
            .unwrap_or_else(|| panic!("no {name} in the key file"))
    };
    let iv: [u8; 12] = field("iv").try_into().unwrap();
    // Only the AEAD primitive (AES-128-GCM), not the SA code that builds nonces.
    let gcm = ivnsec_crypto_portable::PROVIDER
        .keys
        .aead(ivnsec_core::crypto::AeadAlg::Aes128Gcm, &field("key"))
        .unwrap();
    let (rx1, rx2, rx3) = (format!("1:{k}"), format!("2:{k}"), format!("3:{k}"));
    fn gw<'a>(k: &'a str, id: &'a str, rx: &[&'a str]) -> Vec<&'a str> {
        let mut a = vec!["--profile", "aes128-gcm", "--keys", k, "--key-id", id];
        for r in rx {
            a.extend(["--rx-keys", r]);
        }
        a
    }
    let (e1, sw) = (ns(&tb, "ecu1"), ns(&tb, "sw0"));
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2").sharing_state(&g1);
    let pcap = d.path("protected.pcap");
    let cap = capture(&sw, "to-gw1", &pcap);
    let p2 = g2.start(&gw(k, "2", &[&rx1, &rx3]), &["--accept-ivnae-v1"]);
    let p1 = g1.start(&gw(k, "1", &[&rx2]), &[]);
    let pings = ["-c", "20", "-i", "0.02"];
    let o = ping(&e1, "10.77.0.2", &pings[..]);
    assert!(o.status.success(), "{}", text(&o.stdout));
    let (c1, _) = p1.stop_json();
    // The same key file and state directory, another key id.
    let p1 = g1.start(&gw(k, "3", &[&rx2]), &[]);
    let o = ping(&e1, "10.77.0.2", &pings[..]);
    assert!(o.status.success(), "{}", text(&o.stdout));
    let frames = stop_capture(cap, &pcap);

    // Every frame's nonce, from its header and the key file's IV alone.
    let mut nonces: std::collections::HashMap<[u8; 12], &Vec<u8>> = Default::default();
    let mut seqs: [std::collections::BTreeSet<u64>; 4] = Default::default();
    for f in &frames {
        assert_eq!(
            [f[12], f[13], f[14]],
            [0x88, 0xB5, 2],
            "{}",
            hex::encode(&f[..26])
        );
        let (key_id, seq) = (f[16], u64::from_be_bytes(f[18..26].try_into().unwrap()));
        assert!((1..=3).contains(&key_id), "key id {key_id}");
        let mut n = iv;
        n[3] ^= key_id;
        for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
            *b ^= s;
        }
        // The frame really was sealed under this nonce: it opens with it (A = bytes 0..26).
        let (head, tag) = f.split_at(f.len() - 16);
        let mut body = head[26..].to_vec();
        gcm.open_in_place(&n, &head[..26], &mut body, tag.try_into().unwrap())
            .unwrap_or_else(|e| {
                panic!(
                    "key id {key_id} seq {seq}: not sealed under {}: {e}",
                    hex::encode(n)
                )
            });
        if let Some(prev) = nonces.insert(n, f) {
            panic!(
                "nonce {} twice under one key (key id {key_id}, seq {seq}){}",
                hex::encode(n),
                if prev == f {
                    " (the same frame)"
                } else {
                    " with different frames"
                }
            );
        }
        seqs[usize::from(key_id)].insert(seq);
    }
    for (id, s) in seqs.iter().enumerate().skip(1) {
        assert!(s.len() >= 20, "key id {id}: {s:?}");
    }
    // Key id 3 (the restart) began again at 1, and key ids 1 and 2 share numbers: all of these
    // were one nonce each under version 1.
    assert_eq!(seqs[3].first(), Some(&1), "{:?}", seqs[3]);
    let shared = |a: usize, b: usize| seqs[a].intersection(&seqs[b]).count();
    assert!(shared(1, 2) >= 10 && shared(1, 3) >= 10, "{seqs:?}");

    // Version 1 frames (a sender of the previous release: nonce iv XOR seq, no key id), made
    // from a captured frame of each key id: gw2 (--accept-ivnae-v1) forwards one, gw1 (without)
    // drops one as bad_version.
    let v1_of = |key_id: u8| -> Vec<u8> {
        let f = frames.iter().find(|f| f[16] == key_id).unwrap();
        let (head, tag) = f.split_at(f.len() - 16);
        let seq = u64::from_be_bytes(head[18..26].try_into().unwrap());
        let mut n = iv;
        n[3] ^= key_id;
        for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
            *b ^= s;
        }
        let mut body = head[26..].to_vec();
        gcm.open_in_place(&n, &head[..26], &mut body, tag.try_into().unwrap())
            .unwrap();
        let mut a = head[..26].to_vec();
        a[14] = 1;
        a[18..26].copy_from_slice(&1_000_000u64.to_be_bytes());
        let mut n1 = iv;
        for (b, s) in n1[4..].iter_mut().zip(1_000_000u64.to_be_bytes()) {
            *b ^= s;
        }
        let mut tag = [0u8; 16];
        gcm.seal_in_place(&n1, &a, &mut body, &mut tag).unwrap();
        [a, body, tag.to_vec()].concat()
    };
    let (b1, b2) = (g1.status(), g2.status());
    assert_eq!(
        (
            &b2["accept_ivnae_v1"],
            &b1["accept_ivnae_v1"],
            &b2["ivnae_version"]
        ),
        (&Value::Bool(true), &Value::Bool(false), &Value::from(2)),
        "{b2}"
    );
    inject(
        &sw,
        "to-gw2",
        &[&v1_of(1)],
        0x88B5,
        Duration::from_millis(5),
        module_path!(),
    );
    inject(
        &sw,
        "to-gw1",
        &[&v1_of(2)],
        0x88B5,
        Duration::from_millis(5),
        module_path!(),
    );
    let (a1, a2) = (g1.status(), g2.status());
    let total = |s: &Value| -> u64 {
        s["rx"]["drops"]
            .as_object()
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    };
    let out = |s: &Value| s["frames"]["tap_out"].as_u64().unwrap();
    // (Other frames may cross meanwhile: ARP, IPv6 neighbour discovery.)
    assert!(out(&a2) > out(&b2), "{a2}");
    assert_eq!(total(&a2), total(&b2), "gw2 dropped something: {a2}");
    assert_eq!(
        drops(&a1, "bad_version") - drops(&b1, "bad_version"),
        1,
        "{a1}"
    );
    let (c3, _) = p1.stop_json();
    let (c2, _) = p2.stop_json();
    assert_eq!((c1, c2, c3), (Some(0), Some(0), Some(0)));
}

/// A plan on topology `bump2`: `ivnsec run` builds the testbed, starts the two gateways itself
/// and runs the ping-pong between the legacy ECUs through them (nothing crosses a gateway that
/// does not run); the gateways' key file and state go with the testbed.
#[test]
fn a_plan_on_bump2_runs_pingpong_through_the_gateways() {
    require_root!();
    let d = TempDir::new("gwp");
    let plan = d.path("bump2.toml");
    std::fs::write(
        &plan,
        "name = \"bump2\"\ntopology = \"bump2\"\n[run]\ncount = 200\nreplications = 1\n\
         [[scenario]]\nprofile = \"plain\"\npayload = 64\n",
    )
    .unwrap();
    let out = d.path("report");
    let o = d.run(&[
        "run",
        plan.to_str().unwrap(),
        "--on",
        "testbed",
        "--out",
        out.to_str().unwrap(),
    ]);
    let code = o.status.code().unwrap_or(-1);
    assert!(matches!(code, 0 | 1), "exit {code}: {}", text(&o.stderr));
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(summary.contains("bump2"), "{summary}");
    let v: Value = serde_json::from_str(&summary).unwrap();
    let sc = &v["scenarios"][0];
    assert_eq!(
        (&sc["count"], &sc["lost"]),
        (&Value::from(200), &Value::from(0)),
        "{sc}"
    );
    assert!(
        v["environment"]["transport"]
            .as_str()
            .is_some_and(|t| t.contains("(bump2)")),
        "{v}"
    );
    // Nothing of the testbed or its gateways is left in the state directory.
    let left: Vec<_> = std::fs::read_dir(d.state())
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.file_name())).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// Several legacy ECUs behind one gateway (a bridge on the plain side): each keeps its own
/// addresses end to end, and all their frames go out under the one gateway's SCI.
#[test]
fn two_legacy_ecus_behind_one_gateway_keep_their_own_addresses() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture");
        return;
    }
    let d = TempDir::new("gw3");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (e1, e2, sw) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"), ns(&tb, "sw0"));
    // A third legacy ECU in a namespace of the testbed's prefix (removed with it), on a bridge
    // in ecu1's namespace that also holds ecu1's link to gw1; ecu1 keeps its MAC and address.
    let e3 = format!("{}-ecu3", tb.prefix());
    ip(&["netns", "add", &e3]);
    ip(&["-n", &e3, "link", "set", "lo", "up"]);
    ip(&["-n", &e1, "addr", "flush", "dev", "eth0"]);
    ip(&[
        "-n",
        &e1,
        "link",
        "add",
        "br0",
        "address",
        "02:49:56:00:00:01",
        "type",
        "bridge",
        "forward_delay",
        "0",
        "stp_state",
        "0",
    ]);
    ip(&["-n", &e1, "link", "set", "eth0", "master", "br0"]);
    ip(&[
        "-n", &e1, "link", "add", "to-ecu3", "type", "veth", "peer", "name", "eth0", "netns", &e3,
    ]);
    ip(&["-n", &e1, "link", "set", "to-ecu3", "master", "br0"]);
    for dev in ["to-ecu3", "br0"] {
        ip(&["-n", &e1, "link", "set", dev, "up"]);
    }
    ip(&["-n", &e1, "addr", "add", "10.77.0.1/16", "dev", "br0"]);
    ip(&[
        "-n",
        &e3,
        "link",
        "set",
        "eth0",
        "address",
        "02:49:56:00:00:03",
        "up",
    ]);
    ip(&["-n", &e3, "addr", "add", "10.77.0.3/16", "dev", "eth0"]);

    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let _p1 = g1.start(&["--keys", k, "--peer", MAC_GW2_PROT], &[]);
    let _p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let at_e2 = d.path("ecu2.pcap");
    let on_link = d.path("protected.pcap");
    let c2 = capture(&e2, "eth0", &at_e2);
    let cl = capture(&sw, "to-gw1", &on_link);
    // ecu3 has no static ARP entries: ARP crosses the gateways both ways.
    wait_for_or(
        10,
        "ping ecu3 → ecu2",
        || {
            ping(&e3, "10.77.0.2", &["-c", "1", "-W", "1"])
                .status
                .success()
        },
        || format!("{}", g1.status()),
    );
    assert_ping(&e3, "10.77.0.2", &[]);
    assert_ping(&e1, "10.77.0.2", &[]);
    assert_ping(&e2, "10.77.0.3", &[]);
    let seen = stop_capture(c2, &at_e2);
    let link = stop_capture(cl, &on_link);
    let src = |f: &Vec<u8>| f[6..12].to_vec();
    for mac in [[0x02, 0x49, 0x56, 0, 0, 1], [0x02, 0x49, 0x56, 0, 0, 3]] {
        assert!(
            seen.iter()
                .any(|f| src(f) == mac && f[12..14] == [0x08, 0x00]),
            "no IPv4 frame from {} reached ecu2",
            hex::encode(mac)
        );
        // On the protected link the same source MAC, under gw1's SCI.
        assert!(
            link.iter()
                .any(|f| src(f) == mac && macsec_pns(std::slice::from_ref(f))[0].0 == SCI_GW1),
            "no MACsec frame of gw1 with source {}",
            hex::encode(mac)
        );
    }
    assert!(
        macsec_pns(&link)
            .iter()
            .all(|p| p.0 == SCI_GW1 || p.0 == SCI_GW2)
    );
}

/// `--rcvbuf-mib` sets both ports' kernel receive buffers: the status reports what the kernel
/// granted (SO_RCVBUF read back: twice the size asked, its bookkeeping share included), and
/// frames still cross; out of 1 … 1024 it is a usage error naming the option.
#[test]
fn the_socket_buffers_are_what_rcvbuf_mib_asks_for() {
    require_root!();
    let d = TempDir::new("gwrb");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (g1, g2) = (Gw::new(&tb, &d, "gw1"), Gw::new(&tb, &d, "gw2"));
    for bad in ["0", "1025", "x"] {
        let o = g1
            .args(
                &["--keys", k, "--peer", MAC_GW2_PROT],
                &["--rcvbuf-mib", bad],
            )
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("--rcvbuf-mib"),
            "{}",
            text(&o.stderr)
        );
    }
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &["--rcvbuf-mib", "16"],
    );
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let st = g1.status();
    assert_eq!(st["socket_buffers"]["plain"], 32 << 20, "{st}");
    assert_eq!(st["socket_buffers"]["protected"], 32 << 20, "{st}");
    // The default: 4 MiB asked.
    let st = g2.status();
    assert_eq!(st["socket_buffers"]["plain"], 8 << 20, "{st}");
    assert_ping(&ns(&tb, "ecu1"), "10.77.0.2", &["-c", "3"]);
    assert_eq!(p1.stop_json().0, Some(0));
    assert_eq!(p2.stop_json().0, Some(0));
}

/// The scheduling policy of every thread of process `pid`: (policy, priority) from
/// `/proc/PID/task/TID/stat` (fields 40 and 41: rt_priority, policy).
fn thread_policies(pid: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap();
        // The fields after the command (which may hold spaces) start behind its ')'.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // `rest` starts at field 3 (state): field n is f[n - 3].
        out.push((f[41 - 3].parse().unwrap(), f[40 - 3].parse().unwrap()));
    }
    out.sort_unstable();
    out
}

/// `--realtime PRIO` puts the two data-plane threads under SCHED_FIFO at PRIO (policy 1 in
/// `/proc`), the others stay normal (policy 0), and frames cross; out of 1 … 99 it is a usage
/// error naming the option.
#[test]
fn realtime_puts_the_data_plane_threads_under_sched_fifo() {
    require_root!();
    let d = TempDir::new("gwrt");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (g1, g2) = (Gw::new(&tb, &d, "gw1"), Gw::new(&tb, &d, "gw2"));
    for bad in ["0", "100", "x"] {
        let o = g1
            .args(&["--keys", k, "--peer", MAC_GW2_PROT], &["--realtime", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("--realtime"),
            "{}",
            text(&o.stderr)
        );
    }
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &["--realtime", "10"],
    );
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let st = g1.status();
    assert_eq!(st["realtime"], 10, "{st}");
    let pid = st["pid"].as_u64().unwrap();
    let pol = thread_policies(pid);
    assert_eq!(
        pol.iter().filter(|p| **p == (1, 10)).count(),
        2,
        "two SCHED_FIFO threads at 10: {pol:?}"
    );
    assert!(
        pol.iter().all(|p| *p == (1, 10) || *p == (0, 0)),
        "the others normal: {pol:?}"
    );
    assert_eq!(st["scheduling"]["mode"], "realtime", "{st}");
    let st2 = g2.status();
    assert!(st2["realtime"].is_null(), "{st2}");
    let pol2 = thread_policies(st2["pid"].as_u64().unwrap());
    assert!(pol2.iter().all(|p| *p == (0, 0)), "{pol2:?}");
    assert_ping(&ns(&tb, "ecu1"), "10.77.0.2", &["-c", "3"]);
    assert_eq!(p1.stop_json().0, Some(0));
    assert_eq!(p2.stop_json().0, Some(0));
}

/// `--scheduling adaptive`: idle, every thread runs under the normal policy; a flood (iperf3
/// UDP, unlimited rate) backlogs the data-plane threads, which go to SCHED_FIFO (counted in
/// `frames.backlog_raises`) and back to the normal policy once the flood has passed. The
/// default, normal scheduling, never raises them; `--scheduling normal --realtime N` is a
/// usage error naming both options, a linger time over 1000 ms one naming `--linger-ms`, a
/// raise time over 1 s one naming `--raise-after-us`.
#[test]
fn adaptive_scheduling_raises_the_data_plane_only_while_backlogged() {
    require_root!();
    let d = TempDir::new("gwad");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (g1, g2) = (Gw::new(&tb, &d, "gw1"), Gw::new(&tb, &d, "gw2"));
    // Usage errors (exit 2), each naming the options at fault.
    for (opts, named) in [
        (
            &["--scheduling", "normal", "--realtime", "5"][..],
            &["--scheduling normal", "--realtime"][..],
        ),
        (&["--linger-ms", "1001"], &["--linger-ms"]),
        (
            &["--scheduling", "adaptive", "--raise-after-us", "1000001"],
            &["--raise-after-us"],
        ),
    ] {
        let o = g1
            .args(&["--keys", k, "--peer", MAC_GW2_PROT], opts)
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{opts:?}: {err}");
        for n in named {
            assert!(err.contains(n), "{opts:?}: {err}");
        }
    }
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &["--scheduling", "adaptive"],
    );
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    let st = g1.status();
    assert_eq!(st["scheduling"]["mode"], "adaptive", "{st}");
    assert_eq!(st["scheduling"]["priority"], 10, "{st}");
    assert_eq!(st["scheduling"]["raise_after_us"], 1000.0, "{st}");
    assert!(st["realtime"].is_null(), "{st}");
    let pid = st["pid"].as_u64().unwrap();
    assert!(thread_policies(pid).iter().all(|p| *p == (0, 0)));
    let (e1, e2) = (ns(&tb, "ecu1"), ns(&tb, "ecu2"));
    iperf3(&e2, &e1, "10.77.0.2", &["-u", "-b", "0", "-l", "1472"]);
    let st = g1.status();
    assert!(st["frames"]["backlog_raises"].as_u64().unwrap() > 0, "{st}");
    assert!(
        st["frames"]["tap_in"].as_u64().unwrap() > 1000,
        "the flood crossed gw1: {st}"
    );
    // Idle again: back under the normal policy.
    wait_for_or(
        5,
        "gw1's threads back under the normal policy",
        || thread_policies(pid).iter().all(|p| *p == (0, 0)),
        || format!("{:?}", thread_policies(pid)),
    );
    let st2 = g2.status();
    assert_eq!(st2["scheduling"]["mode"], "normal", "{st2}");
    assert_eq!(st2["frames"]["backlog_raises"], 0, "{st2}");
    assert!(st2["frames"]["tap_out"].as_u64().unwrap() > 1000, "{st2}");
    assert_ping(&e1, "10.77.0.2", &["-c", "3"]);
    assert_eq!(p1.stop_json().0, Some(0));
    assert_eq!(p2.stop_json().0, Some(0));
}

/// A restarted gateway with static keys (`family`: `macsec` or `ivnae`): gw1's protected
/// frames recorded on the switch, gw2 stopped and started again, the recording injected towards
/// it: not one frame reaches the legacy side (all refused below the restored acceptance mark),
/// while gw1's fresh frames after the restart do.
fn restarted_gateway_accepts_no_replayed_frame(family: &str) {
    let d = TempDir::new(&format!("gw-rxmark-{family}"));
    let tb = testbed(&d, &Topology::Bump2, true);
    let (k1, k2): (Vec<String>, Vec<String>) = if family == "macsec" {
        let k = keygen(&d, "macsec-gcm-aes-128", "ca.toml")
            .to_str()
            .unwrap()
            .to_string();
        (
            vec![
                "--keys".into(),
                k.clone(),
                "--peer".into(),
                MAC_GW2_PROT.into(),
            ],
            vec!["--keys".into(), k, "--peer".into(), MAC_GW1_PROT.into()],
        )
    } else {
        let f1 = keygen(&d, "aes128-gcm", "ca.toml");
        let f2 = d.path("gw2.toml");
        let o = d.run(&[
            "keygen",
            "--profile",
            "aes128-gcm",
            "--out",
            f2.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let (f1, f2) = (f1.to_str().unwrap(), f2.to_str().unwrap());
        let common = ["--profile", "aes128-gcm", "--keys"];
        let mut k1: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        k1.extend([
            f1.into(),
            "--key-id".into(),
            "1".into(),
            "--rx-keys".into(),
            format!("2:{f2}"),
        ]);
        let mut k2: Vec<String> = common.iter().map(|s| s.to_string()).collect();
        k2.extend([
            f2.into(),
            "--key-id".into(),
            "2".into(),
            "--rx-keys".into(),
            format!("1:{f1}"),
        ]);
        (k1, k2)
    };
    let k1: Vec<&str> = k1.iter().map(String::as_str).collect();
    let k2: Vec<&str> = k2.iter().map(String::as_str).collect();
    let cp = [
        "--replay-checkpoint-frames",
        "8",
        "--replay-checkpoint-ms",
        "1000",
    ];
    let (e1, sw) = (ns(&tb, "ecu1"), ns(&tb, "sw0"));
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let _p1 = g1.start(&k1, &[]);
    let p2 = g2.start(&k2, &cp);
    let pcap = d.path("to-gw2.pcap");
    let cap = capture(&sw, "to-gw2", &pcap);
    assert_ping(&e1, "10.77.0.2", &[]);
    let from_gw1 = |f: &Vec<u8>| {
        if family == "macsec" {
            f.len() > 28
                && f[12..14] == ETH_MACSEC
                && u64::from_be_bytes(f[20..28].try_into().unwrap()) == SCI_GW1
        } else {
            f.len() > 26 && f[12..14] == [0x88, 0xB5] && f[16] == 1
        }
    };
    let recorded: Vec<Vec<u8>> = stop_capture(cap, &pcap)
        .into_iter()
        .filter(from_gw1)
        .collect();
    assert!(recorded.len() >= 5, "{}", recorded.len());
    let mark_of = |s: &Value| -> Value {
        if family == "macsec" {
            s["rx"]["sas"][0]["replay_mark"].clone()
        } else {
            s["rx"]["replay_marks"][0].clone()
        }
    };
    let m = mark_of(&g2.status());
    assert_eq!(m["restored_mark"], 0, "{m}");
    let mark = m["mark"].as_u64().unwrap();
    assert!(mark >= 5, "{m}");
    let (code, _) = p2.stop_json();
    assert_eq!(code, Some(0));

    let _p2 = g2.start(&k2, &cp);
    let refs: Vec<&[u8]> = recorded.iter().map(Vec::as_slice).collect();
    inject(
        &sw,
        "to-gw2",
        &refs,
        0x88B5,
        Duration::from_millis(5),
        module_path!(),
    );
    let s = g2.status();
    let n = recorded.len() as u64;
    let m = mark_of(&s);
    assert_eq!(m["restored_mark"].as_u64(), Some(mark), "{s}");
    assert_eq!(m["refused_below_mark"].as_u64(), Some(n), "{s}");
    assert_eq!(
        s["frames"]["tap_out"], 0,
        "not one replayed frame delivered: {s}"
    );
    let replays = if family == "macsec" {
        drops(&s, "late")
    } else {
        drops(&s, "replay_duplicate") + drops(&s, "replay_too_old")
    };
    assert_eq!(replays, n, "{s}");
    // Fresh frames pass once above the mark (those up to it are the restart's cost).
    let _ = ping(&e1, "10.77.0.2", &["-c", "16", "-W", "1"]);
    assert_ping(&e1, "10.77.0.2", &[]);
}

#[test]
fn a_restarted_macsec_gateway_accepts_no_replayed_frame() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture the protected link");
        return;
    }
    restarted_gateway_accepts_no_replayed_frame("macsec");
}

#[test]
fn a_restarted_ivnae_gateway_accepts_no_replayed_frame() {
    require_root!();
    if !have_tshark() {
        eprintln!("SKIPPED: no tshark to capture the protected link");
        return;
    }
    restarted_gateway_accepts_no_replayed_frame("ivnae");
}
