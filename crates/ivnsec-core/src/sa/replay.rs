//! Sliding anti-replay window with duplicate detection.
//!
//! IVN-AE uses these semantics (and so can the standard protocols that share them):
//!
//! > W = 0 accepts only seq > highest; otherwise accepts seq > highest, or
//! > highest − W < seq ≤ highest when not seen before.
//!
//! which is the receiver algorithm of RFC 4303:
//!
//! //= https://www.rfc-editor.org/rfc/rfc4303#section-3.4.3
//! //# Duplicates are rejected through the use of a sliding receive window. [...] If the received
//! //# packet falls within the window and is new, or if the packet is to the right of the window,
//! //# then the receiver proceeds to ICV verification. [...] The receive window is updated only if
//! //# the ICV verification succeeds.
//!
//! So [`ReplayWindow::check`] runs before the tag check and [`ReplayWindow::insert`] only after it.
//! The bitmap is sized once, when the SA is made, and indexed modulo its length.

use alloc::vec;
use alloc::vec::Vec;

/// Largest window this type accepts (bits); the bitmap is allocated once per SA.
pub const MAX_WINDOW: u32 = 1 << 16;

/// Why a sequence number was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// Inside the window and seen before (or equal to the highest).
    Duplicate,
    /// Left of the window.
    TooOld,
}

/// Error making a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowTooLarge {
    pub requested: u32,
    pub max: u32,
}

impl core::fmt::Display for WindowTooLarge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "replay window {} exceeds the maximum {}",
            self.requested, self.max
        )
    }
}

impl core::error::Error for WindowTooLarge {}

/// Receive-side replay state.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    window: u64,
    /// Highest sequence number accepted so far; 0 = none yet (sequence numbers start at 1).
    highest: u64,
    /// Bit `s % bits` is set when `s` (inside the window) was accepted.
    bitmap: Vec<u64>,
    /// Every number ≤ it counts as accepted ([`restore_floor`](Self::restore_floor)); 0: none.
    floor: u64,
}

impl ReplayWindow {
    /// A window of `w` sequence numbers below and including the highest seen.
    pub fn new(w: u32) -> Result<ReplayWindow, WindowTooLarge> {
        if w > MAX_WINDOW {
            return Err(WindowTooLarge {
                requested: w,
                max: MAX_WINDOW,
            });
        }
        let words = (w as usize).div_ceil(64).max(1);
        Ok(ReplayWindow {
            window: u64::from(w),
            highest: 0,
            bitmap: vec![0; words],
            floor: 0,
        })
    }

    /// Treats every sequence number ≤ `m` as accepted: a receiver that restarts under the same
    /// key restores the mark it persisted ("every number I ever accepted is ≤ m"), so nothing
    /// it may have accepted before is accepted again. Numbers above `m` are unaffected.
    pub fn restore_floor(&mut self, m: u64) {
        if m <= self.floor {
            return;
        }
        self.floor = m;
        if m >= self.highest {
            self.highest = m;
            self.bitmap.iter_mut().for_each(|w| *w = u64::MAX);
            return;
        }
        // Below the highest: the numbers of the window up to `m` become seen.
        let lowest = self.highest.saturating_sub(self.bits() - 1).max(1);
        for s in lowest..=m {
            let (w, bit) = self.bit(s);
            if let Some(word) = self.bitmap.get_mut(w) {
                *word |= bit;
            }
        }
    }

    /// The restored mark (0: none).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Whether `seq` is at or below the restored mark (a refusal of it is a replay of a number
    /// a previous run may have accepted).
    pub fn below_floor(&self, seq: u64) -> bool {
        seq <= self.floor
    }

    pub fn window(&self) -> u64 {
        self.window
    }

    /// Highest sequence number accepted so far (0 when none).
    pub fn highest(&self) -> u64 {
        self.highest
    }

    fn bits(&self) -> u64 {
        self.bitmap.len() as u64 * 64
    }

    fn bit(&self, seq: u64) -> (usize, u64) {
        let i = seq % self.bits();
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    /// Would `seq` be accepted? Does not change state.
    pub fn check(&self, seq: u64) -> Result<(), ReplayError> {
        if seq > self.highest {
            return Ok(());
        }
        if self.window == 0 {
            return Err(if seq == self.highest {
                ReplayError::Duplicate
            } else {
                ReplayError::TooOld
            });
        }
        // seq ≤ highest: inside the window iff highest − W < seq.
        if self.highest - seq >= self.window {
            return Err(ReplayError::TooOld);
        }
        let (w, m) = self.bit(seq);
        // `bit` maps every number into the bitmap; a bit it could not find counts as seen.
        if self.bitmap.get(w).is_none_or(|b| b & m != 0) {
            Err(ReplayError::Duplicate)
        } else {
            Ok(())
        }
    }

    /// Marks `seq` as accepted. Call only after the frame authenticated; `seq` must have passed
    /// [`check`](Self::check).
    pub fn insert(&mut self, seq: u64) {
        if seq > self.highest {
            let advance = seq - self.highest;
            if advance >= self.bits() {
                self.bitmap.iter_mut().for_each(|w| *w = 0);
            } else {
                // Forget the sequence numbers that slide out: their bits are reused by
                // highest+1 ..= seq.
                for s in self.highest + 1..=seq {
                    let (w, m) = self.bit(s);
                    if let Some(b) = self.bitmap.get_mut(w) {
                        *b &= !m;
                    }
                }
            }
            self.highest = seq;
        }
        let (w, m) = self.bit(seq);
        if let Some(b) = self.bitmap.get_mut(w) {
            *b |= m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_zero_is_strictly_increasing() {
        let mut r = ReplayWindow::new(0).unwrap();
        assert_eq!(r.check(1), Ok(()));
        r.insert(1);
        r.insert(5);
        assert_eq!(r.check(5), Err(ReplayError::Duplicate));
        assert_eq!(r.check(4), Err(ReplayError::TooOld));
        assert_eq!(r.check(6), Ok(()));
    }

    #[test]
    fn window_one_accepts_only_new_highest() {
        let mut r = ReplayWindow::new(1).unwrap();
        r.insert(10);
        assert_eq!(r.check(10), Err(ReplayError::Duplicate));
        assert_eq!(r.check(9), Err(ReplayError::TooOld));
        assert_eq!(r.check(11), Ok(()));
    }

    #[test]
    fn reordering_inside_window() {
        let mut r = ReplayWindow::new(64).unwrap();
        r.insert(100);
        // highest − W < seq ≤ highest: 37..=100 acceptable once.
        assert_eq!(r.check(36), Err(ReplayError::TooOld));
        assert_eq!(r.check(37), Ok(()));
        r.insert(37);
        assert_eq!(r.check(37), Err(ReplayError::Duplicate));
        assert_eq!(r.check(99), Ok(()));
        r.insert(99);
        // Sliding forward forgets old bits but keeps the recent ones.
        r.insert(130);
        assert_eq!(r.check(99), Err(ReplayError::Duplicate));
        assert_eq!(r.check(100), Err(ReplayError::Duplicate));
        assert_eq!(r.check(98), Ok(()));
        assert_eq!(r.check(66), Err(ReplayError::TooOld));
        assert_eq!(r.check(67), Ok(()));
        r.insert(10_000);
        assert_eq!(r.check(9_999), Ok(()));
        assert_eq!(r.check(10_000), Err(ReplayError::Duplicate));
    }

    #[test]
    fn odd_window_sizes_use_exact_bound() {
        let mut r = ReplayWindow::new(100).unwrap();
        r.insert(1000);
        assert_eq!(r.check(901), Ok(()));
        assert_eq!(r.check(900), Err(ReplayError::TooOld));
    }

    #[test]
    fn too_large_refused() {
        assert!(ReplayWindow::new(MAX_WINDOW).is_ok());
        assert!(ReplayWindow::new(MAX_WINDOW + 1).is_err());
    }

    #[test]
    fn a_restored_floor_refuses_everything_at_or_below_it() {
        for w in [0u32, 1, 64, 100] {
            let mut r = ReplayWindow::new(w).unwrap();
            r.restore_floor(1000);
            assert_eq!(r.floor(), 1000);
            for s in [1, 500, 936, 999, 1000] {
                assert!(r.check(s).is_err(), "w {w} seq {s}");
                assert!(r.below_floor(s));
            }
            assert_eq!(r.check(1001), Ok(()));
            assert!(!r.below_floor(1001));
            r.insert(1003);
            assert!(r.check(1000).is_err(), "w {w}");
            if w > 2 {
                assert_eq!(
                    r.check(1002),
                    Ok(()),
                    "w {w}: a gap above the floor stays open"
                );
            }
        }
        // Restored below the highest (a window already in use): only up to the mark.
        let mut r = ReplayWindow::new(64).unwrap();
        r.insert(100);
        r.restore_floor(90);
        assert_eq!(r.check(90), Err(ReplayError::Duplicate));
        assert_eq!(r.check(91), Ok(()));
        assert_eq!(r.highest(), 100);
    }

    proptest::proptest! {
        /// A restored floor against a model: nothing ≤ the floor, anything new above it.
        #[test]
        fn floor_matches_model(w in 0u32..100, floor in 0u64..300, seqs in proptest::collection::vec(1u64..600, 0..200)) {
            let mut r = ReplayWindow::new(w).unwrap();
            r.restore_floor(floor);
            let mut seen = alloc::collections::BTreeSet::new();
            let mut highest = floor;
            for s in seqs {
                let model_ok = s > floor && (s > highest || (w > 0 && highest - s < u64::from(w) && !seen.contains(&s)));
                proptest::prop_assert_eq!(r.check(s).is_ok(), model_ok, "seq {} highest {}", s, highest);
                if model_ok {
                    r.insert(s);
                    seen.insert(s);
                    highest = highest.max(s);
                }
            }
        }

        /// Against a model: a set of everything accepted and the definition above.
        #[test]
        fn matches_model(w in 0u32..200, seqs in proptest::collection::vec(1u64..600, 0..400)) {
            let mut r = ReplayWindow::new(w).unwrap();
            let mut seen = alloc::collections::BTreeSet::new();
            let mut highest = 0u64;
            for s in seqs {
                let model_ok = s > highest || (w > 0 && highest - s < u64::from(w) && !seen.contains(&s));
                proptest::prop_assert_eq!(r.check(s).is_ok(), model_ok, "seq {} highest {}", s, highest);
                if model_ok {
                    r.insert(s);
                    seen.insert(s);
                    highest = highest.max(s);
                }
            }
        }
    }
}
