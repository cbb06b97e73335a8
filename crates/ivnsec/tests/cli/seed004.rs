//! Seed 004 as a plan without root: the preset on loopback says the tunnel tables need a
//! testbed; bad tunnel tables exit 2 naming the key. The tunnel measurements run as root:
//! `testbed_pair/seed004.rs`.

use crate::common::{TempDir, ivnsec, json, text};
use std::path::Path;

#[test]
fn the_preset_on_loopback_skips_the_tunnels_and_says_why() {
    let d = TempDir::new("seed004-lo");
    let plan = d.path("p.toml");
    // The preset's tables with small counts (the preset itself: 120,000 timed frames).
    let preset = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans/seed004.toml"),
    )
    .unwrap();
    assert!(preset.contains("[[tunnel_ping]]") && preset.contains("[[tunnel_bulk]]"));
    let short = preset
        .replace("frames = 10000", "frames = 50")
        .replace(
            "provider = \"all\"",
            "provider = \"all\"\nbatches = 2\nbatch_ms = 0.2",
        )
        .replace(
            "algos = [\"rsa-2048\", \"rsa-4096\"]",
            "algos = [\"rsa-2048\"]",
        )
        .replace("concurrency = 10", "concurrency = 2")
        .replace("seconds = 8", "seconds = 1")
        .replace("openssl = true\ndhe = true", "openssl = false\ndhe = false");
    assert!(short.contains("batches = 2") && short.contains("openssl = false"));
    std::fs::write(&plan, short).unwrap();
    let out = d.path("report");
    let o = ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--on",
            "loopback",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[[tunnel_ping]] and [[tunnel_bulk]] need a testbed"),
        "{stderr}"
    );
    let v = json::summary(&out);
    assert!(v["experiments"]["tunnel_ping"].is_null());
    assert_eq!(
        v["experiments"]["crypto_bench"][0]["rows"]
            .as_array()
            .map(|a| a.len())
            .unwrap_or(0),
        12,
        "{}",
        v["experiments"]["crypto_bench"]
    );
    // AES by chunk size: 2 suites × 2 providers (at least) × 2 contexts × 6 sizes, measured,
    // and the break-evens; seed 004's §6.1 figure beside them.
    let chunks = v["experiments"]["chunk_bench"][0]["chunks"]
        .as_array()
        .unwrap();
    assert!(chunks.len() >= 2 * 2 * 2 * 6, "{}", chunks.len());
    assert!(
        chunks
            .iter()
            .all(|c| c["ns_median"].as_f64().unwrap() > 0.0)
    );
    assert!(
        !v["experiments"]["chunk_bench"][0]["break_even"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // TLS handshakes measured (ours), beside seed 004's Table 5.2 figures.
    let tls = &v["experiments"]["tls_bench"][0]["results"];
    assert!(tls[0]["handshakes"].as_u64().unwrap() > 0, "{tls}");
    assert_eq!(tls[0]["failures"], 0, "{tls}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Offload break-even (seed 004 §6.1)"));
    assert!(md.contains("1024kB"));
    assert!(md.contains("## TLS connections per minute beside seed 004 (Tables 5.1, 5.2)"));
    // Seed 004 Table 5.2, RSA-2048: 155.6 (software) and 420.9 (BA414E) connections per minute.
    assert!(md.contains("155.6") && md.contains("420.9"), "{md}");
    // `ivnsec report` rebuilds them from summary.json.
    let again = d.path("again");
    let o = ivnsec(
        &d,
        &[
            "report",
            out.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let md2 = std::fs::read_to_string(again.join("summary.md")).unwrap();
    assert!(
        md2.contains("## Offload break-even (seed 004 §6.1)"),
        "{md2}"
    );
    assert!(md2.contains("155.6") && md2.contains("420.9"), "{md2}");
}

#[test]
fn bad_tunnel_tables_exit_2_naming_the_key() {
    let d = TempDir::new("seed004-bad");
    for (body, key) in [
        (
            "[[tunnel_ping]]\nsizes = [64, 70000]\n",
            "tunnel_ping[0].sizes[1]",
        ),
        (
            "[[tunnel_ping]]\npaths = [\"plain\", \"gre\"]\n",
            "tunnel_ping[0].paths[1]",
        ),
        ("[[tunnel_ping]]\ncount = 0\n", "tunnel_ping[0].count"),
        (
            "[[tunnel_ping]]\ninterval_ms = 0.1\n",
            "tunnel_ping[0].interval_ms",
        ),
        (
            "[[tunnel_bulk]]\nesp_profile = \"aes128-gcm\"\n",
            "tunnel_bulk[0].esp_profile",
        ),
        (
            "[[tunnel_bulk]]\ntools = [\"ftp\"]\n",
            "tunnel_bulk[0].tools[0]",
        ),
        ("[[tunnel_bulk]]\nfile_mib = 0\n", "tunnel_bulk[0].file_mib"),
        ("[[tunnel_bulk]]\nsecs = 3\n", "secs"),
        (
            "[[chunk_bench]]\nsizes = [64, 100]\n",
            "chunk_bench[0].sizes[1]",
        ),
        (
            "[[chunk_bench]]\ncontext = \"new\"\n",
            "chunk_bench[0].context",
        ),
        (
            "[[tls_bench]]\nalgos = [\"dsa\"]\n",
            "tls_bench[0].algos[0]",
        ),
        (
            "[[tls_bench]]\nconcurrency = 0\n",
            "tls_bench[0].concurrency",
        ),
    ] {
        let plan = d.path("bad.toml");
        std::fs::write(&plan, body).unwrap();
        let o = ivnsec(&d, &["run", plan.to_str().unwrap(), "--on", "loopback"]);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{body}: {stderr}");
        assert!(
            stderr.contains(key) && stderr.contains("bad.toml"),
            "{body}: {stderr}"
        );
    }
}
