//! Plans and experiments across SSH hosts: reports, clocks, one-way delays, TDMA runs.

use crate::bench::*;
use crate::common;
use crate::common::{TempDir, text};
use serde_json::Value;
use std::collections::BTreeSet;

/// A ping-pong and a throughput plan across two SSH hosts: the same report shape as on
/// loopback, every exchange answered, frames delivered, the hosts named in the environment,
/// one-way delays not taken from two clocks; `hosts check` finds both ready; nothing left.
#[test]
fn plan_across_ssh_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost");
    let bench = Bench::up(&d);
    let plan = bench.hosts_plan(&d, "hosts.toml", PLAN);
    let out = d.path("report-hosts");
    let o = bench.ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let hosts: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The same plan without hosts, on loopback.
    let local_plan = d.path("local.toml");
    std::fs::write(&local_plan, PLAN).unwrap();
    let (_, local) = common::run_plan_on_loopback(&d, &local_plan);
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    shape(&hosts["scenarios"], "scenarios", &mut a);
    shape(&local["scenarios"], "scenarios", &mut b);
    // What only a clock shared by both ends gives is there but empty (null): the direct
    // one-way delays and the error of their estimate from round trips.
    b.retain(|k| {
        !k.starts_with("scenarios[].sections.owd_direct.")
            && !k.starts_with("scenarios[].owd_estimate_error_us.")
    });
    assert_eq!(a, b, "scenario shape differs from the local run");
    for s in hosts["scenarios"].as_array().unwrap() {
        assert!(s["sections"]["owd_direct"].is_null(), "{s}");
        assert!(s["owd_estimate_error_us"].is_null(), "{s}");
    }
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    shape(&hosts["experiments"], "experiments", &mut a);
    shape(&local["experiments"], "experiments", &mut b);
    assert_eq!(a, b, "experiment shape differs from the local run");
    // Every exchange came back, across the two hosts.
    let scenarios = hosts["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 2);
    let env = &hosts["environment"];
    let names: Vec<&str> = env["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["front", "rear"], "{env}");
    assert!(
        env["transport"].as_str().unwrap().contains("over SSH"),
        "{env}"
    );
    assert!(
        env["clock"].as_str().unwrap().contains("not one clock"),
        "{env}"
    );
    // Each host's PTP state, read with pmc over its ssh: these hosts run no ptp4l, so their
    // clocks count as unsynchronised (the run takes no direct one-way delay anyway).
    assert_eq!(env["owd_clock"], "unsynchronised", "{env}");
    let clocks = env["clock_state"].as_str().unwrap();
    assert!(
        clocks.contains("front no ptp4l") && clocks.contains("rear no ptp4l"),
        "{clocks}"
    );
    for h in env["hosts"].as_array().unwrap() {
        assert_eq!(h["iface"], "eth0", "{h}");
        assert_eq!(h["mtu"], 1500, "{h}");
        assert!(h["cores"].as_u64().is_some_and(|c| c >= 1), "{h}");
        assert!(!h["kernel"].as_str().unwrap().is_empty(), "{h}");
    }
    let samples = std::fs::read_to_string(out.join("samples.csv")).unwrap();
    let header: Vec<&str> = samples.lines().next().unwrap().split(',').collect();
    let lost = header.iter().position(|h| *h == "lost").unwrap();
    let owd = header.iter().position(|h| *h == "owd_direct_ns").unwrap();
    let rows: Vec<Vec<&str>> = samples
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2 * 40 * 2);
    assert!(
        rows.iter().all(|r| r[lost] == "0" || r[lost] == "false"),
        "lost exchanges"
    );
    // Two hosts, two clocks: no direct one-way delay.
    assert!(
        rows.iter().all(|r| r[owd].is_empty()),
        "owd_direct across hosts"
    );
    let t = &hosts["experiments"]["throughput"][0];
    assert!(t["delivered"].as_u64().unwrap() > 0, "{t}");
    assert_eq!(t["per_sender"][0]["name"], "front", "{t}");
    // ivnsec was copied to each host (their PATH has none) and runs no more.
    for h in ["front", "rear"] {
        let copy = bench
            .dir
            .join(format!("ivnsec-{h}"))
            .join(env!("CARGO_PKG_VERSION"))
            .join("ivnsec");
        assert!(copy.exists(), "{}", copy.display());
    }
    assert_none_left(&bench.dir);

    // hosts check: both reachable as root, eth0 up at 1500, ivnsec there now.
    let o = bench.ivnsec(&d, &["hosts", "check", plan.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    let status = |host: usize, what: &str| {
        doc["hosts"][host]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"] == what)
            .map(|c| c["status"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no {what} in {doc}"))
    };
    for h in 0..2 {
        for what in ["ssh", "privilege", "interface", "link", "mtu", "ivnsec"] {
            assert_eq!(status(h, what), "ok", "{what}: {doc}");
        }
    }
    // No ptp4l runs on these hosts: PTP is a warning (the run works without it), read by pmc.
    for h in 0..2 {
        assert_eq!(status(h, "ptp"), "warn", "{doc}");
    }
    assert!(doc.to_string().contains("no ptp4l"), "{doc}");
    assert_eq!(doc["ready"], true, "{doc}");
    assert_eq!(o.status.code(), Some(0));
    let text_out = bench.ivnsec(&d, &["hosts", "check", plan.to_str().unwrap()]);
    assert!(text(&text_out.stdout).contains("every host is ready"));

    // The experiment commands take the same hosts: pingpong and throughput --hosts PLAN.
    let o = bench.ivnsec(
        &d,
        &[
            "pingpong",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "chacha20-poly1305",
            "--payload",
            "100",
            "--count",
            "30",
            "--replications",
            "1",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert_eq!(v["lost"], 0, "{v}");
    assert_eq!(v["count"], 30, "{v}");
    assert!(v["sections"]["owd_direct"].is_null(), "{v}");
    let o = bench.ivnsec(
        &d,
        &[
            "throughput",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "aes128-gcm",
            "--payload",
            "512",
            "--seconds",
            "1",
            "--no-baseline",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    let r = if v.is_array() { &v[0] } else { &v };
    assert!(r["delivered"].as_u64().unwrap() > 0, "{v}");
    assert!(r["transport"].as_str().unwrap().contains("over SSH"), "{v}");
    assert_none_left(&bench.dir);

    bench.close();
    assert!(
        d.leftover_testbeds().is_empty(),
        "{:?}",
        d.leftover_testbeds()
    );
}

/// The hosts' clocks are watched while a run across them goes on (every 5 s and at the end):
/// the report's environment holds per host the states seen, min/max |offset| and the samples.
/// On this one machine the "hosts" are namespaces sharing its clock and run no ptp4l, so pmc
/// finds none on either during the whole run: every sample says `no ptp4l`, no offset is
/// known, and the run's one-way delays are flagged as taken on unsynchronised clocks.
#[test]
fn clocks_watched_during_a_run_across_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-watch");
    let bench = Bench::up(&d);
    let plan = bench.hosts_plan(&d, "hosts.toml", "");
    let out = d.path("report");
    // About 6 s of exchanges (60 × 100 ms pauses): rounds at 0 s and 5 s, and one at the end.
    let o = bench.ivnsec(
        &d,
        &[
            "pingpong",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "aes128-gcm",
            "--payload",
            "64",
            "--count",
            "60",
            "--replications",
            "1",
            "--pause-ms",
            "100",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let env = &v["environment"];
    let w = &env["clock_during_run"];
    assert_eq!(w["interval_s"], 5.0, "{w}");
    let hosts = w["hosts"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(names, ["front", "rear"], "{w}");
    for h in hosts {
        assert!(h["samples"].as_u64().unwrap() >= 3, "{h}");
        assert_eq!(h["states_seen"], serde_json::json!(["no ptp4l"]), "{h}");
        assert_eq!(h["synchronised_throughout"], false, "{h}");
        assert!(h["max_abs_offset_ns"].is_null(), "{h}");
    }
    let samples = w["samples"].as_array().unwrap();
    let per_host: u64 = hosts.iter().map(|h| h["samples"].as_u64().unwrap()).sum();
    assert_eq!(samples.len() as u64, per_host);
    // The samples span the run: the first at its start, one 5 s on.
    assert!(
        samples.iter().any(|s| s["t_s"].as_f64().unwrap() >= 5.0),
        "{w}"
    );
    assert!(samples.iter().all(|s| s["state"] == "no ptp4l"), "{w}");
    assert_eq!(env["owd_clock"], "unsynchronised", "{env}");
    let state = env["clock_state"].as_str().unwrap();
    assert!(
        state.contains("during the run not synchronised: front (no ptp4l); rear (no ptp4l)"),
        "{state}"
    );
    // summary.md flags nothing directly measured here: across hosts there is no direct OWD.
    assert!(v["scenarios"][0]["sections"]["owd_direct"].is_null());
    assert_none_left(&bench.dir);
    bench.close();
}

/// Under load, playback and cameras judge one-way delays. Across hosts that all are this
/// machine (here: namespaces of it, each with its sshd; the same boot id) they share one clock
/// and run: the sensor / camera ECU on the first host, the consumer on the second, the delays
/// timed on CLOCK_REALTIME (what PTP disciplines; here the one system clock, so every delay
/// is positive and small). Their reports say so.
#[test]
fn one_way_experiments_across_hosts_of_this_machine() {
    require_sshd!();
    let d = TempDir::new("multihost-streams");
    let bench = Bench::up(&d);
    let hosts = format!(
        "{}{}",
        bench.host_table("front", ""),
        bench.host_table("rear", "")
    );
    std::fs::write(d.path("t.csv"), TIMELINE).unwrap();
    let plan = d.path("streams.toml");
    std::fs::write(&plan, format!("{STREAMS}{hosts}")).unwrap();
    let out = d.path("report");
    let o = bench.ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let e = &v["experiments"];
    let sane = |us: &Value, what: &str| {
        let x = us.as_f64().unwrap_or_else(|| panic!("{what}: {e}"));
        assert!(x > 0.0 && x < 1e6, "{what} = {x} µs: {e}");
    };
    for (table, sent) in [("underload", 100), ("playback", 10)] {
        let x = &e[table][0];
        let t = x["transport"].as_str().unwrap();
        assert!(t.contains("over SSH"), "{t}");
        assert!(
            t.contains("CLOCK_REALTIME") && t.contains("shared clock: front, rear"),
            "{t}"
        );
        let r = &x["runs"][0];
        assert_eq!(r["messages"]["sent"], sent, "{r}");
        assert!(r["messages"]["received"].as_u64().unwrap() > 0, "{r}");
        sane(&r["one_way"]["min_us"], "one-way min");
        sane(&r["one_way"]["max_us"], "one-way max");
    }
    let c = &e["camera"][0];
    assert!(
        c["clock"].as_str().unwrap().contains("CLOCK_REALTIME"),
        "{c}"
    );
    let r = &c["results"][0];
    assert!(r["frames_received"].as_u64().unwrap() > 0, "{r}");
    sane(&r["delay_us"]["min"], "camera delay min");
    sane(&r["delay_us"]["max"], "camera delay max");
    // The hosts' clocks were watched meanwhile.
    let w = &v["environment"]["clock_during_run"];
    assert_eq!(w["hosts"].as_array().unwrap().len(), 2, "{w}");

    // The commands take the same hosts.
    let o = bench.ivnsec(
        &d,
        &[
            "underload",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "macsec-gcm-aes-128",
            "--size",
            "3000",
            "--mps",
            "50",
            "--seconds",
            "1",
            "--no-baseline",
            "--json",
        ],
    );
    let u: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert!(matches!(o.status.code(), Some(0 | 1)), "{u}");
    assert_eq!(u["runs"][0]["messages"]["sent"], 50, "{u}");
    // The hosts' clocks were watched during the run: no ptp4l on either, but one machine's
    // clock, so nothing is flagged.
    let w = &u["clock_during_run"];
    assert!(
        w["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["samples"].as_u64().unwrap() >= 2),
        "{w}"
    );
    assert!(u.get("clock_flag").is_none(), "{u}");
    sane(&u["runs"][0]["one_way"]["p50_us"], "underload --hosts p50");
    let o = bench.ivnsec(
        &d,
        &[
            "camera",
            "--hosts",
            plan.to_str().unwrap(),
            "--cameras",
            "1",
            "--level",
            "auth",
            "--frame-bytes",
            "6000",
            "--seconds",
            "1",
            "--json",
        ],
    );
    let cam: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert!(cam["site"].as_str().unwrap().contains("over SSH"), "{cam}");
    assert_eq!(
        cam["clock_during_run"]["hosts"].as_array().unwrap().len(),
        2,
        "{cam}"
    );
    assert!(cam.get("clock_flag").is_none(), "{cam}");
    assert!(
        cam["results"][0]["frames_received"].as_u64().unwrap() > 0,
        "{cam}"
    );
    sane(&cam["results"][0]["delay_us"]["p50"], "camera --hosts p50");
    // Across hosts nothing is captured on this machine.
    let o = bench.ivnsec(
        &d,
        &[
            "underload",
            "--hosts",
            plan.to_str().unwrap(),
            "--pcap",
            d.path("x.pcap").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("tcpdump"), "{}", text(&o.stderr));
    assert_none_left(&bench.dir);
    bench.close();
}

/// `ivnsec tdma run --hosts` between two SSH hosts of this machine (one clock, so allowed):
/// ecu1 on front, ecu2 on rear, a small schedule in both directions for a few base periods
/// and the capacity steps: it completes, every slot has its send error and one-way delay on
/// CLOCK_REALTIME, the capacity stays within eq. 9's NF_max, the per-switch forwarding delay
/// (Table 6 "Diff") is marked not measured with the reason, the clocks were watched; nothing is
/// left running.
#[test]
fn tdma_run_across_ssh_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-tdma");
    let bench = Bench::up(&d);
    let plan = bench.hosts_plan(&d, "tdma-hosts.toml", "");
    let flows = d.path("flows.toml");
    std::fs::write(
        &flows,
        "[[flow]]\nname = \"steer\"\nfrom = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 100\n\
         [[flow]]\nname = \"brake\"\nfrom = \"ecu2\"\nto = \"ecu1\"\nframe_bytes = 100\n",
    )
    .unwrap();
    // A generous slot (BP 4 ms, 1 ms guard per switch): eq. 9 allows 3 frames per BP.
    let o = bench.ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--hosts",
            plan.to_str().unwrap(),
            "--flows",
            flows.to_str().unwrap(),
            "--bp",
            "4ms",
            "--gp",
            "1ms",
            "--profile",
            "hmac-sha1",
            "--periods",
            "20",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "exit {:?}, {e}: {}{}",
            o.status.code(),
            text(&o.stdout),
            text(&o.stderr)
        )
    });
    assert!(matches!(o.status.code(), Some(0 | 1)), "{v}");
    assert_eq!(o.status.code() == Some(0), v["schedule_met"] == true, "{v}");
    assert_eq!(v["hosts"]["ecu1"]["name"], "front", "{v}");
    assert_eq!(v["hosts"]["ecu2"]["name"], "rear", "{v}");
    assert!(v["testbed"].as_str().unwrap().contains("over SSH"), "{v}");
    let clock = v["clock"].as_str().unwrap();
    assert!(
        clock.contains("CLOCK_REALTIME") && clock.contains("shared clock: front, rear"),
        "{clock}"
    );
    let why = v["switch_diff_not_measured"].as_str().unwrap();
    assert!(why.contains("not measured across hosts"), "{why}");
    assert!(v["switch_diff_us"].as_array().unwrap().is_empty(), "{v}");
    assert!(v["first_hop_us"].is_null(), "{v}");
    let slots = v["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 2, "{v}");
    for s in slots {
        assert_eq!(s["sent"], 20, "{s}");
        assert!(s["arrived"].as_u64().unwrap() > 0, "{s}");
        assert!(s["switch_diff_us"].as_array().unwrap().is_empty(), "{s}");
        let owd = s["owd_us"]["p50"].as_f64().unwrap();
        assert!(owd > 0.0 && owd < 1e6, "one-way delay {owd} µs: {s}");
        let err = s["send_error_us"]["max"].as_f64().unwrap();
        assert!((0.0..1e6).contains(&err), "send error {err} µs: {s}");
    }
    let c = &v["capacity"];
    assert_eq!(c["nf_max"], 3, "{c}");
    assert!(c["nf_no_miss"].as_u64().unwrap() <= 3, "{c}");
    assert!(!c["steps"].as_array().unwrap().is_empty(), "{c}");
    assert_eq!(
        v["clock_during_run"]["hosts"].as_array().unwrap().len(),
        2,
        "{v}"
    );
    assert_none_left(&bench.dir);

    // The text output says the same.
    let o = bench.ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--hosts",
            plan.to_str().unwrap(),
            "--flows",
            flows.to_str().unwrap(),
            "--bp",
            "4ms",
            "--gp",
            "1ms",
            "--periods",
            "5",
            "--no-capacity",
        ],
    );
    let out = text(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{out}{}",
        text(&o.stderr)
    );
    assert!(out.contains("TDMA run on hosts over SSH"), "{out}");
    assert!(
        out.contains("switch forwarding delay (Table 6 Diff): not measured across hosts"),
        "{out}"
    );
    assert_none_left(&bench.dir);

    // A plan's [[tdma]] beside its [[host]] tables runs between the same hosts.
    let tdma_plan = d.path("tdma-plan.toml");
    std::fs::write(
        &tdma_plan,
        format!(
            "name = \"tdma-hosts\"\n[[tdma]]\nbp = \"4ms\"\ngp = \"1ms\"\n\
             profiles = [\"hmac-sha1\"]\nframes = [60]\nswitches = [1]\nperiods = 10\n{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let report = d.path("tdma-report");
    let o = bench.ivnsec(
        &d,
        &[
            "run",
            tdma_plan.to_str().unwrap(),
            "--out",
            report.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("summary.json")).unwrap())
            .unwrap();
    let t = &v["experiments"]["tdma"][0];
    assert!(t["not_measured"].is_null(), "{t}");
    let m = &t["measured"][0]["run"];
    assert_eq!(m["hosts"]["ecu1"]["name"], "front", "{m}");
    assert!(
        m["switch_diff_not_measured"]
            .as_str()
            .unwrap()
            .contains("not measured across hosts"),
        "{m}"
    );
    assert!(m["slots"][0]["arrived"].as_u64().unwrap() > 0, "{m}");
    assert_none_left(&bench.dir);
    bench.close();
}
