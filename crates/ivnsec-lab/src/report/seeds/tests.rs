//! The comparisons with seeds 002 and 003 from a report's runs.

use super::sections as seed_sections;
use super::seed002;
use crate::gateway_pingpong::GatewayPingPong;
use crate::gateway_pingpong::report::gateway_pingpong_table;
use crate::pingpong::Requirements;
use crate::report::Experiments;
use crate::report::experiments::tests::run;
use crate::throughput::ThroughputResult;
use crate::throughput::report::throughput_rows;
use crate::underload::UnderloadReport;
use serde_json::json;

fn report_of(runs: Vec<ThroughputResult>) -> crate::report::Report {
    crate::report::Report {
        environment: serde_json::Map::new(),
        requirements: Requirements::default(),
        scenarios: Vec::new(),
        baseline_sockperf: None,
        experiments: Experiments {
            throughput: runs,
            ..Experiments::default()
        },
    }
}

/// A `plain` run through the gateways of a `bump2` group fills the Bump-in-the-Wire rows
/// (one sender: its own goodput), and is never taken for the baseline.
#[test]
fn a_run_through_gateways_is_the_bump_in_the_wire_row() {
    let mut plain = run("plain", 2700.0, None, None);
    plain.theoretical_mbps = Some(2800.0);
    plain.cpu.system_pct = 20.0;
    let mut bitw = run("plain", 912.0, None, None);
    bitw.senders = 1;
    bitw.theoretical_mbps = Some(950.0);
    bitw.cpu.system_pct = 35.0;
    bitw.gateways = Some("bump2".into());
    // Listed first, it still does not stand for the baseline.
    let summary = report_of(vec![bitw, plain]).summary();
    let secs = seed_sections(&summary);
    let t = &secs
        .iter()
        .find(|s| s.title.contains("seed 002: throughput"))
        .unwrap()
        .table;
    assert_eq!(t.rows[0][5], "900.0");
    let r = &t.rows[3];
    assert_eq!(r[0], format!("Bump-in-the-Wire ({})", seed002::BITW_OURS));
    assert_eq!(r[5], "912.0");
    assert_eq!(r[6], "950.0");
    // Loss against our baseline per sensor link: 1 − 912 / 900 < 0.
    assert_eq!(r[8], "-1.3 %");
    let c = &secs.iter().find(|s| s.title.contains("CPU")).unwrap().table;
    assert_eq!(c.rows[3][3], "35.00 %");
    assert_eq!(c.rows[3][4], "15.00 %");
    // Without such a run the row keeps saying so.
    let summary = report_of(vec![run("plain", 2700.0, None, None)]).summary();
    let secs = seed_sections(&summary);
    let t = &secs[1].table;
    assert_eq!(t.rows[3][0], "Bump-in-the-Wire (no counterpart)");
    assert_eq!(t.rows[3][5], "—");
}

/// Ping-pong, under-load and playback runs through the gateways of `bump` fill the
/// Bump-in-the-Wire rows of Table 6.7 (ping-pong: our largest `plain` payload, as for the
/// other configurations), each labelled with the topology it ran on; runs through gateways
/// never stand for the Baseline rows; the plan's `[[pingpong]]` scenarios get a table.
#[test]
fn runs_through_gateways_fill_table_6_7() {
    use crate::gateway_pingpong::Percentiles;
    use crate::underload::ProfileRun;
    let pp = |payload: usize, p90: f64| GatewayPingPong {
        topology: "bump".into(),
        initiator: "sensor1".into(),
        responder: "consumer".into(),
        profile: "plain".parse().unwrap(),
        payload,
        count: 1000,
        owd_forward: Some(Percentiles {
            count: 1000,
            p50_us: p90 - 10.0,
            p90_us: p90,
            p99_us: p90 + 10.0,
            p999_us: p90 + 20.0,
            max_us: p90 + 30.0,
        }),
        ..GatewayPingPong::default()
    };
    let stream = |experiment: &str, gateways: Option<&str>, base_ns: u64| {
        let mut run = ProfileRun {
            profile: "plain".parse().unwrap(),
            seconds: 1.0,
            ..ProfileRun::default()
        };
        run.messages.sent = 1000;
        let ow: Vec<u64> = (0..1000).map(|i| base_ns + i * 1000).collect();
        run.derive(&ow, &[], 2000.0);
        UnderloadReport {
            experiment: experiment.into(),
            transport: String::new(),
            settings: serde_json::Value::Null,
            runs: vec![run],
            baseline: serde_json::Map::new(),
            passed: true,
            gateways: gateways.map(str::to_string),
            clock_during_run: None,
            clock_flag: None,
        }
    };
    let mut report = report_of(Vec::new());
    report.experiments.pingpong = vec![pp(1400, 300.0), pp(64, 200.0)];
    report.experiments.playback = vec![
        stream("playback", None, 100_000),
        stream("playback", Some("bump"), 1_000_000),
    ];
    report.experiments.underload = vec![stream("underload", Some("bump2"), 2_000_000)];
    let summary = report.summary();
    let secs = seed_sections(&summary);
    let t = &secs
        .iter()
        .find(|s| s.title.contains("seed 002: latency"))
        .unwrap()
        .table;
    let row = |config: &str, test: seed002::Test| {
        t.rows
            .iter()
            .find(|r| r[0].starts_with(config) && r[1] == test.name())
            .unwrap()
            .clone()
    };
    let bump = format!("Bump-in-the-Wire ({})", seed002::BITW_OURS_BUMP);
    let r = row("Bump-in-the-Wire", seed002::Test::PingPong);
    assert_eq!(r[0], bump);
    // The 1400-byte scenario, not the 64-byte one.
    assert_eq!(&r[5..8], ["300.0", "310.0", "320.0"]);
    let r = row("Bump-in-the-Wire", seed002::Test::Playback);
    assert_eq!(r[0], bump);
    // One-way delays 1000 … 1999 µs: p90 ≈ 1899.1.
    assert_eq!(r[5], "1899.1");
    let r = row("Bump-in-the-Wire", seed002::Test::UnderLoad);
    assert_eq!(r[0], format!("Bump-in-the-Wire ({})", seed002::BITW_OURS));
    assert_eq!(r[5], "2899.1");
    // The baseline's playback row is the run without gateways (100 … 1099 µs).
    let r = row("Baseline", seed002::Test::Playback);
    assert_eq!(r[5], "999.1");
    // A throughput group on bump: the Table 6.8 and CPU rows say so too.
    let mut bitw = run("plain", 900.0, None, None);
    bitw.senders = 1;
    bitw.theoretical_mbps = Some(950.0);
    bitw.gateways = Some("bump".into());
    let mut with_tp = report.clone();
    with_tp.experiments.throughput = vec![bitw];
    let secs = seed_sections(&with_tp.summary());
    for title in ["seed 002: throughput", "CPU"] {
        let t = &secs.iter().find(|s| s.title.contains(title)).unwrap().table;
        assert_eq!(t.rows[3][0], bump, "{title}");
    }
    let g = gateway_pingpong_table(&report.experiments.pingpong);
    assert_eq!(g.rows.len(), 2);
    assert_eq!(
        g.rows[0][..4],
        ["bump", "sensor1 → consumer", "plain", "1400"]
    );
    assert_eq!(g.rows[0][7], "300.0");
}

#[test]
fn seed_sections_put_our_runs_beside_the_seeds() {
    // Nothing that maps to a seed configuration: no section.
    let none = report_of(vec![run("hmac-sha1", 900.0, Some(1000.0), None)]).summary();
    assert!(seed_sections(&none).is_empty());

    // Three senders: the seed's figures are per sensor link, ours are divided by three.
    let mut plain = run("plain", 2700.0, None, None);
    plain.theoretical_mbps = Some(2800.0);
    plain.cpu.system_pct = 20.0;
    let mut esp = run("esp-null-hmac-sha256", 2600.0, Some(2700.0), Some(3.0));
    esp.theoretical_mbps = Some(2750.0);
    esp.cpu.system_pct = 23.0;
    let summary = report_of(vec![plain, esp]).summary();
    let secs = seed_sections(&summary);
    let titles: Vec<&str> = secs.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(titles.len(), 3, "{titles:?}");
    assert!(titles[1].contains("throughput"));
    // Throughput rows: Baseline, IPsec, MACsec, bump-in-the-wire; ours in columns 5–8.
    let t = &secs[1].table;
    assert_eq!(t.rows[0][5], "900.0");
    assert_eq!(t.rows[1][5], "866.7");
    assert_eq!(t.rows[1][6], "916.7");
    // Loss of IPsec against our plain: 1 − 2600 / 2700 = 3.7 %.
    assert_eq!(t.rows[1][8], "3.7 %");
    // MACsec was not measured.
    assert_eq!(t.rows[2][5], "—");
    // CPU: ours 23 % against our plain 20 %: +3 points.
    let c = &secs[2].table;
    assert_eq!(c.rows[1][3], "23.00 %");
    assert_eq!(c.rows[1][4], "3.00 %");

    // Seed 003: runs of its suites at a level give the claims' ratios.
    let a = run("aes128-gcm/auth", 850.0, Some(1000.0), None);
    let cf = run("aes128-gcm/conf", 750.0, Some(1000.0), None);
    let p = run("plain", 1000.0, None, None);
    let summary = report_of(vec![p, a, cf]).summary();
    let secs = seed_sections(&summary);
    let s3 = secs.iter().find(|s| s.title.contains("003")).unwrap();
    let auth_row = s3
        .table
        .rows
        .iter()
        .find(|r| r[2].contains("15"))
        .expect("the authentication drop claim");
    // 1 − 850 / 1000 = 15.0 %.
    assert_eq!(auth_row[3], "15.0 %", "{auth_row:?}");
    assert!(s3.note.contains("TCP statements (64 kB) are not measured"));
}

/// Seed 003's TCP statements from runs over TCP: our SOME/IP runs beside iperf3 TCP of the
/// same run (its shaped figure, as the runs are shaped), CPU the machine's share of each;
/// the UDP statements keep to the UDP runs.
#[test]
fn seed_003_tcp_statements_from_tcp_runs() {
    let tcp = |profile: &str, mbps: f64, cpu: f64| {
        let mut r = run(profile, mbps, None, None);
        r.payload = 65_536;
        r.tcp = true;
        r.senders = 1;
        r.cpu.system_pct = cpu;
        r.baseline.insert(
            "iperf3".into(),
            json!({
                "transport": "tcp",
                "shaped": { "goodput_mbps": 940.0, "system_pct": 10.0 },
                "unlimited": { "goodput_mbps": 9000.0, "system_pct": 99.0 },
            }),
        );
        r
    };
    let udp = run("someip-nosec", 500.0, None, None);
    let summary = report_of(vec![
        udp,
        tcp("someip-nosec", 800.0, 40.0),
        tcp("someip-aes128-gcm/conf", 600.0, 50.0),
    ])
    .summary();
    let secs = seed_sections(&summary);
    let s3 = secs.iter().find(|s| s.title.contains("003")).unwrap();
    let row = |what: &str| {
        s3.table
            .rows
            .iter()
            .find(|r| r[0] == what)
            .unwrap_or_else(|| panic!("no row {what}"))
            .clone()
    };
    // 940 / 800.
    assert_eq!(
        row("TCP: iperf3 / SOME/IP no security, throughput")[3],
        "× 1.18"
    );
    // 40 / 10 (the seed: a fourfold drop with iperf3).
    assert_eq!(row("TCP: SOME/IP no security / iperf3, CPU")[3], "× 4.00");
    // 1 − 600 / 800.
    assert_eq!(
        row("TCP: confidentiality slower than no security")[3],
        "25.0 %"
    );
    // The UDP rows do not take TCP runs: no UDP confidentiality run.
    assert_eq!(row("UDP: confidentiality slower than no security")[3], "—");
    assert!(s3.note.contains("transport = \"tcp\""), "{}", s3.note);
    let r = report_of(vec![tcp("someip-nosec", 800.0, 40.0)]);
    let names = throughput_rows(&r.experiments.throughput, &Requirements::default());
    assert_eq!(names[0].name, "someip-nosec@65536 1 Gb/s ×1 over TCP");
}
