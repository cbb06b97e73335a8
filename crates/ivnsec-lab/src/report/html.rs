//! `index.html`: one self-contained page (inline CSS and SVG; no script, font, stylesheet or
//! image is fetched) with the environment, the ping-pong scenarios' sections and plots (seed
//! 000 Fig. 17–33 plus a latency CDF, `report/scenarios_html.rs`), the sockperf baseline, the
//! sections of the plan's other experiments in the order of `experiments::all()` and the
//! comparisons with the seeds (`report/seeds/`).

use std::fmt::Write as _;

use serde_json::Value;

use super::scenarios_html;
use super::summary::{Report, ReportError, Summary};
use super::{baseline, experiments};
use crate::table::{escape, kv_table, note};

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}\
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:right}\
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}\
td.pass{background:#e3f4e3;color:#155215}td.fail{background:#fbe0e0;color:#8a1010;font-weight:bold}\
figure{margin:1.5em 0}figcaption{font-size:.85em;color:#444;max-width:900px}\
svg{max-width:100%;height:auto}p.note{font-size:.85em;color:#444;max-width:900px}\
nav a{margin-right:1em}";

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
        scenarios_html::verdicts(&mut s, summary);
        baseline_html(&mut s, summary);
        scenarios_html::sections(&mut s, report, summary)?;
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

/// The sockperf baseline (pages with ping-pong scenarios).
fn baseline_html(s: &mut String, summary: &Summary) {
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
    for sec in crate::report::seeds::sections(summary) {
        let _ = writeln!(s, "<h2>{}</h2>", escape(&sec.title));
        s.push_str(&sec.table.html());
        note(s, &sec.note);
    }
}
