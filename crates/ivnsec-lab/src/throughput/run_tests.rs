use super::*;
use crate::cpu::ProcessCpu;
use crate::throughput::result::{roles, with_gateways};
use crate::throughput::{RoleCpu, SenderResult};

/// Two cores, a 2 s window, the machine 80 % busy: the consumer used 0.8 s of CPU (20 %),
/// the sensors 0.4 s and 0.2 s (10 %, 5 %) protecting and sending and 0.2 s together
/// pacing (5 %); the switch is the rest, 40 %. Goodput 1.5 Gb/s (1.0 + 0.5): 20 / 1.5 =
/// 13.3 % per Gb/s for the consumer, 10 / 1.0 and 5 / 0.5 = 10 for the sensors.
/// Gateways on the path become roles before the switch, whose share shrinks by theirs
/// (never below 0): two cores, 1 s window, the switch's 40 % less 15 % and 5 %.
#[test]
fn gateways_are_roles_taken_out_of_the_switch() {
    let cpu = |ns: u64| ProcessCpu {
        user_ns: ns,
        sys_ns: 0,
        wall_ns: 1_000_000_000,
    };
    let mut roles = vec![
        RoleCpu::new("consumer", 20.0, 1.0),
        RoleCpu::new("switch", 40.0, 1.0),
    ];
    let gws = [
        ("gw1".to_string(), cpu(300_000_000)),
        ("gw2".to_string(), cpu(100_000_000)),
    ];
    with_gateways(&mut roles, &gws, 2, 1.0);
    let got: Vec<(&str, f64)> = roles.iter().map(|c| (c.role.as_str(), c.pct)).collect();
    assert_eq!(
        got,
        [
            ("consumer", 20.0),
            ("gw1", 15.0),
            ("gw2", 5.0),
            ("switch", 20.0)
        ]
    );
    let mut roles = vec![RoleCpu::new("switch", 10.0, 1.0)];
    with_gateways(&mut roles, &gws, 2, 1.0);
    assert_eq!(roles[2].pct, 0.0);
}

#[test]
fn cpu_by_role_adds_up_to_the_machine() {
    let window = 2_000_000_000;
    let cpu = |ns: u64| ProcessCpu {
        user_ns: ns / 2,
        sys_ns: ns / 2,
        wall_ns: window,
    };
    let mut r = ThroughputResult {
        goodput_mbps: 1500.0,
        per_sender: vec![
            SenderResult {
                name: "sensor1".into(),
                goodput_mbps: 1000.0,
                ..SenderResult::default()
            },
            SenderResult {
                name: "sensor2".into(),
                goodput_mbps: 500.0,
                ..SenderResult::default()
            },
        ],
        ..ThroughputResult::default()
    };
    r.cpu.cores = 2;
    r.cpu.system_pct = 80.0;
    r.cpu.sender_pacing_ns = 200_000_000;
    let by_role = roles(&r, cpu(800_000_000), &[cpu(400_000_000), cpu(200_000_000)]);
    let got: Vec<(&str, f64, f64)> = by_role
        .iter()
        .map(|c| (c.role.as_str(), c.pct, c.gbps))
        .collect();
    assert_eq!(
        got,
        [
            ("consumer", 20.0, 1.5),
            ("sensor1", 10.0, 1.0),
            ("sensor2", 5.0, 0.5),
            ("pacing", 5.0, 1.5),
            ("switch", 40.0, 1.5)
        ]
    );
    assert!((by_role[0].pct_per_gbps.unwrap() - 20.0 / 1.5).abs() < 1e-12);
    assert_eq!(by_role[1].pct_per_gbps, Some(10.0));
    assert_eq!(by_role[2].pct_per_gbps, Some(10.0));
    // Processes busier than the machine's sampled share: the switch is 0, never negative.
    r.cpu.system_pct = 15.0;
    assert_eq!(roles(&r, cpu(800_000_000), &[])[2].pct, 0.0);
    // Nothing delivered: no per-Gb/s figure.
    r.goodput_mbps = 0.0;
    assert_eq!(roles(&r, cpu(800_000_000), &[])[0].pct_per_gbps, None);
}

/// The theoretical maximum of our own frames, from the frame lengths the SAs produce, by
/// hand: IVN-AE = 26 + 2 + payload + tag, MACsec = 12 + 16 + 2 + payload + 16, ESP transport
/// = 14 + 20 + 8 + 8 (IV) + payload padded with the 2-byte trailer to 4 + 16; each + FCS 4 +
/// preamble 8 + IFG 12.
#[test]
fn theoretical_maxima_of_our_frames() {
    let g = 1_000_000_000;
    let p = ProviderChoice::Auto;
    let np = |s: &str| s.parse::<ivnsec_core::profile::NamedProfile>().unwrap();
    for (profile, payload, wire) in [
        ("plain", 1440, 26 + 2 + 1440 + 24),
        ("aes128-gcm", 1440, 26 + 2 + 1440 + 16 + 24),
        ("macsec-gcm-aes-128", 1440, 12 + 16 + 2 + 1440 + 16 + 24),
        ("esp-aes128-gcm", 1400, 14 + 20 + 16 + 1404 + 16 + 24),
    ] {
        let frame = check_fits(&np(profile), p, payload).unwrap();
        assert_eq!(wire_bytes(frame), wire, "{profile}");
        let t = theoretical_bps(payload, frame, g) / 1e6;
        assert!((t - payload as f64 / wire as f64 * 1000.0).abs() < 1e-9);
    }
    // aes128-gcm at 1440 bytes on 1000BASE-T1: 1440 / 1508 × 1000 = 954.9 Mb/s.
    let f = check_fits(&np("aes128-gcm"), p, 1440).unwrap();
    assert!((theoretical_bps(1440, f, g) / 1e6 - 954.91).abs() < 0.01);
    // Too big for the MTU, unknown profile (refused where it is parsed): usage errors.
    for e in [
        check_fits(&np("macsec-gcm-aes-128"), p, 1480).unwrap_err(),
        ivnsec_node::error::parse_profile("aes999-gcm").unwrap_err(),
    ] {
        assert_eq!(ivnsec_node::error::exit_code(&e), 2, "{e}");
    }
}

/// The settings plans and the command line share: accepted values become the run's
/// settings, bad ones are usage errors that name the option.
#[test]
fn settings_are_checked() {
    let p = ProviderChoice::Auto;
    let c = check_config(1440, 0.5, "100M", 3, 32, p).unwrap();
    assert_eq!(
        (c.payload, c.seconds_ns, c.rate_bps, c.senders, c.batch),
        (1440, 500_000_000, Some(100_000_000), 3, 32)
    );
    assert_eq!(
        check_config(64, 5.0, "unlimited", 1, 1, p)
            .unwrap()
            .rate_bps,
        None
    );
    check_config(1, 3600.0, "1G", MAX_SENDERS, ivnsec_net::sys::MAX_BATCH, p).unwrap();
    for (payload, seconds, rate, senders, batch, option) in [
        (64, 5.0, "unlimited", 0, 32, "--senders"),
        (64, 5.0, "unlimited", MAX_SENDERS + 1, 32, "--senders"),
        (64, 5.0, "unlimited", 1, 0, "--batch"),
        (
            64,
            5.0,
            "unlimited",
            1,
            ivnsec_net::sys::MAX_BATCH + 1,
            "--batch",
        ),
        (64, 0.0, "unlimited", 1, 32, "--seconds"),
        (64, 3600.5, "unlimited", 1, 32, "--seconds"),
        (64, f64::NAN, "unlimited", 1, 32, "--seconds"),
        (64, 5.0, "7X", 1, 32, "rate"),
        (0, 5.0, "unlimited", 1, 32, "--payload"),
    ] {
        let e = check_config(payload, seconds, rate, senders, batch, p).unwrap_err();
        assert_eq!(ivnsec_node::error::exit_code(&e), 2, "{e}");
        assert!(format!("{e}").contains(option), "{option}: {e}");
    }
    assert_eq!(c.rx_coalesce_us, DEFAULT_RX_COALESCE_US);
    assert_eq!(check_rx_coalesce(0).unwrap(), 0);
    assert_eq!(
        check_rx_coalesce(MAX_RX_COALESCE_US).unwrap(),
        MAX_RX_COALESCE_US
    );
    let e = check_rx_coalesce(MAX_RX_COALESCE_US + 1).unwrap_err();
    assert_eq!(ivnsec_node::error::exit_code(&e), 2, "{e}");
    assert!(format!("{e}").contains("--rx-coalesce-us"), "{e}");
    let l = layout(3);
    assert_eq!(l.topology, Topology::Sensors(3));
    assert_eq!(
        (l.initiator.as_str(), l.responder.as_str()),
        ("sensor1", "consumer")
    );
}

/// The figures of a real iperf3 3.12 UDP run (testdata/README.md says how it was made):
/// goodput is `end.sum_received.bits_per_second`, the rest as iperf3 printed them.
#[test]
fn iperf3_json_of_a_real_run() {
    let out = include_bytes!("testdata/iperf3-3.12-udp.json");
    let v = parse_iperf3(out, b"").unwrap();
    assert!((v["goodput_mbps"].as_f64().unwrap() - 2652.0901757683616).abs() < 1e-9);
    assert!((v["sent_mbps"].as_f64().unwrap() - 6280.66206598663).abs() < 1e-9);
    assert_eq!(v["packets"], 533420);
    assert_eq!(v["lost_packets"], 308168);
    let cpu = v["cpu_utilization_percent"]["host_total"].as_f64().unwrap();
    assert!((cpu - 60.206816737224614).abs() < 1e-12);
}

/// iperf3's own error (no server), output that is not JSON, JSON without the figures and a
/// cut-off report are errors that say what went wrong, never a panic.
#[test]
fn iperf3_failures_are_errors() {
    let refused = include_bytes!("testdata/iperf3-3.12-refused.json");
    let e = parse_iperf3(refused, b"").unwrap_err();
    assert_eq!(
        format!("{e}"),
        "iperf3: unable to connect to server: Connection refused"
    );
    let e = parse_iperf3(b"", b"iperf3: parameter error - bad bandwidth\n").unwrap_err();
    let m = format!("{e}");
    assert!(m.starts_with("iperf3 gave no JSON"), "{m}");
    assert!(
        m.ends_with("iperf3: parameter error - bad bandwidth"),
        "{m}"
    );
    let e = parse_iperf3(br#"{"end": {"sum_received": {}}}"#, b"").unwrap_err();
    assert!(
        format!("{e}").contains("end.sum_received.bits_per_second"),
        "{e}"
    );
    let real = include_bytes!("testdata/iperf3-3.12-udp.json");
    for cut in [1, real.len() / 2, real.len() - 2] {
        assert!(parse_iperf3(&real[..cut], b"").is_err(), "cut at {cut}");
    }
}

/// Our goodput over iperf3's per rate; no ratio where iperf3 delivered nothing.
#[test]
fn ratios_over_iperf3() {
    let mut v = json!({
        "unlimited": {"goodput_mbps": 800.0},
        "shaped": {"goodput_mbps": 0.0},
        "note": "kept",
    });
    let ours = ThroughputResult {
        goodput_mbps: 600.0,
        ..ThroughputResult::default()
    };
    with_ratios(&mut v, &ours);
    assert_eq!(v["unlimited"]["ours_mbps"], 600.0);
    assert_eq!(v["unlimited"]["ratio"], 0.75);
    assert_eq!(v["shaped"]["ratio"], Value::Null);
    assert_eq!(v["note"], "kept");
    // No CPU figures on either side: no cost figures, and no division by zero.
    assert_eq!(v["unlimited"]["cost_ratio"], Value::Null);
    assert_eq!(v["shaped"]["ns_per_byte"], Value::Null);
}

/// The CPU each side spent per payload byte. iperf3 on 2 cores: client 25 % and server
/// 25 % of the machine = 1 core busy for 8000 Mb/s = 1e9 B/s: 1 ns per byte. Ours: 0.6 +
/// 0.65 ns per byte, so the same CPU time would give 1 / 1.25 = 0.8 of iperf3's goodput.
#[test]
fn cpu_cost_over_iperf3() {
    assert_eq!(
        iperf3_ns_per_byte(Some(25.0), Some(25.0), 2, 8000.0),
        Some(1.0)
    );
    assert_eq!(iperf3_ns_per_byte(Some(25.0), None, 2, 8000.0), None);
    assert_eq!(iperf3_ns_per_byte(Some(25.0), Some(25.0), 2, 0.0), None);
    assert_eq!(iperf3_ns_per_byte(Some(25.0), Some(25.0), 0, 8000.0), None);

    let mut v = json!({
        "unlimited": {"goodput_mbps": 8000.0, "sender_pct": 25.0, "receiver_pct": 25.0},
        "shaped": {"goodput_mbps": 900.0},
    });
    let mut ours = ThroughputResult {
        goodput_mbps: 5000.0,
        ..ThroughputResult::default()
    };
    ours.cpu.cores = 2;
    ours.cpu.sender_ns_per_byte = Some(0.6);
    ours.cpu.receiver_ns_per_byte = Some(0.65);
    with_ratios(&mut v, &ours);
    let u = &v["unlimited"];
    assert_eq!(u["ratio"], 0.625);
    assert_eq!(u["ns_per_byte"], 1.0);
    assert_eq!(u["ours_ns_per_byte"], 1.25);
    assert_eq!(u["cost_ratio"], 0.8);
    // iperf3 without CPU figures: ours stays, no ratio of costs.
    assert_eq!(v["shaped"]["ours_ns_per_byte"], 1.25);
    assert_eq!(v["shaped"]["cost_ratio"], Value::Null);
}
