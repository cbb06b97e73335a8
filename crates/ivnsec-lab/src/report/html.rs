//! `index.html`: one self-contained page (inline CSS and SVG; no script, font, stylesheet or
//! image is fetched) with the verdicts, the environment, the sockperf baseline, the seed 000
//! comparison and the plots of seed 000 Fig. 17–33 plus a latency CDF.
//!
//! Size: the bar, box and CDF plots hold one element per scenario or a fixed number of points
//! per line; the dispersion plots keep the smallest and largest sample of each of
//! [`DISPERSION_BUCKETS`] runs of consecutive messages, so a 56 × 3,600-message run stays well
//! under 2 MB.

use std::fmt::Write as _;

use serde_json::Value;

use super::plots::{self, BoxRow, FitSeries, Row, Series};
use super::scenarios;
use super::table::{escape, kv_table, note};
use super::{
    LinearFit, Report, ReportError, ScenarioRun, ScenarioSummary, Summary, aes_key_bits, baseline,
    experiments, focus_profile, hmac_name, seed000,
};
use crate::pingpong::{Exchange, Section};

/// Runs of consecutive messages per dispersion series (two points each).
pub(super) const DISPERSION_BUCKETS: usize = 150;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}\
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}\
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}\
td.pass{background:#e3f4e3;color:#155215}td.fail{background:#fbe0e0;color:#8a1010;font-weight:bold}\
figure{margin:1.5em 0}figcaption{font-size:.85em;color:#444;max-width:900px}\
svg{max-width:100%;height:auto}p.note{font-size:.85em;color:#444;max-width:900px}\
nav a{margin-right:1em}";

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

/// The whole page.
pub(super) fn render(report: &Report, summary: &Summary) -> Result<String, ReportError> {
    let req = &summary.requirements;
    let sc = &summary.scenarios;
    let mut s = String::with_capacity(1 << 20);
    s.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    s.push_str("<title>ivnsec report</title>\n");
    let _ = writeln!(s, "<style>{STYLE}</style>\n</head>\n<body>");
    s.push_str("<h1>ivnsec report</h1>\n");
    if summary.interrupted {
        s.push_str("<p class=\"fail\"><b>Interrupted: this run was stopped (Ctrl-C) before the end of its plan; it holds only the scenarios and experiments that finished before that.</b></p>\n");
    }
    let n = sc.len();
    if n > 0 {
        let control_ok = n - summary.control_failures().count();
        let sensor_ok = n - summary.sensor_failures().count();
        let _ = writeln!(
            s,
            "<p><b>{control_ok} of {n}</b> scenarios meet the control-data deadline (worst one-way delay × {:.2} ≤ {} µs, RTT ≤ {} µs, nothing lost); <b>{sensor_ok} of {n}</b> the sensor-data bound (forward OWD p99.9 &lt; {} µs).</p>",
            1.0 + req.safety_margin,
            req.control_owd_us,
            req.control_rtt_us,
            req.sensor_p999_us
        );
    }
    if !summary.experiments.is_empty() {
        let failed = summary.experiment_failures();
        let _ = writeln!(
            s,
            "<p>Experiment runs failing their verdict (seed 002's cost rules, p99.9 under load, camera deadline): <b>{}</b>.</p>",
            if failed.is_empty() {
                "none".to_string()
            } else {
                escape(&failed.join(", "))
            }
        );
    }
    let mut nav = String::from(
        "<nav><a href=\"#environment\">environment</a><a href=\"#verdicts\">verdicts</a><a href=\"#baseline\">sockperf</a><a href=\"#seed\">seed 000</a><a href=\"#scenarios\">per scenario</a><a href=\"#payload\">payload</a><a href=\"#groups\">groups</a><a href=\"#boxes\">box plots</a><a href=\"#dispersion\">dispersion</a><a href=\"#cdf\">CDF</a><a href=\"#throughput\">throughput</a><a href=\"#underload\">under load</a><a href=\"#camera\">cameras</a>",
    );
    // Links of the experiments that have their own: only plans with them get them.
    let page = experiments::Page {
        experiments: &summary.experiments,
        requirements: &summary.requirements,
    };
    for x in crate::experiments::all() {
        x.nav(&page, &mut nav);
    }
    nav.push_str("<a href=\"#method\">method</a></nav>\n");
    // The page below is built first: the bar links only the sections it has.
    let nav_at = s.len();

    s.push_str("<h2 id=\"environment\">Environment</h2>\n");
    if summary.environment.is_empty() {
        note(&mut s, "Not recorded.");
    } else {
        s.push_str(&kv_table(&summary.environment).html());
    }

    if sc.is_empty() {
        s.push_str("<h2 id=\"verdicts\">Ping-pong</h2>\n");
        note(&mut s, "This plan has no ping-pong scenarios.");
    } else {
        pingpong_html(&mut s, report, summary)?;
    }
    experiments_html(&mut s, summary);

    s.push_str("<h2 id=\"method\">Method</h2>\n");
    note(
        &mut s,
        &format!("Statistics: {}.", summary.statistics_method),
    );
    note(
        &mut s,
        "Sections (seed 000 Fig. 16): forward OWD = 1 + 2 + 5 + responder 4; backward OWD = responder 2 + 5 + 4; RTT (complete iteration) = 1 + 2 + 3 + 4; 5 = (3 − responder 4+2) / 2. Lost exchanges are counted and left out of the statistics; one lost control message fails the control verdict.",
    );
    note(
        &mut s,
        "Rebuild this page from samples.csv with: ivnsec report DIR",
    );
    s.push_str("</body>\n</html>\n");
    let nav = present_links(&nav, &s[nav_at..]);
    s.insert_str(nav_at, &nav);
    Ok(s)
}

/// `nav` (`<nav><a href="#id">…</a>…</nav>`) without the links to an id `body` lacks: a run
/// without throughput groups, streams or cameras has no such sections to jump to.
fn present_links(nav: &str, body: &str) -> String {
    let mut out = String::with_capacity(nav.len());
    let mut rest = nav;
    while let Some(start) = rest.find("<a href=\"#") {
        out.push_str(&rest[..start]);
        let link = &rest[start..];
        let Some(end) = link.find("</a>").map(|e| e + "</a>".len()) else {
            break;
        };
        let id = link["<a href=\"#".len()..].split('"').next().unwrap_or("");
        if body.contains(&format!(" id=\"{id}\"")) {
            out.push_str(&link[..end]);
        }
        rest = &link[end..];
    }
    out.push_str(rest);
    out
}

fn linear(f: &super::PayloadFit) -> LinearFit {
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
    let points = |profile: &str, get: fn(&crate::pingpong::SectionStats) -> f64| {
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
    for p in distinct(sc.iter().map(|x| x.profile.as_str())) {
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

/// The ping-pong sections: verdicts, sockperf, seed 000, per-scenario plots.
fn pingpong_html(s: &mut String, report: &Report, summary: &Summary) -> Result<(), ReportError> {
    let req = &summary.requirements;
    let sc = &summary.scenarios;
    let runs: &[ScenarioRun] = &report.scenarios;
    s.push_str("<h2 id=\"verdicts\">Verdicts</h2>\n");
    s.push_str(&scenarios::verdict_rows(summary).html());
    if let Some(n) = scenarios::poor_fit_note(summary) {
        note(s, n);
    }

    s.push_str("<h2 id=\"baseline\">sockperf baseline</h2>\n");
    match &summary.baseline.sockperf {
        None => note(s, "Not measured (sockperf not installed or not run)."),
        Some(Value::Object(m)) => {
            let b = baseline::section(m);
            s.push_str(&b.table.html());
            for n in &b.notes {
                note(s, n);
            }
        }
        Some(other) => {
            let _ = writeln!(s, "<pre>{}</pre>", escape(&other.to_string()));
        }
    }

    s.push_str("<h2 id=\"seed\">Beside seed 000</h2>\n");
    note(s, scenarios::SEED_NOTE);
    note(s, scenarios::SEED_SOURCES);
    s.push_str("<h3>One-way delay across AE scenarios (seed 000 Table 4), µs</h3>\n");
    s.push_str(
        &scenarios::range_table(summary, &seed000::TABLE_4_OWD, |s| {
            s.sections.owd_forward.as_ref()
        })
        .html(),
    );
    s.push_str("<h3>Complete iteration across AE scenarios (seed 000 Table 5), µs</h3>\n");
    s.push_str(
        &scenarios::range_table(summary, &seed000::TABLE_5_RTT, |s| s.sections.rtt.as_ref()).html(),
    );
    s.push_str("<h3>Per scenario (seed 000 Appendix A), µs</h3>\n");
    let app = scenarios::appendix_table(summary);
    if app.rows.is_empty() {
        note(s, "None of our scenarios is one the seed measured.");
    } else {
        s.push_str(&app.html());
    }
    let (without, unmeasured) = scenarios::coverage(summary);
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
    s.push_str(&scenarios::wilcoxon_table(summary).html());
    let est = scenarios::estimate_table(summary);
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

    // Fig. 17–18.
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

    // Fig. 20–21.
    s.push_str("<h2 id=\"payload\">Latency against payload</h2>\n");
    let fits = scenarios::fit_table(summary);
    let gaps = super::payload_fit_gaps(summary);
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

    // Fig. 19, 22–26.
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
            |x| hmac_name(&x.profile).map(hmac_order),
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
            |x| aes_key_bits(&x.profile),
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

    // Fig. 27–30.
    s.push_str("<h2 id=\"boxes\">Box plots of the forward one-way delay</h2>\n");
    note(
        s,
        &format!(
            "Boxes span the quartiles (type 7) with the median as a thick line; whiskers reach the most extreme sample within 1.5 × IQR; circles are samples beyond (at most {} per side drawn, the most extreme always). Seed 000 Fig. 27–30 show aes256-cbc-hmac-sha256 at each payload.",
            40
        ),
    );
    let payloads = distinct(sc.iter().map(|x| x.payload));
    for &p in &payloads {
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

    // Fig. 31–33.
    s.push_str("<h2 id=\"dispersion\">Dispersion over time</h2>\n");
    let focus = focus_profile(sc);
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

    // CDF.
    s.push_str("<h2 id=\"cdf\">Latency distribution</h2>\n");
    for &p in &payloads {
        let at: Vec<&ScenarioRun> = runs.iter().filter(|r| r.payload == p).collect();
        let series: Vec<Series> = at
            .iter()
            .enumerate()
            .map(|(i, r)| Series {
                label: r.profile.clone(),
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

/// The sections of the plan's other experiments (none when it had none).
fn experiments_html(s: &mut String, summary: &Summary) {
    let e = &summary.experiments;
    let page = experiments::Page {
        experiments: e,
        requirements: &summary.requirements,
    };
    for x in crate::experiments::all() {
        x.html(&page, s);
    }
    for sec in experiments::seed_sections(summary) {
        let _ = writeln!(s, "<h2>{}</h2>", escape(&sec.title));
        s.push_str(&sec.table.html());
        note(s, &sec.note);
    }
}
