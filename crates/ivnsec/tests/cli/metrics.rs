//! `--metrics ADDR` of the key server on loopback: what it serves passes `promtool check
//! metrics`. Prometheus scraping a gateway and a key server in a namespace is a root test:
//! `testbed_gateway/metrics.rs`. Tools missing here make the tests skip with the reason printed.

use std::process::{Command, Stdio};

use crate::common::metrics::{http_get, keyserver_args, promtool, wait_for_line};
use crate::common::{Proc, TempDir, text};

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
    let scrape = http_get(None, url);
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
