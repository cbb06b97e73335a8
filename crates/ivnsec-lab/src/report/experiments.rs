//! The experiments of a plan beside its ping-pong scenarios (issue 7): every experiment's
//! results as summary.json holds them ([`Experiments`]), the page its report sections read them
//! from ([`Page`], one [`Holds`] per result kind), and the comparisons with seeds 002 and 003
//! that take figures from several experiments at once ([`seed_sections`]). Each experiment's
//! own section lives in its folder (docs/architecture.md, "The lab").

use serde::{Deserialize, Serialize};

use super::table::SeedSection;
use super::table::Table;
use super::{Summary, seed002, seed003};
use crate::bench::per_frame::PerFrameReport;
use crate::camera::{CameraReport, CameraResult};
use crate::experiment::Holds;
use crate::gateway_pingpong::GatewayPingPong;
use crate::pingpong::Requirements;
use crate::tdma::sweep::TdmaReport;
use crate::throughput::ThroughputResult;
use crate::underload::UnderloadReport;
use crate::underload::playback::Playback;

/// Every experiment result of a report (`experiments` of summary.json).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Experiments {
    /// One entry per profile × payload × rate × senders of the plan's `[[throughput]]` tables.
    #[serde(default)]
    pub throughput: Vec<ThroughputResult>,
    /// One report per `[[underload]]` table (every profile of it).
    #[serde(default)]
    pub underload: Vec<UnderloadReport>,
    /// One report per `[[playback]]` table.
    #[serde(default)]
    pub playback: Vec<UnderloadReport>,
    /// One report per `[[camera]]` table (every camera count × level of it).
    #[serde(default)]
    pub camera: Vec<CameraReport>,
    /// One report per `[[tdma]]` table (seed 001: the analysis and the measured runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tdma: Vec<TdmaReport>,
    /// One report per `[[crypto_bench]]` table (single-frame protect/verify times).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crypto_bench: Vec<PerFrameReport>,
    /// One entry per scenario of the `[[pingpong]]` tables (through bump-in-the-wire gateways).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pingpong: Vec<crate::gateway_pingpong::GatewayPingPong>,
    /// One report per `[[tunnel_ping]]` table (seed 004: ping by size through tunnels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunnel_ping: Vec<crate::tunnel::PingReport>,
    /// One report per `[[tunnel_bulk]]` table (seed 004: iperf3 and scp through the tunnel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tunnel_bulk: Vec<crate::tunnel::BulkReport>,
    /// One report per `[[chunk_bench]]` table (AES by chunk size and the break-evens).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunk_bench: Vec<crate::bench::chunks::ChunkBenchReport>,
    /// One outcome per `[[tls_bench]]` table (handshakes per minute, seed 004 Table 5.2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tls_bench: Vec<crate::tlsbench::Outcome>,
}

/// What an experiment's report section reads: the results of a report and the requirements
/// they are judged against.
pub struct Page<'a> {
    pub experiments: &'a Experiments,
    pub requirements: &'a Requirements,
}

impl AsRef<Requirements> for Page<'_> {
    fn as_ref(&self) -> &Requirements {
        self.requirements
    }
}

impl Holds<ThroughputResult> for Page<'_> {
    fn results(&self) -> &[ThroughputResult] {
        &self.experiments.throughput
    }
}

impl Holds<UnderloadReport> for Page<'_> {
    fn results(&self) -> &[UnderloadReport] {
        &self.experiments.underload
    }
}

impl Holds<UnderloadReport, Playback> for Page<'_> {
    fn results(&self) -> &[UnderloadReport] {
        &self.experiments.playback
    }
}

impl Holds<GatewayPingPong> for Page<'_> {
    fn results(&self) -> &[GatewayPingPong] {
        &self.experiments.pingpong
    }
}

impl Holds<crate::tunnel::PingReport> for Page<'_> {
    fn results(&self) -> &[crate::tunnel::PingReport] {
        &self.experiments.tunnel_ping
    }
}

impl Holds<crate::tunnel::BulkReport> for Page<'_> {
    fn results(&self) -> &[crate::tunnel::BulkReport] {
        &self.experiments.tunnel_bulk
    }
}

impl Holds<crate::bench::chunks::ChunkBenchReport> for Page<'_> {
    fn results(&self) -> &[crate::bench::chunks::ChunkBenchReport] {
        &self.experiments.chunk_bench
    }
}

impl Holds<crate::tlsbench::Outcome> for Page<'_> {
    fn results(&self) -> &[crate::tlsbench::Outcome] {
        &self.experiments.tls_bench
    }
}

impl Holds<CameraReport> for Page<'_> {
    fn results(&self) -> &[CameraReport] {
        &self.experiments.camera
    }
}

impl Holds<TdmaReport> for Page<'_> {
    fn results(&self) -> &[TdmaReport] {
        &self.experiments.tdma
    }
}

impl Holds<PerFrameReport> for Page<'_> {
    fn results(&self) -> &[PerFrameReport] {
        &self.experiments.crypto_bench
    }
}

impl Experiments {
    pub fn is_empty(&self) -> bool {
        self.throughput.is_empty()
            && self.underload.is_empty()
            && self.playback.is_empty()
            && self.camera.is_empty()
            && self.tdma.is_empty()
            && self.crypto_bench.is_empty()
            && self.pingpong.is_empty()
            && self.tunnel_ping.is_empty()
            && self.tunnel_bulk.is_empty()
            && self.chunk_bench.is_empty()
            && self.tls_bench.is_empty()
    }
}

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
/// profile of the run stands for a seed configuration).
pub(super) fn seed_sections(summary: &Summary) -> Vec<SeedSection> {
    let e = &summary.experiments;
    let mut out = Vec::new();
    let ours_002 = |c: seed002::Config| c.ours().profile;
    let streamed = |p: &str| {
        e.underload
            .iter()
            .chain(&e.playback)
            .any(|r| r.runs.iter().any(|x| x.profile == p))
    };
    // Our Bump-in-the-Wire latency figures: the `plain` runs through gateways, with the
    // topology each ran on (its row label).
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
    let bitw_latency = [
        (seed002::Test::PingPong, bitw_pingpong),
        (seed002::Test::UnderLoad, bitw_stream(&e.underload)),
        (seed002::Test::Playback, bitw_stream(&e.playback)),
    ];
    let any_002 = bitw_run(e).is_some()
        || bitw_latency.iter().any(|(_, m)| m.is_some())
        || seed002::Config::ALL.into_iter().any(|c| {
            ours_002(c).is_some_and(|p| {
                shaped_run(e, p).is_some()
                    || streamed(p)
                    || summary.scenarios.iter().any(|s| s.profile == p)
            })
        });
    if any_002 {
        // Ping-pong: our forward one-way delay at the largest payload we measured for the
        // configuration's profile (sockperf reports half the round trip).
        let latency = seed002::latency_table(|c, t| {
            if c == seed002::Config::BumpInTheWire {
                // The `[[pingpong]]`, `[[underload]]` and `[[playback]]` tables through gateways.
                return bitw_latency
                    .iter()
                    .find(|(test, _)| *test == t)
                    .and_then(|(_, m)| m.as_ref())
                    .map(|m| m.1);
            }
            let p = ours_002(c)?;
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
        });
        let mut latency = latency;
        for (t, m) in &bitw_latency {
            if let Some((topology, _)) = m {
                relabel_bitw(&mut latency, Some(t.name()), topology);
            }
        }
        out.push(SeedSection {
            title: "Beside seed 002: latency (Tables 6.1, 6.3, 6.5, 6.7), µs".into(),
            table: latency,
            note: "Seed 002 ran sockperf with 24,938-byte lidar messages (ping-pong: half the \
                   round trip); our ping-pong row is the forward one-way delay measured on the \
                   shared clock at the largest payload this run measured for the profile (one \
                   frame, at most the MTU); our under-load and playback rows are the one-way \
                   delay of whole fragmented messages. '—' = not measured in this run."
                .into(),
        });
        let mut tp = seed002::throughput_table(|c| {
            let r = run_002(e, c)?;
            let n = r.senders.max(1) as f64;
            Some((r.goodput_mbps / n, r.theoretical_mbps? / n))
        });
        let bitw_topology = bitw_run(e).and_then(|r| r.gateways.clone());
        if let Some(t) = &bitw_topology {
            relabel_bitw(&mut tp, None, t);
        }
        out.push(SeedSection {
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
        });
        let mut cpu = seed002::cpu_table(|c| Some(run_002(e, c)?.cpu.system_pct));
        seed002::add_consumer_cpu(&mut cpu, |c| {
            let r = run_002(e, c)?;
            (!r.cpu.roles.is_empty()).then_some(r.cpu.receiver_pct)
        });
        if let Some(t) = &bitw_topology {
            relabel_bitw(&mut cpu, None, t);
        }
        out.push(SeedSection {
            title: "Beside seed 002: CPU (§6.1.2, §6.2.2, §6.3.2)".into(),
            table: cpu,
            note: "Seed 002: sar every second under sockperf's throughput mode on its consumer \
                   host, average without the first and last 10 s. Ours: /proc/stat every second \
                   during the same shaped throughput runs, % of the whole machine (every role and \
                   everything else running included), and the consumer alone (the receiver \
                   process, % of the machine): the figure that compares with the seed's, on \
                   which the CPU rule is judged."
                .into(),
        });
    }
    let runs_003: Vec<&ThroughputResult> = e
        .throughput
        .iter()
        .filter(|r| seed003::level_and_suite(&r.profile).is_some())
        .collect();
    if runs_003.iter().any(|r| r.profile != "plain") {
        use seed003::{Level, Measured, Run, Transport};
        let find = |tcp: bool, level: Level, suite: Option<seed003::Suite>| {
            runs_003
                .iter()
                .filter(|r| r.tcp == tcp)
                .find(|r| match seed003::level_and_suite(&r.profile) {
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
        out.push(SeedSection {
            title: "Beside seed 003: throughput statements".into(),
            table,
            note: "Seed 003's figures were lost with its plots; its prose states ratios, which \
                   are computed here from our runs: the plan's throughput runs at its payload, \
                   secured SOME/IP over UDP for `someip-…` profiles (as seed 003, 1,400 bytes) \
                   and raw-Ethernet IVN-AE frames for the others. A level without a suite takes \
                   our first run at that level. "
                .to_string()
                + tcp_note,
        });
    }
    if !e.camera.is_empty() {
        let table = seed003::camera_table(|n, level| {
            e.camera
                .iter()
                .flat_map(|r| r.results.iter())
                .find(|c| c.cameras == n && c.level == level.ours())
                .map(CameraResult::figures)
        });
        out.push(SeedSection {
            title: "Beside seed 003: cameras (§F)".into(),
            table,
            note: seed003::CAMERA_NOTE.to_string(),
        });
    }
    if let Some(s) = &summary.seed001 {
        out.extend(super::tdma::seed_sections(s));
    }
    out
}

#[cfg(test)]
#[path = "experiments_tests.rs"]
mod tests;
