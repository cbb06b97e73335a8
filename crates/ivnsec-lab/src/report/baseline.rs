//! The sockperf baseline of a report as one table: sockperf's half round trips beside ours
//! (`plain` and `aes128-gcm` at 64 bytes, part 3 / 2: what sockperf's client measures) at p25,
//! p50, p99 and p99.9, each ours with its ratio to sockperf; figures to the 0.1 µs sockperf and
//! our clocks resolve, ratios to 2 decimals. Below it: how sockperf ran, its other figures, and a
//! note when its own distribution has two modes.
//!
//! The object is `summary.json`'s `baseline.sockperf`: sockperf's figures as
//! [`crate::sockperf::parse_sockperf`] reads them, with ours added by
//! [`crate::plan::run::compare_with_baseline`].

use serde_json::{Map, Value};

use crate::table::{Table, figure, opt_num, opt_us};

/// The percentiles of the table: label and key suffix.
const PERCENTILES: [(&str, &str); 4] = [
    ("p25", "p25"),
    ("p50", "p50"),
    ("p99", "p99"),
    ("p99.9", "p999"),
];

/// Our runs set beside sockperf: label and key part (`ours_{key}_64_half_rtt_pNN_us`).
const OURS: [(&str, &str); 2] = [
    ("ours, plain 64 B", "plain"),
    ("ours, aes128-gcm 64 B", "aes128_gcm"),
];

/// p50 at least this many times p25: sockperf's distribution has two modes.
pub const BIMODAL_FACTOR: f64 = 2.0;

/// The baseline's table and the notes under it.
pub struct BaselineSection {
    pub table: Table,
    pub notes: Vec<String>,
}

fn num(m: &Map<String, Value>, key: &str) -> Option<f64> {
    m.get(key).and_then(Value::as_f64)
}

fn ratio(ours: Option<f64>, theirs: Option<f64>) -> Option<f64> {
    match (ours, theirs) {
        (Some(o), Some(t)) if t > 0.0 => Some(o / t),
        _ => None,
    }
}

/// The keys the table shows.
fn shown(key: &str) -> bool {
    PERCENTILES.iter().any(|(_, p)| {
        key == format!("half_rtt_{p}_us")
            || OURS
                .iter()
                .any(|(_, o)| key == format!("ours_{o}_64_half_rtt_{p}_us"))
    }) || OURS.iter().any(|(_, o)| key == format!("ratio_{o}_64"))
}

/// The table and notes of a baseline object.
pub fn section(m: &Map<String, Value>) -> BaselineSection {
    let head = std::iter::once("half round trip, µs".to_string())
        .chain(PERCENTILES.iter().map(|(l, _)| l.to_string()))
        .collect();
    let theirs: Vec<Option<f64>> = PERCENTILES
        .iter()
        .map(|(_, p)| num(m, &format!("half_rtt_{p}_us")))
        .collect();
    let mut rows = vec![
        std::iter::once("sockperf".to_string())
            .chain(theirs.iter().map(|v| opt_us(*v)))
            .collect::<Vec<_>>(),
    ];
    for (label, key) in OURS {
        let ours: Vec<Option<f64>> = PERCENTILES
            .iter()
            .map(|(_, p)| num(m, &format!("ours_{key}_64_half_rtt_{p}_us")))
            .collect();
        if ours.iter().all(Option::is_none) {
            continue;
        }
        rows.push(
            std::iter::once(label.to_string())
                .chain(ours.iter().map(|v| opt_us(*v)))
                .collect(),
        );
        rows.push(
            std::iter::once("ours / sockperf".to_string())
                .chain(
                    ours.iter()
                        .zip(&theirs)
                        .map(|(o, t)| opt_num(ratio(*o, *t), 2)),
                )
                .collect(),
        );
    }
    let mut notes = Vec::new();
    let how: Vec<String> = ["command", "path", "mode"]
        .iter()
        .filter_map(|k| m.get(*k).map(|v| figure(k, v)))
        .collect();
    if !how.is_empty() {
        notes.push(format!(
            "sockperf: {}. Figures are half round trips: sockperf's own, and ours as part 3 / 2 \
             (send until the reply is back, the responder included), in µs to 0.1; ratios to 2 \
             decimals.",
            how.join("; ")
        ));
    }
    let (p25, p50) = (theirs[0], theirs[1]);
    if let (Some(p25), Some(p50)) = (p25, p50)
        && p25 > 0.0
        && p50 >= BIMODAL_FACTOR * p25
    {
        notes.push(format!(
            "sockperf's own distribution is bimodal in this run: p25 {p25:.1} µs but p50 \
             {p50:.1} µs, over {BIMODAL_FACTOR:.0} × p25. Some of its exchanges take a fast path \
             and others a slow one, so its p25 and p50 fall in different modes and a ratio at \
             either compares ours with one mode only; read ours beside both."
        ));
    }
    if let Some(t) = m.get("targets") {
        notes.push(format!("Targets: {}.", figure("targets", t)));
    }
    let rest: Vec<String> = m
        .iter()
        .filter(|(k, _)| !shown(k) && !["command", "path", "mode", "targets"].contains(&k.as_str()))
        .map(|(k, v)| format!("{k} {}", figure(k, v)))
        .collect();
    if !rest.is_empty() {
        notes.push(format!(
            "Other figures (summary.json `baseline.sockperf`): {}.",
            rest.join(", ")
        ));
    }
    BaselineSection {
        table: Table { head, rows },
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The run of issue 22: sockperf's p25 8.3 µs and p50 28.6 µs (raw floats as they come),
    /// ours beside it; every cell rounded, the ratios to 2 decimals, the bimodal note given.
    #[test]
    fn one_table_rounded_with_a_bimodal_note() {
        let b = json!({
            "half_rtt_p25_us": 8.2999,
            "half_rtt_p50_us": 28.6351,
            "half_rtt_p99_us": 45.04999,
            "half_rtt_p999_us": 120.35,
            "half_rtt_min_us": 5.438,
            "half_rtt_mean_us": 15.323,
            "observations": 50331,
            "valid_runtime_s": 1.991,
            "command": "sockperf ping-pong -i 10.0.0.2 -p 11111 -m 64 -t 5",
            "path": "testbed",
            "mode": "blocking",
            "ours_plain_64_half_rtt_p25_us": 8.682749999999999,
            "ours_plain_64_half_rtt_p50_us": 8.69275,
            "ours_plain_64_half_rtt_p99_us": 30.0,
            "ours_plain_64_half_rtt_p999_us": 60.0,
            "ratio_plain_64": 0.30357142857142855,
            "ours_aes128_gcm_64_half_rtt_p50_us": 10.0,
            "targets": "plain ≤ 1.1",
        });
        let s = section(b.as_object().unwrap());
        assert_eq!(
            s.table.head,
            ["half round trip, µs", "p25", "p50", "p99", "p99.9"]
        );
        assert_eq!(
            s.table.rows,
            vec![
                vec!["sockperf", "8.3", "28.6", "45.0", "120.3"],
                vec!["ours, plain 64 B", "8.7", "8.7", "30.0", "60.0"],
                // 8.68275 / 8.2999 = 1.046, 8.69275 / 28.6351 = 0.304, 30 / 45.05 = 0.666,
                // 60 / 120.35 = 0.499.
                vec!["ours / sockperf", "1.05", "0.30", "0.67", "0.50"],
                vec!["ours, aes128-gcm 64 B", "—", "10.0", "—", "—"],
                vec!["ours / sockperf", "—", "0.35", "—", "—"],
            ]
        );
        let notes = s.notes.join("\n");
        assert!(notes.contains("bimodal"), "{notes}");
        assert!(notes.contains("p25 8.3 µs but p50 28.6 µs"), "{notes}");
        assert!(notes.contains("Targets: plain ≤ 1.1."), "{notes}");
        assert!(
            notes.contains("half_rtt_min_us 5.4")
                && notes.contains("observations 50331")
                && notes.contains("valid_runtime_s 1.991"),
            "{notes}"
        );
        // No raw float anywhere.
        let all = format!("{:?}{notes}", s.table.rows);
        assert!(!all.contains("8.68274") && !all.contains("0.3035"), "{all}");
    }

    /// One mode (sockperf 3.7's own output, `sockperf.rs` tests): no bimodal note; without our
    /// runs the table is sockperf's row alone.
    #[test]
    fn no_note_for_one_mode_and_no_rows_without_ours() {
        let b = json!({
            "half_rtt_p25_us": 5.588, "half_rtt_p50_us": 5.898,
            "half_rtt_p99_us": 27.375, "half_rtt_p999_us": 2495.313,
        });
        let s = section(b.as_object().unwrap());
        assert_eq!(
            s.table.rows,
            vec![vec!["sockperf", "5.6", "5.9", "27.4", "2495.3"]]
        );
        assert!(s.notes.iter().all(|n| !n.contains("bimodal")));
    }
}
