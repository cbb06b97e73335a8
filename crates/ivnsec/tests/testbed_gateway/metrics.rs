//! `--metrics ADDR` (root): a real Prometheus, started in a network namespace of the test's own, scrapes a gateway and a key
//! server there and returns our series from its HTTP API. Tools missing here make the tests skip
//! with the reason printed (scripts/setup installs them: prometheus, curl). The key server's
//! metrics on loopback through `promtool check metrics`: `cli/metrics.rs`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::metrics::{http_get, in_ns, keyserver_args, promtool, wait_for_line};
use crate::common::net::{Netns, ip};
use crate::common::{BIN, Proc, TempDir, text};

#[test]
fn prometheus_scrapes_a_gateway_and_a_key_server_in_a_namespace() {
    require_root!();
    require_tools!("promtool", "prometheus", "curl");
    let d = TempDir::new("metrics-prom");
    let ns = Netns(format!(
        "{}-metrics",
        ivnsec_net::testbed::random_prefix().unwrap()
    ));
    ip(&["netns", "add", &ns.0]);
    ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
    ip(&[
        "-n", &ns.0, "link", "add", "p0", "type", "veth", "peer", "name", "p1",
    ]);
    ip(&["-n", &ns.0, "link", "set", "p1", "mtu", "1532"]);
    ip(&["-n", &ns.0, "link", "set", "p0", "up"]);
    ip(&["-n", &ns.0, "link", "set", "p1", "up"]);
    let keys = d.path("ca.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "macsec-gcm-aes-128",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // The gateway from a config file, metrics on the namespace's loopback.
    std::fs::write(
        d.path("gw.toml"),
        format!(
            "plain = \"p0\"\nprotected = \"p1\"\nprofile = \"macsec-gcm-aes-128\"\nkeys = \"{}\"\n\
             peer = [\"02:00:00:00:00:02\"]\nstate-dir = \"{}\"\nmetrics = \"127.0.0.1:9477\"\n",
            keys.display(),
            d.path("hw").display()
        ),
    )
    .unwrap();
    let spawn = |args: Vec<String>, log: &str| {
        let mut c = in_ns(Some(&ns.0), BIN);
        c.args(args)
            .env("IVNSEC_STATE_DIR", d.state())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.path(log)).unwrap());
        Proc(Some(c.spawn().unwrap()))
    };
    let _gw = spawn(
        vec![
            "gateway".into(),
            "--config".into(),
            d.path("gw.toml").display().to_string(),
        ],
        "gw.log",
    );
    let mut ks = keyserver_args(&d);
    ks.extend(["--metrics".to_string(), "127.0.0.1:9480".to_string()]);
    let _ks = spawn(ks, "ks.log");
    wait_for_line(&d.path("gw.log"), "metrics: http://");
    wait_for_line(&d.path("ks.log"), "metrics: http://");
    // Frames from the legacy side, so the counters move: an ARP request on the plain port.
    let _ = in_ns(Some(&ns.0), "ping")
        .args(["-c", "3", "-i", "0.2", "-W", "1", "-I", "p0", "192.0.2.9"])
        .output();
    let gw = http_get(Some(&ns.0), "http://127.0.0.1:9477/metrics");
    promtool(&gw);
    assert!(
        gw.contains("ivnsec_up{daemon=\"gateway\",instance_name=\"p0\"} 1"),
        "{gw}"
    );
    for s in [
        "ivnsec_frames_total{daemon=\"gateway\",instance_name=\"p0\",port=\"protected\",direction=\"out\"}",
        "ivnsec_bytes_total{daemon=\"gateway\",instance_name=\"p0\",direction=\"out\"}",
        "ivnsec_sequence_used_ratio{daemon=\"gateway\",instance_name=\"p0\"}",
        "ivnsec_port_drops_total{daemon=\"gateway\",instance_name=\"p0\",reason=\"host_queue_drops\"}",
        "ivnsec_crypto_workers{daemon=\"gateway\",instance_name=\"p0\"}",
        "ivnsec_worker_frames_total{daemon=\"gateway\",instance_name=\"p0\",stage=\"sealed\"}",
    ] {
        assert!(gw.contains(s), "{s} missing:\n{gw}");
    }
    promtool(&http_get(Some(&ns.0), "http://127.0.0.1:9480/metrics"));

    // A real Prometheus in the namespace, scraping both every second.
    let cfg = d.path("prometheus.yml");
    std::fs::write(
        &cfg,
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: ivnsec\n    \
         static_configs:\n      - targets: ['127.0.0.1:9477', '127.0.0.1:9480']\n",
    )
    .unwrap();
    let mut c = in_ns(Some(&ns.0), "prometheus");
    c.arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--storage.tsdb.path={}", d.path("tsdb").display()))
        .arg("--web.listen-address=127.0.0.1:9090")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(d.path("prom.log")).unwrap());
    let _prom = Proc(Some(c.spawn().unwrap()));
    let until = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    for q in [
        "ivnsec_frames_total",
        "ivnsec_sequence_used_ratio",
        "ivnsec_keyserver_connections_total",
        "ivnsec_certificate_expiry_timestamp_seconds",
    ] {
        loop {
            let o = in_ns(Some(&ns.0), "curl")
                .args(["-sf", "--max-time", "5"])
                .arg(format!("http://127.0.0.1:9090/api/v1/query?query={q}"))
                .output()
                .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
            let n = v["data"]["result"].as_array().map_or(0, Vec::len);
            if v["status"] == "success" && n > 0 {
                let r = &v["data"]["result"][0]["metric"];
                assert_eq!(r["__name__"], q);
                assert_eq!(r["job"], "ivnsec");
                seen.push(q);
                break;
            }
            assert!(
                Instant::now() < until,
                "Prometheus has no {q}: {}\n{}",
                text(&o.stdout),
                std::fs::read_to_string(d.path("prom.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    assert_eq!(seen.len(), 4);
    // Both targets are up as Prometheus sees them.
    let o = in_ns(Some(&ns.0), "curl")
        .args(["-sf", "http://127.0.0.1:9090/api/v1/query?query=up"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ups: Vec<&str> = v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["value"][1] == "1")
        .filter_map(|r| r["metric"]["instance"].as_str())
        .collect();
    assert!(
        ups.contains(&"127.0.0.1:9477") && ups.contains(&"127.0.0.1:9480"),
        "{v}"
    );
}
