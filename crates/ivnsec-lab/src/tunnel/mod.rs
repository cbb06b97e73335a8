//! Seed 004's tunnel experiments on a `pair` testbed of their own (docs/experiments.md#seed-004):
//! `[[tunnel_ping]]` (ping round trip by ICMP payload size, p50/p99/p99.9, plain, through
//! `ivnsec esp up` and through `ivnsec macsec up`) and `[[tunnel_bulk]]` (iperf3 TCP goodput and
//! a file copied with scp, plain and through the ESP tunnel, with the machine's CPU).
//!
//! The run starts the tunnels itself: fresh random keys for every run, written 0600 into a
//! private (0700) directory beside the testbed's state and named to `esp up` / `macsec up` by
//! path (never the bytes on a command line); their nonce state lives there too and the
//! directory is removed with the testbed. Every child is spawned with `die_with_parent` and
//! killed when the experiment ends (also on an error).

pub mod plan;
pub mod report;

pub use report::TunnelExperiment;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use ivnsec_core::profile::{Family, MacsecProfile, NamedProfile, Profile};
use ivnsec_core::sa::macsec::CipherSuite;
use serde::{Deserialize, Serialize};

use ivnsec_net::testbed::{self, Options, Testbed};
use ivnsec_net::topology::Topology;

use ivnsec_net::sys::die_with_parent;

use ivnsec_node::error::{KeyError, env_error};

/// The inner addresses of the ESP tunnel (TUN `esp0`) on ecu1 and ecu2.
const ESP_INNER: [&str; 2] = ["10.9.0.1", "10.9.0.2"];
/// The addresses of the MACsec TAP (`mac0`) on ecu1 and ecu2.
const MACSEC_INNER: [&str; 2] = ["10.10.0.1", "10.10.0.2"];
const ESP_TUN: &str = "esp0";
const MACSEC_TAP: &str = "mac0";
/// The profile of the MACsec path.
const MACSEC: Profile = Profile::Macsec(MacsecProfile {
    suite: CipherSuite::GcmAes128,
    confidentiality: true,
});
/// Largest ICMP payload `ping -s` takes over IPv4.
const MAX_PING_SIZE: usize = 65507;

/// The paths an experiment can measure.
pub const PATHS: [&str; 3] = ["plain", "esp", "macsec"];

fn default_sizes() -> Vec<usize> {
    vec![64, 128, 256, 512, 1024, 1472, 2000, 4000, 8000]
}
fn default_count() -> u32 {
    1000
}
fn default_interval_ms() -> f64 {
    2.0
}
/// `esp-aes128-gcm`, as either form of the tables holds it.
fn default_esp_profile<P: FromStr>() -> P
where
    P::Err: std::fmt::Debug,
{
    "esp-aes128-gcm".parse().expect("a profile")
}
fn default_ping_paths() -> Vec<String> {
    PATHS.iter().map(|s| s.to_string()).collect()
}
fn default_bulk_paths() -> Vec<String> {
    vec!["plain".into(), "esp".into()]
}
fn default_tools() -> Vec<String> {
    vec!["iperf3".into(), "scp".into()]
}
fn default_seconds() -> f64 {
    10.0
}
fn default_file_mib() -> u32 {
    128
}

/// One `[[tunnel_ping]]` table. `P` is how its profile is held: as the plan file spells it
/// (`String`) until [`PingConfig::check`] parses it, typed after that (the default).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "P: Deserialize<'de> + FromStr, <P as FromStr>::Err: std::fmt::Debug")
)]
pub struct PingConfig<P = NamedProfile> {
    /// ICMP payload bytes (`ping -s`), 1 … 65507; above the path MTU they fragment.
    #[serde(default = "default_sizes")]
    pub sizes: Vec<usize>,
    /// Pings per size and path.
    #[serde(default = "default_count")]
    pub count: u32,
    /// Milliseconds between pings (`ping -i`).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: f64,
    /// The ESP profile of the tunnel.
    #[serde(default = "default_esp_profile")]
    pub esp_profile: P,
    /// Which of `plain`, `esp`, `macsec`, in order.
    #[serde(default = "default_ping_paths")]
    pub paths: Vec<String>,
}

/// One `[[tunnel_bulk]]` table; `P` as for [`PingConfig`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(
    deny_unknown_fields,
    bound(deserialize = "P: Deserialize<'de> + FromStr, <P as FromStr>::Err: std::fmt::Debug")
)]
pub struct BulkConfig<P = NamedProfile> {
    /// iperf3 seconds per run.
    #[serde(default = "default_seconds")]
    pub seconds: f64,
    /// MiB of random data copied by scp (seed 004 §4.3: 128 MB).
    #[serde(default = "default_file_mib")]
    pub file_mib: u32,
    #[serde(default = "default_esp_profile")]
    pub esp_profile: P,
    /// Which of `plain`, `esp`, `macsec`.
    #[serde(default = "default_bulk_paths")]
    pub paths: Vec<String>,
    /// Which of `iperf3`, `scp`.
    #[serde(default = "default_tools")]
    pub tools: Vec<String>,
}

fn check_paths(paths: &[String]) -> Result<(), KeyError> {
    if paths.is_empty() {
        return Err(KeyError::new(
            "paths",
            "give at least one of plain, esp, macsec",
        ));
    }
    for (i, p) in paths.iter().enumerate() {
        if !PATHS.contains(&p.as_str()) {
            return Err(KeyError::new(
                format!("paths[{i}]"),
                format!("unknown path `{p}`; the paths are plain, esp, macsec"),
            ));
        }
        if paths[..i].contains(p) {
            return Err(KeyError::new(
                format!("paths[{i}]"),
                format!("`{p}` appears twice"),
            ));
        }
    }
    Ok(())
}

/// The table's `esp_profile`, parsed (the plan file's edge).
fn check_esp_profile(name: &str) -> Result<NamedProfile, KeyError> {
    name.parse::<NamedProfile>()
        .ok()
        .filter(|p| p.family() == Family::Esp)
        .ok_or_else(|| {
            KeyError::new(
                "esp_profile",
                format!("`{name}` is not an ESP profile (e.g. esp-aes128-gcm; `ivnsec suites`)"),
            )
        })
}

impl PingConfig<String> {
    /// Checks every key of the table as the plan file wrote it, and returns it with its
    /// profile parsed; the error names the key.
    pub fn check(&self) -> Result<PingConfig, KeyError> {
        if self.sizes.is_empty() || self.sizes.len() > 32 {
            return Err(KeyError::new("sizes", "give 1 to 32 sizes"));
        }
        for (i, &s) in self.sizes.iter().enumerate() {
            if !(1..=MAX_PING_SIZE).contains(&s) {
                return Err(KeyError::new(
                    format!("sizes[{i}]"),
                    format!("an ICMP payload is 1 to {MAX_PING_SIZE} bytes, got {s}"),
                ));
            }
        }
        if !(1..=100_000).contains(&self.count) {
            return Err(KeyError::new(
                "count",
                format!("count must be 1 to 100000, got {}", self.count),
            ));
        }
        if !(self.interval_ms >= 1.0 && self.interval_ms <= 10_000.0) {
            return Err(KeyError::new(
                "interval_ms",
                format!(
                    "interval_ms must be 1 to 10000 milliseconds, got {}",
                    self.interval_ms
                ),
            ));
        }
        let esp_profile = check_esp_profile(&self.esp_profile)?;
        check_paths(&self.paths)?;
        Ok(PingConfig {
            sizes: self.sizes.clone(),
            count: self.count,
            interval_ms: self.interval_ms,
            esp_profile,
            paths: self.paths.clone(),
        })
    }
}

impl BulkConfig<String> {
    /// Checks every key of the table as the plan file wrote it, and returns it with its
    /// profile parsed; the error names the key.
    pub fn check(&self) -> Result<BulkConfig, KeyError> {
        if !(self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(KeyError::new(
                "seconds",
                format!(
                    "seconds must be above 0 and at most 3600, got {}",
                    self.seconds
                ),
            ));
        }
        if !(1..=4096).contains(&self.file_mib) {
            return Err(KeyError::new(
                "file_mib",
                format!("file_mib must be 1 to 4096, got {}", self.file_mib),
            ));
        }
        let esp_profile = check_esp_profile(&self.esp_profile)?;
        check_paths(&self.paths)?;
        if self.tools.is_empty() {
            return Err(KeyError::new("tools", "give at least one of iperf3, scp"));
        }
        for (i, t) in self.tools.iter().enumerate() {
            if t != "iperf3" && t != "scp" {
                return Err(KeyError::new(
                    format!("tools[{i}]"),
                    format!("unknown tool `{t}`; the tools are iperf3, scp"),
                ));
            }
            if self.tools[..i].contains(t) {
                return Err(KeyError::new(
                    format!("tools[{i}]"),
                    format!("`{t}` appears twice"),
                ));
            }
        }
        Ok(BulkConfig {
            seconds: self.seconds,
            file_mib: self.file_mib,
            esp_profile,
            paths: self.paths.clone(),
            tools: self.tools.clone(),
        })
    }
}

/// One size × path of `[[tunnel_ping]]`: round trips in µs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PingRow {
    pub path: String,
    pub size: usize,
    pub sent: u32,
    pub received: u32,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PingReport {
    pub config: PingConfig,
    /// The MTU of the ESP tunnel interface (sizes above it fragment inside the tunnel).
    pub rows: Vec<PingRow>,
}

/// One tool × path of `[[tunnel_bulk]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BulkRow {
    /// `iperf3` (TCP, what the receiver got) or `scp` (file bytes / wall time).
    pub tool: String,
    pub path: String,
    pub goodput_mbps: f64,
    /// Busy % of the whole machine during the transfer (both ECUs and the tunnels share it).
    pub cpu_pct: f64,
    pub bytes: u64,
    pub seconds: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BulkReport {
    pub config: BulkConfig,
    pub rows: Vec<BulkRow>,
}

/// Nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The round trips (µs) of `ping`'s output, one per `time=X ms` line.
pub fn parse_ping(text: &str) -> Vec<f64> {
    text.lines()
        .filter_map(|l| {
            let t = l.split("time=").nth(1)?;
            let ms: f64 = t.split_whitespace().next()?.parse().ok()?;
            (ms.is_finite() && ms >= 0.0).then_some(ms * 1000.0)
        })
        .collect()
}

/// A `pair` testbed with the tunnels `paths` asks for; everything goes when it drops.
struct Bed {
    tb: Option<Testbed>,
    children: Vec<Child>,
    dir: PathBuf,
    ns: [String; 2],
    outer: [String; 2],
}

impl Drop for Bed {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(tb) = self.tb.take() {
            let _ = tb.down();
        }
    }
}

fn need_tools(tools: &[&str]) -> Result<()> {
    for t in tools {
        let found = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).any(|d| d.join(t).is_file()))
            .unwrap_or(false)
            || Path::new(t).is_file();
        if !found {
            return Err(env_error(format!(
                "the tunnel experiments need `{t}`; install it (scripts/setup)"
            )));
        }
    }
    Ok(())
}

/// `ip netns exec NS PROGRAM`; every caller spawns it through `die_with_parent`.
fn netns(ns: &str, program: &str) -> Command {
    testbed::netns_command(ns, program)
}

fn ip(ns: &str, args: &[&str]) -> Result<()> {
    let o = ivnsec_net::sys::die_with_parent(&mut Command::new("ip"))
        .args(["-n", ns])
        .args(args)
        .output()
        .map_err(|e| anyhow!("running ip: {e}"))?;
    if !o.status.success() {
        return Err(anyhow!(
            "ip -n {ns} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(())
}

/// A new file for a child's stderr.
fn log_file(dir: &Path, name: &str) -> Result<std::fs::File> {
    let p = dir.join(name);
    std::fs::File::create(&p).map_err(|e| anyhow!("creating {}: {e}", p.display()))
}

/// The last 2 KiB of a child's stderr, for an error message.
fn log_tail(p: &Path) -> String {
    let text = std::fs::File::open(p)
        .and_then(|f| {
            let mut s = String::new();
            f.take(1 << 20).read_to_string(&mut s).map(|_| s)
        })
        .unwrap_or_default();
    let t = text.trim();
    let start = t.len().saturating_sub(2048);
    let start = (start..t.len())
        .find(|&i| t.is_char_boundary(i))
        .unwrap_or(t.len());
    format!("its stderr: {}", &t[start..])
}

/// Waits until `file` exists (a status file the child writes once it runs).
fn wait_file(child: &mut Child, file: &Path, what: &str) -> Result<()> {
    let t0 = Instant::now();
    loop {
        if file.exists() {
            return Ok(());
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(anyhow!("{what} ended at start ({st})"));
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(anyhow!("{what} did not start within 10 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_dir_json(child: &mut Child, dir: &Path, what: &str) -> Result<()> {
    let t0 = Instant::now();
    loop {
        let up = std::fs::read_dir(dir)
            .map(|mut d| {
                d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".json")))
            })
            .unwrap_or(false);
        if up {
            return Ok(());
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(anyhow!("{what} ended at start ({st})"));
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return Err(anyhow!("{what} did not start within 10 s"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Bed {
    fn up(esp_profile: &NamedProfile, paths: &[String]) -> Result<Bed> {
        testbed::check_environment().map_err(|e| {
            env_error(format!(
                "the tunnel experiments need a testbed (root, namespaces, TUN/TAP): {e}"
            ))
        })?;
        let tb = Testbed::up(&Topology::Pair, &Options::default()).map_err(|e| anyhow!("{e}"))?;
        crate::interrupt::remove_on_signal(&tb).map_err(|e| anyhow!("{e}"))?;
        let state = tb.state().clone();
        let ecus: Vec<_> = state.ecus().map(|n| n.name.clone()).collect();
        if ecus.len() != 2 {
            return Err(anyhow!("a pair testbed has two ECUs, found {}", ecus.len()));
        }
        let ns = [
            state
                .namespace_of(&ecus[0])
                .map_err(|e| anyhow!("{e}"))?
                .to_string(),
            state
                .namespace_of(&ecus[1])
                .map_err(|e| anyhow!("{e}"))?
                .to_string(),
        ];
        let outer = [
            state
                .ipv4_of(&ecus[0])
                .ok_or_else(|| anyhow!("{} has no IPv4 address", ecus[0]))?
                .to_string(),
            state
                .ipv4_of(&ecus[1])
                .ok_or_else(|| anyhow!("{} has no IPv4 address", ecus[1]))?
                .to_string(),
        ];
        let dir = tb.state_dir().join(format!("{}-tunnels", tb.prefix()));
        let mut bed = Bed {
            tb: Some(tb),
            children: Vec::new(),
            dir: dir.clone(),
            ns,
            outer,
        };
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .recursive(true)
                .create(&dir)
                .map_err(|e| anyhow!("creating {}: {e}", dir.display()))?;
        }
        let exe =
            std::env::current_exe().map_err(|e| anyhow!("locating the ivnsec binary: {e}"))?;
        let exe = exe.to_string_lossy().into_owned();
        if paths.iter().any(|p| p == "esp") {
            bed.start_esp(&exe, esp_profile)?;
        }
        if paths.iter().any(|p| p == "macsec") {
            bed.start_macsec(&exe)?;
        }
        Ok(bed)
    }

    fn start_esp(&mut self, exe: &str, profile: &NamedProfile) -> Result<()> {
        let profile_name = profile.name();
        let files = [
            self.dir.join("esp-1to2.toml"),
            self.dir.join("esp-2to1.toml"),
        ];
        for f in &files {
            let keys = ivnsec_node::channel::random_keys(profile.profile())?;
            ivnsec_node::keys::keyfile::write_new(f, profile_name, &keys)?;
        }
        let spis = ["0x1001", "0x1002"];
        for i in 0..2 {
            let j = 1 - i;
            let status = self.dir.join(format!("esp-status-{i}.json"));
            let mut cmd = netns(&self.ns[i], exe);
            cmd.args(["esp", "up", "--tun", ESP_TUN, "--local", &self.outer[i]])
                .args(["--remote", &self.outer[j], "--profile", profile_name])
                .arg("--tx-keys")
                .arg(&files[i])
                .arg("--rx-keys")
                .arg(&files[j])
                .args(["--tx-spi", spis[i], "--rx-spi", spis[j]])
                .arg("--state-dir")
                .arg(self.dir.join(format!("esp-state-{i}")))
                .arg("--status")
                .arg(&status)
                .args(["--addr", &format!("{}/24", ESP_INNER[i])])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file(&self.dir, &format!("esp-{i}.log"))?);
            let mut child = die_with_parent(&mut cmd)
                .spawn()
                .map_err(|e| anyhow!("starting ivnsec esp up: {e}"))?;
            let r = wait_file(&mut child, &status, "ivnsec esp up");
            self.children.push(child);
            r.map_err(|e| e.context(log_tail(&self.dir.join(format!("esp-{i}.log")))))?;
        }
        Ok(())
    }

    fn start_macsec(&mut self, exe: &str) -> Result<()> {
        let profile = NamedProfile::from(MACSEC);
        let key_file = self.dir.join("macsec-ca.toml");
        let keys = ivnsec_node::channel::random_keys(MACSEC)?;
        ivnsec_node::keys::keyfile::write_new(&key_file, profile.name(), &keys)?;
        let state = self.tb.as_ref().map(|t| t.state().clone());
        let macs: Vec<String> = state
            .iter()
            .flat_map(|s| {
                s.ecus()
                    .map(|n| {
                        n.interfaces
                            .first()
                            .map(|i| i.mac.clone())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        if macs.len() != 2 {
            return Err(anyhow!("the ECUs' MAC addresses are unknown"));
        }
        for i in 0..2 {
            let run_dir = self.dir.join(format!("macsec-run-{i}"));
            let mut cmd = netns(&self.ns[i], exe);
            cmd.args(["macsec", "up", "--iface", "eth0", "--tap", MACSEC_TAP])
                .args(["--profile", profile.name(), "--keys"])
                .arg(&key_file)
                .arg("--state-dir")
                .arg(self.dir.join(format!("macsec-state-{i}")))
                .arg("--run-dir")
                .arg(&run_dir)
                .args(["--peer", &macs[1 - i]])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file(&self.dir, &format!("macsec-{i}.log"))?);
            let mut child = die_with_parent(&mut cmd)
                .spawn()
                .map_err(|e| anyhow!("starting ivnsec macsec up: {e}"))?;
            let r = wait_dir_json(&mut child, &run_dir.join("macsec"), "ivnsec macsec up");
            self.children.push(child);
            r.map_err(|e| e.context(log_tail(&self.dir.join(format!("macsec-{i}.log")))))?;
            ip(
                &self.ns[i],
                &[
                    "addr",
                    "add",
                    &format!("{}/24", MACSEC_INNER[i]),
                    "dev",
                    MACSEC_TAP,
                ],
            )?;
            ip(&self.ns[i], &["link", "set", MACSEC_TAP, "up"])?;
        }
        Ok(())
    }

    /// ecu2's address on `path`.
    fn target(&self, path: &str) -> String {
        match path {
            "esp" => ESP_INNER[1].to_string(),
            "macsec" => MACSEC_INNER[1].to_string(),
            _ => self.outer[1].clone(),
        }
    }

    /// Pings from ecu1; the round trips in µs.
    fn ping(&self, target: &str, size: usize, count: u32, interval_ms: f64) -> Result<Vec<f64>> {
        let o = crate::interrupt::output(
            die_with_parent(&mut netns(&self.ns[0], "ping"))
                .args(["-n", "-c", &count.to_string()])
                .args(["-i", &format!("{:.3}", interval_ms / 1000.0)])
                .args(["-W", "1", "-s", &size.to_string(), target]),
        )
        .map_err(|e| anyhow!("running ping: {e}"))?;
        let mut v = parse_ping(&String::from_utf8_lossy(&o.stdout));
        v.sort_by(f64::total_cmp);
        Ok(v)
    }

    /// A path works when two pings cross it.
    fn check_path(&self, path: &str) -> Result<()> {
        let t = self.target(path);
        for _ in 0..20 {
            if !self.ping(&t, 56, 2, 10.0)?.is_empty() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(anyhow!(
            "no ping from ecu1 to {t} ({path}) crosses the testbed"
        ))
    }
}

/// Runs one `[[tunnel_ping]]` table on a testbed of its own.
pub fn run_ping(cfg: &PingConfig) -> Result<PingReport> {
    need_tools(&["ping", "ip"])?;
    let bed = Bed::up(&cfg.esp_profile, &cfg.paths)?;
    for p in &cfg.paths {
        bed.check_path(p)?;
    }
    let mut rows = Vec::new();
    // Interrupted (crate::interrupt): the rows that finished.
    'sizes: for &size in &cfg.sizes {
        for p in &cfg.paths {
            if crate::interrupt::requested() {
                break 'sizes;
            }
            let v = bed.ping(&bed.target(p), size, cfg.count, cfg.interval_ms)?;
            if crate::interrupt::requested() {
                break 'sizes;
            }
            rows.push(PingRow {
                path: p.clone(),
                size,
                sent: cfg.count,
                received: v.len() as u32,
                p50_us: percentile(&v, 0.5),
                p99_us: percentile(&v, 0.99),
                p999_us: percentile(&v, 0.999),
                max_us: v.last().copied().unwrap_or(0.0),
            });
        }
    }
    drop(bed);
    Ok(PingReport {
        config: cfg.clone(),
        rows,
    })
}

/// Runs one `[[tunnel_bulk]]` table on a testbed of its own.
pub fn run_bulk(cfg: &BulkConfig) -> Result<BulkReport> {
    let mut tools = vec!["ip"];
    if cfg.tools.iter().any(|t| t == "iperf3") {
        tools.push("iperf3");
    }
    if cfg.tools.iter().any(|t| t == "scp") {
        tools.extend(["scp", "ssh-keygen", "/usr/sbin/sshd"]);
    }
    need_tools(&tools)?;
    let mut bed = Bed::up(&cfg.esp_profile, &cfg.paths)?;
    for p in &cfg.paths {
        bed.check_path(p)?;
    }
    let mut rows = Vec::new();
    if cfg.tools.iter().any(|t| t == "iperf3") {
        let server = die_with_parent(&mut netns(&bed.ns[1], "iperf3"))
            .args(["-s", "-p", "5299"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| anyhow!("starting iperf3 -s: {e}"))?;
        bed.children.push(server);
        std::thread::sleep(Duration::from_millis(300));
        for p in &cfg.paths {
            if crate::interrupt::requested() {
                break;
            }
            let cpu = crate::cpu::SystemSampler::start(Duration::from_millis(500));
            let t0 = Instant::now();
            let o = crate::interrupt::output(
                die_with_parent(&mut netns(&bed.ns[0], "iperf3"))
                    .args(["-c", &bed.target(p), "-p", "5299", "-J"])
                    .args(["-t", &format!("{}", cfg.seconds)]),
            )
            .map_err(|e| anyhow!("running iperf3: {e}"))?;
            if crate::interrupt::requested() {
                break;
            }
            let secs = t0.elapsed().as_secs_f64();
            let cpu = cpu.stop();
            let j: serde_json::Value =
                serde_json::from_slice(&o.stdout).map_err(|e| anyhow!("iperf3 -J to {p}: {e}"))?;
            let recv = &j["end"]["sum_received"];
            let bps = recv["bits_per_second"]
                .as_f64()
                .ok_or_else(|| anyhow!("iperf3 over {p} failed: {}", j["error"]))?;
            rows.push(BulkRow {
                tool: "iperf3".into(),
                path: p.clone(),
                goodput_mbps: bps / 1e6,
                cpu_pct: cpu.pct,
                bytes: recv["bytes"].as_u64().unwrap_or(0),
                seconds: recv["seconds"].as_f64().unwrap_or(secs),
            });
        }
    }
    if cfg.tools.iter().any(|t| t == "scp") && !crate::interrupt::requested() {
        rows.extend(scp_rows(&mut bed, cfg)?);
    }
    drop(bed);
    Ok(BulkReport {
        config: cfg.clone(),
        rows,
    })
}

fn scp_rows(bed: &mut Bed, cfg: &BulkConfig) -> Result<Vec<BulkRow>> {
    let d = bed.dir.clone();
    for k in ["host", "client"] {
        let f = d.join(k);
        let o = die_with_parent(&mut Command::new("ssh-keygen"))
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&f)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| anyhow!("running ssh-keygen: {e}"))?;
        if !o.status.success() {
            return Err(anyhow!(
                "ssh-keygen: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
    }
    std::fs::copy(d.join("client.pub"), d.join("auth")).map_err(|e| anyhow!("{e}"))?;
    let _ = std::fs::create_dir_all("/run/sshd");
    let opt = |k: &str, v: &Path| format!("{k}={}", v.display());
    let sshd = die_with_parent(&mut netns(&bed.ns[1], "/usr/sbin/sshd"))
        .args([
            "-D",
            "-f",
            "/dev/null",
            "-p",
            "2222",
            "-o",
            "ListenAddress=0.0.0.0",
        ])
        .args(["-o", &opt("HostKey", &d.join("host"))])
        .args(["-o", &opt("AuthorizedKeysFile", &d.join("auth"))])
        .args([
            "-o",
            "PidFile=none",
            "-o",
            "StrictModes=no",
            "-o",
            "PermitRootLogin=yes",
        ])
        .args(["-o", "UsePAM=no"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| anyhow!("starting sshd: {e}"))?;
    bed.children.push(sshd);
    // The file: random bytes (seed 004 §4.3: uncompressed random data).
    let file = d.join("file");
    let bytes = u64::from(cfg.file_mib) << 20;
    {
        let mut src = std::fs::File::open("/dev/urandom")
            .map_err(|e| anyhow!("{e}"))?
            .take(bytes);
        let mut dst = std::fs::File::create(&file).map_err(|e| anyhow!("{e}"))?;
        std::io::copy(&mut src, &mut dst)
            .map_err(|e| anyhow!("writing {}: {e}", file.display()))?;
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut rows = Vec::new();
    for p in &cfg.paths {
        if crate::interrupt::requested() {
            break;
        }
        let cpu = crate::cpu::SystemSampler::start(Duration::from_millis(500));
        let t0 = Instant::now();
        let o = crate::interrupt::output(
            die_with_parent(&mut netns(&bed.ns[0], "scp"))
                .args(["-O", "-q", "-P", "2222", "-i"])
                .arg(d.join("client"))
                .args([
                    "-o",
                    "StrictHostKeyChecking=no",
                    "-o",
                    "UserKnownHostsFile=/dev/null",
                ])
                .args(["-o", "BatchMode=yes"])
                .arg(&file)
                .arg(format!("root@{}:/dev/null", bed.target(p))),
        )
        .map_err(|e| anyhow!("running scp: {e}"))?;
        if crate::interrupt::requested() {
            break;
        }
        let secs = t0.elapsed().as_secs_f64();
        let cpu = cpu.stop();
        if !o.status.success() {
            return Err(anyhow!(
                "scp over {p} failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        rows.push(BulkRow {
            tool: "scp".into(),
            path: p.clone(),
            goodput_mbps: bytes as f64 * 8.0 / secs / 1e6,
            cpu_pct: cpu.pct,
            bytes,
            seconds: secs,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_output_is_parsed_and_ranked() {
        // iputils ping's lines (the summary line has no `time=`).
        let out = "PING 10.0.0.2 (10.0.0.2) 64(92) bytes of data.\n\
                   72 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.045 ms\n\
                   72 bytes from 10.0.0.2: icmp_seq=2 ttl=64 time=1.50 ms\n\
                   rtt min/avg/max/mdev = 0.045/0.772/1.500/0.727 ms\n";
        let v = parse_ping(out);
        assert_eq!(v.len(), 2);
        assert!((v[0] - 45.0).abs() < 1e-9 && (v[1] - 1500.0).abs() < 1e-9);
        let s: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&s, 0.5), 500.0);
        assert_eq!(percentile(&s, 0.99), 990.0);
        assert_eq!(percentile(&s, 0.999), 999.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn bad_tables_name_the_key() {
        let ping: PingConfig<String> = toml::from_str("sizes = [64, 0]").unwrap();
        assert_eq!(ping.check().unwrap_err().key, "sizes[1]");
        let ping: PingConfig<String> =
            toml::from_str("paths = [\"plain\", \"wireguard\"]").unwrap();
        assert_eq!(ping.check().unwrap_err().key, "paths[1]");
        let ping: PingConfig<String> = toml::from_str("esp_profile = \"aes128-gcm\"").unwrap();
        assert_eq!(ping.check().unwrap_err().key, "esp_profile");
        let bulk: BulkConfig<String> = toml::from_str("tools = [\"ftp\"]").unwrap();
        assert_eq!(bulk.check().unwrap_err().key, "tools[0]");
        let bulk: BulkConfig<String> = toml::from_str("seconds = 0").unwrap();
        assert_eq!(bulk.check().unwrap_err().key, "seconds");
        assert!(toml::from_str::<BulkConfig<String>>("cout = 3").is_err());
        let d: PingConfig<String> = toml::from_str("").unwrap();
        d.check().unwrap();
        assert_eq!(d.paths, ["plain", "esp", "macsec"]);
    }
}
