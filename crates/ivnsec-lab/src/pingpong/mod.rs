//! The ping-pong experiment's data (seed 000 §3.3, Fig. 16) and what is derived from it.
//!
//! Per exchange the initiator times part 1 (create the payload), part 2 (protect), part 3 (send
//! and wait for the reply) and part 4 (verify the reply); the responder times its own verify (4)
//! and protect (2) and reports them. From these, as in seed 000:
//! - one-way wire time 5 = (3 − responder 4+2) / 2,
//! - forward OWD = 1 + 2 + 5 + responder 4,
//! - backward OWD = responder 2 + 5 + 4,
//! - complete iteration (RTT) = 1 + 2 + 3 + 4.
//!
//! Namespaces on one host share a clock, so the forward OWD can also be measured directly
//! (responder receive time − initiator send start); reports show how far the estimate is from it.

use serde::{Deserialize, Serialize};

pub mod node;
pub mod run;

use crate::stats::{self, Summary};

/// One exchange; times in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exchange {
    pub replication: u32,
    pub index: u32,
    /// Part 1: create the payload.
    pub payload_ns: u64,
    /// Part 2: protect (initiator).
    pub protect_ns: u64,
    /// Part 3: send until the reply arrived.
    pub round_trip_ns: u64,
    /// Part 4: verify the reply (initiator).
    pub verify_ns: u64,
    /// Responder's part 4: verify the request.
    pub resp_verify_ns: u64,
    /// Responder's part 2: protect the reply.
    pub resp_protect_ns: u64,
    /// Measured forward one-way delay on the shared clock, when available.
    pub owd_direct_ns: Option<u64>,
    /// No valid reply within the timeout (the other fields are then not meaningful).
    pub lost: bool,
}

impl Exchange {
    /// Responder time 4 + 2.
    pub fn responder_ns(&self) -> u64 {
        self.resp_verify_ns.saturating_add(self.resp_protect_ns)
    }

    /// Part 5, one way on the wire: (3 − responder 4+2) / 2 (0 if the responder time exceeds 3,
    /// which only a broken clock produces).
    pub fn wire_one_way_ns(&self) -> f64 {
        self.round_trip_ns.saturating_sub(self.responder_ns()) as f64 / 2.0
    }

    /// 1 + 2 + 5 + responder 4.
    pub fn owd_forward_ns(&self) -> f64 {
        (self.payload_ns + self.protect_ns + self.resp_verify_ns) as f64 + self.wire_one_way_ns()
    }

    /// Responder 2 + 5 + 4.
    pub fn owd_backward_ns(&self) -> f64 {
        (self.resp_protect_ns + self.verify_ns) as f64 + self.wire_one_way_ns()
    }

    /// Complete iteration 1 + 2 + 3 + 4.
    pub fn rtt_ns(&self) -> f64 {
        (self.payload_ns + self.protect_ns + self.round_trip_ns + self.verify_ns) as f64
    }
}

/// The sections a report summarizes, with their stable JSON names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    OwdForward,
    OwdBackward,
    Rtt,
    Protect,
    Verify,
    Responder,
    WireOneWay,
    OwdDirect,
}

impl Section {
    pub const ALL: [Section; 8] = [
        Section::OwdForward,
        Section::OwdBackward,
        Section::Rtt,
        Section::Protect,
        Section::Verify,
        Section::Responder,
        Section::WireOneWay,
        Section::OwdDirect,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Section::OwdForward => "owd_forward",
            Section::OwdBackward => "owd_backward",
            Section::Rtt => "rtt",
            Section::Protect => "protect",
            Section::Verify => "verify",
            Section::Responder => "responder",
            Section::WireOneWay => "wire_one_way",
            Section::OwdDirect => "owd_direct",
        }
    }

    /// The section's value for one exchange in ns (`None` when lost or not measured).
    pub fn value_ns(self, e: &Exchange) -> Option<f64> {
        if e.lost {
            return None;
        }
        Some(match self {
            Section::OwdForward => e.owd_forward_ns(),
            Section::OwdBackward => e.owd_backward_ns(),
            Section::Rtt => e.rtt_ns(),
            Section::Protect => e.protect_ns as f64,
            Section::Verify => e.verify_ns as f64,
            Section::Responder => e.responder_ns() as f64,
            Section::WireOneWay => e.wire_one_way_ns(),
            Section::OwdDirect => e.owd_direct_ns? as f64,
        })
    }
}

/// Statistics of one section, in microseconds (the `sections` objects of summary.json).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SectionStats {
    pub count: usize,
    pub mean_us: f64,
    pub min_us: f64,
    pub max_us: f64,
    pub std_us: f64,
    pub median_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub p9999_us: f64,
    /// Seed 000 §4.3: smallest m for which "median ≥ m" is rejected at 99 % confidence.
    pub wilcoxon_bound_us: Option<f64>,
    /// Latency exceeded with probability 1e-9 per message (Gumbel fit to block maxima).
    pub pwcet_1e9_us: Option<f64>,
    /// Kolmogorov–Smirnov distance of that fit, and whether it is below the 5 % critical value.
    pub pwcet_ks_d: Option<f64>,
    pub pwcet_fit_ok: Option<bool>,
}

/// Block size for the pWCET block maxima.
pub const PWCET_BLOCK: usize = 50;

impl SectionStats {
    /// Statistics of values in ns, in measurement order. `None` when there are none.
    pub fn from_ns(values_in_order: &[f64]) -> Option<SectionStats> {
        let us: Vec<f64> = values_in_order.iter().map(|v| v / 1000.0).collect();
        let s: Summary = stats::summarize(&us)?;
        let pw = stats::pwcet(&us, PWCET_BLOCK, 1e-9);
        Some(SectionStats {
            count: s.count,
            mean_us: s.mean,
            min_us: s.min,
            max_us: s.max,
            std_us: s.std,
            median_us: s.median,
            p90_us: s.p90,
            p99_us: s.p99,
            p999_us: s.p999,
            p9999_us: s.p9999,
            wilcoxon_bound_us: stats::wilcoxon_median_bound(&us, 0.01),
            pwcet_1e9_us: pw.as_ref().map(|p| p.value),
            pwcet_ks_d: pw.as_ref().map(|p| p.fit.ks_d),
            pwcet_fit_ok: pw.as_ref().map(|p| p.fit.fit_ok()),
        })
    }

    /// Statistics of one section over exchanges.
    pub fn of(section: Section, exchanges: &[Exchange]) -> Option<SectionStats> {
        let v: Vec<f64> = exchanges
            .iter()
            .filter_map(|e| section.value_ns(e))
            .collect();
        SectionStats::from_ns(&v)
    }
}

/// Requirements the verdicts check.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Requirements {
    /// Control data: worst-case one-way delay (µs) after the margin (seed 000 §2.6, §4.4).
    pub control_owd_us: f64,
    /// Control data: complete iteration bound (µs).
    pub control_rtt_us: f64,
    /// Safety margin over the observed worst case (0.25 = 25 %, seed 000 §4.4).
    pub safety_margin: f64,
    /// Sensor data: p99.9 latency bound (µs), strict (seed 002 §5.1.3).
    pub sensor_p999_us: f64,
    /// Largest throughput cost against the same run's `plain` (0.05 = 5 %, seed 002 §5.1.1).
    #[serde(default = "default_throughput_cost")]
    pub throughput_cost: f64,
    /// Largest CPU increase over the same run's `plain`, in points of % of the machine (seed 002
    /// §5.1.1).
    #[serde(default = "default_cpu_increase_points")]
    pub cpu_increase_points: f64,
}

fn default_throughput_cost() -> f64 {
    0.05
}

fn default_cpu_increase_points() -> f64 {
    5.0
}

impl Default for Requirements {
    fn default() -> Self {
        Requirements {
            control_owd_us: 2500.0,
            control_rtt_us: 5000.0,
            safety_margin: 0.25,
            sensor_p999_us: 2000.0,
            throughput_cost: default_throughput_cost(),
            cpu_increase_points: default_cpu_increase_points(),
        }
    }
}

/// The verdicts of one scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Verdicts {
    /// Worst one-way delay (either direction) × (1 + margin) ≤ 2.5 ms, worst RTT ≤ 5 ms, and no
    /// exchange lost.
    pub control_2500us: bool,
    /// p99.9 of the forward one-way delay < 2 ms.
    pub sensor_p999_2ms: bool,
}

impl Verdicts {
    pub fn judge(
        req: &Requirements,
        fwd: Option<&SectionStats>,
        bwd: Option<&SectionStats>,
        rtt: Option<&SectionStats>,
        lost: usize,
    ) -> Verdicts {
        let control = match (fwd, bwd, rtt) {
            (Some(f), Some(b), Some(r)) => {
                f.max_us.max(b.max_us) * (1.0 + req.safety_margin) <= req.control_owd_us
                    && r.max_us <= req.control_rtt_us
                    && lost == 0
            }
            _ => false,
        };
        let sensor = fwd.is_some_and(|f| f.p999_us < req.sensor_p999_us);
        Verdicts {
            control_2500us: control,
            sensor_p999_2ms: sensor,
        }
    }
}

/// Frame efficiency (seed 000 §4.2.3): useful payload over the whole frame.
pub fn efficiency(payload: usize, frame_bytes: usize) -> f64 {
    if frame_bytes == 0 {
        0.0
    } else {
        payload as f64 / frame_bytes as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(p1: u64, p2: u64, p3: u64, p4: u64, r4: u64, r2: u64) -> Exchange {
        Exchange {
            payload_ns: p1,
            protect_ns: p2,
            round_trip_ns: p3,
            verify_ns: p4,
            resp_verify_ns: r4,
            resp_protect_ns: r2,
            ..Exchange::default()
        }
    }

    #[test]
    fn derivations_follow_seed_000() {
        // 1 = 1 µs, 2 = 10 µs, 3 = 200 µs of which the responder spent 20 + 30, 4 = 12 µs.
        let e = ex(1_000, 10_000, 200_000, 12_000, 20_000, 30_000);
        assert_eq!(e.responder_ns(), 50_000);
        assert_eq!(e.wire_one_way_ns(), 75_000.0);
        assert_eq!(e.owd_forward_ns(), 1_000.0 + 10_000.0 + 75_000.0 + 20_000.0);
        assert_eq!(e.owd_backward_ns(), 30_000.0 + 75_000.0 + 12_000.0);
        assert_eq!(e.rtt_ns(), 223_000.0);
        // A responder time above the round trip (broken clock) does not underflow.
        assert_eq!(ex(0, 0, 10, 0, 20, 0).wire_one_way_ns(), 0.0);
    }

    #[test]
    fn lost_exchanges_are_left_out_of_sections() {
        let mut v = vec![ex(1_000, 2_000, 100_000, 3_000, 4_000, 5_000); 10];
        v[3].lost = true;
        let s = SectionStats::of(Section::Rtt, &v).unwrap();
        assert_eq!(s.count, 9);
        assert!((s.mean_us - 106.0).abs() < 1e-9);
        assert!(
            SectionStats::of(Section::OwdDirect, &v).is_none(),
            "not measured"
        );
    }

    #[test]
    fn verdicts_apply_the_margin() {
        let req = Requirements::default();
        let mk = |max_us: f64, p999_us: f64| SectionStats {
            count: 1,
            mean_us: 0.0,
            min_us: 0.0,
            max_us,
            std_us: 0.0,
            median_us: 0.0,
            p90_us: 0.0,
            p99_us: 0.0,
            p999_us,
            p9999_us: 0.0,
            wilcoxon_bound_us: None,
            pwcet_1e9_us: None,
            pwcet_ks_d: None,
            pwcet_fit_ok: None,
        };
        let rtt = mk(4000.0, 0.0);
        // 2000 µs × 1.25 = 2500: just meets; 2001 µs does not.
        let ok = Verdicts::judge(
            &req,
            Some(&mk(2000.0, 1999.0)),
            Some(&mk(100.0, 0.0)),
            Some(&rtt),
            0,
        );
        assert!(ok.control_2500us && ok.sensor_p999_2ms);
        let late = Verdicts::judge(
            &req,
            Some(&mk(2001.0, 2000.0)),
            Some(&mk(100.0, 0.0)),
            Some(&rtt),
            0,
        );
        assert!(!late.control_2500us && !late.sensor_p999_2ms);
        let lost = Verdicts::judge(
            &req,
            Some(&mk(10.0, 1.0)),
            Some(&mk(10.0, 0.0)),
            Some(&rtt),
            1,
        );
        assert!(
            !lost.control_2500us,
            "a lost control message fails the deadline"
        );
        assert!(!Verdicts::judge(&req, None, None, None, 0).control_2500us);
    }

    #[test]
    fn efficiency_matches_seed_000_example() {
        // 000 §4.2.3: 1440-byte payload with HMAC-SHA-256 → 14 + 1440 + 32 = 1486 bytes, ≈ 97 %.
        assert!((efficiency(1440, 1486) - 0.969).abs() < 1e-3);
        assert!((efficiency(64, 14 + 64 + 32) - 0.58).abs() < 1e-2);
    }
}
