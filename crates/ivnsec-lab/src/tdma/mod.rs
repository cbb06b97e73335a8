//! Time-triggered (TDMA) networks, seed 001 (Sensors 2016): how many authenticated frames fit
//! in a base period, on TTEthernet (100 Mb/s, guard period 0.2 ms) and TDMA over 802.11
//! (54 Mb/s), with cascaded switches (docs/tdma.md).
//!
//! This module holds the exact quantities the TDMA code shares and their command-line
//! spelling:
//!
//! - [`Duration`]: a whole number of picoseconds (`10ms`, `0.2ms`, `115us`, `8ns`, `1s`);
//! - [`Rate`]: a whole number of bits per second (`100M`, `54M`, `1G`, `2.5G`, `250000000`);
//! - [`QuantityError`]: why a spelling was refused (it names the input and says what to write).
//!
//! Both parse exactly: `0.2ms` is 200 000 000 ps, `2.5G` is 2 500 000 000 b/s. A value that is
//! not a whole number of the base unit (`0.5ps`, `0.5` b/s), a missing or unknown unit, a sign,
//! an exponent or a value beyond `u64` is refused, never rounded. [`capacity`] is the analysis
//! of seed 001 (equations 1, 2, 4 and 9) on these quantities.
//!
//! Schedules and runs (docs/tdma-run.md): [`flows`] reads the flows file, [`schedule`] places
//! one slot per flow in the base period (eq. 9), [`node`] is the process role of an ECU (sends
//! at its slot times, records arrivals) and of a switch probe (timestamps frames at the bridge
//! ports), and [`run`] builds the testbed, runs a schedule and measures it. [`sweep`] is a
//! plan's `[[tdma]]` table: the analysis and the measurement for every profile × frame ×
//! switch count (plans/seed001.toml).

use std::fmt;
use std::str::FromStr;

pub mod capacity;
pub mod flows;
pub mod node;
pub mod plan;
pub mod report;
pub mod run;
mod run_text;
pub mod schedule;
pub mod seed001;
pub mod sweep;

/// Longest spelling of a quantity that is parsed at all (longer input is refused unread).
const MAX_SPELLING: usize = 64;

/// A duration: a whole number of picoseconds (at most `u64::MAX`, about 213 days).
///
/// Spelled as a decimal number and a unit: `s`, `ms`, `us` (or `µs`), `ns`, `ps`; e.g. `10ms`,
/// `0.2ms`, `115us`, `0.0048ms`. [`Display`](fmt::Display) prints the exact value in the
/// largest unit that keeps it at least 1 (`0.2ms` prints as `200us`), which parses back to the
/// same value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    ps: u64,
}

impl Duration {
    /// Zero.
    pub const ZERO: Duration = Duration { ps: 0 };

    /// A duration of `ps` picoseconds.
    pub const fn from_ps(ps: u64) -> Duration {
        Duration { ps }
    }

    /// The duration in picoseconds.
    pub const fn ps(self) -> u64 {
        self.ps
    }

    /// The duration in milliseconds as the nearest `f64` (for JSON and plots; arithmetic is
    /// done on [`ps`](Duration::ps)).
    pub fn ms_f64(self) -> f64 {
        ratio_f64(u128::from(self.ps), PS_PER_MS)
    }

    /// The duration as a [`std::time::Duration`], rounded down to whole nanoseconds.
    pub const fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.ps / 1_000)
    }
}

/// Picoseconds per unit, largest unit first.
const DURATION_UNITS: [(&str, u64); 5] = [
    ("s", 1_000_000_000_000),
    ("ms", 1_000_000_000),
    ("us", 1_000_000),
    ("ns", 1_000),
    ("ps", 1),
];
const PS_PER_MS: u128 = 1_000_000_000;

impl FromStr for Duration {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Duration, QuantityError> {
        let err = |kind| QuantityError::new(Quantity::Duration, s, kind);
        let (number, unit) = split_number(s).map_err(err)?;
        let unit = match unit {
            "µs" | "μs" => "us",
            u => u,
        };
        let scale = match DURATION_UNITS.iter().find(|(name, _)| *name == unit) {
            Some(&(_, scale)) => scale,
            None if unit.is_empty() => return Err(err(ErrorKind::MissingUnit)),
            None => return Err(err(ErrorKind::UnknownUnit(unit.into()))),
        };
        let ps = number.scaled(scale).map_err(err)?;
        Ok(Duration { ps })
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_in_largest_unit(f, self.ps, &DURATION_UNITS)
    }
}

/// A bit rate: a whole number of bits per second, above zero.
///
/// Spelled as a decimal number with an optional SI multiplier (powers of ten, as link rates are
/// named): `k`/`K` (10^3), `M`/`m` (10^6), `G`/`g` (10^9); e.g. `100M` (100BASE-T1, seed 001's
/// TTEthernet), `54M` (802.11g), `1G`, `2.5G`, `250000000`. [`Display`](fmt::Display) prints
/// the exact value with the largest multiplier that keeps it at least 1 (`100M`), which parses
/// back to the same value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate {
    bps: u64,
}

impl Rate {
    /// A rate of `bps` bits per second; `None` for zero.
    pub const fn from_bps(bps: u64) -> Option<Rate> {
        if bps == 0 { None } else { Some(Rate { bps }) }
    }

    /// The rate in bits per second (never zero).
    pub const fn bps(self) -> u64 {
        self.bps
    }
}

/// Multipliers of a rate, largest first.
const RATE_UNITS: [(&str, u64); 4] = [
    ("G", 1_000_000_000),
    ("M", 1_000_000),
    ("k", 1_000),
    ("", 1),
];

impl FromStr for Rate {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Rate, QuantityError> {
        let err = |kind| QuantityError::new(Quantity::Rate, s, kind);
        let (number, unit) = split_number(s).map_err(err)?;
        let scale = match unit {
            "" => 1,
            "k" | "K" => 1_000,
            "M" | "m" => 1_000_000,
            "G" | "g" => 1_000_000_000,
            u => return Err(err(ErrorKind::UnknownUnit(u.into()))),
        };
        let bps = number.scaled(scale).map_err(err)?;
        Rate::from_bps(bps).ok_or_else(|| err(ErrorKind::Zero))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_in_largest_unit(f, self.bps, &RATE_UNITS)
    }
}

/// Which quantity a [`QuantityError`] is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    Duration,
    Rate,
}

/// Why a duration or a rate did not parse. Its text quotes the input (cut at 64 characters),
/// says what is wrong and how a valid value is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantityError {
    quantity: Quantity,
    input: String,
    kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ErrorKind {
    TooLong,
    NotANumber,
    MissingUnit,
    UnknownUnit(String),
    /// More decimals than the base unit resolves.
    TooFine,
    TooLarge,
    Zero,
}

impl QuantityError {
    fn new(quantity: Quantity, input: &str, kind: ErrorKind) -> QuantityError {
        QuantityError {
            quantity,
            input: input.chars().take(MAX_SPELLING).collect(),
            kind,
        }
    }

    /// The quantity that did not parse.
    pub fn quantity(&self) -> Quantity {
        self.quantity
    }
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, how) = match self.quantity {
            Quantity::Duration => (
                "duration",
                "a number and a unit (s, ms, us, ns, ps), e.g. 10ms, 0.2ms, 115us",
            ),
            Quantity::Rate => (
                "rate",
                "bits per second with an optional k, M or G, e.g. 100M, 54M, 1G, 2.5G",
            ),
        };
        write!(f, "'{}' is not a {what}: ", self.input)?;
        match &self.kind {
            ErrorKind::TooLong => write!(f, "longer than {MAX_SPELLING} characters")?,
            ErrorKind::NotANumber => {
                f.write_str("expected a decimal number (no sign, no exponent)")?
            }
            ErrorKind::MissingUnit => f.write_str("the unit is missing")?,
            ErrorKind::UnknownUnit(u) => write!(f, "unknown unit '{u}'")?,
            ErrorKind::TooFine => match self.quantity {
                Quantity::Duration => f.write_str("finer than 1 ps")?,
                Quantity::Rate => f.write_str("not a whole number of bits per second")?,
            },
            ErrorKind::TooLarge => match self.quantity {
                Quantity::Duration => f.write_str("longer than 2^64 ps (about 213 days)")?,
                Quantity::Rate => f.write_str("above 2^64 bits per second")?,
            },
            ErrorKind::Zero => f.write_str("a rate must be above 0")?,
        }
        write!(f, "; write {how}")
    }
}

impl std::error::Error for QuantityError {}

/// A non-negative decimal number as written: `digits` × 10^-`decimals`.
struct Decimal {
    digits: u128,
    decimals: u32,
}

impl Decimal {
    /// The number times `scale`, which must be a whole number that fits a `u64`.
    fn scaled(&self, scale: u64) -> Result<u64, ErrorKind> {
        let den = 10u128.pow(self.decimals);
        let num = self
            .digits
            .checked_mul(u128::from(scale))
            .ok_or(ErrorKind::TooLarge)?;
        if num % den != 0 {
            return Err(ErrorKind::TooFine);
        }
        u64::try_from(num / den).map_err(|_| ErrorKind::TooLarge)
    }
}

/// Splits `number unit` (blanks allowed around and between them) into the number and the unit.
fn split_number(s: &str) -> Result<(Decimal, &str), ErrorKind> {
    if s.len() > MAX_SPELLING {
        return Err(ErrorKind::TooLong);
    }
    let t = s.trim();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (&t[..end], t[end..].trim_start());
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') {
        return Err(ErrorKind::NotANumber);
    }
    // At most 38 significant digits fit a u128; more than 30 is never a sensible quantity.
    if int.len() + frac.len() > 30 {
        return Err(ErrorKind::TooLarge);
    }
    let mut digits: u128 = 0;
    for c in int.chars().chain(frac.chars()) {
        // Only ASCII digits remain; 30 of them fit a u128.
        digits = digits * 10 + u128::from(c as u8 - b'0');
    }
    let decimals = frac.len() as u32;
    Ok((Decimal { digits, decimals }, unit))
}

/// Writes `value` exactly in the largest of `units` (largest first, the last one 1) that keeps
/// it at least 1, and the unit's name.
fn write_in_largest_unit(
    f: &mut fmt::Formatter<'_>,
    value: u64,
    units: &[(&str, u64)],
) -> fmt::Result {
    let (name, scale) = units
        .iter()
        .copied()
        .find(|&(_, scale)| value >= scale)
        .or_else(|| units.last().copied())
        .unwrap_or(("", 1));
    write_exact(f, value, scale)?;
    f.write_str(name)
}

/// Writes `value / scale` as an exact decimal without trailing zeros.
fn write_exact(f: &mut fmt::Formatter<'_>, value: u64, scale: u64) -> fmt::Result {
    write!(f, "{}", value / scale)?;
    let mut rest = value % scale;
    if rest == 0 {
        return Ok(());
    }
    f.write_str(".")?;
    let mut unit = scale;
    while rest != 0 {
        unit /= 10;
        write!(f, "{}", rest / unit)?;
        rest %= unit;
    }
    Ok(())
}

/// `num / den` as the nearest `f64` when both fit 53 bits after reducing by their greatest
/// common divisor (then the one division rounds correctly: 3 / 625 prints as 0.0048); a close
/// approximation otherwise.
pub(crate) fn ratio_f64(num: u128, den: u128) -> f64 {
    let g = gcd(num, den).max(1);
    let (n, d) = (num / g, den / g);
    n as f64 / d as f64
}

/// Greatest common divisor (`gcd(0, 0)` is 0).
pub(crate) fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> u64 {
        s.parse::<Duration>()
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .ps()
    }

    #[test]
    fn durations_parse_exactly() {
        assert_eq!(d("10ms"), 10_000_000_000);
        assert_eq!(d("0.2ms"), 200_000_000);
        assert_eq!(d("115us"), 115_000_000);
        assert_eq!(d("115µs"), 115_000_000);
        assert_eq!(d("0.0048ms"), 4_800_000);
        assert_eq!(d(" 1.024 ms "), 1_024_000_000);
        assert_eq!(d("1s"), 1_000_000_000_000);
        assert_eq!(d("8ns"), 8_000);
        assert_eq!(d("3ps"), 3);
        assert_eq!(d(".5ms"), 500_000_000);
        assert_eq!(d("0ms"), 0);
        assert_eq!(d("18446744073709551615ps"), u64::MAX);
    }

    #[test]
    fn bad_durations_say_why() {
        for (bad, why) in [
            ("10", "the unit is missing"),
            ("10m", "unknown unit 'm'"),
            ("10 min", "unknown unit 'min'"),
            ("-1ms", "expected a decimal number"),
            ("1e3ms", "unknown unit 'e3ms'"),
            ("ms", "expected a decimal number"),
            ("", "expected a decimal number"),
            ("1.2.3ms", "expected a decimal number"),
            ("0.5ps", "finer than 1 ps"),
            ("1.0000000000001ms", "finer than 1 ps"),
            ("18446744073709551616ps", "longer than 2^64 ps"),
            ("99999999999999999999999999999999s", "longer than 2^64 ps"),
        ] {
            let e = bad.parse::<Duration>().unwrap_err();
            assert_eq!(e.quantity(), Quantity::Duration);
            let text = e.to_string();
            assert!(text.contains(why), "{bad}: {text}");
            assert!(text.contains("e.g. 10ms"), "{bad}: {text}");
        }
        let long = "1".repeat(100) + "ms";
        let text = long.parse::<Duration>().unwrap_err().to_string();
        assert!(text.contains("longer than 64 characters"), "{text}");
        assert!(text.len() < 200, "the input is quoted cut short: {text}");
    }

    #[test]
    fn rates_parse_exactly() {
        let r = |s: &str| {
            s.parse::<Rate>()
                .unwrap_or_else(|e| panic!("{s}: {e}"))
                .bps()
        };
        assert_eq!(r("100M"), 100_000_000);
        assert_eq!(r("54M"), 54_000_000);
        assert_eq!(r("1G"), 1_000_000_000);
        assert_eq!(r("2.5G"), 2_500_000_000);
        assert_eq!(r("250000000"), 250_000_000);
        assert_eq!(r("10k"), 10_000);
        assert_eq!(r("100m"), 100_000_000);
        for (bad, why) in [
            ("0", "above 0"),
            ("0M", "above 0"),
            ("0.5", "not a whole number"),
            ("100X", "unknown unit 'X'"),
            ("100 Mbps", "unknown unit 'Mbps'"),
            ("-1G", "expected a decimal number"),
            ("G", "expected a decimal number"),
            ("18446744073709551616", "above 2^64"),
        ] {
            let text = bad.parse::<Rate>().unwrap_err().to_string();
            assert!(text.contains(why), "{bad}: {text}");
            assert!(text.contains("e.g. 100M"), "{bad}: {text}");
        }
    }

    #[test]
    fn display_round_trips() {
        for (s, shown) in [
            ("10ms", "10ms"),
            ("0.2ms", "200us"),
            ("0.0048ms", "4.8us"),
            ("1.024ms", "1.024ms"),
            ("0ms", "0ps"),
            ("1.5s", "1.5s"),
        ] {
            let v: Duration = s.parse().unwrap();
            assert_eq!(v.to_string(), shown);
            assert_eq!(shown.parse::<Duration>().unwrap(), v);
        }
        for (s, shown) in [
            ("100M", "100M"),
            ("2.5G", "2.5G"),
            ("1500", "1.5k"),
            ("7", "7"),
        ] {
            let v: Rate = s.parse().unwrap();
            assert_eq!(v.to_string(), shown);
            assert_eq!(shown.parse::<Rate>().unwrap(), v);
        }
    }

    #[test]
    fn conversions() {
        let bp: Duration = "10ms".parse().unwrap();
        assert_eq!(bp.ms_f64(), 10.0);
        assert_eq!("0.0048ms".parse::<Duration>().unwrap().ms_f64(), 0.0048);
        assert_eq!(bp.to_std(), std::time::Duration::from_millis(10));
        assert_eq!(Duration::from_ps(1_999).to_std().as_nanos(), 1);
        assert_eq!(Rate::from_bps(0), None);
        assert_eq!(gcd(12, 18), 6);
        assert_eq!(ratio_f64(3, 625), 0.0048);
    }
}
