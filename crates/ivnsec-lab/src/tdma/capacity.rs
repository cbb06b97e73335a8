//! `ivnsec tdma capacity`: how many frames fit in one TDMA base period, seed 001's analysis
//! (§4, §7, §8) computed exactly.
//!
//! - eq. 2: Frame_time = Packet_size / Transmission_rate (bytes × 8 / rate; preamble, FCS and
//!   inter-frame gap are not counted, as in the seed), or a measured frame time;
//! - eq. 1 and 9: NF_max = ⌊BP / (Frame_time + GP × N_switch)⌋ (eq. 1 is N_switch = 1);
//! - eq. 4: Max_TT = 2 × (Frame_time − SO) + Diff, and with a Max_TT (from eq. 4 or measured)
//!   NF_max = ⌊BP / Max_TT⌋, as Tables 7 and 10 use it.
//!
//! Every time is an [`ExactTime`]: a fraction of picoseconds, so 10 ms / (60 B at 54 Mb/s) is
//! exactly 1125 frames (a float quotient can land on 1124.999… and floor to 1124). NF_max is
//! always rounded down: a frame that does not fit whole is not sent in that period.
//!
//! A tag (`--tag-bytes N`, or `--suite P`: the bytes profile P adds to a plain Ethernet frame,
//! from the core's SAs) is added to every frame, and each row also says how many frames fitted
//! without it.

use std::fmt;
use std::str::FromStr;

use anyhow::Result;
use ivnsec_core::profile::{Carrier, Profile};
use ivnsec_core::wire::ethernet;
use ivnsec_crypto::ProviderChoice;
use serde::Serialize;

use super::{Duration, Rate, gcd, ratio_f64};
use ivnsec_node::error::usage;

/// Most `--frame` values in one query.
pub const MAX_FRAMES: usize = 256;
/// Most switches in a cascade (`--switches`).
pub const MAX_SWITCHES: u32 = 1024;

const PS_PER_S: u128 = 1_000_000_000_000;
const PS_PER_MS: u128 = 1_000_000_000;

/// A time as an exact fraction of picoseconds (numerator / denominator, kept reduced, the
/// denominator above zero). Arithmetic is checked: `None` when a value leaves `u128`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExactTime {
    num: u128,
    den: u128,
}

impl ExactTime {
    fn new(num: u128, den: u128) -> ExactTime {
        let g = gcd(num, den).max(1);
        ExactTime {
            num: num / g,
            den: den / g,
        }
    }

    /// The time `bits` take at `rate` (eq. 2): bits × 10^12 / rate picoseconds.
    pub fn of_bits(bits: u64, rate: Rate) -> Option<ExactTime> {
        let num = u128::from(bits).checked_mul(PS_PER_S)?;
        Some(ExactTime::new(num, u128::from(rate.bps())))
    }

    /// Whether the time is zero.
    pub fn is_zero(self) -> bool {
        self.num == 0
    }

    pub fn checked_add(self, other: ExactTime) -> Option<ExactTime> {
        let num = self
            .num
            .checked_mul(other.den)?
            .checked_add(other.num.checked_mul(self.den)?)?;
        Some(ExactTime::new(num, self.den.checked_mul(other.den)?))
    }

    /// `self − other`; `None` when `other` is larger.
    pub fn checked_sub(self, other: ExactTime) -> Option<ExactTime> {
        let num = self
            .num
            .checked_mul(other.den)?
            .checked_sub(other.num.checked_mul(self.den)?)?;
        Some(ExactTime::new(num, self.den.checked_mul(other.den)?))
    }

    pub fn checked_mul(self, n: u64) -> Option<ExactTime> {
        Some(ExactTime::new(
            self.num.checked_mul(u128::from(n))?,
            self.den,
        ))
    }

    /// How many whole times `self` fit in `period`: ⌊period / self⌋ (`None` for a zero time or
    /// an overflow).
    pub fn fits_in(self, period: Duration) -> Option<u64> {
        if self.num == 0 {
            return None;
        }
        let q = u128::from(period.ps()).checked_mul(self.den)? / self.num;
        u64::try_from(q).ok()
    }

    /// The time in milliseconds as the nearest `f64` (exactly rounded while numerator and
    /// denominator fit 53 bits).
    pub fn ms_f64(self) -> f64 {
        match self.den.checked_mul(PS_PER_MS) {
            Some(den) => ratio_f64(self.num, den),
            None => self.num as f64 / self.den as f64 / PS_PER_MS as f64,
        }
    }

    /// The time in milliseconds × 10^`decimals`, rounded half up: the integer a table printing
    /// `decimals` decimals shows (0.2088… ms at 4 decimals is 2089).
    pub fn ms_rounded(self, decimals: u32) -> Option<u128> {
        let scaled = self.num.checked_mul(10u128.checked_pow(decimals)?)?;
        let den = self.den.checked_mul(PS_PER_MS)?;
        let (q, r) = (scaled / den, scaled % den);
        Some(if r >= den - r { q + 1 } else { q })
    }

    /// Whether the value in milliseconds has at most `decimals` decimals.
    pub fn ms_is_exact_at(self, decimals: u32) -> bool {
        let scaled = 10u128
            .checked_pow(decimals)
            .and_then(|p| self.num.checked_mul(p));
        match (scaled, self.den.checked_mul(PS_PER_MS)) {
            (Some(s), Some(den)) => s % den == 0,
            _ => false,
        }
    }

    /// Milliseconds for a table: exact with at most `decimals` decimals (trailing zeros cut),
    /// otherwise rounded half up and marked with a leading `~` (`~0.008889`).
    pub fn ms_text(self, decimals: u32) -> String {
        let Some(v) = self.ms_rounded(decimals) else {
            return format!("~{:.*}", decimals as usize, self.ms_f64());
        };
        let p = 10u128.pow(decimals);
        let mut s = format!("{}.{:0w$}", v / p, v % p, w = decimals as usize);
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
        if self.ms_is_exact_at(decimals) {
            s
        } else {
            format!("~{s}")
        }
    }
}

impl From<Duration> for ExactTime {
    fn from(d: Duration) -> ExactTime {
        ExactTime::new(u128::from(d.ps()), 1)
    }
}

/// The switches a frame crosses: one count, or every count of an inclusive range (`1..5` is 1,
/// 2, 3, 4 and 5), each at least 1 and at most [`MAX_SWITCHES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switches {
    first: u32,
    last: u32,
}

impl Switches {
    /// One switch: equation 1.
    pub const ONE: Switches = Switches { first: 1, last: 1 };

    /// Every count from `first` to `last`, both included; `None` unless 1 ≤ first ≤ last ≤
    /// [`MAX_SWITCHES`].
    pub fn range(first: u32, last: u32) -> Option<Switches> {
        (1 <= first && first <= last && last <= MAX_SWITCHES).then_some(Switches { first, last })
    }

    /// The counts, in order.
    pub fn counts(self) -> impl Iterator<Item = u32> {
        self.first..=self.last
    }
}

impl FromStr for Switches {
    type Err = String;

    fn from_str(s: &str) -> Result<Switches, String> {
        let bad = |why: &str| {
            let shown: String = s.chars().take(32).collect();
            format!(
                "'{shown}' is not a switch count: {why}; write N or A..B (both included), \
                 e.g. 1 or 1..5, with 1 <= A <= B <= {MAX_SWITCHES}"
            )
        };
        let count = |t: &str| -> Result<u32, String> {
            let t = t.trim();
            if t.is_empty() || t.len() > 10 || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("expected a whole number"));
            }
            t.parse().map_err(|_| bad("too large"))
        };
        let (first, last) = match s.split_once("..") {
            Some((a, b)) => (count(a)?, count(b)?),
            None => {
                let n = count(s)?;
                (n, n)
            }
        };
        if first == 0 {
            return Err(bad("a frame crosses at least 1 switch"));
        }
        if first > last {
            return Err(bad("the range is empty"));
        }
        Switches::range(first, last).ok_or_else(|| bad("too many switches"))
    }
}

impl fmt::Display for Switches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}..{}", self.first, self.last)
        }
    }
}

/// The tag added to every frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    None,
    /// A fixed number of bytes (seed 001: 20 for HMAC-SHA1, 32 for HMAC-SHA256 and SHA3-256).
    Bytes(u32),
    /// What a profile adds to a plain Ethernet frame (IVN-AE header and tag, MACsec SecTAG and
    /// ICV; CBC padding depends on the frame), as the core's SAs build the frame.
    Suite(Profile),
}

/// How NF_max is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaxTt {
    /// Equations 1 and 9: NF_max = ⌊BP / (Frame_time + GP × N_switch)⌋.
    None,
    /// A measured maximum transmission time, one for every frame or one per frame (in the
    /// order of the frames): NF_max = ⌊BP / Max_TT⌋.
    Given(Vec<Duration>),
    /// Equation 4: Max_TT = 2 × (Frame_time − SO) + Diff, NF_max = ⌊BP / Max_TT⌋.
    Eq4 {
        switch_overhead: Duration,
        diff: Duration,
    },
}

/// What `ivnsec tdma capacity` is asked.
#[derive(Clone, Debug)]
pub struct Query {
    /// Base period.
    pub bp: Duration,
    /// Guard period (per switch).
    pub gp: Duration,
    /// Transmission rate (eq. 2).
    pub rate: Rate,
    /// Frame sizes in bytes, tag not included (1 to [`MAX_FRAMES`] of them).
    pub frames: Vec<u32>,
    /// Measured frame times instead of eq. 2: none, one for every frame, or one per frame.
    pub frame_times: Vec<Duration>,
    pub switches: Switches,
    pub max_tt: MaxTt,
    pub tag: Tag,
}

/// Which equations a query's rows come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Equations 1 and 9 (and 2 unless frame times were measured).
    Eq1,
    /// Equation 4 for Max_TT, then ⌊BP / Max_TT⌋.
    Eq4,
    /// A measured Max_TT, then ⌊BP / Max_TT⌋.
    MaxTtGiven,
}

/// One (frame, switch count) of a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The frame size as given, tag not included.
    pub frame: u32,
    /// Bytes the tag adds to this frame (0 without one).
    pub tag_bytes: u32,
    /// Bytes on the link: `frame` + `tag_bytes`.
    pub frame_bytes: u64,
    pub rate: Rate,
    pub bp: Duration,
    pub gp: Duration,
    pub switches: u32,
    /// Eq. 2 for `frame_bytes`, or the measured frame time.
    pub frame_time: ExactTime,
    /// Whether `frame_time` was measured (given) rather than computed.
    pub frame_time_measured: bool,
    /// The maximum transmission time (eq. 4 or measured); `None` under eq. 1 and 9.
    pub max_tt: Option<ExactTime>,
    /// What one frame takes of the base period: Frame_time + GP × N_switch, or Max_TT.
    pub slot: ExactTime,
    /// ⌊BP / slot⌋.
    pub nf_max: u64,
    /// NF_max of the same frame without its tag (`None` without a tag).
    pub nf_max_untagged: Option<u64>,
}

impl Query {
    /// Which equations the rows come from.
    pub fn method(&self) -> Method {
        match self.max_tt {
            MaxTt::None => Method::Eq1,
            MaxTt::Given(_) => Method::MaxTtGiven,
            MaxTt::Eq4 { .. } => Method::Eq4,
        }
    }

    /// Every (frame, switch count), frames in the order given, switch counts ascending. Bad
    /// values and combinations are usage errors (exit 2) that say how to fix them.
    pub fn rows(&self) -> Result<Vec<Row>> {
        self.check()?;
        let mut rows = Vec::new();
        for (i, &frame) in self.frames.iter().enumerate() {
            let tag_bytes = self.tag_bytes(frame)?;
            let measured = pick(&self.frame_times, i);
            let given_max_tt = match &self.max_tt {
                MaxTt::Given(v) => pick(v, i),
                _ => None,
            };
            for n in self.switches.counts() {
                let tagged = self.one(
                    u64::from(frame) + u64::from(tag_bytes),
                    measured,
                    given_max_tt,
                    n,
                )?;
                let nf_max_untagged = match self.tag {
                    Tag::None => None,
                    _ => Some(
                        self.one(u64::from(frame), measured, given_max_tt, n)?
                            .nf_max,
                    ),
                };
                rows.push(Row {
                    frame,
                    tag_bytes,
                    nf_max_untagged,
                    ..tagged
                });
            }
        }
        Ok(rows)
    }

    fn check(&self) -> Result<()> {
        if self.bp.ps() == 0 {
            return Err(usage(
                "--bp must be above 0 (the base period, e.g. --bp 10ms)",
            ));
        }
        if self.frames.is_empty() || self.frames.len() > MAX_FRAMES {
            return Err(usage(format!(
                "--frame: give 1 to {MAX_FRAMES} frame sizes in bytes (e.g. --frame 60 80), not {}",
                self.frames.len()
            )));
        }
        if self.frames.contains(&0) {
            return Err(usage("--frame 0: a frame has at least 1 byte"));
        }
        let per_frame = |what: &str, v: &[Duration]| -> Result<()> {
            if !(v.len() <= 1 || v.len() == self.frames.len()) {
                return Err(usage(format!(
                    "{what}: give one duration for every frame or one per --frame in the same \
                     order ({} frames, {} durations)",
                    self.frames.len(),
                    v.len()
                )));
            }
            if v.iter().any(|d| d.ps() == 0) {
                return Err(usage(format!("{what} must be above 0")));
            }
            Ok(())
        };
        per_frame("--frame-time", &self.frame_times)?;
        if let MaxTt::Given(v) = &self.max_tt {
            if v.is_empty() {
                return Err(usage("--max-tt: give at least one duration"));
            }
            per_frame("--max-tt", v)?;
        }
        if self.max_tt != MaxTt::None && self.switches != Switches::ONE {
            return Err(usage(format!(
                "--switches {}: a maximum transmission time (--max-tt, or eq. 4 from \
                 --switch-overhead and --diff) describes a path through one switch; drop \
                 --switches, or drop --max-tt/--switch-overhead/--diff to use eq. 9",
                self.switches
            )));
        }
        if self.tag != Tag::None {
            let measured = if !self.frame_times.is_empty() {
                Some("--frame-time")
            } else if matches!(self.max_tt, MaxTt::Given(_)) {
                Some("--max-tt")
            } else {
                None
            };
            if let Some(what) = measured {
                return Err(usage(format!(
                    "{what} is measured on the frame as sent, so a tag (--tag-bytes/--suite) \
                     cannot be added to it; give the tagged size with --frame instead (e.g. \
                     --frame 80 for 60 bytes with a 20-byte tag)"
                )));
            }
        }
        Ok(())
    }

    /// Bytes the tag adds to a frame of `frame` bytes.
    fn tag_bytes(&self, frame: u32) -> Result<u32> {
        match self.tag {
            Tag::None => Ok(0),
            Tag::Bytes(n) => Ok(n),
            Tag::Suite(p) => suite_overhead(p, frame),
        }
    }

    /// The row of a frame of `bytes` bytes (tag included) crossing `n` switches.
    fn one(
        &self,
        bytes: u64,
        measured: Option<Duration>,
        given_max_tt: Option<Duration>,
        n: u32,
    ) -> Result<Row> {
        let too_large = || {
            usage(format!(
                "the values are too large to compute exactly ({bytes}-byte frames, --bp {}, \
                 --gp {}, --rate {}, {n} switches)",
                self.bp, self.gp, self.rate
            ))
        };
        let frame_time = match measured {
            Some(d) => ExactTime::from(d),
            None => bytes
                .checked_mul(8)
                .and_then(|bits| ExactTime::of_bits(bits, self.rate))
                .ok_or_else(too_large)?,
        };
        let max_tt = match &self.max_tt {
            MaxTt::None => None,
            MaxTt::Given(_) => given_max_tt.map(ExactTime::from),
            MaxTt::Eq4 {
                switch_overhead,
                diff,
            } => {
                let so = ExactTime::from(*switch_overhead);
                let less = frame_time.checked_sub(so).ok_or_else(|| {
                    usage(format!(
                        "--switch-overhead {switch_overhead} is longer than the frame time of \
                         {bytes}-byte frames ({} ms): eq. 4 subtracts it from the frame time",
                        frame_time.ms_text(6)
                    ))
                })?;
                let t = less
                    .checked_mul(2)
                    .and_then(|t| t.checked_add(ExactTime::from(*diff)))
                    .ok_or_else(too_large)?;
                if t.is_zero() {
                    return Err(usage(format!(
                        "eq. 4 gives Max_TT = 0 for {bytes}-byte frames (frame time = \
                         --switch-overhead and --diff 0); give a --diff above 0"
                    )));
                }
                Some(t)
            }
        };
        let slot = match max_tt {
            Some(t) => t,
            None => ExactTime::from(self.gp)
                .checked_mul(u64::from(n))
                .and_then(|g| frame_time.checked_add(g))
                .ok_or_else(too_large)?,
        };
        let nf_max = slot.fits_in(self.bp).ok_or_else(too_large)?;
        Ok(Row {
            frame: 0,
            tag_bytes: 0,
            frame_bytes: bytes,
            rate: self.rate,
            bp: self.bp,
            gp: self.gp,
            switches: n,
            frame_time,
            frame_time_measured: measured.is_some(),
            max_tt,
            slot,
            nf_max,
            nf_max_untagged: None,
        })
    }
}

/// The `i`th of a list given once for all or once per frame.
fn pick(v: &[Duration], i: usize) -> Option<Duration> {
    match v {
        [] => None,
        [one] => Some(*one),
        many => many.get(i).copied(),
    }
}

/// Bytes profile `p` adds to a plain Ethernet frame of `frame` bytes (header included): the
/// frame the core's SA builds for the same payload, minus the plain frame. IVN-AE and MACsec
/// only (they protect whole Ethernet frames); the IP and UDP families are usage errors.
pub fn suite_overhead(p: Profile, frame: u32) -> Result<u32> {
    if p.carrier() != Carrier::Ethernet {
        return Err(usage(format!(
            "--suite {p}: {} protects IP/UDP payloads, not Ethernet frames; --suite takes an \
             IVN-AE or MACsec profile (`ivnsec suites`); give the bytes {} adds with --tag-bytes",
            p.family_name(),
            p.family_name()
        )));
    }
    let frame_len = usize::try_from(frame).unwrap_or(usize::MAX);
    let Some(payload) = frame_len.checked_sub(ethernet::HEADER_LEN) else {
        return Err(usage(format!(
            "--frame {frame} with --suite {p}: an Ethernet frame has at least {} bytes (its header)",
            ethernet::HEADER_LEN
        )));
    };
    let protected = ivnsec_node::channel::frame_bytes(p, ProviderChoice::Auto, payload)?;
    protected
        .checked_sub(frame_len)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| usage(format!("--suite {p}: no overhead for {frame}-byte frames")))
}

/// The end nodes a linear cascade of `switches` switches with `ports` ports each can connect:
/// every switch but the last gives one port to the link to the next, every switch but the first
/// one to the link from the previous (seed 001 Table 11: 8 ports, 1..5 switches: 8, 14, 20, 26,
/// 32). `None` when the links take more ports than there are.
pub fn cascade_end_nodes(ports: u32, switches: u32) -> Option<u32> {
    if switches == 0 {
        return Some(0);
    }
    let links = 2 * u64::from(switches - 1);
    let total = u64::from(ports) * u64::from(switches);
    if switches > 1 && ports < 2 {
        return None;
    }
    total.checked_sub(links).and_then(|n| u32::try_from(n).ok())
}

/// One row of `--json`, its keys in this order.
#[derive(Serialize)]
struct JsonRow {
    frame_bytes: u64,
    rate_bps: u64,
    bp_ms: f64,
    gp_ms: f64,
    switches: u32,
    frame_time_ms: f64,
    max_tt_ms: Option<f64>,
    nf_max: u64,
}

/// `{"rows": [{"frame_bytes", "rate_bps", "bp_ms", "gp_ms", "switches", "frame_time_ms",
/// "max_tt_ms", "nf_max"}]}`; `max_tt_ms` is null under eq. 1 and 9. Milliseconds are the
/// nearest `f64` of the exact values.
pub fn json(rows: &[Row]) -> impl Serialize + use<> {
    #[derive(Serialize)]
    struct Rows {
        rows: Vec<JsonRow>,
    }
    let rows: Vec<JsonRow> = rows
        .iter()
        .map(|r| JsonRow {
            frame_bytes: r.frame_bytes,
            rate_bps: r.rate.bps(),
            bp_ms: r.bp.ms_f64(),
            gp_ms: r.gp.ms_f64(),
            switches: r.switches,
            frame_time_ms: r.frame_time.ms_f64(),
            max_tt_ms: r.max_tt.map(ExactTime::ms_f64),
            nf_max: r.nf_max,
        })
        .collect();
    Rows { rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_node::error::exit_code;

    fn dur(s: &str) -> Duration {
        s.parse().unwrap()
    }

    fn query(rate: &str, gp: &str, frames: &[u32]) -> Query {
        Query {
            bp: dur("10ms"),
            gp: dur(gp),
            rate: rate.parse().unwrap(),
            frames: frames.to_vec(),
            frame_times: Vec::new(),
            switches: Switches::ONE,
            max_tt: MaxTt::None,
            tag: Tag::None,
        }
    }

    fn nf(q: &Query) -> Vec<u64> {
        q.rows().unwrap().iter().map(|r| r.nf_max).collect()
    }

    /// 10 ms / (480 bits at 54 Mb/s) = 540 000 / 480 = 1125 exactly. 10 ms / (8000 bits at
    /// 100 Mb/s) = 125 exactly, but in floating point 0.01 / 8e-5 is 124.99999999999999 and
    /// floors to 124; likewise 10 ms / (25 µs + 3 × 0.2 ms) = 16 and 10 / 0.625 in floats.
    #[test]
    fn exact_where_floats_are_not() {
        assert_eq!(nf(&query("54M", "0ms", &[60])), [1125]);
        let float: f64 = 10e-3 / (8000.0 / 100e6);
        assert_eq!(float.floor(), 124.0, "the float quotient is {float}");
        assert_eq!(nf(&query("100M", "0ms", &[1000])), [125]);
        let float: f64 = 10.0 / (0.025 + 0.2 * 3.0);
        assert_eq!(float.floor(), 15.0, "the float quotient is {float}");
        let mut q = query("100M", "200us", &[60]);
        q.frame_times = vec![dur("25us")];
        q.switches = "3".parse().unwrap();
        assert_eq!(nf(&q), [16]);
        // 10 ms / (6.4 µs) = 1562.5: rounded down.
        assert_eq!(nf(&query("100M", "0ms", &[80])), [1562]);
        // A period that holds exactly 3 slots gives 3, one picosecond less gives 2.
        let mut q = query("1G", "0ms", &[125]);
        q.bp = dur("3us");
        assert_eq!(nf(&q), [3]);
        q.bp = Duration::from_ps(2_999_999);
        assert_eq!(nf(&q), [2]);
    }

    #[test]
    fn exact_time_arithmetic() {
        let t = ExactTime::of_bits(480, "54M".parse().unwrap()).unwrap();
        assert_eq!(t.ms_rounded(4), Some(89));
        assert_eq!(t.ms_text(6), "~0.008889");
        assert!(!t.ms_is_exact_at(9));
        assert_eq!(t.ms_f64(), 2.0 / 225.0);
        let t = ExactTime::of_bits(480, "100M".parse().unwrap()).unwrap();
        assert_eq!(t.ms_text(6), "0.0048");
        assert_eq!(t.ms_f64(), 0.0048);
        assert_eq!(ExactTime::from(dur("10ms")).ms_text(6), "10");
        // Half up at the printed precision: 0.00005 ms at 4 decimals is 0.0001.
        assert_eq!(ExactTime::from(dur("50ns")).ms_rounded(4), Some(1));
        assert_eq!(ExactTime::from(dur("49ns")).ms_rounded(4), Some(0));
        let a = ExactTime::from(dur("1us"));
        assert_eq!(a.checked_sub(ExactTime::from(dur("2us"))), None);
        assert_eq!(
            a.checked_add(t).unwrap(),
            ExactTime::from(Duration::from_ps(5_800_000))
        );
        assert_eq!(ExactTime::from(Duration::ZERO).fits_in(dur("1ms")), None);
    }

    #[test]
    fn switches_parse() {
        assert_eq!(
            "3".parse::<Switches>()
                .unwrap()
                .counts()
                .collect::<Vec<_>>(),
            [3]
        );
        assert_eq!(
            "1..5"
                .parse::<Switches>()
                .unwrap()
                .counts()
                .collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(
            "2..2".parse::<Switches>().unwrap(),
            Switches::range(2, 2).unwrap()
        );
        for (bad, why) in [
            ("0", "at least 1 switch"),
            ("0..3", "at least 1 switch"),
            ("5..1", "empty"),
            ("1..", "whole number"),
            ("x", "whole number"),
            ("-1", "whole number"),
            ("1..2000", "too many"),
            ("99999999999", "whole number"),
            ("4294967296", "too large"),
        ] {
            let e = bad.parse::<Switches>().unwrap_err();
            assert!(
                e.contains(why) && e.contains("e.g. 1 or 1..5"),
                "{bad}: {e}"
            );
        }
    }

    /// Eq. 9 adds one guard period per switch; eq. 4 and a given Max_TT replace the slot.
    #[test]
    fn methods() {
        let mut q = query("100M", "200us", &[60]);
        q.frame_times = vec![dur("115us")];
        q.switches = "1..3".parse().unwrap();
        let rows = q.rows().unwrap();
        let slots: Vec<String> = rows.iter().map(|r| r.slot.ms_text(6)).collect();
        assert_eq!(slots, ["0.315", "0.515", "0.715"]);
        assert!(
            rows.iter()
                .all(|r| r.max_tt.is_none() && r.frame_time_measured)
        );
        assert_eq!(q.method(), Method::Eq1);

        let mut q = query("100M", "200us", &[60]);
        q.frame_times = vec![dur("115us")];
        q.max_tt = MaxTt::Eq4 {
            switch_overhead: dur("100us"),
            diff: dur("200us"),
        };
        let r = &q.rows().unwrap()[0];
        assert_eq!(r.max_tt, Some(ExactTime::from(dur("230us"))));
        assert_eq!((r.slot, r.nf_max), (r.max_tt.unwrap(), 43));

        let mut q = query("54M", "200us", &[60, 80]);
        q.max_tt = MaxTt::Given(vec![dur("1.024ms"), dur("1.032ms")]);
        assert_eq!(nf(&q), [9, 9]);
        assert_eq!(q.method(), Method::MaxTtGiven);
    }

    #[test]
    fn tags_add_bytes_and_show_the_untagged_count() {
        let mut q = query("100M", "0ms", &[60]);
        q.tag = Tag::Bytes(20);
        let r = &q.rows().unwrap()[0];
        assert_eq!((r.frame, r.tag_bytes, r.frame_bytes), (60, 20, 80));
        assert_eq!((r.nf_max, r.nf_max_untagged), (1562, Some(2083)));
    }

    /// The overhead of a profile is the one the core's SAs put on the wire (docs/wire-ivnae.md,
    /// IEEE 802.1AE), counted by hand here.
    #[test]
    fn suite_overheads() {
        let o = |name: &str, frame| suite_overhead(name.parse().unwrap(), frame).unwrap();
        // IVN-AE: 12-byte header + 2-byte inner EtherType + the 20-byte HMAC-SHA1 tag.
        assert_eq!(o("hmac-sha1", 60), 12 + 2 + 20);
        assert_eq!(o("hmac-sha256", 60), 12 + 2 + 32);
        assert_eq!(o("aes128-gcm", 60), 12 + 2 + 16);
        // MACsec as the experiments send it: a 16-byte SecTAG (with the SCI) and the 16-byte
        // ICV (IEEE 802.1AE-2018 9.3, 9.9); integrity only adds the same.
        assert_eq!(o("macsec-gcm-aes-128", 60), 16 + 16);
        assert_eq!(o("macsec-gcm-aes-xpn-256/auth", 1514), 16 + 16);
        // AES-CBC pads the body (inner EtherType + payload) with PKCS#7, 1 to 16 bytes
        // (docs/wire-ivnae.md): 2 + 46 = 48 gets a whole block, 2 + 47 = 49 gets 15.
        assert_eq!(o("aes128-cbc-hmac-sha256", 60), 12 + 2 + 16 + 32);
        assert_eq!(o("aes128-cbc-hmac-sha256", 61), 12 + 2 + 15 + 32);
        for bad in ["esp-aes128-gcm", "secoc-cmac-aes128", "someip-aes128-gcm"] {
            let e = suite_overhead(bad.parse().unwrap(), 60).unwrap_err();
            assert_eq!(exit_code(&e), 2);
            assert!(e.to_string().contains("--tag-bytes"), "{e}");
        }
        let e = suite_overhead("hmac-sha1".parse().unwrap(), 10).unwrap_err();
        assert!(e.to_string().contains("at least 14 bytes"), "{e}");
    }

    #[test]
    fn bad_queries_are_usage_errors() {
        let ok = query("100M", "200us", &[60, 80]);
        assert!(ok.rows().is_ok());
        let cases: Vec<(Query, &str)> = vec![
            (
                Query {
                    bp: Duration::ZERO,
                    ..ok.clone()
                },
                "--bp must be above 0",
            ),
            (
                Query {
                    frames: vec![],
                    ..ok.clone()
                },
                "give 1 to 256",
            ),
            (
                Query {
                    frames: vec![1; 257],
                    ..ok.clone()
                },
                "give 1 to 256",
            ),
            (
                Query {
                    frames: vec![60, 0],
                    ..ok.clone()
                },
                "--frame 0",
            ),
            (
                Query {
                    frame_times: vec![dur("1us"); 3],
                    ..ok.clone()
                },
                "one per --frame",
            ),
            (
                Query {
                    frame_times: vec![Duration::ZERO],
                    ..ok.clone()
                },
                "--frame-time must be above 0",
            ),
            (
                Query {
                    max_tt: MaxTt::Given(vec![]),
                    ..ok.clone()
                },
                "at least one",
            ),
            (
                Query {
                    max_tt: MaxTt::Given(vec![dur("1ms")]),
                    switches: "1..2".parse().unwrap(),
                    ..ok.clone()
                },
                "one switch",
            ),
            (
                Query {
                    frame_times: vec![dur("115us")],
                    tag: Tag::Bytes(20),
                    ..ok.clone()
                },
                "--frame-time is measured",
            ),
            (
                Query {
                    max_tt: MaxTt::Given(vec![dur("1ms")]),
                    tag: Tag::Bytes(20),
                    ..ok.clone()
                },
                "--max-tt is measured",
            ),
            (
                Query {
                    max_tt: MaxTt::Eq4 {
                        switch_overhead: dur("0.1ms"),
                        diff: dur("0.2ms"),
                    },
                    ..ok.clone()
                },
                "longer than the frame time",
            ),
            (
                Query {
                    max_tt: MaxTt::Eq4 {
                        switch_overhead: Duration::ZERO,
                        diff: Duration::ZERO,
                    },
                    frame_times: vec![Duration::ZERO],
                    ..ok.clone()
                },
                "--frame-time must be above 0",
            ),
            (
                Query {
                    max_tt: MaxTt::Eq4 {
                        switch_overhead: dur("1us"),
                        diff: Duration::ZERO,
                    },
                    frame_times: vec![dur("1us")],
                    ..ok.clone()
                },
                "Max_TT = 0",
            ),
            (
                Query {
                    bp: Duration::from_ps(u64::MAX),
                    rate: Rate::from_bps(u64::MAX).unwrap(),
                    gp: Duration::from_ps(u64::MAX),
                    switches: Switches::range(1, MAX_SWITCHES).unwrap(),
                    ..ok.clone()
                },
                "too large to compute exactly",
            ),
        ];
        for (q, why) in cases {
            let e = q.rows().unwrap_err();
            assert_eq!(exit_code(&e), 2, "{q:?}");
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }

    /// `max_tt_ms` is null without a Max_TT and a number with one (the key list is checked
    /// through the command line, crates/ivnsec/tests/cli/tdma.rs).
    #[test]
    fn json_max_tt() {
        let mut q = query("100M", "200us", &[60]);
        let v = serde_json::to_value(json(&q.rows().unwrap())).unwrap();
        assert_eq!(v["rows"][0].as_object().map(|o| o.len()), Some(8));
        assert!(v["rows"][0]["max_tt_ms"].is_null());
        q.max_tt = MaxTt::Given(vec![dur("0.23ms")]);
        let v = serde_json::to_value(json(&q.rows().unwrap())).unwrap();
        assert_eq!(v["rows"][0]["max_tt_ms"], 0.23);
        assert_eq!(v["rows"][0]["nf_max"], 43);
    }

    #[test]
    fn cascade_nodes() {
        let nodes: Vec<u32> = (1..=5).map(|n| cascade_end_nodes(8, n).unwrap()).collect();
        assert_eq!(nodes, [8, 14, 20, 26, 32]);
        assert_eq!(cascade_end_nodes(1, 2), None);
        assert_eq!(cascade_end_nodes(2, 3), Some(2));
    }
}
