//! The report sections of the streams (seed 002 §5.2.1): `[[underload]]` (sensor messages at a
//! steady rate) and `[[playback]]` (a recorded timeline), one table row per profile, judged on
//! p99.9 with lost messages counted late.

use std::fmt::Write as _;

use super::UnderloadReport;
use super::playback::Playback;
use crate::experiment::{Experiment, Holds, Tables};
use crate::table::{Table, note, yes_no};

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_string(), f)
}

fn stat(v: Option<f64>) -> String {
    opt(v, |x| format!("{x:.1}"))
}

/// The under-load or playback table: one row per profile of every report.
pub fn stream_table(reports: &[UnderloadReport]) -> Table {
    let head = [
        "profile",
        "sent",
        "lost",
        "units/message",
        "p50 µs",
        "p90 µs",
        "p99 µs",
        "p99.9 µs",
        "max µs",
        "RTT p50 µs",
        "late + lost",
        "allowed",
        "CPU machine %",
        "CPU +points",
        "verdict",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rows = Vec::new();
    for r in reports {
        for p in &r.runs {
            let o = p.one_way.as_ref();
            rows.push(vec![
                p.profile.to_string(),
                p.messages.sent.to_string(),
                p.messages.lost.to_string(),
                p.units_per_message.to_string(),
                stat(o.map(|o| o.p50_us)),
                stat(o.map(|o| o.p90_us)),
                stat(o.map(|o| o.p99_us)),
                stat(o.map(|o| o.p999_us)),
                stat(o.map(|o| o.max_us)),
                stat(p.replies.rtt.as_ref().map(|r| r.p50_us)),
                (p.verdict.late + p.verdict.lost).to_string(),
                p.verdict.allowed.to_string(),
                format!("{:.1}", p.cpu.system_pct),
                opt(p.cpu.increase_over_plain.map(|i| i.system_pct), |c| {
                    format!("{c:+.1}")
                }),
                yes_no(p.verdict.passed).to_string(),
            ]);
        }
    }
    Table { head, rows }
}

/// The note under the under-load and playback tables.
pub const STREAM_NOTE: &str = "One-way delay of every message on the shared clock, \
from the sensor's send time to the consumer's verified reassembly of the whole message (every \
fragment protected on its own); RTT of every n-th message, which the consumer answers. The \
verdict counts lost messages as late: late + lost must stay within 0.1 % of the messages sent \
(p99.9 below the requirement, seed 002 §5.1.3).";

/// One stream section of both pages, and its failed runs.
struct Stream {
    /// The plan table, and the word that names a failed run.
    kind: &'static str,
    id: &'static str,
    title: &'static str,
}

impl Stream {
    fn markdown(&self, reports: &[UnderloadReport], s: &mut String) {
        if !reports.is_empty() {
            let _ = writeln!(s, "\n## {}\n", self.title);
            s.push_str(&stream_table(reports).markdown());
            let _ = writeln!(s, "\n{STREAM_NOTE}");
        }
    }

    fn html(&self, reports: &[UnderloadReport], s: &mut String) {
        if !reports.is_empty() {
            let _ = writeln!(s, "<h2 id=\"{}\">{}</h2>", self.id, self.title);
            s.push_str(&stream_table(reports).html());
            note(s, STREAM_NOTE);
        }
    }

    fn failures(&self, reports: &[UnderloadReport]) -> Vec<String> {
        let mut out = Vec::new();
        for r in reports {
            for p in r.runs.iter().filter(|p| !p.verdict.passed) {
                out.push(format!("{} {}", self.kind, p.profile));
            }
        }
        out
    }
}

const UNDERLOAD: Stream = Stream {
    kind: "underload",
    id: "underload",
    title: "Under load (seed 002 §5.2.1)",
};

const PLAYBACK: Stream = Stream {
    kind: "playback",
    id: "playback",
    title: "Playback (seed 002 §5.2.1)",
};

/// `[[underload]]`: sensor messages at a steady rate with a request every n-th.
pub struct UnderloadExperiment;

impl Tables for UnderloadExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["underload"]
    }
}

impl<P: Holds<UnderloadReport>> Experiment<P> for UnderloadExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        UNDERLOAD.markdown(page.results(), s);
    }

    fn html(&self, page: &P, s: &mut String) {
        UNDERLOAD.html(page.results(), s);
    }

    fn failures(&self, page: &P) -> Vec<String> {
        UNDERLOAD.failures(page.results())
    }
}

/// `[[playback]]`: a recorded timeline of sensor messages played back.
pub struct PlaybackExperiment;

impl Tables for PlaybackExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["playback"]
    }
}

impl<P: Holds<UnderloadReport, Playback>> Experiment<P> for PlaybackExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        PLAYBACK.markdown(page.results(), s);
    }

    fn html(&self, page: &P, s: &mut String) {
        PLAYBACK.html(page.results(), s);
    }

    fn failures(&self, page: &P) -> Vec<String> {
        PLAYBACK.failures(page.results())
    }
}
