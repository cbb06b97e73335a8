//! One experiment of a plan behind one trait: the plan tables it reads and its sections of the
//! report. Each experiment's folder implements [`Experiment`] beside its own data, run and
//! tables; [`crate::experiments::all`] lists them, and the report page renders whatever the list
//! holds, in its order, without naming any experiment.
//!
//! The trait is generic over the page `P` it renders from, and an experiment asks of the page
//! only the results it owns ([`Holds`]): the experiment folders stay below the report that
//! gathers their results, and no import runs back up from an experiment to the report.

/// One experiment of a plan.
pub trait Experiment<P>: Sync {
    /// The plan tables it reads, as the plan file spells them (`tunnel_ping`, …).
    fn tables(&self) -> &'static [&'static str];
    /// Its sections of `summary.md`; nothing when the page holds none of its results.
    fn markdown(&self, page: &P, s: &mut String);
    /// The same sections in `index.html`.
    fn html(&self, page: &P, s: &mut String);
    /// Links of its own in `index.html`'s navigation bar, after the page's fixed links (only
    /// when the page holds its results).
    fn nav(&self, _page: &P, _s: &mut String) {}
    /// Names of its runs whose verdict failed, in run order.
    fn failures(&self, _page: &P) -> Vec<String> {
        Vec::new()
    }
    /// Files of its own in the report directory beside the summaries: (file name, contents).
    fn files(&self, _page: &P) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// A report page that holds results of kind `T` (one per plan table of the experiment that
/// owns `T`). `Table` tells apart two tables with results of the same kind (`[[underload]]`
/// and `[[playback]]`); it is `T` itself where one table has them.
pub trait Holds<T, Table = T> {
    fn results(&self) -> &[T];
}
