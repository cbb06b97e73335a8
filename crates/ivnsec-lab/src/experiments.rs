//! The one list of the plan's experiments ([`all`]): the report page renders their sections in
//! this order. Experiments that still render from the page itself (docs/architecture.md, "The
//! lab") join the list as they move into their folders.

use crate::experiment::{Experiment, Holds};
use crate::tunnel::{BulkReport, PingReport, TunnelExperiment};

/// What a report page must hold for every listed experiment.
pub trait Page: Holds<PingReport> + Holds<BulkReport> {}

impl<P: Holds<PingReport> + Holds<BulkReport>> Page for P {}

/// Every listed experiment, in page order.
pub fn all<'p, P: Page + 'p>() -> [&'p (dyn Experiment<P> + 'p); 1] {
    [&TunnelExperiment]
}
