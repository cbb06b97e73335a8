//! `--metrics ADDR`: what the daemons serve passes `promtool check metrics`, and a real
//! Prometheus, started in a network namespace of the test's own, scrapes a gateway and a key
//! server there and returns our series from its HTTP API. Tools missing here make the tests skip
//! with the reason printed (scripts/setup installs them: prometheus, curl).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{BIN, Proc, TempDir, text};

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

macro_rules! require_tools {
    ($($t:expr),+) => {
        for t in [$($t),+] {
            if !have(t) {
                let _ = std::io::Write::write_fmt(
                    &mut std::io::stderr(),
                    format_args!("SKIPPED {}: `{t}` is not installed (bash scripts/setup)\n", module_path!()),
                );
                return;
            }
        }
    };
}

/// `ip netns exec NS` + args, or the args alone without a namespace.
fn in_ns(ns: Option<&str>, prog: &str) -> Command {
    match ns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, prog]);
            c
        }
        None => Command::new(prog),
    }
}

/// GET http://ADDR/PATH with curl (in the namespace), retried for a few seconds.
fn get(ns: Option<&str>, url: &str) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let o = in_ns(ns, "curl")
            .args(["-sf", "--max-time", "5", url])
            .output()
            .unwrap();
        if o.status.success() {
            return text(&o.stdout);
        }
        assert!(Instant::now() < until, "curl {url}: {}", text(&o.stderr));
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `promtool check metrics` on a scrape: no error, no lint problem.
fn promtool(scrape: &str) {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(scrape.as_bytes())
        .unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(
        o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
        "promtool check metrics: {}{}\n{scrape}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// A PKI with a key server certificate and one segment; the key server's arguments.
fn keyserver_args(d: &TempDir) -> Vec<String> {
    let pki = d.path("pki");
    let p = pki.to_str().unwrap();
    for args in [
        &["pki", "init", "--dir", p, "--vehicle", "WVWZZZ1JZXW000001"][..],
        &["pki", "issue", "--dir", p, "--ecu", "keyserver"][..],
        &["pki", "issue", "--dir", p, "--ecu", "brake1"][..],
    ] {
        let o = d.run(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    }
    std::fs::write(
        d.path("seg.toml"),
        "[[segment]]\nname = \"chassis\"\necus = [\"brake1\"]\n",
    )
    .unwrap();
    vec![
        "keyserver".into(),
        "--pki".into(),
        p.into(),
        "--segments".into(),
        d.path("seg.toml").display().to_string(),
        "--listen".into(),
        "127.0.0.1:0".into(),
    ]
}

/// The port `metrics: http://127.0.0.1:PORT/metrics` of a daemon's stderr, read by
/// spawn_until_ready's caller from the log file.
fn wait_for_line(log: &std::path::Path, needle: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let s = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(l) = s.lines().find(|l| l.contains(needle)) {
            return l.to_string();
        }
        assert!(Instant::now() < until, "no `{needle}` in {log:?}: {s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn keyserver_metrics_pass_promtool() {
    require_tools!("promtool", "curl");
    let d = TempDir::new("metrics-ks");
    let mut c = d.cmd();
    c.args(keyserver_args(&d))
        .args(["--metrics", "127.0.0.1:0"]);
    let log = d.path("ks.log");
    c.stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _p = Proc(Some(c.spawn().unwrap()));
    let line = wait_for_line(&log, "metrics: http://");
    let url = line.trim_start_matches("metrics: ").trim();
    let scrape = get(None, url);
    promtool(&scrape);
    for s in [
        "ivnsec_keyserver_connections_total{daemon=\"keyserver\",outcome=\"served\"} 0",
        "ivnsec_keyserver_connections_total{daemon=\"keyserver\",outcome=\"revoked\"} 0",
        "ivnsec_keyserver_segment_cak_number{daemon=\"keyserver\",segment=\"chassis\"} 1",
        "# TYPE ivnsec_certificate_expiry_timestamp_seconds gauge",
    ] {
        assert!(scrape.contains(s), "{s} missing:\n{scrape}");
    }
    // The certificate expiry is the keyserver certificate's notAfter (`openssl x509 -enddate`
    // would say the same; here: a year or more ahead, as `pki issue` makes it).
    let exp: f64 = scrape
        .lines()
        .find(|l| l.starts_with("ivnsec_certificate_expiry_timestamp_seconds{"))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(exp > now + 300.0 * 86400.0, "{exp} vs now {now}");
    // Anything but /metrics is 404; a bad --metrics address exits 2.
    let o = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(url.replace("/metrics", "/nothing"))
        .output()
        .unwrap();
    assert_eq!(text(&o.stdout), "404");
    let o = d.run(&[
        "keyserver",
        "--pki",
        "x",
        "--segments",
        "y",
        "--listen",
        "127.0.0.1:0",
        "--metrics",
        "nonsense",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--metrics"), "{}", text(&o.stderr));
}

/// A namespace of the test's own, deleted on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        if let Ok(o) = Command::new("ip").args(["netns", "pids", &self.0]).output() {
            for pid in text(&o.stdout).split_whitespace() {
                let _ = Command::new("kill").arg(pid).status();
            }
        }
        std::thread::sleep(Duration::from_millis(300));
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().unwrap();
    assert!(o.status.success(), "ip {args:?}: {}", text(&o.stderr));
}

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
    let gw = get(Some(&ns.0), "http://127.0.0.1:9477/metrics");
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
    ] {
        assert!(gw.contains(s), "{s} missing:\n{gw}");
    }
    promtool(&get(Some(&ns.0), "http://127.0.0.1:9480/metrics"));

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
