//! Seed 004 as a plan (`plans/seed004.toml`: `[[tunnel_ping]]`, `[[tunnel_bulk]]`,
//! `[[crypto_bench]]`): a short plan of that shape run as root on testbeds of its own measures
//! ping by size plain / through `esp up` / through `macsec up` and iperf3 and scp plain and
//! through the tunnel, and the report puts seed 004's (missing) figures beside them; a kill -9
//! mid-tunnel leaves no keys. The preset on loopback and bad tables: `cli/seed004.rs`.

use crate::common::{TempDir, ivnsec, json, text};

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
    let v = json::summary(&out);
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
