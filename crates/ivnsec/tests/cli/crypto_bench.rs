//! `ivnsec crypto-bench`: the JSON shape, usage errors and provider handling. Timings are not
//! asserted (the machine is shared); only that the numbers are there and positive.

use std::process::Command;

use crate::common::crypto_bench;
use crate::common::json::with_codes;

fn positive(row: &serde_json::Value, field: &str) -> f64 {
    let v = row[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} missing or not a number in {row}"));
    assert!(v > 0.0 && v.is_finite(), "{field} = {v}");
    v
}

#[test]
fn json_has_every_field_for_each_combination() {
    let out = crypto_bench(&[
        "--quick",
        "--batches",
        "3",
        "--suite",
        "aes128-gcm",
        "--suite",
        "hmac-sha256,chacha20-poly1305/auth",
        "--sizes",
        "16,100",
        "--provider",
        "all",
        "--json",
    ]);
    let v = with_codes("crypto-bench", &out, &[0]);
    let rows = v["results"].as_array().expect("results array");
    // aes128-gcm and chacha20-poly1305: fast, openssl and portable each; hmac-sha256: fast and
    // portable (the OpenSSL provider has no MAC); 2 sizes.
    assert_eq!(rows.len(), (3 + 3 + 2) * 2, "{v}");
    for row in rows {
        let suite = row["suite"].as_str().unwrap();
        assert!(
            ["aes128-gcm", "hmac-sha256", "chacha20-poly1305"].contains(&suite),
            "{suite}"
        );
        let level = row["level"].as_str().unwrap();
        // A suite name alone means its default level; `/auth` selects the other one.
        let expected = if suite == "aes128-gcm" {
            "conf"
        } else {
            "auth"
        };
        assert_eq!(level, expected, "{suite}");
        assert!(["fast", "openssl", "portable"].contains(&row["provider"].as_str().unwrap()));
        let size = row["size"].as_u64().unwrap();
        assert!(size == 16 || size == 100);
        assert_eq!(row["plain_frame_len"].as_u64().unwrap(), 14 + size);
        assert!(row["protected_frame_len"].as_u64().unwrap() > 14 + size);
        for f in [
            "protect_ns",
            "verify_ns",
            "protect_mbps",
            "verify_mbps",
            "protect_ns_min",
            "protect_ns_max",
            "protect_ns_median",
            "verify_ns_min",
            "verify_ns_max",
        ] {
            positive(row, f);
        }
        assert!(positive(row, "protect_ns_min") <= positive(row, "protect_ns_max"));
        for f in ["openssl_mbps", "ratio_vs_openssl"] {
            assert!(
                row.get(f).is_some_and(|x| x.is_null()),
                "{f} should be null without --vs-openssl: {row}"
            );
        }
    }
}

#[test]
fn unknown_suite_and_bad_sizes_are_usage_errors() {
    for args in [
        &["--suite", "aes512-gcm"][..],
        &["--suite", "hmac-sha256/conf"],
        &["--sizes", "0"],
        &["--sizes", "65536"],
        &["--sizes", "12,abc"],
        &["--provider", "fastest"],
    ] {
        let out = crypto_bench(&[&["--quick", "--json"], args].concat());
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty());
    }
}

/// An explicitly requested suite the explicitly requested provider lacks is a usage error
/// (not a silent skip); with `--provider all` the suite runs on the providers that have it.
#[test]
fn provider_without_the_suite() {
    let out = crypto_bench(&[
        "--quick",
        "--provider",
        "fast",
        "--suite",
        "aes128-ccm",
        "--sizes",
        "16",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not implement"));

    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[
            "--quick",
            "--batches",
            "2",
            "--provider",
            "all",
            "--suite",
            "aes128-ccm",
            "--sizes",
            "16",
            "--json",
        ]),
        &[0],
    );
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["provider"], "openssl");
    assert_eq!(rows[1]["provider"], "portable");
}

/// `--provider openssl` runs the AEADs on OpenSSL's libcrypto; `auto` runs a profile whose
/// primitive is split by size on its per-primitive provider; the OpenSSL provider has no MAC,
/// which is a usage error when named.
#[test]
fn openssl_and_auto_providers() {
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[
            "--quick",
            "--batches",
            "2",
            "--provider",
            "openssl",
            "--suite",
            "chacha20-poly1305,aes128-ccm",
            "--sizes",
            "64",
            "--json",
        ]),
        &[0],
    );
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["provider"], "openssl");
        positive(row, "protect_ns");
        positive(row, "bare_aead_ns");
    }
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[
            "--quick",
            "--batches",
            "2",
            "--provider",
            "auto",
            "--suite",
            "chacha20-poly1305,aes128-gcm",
            "--sizes",
            "64",
            "--json",
        ]),
        &[0],
    );
    let names: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["provider"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["auto", "fast"]);
    let out = crypto_bench(&[
        "--quick",
        "--provider",
        "openssl",
        "--suite",
        "hmac-sha256",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not implement"));
}

#[test]
fn vs_openssl_fills_the_ratio_when_openssl_is_installed() {
    let have_openssl = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    let out = crypto_bench(&[
        "--quick",
        "--batches",
        "2",
        "--provider",
        "fast",
        "--suite",
        "hmac-sha256,aes128-gcm/auth",
        "--sizes",
        "64",
        "--vs-openssl",
        "--json",
    ]);
    if !have_openssl {
        assert_eq!(out.status.code(), Some(3), "no openssl: environment error");
        return;
    }
    let v = with_codes("crypto-bench", &out, &[0]);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        if row["suite"] == "hmac-sha256" {
            positive(row, "openssl_mbps");
            positive(row, "ratio_vs_openssl");
            assert!(
                row["openssl_cmd"]
                    .as_str()
                    .unwrap()
                    .contains("-hmac sha256")
            );
        } else {
            // AEAD at the auth level: no single OpenSSL equivalent.
            assert!(
                row["openssl_mbps"].is_null() && row["ratio_vs_openssl"].is_null(),
                "{row}"
            );
            assert!(row["openssl_note"].is_string());
        }
    }
}

/// MACsec and ESP profiles: whole-frame rows with the bare-AEAD comparison. The overheads are
/// differences of timings (they may be negative on a noisy machine): only checked to be numbers.
#[test]
fn macsec_and_esp_rows_have_the_bare_aead_overhead() {
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[
            "--quick",
            "--suite",
            "macsec-gcm-aes-128,esp-aes128-gcm",
            "--sizes",
            "64",
            "--json",
        ]),
        &[0],
    );
    let rows = v["results"].as_array().expect("results array");
    let mut protocols: Vec<&str> = rows
        .iter()
        .map(|r| r["protocol"].as_str().expect("protocol"))
        .collect();
    protocols.dedup();
    assert_eq!(protocols, ["macsec", "esp"], "{v}");
    for row in rows {
        assert_eq!(row["size"].as_u64(), Some(64));
        for f in [
            "protect_ns",
            "verify_ns",
            "protect_ns_median",
            "verify_ns_median",
            "bare_aead_ns",
            "bare_aead_open_ns",
        ] {
            positive(row, f);
        }
        for f in ["overhead_pct", "verify_overhead_pct"] {
            let x = row[f]
                .as_f64()
                .unwrap_or_else(|| panic!("{f} missing in {row}"));
            assert!(x.is_finite() && x > -100.0, "{f} = {x}");
        }
        assert!(
            row["protected_frame_len"].as_u64().unwrap() > row["plain_frame_len"].as_u64().unwrap()
        );
    }
}

/// Beside the bare AEAD of `size` bytes, each MACsec and ESP row has the bare AEAD of the bytes
/// its framing encrypts (MACsec: EtherType and payload, IEEE 802.1AE §14.1; ESP transport: UDP
/// header, payload, padding to 4 bytes, pad length and next header, RFC 4303 §2.4) and the
/// overheads against it, in the JSON and in three more table columns.
#[test]
fn macsec_and_esp_rows_have_the_framing_overhead() {
    let args = [
        "--quick",
        "--suite",
        "macsec-gcm-aes-128,esp-aes128-gcm,esp-chacha20-poly1305",
        "--sizes",
        "64,1440",
    ];
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[&args[..], &["--json"]].concat()),
        &[0],
    );
    let rows = v["results"].as_array().expect("results array");
    assert!(!rows.is_empty());
    for row in rows {
        let size = row["size"].as_u64().unwrap();
        let want = match row["protocol"].as_str().unwrap() {
            "macsec" => size + 2,
            _ => (8 + size + 2).div_ceil(4) * 4,
        };
        assert_eq!(row["encrypted_len"].as_u64(), Some(want), "{row}");
        positive(row, "bare_aead_encrypted_ns");
        positive(row, "bare_aead_encrypted_open_ns");
        positive(row, "bare_aead_ns_min");
        positive(row, "bare_aead_encrypted_open_ns_min");
        for f in [
            "framing_overhead_pct",
            "verify_framing_overhead_pct",
            "overhead_min_pct",
            "verify_overhead_min_pct",
            "framing_overhead_min_pct",
            "verify_framing_overhead_min_pct",
        ] {
            let x = row[f]
                .as_f64()
                .unwrap_or_else(|| panic!("{f} missing in {row}"));
            assert!(x.is_finite() && x > -100.0, "{f} = {x}");
        }
    }
    // An IVN-AE HMAC row has no AEAD: the new fields are null.
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[
            "--quick",
            "--suite",
            "hmac-sha256",
            "--sizes",
            "64",
            "--json",
        ]),
        &[0],
    );
    for row in v["results"].as_array().unwrap() {
        for f in [
            "encrypted_len",
            "bare_aead_encrypted_ns",
            "framing_overhead_pct",
            "bare_aead_ns_min",
            "overhead_min_pct",
            "framing_overhead_min_pct",
        ] {
            assert!(row[f].is_null(), "{f} in {row}");
        }
    }
    let out = crypto_bench(&args);
    assert!(out.status.success());
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.ends_with("bare e  p f-ovh  v f-ovh")),
        "{table}"
    );
}

/// `--frames N` times N frames one by one: seed 001 Figure 6's HMACs (SHA-1, SHA-256,
/// SHA3-256) at 60 and 80 bytes get min / mean / max per single frame in the JSON (with the
/// clock's own cost in `meta.timer_ns`) and two more columns in the table; without it the
/// fields are null and the table is as before.
#[test]
fn frames_one_by_one_for_the_seed_001_hmacs() {
    let common = [
        "--quick",
        "--batches",
        "2",
        "--provider",
        "portable",
        "--suite",
        "hmac-sha1,hmac-sha256,hmac-sha3-256",
        "--sizes",
        "60,80",
    ];
    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[&common[..], &["--frames", "200", "--json"]].concat()),
        &[0],
    );
    assert_eq!(v["meta"]["frames"], 200);
    assert!(
        v["meta"]["timer_ns"].as_f64().is_some_and(|t| t >= 0.0),
        "{v}"
    );
    let rows = v["results"].as_array().unwrap();
    let seen: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| (r["suite"].as_str().unwrap(), r["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            ("hmac-sha1", 60),
            ("hmac-sha1", 80),
            ("hmac-sha256", 60),
            ("hmac-sha256", 80),
            ("hmac-sha3-256", 60),
            ("hmac-sha3-256", 80),
        ]
    );
    for row in rows {
        for op in ["protect", "verify"] {
            let min = positive(row, &format!("{op}_frame_ns_min"));
            let mean = positive(row, &format!("{op}_frame_ns_mean"));
            let max = positive(row, &format!("{op}_frame_ns_max"));
            assert!(min <= mean && mean <= max, "{op}: {row}");
        }
    }

    let v = with_codes(
        "crypto-bench",
        &crypto_bench(&[&common[..], &["--json"]].concat()),
        &[0],
    );
    assert_eq!(v["meta"]["frames"], 0);
    assert!(v["meta"]["timer_ns"].is_null());
    for row in v["results"].as_array().unwrap() {
        assert!(row["protect_frame_ns_max"].is_null(), "{row}");
    }

    let table = |extra: &[&str]| {
        let out = crypto_bench(&[&common[..], extra].concat());
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(table(&["--frames", "50"]).contains("1-frame protect ns"));
    assert!(!table(&[]).contains("1-frame"));
    let out = crypto_bench(&[
        "--quick", "--frames", "1000001", "--sizes", "16", "--suite", "crc32",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
