//! The throughput experiment (seed 002 §5.2.3, §6.1.2): what reaches the receiver per second,
//! next to the theoretical maximum of the profile on the link.
//!
//! This module is pure arithmetic and data: the token bucket takes the time as a parameter
//! (nothing here reads a clock). [`node`] is the process role that sends or receives, [`run`]
//! the orchestration that starts the nodes, the baselines (plain, iperf3) and joins the result.

use std::collections::BTreeMap;

use ivnsec_core::profile::{NamedProfile, Profile};
use serde::{Deserialize, Serialize};

use crate::cpu::SystemCpu;

mod config;
pub use config::{DEFAULT_RX_COALESCE_US, check_rx_coalesce};
pub mod node;
pub mod plan;
pub mod report;
mod result;
pub mod run;
pub mod tcp;

/// Runs the throughput role whose spec arrives on stdin ([`crate::process`]): datagram roles
/// in [`node`], TCP roles in [`tcp`] (dispatched here, so `tcp` uses `node`'s helpers without
/// `node` importing `tcp` back).
pub fn run_node() -> anyhow::Result<()> {
    let spec = node::read_checked_spec()?;
    match (spec.role.clone(), spec.tcp) {
        (node::TputRole::Sender { index }, false) => node::sender(&spec, index),
        (node::TputRole::Receiver, false) => node::receiver(&spec),
        (node::TputRole::Sender { index }, true) => tcp::sender(&spec, index),
        (node::TputRole::Receiver, true) => tcp::receiver(&spec),
    }
}

/// Preamble and start-of-frame delimiter (IEEE 802.3 clause 4).
pub const PREAMBLE_SFD: usize = 8;
/// Minimum inter-frame gap, in byte times.
pub const IFG: usize = 12;
/// Frame check sequence.
pub const FCS: usize = 4;
/// Smallest frame, FCS included (shorter frames are padded).
pub const MIN_FRAME: usize = 64;

/// Byte times a frame occupies on the wire: the frame (`frame_len`: destination MAC to the last
/// tag byte, no FCS) + FCS, padded to 64 bytes, + preamble/SFD + inter-frame gap.
pub fn wire_bytes(frame_len: usize) -> usize {
    (frame_len + FCS).max(MIN_FRAME) + PREAMBLE_SFD + IFG
}

/// TCP maximum segment size on a 1500-byte MTU with the timestamp option Linux sends: 1500 −
/// 20 (IPv4) − 32 (TCP with timestamps).
pub const TCP_MSS: usize = 1448;
/// Headers of one TCP segment's frame: Ethernet 14, IPv4 20, TCP with timestamps 32.
pub const TCP_SEGMENT_HEADERS: usize = 14 + 20 + 32;

/// Byte times `stream_bytes` of a TCP stream occupy on the wire, cut into full-MSS segments
/// (the last one shorter), each in its own frame ([`wire_bytes`]). ACKs travel the other way
/// and are not counted.
pub fn tcp_wire_bytes(stream_bytes: usize) -> usize {
    let full = stream_bytes / TCP_MSS;
    let rest = stream_bytes % TCP_MSS;
    full * wire_bytes(TCP_SEGMENT_HEADERS + TCP_MSS)
        + if rest > 0 {
            wire_bytes(TCP_SEGMENT_HEADERS + rest)
        } else {
            0
        }
}

/// The most payload a saturated link of `rate_bps` can carry when every `payload`-byte payload
/// travels in a frame of `frame_len` bytes (header to tag, no FCS; every family's headers, tags
/// and padding are in it): payload / (frame + FCS + preamble + IFG) × rate, as seed 002 §6.1.2
/// computes it (1472 / 1538 × 1000 Mb/s = 957.1 Mb/s for plain UDP). In bits per second.
pub fn theoretical_bps(payload: usize, frame_len: usize, rate_bps: u64) -> f64 {
    payload as f64 / wire_bytes(frame_len) as f64 * rate_bps as f64
}

/// Parses a link rate: `unlimited` (no shaping: `None`), or bits per second with an optional
/// SI suffix `k`, `M`, `G` (`100M`, `1G`, `250000000`).
pub fn parse_rate(s: &str) -> Result<Option<u64>, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000u64),
        Some((i, 'M' | 'm')) => (&t[..i], 1_000_000),
        Some((i, 'G' | 'g')) => (&t[..i], 1_000_000_000),
        _ => (t, 1),
    };
    let bad = || {
        format!(
            "--rate `{s}`: expected `unlimited` or bits per second such as 100M, 1G, 2.5G or 250000000"
        )
    };
    let v: f64 = num.parse().map_err(|_| bad())?;
    if !v.is_finite() || v <= 0.0 {
        return Err(bad());
    }
    let bps = (v * mult as f64).round();
    if !(1_000.0..=400e9).contains(&bps) {
        return Err(format!(
            "--rate `{s}`: must be between 1k and 400G bits per second"
        ));
    }
    Ok(Some(bps as u64))
}

/// A token bucket at the wire-byte level, in integer arithmetic (no drift over long runs).
/// Credit accrues at `rate_bps` up to `burst_bytes`; [`take`](Self::take) charges the wire bytes
/// of what is about to be sent, possibly into debt, and says how long to wait before sending so
/// the average never exceeds the rate.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate_bps: u64,
    /// Credit in units of 10⁻⁹ bit (so one nanosecond at `rate_bps` adds `rate_bps` units).
    credit: i128,
    cap: i128,
    last_ns: u64,
}

impl TokenBucket {
    /// An empty bucket at time `now_ns` (a link that has just become busy: the first unit waits
    /// its own transmission time, so n units take exactly n unit times from `now_ns`).
    pub fn new(rate_bps: u64, burst_bytes: usize, now_ns: u64) -> TokenBucket {
        let cap = burst_bytes as i128 * 8 * 1_000_000_000;
        TokenBucket {
            rate_bps: rate_bps.max(1),
            credit: 0,
            cap,
            last_ns: now_ns,
        }
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Charges `bytes` wire bytes at `now_ns`; returns how many ns to wait before sending them
    /// (0: send now).
    pub fn take(&mut self, now_ns: u64, bytes: usize) -> u64 {
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        self.credit = (self.credit + dt as i128 * self.rate_bps as i128).min(self.cap);
        self.credit -= bytes as i128 * 8 * 1_000_000_000;
        if self.credit >= 0 {
            0
        } else {
            let r = self.rate_bps as i128;
            ((-self.credit + r - 1) / r) as u64
        }
    }
}

/// One sender's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderResult {
    pub name: String,
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub goodput_mbps: f64,
    /// Seconds from its first send to its last.
    pub seconds: f64,
}

/// The CPU of one role of a run, as seed 002 would see it on a host of its own: the consumer
/// (the receiver process), each sensor (its sender process), or the switch — what is left of the
/// machine's busy time (the bridge and veth work of the kernel between the processes, and
/// whatever else runs on this machine).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleCpu {
    /// `consumer`, the sensor's name (`sensor1`, …) or `switch`.
    pub role: String,
    /// % of the whole machine (all cores = 100 %) over the sending window.
    pub pct: f64,
    /// Goodput through the role in Gb/s: a sensor's own, all of it for the consumer and switch.
    pub gbps: f64,
    /// `pct` per Gb/s of that goodput; `None` when nothing got through.
    pub pct_per_gbps: Option<f64>,
}

impl RoleCpu {
    pub fn new(role: impl Into<String>, pct: f64, gbps: f64) -> RoleCpu {
        RoleCpu {
            role: role.into(),
            pct,
            gbps,
            pct_per_gbps: (gbps > 0.0).then(|| pct / gbps),
        }
    }
}

/// CPU figures of one run (see [`crate::cpu`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuResult {
    /// All sender processes together, % of the machine (user + system, getrusage; throughput
    /// runs leave out the pacing spin, `sender_pacing_ns`).
    pub sender_pct: f64,
    /// The receiver process, % of the machine.
    pub receiver_pct: f64,
    /// The whole machine (/proc/stat sampled every second), %.
    pub system_pct: f64,
    pub cores: usize,
    pub sender_user_ns: u64,
    pub sender_sys_ns: u64,
    pub receiver_user_ns: u64,
    pub receiver_sys_ns: u64,
    /// Sender CPU ns per payload byte sent (protect + send).
    pub sender_ns_per_byte: Option<f64>,
    /// Receiver CPU ns per payload byte delivered (receive + verify).
    pub receiver_ns_per_byte: Option<f64>,
    /// The machine's busy % in each second of the run (sar's lines).
    pub system_per_second_pct: Vec<f64>,
    /// This run minus the `plain` run of the same invocation, in points of % of the machine
    /// (seed 002 §5.1.1: < 5). `None` for `plain` itself or without the baseline.
    pub increase_over_plain: Option<CpuIncrease>,
    /// CPU per role: `consumer`, each sensor, then `switch` (the machine's busy time less the
    /// processes'), each also per Gb/s of goodput (throughput runs; empty elsewhere and in
    /// results written before it existed).
    #[serde(default)]
    pub roles: Vec<RoleCpu>,
    /// `system_pct` per Gb/s of goodput (throughput runs).
    #[serde(default)]
    pub system_pct_per_gbps: Option<f64>,
    /// CPU ns the senders spent spinning to hold their links' rate (a NIC paces in hardware),
    /// all senders together; `sender_*` figures leave it out (throughput runs).
    #[serde(default)]
    pub sender_pacing_ns: u64,
}

/// CPU increase over the `plain` baseline, in percentage points of the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuIncrease {
    pub sender_pct: f64,
    pub receiver_pct: f64,
    pub system_pct: f64,
    /// The seed 002 rule on the whole machine: system increase < 5 points.
    pub within_5pct: bool,
    /// The seed 002 rule as the seed judged it, on its consumer host: the consumer's (receiver
    /// process's) increase < 5 points.
    #[serde(default)]
    pub consumer_within_5pct: bool,
}

impl CpuResult {
    pub fn increase_over(&self, plain: &CpuResult) -> CpuIncrease {
        let system = self.system_pct - plain.system_pct;
        let consumer = self.receiver_pct - plain.receiver_pct;
        CpuIncrease {
            sender_pct: self.sender_pct - plain.sender_pct,
            receiver_pct: consumer,
            system_pct: system,
            within_5pct: system < 5.0,
            consumer_within_5pct: consumer < 5.0,
        }
    }
}

/// The result of one throughput run (`ivnsec throughput --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThroughputResult {
    /// The profile, with the name it was given (summary.json: that name).
    pub profile: NamedProfile,
    pub payload: usize,
    /// Frame length, header to tag, no FCS.
    pub frame_bytes: usize,
    /// Byte times per frame on the wire (FCS, preamble and IFG added).
    pub wire_bytes: usize,
    pub senders: usize,
    /// The shaped rate per sender link (bits/s); `None` = unshaped.
    pub rate_bps: Option<u64>,
    pub seconds: f64,
    pub transport: String,
    pub sent: u64,
    pub delivered: u64,
    /// sent − delivered (never negative): dropped anywhere, or rejected by verify.
    pub lost: u64,
    /// lost / sent.
    pub loss: f64,
    /// Units the receiver's verify rejected, by reason (part of `lost`).
    pub rejected: BTreeMap<String, u64>,
    /// Payload bits delivered per second in Mb/s (10⁶ bit/s): the sum over senders of each
    /// one's delivered payload over its own sending window.
    pub goodput_mbps: f64,
    pub frames_per_s: f64,
    /// The theoretical maximum of all sender links together ([`theoretical_bps`] × senders);
    /// `None` when unshaped.
    pub theoretical_mbps: Option<f64>,
    /// goodput / theoretical.
    pub efficiency: Option<f64>,
    pub per_sender: Vec<SenderResult>,
    pub cpu: CpuResult,
    /// Same-run references: `plain` (our own unprotected frames) and `iperf3` (UDP).
    pub baseline: serde_json::Map<String, serde_json::Value>,
    /// The bump-in-the-wire topology (`bump2`) when the frames went through gateways the run
    /// started; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateways: Option<String>,
    /// SOME/IP messages on one TCP connection per sender (`--tcp`); then `frame_bytes` is the
    /// protected SOME/IP message (the kernel cuts it into segments), `wire_bytes` the byte
    /// times of its segments ([`tcp_wire_bytes`]) and `sent`/`delivered` count messages.
    /// Absent for datagram runs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tcp: bool,
    /// The consumer's receive coalescing, µs (`--rx-coalesce-us`; datagram runs). Absent in
    /// results from before it existed, which never coalesced.
    #[serde(default)]
    pub rx_coalesce_us: u32,
}

/// A `plain` run that measured nothing: what a result is built on before its figures are
/// filled in.
impl Default for ThroughputResult {
    fn default() -> Self {
        ThroughputResult {
            profile: NamedProfile::from(Profile::PLAIN),
            payload: 0,
            frame_bytes: 0,
            wire_bytes: 0,
            senders: 0,
            rate_bps: None,
            seconds: 0.0,
            transport: String::new(),
            sent: 0,
            delivered: 0,
            lost: 0,
            loss: 0.0,
            rejected: BTreeMap::new(),
            goodput_mbps: 0.0,
            frames_per_s: 0.0,
            theoretical_mbps: None,
            efficiency: None,
            per_sender: Vec::new(),
            cpu: CpuResult::default(),
            baseline: serde_json::Map::new(),
            gateways: None,
            tcp: false,
            rx_coalesce_us: 0,
        }
    }
}

impl ThroughputResult {
    /// Fills the derived figures from the counters: lost, loss, goodput, frames/s, theoretical
    /// maximum and efficiency. `seconds` is the sending window.
    pub fn derive(&mut self) {
        self.lost = self.sent.saturating_sub(self.delivered);
        self.loss = if self.sent == 0 {
            0.0
        } else {
            self.lost as f64 / self.sent as f64
        };
        let bits = |n: u64| n as f64 * self.payload as f64 * 8.0;
        for s in &mut self.per_sender {
            s.lost = s.sent.saturating_sub(s.delivered);
            s.goodput_mbps = if s.seconds > 0.0 {
                bits(s.delivered) / s.seconds / 1e6
            } else {
                0.0
            };
        }
        // Each sender over its own sending window (senders start a few ms apart), summed: the
        // aggregate of N links, as the theoretical maximum is.
        if !self.per_sender.is_empty() {
            self.goodput_mbps = self.per_sender.iter().map(|s| s.goodput_mbps).sum();
            self.frames_per_s = self
                .per_sender
                .iter()
                .filter(|s| s.seconds > 0.0)
                .map(|s| s.delivered as f64 / s.seconds)
                .sum();
        } else if self.seconds > 0.0 {
            self.goodput_mbps = bits(self.delivered) / self.seconds / 1e6;
            self.frames_per_s = self.delivered as f64 / self.seconds;
        }
        self.wire_bytes = if self.tcp {
            tcp_wire_bytes(self.frame_bytes)
        } else {
            wire_bytes(self.frame_bytes)
        };
        let wire = self.wire_bytes.max(1) as f64;
        self.theoretical_mbps = self
            .rate_bps
            .map(|r| self.payload as f64 / wire * r as f64 * self.senders as f64 / 1e6);
        self.efficiency = self
            .theoretical_mbps
            .filter(|t| *t > 0.0)
            .map(|t| self.goodput_mbps / t);
    }
}

/// The machine's CPU use as reported in [`CpuResult`].
pub fn system_fields(c: &mut CpuResult, s: &SystemCpu) {
    c.system_pct = s.pct;
    c.system_per_second_pct = s.per_interval_pct.clone();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Seed 002 §6.1.2: 1500-byte MTU, Ethernet header (14) + FCS (4) + preamble (8) + IFG (12)
    /// = 1538 byte times; the frame without FCS is 1514 bytes.
    #[test]
    fn seed_002_theoretical_maxima() {
        let gig = 1_000_000_000;
        // Baseline: UDP over IPv4, 1472-byte payload: 14 + 20 + 8 + 1472 = 1514.
        assert_eq!(wire_bytes(14 + 20 + 8 + 1472), 1538);
        assert!(close(theoretical_bps(1472, 1514, gig) / 1e6, 957.1, 0.05));
        // MACsec (§6.3.2): 1440 + UDP/IP 28 + SecTAG 16 + ICV 16 + Ethernet 14 = 1514.
        assert!(close(
            theoretical_bps(1440, 14 + 16 + 28 + 1440 + 16, gig) / 1e6,
            936.3,
            0.05
        ));
        // IPsec ESP (§6.2.2): 1446 + UDP 8 + ESP SPI/seq 8 + pad length/next header 2 +
        // HMAC-SHA256-128 ICV 16 + IPv4 20 + Ethernet 14 = 1514: 1446/1538 × 1000 = 940.2 Mb/s
        // (the thesis prints 994, a typo: 1446/1538 is 0.9402).
        assert!(close(
            theoretical_bps(1446, 14 + 20 + 8 + 8 + 1446 + 2 + 16, gig) / 1e6,
            940.2,
            0.05
        ));
        // 100BASE-T1 is the same ratio at a tenth of the rate.
        assert!(close(
            theoretical_bps(1472, 1514, gig / 10) / 1e6,
            95.71,
            0.01
        ));
    }

    #[test]
    fn short_frames_are_padded_to_64() {
        assert_eq!(wire_bytes(20), 64 + 20);
        assert_eq!(wire_bytes(60), 84);
        assert_eq!(wire_bytes(61), 85);
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("unlimited"), Ok(None));
        assert_eq!(parse_rate("100M"), Ok(Some(100_000_000)));
        assert_eq!(parse_rate("1G"), Ok(Some(1_000_000_000)));
        assert_eq!(parse_rate("2.5G"), Ok(Some(2_500_000_000)));
        assert_eq!(parse_rate("64k"), Ok(Some(64_000)));
        assert_eq!(parse_rate("250000000"), Ok(Some(250_000_000)));
        for bad in ["7X", "", "M", "-1G", "0", "1T", "NaNM", "10"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bucket_holds_the_rate() {
        // 1 Gb/s, 1538-byte frames: one every 12 304 ns. A sender that always sends as soon as
        // it may, 10 000 frames from an empty bucket: the last goes out after 10 000 frame times.
        let mut b = TokenBucket::new(1_000_000_000, 1538, 0);
        let mut now = 0u64;
        for _ in 0..10_000 {
            now += b.take(now, 1538);
        }
        assert_eq!(now, 10_000 * 12_304);
        // An idle second does not bank more than the burst.
        now += 1_000_000_000;
        assert_eq!(b.take(now, 1538), 0);
        assert_eq!(b.take(now, 1538), 12_304);
    }

    #[test]
    fn bucket_charges_batches_into_debt() {
        // A batch larger than the burst waits for exactly what it overdraws.
        let mut b = TokenBucket::new(100_000_000, 100, 0);
        assert_eq!(b.take(0, 1000), 80_000); // 1000 bytes at 100 Mb/s = 80 µs
        assert_eq!(b.take(80_000, 100), 8_000);
        // Idle time fills at most the burst (100 bytes = 8 µs).
        assert_eq!(b.take(1_000_000, 1100), 80_000);
        // Fractional nanoseconds round up: never faster than the rate.
        let mut c = TokenBucket::new(3, 0, 0);
        assert_eq!(c.take(0, 1), 2_666_666_667);
    }

    /// TCP on Gigabit Ethernet with timestamps carries 1448 payload bytes in 1538 byte times:
    /// the well-known 941.5 Mb/s ceiling of TCP goodput on GbE. A 65,577-byte message (a 64
    /// KiB secured SOME/IP message: 16 + 1 + 8 + 65,536 + 16) is 45 full segments and one of
    /// 417 bytes (417 + 66 + 24 = 507 byte times).
    #[test]
    fn tcp_segments_on_the_wire() {
        assert_eq!(tcp_wire_bytes(TCP_MSS), 1538);
        assert!((1e3 * TCP_MSS as f64 / tcp_wire_bytes(TCP_MSS) as f64 - 941.48).abs() < 0.01);
        assert_eq!(tcp_wire_bytes(65_577), 45 * 1538 + 507);
        assert_eq!(tcp_wire_bytes(0), 0);
        // A 1-byte segment's frame is padded to 64 bytes: 67 + 4 → 71, + 20.
        assert_eq!(tcp_wire_bytes(1), 91);
        let mut r = ThroughputResult {
            payload: 65_536,
            frame_bytes: 65_577,
            senders: 2,
            rate_bps: Some(1_000_000_000),
            tcp: true,
            ..ThroughputResult::default()
        };
        r.derive();
        assert_eq!(r.wire_bytes, 69_717);
        let t = r.theoretical_mbps.unwrap();
        assert!((t - 2.0 * 65_536.0 / 69_717.0 * 1e3).abs() < 1e-9, "{t}");
    }

    #[test]
    fn derived_figures() {
        let mut r = ThroughputResult {
            profile: "plain".parse().unwrap(),
            payload: 1472,
            frame_bytes: 1514,
            senders: 2,
            rate_bps: Some(1_000_000_000),
            seconds: 2.0,
            sent: 200,
            delivered: 150,
            ..Default::default()
        };
        r.derive();
        // Without per-sender figures: over the whole window.
        assert_eq!(r.lost, 50);
        assert_eq!(r.loss, 0.25);
        assert_eq!(r.wire_bytes, 1538);
        assert!(close(
            r.goodput_mbps,
            150.0 * 1472.0 * 8.0 / 2.0 / 1e6,
            1e-9
        ));
        assert_eq!(r.frames_per_s, 75.0);
        let t = r.theoretical_mbps.unwrap();
        assert!(close(t, 2.0 * 957.087, 0.01));
        assert!(close(r.efficiency.unwrap(), r.goodput_mbps / t, 1e-12));
        let v = serde_json::to_value(&r).unwrap();
        for k in [
            "profile",
            "payload",
            "goodput_mbps",
            "frames_per_s",
            "loss",
            "theoretical_mbps",
            "efficiency",
            "cpu",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        for k in ["sender_pct", "receiver_pct", "system_pct"] {
            assert!(v["cpu"].get(k).is_some(), "{k}");
        }
    }
}
