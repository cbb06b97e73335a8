//! The tables of the ping-pong scenarios, as plain data ([`Table`]) that `summary.md` and
//! `index.html` both render: the verdicts, seed 000 Tables 4–5, Appendix A and §4.3 beside our
//! figures, the payload fits and seed 000's OWD estimate against the measured OWD.

use super::seed000::{self, RangeRow};
use super::table::{Table, opt_us, ratio, strs, us, yes_no};
use super::{ScenarioSummary, Summary};
use crate::pingpong::SectionStats;

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
                .filter(|s| s.payload == t.payload && seed000::is_seed_ae_profile(&s.profile))
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
        let Some(seed) = seed000::lookup(&s.profile, s.payload) else {
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
                f.profile.clone(),
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
        .filter(|s| seed000::lookup(&s.profile, s.payload).is_none())
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
