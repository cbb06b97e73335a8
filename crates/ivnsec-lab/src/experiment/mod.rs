//! One experiment of a plan behind one trait surface: the plan tables it reads ([`Tables`]), its
//! sections of the report ([`Experiment`]), and how it reads, checks and runs its tables
//! ([`PlanTables`]). Each experiment's folder implements them beside its own data, run and
//! tables; [`crate::experiments`] lists them once, the report page renders whatever the list
//! holds, in its order, and the plan parses and runs whatever it holds, without naming any
//! experiment.
//!
//! The traits are generic over the page `P` an experiment renders from, the plan `Pl` that
//! holds its checked jobs and the results `R` its runs add to; an experiment asks of them only
//! what it owns ([`Holds`], [`Jobs`], [`Gathers`]): the experiment folders stay below the plan
//! and the report that gather them, and no import runs back up from an experiment to either.

use anyhow::Result;

pub mod context;
pub mod text;

pub use context::RunContext;
pub use text::PlanText;

/// The plan tables of an experiment, as the plan file spells them (`tunnel_ping`, …).
pub trait Tables {
    fn tables(&self) -> &'static [&'static str];
}

/// One experiment of a plan, as the report renders it.
pub trait Experiment<P>: Tables + Sync {
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

/// Experiments of this [`PlanTables::run_rank`] and above run after the clocks of a plan's
/// hosts are no longer watched (those below run on the plan's sites while they are).
pub const UNWATCHED_FROM: u8 = 100;

/// One experiment of a plan, as the plan reads and runs it: its tables read from the plan
/// text and checked into jobs the plan `Pl` holds, then run into results `R`.
pub trait PlanTables<Pl, R>: Tables + Sync {
    /// Reads its tables from the plan text, checks them and puts the checked jobs into `plan`.
    /// Errors name the plan file and the key ([`PlanText::bad`]).
    fn parse(&self, text: &PlanText, plan: &mut Pl) -> Result<()>;
    /// Whether `plan` holds none of its jobs.
    fn is_empty(&self, plan: &Pl) -> bool;
    /// Whether its jobs run on the site between a plan's two hosts (the run opens that site
    /// for them when the plan has no ping-pong scenario).
    fn on_hosts(&self, _plan: &Pl) -> bool {
        false
    }
    /// When it runs in a plan: lower ranks first, after the plan's own ping-pong scenarios
    /// (see [`UNWATCHED_FROM`]).
    fn run_rank(&self) -> u8;
    /// Runs its jobs of `plan` and adds their results to `results`. Interrupted
    /// ([`crate::interrupt::requested`]), it returns what finished without error.
    fn run(&self, plan: &Pl, cx: &mut RunContext, results: &mut R) -> Result<()>;
}

/// A report page that holds results of kind `T` (one per plan table of the experiment that
/// owns `T`). `Table` tells apart two tables with results of the same kind (`[[underload]]`
/// and `[[playback]]`); it is `T` itself where one table has them.
pub trait Holds<T, Table = T> {
    fn results(&self) -> &[T];
}

/// A plan that holds checked jobs of kind `T`; `Table` tells apart two lists of the same kind
/// (those through gateways, [`Gateways`]).
pub trait Jobs<T, Table = T> {
    fn jobs(&self) -> &[T];
    fn jobs_mut(&mut self) -> &mut Vec<T>;
}

/// The results of a run, gathered by kind (`Table` as in [`Holds`]).
pub trait Gathers<T, Table = T> {
    fn gather(&mut self, result: T);
}

/// The list of jobs of a kind that run through the gateways of a testbed of their own.
pub struct Gateways;
