//! `--metrics ADDR`: the daemons' counters in the Prometheus text exposition format (0.0.4),
//! served at `http://ADDR/metrics` by one small responder thread.
//!
//! Nothing on the data path is instrumented for it: the MACsec SecY, the gateways and the ESP
//! tunnel already publish their counters in their status file every half second
//! ([`crate::macsec::status`], [`crate::esp_tunnel`]); a scrape renders the latest file, and the
//! key server's counters come from [`crate::pki::keyserver::KeyServer::counters`]. The text is
//! written here by hand rather than with a metrics library: every value is a snapshot some other
//! part already keeps (a library's registry would want its own atomics, fed from those same
//! snapshots), and the format is a few lines of `# HELP`/`# TYPE` and `name{labels} value`.
//!
//! Series (every one with `daemon` = `macsec`, `gateway` or `esp`, and `instance_name` = the
//! TAP, plain port or TUN):
//! - `ivnsec_frames_total{direction="in|out",port="protected|host"}`,
//!   `ivnsec_bytes_total{direction}` (protected octets), `ivnsec_drops_total{reason}`;
//! - `ivnsec_sequence_used_ratio` (next PN / sequence number over its limit), `ivnsec_sequence_next`;
//! - MKA: `ivnsec_rekeys_total`, `ivnsec_last_rekey_timestamp_seconds`, `ivnsec_mka_peers_live`,
//!   `ivnsec_mka_pdus_total{direction}`, `ivnsec_mka_drops_total{reason}`;
//! - `ivnsec_certificate_expiry_timestamp_seconds{file}` (`--cert` of `--keyserver`);
//! - `ivnsec_up` (1 while the status file names a running process), `ivnsec_status_age_seconds`;
//! - `ivnsec_crypto_workers` (`--crypto-workers`: threads that seal and open batches),
//!   `ivnsec_worker_frames_total{stage="sealed|opened"}` (frames / packets of the batches they
//!   took);
//! - ESP: `ivnsec_outer_link` (1 while protocol 50 leaves as Ethernet frames to the next hop,
//!   0 on the raw socket), `ivnsec_outer_link_packets_total{outcome="sent|bypassed|refused"}`;
//! - key server: `ivnsec_keyserver_connections_total{outcome="served|<refusal reason>"}`,
//!   `ivnsec_keyserver_segment_cak_number{segment}`, and the certificate expiry of its own
//!   certificate.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::Value;

/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One scrape's text, family by family.
#[derive(Default)]
pub struct Text {
    out: String,
    seen: std::collections::BTreeSet<String>,
}

impl Text {
    /// Starts family `name` (once; later calls add samples to it).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        if self.seen.insert(name.to_string()) {
            let _ = writeln!(self.out, "# HELP {name} {help}");
            let _ = writeln!(self.out, "# TYPE {name} {kind}");
        }
    }

    /// One sample; label values are escaped as the format requires.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let v = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                let _ = write!(self.out, "{k}=\"{v}\"");
            }
            self.out.push('}');
        }
        if value.is_finite() && value.fract() == 0.0 && value.abs() < 9.0e15 {
            let _ = writeln!(self.out, " {}", value as i64);
        } else {
            let _ = writeln!(self.out, " {value}");
        }
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// What the MKA key numbers a status showed last, for rekeys and their time.
#[derive(Default)]
pub struct RekeyWatch {
    latest: Option<String>,
    pub rekeys: u64,
    pub last_at: Option<f64>,
}

impl RekeyWatch {
    /// Notes the latest SAK of a status (its key server MI and key number); a change after the
    /// first is a rekey, timed by the status's `updated`.
    pub fn see(&mut self, status: &Value) {
        let k = &status["key_source_state"]["latest"];
        if k.is_null() {
            return;
        }
        let id = format!("{}/{}", k["key_server_mi"], k["key_number"]);
        if self.latest.as_deref() != Some(id.as_str()) {
            if self.latest.is_some() {
                self.rekeys += 1;
            }
            self.last_at = status["updated"].as_f64();
            self.latest = Some(id);
        }
    }
}

/// A daemon that publishes a status file: where it is and what limits its sequence numbers.
pub struct StatusSource {
    /// `macsec`, `gateway` or `esp`.
    pub daemon: &'static str,
    /// The TAP, the gateway's plain port or the TUN.
    pub instance: String,
    pub path: PathBuf,
    /// The highest sequence number / PN the transmit key may use.
    pub seq_limit: u64,
    /// A certificate whose expiry to show (`--cert` of `--keyserver`).
    pub cert: Option<PathBuf>,
    pub rekeys: Mutex<RekeyWatch>,
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

impl StatusSource {
    /// Reads the status file (and the rekey watch) and renders every series.
    pub fn render(&self) -> String {
        let mut t = Text::default();
        let status = std::fs::read(&self.path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        let base = [
            ("daemon", self.daemon),
            ("instance_name", self.instance.as_str()),
        ];
        t.family(
            "ivnsec_up",
            "gauge",
            "1 while the daemon's status file is current (written by this process).",
        );
        let Some(s) = status else {
            t.sample("ivnsec_up", &base, 0.0);
            return t.finish();
        };
        let running = s["pid"].as_u64() == Some(u64::from(std::process::id()))
            && s["running"] != Value::Bool(false);
        t.sample("ivnsec_up", &base, if running { 1.0 } else { 0.0 });
        t.family(
            "ivnsec_status_age_seconds",
            "gauge",
            "Seconds since the status file was last written.",
        );
        let age = s["updated"]
            .as_f64()
            .map(|u| (crate::macsec::status::now_unix() - u).max(0.0))
            .unwrap_or(0.0);
        t.sample("ivnsec_status_age_seconds", &base, age);
        if self.daemon == "esp" {
            self.esp(&mut t, &s, &base);
            Self::workers(&mut t, &s, &s["packets"], &base);
        } else {
            self.secy(&mut t, &s, &base);
            Self::workers(&mut t, &s, &s["frames"], &base);
        }
        if let Some(c) = &self.cert {
            cert_expiry(&mut t, c, &base);
        }
        t.finish()
    }

    fn frames(t: &mut Text, base: &[(&str, &str)], port: &str, dir: &str, v: f64) {
        t.family(
            "ivnsec_frames_total",
            "counter",
            "Frames (ESP: packets) by port (protected: the secured side; host: TAP, plain port or TUN) and direction.",
        );
        let mut l = base.to_vec();
        l.push(("port", port));
        l.push(("direction", dir));
        t.sample("ivnsec_frames_total", &l, v);
    }

    fn bytes(t: &mut Text, base: &[(&str, &str)], dir: &str, v: f64) {
        t.family(
            "ivnsec_bytes_total",
            "counter",
            "Bytes protected (out) and verified (in) on the protected side.",
        );
        let mut l = base.to_vec();
        l.push(("direction", dir));
        t.sample("ivnsec_bytes_total", &l, v);
    }

    fn drops(t: &mut Text, base: &[(&str, &str)], drops: &Value) {
        t.family(
            "ivnsec_drops_total",
            "counter",
            "Frames dropped, by reason.",
        );
        if let Some(m) = drops.as_object() {
            for (reason, n) in m {
                let mut l = base.to_vec();
                l.push(("reason", reason.as_str()));
                t.sample("ivnsec_drops_total", &l, num(n));
            }
        }
    }

    /// The crypto workers: how many, and the frames (ESP: packets) of the batches they sealed
    /// and opened (`counters`: the status file's `frames` or `packets`).
    fn workers(t: &mut Text, s: &Value, counters: &Value, base: &[(&str, &str)]) {
        let Some(n) = s["crypto_workers"].as_f64() else {
            return;
        };
        t.family(
            "ivnsec_crypto_workers",
            "gauge",
            "Threads that seal and open the frames of a batch (--crypto-workers; 0: none).",
        );
        t.sample("ivnsec_crypto_workers", base, n);
        t.family(
            "ivnsec_worker_frames_total",
            "counter",
            "Frames (ESP: packets) of the batches the crypto workers sealed and opened.",
        );
        for (stage, key) in [
            ("sealed", "sealed_by_workers"),
            ("opened", "opened_by_workers"),
        ] {
            let mut l = base.to_vec();
            l.push(("stage", stage));
            t.sample("ivnsec_worker_frames_total", &l, num(&counters[key]));
        }
    }

    fn sequence(&self, t: &mut Text, base: &[(&str, &str)], next: f64) {
        t.family(
            "ivnsec_sequence_next",
            "gauge",
            "The next sequence number / PN the transmit key sends.",
        );
        t.sample("ivnsec_sequence_next", base, next);
        t.family(
            "ivnsec_sequence_used_ratio",
            "gauge",
            "Sequence numbers / PNs used as a fraction of the transmit key's limit (1: exhausted).",
        );
        let used = (next - 1.0).max(0.0) / (self.seq_limit.max(1) as f64);
        t.sample("ivnsec_sequence_used_ratio", base, used.min(1.0));
    }

    fn secy(&self, t: &mut Text, s: &Value, base: &[(&str, &str)]) {
        let f = &s["frames"];
        Self::frames(t, base, "host", "in", num(&f["tap_in"]));
        Self::frames(t, base, "protected", "out", num(&f["iface_out"]));
        Self::frames(t, base, "protected", "in", num(&f["iface_in"]));
        Self::frames(t, base, "host", "out", num(&f["tap_out"]));
        if s["family"] == "ivnae" {
            self.sequence(t, base, num(&s["tx"]["next_seq"]));
            Self::drops(t, base, &s["rx"]["drops"]);
        } else {
            let tc = &s["tx"]["counters"];
            let rc = &s["rx"]["counters"];
            Self::bytes(
                t,
                base,
                "out",
                num(&tc["OutOctetsProtected"]) + num(&tc["OutOctetsEncrypted"]),
            );
            Self::bytes(
                t,
                base,
                "in",
                num(&rc["InOctetsValidated"]) + num(&rc["InOctetsDecrypted"]),
            );
            self.sequence(t, base, num(&s["tx"]["next_pn"]));
            Self::drops(t, base, &s["rx"]["drops"]);
        }
        // Frames the ports could not take: counted as drops too, by where.
        t.family(
            "ivnsec_port_drops_total",
            "counter",
            "Frames lost at the ports (kernel queues full, too long, send or write errors).",
        );
        for k in [
            "too_long",
            "iface_send_errors",
            "tap_write_errors",
            "truncated",
            "host_queue_drops",
            "iface_queue_drops",
        ] {
            if let Some(n) = f[k].as_f64() {
                let mut l = base.to_vec();
                l.push(("reason", k));
                t.sample("ivnsec_port_drops_total", &l, n);
            }
        }
        let ks = &s["key_source_state"];
        if ks["peers"].is_array() && ks["counters"].is_object() {
            let mut w = self.rekeys.lock().unwrap_or_else(|e| e.into_inner());
            w.see(s);
            t.family(
                "ivnsec_rekeys_total",
                "counter",
                "SAK changes seen since the metrics started (MKA).",
            );
            t.sample("ivnsec_rekeys_total", base, w.rekeys as f64);
            t.family(
                "ivnsec_last_rekey_timestamp_seconds",
                "gauge",
                "Unix time the current SAK was first seen in use (MKA).",
            );
            t.sample(
                "ivnsec_last_rekey_timestamp_seconds",
                base,
                w.last_at.unwrap_or(0.0),
            );
            let c = &ks["counters"];
            t.family(
                "ivnsec_mka_peers_live",
                "gauge",
                "MKA peers on the live list now.",
            );
            let live = ks["peers"]
                .as_array()
                .map_or(0, |p| p.iter().filter(|p| p["live"] == true).count());
            t.sample("ivnsec_mka_peers_live", base, live as f64);
            t.family(
                "ivnsec_mka_saks_installed_total",
                "counter",
                "SAKs installed in the SecY (MKA).",
            );
            t.sample(
                "ivnsec_mka_saks_installed_total",
                base,
                num(&c["saks_installed"]),
            );
            t.family(
                "ivnsec_mka_pdus_total",
                "counter",
                "MKPDUs sent and accepted.",
            );
            let mut l = base.to_vec();
            l.push(("direction", "out"));
            t.sample("ivnsec_mka_pdus_total", &l, num(&c["pdus_sent"]));
            l.pop();
            l.push(("direction", "in"));
            t.sample("ivnsec_mka_pdus_total", &l, num(&c["pdus_accepted"]));
            t.family(
                "ivnsec_mka_drops_total",
                "counter",
                "MKPDUs dropped, by reason.",
            );
            if let Some(m) = c["drops"].as_object() {
                for (reason, n) in m {
                    let mut l = base.to_vec();
                    l.push(("reason", reason.as_str()));
                    t.sample("ivnsec_mka_drops_total", &l, num(n));
                }
            }
        }
    }

    fn esp(&self, t: &mut Text, s: &Value, base: &[(&str, &str)]) {
        let p = &s["packets"];
        Self::frames(t, base, "host", "in", num(&p["tun_in"]));
        Self::frames(t, base, "protected", "out", num(&p["esp_out"]));
        Self::frames(t, base, "protected", "in", num(&p["esp_in"]));
        Self::frames(t, base, "host", "out", num(&p["tun_out"]));
        Self::bytes(t, base, "out", num(&s["tx"]["bytes"]));
        Self::bytes(t, base, "in", num(&s["rx"]["bytes"]));
        self.sequence(t, base, num(&s["tx"]["next_seq"]));
        Self::drops(t, base, &s["rx"]["drops"]);
        t.family(
            "ivnsec_port_drops_total",
            "counter",
            "Packets lost at the ports (kernel queues full, too long, send or write errors).",
        );
        for k in [
            "tun_bad",
            "too_long",
            "send_errors",
            "udp_not_esp",
            "tun_write_errors",
            "rx_truncated",
            "queue_drops",
        ] {
            if let Some(n) = p[k].as_f64() {
                let mut l = base.to_vec();
                l.push(("reason", k));
                t.sample("ivnsec_port_drops_total", &l, n);
            }
        }
        if let Some(path) = s["outer_send"]["path"].as_str() {
            t.family(
                "ivnsec_outer_link",
                "gauge",
                "1 while protocol-50 packets leave as Ethernet frames to the next hop, 0 while they take the raw IP socket (--outer-send).",
            );
            t.sample(
                "ivnsec_outer_link",
                base,
                if path == "link" { 1.0 } else { 0.0 },
            );
            t.family(
                "ivnsec_outer_link_packets_total",
                "counter",
                "Protocol-50 packets sent on the link path, that took the raw socket while it was in use (too long), and link sends the kernel refused.",
            );
            for (outcome, key) in [
                ("sent", "link_sent"),
                ("bypassed", "link_bypassed"),
                ("refused", "link_errors"),
            ] {
                let mut l = base.to_vec();
                l.push(("outcome", outcome));
                t.sample("ivnsec_outer_link_packets_total", &l, num(&p[key]));
            }
        }
    }
}

/// `ivnsec_certificate_expiry_timestamp_seconds{file}` of the first certificate in a PEM file
/// (nothing when it cannot be read: the daemon has said so at start-up).
pub fn cert_expiry(t: &mut Text, path: &Path, base: &[(&str, &str)]) {
    let Some(not_after) = not_after(path) else {
        return;
    };
    t.family(
        "ivnsec_certificate_expiry_timestamp_seconds",
        "gauge",
        "Unix time the certificate stops being valid (notAfter).",
    );
    let file = path.display().to_string();
    let mut l = base.to_vec();
    l.push(("file", file.as_str()));
    t.sample(
        "ivnsec_certificate_expiry_timestamp_seconds",
        &l,
        not_after as f64,
    );
}

/// notAfter (Unix seconds) of the first certificate of a PEM file.
pub fn not_after(path: &Path) -> Option<i64> {
    let pem = std::fs::read(path).ok()?;
    let (_, p) = x509_parser::pem::parse_x509_pem(&pem).ok()?;
    let cert = p.parse_x509().ok()?;
    Some(cert.validity().not_after.timestamp())
}

/// The key server's series from its counters (`{"served": N, "refused": {reason: N}}`), the
/// CAK number of each segment and its own certificate.
pub fn render_keyserver(
    counters: &Value,
    numbers: &BTreeMap<String, u64>,
    cert: Option<&Path>,
) -> String {
    let mut t = Text::default();
    let base = [("daemon", "keyserver")];
    t.family("ivnsec_up", "gauge", "1 while the daemon runs.");
    t.sample("ivnsec_up", &base, 1.0);
    t.family(
        "ivnsec_keyserver_connections_total",
        "counter",
        "Key server connections by outcome: served (keys handed out) or the reason it was refused.",
    );
    t.sample(
        "ivnsec_keyserver_connections_total",
        &[("daemon", "keyserver"), ("outcome", "served")],
        num(&counters["served"]),
    );
    if let Some(m) = counters["refused"].as_object() {
        for (reason, n) in m {
            t.sample(
                "ivnsec_keyserver_connections_total",
                &[("daemon", "keyserver"), ("outcome", reason.as_str())],
                num(n),
            );
        }
    }
    t.family(
        "ivnsec_keyserver_segment_cak_number",
        "gauge",
        "The number of each segment's current CAK (it grows at every roll).",
    );
    for (seg, n) in numbers {
        t.sample(
            "ivnsec_keyserver_segment_cak_number",
            &[("daemon", "keyserver"), ("segment", seg.as_str())],
            *n as f64,
        );
    }
    if let Some(c) = cert {
        cert_expiry(&mut t, c, &base);
    }
    t.finish()
}

/// A scrape renderer.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Binds `addr` and answers `GET /metrics` with `render()` from a background thread (one
/// request at a time: a scraper asks every few seconds). Errors: the address is taken, not
/// this host's or privileged (exit 3, [`crate::error::bind_error`]).
pub fn serve(addr: SocketAddr, render: Render) -> Result<SocketAddr> {
    let l = TcpListener::bind(addr)
        .map_err(|e| crate::error::bind_error("--metrics", &addr.to_string(), &e))?;
    let local = l.local_addr().context("--metrics: the bound address")?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for conn in l.incoming().flatten() {
                let _ = answer(conn, &render);
            }
        })
        .context("starting the metrics thread")?;
    Ok(local)
}

/// Reads one request head (at most 8 KiB, 2 s) and answers it.
fn answer(mut c: TcpStream, render: &Render) -> std::io::Result<()> {
    c.set_read_timeout(Some(Duration::from_secs(2)))?;
    c.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = [0u8; 8192];
    let mut n = 0;
    while n < buf.len() {
        let k = c.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
        if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
            break;
        }
    }
    let head = String::from_utf8_lossy(&buf[..n]);
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => ("200 OK", CONTENT_TYPE, render()),
        ("GET" | "HEAD", "/") => (
            "200 OK",
            "text/plain; charset=utf-8",
            "ivnsec: metrics at /metrics\n".to_string(),
        ),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "not found; the metrics are at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "only GET\n".to_string(),
        ),
    };
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        out.push_str(&body);
    }
    c.write_all(out.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_values_are_escaped_and_families_written_once() {
        let mut t = Text::default();
        t.family("x_total", "counter", "X.");
        t.sample("x_total", &[("a", "q\"b\\c\nd")], 3.0);
        t.family("x_total", "counter", "X.");
        t.sample("x_total", &[], 0.5);
        let s = t.finish();
        assert_eq!(
            s,
            "# HELP x_total X.\n# TYPE x_total counter\nx_total{a=\"q\\\"b\\\\c\\nd\"} 3\nx_total 0.5\n"
        );
    }

    #[test]
    fn a_rekey_is_a_change_of_the_latest_sak() {
        let mut w = RekeyWatch::default();
        let st = |kn: u64, t: f64| json!({"updated": t, "key_source_state": {"latest": {"key_server_mi": "aa", "key_number": kn}}});
        w.see(&st(1, 10.0));
        w.see(&st(1, 11.0));
        assert_eq!((w.rekeys, w.last_at), (0, Some(10.0)));
        w.see(&st(2, 12.5));
        assert_eq!((w.rekeys, w.last_at), (1, Some(12.5)));
    }

    #[test]
    fn a_missing_status_file_reads_as_down() {
        let s = StatusSource {
            daemon: "macsec",
            instance: "tap0".into(),
            path: PathBuf::from("/nonexistent/ivnsec-status.json"),
            seq_limit: u32::MAX as u64,
            cert: None,
            rekeys: Mutex::default(),
        };
        assert!(
            s.render()
                .contains("ivnsec_up{daemon=\"macsec\",instance_name=\"tap0\"} 0")
        );
    }

    /// An ESP tunnel's status file as `esp up` writes it (the keys read here): the workers and
    /// the link path's series, with their values.
    #[test]
    fn an_esp_tunnel_exports_its_workers_and_its_link_path() {
        let dir = std::env::temp_dir().join(format!("ivnsec-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("esp0.json");
        let st = json!({
            "pid": std::process::id(), "running": true, "crypto_workers": 2,
            "tx": {"next_seq": 11, "bytes": 1000}, "rx": {"bytes": 900, "drops": {"bad_tag": 1}},
            "packets": {"tun_in": 5, "esp_out": 10, "esp_in": 9, "tun_out": 9,
                        "sealed_by_workers": 8, "opened_by_workers": 7,
                        "link_sent": 6, "link_bypassed": 3, "link_errors": 0},
            "outer_send": {"mode": "auto", "path": "link"},
        });
        std::fs::write(&path, st.to_string()).unwrap();
        let s = StatusSource {
            daemon: "esp",
            instance: "esp0".into(),
            path: path.clone(),
            seq_limit: u32::MAX as u64,
            cert: None,
            rekeys: Mutex::default(),
        };
        let text = s.render();
        let _ = std::fs::remove_dir_all(&dir);
        let b = "daemon=\"esp\",instance_name=\"esp0\"";
        for want in [
            format!("ivnsec_crypto_workers{{{b}}} 2"),
            format!("ivnsec_worker_frames_total{{{b},stage=\"sealed\"}} 8"),
            format!("ivnsec_worker_frames_total{{{b},stage=\"opened\"}} 7"),
            format!("ivnsec_outer_link{{{b}}} 1"),
            format!("ivnsec_outer_link_packets_total{{{b},outcome=\"sent\"}} 6"),
            format!("ivnsec_outer_link_packets_total{{{b},outcome=\"bypassed\"}} 3"),
            format!("ivnsec_outer_link_packets_total{{{b},outcome=\"refused\"}} 0"),
            "# TYPE ivnsec_outer_link gauge".to_string(),
        ] {
            assert!(text.contains(&want), "{want} not in:\n{text}");
        }
    }

    #[test]
    fn keyserver_outcomes_include_served_and_each_refusal() {
        let c = json!({"served": 4, "refused": {"revoked": 1, "unknown_ecu": 0}});
        let mut n = BTreeMap::new();
        n.insert("chassis".to_string(), 3);
        let s = render_keyserver(&c, &n, None);
        assert!(s.contains(
            "ivnsec_keyserver_connections_total{daemon=\"keyserver\",outcome=\"served\"} 4"
        ));
        assert!(s.contains("outcome=\"revoked\"} 1"));
        assert!(s.contains(
            "ivnsec_keyserver_segment_cak_number{daemon=\"keyserver\",segment=\"chassis\"} 3"
        ));
    }
}
