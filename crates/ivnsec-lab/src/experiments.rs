//! The one list of the plan's experiments (`listed!`): the report page renders their sections
//! in this order ([`all`]), and the plan reads their tables and runs them from the same list
//! ([`planned`], each at its [`PlanTables::run_rank`]).

use crate::bench::chunks::ChunkBenchReport;
use crate::bench::per_frame::{PerFrameConfig, PerFrameReport};
use crate::bench::plan::ChunkBenchConfig;
use crate::bench::report::{ChunkBenchExperiment, CryptoBenchExperiment};
use crate::camera::CameraReport;
use crate::camera::report::CameraExperiment;
use crate::camera::run::CameraConfig;
use crate::experiment::{Experiment, Gateways, Gathers, Holds, Jobs, PlanTables};
use crate::gateway_pingpong::plan::PingPongJob;
use crate::gateway_pingpong::{GatewayPingPong, GatewayPingPongExperiment};
use crate::pingpong::Requirements;
use crate::tdma::report::TdmaExperiment;
use crate::tdma::sweep::{Sweep, TdmaReport};
use crate::throughput::ThroughputResult;
use crate::throughput::plan::ThroughputJob;
use crate::throughput::report::ThroughputExperiment;
use crate::tlsbench::Outcome;
use crate::tlsbench::plan::TlsBenchConfig;
use crate::tlsbench::report::TlsBenchExperiment;
use crate::tunnel::{BulkConfig, BulkReport, PingConfig, PingReport, TunnelExperiment};
use crate::underload::UnderloadReport;
use crate::underload::plan::PlaybackJob;
use crate::underload::playback::Playback;
use crate::underload::report::{PlaybackExperiment, UnderloadExperiment};
use crate::underload::run::UnderloadConfig;

/// Every listed experiment, in page order: the one list.
macro_rules! listed {
    () => {
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
    };
}

/// A trait that only names its bounds, and its blanket impl: every type with the bounds has it.
macro_rules! bounds {
    ($(#[$doc:meta])* $name:ident: $($bound:tt)+) => {
        $(#[$doc])*
        pub trait $name: $($bound)+ {}
        impl<T> $name for T where T: $($bound)+ {}
    };
}

bounds! {
    /// What a report page must hold for every listed experiment.
    Page:
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
}

bounds! {
    /// What a plan must hold for every listed experiment: its checked jobs.
    PlanJobs:
        Jobs<ThroughputJob>
        + Jobs<ThroughputJob, Gateways>
        + Jobs<UnderloadConfig>
        + Jobs<UnderloadConfig, Gateways>
        + Jobs<PlaybackJob>
        + Jobs<PingPongJob>
        + Jobs<PingConfig>
        + Jobs<BulkConfig>
        + Jobs<ChunkBenchConfig>
        + Jobs<TlsBenchConfig>
        + Jobs<CameraConfig>
        + Jobs<Sweep>
        + Jobs<PerFrameConfig>
}

bounds! {
    /// What a run's results must gather for every listed experiment.
    Results:
        Gathers<ThroughputResult>
        + Gathers<UnderloadReport>
        + Gathers<UnderloadReport, Playback>
        + Gathers<GatewayPingPong>
        + Gathers<PingReport>
        + Gathers<BulkReport>
        + Gathers<ChunkBenchReport>
        + Gathers<Outcome>
        + Gathers<CameraReport>
        + Gathers<TdmaReport>
        + Gathers<PerFrameReport>
}

/// Every listed experiment, in page order.
pub fn all<'p, P: Page + 'p>() -> [&'p (dyn Experiment<P> + 'p); 10] {
    listed!()
}

/// Every listed experiment as a plan reads and runs it, in page order (a plan runs them in the
/// order of their [`PlanTables::run_rank`]).
pub fn planned<'p, Pl: PlanJobs + 'p, R: Results + 'p>() -> [&'p (dyn PlanTables<Pl, R> + 'p); 10] {
    listed!()
}
