//! Link outages during a run (seed 002 §5.4.3: "randomly selected Ethernet cables were removed
//! to simulate an outage"): the data model and what is derived from it, without I/O.
//!
//! On a testbed whose links form loops (`production`: switches under STP, the consumer on three
//! links), `pingpong --outage N[@SECONDS]` and `underload --outage N[@SECONDS]` take N links
//! chosen at random (seeded, recorded) down one after the other, each for
//! [`OutageSpec::down_s`], and bring them back. The run's *units* are the ping-pong's exchanges
//! (latency: the round trip, [`Measure::Rtt`]) or the sensor's messages (latency: the one-way
//! delay, [`Measure::OneWay`]). Each change of a link (down, up) is an *event*; for each event
//! the report gives, from the units that began (were sent) between it and the next event:
//! - `lost`: units without a valid reply (exchanges) or never delivered (messages),
//! - `recovered_after_ms`: from the event to the start of the first unit that succeeded
//!   after the last lost one (0 when none was lost; `null` when none succeeded before the next
//!   event),
//! - `tree_settled_after_ms`: from the event until the kernel's spanning tree had settled again
//!   (no port listening or learning, one root), sampled every [`STP_POLL_MS`] ms,
//! - `rtt_during_us` (exchanges) or `one_way_during_us` (messages): count, median, p99 and max
//!   of the latencies of the units that succeeded while the network re-converged (from the
//!   event until 1 s after it had recovered and the tree settled).
//!
//! Only links whose loss the network survives are chosen: links between two switches and the
//! consumer's uplinks. The orchestration (taking links down, watching the tree and the MKA
//! participants) is [`run`].

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::stats;
use ivnsec_node::error::usage;

pub mod run;

/// Default time from one outage's start to the next one's, seconds.
pub const DEFAULT_INTERVAL_S: f64 = 25.0;
/// How long a link stays down, seconds: longer than the slowest STP re-convergence (max age
/// 6 s + 2 × forward delay 2 s = 10 s), so the network is seen to recover while it is down.
pub const DOWN_S: f64 = 12.0;
/// Undisturbed exchanges before the first outage, seconds (the latency before).
pub const LEAD_S: f64 = 3.0;
/// Exchanges after the last link came back, seconds (its re-convergence, 2 × forward delay).
pub const TAIL_S: f64 = 8.0;
/// How often the spanning tree is read while an outage runs, milliseconds.
pub const STP_POLL_MS: u64 = 250;
/// Most outages in one run.
pub const MAX_OUTAGES: u32 = 20;

/// `--outage N[@SECONDS]` with its seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutageSpec {
    /// How many links go down (one after the other).
    pub count: u32,
    /// Seconds from one outage's start to the next one's.
    pub interval_s: f64,
    /// Seconds each link stays down.
    pub down_s: f64,
    /// The seed of the link choice (the same seed on the same topology picks the same links).
    pub seed: u64,
}

impl OutageSpec {
    /// Parses `N[@SECONDS]` (e.g. `1`, `3@30`).
    pub fn parse(text: &str, seed: u64) -> anyhow::Result<OutageSpec> {
        let bad = |why: &str| {
            usage(format!(
                "--outage {text}: {why} (expected N[@SECONDS]: N outages 1..={MAX_OUTAGES}, one \
                 every SECONDS > {DOWN_S} s, default {DEFAULT_INTERVAL_S}; e.g. --outage 2@30)"
            ))
        };
        let (n, interval) = match text.trim().split_once('@') {
            Some((n, i)) => (n, Some(i)),
            None => (text.trim(), None),
        };
        let count: u32 = n.parse().map_err(|_| bad("N is not a number"))?;
        if count == 0 || count > MAX_OUTAGES {
            return Err(bad("N is out of range"));
        }
        let interval_s = match interval {
            None => DEFAULT_INTERVAL_S,
            Some(i) => {
                let v: f64 = i.parse().map_err(|_| bad("SECONDS is not a number"))?;
                if !v.is_finite() || v <= DOWN_S || v > 3600.0 {
                    return Err(bad("SECONDS must exceed the time a link stays down"));
                }
                v
            }
        };
        Ok(OutageSpec {
            count,
            interval_s,
            down_s: DOWN_S,
            seed,
        })
    }

    /// Seconds from the run's start to when the outage `k` (0-based) takes its link down.
    pub fn down_at_s(&self, k: u32) -> f64 {
        LEAD_S + f64::from(k) * self.interval_s
    }

    /// Seconds the run must last: the lead, the outages, the last link's return and the tail.
    pub fn duration_s(&self) -> f64 {
        self.down_at_s(self.count - 1) + self.down_s + TAIL_S
    }

    /// The links the outages take down, chosen from `candidates` with the seed (a link may be
    /// chosen again by a later outage).
    pub fn choose<'a>(&self, candidates: &'a [LinkRef]) -> Vec<&'a LinkRef> {
        let mut rng = SplitMix64(self.seed);
        (0..self.count)
            .filter_map(|_| {
                if candidates.is_empty() {
                    return None;
                }
                let i = (rng.next() % candidates.len() as u64) as usize;
                candidates.get(i)
            })
            .collect()
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a small seeded generator, enough to pick links
/// repeatably.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// One link of a testbed by its two ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkRef {
    pub a_node: String,
    pub a_if: String,
    pub b_node: String,
    pub b_if: String,
}

impl LinkRef {
    /// `a/if — b/if`.
    pub fn label(&self) -> String {
        format!(
            "{}/{} — {}/{}",
            self.a_node, self.a_if, self.b_node, self.b_if
        )
    }
}

/// What a run with outages measures of each unit, and the names its report gives them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Measure {
    /// Ping-pong exchanges and their round trips (`exchanges`, `rtt_…_us`).
    #[default]
    Rtt,
    /// Sensor messages and their one-way delays (`messages`, `one_way_…_us`).
    OneWay,
}

impl Measure {
    /// The key of the unit count.
    pub fn units_key(self) -> &'static str {
        match self {
            Measure::Rtt => "exchanges",
            Measure::OneWay => "messages",
        }
    }
    /// The key of the latency before the first outage.
    pub fn before_key(self) -> &'static str {
        match self {
            Measure::Rtt => "rtt_before_us",
            Measure::OneWay => "one_way_before_us",
        }
    }
    /// The key of the latency while the network re-converged.
    pub fn during_key(self) -> &'static str {
        match self {
            Measure::Rtt => "rtt_during_us",
            Measure::OneWay => "one_way_during_us",
        }
    }
}

/// When each unit of a run began and its latency in ns (None: lost), in the order sent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    pub starts_ns: Vec<u64>,
    pub latency_ns: Vec<Option<f64>>,
}

/// Latency figures in µs (round trips or one-way delays: [`Measure`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RttUs {
    pub count: usize,
    pub median: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl RttUs {
    fn of(rtts_ns: &[f64]) -> RttUs {
        match stats::summarize(rtts_ns) {
            Some(s) => RttUs {
                count: s.count,
                median: Some(s.median / 1e3),
                p99: Some(s.p99 / 1e3),
                max: Some(s.max / 1e3),
            },
            None => RttUs::default(),
        }
    }
}

/// One change of a link and what the units saw after it.
#[derive(Clone, Debug, PartialEq)]
pub struct EventStats {
    /// `down` or `up`.
    pub event: String,
    /// The link, `a/if — b/if`.
    pub link: String,
    /// Seconds since the first unit began.
    pub at_s: f64,
    /// Units that began between this event and the next one (key `exchanges` or `messages`).
    pub units: usize,
    /// Of those, lost.
    pub lost: usize,
    /// Until the first success after the last loss (0: nothing lost; None: no success before
    /// the next event or the end).
    pub recovered_after_ms: Option<f64>,
    /// Until the spanning tree had settled again (None: not within the event's window).
    pub tree_settled_after_ms: Option<f64>,
    /// Latencies of the units that succeeded while the network re-converged (key
    /// `rtt_during_us` or `one_way_during_us`).
    pub latency_during_us: RttUs,
    /// What the units and latencies are (names the keys).
    pub measure: Measure,
}

impl Serialize for EventStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(8))?;
        m.serialize_entry("event", &self.event)?;
        m.serialize_entry("link", &self.link)?;
        m.serialize_entry("at_s", &self.at_s)?;
        m.serialize_entry(self.measure.units_key(), &self.units)?;
        m.serialize_entry("lost", &self.lost)?;
        m.serialize_entry("recovered_after_ms", &self.recovered_after_ms)?;
        m.serialize_entry("tree_settled_after_ms", &self.tree_settled_after_ms)?;
        m.serialize_entry(self.measure.during_key(), &self.latency_during_us)?;
        m.end()
    }
}

/// A link change as it happened: what, which link, when (CLOCK_MONOTONIC ns), and when the tree
/// had settled after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub down: bool,
    pub link: String,
    pub at_ns: u64,
    pub settled_ns: Option<u64>,
}

/// The per-event figures of one run: `starts_ns[i]` is when unit `i` began, `rtt_ns[i]` its
/// latency (None: lost); `events` in time order.
pub fn analyse(
    starts_ns: &[u64],
    rtt_ns: &[Option<f64>],
    events: &[Event],
    measure: Measure,
) -> Vec<EventStats> {
    let t0 = starts_ns.first().copied().unwrap_or(0);
    let mut out = Vec::new();
    for (k, e) in events.iter().enumerate() {
        let end = events.get(k + 1).map_or(u64::MAX, |n| n.at_ns);
        let idx: Vec<usize> = (0..starts_ns.len().min(rtt_ns.len()))
            .filter(|&i| starts_ns[i] >= e.at_ns && starts_ns[i] < end)
            .collect();
        let lost = idx.iter().filter(|&&i| rtt_ns[i].is_none()).count();
        let last_lost = idx.iter().rev().find(|&&i| rtt_ns[i].is_none()).copied();
        let recovered_ns = match last_lost {
            None => Some(e.at_ns),
            Some(l) => idx
                .iter()
                .find(|&&i| i > l && rtt_ns[i].is_some())
                .map(|&i| starts_ns[i]),
        };
        let settled_ns = e.settled_ns.filter(|&s| s < end);
        // While re-converging: until 1 s after both the exchanges and the tree had recovered
        // (or to the window's end when either did not).
        let until = match (recovered_ns, settled_ns) {
            (Some(r), Some(s)) => r.max(s).saturating_add(1_000_000_000).min(end),
            _ => end,
        };
        let during: Vec<f64> = idx
            .iter()
            .filter(|&&i| starts_ns[i] < until)
            .filter_map(|&i| rtt_ns[i])
            .collect();
        let ms = |t: u64| t.saturating_sub(e.at_ns) as f64 / 1e6;
        out.push(EventStats {
            event: if e.down { "down" } else { "up" }.to_string(),
            link: e.link.clone(),
            at_s: e.at_ns.saturating_sub(t0) as f64 / 1e9,
            units: idx.len(),
            lost,
            recovered_after_ms: recovered_ns.map(ms),
            tree_settled_after_ms: settled_ns.map(ms),
            latency_during_us: RttUs::of(&during),
            measure,
        });
    }
    out
}

/// Latencies of the units that began before `before_ns` (the latency before any outage).
pub fn rtt_before(starts_ns: &[u64], rtt_ns: &[Option<f64>], before_ns: u64) -> RttUs {
    let v: Vec<f64> = starts_ns
        .iter()
        .zip(rtt_ns)
        .filter(|(s, _)| **s < before_ns)
        .filter_map(|(_, r)| *r)
        .collect();
    RttUs::of(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_spec() {
        let s = OutageSpec::parse("1", 7).unwrap();
        assert_eq!(
            (s.count, s.interval_s, s.down_s, s.seed),
            (1, DEFAULT_INTERVAL_S, DOWN_S, 7)
        );
        assert_eq!(OutageSpec::parse("3@30", 0).unwrap().interval_s, 30.0);
        for bad in [
            "", "0", "x", "21", "2@", "2@12", "2@-1", "2@nan", "2@30@1", "1.5",
        ] {
            assert!(OutageSpec::parse(bad, 0).is_err(), "{bad}");
        }
        let s = OutageSpec::parse("2@20", 0).unwrap();
        assert_eq!(s.down_at_s(0), LEAD_S);
        assert_eq!(s.down_at_s(1), LEAD_S + 20.0);
        assert_eq!(s.duration_s(), LEAD_S + 20.0 + DOWN_S + TAIL_S);
    }

    /// SplitMix64's published first outputs for seed 0 (the reference implementation by
    /// Vigna, prng.di.unimi.it/splitmix64.c): 0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4.
    #[test]
    fn splitmix64_known_answers() {
        let mut r = SplitMix64(0);
        assert_eq!(r.next(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn choice_is_seeded() {
        let links: Vec<LinkRef> = (0..8)
            .map(|i| LinkRef {
                a_node: format!("sw{i}"),
                a_if: "x".into(),
                b_node: "y".into(),
                b_if: "z".into(),
            })
            .collect();
        let spec = |seed| OutageSpec::parse("5", seed).unwrap();
        assert_eq!(spec(1).choose(&links), spec(1).choose(&links));
        assert_eq!(spec(1).choose(&links).len(), 5);
        let differ = (2..20).any(|s| spec(s).choose(&links) != spec(1).choose(&links));
        assert!(differ);
        assert!(spec(1).choose(&[]).is_empty());
    }

    /// Exchanges every 100 ms; a link goes down at 1 s, the exchanges from 1.0 to 1.9 s are
    /// lost, the one at 2.0 s succeeds (recovered after 1000 ms); the tree settled at 1.8 s;
    /// the link comes back at 3 s and nothing is lost.
    #[test]
    fn events_from_exchanges() {
        let ms = 1_000_000u64;
        let starts: Vec<u64> = (0..50).map(|i| i * 100 * ms).collect();
        let rtt: Vec<Option<f64>> = starts
            .iter()
            .map(|&s| {
                if (1000 * ms..2000 * ms).contains(&s) {
                    None
                } else if s < 1000 * ms {
                    Some(100_000.0)
                } else {
                    Some(300_000.0)
                }
            })
            .collect();
        let events = [
            Event {
                down: true,
                link: "a".into(),
                at_ns: 1000 * ms,
                settled_ns: Some(1800 * ms),
            },
            Event {
                down: false,
                link: "a".into(),
                at_ns: 3000 * ms,
                settled_ns: Some(3000 * ms),
            },
        ];
        let st = analyse(&starts, &rtt, &events, Measure::Rtt);
        assert_eq!(st.len(), 2);
        assert_eq!((st[0].units, st[0].lost), (20, 10));
        assert_eq!(st[0].recovered_after_ms, Some(1000.0));
        assert_eq!(st[0].tree_settled_after_ms, Some(800.0));
        assert_eq!(st[0].at_s, 1.0);
        // 2.0 s up to 3.0 s (recovered 2.0 + 1 s, capped by the next event): 10 exchanges.
        assert_eq!(st[0].latency_during_us.count, 10);
        assert_eq!(st[0].latency_during_us.median, Some(300.0));
        assert_eq!((st[1].units, st[1].lost), (20, 0));
        assert_eq!(st[1].recovered_after_ms, Some(0.0));
        assert_eq!(st[1].latency_during_us.count, 10);
        let before = rtt_before(&starts, &rtt, 1000 * ms);
        assert_eq!((before.count, before.median), (10, Some(100.0)));
        // Never recovered: no success after the losses.
        let none: Vec<Option<f64>> = starts
            .iter()
            .map(|&s| (s < 1000 * ms).then_some(1.0))
            .collect();
        let st = analyse(&starts, &none, &events[..1], Measure::OneWay);
        assert_eq!(st[0].recovered_after_ms, None);
        assert_eq!(st[0].lost, 40);
    }

    /// The report names units and latencies by what they are; the other keys are the same.
    #[test]
    fn keys_follow_the_measure() {
        let e = EventStats {
            event: "down".into(),
            link: "a".into(),
            at_s: 1.0,
            units: 3,
            lost: 1,
            recovered_after_ms: Some(5.0),
            tree_settled_after_ms: None,
            latency_during_us: RttUs::default(),
            measure: Measure::Rtt,
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["exchanges"], 3);
        assert_eq!(v["rtt_during_us"]["count"], 0);
        assert!(v.get("messages").is_none());
        let v = serde_json::to_value(EventStats {
            measure: Measure::OneWay,
            ..e
        })
        .unwrap();
        assert_eq!(v["messages"], 3);
        assert_eq!(v["lost"], 1);
        assert_eq!(v["recovered_after_ms"], 5.0);
        assert!(v["tree_settled_after_ms"].is_null());
        assert_eq!(v["one_way_during_us"]["count"], 0);
        assert!(v.get("exchanges").is_none() && v.get("rtt_during_us").is_none());
    }
}
