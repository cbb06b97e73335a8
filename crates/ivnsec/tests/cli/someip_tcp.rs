//! `ivnsec throughput --tcp`: secured SOME/IP with 64 KiB payloads on TCP (seed 003 Fig. 5c and
//! 6), over loopback (no root) and bad input. On a testbed beside iperf3 TCP (root):
//! `testbed_ecus/someip_tcp.rs`.

use crate::common::throughput::check_tcp_run;
use crate::common::{TempDir, ivnsec, json, text};

#[test]
fn loopback_two_senders_deliver_every_message() {
    let d = TempDir::new("tcp-lo");
    for profile in ["someip-aes128-gcm/conf", "someip-nosec"] {
        let o = ivnsec(
            &d,
            &[
                "throughput",
                "--tcp",
                "--on",
                "loopback",
                "--profile",
                profile,
                "--payload",
                "65536",
                "--senders",
                "2",
                "--seconds",
                "0.5",
                "--no-baseline",
                "--provider",
                "portable",
                "--json",
            ],
        );
        let v = json::with_codes("throughput", &o, &[0]);
        check_tcp_run(&v, profile, 2);
        assert!(
            v["transport"]
                .as_str()
                .unwrap()
                .starts_with("TCP on loopback")
        );
        assert!(v["baseline"].as_object().unwrap().is_empty());
    }
}

#[test]
fn tcp_bad_input_is_a_usage_error() {
    let d = TempDir::new("tcp-bad");
    let base = [
        "throughput",
        "--tcp",
        "--on",
        "loopback",
        "--seconds",
        "0.2",
    ];
    let pcap = d.path("x.pcap");
    let cases: [(&[&str], &str); 3] = [
        (&["--profile", "aes128-gcm", "--payload", "64"], "someip"),
        (
            &["--profile", "someip-nosec", "--payload", "2000000"],
            "1048576",
        ),
        (
            &[
                "--profile",
                "someip-nosec",
                "--payload",
                "65536",
                "--pcap",
                pcap.to_str().unwrap(),
            ],
            "tcpdump",
        ),
    ];
    for (args, needle) in cases {
        let mut all: Vec<&str> = base.to_vec();
        all.extend_from_slice(args);
        let o = ivnsec(&d, &all);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Without --tcp a 64 KiB SOME/IP payload does not fit a datagram on the MTU.
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "loopback",
            "--profile",
            "someip-nosec",
            "--payload",
            "65536",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let help = text(&ivnsec(&d, &["throughput", "--help"]).stdout);
    assert!(
        help.contains("--tcp") && help.contains("--payload 65536"),
        "{help}"
    );
}
