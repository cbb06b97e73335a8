//! Seed 002 testbench 3 (§5.4.3): the `production` topology — four switches with redundant
//! links under the kernel's spanning tree, sensors attached unevenly (two of them legacy ECUs
//! behind gateways), the consumer on three links (docs/testbed.md). Testbeds of the tests' own
//! (random prefixes, own state directories), removed even when a test fails.
//!
//! - `testbed up --topology production` returns only once the tree has converged: no port
//!   listening or learning, every port hears of one root (the consumer's switch `sw0`), the
//!   two redundant switch links and two of the consumer's three links blocked; every sensor
//!   and the consumer then reach each other (the sensors that protect themselves in plain
//!   ping; the legacy ones through their gateways, MACsec with MKA on a pre-shared CAK with
//!   the consumer's `ivnsec macsec up`); `testbed down` removes every namespace.
//! - `pingpong --outage 1` (docs/experiments.md): the consumer's forwarding link goes down and
//!   comes back; plain and MACsec exchanges recover after STP's listening and learning, and the
//!   MKA participants end with every peer live. Bad `--outage` values exit 2
//!   (`cli/production.rs`).
//! - `underload --outage 1`: the same for the sensor stream (messages and one-way delays);
//!   bad `--outage` values of `underload` exit 2 too (`cli/production.rs`).
//! - `attack --topology production`: the frame classes from sensor2 on sw1 against sensor1 →
//!   consumer across the tree (the flood through the switches' static address table along the
//!   spanning tree), and an MKA class against sensor1 and the consumer as members.
//! - Isolation with the key server's segments: two connectivity associations on one network,
//!   one of them a group CA of the consumer and two sensors; nothing crosses between them.
//!
//! The namespace tests need root and skip with a printed reason otherwise.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use ivnsec_net::testbed;
use serde_json::Value;

use crate::common::net::{assert_ping, exec, ping};
use crate::common::proc::wait_for;
use crate::common::{BIN, Proc, TempDir, spawn_until_ready, text};

/// The pings of this topology: three, 100 ms apart.
const PING3: [&str; 4] = ["-c", "3", "-i", "0.1"];

/// `ivnsec macsec up` (the consumer) or `ivnsec gateway` in `ns`, MKA on `psk`.
fn mka_node(ns: &str, d: &TempDir, name: &str, psk: &str, gateway: bool) -> Proc {
    let dir = |what: &str| -> PathBuf { d.path(&format!("{name}-{what}")) };
    let mut c = exec(ns, BIN);
    if gateway {
        c.args(["gateway", "--plain", "plain0", "--protected", "prot0"]);
    } else {
        c.args(["macsec", "up", "--iface", "eth0", "--tap", "mka0"]);
    }
    c.args(["--profile", "macsec-gcm-aes-128", "--psk", psk])
        .arg("--state-dir")
        .arg(dir("state"))
        .arg("--run-dir")
        .arg(dir("run"))
        .args(["--ramp-up-ms", "20", "--hello-seconds", "1", "--json"]);
    spawn_until_ready(c, "running until", name)
}

#[test]
fn production_testbed_converges_and_every_sensor_reaches_the_consumer() {
    require_root!();
    let d = TempDir::new("prod");
    let t0 = Instant::now();
    let o = d.run(&["testbed", "up", "--topology", "production", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let took = t0.elapsed();
    let up: Value = serde_json::from_slice(&o.stdout).unwrap();
    let prefix = up["prefix"].as_str().unwrap().to_string();
    let state = testbed::load(&d.state(), &prefix).unwrap();
    assert_eq!(state.topology, "production");

    // Converged when `up` returned (read before anything else can change it).
    let view = testbed::converged(&state).unwrap();
    assert!(view.is_converged(), "{}", view.why_not());
    // Every port forwards or blocks; all hear of sw0 (priority 4096, MAC 02:49:56:01:00:00).
    for (p, s) in &view.ports {
        assert!(s == "forwarding" || s == "blocking", "{p} {s}");
    }
    assert!(!view.roots.is_empty());
    for (p, r) in &view.roots {
        assert_eq!(r, "1000.2:49:56:1:0:0", "{p}");
    }
    // Two redundant switch links: one end of each blocks. The consumer: one link forwards.
    let blocked = view.ports_in("blocking");
    let on_switches = blocked.iter().filter(|p| p.starts_with("sw")).count();
    assert_eq!(on_switches, 2, "{blocked:?}");
    let uplinks = |s: &str| {
        view.ports
            .iter()
            .filter(|(p, st)| p.starts_with("consumer/uplink") && st == s)
            .count()
    };
    assert_eq!((uplinks("forwarding"), uplinks("blocking")), (1, 2));
    // STP's listening and learning (2 × 2 s) happened inside `up`.
    assert!(took >= Duration::from_secs(4), "up took {took:?}");

    let ns = |n: &str| state.namespace_of(n).unwrap().to_string();
    // The sensors that protect themselves: plain IP both ways across two switches.
    for s in ["sensor1", "sensor2"] {
        assert_ping(&ns(s), "10.77.0.1", &PING3);
        assert_ping(
            &ns("consumer"),
            &state.ipv4_of(s).unwrap().to_string(),
            &PING3,
        );
    }
    // The legacy sensors: through their gateways, MACsec with MKA to the consumer, whose
    // address moves from its link to its TAP.
    let psk = d.path("ca.psk");
    let o = d.run(&["keygen", "--mka", "--out", psk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let p = psk.to_str().unwrap();
    let consumer = ns("consumer");
    let ip = |args: &[&str]| {
        let o = Command::new("ip").args(args).output().unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
    };
    ip(&["-n", &consumer, "addr", "flush", "dev", "eth0"]);
    let pc = mka_node(&consumer, &d, "consumer", p, false);
    ip(&[
        "-n",
        &consumer,
        "addr",
        "add",
        "10.77.0.1/16",
        "dev",
        "mka0",
    ]);
    let g3 = mka_node(&ns("gw3"), &d, "gw3", p, true);
    let g4 = mka_node(&ns("gw4"), &d, "gw4", p, true);
    for s in ["sensor3", "sensor4"] {
        wait_for(20, &format!("ping {s} → consumer"), || {
            ping(&ns(s), "10.77.0.1", &PING3).status.success()
        });
        assert_ping(&ns(s), "10.77.0.1", &PING3);
        assert_ping(&consumer, &state.ipv4_of(s).unwrap().to_string(), &PING3);
    }
    for pr in [g3, g4, pc] {
        let (code, out) = pr.finish(true);
        assert_eq!(code, Some(0), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["key_source"], "mka", "{v}");
    }

    let o = d.run(&["testbed", "down", "--testbed", &prefix]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(testbed::live_namespaces(&prefix).unwrap().is_empty());
    assert!(d.leftover_testbeds().is_empty());
}

/// One outage on a short run: seed 6 takes the consumer's forwarding link (`uplink1`: of three
/// equal links 802.1D picks the lowest port id as the root port) down for 12 s. For plain,
/// MACsec and ESP the exchanges stop, and resume only after STP has moved the consumer to another
/// link, which takes 2 × the 2 s forward delay (listening, learning); the same for ESP (the
/// kernel's IP layer, `--also-profile`); when the link comes
/// back, it is chosen again (another 2 × 2 s). The MKA participants (the consumer, both
/// gateways) survive or re-establish on their own and end with every peer live.
#[test]
fn one_link_outage_is_recovered_from_and_mka_stays_up() {
    require_root!();
    let d = TempDir::new("prodx");
    let o = d.run(&[
        "pingpong",
        "--topology",
        "production",
        "--profile",
        "macsec-gcm-aes-128",
        "--payload",
        "64",
        "--pause-ms",
        "20",
        "--outage",
        "1",
        "--outage-seed",
        "6",
        "--also-profile",
        "esp-aes128-gcm",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["topology"], "production", "{r}");
    assert_eq!(r["spec"]["seed"], 6);
    let eligible = r["eligible_links"].as_array().unwrap();
    // Five switch-to-switch links and the consumer's three.
    assert_eq!(eligible.len(), 8, "{eligible:?}");
    assert_eq!(
        r["chosen_links"],
        serde_json::json!(["consumer/uplink1 — sw0/to-consumer1"])
    );
    let runs = r["runs"].as_array().unwrap();
    let profiles: Vec<&str> = runs
        .iter()
        .map(|x| x["profile"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["plain", "macsec-gcm-aes-128", "esp-aes128-gcm"]);
    for run in runs {
        let p = &run["profile"];
        assert!(run["rtt_before_us"]["count"].as_u64().unwrap() > 50, "{p}");
        let outage = &run["outages"][0];
        assert_eq!(outage["on_tree"], true, "{p}");
        let down = &outage["events"][0];
        let up = &outage["events"][1];
        assert_eq!(
            (&down["event"], &up["event"]),
            (&"down".into(), &"up".into())
        );
        assert!(down["lost"].as_u64().unwrap() > 0, "{p}: {down}");
        let rec = down["recovered_after_ms"].as_f64().unwrap();
        // Listening + learning: 2 × 2 s, less at most one exchange timeout (200 ms) and pause
        // of resolution; never the whole 12 s the link stays down.
        assert!((3500.0..11_000.0).contains(&rec), "{p}: {down}");
        let settled = down["tree_settled_after_ms"].as_f64().unwrap();
        assert!((3500.0..11_000.0).contains(&settled), "{p}: {down}");
        assert!(down["rtt_during_us"]["count"].as_u64().unwrap() > 0, "{p}");
        assert!(up["recovered_after_ms"].as_f64().is_some(), "{p}: {up}");
        let lost = run["lost"].as_u64().unwrap();
        assert_eq!(
            lost,
            down["lost"].as_u64().unwrap() + up["lost"].as_u64().unwrap(),
            "{p}: nothing lost outside the outage"
        );
        for m in outage["mka"].as_array().unwrap() {
            let v = m["verdict"].as_str().unwrap();
            // Under load the second interruption (the link coming back moves the tree again)
            // can cost peers whose return falls after this profile's window: then the session
            // must have come back on its own by the end of the run (mka_final, below).
            let came_back_later = v == "not re-established"
                && r["mka_final"].as_array().unwrap().iter().any(|f| {
                    f["participant"] == m["participant"]
                        && f["live_peers"] == 2
                        && f["transmitting"] == true
                });
            assert!(
                v == "survived" || v == "re-established" || came_back_later,
                "{p}: {m}"
            );
        }
    }
    let fin = r["mka_final"].as_array().unwrap();
    let names: Vec<&str> = fin
        .iter()
        .map(|m| m["participant"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["consumer", "gw3", "gw4"]);
    for m in fin {
        assert_eq!(m["live_peers"], 2, "{m}");
        assert_eq!(m["transmitting"], true, "{m}");
    }
    assert!(d.leftover_testbeds().is_empty());
}

/// `underload --outage 1` on the sensor stream (200 messages/s of 3000 bytes, plain and
/// AES-128-GCM): seed 6 takes the consumer's forwarding uplink down, as for the ping-pong. The
/// messages sent while STP moves the consumer to another uplink (listening, learning: 2 × 2 s)
/// are lost and the stream recovers long before the link comes back; the report has the
/// ping-pong's keys with `messages` and `one_way_…_us` for `exchanges` and `rtt_…_us`, and the
/// MKA participants end with every peer live.
#[test]
fn underload_outage_is_recovered_from_per_message() {
    require_root!();
    let d = TempDir::new("produo");
    let o = d.run(&[
        "underload",
        "--topology",
        "production",
        "--profile",
        "aes128-gcm",
        "--size",
        "3000",
        "--mps",
        "200",
        "--reply-every",
        "10",
        "--outage",
        "1",
        "--outage-seed",
        "6",
        "--json",
    ]);
    // Exit 1 is a requirement missed: the run's JSON (stdout) says which.
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}\n{}",
        text(&o.stderr),
        text(&o.stdout)
    );
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["experiment"], "underload", "{r}");
    assert_eq!(r["topology"], "production", "{r}");
    assert_eq!(r["path"], "sensor1 → consumer", "{r}");
    assert_eq!(
        r["chosen_links"],
        serde_json::json!(["consumer/uplink1 — sw0/to-consumer1"])
    );
    let runs = r["runs"].as_array().unwrap();
    let profiles: Vec<&str> = runs
        .iter()
        .map(|x| x["profile"].as_str().unwrap())
        .collect();
    assert_eq!(profiles, ["plain", "aes128-gcm"]);
    // 3 s before, 12 s down, 8 s after: 23 s at 200 messages/s.
    let duration_s = 3.0 + 12.0 + 8.0;
    for run in runs {
        let p = &run["profile"];
        let outage = &run["outages"][0];
        assert!(run.get("exchanges").is_none() && run.get("rtt_before_us").is_none());
        assert_eq!(
            run["messages"].as_u64(),
            Some(200 * duration_s as u64),
            "{p}"
        );
        // Before the outage every message arrives: 3 s at 200/s or more (the link goes down
        // once the tree has been read, which takes a while on a loaded machine).
        let before = run["one_way_before_us"]["count"].as_u64().unwrap();
        let first_at = outage["events"][0]["at_s"].as_f64().unwrap();
        assert!(
            (before as f64 - first_at * 200.0).abs() <= 10.0,
            "{p}: {before} before {first_at} s"
        );
        assert_eq!(outage["on_tree"], true, "{p}");
        let (down, up) = (&outage["events"][0], &outage["events"][1]);
        assert_eq!(
            (&down["event"], &up["event"]),
            (&"down".into(), &"up".into())
        );
        // The 12 s the link is down: 2400 messages; those of the re-convergence are lost.
        let n = down["messages"].as_u64().unwrap();
        assert!((2350..=2450).contains(&n), "{p}: {down}");
        let lost = down["lost"].as_u64().unwrap();
        let rec = down["recovered_after_ms"].as_f64().unwrap();
        assert!((3500.0..11_000.0).contains(&rec), "{p}: {down}");
        // Lost: at most the messages sent until it recovered (200 per second), never all.
        assert!(lost > 0 && lost < n, "{p}: {down}");
        assert!(
            lost as f64 <= rec / 5.0 + 5.0,
            "{p}: {lost} lost in {rec} ms: {down}"
        );
        let settled = down["tree_settled_after_ms"].as_f64().unwrap();
        assert!((3500.0..11_000.0).contains(&settled), "{p}: {down}");
        let during = &down["one_way_during_us"];
        assert!(during["count"].as_u64().unwrap() > 0, "{p}: {down}");
        assert!(
            during["median"].as_f64().unwrap() <= during["p99"].as_f64().unwrap()
                && during["p99"].as_f64().unwrap() <= during["max"].as_f64().unwrap(),
            "{p}: {during}"
        );
        assert!(up["recovered_after_ms"].as_f64().is_some(), "{p}: {up}");
        assert_eq!(
            run["lost"].as_u64().unwrap(),
            lost + up["lost"].as_u64().unwrap(),
            "{p}: nothing lost outside the outage"
        );
        assert_eq!(outage["mka"].as_array().unwrap().len(), 3, "{p}");
    }
    for m in r["mka_final"].as_array().unwrap() {
        assert_eq!(m["live_peers"], 2, "{m}");
        assert_eq!(m["transmitting"], true, "{m}");
    }
    assert!(d.leftover_testbeds().is_empty());
}

/// `attack --topology production`: sensor2 on sw1 attacks sensor1 → consumer across the tree.
/// The replays need the switches to flood (the attacker sees sensor1's frames on sw1); the
/// flood runs on the static address table along the spanning tree, so every flood frame
/// reaches the consumer's forwarding uplink (none lost on a blocked link: each is judged or
/// counted by the consumer's socket). Nothing is accepted, the legitimate ping-pong loses
/// nothing outside the flood. `--mka`: sensor1 and the consumer as members, replayed MKPDUs
/// (a member's source address injected on sw1) are dropped and the ping across the TAPs loses
/// nothing.
#[test]
fn attack_runs_on_production() {
    require_root!();
    let d = TempDir::new("proda");
    let o = d.run(&[
        "attack",
        "--topology",
        "production",
        "--profile",
        "aes128-gcm",
        "--attack",
        "replay-w1",
        "--attack",
        "unknown-id",
        "--attack",
        "flood",
        "--count",
        "200",
        "--flood-seconds",
        "0.5",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr));
    });
    assert!(
        v["testbed"].as_str().unwrap().ends_with("(production)"),
        "{v}"
    );
    let rs = v["results"].as_array().unwrap();
    let classes: Vec<&str> = rs.iter().map(|r| r["attack"].as_str().unwrap()).collect();
    assert_eq!(classes, ["replay-w1", "unknown-id", "flood"], "{v}");
    let num = |r: &Value, k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k}: {r}"));
    let mut flood_loss = false;
    for r in rs {
        assert_eq!(num(r, "accepted"), 0, "{r}");
        let dropped: u64 = r["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|x| x.as_u64().unwrap())
            .sum();
        let undelivered = num(r, "legit_sent") - num(r, "legit_delivered");
        if r["attack"] == "flood" {
            assert_eq!(r["switch"], "static", "{r}");
            assert!(num(r, "injected") > 0, "{r}");
            // Every flood frame crossed sw1 and sw0 to the consumer: judged, or dropped by its
            // full socket queue (counted), never lost on the way.
            assert_eq!(
                num(r, "not_seen") + undelivered,
                num(r, "receiver_socket_drops"),
                "{r}"
            );
            flood_loss = undelivered > 0 || num(r, "legit_exchanges_lost") > 0;
            continue;
        }
        assert_eq!(r["switch"], "hub", "{r}");
        assert_eq!(num(r, "injected"), 200, "{r}");
        assert_eq!(dropped, 200, "every frame judged: {r}");
        assert_eq!(undelivered + num(r, "legit_exchanges_lost"), 0, "{r}");
        let has = |k: &str| r["dropped"].get(k).is_some();
        if r["attack"] == "replay-w1" {
            assert!(has("replay_duplicate") && has("replay_too_old"), "{r}");
        } else {
            assert!(has("unknown_sa"), "{r}");
        }
    }
    assert_eq!(
        o.status.code(),
        Some(if flood_loss { 1 } else { 0 }),
        "{}",
        text(&o.stderr)
    );

    let o = d.run(&[
        "attack",
        "--mka",
        "--topology",
        "production",
        "--mka-attack",
        "mka-stale-mn",
        "--count",
        "100",
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["testbed"].as_str().unwrap().ends_with("(production)"),
        "{v}"
    );
    let r = &v["results"][0];
    assert_eq!(r["attack"], "mka-stale-mn", "{v}");
    assert_eq!(r["accepted"], 0, "{r}");
    // Each replayed MKPDU reaches both members: stale at one, its own at the other.
    let judged = r["dropped"]["stale_mn"].as_u64().unwrap_or(0)
        + r["dropped"]["own_pdu"].as_u64().unwrap_or(0);
    assert_eq!(judged, 200, "{r}");
    assert!(r["legit_sent"].as_u64().unwrap() >= 20, "{r}");
    assert_eq!(r["legit_delivered"], r["legit_sent"], "{r}");

    let o = d.run(&["attack", "--mka", "--topology", "bump2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("production"),
        "{}",
        text(&o.stderr)
    );
    assert!(d.leftover_testbeds().is_empty());
}

/// A member of a segment in the isolation test: an ECU running `macsec up --keyserver` (its
/// TAP address in 10.98.0.0/24) or a gateway running `gateway --keyserver` in front of a legacy
/// sensor (the sensor's address in 10.98.0.0/24 on its own eth0).
struct Member {
    name: String,
    ns: String,
    sci: String,
    run: PathBuf,
}

impl Member {
    fn status(&self) -> Value {
        let o = exec(&self.ns, BIN)
            .args(["macsec", "status", "--json", "--run-dir"])
            .arg(&self.run)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
        v[0].clone()
    }
    fn live_peers(&self) -> Vec<String> {
        self.status()["key_source_state"]["peers"]
            .as_array()
            .map(|v| {
                v.iter()
                    .filter(|p| p["live"] == true)
                    .filter_map(|p| p["sci"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Seed 002 §5.4.3's configuration tests, with the key server's segments (docs/keys.md): on
/// `production`, segment `a` holds the consumer, `sensor1` and the legacy `sensor3`'s gateway
/// (two sensors sharing one connectivity association: 002's "group CA"), segment `b` holds
/// `sensor2` and the legacy `sensor4`'s gateway. Every address is in one IPv4 subnet, so only
/// MACsec keeps them apart. Within a segment everyone reaches everyone; across segments
/// nothing gets through in either direction (ARP and ping frames arrive and are dropped as
/// of an unknown SCI), and MKA lists only the members of the own segment as peers.
#[test]
fn segments_isolate_and_a_group_ca_serves_two_sensors() {
    require_root!();
    let d = TempDir::new("prodi");
    let o = d.run(&["testbed", "up", "--topology", "production", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let up: Value = serde_json::from_slice(&o.stdout).unwrap();
    let state = testbed::load(&d.state(), up["prefix"].as_str().unwrap()).unwrap();
    let ns = |n: &str| state.namespace_of(n).unwrap().to_string();
    let ip = |args: &[&str]| {
        let o = Command::new("ip").args(args).output().unwrap();
        assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
    };
    let run = |args: &[&str]| {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    };
    let pki = d.path("pki");
    let p = pki.to_str().unwrap();
    run(&["pki", "init", "--dir", p, "--vehicle", "WVWZZZ1JZXW000002"]);
    for e in ["keyserver", "consumer", "sensor1", "sensor2", "gw3", "gw4"] {
        run(&["pki", "issue", "--dir", p, "--ecu", e]);
    }
    let segs = d.path("segments.toml");
    std::fs::write(
        &segs,
        "[[segment]]\nname = \"a\"\necus = [\"consumer\", \"sensor1\", \"gw3\"]\n\n\
         [[segment]]\nname = \"b\"\necus = [\"sensor2\", \"gw4\"]\n",
    )
    .unwrap();
    // The key server on the consumer's plain address; the gateways reach it from an address
    // on their protected port (plain IP beside the MACsec frames, as the ECUs' eth0).
    let ks = "10.77.0.1:8443";
    let mut c = exec(&ns("consumer"), BIN);
    c.args(["keyserver", "--pki", p, "--listen", ks, "--segments"])
        .arg(&segs);
    let _ks = spawn_until_ready(c, "listening on", "keyserver");
    ip(&[
        "-n",
        &ns("gw3"),
        "addr",
        "add",
        "10.77.2.3/16",
        "dev",
        "prot0",
    ]);
    ip(&[
        "-n",
        &ns("gw4"),
        "addr",
        "add",
        "10.77.2.4/16",
        "dev",
        "prot0",
    ]);

    let mut procs = Vec::new();
    let mut members = Vec::new();
    for (name, gateway, tap_addr) in [
        ("consumer", false, "10.98.0.1"),
        ("sensor1", false, "10.98.0.11"),
        ("sensor2", false, "10.98.0.12"),
        ("gw3", true, ""),
        ("gw4", true, ""),
    ] {
        let n = state.node(name).unwrap();
        let iface = if gateway { "prot0" } else { "eth0" };
        let mac = &n.interfaces.iter().find(|i| i.name == iface).unwrap().mac;
        let run_dir = d.path(&format!("{name}-run"));
        let mut c = exec(&n.namespace, BIN);
        if gateway {
            c.args(["gateway", "--plain", "plain0", "--protected", "prot0"]);
        } else {
            c.args(["macsec", "up", "--iface", "eth0", "--tap", "seg0"]);
        }
        c.args(["--profile", "macsec-gcm-aes-128", "--keyserver", ks])
            .arg("--cert")
            .arg(pki.join(format!("ecu/{name}.pem")))
            .arg("--key")
            .arg(pki.join(format!("ecu/{name}.key")))
            .arg("--ca")
            .arg(pki.join("ca.pem"))
            .arg("--state-dir")
            .arg(d.path(&format!("{name}-state")))
            .arg("--run-dir")
            .arg(&run_dir)
            .args(["--hello-seconds", "1", "--ramp-up-ms", "20", "--json"]);
        procs.push(spawn_until_ready(c, "running until", name));
        if !gateway {
            ip(&[
                "-n",
                &n.namespace,
                "addr",
                "add",
                &format!("{tap_addr}/24"),
                "dev",
                "seg0",
            ]);
        }
        members.push(Member {
            name: name.to_string(),
            ns: n.namespace.clone(),
            sci: format!("{}0001", mac.replace(':', "")),
            run: run_dir,
        });
    }
    // The legacy sensors keep their own stack: an address in the same subnet on their eth0.
    ip(&[
        "-n",
        &ns("sensor3"),
        "addr",
        "add",
        "10.98.0.3/24",
        "dev",
        "eth0",
    ]);
    ip(&[
        "-n",
        &ns("sensor4"),
        "addr",
        "add",
        "10.98.0.4/24",
        "dev",
        "eth0",
    ]);

    let m = |n: &str| members.iter().find(|x| x.name == n).unwrap();
    let seg_a = ["consumer", "sensor1", "gw3"];
    let seg_b = ["sensor2", "gw4"];
    wait_for(
        40,
        "every member live with exactly its segment's others",
        || {
            seg_a.iter().all(|x| m(x).live_peers().len() == 2)
                && seg_b.iter().all(|x| m(x).live_peers().len() == 1)
        },
    );
    for (seg, names) in [("a", &seg_a[..]), ("b", &seg_b[..])] {
        for x in names {
            let st = m(x).status();
            assert_eq!(
                st["key_source_state"]["keyserver"]["segment"], seg,
                "{x}: {st}"
            );
            let mut peers = m(x).live_peers();
            peers.sort();
            let mut want: Vec<String> = names
                .iter()
                .filter(|y| *y != x)
                .map(|y| m(y).sci.clone())
                .collect();
            want.sort();
            assert_eq!(peers, want, "{x}");
        }
    }
    // Within a segment: both sensors of the group CA reach the consumer and back, and the two
    // members of segment b reach each other.
    let within = [
        ("sensor1", "10.98.0.1"),
        ("sensor3", "10.98.0.1"),
        ("consumer", "10.98.0.11"),
        ("consumer", "10.98.0.3"),
        ("sensor1", "10.98.0.3"),
        ("sensor2", "10.98.0.4"),
        ("sensor4", "10.98.0.12"),
    ];
    for (from, to) in within {
        wait_for(15, &format!("ping {from} → {to}"), || {
            ping(&ns(from), to, &PING3).status.success()
        });
        assert_ping(&ns(from), to, &PING3);
    }
    // Across segments: nothing, either way (each direction is one sender of one segment and
    // one receiver of the other).
    // 802.1AE InPktsNoSCI: a frame of an SCI the SecY has no receive SC for.
    let no_sci = |x: &str| m(x).status()["rx"]["drops"]["no_sci"].as_u64().unwrap_or(0);
    let before: Vec<u64> = ["consumer", "sensor2"].iter().map(|x| no_sci(x)).collect();
    for (from, to) in [
        ("sensor2", "10.98.0.1"),
        ("sensor4", "10.98.0.1"),
        ("sensor2", "10.98.0.11"),
        ("sensor4", "10.98.0.3"),
        ("consumer", "10.98.0.12"),
        ("consumer", "10.98.0.4"),
        ("sensor1", "10.98.0.4"),
        ("sensor3", "10.98.0.12"),
    ] {
        let o = ping(&ns(from), to, &PING3);
        assert!(
            text(&o.stdout).contains(" 0 received"),
            "{from} → {to} crossed segments: {}",
            text(&o.stdout)
        );
    }
    // The other segment's frames did arrive, and were dropped by the SecY (not one reached
    // the TAP: the pings above got no answer); no receive SC of the other segment exists.
    let after: Vec<u64> = ["consumer", "sensor2"].iter().map(|x| no_sci(x)).collect();
    assert!(
        after[0] > before[0] && after[1] > before[1],
        "no_sci drops before {before:?}, after {after:?}: consumer {}, sensor2 {}",
        m("consumer").status()["rx"],
        m("sensor2").status()["rx"]
    );
    for (names, others) in [(&seg_a[..], &seg_b[..]), (&seg_b[..], &seg_a[..])] {
        for x in names {
            let rx = m(x).status()["rx"]["peers"].clone();
            for y in others {
                assert!(
                    !rx.as_array().unwrap().iter().any(|p| p == &m(y).sci),
                    "{x} has a receive SC of {y}: {rx}"
                );
            }
        }
    }
    for pr in procs {
        let (code, out) = pr.finish(true);
        assert_eq!(code, Some(0), "{out}");
    }
    let o = d.run(&["testbed", "down", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(d.leftover_testbeds().is_empty());
}

/// The experiments run on `production` unchanged: a ping-pong between `sensor1` and the
/// consumer (across `sw1` and `sw0`) with MACsec, and a throughput run from both sensors that
/// protect themselves; nothing (ping-pong) or next to nothing (throughput) is lost on the
/// converged tree. `throughput` refuses more senders
/// than there are such sensors (exit 2).
#[test]
fn pingpong_and_throughput_run_on_production() {
    require_root!();
    let d = TempDir::new("prodp");
    let o = d.run(&[
        "pingpong",
        "--topology",
        "production",
        "--profile",
        "macsec-gcm-aes-128",
        "--payload",
        "64",
        "--count",
        "200",
        "--replications",
        "1",
        "--json",
    ]);
    let code = o.status.code();
    // 1 is a verdict (latency on a loaded machine), not a failure to run.
    assert!(matches!(code, Some(0 | 1)), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["count"].as_u64(), v["lost"].as_u64()),
        (Some(200), Some(0)),
        "{v}"
    );

    let o = d.run(&[
        "throughput",
        "--topology",
        "production",
        "--senders",
        "2",
        "--profile",
        "aes128-gcm",
        "--payload",
        "1000",
        "--seconds",
        "1",
        "--rate",
        "100M",
        "--no-baseline",
        "--json",
    ]);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["per_sender"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sensor1", "sensor2"], "{v}");
    // The tree forwards: (almost) everything arrives. A receive queue may overflow for a
    // moment when other jobs hold both cores, so up to 1 % lost is not the network's doing.
    let (delivered, lost) = (
        v["delivered"].as_u64().unwrap(),
        v["lost"].as_u64().unwrap(),
    );
    assert!(delivered > 5000 && lost * 100 <= delivered, "{v}");
    assert!(
        v["transport"].as_str().unwrap().contains("(production)"),
        "{v}"
    );

    let o = d.run(&[
        "throughput",
        "--topology",
        "production",
        "--senders",
        "3",
        "--profile",
        "plain",
        "--payload",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--senders 1 or 2"));
    assert!(d.leftover_testbeds().is_empty());
}

/// The one-way experiments run on `production` unchanged: `underload`, `playback` and `camera`
/// from sensor1 to the consumer across the converged tree (sw1 → sw0 → the consumer's uplink),
/// every message and frame delivered, and each run removes its testbed.
#[test]
fn underload_playback_and_camera_run_on_production() {
    require_root!();
    let d = TempDir::new("produ");
    let ok = |o: &Output| {
        // 1 is a verdict (a deadline on a loaded machine), not a failure to run.
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{:?}: {}",
            o.status,
            text(&o.stderr)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v
    };
    let v = ok(&d.run(&[
        "underload",
        "--topology",
        "production",
        "--profile",
        "aes128-gcm",
        "--size",
        "3000",
        "--mps",
        "200",
        "--reply-every",
        "10",
        "--seconds",
        "1",
        "--no-baseline",
        "--json",
    ]));
    assert!(
        v["transport"].as_str().unwrap().contains("(production)"),
        "{v}"
    );
    let m = &v["runs"][0]["messages"];
    assert_eq!(m["sent"], 200, "{v}");
    assert_eq!(m["received"], m["sent"], "{v}");
    assert_eq!(v["runs"][0]["replies"]["received"], 20, "{v}");

    let timeline = d.path("t.csv");
    let mut csv = String::from("# 50 messages, 5 ms apart\n");
    for i in 0..50u32 {
        csv.push_str(&format!(
            "{:.3}, {}\n",
            0.005 * f64::from(i + 1),
            1000 + 20 * i
        ));
    }
    std::fs::write(&timeline, csv).unwrap();
    let v = ok(&d.run(&[
        "playback",
        "--topology",
        "production",
        "--profile",
        "plain",
        "--timeline",
        timeline.to_str().unwrap(),
        "--no-baseline",
        "--json",
    ]));
    let m = &v["runs"][0]["messages"];
    assert_eq!(
        (m["sent"].as_u64(), m["received"].as_u64()),
        (Some(50), Some(50)),
        "{v}"
    );

    let v = ok(&d.run(&[
        "camera",
        "--topology",
        "production",
        "--transport",
        "tcp",
        "--cameras",
        "1",
        "--level",
        "conf",
        "--seconds",
        "1",
        "--json",
    ]));
    assert!(v["site"].as_str().unwrap().contains("(production)"), "{v}");
    let r = &v["results"][0];
    assert!(r["frames_sent"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(r["frames_received"], r["frames_sent"], "{v}");
    assert_eq!(r["lost"], 0, "{v}");
    assert!(d.leftover_testbeds().is_empty());
}
