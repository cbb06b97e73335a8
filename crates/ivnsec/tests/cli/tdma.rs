//! `ivnsec tdma capacity` against seed 001 (Sensors 2016): Tables 3, 5, 7 (theoretical and
//! measured), 10 and 11 value by value from the seed's text (`ivnsec_lab::tdma::seed001`),
//! through the command line; the `--json` shape; bad input (exit 2); the examples of `--help`.
//! Where the seed's own arithmetic differs from its equations, the seed's figure is printed
//! beside ours with the reason, and ours must be the exact value.

use std::process::{Command, Output};

use ivnsec_lab::tdma::seed001::{self, CapacityTable, Figure, Inputs, Measure};
use serde_json::{Value, json};

use crate::common::{BIN, text};

fn capacity(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["tdma", "capacity"])
        .args(args)
        .output()
        .expect("run ivnsec")
}

/// The rows of `--json`.
fn rows(args: &[&str]) -> Vec<Value> {
    let out = capacity(&[args, &["--json"]].concat());
    assert!(
        out.status.success(),
        "{args:?}: exit {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    v["rows"].as_array().expect("rows").clone()
}

/// The rows of `--json` for options written as one line.
fn rows_of(options: &str) -> Vec<Value> {
    rows(&options.split_whitespace().collect::<Vec<_>>())
}

/// One key of every row.
fn col(rows: &[Value], key: &str) -> Vec<Value> {
    rows.iter().map(|r| r[key].clone()).collect()
}

/// The command-line options of a column of the seed.
fn options(i: &Inputs) -> Vec<String> {
    let mut a = vec![
        "--bp".to_string(),
        "10ms".into(),
        "--gp".into(),
        format!("{}", i.gp),
        "--rate".into(),
        i.rate.to_string(),
        "--frame".into(),
        i.frame_bytes.to_string(),
        "--switches".into(),
        i.switches.to_string(),
    ];
    if let Some(t) = i.frame_time {
        a.extend(["--frame-time".into(), t.to_string()]);
    }
    if let Some((so, diff)) = i.eq4 {
        a.extend([
            "--switch-overhead".into(),
            so.to_string(),
            "--diff".into(),
            diff.to_string(),
        ]);
    }
    a
}

/// A millisecond figure of the JSON at the printed precision.
fn at_precision(ms: f64, printed: &str) -> String {
    let decimals = printed.split_once('.').map_or(0, |(_, d)| d.len());
    format!("{ms:.decimals$}")
}

/// Ours for one printed figure, from the row of `--json`.
fn ours(row: &Value, f: &Figure) -> String {
    let ms = |k: &str| row[k].as_f64().unwrap_or_else(|| panic!("{k} in {row}"));
    match f.measure {
        Measure::NfMax => row["nf_max"].as_u64().unwrap().to_string(),
        Measure::FrameTime => at_precision(ms("frame_time_ms"), f.printed),
        Measure::MaxTt => at_precision(ms("max_tt_ms"), f.printed),
        Measure::Slot => {
            let n = row["switches"].as_u64().unwrap() as f64;
            at_precision(ms("frame_time_ms") + ms("gp_ms") * n, f.printed)
        }
        // Not an output of the command: the lab's test covers it.
        Measure::EndNodes => f.printed.to_string(),
    }
}

fn check_table(t: &CapacityTable) -> Vec<String> {
    let mut differing = Vec::new();
    for col in t.columns {
        let args = options(&col.inputs);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let rows = rows(&args);
        assert_eq!(rows.len(), 1, "{args:?}");
        for f in col.figures {
            let ours = ours(&rows[0], f);
            let want = f.exact.unwrap_or(f.printed);
            assert_eq!(
                ours, want,
                "Table {} {} {}: {args:?}",
                t.number, col.heading, f.row
            );
            if ours != f.printed {
                println!(
                    "Table {} {}, {}: seed {}, ours {} ({})",
                    t.number,
                    col.heading,
                    f.row,
                    f.printed,
                    ours,
                    f.note.unwrap_or("")
                );
                differing.push(format!("{} {} {}", t.number, col.heading, f.row));
            }
        }
    }
    differing
}

#[test]
fn table_3_platform_a_theoretical() {
    assert_eq!(
        check_table(&seed001::TABLE_3),
        ["3 GP = 0, 80 bytes NF_max"],
        "only the seed's round-to-nearest cell differs"
    );
    // The same in one call per guard period, frames as the issue spells them.
    let nf = |gp: &str| {
        let r = rows_of(&format!("--bp 10ms --gp {gp} --rate 100M --frame 60 80"));
        col(&r, "nf_max")
    };
    assert_eq!(nf("0ms"), [json!(2083), json!(1562)]);
    assert_eq!(nf("0.2ms"), [json!(48), json!(48)]);
}

#[test]
fn table_5_platform_b_theoretical() {
    assert!(check_table(&seed001::TABLE_5).is_empty());
    // 10 ms / (60 B at 54 Mb/s) is exactly 1125 frames.
    let r = rows_of("--bp 10ms --gp 0ms --rate 54M --frame 60");
    assert_eq!(r[0]["nf_max"], 1125);
}

#[test]
fn table_7_platform_a_performance_impact() {
    assert_eq!(
        check_table(&seed001::TABLE_7),
        [
            "7 Theoretical, 60 bytes NF_max",
            "7 Theoretical, 80 bytes NF_max"
        ],
        "only the theoretical NF_max (taken from eq. 1 by the seed) differs"
    );
    // Measured, both frames in one call: eq. 4 with SO = 0.1 ms and Diff = 0.2 ms.
    let r = rows_of(
        "--bp 10ms --gp 0.2ms --rate 100M --frame 60 80 --frame-time 0.115ms,0.15ms \
         --switch-overhead 0.1ms --diff 0.2ms",
    );
    assert_eq!(col(&r, "frame_bytes"), [json!(60), json!(80)]);
    assert_eq!(col(&r, "max_tt_ms"), [json!(0.23), json!(0.3)]);
    assert_eq!(col(&r, "nf_max"), [json!(43), json!(33)]);
}

#[test]
fn table_10_platform_b_performance_impact() {
    assert!(check_table(&seed001::TABLE_10).is_empty());
    // The measured Max_TT (eq. 8: 0.584 + 0.240 + 0.2 = 1.024 ms) given directly.
    let r = rows_of("--bp 10ms --gp 0.2ms --rate 54M --frame 60 80 --max-tt 1.024ms,1.032ms");
    assert_eq!(col(&r, "max_tt_ms"), [json!(1.024), json!(1.032)]);
    assert_eq!(col(&r, "nf_max"), [json!(9), json!(9)]);
}

#[test]
fn table_11_platform_a_scalability() {
    assert!(check_table(&seed001::TABLE_11).is_empty());
    // One call: two frames × five switch counts, frames in order, switch counts ascending.
    let r = rows_of(
        "--bp 10ms --gp 0.2ms --rate 100M --frame 60,80 --frame-time 0.115ms,0.15ms \
         --switches 1..5",
    );
    let got: Vec<(u64, u64, u64)> = r
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap();
            (n("frame_bytes"), n("switches"), n("nf_max"))
        })
        .collect();
    let seed: Vec<(u64, u64, u64)> = seed001::TABLE_11
        .columns
        .iter()
        .map(|c| {
            (
                u64::from(c.inputs.frame_bytes),
                u64::from(c.inputs.switches),
                c.figures[0].printed.parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, seed);
}

/// The keys of a `--json` row, in order.
const KEYS: [&str; 8] = [
    "frame_bytes",
    "rate_bps",
    "bp_ms",
    "gp_ms",
    "switches",
    "frame_time_ms",
    "max_tt_ms",
    "nf_max",
];

#[test]
fn json_shape() {
    let r = rows_of("--bp 10ms --gp 0.2ms --rate 1G --frame 60 1514 --switches 2..3");
    assert_eq!(r.len(), 4);
    for (row, (bytes, n)) in r.iter().zip([(60, 2), (60, 3), (1514, 2), (1514, 3)]) {
        let o = row.as_object().unwrap();
        let mut keys: Vec<&str> = o.keys().map(String::as_str).collect();
        keys.sort();
        let mut want = KEYS;
        want.sort();
        assert_eq!(keys, want);
        assert_eq!(row["frame_bytes"], bytes);
        assert_eq!(row["switches"], n);
        assert_eq!(row["rate_bps"], 1_000_000_000u64);
        assert_eq!(row["bp_ms"], 10.0);
        assert_eq!(row["gp_ms"], 0.2);
        assert!(row["max_tt_ms"].is_null());
        // bytes × 8 ns at 1 Gb/s.
        assert_eq!(
            row["frame_time_ms"].as_f64().unwrap(),
            (bytes * 8) as f64 / 1e6
        );
        assert!(row["nf_max"].is_u64());
    }
    // The keys are printed in the documented order.
    let out = capacity(&[
        "--bp", "10ms", "--gp", "0ms", "--rate", "1G", "--frame", "60", "--json",
    ]);
    let t = text(&out.stdout);
    let at: Vec<usize> = KEYS
        .iter()
        .map(|k| t.find(&format!("\"{k}\"")).expect(k))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{t}");
    // 10 ms / (0.48 µs + 0.4 ms) = 24.97.
    assert_eq!(r[0]["nf_max"], 24);
    // A Max_TT is a number where given.
    let r = rows_of("--bp 10ms --gp 0.2ms --rate 1G --frame 60 --max-tt 0.5ms");
    assert_eq!(r[0]["max_tt_ms"], 0.5);
    assert_eq!(r[0]["nf_max"], 20);
}

/// A tag adds bytes to every frame; `--suite` adds what the profile's frames carry
/// (docs/wire-ivnae.md: a 12-byte header and the inner EtherType, then the tag; IEEE
/// 802.1AE: a 16-byte SecTAG with the SCI and a 16-byte ICV).
#[test]
fn tags_and_suites() {
    let base = [
        "--bp", "10ms", "--gp", "0ms", "--rate", "100M", "--frame", "60",
    ];
    let one = |extra: &[&str]| rows(&[&base[..], extra].concat()).remove(0);
    let tagged = one(&["--tag-bytes", "20"]);
    assert_eq!(tagged["frame_bytes"], 80);
    assert_eq!(tagged["nf_max"], 1562);
    assert_eq!(
        one(&["--suite", "hmac-sha1"])["frame_bytes"],
        60 + 12 + 2 + 20
    );
    assert_eq!(
        one(&["--suite", "hmac-sha256"])["frame_bytes"],
        60 + 12 + 2 + 32
    );
    assert_eq!(
        one(&["--suite", "macsec-gcm-aes-128"])["frame_bytes"],
        60 + 16 + 16
    );
    // The table shows what the tag costs.
    let out = capacity(&[&base[..], &["--tag-bytes", "20"]].concat());
    assert!(out.status.success());
    let t = text(&out.stdout);
    assert!(t.contains("NF_max untagged"), "{t}");
    let row = t
        .lines()
        .find(|l| l.trim_start().starts_with("60+20"))
        .expect(&t);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells.last(), Some(&"2083"), "{row}");
    assert!(cells.contains(&"1562"), "{row}");
}

#[test]
fn bad_input_exits_2() {
    let ok = [
        "--bp", "10ms", "--gp", "0.2ms", "--rate", "100M", "--frame", "60",
    ];
    // The good options with some replaced or added.
    let with = |changes: &[(&str, &str)]| -> Vec<String> {
        let mut v: Vec<String> = ok.iter().map(|s| s.to_string()).collect();
        for (key, value) in changes {
            match v.iter().position(|a| a == key) {
                Some(i) => v[i + 1] = value.to_string(),
                None => v.extend([key.to_string(), value.to_string()]),
            }
        }
        v
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (with(&[("--bp", "10")]), "unit is missing"),
        (with(&[("--bp", "10 min")]), "unknown unit"),
        (with(&[("--bp", "0ms")]), "--bp must be above 0"),
        (with(&[("--gp", "+1ms")]), "decimal number"),
        (with(&[("--gp", "0.5ps")]), "finer than 1 ps"),
        (with(&[("--rate", "100X")]), "unknown unit"),
        (with(&[("--rate", "0")]), "above 0"),
        (with(&[("--rate", "0.5")]), "whole number of bits"),
        (with(&[("--frame", "0")]), "at least 1 byte"),
        (with(&[("--frame", "x")]), "invalid"),
        (with(&[("--switches", "0")]), "at least 1 switch"),
        (with(&[("--switches", "5..1")]), "empty"),
        (with(&[("--switches", "1..9999")]), "too many"),
        (with(&[("--frame-time", "0ms")]), "above 0"),
        (with(&[("--frame-time", "1us,2us")]), "one per --frame"),
        (
            with(&[("--max-tt", "1ms"), ("--switches", "2")]),
            "one switch",
        ),
        (with(&[("--switch-overhead", "0.1ms")]), "--diff"),
        (
            with(&[("--switch-overhead", "0.1ms"), ("--diff", "0.2ms")]),
            "longer than the frame time",
        ),
        (with(&[("--suite", "aes512-gcm")]), "aes512-gcm"),
        (with(&[("--suite", "esp-aes128-gcm")]), "--tag-bytes"),
        (
            with(&[("--tag-bytes", "20"), ("--suite", "hmac-sha1")]),
            "cannot be used with",
        ),
        (
            with(&[("--tag-bytes", "20"), ("--frame-time", "0.1ms")]),
            "--frame-time is measured",
        ),
    ];
    for (args, why) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = capacity(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `--help` has examples, and every example runs.
#[test]
fn help_has_examples_that_run() {
    let out = capacity(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    assert!(help.contains("Examples:"), "{help}");
    for opt in [
        "--bp",
        "--gp",
        "--rate",
        "--frame",
        "--frame-time",
        "--switches",
        "--max-tt",
        "--switch-overhead",
        "--diff",
        "--tag-bytes",
        "--suite",
        "--json",
    ] {
        assert!(help.contains(opt), "{opt} in {help}");
    }
    // Example commands: lines starting with `ivnsec tdma capacity`, `\` continuing them.
    let mut examples: Vec<String> = Vec::new();
    let mut open = false;
    for line in help.lines().skip_while(|l| !l.starts_with("Examples:")) {
        let l = line.trim();
        if l.starts_with("ivnsec tdma capacity") {
            examples.push(String::new());
            open = true;
        }
        if open {
            let last = examples.last_mut().unwrap();
            last.push_str(l.trim_end_matches('\\'));
            last.push(' ');
            open = l.ends_with('\\');
        }
    }
    assert!(examples.len() >= 5, "{examples:?}");
    for ex in &examples {
        let words: Vec<&str> = ex.split_whitespace().skip(3).collect();
        let out = capacity(&words);
        assert_eq!(out.status.code(), Some(0), "{ex}: {}", text(&out.stderr));
        assert!(!out.stdout.is_empty(), "{ex}");
    }
    let top = Command::new(BIN).args(["tdma", "--help"]).output().unwrap();
    assert!(text(&top.stdout).contains("capacity"));
}
