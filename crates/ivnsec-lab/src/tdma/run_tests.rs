use super::*;
use crate::tdma::flows::Flow;
use crate::tdma::schedule::{Params, build};
use ivnsec_node::error::exit_code;

fn flow(name: &str, from: &str, to: &str, bytes: u32, profile: Option<&str>) -> Flow {
    Flow {
        name: name.into(),
        from: from.into(),
        to: to.into(),
        frame_bytes: bytes,
        period: 1,
        profile: profile.map(|p| p.parse().unwrap()),
        payload: None,
    }
}

fn schedule(flows: Vec<Flow>) -> Schedule {
    let p = Params {
        bp_ns: 1_000_000,
        gp_ns: 100_000,
        rate_bps: 100_000_000,
    };
    build("f", &p, "cascade:2", flows).unwrap().unwrap()
}

#[test]
fn one_profile_per_run() {
    let np = |s: &str| s.parse::<ivnsec_core::profile::NamedProfile>().unwrap();
    let none = schedule(vec![flow("a", "ecu1", "ecu2", 125, None)]);
    assert_eq!(run_profile(&none, None).unwrap(), "plain");
    assert_eq!(
        run_profile(&none, Some(&np("hmac-sha1")))
            .unwrap()
            .profile(),
        "hmac-sha1".parse().unwrap()
    );
    let named = schedule(vec![
        flow("a", "ecu1", "ecu2", 125, Some("hmac-sha1")),
        flow("b", "ecu2", "ecu1", 125, None),
    ]);
    assert_eq!(run_profile(&named, None).unwrap(), "hmac-sha1");
    // The same profile spelled differently is the same profile.
    run_profile(&named, Some(&np("hmac-sha1"))).unwrap();
    let e = run_profile(&named, Some(&np("aes128-gcm"))).unwrap_err();
    assert_eq!(exit_code(&e), 2);
    assert!(
        e.to_string().contains(
            "flow `a` names profile `hmac-sha1` but the run protects every flow with `aes128-gcm`"
        ),
        "{e}"
    );
    let two = schedule(vec![
        flow("a", "ecu1", "ecu2", 125, Some("hmac-sha1")),
        flow("b", "ecu2", "ecu1", 125, Some("hmac-sha256")),
    ]);
    assert!(run_profile(&two, None).is_err());
    // An unknown --profile is refused where it is parsed, at the command line.
    assert_eq!(
        exit_code(&ivnsec_node::error::parse_profile("nope").unwrap_err()),
        2
    );
    // An unknown profile in a flow never reaches the run: the flows file and the schedule
    // file refuse it where they are read (flows::tests, schedule::tests).
}

/// Payloads from frame sizes, by the layouts of docs/wire-ivnae.md §1 and RFC 4303/4106.
#[test]
fn payloads_fill_the_frame_exactly() {
    let p =
        |s: &Schedule, profile: &str| payloads(s, profile.parse().unwrap(), ProviderChoice::Auto);
    // IVN-AE plain: 26 header bytes + 2 (inner EtherType) + payload.
    let s = schedule(vec![flow("a", "ecu1", "ecu2", 60, None)]);
    assert_eq!(p(&s, "plain").unwrap(), [32]);
    // HMAC-SHA1 adds a 20-byte tag: 60 − 48 = 12.
    assert_eq!(p(&s, "hmac-sha1").unwrap(), [12]);
    // A 50-byte frame cannot carry the 8-byte flow header under HMAC-SHA1 (smallest 56).
    let small = schedule(vec![flow("a", "ecu1", "ecu2", 50, None)]);
    let e = p(&small, "hmac-sha1").unwrap_err();
    assert_eq!(exit_code(&e), 2);
    assert!(
        e.to_string().contains("the smallest frame is 56 bytes"),
        "{e}"
    );
    // ESP AES-GCM (RFC 4106) in transport mode: Ethernet 14 + IPv4 20 + SPI 4 + sequence 4 +
    // IV 8 + (payload + 2 trailer bytes, padded to 4) + ICV 16 = 66 + pad4(payload + 2).
    // 78 = 66 + 12: payloads 9 and 10 (largest taken); 80 is no such frame.
    let esp = schedule(vec![flow("a", "ecu1", "ecu2", 78, None)]);
    assert_eq!(p(&esp, "esp-aes128-gcm").unwrap(), [10]);
    let gap = schedule(vec![flow("a", "ecu1", "ecu2", 80, None)]);
    let e = p(&gap, "esp-aes128-gcm").unwrap_err();
    assert!(
        e.to_string().contains("use a frame size of 78 or 82 bytes"),
        "{e}"
    );
    // A flow's own payload is kept when its frame is the flow's size.
    let mut own = schedule(vec![flow("a", "ecu1", "ecu2", 78, None)]);
    own.flows[0].payload = Some(9);
    assert_eq!(p(&own, "esp-aes128-gcm").unwrap(), [9]);
}

/// The join of sender, receiver and probe reports, worked by hand: BP 1 ms, cascade:2, flow
/// a (ecu1 → ecu2) in a 210 µs slot at 0, flow b (ecu2 → ecu1) in a 210 µs slot at 210 µs.
#[test]
fn reports_join_into_slot_figures() {
    let s = schedule(vec![
        flow("a", "ecu1", "ecu2", 125, None),
        flow("b", "ecu2", "ecu1", 125, None),
    ]);
    let slots: Vec<RunSlot> = s
        .slots
        .iter()
        .map(|x| RunSlot {
            from: usize::from(x.from != "ecu1"),
            offset_ns: x.offset_ns,
            length_ns: x.length_ns,
            period: 1,
            phase: 0,
            payload: 40,
        })
        .collect();
    assert_eq!((slots[1].offset_ns, slots[1].length_ns), (210_000, 210_000));
    let off: i128 = 5_000_000_000;
    let rt = |mono: u64| (i128::from(mono) + off) as u64;
    let mut raw = Raw::default();
    // a#0: slot at 1 ms, sent 0.5 µs late, through sw0 (4.5 µs after the send call), sw1
    // (7 µs later), ecu2's interface (8 µs later), taken 80 µs after that: 100 µs after the
    // slot start, inside its 210 µs.
    raw.sent.push(Sent {
        flow: 0,
        seq: 0,
        sched: 1_000_000,
        send: 1_000_500,
        hash: 11,
    });
    raw.arrived.insert((0, 0), 1_100_000);
    raw.probed.insert(
        11,
        vec![
            ("sw1".into(), rt(1_012_000)),
            ("sw0".into(), rt(1_005_000)),
            ("ecu2".into(), rt(1_020_000)),
        ],
    );
    // a#1: sent 2 µs late, arrives 300 µs after its slot start: a miss.
    raw.sent.push(Sent {
        flow: 0,
        seq: 1,
        sched: 2_000_000,
        send: 2_002_000,
        hash: 12,
    });
    raw.arrived.insert((0, 1), 2_300_000);
    // b#0: never arrives.
    raw.sent.push(Sent {
        flow: 1,
        seq: 0,
        sched: 1_210_000,
        send: 1_210_100,
        hash: 13,
    });
    let cfg = RunConfig {
        schedule: s,
        profile: "plain".parse().unwrap(),
        provider: ProviderChoice::Auto,
        periods: 2,
        capacity: false,
        pcap: None,
    };
    let r = analyse(
        &cfg,
        "ivn-000000",
        &Topology::Cascade(2),
        &slots,
        &[40, 40],
        &raw,
        off,
    );
    let a = &r.slots[0];
    assert_eq!((a.sent, a.arrived, a.lost, a.misses), (2, 2, 0, 1));
    let e = a.send_error_us.as_ref().unwrap();
    assert_eq!((e.count, e.p50, e.max), (2, 1.25, 2.0));
    let o = a.owd_us.as_ref().unwrap();
    assert_eq!((o.p50, o.max), ((99.5 + 298.0) / 2.0, 298.0));
    let d: Vec<(&str, usize, f64)> = a
        .switch_diff_us
        .iter()
        .map(|d| (d.switch.as_str(), d.us.count, d.us.mean))
        .collect();
    assert_eq!(d, [("sw0", 1, 7.0), ("sw1", 1, 8.0)]);
    let b = &r.slots[1];
    assert_eq!((b.sent, b.arrived, b.lost, b.misses), (1, 0, 1, 0));
    assert!(b.owd_us.is_none() && b.switch_diff_us.is_empty());
    assert_eq!((r.sent, r.arrived, r.lost, r.misses), (3, 2, 1, 1));
    assert!(!r.schedule_met);
    assert_eq!(r.first_hop_us.as_ref().unwrap().mean, 4.5);
    assert_eq!(r.last_hop_us.as_ref().unwrap().mean, 80.0);
    assert_eq!(r.max_tt_us, Some(300.0));
    assert_eq!(r.nf_max_tt, Some(3), "⌊1000 / 300⌋");
    assert_eq!(r.switch_diff_us.len(), 2);
    let t = r.to_text();
    assert!(
        t.contains("total: 3 sent, 2 arrived, 1 lost, 1 deadline misses"),
        "{t}"
    );
    assert!(
        t.contains("schedule met (every frame within its slot): FAIL"),
        "{t}"
    );
}
