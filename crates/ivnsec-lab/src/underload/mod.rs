//! The sensor-stream experiments of seed 002 §5.2.1: *under load* (messages of one size at a
//! steady rate, a reply to every n-th) and *playback* (the times and sizes of a timeline), with
//! the p99.9 < 2 ms requirement of §5.1.
//!
//! Pure data and arithmetic: timelines (sockperf's playback CSV format), latency summaries, the
//! verdict and the per-profile result. The nodes that send and receive are in [`node`].

use std::collections::BTreeMap;
use std::fmt;

pub mod node;
pub mod outage;
pub mod plan;
pub mod playback;
pub mod report;
pub mod run;

use ivnsec_core::profile::{NamedProfile, Profile};
use serde::{Deserialize, Serialize};

use crate::stats::quantile_sorted;
use crate::throughput::CpuResult;

/// The sensor-data requirement of seed 002 §5.1: 99.9 % of messages within 2 ms.
pub const REQUIREMENT_US: f64 = 2000.0;
/// Smallest message: the sequence number and the send time (8 bytes each).
pub const MIN_MESSAGE: usize = 16;
/// Largest message (the reassembler's default bound; a 425 kB camera frame fits).
pub const MAX_MESSAGE: usize = 1 << 20;
/// sockperf's bounds on a playback size (`PlaybackItem::isValid`: 14 ..= 64000).
pub const SOCKPERF_MIN_SIZE: usize = 14;
pub const SOCKPERF_MAX_SIZE: usize = 64_000;

/// One message of a timeline: when to send it (ns after the start) and how large it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    pub at_ns: u64,
    pub size: usize,
}

/// A bad timeline file: the line (1-based; 0 for the file as a whole) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TimelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for TimelineError {}

/// Most entries one timeline may have (10 hours at 1000 messages/s).
pub const MAX_ENTRIES: usize = 36_000_000;

/// Parses sockperf's playback file (`sockperf playback --data-file`, its `playback.cpp`): one
/// message per line as `<time in seconds>, <size in bytes>`; empty lines and lines starting
/// with `#` are skipped. Times are seconds from the start of the run and must increase strictly
/// from line to line (sockperf rejects a zero gap), the first above 0; sizes are sockperf's
/// 14..=64000 bytes. Whitespace around the two fields is allowed (sockperf's `sscanf("%lf, %d")`
/// is stricter about the comma: write `time, size`).
pub fn parse_sockperf_csv(text: &str) -> Result<Vec<TimelineEntry>, TimelineError> {
    let mut out = Vec::new();
    let mut prev: Option<f64> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let err = |m: String| TimelineError { line, message: m };
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((t, s)) = l.split_once(',') else {
            return Err(err(format!(
                "expected `<seconds>, <bytes>` (sockperf playback format), got {l:?}"
            )));
        };
        let t: f64 = t
            .trim()
            .parse()
            .map_err(|_| err(format!("time {:?} is not a number of seconds", t.trim())))?;
        let size: usize = s.trim().parse().map_err(|_| {
            err(format!(
                "size {:?} is not a whole number of bytes",
                s.trim()
            ))
        })?;
        if !t.is_finite() || t <= 0.0 || t > 1e9 {
            return Err(err(format!(
                "time {t} must be above 0 (seconds from the start; sockperf needs a positive first gap)"
            )));
        }
        if let Some(p) = prev {
            if t <= p {
                return Err(err(format!(
                    "time {t} is not after the previous line's {p} (times must increase, as sockperf requires)"
                )));
            }
        }
        if !(SOCKPERF_MIN_SIZE..=SOCKPERF_MAX_SIZE).contains(&size) {
            return Err(err(format!(
                "size {size} is outside sockperf's {SOCKPERF_MIN_SIZE}..={SOCKPERF_MAX_SIZE} bytes"
            )));
        }
        if out.len() == MAX_ENTRIES {
            return Err(err(format!("more than {MAX_ENTRIES} messages")));
        }
        prev = Some(t);
        out.push(TimelineEntry {
            at_ns: (t * 1e9).round() as u64,
            size,
        });
    }
    if out.is_empty() {
        return Err(TimelineError {
            line: 0,
            message: "the timeline has no messages (lines `<seconds>, <bytes>`)".into(),
        });
    }
    Ok(out)
}

/// Writes a timeline in sockperf's playback format (nanosecond precision), with `comment` as
/// `#` lines on top. Times that do not increase strictly are moved 1 ns after the previous one
/// and a first time of 0 becomes 1 ns (sockperf refuses zero gaps); sizes are clamped to
/// sockperf's 14..=64000. Returns the text and how many entries had to be changed.
pub fn to_sockperf_csv(entries: &[TimelineEntry], comment: &str) -> (String, usize) {
    let mut s = String::with_capacity(entries.len() * 22 + comment.len() + 8);
    for c in comment.lines() {
        s.push_str("# ");
        s.push_str(c);
        s.push('\n');
    }
    let mut prev = 0u64;
    let mut changed = 0;
    for e in entries {
        let at = e.at_ns.max(prev + 1);
        let size = e.size.clamp(SOCKPERF_MIN_SIZE, SOCKPERF_MAX_SIZE);
        if at != e.at_ns || size != e.size {
            changed += 1;
        }
        prev = at;
        s.push_str(&format!(
            "{}.{:09}, {size}\n",
            at / 1_000_000_000,
            at % 1_000_000_000
        ));
    }
    (s, changed)
}

/// Latency figures of a set of samples, in µs (type 7 quantiles, see [`crate::stats`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: usize,
    pub min_us: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl LatencyStats {
    /// From samples in ns; `None` when there are none.
    pub fn of_ns(samples_ns: &[u64]) -> Option<LatencyStats> {
        if samples_ns.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = samples_ns.iter().map(|&x| x as f64 / 1000.0).collect();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| quantile_sorted(&v, p);
        Some(LatencyStats {
            count: v.len(),
            min_us: v[0],
            mean_us: v.iter().sum::<f64>() / v.len() as f64,
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: v[v.len() - 1],
        })
    }
}

/// The seed 002 requirement applied to one run: at least 99.9 % of the messages *sent* arrived
/// within the requirement. Lost messages count as late, so a run cannot pass by losing its slow
/// messages; this is "p99.9 < requirement" over all messages sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub requirement_us: f64,
    /// p99.9 of the one-way delay of the messages delivered.
    pub p999_us: Option<f64>,
    /// Delivered at or above the requirement.
    pub late: u64,
    pub lost: u64,
    /// Late + lost allowed: ⌊0.1 % of the messages sent⌋.
    pub allowed: u64,
    pub passed: bool,
}

impl Verdict {
    pub fn of(one_way_ns: &[u64], sent: u64, requirement_us: f64) -> Verdict {
        let req_ns = requirement_us * 1000.0;
        let late = one_way_ns.iter().filter(|&&x| x as f64 >= req_ns).count() as u64;
        let lost = sent.saturating_sub(one_way_ns.len() as u64);
        let allowed = sent / 1000;
        Verdict {
            requirement_us,
            p999_us: LatencyStats::of_ns(one_way_ns).map(|s| s.p999_us),
            late,
            lost,
            allowed,
            passed: sent > 0 && late + lost <= allowed,
        }
    }
}

/// Message counters of one run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageCounts {
    pub sent: u64,
    /// Delivered whole (every fragment verified and reassembled).
    pub received: u64,
    /// sent − received.
    pub lost: u64,
    /// lost / sent.
    pub loss: f64,
    /// Received twice (never expected: every fragment passes a replay check).
    pub duplicates: u64,
    /// Received after a message with a higher sequence number.
    pub out_of_order: u64,
}

/// Replies (every `reply_every`-th message is sent back, as sockperf's server does) and their
/// round trips.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Replies {
    pub every: u64,
    /// Replies the consumer sent.
    pub sent: u64,
    /// Replies the sensor received and verified.
    pub received: u64,
    /// Replied messages' round trip: sensor send → consumer → back at the sensor.
    pub rtt: Option<LatencyStats>,
    /// Half of each round trip: what sockperf reports as latency.
    pub half_rtt: Option<LatencyStats>,
    /// Reply units the sensor rejected, by reason.
    pub rejected: BTreeMap<String, u64>,
}

/// One profile's run (`ivnsec underload --json`: one entry of `runs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileRun {
    /// The profile, with the name it was given (summary.json: that name).
    pub profile: NamedProfile,
    /// Largest fragment (fragment header + data) one protected unit carries.
    pub unit_payload: usize,
    /// Protected units on the link per message (the most, for a timeline).
    pub units_per_message: usize,
    /// Protected units the sensor sent (all messages).
    pub units_sent: u64,
    /// Units that reached the consumer's socket (verified or not).
    pub units_received: u64,
    /// Message bytes sent (fragment headers and protection not counted).
    pub bytes_sent: u64,
    /// From the first send to the last, in s.
    pub seconds: f64,
    /// Messages per second achieved (sent / seconds).
    pub rate_mps: f64,
    /// How late the sensor sent its latest message after its scheduled time, in µs (the send
    /// time in the message is when it was really sent, so lateness never shows in the latency).
    pub max_send_late_us: f64,
    pub messages: MessageCounts,
    /// One-way delay of every message delivered: send time in the message (CLOCK_MONOTONIC,
    /// taken just before the first fragment is protected) to the moment its last fragment
    /// verified and completed it at the consumer. The namespaces share the clock.
    pub one_way: Option<LatencyStats>,
    pub replies: Replies,
    /// Units the consumer rejected, by reason (verify and reassembly, docs/fragmentation.md).
    pub rejected: BTreeMap<String, u64>,
    pub verdict: Verdict,
    /// CPU: sender = the sensor process, receiver = the consumer process (which also sends the
    /// replies); ns per byte are per message byte sent / delivered.
    pub cpu: CpuResult,
}

impl Default for Verdict {
    fn default() -> Self {
        Verdict::of(&[], 0, REQUIREMENT_US)
    }
}

/// A `plain` run that measured nothing: what a result is built on before its figures are
/// filled in.
impl Default for ProfileRun {
    fn default() -> Self {
        ProfileRun {
            profile: NamedProfile::from(Profile::PLAIN),
            unit_payload: 0,
            units_per_message: 0,
            units_sent: 0,
            units_received: 0,
            bytes_sent: 0,
            seconds: 0.0,
            rate_mps: 0.0,
            max_send_late_us: 0.0,
            messages: MessageCounts::default(),
            one_way: None,
            replies: Replies::default(),
            rejected: BTreeMap::new(),
            verdict: Verdict::default(),
            cpu: CpuResult::default(),
        }
    }
}

impl ProfileRun {
    /// Fills the derived counters and the verdict from the raw figures.
    pub fn derive(&mut self, one_way_ns: &[u64], rtt_ns: &[u64], requirement_us: f64) {
        let m = &mut self.messages;
        m.received = one_way_ns.len() as u64;
        m.lost = m.sent.saturating_sub(m.received);
        m.loss = if m.sent == 0 {
            0.0
        } else {
            m.lost as f64 / m.sent as f64
        };
        self.rate_mps = if self.seconds > 0.0 {
            m.sent as f64 / self.seconds
        } else {
            0.0
        };
        self.one_way = LatencyStats::of_ns(one_way_ns);
        self.replies.received = rtt_ns.len() as u64;
        self.replies.rtt = LatencyStats::of_ns(rtt_ns);
        let half: Vec<u64> = rtt_ns.iter().map(|&x| x / 2).collect();
        self.replies.half_rtt = LatencyStats::of_ns(&half);
        self.verdict = Verdict::of(one_way_ns, self.messages.sent, requirement_us);
    }
}

/// What under-load and playback runs report (`--json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnderloadReport {
    /// `underload` or `playback`.
    pub experiment: String,
    /// The path the messages took.
    pub transport: String,
    /// The settings of the run (the config, and for playback the timeline's figures).
    pub settings: serde_json::Value,
    /// One entry per profile, in the order run (`plain` first when it was added).
    pub runs: Vec<ProfileRun>,
    /// Same-run references: `sockperf` (its output, parsed) when it ran.
    pub baseline: serde_json::Map<String, serde_json::Value>,
    /// Every run's verdict passed.
    pub passed: bool,
    /// The bump-in-the-wire topology (`bump2`) when the messages went through gateways the run
    /// started; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateways: Option<String>,
    /// Across hosts: each host's PTP state watched during the run (docs/multihost.md);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_during_run: Option<serde_json::Value>,
    /// Across hosts: set when a host was not PTP-synchronised during the run (the one-way
    /// delays carry the clocks' offset); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_flag: Option<String>,
}

impl UnderloadReport {
    /// Whether every profile met the requirement.
    pub fn passed(&self) -> bool {
        !self.runs.is_empty() && self.runs.iter().all(|r| r.verdict.passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockperf_playback_format() {
        // The header and records of sockperf's gen1.awk (its man page, §3.4).
        let text = "# ==== playback file for sockperf - generated by gen1.awk ====\n\
#baseTime=1.000000; PPS=200000; runtime=1.000000; interval=0.000005; NUM_RECORDS=200000\n\
# file contains 200000 records\n\
1.000005000, 12\n1.000010000, 24938\n\n1.5,64000\r\n\
#200000 records were written successfully\n";
        // gen1.awk's 12-byte messages are below sockperf's own minimum of 14.
        let e = parse_sockperf_csv(text).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.message.contains("14..=64000"), "{e}");
        let ok = text.replace(", 12\n", ", 14\n");
        let t = parse_sockperf_csv(&ok).unwrap();
        assert_eq!(
            t,
            vec![
                TimelineEntry {
                    at_ns: 1_000_005_000,
                    size: 14
                },
                TimelineEntry {
                    at_ns: 1_000_010_000,
                    size: 24_938
                },
                TimelineEntry {
                    at_ns: 1_500_000_000,
                    size: 64_000
                },
            ]
        );
    }

    #[test]
    fn bad_timelines_name_the_line() {
        for (text, line, what) in [
            ("0.1, 100\n0.1, 100\n", 2, "not after"),
            ("0.2, 100\n0.1, 100\n", 2, "not after"),
            ("# c\n0, 100\n", 2, "above 0"),
            ("0.1 100\n", 1, "expected"),
            ("0.1, abc\n", 1, "whole number"),
            ("x, 100\n", 1, "number of seconds"),
            ("0.1, -5\n", 1, "whole number"),
            ("0.1, 100\n\n0.2, 64001\n", 3, "outside"),
            ("nan, 100\n", 1, "above 0"),
        ] {
            let e = parse_sockperf_csv(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("line {line}: ")));
        }
        let e = parse_sockperf_csv("# only comments\n\n").unwrap_err();
        assert_eq!(e.line, 0);
    }

    #[test]
    fn csv_round_trip_and_sockperf_fixes() {
        let t = vec![
            TimelineEntry { at_ns: 0, size: 10 },
            TimelineEntry {
                at_ns: 1_052_631,
                size: 24_938,
            },
            TimelineEntry {
                at_ns: 1_052_631,
                size: 70_000,
            },
        ];
        let (text, changed) = to_sockperf_csv(&t, "from capture.pcap\nsecond line");
        assert_eq!(changed, 2);
        assert!(text.starts_with("# from capture.pcap\n# second line\n"));
        let back = parse_sockperf_csv(&text).unwrap();
        assert_eq!(back[0], TimelineEntry { at_ns: 1, size: 14 });
        assert_eq!(back[1], t[1]);
        assert_eq!(
            back[2],
            TimelineEntry {
                at_ns: 1_052_632,
                size: 64_000
            }
        );
        assert!(text.contains("0.001052631, 24938\n"));
    }

    #[test]
    fn latency_and_verdict() {
        // 1000 messages sent: 998 delivered, one of them late; 2 lost: 3 > 1 allowed.
        let mut ow: Vec<u64> = (1..=997).map(|i| 500_000 + i * 1000).collect();
        ow.push(2_500_000);
        let v = Verdict::of(&ow, 1000, REQUIREMENT_US);
        assert_eq!((v.late, v.lost, v.allowed), (1, 2, 1));
        assert!(!v.passed);
        // Nothing lost, one late of 1000: within the 0.1 %; of 999, not (⌊0.999⌋ = 0).
        ow.extend([600_000, 700_000]);
        assert!(Verdict::of(&ow, 1000, REQUIREMENT_US).passed);
        assert!(!Verdict::of(&ow[..999], 999, REQUIREMENT_US).passed);
        // A message exactly at the requirement is late (the requirement is "< 2 ms").
        assert_eq!(Verdict::of(&[2_000_000], 1, REQUIREMENT_US).late, 1);
        assert!(!Verdict::of(&[], 0, REQUIREMENT_US).passed);
        // Quantiles: type 7 over µs.
        let s = LatencyStats::of_ns(&[4000, 1000, 3000, 2000]).unwrap();
        assert_eq!((s.count, s.min_us, s.max_us, s.mean_us), (4, 1.0, 4.0, 2.5));
        assert_eq!(s.p50_us, 2.5);
        assert!((s.p90_us - 3.7).abs() < 1e-12);
        assert!(LatencyStats::of_ns(&[]).is_none());
    }

    #[test]
    fn derived_run() {
        let mut r = ProfileRun {
            profile: "plain".parse().unwrap(),
            seconds: 2.0,
            messages: MessageCounts {
                sent: 1900,
                ..Default::default()
            },
            ..Default::default()
        };
        let ow: Vec<u64> = (0..1899).map(|i| 400_000 + i).collect();
        r.derive(&ow, &[800_000, 1_000_000], REQUIREMENT_US);
        assert_eq!(r.messages.received, 1899);
        assert_eq!(r.messages.lost, 1);
        assert_eq!(r.rate_mps, 950.0);
        assert_eq!(r.replies.received, 2);
        assert_eq!(r.replies.half_rtt.as_ref().unwrap().max_us, 500.0);
        assert!(r.verdict.passed);
        let v = serde_json::to_value(&r).unwrap();
        for k in [
            "messages", "one_way", "replies", "verdict", "cpu", "rejected",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
    }
}
