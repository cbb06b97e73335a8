//! What seed 003 (a fragment of a paper on a security-enhanced SOME/IP, vsomeip with
//! per-service security levels) reports, the reference our SOME/IP throughput and camera
//! experiments print beside their own numbers.
//!
//! The fragment holds the end of the throughput evaluation (Fig. 5c: UDP with 1,400-byte and TCP
//! with 64 kB payloads, iperf3 as the reference; Fig. 6: the AEAD suites over TCP) and §F, the
//! "realistic scenario" (Fig. 7: N cameras at 60 fps over TCP, 16 ms deadline). Its figures did
//! not survive the PDF extraction: only axis labels remain (`00204Thr Gbps` = a 0 / 0.2 / 0.4
//! Gb/s axis, `01020Txtorx delay ms` = 0 / 10 / 20 ms), which bound nothing. So there is no
//! absolute throughput, delay or CPU figure to transcribe; what the prose states is relative
//! (iperf3 "almost four times" vsomeip over UDP, authentication 15 % and confidentiality 25 %
//! slower, …), and that is what [`CLAIMS`] holds and [`throughput_table`] sets beside the same
//! relations computed from our figures.
//!
//! How the extraction was read (punctuation is stripped: decimal points, dashes, parentheses):
//!
//! - "frames of425 kB 21 Mbps per camera 43" → "frames of 42.5 kB (21 Mbps per camera) \[43\]":
//!   42.5 kB × 60 fps × 8 = 20.4 Mb/s (20.9 with kB = 1024 B) ≈ 21, and "ranging from 242 Mbps
//!   to16336 Mbps" → "from 2 (42 Mbps) to 16 (336 Mbps)" cameras is 21 Mb/s each; 425 kB would
//!   be 204 Mb/s per camera and 3.3 Gb/s for 16 on a 1 Gb/s link. See [`CAMERA_FRAME_KB`].
//! - "slow down accounting for 15 and 25" → 15 % and 25 %; "a 50 drop" → 50 %; "a 20
//!   additional overhead" → 20 %; "caused a 1525 additional overhead" → 15–25 %.
//! - "the median delay remained confined in the 253 ms range" reads as "2.5–3 ms" or as
//!   "2–5.3 ms"; which one cannot be told, so only the bounds both readings share,
//!   [2, 5.3] ms, are kept ([`NOSEC_MEDIAN_DELAY_MS_BOUNDS`]).
//! - The camera counts are Fig. 7's axis labels "2 4 8 12 16" and agree with the prose.
//! - The fragment does not name the suite of the level comparison (Fig. 5c), nor the key
//!   size of "AES-GCM" in "twice as much throughput compared to the second, namely AES-GCM"
//!   (taken as AES-128-GCM, the faster of the two), nor whether "64 kB" is 64,000 or 65,536
//!   bytes.
//!
//! The seed distinguishes "vanilla" vsomeip from its own version at the no-security level;
//! we have one SOME/IP implementation, so both map to our `nosec`.

use crate::camera::CameraFigures;
use crate::table::{Table, opt_num, strs};
use Level::{Auth, Conf, Nosec};
use Transport::{Tcp, Udp};

/// The AEAD suites of Fig. 6, in its legend order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Suite {
    Aes128Ccm,
    Aes256Ccm,
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

impl Suite {
    pub const ALL: [Suite; 5] = [
        Suite::Aes128Ccm,
        Suite::Aes256Ccm,
        Suite::Aes128Gcm,
        Suite::Aes256Gcm,
        Suite::Chacha20Poly1305,
    ];

    /// The seed's legend label (Fig. 6: "AES128CCM" … "ChaCha20Poly1305" after extraction).
    pub fn name(self) -> &'static str {
        match self {
            Suite::Aes128Ccm => "AES-128-CCM",
            Suite::Aes256Ccm => "AES-256-CCM",
            Suite::Aes128Gcm => "AES-128-GCM",
            Suite::Aes256Gcm => "AES-256-GCM",
            Suite::Chacha20Poly1305 => "ChaCha20-Poly1305",
        }
    }

    /// Our SOME/IP `suite` name (docs/someip.md, `service[].suite`).
    pub fn ours(self) -> &'static str {
        match self {
            Suite::Aes128Ccm => "aes128-ccm",
            Suite::Aes256Ccm => "aes256-ccm",
            Suite::Aes128Gcm => "aes128-gcm",
            Suite::Aes256Gcm => "aes256-gcm",
            Suite::Chacha20Poly1305 => "chacha20-poly1305",
        }
    }

    /// The seed suite our SOME/IP suite name stands for.
    pub fn of_ours(name: &str) -> Option<Suite> {
        Suite::ALL.into_iter().find(|s| s.ours() == name)
    }

    /// Key bits ("ChaCha20-Poly1305 … offering a 256 bits security level").
    pub fn key_bits(self) -> u32 {
        match self {
            Suite::Aes128Ccm | Suite::Aes128Gcm => 128,
            _ => 256,
        }
    }
}

/// The level and suite one of our profiles stands for: `plain` (or `nosec`) is no security;
/// `SUITE/auth` and `SUITE/conf` (IVN-AE profiles, `plans/seed003.toml`) and `SUITE/nosec` are
/// the suite at that level, where SUITE is one of the seed's (`aes128-gcm`, …); a bare SUITE is
/// `conf`, as in `ivnsec suites`. The secured SOME/IP node profiles (`someip-SUITE/LEVEL`,
/// `someip-nosec`: the seed's protocol itself, docs/someip.md) read the same after their
/// prefix. `None` for anything else.
pub fn level_and_suite(profile: &str) -> Option<(Level, Option<Suite>)> {
    let profile = profile.strip_prefix("someip-").unwrap_or(profile);
    if profile == "plain" || profile == "nosec" {
        return Some((Level::Nosec, None));
    }
    let (suite, level) = match profile.split_once('/') {
        Some((s, l)) => (s, Level::ALL.into_iter().find(|x| x.ours() == l)?),
        None => (profile, Level::Conf),
    };
    let suite = Suite::of_ours(suite)?;
    Some((level, (level != Level::Nosec).then_some(suite)))
}

/// The per-service security levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// No security (the seed's "vanilla" vsomeip and its own version without security).
    Nosec,
    /// Authentication only: payload in clear, tag appended.
    Auth,
    /// Confidentiality: AEAD.
    Conf,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Nosec, Level::Auth, Level::Conf];

    /// The seed's name.
    pub fn name(self) -> &'static str {
        match self {
            Level::Nosec => "no security",
            Level::Auth => "authentication",
            Level::Conf => "confidentiality",
        }
    }

    /// Our SOME/IP `level` name.
    pub fn ours(self) -> &'static str {
        match self {
            Level::Nosec => "nosec",
            Level::Auth => "auth",
            Level::Conf => "conf",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Udp,
    Tcp,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Udp => "UDP",
            Transport::Tcp => "TCP",
        }
    }
}

/// One measured configuration of the throughput benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Run {
    /// iperf3 on bare sockets (the reference bar of Fig. 5c).
    Iperf3(Transport),
    /// SOME/IP at a level; `suite: None` where the seed does not name it (no security, and the
    /// level comparison of Fig. 5c: give the figure of the suite the level runs were made with).
    Someip {
        transport: Transport,
        level: Level,
        suite: Option<Suite>,
    },
}

impl Run {
    const fn someip(transport: Transport, level: Level, suite: Option<Suite>) -> Run {
        Run::Someip {
            transport,
            level,
            suite,
        }
    }
}

/// Our figures of one [`Run`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    /// Payload throughput, Mb/s.
    pub mbps: Option<f64>,
    /// CPU use, % (any consistent base: only ratios are compared).
    pub cpu_pct: Option<f64>,
}

/// Which of our figures a relation compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Throughput,
    Cpu,
}

/// How a claim's figure is computed from two or more runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Relation {
    /// `num / den` of the metric.
    Ratio { metric: Metric, num: Run, den: Run },
    /// `1 − run / base` of the throughput, in %.
    Drop { run: Run, base: Run },
    /// Whether both CCM suites are slower than every other suite at a level over TCP.
    CcmSlowest { level: Level },
}

/// One statement of the seed's prose, as a figure where it gives one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Claim {
    pub what: &'static str,
    pub relation: Relation,
    /// The seed's figure (ratio, or % for a drop); `None` where the prose is qualitative.
    pub seed: Option<f64>,
    /// The seed's words.
    pub seed_text: &'static str,
    pub source: &'static str,
}

const fn drop_claim(
    what: &'static str,
    run: Run,
    base: Run,
    seed: f64,
    seed_text: &'static str,
    source: &'static str,
) -> Claim {
    Claim {
        what,
        relation: Relation::Drop { run, base },
        seed: Some(seed),
        seed_text,
        source,
    }
}

/// The relative figures the fragment states about throughput and CPU (Fig. 5c and Fig. 6).
pub const CLAIMS: [Claim; 13] = [
    Claim {
        what: "UDP: iperf3 / SOME/IP no security, throughput",
        relation: Relation::Ratio {
            metric: Metric::Throughput,
            num: Run::Iperf3(Udp),
            den: Run::someip(Udp, Nosec, None),
        },
        seed: Some(4.0),
        seed_text: "\"almost four times higher\"",
        source: "Fig. 5c text",
    },
    Claim {
        what: "UDP: iperf3 / SOME/IP no security, CPU",
        relation: Relation::Ratio {
            metric: Metric::Cpu,
            num: Run::Iperf3(Udp),
            den: Run::someip(Udp, Nosec, None),
        },
        seed: None,
        seed_text: "\"while comparably loading the CPU\"",
        source: "Fig. 5c text",
    },
    Claim {
        what: "TCP: iperf3 / SOME/IP no security, throughput",
        relation: Relation::Ratio {
            metric: Metric::Throughput,
            num: Run::Iperf3(Tcp),
            den: Run::someip(Tcp, Nosec, None),
        },
        seed: None,
        seed_text: "\"similar throughput values\"",
        source: "Fig. 5c text",
    },
    Claim {
        what: "TCP: SOME/IP no security / iperf3, CPU",
        relation: Relation::Ratio {
            metric: Metric::Cpu,
            num: Run::someip(Tcp, Nosec, None),
            den: Run::Iperf3(Tcp),
        },
        seed: Some(4.0),
        seed_text: "\"a fourfold drop in CPU usage … when using iperf3\"",
        source: "Fig. 5c text",
    },
    drop_claim(
        "UDP: authentication slower than no security",
        Run::someip(Udp, Auth, None),
        Run::someip(Udp, Nosec, None),
        15.0,
        "\"additional slow down accounting for 15 [%]\"",
        "Fig. 5c text",
    ),
    drop_claim(
        "UDP: confidentiality slower than no security",
        Run::someip(Udp, Conf, None),
        Run::someip(Udp, Nosec, None),
        25.0,
        "\"and 25 [%]\"",
        "Fig. 5c text",
    ),
    drop_claim(
        "TCP: confidentiality slower than no security",
        Run::someip(Tcp, Conf, None),
        Run::someip(Tcp, Nosec, None),
        50.0,
        "\"a 50 [%] drop in performance compared to vanilla vsomeip\"",
        "Fig. 5c text",
    ),
    Claim {
        what: "TCP authentication: ChaCha20-Poly1305 / AES-128-GCM, throughput",
        relation: Relation::Ratio {
            metric: Metric::Throughput,
            num: Run::someip(Tcp, Auth, Some(Suite::Chacha20Poly1305)),
            den: Run::someip(Tcp, Auth, Some(Suite::Aes128Gcm)),
        },
        seed: Some(2.0),
        seed_text: "\"the fastest … twice as much throughput compared to the second, namely AES-GCM\"",
        source: "Fig. 6 text",
    },
    Claim {
        what: "TCP confidentiality: ChaCha20-Poly1305 / AES-128-GCM, throughput",
        relation: Relation::Ratio {
            metric: Metric::Throughput,
            num: Run::someip(Tcp, Conf, Some(Suite::Chacha20Poly1305)),
            den: Run::someip(Tcp, Conf, Some(Suite::Aes128Gcm)),
        },
        seed: Some(2.0),
        seed_text: "(as above)",
        source: "Fig. 6 text",
    },
    Claim {
        what: "TCP authentication: AES-CCM the slowest",
        relation: Relation::CcmSlowest { level: Auth },
        seed: None,
        seed_text: "\"AES-CCM … appeared to be the slowest, especially concerning authentication level services\"",
        source: "Fig. 6 text",
    },
    Claim {
        what: "TCP confidentiality: AES-CCM the slowest",
        relation: Relation::CcmSlowest { level: Conf },
        seed: None,
        seed_text: "(as above)",
        source: "Fig. 6 text",
    },
    drop_claim(
        "TCP authentication: AES-256-GCM slower than AES-128-GCM",
        Run::someip(Tcp, Auth, Some(Suite::Aes256Gcm)),
        Run::someip(Tcp, Auth, Some(Suite::Aes128Gcm)),
        20.0,
        "\"about a 20 [%] additional overhead … from 128 bits to 256 bits keys\"",
        "Fig. 6 text",
    ),
    drop_claim(
        "TCP confidentiality: AES-256-GCM slower than AES-128-GCM",
        Run::someip(Tcp, Conf, Some(Suite::Aes256Gcm)),
        Run::someip(Tcp, Conf, Some(Suite::Aes128Gcm)),
        20.0,
        "(as above)",
        "Fig. 6 text",
    ),
];

/// Fig. 5c text: UDP payload bytes ("the maximum possible amount of data, 1400 bytes").
pub const UDP_PAYLOAD_BYTES: usize = 1400;
/// Fig. 5c text: TCP payloads of "64 kB" (64,000 or 65,536 bytes: not said).
pub const TCP_PAYLOAD_KB: f64 = 64.0;
/// Fig. 5c text and §F: the two ECUs were connected at 1 Gb/s.
pub const LINK_BPS: u64 = 1_000_000_000;

/// §F: frames per second of each simulated camera.
pub const CAMERA_FPS: u32 = 60;
/// §F: compressed video frame size in kB, read as 42.5 (the extraction prints "425 kB"; only
/// 42.5 kB agrees with the stated 21 Mb/s per camera and 42–336 Mb/s for 2–16 cameras).
pub const CAMERA_FRAME_KB: f64 = 42.5;
/// §F: "21 Mbps per camera".
pub const CAMERA_MBPS: f64 = 21.0;
/// §F, Fig. 7: the camera counts simulated.
pub const CAMERA_COUNTS: [usize; 5] = [2, 4, 8, 12, 16];
/// §F: aggregate rates the prose gives for the smallest and largest count, Mb/s.
pub const CAMERA_AGGREGATE_MBPS: [(usize, f64); 2] = [(2, 42.0), (16, 336.0)];
/// §F: the tx→rx delay bound, "to guarantee the reception of a frame before the generation of
/// the subsequent".
pub const CAMERA_DEADLINE_MS: f64 = 16.0;
/// §F: each simulation ran 100 s.
pub const CAMERA_RUN_S: u32 = 100;
/// §F: frames travel over TCP.
pub const CAMERA_TRANSPORT: Transport = Transport::Tcp;
/// §F, Fig. 7: the box plot whiskers are the 1st and 99th percentile.
pub const CAMERA_WHISKER_PERCENTILES: [f64; 2] = [1.0, 99.0];

/// §F: without security the median tx→rx delay stayed "in the 253 ms range" (2.5–3 or 2–5.3
/// ms): the bounds both readings share, ms.
pub const NOSEC_MEDIAN_DELAY_MS_BOUNDS: (f64, f64) = (2.0, 5.3);
/// §F: authentication "caused a 15–25 % additional overhead" on the delay, "with a more
/// significant increase for what regards the 99th percentile mark".
pub const AUTH_DELAY_OVERHEAD_PCT: (f64, f64) = (15.0, 25.0);
/// §F: with authentication "all frames but a very few outliers required less than 10 ms".
pub const AUTH_DELAY_ALMOST_ALL_BELOW_MS: f64 = 10.0;

/// What §F says about one camera count and level, as text for a table cell.
pub fn camera_seed_statement(cameras: usize, level: Level) -> (&'static str, &'static str) {
    let delay = match level {
        Nosec => "median 2–5.3 ms; spread grows with cameras",
        Auth => "+15–25 % over no security, more at p99; all but a very few < 10 ms",
        Conf => "considerably higher median and p99",
    };
    let misses = match (level, cameras == *CAMERA_COUNTS.last().unwrap_or(&0)) {
        (Conf, true) => "a few",
        _ => "none",
    };
    (delay, misses)
}

/// A note for below the camera table: what the seed's cells rest on.
pub const CAMERA_NOTE: &str = "Seed 003 §F gives no per-count figures (Fig. 7 was lost in the \
text extraction); its cells restate the prose. No-security median: the text reads \"253 ms \
range\", i.e. 2.5–3 or 2–5.3 ms. Deadline misses: \"the requirements … satisfied in all but the \
most demanding scenario\", where \"a few frames failed to be delivered within the expected \
deadline\" (confidentiality, 16 cameras). The seed's no-security rows cover both vanilla vsomeip \
and its own version without security; ours is `nosec`.";

fn run_value(ours: &impl Fn(Run) -> Measured, run: Run, metric: Metric) -> Option<f64> {
    let m = ours(run);
    match metric {
        Metric::Throughput => m.mbps,
        Metric::Cpu => m.cpu_pct,
    }
}

/// Our figure of a claim: a ratio, a drop in %, or whether CCM is the slowest (1 or 0).
pub fn our_value(claim: &Claim, ours: &impl Fn(Run) -> Measured) -> Option<f64> {
    match claim.relation {
        Relation::Ratio { metric, num, den } => {
            let d = run_value(ours, den, metric).filter(|d| *d > 0.0)?;
            Some(run_value(ours, num, metric)? / d)
        }
        Relation::Drop { run, base } => {
            let b = run_value(ours, base, Metric::Throughput).filter(|b| *b > 0.0)?;
            Some(100.0 * (1.0 - run_value(ours, run, Metric::Throughput)? / b))
        }
        Relation::CcmSlowest { level } => {
            let v = |s| run_value(ours, Run::someip(Tcp, level, Some(s)), Metric::Throughput);
            let ccm = [Suite::Aes128Ccm, Suite::Aes256Ccm].map(v);
            let rest = [Suite::Aes128Gcm, Suite::Aes256Gcm, Suite::Chacha20Poly1305].map(v);
            let slowest_other = rest
                .into_iter()
                .try_fold(f64::INFINITY, |acc, x| x.map(|x| acc.min(x)))?;
            let ccm_fastest = ccm
                .into_iter()
                .try_fold(f64::NEG_INFINITY, |acc, x| x.map(|x| acc.max(x)))?;
            Some(f64::from(u8::from(ccm_fastest < slowest_other)))
        }
    }
}

fn claim_cell(relation: &Relation, v: Option<f64>) -> String {
    match (relation, v) {
        (_, None) => opt_num(None, 0),
        (Relation::Ratio { .. }, Some(v)) => format!("× {v:.2}"),
        (Relation::Drop { .. }, Some(v)) => format!("{v:.1} %"),
        (Relation::CcmSlowest { .. }, Some(v)) => (if v > 0.5 { "yes" } else { "no" }).into(),
    }
}

/// Seed 003's throughput and CPU statements beside the same relations of our figures:
/// `ours(run)` gives our throughput (and CPU) of a run where we measured it. Columns: claim,
/// seed figure, the seed's words, ours, source.
pub fn throughput_table(ours: impl Fn(Run) -> Measured) -> Table {
    let head = strs(&["claim", "seed", "seed's words", "ours", "source"]);
    let rows = CLAIMS
        .iter()
        .map(|c| {
            let seed = match (c.seed, c.relation) {
                (None, Relation::CcmSlowest { .. }) => "yes".to_string(),
                (None, _) => "≈ (qualitative)".to_string(),
                (s, r) => claim_cell(&r, s),
            };
            vec![
                c.what.to_string(),
                seed,
                c.seed_text.to_string(),
                claim_cell(&c.relation, our_value(c, &ours)),
                c.source.to_string(),
            ]
        })
        .collect();
    Table { head, rows }
}

/// Seed 003 §F beside our camera runs: one row per camera count and level; `ours(cameras,
/// level)` gives our figures. "median over no security" is ours at the level against ours at
/// `nosec` with the same count (the seed: +15–25 % for authentication).
pub fn camera_table(ours: impl Fn(usize, Level) -> Option<CameraFigures>) -> Table {
    let head = strs(&[
        "cameras",
        "Mb/s",
        "level (ours)",
        "delay: seed",
        "misses: seed",
        "median ms: ours",
        "p99 ms: ours",
        "median over no security: ours",
        "misses: ours",
        "CPU: ours",
    ]);
    let mut rows = Vec::new();
    for n in CAMERA_COUNTS {
        let base = ours(n, Nosec).and_then(|f| f.median_ms);
        for level in Level::ALL {
            let (delay, misses) = camera_seed_statement(n, level);
            let o = ours(n, level).unwrap_or_default();
            let over = match (level, o.median_ms, base) {
                (Nosec, _, _) => None,
                (_, Some(m), Some(b)) if b > 0.0 => Some(100.0 * (m / b - 1.0)),
                _ => None,
            };
            let our_misses = match (o.deadline_misses, o.frames) {
                (Some(m), Some(f)) => format!("{m} of {f}"),
                (Some(m), None) => m.to_string(),
                _ => opt_num(None, 0),
            };
            rows.push(vec![
                n.to_string(),
                format!("{:.0}", CAMERA_MBPS * n as f64),
                format!("{} ({})", level.name(), level.ours()),
                delay.to_string(),
                misses.to_string(),
                opt_num(o.median_ms, 2),
                opt_num(o.p99_ms, 2),
                over.map_or_else(|| opt_num(None, 0), |v| format!("{v:+.1} %")),
                our_misses,
                o.cpu_pct
                    .map_or_else(|| opt_num(None, 0), |v| format!("{v:.1} %")),
            ]);
        }
    }
    Table { head, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// 42.5 kB × 60 fps is the stated 21 Mb/s per camera (kB as 1000 or 1024 bytes), and 2 and
    /// 16 cameras the stated 42 and 336 Mb/s; 425 kB could not be carried by the 1 Gb/s link.
    #[test]
    fn camera_rate_follows_from_the_frame_size() {
        for k in [1000.0, 1024.0] {
            let mbps = CAMERA_FRAME_KB * k * 8.0 * f64::from(CAMERA_FPS) / 1e6;
            assert!(close(mbps, CAMERA_MBPS, 0.65), "{k}: {mbps}");
            let as_printed = 425.0 * k * 8.0 * f64::from(CAMERA_FPS) / 1e6;
            assert!(as_printed * 16.0 > LINK_BPS as f64 / 1e6);
        }
        for (n, total) in CAMERA_AGGREGATE_MBPS {
            assert!(CAMERA_COUNTS.contains(&n));
            assert_eq!(CAMERA_MBPS * n as f64, total);
        }
        assert_eq!(CAMERA_COUNTS.first(), Some(&CAMERA_AGGREGATE_MBPS[0].0));
        assert_eq!(CAMERA_COUNTS.last(), Some(&CAMERA_AGGREGATE_MBPS[1].0));
        assert!(CAMERA_COUNTS.windows(2).all(|w| w[0] < w[1]));
        // The deadline is within one frame period (16.7 ms at 60 fps).
        assert!(CAMERA_DEADLINE_MS < 1000.0 / f64::from(CAMERA_FPS));
        let (lo, hi) = NOSEC_MEDIAN_DELAY_MS_BOUNDS;
        assert!(lo < hi && hi < AUTH_DELAY_ALMOST_ALL_BELOW_MS);
        const { assert!(AUTH_DELAY_ALMOST_ALL_BELOW_MS < CAMERA_DEADLINE_MS) };
    }

    #[test]
    fn suite_and_level_names() {
        for s in Suite::ALL {
            assert_eq!(Suite::of_ours(s.ours()), Some(s));
            let bits = if s.ours().starts_with("aes128") {
                128
            } else {
                256
            };
            assert_eq!(s.key_bits(), bits, "{s:?}");
        }
        assert_eq!(Suite::of_ours("aes128-gcm/conf"), None);
        assert_eq!(level_and_suite("plain"), Some((Nosec, None)));
        assert_eq!(
            level_and_suite("aes256-ccm/auth"),
            Some((Auth, Some(Suite::Aes256Ccm)))
        );
        assert_eq!(
            level_and_suite("chacha20-poly1305"),
            Some((Conf, Some(Suite::Chacha20Poly1305)))
        );
        assert_eq!(level_and_suite("aes128-gcm/nosec"), Some((Nosec, None)));
        assert_eq!(level_and_suite("someip-nosec"), Some((Nosec, None)));
        assert_eq!(
            level_and_suite("someip-aes128-gcm/auth"),
            Some((Auth, Some(Suite::Aes128Gcm)))
        );
        assert_eq!(
            level_and_suite("someip-aes256-gcm"),
            Some((Conf, Some(Suite::Aes256Gcm)))
        );
        for bad in [
            "someip-plain-x",
            "aes128-cbc-hmac-sha256",
            "aes128-gcm/none",
            "macsec-gcm-aes-128/auth",
            "",
        ] {
            assert_eq!(level_and_suite(bad), None, "{bad}");
        }
        let ours: Vec<&str> = Level::ALL.iter().map(|l| l.ours()).collect();
        assert_eq!(ours, ["nosec", "auth", "conf"]);
    }

    /// Each claim compares like with like: same transport, and a drop is against the faster
    /// configuration.
    #[test]
    fn claims_are_well_formed() {
        fn transport(r: Run) -> Transport {
            match r {
                Run::Iperf3(t) | Run::Someip { transport: t, .. } => t,
            }
        }
        for c in CLAIMS {
            match c.relation {
                Relation::Ratio { num, den, .. } => {
                    assert_eq!(transport(num), transport(den), "{}", c.what);
                    assert_ne!(num, den, "{}", c.what);
                }
                Relation::Drop { run, base } => {
                    assert_eq!(transport(run), transport(base), "{}", c.what);
                    assert!(c.seed.is_some_and(|s| s > 0.0 && s < 100.0), "{}", c.what);
                }
                Relation::CcmSlowest { .. } => assert_eq!(c.seed, None),
            }
            assert!(!c.seed_text.is_empty() && c.source.starts_with("Fig."));
        }
    }

    fn fake(run: Run) -> Measured {
        let mbps = match run {
            Run::Iperf3(Udp) => Some(800.0),
            Run::Iperf3(Tcp) => Some(400.0),
            Run::Someip {
                transport: Udp,
                level,
                ..
            } => Some(match level {
                Nosec => 200.0,
                Auth => 170.0,
                Conf => 150.0,
            }),
            Run::Someip {
                transport: Tcp,
                level: Nosec,
                ..
            } => Some(400.0),
            Run::Someip {
                suite: Some(s),
                level: Auth,
                ..
            } => Some(match s {
                Suite::Aes128Ccm => 50.0,
                Suite::Aes256Ccm => 40.0,
                Suite::Aes128Gcm => 100.0,
                Suite::Aes256Gcm => 80.0,
                Suite::Chacha20Poly1305 => 200.0,
            }),
            Run::Someip {
                suite: Some(Suite::Aes128Gcm),
                level: Conf,
                ..
            } => Some(90.0),
            _ => None,
        };
        let cpu_pct = match run {
            Run::Iperf3(Tcp) => Some(10.0),
            Run::Someip {
                transport: Tcp,
                level: Nosec,
                ..
            } => Some(35.0),
            _ => None,
        };
        Measured { mbps, cpu_pct }
    }

    #[test]
    fn throughput_table_rows() {
        let t = throughput_table(fake);
        assert_eq!(t.rows.len(), CLAIMS.len());
        assert!(t.rows.iter().all(|r| r.len() == t.head.len()));
        let ours: Vec<&str> = t.rows.iter().map(|r| r[3].as_str()).collect();
        assert_eq!(
            ours,
            [
                "× 4.00", "—", "× 1.00", "× 3.50", "15.0 %", "25.0 %", "—", "× 2.00", "—", "yes",
                "—", "20.0 %", "—"
            ]
        );
        let seed: Vec<&str> = t.rows.iter().map(|r| r[1].as_str()).collect();
        assert_eq!(seed[0], "× 4.00");
        assert_eq!(seed[1], "≈ (qualitative)");
        assert_eq!(seed[6], "50.0 %");
        assert_eq!(seed[9], "yes");
    }

    #[test]
    fn ccm_slowest_needs_every_suite_and_sees_a_faster_ccm() {
        let c = CLAIMS
            .iter()
            .find(|c| c.relation == Relation::CcmSlowest { level: Auth })
            .unwrap();
        assert_eq!(our_value(c, &fake), Some(1.0));
        let faster_ccm = |r: Run| match r {
            Run::Someip {
                suite: Some(Suite::Aes256Ccm),
                ..
            } => Measured {
                mbps: Some(90.0),
                cpu_pct: None,
            },
            r => fake(r),
        };
        assert_eq!(our_value(c, &faster_ccm), Some(0.0));
        let missing = |r: Run| match r {
            Run::Someip {
                suite: Some(Suite::Chacha20Poly1305),
                ..
            } => Measured::default(),
            r => fake(r),
        };
        assert_eq!(our_value(c, &missing), None);
    }

    #[test]
    fn camera_rows() {
        let t = camera_table(|n, level| match (n, level) {
            (2, Nosec) => Some(CameraFigures {
                median_ms: Some(2.0),
                p99_ms: Some(3.0),
                deadline_misses: Some(0),
                frames: Some(12_000),
                cpu_pct: Some(12.5),
            }),
            (2, Auth) => Some(CameraFigures {
                median_ms: Some(2.5),
                ..CameraFigures::default()
            }),
            _ => None,
        });
        assert_eq!(t.rows.len(), 15);
        assert!(t.rows.iter().all(|r| r.len() == t.head.len()));
        assert_eq!(
            t.rows[0][..3],
            ["2", "42", "no security (nosec)"].map(String::from)
        );
        assert_eq!(
            t.rows[0][5..],
            ["2.00", "3.00", "—", "0 of 12000", "12.5 %"]
        );
        assert_eq!(t.rows[1][5..], ["2.50", "—", "+25.0 %", "—", "—"]);
        assert_eq!(t.rows[2][4], "none");
        let last = t.rows.last().unwrap();
        assert_eq!(last[..2], ["16", "336"].map(String::from));
        assert_eq!(last[2], "confidentiality (conf)");
        assert_eq!(last[4], "a few");
        assert!(last[5..].iter().all(|c| c == "—"));
    }
}
