use super::*;
use ivnsec_node::error::exit_code;

#[test]
fn presets_parse_with_the_documented_sizes() {
    let q = preset("quick", &RunSection::default()).unwrap();
    assert_eq!(q.scenarios.len(), 7 * 2);
    let s = preset("seed000", &RunSection::default()).unwrap();
    // 000's design: 4 payloads × (3 AES keys × 4 HMACs + CRC32 + plain).
    assert_eq!(s.scenarios.len(), 56);
    // 120 × 30 exchanges each, a request and a reply per exchange: 403,200 messages.
    assert_eq!(s.exchanges() * 2, 403_200);
    // Seed 002: three configurations × two payloads of ping-pong on testbench 1, and one
    // throughput group of the same three with three sensors at 1 Gb/s.
    let p = preset("seed002", &RunSection::default()).unwrap();
    assert_eq!(p.scenarios.len(), 3 * 2);
    assert_eq!(p.topology, Topology::Sensors(3));
    assert_eq!(p.throughput.len(), 1);
    let t = &p.throughput[0];
    assert_eq!(
        (t.config.senders, t.config.rate_bps),
        (3, Some(1_000_000_000))
    );
    assert_eq!(t.profiles.len(), 3);
    // Seed 003: five AEAD suites × two levels + no security, throughput only.
    let p = preset("seed003", &RunSection::default()).unwrap();
    assert!(p.scenarios.is_empty());
    assert_eq!(p.throughput[0].profiles.len(), 5 * 2 + 1);
    // Seed 002 also streams: under load and the built-in playback timeline.
    let p2 = preset("seed002", &RunSection::default()).unwrap();
    assert_eq!(p2.underload.len(), 1);
    assert_eq!((p2.underload[0].size, p2.underload[0].mps), (24_938, 950.0));
    let pb = &p2.playback[0];
    assert_eq!(pb.embedded.map(|e| e.0), Some("lidar-playback.csv"));
    // The built-in timeline is a valid sockperf playback file.
    let dir = std::env::temp_dir().join(format!("ivnsec-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("t.csv");
    std::fs::write(&f, pb.embedded.unwrap().1).unwrap();
    let mut c = pb.config.clone();
    c.timeline = f;
    let checked = c.check();
    std::fs::remove_dir_all(&dir).unwrap();
    checked.unwrap();
    // Seed 003's camera sweep: 2–16 cameras at every level.
    assert_eq!(p.camera[0].cameras, [2, 4, 8, 12, 16]);
    assert_eq!(p.camera[0].levels.len(), 3);
    // 11 profiles × 5 s, the plain run first, iperf3 unshaped and shaped; then the same
    // 11 over TCP (no plain run), iperf3 TCP unshaped and shaped.
    assert!((p.throughput_seconds() - (12.0 * 5.0 + 10.0) - (11.0 * 5.0 + 10.0)).abs() < 1e-9);
}

#[test]
fn stream_and_camera_tables_are_checked() {
    let o = RunSection::default();
    let p = parse(
        "p.toml",
        "p",
        "[[underload]]\nprofiles = [\"aes128-gcm\"]\nseconds = 2\n[[camera]]\ncameras = [2]\n",
        &o,
    )
    .unwrap();
    assert_eq!(p.underload[0].profiles, ["aes128-gcm"]);
    assert_eq!(p.underload[0].size, 24_938);
    assert_eq!(p.camera[0].cameras, [2]);
    for (text, key, why) in [
        ("[[underload]]\nmps = 0\n", "underload[0]", "mps"),
        ("[[underload]]\nsize = 3\n", "underload[0]", "size"),
        ("[[underload]]\nrate = 3\n", "rate", "unknown field"),
        ("[[camera]]\ncameras = [0]\n", "camera[0]", "cameras"),
        ("[[camera]]\nlevels = [\"secret\"]\n", "camera[0]", "secret"),
        (
            "[[playback]]\ntimeline = \"no-such.csv\"\n",
            "playback[0]",
            "no-such.csv",
        ),
    ] {
        let e = parse("p.toml", "p", text, &o).unwrap_err();
        assert_eq!(exit_code(&e), 2, "{text}");
        let m = format!("{e:#}");
        assert!(m.contains(key) && m.contains(why), "{text}: {m}");
    }
    // A plan file's timeline is found beside it; a preset names only built-in files.
    let e = parse_in(
        "p.toml",
        "p",
        "[[playback]]\ntimeline = \"x.csv\"\n",
        &o,
        &Base::Preset,
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("no built-in file `x.csv`"),
        "{e:#}"
    );
    let p = parse_in(
        "plans/seed002.toml",
        "p",
        "[[playback]]\ntimeline = \"lidar-playback.csv\"\n",
        &o,
        &Base::Dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../plans").into()),
    )
    .unwrap();
    assert!(p.playback[0].embedded.is_none());
    assert!(p.playback[0].config.timeline.is_file());
}

/// `topology = "bump2"` puts a throughput group (or an under-load table) through gateways,
/// in a list of its own; only bump2 (and one sender) are accepted. Seed 002's preset has
/// its Bump-in-the-Wire groups.
#[test]
fn throughput_groups_through_gateways() {
    let o = RunSection::default();
    let t = "[[throughput]]\nprofiles = [\"plain\"]\npayloads = [1440]\nrates = [\"1G\"]\n";
    let p = parse("p.toml", "p", &format!("{t}topology = \"bump2\"\n"), &o).unwrap();
    assert!(p.throughput.is_empty());
    assert_eq!(p.throughput_gateways.len(), 1);
    assert_eq!(p.throughput_gateways[0].topology, Some(Topology::Bump2));
    // Its 10 s… here 5 s: the plain run and iperf3 twice count in the plan's time.
    assert!((p.throughput_seconds() - 15.0).abs() < 1e-9);
    for (extra, key, why) in [
        (
            "topology = \"sensors:2\"\n",
            "throughput[0].topology",
            "bump2",
        ),
        (
            "topology = \"bump2\"\nsenders = 2\n",
            "throughput[0].senders",
            "senders = 1",
        ),
    ] {
        let e = parse("p.toml", "p", &format!("{t}{extra}"), &o).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        let m = format!("{e:#}");
        assert!(m.contains(key) && m.contains(why), "{extra}: {m}");
    }
    // bump: the legacy sensor1 through its gateway to the MACsec consumer.
    let p = parse("p.toml", "p", &format!("{t}topology = \"bump\"\n"), &o).unwrap();
    assert_eq!(p.throughput_gateways[0].topology, Some(Topology::Bump));
    let e = parse(
        "p.toml",
        "p",
        &format!("{t}topology = \"bump\"\nsenders = 2\n"),
        &o,
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("sensor1 → consumer"), "{e:#}");
    let u = "[[underload]]\nprofiles = [\"plain\"]\ntopology = \"bump\"\n";
    assert_eq!(
        parse("p.toml", "p", u, &o)
            .unwrap()
            .underload_gateways
            .len(),
        1
    );
    let p = preset("seed002", &RunSection::default()).unwrap();
    assert_eq!(p.underload_gateways.len(), 1);
    assert_eq!(p.underload_gateways[0].profiles, ["plain"]);
    let u = "[[underload]]\nprofiles = [\"plain\"]\ntopology = \"sensors:1\"\n";
    let e = parse("p.toml", "p", u, &o).unwrap_err();
    assert!(format!("{e:#}").contains("underload[0].topology"), "{e:#}");
    assert_eq!(p.throughput_gateways.len(), 1);
    let g = &p.throughput_gateways[0];
    assert_eq!(g.profiles, ["plain"]);
    assert_eq!(
        (g.config.senders, g.config.rate_bps, g.config.payload),
        (1, Some(1_000_000_000), 1440)
    );
}

/// `[[pingpong]]` runs ping-pong scenarios (profiles × payloads, the plan's count and
/// replications unless the table gives its own) on `bump` or `bump2` only; `[[playback]]`
/// takes the same topologies. Seed 002's preset has the Bump-in-the-Wire ping-pong and
/// playback on `bump`.
#[test]
fn pingpong_and_playback_tables_through_gateways() {
    let o = RunSection::default();
    let t = "[run]\ncount = 50\n[[pingpong]]\ntopology = \"bump\"\nprofiles = [\"plain\"]\n\
             payloads = [64, 1400]\n";
    let p = parse("p.toml", "p", t, &o).unwrap();
    assert!(p.scenarios.is_empty());
    assert_eq!(p.pingpong_gateways.len(), 1);
    let j = &p.pingpong_gateways[0];
    assert_eq!(j.topology, Topology::Bump);
    let got: Vec<(usize, u32)> = j.scenarios.iter().map(|s| (s.payload, s.count)).collect();
    assert_eq!(got, [(64, 50), (1400, 50)]);
    let p = parse("p.toml", "p", &format!("{t}count = 7\n"), &o).unwrap();
    assert_eq!(p.pingpong_gateways[0].scenarios[0].count, 7);
    for (text, key) in [
        (t.replace("\"bump\"", "\"pair\""), "pingpong[0].topology"),
        (t.replace("[64, 1400]", "[]"), "pingpong[0]"),
        (
            t.replace("\"plain\"", "\"no-such-suite\""),
            "pingpong[0].profiles[0]",
        ),
        (format!("{t}rate = 1\n"), "rate"),
        (
            "[[playback]]\ntimeline = \"x.csv\"\ntopology = \"sensors:1\"\n".into(),
            "playback[0].topology",
        ),
    ] {
        let e = parse("p.toml", "p", &text, &o).unwrap_err();
        assert_eq!(exit_code(&e), 2, "{text}");
        assert!(format!("{e:#}").contains(key), "{text}: {e:#}");
    }
    let p = preset("seed002", &RunSection::default()).unwrap();
    assert_eq!(p.pingpong_gateways.len(), 1);
    assert_eq!(p.pingpong_gateways[0].topology, Topology::Bump);
    assert_eq!(p.pingpong_gateways[0].scenarios.len(), 2);
    let bitw: Vec<_> = p
        .playback
        .iter()
        .filter(|j| j.config.topology.as_deref() == Some("bump"))
        .collect();
    assert_eq!(bitw.len(), 1);
    assert_eq!(bitw[0].config.profiles, ["plain"]);
    assert_eq!(p.throughput_gateways[0].topology, Some(Topology::Bump));
    assert_eq!(p.underload_gateways[0].topology.as_deref(), Some("bump"));
}

/// `transport = "tcp"` makes a group of SOME/IP over TCP runs (no `plain` run: it has no
/// TCP form); other values, non-SOME/IP profiles and payloads past the bound are refused
/// with the key named. Seed 003's preset has its TCP group at 64 kB.
#[test]
fn throughput_groups_over_tcp() {
    let o = RunSection::default();
    let t = "[[throughput]]\nprofiles = [\"someip-nosec\", \"someip-aes128-gcm/conf\"]\n\
             payloads = [65536]\nrates = [\"1G\"]\nseconds = 2\n";
    let p = parse("p.toml", "p", &format!("{t}transport = \"tcp\"\n"), &o).unwrap();
    assert!(p.throughput[0].config.tcp);
    // Two profiles × 2 s and iperf3 twice (unshaped and shaped), no plain run.
    assert!((p.throughput_seconds() - 8.0).abs() < 1e-9);
    let p = parse("p.toml", "p", t, &o).unwrap_err();
    assert!(format!("{p:#}").contains("MTU"), "{p:#}");
    let e = parse("p.toml", "p", &format!("{t}transport = \"quic\"\n"), &o).unwrap_err();
    assert_eq!(exit_code(&e), 2);
    let m = format!("{e:#}");
    assert!(
        m.contains("throughput[0].transport") && m.contains("tcp"),
        "{m}"
    );
    let plain = "[[throughput]]\nprofiles = [\"plain\"]\npayloads = [1400]\ntransport = \"tcp\"\n";
    let e = parse("p.toml", "p", plain, &o).unwrap_err();
    assert!(
        format!("{e:#}").contains("throughput[0].profiles[0]"),
        "{e:#}"
    );
    assert!(format!("{e:#}").contains("someip"), "{e:#}");
    let big = "[[throughput]]\nprofiles = [\"someip-nosec\"]\npayloads = [2000000]\ntransport = \"tcp\"\n";
    let e = parse("p.toml", "p", big, &o).unwrap_err();
    assert!(format!("{e:#}").contains("1048576"), "{e:#}");
    let p = preset("seed003", &RunSection::default()).unwrap();
    let tcp: Vec<_> = p.throughput.iter().filter(|j| j.config.tcp).collect();
    assert_eq!(tcp.len(), 1);
    assert_eq!(tcp[0].config.payload, 65536);
    assert_eq!(tcp[0].profiles.len(), 11);
}

#[test]
fn throughput_tables_are_checked() {
    let o = RunSection::default();
    let t = "[[throughput]]\nprofiles = [\"plain\", \"aes128-gcm\"]\npayloads = [64, 1400]\n";
    let p = parse("p.toml", "p", t, &o).unwrap();
    assert!(p.scenarios.is_empty());
    // One group per payload × rate, defaults: unshaped, 1 sender, 5 s, baselines on.
    assert_eq!(p.throughput.len(), 2);
    let j = &p.throughput[1];
    assert_eq!(
        (
            j.config.payload,
            j.config.rate_bps,
            j.config.senders,
            j.baseline
        ),
        (1400, None, 1, true)
    );
    assert_eq!(j.config.seconds_ns, 5_000_000_000);
    let p = parse(
        "p.toml",
        "p",
        &format!("{t}rates = [\"100M\", \"1G\"]\nsenders = 3\nbaseline = false\n"),
        &o,
    )
    .unwrap();
    assert_eq!(p.throughput.len(), 4);
    assert_eq!(p.throughput[1].config.rate_bps, Some(1_000_000_000));
    assert!(!p.throughput[3].baseline);
    // The consumer coalesces 50 µs unless the group says otherwise.
    assert_eq!(p.throughput[0].config.rx_coalesce_us, 50);
    let p = parse("p.toml", "p", &format!("{t}rx_coalesce_us = 0\n"), &o).unwrap();
    assert_eq!(p.throughput[0].config.rx_coalesce_us, 0);
    for (extra, key, why) in [
        ("rates = [\"7X\"]\n", "throughput[0]", "rate"),
        (
            "rx_coalesce_us = 10001\n",
            "throughput[0].rx_coalesce_us",
            "0 to 10000",
        ),
        ("senders = 0\n", "throughput[0]", "--senders"),
        ("seconds = -1\n", "throughput[0]", "--seconds"),
        ("rates = []\n", "throughput[0].rates", "at least one rate"),
        ("sender = 3\n", "sender", "unknown field"),
    ] {
        let e = parse("p.toml", "p", &format!("{t}{extra}"), &o).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        let m = format!("{e:#}");
        assert!(m.contains(key) && m.contains(why), "{extra}: {m}");
    }
    let e = parse(
        "p.toml",
        "p",
        "[[throughput]]\nprofiles = [\"plain\", \"macsec-gcm-aes-128\"]\npayloads = [1480]\n",
        &o,
    )
    .unwrap_err();
    let m = format!("{e:#}");
    assert!(
        m.contains("throughput[0].profiles[1]") && m.contains("MTU"),
        "{m}"
    );
    let e = parse(
        "p.toml",
        "p",
        "[[throughput]]\nprofiles = []\npayloads = [64]\n",
        &o,
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("at least one profile"), "{e:#}");
    let e = parse(
        "p.toml",
        "p",
        "[requirements]\nthroughput_cost = 0\n[[throughput]]\nprofiles = [\"plain\"]\npayloads = [64]\n",
        &o,
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("requirements.throughput_cost"),
        "{e:#}"
    );
}

/// `[[host]]` tables exactly as spelled: the first host initiates and the second responds
/// unless the plan names others; ssh_options kept as they are; bad tables, a single host,
/// a topology beside hosts and tables that do not run across hosts are refused with the key.
#[test]
fn host_tables() {
    let o = RunSection::default();
    let one = "[[scenario]]\nprofile = \"plain\"\npayload = 64\n";
    let host = |n: &str| {
        format!(
            "[[host]]\nname = \"{n}\"\nssh = \"root@192.0.2.{}\"\niface = \"eth1\"\n\
             ssh_options = [\"-i\", \"/k\", \"-o\", \"Port=2222\"]\n",
            n.len()
        )
    };
    let three = format!("{one}{}{}{}", host("a"), host("bb"), host("ccc"));
    let p = parse("p.toml", "p", &three, &o).unwrap();
    assert_eq!((p.initiator.as_str(), p.responder.as_str()), ("a", "bb"));
    let (i, r) = p.host_pair().unwrap();
    assert_eq!(i.ssh, "root@192.0.2.1");
    assert_eq!(r.ssh_options, ["-i", "/k", "-o", "Port=2222"]);
    assert_eq!(i.iface, "eth1");
    let p = parse(
        "p.toml",
        "p",
        &format!("initiator = \"ccc\"\nresponder = \"a\"\n{three}"),
        &o,
    )
    .unwrap();
    assert_eq!(p.host_pair().unwrap().0.name, "ccc");
    let err = |text: &str| {
        let e = parse("p.toml", "p", text, &o).unwrap_err();
        assert_eq!(exit_code(&e), 2, "{e:#}");
        format!("{e:#}")
    };
    assert!(err(&format!("{one}{}", host("a"))).contains("key `host`"));
    assert!(err(&format!("{one}{}{}", host("a"), host("a"))).contains("host[1].name"));
    assert!(err(&format!("responder = \"zz\"\n{three}")).contains("no [[host]] is named `zz`"));
    assert!(err(&format!("topology = \"pair\"\n{three}")).contains("key `topology`"));
    assert!(
        err(&format!(
            "{three}[[host]]\nname = \"d\"\nssh = \"-oX\"\niface = \"e\"\n"
        ))
        .contains("host[3].ssh")
    );
    // Under load, playback, cameras and TDMA runs run across hosts (when the clocks allow
    // it, decided at run time); an under-load table through gateways does not.
    let p = parse(
        "p.toml",
        "p",
        &format!("{three}[[camera]]\ncameras = [1]\nlevels = [\"nosec\"]\n"),
        &o,
    )
    .unwrap();
    assert_eq!(p.camera.len(), 1);
    let p = parse(
        "p.toml",
        "p",
        &format!("{three}[[tdma]]\nprofiles = [\"hmac-sha1\"]\nframes = [60]\nswitches = [1]\n"),
        &o,
    )
    .unwrap();
    assert_eq!(p.tdma.len(), 1);
    assert!(
        err(&format!(
            "{three}[[underload]]\ntopology = \"bump2\"\nprofiles = [\"plain\"]\n"
        ))
        .contains("underload[0].topology")
    );
    assert!(err(&format!("{three}[[host]]\nname = \"d\"\nssh = \"x\"\n")).contains("iface"));
}

#[test]
fn errors_name_file_key_and_problem() {
    let o = RunSection::default();
    let e = parse(
        "p.toml",
        "p",
        "[[matrix]]\nprofiles = [\"nope\"]\npayloads = [64]\n",
        &o,
    )
    .unwrap_err();
    assert_eq!(exit_code(&e), 2);
    let m = format!("{e:#}");
    assert!(
        m.contains("p.toml") && m.contains("matrix[0].profiles[0]"),
        "{m}"
    );
    let e = parse("p.toml", "p", "[run]\ncout = 3\n", &o).unwrap_err();
    let m = format!("{e:#}");
    assert!(m.contains("p.toml") && m.contains("cout"), "{m}");
    let e = parse(
        "p.toml",
        "p",
        "[[matrix]]\nprofiles = [\"plain\"]\npayloads = [1500]\n",
        &o,
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("MTU"), "{e:#}");
    let e = parse("p.toml", "p", "[run]\npause_ms = -1\n", &o).unwrap_err();
    assert!(format!("{e:#}").contains("run.pause_ms"), "{e:#}");
    let one = "[[scenario]]\nprofile = \"plain\"\npayload = 64\n";
    let e = parse("p.toml", "p", &format!("topology = \"ring\"\n{one}"), &o).unwrap_err();
    assert!(format!("{e:#}").contains("key `topology`"), "{e:#}");
    let e = parse(
        "p.toml",
        "p",
        &format!("topology = \"cascade:3\"\ninitiator = \"sw0\"\n{one}"),
        &o,
    )
    .unwrap_err();
    assert!(format!("{e:#}").contains("no ECU `sw0`"), "{e:#}");
    let p = parse(
        "p.toml",
        "p",
        &format!("topology = \"steer-by-wire\"\n{one}"),
        &o,
    )
    .unwrap();
    assert_eq!((p.initiator.as_str(), p.responder.as_str()), ("cu", "rear"));
    let e = parse("p.toml", "p", "name = \"x\"\n", &o).unwrap_err();
    assert!(format!("{e:#}").contains("no scenarios"), "{e:#}");
}

/// Issue 32: a number out of range names the allowed range, a huge line is not echoed whole,
/// and a plan name is bounded.
#[test]
fn errors_name_ranges_and_stay_short() {
    let o = RunSection::default();
    let one = "[[scenario]]\nprofile = \"plain\"\npayload = 64\n";
    let e = parse(
        "p.toml",
        "p",
        &format!("topology = \"sensors:100000\"\n{one}"),
        &o,
    )
    .unwrap_err();
    let m = format!("{e:#}");
    assert_eq!(exit_code(&e), 2);
    assert!(!m.contains("not a number") && m.contains("1..=254"), "{m}");

    let e = parse(
        "p.toml",
        "p",
        &format!("[run]\ncount = 1000000000000\n{one}"),
        &o,
    )
    .unwrap_err();
    let m = format!("{e:#}");
    assert_eq!(exit_code(&e), 2);
    assert!(m.contains("0..=4294967295") && m.contains("line 2"), "{m}");
    assert!(!m.contains("expected u32"), "{m}");

    // A 200 KB line: the error quotes at most 120 characters of it (and of the value).
    let long = format!("description = 3{}\n{one}", "x".repeat(200_000));
    let e = parse("p.toml", "p", &long, &o).unwrap_err();
    let m = format!("{e:#}");
    assert_eq!(exit_code(&e), 2);
    assert!(m.len() < 1_000, "{} bytes: {}", m.len(), &m[..1_000]);
    assert!(m.contains('…') && m.contains("line 1"), "{m}");
    let long = format!("name = {}\n{one}", "7".repeat(200_000));
    let m = format!("{:#}", parse("p.toml", "p", &long, &o).unwrap_err());
    assert!(m.len() < 1_000, "{} bytes", m.len());

    // Names: 200 characters are fine, 201 (or 20 MB) are refused with the limit.
    let named = |n: &str| parse("p.toml", "p", &format!("name = \"{n}\"\n{one}"), &o);
    assert_eq!(named(&"é".repeat(200)).unwrap().name.chars().count(), 200);
    for n in ["é".repeat(201), "n".repeat(20 << 20), String::new()] {
        let e = named(&n).unwrap_err();
        let m = format!("{e:#}");
        assert_eq!(exit_code(&e), 2);
        assert!(
            m.contains("key `name`") && m.contains("1 to 200"),
            "{}",
            &m[..m.len().min(300)]
        );
        assert!(m.len() < 300, "{} bytes", m.len());
    }
}

/// Seed 001: 9 profiles × 2 frames × 5 switch counts of TDMA runs and the HMACs of
/// Figure 6 at 60 and 80 bytes; no ping-pong, so no testbed is built for scenarios.
#[test]
fn the_seed001_preset() {
    let p = preset("seed001", &RunSection::default()).unwrap();
    assert_eq!(p.name, "seed001");
    assert!(p.scenarios.is_empty() && p.throughput.is_empty());
    let t = &p.tdma[0];
    assert_eq!(
        (t.bp_ns, t.gp_ns, t.rate_bps),
        (10_000_000, 200_000, 100_000_000)
    );
    assert_eq!(t.switches, [1, 2, 3, 4, 5]);
    assert_eq!(t.cells.len(), 9 * 2);
    assert_eq!(t.runs(), 90);
    // 60 + the 20-byte HMAC-SHA1 tag: seed 001's 80-byte frame.
    let sha1 = t
        .cells
        .iter()
        .find(|c| c.profile == "hmac-sha1" && c.plain_frame_bytes == 60)
        .unwrap();
    assert_eq!(sha1.frame_bytes, 80);
    assert!(!t.capacity && t.measure && t.periods == 200);
    let c = &p.crypto_bench[0];
    assert_eq!(c.profiles, ["hmac-sha1", "hmac-sha256", "hmac-sha3-256"]);
    assert_eq!((c.sizes.as_slice(), c.frames), (&[60, 80][..], 10_000));
}

#[test]
fn tdma_and_crypto_bench_tables_are_checked() {
    let o = RunSection::default();
    let p = parse("p.toml", "p", "[[tdma]]\n[[crypto_bench]]\n", &o).unwrap();
    assert_eq!(p.tdma[0].cells.len(), 4);
    assert_eq!(p.crypto_bench[0].frames, 10_000);
    for (text, key, why) in [
        (
            "[[tdma]]\nbp = \"10\"\n",
            "key `tdma[0].bp`",
            "the unit is missing",
        ),
        (
            "[[tdma]]\nswitches = [0]\n",
            "key `tdma[0].switches[0]`",
            "1 to 32",
        ),
        (
            "[[tdma]]\nprofiles = [\"plain\", \"aes999-gcm\"]\n",
            "key `tdma[0].profiles[1]`",
            "aes999-gcm",
        ),
        (
            "[[tdma]]\nframes = [10]\n",
            "key `tdma[0].frames[0]`",
            "36 to 1514",
        ),
        (
            "[[tdma]]\nperiods = 0\n",
            "key `tdma[0].periods`",
            "1 to 100000",
        ),
        ("[[tdma]]\nswitch = [1]\n", "switch", "unknown field"),
        (
            "[[crypto_bench]]\nframes = 0\n",
            "key `crypto_bench[0].frames`",
            "1 to 1000000",
        ),
        (
            "[[crypto_bench]]\nsizes = [60, 0]\n",
            "key `crypto_bench[0].sizes[1]`",
            "1 to 65535",
        ),
        (
            "[[crypto_bench]]\nsuite = \"x\"\n",
            "suite",
            "unknown field",
        ),
    ] {
        let e = parse("p.toml", "p", text, &o).unwrap_err();
        assert_eq!(exit_code(&e), 2, "{text}");
        let m = format!("{e:#}");
        assert!(
            m.contains("plan p.toml") && m.contains(key) && m.contains(why),
            "{text}: {m}"
        );
    }
}

#[test]
fn overrides_beat_the_file() {
    let o = RunSection {
        count: Some(3),
        mode: Some(Mode::BusyPoll),
        ..RunSection::default()
    };
    let p = parse(
        "p.toml",
        "p",
        "[run]\ncount = 50\nmode = \"blocking\"\n[[scenario]]\nprofile = \"crc32\"\npayload = 64\ncount = 9\n",
        &o,
    )
    .unwrap();
    assert_eq!(p.scenarios[0].count, 3);
    assert_eq!(p.topology, Topology::Pair);
    assert_eq!(
        (p.initiator.as_str(), p.responder.as_str()),
        ("ecu1", "ecu2")
    );
    assert_eq!(p.scenarios[0].mode, Mode::BusyPoll);
    assert_eq!(p.name, "p");
}

/// A plan's profiles are typed as the plan is read (every table that names profiles): an unknown
/// one is refused by the TOML reader, the message naming the plan, the line and column, the
/// exact key of the profile ([`crate::experiment::text::key_at`]) and the profile, and quoting
/// the line; the scenarios, groups and tables after it hold the typed profile under the name
/// the plan spells.
#[test]
fn profiles_are_parsed_when_the_plan_is_read() {
    let o = RunSection::default();
    let unknown = "profile `nope`: unknown suite (see `ivnsec suites`)";
    for (text, key, line, column) in [
        (
            "[[matrix]]\nprofiles = [\"plain\", \"nope\"]\npayloads = [64, 1400]\n",
            "matrix[0].profiles[1]",
            2,
            22,
        ),
        (
            "[[scenario]]\nprofile = \"plain\"\npayload = 64\n\
             [[scenario]]\nprofile = \"nope\"\npayload = 64\n",
            "scenario[1].profile",
            5,
            11,
        ),
        (
            "[[pingpong]]\ntopology = \"bump\"\nprofiles = [\"nope\"]\npayloads = [64, 1400]\n",
            "pingpong[0].profiles[0]",
            3,
            13,
        ),
        (
            "[[throughput]]\nprofiles = [\"plain\"]\npayloads = [64]\n\
             [[throughput]]\nprofiles = [\"plain\", \"nope\"]\npayloads = [64]\n",
            "throughput[1].profiles[1]",
            5,
            22,
        ),
        (
            "[[tdma]]\nprofiles = [\"plain\", \"nope\"]\n",
            "tdma[0].profiles[1]",
            2,
            22,
        ),
        (
            "[[crypto_bench]]\nsizes = [60]\n\
             [[crypto_bench]]\nprofiles = [\"nope\", \"hmac-sha1\"]\n",
            "crypto_bench[1].profiles[0]",
            4,
            13,
        ),
        // Written inline, an array of tables is found all the same.
        (
            "matrix = [{ profiles = [\"plain\"], payloads = [64] },\n\
             { profiles = [\"nope\"], payloads = [64] }]\n",
            "matrix[1].profiles[0]",
            2,
            15,
        ),
        (
            "[[underload]]\nprofiles = [\"plain\"]\n\
             [[underload]]\nseconds = 2\nprofiles = [\"aes128-gcm\", \"nope\"]\n",
            "underload[1].profiles[1]",
            5,
            27,
        ),
        (
            "[[playback]]\ntimeline = \"t.csv\"\nprofiles = [\"nope\", \"plain\"]\n",
            "playback[0].profiles[0]",
            3,
            13,
        ),
    ] {
        let e = parse("p.toml", "p", text, &o).unwrap_err();
        assert_eq!(exit_code(&e), 2, "{text}");
        let quoted = text.lines().nth(line - 1).unwrap();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "plan p.toml: line {line}, column {column}: key `{key}`: {unknown}\n  | {quoted}"
            ),
            "{text}"
        );
    }
    let p = parse(
        "p.toml",
        "p",
        "[[matrix]]\nprofiles = [\"aes128-gcm\", \"aes128-gcm/conf\"]\npayloads = [64, 1400]\n\
         [[scenario]]\nprofile = \"crc32\"\npayload = 64\n\
         [[throughput]]\nprofiles = [\"aes128-gcm/conf\"]\npayloads = [64]\n\
         [[pingpong]]\ntopology = \"bump\"\nprofiles = [\"hmac-sha256\"]\npayloads = [64]\n\
         [[tdma]]\nprofiles = [\"hmac-sha256\"]\nframes = [60]\n\
         [[crypto_bench]]\nprofiles = [\"hmac-sha1\"]\nsizes = [60]\n",
        &o,
    )
    .unwrap();
    let names: Vec<String> = p.scenarios.iter().map(|s| s.name()).collect();
    assert_eq!(
        names,
        [
            "aes128-gcm@64",
            "aes128-gcm@1400",
            "aes128-gcm/conf@64",
            "aes128-gcm/conf@1400",
            "crc32@64"
        ]
    );
    assert_eq!(
        p.scenarios[0].profile.profile(),
        p.scenarios[3].profile.profile()
    );
    let typed = |name: &str| name.parse::<NamedProfile>().unwrap();
    assert_eq!(p.scenarios[4].profile, typed("crc32"));
    assert_eq!(p.throughput[0].profiles, [typed("aes128-gcm/conf")]);
    assert_eq!(
        p.pingpong_gateways[0].scenarios[0].profile,
        typed("hmac-sha256")
    );
    assert_eq!(p.tdma[0].cells[0].profile, typed("hmac-sha256"));
    assert_eq!(p.crypto_bench[0].profiles, [typed("hmac-sha1")]);
    // [[underload]] and [[playback]] (its timeline a preset's built-in one, so no file is read).
    let p = parse_in(
        "p.toml",
        "p",
        "[[underload]]\nprofiles = [\"aes128-gcm/conf\", \"plain\"]\n\
         [[underload]]\ntopology = \"bump\"\nprofiles = [\"hmac-sha256\"]\n\
         [[playback]]\ntimeline = \"lidar-playback.csv\"\nprofiles = [\"macsec-gcm-aes-128/auth\"]\n",
        &o,
        &Base::Preset,
    )
    .unwrap();
    assert_eq!(
        p.underload[0].profiles,
        [typed("aes128-gcm/conf"), typed("plain")]
    );
    assert_eq!(p.underload[0].profiles[0].name(), "aes128-gcm/conf");
    assert_eq!(p.underload_gateways[0].profiles, [typed("hmac-sha256")]);
    assert_eq!(
        p.playback[0].config.profiles,
        [typed("macsec-gcm-aes-128/auth")]
    );
    // A table with a built-in timeline has its other settings checked all the same (an empty
    // `profiles` is the reader's to accept and check's to refuse).
    let e = parse_in(
        "p.toml",
        "p",
        "[[playback]]\ntimeline = \"lidar-playback.csv\"\nprofiles = []\n",
        &o,
        &Base::Preset,
    )
    .unwrap_err();
    assert_eq!(
        format!("{e:#}"),
        "plan p.toml: key `playback[0]`: give 1 to 16 profiles, got 0"
    );
}
