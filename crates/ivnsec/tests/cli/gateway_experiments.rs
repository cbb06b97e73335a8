//! The experiments' `--topology` options refused or checked before any testbed is built
//! (exit 2). The runs on `bump`/`bump2` are root tests: `testbed_gateway/gateway_experiments.rs`.

use crate::common::{TempDir, ivnsec, text};

#[test]
fn bad_topology_options_are_usage_errors() {
    let d = TempDir::new("gwxusage");
    for (args, needle) in [
        (
            &[
                "pingpong",
                "--topology",
                "ring",
                "--profile",
                "plain",
                "--payload",
                "64",
            ][..],
            "ring",
        ),
        (
            &[
                "pingpong",
                "--topology",
                "bump2",
                "--on",
                "loopback",
                "--profile",
                "plain",
                "--payload",
                "64",
            ][..],
            "loopback",
        ),
        (
            &[
                "pingpong",
                "--topology",
                "bump2",
                "--testbed",
                "ivn-000000",
                "--profile",
                "plain",
                "--payload",
                "64",
            ][..],
            "--testbed",
        ),
        (
            &[
                "throughput",
                "--topology",
                "sensors:2",
                "--profile",
                "plain",
                "--payload",
                "64",
            ][..],
            "bump2",
        ),
        (
            &[
                "throughput",
                "--topology",
                "bump2",
                "--senders",
                "2",
                "--profile",
                "plain",
                "--payload",
                "64",
            ][..],
            "--senders 1",
        ),
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// `--topology bump` with more than one sender names the one sender and receiver.
#[test]
fn bump_has_one_sender() {
    let d = TempDir::new("gwxbusage");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--topology",
            "bump",
            "--senders",
            "2",
            "--profile",
            "plain",
            "--payload",
            "64",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("sensor1") && text(&o.stderr).contains("--senders 1"),
        "{}",
        text(&o.stderr)
    );
}

/// `--topology` on underload, playback and camera takes the bump-in-the-wire topologies
/// only, never with --on loopback.
#[test]
fn stream_and_camera_topologies_are_checked() {
    let d = TempDir::new("gwxbusage2");
    let csv = d.path("t.csv");
    std::fs::write(&csv, "0.001, 100\n").unwrap();
    let csv = csv.to_str().unwrap();
    for (args, needle) in [
        (&["underload", "--topology", "pair"][..], "bump2"),
        (&["underload", "--topology", "ring"][..], "ring"),
        (
            &["playback", "--topology", "sensors:2", "--timeline", csv][..],
            "bump",
        ),
        (
            &[
                "playback",
                "--topology",
                "bump",
                "--on",
                "loopback",
                "--timeline",
                csv,
            ][..],
            "loopback",
        ),
        (&["camera", "--topology", "cascade:2"][..], "bump2"),
        (
            &["camera", "--topology", "bump", "--testbed", "ivn-000000"][..],
            "--testbed",
        ),
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}
