//! The report sections of the benchmarks a plan runs in its own process: `[[chunk_bench]]` (AES
//! by chunk size and the offload break-evens, seed 003 Fig. 8 and seed 004 §6.1, with seed 004's
//! figure beside ours) and `[[crypto_bench]]` (single-frame protect and verify times, which
//! seed 001's Figure 6 comparison in [`crate::tdma::report`] reads too).

use std::fmt::Write as _;

use super::chunks::ChunkBenchReport;
use super::per_frame::PerFrameReport;
use crate::experiment::{Experiment, Holds, Tables};
use crate::table::{Table, html_section, markdown_section, note, strs};

/// The `[[chunk_bench]]` tables of a report: (title, table, notes) in order, each with seed
/// 004's figures beside ours.
fn chunk_sections(reports: &[ChunkBenchReport]) -> Vec<(String, Table, Vec<String>)> {
    let mut out = Vec::new();
    for c in reports {
        let f = |v: &serde_json::Value, k: &str| match &v[k] {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => "—".to_string(),
            x => x.to_string(),
        };
        let mut chunks = Table {
            head: [
                "suite",
                "provider",
                "context",
                "chunk bytes",
                "ns median",
                "MB/s",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        for r in c.chunks.as_array().into_iter().flatten() {
            let num = |k: &str, d: usize| {
                r[k].as_f64()
                    .map_or("—".to_string(), |x| format!("{x:.d$}"))
            };
            chunks.rows.push(vec![
                f(r, "suite"),
                f(r, "provider"),
                f(r, "context"),
                f(r, "size"),
                num("ns_median", 0),
                num("mbps", 1),
            ]);
        }
        out.push((
            "AES by chunk size (seed 003 Fig. 8, seed 004 §6.1)".to_string(),
            chunks,
            vec![
                "Median ns per chunk over the timed batches (`ivnsec crypto-bench --chunk-sizes`): \
                 portable is software, fast (AES-NI/VAES) stands in for the seed's FPGA engine; \
                 `reuse` keeps one context, `fresh` sets one up per chunk."
                    .to_string(),
            ],
        ));
        let mut evens = Table {
            head: [
                "suite",
                "kind",
                "context",
                "below",
                "above",
                "break-even bytes",
                "ours",
                "seed 004 (§6.1)",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows: Vec::new(),
        };
        for b in c.break_even.as_array().into_iter().flatten() {
            evens.rows.push(vec![
                f(b, "suite"),
                f(b, "kind"),
                f(b, "context"),
                f(b, "below"),
                f(b, "above"),
                b["size"]
                    .as_f64()
                    .map_or("—".to_string(), |x| format!("{x:.0}")),
                f(b, "text"),
                "1 MiB as printed (\"around 1024kB\")".to_string(),
            ]);
        }
        out.push((
            "Offload break-even (seed 004 §6.1)".to_string(),
            evens,
            vec![crate::seed004::OFFLOAD_BREAK_EVEN_TEXT.to_string()],
        ));
    }
    out
}

/// `[[chunk_bench]]`: AES by chunk size (`crypto-bench --chunk-sizes`) and the break-evens.
pub struct ChunkBenchExperiment;

impl Tables for ChunkBenchExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["chunk_bench"]
    }
}

impl<P: Holds<ChunkBenchReport>> Experiment<P> for ChunkBenchExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        for (title, t, notes) in chunk_sections(page.results()) {
            markdown_section(s, &title, &t, &notes);
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        for (title, t, notes) in chunk_sections(page.results()) {
            html_section(s, &title, &t, &notes);
        }
    }
}

/// One row per profile × size of every `[[crypto_bench]]` table.
pub fn per_frame_table(reports: &[PerFrameReport]) -> Table {
    let head = strs(&[
        "profile",
        "payload bytes",
        "frame bytes",
        "provider",
        "frames",
        "protect µs min",
        "protect µs mean",
        "protect µs max",
        "verify µs min",
        "verify µs mean",
        "verify µs max",
    ]);
    let f = |ns: f64| format!("{:.2}", ns / 1e3);
    let rows = reports
        .iter()
        .flat_map(|r| r.rows.iter().map(move |x| (r.frames, x)))
        .map(|(frames, x)| {
            vec![
                x.profile.to_string(),
                x.size.to_string(),
                x.protected_frame_len.to_string(),
                x.provider.clone(),
                frames.to_string(),
                f(x.protect_frame_ns_min),
                f(x.protect_frame_ns_mean),
                f(x.protect_frame_ns_max),
                f(x.verify_frame_ns_min),
                f(x.verify_frame_ns_mean),
                f(x.verify_frame_ns_max),
            ]
        })
        .collect();
    Table { head, rows }
}

/// The note under the single-frame table.
pub fn per_frame_note(reports: &[PerFrameReport]) -> String {
    let timer = reports
        .iter()
        .find_map(|r| r.timer_ns)
        .map_or(String::new(), |t| {
            format!(" An empty timing (two clock readings) costs {t:.0} ns here.")
        });
    format!(
        "Protect and verify of one frame at a time (`ivnsec crypto-bench --frames N`): each \
         figure is one call timed on its own, the clock readings included; the maximum includes \
         preemption by whatever else runs on this machine.{timer}"
    )
}

/// `[[crypto_bench]]`: protect and verify of single frames (`crypto-bench --frames`).
pub struct CryptoBenchExperiment;

impl Tables for CryptoBenchExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["crypto_bench"]
    }
}

impl<P: Holds<PerFrameReport>> Experiment<P> for CryptoBenchExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        let reports: &[PerFrameReport] = page.results();
        if !reports.is_empty() {
            s.push_str("\n## Single-frame protect and verify (crypto-bench --frames)\n\n");
            s.push_str(&per_frame_table(reports).markdown());
            let _ = writeln!(s, "\n{}", per_frame_note(reports));
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        let reports: &[PerFrameReport] = page.results();
        if !reports.is_empty() {
            s.push_str(
                "<h2 id=\"crypto-bench\">Single-frame protect and verify (crypto-bench --frames)</h2>\n",
            );
            s.push_str(&per_frame_table(reports).html());
            note(s, &per_frame_note(reports));
        }
    }

    fn nav(&self, page: &P, s: &mut String) {
        if !page.results().is_empty() {
            s.push_str("<a href=\"#crypto-bench\">single frames</a>");
        }
    }
}
