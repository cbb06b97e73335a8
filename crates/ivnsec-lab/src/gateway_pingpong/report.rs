//! The report section of ping-pong through bump-in-the-wire gateways (`[[pingpong]]`, seed 002
//! §6.4): one row per scenario.

use std::fmt::Write as _;

use super::GatewayPingPong;
use crate::experiment::{Experiment, Holds, Tables};
use crate::table::{Table, note, strs};

fn stat(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| format!("{x:.1}"))
}

/// The ping-pong scenarios of the `[[pingpong]]` tables, run through bump-in-the-wire
/// gateways: one row per scenario.
pub fn gateway_pingpong_table(runs: &[GatewayPingPong]) -> Table {
    let head = strs(&[
        "topology",
        "path",
        "profile",
        "payload",
        "exchanges",
        "lost",
        "OWD p50 µs",
        "OWD p90 µs",
        "OWD p99 µs",
        "OWD p99.9 µs",
        "OWD max µs",
        "RTT p50 µs",
        "RTT p99.9 µs",
    ]);
    let rows = runs
        .iter()
        .map(|r| {
            let o = r.owd_forward.as_ref();
            let t = r.rtt.as_ref();
            vec![
                r.topology.clone(),
                format!("{} → {}", r.initiator, r.responder),
                r.profile.to_string(),
                r.payload.to_string(),
                r.count.to_string(),
                r.lost.to_string(),
                stat(o.map(|o| o.p50_us)),
                stat(o.map(|o| o.p90_us)),
                stat(o.map(|o| o.p99_us)),
                stat(o.map(|o| o.p999_us)),
                stat(o.map(|o| o.max_us)),
                stat(t.map(|t| t.p50_us)),
                stat(t.map(|t| t.p999_us)),
            ]
        })
        .collect();
    Table { head, rows }
}

/// Under the table of [`gateway_pingpong_table`].
pub const GATEWAY_PINGPONG_NOTE: &str = "Ping-pong between the legacy ECU and its peer through \
    bump-in-the-wire gateways the run started (macsec-gcm-aes-128, a fresh key; on bump the \
    consumer's own `ivnsec macsec up` too): the nodes' profile is what they send themselves \
    (`plain`: the protection is the gateways'). OWD is the forward one-way delay as for the \
    plan's other scenarios (seed 000: create + protect + half the wire time + the responder's \
    verify); RTT the complete iteration.";

/// `[[pingpong]]`: ping-pong scenarios through the gateways of a `bump`/`bump2` testbed of
/// their own.
pub struct GatewayPingPongExperiment;

impl Tables for GatewayPingPongExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["pingpong"]
    }
}

impl<P: Holds<GatewayPingPong>> Experiment<P> for GatewayPingPongExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        let runs: &[GatewayPingPong] = page.results();
        if runs.is_empty() {
            return;
        }
        s.push_str("\n## Ping-pong through bump-in-the-wire gateways (seed 002 §6.4)\n\n");
        s.push_str(&gateway_pingpong_table(runs).markdown());
        let _ = writeln!(s, "\n{GATEWAY_PINGPONG_NOTE}");
    }

    fn html(&self, page: &P, s: &mut String) {
        let runs: &[GatewayPingPong] = page.results();
        if runs.is_empty() {
            return;
        }
        s.push_str(
            "<h2 id=\"pingpong-gateways\">Ping-pong through bump-in-the-wire gateways (seed 002 \
             §6.4)</h2>\n",
        );
        s.push_str(&gateway_pingpong_table(runs).html());
        note(s, GATEWAY_PINGPONG_NOTE);
    }
}
