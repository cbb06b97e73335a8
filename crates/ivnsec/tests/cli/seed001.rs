//! Seed 001 as a plan (`plans/seed001.toml`, `[[tdma]]` and `[[crypto_bench]]` tables) run the
//! way a user runs it: the preset on loopback (the analysis and the HMAC table, seed 001's
//! Tables 3, 7, 11 and Figure 6 beside them), a plan without root (the measurement says it
//! needs root) and bad tables (exit 2 naming the file and the key). The tiny measurement on a
//! `cascade:1` testbed (root) is in `testbed_ecus/seed001.rs`.

use std::process::Command;

use serde_json::Value;

use crate::common;

use crate::common::seed001::figures;
use crate::common::{BIN, TempDir, ivnsec, json, text};

/// The analysis row of `profile` at the `plain` frame `plain` on `switches` switches.
fn analysis<'a>(v: &'a Value, profile: &str, plain: u64, switches: u64) -> &'a Value {
    v["experiments"]["tdma"][0]["analysis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["profile"] == profile && r["plain_frame_bytes"] == plain && r["switches"] == switches
        })
        .unwrap_or_else(|| panic!("no analysis row {profile} {plain} ×{switches}"))
}

/// `ivnsec validate --preset seed001 --on loopback`: no testbed, so the analysis and the HMAC
/// table. Table 3's NF_max figures are the analysis' (2083, 1562, 48, 48) beside the seed's
/// (2083, 1563, 48, 48: the seed rounds one cell to nearest), and the plan's own grid gives the
/// same 48 for the 60- and 80-byte frames on one switch; Table 11's figures are eq. 9 with the
/// seed's measured frame times.
#[test]
fn the_preset_on_loopback_analyses_and_times_the_hmacs() {
    let d = TempDir::new("seed001-lo");
    let out = d.path("report");
    let o = ivnsec(
        &d,
        &[
            "validate",
            "--preset",
            "seed001",
            "--on",
            "loopback",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("not measured") && stderr.contains("--on loopback"),
        "{stderr}"
    );
    assert!(
        stdout.contains("tdma: the analysis only (90 rows); not measured"),
        "{stdout}"
    );
    let v = json::summary(&out);
    let t = &v["experiments"]["tdma"][0];
    assert_eq!(t["analysis"].as_array().unwrap().len(), 9 * 2 * 5);
    assert!(t["measured"].as_array().unwrap().is_empty());
    assert!(
        t["not_measured"]
            .as_str()
            .unwrap()
            .contains("--on loopback")
    );

    // Table 3: ours beside the seed's, the one divergence explained.
    let t3 = figures(&v, 3);
    let nf: Vec<(&str, &str, &str)> = t3
        .iter()
        .filter(|f| f.1 == "NF_max")
        .map(|f| (f.0.as_str(), f.2.as_str(), f.3.as_str()))
        .collect();
    assert_eq!(
        nf,
        [
            ("GP = 0, 60 bytes", "2083", "2083"),
            ("GP = 0, 80 bytes", "1563", "1562"),
            ("GP = 0.2 ms, 60 bytes", "48", "48"),
            ("GP = 0.2 ms, 80 bytes", "48", "48"),
        ]
    );
    // The plan's grid at GP = 0.2 ms: the 60-byte frame (plain) and seed 001's 80-byte frame
    // (60 bytes + the 20-byte HMAC-SHA1 tag) are Table 3's last two columns.
    let plain60 = analysis(&v, "plain", 60, 1);
    assert_eq!(
        (plain60["frame_bytes"].as_u64(), plain60["nf_max"].as_u64()),
        (Some(60), Some(48))
    );
    let sha1 = analysis(&v, "hmac-sha1", 60, 1);
    assert_eq!(
        (sha1["frame_bytes"].as_u64(), sha1["tag_bytes"].as_u64()),
        (Some(80), Some(20))
    );
    assert_eq!(sha1["nf_max"].to_string(), t3[6].3, "{t3:?}");
    assert_eq!(sha1["slot_ms"], 0.2064);
    // Five switches: ⌊10 / (0.0048 + 5 × 0.2)⌋ = 9; HMAC-SHA256 (92 bytes) on one: ⌊10 / 0.20736⌋.
    assert_eq!(analysis(&v, "plain", 60, 5)["nf_max"], 9);
    assert_eq!(analysis(&v, "hmac-sha256", 60, 1)["frame_bytes"], 92);
    assert_eq!(analysis(&v, "hmac-sha256", 60, 1)["nf_max"], 48);

    // Table 11: eq. 9 with the seed's measured frame times, as printed.
    let t11_figures = figures(&v, 11);
    let t11: Vec<(&str, &str)> = t11_figures
        .iter()
        .filter(|f| f.1 == "NF_max")
        .map(|f| (f.2.as_str(), f.3.as_str()))
        .collect();
    let seed11 = ["31", "19", "13", "10", "8", "28", "18", "13", "10", "8"];
    assert_eq!(t11.iter().map(|f| f.0).collect::<Vec<_>>(), seed11);
    assert_eq!(t11.iter().map(|f| f.1).collect::<Vec<_>>(), seed11);
    // Table 7: nothing measured, and the seed's theoretical NF_max noted where eq. 4 differs.
    let t7 = figures(&v, 7);
    assert!(t7.iter().all(|f| f.4.is_null()));
    assert!(
        v["seed001"]["not_measured"]
            .as_str()
            .unwrap()
            .contains("--on loopback")
    );

    // Figure 6: the three HMACs at 60 and 80 bytes beside 25 µs (A) and 20 µs (B, no SHA3).
    let h = v["seed001"]["hmac"].as_array().unwrap();
    assert_eq!(h.len(), 6);
    for r in h {
        assert_eq!(r["seed_max_us_a"], 25);
        assert_eq!(r["budget_us"], 1200);
        let (min, mean, max) = (
            r["protect_us_min"].as_f64().unwrap(),
            r["protect_us_mean"].as_f64().unwrap(),
            r["protect_us_max"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= mean && mean <= max, "{r}");
        let b = if r["profile"] == "hmac-sha3-256" {
            Value::Null
        } else {
            Value::from(20)
        };
        assert_eq!(r["seed_max_us_b"], b, "{r}");
    }
    assert_eq!(v["experiments"]["crypto_bench"][0]["frames"], 10_000);

    // The same tables in summary.md and index.html.
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    for want in [
        "## TDMA capacity, analysis (seed 001 eq. 1, 2, 9)",
        "| plain | 60 | 0 | 0.0048 | 48 | 24 | 16 | 12 | 9 |",
        "| hmac-sha1 | 60 → 80 | 20 | 0.0064 | 48 | 24 | 16 | 12 | 9 |",
        "Not measured: the run is on loopback (--on loopback)",
        "## Beside seed 001: Table 3",
        "| GP = 0, 80 bytes | NF_max | 1563 | 1562 | 10 ms / 0.0064 ms = 1562.5",
        "## Beside seed 001: Table 7",
        "## Beside seed 001: Table 11",
        "## Beside seed 001: HMAC execution time (Figure 6, §6), µs",
        "## Single-frame protect and verify (crypto-bench --frames)",
    ] {
        assert!(md.contains(want), "summary.md lacks {want:?}:\n{md}");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<a href=\"#tdma\">tdma</a>"));
    assert!(html.contains("<h2 id=\"tdma\">"));
    assert!(html.contains("Beside seed 001: Table 11"));

    // `ivnsec report DIR` reads the experiments back and writes the same tables.
    std::fs::remove_file(out.join("summary.md")).unwrap();
    let o = ivnsec(&d, &["report", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let again = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert_eq!(again, md);
}

/// Runs `ivnsec ARGS` as nobody when this is root (so the test holds either way); `None` when
/// root cannot drop its privileges here.
fn as_unprivileged(d: &TempDir, args: &[&str]) -> Option<std::process::Output> {
    if common::skip_reason().is_none() {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .env("IVNSEC_STATE_DIR", d.state())
            .output()
            .ok()
    } else {
        Some(ivnsec(d, args))
    }
}

/// Without root, `ivnsec run` still writes the analysis and the HMAC table, and says (on
/// stderr, in summary.json, summary.md and on stdout) that the measurement needs root.
#[test]
fn without_root_the_measurement_says_it_needs_root() {
    let d = TempDir::new("seed001-noroot");
    // The unprivileged user writes the report here.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d.0, std::fs::Permissions::from_mode(0o777)).unwrap();
    let plan = d.path("plan.toml");
    std::fs::write(
        &plan,
        "[[tdma]]\nprofiles = [\"hmac-sha1\"]\nframes = [60]\nswitches = [1, 2]\n\
         [[crypto_bench]]\nprofiles = [\"hmac-sha1\"]\nsizes = [60]\nframes = 100\n",
    )
    .unwrap();
    let out = d.path("report");
    let Some(o) = as_unprivileged(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    ) else {
        eprintln!("SKIPPED without_root_the_measurement_says_it_needs_root: no setpriv");
        return;
    };
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("the measurement needs root"), "{stderr}");
    assert!(
        stdout
            .contains("tdma: the analysis only (2 rows); not measured: the measurement needs root"),
        "{stdout}"
    );
    let v = json::summary(&out);
    let t = &v["experiments"]["tdma"][0];
    assert_eq!(t["analysis"].as_array().unwrap().len(), 2);
    assert!(
        t["not_measured"]
            .as_str()
            .unwrap()
            .contains("run the plan as root")
    );
    assert_eq!(v["seed001"]["hmac"].as_array().unwrap().len(), 1);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("Not measured in this run: the measurement needs root"),
        "{md}"
    );
    // Asked for a testbed explicitly, it is an environment error (exit 3) with the fix.
    let o = as_unprivileged(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--on",
            "testbed",
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("the tdma measurement builds cascade:N testbeds") && err.contains("root"),
        "{err}"
    );
    assert!(d.leftover_testbeds().is_empty());
}

/// Bad `[[tdma]]` and `[[crypto_bench]]` values stop the plan before anything runs: exit 2,
/// the file and the key named.
#[test]
fn bad_tables_exit_2_naming_file_and_key() {
    let d = TempDir::new("seed001-bad");
    for (body, key, why) in [
        (
            "[[tdma]]\nswitches = [1, 40]\n",
            "tdma[0].switches[1]",
            "1 to 32",
        ),
        (
            "[[tdma]]\ngp = \"0.2\"\n",
            "tdma[0].gp",
            "the unit is missing",
        ),
        (
            "[[tdma]]\nprofiles = [\"hmac-sha512\"]\n",
            "tdma[0].profiles[0]",
            "hmac-sha512",
        ),
        ("[[tdma]]\nperiod = 3\n", "period", "unknown field"),
        (
            "[[crypto_bench]]\nprofiles = []\n",
            "crypto_bench[0].profiles",
            "1 to 32",
        ),
    ] {
        let plan = d.path("bad.toml");
        std::fs::write(&plan, body).unwrap();
        let out = d.path("out");
        let o = ivnsec(
            &d,
            &[
                "run",
                plan.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{body}: {err}");
        assert!(
            err.contains(plan.to_str().unwrap()) && err.contains(key) && err.contains(why),
            "{body}: {err}"
        );
        assert!(!out.join("summary.json").exists());
    }
}
