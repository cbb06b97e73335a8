//! The throughput experiment's report section (`[[throughput]]`): the verdicts of each run
//! against seed 002's rules, the throughput and CPU-per-role tables of summary.md and
//! index.html, and `throughput.csv`.
//!
//! Seed 002 §5.1.1 asks a security protocol to cost less than 5 % of the throughput and less than
//! 5 % CPU. Both are judged against the `plain` run of the same invocation on the same path and
//! shaping (never against a figure from another run or another machine): throughput cost =
//! 1 − goodput / plain goodput, CPU increase = machine busy % − plain's, in points.

use std::fmt::Write as _;

use serde::Serialize;

use crate::experiment::{Experiment, Holds, Tables};
use crate::pingpong::Requirements;
use crate::table::{Table, note, strs, yes_no};
use crate::throughput::{CpuResult, ThroughputResult};

/// File name of the per-run throughput table inside a report directory.
pub const THROUGHPUT_CSV: &str = "throughput.csv";

/// The verdicts of one throughput run; `None` where the same-run `plain` figure is missing
/// (the `plain` run itself, or a run with the baselines turned off).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ThroughputVerdict {
    /// 1 − goodput / plain goodput.
    pub cost: Option<f64>,
    pub cost_ok: Option<bool>,
    /// The consumer's CPU (receiver process, % of the machine) minus plain's: seed 002's CPU
    /// rule as the seed judged it, on its consumer host.
    pub cpu_increase_points: Option<f64>,
    pub cpu_ok: Option<bool>,
    /// The whole machine's busy % minus plain's: every role on one machine, so not the seed's
    /// figure; shown beside it, not judged.
    pub machine_cpu_increase_points: Option<f64>,
}

impl ThroughputVerdict {
    pub fn of(r: &ThroughputResult, limits: &Requirements) -> ThroughputVerdict {
        let plain = r
            .baseline
            .get("plain")
            .and_then(|p| p.get("goodput_mbps"))
            .and_then(serde_json::Value::as_f64)
            .filter(|g| *g > 0.0);
        let cost = plain.map(|p| 1.0 - r.goodput_mbps / p);
        // Seed 002 measured its consumer host while separate sensor hosts sent (§5.2.2): the
        // rule is judged on our consumer process; the machine holds every role.
        let cpu = r.cpu.increase_over_plain.map(|i| i.receiver_pct);
        // Unshaped, every sender runs as fast as its CPU allows: the goodput measures the CPU,
        // not the link, and the CPU is busy whatever the protection. The rules are judged on a
        // shaped link, as seed 002 measured them at 1 Gb/s.
        let shaped = r.rate_bps.is_some();
        ThroughputVerdict {
            cost,
            cost_ok: cost.filter(|_| shaped).map(|c| c < limits.throughput_cost),
            cpu_increase_points: cpu,
            cpu_ok: cpu
                .filter(|_| shaped)
                .map(|c| c < limits.cpu_increase_points),
            machine_cpu_increase_points: r.cpu.increase_over_plain.map(|i| i.system_pct),
        }
    }

    /// False when a judged rule failed; rules that could not be judged do not fail.
    pub fn passed(&self) -> bool {
        self.cost_ok != Some(false) && self.cpu_ok != Some(false)
    }
}

/// One throughput run with its verdict (`experiment_verdicts.throughput` of summary.json).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThroughputRow {
    /// `profile@payload rate ×senders`.
    pub name: String,
    #[serde(flatten)]
    pub verdict: ThroughputVerdict,
}

/// A run's name in tables and verdict lists.
pub fn throughput_name(r: &ThroughputResult) -> String {
    format!(
        "{}@{} {} ×{}{}",
        r.profile,
        r.payload,
        rate_text(r.rate_bps),
        r.senders,
        if r.tcp { " over TCP" } else { "" }
    )
}

fn rate_text(rate: Option<u64>) -> String {
    match rate {
        None => "unshaped".into(),
        Some(b) if b % 1_000_000_000 == 0 => format!("{} Gb/s", b / 1_000_000_000),
        Some(b) if b % 1_000_000 == 0 => format!("{} Mb/s", b / 1_000_000),
        Some(b) => format!("{b} b/s"),
    }
}

/// The verdicts of every throughput run, in run order.
pub fn throughput_rows(runs: &[ThroughputResult], limits: &Requirements) -> Vec<ThroughputRow> {
    runs.iter()
        .map(|r| ThroughputRow {
            name: throughput_name(r),
            verdict: ThroughputVerdict::of(r, limits),
        })
        .collect()
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_string(), f)
}

fn pct(v: f64) -> String {
    format!("{:.2} %", 100.0 * v)
}

fn judged(v: Option<bool>) -> String {
    v.map_or_else(|| "–".to_string(), |b| yes_no(b).to_string())
}

/// The throughput table of summary.md and index.html.
pub fn throughput_table(runs: &[ThroughputResult], limits: &Requirements) -> Table {
    let head = [
        "run",
        "goodput Mb/s",
        "frames/s",
        "loss",
        "theoretical Mb/s",
        "efficiency",
        "plain Mb/s",
        "cost vs plain",
        "iperf3 Mb/s",
        "CPU machine %",
        "CPU machine +points",
        "CPU consumer %",
        "CPU consumer +points",
        "sender ns/B",
        "receiver ns/B",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("cost < {:.0} %", 100.0 * limits.throughput_cost),
        format!(
            "CPU < +{} (consumer, as seed 002)",
            limits.cpu_increase_points
        ),
    ])
    .collect();
    let rows = runs
        .iter()
        .map(|r| {
            let v = ThroughputVerdict::of(r, limits);
            let f = |key: &str, field: &str| {
                r.baseline
                    .get(key)
                    .and_then(|b| b.get(field))
                    .and_then(serde_json::Value::as_f64)
            };
            let iperf = r.baseline.get("iperf3").and_then(|i| {
                let key = if r.rate_bps.is_some() {
                    "shaped"
                } else {
                    "unlimited"
                };
                i.get(key)?.get("goodput_mbps")?.as_f64()
            });
            vec![
                throughput_name(r),
                format!("{:.1}", r.goodput_mbps),
                format!("{:.0}", r.frames_per_s),
                pct(r.loss),
                opt(r.theoretical_mbps, |t| format!("{t:.1}")),
                opt(r.efficiency, pct),
                opt(f("plain", "goodput_mbps"), |p| format!("{p:.1}")),
                opt(v.cost, pct),
                opt(iperf, |p| format!("{p:.1}")),
                format!("{:.1}", r.cpu.system_pct),
                opt(v.machine_cpu_increase_points, |c| format!("{c:+.1}")),
                format!("{:.1}", r.cpu.receiver_pct),
                opt(v.cpu_increase_points, |c| format!("{c:+.1}")),
                opt(r.cpu.sender_ns_per_byte, |c| format!("{c:.2}")),
                opt(r.cpu.receiver_ns_per_byte, |c| format!("{c:.2}")),
                judged(v.cost_ok),
                judged(v.cpu_ok),
            ]
        })
        .collect();
    Table { head, rows }
}

/// The note under the throughput table.
pub const THROUGHPUT_NOTE: &str = "Goodput = payload bits delivered per second, all \
senders together. Theoretical = payload / wire bytes (frame + FCS, padding, preamble, \
inter-frame gap) × shaped rate × senders (seed 002 §6.1.2); efficiency = goodput / \
theoretical. Cost and CPU increase are against the `plain` run made in the same invocation on \
the same path and shaping (seed 002 §5.1.1: < 5 % each). The CPU rule is judged on the \
consumer, as seed 002 measured it (its consumer host, while separate sensor hosts sent): the \
consumer process's CPU in % of this machine; the machine's figure holds every role (sensors, \
switch, consumer) and is shown, not judged (CPU per role below). iperf3 is UDP (1472-byte datagrams) \
(one stream per sender at once) on the same path, unshaped or at the shaped rate. The rules are \
judged on shaped links only: unshaped, goodput and CPU measure how fast the CPU is, whatever the \
protection. '–' = not measured or not judged in this run.";

/// The CPU of each role of every throughput run that has them: the consumer (judged, as seed
/// 002 judged its consumer host), each sensor, the switch (the rest of the machine) and the
/// whole machine, each in % of the machine, per Gb/s through it, and its increase over the same
/// role in the same invocation's `plain` run.
pub fn cpu_roles_table(runs: &[ThroughputResult], limits: &Requirements) -> Table {
    let head = strs(&[
        "run",
        "role",
        "CPU %",
        "Gb/s through it",
        "CPU % per Gb/s",
        "+points over plain",
    ])
    .into_iter()
    .chain([format!(
        "CPU < +{} (seed 002: the consumer)",
        limits.cpu_increase_points
    )])
    .collect();
    let mut rows = Vec::new();
    for r in runs.iter().filter(|r| !r.cpu.roles.is_empty()) {
        let v = ThroughputVerdict::of(r, limits);
        let plain: Option<CpuResult> = r
            .baseline
            .get("plain")
            .and_then(|p| p.get("cpu"))
            .and_then(|c| serde_json::from_value(c.clone()).ok());
        let name = throughput_name(r);
        for role in &r.cpu.roles {
            let before = plain
                .as_ref()
                .and_then(|p| p.roles.iter().find(|x| x.role == role.role))
                .map(|x| role.pct - x.pct);
            let consumer = role.role == "consumer";
            rows.push(vec![
                name.clone(),
                role.role.clone(),
                format!("{:.1}", role.pct),
                format!("{:.2}", role.gbps),
                opt(role.pct_per_gbps, |c| format!("{c:.1}")),
                opt(before, |c| format!("{c:+.1}")),
                if consumer {
                    judged(v.cpu_ok)
                } else {
                    "not judged".into()
                },
            ]);
        }
        rows.push(vec![
            name,
            "machine (all roles)".into(),
            format!("{:.1}", r.cpu.system_pct),
            format!("{:.2}", r.goodput_mbps / 1e3),
            opt(r.cpu.system_pct_per_gbps, |c| format!("{c:.1}")),
            opt(v.machine_cpu_increase_points, |c| format!("{c:+.1}")),
            "not judged".into(),
        ]);
    }
    Table { head, rows }
}

/// The note under the CPU-per-role table.
pub const CPU_ROLES_NOTE: &str = "Seed 002 measured the CPU of its consumer host while \
separate sensor hosts sent (§5.2.2); here the sensors, the switch and the consumer share one \
machine, so the whole-machine figure is not the seed's. The rule (< +5 points over plain) is \
judged on the consumer, as the seed did; the other roles and the machine are shown beside it. \
CPU % is of the whole machine (all cores = 100 %) over the sending window: the consumer is the \
receiver process and each sensor its sender process (user + system time, getrusage), the \
switch is what is left of the machine's busy time (/proc/stat) after them — the kernel's bridge \
and veth work between the processes, plus anything else running on this machine. Per Gb/s: \
divided by the goodput through the role (a sensor's own; all of it for the consumer, the switch \
and the machine).";

/// throughput.csv: one row per run, the columns pandas needs to redo the table.
pub fn throughput_csv(runs: &[ThroughputResult]) -> String {
    let mut s = String::from(
        "profile,payload,frame_bytes,wire_bytes,senders,rate_bps,seconds,sent,delivered,lost,\
         loss,goodput_mbps,frames_per_s,theoretical_mbps,efficiency,plain_goodput_mbps,\
         sender_pct,receiver_pct,system_pct,system_increase_points,sender_ns_per_byte,\
         receiver_ns_per_byte\n",
    );
    let o = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for r in runs {
        let plain = r
            .baseline
            .get("plain")
            .and_then(|p| p.get("goodput_mbps"))
            .and_then(serde_json::Value::as_f64);
        let c = &r.cpu;
        // Profile names are [a-z0-9-/]: no field needs quoting.
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.profile,
            r.payload,
            r.frame_bytes,
            r.wire_bytes,
            r.senders,
            r.rate_bps.map_or(String::new(), |b| b.to_string()),
            r.seconds,
            r.sent,
            r.delivered,
            r.lost,
            r.loss,
            r.goodput_mbps,
            r.frames_per_s,
            o(r.theoretical_mbps),
            o(r.efficiency),
            o(plain),
            c.sender_pct,
            c.receiver_pct,
            c.system_pct,
            o(c.increase_over_plain.map(|i| i.system_pct)),
            o(c.sender_ns_per_byte),
            o(c.receiver_ns_per_byte),
        );
    }
    s
}

/// `[[throughput]]`: goodput, cost and CPU of each run against the same invocation's `plain`
/// run (seed 002 §5.2.3, §6.1.2).
pub struct ThroughputExperiment;

impl Tables for ThroughputExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["throughput"]
    }
}

impl<P: Holds<ThroughputResult> + AsRef<Requirements>> Experiment<P> for ThroughputExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        let runs: &[ThroughputResult] = page.results();
        if runs.is_empty() {
            return;
        }
        let limits = page.as_ref();
        s.push_str("\n## Throughput (seed 002 §5.2.3, §6.1.2)\n\n");
        s.push_str(&throughput_table(runs, limits).markdown());
        let _ = writeln!(s, "\n{THROUGHPUT_NOTE}");
        let roles = cpu_roles_table(runs, limits);
        if !roles.rows.is_empty() {
            s.push_str("\n### CPU per role (seed 002 §5.2.2: judged on the consumer)\n\n");
            s.push_str(&roles.markdown());
            let _ = writeln!(s, "\n{CPU_ROLES_NOTE}");
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        let runs: &[ThroughputResult] = page.results();
        if runs.is_empty() {
            return;
        }
        let limits = page.as_ref();
        s.push_str("<h2 id=\"throughput\">Throughput (seed 002 §5.2.3, §6.1.2)</h2>\n");
        s.push_str(&throughput_table(runs, limits).html());
        note(s, THROUGHPUT_NOTE);
        let roles = cpu_roles_table(runs, limits);
        if !roles.rows.is_empty() {
            s.push_str("<h3>CPU per role (seed 002 §5.2.2: judged on the consumer)</h3>\n");
            s.push_str(&roles.html());
            note(s, CPU_ROLES_NOTE);
        }
    }

    fn failures(&self, page: &P) -> Vec<String> {
        throughput_rows(page.results(), page.as_ref())
            .into_iter()
            .filter(|r| !r.verdict.passed())
            .map(|r| r.name)
            .collect()
    }

    fn files(&self, page: &P) -> Vec<(&'static str, String)> {
        let runs: &[ThroughputResult] = page.results();
        if runs.is_empty() {
            return Vec::new();
        }
        vec![(THROUGHPUT_CSV, throughput_csv(runs))]
    }
}
