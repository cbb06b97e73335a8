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

use crate::common::frames::{ETH_MACSEC, macsec_pns};
use crate::common::net::{
    self, assert_ping, capture, exec, have_tshark, inject, ip, ping, stop_capture, testbed,
};
use crate::common::proc::wait_for_or;
use crate::common::{BIN, Proc, TempDir, keygen, spawn_until_ready, text};
use ivnsec_net::testbed::Testbed;
use ivnsec_net::topology::Topology;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

pub(crate) const ETH_EAPOL: [u8; 2] = [0x88, 0x8E];

/// SCIs of the gateways' protected ports (`02:49:56:02:K:02` ‖ 0001).
pub(crate) const SCI_GW1: u64 = 0x0249_5602_0102_0001;

pub(crate) const SCI_GW2: u64 = 0x0249_5602_0202_0001;

pub(crate) const MAC_GW1_PROT: &str = "02:49:56:02:01:02";

pub(crate) const MAC_GW2_PROT: &str = "02:49:56:02:02:02";

pub(crate) fn ns(tb: &Testbed, node: &str) -> String {
    tb.namespace(node).unwrap().to_string()
}

/// One gateway node of the testbed and where its files go.
pub(crate) struct Gw {
    pub(crate) ns: String,
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    /// `--state-dir` (its own unless [`sharing_state`](Self::sharing_state)).
    pub(crate) state: PathBuf,
}

impl Gw {
    pub(crate) fn new(tb: &Testbed, d: &TempDir, name: &str) -> Gw {
        Gw {
            ns: ns(tb, name),
            name: name.to_string(),
            dir: d.0.clone(),
            state: d.0.join(format!("{name}-state")),
        }
    }
    /// The same gateway with `other`'s nonce-state directory.
    pub(crate) fn sharing_state(self, other: &Gw) -> Gw {
        Gw {
            state: other.state.clone(),
            ..self
        }
    }
    pub(crate) fn path(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}-{what}", self.name))
    }
    pub(crate) fn args(&self, keys: &[&str], extra: &[&str]) -> Command {
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
    pub(crate) fn start(&self, keys: &[&str], extra: &[&str]) -> Proc {
        spawn_until_ready(
            self.args(keys, extra),
            "running until",
            &format!("gateway {}", self.name),
        )
    }
    /// `macsec status --json` of this gateway (after the next status write).
    pub(crate) fn status(&self) -> Value {
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
pub(crate) fn iperf3(server: &str, client: &str, server_ip: &str, extra: &[&str]) -> Value {
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

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
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
    // gw1 in the latency mode: one thread polls both its ports (and records them).
    let p1 = g1.start(
        &["--keys", k, "--peer", MAC_GW2_PROT],
        &[
            "--pcap",
            r,
            "--busy-poll-us",
            "300",
            "--cpu-latency-us",
            "50",
        ],
    );
    // gw2 takes its ports' frames from the socket queues, gw1 from receive rings; gw2 seals
    // and opens its batches on two crypto workers.
    let p2 = g2.start(
        &["--keys", k, "--peer", MAC_GW1_PROT],
        &["--rx-ring", "off", "--crypto-workers", "2"],
    );

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
    assert!(st["rx_ring"]["slots"].as_u64() > Some(0), "{st}");
    assert!(st["plain_rx_ring"]["slots"].as_u64() > Some(0), "{st}");
    assert_eq!(st["threads"], 1, "{st}");
    assert_eq!(st["busy_poll_us"], 300, "{st}");
    assert_eq!(st["cpu_latency_us"], 50, "{st}");
    let st2 = g2.status();
    assert!(st2["cpu_latency_us"].is_null(), "{st2}");
    assert_eq!(st2["threads"], 2, "{st2}");
    assert!(st2["rx_ring"].is_null(), "{st2}");
    assert!(st2["plain_rx_ring"].is_null(), "{st2}");
    assert_eq!(st2["crypto_workers"], 2, "{st2}");
    assert!(
        st2["frames"]["opened_by_workers"].as_u64() > Some(0),
        "gw2's workers opened the TCP stream's batches: {st2}"
    );
    assert_eq!(st2["rx"]["drops"], serde_json::json!({}), "{st2}");
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
    // Crypto workers are for MACsec profiles: an IVN-AE gateway refuses them.
    let (code, err) = run(vec![
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
        "--rx-keys",
        &format!("2:{ik}"),
        "--state-dir",
        s,
        "--crypto-workers",
        "2",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--crypto-workers is for MACsec"), "{err}");
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

/// `bump` with 802.1X: the gateway authenticates the legacy sensor's port with the gateway's
/// own certificate (`gateway --eap-tls`) to the consumer (`macsec up --authenticator`), which
/// passes EAP to a FreeRADIUS in its namespace; MKA runs on the CAK both derived, and the
/// legacy sensor reaches the consumer through it.
#[test]
fn a_gateway_authenticates_its_legacy_sensor_with_its_own_certificate() {
    require_root!();
    if !crate::common::have("freeradius") {
        eprintln!("SKIPPED: freeradius is not installed (scripts/setup installs it)");
        return;
    }
    let d = TempDir::new("gweap");
    let tb = testbed(&d, &Topology::Bump, true);
    let pki = d.path("pki");
    let pk = pki.to_str().unwrap();
    for args in [
        &["pki", "init", "--dir", pk, "--vehicle", crate::common::VIN][..],
        &["pki", "issue", "--dir", pk, "--ecu", "gw1"],
    ] {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    }
    let secret = d.path("radius.secret");
    std::fs::write(&secret, "gateway-test-secret").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let (sensor, consumer) = (ns(&tb, "sensor1"), ns(&tb, "consumer"));
    ip(&["-n", &consumer, "link", "set", "lo", "up"]);
    let _radius = crate::common::radius::FreeRadius::start(
        &consumer,
        &d.path("radius"),
        &pki,
        &[("127.0.0.1", "gateway-test-secret")],
    );
    let mka = ["--ramp-up-ms", "20", "--hello-seconds", "1"];
    ip(&["-n", &consumer, "addr", "flush", "dev", "eth0"]);
    let mut c = exec(&consumer, BIN);
    c.args(["macsec", "up", "--iface", "eth0", "--tap", "eap0"])
        .args(["--profile", "macsec-gcm-aes-128", "--authenticator"])
        .args(["--radius", "127.0.0.1", "--radius-secret"])
        .arg(&secret)
        .args(["--priority", "0", "--state-dir"])
        .arg(d.path("consumer-state"))
        .arg("--run-dir")
        .arg(d.path("consumer-run"))
        .args(mka)
        .arg("--json");
    let pc = spawn_until_ready(c, "running until", "macsec up --authenticator (consumer)");
    ip(&[
        "-n",
        &consumer,
        "addr",
        "add",
        "10.77.0.1/16",
        "dev",
        "eap0",
    ]);
    let g1 = Gw::new(&tb, &d, "gw1");
    let (cert, key, ca) = (
        pki.join("ecu/gw1.pem"),
        pki.join("ecu/gw1.key"),
        pki.join("ca.pem"),
    );
    let p1 = g1.start(
        &[
            "--eap-tls",
            "--cert",
            cert.to_str().unwrap(),
            "--key",
            key.to_str().unwrap(),
            "--ca",
            ca.to_str().unwrap(),
            "--eap-start-seconds",
            "1",
        ],
        &mka,
    );
    wait_for_or(
        30,
        "the gateway authenticated and transmitting under a SAK of the EAP-derived CAK",
        || {
            let st = g1.status();
            !st["tx"]["encoding_an"].is_null()
                && st["key_source_state"]["ca"]["label"]
                    .as_str()
                    .is_some_and(|l| l.starts_with("eap:"))
                && st["key_source_state"]["peers"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|p| p["live"] == true))
        },
        || format!("{}", g1.status()),
    );
    wait_for_or(
        10,
        "ping sensor → consumer through the gateway",
        || {
            ping(&sensor, "10.77.0.1", &["-c", "1", "-W", "1"])
                .status
                .success()
        },
        || format!("{}", g1.status()),
    );
    assert_ping(&sensor, "10.77.0.1", &[]);
    let (cg, fg) = p1.stop_json();
    let (cc, _) = pc.stop_json();
    assert_eq!((cg, cc), (Some(0), Some(0)));
    assert_eq!(fg["key_source"], "802.1x", "{fg}");
}

/// A frame the protected link's peer cannot take (here: above the MTU of the switch port behind
/// gw1, so the veth refuses it every time) costs that frame, counted in `iface_send_errors`, not
/// the transmit thread: smaller frames keep crossing, and SIGTERM stops the gateway at once.
/// Before, the send loop retried such a frame forever, at 100 % CPU, deaf to the stop flag.
#[test]
fn a_frame_the_link_refuses_is_counted_and_never_wedges_the_gateway() {
    require_root!();
    let d = TempDir::new("gw-refused");
    let tb = testbed(&d, &Topology::Bump2, true);
    let keys = keygen(&d, "macsec-gcm-aes-128", "ca.toml");
    let k = keys.to_str().unwrap();
    let (e1, sw) = (ns(&tb, "ecu1"), ns(&tb, "sw0"));
    let g1 = Gw::new(&tb, &d, "gw1");
    let g2 = Gw::new(&tb, &d, "gw2");
    let p1 = g1.start(&["--keys", k, "--peer", MAC_GW2_PROT], &[]);
    let p2 = g2.start(&["--keys", k, "--peer", MAC_GW1_PROT], &[]);
    assert_ping(&e1, "10.77.0.2", &[]);
    // The switch port facing gw1 now takes 1500-byte payloads only: gw1's protected frames of
    // full-size plain frames (1532 + 14 octets) are refused by the veth on every try.
    let o = exec(&sw, "ip")
        .args(["link", "set", "to-gw1", "mtu", "1500"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let big = ping(
        &e1,
        "10.77.0.2",
        &["-s", "1472", "-M", "do", "-c", "20", "-i", "0.01"],
    );
    let (sent, got) = net::ping_counts(&big);
    assert_eq!((sent, got), (20, 0), "{}", text(&big.stdout));
    // Small frames still cross, at once.
    assert_ping(&e1, "10.77.0.2", &[]);
    let st = g1.status();
    assert!(
        st["frames"]["iface_send_errors"].as_u64() >= Some(20),
        "every refused frame counted: {st}"
    );
    let t0 = std::time::Instant::now();
    let (c1, _) = p1.stop_json();
    assert_eq!(c1, Some(0));
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "gw1 took {:?} to stop",
        t0.elapsed()
    );
    assert_eq!(p2.stop_json().0, Some(0));
}
