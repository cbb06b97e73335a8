//! The seeds our reports set beside their own figures, and the comparisons that take figures
//! from several experiments at once.
//!
//! [`seed000`], [`seed002`] and [`seed003`] hold the figures those seeds publish, with the
//! tables that set them beside ours (docs/seeds.md lists every const and how garbled text was
//! read); seed 001's are in `tdma/seed001.rs`, seed 004's in `seed004.rs`. [`sections`] gives
//! the comparisons with seeds 002 and 003 that a report's measurements allow (the ping-pong
//! scenarios, throughput, under-load, playback, gateway and camera runs), then seed 001's.

pub mod seed000;
pub mod seed002;
pub mod seed003;

use crate::camera::CameraResult;
use crate::report::experiments::Experiments;
use crate::report::summary::Summary;
use crate::table::{SeedSection, Table};
use crate::throughput::ThroughputResult;
use crate::underload::UnderloadReport;

/// Our throughput run of `profile` in a shaped seed-002 style group (the most senders, then
/// the first), if any.
fn shaped_run<'a>(e: &'a Experiments, profile: &str) -> Option<&'a ThroughputResult> {
    e.throughput
        .iter()
        .filter(|r| r.profile == profile && r.rate_bps.is_some() && r.gateways.is_none())
        .max_by_key(|r| r.senders)
}

/// Our counterpart of seed 002's bump-in-the-wire: the shaped `plain` run between legacy ECUs
/// through the gateways a `bump2` throughput group starts.
fn bitw_run(e: &Experiments) -> Option<&ThroughputResult> {
    e.throughput
        .iter()
        .find(|r| r.profile == "plain" && r.rate_bps.is_some() && r.gateways.is_some())
}

/// The shaped throughput run standing for a seed 002 configuration.
fn run_002(e: &Experiments, c: seed002::Config) -> Option<&ThroughputResult> {
    match c {
        seed002::Config::BumpInTheWire => bitw_run(e),
        c => shaped_run(e, c.ours().profile?),
    }
}

/// Names the topology our Bump-in-the-Wire figures came from in the rows of `table` that
/// carry them (those of `test` only, when given): `bump` (one gateway, a MACsec consumer)
/// instead of the default `bump2` label.
fn relabel_bitw(table: &mut Table, test: Option<&str>, topology: &str) {
    let measured = seed002::bitw_cell("bump2");
    for r in &mut table.rows {
        let of_test = test.is_none_or(|t| r.get(1).map(String::as_str) == Some(t));
        if r.first() == Some(&measured) && of_test {
            r[0] = seed002::bitw_cell(topology);
        }
    }
}

/// The comparisons with seeds 002 and 003 that this report's measurements allow (none when no
/// profile of the run stands for a seed configuration), then seed 001's.
pub fn sections(summary: &Summary) -> Vec<SeedSection> {
    let mut out = Vec::new();
    if let Some(bitw) = seed002_measured(summary) {
        out.push(seed002_latency(summary, &bitw));
        out.push(seed002_throughput(&summary.experiments));
        out.push(seed002_cpu(&summary.experiments));
    }
    out.extend(seed003_throughput(&summary.experiments));
    out.extend(seed003_cameras(&summary.experiments));
    if let Some(s) = &summary.seed001 {
        out.extend(crate::tdma::report::seed_sections(s));
    }
    out
}

/// p90, p99 and p99.9 of a one-way delay, µs.
type Tail = [f64; 3];

/// Our Bump-in-the-Wire latency figures of each seed 002 test, with the topology each ran on
/// (its row label).
type BitwLatency = [(seed002::Test, Option<(String, Tail)>); 3];

/// Our Bump-in-the-Wire latency figures when this run has anything to set beside seed 002,
/// `None` when it has nothing.
fn seed002_measured(summary: &Summary) -> Option<BitwLatency> {
    let e = &summary.experiments;
    let streamed = |p: &str| {
        e.underload
            .iter()
            .chain(&e.playback)
            .any(|r| r.runs.iter().any(|x| x.profile == p))
    };
    let bitw_latency = bitw_latency(e);
    let any_002 = bitw_run(e).is_some()
        || bitw_latency.iter().any(|(_, m)| m.is_some())
        || seed002::Config::ALL.into_iter().any(|c| {
            c.ours().profile.is_some_and(|p| {
                shaped_run(e, p).is_some()
                    || streamed(p)
                    || summary.scenarios.iter().any(|s| s.profile == p)
            })
        });
    any_002.then_some(bitw_latency)
}

/// Our Bump-in-the-Wire latency figures: the `plain` runs through gateways (the `[[pingpong]]`,
/// `[[underload]]` and `[[playback]]` tables), with the topology each ran on.
fn bitw_latency(e: &Experiments) -> BitwLatency {
    let bitw_pingpong = e
        .pingpong
        .iter()
        .filter(|r| r.profile == "plain")
        .max_by_key(|r| r.payload)
        .and_then(|r| {
            let f = r.owd_forward.as_ref()?;
            Some((r.topology.clone(), [f.p90_us, f.p99_us, f.p999_us]))
        });
    let bitw_stream = |reports: &[UnderloadReport]| {
        reports.iter().find_map(|r| {
            let topology = r.gateways.clone()?;
            let o = r
                .runs
                .iter()
                .find(|x| x.profile == "plain")?
                .one_way
                .as_ref()?;
            Some((topology, [o.p90_us, o.p99_us, o.p999_us]))
        })
    };
    [
        (seed002::Test::PingPong, bitw_pingpong),
        (seed002::Test::UnderLoad, bitw_stream(&e.underload)),
        (seed002::Test::Playback, bitw_stream(&e.playback)),
    ]
}

/// Our figures of one seed 002 configuration and test without gateways. Ping-pong: our forward
/// one-way delay at the largest payload we measured for the configuration's profile (sockperf
/// reports half the round trip).
fn latency_002(summary: &Summary, c: seed002::Config, t: seed002::Test) -> Option<Tail> {
    let e = &summary.experiments;
    let p = c.ours().profile?;
    match t {
        seed002::Test::PingPong => {
            let s = summary
                .scenarios
                .iter()
                .filter(|s| s.profile == p)
                .max_by_key(|s| s.payload)?;
            let f = s.sections.owd_forward.as_ref()?;
            Some([f.p90_us, f.p99_us, f.p999_us])
        }
        seed002::Test::UnderLoad | seed002::Test::Playback => {
            let reports = if t == seed002::Test::UnderLoad {
                &e.underload
            } else {
                &e.playback
            };
            let o = reports
                .iter()
                .filter(|r| r.gateways.is_none())
                .flat_map(|r| r.runs.iter())
                .find(|r| r.profile == p)?
                .one_way
                .as_ref()?;
            Some([o.p90_us, o.p99_us, o.p999_us])
        }
    }
}

/// Seed 002 Tables 6.1, 6.3, 6.5 and 6.7 beside our latency figures.
fn seed002_latency(summary: &Summary, bitw: &BitwLatency) -> SeedSection {
    let mut latency = seed002::latency_table(|c, t| {
        if c == seed002::Config::BumpInTheWire {
            return bitw
                .iter()
                .find(|(test, _)| *test == t)
                .and_then(|(_, m)| m.as_ref())
                .map(|m| m.1);
        }
        latency_002(summary, c, t)
    });
    for (t, m) in bitw {
        if let Some((topology, _)) = m {
            relabel_bitw(&mut latency, Some(t.name()), topology);
        }
    }
    SeedSection {
        title: "Beside seed 002: latency (Tables 6.1, 6.3, 6.5, 6.7), µs".into(),
        table: latency,
        note: "Seed 002 ran sockperf with 24,938-byte lidar messages (ping-pong: half the \
               round trip); our ping-pong row is the forward one-way delay measured on the \
               shared clock at the largest payload this run measured for the profile (one \
               frame, at most the MTU); our under-load and playback rows are the one-way \
               delay of whole fragmented messages. '—' = not measured in this run."
            .into(),
    }
}

/// Seed 002 Tables 6.2, 6.4, 6.6 and 6.8 beside our shaped throughput runs.
fn seed002_throughput(e: &Experiments) -> SeedSection {
    let mut tp = seed002::throughput_table(|c| {
        let r = run_002(e, c)?;
        let n = r.senders.max(1) as f64;
        Some((r.goodput_mbps / n, r.theoretical_mbps? / n))
    });
    if let Some(t) = bitw_run(e).and_then(|r| r.gateways.as_ref()) {
        relabel_bitw(&mut tp, None, t);
    }
    SeedSection {
        title: "Beside seed 002: throughput (Tables 6.2, 6.4, 6.6, 6.8)".into(),
        table: tp,
        note: "Seed 002: three iperf3 UDP streams at 1 Gb/s into the consumer (§5.2.3), the \
               maximum per §6.1.2, both per sensor link. Ours: the shaped throughput group \
               with the most senders, per sender (total / senders); our maximum is that of \
               our frames on one shaped link. Bump-in-the-Wire: our `plain` frames between \
               two legacy ECUs through two `ivnsec gateway`s (macsec-gcm-aes-128, \
               confidentiality; the seed's was integrity only), one sender, the legacy side \
               at MTU 1500 (the seed's sensor had to drop to 1468)."
            .into(),
    }
}

/// Seed 002's CPU figures beside those of our shaped throughput runs.
fn seed002_cpu(e: &Experiments) -> SeedSection {
    let mut cpu = seed002::cpu_table(|c| Some(run_002(e, c)?.cpu.system_pct));
    seed002::add_consumer_cpu(&mut cpu, |c| {
        let r = run_002(e, c)?;
        (!r.cpu.roles.is_empty()).then_some(r.cpu.receiver_pct)
    });
    if let Some(t) = bitw_run(e).and_then(|r| r.gateways.as_ref()) {
        relabel_bitw(&mut cpu, None, t);
    }
    SeedSection {
        title: "Beside seed 002: CPU (§6.1.2, §6.2.2, §6.3.2)".into(),
        table: cpu,
        note: "Seed 002: sar every second under sockperf's throughput mode on its consumer \
               host, average without the first and last 10 s. Ours: /proc/stat every second \
               during the same shaped throughput runs, % of the whole machine (every role and \
               everything else running included), and the consumer alone (the receiver \
               process, % of the machine): the figure that compares with the seed's, on \
               which the CPU rule is judged."
            .into(),
    }
}

/// Seed 003's throughput statements, as ratios of our runs of its levels and suites (none
/// without a protected such run).
fn seed003_throughput(e: &Experiments) -> Option<SeedSection> {
    use seed003::{Level, Measured, Run, Transport};
    let runs_003: Vec<&ThroughputResult> = e
        .throughput
        .iter()
        .filter(|r| seed003::level_and_suite(r.profile.name()).is_some())
        .collect();
    if !runs_003.iter().any(|r| r.profile != "plain") {
        return None;
    }
    let find = |tcp: bool, level: Level, suite: Option<seed003::Suite>| {
        runs_003
            .iter()
            .filter(|r| r.tcp == tcp)
            .find(|r| match seed003::level_and_suite(r.profile.name()) {
                Some((l, s)) => l == level && (suite.is_none() || s == suite),
                None => false,
            })
            .copied()
    };
    // The iperf3 baseline of the first run over a transport: at the run's shaping.
    let iperf3 = |tcp: bool, k: &str| {
        let r = runs_003.iter().find(|r| r.tcp == tcp)?;
        let key = if r.rate_bps.is_some() {
            "shaped"
        } else {
            "unlimited"
        };
        r.baseline.get("iperf3")?.get(key)?.get(k)?.as_f64()
    };
    let tcp_measured = runs_003.iter().any(|r| r.tcp);
    let table = seed003::throughput_table(|run| match run {
        Run::Iperf3(Transport::Tcp) => Measured {
            mbps: iperf3(true, "goodput_mbps"),
            cpu_pct: iperf3(true, "system_pct"),
        },
        Run::Iperf3(Transport::Udp) => Measured {
            mbps: iperf3(false, "goodput_mbps"),
            cpu_pct: iperf3(false, "system_pct"),
        },
        Run::Someip {
            transport,
            level,
            suite,
        } => {
            let r = find(transport == Transport::Tcp, level, suite);
            Measured {
                mbps: r.map(|r| r.goodput_mbps),
                cpu_pct: r.map(|r| r.cpu.system_pct),
            }
        }
    });
    let tcp_note = if tcp_measured {
        "The TCP statements come from the plan's `transport = \"tcp\"` runs (secured SOME/IP \
         on one TCP connection, as seed 003 with 64 kB payloads) and iperf3 TCP on the same \
         path in the same run; CPU is the machine's busy share during each (/proc/stat)."
    } else {
        "The TCP statements (64 kB) are not measured by throughput runs over datagrams: a \
         `[[throughput]]` group with `transport = \"tcp\"` measures them."
    };
    Some(SeedSection {
        title: "Beside seed 003: throughput statements".into(),
        table,
        note: "Seed 003's figures were lost with its plots; its prose states ratios, which \
               are computed here from our runs: the plan's throughput runs at its payload, \
               secured SOME/IP over UDP for `someip-…` profiles (as seed 003, 1,400 bytes) \
               and raw-Ethernet IVN-AE frames for the others. A level without a suite takes \
               our first run at that level. "
            .to_string()
            + tcp_note,
    })
}

/// Seed 003 §F beside our camera runs (none without one).
fn seed003_cameras(e: &Experiments) -> Option<SeedSection> {
    if e.camera.is_empty() {
        return None;
    }
    let table = seed003::camera_table(|n, level| {
        e.camera
            .iter()
            .flat_map(|r| r.results.iter())
            .find(|c| c.cameras == n && c.level == level.ours())
            .map(CameraResult::figures)
    });
    Some(SeedSection {
        title: "Beside seed 003: cameras (§F)".into(),
        table,
        note: seed003::CAMERA_NOTE.to_string(),
    })
}

#[cfg(test)]
mod tests;
