//! The experiments that build their own testbed, on `--topology bump2`: the legacy ECUs
//! exchange through two gateways the run starts, unchanged, and throughput reports the
//! gateways' CPU as roles. Each run builds a testbed of its own (random prefix, own state
//! directory) and removes it. The `--topology` options checked without root:
//! `cli/gateway_experiments.rs`.

use serde_json::Value;

use crate::common::{TempDir, ivnsec, text};

/// Ping-pong between the legacy ECUs through both gateways: every exchange completes (the
/// gateways are the only path between them).
#[test]
fn pingpong_runs_through_the_gateways() {
    require_root!();
    let d = TempDir::new("gwxpp");
    let o = ivnsec(
        &d,
        &[
            "pingpong",
            "--topology",
            "bump2",
            "--profile",
            "plain",
            "--payload",
            "64",
            "--count",
            "300",
            "--replications",
            "1",
            "--json",
        ],
    );
    // Exit 1 is the timing verdict (a worst case above the requirement while other tests
    // load the machine), not a failure of the path.
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?}: {}",
        o.status,
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["count"], 300, "{v}");
    assert_eq!(v["lost"], 0, "{v}");
    assert!(d.leftover_testbeds().is_empty());
}

/// Throughput from ecu1 to ecu2 through both gateways: frames arrive, and the gateways are
/// CPU roles (they carried every frame: no other path joins the legacy ECUs), the switch's
/// share what is left.
#[test]
fn throughput_runs_through_the_gateways_and_reports_their_cpu() {
    require_root!();
    let d = TempDir::new("gwxtp");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--topology",
            "bump2",
            "--profile",
            "plain",
            "--payload",
            "1000",
            "--seconds",
            "1",
            "--rate",
            "100M",
            "--no-baseline",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["transport"].as_str().unwrap().contains("(bump2)"), "{v}");
    assert!(v["goodput_mbps"].as_f64().unwrap() > 10.0, "{v}");
    let roles = v["cpu"]["roles"].as_array().unwrap();
    let names: Vec<&str> = roles.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["consumer", "ecu1", "pacing", "gw1", "gw2", "switch"],
        "{v}"
    );
    for gw in &roles[3..5] {
        assert!(gw["pct"].as_f64().unwrap() > 0.0, "{v}");
    }
    assert!(d.leftover_testbeds().is_empty());
}

/// A plan's `[[throughput]]` group with `topology = "bump2"` runs through the gateways and
/// fills seed 002's Bump-in-the-Wire rows beside the seed's figures.
#[test]
fn a_plan_throughput_group_on_bump2_fills_the_bump_in_the_wire_rows() {
    require_root!();
    let d = TempDir::new("gwxplan");
    let plan = d.path("bitw.toml");
    std::fs::write(
        &plan,
        "name = \"bitw\"\n[[throughput]]\ntopology = \"bump2\"\nprofiles = [\"plain\"]\n\
         payloads = [1440]\nrates = [\"100M\"]\nseconds = 1\nbaseline = false\n",
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
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let r = &v["experiments"]["throughput"][0];
    assert_eq!(r["gateways"], "bump2", "{r}");
    assert!(r["goodput_mbps"].as_f64().unwrap() > 10.0, "{r}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let row = md
        .lines()
        .find(|l| {
            l.contains("Bump-in-the-Wire (plain through two macsec-gcm-aes-128 gateways, bump2)")
                && l.contains("911.9")
        })
        .unwrap_or_else(|| panic!("no Bump-in-the-Wire throughput row: {md}"));
    // Our goodput in the row (one sender at 100 Mb/s: below the shaped link's rate).
    let ours = format!("{:.1}", r["goodput_mbps"].as_f64().unwrap());
    assert!(row.contains(&ours), "{row} lacks {ours}");
    assert!(d.leftover_testbeds().is_empty());
}

/// A plan's `[[underload]]` table with `topology = "bump2"` sends the lidar messages from one
/// legacy ECU to the other through the gateways and fills the Bump-in-the-Wire Under Load row
/// of seed 002's latency table (Table 6.7) beside the seed's figures.
#[test]
fn a_plan_underload_table_on_bump2_fills_the_bump_in_the_wire_latency_row() {
    require_root!();
    let d = TempDir::new("gwxul");
    let plan = d.path("bitw-ul.toml");
    std::fs::write(
        &plan,
        "name = \"bitw-ul\"\n[[underload]]\ntopology = \"bump2\"\nprofiles = [\"plain\"]\n\
         size = 24938\nmps = 100\nreply_every = 10\nseconds = 1\nbaseline = false\n",
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
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let r = &v["experiments"]["underload"][0];
    assert_eq!(r["gateways"], "bump2", "{r}");
    assert!(r["transport"].as_str().unwrap().contains("(bump2)"), "{r}");
    let run = &r["runs"][0];
    assert_eq!(run["profile"], "plain", "{r}");
    let p999 = run["one_way"]["p999_us"].as_f64().unwrap();
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    // Table 6.7's Under Load row: the seed's p90 1219 µs, ours beside it.
    let row = md
        .lines()
        .find(|l| {
            l.contains("Bump-in-the-Wire (") && l.contains("Under Load") && l.contains("1219")
        })
        .unwrap_or_else(|| panic!("no Bump-in-the-Wire under-load row: {md}"));
    assert!(!row.contains("no counterpart"), "{row}");
    assert!(row.contains(&format!("{p999:.1}")), "{row} lacks {p999:.1}");
    assert!(d.leftover_testbeds().is_empty());
}

/// Seed 002 testbench 2 (`bump`): the legacy sensor1 behind its gateway exchanges with a
/// MACsec consumer whose `ivnsec macsec up` the run starts with the gateway's key; the
/// consumer's experiment node runs unchanged on its TAP. Every exchange completes (the
/// gateway and the consumer's SecY are the only path between them).
#[test]
fn pingpong_runs_on_bump_through_the_gateway_and_the_macsec_consumer() {
    require_root!();
    let d = TempDir::new("gwxbpp");
    let o = ivnsec(
        &d,
        &[
            "pingpong",
            "--topology",
            "bump",
            "--profile",
            "plain",
            "--payload",
            "64",
            "--count",
            "300",
            "--replications",
            "1",
            "--json",
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?}: {}",
        o.status,
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["count"], 300, "{v}");
    assert_eq!(v["lost"], 0, "{v}");
    assert!(d.leftover_testbeds().is_empty());
}

/// Throughput from sensor1 through its gateway to the MACsec consumer: the frames arrive,
/// and the gateway and the consumer's `macsec up` are CPU roles (both carried every frame).
#[test]
fn throughput_on_bump_reports_the_gateway_and_the_consumer_macsec_cpu() {
    require_root!();
    let d = TempDir::new("gwxbtp");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--topology",
            "bump",
            "--profile",
            "plain",
            "--payload",
            "1000",
            "--seconds",
            "1",
            "--rate",
            "100M",
            "--no-baseline",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["transport"].as_str().unwrap().contains("(bump)"), "{v}");
    assert_eq!(v["gateways"], "bump", "{v}");
    assert!(v["goodput_mbps"].as_f64().unwrap() > 10.0, "{v}");
    let roles = v["cpu"]["roles"].as_array().unwrap();
    let names: Vec<&str> = roles.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "consumer",
            "sensor1",
            "pacing",
            "gw1",
            "consumer-macsec",
            "switch"
        ],
        "{v}"
    );
    for gw in &roles[3..5] {
        assert!(gw["pct"].as_f64().unwrap() > 0.0, "{v}");
    }
    assert!(d.leftover_testbeds().is_empty());
}

/// `ivnsec underload --topology bump`: the sensor's messages reach the MACsec consumer
/// through the gateway and the consumer's SecY, none lost, and the report says it ran
/// through gateways on `bump`. (Exit 1 is the p99.9 verdict on this shared machine.)
#[test]
fn underload_on_bump_runs_through_the_gateway_and_the_macsec_consumer() {
    require_root!();
    let d = TempDir::new("gwxbul");
    let o = ivnsec(
        &d,
        &[
            "underload",
            "--topology",
            "bump",
            "--profile",
            "plain",
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
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?}: {}",
        o.status,
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gateways"], "bump", "{v}");
    assert!(v["transport"].as_str().unwrap().contains("(bump)"), "{v}");
    let m = &v["runs"][0]["messages"];
    assert_eq!(m["sent"], 200, "{v}");
    assert_eq!(m["received"], m["sent"], "{v}");
    assert_eq!(m["lost"], 0, "{v}");
    // Every reply came back through the consumer's SecY and the gateway.
    let replies = &v["runs"][0]["replies"];
    assert_eq!(replies["sent"], 20, "{v}");
    assert_eq!(replies["received"], replies["sent"], "{v}");
    assert!(d.leftover_testbeds().is_empty());
}

/// `ivnsec playback --topology bump2`: every message of the timeline goes from ecu1 to ecu2
/// through both gateways.
#[test]
fn playback_on_bump2_runs_through_the_gateways() {
    require_root!();
    let d = TempDir::new("gwxbpb");
    let timeline = d.path("t.csv");
    let mut csv = String::from("# 100 messages, 5 ms apart, 1400 to 2900 bytes\n");
    for i in 0..100u32 {
        csv.push_str(&format!(
            "{:.3}, {}\n",
            0.005 * f64::from(i + 1),
            1400 + 15 * i
        ));
    }
    std::fs::write(&timeline, csv).unwrap();
    let o = ivnsec(
        &d,
        &[
            "playback",
            "--topology",
            "bump2",
            "--profile",
            "plain",
            "--timeline",
            timeline.to_str().unwrap(),
            "--reply-every",
            "10",
            "--no-baseline",
            "--json",
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{:?}: {}",
        o.status,
        text(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["gateways"], "bump2", "{v}");
    let m = &v["runs"][0]["messages"];
    assert_eq!(m["sent"], 100, "{v}");
    assert_eq!(m["received"], 100, "{v}");
    assert!(d.leftover_testbeds().is_empty());
}

/// `ivnsec camera --topology bump` (TCP) and `--topology bump2` (IVN-AE frames at layer 2):
/// every camera frame reaches the consumer through the gateway(s).
#[test]
fn camera_runs_on_bump_and_bump2() {
    require_root!();
    for (topology, transport) in [("bump", "tcp"), ("bump2", "l2")] {
        let d = TempDir::new("gwxbcam");
        let o = ivnsec(
            &d,
            &[
                "camera",
                "--topology",
                topology,
                "--transport",
                transport,
                "--cameras",
                "2",
                "--level",
                "nosec",
                "--seconds",
                "1",
                "--json",
            ],
        );
        // Exit 1: a frame past the 16 ms deadline on this shared machine, reported.
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{topology}: {:?}: {}",
            o.status,
            text(&o.stderr)
        );
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(
            v["site"]
                .as_str()
                .unwrap()
                .contains(&format!("({topology})")),
            "{v}"
        );
        let r = &v["results"][0];
        assert_eq!(r["frames_sent"], 120, "{topology}: {v}");
        assert_eq!(r["frames_received"], 120, "{topology}: {v}");
        assert_eq!(r["lost"], 0, "{topology}: {v}");
        assert!(d.leftover_testbeds().is_empty());
    }
}

/// A plan's `[[pingpong]]` and `[[playback]]` tables on `bump` run through the gateway and the
/// MACsec consumer and fill Table 6.7's Bump-in-the-Wire Ping Pong and Playback rows beside
/// the seed's figures (p90 1152 and 1233 µs), labelled with the topology they ran on.
#[test]
fn a_plan_on_bump_fills_the_ping_pong_and_playback_rows() {
    require_root!();
    let d = TempDir::new("gwxpb");
    let timeline = d.path("t.csv");
    let mut csv = String::new();
    for i in 1..=100u32 {
        csv.push_str(&format!("{:.3}, {}\n", 0.005 * f64::from(i), 3000 + 10 * i));
    }
    std::fs::write(&timeline, csv).unwrap();
    let plan = d.path("bitw-pp.toml");
    std::fs::write(
        &plan,
        "name = \"bitw-pp\"\n[run]\ncount = 200\nreplications = 1\n\
         [[pingpong]]\ntopology = \"bump\"\nprofiles = [\"plain\"]\npayloads = [64, 1400]\n\
         [[playback]]\ntopology = \"bump\"\nprofiles = [\"plain\"]\ntimeline = \"t.csv\"\n\
         reply_every = 10\nbaseline = false\n",
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
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let pp = v["experiments"]["pingpong"].as_array().unwrap();
    assert_eq!(pp.len(), 2, "{v}");
    for (r, payload) in pp.iter().zip([64, 1400]) {
        assert_eq!(r["topology"], "bump", "{r}");
        assert_eq!(r["payload"], payload, "{r}");
        assert_eq!(
            (r["count"].as_u64(), r["lost"].as_u64()),
            (Some(200), Some(0))
        );
    }
    let pb = &v["experiments"]["playback"][0];
    assert_eq!(pb["gateways"], "bump", "{pb}");
    assert_eq!(pb["runs"][0]["messages"]["received"], 100, "{pb}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let row = |test: &str, seed_p90: &str| {
        md.lines()
            .find(|l| l.contains("Bump-in-the-Wire (") && l.contains(test) && l.contains(seed_p90))
            .unwrap_or_else(|| panic!("no Bump-in-the-Wire {test} row: {md}"))
            .to_string()
    };
    // Ping Pong: our forward one-way p90 at the largest payload, 1400.
    let r = row("Ping Pong", "1152");
    assert!(r.contains("a MACsec consumer, bump"), "{r}");
    let p90 = pp[1]["owd_forward"]["p90_us"].as_f64().unwrap();
    assert!(r.contains(&format!("{p90:.1}")), "{r} lacks {p90:.1}");
    let r = row("Playback", "1233");
    assert!(!r.contains("no counterpart"), "{r}");
    let p90 = pb["runs"][0]["one_way"]["p90_us"].as_f64().unwrap();
    assert!(r.contains(&format!("{p90:.1}")), "{r} lacks {p90:.1}");
    // The scenarios' own table.
    assert!(
        md.contains("## Ping-pong through bump-in-the-wire gateways"),
        "{md}"
    );
    assert!(d.leftover_testbeds().is_empty());
}

/// A plan with `topology = "bump"` runs its ping-pong scenarios from the legacy sensor1 (the
/// default initiator there) through its gateway to the MACsec consumer: every exchange
/// completes, and nothing of the testbed, the gateway or the consumer's MACsec is left.
#[test]
fn a_plan_on_bump_runs_its_scenarios_from_the_legacy_sensor() {
    require_root!();
    let d = TempDir::new("gwxpl");
    let plan = d.path("bump.toml");
    std::fs::write(
        &plan,
        "name = \"bump\"\ntopology = \"bump\"\n[run]\ncount = 200\nreplications = 1\n\
         [[scenario]]\nprofile = \"plain\"\npayload = 1400\n",
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
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sc = &v["scenarios"][0];
    assert_eq!(
        (sc["count"].as_u64(), sc["lost"].as_u64()),
        (Some(200), Some(0)),
        "{sc}"
    );
    let transport = v["environment"]["transport"].as_str().unwrap();
    assert!(
        transport.contains("(bump)") && transport.contains("sensor1 → switch → consumer"),
        "{transport}"
    );
    assert!(d.leftover_testbeds().is_empty());
    let left: Vec<_> = std::fs::read_dir(d.state())
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.file_name())).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
