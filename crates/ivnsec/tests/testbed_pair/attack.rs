//! `ivnsec attack` as a user runs it: no privileges (exit 3) and, as root on a testbed of its own (random prefix, own state directory, removed afterwards), every
//! class against one profile of each family (IVN-AE, MACsec, ESP, SecOC, secured SOME/IP) —
//! nothing forged is accepted — and the negative control: profiles without a key accept what
//! the attacker forges, and the command says so. Bad input (exit 2): `cli/attack.rs`.

use std::process::{Command, Output};

use serde_json::Value;

use crate::common::json::u64_of;
use crate::common::{BIN, TempDir, ivnsec, stderr};

/// Without privileges (root drops to `nobody` with setpriv) the attack cannot inject: exit 3
/// with a sentence saying what is needed.
#[test]
fn without_privileges_exits_3() {
    require_root!();
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIPPED: no setpriv to drop privileges");
        return;
    }
    let d = TempDir::new("nobody");
    Command::new("chmod")
        .args(["-R", "0777", d.0.to_str().unwrap()])
        .status()
        .unwrap();
    let o = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            "--",
            BIN,
            "attack",
            "--count",
            "10",
        ])
        .env("IVNSEC_STATE_DIR", d.state())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("root"), "{}", stderr(&o));
}

fn results(o: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "JSON: {e}\n{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
    });
    v["results"].as_array().unwrap().clone()
}

/// One result of a run in which nothing may be accepted, with what every check needs.
struct Judged<'a> {
    profile: &'a str,
    attack: &'a str,
    what: String,
    dropped: &'a serde_json::Map<String, Value>,
    /// Frames the receiver judged (dropped, by any reason).
    sum: u64,
    injected: u64,
}

/// Checks what holds for every class: nothing accepted, every injected frame either judged or
/// reported as not seen, legitimate traffic sent.
fn judged(r: &Value) -> Judged<'_> {
    let (profile, attack) = (
        r["profile"].as_str().unwrap(),
        r["attack"].as_str().unwrap(),
    );
    let what = format!("{profile} {attack}: {r}");
    assert_eq!(u64_of(r, "accepted"), 0, "{what}");
    let dropped = r["dropped"].as_object().unwrap();
    let sum: u64 = dropped.values().map(|v| v.as_u64().unwrap()).sum();
    let injected = u64_of(r, "injected");
    assert_eq!(sum + u64_of(r, "not_seen"), injected, "{what}");
    assert!(u64_of(r, "legit_sent") > 0, "{what}");
    Judged {
        profile,
        attack,
        what,
        dropped,
        sum,
        injected,
    }
}

/// Exit 1 only for what a flood did to the legitimate traffic, which is reported; else 0.
fn check_exit_code(o: &Output, rs: &[Value]) {
    let flood_loss = rs.iter().any(|r| {
        r["attack"] == "flood"
            && (u64_of(r, "legit_delivered") < u64_of(r, "legit_sent")
                || u64_of(r, "legit_exchanges_lost") > 0)
    });
    assert_eq!(
        o.status.code(),
        Some(if flood_loss { 1 } else { 0 }),
        "{}",
        stderr(o)
    );
}

/// Every class against aes128-gcm, macsec-gcm-aes-128 and esp-aes128-gcm: nothing forged or
/// replayed is accepted, every injected frame outside the flood is judged, each class is dropped
/// for the reasons it should be, the legitimate ping-pong loses nothing outside the flood, and
/// the capture holds the injected frames.
#[test]
fn nothing_forged_is_accepted() {
    require_root!();
    let d = TempDir::new("all");
    let pcap = d.0.join("attack.pcap");
    let count = 300u64;
    let o = ivnsec(
        &d,
        &[
            "attack",
            "--profile",
            "aes128-gcm",
            "--profile",
            "macsec-gcm-aes-128",
            "--profile",
            "esp-aes128-gcm",
            "--count",
            &count.to_string(),
            "--flood-seconds",
            "0.3",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let rs = results(&o);
    assert_eq!(rs.len(), 30, "{}", stderr(&o));
    let mut captured = 0;
    for r in &rs {
        let Judged {
            profile,
            attack,
            what,
            dropped,
            sum,
            injected,
        } = judged(r);
        assert!(r["legit_p999_us"].as_f64().is_some(), "{what}");
        let has = |k: &str| dropped.contains_key(k);
        // Every frame lost in front of the receiver is one its socket counted (a full queue),
        // or, outside the flood, one the switch refused (a group source address).
        let undelivered = u64_of(r, "legit_sent") - u64_of(r, "legit_delivered");
        let rx_qdrops = u64_of(r, "receiver_socket_drops");
        assert!(rx_qdrops <= u64_of(r, "not_seen") + undelivered, "{what}");
        let _ = u64_of(r, "initiator_socket_drops");
        if attack == "flood" {
            assert!(injected > 0, "{what}");
            assert_eq!(r["switch"], "static", "{what}");
            assert_eq!(u64_of(r, "not_seen") + undelivered, rx_qdrops, "{what}");
            captured += injected.min(10_000);
            continue;
        }
        assert_eq!(r["switch"], "hub", "{what}");
        captured += injected;
        assert_eq!(injected, count, "{what}");
        // A flipped bit may make the source address a group address, which the switch drops:
        // the attacker counts those; at most 1 % more may be lost on the way.
        let refused = u64_of(r, "switch_refused");
        let not_seen = u64_of(r, "not_seen");
        assert!(refused <= not_seen, "{what}");
        assert!((not_seen - refused) * 100 <= injected, "{what}");
        assert_eq!(
            u64_of(r, "legit_delivered"),
            u64_of(r, "legit_sent"),
            "{what}"
        );
        assert_eq!(u64_of(r, "legit_exchanges_lost"), 0, "{what}");
        let esp = profile.starts_with("esp-");
        let macsec = profile.starts_with("macsec-");
        match attack {
            "foreign-source" => assert!(
                if esp {
                    has("foreign_source")
                } else if macsec {
                    has("no_sci")
                } else {
                    has("bad_tag")
                },
                "{what}"
            ),
            "no-key" => assert_eq!(dropped.len(), 1, "{what}"),
            "replay-w1" | "replay-w1024" => {
                assert!(has("replay_duplicate"), "{what}");
                assert!(has("replay_too_old") || has("late"), "{what}");
            }
            "bit-flip" | "length" => assert!(has("bad_tag"), "{what}"),
            "downgrade" => assert!(has(if esp { "not_esp" } else { "untagged" }), "{what}"),
            "unknown-id" => assert!(
                has("unknown_sa") || (has("no_sci") && has("not_using_sa")),
                "{what}"
            ),
            "garbage" => assert!(sum == injected, "{what}"),
            other => panic!("unexpected class {other}"),
        }
        if attack == "no-key" {
            assert!(has("bad_tag"), "{what}");
        }
    }
    check_exit_code(&o, &rs);
    let records = ivnsec_net::pcap::PcapReader::open(&pcap)
        .unwrap()
        .inspect(|r| assert!(r.is_ok(), "{r:?}"))
        .count() as u64;
    assert_eq!(records, captured);
    assert!(d.leftover_testbeds().is_empty());
}

/// Every class against SecOC (secoc-cmac-aes128) and secured SOME/IP (someip-aes128-gcm/conf)
/// over UDP between the ECUs' addresses: nothing forged or replayed is accepted, every injected
/// datagram outside the flood is judged (so the receiving stack took every one: lengths and
/// checksums right), each class is dropped for the reasons the protocol rules give
/// (docs/attacks.md), and the legitimate ping-pong loses nothing outside the flood.
#[test]
fn udp_families_accept_nothing_forged() {
    require_root!();
    let d = TempDir::new("udp");
    let count = 200u64;
    let o = ivnsec(
        &d,
        &[
            "attack",
            "--profile",
            "secoc-cmac-aes128",
            "--profile",
            "someip-aes128-gcm/conf",
            "--count",
            &count.to_string(),
            "--flood-seconds",
            "0.3",
            "--json",
        ],
    );
    let rs = results(&o);
    assert_eq!(rs.len(), 20, "{}", stderr(&o));
    for r in &rs {
        let Judged {
            profile,
            attack,
            what,
            dropped,
            injected,
            ..
        } = judged(r);
        if attack == "flood" {
            assert!(injected > 0, "{what}");
            continue;
        }
        assert_eq!(injected, count, "{what}");
        assert_eq!(u64_of(r, "not_seen"), 0, "{what}");
        assert_eq!(
            u64_of(r, "legit_delivered"),
            u64_of(r, "legit_sent"),
            "{what}"
        );
        assert_eq!(u64_of(r, "legit_exchanges_lost"), 0, "{what}");
        let has = |k: &str| dropped.contains_key(k);
        let only = |ks: &[&str]| dropped.keys().all(|k| ks.contains(&k.as_str()));
        let secoc = profile.starts_with("secoc-");
        match (secoc, attack) {
            // The SecOC socket connection is bound to the sender's address and port.
            (true, "foreign-source") => assert!(only(&["foreign_source"]), "{what}"),
            // A client of its own (other address, client ID and key): the tag.
            (false, "foreign-source") | (_, "no-key") => assert!(only(&["bad_tag"]), "{what}"),
            // SecOC has no replay window: a replayed 32-bit truncated FV reconstructs to an FV
            // 2^32 higher, whose MAC does not match.
            (true, "replay-w1" | "replay-w1024") => assert!(only(&["bad_tag"]), "{what}"),
            (false, "replay-w1" | "replay-w1024") => {
                assert!(has("replay_duplicate") && has("replay_too_old"), "{what}");
                assert!(only(&["replay_duplicate", "replay_too_old"]), "{what}");
            }
            (true, "bit-flip") => {
                assert!(has("bad_tag"), "{what}");
                assert!(only(&["bad_tag", "unknown_sa", "bad_length"]), "{what}");
            }
            (false, "bit-flip") => assert!(has("bad_tag") && has("unknown_service"), "{what}"),
            (_, "length") => {
                assert!(has("bad_tag") && has("bad_length"), "{what}");
                assert!(only(&["bad_tag", "bad_length", "truncated"]), "{what}");
            }
            (true, "downgrade") => assert!(only(&["bad_tag"]), "{what}"),
            (false, "downgrade") => {
                assert!(
                    has("level_mismatch") && has("unknown_sa") && has("bad_tag"),
                    "{what}"
                )
            }
            (true, "unknown-id") => assert!(only(&["unknown_sa"]), "{what}"),
            (false, "unknown-id") => {
                assert!(has("unknown_sa") && has("unknown_service"), "{what}");
                assert!(only(&["unknown_sa", "unknown_service"]), "{what}");
            }
            (_, "garbage") => assert!(has("truncated") || has("bad_length"), "{what}"),
            (_, other) => panic!("unexpected class {other}"),
        }
    }
    check_exit_code(&o, &rs);
    assert!(d.leftover_testbeds().is_empty());
}

/// Classes and profiles of one family run back to back on the same three node processes (one
/// segment each, fresh keys): what one class sends is never counted in another. Replays after
/// the other profile's flood are refused as replays only (a frame captured under an earlier
/// class's keys would be `bad_tag`), and each class's own counts add up: every injected frame
/// judged or not seen, and what the receiver's socket dropped exactly what was not seen or not
/// delivered.
#[test]
fn classes_back_to_back_stay_apart() {
    require_root!();
    let d = TempDir::new("segments");
    let count = 300u64;
    let o = ivnsec(
        &d,
        &[
            "attack",
            "--profile",
            "aes128-gcm",
            "--profile",
            "aes256-gcm/auth",
            "--attack",
            "flood",
            "--attack",
            "replay-w1",
            "--attack",
            "garbage",
            "--attack",
            "replay-w1024",
            "--count",
            &count.to_string(),
            "--flood-seconds",
            "0.3",
            "--json",
        ],
    );
    let rs = results(&o);
    let order: Vec<(&str, &str)> = rs
        .iter()
        .map(|r| {
            (
                r["profile"].as_str().unwrap(),
                r["attack"].as_str().unwrap(),
            )
        })
        .collect();
    let classes = ["replay-w1", "replay-w1024", "garbage", "flood"];
    let expected: Vec<(&str, &str)> = ["aes128-gcm", "aes256-gcm/auth"]
        .into_iter()
        .flat_map(|p| classes.map(|c| (p, c)))
        .collect();
    assert_eq!(order, expected, "{}", stderr(&o));
    for r in &rs {
        let Judged {
            attack,
            what,
            dropped,
            sum,
            injected,
            ..
        } = judged(r);
        let undelivered = u64_of(r, "legit_sent") - u64_of(r, "legit_delivered");
        assert_eq!(
            u64_of(r, "not_seen") + undelivered,
            u64_of(r, "receiver_socket_drops"),
            "{what}"
        );
        if attack == "flood" {
            assert!(injected > 0, "{what}");
            continue;
        }
        assert_eq!(injected, count, "{what}");
        assert_eq!(sum, injected, "{what}");
        assert_eq!(undelivered, 0, "{what}");
        assert_eq!(u64_of(r, "legit_exchanges_lost"), 0, "{what}");
        if attack.starts_with("replay-") {
            let reasons: Vec<&str> = dropped.keys().map(String::as_str).collect();
            assert_eq!(reasons, ["replay_duplicate", "replay_too_old"], "{what}");
        }
    }
    check_exit_code(&o, &rs);
    assert!(d.leftover_testbeds().is_empty());
}

/// The negative control: `plain`, `crc32` and `someip-nosec` authenticate nothing, so frames
/// forged without any key are accepted — and the command fails. (`plain` and `crc32` still
/// refuse replays: the sequence number and its window work without a key; an attacker just
/// writes a fresh one, which `no-key` does. `someip-nosec` messages have no counter, so their
/// replays are accepted as well.)
#[test]
fn profiles_without_a_key_accept_forgeries_and_fail() {
    require_root!();
    let d = TempDir::new("plain");
    let o = ivnsec(
        &d,
        &[
            "attack",
            "--profile",
            "plain",
            "--profile",
            "crc32",
            "--profile",
            "someip-nosec",
            "--attack",
            "no-key",
            "--attack",
            "replay-w1024",
            "--count",
            "100",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let rs = results(&o);
    assert_eq!(rs.len(), 6);
    for r in &rs {
        let what = r.to_string();
        // `someip-nosec` has no counter either: its replays get through too.
        if r["attack"] == "no-key" || r["profile"] == "someip-nosec" {
            assert_eq!(u64_of(r, "accepted"), 100, "{what}");
        } else {
            assert_eq!(u64_of(r, "accepted"), 0, "{what}");
        }
    }
    assert!(d.leftover_testbeds().is_empty());
}

/// The flood on a hub (`--flood-switch hub`): the legitimate sender receives the flood too and
/// its link drops it in the kernel filter; every frame lost in front of the receiver or the
/// sender is counted by their sockets, and with a 64 MiB receive buffer no legitimate request
/// or reply is lost.
#[test]
fn flood_losses_are_counted_by_the_sockets() {
    require_root!();
    let d = TempDir::new("flood");
    let o = ivnsec(
        &d,
        &[
            "attack",
            "--profile",
            "hmac-sha1",
            "--profile",
            "esp-aes128-gcm",
            "--attack",
            "flood",
            "--flood-seconds",
            "0.5",
            "--flood-switch",
            "hub",
            "--rcvbuf-mib",
            "64",
            "--json",
        ],
    );
    let rs = results(&o);
    assert_eq!(rs.len(), 2, "{}", stderr(&o));
    for r in &rs {
        let what = r.to_string();
        assert_eq!(r["switch"], "hub", "{what}");
        assert_eq!(u64_of(r, "accepted"), 0, "{what}");
        let undelivered = u64_of(r, "legit_sent") - u64_of(r, "legit_delivered");
        assert_eq!(
            u64_of(r, "not_seen") + undelivered,
            u64_of(r, "receiver_socket_drops"),
            "{what}"
        );
        assert_eq!(undelivered, 0, "{what}");
        assert_eq!(u64_of(r, "legit_exchanges_lost"), 0, "{what}");
        assert_eq!(u64_of(r, "initiator_socket_drops"), 0, "{what}");
    }
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(d.leftover_testbeds().is_empty());
}
