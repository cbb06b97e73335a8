//! `ivnsec tls-bench`: the JSON shape with positive handshake counts from a short run (ours and
//! OpenSSL's), resumption that really resumes, the post-quantum hybrid, handshake failures
//! counted (clients with a certificate of another CA), seed 004's DHE-RSA row and table, a
//! missing OpenSSL (exit 3) and bad options (exit 2). Timings are not asserted (the machine is
//! shared); only that the numbers are there, positive and consistent.

use std::process::{Command, Output};

use crate::common::{BIN, TempDir, json, text};

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("tls-bench")
        .args(args)
        .output()
        .expect("run ivnsec")
}

fn has_openssl() -> bool {
    Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn short_run_has_the_keys_and_positive_counts() {
    if !has_openssl() {
        eprintln!("skipped: no openssl command (scripts/setup installs it)");
        return;
    }
    let o = bench(&[
        "--algo",
        "ecdsa-p256",
        "--seconds",
        "1",
        "--concurrency",
        "2",
        "--dhe",
        "off",
        "--json",
    ]);
    let v = json::with_codes("short run", &o, &[0]);
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 1, "{v}");
    let r = &rows[0];
    assert_eq!(r["algo"], "ecdsa-p256");
    assert_eq!(r["client_auth"], false);
    assert_eq!(r["resumption"], false);
    assert_eq!(r["kx"], "x25519");
    assert_eq!(r["protocol"], "TLSv1.3");
    assert!(r["handshakes"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["failures"], 0, "{r}");
    assert_eq!(r["resumed"], 0, "full handshakes only: {r}");
    let per_s = json::f64_of(r, "handshakes_per_s");
    assert!(per_s > 0.0);
    // per second = count / wall seconds; per minute = 60 × per second.
    let expect = r["handshakes"].as_f64().unwrap() / json::f64_of(r, "seconds");
    assert!((per_s - expect).abs() < 1e-6 * expect, "{r}");
    assert!((json::f64_of(r, "handshakes_per_min") - 60.0 * per_s).abs() < 1e-6 * per_s);
    let cpu = json::f64_of(r, "cpu_pct");
    assert!(cpu > 0.0 && cpu <= 100.0, "{r}");
    assert!(json::f64_of(r, "cpu_us_per_handshake") > 0.0, "{r}");
    let ossl = &r["openssl"];
    let ossl_per_s = json::f64_of(ossl, "handshakes_per_s");
    assert!(ossl_per_s > 0.0, "{ossl}");
    let cmd = ossl["command"].as_str().expect("openssl.command");
    for part in [
        "openssl s_server",
        "-tls1_3",
        "openssl s_time",
        "-new",
        "-www /ok",
    ] {
        assert!(cmd.contains(part), "{part} not in {cmd}");
    }
    assert!(!cmd.contains("-cert") || cmd.contains("-cert /"), "{cmd}");
    assert_eq!(ossl["measured"]["failures"], 0, "{ossl}");
    let ratio = json::f64_of(r, "ratio");
    assert!(
        (ratio - per_s / ossl_per_s).abs() < 1e-9 * ratio.max(1.0),
        "{r}"
    );
    // The temporary certificate directory is gone.
    let dir = cmd
        .strip_prefix("cd ")
        .and_then(|c| c.split_whitespace().next())
        .expect("cd DIR");
    assert!(!std::path::Path::new(dir).exists(), "{dir} left behind");
}

#[test]
fn resumption_and_hybrid_key_exchange() {
    // X25519MLKEM768 with client certificates and resumption, ours only.
    let o = bench(&[
        "--algo",
        "ed25519",
        "--kx",
        "x25519mlkem768",
        "--client-auth",
        "on",
        "--resumption",
        "on",
        "--seconds",
        "1",
        "--concurrency",
        "2",
        "--openssl",
        "off",
        "--dhe",
        "off",
        "--json",
    ]);
    let v = json::with_codes("resumption", &o, &[0]);
    let r = &v["results"][0];
    assert_eq!(r["kx"], "x25519mlkem768");
    assert_eq!(r["client_auth"], true);
    assert_eq!(r["resumption"], true);
    let n = r["handshakes"].as_u64().unwrap();
    let resumed = r["resumed"].as_u64().unwrap();
    // Each client's first connection is a full handshake; the rest resume.
    assert!(n > 4 && resumed > 0 && resumed + 2 >= n, "{r}");
    assert!(r["openssl"]["handshakes_per_s"].is_null(), "{r}");
    assert!(r["ratio"].is_null(), "{r}");
}

#[test]
fn a_client_of_another_ca_is_counted_as_failed() {
    let mut args = vec![
        "--algo",
        "ecdsa-p256",
        "--client-auth",
        "on",
        "--foreign-client-cert",
        "--seconds",
        "1",
        "--concurrency",
        "1",
        "--dhe",
        "off",
        "--json",
    ];
    let openssl = has_openssl();
    if !openssl {
        args.extend(["--openssl", "off"]);
    }
    let o = bench(&args);
    let v = json::with_codes("foreign client certificate", &o, &[1]);
    let r = &v["results"][0];
    assert_eq!(r["handshakes"], 0, "{r}");
    assert!(r["failures"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(json::f64_of(r, "handshakes_per_s"), 0.0);
    if openssl {
        let m = &r["openssl"]["measured"];
        assert_eq!(m["handshakes"], 0, "{m}");
        assert!(m["failures"].as_u64().unwrap() > 0, "{m}");
    }
}

#[test]
fn seed004_dhe_row_and_table() {
    if !has_openssl() {
        eprintln!("skipped: no openssl command (scripts/setup installs it)");
        return;
    }
    let o = bench(&[
        "--algo",
        "rsa-2048",
        "--client-auth",
        "on",
        "--seconds",
        "1",
        "--concurrency",
        "1",
        "--openssl",
        "off",
    ]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{}\n{out}", text(&o.stderr));
    // Seed 004 Table 5.2, as printed there (§5.1), beside the OpenSSL DHE-RSA figures.
    assert!(out.contains("Beside seed 004 Table 5.2"), "{out}");
    assert!(
        out.contains("| rsa-1024 | 445.4 | 40.32 | 509.3 | 13.29 |"),
        "{out}"
    );
    assert!(
        out.contains("| rsa-2048 | 155.6 | 92.14 | 420.9 | 4.82 |"),
        "{out}"
    );
    assert!(
        out.contains("| rsa-4096 | 19.6 | 81.97 | 115.5 | 4.34 |"),
        "{out}"
    );
    assert!(out.contains("rustls has no DHE"), "{out}");
    for bits in ["rsa-1024", "rsa-2048"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("OpenSSL only, TLSv1.2 DHE-RSA-AES256-SHA {bits}")))
            .unwrap_or_else(|| panic!("no DHE line for {bits}: {out}"));
        let per_min: f64 = line
            .split(": ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(per_min > 0.0, "{line}");
        assert!(line.contains("failures 0"), "{line}");
    }
    assert!(out.contains("-dhparam"), "{out}");
}

#[test]
fn missing_openssl_is_an_environment_error() {
    let empty = TempDir::new("tls-bench-no-openssl");
    let o = Command::new(BIN)
        .args(["tls-bench", "--algo", "ecdsa-p256", "--seconds", "1"])
        .env("PATH", &empty.0)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("apt-get install openssl"), "{err}");
    assert!(err.contains("--openssl off"), "{err}");
}

#[test]
fn bad_options_are_usage_errors() {
    for args in [
        &["--seconds", "0"][..],
        &["--seconds", "3601"],
        &["--seconds", "x"],
        &["--concurrency", "0"],
        &["--concurrency", "257"],
        &["--algo", "rsa-1024"],
        &["--algo", ""],
        &["--kx", "p256"],
        &["--client-auth", "yes"],
        &["--resumption", "maybe"],
        &["--openssl", "1"],
        &["--no-such-option"],
    ] {
        let o = bench(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            !text(&o.stderr).trim().is_empty(),
            "{args:?}: no reason given"
        );
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o.stdout));
    }
}

#[test]
fn help_has_an_example() {
    let o = bench(&["--help"]);
    let h = text(&o.stdout);
    assert!(o.status.success());
    for part in [
        "ivnsec tls-bench --algo",
        "--client-auth",
        "--kx",
        "seed 004",
    ] {
        assert!(h.contains(part), "{part}: {h}");
    }
}
