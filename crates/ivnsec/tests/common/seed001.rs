//! Seed 001's tables in a report's summary.json (`seed001` of cli and of testbed_ecus).

use serde_json::Value;

/// The figures of seed 001 Table `table` in summary.json: (column, row, seed, analysis).
pub fn figures(v: &Value, table: u64) -> Vec<(String, String, String, String, Value)> {
    let t = v["seed001"]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["table"] == table)
        .unwrap_or_else(|| panic!("Table {table} in {}", v["seed001"]));
    t["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap().to_string();
            (
                s("column"),
                s("row"),
                s("seed"),
                s("analysis"),
                f["measured"].clone(),
            )
        })
        .collect()
}
