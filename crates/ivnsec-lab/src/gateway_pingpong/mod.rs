//! Ping-pong through bump-in-the-wire gateways (a plan's `[[pingpong]]` table with a
//! `topology`, docs/plans.md): the exchanges of one scenario between the legacy ECU and its
//! peer on a `bump` or `bump2` testbed of their own, kept as the percentiles the reports set
//! beside seed 002's Bump-in-the-Wire rows (Table 6.7, Ping Pong), and its report section
//! ([`report`]).

pub mod plan;
pub mod report;

pub use report::GatewayPingPongExperiment;

use ivnsec_core::profile::{NamedProfile, Profile};
use serde::{Deserialize, Serialize};

use crate::pingpong::{Exchange, Section, SectionStats};

/// Percentiles of one section, µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Percentiles {
    fn of(s: Option<SectionStats>) -> Option<Percentiles> {
        s.map(|s| Percentiles {
            count: s.count,
            p50_us: s.median_us,
            p90_us: s.p90_us,
            p99_us: s.p99_us,
            p999_us: s.p999_us,
            max_us: s.max_us,
        })
    }
}

/// One ping-pong scenario run through gateways.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatewayPingPong {
    /// `bump` or `bump2`.
    pub topology: String,
    /// Where it ran (the testbed, its prefix and the path).
    pub transport: String,
    pub initiator: String,
    pub responder: String,
    /// The nodes' profile (`plain`: the protection is the gateways'), with the name it was
    /// given.
    pub profile: NamedProfile,
    pub payload: usize,
    /// Exchanges attempted, and those without a valid reply.
    pub count: usize,
    pub lost: usize,
    /// Forward one-way delay as the plan's other ping-pong scenarios report it (seed 000: 1 +
    /// 2 + 5 + responder 4): the figure of our other Ping Pong rows of Table 6.7.
    pub owd_forward: Option<Percentiles>,
    /// Forward one-way delay measured on the clock the namespaces share.
    pub owd_direct: Option<Percentiles>,
    /// Round trip (send until the reply is verified).
    pub rtt: Option<Percentiles>,
}

/// A `plain` scenario that measured nothing.
impl Default for GatewayPingPong {
    fn default() -> Self {
        GatewayPingPong {
            topology: String::new(),
            transport: String::new(),
            initiator: String::new(),
            responder: String::new(),
            profile: NamedProfile::from(Profile::PLAIN),
            payload: 0,
            count: 0,
            lost: 0,
            owd_forward: None,
            owd_direct: None,
            rtt: None,
        }
    }
}

impl GatewayPingPong {
    /// The figures of `exchanges` (in measurement order).
    pub fn of(
        topology: &str,
        transport: String,
        ends: (&str, &str),
        profile: &NamedProfile,
        payload: usize,
        exchanges: &[Exchange],
    ) -> GatewayPingPong {
        GatewayPingPong {
            topology: topology.to_string(),
            transport,
            initiator: ends.0.to_string(),
            responder: ends.1.to_string(),
            profile: profile.clone(),
            payload,
            count: exchanges.len(),
            lost: exchanges.iter().filter(|e| e.lost).count(),
            owd_forward: Percentiles::of(SectionStats::of(Section::OwdForward, exchanges)),
            owd_direct: Percentiles::of(SectionStats::of(Section::OwdDirect, exchanges)),
            rtt: Percentiles::of(SectionStats::of(Section::Rtt, exchanges)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forward one-way delay is seed 000's 1 + 2 + 5 + responder 4, the direct one the
    /// responder's receive time − the initiator's send start, the round trip 1 + 2 + 3 + 4;
    /// lost exchanges count in `lost` and in no section.
    #[test]
    fn figures_come_from_the_measured_sections() {
        let ex: Vec<Exchange> = (0..1000u32)
            .map(|i| Exchange {
                index: i,
                payload_ns: 1_000,
                protect_ns: 2_000,
                round_trip_ns: 100_000 + u64::from(i) * 100,
                verify_ns: 3_000,
                owd_direct_ns: Some(50_000 + u64::from(i) * 10),
                lost: i % 100 == 99,
                ..Exchange::default()
            })
            .collect();
        let g = GatewayPingPong::of(
            "bump",
            "t".into(),
            ("sensor1", "consumer"),
            &"plain".parse().unwrap(),
            64,
            &ex,
        );
        assert_eq!((g.count, g.lost), (1000, 10));
        let f = g.owd_direct.unwrap();
        assert_eq!(f.count, 990);
        // Delays 50.00 … 59.98 µs (the lost ones taken out, i = 998 the last kept).
        assert!((f.max_us - 59.98).abs() < 1e-9, "{f:?}");
        assert!(f.p50_us > 54.0 && f.p50_us < 55.5, "{f:?}");
        assert!(f.p90_us < f.p99_us && f.p99_us <= f.p999_us && f.p999_us <= f.max_us);
        // 1 + 2 + (3 − responder 0) / 2 + responder 0 = 1 + 2 + 50 + 0.05 i µs.
        let o = g.owd_forward.unwrap();
        assert!((o.max_us - (53.0 + 0.05 * 998.0)).abs() < 1e-6, "{o:?}");
        let r = g.rtt.unwrap();
        // RTT = 1 + 2 + 3 + 4 = 1 + 2 + (100 + 0.1 i) + 3 µs, i = 998.
        assert!((r.max_us - (106.0 + 0.1 * 998.0)).abs() < 1e-6, "{r:?}");
    }
}
