//! `ivnsec macsec up --psk` (MKA over the userspace SecY, docs/mka.md), `ivnsec keygen --mka`
//! and `ivnsec attack --mka`, as a user runs them:
//!
//! - bad PSK files and options exit 2 with a reason, before anything is created (`cli/mka.rs`);
//! - on a testbed of the test's own (random prefix, own state directory, removed afterwards),
//!   three ECUs on one CAK elect one key server, ping each other through their TAPs, rekey every
//!   2 s under a continuous ping that loses nothing, elect another key server when the first is
//!   killed, and never make live an ECU with a wrong CAK, none of whose frames reach a TAP;
//!   every TAP is gone at the end;
//! - nonce safety: a member killed and restarted while the CA still uses its SAK (an
//!   independent key server written with the Python reference hands it the same SAK again)
//!   resumes above every PN it may have used, seen in a capture of the key server;
//! - `ivnsec attack --mka`: none of the four MKA classes is accepted and the ping flows.
//!
//! The namespace tests need root and skip with a printed reason otherwise.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::mka::{Ecu, diagnose, keygen_mka, pae_testbed, psk_fields, secured};
use crate::common::net::ping_counts;
use crate::common::proc::wait_for;
use crate::common::{BIN, Proc, TempDir, python_with_cryptography, reserved_mark, text};

const TAP: &str = "mka0";

fn write_private(p: &Path, body: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(p)
        .unwrap();
    f.write_all(body.as_bytes()).unwrap();
}

fn count(ev: &[Value], f: impl Fn(&Value) -> bool) -> usize {
    ev.iter().filter(|e| f(e)).count()
}

#[test]
fn three_ecus_agree_rekey_fail_over_and_shut_out_a_wrong_cak() {
    require_root!();
    let d = TempDir::new("mka3");
    let tb = pae_testbed(&d, 3, false);
    let psk = keygen_mka(&d, "ca.psk", &[]);
    // Same CKN, another CAK: its MKPDUs name the CA but fail the ICV.
    let (_, ckn) = psk_fields(&psk);
    let wrong_psk = d.path("wrong.psk");
    let other = keygen_mka(&d, "other.psk", &[]);
    write_private(
        &wrong_psk,
        &format!("cak = \"{}\"\nckn = \"{ckn}\"\n", psk_fields(&other).0),
    );
    let e1 = Ecu::new(&tb, &d, "sensor1", "10.98.0.1", TAP);
    let e2 = Ecu::new(&tb, &d, "sensor2", "10.98.0.2", TAP);
    let e3 = Ecu::new(&tb, &d, "sensor3", "10.98.0.3", TAP);
    let bad = Ecu::new(&tb, &d, "consumer", "10.98.0.4", TAP);
    let timers = [
        "--rekey-seconds",
        "2",
        "--hello-seconds",
        "1",
        "--life-seconds",
        "3",
        "--ramp-up-ms",
        "20",
    ];
    let with = |prio: &'static str| -> Vec<&'static str> {
        let mut v = timers.to_vec();
        v.extend(["--priority", prio]);
        v
    };
    let p1 = e1.up_psk(&psk, &with("10"));
    let p2 = e2.up_psk(&psk, &with("20"));
    let p3 = e3.up_psk(&psk, &with("30"));
    // Priority 0: it would win the election if it were ever accepted.
    let pbad = bad.up_psk(&wrong_psk, &with("0"));
    let good = [&e1, &e2, &e3];
    wait_for(20, "three members secured", || {
        good.iter().all(|e| secured(&e.status(), 2))
    });

    // One key server, the lowest priority, seen as such by everyone.
    let st: Vec<Value> = good.iter().map(|e| e.status()).collect();
    for s in &st {
        assert_eq!(s["key_source_state"]["key_server"], e1.sci.as_str(), "{s}");
    }
    let ks: Vec<bool> = st
        .iter()
        .map(|s| s["key_source_state"]["is_key_server"] == true)
        .collect();
    assert_eq!(ks, [true, false, false]);
    assert_eq!(st[0]["key_source"], "mka");

    // All three ping each other through their TAPs.
    let pings: Vec<_> = good
        .iter()
        .flat_map(|a| good.iter().map(move |b| (a, b)))
        .filter(|(a, b)| a.addr != b.addr)
        .map(|(a, b)| {
            let c = a
                .exec("ping")
                .args(["-c", "3", "-i", "0.2", "-W", "2", &b.addr])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            (a, b, c)
        })
        .collect();
    for (a, b, p) in pings {
        let (sent, got) = ping_counts(&p.wait_with_output().unwrap());
        assert_eq!(
            (sent, got),
            (3, 3),
            "{} → {}\n{}",
            a.addr,
            b.addr,
            diagnose(&good)
        );
    }

    // A rekey every 2 s under two continuous pings: nothing lost.
    let before = count(&e1.events(), |e| {
        e["event"] == "sak_distributed" && e["reason"] == "timer"
    });
    let tx_before = count(&e2.events(), |e| {
        e["event"] == "sak_installed" && e["dir"] == "tx"
    });
    let long = [
        e2.exec("ping")
            .args(["-c", "400", "-i", "0.02", "-W", "2", &e3.addr])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
        e3.exec("ping")
            .args(["-c", "400", "-i", "0.02", "-W", "2", &e1.addr])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    ];
    for p in long {
        let (sent, got) = ping_counts(&p.wait_with_output().unwrap());
        assert_eq!(
            (sent, got),
            (400, 400),
            "a ping lost frames across rekeys\n{}",
            diagnose(&good)
        );
    }
    let rekeys = count(&e1.events(), |e| {
        e["event"] == "sak_distributed" && e["reason"] == "timer"
    }) - before;
    assert!(rekeys >= 2, "{rekeys} rekeys in 8 s");
    let switched = count(&e2.events(), |e| {
        e["event"] == "sak_installed" && e["dir"] == "tx"
    }) - tx_before;
    assert!(
        switched >= 2,
        "a member switched its transmit SA {switched} times"
    );

    // The ECU with the wrong CAK: never live, never given a SAK, nothing of it on a TAP.
    let (_, got) = bad.ping(&e1.addr, &["-c", "3", "-i", "0.2", "-W", "1"]);
    assert_eq!(got, 0);
    let sb = bad.status();
    let kb = &sb["key_source_state"];
    assert!(kb["key_server"].is_null(), "{sb}");
    assert!(
        kb["peers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["live"] == false),
        "{sb}"
    );
    assert!(sb["tx"]["encoding_an"].is_null());
    assert_eq!(
        sb["frames"]["iface_out"], 0,
        "no MACsec frame left it: {sb}"
    );
    assert!(sb["tx"]["discards"]["no_sa"].as_u64().unwrap() > 0, "{sb}");
    assert!(
        count(&bad.events(), |e| e["event"] == "peer_live"
            || e["event"] == "sak_installed")
            == 0
    );
    for e in good {
        let s = e.status();
        assert!(
            s["key_source_state"]["counters"]["drops"]["bad_icv"]
                .as_u64()
                .unwrap()
                > 0,
            "{s}"
        );
        assert!(
            !s["rx"]["peers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p == bad.sci.as_str()),
            "a receive SC for the wrong CAK's ECU: {s}"
        );
        let ev = e.events();
        assert_eq!(
            count(&ev, |x| x["event"] == "peer_live"
                && x["sci"] == bad.sci.as_str()),
            0
        );
        assert!(count(&ev, |x| x["event"] == "mka_icv_failure") > 0);
    }

    // The key server is killed: the next priority takes over and the two still talk.
    {
        let mut p1 = p1;
        let c = p1.0.as_mut().unwrap();
        c.kill().unwrap();
        c.wait().unwrap();
        p1.0 = None;
    }
    wait_for(5, "the killed key server's TAP removed", || {
        !e1.tap_exists()
    });
    wait_for(25, "a new key server and SAK", || {
        [&e2, &e3].iter().all(|e| {
            let s = e.status();
            s["key_source_state"]["key_server"] == e2.sci.as_str()
                && secured(&s, 1)
                && s["key_source_state"]["latest"]["key_server_mi"]
                    == e2.status()["key_source_state"]["mi"]
        })
    });
    assert_eq!(
        e2.ping(&e3.addr, &["-c", "5", "-i", "0.1", "-W", "2"]),
        (5, 5)
    );
    assert_eq!(
        e3.ping(&e2.addr, &["-c", "5", "-i", "0.1", "-W", "2"]),
        (5, 5)
    );
    let ev2 = e2.events();
    assert!(
        count(&ev2, |x| x["event"] == "key_server_elected"
            && x["sci"] == e2.sci.as_str()
            && x["is_self"] == true)
            > 0
    );
    assert!(
        count(&ev2, |x| x["event"] == "peer_lost"
            && x["sci"] == e1.sci.as_str())
            > 0
    );

    // SIGTERM: each stops with exit 0, and no TAP is left anywhere.
    for (e, p) in [(&e2, p2), (&e3, p3), (&bad, pbad)] {
        let mut p = p;
        let mut c = p.0.take().unwrap();
        ivnsec_net::sys::signal_process(c.id(), false).unwrap();
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        assert_eq!(c.wait().unwrap().code(), Some(0), "{}", e.ns);
        let fin: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(fin["key_source"], "mka");
    }
    for e in [&e1, &e2, &e3, &bad] {
        assert!(!e.tap_exists(), "TAP left in {}", e.ns);
    }
    for e in [&e2, &e3, &bad] {
        assert!(e.status().is_null(), "status file left in {}", e.ns);
    }
    // The killed one left its status file, reported as not running; `macsec down` clears it.
    assert_eq!(e1.status()["running"], false);
    let o = e1
        .exec(BIN)
        .args(["macsec", "down", "--run-dir"])
        .arg(e1.dir.join("run"))
        .output()
        .unwrap();
    assert!(
        text(&o.stdout).contains("removed stale status file"),
        "{}",
        text(&o.stdout)
    );
    assert!(e1.status().is_null());
    tb.down().unwrap();
    assert!(d.leftover_testbeds().is_empty());
}

#[test]
fn a_member_handed_its_old_sak_again_resumes_above_its_pns() {
    require_root!();
    let Some(py) = python_with_cryptography() else {
        eprintln!("SKIPPED: no Python with the `cryptography` package for the key server");
        return;
    };
    let d = TempDir::new("mkanonce");
    let tb = pae_testbed(&d, 1, false);
    let psk = keygen_mka(&d, "ca.psk", &[]);
    let (cak, ckn) = psk_fields(&psk);
    let member = Ecu::new(&tb, &d, "sensor1", "10.97.0.1", TAP);
    let ks = Ecu::new(&tb, &d, "consumer", "10.97.0.2", TAP);

    // The independent key server, with a SAK of the test's choosing.
    let mut sak = [0u8; 16];
    getrandom::fill(&mut sak).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/mka_fixed_ks.py");
    let mut server = ks
        .exec(&py)
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let cfg = serde_json::json!({"iface": "eth0", "mac": ks.mac, "cak": cak, "ckn": ckn,
                                 "sak": hex::encode(sak), "an": 0, "kn": 1});
    let mut stdin = server.stdin.take().unwrap();
    writeln!(stdin, "{cfg}").unwrap();
    let server = Proc(Some(server));

    let tx_installs = |e: &Ecu| -> Vec<Value> {
        e.events()
            .into_iter()
            .filter(|x| x["event"] == "sak_installed" && x["dir"] == "tx")
            .collect()
    };
    let send = |e: &Ecu| {
        // A static neighbour: the echo requests go out at once, as MACsec frames.
        e.ip(&[
            "neigh",
            "replace",
            &ks.addr,
            "lladdr",
            &ks.mac,
            "dev",
            TAP,
            "nud",
            "permanent",
        ]);
        let _ = e.ping(&ks.addr, &["-c", "20", "-i", "0.05", "-W", "1"]);
    };

    let p = member.up_psk(&psk, &[]);
    wait_for(
        15,
        "the member transmits under the key server's SAK",
        || !tx_installs(&member).is_empty(),
    );
    let first = tx_installs(&member)[0].clone();
    assert_eq!(
        (first["first_pn"].as_u64(), first["resumed"].as_bool()),
        (Some(1), Some(false)),
        "{first}"
    );
    assert_eq!(
        (first["key_number"].as_u64(), first["an"].as_u64()),
        (Some(1), Some(0))
    );
    send(&member);

    // SIGKILL: nothing is written on the way out; the state on disk is all there is.
    {
        let mut p = p;
        let c = p.0.as_mut().unwrap();
        c.kill().unwrap();
        c.wait().unwrap();
        p.0 = None;
    }
    wait_for(5, "the TAP removed with the process", || {
        !member.tap_exists()
    });
    let mark = reserved_mark(&member.dir.join("state"));
    assert!(mark >= 20, "{mark}");

    // Restarted, the member meets the same SAK again and resumes above the mark.
    let p = member.up_psk(&psk, &[]);
    wait_for(
        15,
        "the restarted member transmits under the SAK again",
        || tx_installs(&member).len() >= 2,
    );
    let again = tx_installs(&member)[1].clone();
    assert_eq!(again["resumed"], true, "{again}");
    assert_eq!(again["first_pn"].as_u64(), Some(mark + 1), "{again}");
    assert_eq!(again["key_number"], 1);
    send(&member);
    assert!(reserved_mark(&member.dir.join("state")) > mark);

    // The key server's capture: every frame of the member verifies under the SAK, no PN
    // repeats, and every PN after the restart is above every PN before it.
    let mut server = server;
    drop(stdin);
    let mut c = server.0.take().unwrap();
    let mut out = String::new();
    c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(c.wait().unwrap().success(), "key server: {err}");
    let cap: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(cap["bad_mkpdus"], 0, "{cap}");
    assert_eq!(
        cap["mis"].as_array().unwrap().len(),
        2,
        "two participants: {cap}"
    );
    let pns: Vec<u64> = cap["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f[0] == member.sci.as_str())
        .map(|f| {
            assert_eq!(
                f[3], true,
                "a frame of the member does not verify under the SAK: {f}"
            );
            assert_eq!(f[1], 0);
            f[2].as_u64().unwrap()
        })
        .collect();
    assert!(pns.len() >= 40, "{} frames captured", pns.len());
    let mut sorted = pns.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        pns.len(),
        "a PN repeats under the SAK: {pns:?}"
    );
    let restart = pns
        .iter()
        .position(|&pn| pn > mark)
        .expect("frames after the restart");
    assert_eq!(pns[restart], mark + 1, "{pns:?}");
    assert!(pns[..restart].iter().all(|&pn| pn <= mark), "{pns:?}");
    assert!(pns[restart..].iter().all(|&pn| pn > mark), "{pns:?}");

    let mut p = p;
    let mut c = p.0.take().unwrap();
    ivnsec_net::sys::signal_process(c.id(), false).unwrap();
    assert_eq!(c.wait().unwrap().code(), Some(0));
    assert!(!member.tap_exists());
    tb.down().unwrap();
}

#[test]
fn attack_mka_accepts_nothing_and_the_ping_flows() {
    require_root!();
    let d = TempDir::new("mkaatk");
    let o = d.run(&["attack", "--mka", "--count", "200", "--json"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["verdict"], "pass");
    let results = v["results"].as_array().unwrap();
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["attack"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "mka-bad-icv",
            "mka-stale-mn",
            "mka-foreign-ckn",
            "mka-sak-not-key-server"
        ]
    );
    for (r, reasons) in results.iter().zip([
        &["bad_icv"][..],
        &["stale_mn", "own_pdu"],
        &["unknown_ckn"],
        &["sak_not_from_key_server"],
    ]) {
        assert_eq!(r["profile"], "macsec-gcm-aes-128");
        assert_eq!(r["injected"], 200, "{r}");
        assert_eq!(r["accepted"], 0, "{r}");
        let m = &r["mka"];
        assert_eq!(m["forged_saks_installed"], 0, "{r}");
        assert_eq!(m["key_server_changes"], 0, "{r}");
        assert_eq!(m["peers_made_live"], 0, "{r}");
        assert_eq!(m["key_server_before"], m["key_server_after"], "{r}");
        // Each MKPDU reaches both members and each judges it, for the class's reason.
        let judged: u64 = reasons
            .iter()
            .map(|k| r["dropped"][*k].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(judged, 400, "{r}");
        assert_eq!(r["not_seen"], 0, "{r}");
        let sent = r["legit_sent"].as_u64().unwrap();
        assert!(sent >= 50, "{r}");
        assert_eq!(r["legit_delivered"], sent, "the ping lost frames: {r}");
    }
    assert!(d.leftover_testbeds().is_empty());
}

/// The independent key server (`tests/interop/mka_fixed_ks.py`) on `ks`'s eth0, handing out
/// one SAK of the test's choosing; a new process is a new MI (a restarted key server).
struct FixedKs {
    proc: Proc,
    stdin: Option<std::process::ChildStdin>,
}

impl FixedKs {
    fn start(py: &str, ks: &Ecu, psk: &Path, sak: &[u8; 16]) -> FixedKs {
        let (cak, ckn) = psk_fields(psk);
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/mka_fixed_ks.py");
        let mut c = ks
            .exec(py)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let cfg = serde_json::json!({"iface": "eth0", "mac": ks.mac, "cak": cak, "ckn": ckn,
                                     "sak": hex::encode(sak), "an": 0, "kn": 1});
        let mut stdin = c.stdin.take().unwrap();
        writeln!(stdin, "{cfg}").unwrap();
        FixedKs {
            proc: Proc(Some(c)),
            stdin: Some(stdin),
        }
    }

    /// Stops it; the (SCI, AN, PN) of every MACsec frame `sci` sent, each checked to verify
    /// under the SAK (AES-GCM in Python), in the order captured.
    fn finish(mut self, sci: &str) -> Vec<(u64, u64)> {
        drop(self.stdin.take());
        let mut c = self.proc.0.take().unwrap();
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let mut err = String::new();
        c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(c.wait().unwrap().success(), "key server: {err}");
        let cap: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        assert_eq!(cap["bad_mkpdus"], 0, "{cap}");
        cap["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f[0] == sci)
            .map(|f| {
                assert_eq!(f[3], true, "a frame does not verify under the SAK: {f}");
                (f[1].as_u64().unwrap(), f[2].as_u64().unwrap())
            })
            .collect()
    }
}

/// Asserts that no (AN, PN) repeats among frames of one SCI under one SAK.
fn assert_no_repeat(frames: &[(u64, u64)]) {
    let mut seen = std::collections::HashSet::new();
    for f in frames {
        assert!(
            seen.insert(*f),
            "(AN, PN) {f:?} repeats under one SAK: {frames:?}"
        );
    }
}

fn tx_installs(e: &Ecu) -> Vec<Value> {
    e.events()
        .into_iter()
        .filter(|x| x["event"] == "sak_installed" && x["dir"] == "tx")
        .collect()
}

/// 20 pings from `e` to `to` (a static neighbour: the requests leave the TAP at once).
fn send_pings(e: &Ecu, to: &Ecu) {
    e.ip(&[
        "neigh",
        "replace",
        &to.addr,
        "lladdr",
        &to.mac,
        "dev",
        TAP,
        "nud",
        "permanent",
    ]);
    let _ = e.ping(&to.addr, &["-c", "20", "-i", "0.05", "-W", "1"]);
}

fn kill(p: Proc) {
    let mut p = p;
    let c = p.0.as_mut().unwrap();
    c.kill().unwrap();
    c.wait().unwrap();
    p.0 = None;
}

/// A member whose `--state-dir` was lost is handed its old SAK again by the independent key
/// server: it installs it for receive only, says so (`sak_refused_no_state`, counted in its
/// status, its SAK Use announcing the SAK exhausted) and sends nothing under it; the key
/// server's capture has no (SCI, AN, PN) twice. A new SAK from the key server: it transmits
/// again, from PN 1, every frame verifying.
#[test]
fn a_member_whose_state_dir_was_lost_never_transmits_under_its_old_sak() {
    require_root!();
    let Some(py) = python_with_cryptography() else {
        eprintln!("SKIPPED: no Python with the `cryptography` package for the key server");
        return;
    };
    let d = TempDir::new("mkalost");
    let tb = pae_testbed(&d, 1, false);
    let psk = keygen_mka(&d, "ca.psk", &[]);
    let member = Ecu::new(&tb, &d, "sensor1", "10.96.0.1", TAP);
    let ks = Ecu::new(&tb, &d, "consumer", "10.96.0.2", TAP);
    let mut sak = [0u8; 16];
    getrandom::fill(&mut sak).unwrap();
    let server = FixedKs::start(&py, &ks, &psk, &sak);

    let p = member.up_psk(&psk, &[]);
    wait_for(15, "the member transmits under the SAK", || {
        !tx_installs(&member).is_empty()
    });
    send_pings(&member, &ks);
    kill(p);
    wait_for(5, "the TAP removed with the process", || {
        !member.tap_exists()
    });
    let state = member.dir.join("state");
    let mark = reserved_mark(&state);
    // The record beside the PSK file names the member, never the SAK.
    let record = std::fs::read_to_string(d.path("ca.psk.used")).unwrap();
    assert!(record.starts_with("ivnsec-used-saks 1\n"), "{record}");
    assert!(record.contains(&format!("sci {}", member.sci)), "{record}");
    assert!(!record.contains(&hex::encode(sak)), "{record}");

    // The state directory is lost; the key server hands out the same SAK again.
    std::fs::remove_dir_all(&state).unwrap();
    let p = member.up_psk(&psk, &[]);
    wait_for(15, "the member refuses the SAK", || {
        member
            .events()
            .iter()
            .any(|e| e["event"] == "sak_refused_no_state")
    });
    let ev = member.events();
    let refusal = ev
        .iter()
        .find(|e| e["event"] == "sak_refused_no_state")
        .unwrap();
    assert_eq!(
        (refusal["key_number"].as_u64(), refusal["an"].as_u64()),
        (Some(1), Some(0)),
        "{refusal}"
    );
    assert!(
        refusal["record"].as_str().unwrap().ends_with("ca.psk.used"),
        "{refusal}"
    );
    assert_eq!(
        tx_installs(&member).len(),
        1,
        "no transmit SA after the restart"
    );
    let rx_after = ev
        .iter()
        .rev()
        .take_while(|e| e["event"] != "mka_started")
        .any(|e| e["event"] == "sak_installed" && e["dir"] == "rx");
    assert!(rx_after, "the SAK is installed for receive");
    send_pings(&member, &ks);
    std::thread::sleep(Duration::from_millis(600));
    let st = member.status();
    let mka = &st["key_source_state"];
    assert_eq!(mka["counters"]["tx_refused"]["no_state"], 1, "{st}");
    let o = member
        .exec(BIN)
        .args(["macsec", "status", "--run-dir"])
        .arg(member.dir.join("run"))
        .output()
        .unwrap();
    assert!(
        text(&o.stdout).contains("transmit refused: 1 SAK(s) met again without their nonce state"),
        "{}",
        text(&o.stdout)
    );
    assert!(st["tx"]["encoding_an"].is_null(), "{st}");
    assert_eq!(mka["latest"]["rx"], true, "{st}");
    assert_eq!(
        mka["latest"]["tx_pn"].as_u64(),
        Some(u64::from(u32::MAX)),
        "the SAK is announced exhausted (a new SAK is asked for): {st}"
    );
    let before = server.finish(&member.sci);
    assert!(before.len() >= 20, "{} frames", before.len());
    assert_no_repeat(&before);
    assert!(
        before.iter().all(|&(_, pn)| pn <= mark),
        "nothing was sent after the restart: {before:?}"
    );

    // A key server with a new SAK: the member transmits again.
    let mut sak2 = [0u8; 16];
    getrandom::fill(&mut sak2).unwrap();
    let server = FixedKs::start(&py, &ks, &psk, &sak2);
    wait_for(15, "the member transmits under the new SAK", || {
        tx_installs(&member).len() >= 2
    });
    let t = tx_installs(&member)[1].clone();
    assert_eq!(
        (t["first_pn"].as_u64(), t["resumed"].as_bool()),
        (Some(1), Some(false)),
        "{t}"
    );
    send_pings(&member, &ks);
    let after = server.finish(&member.sci);
    assert!(after.len() >= 20, "{} frames", after.len());
    assert_no_repeat(&after);

    let mut p = p;
    let mut c = p.0.take().unwrap();
    ivnsec_net::sys::signal_process(c.id(), false).unwrap();
    assert_eq!(c.wait().unwrap().code(), Some(0));
    tb.down().unwrap();
}

/// The key server restarts (a new MI) and distributes the SAK it used before again: the
/// running member meets the same SAK under a new key identifier, resumes above its PNs (it
/// used to stop, its own transmit SA holding the state's lock), and the two captures together
/// have no (SCI, AN, PN) twice.
#[test]
fn a_restarted_key_server_handing_out_its_sak_again_never_makes_a_member_repeat_a_pn() {
    require_root!();
    let Some(py) = python_with_cryptography() else {
        eprintln!("SKIPPED: no Python with the `cryptography` package for the key server");
        return;
    };
    let d = TempDir::new("mkaksre");
    let tb = pae_testbed(&d, 1, false);
    let psk = keygen_mka(&d, "ca.psk", &[]);
    let member = Ecu::new(&tb, &d, "sensor1", "10.95.0.1", TAP);
    let ks = Ecu::new(&tb, &d, "consumer", "10.95.0.2", TAP);
    let mut sak = [0u8; 16];
    getrandom::fill(&mut sak).unwrap();
    let server = FixedKs::start(&py, &ks, &psk, &sak);
    let p = member.up_psk(&psk, &[]);
    wait_for(15, "the member transmits under the SAK", || {
        !tx_installs(&member).is_empty()
    });
    send_pings(&member, &ks);
    let before = server.finish(&member.sci);
    assert!(before.len() >= 20, "{} frames", before.len());
    let max_before = before.iter().map(|f| f.1).max().unwrap();

    let server = FixedKs::start(&py, &ks, &psk, &sak);
    wait_for(15, "the member transmits under the SAK again", || {
        tx_installs(&member).len() >= 2
    });
    let again = tx_installs(&member)[1].clone();
    assert_eq!(again["resumed"], true, "{again}");
    assert!(again["first_pn"].as_u64().unwrap() > max_before, "{again}");
    send_pings(&member, &ks);
    let after = server.finish(&member.sci);
    assert!(after.len() >= 20, "{} frames", after.len());
    assert!(after.iter().all(|f| f.1 > max_before), "{after:?}");
    let all: Vec<(u64, u64)> = before.iter().chain(&after).copied().collect();
    assert_no_repeat(&all);
    assert_eq!(member.status()["running"], true);

    let mut p = p;
    let mut c = p.0.take().unwrap();
    ivnsec_net::sys::signal_process(c.id(), false).unwrap();
    assert_eq!(c.wait().unwrap().code(), Some(0));
    tb.down().unwrap();
}
