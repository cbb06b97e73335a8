//! `ivnsec run` of a plan that picks its topology (`cascade:3`) and ECUs, on a testbed of its
//! own (root). The loopback runs: `cli/pingpong.rs`.

use serde_json::Value;

use crate::common::pingpong::check_scenario;
use crate::common::{TempDir, ivnsec, text};

#[test]
fn a_plan_picks_its_topology_and_ecus() {
    require_root!();
    let d = TempDir::new("topo");
    let plan = d.path("cascade.toml");
    std::fs::write(
        &plan,
        "topology = \"cascade:3\"\n[run]\ncount = 20\nreplications = 1\n\
         [[scenario]]\nprofile = \"macsec-gcm-aes-128\"\npayload = 128\n",
    )
    .unwrap();
    let out = d.path("out");
    let o = ivnsec(
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
        "{}",
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let t = v["environment"]["transport"].as_str().unwrap();
    assert!(
        t.contains("cascade:3") && t.contains("ecu1") && t.contains("ecu2"),
        "{t}"
    );
    check_scenario(&v["scenarios"][0], "macsec-gcm-aes-128", 128, 20);
    assert!(d.leftover_testbeds().is_empty(), "testbed not removed");

    // `testbed up --plan` builds the plan's topology.
    let o = ivnsec(
        &d,
        &["testbed", "up", "--plan", plan.to_str().unwrap(), "--json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let st: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(st["topology"], "cascade:3");
    let o = ivnsec(&d, &["testbed", "down", "--all"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(d.leftover_testbeds().is_empty());
}
