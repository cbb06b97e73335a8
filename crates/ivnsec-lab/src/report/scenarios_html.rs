//! The ping-pong scenarios' sections of `index.html`: the verdicts, seed 000 beside our
//! figures and the plots of seed 000 Fig. 17–33 plus a latency CDF (the tables are those of
//! [`super::scenarios`]).
//!
//! Size: the bar, box and CDF plots hold one element per scenario or a fixed number of points
//! per line; the dispersion plots keep the smallest and largest sample of each of
//! [`DISPERSION_BUCKETS`] runs of consecutive messages, so a 56 × 3,600-message run stays well
//! under 2 MB.

use super::fit::LinearFit;
use super::plots::{self, BoxRow, FitSeries, Row, Series};
use super::scenarios as tables;
use super::summary::{
    PayloadFit, Report, ReportError, ScenarioRun, ScenarioSummary, Summary, aes_key_bits,
    focus_profile, hmac_name, payload_fit_gaps,
};
use crate::pingpong::{Exchange, Section, SectionStats};
use crate::report::seeds::seed000;
use crate::table::{escape, note};

/// Runs of consecutive messages per dispersion series (two points each).
const DISPERSION_BUCKETS: usize = 150;

/// An inline SVG without its (unneeded in HTML) namespace attribute, in a figure.
fn figure(svg: &str, caption: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    format!(
        "<figure>\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
        svg.trim(),
        escape(caption)
    )
}

/// Values of one section in µs, in measurement order.
fn values_us(exchanges: &[Exchange], f: impl Fn(&Exchange) -> Option<f64>) -> Vec<f64> {
    exchanges
        .iter()
        .filter(|e| !e.lost)
        .filter_map(f)
        .map(|v| v / 1000.0)
        .collect()
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.retain(|x| x.is_finite());
    v.sort_by(f64::total_cmp);
    v
}

/// Distinct values in order of first appearance.
fn distinct<T: PartialEq + Copy>(it: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

fn bars(s: &ScenarioSummary, section: Section) -> Option<Row> {
    let st = s.sections.get(section)?;
    Some(Row::Bars {
        label: s.name.clone(),
        mean: st.mean_us,
        worst: st.max_us,
    })
}

/// Rows grouped under headings by `key`, groups in ascending key order, scenarios in run order;
/// scenarios without a key are left out.
fn grouped_rows<K: PartialOrd + Copy + PartialEq>(
    scenarios: &[ScenarioSummary],
    section: Section,
    key: impl Fn(&ScenarioSummary) -> Option<K>,
    heading: impl Fn(K) -> String,
) -> Vec<Row> {
    let mut keys = distinct(scenarios.iter().filter_map(&key));
    keys.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let mut rows = Vec::new();
    for k in keys {
        rows.push(Row::Header(heading(k)));
        rows.extend(
            scenarios
                .iter()
                .filter(|s| key(s) == Some(k))
                .filter_map(|s| bars(s, section)),
        );
    }
    rows
}

fn hmac_order(h: &str) -> usize {
    ["md5", "sha1", "sha224", "sha256", "sha3-256"]
        .iter()
        .position(|x| *x == h)
        .unwrap_or(99)
}

fn linear(f: &PayloadFit) -> LinearFit {
    LinearFit {
        slope: f.slope_us_per_byte,
        intercept: f.intercept_us,
        r2: f.r2,
        points: f.points,
    }
}

/// Fig. 20 (the focus profile's best/mean/worst) and Fig. 21 (worst case of the focus profile,
/// CRC32, plain and every profile the seed did not measure, at most 8).
fn payload_figures(s: &mut String, summary: &Summary) -> Result<(), ReportError> {
    let sc = &summary.scenarios;
    let deadline = summary.requirements.control_owd_us;
    let fit_of = |profile: &str, stat: &str| {
        summary
            .payload_fits
            .iter()
            .find(|f| f.profile == profile && f.statistic == stat)
            .map(linear)
    };
    let points = |profile: &str, get: fn(&SectionStats) -> f64| {
        sc.iter()
            .filter(|x| x.profile == profile)
            .filter_map(|x| Some((x.payload as f64, get(x.sections.owd_forward.as_ref()?))))
            .collect::<Vec<_>>()
    };
    if let Some(fp) = focus_profile(sc).filter(|fp| fit_of(fp, "max").is_some()) {
        let series = vec![
            FitSeries {
                label: "best (min)".into(),
                color: 2,
                points: points(fp, |x| x.min_us),
                fit: fit_of(fp, "min"),
            },
            FitSeries {
                label: "mean".into(),
                color: 0,
                points: points(fp, |x| x.mean_us),
                fit: fit_of(fp, "mean"),
            },
            FitSeries {
                label: "worst (max)".into(),
                color: 3,
                points: points(fp, |x| x.max_us),
                fit: fit_of(fp, "max"),
            },
        ];
        let title = format!("{fp}: forward OWD against payload");
        let svg = plots::payload_fit(&title, &series, deadline)?;
        s.push_str(&figure(&svg, &format!("{title}, least-squares lines (dashed) and where they reach {deadline:.0} µs (×), as seed 000 Fig. 20.")));
    }
    let mut chosen: Vec<&str> = Vec::new();
    let focus = focus_profile(sc);
    for p in distinct(sc.iter().map(|x| x.profile.name())) {
        let wanted = Some(p) == focus
            || p == "crc32"
            || p == "plain"
            || !sc
                .iter()
                .any(|x| x.profile == p && seed000::lookup(p, x.payload).is_some());
        if wanted && fit_of(p, "max").is_some() && chosen.len() < 8 {
            chosen.push(p);
        }
    }
    if !chosen.is_empty() {
        let series: Vec<FitSeries> = chosen
            .iter()
            .enumerate()
            .map(|(i, p)| FitSeries {
                label: (*p).to_string(),
                color: i,
                points: points(p, |x| x.max_us),
                fit: fit_of(p, "max"),
            })
            .collect();
        let title = "Worst-case forward OWD against payload by profile";
        let svg = plots::payload_fit(title, &series, deadline)?;
        s.push_str(&figure(
            &svg,
            &format!(
                "{title}, with least-squares lines, as seed 000 Fig. 21 (crypto, CRC32, plain)."
            ),
        ));
    }
    Ok(())
}

/// The verdict table of the scenarios (the page's first section after the environment).
pub(crate) fn verdicts(s: &mut String, summary: &Summary) {
    s.push_str("<h2 id=\"verdicts\">Verdicts</h2>\n");
    s.push_str(&tables::verdict_rows(summary).html());
    if let Some(n) = tables::poor_fit_note(summary) {
        note(s, n);
    }
}

/// The sections after the sockperf baseline: seed 000, the plots per scenario, against the
/// payload, grouped, box plots, dispersion and the CDF.
pub(crate) fn sections(
    s: &mut String,
    report: &Report,
    summary: &Summary,
) -> Result<(), ReportError> {
    let runs: &[ScenarioRun] = &report.scenarios;
    seed000_html(s, summary);
    scenario_figures(s, summary)?;
    payload_html(s, summary)?;
    groups_html(s, summary)?;
    let payloads = distinct(summary.scenarios.iter().map(|x| x.payload));
    boxes_html(s, runs, &payloads)?;
    dispersion_html(s, runs, focus_profile(&summary.scenarios))?;
    cdf_html(s, runs, &payloads)
}

/// "Beside seed 000": Tables 4 and 5, Appendix A, the Wilcoxon bounds and the OWD estimate.
fn seed000_html(s: &mut String, summary: &Summary) {
    s.push_str("<h2 id=\"seed\">Beside seed 000</h2>\n");
    note(s, tables::SEED_NOTE);
    note(s, tables::SEED_SOURCES);
    s.push_str("<h3>One-way delay across AE scenarios (seed 000 Table 4), µs</h3>\n");
    s.push_str(
        &tables::range_table(summary, &seed000::TABLE_4_OWD, |s| {
            s.sections.owd_forward.as_ref()
        })
        .html(),
    );
    s.push_str("<h3>Complete iteration across AE scenarios (seed 000 Table 5), µs</h3>\n");
    s.push_str(
        &tables::range_table(summary, &seed000::TABLE_5_RTT, |s| s.sections.rtt.as_ref()).html(),
    );
    s.push_str("<h3>Per scenario (seed 000 Appendix A), µs</h3>\n");
    let app = tables::appendix_table(summary);
    if app.rows.is_empty() {
        note(s, "None of our scenarios is one the seed measured.");
    } else {
        s.push_str(&app.html());
    }
    let (without, unmeasured) = tables::coverage(summary);
    if !without.is_empty() {
        note(s, &format!("No seed figure for: {}.", without.join(", ")));
    }
    if unmeasured > 0 {
        note(
            s,
            &format!("{unmeasured} of the seed's 56 scenarios were not measured in this run."),
        );
    }
    s.push_str("<h3>Wilcoxon median bound at 99 % (seed 000 §4.3), forward OWD of aes256-cbc-hmac-sha256, µs</h3>\n");
    s.push_str(&tables::wilcoxon_table(summary).html());
    let est = tables::estimate_table(summary);
    if !est.rows.is_empty() {
        s.push_str("<h3>Seed 000's OWD estimate against the measured OWD, µs</h3>\n");
        note(
            s,
            "Estimate (1 + 2 + (3 − responder) / 2 + responder 4) minus the forward OWD measured on the shared clock, per message.",
        );
        if let Some(flag) = crate::clock::owd_flag(&summary.environment) {
            note(s, &flag);
        }
        s.push_str(&est.html());
    }
}

/// Mean and worst case per scenario (Fig. 17–18).
fn scenario_figures(s: &mut String, summary: &Summary) -> Result<(), ReportError> {
    let req = &summary.requirements;
    let sc = &summary.scenarios;
    s.push_str("<h2 id=\"scenarios\">Mean and worst case per scenario</h2>\n");
    for (section, deadline, fig, what) in [
        (
            Section::OwdForward,
            req.control_owd_us,
            "17",
            "forward one-way delay",
        ),
        (
            Section::Rtt,
            req.control_rtt_us,
            "18",
            "complete iteration (RTT)",
        ),
    ] {
        let rows: Vec<Row> = sc.iter().filter_map(|x| bars(x, section)).collect();
        if rows.is_empty() {
            continue;
        }
        let title = format!("Mean / worst {what} per scenario");
        let svg = plots::mean_worst(&title, "µs", &rows, Some(deadline))?;
        s.push_str(&figure(
            &svg,
            &format!("{title}, as seed 000 Fig. {fig}. Deadline {deadline:.0} µs."),
        ));
    }
    Ok(())
}

/// Latency against payload (Fig. 20–21): the lines, or why there are none.
fn payload_html(s: &mut String, summary: &Summary) -> Result<(), ReportError> {
    s.push_str("<h2 id=\"payload\">Latency against payload</h2>\n");
    let fits = tables::fit_table(summary);
    let gaps = payload_fit_gaps(summary);
    for gap in &gaps {
        note(s, gap);
    }
    if fits.rows.is_empty() {
        if gaps.is_empty() {
            note(
                s,
                "No profile was measured at two or more payload sizes, so no line is fitted.",
            );
        }
    } else {
        payload_figures(s, summary)?;
        note(
            s,
            &format!(
                "Seed 000 read off its Fig. 20 that a payload above {:.0} bytes would cross 2.5 ms. A crossing beyond 1500 bytes of payload is an extrapolation: such frames need fragmentation or jumbo frames.",
                seed000::FIG20_CROSSING_ABOVE_BYTES
            ),
        );
        s.push_str(&fits.html());
    }
    Ok(())
}

/// Mean and worst case grouped by payload, HMAC and AES key (Fig. 19, 22–26).
fn groups_html(s: &mut String, summary: &Summary) -> Result<(), ReportError> {
    let req = &summary.requirements;
    let sc = &summary.scenarios;
    s.push_str("<h2 id=\"groups\">Grouped by payload, HMAC and AES key</h2>\n");
    for (section, deadline, figs, what) in [
        (
            Section::OwdForward,
            req.control_owd_us,
            ["19", "23", "25"],
            "forward OWD",
        ),
        (
            Section::Rtt,
            req.control_rtt_us,
            ["22", "24", "26"],
            "complete iteration",
        ),
    ] {
        let by_payload = grouped_rows(
            sc,
            section,
            |x| Some(x.payload),
            |p| format!("payload {p} B"),
        );
        let by_hmac = grouped_rows(
            sc,
            section,
            |x| hmac_name(x.profile.name()).map(hmac_order),
            |i| {
                let name = ["md5", "sha1", "sha224", "sha256", "sha3-256"]
                    .get(i)
                    .copied()
                    .unwrap_or("other");
                format!("HMAC-{name}")
            },
        );
        let by_key = grouped_rows(
            sc,
            section,
            |x| aes_key_bits(x.profile.name()),
            |k| format!("AES-{k}"),
        );
        for (rows, fig, by) in [
            (by_payload, figs[0], "payload size"),
            (by_hmac, figs[1], "HMAC"),
            (by_key, figs[2], "AES key size"),
        ] {
            if rows.is_empty() {
                note(
                    s,
                    &format!("No scenario has an {by} to group {what} by (seed 000 Fig. {fig})."),
                );
                continue;
            }
            let title = format!("Mean / worst {what} grouped by {by}");
            let svg = plots::mean_worst(&title, "µs", &rows, Some(deadline))?;
            s.push_str(&figure(&svg, &format!("{title}, as seed 000 Fig. {fig}.")));
        }
    }
    Ok(())
}

/// Box plots of the forward OWD per payload (Fig. 27–30).
fn boxes_html(s: &mut String, runs: &[ScenarioRun], payloads: &[usize]) -> Result<(), ReportError> {
    s.push_str("<h2 id=\"boxes\">Box plots of the forward one-way delay</h2>\n");
    note(
        s,
        &format!(
            "Boxes span the quartiles (type 7) with the median as a thick line; whiskers reach the most extreme sample within 1.5 × IQR; circles are samples beyond (at most {} per side drawn, the most extreme always). Seed 000 Fig. 27–30 show aes256-cbc-hmac-sha256 at each payload.",
            40
        ),
    );
    for &p in payloads {
        let rows: Vec<BoxRow> = runs
            .iter()
            .filter(|r| r.payload == p)
            .map(|r| BoxRow {
                label: r.name.clone(),
                sorted: sorted(values_us(&r.exchanges, |e| Section::OwdForward.value_ns(e))),
            })
            .collect();
        let title = format!("Forward OWD, payload {p} B");
        let (svg, log) = plots::box_plots(&title, "µs", &rows)?;
        let scale = if log {
            " Logarithmic latency axis."
        } else {
            ""
        };
        s.push_str(&figure(
            &svg,
            &format!("{title}: box plots as seed 000 Fig. 27–30.{scale}"),
        ));
    }
    Ok(())
}

/// Dispersion over time of the focus profile (Fig. 31–33).
fn dispersion_html(
    s: &mut String,
    runs: &[ScenarioRun],
    focus: Option<&str>,
) -> Result<(), ReportError> {
    s.push_str("<h2 id=\"dispersion\">Dispersion over time</h2>\n");
    if let Some(fp) = focus {
        let focus_runs: Vec<&ScenarioRun> = runs.iter().filter(|r| r.profile == fp).collect();
        note(
            s,
            &format!(
                "Profile {fp}, every payload; x is the message's position in the run (replications one after another). Each series keeps the smallest and largest sample of each of {DISPERSION_BUCKETS} runs of consecutive messages, so every peak is drawn."
            ),
        );
        type Get = fn(&Exchange) -> Option<f64>;
        let parts: [(&str, &str, Get); 3] = [
            (
                "31",
                "responder processing: verify + protect (the receiving board)",
                |e| Some(e.responder_ns() as f64),
            ),
            (
                "32",
                "initiator processing: payload + protect + verify (the sending board)",
                |e| Some((e.payload_ns + e.protect_ns + e.verify_ns) as f64),
            ),
            (
                "33",
                "one-way wire time (3 − responder) / 2 (transmission and propagation)",
                |e| Some(e.wire_one_way_ns()),
            ),
        ];
        for (fig, what, get) in parts {
            let series: Vec<Series> = focus_runs
                .iter()
                .enumerate()
                .map(|(i, r)| Series {
                    label: format!("{} B", r.payload),
                    color: i,
                    points: plots::decimate_min_max(
                        &values_us(&r.exchanges, get),
                        DISPERSION_BUCKETS,
                    ),
                })
                .collect();
            let title = format!("{fp}: {what}");
            let svg = plots::dispersion(&title, "µs", &series)?;
            s.push_str(&figure(&svg, &format!("{title}, as seed 000 Fig. {fig}.")));
        }
    } else {
        note(s, "No scenario to plot.");
    }
    Ok(())
}

/// The CDF and tail of the forward OWD per payload.
fn cdf_html(s: &mut String, runs: &[ScenarioRun], payloads: &[usize]) -> Result<(), ReportError> {
    s.push_str("<h2 id=\"cdf\">Latency distribution</h2>\n");
    for &p in payloads {
        let at: Vec<&ScenarioRun> = runs.iter().filter(|r| r.payload == p).collect();
        let series: Vec<Series> = at
            .iter()
            .enumerate()
            .map(|(i, r)| Series {
                label: r.profile.to_string(),
                color: i,
                points: plots::cdf_points(&sorted(values_us(&r.exchanges, |e| {
                    Section::OwdForward.value_ns(e)
                }))),
            })
            .collect();
        let title = format!("CDF of the forward OWD, payload {p} B");
        let svg = plots::cdf(&title, "µs (log scale)", &series)?;
        s.push_str(&figure(&svg, &format!("{title}: empirical distribution drawn through 100 quantiles, p99.1 to p99.9, p99.95, p99.99 and the maximum.")));
        let title = format!("Tail of the forward OWD, payload {p} B");
        let svg = plots::exceedance(&title, "µs (log scale)", &series)?;
        s.push_str(&figure(
            &svg,
            &format!(
                "{title}: fraction of messages slower than x (1 − CDF), both axes logarithmic."
            ),
        ));
    }
    Ok(())
}
