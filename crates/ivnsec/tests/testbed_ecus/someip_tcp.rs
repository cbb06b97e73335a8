//! `ivnsec throughput --tcp` on a testbed of its own beside iperf3 TCP (root). Loopback and bad
//! input: `cli/someip_tcp.rs`.

use crate::common::throughput::{check_tcp_run, tcp_wire};
use crate::common::{TempDir, ivnsec, json};

/// On a testbed, shaped to 1 Gb/s: our goodput is near the TCP ceiling of the shaped link
/// (65,536 payload bytes per message over its segments' byte times), iperf3 TCP runs on the
/// same path in the same invocation when installed, and CPU is given per role.
#[test]
fn testbed_shaped_beside_iperf3_tcp() {
    require_root!();
    let d = TempDir::new("tcp-tb");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--tcp",
            "--on",
            "testbed",
            "--profile",
            "someip-aes128-gcm/auth",
            "--payload",
            "65536",
            "--seconds",
            "1",
            "--rate",
            "1G",
            "--json",
        ],
    );
    let v = json::with_codes("throughput", &o, &[0]);
    check_tcp_run(&v, "someip-aes128-gcm/auth", 1);
    let t = v["theoretical_mbps"].as_f64().unwrap();
    assert!(
        (t - 65536.0 / tcp_wire(65577) as f64 * 1e3).abs() < 1e-6,
        "{t}"
    );
    let e = v["efficiency"].as_f64().unwrap();
    assert!(e > 0.5 && e <= 1.02, "efficiency {e}: {v}");
    assert!(v["transport"].as_str().unwrap().contains("TCP connection"));
    let roles: Vec<&str> = v["cpu"]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["consumer", "sensor1", "pacing", "switch"]);
    // No `plain` run over TCP.
    assert!(v["baseline"].get("plain").is_none());
    let have_iperf3 = std::process::Command::new("iperf3")
        .arg("--version")
        .output()
        .is_ok();
    if have_iperf3 {
        let i = &v["baseline"]["iperf3"];
        assert_eq!(i["transport"], "tcp", "{v}");
        for key in ["unlimited", "shaped"] {
            assert!(i[key]["goodput_mbps"].as_f64().unwrap() > 0.0, "{key}: {i}");
            assert!(!i[key]["command"].as_str().unwrap().contains("-u"));
            assert!(i[key]["command"].as_str().unwrap().contains("-l 65536"));
            assert!(i[key]["system_pct"].as_f64().is_some());
            assert!(i[key]["ratio"].as_f64().is_some());
        }
    } else {
        eprintln!("iperf3 not installed: its TCP baseline is not checked");
    }
    assert!(d.leftover_testbeds().is_empty());
}
