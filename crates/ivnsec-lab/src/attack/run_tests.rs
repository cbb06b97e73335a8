use super::*;

fn entries(t: &str) -> Vec<(String, String, String)> {
    let topo: Topology = t.parse().unwrap();
    let state = TestbedState::planned("ivn-000000", &topo);
    let mac = |node: &str| state.node(node).unwrap().interfaces[0].mac.clone();
    let mut v: Vec<(String, String, String)> = static_table(&state, &HashSet::new())
        .into_iter()
        .map(|e| {
            let ecu = state
                .ecus()
                .find(|n| n.interfaces[0].mac == e.mac)
                .unwrap()
                .name
                .clone();
            assert_eq!(e.mac, mac(&ecu));
            (e.ns, e.port, ecu)
        })
        .collect();
    v.sort();
    v
}

/// One switch: each ECU's MAC on its own port, nothing else.
#[test]
fn static_table_of_one_switch() {
    let t = |p: &str, e: &str| ("ivn-000000-sw0".to_string(), p.to_string(), e.to_string());
    assert_eq!(
        entries("sensors:2"),
        vec![
            t("to-consumer", "consumer"),
            t("to-sensor1", "sensor1"),
            t("to-sensor2", "sensor2"),
        ]
    );
}

/// `production` with its converged tree (root sw0; sw2's link to sw1, sw3's to sw2 and the
/// consumer's uplinks 2 and 3 blocked): each switch holds every ECU once, on the port the
/// tree carries it on; no MAC on a blocked link or a standby uplink.
#[test]
fn static_table_follows_the_spanning_tree() {
    let topo = Topology::Production;
    let state = TestbedState::planned("ivn-000000", &topo);
    let blocked: HashSet<String> = [
        "sw2/to-sw1",
        "sw3/to-sw2",
        "consumer/uplink2",
        "consumer/uplink3",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let ecu_of = |mac: &str| {
        state
            .ecus()
            .find(|n| n.interfaces[0].mac == mac)
            .unwrap()
            .name
            .clone()
    };
    let mut got: Vec<(String, String, String)> = static_table(&state, &blocked)
        .into_iter()
        .map(|e| {
            let sw = e.ns.rsplit('-').next().unwrap().to_string();
            (sw, ecu_of(&e.mac), e.port)
        })
        .collect();
    got.sort();
    let mut want: Vec<(String, String, String)> = [
        ("sw0", "consumer", "to-consumer1"),
        ("sw0", "sensor1", "to-sw1"),
        ("sw0", "sensor2", "to-sw1"),
        ("sw0", "sensor3", "to-sw1"),
        ("sw0", "sensor4", "to-sw2"),
        ("sw1", "consumer", "to-sw0"),
        ("sw1", "sensor1", "to-sensor1"),
        ("sw1", "sensor2", "to-sensor2"),
        ("sw1", "sensor3", "to-gw3"),
        ("sw1", "sensor4", "to-sw0"),
        ("sw2", "consumer", "to-sw0"),
        ("sw2", "sensor1", "to-sw0"),
        ("sw2", "sensor2", "to-sw0"),
        ("sw2", "sensor3", "to-sw0"),
        ("sw2", "sensor4", "to-gw4"),
        ("sw3", "consumer", "to-sw1"),
        ("sw3", "sensor1", "to-sw1"),
        ("sw3", "sensor2", "to-sw1"),
        ("sw3", "sensor3", "to-sw1"),
        ("sw3", "sensor4", "to-sw1"),
    ]
    .into_iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    want.sort();
    assert_eq!(got, want);
    // Without the tree (every port forwarding) the loops would put MACs on several ports.
    let naive = static_table(&state, &HashSet::new());
    assert!(naive.len() == want.len());
    assert_ne!(
        naive
            .iter()
            .map(|e| (e.ns.clone(), e.port.clone(), e.mac.clone()))
            .collect::<HashSet<_>>(),
        static_table(&state, &blocked)
            .iter()
            .map(|e| (e.ns.clone(), e.port.clone(), e.mac.clone()))
            .collect::<HashSet<_>>()
    );
}

/// A chain of switches: every switch has an entry for every ECU, on the port toward it.
#[test]
fn static_table_of_a_cascade() {
    let topo: Topology = "cascade:3".parse().unwrap();
    let state = TestbedState::planned("ivn-000000", &topo);
    let switches: Vec<_> = state.nodes.iter().filter(|n| n.kind == "switch").collect();
    let ecus: Vec<_> = state.ecus().collect();
    assert!(switches.len() >= 2, "{state:?}");
    let v = entries("cascade:3");
    assert_eq!(v.len(), switches.len() * ecus.len(), "{v:?}");
    for (ns, port, ecu) in &v {
        let sw = switches.iter().find(|s| &s.namespace == ns).unwrap();
        let iface = sw.interfaces.iter().find(|i| &i.name == port).unwrap();
        let peer = iface.peer.as_deref().unwrap();
        // The port leads to the ECU itself or to the next switch on the way to it.
        let direct = peer == format!("{ecu}/{}", topology::ECU_IF);
        let via_switch = state
            .node(peer.split('/').next().unwrap())
            .is_some_and(|n| n.kind == "switch");
        assert!(direct || via_switch, "{ns} {port} → {peer} for {ecu}");
        // An ECU attached to this switch is reached directly, never through a trunk.
        let local = sw
            .interfaces
            .iter()
            .any(|i| i.peer.as_deref() == Some(&format!("{ecu}/{}", topology::ECU_IF)));
        assert_eq!(local, direct, "{ns} {port} for {ecu}");
    }
}
