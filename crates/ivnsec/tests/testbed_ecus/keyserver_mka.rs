//! `ivnsec macsec up --keyserver` on a testbed of the test's own (docs/keys.md): three ECUs
//! fetch their segment's CAK from `ivnsec keyserver` over mutual TLS 1.3 (the key server runs in
//! a fourth namespace of the testbed, reached over the ECUs' plain interfaces), agree SAKs by
//! MKA on it and ping each other through their TAPs. Then one ECU is revoked with `ivnsec pki
//! revoke` while a ping between the other two runs every 20 ms: the key server rolls the CAK,
//! the two move to it make-before-break (not one ping lost), and from then on nothing of the
//! revoked ECU reaches a TAP: it goes on sending under the old SAK, its frames arrive and are
//! dropped, no receive SA of it is left anywhere, its pings are unanswered.
//!
//! Needs root (namespaces); skips with a printed reason otherwise.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::mka::{Ecu, diagnose, pae_testbed, secured};
use crate::common::net::ping_counts;
use crate::common::proc::wait_for;
use crate::common::{BIN, TempDir, VIN, spawn_until_ready, text};

/// Whether `st` has a receive SC or SA of `sci`.
fn receives_from(st: &Value, sci: &str) -> bool {
    st["rx"]["peers"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p == sci))
        || st["rx"]["sas"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["sci"] == sci))
}

#[test]
fn revoking_an_ecu_rolls_the_cak_without_loss_and_shuts_it_out() {
    require_root!();
    let d = TempDir::new("ks-mka");
    let tb = pae_testbed(&d, 3, true);
    // The PKI: the key server and three ECUs, one segment.
    let pki = d.path("pki");
    let p = pki.to_str().unwrap();
    let run = |args: &[&str]| {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    };
    run(&["pki", "init", "--dir", p, "--vehicle", VIN]);
    for e in ["keyserver", "sensor1", "sensor2", "sensor3"] {
        run(&["pki", "issue", "--dir", p, "--ecu", e]);
    }
    let segs = d.path("segments.toml");
    std::fs::write(
        &segs,
        "[[segment]]\nname = \"chassis\"\necus = [\"sensor1\", \"sensor2\", \"sensor3\"]\n",
    )
    .unwrap();
    // The key server in the consumer's namespace, on its plain address.
    let st = tb.state();
    let consumer = st.node("consumer").unwrap();
    let ks_addr = format!("{}:8443", st.ipv4_of("consumer").unwrap());
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &consumer.namespace, BIN])
        .args(["keyserver", "--pki", p, "--listen", &ks_addr, "--segments"])
        .arg(&segs);
    let _ks = spawn_until_ready(c, "listening on", "keyserver");

    let e1 = Ecu::new(&tb, &d, "sensor1", "10.98.0.1", "ks0");
    let e2 = Ecu::new(&tb, &d, "sensor2", "10.98.0.2", "ks0");
    let e3 = Ecu::new(&tb, &d, "sensor3", "10.98.0.3", "ks0");
    let _p1 = e1.up_keyserver(&pki, &ks_addr, "10", "3");
    let _p2 = e2.up_keyserver(&pki, &ks_addr, "20", "3");
    // sensor3 holds on to its peers (and so keeps sending under the old SAK) for 30 s after it
    // last heard them: it plays the revoked ECU that goes on transmitting.
    let _p3 = e3.up_keyserver(&pki, &ks_addr, "30", "30");
    let all = [&e1, &e2, &e3];
    wait_for(30, "three members secured on the key server's CAK", || {
        all.iter().all(|e| secured(&e.status(), 2))
    });
    for e in all {
        let s = e.status();
        assert_eq!(s["key_source_state"]["keyserver"]["cak_number"], 1, "{s}");
        assert_eq!(s["key_source_state"]["keyserver"]["segment"], "chassis");
    }
    for (a, b) in [(&e1, &e2), (&e2, &e3), (&e3, &e1)] {
        let o = a
            .exec("ping")
            .args(["-c", "3", "-i", "0.2", "-W", "2", &b.addr])
            .output()
            .unwrap();
        assert_eq!(ping_counts(&o), (3, 3), "{}\n{}", a.name, diagnose(&all));
    }

    // sensor3 is revoked under a ping every 20 ms between the other two (12 s: the roll, the
    // handover and the retirement of the old CAK's SAs all fall inside it).
    let ping = e1
        .exec("ping")
        .args(["-c", "600", "-i", "0.02", "-W", "2", &e2.addr])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    run(&["pki", "revoke", "--dir", p, "--ecu", "sensor3"]);
    let rolled = |e: &Ecu| {
        let s = e.status();
        let k = &s["key_source_state"]["keyserver"];
        k["cak_number"] == 2 && k["handover"].is_null() && secured(&s, 1)
    };
    wait_for(12, "the two on the new CAK, the old one retired", || {
        rolled(&e1) && rolled(&e2)
    });
    // From here on nothing of sensor3 is accepted: no receive SA of it anywhere.
    for e in [&e1, &e2] {
        let s = e.status();
        assert!(!receives_from(&s, &e3.sci), "{}: {s}", e.name);
    }
    let (sent, got) = ping_counts(&ping.wait_with_output().unwrap());
    assert_eq!(
        (sent, got),
        (600, 600),
        "legitimate frames lost across the roll\n{}",
        diagnose(&all)
    );
    let drops = |e: &Ecu| -> u64 {
        e.status()["rx"]["drops"]
            .as_object()
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    };
    let sent_before = e3.status()["frames"]["iface_out"].as_u64().unwrap();
    let drops_before = [drops(&e1), drops(&e2)];
    for to in [&e1, &e2] {
        let o = e3
            .exec("ping")
            .args(["-c", "5", "-i", "0.1", "-W", "1", &to.addr])
            .output()
            .unwrap();
        assert_eq!(ping_counts(&o).1, 0, "sensor3 got through to {}", to.name);
    }
    for e in [&e1, &e2] {
        let s = e.status();
        assert!(!receives_from(&s, &e3.sci), "{}: {s}", e.name);
    }
    // sensor3 did send MACsec frames under the old SAK after the roll; they arrived and were
    // dropped, none reached a TAP (no receive SA of it, no reply).
    let sent = e3.status()["frames"]["iface_out"].as_u64().unwrap() - sent_before;
    assert!(sent > 0, "sensor3 sent no frame: {}", e3.status());
    for (e, b) in [&e1, &e2].iter().zip(drops_before) {
        assert!(drops(e) > b, "{}: {}", e.name, e.status());
    }
    // The events say what happened: a new CAK, then the old one retired.
    for e in [&e1, &e2] {
        let ev = e.events_so_far();
        let changed = ev
            .iter()
            .position(|x| x["event"] == "cak_changed" && x["number"] == 2);
        let retired = ev
            .iter()
            .position(|x| x["event"] == "cak_retired" && x["number"] == 1);
        assert!(
            matches!((changed, retired), (Some(c), Some(r)) if c < r),
            "{}",
            diagnose(&[e])
        );
        // After the old CAK retired, no receive SA was ever installed for sensor3.
        let r = retired.unwrap();
        assert!(
            !ev[r..].iter().any(|x| x["event"] == "sa_installed"
                && x["dir"] == "rx"
                && x["sci"] == e3.sci.as_str()),
            "{}",
            diagnose(&[e])
        );
    }
    // sensor3 was told nothing: still on CAK 1.
    assert_eq!(
        e3.status()["key_source_state"]["keyserver"]["cak_number"],
        1
    );
    drop((_p1, _p2, _p3));
    tb.down().unwrap();
    assert!(d.leftover_testbeds().is_empty());
}
