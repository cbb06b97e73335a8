//! The replay reference model and the number-sequence generator shared by the replay property
//! tests (tests/replay_model.rs here, and the receive-path tests of the provider crates).
#![allow(dead_code)]

use std::collections::BTreeSet;

use ivnsec_core::sa::replay::ReplayError;
use proptest::prelude::*;

/// The reference: a set of seen numbers plus the highest.
#[derive(Default)]
pub struct Model {
    pub window: u64,
    pub seen: BTreeSet<u64>,
    pub highest: u64,
}

impl Model {
    pub fn new(window: u32) -> Model {
        Model {
            window: u64::from(window),
            ..Model::default()
        }
    }

    pub fn check(&self, s: u64) -> Result<(), ReplayError> {
        if s > self.highest {
            Ok(())
        } else if self.highest - s >= self.window.max(1) {
            Err(ReplayError::TooOld)
        } else if self.seen.contains(&s) {
            Err(ReplayError::Duplicate)
        } else {
            Ok(())
        }
    }

    pub fn insert(&mut self, s: u64) {
        self.seen.insert(s);
        self.highest = self.highest.max(s);
    }
}

/// How to pick the next number, relative to the state at that point.
#[derive(Clone, Debug)]
pub enum Op {
    /// highest + k, k in 1..=3.
    Next(u64),
    /// highest − (k mod (W + 3)): inside the window and just past its edge.
    Edge(u64),
    /// A number generated earlier (index modulo the history).
    Again(usize),
    /// Left of the window: highest − W − k.
    Old(u64),
    /// highest + 2^k.
    Jump(u32),
    /// An arbitrary number ≥ 1, often near the top of the range.
    Any(u64),
}

pub fn ops(max_len: usize) -> impl Strategy<Value = Vec<(Op, bool)>> {
    let op = prop_oneof![
        4 => (1u64..=3).prop_map(Op::Next),
        4 => any::<u64>().prop_map(Op::Edge),
        3 => any::<usize>().prop_map(Op::Again),
        2 => (0u64..=5000).prop_map(Op::Old),
        1 => (6u32..=40).prop_map(Op::Jump),
        1 => prop_oneof![1u64..=u64::MAX, (u64::MAX - 5000)..=u64::MAX].prop_map(Op::Any),
    ];
    // The bool: does the frame authenticate (only then is the number inserted)?
    prop::collection::vec((op, prop::bool::weighted(0.9)), 1..max_len)
}

/// Resolves `op` against the highest number, the window and the history; never returns 0.
/// `top` bounds the numbers (u64::MAX, or u32::MAX for 32-bit counters).
pub fn resolve(op: &Op, highest: u64, window: u64, history: &[u64], top: u64) -> u64 {
    let s = match *op {
        Op::Next(k) => highest.saturating_add(k),
        Op::Edge(k) => highest.saturating_sub(k % (window + 3)),
        Op::Again(i) if !history.is_empty() => history[i % history.len()],
        Op::Again(_) => 1,
        Op::Old(k) => highest.saturating_sub(window.saturating_add(k)),
        Op::Jump(k) => highest.saturating_add(1 << k),
        Op::Any(v) => v,
    };
    s.clamp(1, top)
}
