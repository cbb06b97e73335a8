//! The ping-pong scenarios' sections of a report (seed 000). Their tables come as plain data
//! ([`Table`]) that `summary.md` and `index.html` both render: the verdicts, seed 000 Tables
//! 4–5, Appendix A and §4.3 beside our figures, the payload fits and seed 000's OWD estimate
//! against the measured OWD. [`markdown`] writes them into `summary.md`; `index.html`'s, with
//! the plots, are in [`super::scenarios_html`].
//!
//! They read the scenarios of summary.json ([`Summary`]): unlike the other experiments', whose
//! results the page holds, the ping-pong scenarios are the report's own.

use std::fmt::Write as _;

use super::summary::{ScenarioSummary, Summary, payload_fit_gaps};
use crate::pingpong::SectionStats;
use crate::report::seeds::seed000::{self, RangeRow};
use crate::table::{Table, opt_us, ratio, strs, us, yes_no};

/// The verdict table.
pub(super) fn verdict_rows(summary: &Summary) -> Table {
    let m = summary.requirements.safety_margin;
    let head = vec![
        "scenario".to_string(),
        "frame B".into(),
        "efficiency".into(),
        "count".into(),
        "lost".into(),
        "OWD fwd mean µs".into(),
        "worst OWD µs".into(),
        format!("worst × {:.2} µs", 1.0 + m),
        "RTT max µs".into(),
        "OWD fwd p99.9 µs".into(),
        "pWCET 1e-9 µs".into(),
        format!("control ≤ {} µs", summary.requirements.control_owd_us),
        format!("sensor p99.9 < {} µs", summary.requirements.sensor_p999_us),
    ];
    let rows = summary
        .scenarios
        .iter()
        .map(|s| {
            let f = s.sections.owd_forward.as_ref();
            vec![
                s.name.clone(),
                s.frame_bytes.to_string(),
                format!("{:.1} %", 100.0 * s.efficiency),
                s.count.to_string(),
                s.lost.to_string(),
                opt_us(f.map(|f| f.mean_us)),
                opt_us(s.worst_owd_us()),
                opt_us(s.worst_owd_us().map(|w| w * (1.0 + m))),
                opt_us(s.sections.rtt.as_ref().map(|r| r.max_us)),
                opt_us(f.map(|f| f.p999_us)),
                pwcet_text(f),
                yes_no(s.verdicts.control_2500us).to_string(),
                yes_no(s.verdicts.sensor_p999_2ms).to_string(),
            ]
        })
        .collect();
    Table { head, rows }
}

/// The pWCET, marked when the Gumbel fit fails the Kolmogorov–Smirnov test at 5 %.
fn pwcet_text(f: Option<&SectionStats>) -> String {
    match f.and_then(|f| Some((f.pwcet_1e9_us?, f.pwcet_fit_ok))) {
        None => "—".into(),
        Some((v, Some(false))) => format!("{} (poor fit)", us(v)),
        Some((v, _)) => us(v),
    }
}

/// A note for the verdict table when some pWCET is marked "(poor fit)".
pub(super) fn poor_fit_note(summary: &Summary) -> Option<&'static str> {
    summary
        .scenarios
        .iter()
        .any(|x| {
            x.sections
                .owd_forward
                .as_ref()
                .is_some_and(|f| f.pwcet_fit_ok == Some(false))
        })
        .then_some(
            "(poor fit): the Gumbel fit to the block maxima fails the Kolmogorov–Smirnov test at 5 %, so that pWCET is not a reliable bound.",
        )
}

/// `[lo, hi]` of an iterator of values, or `None` when empty.
fn range(v: impl Iterator<Item = f64>) -> Option<[f64; 2]> {
    v.fold(None, |acc, x| match acc {
        None => Some([x, x]),
        Some([lo, hi]) => Some([lo.min(x), hi.max(x)]),
    })
}

fn range_text(r: Option<[f64; 2]>) -> String {
    r.map_or_else(
        || "—".to_string(),
        |[lo, hi]| format!("[{}, {}]", lo.round(), hi.round()),
    )
}

/// Seed 000 Table 4 (OWD) or Table 5 (complete iteration) beside the same ranges over our
/// scenarios of the seed's 48 AE profiles.
pub(super) fn range_table(
    summary: &Summary,
    seed: &[RangeRow; 4],
    section: fn(&ScenarioSummary) -> Option<&SectionStats>,
) -> Table {
    let head = strs(&[
        "payload",
        "mean: seed",
        "mean: ours",
        "min: seed",
        "min: ours",
        "max: seed",
        "max: ours",
        "our AE scenarios",
    ]);
    let rows = seed
        .iter()
        .map(|t| {
            let ours: Vec<&SectionStats> = summary
                .scenarios
                .iter()
                .filter(|s| s.payload == t.payload && seed000::is_seed_ae_profile(s.profile.name()))
                .filter_map(section)
                .collect();
            let r = |f: fn(&SectionStats) -> f64| range_text(range(ours.iter().map(|s| f(s))));
            vec![
                format!("{} B", t.payload),
                range_text(Some(t.mean)),
                r(|s| s.mean_us),
                range_text(Some(t.min)),
                r(|s| s.min_us),
                range_text(Some(t.max)),
                r(|s| s.max_us),
                format!("{} of 12", ours.len()),
            ]
        })
        .collect();
    Table { head, rows }
}

/// Our scenarios that seed 000 Appendix A measured too, figure by figure.
pub(super) fn appendix_table(summary: &Summary) -> Table {
    let head = strs(&[
        "scenario",
        "seed label",
        "OWD mean: seed",
        "ours",
        "ours/seed",
        "OWD max: seed",
        "ours",
        "OWD std: seed",
        "ours",
        "RTT mean: seed",
        "ours",
        "ours/seed",
        "RTT max: seed",
        "ours",
    ]);
    let mut rows = Vec::new();
    for s in &summary.scenarios {
        let Some(seed) = seed000::lookup(s.profile.name(), s.payload) else {
            continue;
        };
        let f = s.sections.owd_forward.as_ref();
        let r = s.sections.rtt.as_ref();
        rows.push(vec![
            s.name.clone(),
            seed.label.to_string(),
            us(seed.owd.mean),
            opt_us(f.map(|f| f.mean_us)),
            f.map_or("—".into(), |f| ratio(f.mean_us, seed.owd.mean)),
            us(seed.owd.max),
            opt_us(f.map(|f| f.max_us)),
            us(seed.owd.std),
            opt_us(f.map(|f| f.std_us)),
            us(seed.rtt.mean),
            opt_us(r.map(|r| r.mean_us)),
            r.map_or("—".into(), |r| ratio(r.mean_us, seed.rtt.mean)),
            us(seed.rtt.max),
            opt_us(r.map(|r| r.max_us)),
        ]);
    }
    Table { head, rows }
}

/// Seed 000 §4.3 Wilcoxon bounds beside ours for the same profile.
pub(super) fn wilcoxon_table(summary: &Summary) -> Table {
    let head = strs(&[
        "payload",
        "bound: seed",
        "bound: ours",
        "our median",
        "our max",
    ]);
    let rows = seed000::WILCOXON_OWD
        .iter()
        .map(|&(payload, bound)| {
            let f = summary
                .scenarios
                .iter()
                .find(|s| s.profile == seed000::WILCOXON_PROFILE && s.payload == payload)
                .and_then(|s| s.sections.owd_forward.as_ref());
            vec![
                format!("{payload} B"),
                us(bound),
                opt_us(f.and_then(|f| f.wilcoxon_bound_us)),
                opt_us(f.map(|f| f.median_us)),
                opt_us(f.map(|f| f.max_us)),
            ]
        })
        .collect();
    Table { head, rows }
}

fn bytes_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "never".to_string(), |b| format!("{b:.0} B"))
}

/// The least-squares lines of forward OWD against payload.
pub(super) fn fit_table(summary: &Summary) -> Table {
    let (d, md) = (
        summary.requirements.control_owd_us,
        summary.requirements.control_owd_us / (1.0 + summary.requirements.safety_margin),
    );
    let head = vec![
        "profile".to_string(),
        "statistic".into(),
        "points".into(),
        "slope µs/B".into(),
        "intercept µs".into(),
        "r²".into(),
        format!("reaches {d:.0} µs at"),
        format!("reaches {md:.0} µs at"),
    ];
    let rows = summary
        .payload_fits
        .iter()
        .map(|f| {
            vec![
                f.profile.to_string(),
                f.statistic.clone(),
                f.points.to_string(),
                format!("{:.4}", f.slope_us_per_byte),
                us(f.intercept_us),
                f.r2.map_or("—".into(), |r| format!("{r:.4}")),
                bytes_opt(f.crossing_payload_bytes),
                bytes_opt(f.crossing_with_margin_payload_bytes),
            ]
        })
        .collect();
    Table { head, rows }
}

/// Estimated (seed 000) versus directly measured forward OWD.
pub(super) fn estimate_table(summary: &Summary) -> Table {
    let head = strs(&[
        "scenario",
        "messages",
        "mean µs",
        "median µs",
        "min µs",
        "max µs",
        "mean |error| / direct",
    ]);
    let rows = summary
        .scenarios
        .iter()
        .filter_map(|s| {
            let e = s.owd_estimate_error_us.as_ref()?;
            Some(vec![
                s.name.clone(),
                e.count.to_string(),
                us(e.mean_us),
                us(e.median_us),
                us(e.min_us),
                us(e.max_us),
                format!("{:.1} %", 100.0 * e.mean_abs_relative),
            ])
        })
        .collect();
    Table { head, rows }
}

/// Scenario names without a seed figure, and how many seed scenarios we did not measure.
pub(super) fn coverage(summary: &Summary) -> (Vec<&str>, usize) {
    let ours_without: Vec<&str> = summary
        .scenarios
        .iter()
        .filter(|s| seed000::lookup(s.profile.name(), s.payload).is_none())
        .map(|s| s.name.as_str())
        .collect();
    let seed_unmeasured = seed000::APPENDIX_A
        .iter()
        .filter(|r| {
            !summary
                .scenarios
                .iter()
                .any(|s| s.profile == r.profile && s.payload == r.payload)
        })
        .count();
    (ours_without, seed_unmeasured)
}

pub(super) const SEED_NOTE: &str = "Seed 000 measured two TM4C129 microcontrollers (120 MHz, \
hardware AES/SHA/CRC engines, TI-RTOS) exchanging raw Ethernet frames through a switch; we \
measure the same ping-pong between processes on one Linux host. The seed's figures are a \
reference for the shape of the results (payload dominates, AE costs little over CRC32), not a \
target for the absolute values.";

pub(super) const SEED_SOURCES: &str = "Sources: seed 000 §4.2.1 Table 4 and §4.2.2 Table 5 give \
only the [lowest, highest] mean, minimum and maximum over the 12 AE scenarios of each payload \
(rounded to 1 µs); Appendix A ('t_owd' and 'T iteration') gives mean, min, max, std and median \
for all 56 scenarios; §4.3 gives Wilcoxon bounds for AES-256 / HMAC-SHA-256 only. Matching is by \
profile and payload: 'no crypto' = plain, 'crc32' = crc32, 'K/shaH' = aesK-cbc-hmac-shaH \
('shamd5' = md5). Our OWD is the forward OWD 1+2+5+4 and RTT the complete iteration 1+2+3+4, as \
in the seed's Fig. 16.";

/// The verdict table as Markdown (also fine on a terminal), with the pWCET note and how many
/// scenarios meet each bound.
pub(crate) fn verdict_table(summary: &Summary) -> String {
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

/// The ping-pong sections of summary.md: verdicts, seed 000, payload fits, OWD estimate.
pub(crate) fn markdown(s: &mut String, summary: &Summary) {
    s.push_str("## Verdicts\n\n");
    s.push_str(&verdict_table(summary));
    s.push('\n');
    seed000_markdown(s, summary);
    payload_markdown(s, summary);
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

/// "Beside seed 000" of summary.md: Tables 4 and 5, Appendix A and the Wilcoxon bounds.
fn seed000_markdown(s: &mut String, summary: &Summary) {
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
}

/// "Latency against payload" of summary.md: why a profile has no line, and the lines.
fn payload_markdown(s: &mut String, summary: &Summary) {
    s.push_str("\n## Latency against payload (seed 000 §4.2.3, Fig. 20–21)\n\n");
    let fits = fit_table(summary);
    let gaps = payload_fit_gaps(summary);
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
            summary.requirements.control_owd_us,
            seed000::FIG20_CROSSING_ABOVE_BYTES
        );
        s.push_str(&fits.markdown());
    }
}
