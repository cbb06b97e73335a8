//! A TDMA schedule for periodic flows on a `cascade:N` testbed (seed 001 §4, §8.1): which ECU
//! sends which frame in which slot of the base period (BP), and when each switch on the way
//! forwards it.
//!
//! Slot arithmetic, as seed 001 eq. 9 reasons it: a frame needs its frame time on the wire
//! (bytes × 8 / rate, eq. 2) and one guard period (GP) per switch it crosses, so a slot is
//! `Frame_time + GP × N_switch` long and a BP holds `NF_max = ⌊BP / (Frame_time + GP × N_switch)⌋`
//! of them. Within a slot the sender transmits during the frame time, then switch 1, 2, … N each
//! get one guard period to forward it; the slot ends when the last switch's guard period ends.
//!
//! A flow with period `m` (in BPs) sends once every `m` BPs, in the BPs `b ≡ phase (mod m)`; the
//! schedule repeats after the hyperperiod, the least common multiple of the periods. Flows are
//! placed in file order, each at the earliest offset free in every BP it uses, trying every
//! phase; a flow that finds no room is reported with the slot time it needs and the time left.
//!
//! Everything is integer nanoseconds. Frame times that are not whole nanoseconds (60 bytes at
//! 54 Mb/s: 8888.9 ns) are rounded up for placement, so a slot is never shorter than its frame
//! needs; [`nf_max`] is computed exactly as a ratio of integers.

use std::fmt::Write as _;

use anyhow::Result;
use ivnsec_net::topology::Topology;
use serde::{Deserialize, Serialize};

use super::capacity::ExactTime;
use super::{Duration, Rate};

use super::flows::{Flow, MAX_FLOWS, MAX_FRAME_BYTES, MIN_FRAME_BYTES, fmt_duration, fmt_rate};
use ivnsec_node::error::usage;

/// Longest hyperperiod (least common multiple of the periods), in base periods.
pub const MAX_HYPERPERIOD: u64 = 1000;
/// Longest base period.
pub const MAX_BP_NS: u64 = 60_000_000_000;
/// Largest schedule file read.
pub const MAX_SCHEDULE_BYTES: u64 = 4 << 20;

/// The time frame of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Base period.
    pub bp_ns: u64,
    /// Guard period per switch.
    pub gp_ns: u64,
    /// Line rate that turns bytes into frame time.
    pub rate_bps: u64,
}

impl Params {
    /// Checks the values; `what` prefixes the errors (usage errors).
    pub fn check(&self) -> Result<()> {
        if self.bp_ns == 0 || self.bp_ns > MAX_BP_NS {
            return Err(usage(format!(
                "the base period must be above 0 and at most 60 s, got {}",
                fmt_duration(self.bp_ns)
            )));
        }
        if self.gp_ns >= self.bp_ns {
            return Err(usage(format!(
                "the guard period ({}) must be shorter than the base period ({})",
                fmt_duration(self.gp_ns),
                fmt_duration(self.bp_ns)
            )));
        }
        if self.rate_bps == 0 {
            return Err(usage("the rate must be above 0 bits per second"));
        }
        Ok(())
    }
}

/// Frame time (seed 001 eq. 2) of `frame_bytes` at `rate_bps`, in nanoseconds rounded up.
pub fn frame_time_ns(frame_bytes: u32, rate_bps: u64) -> u64 {
    let num = u128::from(frame_bytes) * 8 * 1_000_000_000;
    let r = u128::from(rate_bps.max(1));
    u64::try_from(num.div_ceil(r)).unwrap_or(u64::MAX)
}

/// Seed 001 eq. 9 (eq. 1 with one switch), exactly: `⌊BP / (bits / rate + GP × N_switch)⌋`,
/// by the capacity analysis' exact arithmetic ([`super::capacity::ExactTime`]: no floating
/// point, so 10 ms of 60-byte frames at 54 Mb/s is exactly 1125). 0 when nothing fits or the
/// numbers overflow.
pub fn nf_max(bp_ns: u64, gp_ns: u64, switches: u64, frame_bytes: u32, rate_bps: u64) -> u64 {
    let Some(rate) = Rate::from_bps(rate_bps) else {
        return 0;
    };
    ExactTime::of_bits(u64::from(frame_bytes) * 8, rate)
        .and_then(|frame| slots_in(bp_ns, gp_ns, switches, frame))
        .unwrap_or(0)
}

/// Eq. 9 with a measured frame time (Table 11): `⌊BP / (Frame_time + GP × N_switch)⌋`.
pub fn nf_max_frame_time(bp_ns: u64, gp_ns: u64, switches: u64, frame_time_ns: u64) -> u64 {
    let frame = ExactTime::from(Duration::from_ps(frame_time_ns.saturating_mul(1_000)));
    slots_in(bp_ns, gp_ns, switches, frame).unwrap_or(0)
}

/// How many slots of `frame + GP × switches` fit in BP.
fn slots_in(bp_ns: u64, gp_ns: u64, switches: u64, frame: ExactTime) -> Option<u64> {
    let gp = ExactTime::from(Duration::from_ps(gp_ns.checked_mul(1_000)?));
    let slot = frame.checked_add(gp.checked_mul(switches)?)?;
    slot.fits_in(Duration::from_ps(bp_ns.checked_mul(1_000)?))
}

/// What a switch (or the sender) does within a slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hop {
    /// The sending ECU (transmitting for the frame time), then each switch on the path
    /// (forwarding within one guard period).
    pub node: String,
    /// From the start of the base period.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// One slot: the flow that sends in it, where it lies in the BP and in which BPs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// The flow's name.
    pub flow: String,
    /// Used in the BPs `b` with `b mod period = phase`.
    pub phase: u32,
    /// Start, from the start of the base period.
    pub offset_ns: u64,
    /// Length (at least frame time + GP × N_switch).
    pub length_ns: u64,
    // What follows is derived from the flow and the topology (never read from a file).
    #[serde(skip_deserializing, default)]
    pub from: String,
    #[serde(skip_deserializing, default)]
    pub to: String,
    #[serde(skip_deserializing, default)]
    pub frame_bytes: u32,
    #[serde(skip_deserializing, default)]
    pub period: u32,
    #[serde(skip_deserializing, default)]
    pub frame_time_ns: u64,
    /// The sender, then every switch on the path, with their windows.
    #[serde(skip_deserializing, default)]
    pub hops: Vec<Hop>,
}

impl Slot {
    /// The end of the slot (the frame's deadline), from the start of the base period.
    pub fn end_ns(&self) -> u64 {
        self.offset_ns + self.length_ns
    }

    /// Whether the slot is used in base period `b`.
    pub fn active_in(&self, b: u64) -> bool {
        self.period > 0 && b % u64::from(self.period) == u64::from(self.phase)
    }
}

/// Eq. 9 for one frame size of the schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Capacity {
    pub frame_bytes: u32,
    pub frame_time_ns: u64,
    /// `⌊BP / (Frame_time + GP × N_switch)⌋`.
    pub nf_max: u64,
}

/// A schedule: the time frame, the flows and one slot per flow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub bp_ns: u64,
    pub gp_ns: u64,
    pub rate_bps: u64,
    /// `cascade:N`.
    pub topology: String,
    pub flows: Vec<Flow>,
    pub slots: Vec<Slot>,
    // Derived.
    /// Switches every frame crosses.
    #[serde(skip_deserializing, default)]
    pub switches: u16,
    /// Least common multiple of the periods, in base periods.
    #[serde(skip_deserializing, default)]
    pub hyperperiod: u64,
    /// Eq. 9 per frame size, smallest frame first.
    #[serde(skip_deserializing, default)]
    pub nf_max: Vec<Capacity>,
}

/// Why a flow does not fit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoFit {
    pub flow: String,
    /// Slot time the flow needs: frame time + GP × N_switch.
    pub needed_ns: u64,
    pub frame_time_ns: u64,
    pub guard_ns: u64,
    /// The most time left at the end of a base period it could use.
    pub left_ns: u64,
    /// The base periods it was tried in (`phase` of every `period`).
    pub phase: u32,
    pub period: u32,
    /// Flows placed before it.
    pub placed: usize,
}

impl NoFit {
    /// The reason, in one sentence.
    pub fn reason(&self, bp_ns: u64, switches: u16) -> String {
        let bps = if self.period == 1 {
            "a base period has".to_string()
        } else {
            format!(
                "the base periods b with b mod {} = {} (its best phase) have",
                self.period, self.phase
            )
        };
        format!(
            "flow `{}` does not fit: its slot needs {} (frame time {} + guard period {} × {switches} \
             switch{}) but {bps} only {} left of {} after the {} flow{} placed before it",
            self.flow,
            fmt_duration(self.needed_ns),
            fmt_duration(self.frame_time_ns),
            fmt_duration(self.guard_ns / u64::from(switches.max(1))),
            if switches == 1 { "" } else { "es" },
            fmt_duration(self.left_ns),
            fmt_duration(bp_ns),
            self.placed,
            if self.placed == 1 { "" } else { "s" },
        )
    }
}

/// The number of switches of a `cascade:N` topology (the only shape `tdma` schedules) and
/// its ECUs; anything else is a usage error.
pub fn cascade(topology: &str) -> Result<(Topology, u16)> {
    let t: Topology = topology
        .parse()
        .map_err(|e: ivnsec_net::Error| usage(e.to_string()))?;
    match t {
        Topology::Cascade(n) => Ok((t, n)),
        other => Err(usage(format!(
            "topology `{other}`: tdma schedules a cascade:N topology (ecu1 and ecu2 with N \
             switches between them, seed 001 Fig. 11)"
        ))),
    }
}

/// The switches a frame from `from` to `to` crosses on `cascade:N`, in order.
pub fn path(switches: u16, from: &str) -> Vec<String> {
    let mut p: Vec<String> = (0..switches).map(|k| format!("sw{k}")).collect();
    if from != "ecu1" {
        p.reverse();
    }
    p
}

fn lcm(a: u64, b: u64) -> Option<u64> {
    fn gcd(mut a: u64, mut b: u64) -> u64 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }
    (a / gcd(a, b)).checked_mul(b)
}

/// The hyperperiod of `flows` (least common multiple of their periods), at most
/// [`MAX_HYPERPERIOD`]; `file` names the input in errors.
fn hyperperiod(file: &str, flows: &[Flow]) -> Result<u64> {
    let mut h = 1u64;
    for f in flows {
        h = lcm(h, u64::from(f.period.max(1)))
            .filter(|&h| h <= MAX_HYPERPERIOD)
            .ok_or_else(|| {
                usage(format!(
                    "{file}: the periods repeat only after more than {MAX_HYPERPERIOD} base \
                     periods (their least common multiple) once flow `{}` (period {}) is added; \
                     use periods with common factors",
                    f.name, f.period
                ))
            })?;
    }
    Ok(h)
}

/// Checks the flows against `cascade:N`: their ECUs exist, their frames and periods are in
/// range; `file` names the input (`flows file F` or `schedule F`) in errors.
fn check_flows(file: &str, flows: &[Flow], topology: &Topology) -> Result<()> {
    if flows.is_empty() || flows.len() > MAX_FLOWS {
        return Err(usage(format!(
            "{file}: {} flows; a schedule has 1..={MAX_FLOWS}",
            flows.len()
        )));
    }
    let ecus = topology.ecu_names();
    for (i, f) in flows.iter().enumerate() {
        let bad = |key: &str, why: String| {
            usage(format!(
                "{file}: flow[{i}] (`{}`) key `{key}`: {why}",
                f.name
            ))
        };
        if !super::flows::valid_name(&f.name) {
            return Err(bad(
                "name",
                format!(
                    "use 1..={} letters, digits, `-`, `_` or `.`",
                    super::flows::MAX_NAME
                ),
            ));
        }
        for (key, node) in [("from", &f.from), ("to", &f.to)] {
            if !ecus.contains(node) {
                return Err(bad(
                    key,
                    format!(
                        "`{node}` is not an ECU of {topology} (its ECUs: {})",
                        ecus.join(", ")
                    ),
                ));
            }
        }
        if f.from == f.to {
            return Err(bad("to", format!("`{}` is also the sender", f.to)));
        }
        if !(MIN_FRAME_BYTES..=MAX_FRAME_BYTES).contains(&f.frame_bytes) {
            return Err(bad(
                "frame_bytes",
                format!(
                    "{} is not in {MIN_FRAME_BYTES}..={MAX_FRAME_BYTES}",
                    f.frame_bytes
                ),
            ));
        }
        if !(1..=super::flows::MAX_PERIOD).contains(&f.period) {
            return Err(bad(
                "period",
                format!("{} is not in 1..={}", f.period, super::flows::MAX_PERIOD),
            ));
        }
        if let Some(j) = flows[..i].iter().position(|g| g.name == f.name) {
            return Err(bad("name", format!("also the name of flow[{j}]")));
        }
    }
    Ok(())
}

/// Builds the schedule of `flows` on `topology` (`cascade:N`). `Ok(Err(_))`: a flow does not
/// fit (the first that does not). Bad input (unknown ECU, periods that never repeat within
/// [`MAX_HYPERPERIOD`]) is a usage error naming `file`.
pub fn build(
    file: &str,
    p: &Params,
    topology: &str,
    flows: Vec<Flow>,
) -> Result<std::result::Result<Schedule, NoFit>> {
    p.check()?;
    let (topo, switches) = cascade(topology)?;
    check_flows(file, &flows, &topo)?;
    let h = hyperperiod(file, &flows)?;
    let guard = p.gp_ns * u64::from(switches);
    // Busy intervals of every BP of the hyperperiod, kept sorted by start.
    let mut busy: Vec<Vec<(u64, u64)>> = vec![Vec::new(); h as usize];
    let mut slots = Vec::with_capacity(flows.len());
    for (placed, f) in flows.iter().enumerate() {
        let ft = frame_time_ns(f.frame_bytes, p.rate_bps);
        let len = ft.saturating_add(guard);
        let period = u64::from(f.period);
        let mut best: Option<(u64, u32)> = None;
        for phase in 0..f.period {
            let bps: Vec<usize> = (u64::from(phase)..h)
                .step_by(period as usize)
                .map(|b| b as usize)
                .collect();
            let o = earliest_free(&busy, &bps, len);
            if best.is_none_or(|(bo, _)| o < bo) {
                best = Some((o, phase));
            }
        }
        let (offset, phase) = best.expect("period ≥ 1");
        if offset.saturating_add(len) > p.bp_ns {
            return Ok(Err(NoFit {
                flow: f.name.clone(),
                needed_ns: len,
                frame_time_ns: ft,
                guard_ns: guard,
                left_ns: p.bp_ns.saturating_sub(offset),
                phase,
                period: f.period,
                placed,
            }));
        }
        for b in (u64::from(phase)..h).step_by(period as usize) {
            let v = &mut busy[b as usize];
            let at = v.partition_point(|&(s, _)| s < offset);
            v.insert(at, (offset, offset + len));
        }
        slots.push(Slot {
            flow: f.name.clone(),
            phase,
            offset_ns: offset,
            length_ns: len,
            from: String::new(),
            to: String::new(),
            frame_bytes: 0,
            period: 0,
            frame_time_ns: 0,
            hops: Vec::new(),
        });
    }
    let mut s = Schedule {
        bp_ns: p.bp_ns,
        gp_ns: p.gp_ns,
        rate_bps: p.rate_bps,
        topology: topo.to_string(),
        flows,
        slots,
        switches,
        hyperperiod: h,
        nf_max: Vec::new(),
    };
    s.derive();
    Ok(Ok(s))
}

/// The earliest offset at which `[o, o + len)` overlaps no busy interval of the BPs `bps`:
/// 0 or the end of some interval.
fn earliest_free(busy: &[Vec<(u64, u64)>], bps: &[usize], len: u64) -> u64 {
    let mut candidates: Vec<u64> = std::iter::once(0)
        .chain(bps.iter().flat_map(|&b| busy[b].iter().map(|&(_, e)| e)))
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    for o in candidates {
        let end = o.saturating_add(len);
        let free = bps
            .iter()
            .all(|&b| busy[b].iter().all(|&(s, e)| end <= s || o >= e));
        if free {
            return o;
        }
    }
    // The last candidate is the largest end: nothing starts after it.
    u64::MAX
}

impl Schedule {
    /// Fills the derived fields from the flows and the time frame (after [`build`] or a load).
    fn derive(&mut self) {
        let switches = cascade(&self.topology).map_or(0, |(_, n)| n);
        self.switches = switches;
        self.hyperperiod = hyperperiod("", &self.flows).unwrap_or(1);
        for s in &mut self.slots {
            let Some(f) = self.flows.iter().find(|f| f.name == s.flow) else {
                continue;
            };
            s.from = f.from.clone();
            s.to = f.to.clone();
            s.frame_bytes = f.frame_bytes;
            s.period = f.period;
            s.frame_time_ns = frame_time_ns(f.frame_bytes, self.rate_bps);
            let mut hops = vec![Hop {
                node: f.from.clone(),
                start_ns: s.offset_ns,
                end_ns: s.offset_ns + s.frame_time_ns,
            }];
            for (k, sw) in path(switches, &f.from).into_iter().enumerate() {
                let start = s.offset_ns + s.frame_time_ns + self.gp_ns * k as u64;
                hops.push(Hop {
                    node: sw,
                    start_ns: start,
                    end_ns: start + self.gp_ns,
                });
            }
            s.hops = hops;
        }
        let mut sizes: Vec<u32> = self.flows.iter().map(|f| f.frame_bytes).collect();
        sizes.sort_unstable();
        sizes.dedup();
        self.nf_max = sizes
            .into_iter()
            .map(|b| Capacity {
                frame_bytes: b,
                frame_time_ns: frame_time_ns(b, self.rate_bps),
                nf_max: nf_max(
                    self.bp_ns,
                    self.gp_ns,
                    u64::from(switches),
                    b,
                    self.rate_bps,
                ),
            })
            .collect();
    }

    /// Reads a schedule written by `tdma schedule --json` (at most [`MAX_SCHEDULE_BYTES`]) and
    /// checks it as [`check`](Self::check) does.
    pub fn load(path: &std::path::Path) -> Result<Schedule> {
        let (text, _) = ivnsec_node::keys::keyfile::read_secret(
            path,
            "schedule",
            MAX_SCHEDULE_BYTES,
            "write one with `ivnsec tdma schedule --json`",
        )?;
        Self::from_json(&format!("schedule {}", path.display()), &text)
    }

    /// [`load`](Self::load) from text; `file` names it in errors.
    pub fn from_json(file: &str, text: &str) -> Result<Schedule> {
        let mut s: Schedule = serde_json::from_str(text).map_err(|e| {
            usage(format!(
                "{file}: not a schedule of `ivnsec tdma schedule --json`: {e}"
            ))
        })?;
        s.check(file)?;
        s.derive();
        Ok(s)
    }

    /// Checks a schedule that may have been edited by hand: the time frame, the flows, one slot
    /// per flow in a phase of its period, every slot at least frame time + GP × N_switch long and
    /// inside the BP, and no two slots overlapping in any BP of the hyperperiod. Errors name
    /// `file` and the key.
    pub fn check(&self, file: &str) -> Result<()> {
        Params {
            bp_ns: self.bp_ns,
            gp_ns: self.gp_ns,
            rate_bps: self.rate_bps,
        }
        .check()
        .map_err(|e| usage(format!("{file}: {e}")))?;
        let (topo, switches) =
            cascade(&self.topology).map_err(|e| usage(format!("{file}: key `topology`: {e}")))?;
        check_flows(file, &self.flows, &topo)?;
        let h = hyperperiod(file, &self.flows)?;
        let guard = self.gp_ns * u64::from(switches);
        if self.slots.len() != self.flows.len() {
            return Err(usage(format!(
                "{file}: {} slots for {} flows; every flow has exactly one slot",
                self.slots.len(),
                self.flows.len()
            )));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let n = self.slots.iter().filter(|s| s.flow == f.name).count();
            if n != 1 {
                return Err(usage(format!(
                    "{file}: flow[{i}] (`{}`) has {n} slots; every flow has exactly one",
                    f.name
                )));
            }
        }
        for (i, s) in self.slots.iter().enumerate() {
            let bad = |key: &str, why: String| {
                usage(format!(
                    "{file}: slot[{i}] (`{}`) key `{key}`: {why}",
                    s.flow
                ))
            };
            let Some(f) = self.flows.iter().find(|f| f.name == s.flow) else {
                return Err(bad("flow", "no flow of that name".to_string()));
            };
            if s.phase >= f.period {
                return Err(bad(
                    "phase",
                    format!("{} is not below the flow's period {}", s.phase, f.period),
                ));
            }
            let need = frame_time_ns(f.frame_bytes, self.rate_bps) + guard;
            if s.length_ns < need {
                return Err(bad(
                    "length_ns",
                    format!(
                        "{} is shorter than frame time + GP × {switches} = {}",
                        s.length_ns, need
                    ),
                ));
            }
            if s.offset_ns
                .checked_add(s.length_ns)
                .is_none_or(|e| e > self.bp_ns)
            {
                return Err(bad(
                    "offset_ns",
                    format!(
                        "the slot {}..{} ns ends after the base period ({} ns)",
                        s.offset_ns,
                        s.offset_ns.saturating_add(s.length_ns),
                        self.bp_ns
                    ),
                ));
            }
        }
        for b in 0..h {
            let mut active: Vec<(u64, u64, usize)> = self
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    self.flows
                        .iter()
                        .find(|f| f.name == s.flow)
                        .is_some_and(|f| b % u64::from(f.period) == u64::from(s.phase))
                })
                .map(|(i, s)| (s.offset_ns, s.offset_ns + s.length_ns, i))
                .collect();
            active.sort_unstable();
            for w in active.windows(2) {
                if w[1].0 < w[0].1 {
                    return Err(usage(format!(
                        "{file}: slot[{}] (`{}`) key `offset_ns`: overlaps slot[{}] (`{}`) in base \
                         period {b}",
                        w[1].2, self.slots[w[1].2].flow, w[0].2, self.slots[w[0].2].flow
                    )));
                }
            }
        }
        Ok(())
    }

    /// Time the slots take in base period `b`.
    pub fn busy_ns(&self, b: u64) -> u64 {
        self.slots
            .iter()
            .filter(|s| s.active_in(b))
            .map(|s| s.length_ns)
            .sum()
    }

    /// The schedule as text tables: one line per slot with its hops, the use of every base
    /// period of the hyperperiod (at most the first 16), and eq. 9 per frame size.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "TDMA schedule: BP {}, GP {} per switch, {}, {} ({} switch{} on every path), \
             hyperperiod {} BP",
            fmt_duration(self.bp_ns),
            fmt_duration(self.gp_ns),
            fmt_rate(self.rate_bps),
            self.topology,
            self.switches,
            if self.switches == 1 { "" } else { "es" },
            self.hyperperiod
        );
        let _ = writeln!(
            o,
            "slot = frame time + GP × {} (seed 001 eq. 9); times from the start of the base period",
            self.switches
        );
        let _ = writeln!(
            o,
            "{:>4}  {:<16} {:<11} {:>6} {:>7} {:>12} {:>12} {:>12}  hops (node start–end)",
            "slot", "flow", "from → to", "bytes", "period", "offset", "frame time", "length"
        );
        let mut order: Vec<usize> = (0..self.slots.len()).collect();
        order.sort_by_key(|&i| (self.slots[i].offset_ns, self.slots[i].phase));
        for (n, &i) in order.iter().enumerate() {
            let s = &self.slots[i];
            let hops: Vec<String> = s
                .hops
                .iter()
                .map(|h| format!("{} {}–{}", h.node, us(h.start_ns), us(h.end_ns)))
                .collect();
            let period = if s.period == 1 {
                "1".to_string()
            } else {
                format!("{}/{}", s.period, s.phase)
            };
            let _ = writeln!(
                o,
                "{n:>4}  {:<16} {:<11} {:>6} {:>7} {:>12} {:>12} {:>12}  {}",
                s.flow,
                format!("{} → {}", s.from, s.to),
                s.frame_bytes,
                period,
                fmt_duration(s.offset_ns),
                fmt_duration(s.frame_time_ns),
                fmt_duration(s.length_ns),
                hops.join(", ")
            );
        }
        let shown = self.hyperperiod.min(16);
        for b in 0..shown {
            let used = self.busy_ns(b);
            let n = self.slots.iter().filter(|s| s.active_in(b)).count();
            let _ = writeln!(
                o,
                "base period {b}: {n} slot{}, {} of {} ({:.1} %), {} free",
                if n == 1 { "" } else { "s" },
                fmt_duration(used),
                fmt_duration(self.bp_ns),
                100.0 * used as f64 / self.bp_ns as f64,
                fmt_duration(self.bp_ns - used)
            );
        }
        if self.hyperperiod > shown {
            let _ = writeln!(o, "… ({} more base periods)", self.hyperperiod - shown);
        }
        for c in &self.nf_max {
            let _ = writeln!(
                o,
                "NF_max (eq. 9) for {}-byte frames: ⌊{} / ({} + {} × {})⌋ = {} frames per base period",
                c.frame_bytes,
                fmt_duration(self.bp_ns),
                fmt_duration(c.frame_time_ns),
                fmt_duration(self.gp_ns),
                self.switches,
                c.nf_max
            );
        }
        o
    }
}

/// `ns` as microseconds with up to 3 decimals, without a unit.
fn us(ns: u64) -> String {
    let s = format!("{:.3}", ns as f64 / 1000.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_node::error::exit_code;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn flow(name: &str, from: &str, to: &str, bytes: u32, period: u32) -> Flow {
        Flow {
            name: name.into(),
            from: from.into(),
            to: to.into(),
            frame_bytes: bytes,
            period,
            profile: None,
            payload: None,
        }
    }

    fn p(bp: u64, gp: u64) -> Params {
        Params {
            bp_ns: bp,
            gp_ns: gp,
            rate_bps: 100_000_000,
        }
    }

    /// Seed 001 Tables 3 and 5 (theoretical, BP = 10 ms), value by value, and Table 11 (eq. 9
    /// with the measured frame times 0.115 ms and 0.150 ms of Table 7, 1..5 switches).
    #[test]
    fn nf_max_reproduces_seed_001() {
        // Table 3, 100 Mb/s. GP = 0: 2083 and 1562 (the seed prints 1563 for 10 / 0.0064 =
        // 1562.5, the only cell it rounds up); GP = 0.2 ms: 48 and 48.
        assert_eq!(nf_max(10 * MS, 0, 1, 60, 100_000_000), 2083);
        assert_eq!(nf_max(10 * MS, 0, 1, 80, 100_000_000), 1562);
        assert_eq!(nf_max(10 * MS, 200 * US, 1, 60, 100_000_000), 48);
        assert_eq!(nf_max(10 * MS, 200 * US, 1, 80, 100_000_000), 48);
        // Table 5, 54 Mb/s: 1125 exactly (a float floor of 10 / 0.0088888… can give 1124), 843,
        // 47, 47.
        assert_eq!(nf_max(10 * MS, 0, 1, 60, 54_000_000), 1125);
        assert_eq!(nf_max(10 * MS, 0, 1, 80, 54_000_000), 843);
        assert_eq!(nf_max(10 * MS, 200 * US, 1, 60, 54_000_000), 47);
        assert_eq!(nf_max(10 * MS, 200 * US, 1, 80, 54_000_000), 47);
        // Table 11.
        let t11 = [
            (1, 31, 28),
            (2, 19, 18),
            (3, 13, 13),
            (4, 10, 10),
            (5, 8, 8),
        ];
        for (n, b60, b80) in t11 {
            assert_eq!(
                nf_max_frame_time(10 * MS, 200 * US, n, 115 * US),
                b60,
                "{n}"
            );
            assert_eq!(
                nf_max_frame_time(10 * MS, 200 * US, n, 150 * US),
                b80,
                "{n}"
            );
        }
        // Frame times (eq. 2): 4.8 µs and 6.4 µs at 100 Mb/s; 8.889 µs (rounded up) at 54 Mb/s.
        assert_eq!(frame_time_ns(60, 100_000_000), 4_800);
        assert_eq!(frame_time_ns(80, 100_000_000), 6_400);
        assert_eq!(frame_time_ns(60, 54_000_000), 8_889);
    }

    /// Slot arithmetic worked by hand: BP 1 ms, GP 100 µs, 100 Mb/s, cascade:2. A 125-byte frame
    /// takes 10 µs on the wire, so its slot is 10 + 2 × 100 = 210 µs; a 250-byte frame takes
    /// 20 µs, its slot 220 µs. Flows a, b (125 B) and c (250 B), period 1, sit at 0, 210 and
    /// 420 µs (c ends at 640); d with period 2 goes after them at 640 µs in BP 0 (end 850); e
    /// (period 2) finds BP 1 freer and takes phase 1 at 640 µs too; f (period 1) then needs
    /// 210 µs after 850 µs: 150 µs left.
    #[test]
    fn slots_are_placed_as_worked_by_hand() {
        let flows = vec![
            flow("a", "ecu1", "ecu2", 125, 1),
            flow("b", "ecu2", "ecu1", 125, 1),
            flow("c", "ecu1", "ecu2", 250, 1),
            flow("d", "ecu1", "ecu2", 125, 2),
            flow("e", "ecu2", "ecu1", 125, 2),
        ];
        let s = build("flows file f", &p(MS, 100 * US), "cascade:2", flows.clone())
            .unwrap()
            .unwrap();
        assert_eq!(s.switches, 2);
        assert_eq!(s.hyperperiod, 2);
        let got: Vec<(&str, u64, u64, u32)> = s
            .slots
            .iter()
            .map(|x| (x.flow.as_str(), x.offset_ns, x.length_ns, x.phase))
            .collect();
        assert_eq!(
            got,
            [
                ("a", 0, 210 * US, 0),
                ("b", 210 * US, 210 * US, 0),
                ("c", 420 * US, 220 * US, 0),
                ("d", 640 * US, 210 * US, 0),
                ("e", 640 * US, 210 * US, 1),
            ]
        );
        // Hops of b (ecu2 → ecu1): ecu2 sends 210–220 µs, sw1 forwards 220–320, sw0 320–420.
        let b = &s.slots[1];
        let hops: Vec<(&str, u64, u64)> = b
            .hops
            .iter()
            .map(|h| (h.node.as_str(), h.start_ns, h.end_ns))
            .collect();
        assert_eq!(
            hops,
            [
                ("ecu2", 210 * US, 220 * US),
                ("sw1", 220 * US, 320 * US),
                ("sw0", 320 * US, 420 * US)
            ]
        );
        assert_eq!(b.hops.last().unwrap().end_ns, b.end_ns());
        assert_eq!(s.busy_ns(0), 850 * US);
        assert_eq!(s.busy_ns(1), 850 * US);
        // Eq. 9 for both frame sizes: ⌊1000 / 210⌋ = 4 and ⌊1000 / 220⌋ = 4.
        assert_eq!(
            s.nf_max
                .iter()
                .map(|c| (c.frame_bytes, c.nf_max))
                .collect::<Vec<_>>(),
            [(125, 4), (250, 4)]
        );
        s.check("schedule s").unwrap();

        // One more 125-byte flow every BP: 850 + 210 > 1000.
        let mut more = flows;
        more.push(flow("f", "ecu1", "ecu2", 125, 1));
        let no = build("flows file f", &p(MS, 100 * US), "cascade:2", more)
            .unwrap()
            .unwrap_err();
        assert_eq!(
            no,
            NoFit {
                flow: "f".into(),
                needed_ns: 210 * US,
                frame_time_ns: 10 * US,
                guard_ns: 200 * US,
                left_ns: 150 * US,
                phase: 0,
                period: 1,
                placed: 5,
            }
        );
        let why = no.reason(MS, 2);
        assert_eq!(
            why,
            "flow `f` does not fit: its slot needs 210 µs (frame time 10 µs + guard period \
             100 µs × 2 switches) but a base period has only 150 µs left of 1 ms after the 5 \
             flows placed before it"
        );
    }

    /// The seed's own numbers: 48 slots of 60 bytes fit a 10 ms BP at GP 0.2 ms on one switch
    /// (Table 3); the 49th does not.
    #[test]
    fn nf_max_slots_fit_and_one_more_does_not() {
        let flows = |n: usize| -> Vec<Flow> {
            (0..n)
                .map(|i| flow(&format!("f{i}"), "ecu1", "ecu2", 60, 1))
                .collect()
        };
        let s = build("f", &p(10 * MS, 200 * US), "cascade:1", flows(48))
            .unwrap()
            .unwrap();
        assert_eq!(s.slots[47].offset_ns, 47 * 204_800);
        assert_eq!(s.slots[47].end_ns(), 48 * 204_800);
        assert_eq!(s.nf_max[0].nf_max, 48);
        let no = build("f", &p(10 * MS, 200 * US), "cascade:1", flows(49))
            .unwrap()
            .unwrap_err();
        assert_eq!(no.flow, "f48");
        assert_eq!(no.left_ns, 10 * MS - 48 * 204_800);
        assert!(no.needed_ns > no.left_ns);
    }

    #[test]
    fn bad_inputs_are_usage_errors_naming_the_key() {
        let f = |from: &str, to: &str| vec![flow("x", from, to, 60, 1)];
        let cases: Vec<(Params, &str, Vec<Flow>, &str)> = vec![
            (
                p(MS, 0),
                "cascade:1",
                f("ecu1", "ecu3"),
                "flow[0] (`x`) key `to`: `ecu3` is not an ECU of cascade:1",
            ),
            (
                p(MS, 0),
                "cascade:1",
                f("sw0", "ecu2"),
                "key `from`: `sw0` is not an ECU",
            ),
            (
                p(MS, 0),
                "pair",
                f("ecu1", "ecu2"),
                "tdma schedules a cascade:N topology",
            ),
            (p(MS, 0), "cascade:0", f("ecu1", "ecu2"), "cascade:0"),
            (
                p(MS, MS),
                "cascade:1",
                f("ecu1", "ecu2"),
                "guard period (1 ms) must be shorter",
            ),
            (
                p(0, 0),
                "cascade:1",
                f("ecu1", "ecu2"),
                "base period must be above 0",
            ),
            (
                p(MS, 0),
                "cascade:1",
                vec![
                    flow("a", "ecu1", "ecu2", 60, 997),
                    flow("b", "ecu1", "ecu2", 60, 991),
                ],
                "repeat only after more than 1000 base periods",
            ),
        ];
        for (params, topo, flows, want) in cases {
            let e = build("flows file f.toml", &params, topo, flows).unwrap_err();
            assert_eq!(exit_code(&e), 2, "{want}");
            assert!(e.to_string().contains(want), "want {want:?}, got {e}");
        }
    }

    /// A schedule written as JSON loads back identical; hand edits that break it are refused
    /// with the slot and key named.
    #[test]
    fn schedule_json_round_trips_and_edits_are_checked() {
        let flows = vec![
            flow("a", "ecu1", "ecu2", 125, 1),
            flow("b", "ecu2", "ecu1", 125, 2),
        ];
        let s = build("f", &p(MS, 100 * US), "cascade:2", flows)
            .unwrap()
            .unwrap();
        let json = serde_json::to_string_pretty(&s).unwrap();
        let back = Schedule::from_json("schedule s.json", &json).unwrap();
        assert_eq!(back, s);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let edits: Vec<(&str, serde_json::Value, &str)> = vec![
            (
                "/slots/1/offset_ns",
                100_000.into(),
                "slot[1] (`b`) key `offset_ns`: overlaps slot[0] (`a`) in base period 0",
            ),
            (
                "/slots/1/offset_ns",
                900_000.into(),
                "slot[1] (`b`) key `offset_ns`: the slot 900000..1110000 ns ends after",
            ),
            (
                "/slots/0/length_ns",
                209_999.into(),
                "slot[0] (`a`) key `length_ns`: 209999 is shorter than frame time + GP × 2 = 210000",
            ),
            (
                "/slots/1/phase",
                2.into(),
                "slot[1] (`b`) key `phase`: 2 is not below the flow's period 2",
            ),
            ("/slots/1/flow", "z".into(), "flow[1] (`b`) has 0 slots"),
            (
                "/flows/0/to",
                "ecu9".into(),
                "flow[0] (`a`) key `to`: `ecu9` is not an ECU",
            ),
            ("/topology", "sensors:2".into(), "key `topology`"),
            ("/gp_ns", 1_000_000.into(), "guard period"),
        ];
        for (ptr, val, want) in edits {
            let mut e = v.clone();
            *e.pointer_mut(ptr).unwrap() = val;
            let err = Schedule::from_json("schedule s.json", &e.to_string()).unwrap_err();
            assert_eq!(exit_code(&err), 2);
            let m = err.to_string();
            assert!(m.starts_with("schedule s.json: "), "{m}");
            assert!(m.contains(want), "{ptr}: want {want:?}, got {m}");
        }
        let mut extra = v.clone();
        let slot = extra["slots"][0].clone();
        extra["slots"].as_array_mut().unwrap().push(slot);
        let e = Schedule::from_json("s", &extra.to_string()).unwrap_err();
        assert!(e.to_string().contains("3 slots for 2 flows"), "{e}");
        let mut name = v.clone();
        name["flows"][0]["name"] = "a b".into();
        name["slots"][0]["flow"] = "a b".into();
        let e = Schedule::from_json("s", &name.to_string()).unwrap_err();
        assert!(e.to_string().contains("flow[0] (`a b`) key `name`"), "{e}");
        // A flow's profile is parsed where the schedule is read, with the name it was given;
        // an unknown one is refused there, naming the file, the flow and the profile.
        let mut named = v.clone();
        named["flows"][0]["profile"] = "hmac-sha1".into();
        let back = Schedule::from_json("s", &named.to_string()).unwrap();
        let p = back.flows[0].profile.as_ref().unwrap();
        assert_eq!(
            (p.name(), p.profile()),
            ("hmac-sha1", "hmac-sha1".parse().unwrap())
        );
        assert_eq!(serde_json::to_value(&back).unwrap(), named);
        named["flows"][0]["profile"] = "aes999-gcm".into();
        let e = Schedule::from_json("schedule s.json", &named.to_string()).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        let m = e.to_string();
        assert!(m.starts_with("schedule s.json: "), "{m}");
        assert!(
            m.contains("flow `a` key `profile`: profile `aes999-gcm`: unknown suite"),
            "{m}"
        );
        for bad in ["", "{}", "[]", "{\"bp_ns\": -1}", "null"] {
            let e = Schedule::from_json("schedule s.json", bad).unwrap_err();
            assert_eq!(exit_code(&e), 2, "{bad}");
        }
    }

    /// Two flows of period 2 share an offset in different phases: they never meet in a BP.
    #[test]
    fn flows_of_longer_periods_share_an_offset() {
        let flows = vec![
            flow("a", "ecu1", "ecu2", 125, 2),
            flow("b", "ecu2", "ecu1", 125, 2),
        ];
        let s = build("f", &p(MS, 100 * US), "cascade:2", flows)
            .unwrap()
            .unwrap();
        let got: Vec<(u64, u32)> = s.slots.iter().map(|x| (x.offset_ns, x.phase)).collect();
        assert_eq!(got, [(0, 0), (0, 1)]);
        assert!(s.slots[0].active_in(0) && !s.slots[0].active_in(1));
        assert!(s.slots[1].active_in(1) && s.slots[1].active_in(3));
        s.check("s").unwrap();
        // Put both in phase 0 and the check finds the overlap.
        let mut v = serde_json::to_value(&s).unwrap();
        *v.pointer_mut("/slots/1/phase").unwrap() = 0.into();
        let e = Schedule::from_json("s", &v.to_string()).unwrap_err();
        assert!(
            e.to_string()
                .contains("overlaps slot[0] (`a`) in base period 0"),
            "{e}"
        );
    }

    #[test]
    fn text_lists_slots_hops_and_use() {
        let flows = vec![flow("steer", "ecu1", "ecu2", 60, 1)];
        let s = build("f", &p(10 * MS, 200 * US), "cascade:1", flows)
            .unwrap()
            .unwrap();
        let t = s.to_text();
        assert!(t.contains("steer"), "{t}");
        assert!(t.contains("ecu1 0–4.8, sw0 4.8–204.8"), "{t}");
        assert!(
            t.contains("base period 0: 1 slot, 204.8 µs of 10 ms (2.0 %)"),
            "{t}"
        );
        assert!(t.contains("= 48 frames per base period"), "{t}");
    }
}
