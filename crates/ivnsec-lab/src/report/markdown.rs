//! `summary.md`: verdicts, seed 000 Tables 4–5 and Appendix A beside our figures, the payload
//! fits, the sockperf baseline, the plan's other experiments and the seed 002 / 003
//! comparisons. The tables come as plain data ([`Table`](super::Table)) from [`super::scenarios`] and
//! [`super::experiments`], so the HTML page shows the same rows.

use std::fmt::Write as _;

use serde_json::Value;

use super::Summary;
use super::experiments::{Experiments, seed_sections};
use super::scenarios::{
    SEED_NOTE, SEED_SOURCES, appendix_table, coverage, estimate_table, fit_table, poor_fit_note,
    range_table, verdict_rows, wilcoxon_table,
};
use super::seed000;
use super::table::kv_table;
use crate::pingpong::Requirements;

pub(super) fn verdict_table(summary: &Summary) -> String {
    let mut s = verdict_rows(summary).markdown();
    if let Some(n) = poor_fit_note(summary) {
        let _ = writeln!(s, "\n{n}");
    }
    let n = summary.scenarios.len();
    let c = summary.control_failures().count();
    let p = summary.sensor_failures().count();
    let _ = writeln!(
        s,
        "\n{} of {n} scenarios meet the control-data deadline, {} of {n} the sensor-data p99.9 bound.",
        n - c,
        n - p
    );
    s
}

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
        pingpong_sections(&mut s, summary);
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

/// The ping-pong sections of summary.md: verdicts, seed 000, payload fits, OWD estimate.
fn pingpong_sections(s: &mut String, summary: &Summary) {
    let req = &summary.requirements;
    s.push_str("## Verdicts\n\n");
    s.push_str(&verdict_table(summary));
    s.push('\n');

    s.push_str("## Beside seed 000\n\n");
    let _ = writeln!(s, "{SEED_NOTE}\n\n{SEED_SOURCES}\n");
    s.push_str("### One-way delay across AE scenarios (seed 000 Table 4), µs\n\n");
    s.push_str(
        &range_table(summary, &seed000::TABLE_4_OWD, |s| {
            s.sections.owd_forward.as_ref()
        })
        .markdown(),
    );
    s.push_str("\n### Complete iteration across AE scenarios (seed 000 Table 5), µs\n\n");
    s.push_str(
        &range_table(summary, &seed000::TABLE_5_RTT, |s| s.sections.rtt.as_ref()).markdown(),
    );
    s.push_str("\n### Per scenario (seed 000 Appendix A), µs\n\n");
    let app = appendix_table(summary);
    if app.rows.is_empty() {
        s.push_str("None of our scenarios is one the seed measured.\n");
    } else {
        s.push_str(&app.markdown());
    }
    let (without, unmeasured) = coverage(summary);
    if !without.is_empty() {
        let _ = writeln!(
            s,
            "\nNo seed figure for: {} (seed 000 measured only plain, CRC32 and AES-128/192/256-CBC with HMAC-MD5/SHA-1/SHA-224/SHA-256 at 64, 128, 736 and 1440 bytes).",
            without.join(", ")
        );
    }
    if unmeasured > 0 {
        let _ = writeln!(
            s,
            "\n{unmeasured} of the seed's 56 scenarios were not measured in this run."
        );
    }
    s.push_str("\n### Wilcoxon median bound at 99 % (seed 000 §4.3), forward OWD of aes256-cbc-hmac-sha256, µs\n\n");
    s.push_str(&wilcoxon_table(summary).markdown());

    s.push_str("\n## Latency against payload (seed 000 §4.2.3, Fig. 20–21)\n\n");
    let fits = fit_table(summary);
    let gaps = super::payload_fit_gaps(summary);
    for gap in &gaps {
        let _ = writeln!(s, "{gap}\n");
    }
    if fits.rows.is_empty() {
        if gaps.is_empty() {
            s.push_str("No profile was measured at two or more payload sizes.\n");
        }
    } else {
        let _ = writeln!(
            s,
            "Least-squares lines of each profile's per-scenario min, mean and max forward OWD against payload, and the payload at which each line reaches the deadline ({} µs) and the deadline less the margin. Seed 000 read a crossing above {} bytes off Fig. 20. Frames above 1500 bytes of payload would need fragmentation or jumbo frames; a crossing there is an extrapolation.\n",
            req.control_owd_us,
            seed000::FIG20_CROSSING_ABOVE_BYTES
        );
        s.push_str(&fits.markdown());
    }

    let est = estimate_table(summary);
    if !est.rows.is_empty() {
        s.push_str("\n## Seed 000's OWD estimate against the measured OWD\n\n");
        s.push_str("Estimate (1 + 2 + (3 − responder) / 2 + responder 4) minus the forward OWD measured on the shared clock, per message.\n\n");
        if let Some(flag) = crate::clock::owd_flag(&summary.environment) {
            s.push_str(&format!("**{flag}**\n\n"));
        }
        s.push_str(&est.markdown());
    }
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
    for sec in seed_sections(summary) {
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
