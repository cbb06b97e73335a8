//! The tables of a plan's `[[tdma]]` and `[[crypto_bench]]` experiments, and seed 001 beside
//! them (summary.json `seed001`, summary.md, index.html): every printed figure of Tables 3, 7
//! and 11 beside our analysis of the seed's inputs and, where this run measured it, beside our
//! measurement; Figure 6's HMAC maxima beside our single-frame times.

use ivnsec_core::profile::NamedProfile;
use serde::Serialize;

use std::fmt::Write as _;

use super::seed001::{self, CapacityTable, Measure};
use super::sweep::{MeasuredRun, TdmaReport};
use crate::bench::per_frame::PerFrameReport;
use crate::experiment::{Experiment, Holds, Tables};
use crate::table::{SeedSection, Table, note, strs, yes_no};

/// Milliseconds with up to 6 decimals, trailing zeros cut (0.0064, 0.2064, 0.008889).
fn ms(v: f64) -> String {
    let mut s = format!("{v:.6}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    s
}

fn us1(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| format!("{x:.1}"))
}

fn num(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| x.to_string())
}

/// One row per profile × frame: eq. 9 for every switch count, the untagged frame's in brackets
/// where the tag changes it.
pub fn analysis_table(r: &TdmaReport) -> Table {
    let mut head = strs(&["profile", "frame bytes", "tag bytes", "Frame_time ms"]);
    head.extend(r.switches.iter().map(|n| format!("NF_max, N_switch = {n}")));
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut keys: Vec<(&str, u32)> = Vec::new();
    for a in &r.analysis {
        if !keys.contains(&(a.profile.name(), a.plain_frame_bytes)) {
            keys.push((a.profile.name(), a.plain_frame_bytes));
        }
    }
    for (profile, plain) in keys {
        let of: Vec<_> = r
            .analysis
            .iter()
            .filter(|a| a.profile == profile && a.plain_frame_bytes == plain)
            .collect();
        let Some(first) = of.first() else { continue };
        let frame = if first.tag_bytes == 0 {
            first.frame_bytes.to_string()
        } else {
            format!("{plain} → {}", first.frame_bytes)
        };
        let mut row = vec![
            profile.to_string(),
            frame,
            first.tag_bytes.to_string(),
            ms(first.frame_time_ms),
        ];
        for n in &r.switches {
            row.push(match of.iter().find(|a| a.switches == *n) {
                Some(a) if a.nf_max != a.nf_max_untagged => {
                    format!("{} ({})", a.nf_max, a.nf_max_untagged)
                }
                Some(a) => a.nf_max.to_string(),
                None => "–".into(),
            });
        }
        rows.push(row);
    }
    Table { head, rows }
}

/// The parameters line above the analysis table.
pub fn analysis_params(r: &TdmaReport) -> String {
    format!(
        "BP {} ms, GP {} ms per switch, {}; NF_max = ⌊BP / (Frame_time + GP × N_switch)⌋ \
         (seed 001 eq. 1, 9), Frame_time = frame bytes × 8 / rate (eq. 2), computed exactly.",
        ms(r.bp_ms),
        ms(r.gp_ms),
        crate::tdma::flows::fmt_rate(r.rate_bps)
    )
}

pub const ANALYSIS_NOTE: &str = "Frame bytes: the frame as `plain` sends it (Ethernet \
and IVN-AE headers and the payload) → the frame the profile makes of the same payload (its tag \
added; seed 001's 60-byte frame with the 20-byte HMAC-SHA1 tag is 80 bytes). In brackets: \
NF_max of the untagged frame, where the tag costs frames.";

/// One row per measured run.
pub fn measured_table(r: &TdmaReport) -> Table {
    let head = strs(&[
        "run",
        "sent",
        "arrived",
        "lost",
        "misses",
        "send error max µs",
        "one-way p50 µs",
        "one-way max µs",
        "Tx max µs",
        "Diff mean µs",
        "Diff max µs",
        "Max_TT µs",
        "⌊BP / Max_TT⌋",
        "eq. 9 NF_max",
        "eq. 9 with Tx",
        "no miss up to",
        "schedule met",
    ]);
    let rows = r
        .measured
        .iter()
        .map(|m| {
            let x = &m.run;
            let slot = x.slots.first();
            let owd = slot.and_then(|s| s.owd_us.as_ref());
            let diffs = &x.switch_diff_us;
            let diff_mean = (!diffs.is_empty())
                .then(|| diffs.iter().map(|d| d.us.mean).sum::<f64>() / diffs.len() as f64);
            let diff_max = diffs.iter().map(|d| d.us.max).reduce(f64::max);
            vec![
                m.name(),
                x.sent.to_string(),
                x.arrived.to_string(),
                x.lost.to_string(),
                x.misses.to_string(),
                us1(slot.and_then(|s| s.send_error_us.as_ref()).map(|e| e.max)),
                us1(owd.map(|o| o.p50)),
                us1(owd.map(|o| o.max)),
                us1(m.tx_max_us),
                us1(diff_mean),
                us1(diff_max),
                us1(x.max_tt_us),
                num(x.nf_max_tt),
                m.nf_max.to_string(),
                num(m.nf_max_measured_tx),
                num(x.capacity.as_ref().map(|c| c.nf_no_miss)),
                yes_no(m.passed()).to_string(),
            ]
        })
        .collect();
    Table { head, rows }
}

pub const MEASURED_NOTE: &str = "One frame per base period from ecu1 to ecu2 across \
N_switch Linux bridges (cascade:N testbed), in a slot of eq. 9's length, sent by a software \
slot timer on the clock every namespace shares (docs/tdma-run.md). Tx = send call → kernel \
receive at the first switch port (seed 001 Table 6 \"Tx\"); Diff = per-switch forwarding delay \
(Table 6 \"Diff\"), mean of the switches' means and the largest; Max_TT = the worst slot start \
→ arrival, and ⌊BP / Max_TT⌋ is Table 7's measured method; eq. 9 with Tx takes the largest Tx as \
the frame time, Table 11's method; 'no miss up to' = the capacity steps (`capacity = true`). A \
run passes when every frame arrived within its slot. These figures measure a Linux software \
path, not TTEthernet: the bridges forward at once instead of at scheduled dispatch points, and \
an arrival includes the receiver's wake-up.";

/// One printed figure of Tables 3, 7 and 11 beside ours (`seed001.tables[].figures[]`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureRow {
    /// The seed's column heading.
    pub column: String,
    /// The seed's row label.
    pub row: String,
    /// As printed.
    pub seed: String,
    /// Ours: the analysis (`ivnsec tdma capacity`) of the seed's inputs, at the printed
    /// precision.
    pub analysis: String,
    /// Whether the analysis is what the seed's equations give (the printed figure, or the exact
    /// one where the seed's arithmetic differs: see `note`).
    pub agrees: bool,
    /// Ours as measured in this run, at the printed precision (Tables 7 and 11 only).
    pub measured: Option<String>,
    /// The run that stands for the seed's column: profile, frame, switches, base periods.
    pub measured_by: Option<String>,
    /// What the row holds, or why the seed's figure differs from its own equations.
    pub note: Option<String>,
}

/// One of seed 001's tables beside ours.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedTable {
    pub table: u8,
    pub title: String,
    pub section: String,
    pub figures: Vec<FigureRow>,
}

/// Figure 6: one of our single-frame HMAC rows beside the seed's maxima.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HmacRow {
    /// The profile, named as the crypto-bench row names it.
    pub profile: NamedProfile,
    /// Payload bytes.
    pub size: usize,
    pub provider: String,
    pub protect_us_min: f64,
    pub protect_us_mean: f64,
    pub protect_us_max: f64,
    pub verify_us_max: f64,
    /// The seed's largest HMAC time on Platform A and B, µs (`null`: not run there).
    pub seed_max_us_a: Option<u32>,
    pub seed_max_us_b: Option<u32>,
    /// The controller code's execution time the seed compares with (§6).
    pub budget_us: u32,
    /// `protect_us_max / budget_us`.
    pub share_of_budget: f64,
}

/// Seed 001 beside this run (summary.json `seed001`; absent when the plan has no `[[tdma]]`
/// or single-frame HMAC table).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Seed001 {
    /// Tables 3, 7 and 11 (empty without a `[[tdma]]` table).
    pub tables: Vec<SeedTable>,
    /// Why Tables 7 and 11 have no measured figures, when they have none.
    pub not_measured: Option<String>,
    /// Figure 6 (empty without single-frame HMAC rows).
    pub hmac: Vec<HmacRow>,
}

/// The tables of seed 001 this report compares with.
const COMPARED: [&CapacityTable; 3] = [&seed001::TABLE_3, &seed001::TABLE_7, &seed001::TABLE_11];

/// Our measured run that stands for a seed column of `frame_bytes` on `switches` switches, from
/// a `[[tdma]]` table with the seed's base and guard periods: the one whose frame is the seed's
/// 60-byte frame (with its tag where it has one, as the seed's 80 bytes are 60 + the HMAC-SHA1
/// tag), else any of that size.
fn stand_in<'a>(
    e: &Results<'a>,
    frame_bytes: u32,
    switches: u32,
) -> Option<(&'a TdmaReport, &'a MeasuredRun)> {
    let seed_times = |r: &&TdmaReport| {
        (r.bp_ms - seed001::BP.ms_f64()).abs() < 1e-12
            && (r.gp_ms - seed001::GP.ms_f64()).abs() < 1e-12
    };
    let all: Vec<(&TdmaReport, &MeasuredRun)> = e
        .tdma
        .iter()
        .filter(seed_times)
        .flat_map(|r| r.measured.iter().map(move |m| (r, m)))
        .filter(|(_, m)| m.frame_bytes == frame_bytes && u32::from(m.switches) == switches)
        .collect();
    all.iter()
        .find(|(_, m)| m.plain_frame_bytes == seed001::FRAME_BYTES)
        .or_else(|| all.first())
        .copied()
}

/// `v` with the decimals of the printed figure `printed`.
fn like(printed: &str, v: f64) -> String {
    let d = printed.split_once('.').map_or(0, |(_, d)| d.len());
    format!("{v:.d$}")
}

/// What the seed 001 comparison reads of a report's experiments.
#[derive(Clone, Copy, Debug)]
pub struct Results<'a> {
    pub tdma: &'a [TdmaReport],
    pub crypto_bench: &'a [PerFrameReport],
}

/// Seed 001 beside `e`, when `e` has something to compare.
pub fn seed001(e: Results<'_>) -> Option<Seed001> {
    let e = &e;
    let hmac = hmac_rows(e);
    if e.tdma.is_empty() && hmac.is_empty() {
        return None;
    }
    let mut tables = Vec::new();
    if !e.tdma.is_empty() {
        for t in COMPARED {
            let Ok(cmp) = seed001::compare(t) else {
                continue;
            };
            let measured_table = t.number != 3;
            let figures = cmp
                .iter()
                .map(|c| {
                    let col = t.columns.iter().find(|k| k.heading == c.column);
                    let measured_col =
                        measured_table && col.is_some_and(|k| k.inputs.frame_time.is_some());
                    let run = col
                        .filter(|_| measured_col)
                        .and_then(|k| stand_in(e, k.inputs.frame_bytes, k.inputs.switches));
                    let printed = c.figure.printed;
                    let measured = run.and_then(|(_, m)| match (t.number, c.figure.measure) {
                        (7, Measure::NfMax) => m.run.nf_max_tt.map(|n| n.to_string()),
                        (7, Measure::FrameTime) => m.tx_max_us.map(|u| like(printed, u / 1e3)),
                        (7, Measure::MaxTt) => m.run.max_tt_us.map(|u| like(printed, u / 1e3)),
                        (11, Measure::NfMax) => m.nf_max_measured_tx.map(|n| n.to_string()),
                        _ => None,
                    });
                    FigureRow {
                        column: c.column.to_string(),
                        row: c.figure.row.to_string(),
                        seed: printed.to_string(),
                        analysis: c.ours.clone(),
                        agrees: c.agrees(),
                        measured_by: run.filter(|_| measured.is_some()).map(|(r, m)| {
                            format!(
                                "{}, {} B, cascade:{}, {} BP",
                                m.profile, m.frame_bytes, m.switches, r.periods
                            )
                        }),
                        measured,
                        note: c.figure.note.map(str::to_string),
                    }
                })
                .collect();
            tables.push(SeedTable {
                table: t.number,
                title: t.title.to_string(),
                section: t.section.to_string(),
                figures,
            });
        }
    }
    let measured_any = e.tdma.iter().any(|r| !r.measured.is_empty());
    let not_measured = if measured_any {
        None
    } else {
        e.tdma.iter().find_map(|r| r.not_measured.clone())
    };
    Some(Seed001 {
        tables,
        not_measured,
        hmac,
    })
}

/// Our single-frame rows of Figure 6's HMACs beside the seed's maxima.
fn hmac_rows(e: &Results<'_>) -> Vec<HmacRow> {
    let [a, b] = seed001::HMAC_MAX;
    let budget = seed001::CONTROLLER_BUDGET_US;
    e.crypto_bench
        .iter()
        .flat_map(|r| r.rows.iter())
        .filter(|x| a.hashes.contains(&x.profile.name()))
        .map(|x| HmacRow {
            profile: x.profile.clone(),
            size: x.size,
            provider: x.provider.clone(),
            protect_us_min: x.protect_frame_ns_min / 1e3,
            protect_us_mean: x.protect_frame_ns_mean / 1e3,
            protect_us_max: x.protect_frame_ns_max / 1e3,
            verify_us_max: x.verify_frame_ns_max / 1e3,
            seed_max_us_a: Some(a.max_us),
            seed_max_us_b: b.hashes.contains(&x.profile.name()).then_some(b.max_us),
            budget_us: budget,
            share_of_budget: x.protect_frame_ns_max / 1e3 / f64::from(budget),
        })
        .collect()
}

/// The sections of summary.md and index.html: Tables 3, 7, 11 and Figure 6 beside ours.
pub fn seed_sections(s: &Seed001) -> Vec<SeedSection> {
    let mut out = Vec::new();
    let missing = s.not_measured.as_deref().map_or(String::new(), |why| {
        format!(" Not measured in this run: {why}.")
    });
    for t in &s.tables {
        let measured = t.table != 3;
        let mut head = strs(&["column", "row", "seed", "ours: analysis"]);
        if measured {
            head.extend(strs(&["ours: measured", "measured by"]));
        }
        head.push("note".into());
        let rows = t
            .figures
            .iter()
            .map(|f| {
                let mut r = vec![
                    f.column.clone(),
                    f.row.clone(),
                    f.seed.clone(),
                    f.analysis.clone(),
                ];
                if measured {
                    r.push(f.measured.clone().unwrap_or_else(|| "—".into()));
                    r.push(f.measured_by.clone().unwrap_or_else(|| "—".into()));
                }
                r.push(f.note.clone().unwrap_or_default());
                r
            })
            .collect();
        let note = match t.table {
            3 => "Ours: the analysis of `ivnsec tdma capacity` on the seed's inputs (eq. 1 and \
                  2), computed exactly. Where the seed's own arithmetic differs from its \
                  equations, ours is the exact value and the note says why (docs/tdma.md)."
                .to_string(),
            7 => format!(
                "Theoretical: eq. 4 with SO = 0 and Diff = GP; measured: eq. 4 with Table 6's \
                 largest Tx and SO = 0.1 ms (the seed's Wireshark switch). Ours measured: our \
                 largest Tx (send call → first switch port), our worst slot start → arrival \
                 (Max_TT) and ⌊BP / Max_TT⌋, on one switch. The 60-byte column is our 60-byte \
                 frame, the 80-byte column our 60-byte frame with its 20-byte HMAC-SHA1 tag, as \
                 in the seed. Our switch is a Linux bridge on veth: our Max_TT is mostly the \
                 receiver's wake-up, not a switch's dispatch.{missing}"
            ),
            _ => format!(
                "Eq. 9 with a measured frame time (the seed: Table 6's Tx, 0.115 ms for 60 \
                 bytes and 0.15 ms for 80) and GP = 0.2 ms per switch. Ours measured: eq. 9 \
                 with our largest Tx on cascade:N. # Nodes: the end nodes N 8-port switches \
                 connect (our cascade has two ECUs).{missing}"
            ),
        };
        out.push(SeedSection {
            title: format!(
                "Beside seed 001: Table {} ({}, {})",
                t.table, t.title, t.section
            ),
            table: Table { head, rows },
            note,
        });
    }
    if !s.hmac.is_empty() {
        let f = |v: f64| format!("{v:.2}");
        let rows = s
            .hmac
            .iter()
            .map(|h| {
                vec![
                    h.profile.to_string(),
                    h.size.to_string(),
                    format!(
                        "{} / {} / {}",
                        f(h.protect_us_min),
                        f(h.protect_us_mean),
                        f(h.protect_us_max)
                    ),
                    f(h.verify_us_max),
                    h.seed_max_us_a.map_or("—".into(), |m| m.to_string()),
                    h.seed_max_us_b
                        .map_or("not run on B".into(), |m| m.to_string()),
                    format!("{:.3} %", 100.0 * h.share_of_budget),
                ]
            })
            .collect();
        out.push(SeedSection {
            title: "Beside seed 001: HMAC execution time (Figure 6, §6), µs".into(),
            table: Table {
                head: strs(&[
                    "HMAC",
                    "payload bytes",
                    "ours: protect min / mean / max",
                    "ours: verify max",
                    "seed max, Platform A",
                    "seed max, Platform B",
                    "ours max / 1200 µs",
                ]),
                rows,
            },
            note: format!(
                "Seed 001 times the HMAC of a 60-byte frame and its tag in the kernel of its \
                 platforms (Figure 6) and finds at most 25 µs (A) and 20 µs (B; no SHA3-256 \
                 there), against a typical controller code execution time of {} µs. Ours: \
                 protect (the HMAC over the IVN-AE frame) and verify of one frame at a time in \
                 user space, each call timed on its own.",
                seed001::CONTROLLER_BUDGET_US
            ),
        });
    }
    out
}

/// `[[tdma]]`: seed 001's capacity analysis (eq. 1, 2, 9) and its slot-timed runs.
pub struct TdmaExperiment;

impl Tables for TdmaExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["tdma"]
    }
}

impl<P: Holds<TdmaReport>> Experiment<P> for TdmaExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        for t in page.results() {
            s.push_str("\n## TDMA capacity, analysis (seed 001 eq. 1, 2, 9)\n\n");
            let _ = writeln!(s, "{}\n", analysis_params(t));
            s.push_str(&analysis_table(t).markdown());
            let _ = writeln!(s, "\n{ANALYSIS_NOTE}");
            s.push_str("\n## TDMA slot-timed runs (seed 001 §7, Tables 6, 7, 11)\n\n");
            match &t.not_measured {
                Some(why) => {
                    let _ = writeln!(s, "Not measured: {why}.");
                }
                None => {
                    s.push_str(&measured_table(t).markdown());
                    let _ = writeln!(s, "\n{MEASURED_NOTE}");
                }
            }
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        for (i, t) in page.results().iter().enumerate() {
            let id = if i == 0 { " id=\"tdma\"" } else { "" };
            let _ = writeln!(
                s,
                "<h2{id}>TDMA capacity, analysis (seed 001 eq. 1, 2, 9)</h2>"
            );
            note(s, &analysis_params(t));
            s.push_str(&analysis_table(t).html());
            note(s, ANALYSIS_NOTE);
            s.push_str("<h3>TDMA slot-timed runs (seed 001 §7, Tables 6, 7, 11)</h3>\n");
            match &t.not_measured {
                Some(why) => note(s, &format!("Not measured: {why}.")),
                None => {
                    s.push_str(&measured_table(t).html());
                    note(s, MEASURED_NOTE);
                }
            }
        }
    }

    fn nav(&self, page: &P, s: &mut String) {
        if !page.results().is_empty() {
            s.push_str("<a href=\"#tdma\">tdma</a>");
        }
    }

    fn failures(&self, page: &P) -> Vec<String> {
        page.results()
            .iter()
            .flat_map(|t| t.failures().map(|r| r.name()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::report::Experiments;

    fn results(e: &Experiments) -> Results<'_> {
        Results {
            tdma: &e.tdma,
            crypto_bench: &e.crypto_bench,
        }
    }

    use super::*;
    use crate::bench::per_frame::{PerFrameReport, PerFrameRow};
    use crate::tdma::run::{MinMeanMax, RunResult};
    use crate::tdma::sweep::{SweepConfig, run};

    fn figure<'a>(s: &'a Seed001, table: u8, column: &str, row: &str) -> &'a FigureRow {
        s.tables
            .iter()
            .find(|t| t.table == table)
            .and_then(|t| {
                t.figures
                    .iter()
                    .find(|f| f.column == column && f.row.starts_with(row))
            })
            .unwrap_or_else(|| panic!("Table {table} {column} {row}"))
    }

    /// A measured run as `tdma run` reports it, with the figures the tables read.
    fn measured(
        profile: &str,
        plain: u32,
        frame: u32,
        switches: u16,
        tx_us: f64,
        tt_us: f64,
    ) -> MeasuredRun {
        let run: RunResult = serde_json::from_value(serde_json::json!({
            "testbed": "ivn-000000", "topology": format!("cascade:{switches}"),
            "switches": switches, "profile": profile, "provider": "auto", "bp_ms": 10.0,
            "gp_ms": 0.2, "rate_bps": 100_000_000u64, "periods": 200, "clock": "",
            "slots": [], "switch_diff_us": [], "first_hop_us": null, "last_hop_us": null,
            "sent": 200, "arrived": 200, "lost": 0, "misses": 0, "rejected": {},
            "socket_drops": 0, "probe_drops": 0, "max_tt_us": tt_us,
            "nf_max_tt": (10_000.0 / tt_us).floor() as u64, "capacity": null,
            "schedule_met": true
        }))
        .unwrap();
        let run = RunResult {
            first_hop_us: Some(MinMeanMax {
                count: 200,
                min: 1.0,
                mean: 2.0,
                max: tx_us,
            }),
            ..run
        };
        MeasuredRun {
            profile: profile.parse().unwrap(),
            plain_frame_bytes: plain,
            frame_bytes: frame,
            switches,
            nf_max: 0,
            tx_max_us: Some(tx_us),
            // Eq. 9 with the Tx as frame time: ⌊10 / (Tx + 0.2 N)⌋.
            nf_max_measured_tx: Some((10.0 / (tx_us / 1e3 + 0.2 * f64::from(switches))) as u64),
            run,
        }
    }

    /// Without a measurement: Table 3's figures beside our analysis (2083, 1562, 48, 48 against
    /// the seed's 2083, 1563, 48, 48, the one divergence noted), Tables 7 and 11 without a
    /// measured figure and the reason why.
    #[test]
    fn analysis_only() {
        let s = SweepConfig::default().check().unwrap();
        let r = run(&s, crate::site::Where::Loopback, None, &mut |_| Ok(())).unwrap();
        let e = Experiments {
            tdma: vec![r],
            ..Experiments::default()
        };
        let s = seed001(results(&e)).unwrap();
        let nf: Vec<(&str, &str)> = s.tables[0]
            .figures
            .iter()
            .filter(|f| f.row == "NF_max")
            .map(|f| (f.seed.as_str(), f.analysis.as_str()))
            .collect();
        assert_eq!(
            nf,
            [
                ("2083", "2083"),
                ("1563", "1562"),
                ("48", "48"),
                ("48", "48")
            ]
        );
        let f = figure(&s, 3, "GP = 0, 80 bytes", "NF_max");
        assert!(f.agrees && f.note.as_deref().unwrap().contains("1562.5"));
        assert!(
            s.tables
                .iter()
                .flat_map(|t| &t.figures)
                .all(|f| f.measured.is_none() && f.agrees)
        );
        assert!(s.not_measured.as_deref().unwrap().contains("--on loopback"));
        let secs = seed_sections(&s);
        assert_eq!(secs.len(), 3);
        assert!(secs[1].note.contains("Not measured in this run"));
        assert!(s.hmac.is_empty());
        assert_eq!(seed001(results(&Experiments::default())), None);
    }

    /// Measured runs stand for the seed's columns: Table 7's 80-byte column is our 60-byte
    /// frame with the HMAC-SHA1 tag (not `plain` at 80 bytes), on one switch; Table 11 takes
    /// eq. 9 with our Tx on each switch count.
    #[test]
    fn measured_columns() {
        let mut r = run(
            &SweepConfig::default().check().unwrap(),
            crate::site::Where::Loopback,
            None,
            &mut |_| Ok(()),
        )
        .unwrap();
        r.not_measured = None;
        r.measured = vec![
            measured("plain", 60, 60, 1, 20.0, 400.0),
            measured("plain", 80, 80, 1, 99.0, 999.0),
            measured("hmac-sha1", 60, 80, 1, 25.0, 250.0),
            measured("hmac-sha1", 60, 80, 3, 30.0, 300.0),
        ];
        let e = Experiments {
            tdma: vec![r],
            ..Experiments::default()
        };
        let s = seed001(results(&e)).unwrap();
        let f = figure(&s, 7, "Measured, 80 bytes", "NF_max");
        // ⌊10 ms / 0.25 ms⌋ = 40.
        assert_eq!(f.measured.as_deref(), Some("40"));
        assert_eq!(
            f.measured_by.as_deref(),
            Some("hmac-sha1, 80 B, cascade:1, 200 BP")
        );
        let f = figure(&s, 7, "Measured, 80 bytes", "Max_TT");
        assert_eq!(
            (f.seed.as_str(), f.measured.as_deref()),
            ("0.3000", Some("0.2500"))
        );
        let f = figure(&s, 7, "Measured, 60 bytes", "Frame_time");
        assert_eq!(
            (f.seed.as_str(), f.measured.as_deref()),
            ("0.1150", Some("0.0200"))
        );
        assert!(
            figure(&s, 7, "Theoretical, 60 bytes", "NF_max")
                .measured
                .is_none()
        );
        // Table 11, 80 bytes on 3 switches: ⌊10 / (0.03 + 0.6)⌋ = 15.
        let f = figure(&s, 11, "80 bytes, N_switch = 3", "NF_max");
        assert_eq!((f.seed.as_str(), f.measured.as_deref()), ("13", Some("15")));
        assert!(
            figure(&s, 11, "80 bytes, N_switch = 2", "NF_max")
                .measured
                .is_none()
        );
        assert!(
            figure(&s, 11, "60 bytes, N_switch = 1", "# Nodes")
                .measured
                .is_none()
        );
        assert_eq!(s.not_measured, None);
    }

    /// A report of a plan without these tables keeps the JSON it had: no `tdma`,
    /// `crypto_bench` or `seed001` key.
    #[test]
    fn other_reports_have_no_new_keys() {
        let r = crate::report::Report {
            environment: serde_json::Map::new(),
            requirements: crate::pingpong::Requirements::default(),
            scenarios: Vec::new(),
            baseline_sockperf: None,
            experiments: Experiments::default(),
        };
        let v = serde_json::to_value(r.summary()).unwrap();
        assert!(v.get("seed001").is_none(), "{v}");
        let e = v["experiments"].as_object().unwrap();
        let keys: Vec<&str> = e.keys().map(String::as_str).collect();
        assert_eq!(keys, ["camera", "playback", "throughput", "underload"]);
    }

    #[test]
    fn figure_6_beside_ours() {
        let row = |profile: &str, max_ns: f64| PerFrameRow {
            profile: profile.parse().unwrap(),
            provider: "portable".into(),
            size: 60,
            protected_frame_len: 108,
            protect_frame_ns_min: 1_000.0,
            protect_frame_ns_mean: 2_000.0,
            protect_frame_ns_max: max_ns,
            verify_frame_ns_min: 1_000.0,
            verify_frame_ns_mean: 2_000.0,
            verify_frame_ns_max: 3_000.0,
        };
        let e = Experiments {
            crypto_bench: vec![PerFrameReport {
                frames: 100,
                timer_ns: Some(30.0),
                rows: vec![
                    row("hmac-sha1", 12_000.0),
                    row("hmac-sha3-256", 6_000.0),
                    row("aes128-gcm/conf", 6_000.0),
                ],
            }],
            ..Experiments::default()
        };
        let s = seed001(results(&e)).unwrap();
        assert!(s.tables.is_empty());
        let got: Vec<(&str, Option<u32>, Option<u32>, f64)> = s
            .hmac
            .iter()
            .map(|h| {
                (
                    h.profile.name(),
                    h.seed_max_us_a,
                    h.seed_max_us_b,
                    h.share_of_budget,
                )
            })
            .collect();
        // 12 µs of 1200 µs is 1 %; SHA3-256 was not run on Platform B.
        assert_eq!(
            got,
            [
                ("hmac-sha1", Some(25), Some(20), 0.01),
                ("hmac-sha3-256", Some(25), None, 0.005)
            ]
        );
        let secs = seed_sections(&s);
        assert_eq!(secs.len(), 1);
        assert_eq!(secs[0].table.rows[1][5], "not run on B");
        assert_eq!(secs[0].table.rows[0][2], "1.00 / 2.00 / 12.00");
    }
}
