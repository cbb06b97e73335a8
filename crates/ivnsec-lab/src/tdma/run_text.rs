//! [`RunResult`] as text: the tables `ivnsec tdma run` prints.

use std::fmt::Write as _;

use super::flows::{fmt_duration, fmt_rate};
use super::node::MAX_EVENTS;
use super::run::{CapacityResult, RunResult, Spread};

fn fmt_spread(s: &Option<Spread>) -> String {
    match s {
        Some(s) => format!("{:.1}/{:.1}/{:.1}", s.p50, s.p99, s.max),
        None => "-".to_string(),
    }
}

impl RunResult {
    /// The result as text tables.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "TDMA run on {}{} ({}): {}, BP {}, GP {} per switch, {}, {} base periods",
            if self.hosts.is_some() { "" } else { "testbed " },
            self.testbed,
            self.topology,
            self.profile,
            fmt_duration((self.bp_ms * 1e6).round() as u64),
            fmt_duration((self.gp_ms * 1e6).round() as u64),
            fmt_rate(self.rate_bps),
            self.periods
        );
        let _ = writeln!(
            o,
            "{:<16} {:<11} {:>5} {:>10} {:>10} {:>6} {:>7} {:>5} {:>6} {:>26} {:>23}  switch diff µs min/mean/max",
            "flow",
            "from → to",
            "bytes",
            "offset µs",
            "length µs",
            "sent",
            "arrived",
            "lost",
            "misses",
            "send error µs p50/p99/max",
            "one-way µs p50/p99/max"
        );
        for r in &self.slots {
            let diffs: Vec<String> = r
                .switch_diff_us
                .iter()
                .map(|d| {
                    format!(
                        "{} {:.1}/{:.1}/{:.1}",
                        d.switch, d.us.min, d.us.mean, d.us.max
                    )
                })
                .collect();
            let _ = writeln!(
                o,
                "{:<16} {:<11} {:>5} {:>10.1} {:>10.1} {:>6} {:>7} {:>5} {:>6} {:>26} {:>23}  {}",
                r.flow,
                format!("{} → {}", r.from, r.to),
                r.frame_bytes,
                r.offset_us,
                r.length_us,
                r.sent,
                r.arrived,
                r.lost,
                r.misses,
                fmt_spread(&r.send_error_us),
                fmt_spread(&r.owd_us),
                if self.switch_diff_not_measured.is_some() {
                    "not measured".to_string()
                } else {
                    diffs.join(", ")
                }
            );
        }
        let _ = writeln!(
            o,
            "total: {} sent, {} arrived, {} lost, {} deadline misses",
            self.sent, self.arrived, self.lost, self.misses
        );
        if let Some(why) = &self.switch_diff_not_measured {
            let _ = writeln!(o, "switch forwarding delay (Table 6 Diff): {why}");
        }
        if let Some(flag) = &self.clock_flag {
            let _ = writeln!(o, "{flag}");
        }
        for d in &self.switch_diff_us {
            let _ = writeln!(
                o,
                "switch {} forwarding delay (Table 6 Diff): min {:.1} µs, mean {:.1} µs, max {:.1} µs over {} frames",
                d.switch, d.us.min, d.us.mean, d.us.max, d.us.count
            );
        }
        if let Some(h) = &self.first_hop_us {
            let _ = writeln!(
                o,
                "send call → first switch port (Table 6 Tx): min {:.1} µs, mean {:.1} µs, max {:.1} µs",
                h.min, h.mean, h.max
            );
        }
        if let Some(h) = &self.last_hop_us {
            let _ = writeln!(
                o,
                "receiver interface → receive call returned: min {:.1} µs, mean {:.1} µs, max {:.1} µs",
                h.min, h.mean, h.max
            );
        }
        for (reason, n) in &self.rejected {
            let _ = writeln!(o, "receivers rejected {n} frames: {reason}");
        }
        if self.socket_drops + self.probe_drops > 0 {
            let _ = writeln!(
                o,
                "the kernel dropped {} frames at the ECU sockets and {} at the probes (full queues)",
                self.socket_drops, self.probe_drops
            );
        }
        if let (Some(t), Some(n)) = (self.max_tt_us, self.nf_max_tt) {
            let _ = writeln!(
                o,
                "Max_TT (worst slot start → arrival) {t:.1} µs: ⌊BP / Max_TT⌋ = {n} frames per base period"
            );
        }
        if let Some(c) = &self.capacity {
            self.capacity_text(&mut o, c);
        }
        let _ = writeln!(
            o,
            "schedule met (every frame within its slot): {}",
            if self.schedule_met { "PASS" } else { "FAIL" }
        );
        o
    }

    /// The capacity steps' lines (`--capacity`).
    fn capacity_text(&self, o: &mut String, c: &CapacityResult) {
        let _ = writeln!(
            o,
            "capacity for {}-byte frames ({} µs frame time): no miss up to {} frames per base \
             period{}; eq. 9 NF_max = {}",
            c.frame_bytes,
            c.frame_time_us,
            c.nf_no_miss,
            match c.first_miss_at {
                Some(k) => format!(" (misses at {k})"),
                None => String::new(),
            },
            c.nf_max
        );
        if c.most_tried < c.nf_max {
            let _ = writeln!(
                o,
                "  (the steps stop at {} frames per base period: with --periods {} more would \
                 exceed {MAX_EVENTS} frames per run)",
                c.most_tried, self.periods
            );
        }
        for st in &c.steps {
            let _ = writeln!(
                o,
                "  {:>5} frames per base period, slot {:.1} µs: {} sent, {} arrived, {} misses, {} lost, worst {}",
                st.frames_per_bp,
                st.slot_us,
                st.sent,
                st.arrived,
                st.misses,
                st.lost,
                st.max_tt_us
                    .map_or("-".to_string(), |t| format!("{t:.1} µs"))
            );
        }
    }
}
