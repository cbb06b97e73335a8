//! The experiments of a plan beside its ping-pong scenarios (issue 7): every experiment's
//! results as summary.json holds them ([`Experiments`]) and the page its report sections read
//! them from ([`Page`], one [`Holds`] per result kind). Each experiment's own section lives in
//! its folder, the comparisons with the seeds in `report/seeds/` (docs/architecture.md, "The lab").

use serde::{Deserialize, Serialize};

use crate::bench::per_frame::PerFrameReport;
use crate::camera::CameraReport;
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

#[cfg(test)]
#[path = "experiments_tests.rs"]
pub(crate) mod tests;
