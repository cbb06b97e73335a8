//! The one table type of reports: every section (ping-pong, experiments, seeds) builds a
//! [`Table`] of text cells, and this file renders it, as Markdown for `summary.md` and as HTML
//! for `index.html`, with the escaping each needs and the cell formatters the sections share.

use std::fmt::Write as _;

use serde_json::Value;

/// A table of text cells: a header row and data rows (every row as long as the header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// As an HTML `<table>` (cells escaped; `PASS`/`FAIL` cells coloured as in `index.html`).
    pub fn html(&self) -> String {
        let mut s = String::from("<table>\n<tr>");
        for h in &self.head {
            let _ = write!(s, "<th>{}</th>", escape(h));
        }
        s.push_str("</tr>\n");
        for r in &self.rows {
            s.push_str("<tr>");
            for c in r {
                let class = match c.as_str() {
                    "PASS" => " class=\"pass\"",
                    "FAIL" => " class=\"fail\"",
                    _ => "",
                };
                let _ = write!(s, "<td{class}>{}</td>", escape(c));
            }
            s.push_str("</tr>\n");
        }
        s.push_str("</table>\n");
        s
    }

    /// As a Markdown table (cells escaped, one line per row).
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let line = |cells: &[String]| {
            let c: Vec<String> = cells.iter().map(|c| cell(c)).collect();
            format!("| {} |\n", c.join(" | "))
        };
        s.push_str(&line(&self.head));
        s.push_str(&format!("|{}\n", " --- |".repeat(self.head.len())));
        for r in &self.rows {
            s.push_str(&line(r));
        }
        s
    }
}

/// Makes text safe inside a Markdown table cell: no column break, no line break, no raw HTML.
/// It stays readable as plain text (the verdict table goes to the terminal too): only a `<`
/// that could open a tag and a `&` that could open an entity get a backslash (CommonMark
/// escapes), so `p99.9 < 2000 µs` stays as it is rather than `&lt;`.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match c {
            '<' if next.is_some_and(|n| n.is_ascii_alphabetic() || "/!?".contains(n)) => {
                out.push_str("\\<");
            }
            '&' if next.is_some_and(|n| n.is_ascii_alphanumeric() || n == '#') => {
                out.push_str("\\&");
            }
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A number of µs with one decimal.
pub(super) fn us(v: f64) -> String {
    format!("{v:.1}")
}

pub(super) fn opt_us(v: Option<f64>) -> String {
    v.map_or_else(|| "—".to_string(), us)
}

/// A number with `decimals` decimals, or "—" when missing.
pub(super) fn opt_num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "—".to_string(), |v| format!("{v:.decimals$}"))
}

pub(super) fn yes_no(ok: bool) -> &'static str {
    if ok { "PASS" } else { "FAIL" }
}

pub(super) fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

pub(super) fn ratio(ours: f64, seed: f64) -> String {
    if seed > 0.0 {
        format!("{:.2}", ours / seed)
    } else {
        "—".into()
    }
}

/// A figure of a JSON object (environment, sockperf baseline) as table text, to the precision
/// it was measured with, told by its key: µs to 0.1, ratios to 2 decimals, other fractional
/// figures (seconds, milliseconds) to 3 decimals; integers and strings as they are.
pub(super) fn figure(key: &str, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_u64() || n.is_i64() => n.to_string(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if key.ends_with("_us") {
                format!("{x:.1}")
            } else if key.starts_with("ratio") || key.contains("_ratio") {
                format!("{x:.2}")
            } else if key.ends_with("_messages") && x.fract() == 0.0 {
                format!("{x:.0}")
            } else {
                // At most 3 decimals, trailing zeros dropped (0.2, not 0.200).
                let s = format!("{x:.3}");
                let s = s.trim_end_matches('0');
                if s.ends_with('.') {
                    format!("{s}0")
                } else {
                    s.to_string()
                }
            }
        }
        other => other.to_string(),
    }
}

/// Key/value rows of a JSON object (the environment), each figure rounded ([`figure`]).
pub(super) fn kv_table(map: &serde_json::Map<String, Value>) -> Table {
    Table {
        head: strs(&["key", "value"]),
        rows: map
            .iter()
            .map(|(k, v)| vec![k.clone(), figure(k, v)])
            .collect(),
    }
}

/// A table of a seed's published figures beside ours, with its heading and a note.
pub struct SeedSection {
    pub title: String,
    pub table: Table,
    pub note: String,
}

/// A note paragraph of `index.html` (under a table or a plot).
pub fn note(s: &mut String, text: &str) {
    let _ = writeln!(s, "<p class=\"note\">{}</p>", escape(text));
}

/// A section of summary.md: its heading, its table and a paragraph per note.
pub fn markdown_section(s: &mut String, title: &str, t: &Table, notes: &[String]) {
    s.push_str("\n## ");
    s.push_str(title);
    s.push_str("\n\n");
    s.push_str(&t.markdown());
    for n in notes {
        s.push('\n');
        s.push_str(n);
        s.push('\n');
    }
}

/// The same section in index.html.
pub fn html_section(s: &mut String, title: &str, t: &Table, notes: &[String]) {
    s.push_str("<h2>");
    s.push_str(&escape(title));
    s.push_str("</h2>\n");
    s.push_str(&t.html());
    for n in notes {
        note(s, n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub-flavoured Markdown ("Tables (extension)"): a `|` inside a cell is written `\|`,
    /// and a line break would end the row, so it becomes a space. HTML: `&`, `<`, `>`, `"` and
    /// `'` become character references, so cell text can neither open a tag nor leave a quoted
    /// attribute.
    #[test]
    fn one_table_two_renderings() {
        let t = Table {
            head: strs(&["name", "verdict"]),
            rows: vec![
                vec!["a|b\nc".into(), "PASS".into()],
                vec!["<i>\"x\" & 'y'</i>".into(), "FAIL".into()],
                vec!["p99.9 < 2000 µs, a &amp; b".into(), "PASS".into()],
            ],
        };
        assert_eq!(
            t.markdown(),
            "| name | verdict |\n| --- | --- |\n| a\\|b c | PASS |\n\
             | \\<i>\"x\" & 'y'\\</i> | FAIL |\n\
             | p99.9 < 2000 µs, a \\&amp; b | PASS |\n"
        );
        assert_eq!(
            t.html(),
            "<table>\n<tr><th>name</th><th>verdict</th></tr>\n\
             <tr><td>a|b\nc</td><td class=\"pass\">PASS</td></tr>\n\
             <tr><td>&lt;i&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/i&gt;</td>\
             <td class=\"fail\">FAIL</td></tr>\n\
             <tr><td>p99.9 &lt; 2000 µs, a &amp;amp; b</td><td class=\"pass\">PASS</td></tr>\n</table>\n"
        );
    }

    #[test]
    fn cells_say_missing_as_a_dash() {
        assert_eq!(opt_us(None), "—");
        assert_eq!(opt_us(Some(12.345)), "12.3");
        assert_eq!(opt_num(Some(2.0), 2), "2.00");
        assert_eq!(ratio(3.0, 0.0), "—");
        assert_eq!(ratio(1.0, 3.0), "0.33");
        assert_eq!(
            figure("half_rtt_p50_us", &Value::from(8.682749999999999)),
            "8.7"
        );
        assert_eq!(
            figure("ratio_plain_64", &Value::from(0.30357142857142855)),
            "0.30"
        );
        assert_eq!(figure("duration_s", &Value::from(185.1234567)), "185.123");
        assert_eq!(figure("pause_ms", &Value::from(0.2)), "0.2");
        assert_eq!(figure("sent_messages", &Value::from(1901.0)), "1901");
        assert_eq!(figure("duration_s", &Value::from(2.0)), "2.0");
        let mut m = serde_json::Map::new();
        m.insert("host".into(), Value::from("a b"));
        m.insert("cores".into(), Value::from(2));
        assert_eq!(
            kv_table(&m).rows,
            vec![
                vec!["cores".to_string(), "2".into()],
                vec!["host".into(), "a b".into()]
            ]
        );
    }
}
