//! Time-triggered networks (seed 001): TDMA schedules for periodic flows on a `cascade:N`
//! testbed and running them with slot-timed senders.
//!
//! [`flows`] reads the flows file and the durations and rates people write, [`schedule`] places
//! one slot per flow in the base period (seed 001 eq. 9), [`node`] is the process role of an ECU
//! (sends at its slot times, records arrivals) and of a switch probe (timestamps frames at the
//! bridge ports), and [`run`] builds the testbed, runs a schedule and measures it
//! (docs/tdma-run.md).

pub mod flows;
pub mod node;
pub mod run;
pub mod schedule;
