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

/// `ivnsec suites --calibrate --cache FILE` measures the providers here, writes a table `auto`
/// reads (every primitive, picks that follow from its figures), and with IVNSEC_AUTO_TABLE=FILE
/// `suites`, `--version` and `suites --json` say the table is this calibration and show its
/// picks; a corrupt file gives the built-in table with one warning; IVNSEC_AUTO_TABLE=builtin
/// the built-in table.
#[test]
fn calibrate_writes_the_table_auto_reads() {
    let dir = std::env::temp_dir().join(format!("ivnsec-test-calibrate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("sub").join("auto-table.toml");
    let ivnsec = |args: &[&str], table: &str| {
        Command::new(env!("CARGO_BIN_EXE_ivnsec"))
            .args(args)
            .env("IVNSEC_AUTO_TABLE", table)
            .output()
            .expect("run ivnsec")
    };
    let f = file.to_str().unwrap();
    let o = ivnsec(
        &[
            "suites",
            "--calibrate",
            "--seconds",
            "1",
            "--cache",
            f,
            "--json",
        ],
        "builtin",
    );
    let v = with_codes("suites --calibrate", &o, &[0]);
    assert_eq!(v["cache"], f);
    // IVNSEC_AUTO_TABLE=builtin: written, but not what auto reads, and it says so.
    assert_eq!(v["auto_reads_it"], false);
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains("IVNSEC_AUTO_TABLE=builtin")
    );
    let prims = v["primitives"].as_array().unwrap();
    assert_eq!(prims.len(), 8, "{v}");
    let text = std::fs::read_to_string(&file).unwrap();
    let t: toml::Table = text.parse().unwrap();
    assert_eq!(t["version"].as_integer(), Some(1));
    assert_eq!(t["sizes"].as_array().unwrap().len(), 8);
    let file_prims = t["primitive"].as_array().unwrap();
    assert_eq!(file_prims.len(), 8);
    // The JSON's picks are the file's, and every provider measured has a positive figure at
    // every size.
    let mut want = Vec::new();
    for (p, fp) in prims.iter().zip(file_prims) {
        assert_eq!(p["primitive"].as_str(), fp["name"].as_str());
        let picks = p["picks"].as_array().unwrap();
        let fpicks = fp["picks"].as_array().unwrap();
        assert!((1..=2).contains(&picks.len()), "{p}");
        assert_eq!(picks.len(), fpicks.len());
        for (a, b) in picks.iter().zip(fpicks) {
            assert_eq!(a["provider"].as_str(), b["provider"].as_str());
            assert_eq!(
                a["up_to"].as_i64(),
                b.get("up_to").and_then(|x| x.as_integer())
            );
        }
        for (prov, ns) in p["ns"].as_object().unwrap() {
            let ns = ns.as_array().unwrap();
            assert_eq!(ns.len(), 8, "{prov}");
            assert!(
                ns.iter().all(|x| x.as_f64().unwrap() > 0.0),
                "{prov}: {ns:?}"
            );
        }
        want.push(p["auto"].as_str().unwrap().to_string());
    }

    // Read back: `suites` says the table is calibrated and prints its picks.
    let o = ivnsec(&["suites"], f);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("auto table: calibrated on this machine ("),
        "{out}"
    );
    assert!(out.contains(f), "{out}");
    for w in &want {
        assert!(out.contains(&format!("\n  {w}\n")), "{w} not in {out}");
    }
    assert!(String::from_utf8_lossy(&o.stderr).is_empty());
    let v = with_codes("suites", &ivnsec(&["suites", "--json"], f), &[0]);
    assert_eq!(v["auto_table_calibrated"], true);
    assert!(
        v["auto_table_source"]
            .as_str()
            .unwrap()
            .starts_with("calibrated on this machine")
    );
    let o = ivnsec(&["--version"], f);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("auto table: calibrated on this machine ("),
        "{out}"
    );
    assert!(out.contains(&want[0]), "{out}");

    // The built-in table, forced.
    let o = ivnsec(&["suites"], "builtin");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("auto table: built-in"), "{out}");
    assert!(out.contains("IVNSEC_AUTO_TABLE=builtin"), "{out}");

    // A corrupt file: the built-in table, one warning, exit 0.
    std::fs::write(&file, text.replace("version = 1", "version = 7")).unwrap();
    let o = ivnsec(&["suites"], f);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("warning").count(), 1, "{err}");
    assert!(err.contains("version 7"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("auto table: built-in"), "{out}");
    assert!(out.contains("chacha20-poly1305 at 2048 B (fast up to it, openssl above)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The options of `--calibrate` need it; --seconds out of range and a cache path that is a
/// directory are usage errors (2); a cache that cannot be written is an environment problem (3),
/// found before anything is measured.
#[test]
fn calibrate_refuses_bad_input() {
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_ivnsec"))
            .arg("suites")
            .args(args)
            .output()
            .expect("run ivnsec");
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--seconds", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--calibrate"), "{err}");
    let (code, err) = run(&["--calibrate", "--seconds", "0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("0.1..=600"), "{err}");
    let dir = std::env::temp_dir();
    let (code, err) = run(&["--calibrate", "--cache", dir.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("is a directory"), "{err}");
    // Under a regular file: no directory can be made there (also as root).
    let exe = env!("CARGO_BIN_EXE_ivnsec");
    let (code, err) = run(&["--calibrate", "--cache", &format!("{exe}/auto-table.toml")]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("cannot write the calibration"), "{err}");
    assert!(!err.contains("measuring"), "it measured first: {err}");
}
