//! `ivnsec tdma schedule` and `ivnsec tdma run` as a user runs them: schedules that fit and
//! that do not (slot arithmetic by hand, seed 001 eq. 9), bad flows files and options (exit 2,
//! naming the file and the key) and no root (exit 3). A small schedule on a `cascade:2` testbed
//! (root) is in `testbed_ecus/tdma_run.rs`.

use std::process::Command;

use crate::common;
use crate::common::tdma::TWO_FLOWS;
use crate::common::{BIN, TempDir, ivnsec, json, text, write};

/// 100-byte frames at 100 Mb/s take 8 µs; with GP 0.2 ms and two switches a slot is
/// 8 + 2 × 200 = 408 µs: steer at 0, brake at 408 µs; NF_max = ⌊10 ms / 408 µs⌋ = 24.
#[test]
fn schedule_fits_with_slots_worked_by_hand() {
    let d = TempDir::new("tdma-fit");
    let f = write(&d, "flows.toml", TWO_FLOWS);
    let o = ivnsec(
        &d,
        &[
            "tdma",
            "schedule",
            "--bp",
            "10ms",
            "--gp",
            "0.2ms",
            "--flows",
            &f,
            "--topology",
            "cascade:2",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v = json::parse("tdma", &o);
    assert_eq!(v["fits"], true);
    assert_eq!(v["switches"], 2);
    let slots = v["slots"].as_array().unwrap();
    let got: Vec<(&str, u64, u64, u64)> = slots
        .iter()
        .map(|s| {
            (
                s["flow"].as_str().unwrap(),
                s["offset_ns"].as_u64().unwrap(),
                s["length_ns"].as_u64().unwrap(),
                s["frame_time_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("steer", 0, 408_000, 8_000),
            ("brake", 408_000, 408_000, 8_000)
        ]
    );
    // brake goes ecu2 → sw1 → sw0: sw1 forwards in 416–616 µs, sw0 in 616–816 µs.
    let hops: Vec<(&str, u64, u64)> = slots[1]["hops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["node"].as_str().unwrap(),
                h["start_ns"].as_u64().unwrap(),
                h["end_ns"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        hops,
        [
            ("ecu2", 408_000, 416_000),
            ("sw1", 416_000, 616_000),
            ("sw0", 616_000, 816_000)
        ]
    );
    assert_eq!(v["nf_max"][0]["nf_max"], 24);

    // The JSON is a schedule `tdma run --schedule` accepts: its checks pass (the run then
    // stops at the environment or builds a testbed; here only the parsing matters, so a bad
    // profile makes it stop right after loading).
    let s = write(&d, "s.json", &text(&o.stdout));
    let o = ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--schedule",
            &s,
            "--profile",
            "no-such-profile",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no-such-profile"),
        "{}",
        text(&o.stderr)
    );

    // The text form.
    let o = ivnsec(
        &d,
        &[
            "tdma",
            "schedule",
            "--bp",
            "10ms",
            "--gp",
            "0.2ms",
            "--flows",
            &f,
            "--topology",
            "cascade:2",
        ],
    );
    assert_eq!(o.status.code(), Some(0));
    let t = text(&o.stdout);
    assert!(t.contains("ecu2 408–416, sw1 416–616, sw0 616–816"), "{t}");
    assert!(t.contains("= 24 frames per base period"), "{t}");
}

/// BP 1 ms: two 408 µs slots take 816 µs, the third flow needs 408 µs with 184 µs left.
#[test]
fn a_flow_that_does_not_fit_is_named_with_the_reason() {
    let d = TempDir::new("tdma-nofit");
    let body = format!(
        "{TWO_FLOWS}\n[[flow]]\nname = \"status\"\nfrom = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 100\n"
    );
    let f = write(&d, "flows.toml", &body);
    let args = [
        "tdma",
        "schedule",
        "--bp",
        "1ms",
        "--gp",
        "0.2ms",
        "--flows",
        &f,
        "--topology",
        "cascade:2",
    ];
    let o = ivnsec(&d, &args);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).trim(),
        "flow `status` does not fit: its slot needs 408 µs (frame time 8 µs + guard period 200 µs \
         × 2 switches) but a base period has only 184 µs left of 1 ms after the 2 flows placed \
         before it"
    );
    let mut with_json = args.to_vec();
    with_json.push("--json");
    let o = ivnsec(&d, &with_json);
    assert_eq!(o.status.code(), Some(1));
    let v = json::parse("tdma", &o);
    assert_eq!(v["fits"], false);
    assert_eq!(v["flow"], "status");
    assert_eq!(v["needed_ns"], 408_000);
    assert_eq!(v["left_ns"], 184_000);
    // `run` refuses the same flows as a usage error, before it needs any privilege.
    let o = ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--flows",
            &f,
            "--bp",
            "1ms",
            "--gp",
            "0.2ms",
            "--topology",
            "cascade:2",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("flow `status` does not fit"),
        "{}",
        text(&o.stderr)
    );
}

/// Bad flows files and options: exit 2, and the message names the file and the key.
#[test]
fn bad_input_exits_2_naming_the_file_and_key() {
    let d = TempDir::new("tdma-bad");
    let good = write(&d, "good.toml", TWO_FLOWS);
    let cases: Vec<(&str, String, Vec<&str>, &str)> = vec![
        (
            "period.toml",
            TWO_FLOWS.replace("frame_bytes = 100\n\n", "frame_bytes = 100\nperiod = 0\n\n"),
            vec![],
            "flow[0] (`steer`) key `period`: expected a whole number from 1 to 1000, got 0",
        ),
        (
            "ecu.toml",
            TWO_FLOWS.replace("to = \"ecu1\"", "to = \"ecu7\""),
            vec![],
            "flow[1] (`brake`) key `to`: `ecu7` is not an ECU of cascade:1 (its ECUs: ecu1, ecu2)",
        ),
        (
            "typo.toml",
            TWO_FLOWS.replace("frame_bytes = 100\n\n", "frame_byte = 100\n\n"),
            vec![],
            "flow[0] (`steer`) key `frame_byte`: unknown key",
        ),
        (
            "payload.toml",
            TWO_FLOWS.replace("frame_bytes = 100\n\n", "payload = 40\n\n"),
            vec![],
            "flow[0] (`steer`) key `payload`: needs a profile",
        ),
        (
            "syntax.toml",
            "[[flow]\n".to_string(),
            vec![],
            "TOML parse error",
        ),
    ];
    for (name, body, extra, want) in cases {
        let f = write(&d, name, &body);
        let mut args = vec![
            "tdma", "schedule", "--bp", "10ms", "--gp", "0.2ms", "--flows", &f,
        ];
        args.extend(extra);
        let o = ivnsec(&d, &args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.starts_with(&format!("ivnsec: flows file {f}: ")),
            "{name}: {err}"
        );
        assert!(err.contains(want), "{name}: want {want:?}\n{err}");
    }
    let missing = d.path("none.toml");
    let options: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["schedule", "--bp", "10", "--gp", "0.2ms", "--flows", &good],
            "--bp `10`: '10' is not a duration: the unit is missing",
        ),
        (
            vec![
                "schedule",
                "--bp",
                "10ms",
                "--gp",
                "0.2 fortnights",
                "--flows",
                &good,
            ],
            "--gp `0.2 fortnights`: '0.2 fortnights' is not a duration: unknown unit",
        ),
        (
            vec!["schedule", "--bp", "10ms", "--gp", "10ms", "--flows", &good],
            "guard period (10 ms) must be shorter than the base period",
        ),
        (
            vec![
                "schedule", "--bp", "10ms", "--gp", "0.2ms", "--flows", &good, "--rate", "fast",
            ],
            "--rate `fast`",
        ),
        (
            vec![
                "schedule",
                "--bp",
                "10ms",
                "--gp",
                "0.2ms",
                "--flows",
                &good,
                "--topology",
                "pair",
            ],
            "tdma schedules a cascade:N topology",
        ),
        (
            vec![
                "schedule",
                "--bp",
                "10ms",
                "--gp",
                "0.2ms",
                "--flows",
                missing.to_str().unwrap(),
            ],
            "cannot read it",
        ),
        (
            vec!["schedule", "--bp", "10ms", "--gp", "0.2ms"],
            "--flows FILE is needed",
        ),
        (
            vec!["run", "--flows", &good, "--gp", "0.2ms"],
            "--bp is needed with --flows",
        ),
        (vec!["run"], "give --schedule FILE"),
        (
            vec!["run", "--schedule", &good],
            "not a schedule of `ivnsec tdma schedule --json`",
        ),
        (
            vec![
                "run",
                "--flows",
                &good,
                "--bp",
                "10ms",
                "--gp",
                "0.2ms",
                "--periods",
                "0",
            ],
            "--periods must be",
        ),
        (
            vec!["run", "--schedule", &good, "--flows", &good],
            "cannot be used with",
        ),
        (
            vec![
                "run",
                "--flows",
                &good,
                "--bp",
                "10ms",
                "--gp",
                "0.2ms",
                "--pcap",
                "/nonexistent-ivnsec-dir/x.pcap",
            ],
            "--pcap /nonexistent-ivnsec-dir/x.pcap: the directory /nonexistent-ivnsec-dir does not exist",
        ),
    ];
    for (args, want) in options {
        let mut all = vec!["tdma"];
        all.extend(&args);
        let o = ivnsec(&d, &all);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?}\n{err}");
    }
}

/// Without root `tdma run` exits 3 and says how to fix it (as root the test drops to nobody).
#[test]
fn run_without_root_exits_3() {
    let d = TempDir::new("tdma-noroot");
    let f = write(&d, "flows.toml", TWO_FLOWS);
    let args = [
        "tdma", "run", "--flows", &f, "--bp", "10ms", "--gp", "0.2ms",
    ];
    let o = if common::skip_reason().is_none() {
        let Ok(o) = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .env("IVNSEC_STATE_DIR", d.state())
            .output()
        else {
            eprintln!("SKIPPED run_without_root_exits_3: no setpriv to drop root");
            return;
        };
        o
    } else {
        ivnsec(&d, &args)
    };
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("tdma run builds a cascade:1 testbed"), "{err}");
    assert!(err.contains("run it as root"), "{err}");
    assert!(d.leftover_testbeds().is_empty());
}

/// The example of docs/tdma-run.md: its flows file is accepted and `tdma schedule` prints exactly
/// the table the page shows.
#[test]
fn the_docs_example_is_what_the_command_prints() {
    let md = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tdma-run.md"),
    )
    .unwrap();
    let blocks: Vec<&str> = md.split("```").collect();
    let toml = blocks
        .iter()
        .find_map(|b| b.strip_prefix("toml\n"))
        .expect("a toml block");
    let shown = blocks
        .iter()
        .find_map(|b| b.strip_prefix("\n$ ivnsec tdma schedule "))
        .expect("the schedule example");
    let (args, want) = shown.split_once('\n').unwrap();
    let d = TempDir::new("tdma-docs");
    let f = write(&d, "seed.toml", toml);
    let args: Vec<String> = args
        .split_whitespace()
        .map(|a| {
            if a == "seed.toml" {
                f.clone()
            } else {
                a.to_string()
            }
        })
        .collect();
    let mut all = vec!["tdma".to_string(), "schedule".to_string()];
    all.extend(args);
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    let o = ivnsec(&d, &all);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), want);
}
