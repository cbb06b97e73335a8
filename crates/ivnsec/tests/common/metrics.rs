//! `--metrics ADDR` of the daemons (`metrics` of cli and of testbed_gateway): fetching and
//! checking what they serve, the key server they run.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{TempDir, text};

/// `ip netns exec NS` + args, or the args alone without a namespace.
pub fn in_ns(ns: Option<&str>, prog: &str) -> Command {
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
pub fn http_get(ns: Option<&str>, url: &str) -> String {
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
pub fn promtool(scrape: &str) {
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
pub fn keyserver_args(d: &TempDir) -> Vec<String> {
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
pub fn wait_for_line(log: &std::path::Path, needle: &str) -> String {
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
