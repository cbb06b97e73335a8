use super::*;
use crate::throughput::CpuIncrease;
use crate::throughput::report::{
    THROUGHPUT_CSV, ThroughputVerdict, cpu_roles_table, throughput_csv, throughput_table,
};
use serde_json::json;

pub(crate) fn run(
    profile: &str,
    goodput: f64,
    plain: Option<f64>,
    cpu: Option<f64>,
) -> ThroughputResult {
    let mut r = ThroughputResult {
        profile: profile.parse().unwrap(),
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
    let v = ThroughputVerdict::of(&run("aes128-gcm", 960.0, Some(1000.0), Some(4.9)), &l);
    assert!((v.cost.unwrap() - 0.04).abs() < 1e-12);
    assert_eq!((v.cost_ok, v.cpu_ok), (Some(true), Some(true)));
    assert!(v.passed());
    let v = ThroughputVerdict::of(&run("aes128-gcm", 950.0, Some(1000.0), Some(1.0)), &l);
    assert_eq!(v.cost_ok, Some(false));
    assert!(!v.passed());
    let v = ThroughputVerdict::of(&run("aes128-gcm", 999.0, Some(1000.0), Some(5.0)), &l);
    assert_eq!((v.cost_ok, v.cpu_ok), (Some(true), Some(false)));
    // The rule is judged on the consumer (+4.9) as seed 002 did, not on the machine (+9.8).
    let v = ThroughputVerdict::of(&run("aes128-gcm", 999.0, Some(1000.0), Some(4.9)), &l);
    assert_eq!(v.cpu_increase_points, Some(4.9));
    assert_eq!(v.machine_cpu_increase_points, Some(9.8));
    assert_eq!(v.cpu_ok, Some(true));
    // Unshaped: the cost is shown, not judged.
    let mut r = run("aes128-gcm", 500.0, Some(1000.0), Some(30.0));
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
