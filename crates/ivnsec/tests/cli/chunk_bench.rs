//! `ivnsec crypto-bench --chunk-sizes … --context …` (seed 003 Fig. 8): the JSON shape, the
//! break-evens it derives, the table and usage errors. Timings are not asserted (the machine is
//! shared); only that they are there, consistent and positive.

use std::process::Command;

use crate::common::crypto_bench;
use crate::common::json::with_codes;

/// Every provider that has AES-128-CBC (fast and portable at least), both modes, both sizes;
/// MB/s is the chunk over the median; a break-even for each pair of providers in each mode and
/// one per provider between the modes, each with its sentence; what `auto` runs for the suite;
/// seed 004's break-even beside ours.
#[test]
fn json_has_every_series_and_the_break_evens() {
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&["--chunk-sizes", "1024,64", "--quick", "--json"]),
        &[0],
    );
    let rows = v["chunks"].as_array().unwrap();
    let mut provs: Vec<&str> = rows
        .iter()
        .map(|r| r["provider"].as_str().unwrap())
        .collect();
    provs.sort_unstable();
    provs.dedup();
    assert!(
        provs.contains(&"fast") && provs.contains(&"portable"),
        "{provs:?}"
    );
    assert_eq!(rows.len(), provs.len() * 2 * 2);
    assert_eq!(v["meta"]["sizes"], serde_json::json!([64, 1024]));
    for r in rows {
        assert_eq!(r["suite"], "aes128-cbc");
        assert!(r["context"] == "reuse" || r["context"] == "fresh", "{r}");
        let (med, min, max) = (
            r["ns_median"].as_f64().unwrap(),
            r["ns_min"].as_f64().unwrap(),
            r["ns_max"].as_f64().unwrap(),
        );
        assert!(med > 0.0 && min <= med && med <= max, "{r}");
        let size = r["size"].as_f64().unwrap();
        assert!((r["mbps"].as_f64().unwrap() - size / med * 1e3).abs() < 1e-6);
    }
    let evens = v["break_even"].as_array().unwrap();
    let pairs = provs.len() * (provs.len() - 1) / 2;
    let kind = |k: &str| evens.iter().filter(|e| e["kind"] == k).count();
    assert_eq!(kind("providers"), 2 * pairs);
    assert_eq!(kind("contexts"), provs.len());
    for e in evens {
        assert!(!e["text"].as_str().unwrap().is_empty());
        // A size is given exactly when the winner changes; it lies between the two measured
        // sizes around it.
        match e["size"].as_f64() {
            Some(s) => {
                let (lo, hi) = (
                    e["last_below"].as_f64().unwrap(),
                    e["first_above"].as_f64().unwrap(),
                );
                assert!(lo <= s && s <= hi, "{e}");
                assert_ne!(e["below"], e["above"]);
            }
            None => assert!(e["last_below"].is_null()),
        }
    }
    assert_eq!(v["auto"]["aes128-cbc"], "aes128: fast");
    assert!(v["seed004_break_even"].as_str().unwrap().contains("1024kB"));
}

/// An AEAD in one mode, as a table: the rows, the break-even lines and auto's split for it.
#[test]
fn table_for_an_aead_in_one_mode() {
    let o = crypto_bench(&[
        "--chunk-sizes",
        "64,2048",
        "--suite",
        "chacha20-poly1305",
        "--context",
        "fresh",
        "--provider",
        "fast",
        "--quick",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = String::from_utf8_lossy(&o.stdout);
    let rows: Vec<&str> = t
        .lines()
        .filter(|l| l.starts_with("chacha20-poly1305"))
        .collect();
    assert_eq!(rows.len(), 2, "{t}");
    assert!(
        rows.iter()
            .all(|l| l.contains(" fast ") && l.contains(" fresh "))
    );
    assert!(t.contains("break-even (from the medians):"), "{t}");
    assert!(
        t.contains("--provider auto for chacha20-poly1305: chacha20-poly1305: fast up to 2048 B"),
        "{t}"
    );
}

#[test]
fn bad_chunk_options_are_usage_errors() {
    for (args, needle) in [
        (&["--chunk-sizes", "100"][..], "16-byte"),
        (&["--chunk-sizes", "0"][..], "out of range"),
        (
            &["--chunk-sizes", "64", "--context", "sometimes"][..],
            "--context",
        ),
        (
            &["--chunk-sizes", "64", "--suite", "hmac-sha256"][..],
            "--suite",
        ),
        (&["--context", "reuse"][..], "--chunk-sizes"),
        (&["--chunk-sizes", "64", "--sizes", "64"][..], "--sizes"),
        (&["--chunk-sizes", "64", "--vs-openssl"][..], "--vs-openssl"),
    ] {
        let o = crypto_bench(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let help = String::from_utf8_lossy(&crypto_bench(&["--help"]).stdout).into_owned();
    for s in ["--chunk-sizes", "--context", "Seed 003 Figure 8"] {
        assert!(help.contains(s), "help lacks {s}");
    }
}

/// `ivnsec suites` says where `auto` splits by size (its break-evens) beside seed 004's.
#[test]
fn suites_states_the_break_evens() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ivnsec"))
            .args(args)
            .output()
            .expect("run ivnsec")
    };
    let o = run(&["suites"]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("chacha20-poly1305 at 2048 B (fast up to it, openssl above)"),
        "{t}"
    );
    assert!(t.contains("aes128-ccm at 256 B (portable up to it, openssl above)"));
    assert!(t.contains("1024kB"));
    let v = with_codes("crypto-bench", &run(&["suites", "--json"]), &[0]);
    let s = v["auto_break_even"].as_array().unwrap();
    assert!(s.iter().any(|x| x["primitive"] == "chacha20-poly1305"
        && x["up_to"] == 2048
        && x["below"] == "fast"
        && x["above"] == "openssl"));
    assert!(v["profiles"].as_array().unwrap().len() > 10);
}
