//! The ADAS camera experiment of seed 003 §F: N cameras, each sending one compressed video frame
//! (42.5 KiB, 21 Mb/s) every 1/60 s over secured SOME/IP to one consumer, which measures the tx→rx delay
//! of every whole frame against a 16 ms deadline (one frame period).
//!
//! Pure arithmetic and data: the frame schedule (absolute, so it never drifts), the time stamps
//! a frame carries, delay statistics and the result types. The nodes that send and receive are in
//! [`node`], the orchestration that starts them and joins their reports in [`run`]; nothing else
//! here reads a clock.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub mod node;
pub mod plan;
pub mod report;
pub mod run;

use crate::stats::quantile_sorted;
use crate::throughput::CpuIncrease;

/// Seed 003 §F: frames per second of each camera.
pub const DEFAULT_FPS: u32 = 60;
/// Bytes of one compressed video frame: 42.5 KiB. The extracted text of seed 003 §F prints
/// "425 kB", but its own figures fix the size at 42.5 KiB: "21 Mbps per camera" at 60 fps is
/// 43.75 kB per frame (42.5 KiB: 42.5 × 1024 × 8 × 60 = 20.9 Mb/s), "ranging from 42 Mbps to 336 Mbps"
/// for 2 to 16 cameras is 21 Mb/s each, and 16 cameras of 425,000-byte frames (3.3 Gb/s) could
/// not cross the 1 Gb/s link the paper used. The decimal point was lost in the extraction.
pub const DEFAULT_FRAME_BYTES: usize = 43_520;
/// Seed 003 §F: the delay bound, "the reception of a frame before the generation of the
/// subsequent" (one period at 60 fps, rounded).
pub const DEFAULT_DEADLINE_MS: f64 = 16.0;
/// Seed 003 Fig. 7: the camera counts it simulates.
pub const SEED_CAMERAS: [usize; 5] = [2, 4, 8, 12, 16];

/// Where each camera's schedule starts within the first frame period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Camera `i` of `n` starts `i/n` of a period after camera 0: free-running cameras, whose
    /// frames do not all leave at the same instant.
    #[default]
    Spread,
    /// Every camera sends at the same instants: the worst burst (N frames at once).
    Aligned,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Spread => "spread",
            Phase::Aligned => "aligned",
        }
    }
}

/// The absolute send schedule of one camera: frame `k` is due at
/// `start + offset + ⌊k × 10⁹ / fps⌋` ns. Computed from `k` every time (integer arithmetic), so
/// a late frame never shifts the ones after it and rounding never accumulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    start_ns: u64,
    offset_ns: u64,
    fps: u32,
}

impl Schedule {
    /// Camera `index` of `cameras`, starting at `start_ns` (CLOCK_MONOTONIC).
    pub fn new(start_ns: u64, index: usize, cameras: usize, fps: u32, phase: Phase) -> Schedule {
        let fps = fps.max(1);
        let offset_ns = match phase {
            Phase::Aligned => 0,
            Phase::Spread => {
                let period = 1_000_000_000u128 / u128::from(fps);
                (period * index as u128 / cameras.max(1) as u128) as u64
            }
        };
        Schedule {
            start_ns,
            offset_ns,
            fps,
        }
    }

    /// When frame `k` (0-based) is due.
    pub fn due_ns(&self, k: u64) -> u64 {
        let t = u128::from(k) * 1_000_000_000 / u128::from(self.fps);
        self.start_ns + self.offset_ns + t as u64
    }

    pub fn offset_ns(&self) -> u64 {
        self.offset_ns
    }
}

/// Frames each camera sends in a run of `seconds` at `fps` (at least one).
pub fn frames_per_camera(seconds: f64, fps: u32) -> u64 {
    ((seconds * f64::from(fps)).round() as u64).max(1)
}

/// The time stamps at the front of every frame body (big-endian):
/// `sequence (8) ‖ sent (8) ‖ due (8)`, the rest of the body is image data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameStamp {
    /// Frame number of this camera, from 0.
    pub seq: u64,
    /// CLOCK_MONOTONIC ns when the camera ECU took the frame and started protecting it (the tx
    /// time of 003's tx→rx delay).
    pub sent_ns: u64,
    /// When the schedule wanted it sent.
    pub due_ns: u64,
}

impl FrameStamp {
    pub const LEN: usize = 24;

    /// Writes the stamp at the front of `body` (which must hold [`Self::LEN`] bytes).
    pub fn write(&self, body: &mut [u8]) -> Option<()> {
        let b = body.get_mut(..Self::LEN)?;
        b[..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8..16].copy_from_slice(&self.sent_ns.to_be_bytes());
        b[16..24].copy_from_slice(&self.due_ns.to_be_bytes());
        Some(())
    }

    /// Reads the stamp from the front of `body`; `None` when it is too short.
    pub fn read(body: &[u8]) -> Option<FrameStamp> {
        let b = body.get(..Self::LEN)?;
        let u = |r: std::ops::Range<usize>| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[r]);
            u64::from_be_bytes(a)
        };
        Some(FrameStamp {
            seq: u(0..8),
            sent_ns: u(8..16),
            due_ns: u(16..24),
        })
    }
}

/// What the consumer measured for one camera's frames.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraLog {
    /// Whole frames received, verified, with the expected length and a new sequence number.
    pub received: u64,
    /// tx→rx delay of each received frame (ns): receive-and-verify done − `sent`.
    pub delay_ns: Vec<u64>,
    /// Lateness of the sender per received frame (ns): `sent` − `due` (0 when on time).
    pub lag_ns: Vec<u64>,
    /// The latest receive time (CLOCK_MONOTONIC ns); 0 when nothing arrived.
    pub last_rx_ns: u64,
    /// Messages rejected, by reason (verify drops, framing, TP, unexpected frames).
    pub drops: BTreeMap<String, u64>,
}

impl CameraLog {
    /// Records a frame received whole and verified at `rx_ns`.
    pub fn record(&mut self, stamp: &FrameStamp, rx_ns: u64) {
        self.received += 1;
        self.delay_ns.push(rx_ns.saturating_sub(stamp.sent_ns));
        self.lag_ns.push(stamp.sent_ns.saturating_sub(stamp.due_ns));
        self.last_rx_ns = self.last_rx_ns.max(rx_ns);
    }

    pub fn drop_one(&mut self, reason: &str) {
        *self.drops.entry(reason.to_string()).or_default() += 1;
    }
}

/// Delay percentiles in µs (type 7 interpolation, as `stats`), the points of 003 Fig. 7's box
/// plot: p1 and p99 whiskers, quartiles, and the maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayStats {
    pub count: usize,
    pub min: f64,
    pub p1: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl DelayStats {
    /// From samples in ns; `None` for no samples.
    pub fn of_ns(samples: &[u64]) -> Option<DelayStats> {
        if samples.is_empty() {
            return None;
        }
        let mut s: Vec<f64> = samples.iter().map(|&v| v as f64 / 1e3).collect();
        s.sort_by(f64::total_cmp);
        let q = |p: f64| quantile_sorted(&s, p);
        Some(DelayStats {
            count: s.len(),
            min: s[0],
            p1: q(0.01),
            p25: q(0.25),
            p50: q(0.50),
            p75: q(0.75),
            p99: q(0.99),
            max: s[s.len() - 1],
            mean: s.iter().sum::<f64>() / s.len() as f64,
        })
    }
}

/// Samples above `limit_ns`.
pub fn count_above(samples: &[u64], limit_ns: u64) -> u64 {
    samples.iter().filter(|&&v| v > limit_ns).count() as u64
}

/// CPU of one camera run, % of the whole machine (all cores = 100 %), as [`crate::cpu`] measures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraCpu {
    /// The camera ECU's process (every camera thread), user + system.
    pub sender_pct: f64,
    /// The consumer's process (every receive thread).
    pub receiver_pct: f64,
    /// The whole machine (/proc/stat each second).
    pub system_pct: f64,
    pub cores: usize,
    /// Camera ECU CPU ns per frame byte sent (protect + send).
    pub sender_ns_per_byte: Option<f64>,
    /// Consumer CPU ns per frame byte received (receive + verify).
    pub receiver_ns_per_byte: Option<f64>,
    /// The machine's busy % in each second of the run.
    pub system_per_second_pct: Vec<f64>,
    /// This run minus the `nosec` run with the same camera count in the same invocation
    /// (percentage points of the machine); `None` for `nosec` or without such a run.
    pub increase_over_nosec: Option<CpuIncrease>,
}

impl CameraCpu {
    pub fn increase_over(&self, nosec: &CameraCpu) -> CpuIncrease {
        let system = self.system_pct - nosec.system_pct;
        CpuIncrease {
            sender_pct: self.sender_pct - nosec.sender_pct,
            receiver_pct: self.receiver_pct - nosec.receiver_pct,
            system_pct: system,
            within_5pct: system < 5.0,
            consumer_within_5pct: self.receiver_pct - nosec.receiver_pct < 5.0,
        }
    }
}

/// One camera's figures within a run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerCamera {
    pub camera: usize,
    /// SOME/IP service ID of its stream.
    pub service: u16,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub past_deadline: u64,
    pub delay_us: Option<DelayStats>,
}

/// The figures of one camera count and level that reports set beside seed 003 §F (the camera
/// table of `report::seeds::seed003`); [`CameraResult::figures`] gives them for a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CameraFigures {
    pub median_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Frames later than the run's deadline (`deadline_ms`), or lost.
    pub deadline_misses: Option<u64>,
    pub frames: Option<u64>,
    pub cpu_pct: Option<f64>,
}

/// The result of one run: N cameras at one level over one transport (`results[i]` of
/// `ivnsec camera --json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraResult {
    pub cameras: usize,
    /// `nosec`, `auth` or `conf`.
    pub level: String,
    /// The AEAD suite; `None` under `nosec`.
    pub suite: Option<String>,
    /// `tcp` or `udp-tp`.
    pub transport: String,
    pub fps: u32,
    pub frame_bytes: usize,
    /// Bytes of one frame's SOME/IP message (header + security fields + frame + tag).
    pub message_bytes: usize,
    pub phase: Phase,
    pub deadline_ms: f64,
    /// Frames every camera together sent (cameras × frames per camera).
    pub frames_sent: u64,
    /// Whole frames the consumer received and verified.
    pub frames_received: u64,
    /// frames_sent − frames_received.
    pub lost: u64,
    /// tx→rx delay of the received frames, µs.
    pub delay_us: Option<DelayStats>,
    /// Frames whose tx→rx delay exceeded the deadline.
    pub past_deadline: u64,
    /// How late the camera ECU started protecting a frame after its due time, µs (a sender that
    /// cannot keep up shows here, not in the tx→rx delay).
    pub lag_us: Option<DelayStats>,
    /// Frames that reached the consumer more than a deadline after they were due (lag + delay).
    pub past_deadline_from_due: u64,
    /// Frame bits received per second (10⁶ bit/s), from the first due time to the last frame
    /// received.
    pub goodput_mbps: f64,
    /// What the cameras offer: cameras × fps × frame bits.
    pub offered_mbps: f64,
    /// From the first due time to the last frame received, s.
    pub seconds: f64,
    pub cpu: CameraCpu,
    /// Messages the consumer rejected, by reason.
    pub drops: BTreeMap<String, u64>,
    pub per_camera: Vec<PerCamera>,
    /// No loss, no frame past the deadline (tx→rx or from its due time).
    pub passed: bool,
}

impl CameraResult {
    /// This run's figures for the seed 003 camera table of reports
    /// (`report::seeds::seed003::camera_table`): median and p99 tx→rx delay in ms, deadline
    /// misses (late or lost frames), frames sent, and the CPU of the two ECU processes.
    pub fn figures(&self) -> CameraFigures {
        CameraFigures {
            median_ms: self.delay_us.map(|d| d.p50 / 1e3),
            p99_ms: self.delay_us.map(|d| d.p99 / 1e3),
            deadline_misses: Some(self.past_deadline + self.lost),
            frames: Some(self.frames_sent),
            cpu_pct: Some(self.cpu.sender_pct + self.cpu.receiver_pct),
        }
    }

    /// Fills the totals, statistics and verdict from per-camera logs (`sent[i]` frames sent by
    /// camera `i`, `logs[i]` what the consumer measured of it) and the run's first due time.
    pub fn fill(&mut self, sent: &[u64], logs: &[CameraLog], services: &[u16], start_ns: u64) {
        let limit = (self.deadline_ms * 1e6).round() as u64;
        let all_delay: Vec<u64> = logs
            .iter()
            .flat_map(|l| l.delay_ns.iter().copied())
            .collect();
        let all_lag: Vec<u64> = logs.iter().flat_map(|l| l.lag_ns.iter().copied()).collect();
        let from_due: Vec<u64> = logs
            .iter()
            .flat_map(|l| l.delay_ns.iter().zip(&l.lag_ns).map(|(d, g)| d + g))
            .collect();
        self.frames_sent = sent.iter().sum();
        self.frames_received = logs.iter().map(|l| l.received).sum();
        self.lost = self.frames_sent.saturating_sub(self.frames_received);
        self.delay_us = DelayStats::of_ns(&all_delay);
        self.past_deadline = count_above(&all_delay, limit);
        self.lag_us = DelayStats::of_ns(&all_lag);
        self.past_deadline_from_due = count_above(&from_due, limit);
        let last = logs.iter().map(|l| l.last_rx_ns).max().unwrap_or(0);
        let window = last.saturating_sub(start_ns);
        self.seconds = window as f64 / 1e9;
        self.goodput_mbps = if window > 0 {
            (self.frames_received * self.frame_bytes as u64) as f64 * 8.0 / self.seconds / 1e6
        } else {
            0.0
        };
        self.offered_mbps =
            self.cameras as f64 * f64::from(self.fps) * self.frame_bytes as f64 * 8.0 / 1e6;
        self.drops.clear();
        for l in logs {
            for (r, n) in &l.drops {
                *self.drops.entry(r.clone()).or_default() += n;
            }
        }
        self.per_camera = logs
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let s = sent.get(i).copied().unwrap_or(0);
                PerCamera {
                    camera: i + 1,
                    service: services.get(i).copied().unwrap_or(0),
                    sent: s,
                    received: l.received,
                    lost: s.saturating_sub(l.received),
                    past_deadline: count_above(&l.delay_ns, limit),
                    delay_us: DelayStats::of_ns(&l.delay_ns),
                }
            })
            .collect();
        self.passed = self.lost == 0
            && self.frames_sent > 0
            && self.past_deadline == 0
            && self.past_deadline_from_due == 0;
    }
}

/// Everything `ivnsec camera` measured (`--json`), and what `run_camera` returns to plans.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CameraReport {
    /// One entry per (camera count, level), camera counts in the order given, `nosec` first.
    pub results: Vec<CameraResult>,
    /// The path the frames took (testbed and nodes, or loopback).
    pub site: String,
    /// How the delay is measured.
    pub clock: String,
    /// Across hosts: each host's PTP state watched during the run (docs/multihost.md);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_during_run: Option<serde_json::Value>,
    /// Across hosts: set when a host was not PTP-synchronised during the run (the delays
    /// carry the clocks' offset); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_flag: Option<String>,
}

impl CameraReport {
    /// Every run passed: no frame lost, none past the deadline.
    pub fn passed(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(|r| r.passed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_absolute_and_does_not_drift() {
        let s = Schedule::new(1_000, 0, 1, 60, Phase::Spread);
        assert_eq!(s.due_ns(0), 1_000);
        // 60 fps: 16 666 666.67 ns per frame; frame 3 at exactly 50 ms.
        assert_eq!(s.due_ns(3), 1_000 + 50_000_000);
        assert_eq!(s.due_ns(1), 1_000 + 16_666_666);
        // After an hour the schedule is exact to the nanosecond (216 000 frames = 3600 s).
        assert_eq!(s.due_ns(216_000), 1_000 + 3_600_000_000_000);
        // Steps are 16 666 666 or 16 666 667 ns, never accumulating an error.
        for k in 0..1000 {
            let d = s.due_ns(k + 1) - s.due_ns(k);
            assert!(d == 16_666_666 || d == 16_666_667, "step {k}: {d}");
        }
    }

    #[test]
    fn phases_spread_cameras_over_one_period() {
        let period = 1_000_000_000u64 / 60;
        let offs: Vec<u64> = (0..4)
            .map(|i| Schedule::new(0, i, 4, 60, Phase::Spread).offset_ns())
            .collect();
        assert_eq!(offs, vec![0, period / 4, period / 2, period * 3 / 4]);
        assert!(offs.iter().all(|&o| o < period));
        for i in 0..4 {
            assert_eq!(Schedule::new(0, i, 4, 60, Phase::Aligned).offset_ns(), 0);
        }
    }

    #[test]
    fn frame_counts() {
        assert_eq!(frames_per_camera(5.0, 60), 300);
        assert_eq!(frames_per_camera(0.001, 60), 1);
        assert_eq!(frames_per_camera(2.5, 30), 75);
    }

    #[test]
    fn stamp_round_trip_and_short_bodies() {
        let st = FrameStamp {
            seq: 7,
            sent_ns: 123_456_789,
            due_ns: 123_000_000,
        };
        let mut body = vec![0xAAu8; 100];
        st.write(&mut body).unwrap();
        assert_eq!(&body[..8], &7u64.to_be_bytes());
        assert_eq!(body[24], 0xAA);
        assert_eq!(FrameStamp::read(&body), Some(st));
        assert_eq!(FrameStamp::read(&body[..23]), None);
        assert!(st.write(&mut [0u8; 10]).is_none());
    }

    /// Quartiles of 1..=101 µs by hand (type 7: position (n − 1) q).
    #[test]
    fn delay_percentiles() {
        let ns: Vec<u64> = (1..=101).rev().map(|v| v * 1000).collect();
        let d = DelayStats::of_ns(&ns).unwrap();
        assert_eq!(d.count, 101);
        assert_eq!(
            (d.min, d.p1, d.p25, d.p50, d.p75, d.p99, d.max),
            (1.0, 2.0, 26.0, 51.0, 76.0, 100.0, 101.0)
        );
        assert!((d.mean - 51.0).abs() < 1e-9);
        assert!(DelayStats::of_ns(&[]).is_none());
    }

    fn log(delays_ms: &[u64], lags_ms: &[u64], last: u64) -> CameraLog {
        let mut l = CameraLog::default();
        for (i, (&d, &g)) in delays_ms.iter().zip(lags_ms).enumerate() {
            let due = 1_000_000_000 + i as u64 * 16_666_667;
            let st = FrameStamp {
                seq: i as u64,
                sent_ns: due + g * 1_000_000,
                due_ns: due,
            };
            l.record(&st, st.sent_ns + d * 1_000_000);
        }
        l.last_rx_ns = last;
        l
    }

    #[test]
    fn result_accounting() {
        let mut r = CameraResult {
            cameras: 2,
            fps: 60,
            frame_bytes: 425_000,
            deadline_ms: 16.0,
            ..CameraResult::default()
        };
        // Camera 1: 3 frames sent, 3 received, one at 17 ms (past 16). Camera 2: 3 sent, 2
        // received; one frame sent 10 ms late and received 7 ms later: on time tx→rx, but 17 ms
        // after its due time.
        let mut a = log(&[2, 17, 3], &[0, 0, 0], 3_000_000_000);
        a.drop_one("bad_tag");
        let b = log(&[4, 7], &[0, 10], 2_000_000_000);
        r.fill(&[3, 3], &[a, b], &[0x4301, 0x4302], 1_000_000_000);
        assert_eq!((r.frames_sent, r.frames_received, r.lost), (6, 5, 1));
        assert_eq!(r.frames_received + r.lost, r.frames_sent);
        assert_eq!(r.past_deadline, 1);
        assert_eq!(r.past_deadline_from_due, 2);
        assert_eq!(r.drops.get("bad_tag"), Some(&1));
        assert_eq!(r.per_camera[1].lost, 1);
        assert_eq!(r.per_camera[0].past_deadline, 1);
        assert_eq!(r.per_camera[1].service, 0x4302);
        let d = r.delay_us.unwrap();
        assert_eq!((d.min, d.p50, d.max), (2000.0, 4000.0, 17000.0));
        assert!(d.p1 <= d.p25 && d.p25 <= d.p50 && d.p50 <= d.p75 && d.p75 <= d.p99);
        // 5 frames of 425 000 bytes over 2 s.
        assert!((r.seconds - 2.0).abs() < 1e-12);
        assert!((r.goodput_mbps - 5.0 * 425_000.0 * 8.0 / 2.0 / 1e6).abs() < 1e-9);
        // 2 × 60 × 3.4 Mb = 408 Mb/s.
        assert!((r.offered_mbps - 408.0).abs() < 1e-9);
        assert!(!r.passed);
        let f = r.figures();
        assert_eq!((f.median_ms, f.p99_ms), (Some(4.0), Some(d.p99 / 1e3)));
        assert_eq!((f.deadline_misses, f.frames), (Some(2), Some(6)));
        let report = CameraReport {
            results: vec![r],
            ..CameraReport::default()
        };
        assert!(!report.passed());

        let mut ok = CameraResult {
            cameras: 1,
            fps: 60,
            frame_bytes: 1000,
            deadline_ms: 16.0,
            ..CameraResult::default()
        };
        ok.fill(
            &[2],
            &[log(&[1, 2], &[0, 0], 1_100_000_000)],
            &[1],
            1_000_000_000,
        );
        assert!(ok.passed);
        assert!(
            CameraReport {
                results: vec![ok],
                ..CameraReport::default()
            }
            .passed()
        );
        assert!(!CameraReport::default().passed());
    }

    #[test]
    fn cpu_increase() {
        let nosec = CameraCpu {
            sender_pct: 10.0,
            receiver_pct: 12.0,
            system_pct: 30.0,
            ..CameraCpu::default()
        };
        let conf = CameraCpu {
            sender_pct: 14.0,
            receiver_pct: 19.0,
            system_pct: 37.0,
            ..CameraCpu::default()
        };
        let i = conf.increase_over(&nosec);
        assert_eq!(
            (i.sender_pct, i.receiver_pct, i.system_pct),
            (4.0, 7.0, 7.0)
        );
        assert!(!i.within_5pct);
    }
}
