//! The benchmark scripts' command lines, without root: `scripts/dataplane-bench --help` (and
//! `scripts/txring-bench --help`) prints its usage (the arguments, an example) and exits 0, and
//! bad arguments get the usage on stderr and exit 2 before anything is built. Running them for
//! real needs root (docs/benchmarks.md, "Data plane").

use std::process::{Command, Output};

use crate::common::{repo, text};

/// `bash scripts/dataplane-bench ARGS…` from the repository root.
fn dataplane_bench(args: &[&str]) -> Output {
    script("dataplane-bench", args)
}

/// `bash scripts/NAME ARGS…` from the repository root.
fn script(name: &str, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(repo().join("scripts").join(name))
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap()
}

#[test]
fn dataplane_bench_help_shows_runs_seconds_and_an_example() {
    for flag in ["--help", "-h"] {
        let out = dataplane_bench(&[flag]);
        let usage = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{flag}: stdout {usage} stderr {}",
            text(&out.stderr)
        );
        assert!(
            usage.contains("Usage: sudo bash scripts/dataplane-bench [RUNS [SECONDS]]"),
            "{flag}: {usage}"
        );
        assert!(
            usage.contains("RUNS") && usage.contains("SECONDS"),
            "{usage}"
        );
        assert!(
            usage.contains("Example:") && usage.contains("sudo bash scripts/dataplane-bench 3 5"),
            "{flag}: {usage}"
        );
        // The contract of the JSON: the path keys and the definition of a crossing.
        for key in [
            "plain_tcp",
            "macsec_tap_tcp",
            "macsec_tap_udp",
            "esp_proto50_tcp",
            "esp_udp_encap_tcp",
            "bridges_udp",
            "gateways_udp",
            "crossing",
            "--busy-poll-us",
            "one_cpu",
            "ONE_CPU",
            "machine.wake_up",
            "WAKES",
            "CPU_LATENCY_US",
            "cpu_latency",
            "/dev/cpu_dma_latency",
        ] {
            assert!(usage.contains(key), "{flag}: no {key} in {usage}");
        }
    }
}

#[test]
fn dataplane_bench_refuses_bad_arguments_with_exit_2_and_the_usage() {
    let bad: &[&[&str]] = &[
        &["three"],
        &["0"],
        &["-1"],
        &["3", "0"],
        &["3", "5s"],
        &["3", "5", "7"],
        &["--bogus"],
    ];
    for args in bad {
        let out = dataplane_bench(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: stderr {err}");
        assert!(
            err.contains("Usage: sudo bash scripts/dataplane-bench [RUNS [SECONDS]]"),
            "{args:?}: stderr {err}"
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?}: stdout {}",
            text(&out.stdout)
        );
    }
}

/// `dataplane-bench 1 1` with `VAR=bad` for each of `bads`: exit 2 before anything runs, and
/// stderr says `VAR=bad: ` and then `says`.
fn assert_env_refused(var: &str, bads: &[&str], says: &str) {
    for bad in bads {
        let out = Command::new("bash")
            .arg(repo().join("scripts/dataplane-bench"))
            .args(["1", "1"])
            .env(var, bad)
            .current_dir(repo())
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={bad}: stderr {err}");
        assert!(
            err.contains(&format!("{var}={bad}: {says}")),
            "{var}={bad}: stderr {err}"
        );
    }
}

#[test]
fn dataplane_bench_refuses_a_one_cpu_that_is_no_cpu_number_with_exit_2() {
    assert_env_refused(
        "ONE_CPU",
        &["x", "-1", "0-1", "1,2"],
        "expected a CPU number",
    );
}

/// `NAME --help` and `NAME -h` exit 0 with the usage on stdout, which names every one of `keys`.
fn assert_help_names(name: &str, keys: &[&str]) {
    for flag in ["--help", "-h"] {
        let out = script(name, &[flag]);
        let usage = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name} {flag}: {}",
            text(&out.stderr)
        );
        for key in keys {
            assert!(usage.contains(key), "{name} {flag}: no {key} in {usage}");
        }
    }
}

/// Each of `bad` gets exit 2, `usage` on stderr and nothing on stdout.
fn assert_refused(name: &str, usage: &str, bad: &[&[&str]]) {
    for args in bad {
        let out = script(name, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name} {args:?}: stderr {err}");
        assert!(err.contains(usage), "{name} {args:?}: stderr {err}");
        assert!(
            out.stdout.is_empty(),
            "{name} {args:?}: {}",
            text(&out.stdout)
        );
    }
}

const TXRING_USAGE: &str = "Usage: sudo bash scripts/txring-bench [RUNS [SECONDS [LEN]]]";
const WAKE_USAGE: &str = "Usage: bash scripts/wake-latency [WAKES [INTERVAL_US [GAP_SECONDS]]]";

#[test]
fn txring_bench_help_names_the_three_ways_and_an_example() {
    assert_help_names(
        "txring-bench",
        &[
            TXRING_USAGE,
            "sendmmsg",
            "ring+copy",
            "PACKET_TX_RING",
            "Example:",
            "sudo bash scripts/txring-bench 3 3",
        ],
    );
}

#[test]
fn txring_bench_refuses_bad_arguments_with_exit_2_and_the_usage() {
    assert_refused(
        "txring-bench",
        TXRING_USAGE,
        &[
            &["three"],
            &["0"],
            &["3", "0"],
            &["3", "3", "59"],
            &["3", "3", "1901"],
            &["3", "3", "1514", "4"],
            &["--bogus"],
        ],
    );
}

#[test]
fn wake_latency_help_names_what_it_measures_and_an_example() {
    assert_help_names(
        "wake-latency",
        &[
            WAKE_USAGE,
            "p99.9",
            "gaps",
            "--busy-poll-us",
            "Example:",
            "bash scripts/wake-latency 5000 2000 5",
        ],
    );
}

#[test]
fn wake_latency_refuses_bad_arguments_with_exit_2_and_the_usage() {
    assert_refused(
        "wake-latency",
        WAKE_USAGE,
        &[
            &["many"],
            &["99"],
            &["5000", "0"],
            &["5000", "2000", "0"],
            &["5000", "2000", "601"],
            &["5000", "2000", "5", "1"],
            &["--bogus"],
        ],
    );
}

#[test]
fn dataplane_bench_refuses_a_wakes_count_out_of_range_with_exit_2() {
    assert_env_refused(
        "WAKES",
        &["x", "-1", "99", "1000001"],
        "expected 0 (not measured) or 100..1000000",
    );
}

#[test]
fn dataplane_bench_refuses_a_cpu_latency_out_of_range_with_exit_2() {
    assert_env_refused(
        "CPU_LATENCY_US",
        &["x", "-1", "10001", "on"],
        "expected 0..10000 or off",
    );
}

const THREADS_USAGE: &str = "Usage: sudo bash scripts/dataplane-threads [ROUNDS [SECONDS]]";

#[test]
fn dataplane_threads_help_names_its_variants_and_an_example() {
    assert_help_names(
        "dataplane-threads",
        &[
            THREADS_USAGE,
            "TAP_VARIANTS",
            "ESP_VARIANTS",
            "ENCAPS",
            "/proc/PID/task/TID/stat",
            "Example:",
            "bash scripts/dataplane-threads 3 4",
        ],
    );
}

#[test]
fn dataplane_threads_refuses_bad_arguments_and_encapsulations_with_exit_2() {
    assert_refused(
        "dataplane-threads",
        THREADS_USAGE,
        &[
            &["two"],
            &["0"],
            &["2", "0"],
            &["2", "4", "1"],
            &["--bogus"],
        ],
    );
    let out = Command::new("bash")
        .arg(repo().join("scripts/dataplane-threads"))
        .args(["1", "1"])
        .env("ENCAPS", "udp gre")
        .current_dir(repo())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ENCAPS=udp gre"), "{err}");
}
