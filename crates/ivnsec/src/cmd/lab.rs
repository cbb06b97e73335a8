//! What the experiment commands (`pingpong`, `run`, `validate`) share: choosing where the nodes
//! run, describing the environment for reports, and printing results.

use std::path::Path;

use anyhow::{Result, anyhow};
use ivnsec_lab::pingpong::{Requirements, Section, SectionStats, Verdicts, efficiency};
use ivnsec_net::testbed::{self, Options, Testbed};
use ivnsec_net::topology::Topology;
use serde_json::{Map, Value, json};

use crate::cli::{EnvError, usage};
use crate::node::orchestrate::{Outcome, Scenario, Site};

/// Where to run, as asked on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Where {
    /// A testbed when root, else UDP on loopback (and say so).
    Auto,
    /// Build a `pair` testbed (needs root).
    Testbed,
    /// UDP on loopback, no root needed.
    Loopback,
}

/// A site plus the testbed it owns (removed when dropped).
pub struct OpenSite {
    pub site: Site,
    pub testbed: Option<Testbed>,
    /// Why the loopback was used, when `auto` fell back.
    pub fallback_reason: Option<String>,
}

/// The testbed to build and the two ECUs that exchange on it.
pub struct Layout {
    pub topology: Topology,
    pub initiator: String,
    pub responder: String,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            topology: Topology::Pair,
            initiator: "ecu1".into(),
            responder: "ecu2".into(),
        }
    }
}

/// Opens the site: an existing testbed (`prefix`; its first and last ECUs unless the layout
/// names two of its ECUs), a fresh testbed of `layout`, or loopback.
pub fn open_site(choice: Where, existing: Option<&str>, layout: &Layout) -> Result<OpenSite> {
    if let Some(prefix) = existing {
        let state = testbed::load(&testbed::default_state_dir(), prefix).map_err(net_err)?;
        let ecus: Vec<String> = state.ecus().map(|n| n.name.clone()).collect();
        if ecus.len() < 2 {
            return Err(usage(format!("testbed {prefix} has fewer than two ECUs")));
        }
        let (initiator, responder) =
            if ecus.contains(&layout.initiator) && ecus.contains(&layout.responder) {
                (layout.initiator.clone(), layout.responder.clone())
            } else {
                (ecus[0].clone(), ecus[ecus.len() - 1].clone())
            };
        return Ok(OpenSite {
            site: Site::Testbed {
                state,
                initiator,
                responder,
            },
            testbed: None,
            fallback_reason: None,
        });
    }
    let env = testbed::check_environment();
    match (choice, env) {
        (Where::Loopback, _) => Ok(OpenSite {
            site: Site::Loopback,
            testbed: None,
            fallback_reason: None,
        }),
        (Where::Auto, Err(e)) => Ok(OpenSite {
            site: Site::Loopback,
            testbed: None,
            fallback_reason: Some(e.to_string()),
        }),
        (Where::Testbed, Err(e)) => Err(net_err(e)),
        (_, Ok(())) => {
            let tb = Testbed::up(&layout.topology, &Options::default()).map_err(net_err)?;
            tb.down_on_termination_signal().map_err(net_err)?;
            Ok(OpenSite {
                site: Site::Testbed {
                    state: tb.state().clone(),
                    initiator: layout.initiator.clone(),
                    responder: layout.responder.clone(),
                },
                testbed: Some(tb),
                fallback_reason: None,
            })
        }
    }
}

/// Whether the reference tool `tool` (sockperf, iperf3) can be run; when not, says on stderr
/// that `command` runs without that baseline and how to get it.
pub fn baseline_tool_installed(command: &str, tool: &str) -> bool {
    let ok = ivnsec_net::sys::die_with_parent(&mut std::process::Command::new(tool))
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok();
    if !ok {
        eprintln!(
            "ivnsec {command}: {tool} is not installed; no baseline (Debian: apt-get install {tool})"
        );
    }
    ok
}

/// Where a run writes one node's capture before it joins the run's capture `file`.
pub fn part_path(file: &Path) -> std::path::PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    file.with_file_name(name)
}

/// Appends every record of the capture `part` (if a node wrote one) to `w` and removes it.
pub fn append_pcap(
    w: &mut ivnsec_net::pcap::PcapWriter<impl std::io::Write>,
    part: &Path,
) -> Result<()> {
    if !part.exists() {
        return Ok(());
    }
    let mut r = ivnsec_net::pcap::PcapReader::open(part)
        .map_err(|e| anyhow!("reading {}: {e}", part.display()))?;
    while let Some(rec) = r.next_record() {
        let rec = rec.map_err(|e| anyhow!("reading {}: {e}", part.display()))?;
        w.write_frame(rec.timestamp, rec.data)?;
    }
    std::fs::remove_file(part).map_err(|e| anyhow!("removing {}: {e}", part.display()))?;
    Ok(())
}

pub fn net_err(e: ivnsec_net::Error) -> anyhow::Error {
    match e {
        ivnsec_net::Error::Env(m) => anyhow::Error::new(EnvError(m)),
        ivnsec_net::Error::Usage(m) => usage(m),
        other => anyhow!("{other}"),
    }
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The environment block of reports.
pub fn environment(site: &Site, s: &Scenario, plan: &str) -> Map<String, Value> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines()
            .find_map(|l| l.strip_prefix("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    });
    let provider = s.provider.to_string();
    let mut m = Map::new();
    m.insert("ivnsec_version".into(), json!(env!("CARGO_PKG_VERSION")));
    m.insert("date_utc".into(), json!(now_utc()));
    m.insert("host".into(), json!(read_trim("/proc/sys/kernel/hostname")));
    m.insert(
        "kernel".into(),
        json!(read_trim("/proc/sys/kernel/osrelease")),
    );
    m.insert("cpu".into(), json!(cpu));
    m.insert(
        "cores".into(),
        json!(std::thread::available_parallelism().map_or(1, |n| n.get())),
    );
    m.insert("plan".into(), json!(plan));
    m.insert("transport".into(), json!(site.transport()));
    m.insert("mode".into(), json!(s.mode.as_str()));
    m.insert("pin".into(), json!(s.pin));
    m.insert("provider".into(), json!(provider));
    m.insert("count".into(), json!(s.count));
    m.insert("replications".into(), json!(s.replications));
    m.insert("pause_ms".into(), json!(s.pause_ns as f64 / 1e6));
    m.insert("timeout_ms".into(), json!(s.timeout_ns as f64 / 1e6));
    m.insert(
        "clock".into(),
        json!("CLOCK_MONOTONIC, shared by every namespace of the host"),
    );
    m
}

/// `YYYY-MM-DDTHH:MM:SSZ` now.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (the proleptic Gregorian algorithm of H. Hinnant).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Statistics and verdicts of one scenario's outcome.
pub struct Judged {
    pub sections: Vec<(Section, Option<SectionStats>)>,
    pub verdicts: Verdicts,
}

pub fn judge(o: &Outcome, req: &Requirements) -> Judged {
    let sections: Vec<(Section, Option<SectionStats>)> = Section::ALL
        .iter()
        .map(|&s| (s, SectionStats::of(s, &o.exchanges)))
        .collect();
    let get = |s: Section| {
        sections
            .iter()
            .find(|(x, _)| *x == s)
            .and_then(|(_, v)| v.as_ref())
    };
    let verdicts = Verdicts::judge(
        req,
        get(Section::OwdForward),
        get(Section::OwdBackward),
        get(Section::Rtt),
        o.lost(),
    );
    Judged { sections, verdicts }
}

fn fmt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// Prints one scenario's section table.
pub fn print_scenario(name: &str, payload: usize, o: &Outcome, j: &Judged) {
    println!(
        "{name}: {} exchanges, {} lost, frame {} B, efficiency {:.1} %",
        o.exchanges.len(),
        o.lost(),
        o.frame_bytes,
        100.0 * efficiency(payload, o.frame_bytes)
    );
    println!(
        "  {:<13} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "section (µs)", "mean", "min", "median", "p99", "p99.9", "max", "wilcoxon", "pwcet1e-9"
    );
    for (s, st) in &j.sections {
        let Some(st) = st else { continue };
        println!(
            "  {:<13} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9} {:>10}",
            s.name(),
            st.mean_us,
            st.min_us,
            st.median_us,
            st.p99_us,
            st.p999_us,
            st.max_us,
            fmt_us(st.wilcoxon_bound_us),
            fmt_us(st.pwcet_1e9_us)
        );
    }
    for (r, n) in &o.rejected {
        println!("  initiator rejected {n} replies: {r}");
    }
    for (r, n) in &o.responder_drops {
        println!("  responder dropped {n} requests: {r}");
    }
    if o.stale > 0 {
        println!(
            "  {} replies arrived after their exchange timed out",
            o.stale
        );
    }
    println!(
        "  verdicts: control (OWD worst × margin ≤ 2.5 ms, RTT ≤ 5 ms): {}   sensor (p99.9 < 2 ms): {}",
        pass(j.verdicts.control_2500us),
        pass(j.verdicts.sensor_p999_2ms)
    );
}

pub fn pass(b: bool) -> &'static str {
    if b { "PASS" } else { "FAIL" }
}

/// Creates `dir` (and parents) or explains why not (exit 2).
pub fn ensure_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        usage(format!(
            "cannot create the output directory {}: {e}",
            dir.display()
        ))
    })
}
