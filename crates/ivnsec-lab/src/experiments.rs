//! The one list of the plan's experiments ([`all`]): the report page renders their sections in
//! this order. Experiments that still render from the page itself (docs/architecture.md, "The
//! lab") join the list as they move into their folders.

use crate::bench::chunks::ChunkBenchReport;
use crate::bench::per_frame::PerFrameReport;
use crate::bench::report::{ChunkBenchExperiment, CryptoBenchExperiment};
use crate::camera::CameraReport;
use crate::camera::report::CameraExperiment;
use crate::experiment::{Experiment, Holds};
use crate::gateway_pingpong::{GatewayPingPong, GatewayPingPongExperiment};
use crate::pingpong::Requirements;
use crate::tdma::report::TdmaExperiment;
use crate::tdma::sweep::TdmaReport;
use crate::throughput::ThroughputResult;
use crate::throughput::report::ThroughputExperiment;
use crate::tlsbench::Outcome;
use crate::tlsbench::report::TlsBenchExperiment;
use crate::tunnel::{BulkReport, PingReport, TunnelExperiment};
use crate::underload::UnderloadReport;
use crate::underload::playback::Playback;
use crate::underload::report::{PlaybackExperiment, UnderloadExperiment};

/// What a report page must hold for every listed experiment.
pub trait Page:
    AsRef<Requirements>
    + Holds<ThroughputResult>
    + Holds<UnderloadReport>
    + Holds<UnderloadReport, Playback>
    + Holds<GatewayPingPong>
    + Holds<PingReport>
    + Holds<BulkReport>
    + Holds<ChunkBenchReport>
    + Holds<Outcome>
    + Holds<CameraReport>
    + Holds<TdmaReport>
    + Holds<PerFrameReport>
{
}

impl<P> Page for P where
    P: AsRef<Requirements>
        + Holds<ThroughputResult>
        + Holds<UnderloadReport>
        + Holds<UnderloadReport, Playback>
        + Holds<GatewayPingPong>
        + Holds<PingReport>
        + Holds<BulkReport>
        + Holds<ChunkBenchReport>
        + Holds<Outcome>
        + Holds<CameraReport>
        + Holds<TdmaReport>
        + Holds<PerFrameReport>
{
}

/// Every listed experiment, in page order.
pub fn all<'p, P: Page + 'p>() -> [&'p (dyn Experiment<P> + 'p); 10] {
    [
        &ThroughputExperiment,
        &UnderloadExperiment,
        &PlaybackExperiment,
        &GatewayPingPongExperiment,
        &TunnelExperiment,
        &ChunkBenchExperiment,
        &TlsBenchExperiment,
        &CameraExperiment,
        &TdmaExperiment,
        &CryptoBenchExperiment,
    ]
}
