//! `summary.md`: the environment, the requirements, the ping-pong scenarios' sections
//! (`report/scenarios.rs`), the sockperf baseline, the sections of the plan's other experiments
//! in the order of `experiments::all()` and the comparisons with the seeds (`report/seeds/`). The
//! tables come as plain data ([`Table`](super::Table)), so the HTML page shows the same rows.

use std::fmt::Write as _;

use serde_json::Value;

use super::experiments::Experiments;
use super::summary::Summary;
use crate::pingpong::Requirements;
use crate::table::kv_table;

/// summary.md.
pub(super) fn render(summary: &Summary) -> String {
    let mut s = String::new();
    let req = &summary.requirements;
    s.push_str("# ivnsec report\n\n");
    if summary.interrupted {
        s.push_str("**Interrupted: this run was stopped (Ctrl-C) before the end of its plan; it holds only the scenarios and experiments that finished before that.**\n\n");
    }
    s.push_str("Files: `samples.csv` (one row per message), `summary.json` (keys in docs/report.md), `index.html` (plots).\n\n");
    s.push_str("## Environment\n\n");
    if summary.environment.is_empty() {
        s.push_str("(not recorded)\n\n");
    } else {
        s.push_str(&kv_table(&summary.environment).markdown());
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "Requirements: control data worst one-way delay × (1 + {:.0} % margin) ≤ {} µs and RTT ≤ {} µs with no message lost (seed 000 §2.6, §4.4); sensor data forward-OWD p99.9 < {} µs (seed 002 §5.1.3).\n",
        100.0 * req.safety_margin,
        req.control_owd_us,
        req.control_rtt_us,
        req.sensor_p999_us
    );
    let _ = writeln!(s, "Statistics: {}.\n", summary.statistics_method);

    if summary.scenarios.is_empty() {
        s.push_str("## Ping-pong\n\nThis plan has no ping-pong scenarios.\n");
    } else {
        super::scenarios::markdown(&mut s, summary);
    }
    s.push_str("\n## sockperf baseline\n\n");
    match &summary.baseline.sockperf {
        None => s.push_str("Not measured.\n"),
        Some(Value::Object(m)) => {
            let b = super::baseline::section(m);
            s.push_str(&b.table.markdown());
            for n in &b.notes {
                let _ = write!(s, "\n{n}\n");
            }
        }
        Some(other) => {
            let _ = writeln!(s, "`{}`", other.to_string().replace('`', "'"));
        }
    }
    s.push_str(&experiments_markdown(&summary.experiments, req));
    s.push_str(&seed_markdown(summary));
    s
}

/// The sections of the plan's experiments in summary.md (none when it had none).
fn experiments_markdown(e: &Experiments, limits: &Requirements) -> String {
    let mut s = String::new();
    let page = super::experiments::Page {
        experiments: e,
        requirements: limits,
    };
    for x in crate::experiments::all() {
        x.markdown(&page, &mut s);
    }
    s
}

/// The seed comparison sections of summary.md.
fn seed_markdown(summary: &Summary) -> String {
    let mut s = String::new();
    for sec in crate::report::seeds::sections(summary) {
        let _ = write!(
            s,
            "\n## {}\n\n{}\n{}\n",
            sec.title,
            sec.table.markdown(),
            sec.note
        );
    }
    s
}
