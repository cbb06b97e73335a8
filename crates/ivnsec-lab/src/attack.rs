//! The attack experiment (its code is in [`forger`] until it is split by concern).

pub mod forger;

pub use forger::*;
