use super::*;
use crate::gateway_pingpong::report::gateway_pingpong_table;
use crate::throughput::CpuIncrease;
use crate::throughput::report::{
    THROUGHPUT_CSV, ThroughputVerdict, cpu_roles_table, throughput_csv, throughput_rows,
    throughput_table,
};
use serde_json::json;

fn run(profile: &str, goodput: f64, plain: Option<f64>, cpu: Option<f64>) -> ThroughputResult {
    let mut r = ThroughputResult {
        profile: profile.into(),
        payload: 1400,
        frame_bytes: 1400 + 58,
        senders: 3,
        rate_bps: Some(1_000_000_000),
        goodput_mbps: goodput,
        ..ThroughputResult::default()
    };
    if let Some(p) = plain {
        r.baseline
            .insert("plain".into(), json!({ "goodput_mbps": p }));
    }
    // The consumer's increase is `c`; the machine's, with every role on it, twice that.
    r.cpu.increase_over_plain = cpu.map(|c| CpuIncrease {
        receiver_pct: c,
        system_pct: 2.0 * c,
        within_5pct: 2.0 * c < 5.0,
        consumer_within_5pct: c < 5.0,
        ..CpuIncrease::default()
    });
    r
}

#[test]
fn verdicts_follow_the_5_percent_rules() {
    let l = Requirements::default();
    // 4 % cost and +4.9 points pass; 5 % cost fails (the rule is strict: < 5 %).
    let v = ThroughputVerdict::of(&run("a", 960.0, Some(1000.0), Some(4.9)), &l);
    assert!((v.cost.unwrap() - 0.04).abs() < 1e-12);
    assert_eq!((v.cost_ok, v.cpu_ok), (Some(true), Some(true)));
    assert!(v.passed());
    let v = ThroughputVerdict::of(&run("a", 950.0, Some(1000.0), Some(1.0)), &l);
    assert_eq!(v.cost_ok, Some(false));
    assert!(!v.passed());
    let v = ThroughputVerdict::of(&run("a", 999.0, Some(1000.0), Some(5.0)), &l);
    assert_eq!((v.cost_ok, v.cpu_ok), (Some(true), Some(false)));
    // The rule is judged on the consumer (+4.9) as seed 002 did, not on the machine (+9.8).
    let v = ThroughputVerdict::of(&run("a", 999.0, Some(1000.0), Some(4.9)), &l);
    assert_eq!(v.cpu_increase_points, Some(4.9));
    assert_eq!(v.machine_cpu_increase_points, Some(9.8));
    assert_eq!(v.cpu_ok, Some(true));
    // Unshaped: the cost is shown, not judged.
    let mut r = run("a", 500.0, Some(1000.0), Some(30.0));
    r.rate_bps = None;
    let v = ThroughputVerdict::of(&r, &l);
    assert_eq!((v.cost, v.cost_ok, v.cpu_ok), (Some(0.5), None, None));
    // Without a same-run plain figure nothing is judged and nothing fails.
    let v = ThroughputVerdict::of(&run("plain", 990.0, None, None), &l);
    assert_eq!((v.cost, v.cost_ok, v.cpu_ok), (None, None, None));
    assert!(v.passed());
}

#[test]
fn table_csv_and_json_carry_every_run() {
    let e = Experiments {
        throughput: vec![
            run("plain", 1000.0, None, None),
            run("macsec-gcm-aes-128", 900.0, Some(1000.0), Some(7.0)),
        ],
        ..Experiments::default()
    };
    let l = Requirements::default();
    let t = throughput_table(&e.throughput, &l);
    assert_eq!(t.rows.len(), 2);
    assert_eq!(t.rows[0].len(), t.head.len());
    assert_eq!(t.rows[1][0], "macsec-gcm-aes-128@1400 1 Gb/s ×3");
    assert_eq!(t.rows[1][7], "10.00 %");
    // Machine +14.0 points, consumer +7.0: the verdict is the consumer's.
    assert_eq!(&t.rows[1][10..13], ["+14.0", "0.0", "+7.0"]);
    assert_eq!(&t.rows[1][15..], ["FAIL", "FAIL"]);
    assert_eq!(&t.rows[0][15..], ["–", "–"]);
    assert!(t.head[16].contains("consumer"), "{:?}", t.head);
    let dir = std::env::temp_dir().join(format!("ivnsec-exp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(THROUGHPUT_CSV);
    std::fs::write(&p, throughput_csv(&e.throughput)).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3);
    let cols = lines[0].split(',').count();
    assert!(lines.iter().all(|l| l.split(',').count() == cols));
    assert!(lines[2].starts_with("macsec-gcm-aes-128,1400,"));
    let back: Experiments = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
    assert_eq!(back, e);
}

/// Each role of a run is a row beside the machine's, with its increase over the same role
/// in the plain run; only the consumer is judged.
#[test]
fn cpu_roles_table_judges_the_consumer_only() {
    use crate::throughput::RoleCpu;
    let mut plain = run("plain", 2900.0, None, None);
    plain.cpu.roles = vec![
        RoleCpu::new("consumer", 10.0, 2.9),
        RoleCpu::new("sensor1", 8.0, 0.97),
        RoleCpu::new("switch", 30.0, 2.9),
    ];
    let mut esp = run("esp-null-hmac-sha256", 2800.0, Some(2900.0), Some(4.0));
    esp.cpu.roles = vec![
        RoleCpu::new("consumer", 14.0, 2.8),
        RoleCpu::new("sensor1", 12.5, 0.93),
        RoleCpu::new("switch", 31.0, 2.8),
    ];
    esp.cpu.system_pct = 57.5;
    esp.cpu.system_pct_per_gbps = Some(57.5 / 2.8);
    esp.baseline.insert(
        "plain".into(),
        json!({ "goodput_mbps": 2900.0, "cpu": plain.cpu }),
    );
    let e = Experiments {
        throughput: vec![esp],
        ..Experiments::default()
    };
    let t = cpu_roles_table(&e.throughput, &Requirements::default());
    assert_eq!(t.rows.len(), 4);
    assert!(t.head[6].contains("consumer"), "{:?}", t.head);
    let name = "esp-null-hmac-sha256@1400 1 Gb/s ×3";
    assert_eq!(
        t.rows[0],
        [name, "consumer", "14.0", "2.80", "5.0", "+4.0", "PASS"]
    );
    assert_eq!(
        t.rows[1],
        [
            name,
            "sensor1",
            "12.5",
            "0.93",
            "13.4",
            "+4.5",
            "not judged"
        ]
    );
    assert_eq!(t.rows[2][5], "+1.0");
    assert_eq!(
        t.rows[3],
        [
            name,
            "machine (all roles)",
            "57.5",
            "2.80",
            "20.5",
            "+8.0",
            "not judged"
        ]
    );
    // Runs written before roles existed have no rows.
    let old = Experiments {
        throughput: vec![run("plain", 1.0, None, None)],
        ..Experiments::default()
    };
    assert!(
        cpu_roles_table(&old.throughput, &Requirements::default())
            .rows
            .is_empty()
    );
}

fn report_of(runs: Vec<ThroughputResult>) -> super::super::Report {
    super::super::Report {
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
        profile: "plain".into(),
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
            profile: "plain".into(),
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
