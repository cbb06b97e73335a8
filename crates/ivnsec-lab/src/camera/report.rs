//! The cameras experiment's report section (`[[camera]]`, seed 003 §F): the tx→rx delay of
//! every whole frame per camera count × level, judged against the frame deadline.

use std::fmt::Write as _;

use super::{CameraReport, CameraResult};
use crate::experiment::{Experiment, Holds, Tables};
use crate::table::{Table, note, yes_no};

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_string(), f)
}

/// A camera run's name in tables and verdict lists.
pub fn camera_name(c: &CameraResult) -> String {
    format!(
        "camera ×{} {}{} {}",
        c.cameras,
        c.level,
        c.suite
            .as_deref()
            .map_or(String::new(), |s| format!(" {s}")),
        c.transport
    )
}

/// The camera table: one row per camera count × level of every report.
pub fn camera_table(reports: &[CameraReport]) -> Table {
    let head = [
        "run",
        "frames",
        "lost",
        "p1 ms",
        "p25 ms",
        "p50 ms",
        "p75 ms",
        "p99 ms",
        "max ms",
        "past deadline",
        "goodput Mb/s",
        "CPU sender %",
        "CPU receiver %",
        "verdict",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let ms = |v: Option<f64>| opt(v, |x| format!("{:.2}", x / 1e3));
    let rows = reports
        .iter()
        .flat_map(|r| r.results.iter())
        .map(|c| {
            let d = c.delay_us.as_ref();
            vec![
                camera_name(c),
                c.frames_sent.to_string(),
                c.lost.to_string(),
                ms(d.map(|d| d.p1)),
                ms(d.map(|d| d.p25)),
                ms(d.map(|d| d.p50)),
                ms(d.map(|d| d.p75)),
                ms(d.map(|d| d.p99)),
                ms(d.map(|d| d.max)),
                c.past_deadline.to_string(),
                format!("{:.1}", c.goodput_mbps),
                format!("{:.1}", c.cpu.sender_pct),
                format!("{:.1}", c.cpu.receiver_pct),
                yes_no(c.passed).to_string(),
            ]
        })
        .collect();
    Table { head, rows }
}

/// The note under the camera table.
pub const CAMERA_NOTE: &str = "tx→rx delay of every whole camera frame (send time \
stamped in the frame, receive time after verification, shared clock). A run passes with no \
frame lost and none past the deadline.";

/// `[[camera]]`: camera frames at 60 fps, per camera count × level (seed 003 §F).
pub struct CameraExperiment;

impl Tables for CameraExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["camera"]
    }
}

impl<P: Holds<CameraReport>> Experiment<P> for CameraExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        let reports: &[CameraReport] = page.results();
        if !reports.is_empty() {
            s.push_str("\n## Cameras (seed 003 §F)\n\n");
            s.push_str(&camera_table(reports).markdown());
            let _ = writeln!(s, "\n{CAMERA_NOTE}");
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        let reports: &[CameraReport] = page.results();
        if !reports.is_empty() {
            s.push_str("<h2 id=\"camera\">Cameras (seed 003 §F)</h2>\n");
            s.push_str(&camera_table(reports).html());
            note(s, CAMERA_NOTE);
        }
    }

    fn failures(&self, page: &P) -> Vec<String> {
        let reports: &[CameraReport] = page.results();
        let mut out = Vec::new();
        for r in reports {
            for c in r.results.iter().filter(|c| !c.passed) {
                out.push(camera_name(c));
            }
        }
        out
    }
}
