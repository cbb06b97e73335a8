//! The generic replay window (`sa::replay::ReplayWindow`, used by IVN-AE and ESP) against a
//! reference model that keeps every accepted number in a set, plus the highest.
//!
//! The model is the definition of docs/wire-ivnae.md and RFC 4303 §3.4.3: a number above the
//! highest is new; one at most W − 1 below the highest (W = 0 behaves as W = 1) is accepted once;
//! anything lower is too old. A frame that fails its tag is checked but never inserted.
//!
//! The number sequences mix in-order numbers, reordering around the window edge, duplicates of
//! anything seen before, old numbers, jumps far ahead (up to 2^40, and to the top of the u64
//! range), for window sizes 0, 1, 64 and 1024.
// ivnsec-core denies these in library code (Cargo.toml); a test may panic.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::unreachable,
    clippy::indexing_slicing
)]

mod common;

use common::replay_model::{Model, Op, ops, resolve};
use ivnsec_core::sa::replay::ReplayWindow;
use proptest::prelude::*;

fn run(window: u32, ops: &[(Op, bool)]) -> Result<(), TestCaseError> {
    let mut r = ReplayWindow::new(window).unwrap();
    let mut m = Model::new(window);
    let mut history = Vec::new();
    for (i, (op, authentic)) in ops.iter().enumerate() {
        let s = resolve(op, m.highest, u64::from(window), &history, u64::MAX);
        history.push(s);
        let want = m.check(s);
        prop_assert_eq!(
            r.check(s),
            want,
            "step {} ({:?}): seq {} highest {} window {}",
            i,
            op,
            s,
            m.highest,
            window
        );
        // check() has no effect on the state.
        prop_assert_eq!(r.check(s), want);
        if want.is_ok() && *authentic {
            r.insert(s);
            m.insert(s);
        }
        prop_assert_eq!(r.highest(), m.highest);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn window_0(ops in ops(300)) { run(0, &ops)?; }

    #[test]
    fn window_1(ops in ops(300)) { run(1, &ops)?; }

    #[test]
    fn window_64(ops in ops(300)) { run(64, &ops)?; }

    #[test]
    fn window_1024(ops in ops(600)) { run(1024, &ops)?; }
}

/// Named regressions: the shapes the properties exercise, spelled out.
#[test]
fn regressions() {
    use Op::*;
    // Fill a 64-window, slide by exactly its bitmap size, then revisit the old slots.
    let ops: Vec<(Op, bool)> = [Next(1), Next(3), Jump(6), Edge(63), Edge(64), Again(1)]
        .into_iter()
        .map(|o| (o, true))
        .collect();
    run(64, &ops).unwrap();
    // The top of the range: u64::MAX is accepted once, then everything below is old or a dup.
    let ops: Vec<(Op, bool)> = [Any(u64::MAX), Any(u64::MAX), Edge(1), Old(0), Next(1)]
        .into_iter()
        .map(|o| (o, true))
        .collect();
    for w in [0, 1, 64, 1024] {
        run(w, &ops).unwrap();
    }
    // A frame that fails its tag leaves no trace: the same number still passes afterwards.
    let ops = vec![
        (Next(1), true),
        (Next(2), false),
        (Again(1), true),
        (Again(1), true),
    ];
    run(64, &ops).unwrap();
}
