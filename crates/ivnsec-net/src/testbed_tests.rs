use super::*;

#[test]
fn random_prefixes_are_valid_and_vary() {
    let a: BTreeSet<String> = (0..20).map(|_| random_prefix().unwrap()).collect();
    for p in &a {
        check_prefix(p).unwrap();
    }
    assert!(a.len() > 15);
}

#[test]
fn state_records_plan() {
    let t = Topology::Pair;
    let s = TestbedState::from_plan("ivn-abc123", &t, &t.plan(), true);
    assert_eq!(s.namespace_of("ecu1").unwrap(), "ivn-abc123-ecu1");
    assert_eq!(s.ipv4_of("ecu2"), Some(Ipv4Addr::new(10, 77, 0, 2)));
    assert_eq!(
        s.node("sw0").unwrap().interfaces[1].peer.as_deref(),
        Some("ecu1/eth0")
    );
    assert_eq!(s.ecus().count(), 2);
    assert_eq!(s.namespaces().count(), 3);
    assert!(matches!(s.namespace_of("ecu9"), Err(Error::Usage(m)) if m.contains("ecu1, ecu2")));
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<TestbedState>(&json).unwrap(), s);
    let s = TestbedState::from_plan("ivn-abc123", &t, &t.plan(), false);
    assert_eq!(s.ipv4_of("ecu2"), None);
}

#[test]
fn state_files_round_trip_and_bad_ones_are_reported() {
    let dir = std::env::temp_dir().join(format!("ivnsec-state-test-{}", random_prefix().unwrap()));
    fs::create_dir_all(&dir).unwrap();
    let t = Topology::Cascade(2);
    let s = TestbedState::from_plan("ivn-00aa11", &t, &t.plan(), true);
    write_state(&dir, &s).unwrap();
    fs::write(dir.join("ivn-00aa22.json"), "{").unwrap();
    fs::write(dir.join("unrelated.json"), "{}").unwrap();
    let l = list(&dir).unwrap();
    assert_eq!(l.testbeds, vec![s.clone()]);
    assert_eq!(l.unreadable.len(), 1);
    assert_eq!(l.prefixes(), ["ivn-00aa11", "ivn-00aa22"]);
    assert_eq!(load(&dir, "ivn-00aa11").unwrap(), s);
    assert!(matches!(load(&dir, "ivn-00aa33"), Err(Error::Usage(_))));
    assert!(matches!(load(&dir, "../etc"), Err(Error::Usage(_))));
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(list(&dir).unwrap().testbeds, vec![]);
}

#[test]
fn down_rejects_foreign_names() {
    let dir = std::env::temp_dir();
    for p in ["ivn", "ivn-", "foo-123456", "ivn-12345"] {
        assert!(matches!(down(p, &dir), Err(Error::Usage(_))), "{p}");
    }
}

#[test]
fn health_follows_the_live_namespaces() {
    let t = Topology::Pair;
    let mut s = TestbedState::from_plan("ivn-abc123", &t, &t.plan(), true);
    assert_eq!(s.health(0), "incomplete (build interrupted)");
    s.complete = true;
    assert_eq!(s.health(s.nodes.len()), "up");
    assert_eq!(s.health(1), "partly gone");
    assert_eq!(s.health(0), "gone");
}

#[test]
fn pick_needs_a_recorded_testbed() {
    let dir = std::env::temp_dir().join(format!("ivnsec-pick-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let e = pick(&dir, None).unwrap_err();
    assert!(
        matches!(&e, Error::Usage(m) if m.contains("no testbed is recorded")),
        "{e}"
    );
    fs::remove_dir_all(&dir).unwrap();
}
