//! Seed 004's benchmarks that run in the plan's own process, in the report: `[[chunk_bench]]`
//! (AES by chunk size and the offload break-evens) and `[[tls_bench]]` (handshakes per minute),
//! each with seed 004's figures beside ours.

use super::table::Table;

/// The `[[chunk_bench]]` and `[[tls_bench]]` tables of a report: (title, table, notes) in
/// order, each with seed 004's figures beside ours.
pub fn seed004_bench_tables(
    e: &super::experiments::Experiments,
) -> Vec<(String, Table, Vec<String>)> {
    let mut out = Vec::new();
    for c in &e.chunk_bench {
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
            vec![super::seed004::OFFLOAD_BREAK_EVEN_TEXT.to_string()],
        ));
    }
    for o in &e.tls_bench {
        out.push((
            "TLS handshakes (ivnsec tls-bench)".to_string(),
            super::tlsbench::results(o),
            Vec::new(),
        ));
        out.push((
            "TLS connections per minute beside seed 004 (Tables 5.1, 5.2)".to_string(),
            super::tlsbench::beside_seed004(o),
            super::tlsbench::seed004_notes(o),
        ));
    }
    out
}
