//! `ivnsec gateway` against forged, replayed and plain frames, and its PNs and nonces across
//! restarts and key ids (bump/bump2 testbeds of the test's own, as in `gateway.rs`):
//! injected frames never reach the legacy ECU and are counted by reason; kill -9 and a restart
//! never repeat a PN, nor accept a replayed frame; IVN-AE key ids under one key file never share
//! a nonce.

use crate::common::frames::{ETH_MACSEC, macsec_pns};
use crate::common::net::{
    self, assert_ping, capture, have_tshark, inject, ping, stop_capture, testbed,
};
use crate::common::{TempDir, keygen, text};
use ivnsec_net::topology::Topology;
use serde_json::Value;
use std::time::Duration;

use crate::gateway::*;

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
    // gw2 takes its ports' frames from the socket queues, gw1 from receive rings.
    let p2 = g2.start(&k2, &["--rx-ring", "off"]);
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

    let (s1, s2) = (g1.status(), g2.status());
    assert!(
        s2["rx_ring"].is_null() && s2["plain_rx_ring"].is_null(),
        "{s2}"
    );
    assert!(s1["rx_ring"]["slots"].as_u64() > Some(0), "{s1}");
    assert!(s1["plain_rx_ring"]["slots"].as_u64() > Some(0), "{s1}");
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
    // Fresh frames pass once above the mark (those up to it, at most the 8 checkpoint frames,
    // are the restart's cost): 16 pings use them up, then a round of 5 crosses whole. On a
    // loaded machine one reply in a round may come late; three rounds are allowed.
    let _ = ping(&e1, "10.77.0.2", &["-c", "16", "-W", "1"]);
    let rounds: Vec<String> = (0..3)
        .map(|_| text(&ping(&e1, "10.77.0.2", &[]).stdout))
        .take_while(|o| !o.contains(" 0% packet loss"))
        .collect();
    assert!(
        rounds.len() < 3,
        "no whole round: {rounds:?}\n{}",
        g2.status()
    );
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
