//! Seed 004 as a plan (`plans/seed004.toml`: `[[tunnel_ping]]`, `[[tunnel_bulk]]`,
//! `[[crypto_bench]]`): a short plan of that shape run as root on testbeds of its own measures
//! ping by size plain / through `esp up` / through `macsec up` and iperf3 and scp plain and
//! through the tunnel, and the report puts seed 004's (missing) figures beside them; the preset
//! on loopback says the tunnel tables need a testbed; bad tables exit 2 naming the key.

use std::path::Path;

use serde_json::Value;

use crate::common::{TempDir, ivnsec, text};

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_short_seed004_plan_measures_the_tunnel_tables() {
    require_root!();
    for tool in ["ping", "iperf3", "scp", "ssh-keygen"] {
        if std::process::Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            eprintln!("SKIPPED a_short_seed004_plan_measures_the_tunnel_tables: no {tool}");
            return;
        }
    }
    let d = TempDir::new("seed004");
    let plan = d.path("p.toml");
    std::fs::write(
        &plan,
        "name = \"seed004-short\"\n\
         [[tunnel_ping]]\nsizes = [64, 1472, 4000]\ncount = 20\n\
         [[tunnel_bulk]]\nseconds = 1\nfile_mib = 4\n",
    )
    .unwrap();
    let out = d.path("report");
    let o = ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--on",
            "testbed",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v = summary(&out);
    let rows = v["experiments"]["tunnel_ping"][0]["rows"]
        .as_array()
        .unwrap();
    // Every size on every path (the default paths: plain, esp, macsec), each measured.
    assert_eq!(rows.len(), 9, "{rows:?}");
    for size in [64, 1472, 4000] {
        for path in ["plain", "esp", "macsec"] {
            let r = rows
                .iter()
                .find(|r| r["size"] == size && r["path"] == path)
                .unwrap_or_else(|| panic!("no row {size} {path}"));
            assert!(r["received"].as_u64().unwrap() >= 15, "{r}");
            let (p50, p99, p999) = (
                r["p50_us"].as_f64().unwrap(),
                r["p99_us"].as_f64().unwrap(),
                r["p999_us"].as_f64().unwrap(),
            );
            assert!(p50 > 0.0 && p50 <= p99 && p99 <= p999, "{r}");
        }
    }
    let bulk = v["experiments"]["tunnel_bulk"][0]["rows"]
        .as_array()
        .unwrap();
    for tool in ["iperf3", "scp"] {
        for path in ["plain", "esp"] {
            let r = bulk
                .iter()
                .find(|r| r["tool"] == tool && r["path"] == path)
                .unwrap_or_else(|| panic!("no row {tool} {path}"));
            assert!(r["goodput_mbps"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["bytes"].as_u64().unwrap() > 0, "{r}");
            if tool == "scp" {
                assert_eq!(r["bytes"], 4 << 20);
            }
        }
    }
    // The report: our tables with seed 004's column beside them.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("## Ping through tunnels by packet size (seed 004 §5.2)"));
    assert!(md.contains("| 4000 | esp (esp-aes128-gcm) |"), "{md}");
    assert!(md.contains("missing (Fig. 5.3, 5.4"));
    assert!(md.contains("## Bulk transfer through tunnels (seed 004 §5.3)"));
    assert!(md.contains("missing (Fig. 5.5-5.8"));
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("id=\"tunnel-ping\"") && html.contains("id=\"tunnel-bulk\""));
    // `ivnsec report` rebuilds the same tables from summary.json.
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
    assert!(md2.contains("| 4000 | esp (esp-aes128-gcm) |"), "{md2}");
    assert!(md2.contains("## Bulk transfer through tunnels (seed 004 §5.3)"));
    // Nothing left behind: no testbed, no key directory.
    assert!(d.leftover_testbeds().is_empty(), "testbed not removed");
    let left: Vec<_> = std::fs::read_dir(d.state())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("-tunnels"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

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
    let v = summary(&out);
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

/// A run killed with -9 while its tunnels run: its tunnel processes die with it
/// (die_with_parent) and `testbed down --all` removes the testbed and the tunnels' key
/// directory.
#[test]
fn kill_9_mid_tunnel_then_down_leaves_no_keys() {
    require_root!();
    let d = TempDir::new("seed004-kill");
    let plan = d.path("p.toml");
    std::fs::write(
        &plan,
        "[[tunnel_ping]]\nsizes = [64]\ncount = 100000\npaths = [\"plain\", \"esp\"]\n",
    )
    .unwrap();
    let mut child = d
        .cmd()
        .args(["run", plan.to_str().unwrap(), "--on", "testbed"])
        .args(["--out", d.path("report").to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let tunnels = || -> Vec<String> {
        std::fs::read_dir(d.state())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with("-tunnels"))
            .collect()
    };
    let t0 = std::time::Instant::now();
    // The tunnels run once their status files exist.
    while !tunnels()
        .iter()
        .any(|t| d.state().join(t).join("esp-status-1.json").exists())
    {
        assert!(t0.elapsed().as_secs() < 60, "the tunnels did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(tunnels().len(), 1);
    let o = ivnsec(&d, &["testbed", "down", "--all"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(tunnels().is_empty(), "{:?}", tunnels());
    assert!(d.leftover_testbeds().is_empty());
}
