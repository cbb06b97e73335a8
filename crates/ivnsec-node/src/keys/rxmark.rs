//! Replay safety across restarts: a receiver's persistent acceptance mark (docs/nonce-safety.md,
//! "Receivers after a restart").
//!
//! A receiver under a long-term key keeps its replay window in memory; a restarted one would
//! start with an empty window and accept, once, every frame recorded before the restart. An
//! [`RxMark`] keeps, per receive SA, a mark M on disk with the invariant **every sequence
//! number / PN this receiver ever accepted is ≤ M**:
//!
//! - on start M is loaded and every number ≤ M counts as already seen (the SA's
//!   `restore_floor`: refused with the replay reason it has today, and counted);
//! - a number above the mark on disk is accepted only after the mark was moved ahead of it on
//!   disk (temporary file written, fsynced, renamed, directory fsynced: the machinery of
//!   [`HighWater`], in its own `.rx` file). The tag is verified first (check before verify),
//!   so forged frames cannot move the mark; the window is marked and the frame delivered only
//!   after the write returned (mark after).
//! - The mark moves ahead by a checkpoint ([`Checkpoint`], [`Pacer`]): min(N frames, the numbers
//!   the observed rate brings in T ms), at least 1, growing by doubling while the rate is not
//!   known over T, so the disk is written about once per T ms (or once per N frames at high
//!   rates), never per frame, and a restart refuses at most one checkpoint of legitimate
//!   frames: ≤ N frames and ≤ twice the frames of the busiest T ms before it (less what the
//!   sender sent while the receiver was down).
//!
//! [`RxMark::accept`] is a compare unless the mark must move: no allocation, no I/O per frame.

use std::path::Path;

use ivnsec_core::channel::DirectionKeys;
use serde_json::{Value, json};

use super::highwater::{self, HighWater, HwError};
use crate::error::{EnvError, UsageError};

/// Default `--replay-checkpoint-frames`: large enough that the time bound decides at the rates of
/// a gigabit link (about one write a second up to 65,536 frames a second; each write is two
/// fsyncs, milliseconds on the data path), small enough to bound a restart's refusals.
pub const DEFAULT_CHECKPOINT_FRAMES: u64 = 65_536;
/// Largest `--replay-checkpoint-frames` (the sender's largest block).
pub const MAX_CHECKPOINT_FRAMES: u64 = highwater::MAX_BLOCK;
/// Default `--replay-checkpoint-ms`: at most about a second of traffic refused after a restart,
/// at most about one write a second at rates below N frames per second.
pub const DEFAULT_CHECKPOINT_MS: u64 = 1000;
/// Largest `--replay-checkpoint-ms` (a minute).
pub const MAX_CHECKPOINT_MS: u64 = 60_000;

/// How far a receiver's mark moves ahead when it moves: the cost bound of a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// At most this many numbers ahead (`--replay-checkpoint-frames`, 1..=[`MAX_CHECKPOINT_FRAMES`]).
    pub frames: u64,
    /// At most the numbers the observed rate brings in this many ms
    /// (`--replay-checkpoint-ms`, 1..=[`MAX_CHECKPOINT_MS`]).
    pub ms: u64,
}

impl Default for Checkpoint {
    fn default() -> Checkpoint {
        Checkpoint {
            frames: DEFAULT_CHECKPOINT_FRAMES,
            ms: DEFAULT_CHECKPOINT_MS,
        }
    }
}

impl Checkpoint {
    /// Checked options; the error names the option and its range.
    pub fn new(frames: u64, ms: u64) -> Result<Checkpoint, String> {
        if !(1..=MAX_CHECKPOINT_FRAMES).contains(&frames) {
            return Err(format!(
                "--replay-checkpoint-frames must be between 1 and {MAX_CHECKPOINT_FRAMES}, got \
                 {frames}"
            ));
        }
        if !(1..=MAX_CHECKPOINT_MS).contains(&ms) {
            return Err(format!(
                "--replay-checkpoint-ms must be between 1 and {MAX_CHECKPOINT_MS}, got {ms}"
            ));
        }
        Ok(Checkpoint { frames, ms })
    }
}

/// How far ahead the next mark goes: no I/O, time passed in (so tests drive a virtual clock).
#[derive(Clone, Debug)]
pub struct Pacer {
    cp: Checkpoint,
    /// The number and the time of the previous move.
    last: Option<(u64, u64)>,
}

impl Pacer {
    pub fn new(cp: Checkpoint) -> Pacer {
        Pacer { cp, last: None }
    }

    /// How many numbers, from `seq` on, the mark moved at `now_ns` must cover, at least 1 and
    /// at most N. The first move knows no rate and covers `seq` alone. After that, with `d`
    /// numbers accepted in the `dt` since the previous move:
    ///
    /// - `dt` ≥ T: `d × T / dt`, the numbers the rate of that interval brings in T;
    /// - `dt` < T: `2 × d`: the interval was shorter than T, so the rate is not known over T
    ///   yet and the step grows by doubling (a burst never makes a step larger than twice what
    ///   it brought itself).
    ///
    /// A steady rate r settles at r × T (one write per T); a restart refuses at most
    /// min(N, twice the numbers of the busiest T before it).
    pub fn ahead(&mut self, seq: u64, now_ns: u64) -> u64 {
        let cap = u128::from(self.cp.frames);
        let n = match self.last {
            None => 1,
            Some((s0, t0)) => {
                let d = u128::from(seq.saturating_sub(s0));
                let dt = u128::from(now_ns.saturating_sub(t0));
                let t = u128::from(self.cp.ms) * 1_000_000;
                let step = if dt >= t {
                    (d * t).checked_div(dt).unwrap_or(d)
                } else {
                    d.saturating_mul(2)
                };
                step.min(cap) as u64
            }
        };
        self.last = Some((seq, now_ns));
        n.max(1)
    }

    /// The step [`ahead`](Self::ahead) would give when the number after `mark` arrives, for a
    /// move made early, at `now_ns`, from `next` on (the number after the highest accepted): the
    /// numbers used since the previous move (`next` − its number, in the time since it) tell
    /// when the mark would be passed at the rate seen so far. Passed T or more after the
    /// previous move: the rate's numbers in T; sooner: twice the previous move's span (the
    /// doubling [`ahead`](Self::ahead) would do then). At most N, at least 1. Changes nothing:
    /// [`moved`](Self::moved) records the move once it is made.
    pub fn ahead_early(&self, next: u64, mark: u64, now_ns: u64) -> u64 {
        let Some((s0, t0)) = self.last else {
            return 1;
        };
        let used = u128::from(next.saturating_sub(s0)).max(1);
        let span = u128::from(mark.saturating_add(1).saturating_sub(s0)).max(used);
        let dt = u128::from(now_ns.saturating_sub(t0));
        let t = u128::from(self.cp.ms) * 1_000_000;
        // When the whole span would be used at the rate seen so far.
        let passed = dt * span / used;
        let step = if passed >= t {
            (used * t).checked_div(dt).unwrap_or(span)
        } else {
            span.saturating_mul(2)
        };
        (step.min(u128::from(self.cp.frames)) as u64).max(1)
    }

    /// Records a move made from `seq` at `now_ns` (see [`ahead_early`](Self::ahead_early)).
    pub fn moved(&mut self, seq: u64, now_ns: u64) {
        self.last = Some((seq, now_ns));
    }
}

/// The smallest step of the mark that [`RxMark::top_up`] moves ahead of the frames.
pub const TOP_UP_MIN_STEP: u64 = 4;

/// The acceptance mark of one receive SA; holds its lock while it lives.
#[derive(Debug)]
pub struct RxMark {
    hw: HighWater,
    /// The mark found on disk at start: every number ≤ it counts as seen.
    restored: u64,
    pacer: Pacer,
    /// The highest number accepted by this process (0: none yet).
    highest: u64,
    /// How far the last move reached beyond the number that made it.
    last_step: u64,
    /// The highest number [`note`](Self::note)d since the last [`settle`](Self::settle) (0:
    /// none): the frames of a batch waiting for the mark to cover them.
    pending: u64,
}

impl RxMark {
    /// Opens (or starts) the mark of the peer's SA `sa_identity` (the identity the peer's
    /// sender keys its own nonce state by) in nonce domain `domain` under `keys`, in `dir`
    /// (created if missing), and locks it. `protocol_max`: the largest number the protocol
    /// carries. A mark at that largest number is refused: nothing new can arrive under the key.
    pub fn open(
        dir: &Path,
        domain: &str,
        sa_identity: &str,
        keys: &DirectionKeys,
        protocol_max: u64,
        cp: Checkpoint,
    ) -> anyhow::Result<RxMark> {
        let hw = HighWater::open_receiver(dir, domain, sa_identity, keys, protocol_max)
            .map_err(rx_error)?;
        let restored = hw.reserved();
        if restored >= protocol_max {
            return Err(anyhow::Error::new(UsageError(format!(
                "acceptance mark {}: every number up to {restored} of {domain} SA \
                 `{sa_identity}` was accepted under this key, so nothing new can arrive under \
                 it: install a new key (`ivnsec keygen`) on both ends",
                hw.path().display()
            ))));
        }
        Ok(RxMark {
            hw,
            restored,
            pacer: Pacer::new(cp),
            highest: 0,
            last_step: 1,
            pending: 0,
        })
    }

    /// The mark found at start (0: none): the SA must treat every number ≤ it as seen.
    pub fn restored(&self) -> u64 {
        self.restored
    }

    /// The mark on disk now.
    pub fn mark(&self) -> u64 {
        self.hw.reserved()
    }

    /// The largest number the mark may reach (the protocol's).
    pub fn limit(&self) -> u64 {
        self.hw.limit()
    }

    /// Marks this process wrote.
    pub fn writes(&self) -> u64 {
        self.hw.writes()
    }

    /// The state file.
    pub fn path(&self) -> &Path {
        self.hw.path()
    }

    /// Must be called after a frame carrying `seq` verified and before it is accepted
    /// (delivered, counted): a compare, and a durable move of the mark when `seq` is above it.
    /// On an error the frame must not be accepted (the receiver stops: its state cannot
    /// promise what it accepted). `now_ns` (a monotonic clock) is read only when the mark moves.
    #[inline]
    pub fn accept(&mut self, seq: u64, now_ns: impl FnOnce() -> u64) -> Result<(), HwError> {
        if seq > self.highest {
            self.highest = seq;
        }
        if seq <= self.hw.reserved() {
            return Ok(());
        }
        self.advance(seq, now_ns())
    }

    /// Notes the number of a verified frame that is accepted with the rest of its batch: no
    /// I/O. None of the batch's frames may be accepted (delivered, counted) before
    /// [`settle`](Self::settle) returned `Ok`.
    #[inline]
    pub fn note(&mut self, seq: u64) {
        self.pending = self.pending.max(seq);
    }

    /// Accepts every number [`note`](Self::note)d since the last call at once: at most one
    /// durable move of the mark for a whole batch, where [`accept`](Self::accept) frame by frame
    /// would move it at each frame that passes it (several writes in one burst while the mark
    /// still moves in small steps, each a few hundred µs on a disk). On an error no frame of the
    /// batch may be accepted.
    pub fn settle(&mut self, now_ns: impl FnOnce() -> u64) -> Result<(), HwError> {
        match std::mem::take(&mut self.pending) {
            0 => Ok(()),
            seq => self.accept(seq, now_ns),
        }
    }

    #[cold]
    fn advance(&mut self, seq: u64, now_ns: u64) -> Result<(), HwError> {
        let ahead = self.pacer.ahead(seq, now_ns);
        let mark = seq.saturating_add(ahead - 1).min(self.hw.limit()).max(seq);
        self.last_step = ahead;
        self.hw.reserve_to(mark)
    }

    /// Moves the mark ahead while the receiver is idle: when the numbers accepted have used
    /// half of the last move's step, the next move is made now (paced as if the next number
    /// arrived now), so the frame that passes the mark does not wait for the durable write. A
    /// data plane calls it when its queue ran empty; [`accept`](Self::accept) stays what
    /// guards every frame. Returns whether the mark moved.
    ///
    /// Only while the mark moves in steps of at least [`TOP_UP_MIN_STEP`] numbers: a slow
    /// stream whose every frame moves the mark gains nothing from moving it early, and a mark
    /// moved early would make a restarted receiver refuse more of the peer's frames. A move
    /// made here takes the step the frame passing the mark would have taken
    /// ([`Pacer::ahead_early`]), counted from the highest number accepted, so the steps still
    /// grow to the rate's numbers in T (one or two writes per T at a steady rate) and a
    /// restart refuses no more than one such step beyond what was accepted.
    pub fn top_up(&mut self, now_ns: impl FnOnce() -> u64) -> Result<bool, HwError> {
        let mark = self.hw.reserved();
        if self.highest == 0
            || self.highest >= self.hw.limit()
            || self.highest < self.restored
            || self.last_step < TOP_UP_MIN_STEP
        {
            return Ok(false);
        }
        if mark.saturating_sub(self.highest) >= self.last_step / 2 {
            return Ok(false);
        }
        // From the next number on, the step the frame passing the mark would have made; the
        // mark only grows.
        let next = self.highest + 1;
        let now = now_ns();
        let ahead = self.pacer.ahead_early(next, mark, now);
        let to = next.saturating_add(ahead - 1).min(self.hw.limit());
        if to <= mark {
            return Ok(false);
        }
        self.hw.reserve_to(to)?;
        self.pacer.moved(next, now);
        self.last_step = ahead;
        Ok(true)
    }

    /// [`top_up`](Self::top_up) moves the mark once a number above this one was accepted
    /// (`u64::MAX`: it does not, the steps being too small or the mark at its limit).
    pub fn top_up_due_above(&self) -> u64 {
        let mark = self.hw.reserved();
        if self.last_step < TOP_UP_MIN_STEP || mark >= self.hw.limit() {
            return u64::MAX;
        }
        (mark - self.last_step / 2).max(self.restored.saturating_sub(1))
    }

    /// What a status shows: the state file, the mark found at start and now, the writes, and
    /// `refused_below_mark` (frames refused as replays at or below the restored mark; the SA
    /// counts them).
    pub fn json(&self, refused_below_mark: u64) -> Value {
        json!({
            "state": self.path().display().to_string(),
            "restored_mark": self.restored,
            "mark": self.mark(),
            "mark_writes": self.writes(),
            "refused_below_mark": refused_below_mark,
        })
    }
}

/// A failure of a receiver's mark in a receiver's words, in the exit-code convention of
/// [`HwError::into_anyhow`] (corrupt, locked, unsafe: 2; I/O, a lost lock: 3).
pub fn rx_error(e: HwError) -> anyhow::Error {
    match e {
        HwError::Corrupt { path, why } => anyhow::Error::new(UsageError(format!(
            "acceptance mark {}: {why}; refusing to guess which numbers this receiver accepted \
             before its restart (a wrong guess accepts recorded frames again). Restore the file \
             from a backup, or install a new key on both ends and remove the file",
            path.display()
        ))),
        HwError::Locked { path } => anyhow::Error::new(UsageError(format!(
            "acceptance mark {} is locked by another receiver of the same SA under the same \
             key; two receivers of one mark could each accept a frame once. Stop the other one",
            path.display()
        ))),
        HwError::Unsafe { path, why } => anyhow::Error::new(UsageError(format!(
            "acceptance mark {}: {why}; refusing to use it",
            path.display()
        ))),
        HwError::Io { path, what, err } => anyhow::Error::new(EnvError(format!(
            "acceptance mark {}: {what}: {err}; the frame that needed the mark moved was not \
             accepted and the receiver stopped. Fix the state directory (space, permissions) \
             and restart",
            path.display()
        ))),
        HwError::LockLost { path, why } => anyhow::Error::new(EnvError(format!(
            "acceptance mark {}: {why}; another receiver may be using this SA's mark now, so \
             this one stopped. Make sure one receiver runs per key and SA, then restart",
            path.display()
        ))),
        other => other.into_anyhow(),
    }
}

/// The warning of a receiver started without a state directory.
pub fn warn_no_state_dir(what: &str) {
    eprintln!(
        "ivnsec: warning: {what} has no --state-dir: its replay window lives only in memory, so \
         after a restart it accepts, once, every frame recorded before the restart under the \
         same key. Give --state-dir DIR to keep an acceptance mark (docs/nonce-safety.md)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::test_dir::TestDir as Dir;
    use ivnsec_core::sa::replay::ReplayWindow;
    use std::collections::BTreeSet;
    use std::fs;

    const MS: u64 = 1_000_000;

    fn keys() -> DirectionKeys {
        DirectionKeys::new(&[7u8; 16], &[], [1u8; 12])
    }

    fn open(d: &Dir, cp: Checkpoint) -> RxMark {
        RxMark::open(
            &d.state(),
            "aes128-gcm",
            "ivnae key-id 1",
            &keys(),
            u64::MAX,
            cp,
        )
        .unwrap()
    }

    fn code(e: anyhow::Error) -> u8 {
        crate::error::exit_code(&e)
    }

    #[test]
    fn checkpoint_options_are_checked() {
        assert!(Checkpoint::new(1, 1).is_ok());
        assert!(Checkpoint::new(MAX_CHECKPOINT_FRAMES, MAX_CHECKPOINT_MS).is_ok());
        let e = Checkpoint::new(0, 1000).unwrap_err();
        assert!(
            e.contains("--replay-checkpoint-frames") && e.contains("got 0"),
            "{e}"
        );
        let e = Checkpoint::new(MAX_CHECKPOINT_FRAMES + 1, 1000).unwrap_err();
        assert!(e.contains("--replay-checkpoint-frames"), "{e}");
        let e = Checkpoint::new(10, 0).unwrap_err();
        assert!(e.contains("--replay-checkpoint-ms"), "{e}");
        let e = Checkpoint::new(10, MAX_CHECKPOINT_MS + 1).unwrap_err();
        assert!(e.contains("--replay-checkpoint-ms"), "{e}");
    }

    #[test]
    fn the_pacer_is_bounded_by_frames_and_by_time() {
        let cp = Checkpoint::new(4096, 1000).unwrap();
        let mut p = Pacer::new(cp);
        assert_eq!(p.ahead(1, 0), 1, "no rate known yet: the frame alone");
        // 1 number in 1 ms: shorter than T, the step doubles from what the interval brought.
        assert_eq!(p.ahead(2, MS), 2);
        assert_eq!(p.ahead(4, 2 * MS), 4);
        // 4 numbers, then 2 s of silence: the rate over the interval, 2 per second.
        assert_eq!(p.ahead(8, 2002 * MS), 2);
        // 1000 numbers in 1 s: 1000/s, so T = 1 s brings 1000.
        assert_eq!(p.ahead(1008, 3002 * MS), 1000);
        // 1 M numbers in 1 s: capped at N.
        assert_eq!(p.ahead(1_001_008, 4002 * MS), 4096);
        // Slow: one number in 5 s → less than one per second: at least 1.
        assert_eq!(p.ahead(1_001_009, 9002 * MS), 1);
        // The same instant: a burst grows the step by doubling only, never to the cap at once.
        assert_eq!(p.ahead(1_001_010, 9002 * MS), 2);
        let mut p = Pacer::new(Checkpoint::new(1, 1000).unwrap());
        p.ahead(1, 0);
        assert_eq!(p.ahead(1000, MS), 1, "N = 1: every frame its own mark");
        let mut p = Pacer::new(Checkpoint::new(4096, 10).unwrap());
        p.ahead(1, 0);
        // 1000 numbers in 1 s with T = 10 ms: 10 numbers.
        assert_eq!(p.ahead(1001, 1000 * MS), 10);
    }

    #[test]
    fn a_steady_rate_settles_at_one_write_per_checkpoint_time() {
        // 10,000 numbers a second, one every 100 us, T = 1 s: the step settles at 10,000.
        let mut p = Pacer::new(Checkpoint::new(1 << 20, 1000).unwrap());
        let (mut seq, mut mark, mut step) = (1u64, 0u64, 0u64);
        while seq < 200_000 {
            if seq > mark {
                step = p.ahead(seq, seq * 100_000);
                mark = seq + step - 1;
            }
            seq += 1;
        }
        assert_eq!(step, 10_000);
    }

    #[test]
    fn a_batch_moves_the_mark_once_where_frame_by_frame_moves_it_at_each_doubling() {
        // Frame by frame: a first burst of 64 frames passes the mark at 1, 2, 4, 8, 16, 32 and
        // 64 (the steps double while the rate is unknown): a durable write at each.
        let d = Dir::new("burst");
        let mut m = open(&d, Checkpoint::default());
        for seq in 1..=64 {
            m.accept(seq, || seq * 1000).unwrap();
        }
        assert_eq!(m.writes(), 7);
        drop(m);
        // The same burst in one batch: noted with no I/O, one write when it settles.
        let d = Dir::new("batch");
        let mut m = open(&d, Checkpoint::default());
        for seq in (1..=64).rev() {
            m.note(seq);
        }
        assert_eq!(
            (m.writes(), m.mark()),
            (0, 0),
            "nothing written before settle"
        );
        m.settle(|| 1000).unwrap();
        assert_eq!(m.writes(), 1);
        assert!(m.mark() >= 64, "{}", m.mark());
        // Nothing noted since: settle writes nothing.
        m.settle(|| 2000).unwrap();
        assert_eq!(m.writes(), 1);
        // The next batch of 64 moves it once more, and a restart restores a mark above both.
        for seq in 65..=128 {
            m.note(seq);
        }
        m.settle(|| 3000).unwrap();
        assert_eq!(m.writes(), 2);
        drop(m);
        assert!(open(&d, Checkpoint::default()).restored() >= 128);
    }

    #[test]
    fn an_idle_top_up_moves_the_mark_before_a_frame_needs_it() {
        let d = Dir::new("topup");
        let mut m = open(&d, Checkpoint::new(100, 1000).unwrap());
        assert!(
            !m.top_up(|| 0).unwrap(),
            "nothing accepted: nothing to move"
        );
        // A burst: the steps double (1, 2, 4, 8), the fourth move covers 9 ..= 16.
        for (seq, t) in [(1, 0), (2, MS), (4, 2 * MS), (8, 3 * MS)] {
            m.accept(seq, || t).unwrap();
        }
        assert_eq!((m.mark(), m.writes()), (15, 4));
        // Half of the step left (8 of 8 unused): no write.
        assert!(!m.top_up(|| 4 * MS).unwrap());
        for seq in 9..=12 {
            m.accept(seq, || 5 * MS).unwrap();
        }
        // 3 of 8 left: the idle top-up moves it now. The 5 numbers since the last move took
        // 3 ms, so the 8 of its step would be used long before T: the step doubles, as the
        // frame passing the mark would have made it, from 13 on: 13 ..= 28.
        assert!(m.top_up(|| 6 * MS).unwrap());
        let (mark, writes) = (m.mark(), m.writes());
        assert_eq!(mark, 28);
        assert_eq!(writes, 5);
        // The frames up to the new mark pass without a write.
        for seq in 13..=mark {
            m.accept(seq, || 7 * MS).unwrap();
        }
        assert_eq!(m.writes(), 5);
        // A slow stream moving the mark by one per frame is never topped up: a restart then
        // refuses nothing beyond what was accepted.
        let d2 = Dir::new("topup2");
        let mut m2 = open(&d2, Checkpoint::new(100, 1).unwrap());
        for (i, seq) in (1..=5u64).enumerate() {
            m2.accept(seq, || (i as u64) * 50 * MS).unwrap();
            assert!(!m2.top_up(|| (i as u64) * 50 * MS + 1).unwrap());
        }
        assert_eq!(m2.mark(), 5);
        // A restart restores the mark the top-up wrote: every number ≤ it counts as seen.
        drop(m);
        let again = open(&d, Checkpoint::new(100, 1000).unwrap());
        assert_eq!(again.restored(), mark);
    }

    #[test]
    fn a_steady_stream_topped_up_when_idle_writes_about_once_per_checkpoint_time() {
        // 17-frame bursts every ms (17,000 numbers a second), each batch noted and settled, a
        // top-up after each burst (the queue ran empty), T = 200 ms, for 2 s.
        let d = Dir::new("steady");
        let mut m = open(&d, Checkpoint::new(DEFAULT_CHECKPOINT_FRAMES, 200).unwrap());
        let mut seq = 0u64;
        let mut ahead_max = 0;
        for burst in 0..2000u64 {
            let now = burst * MS;
            for _ in 0..17 {
                seq += 1;
                m.note(seq);
            }
            m.settle(|| now).unwrap();
            m.top_up(|| now + MS / 2).unwrap();
            if burst >= 1000 {
                ahead_max = ahead_max.max(m.mark() - seq);
            }
        }
        // The steps grow to the rate's numbers in T (3,400) and stay there: the ramp, then one
        // or two writes per T (10 T in 2 s). A step frozen at the ramp's size would write
        // hundreds of times.
        assert!(m.writes() <= 40, "{} writes", m.writes());
        // And a restart would refuse at most about one step: ≤ twice the numbers of one T.
        assert!(ahead_max <= 2 * 3400, "{ahead_max}");
        assert!(ahead_max >= 3400 / 2, "{ahead_max}");
    }

    #[test]
    fn the_mark_moves_ahead_and_a_restart_restores_it() {
        let d = Dir::new("basic");
        let cp = Checkpoint::new(100, 1000).unwrap();
        let mut m = open(&d, cp);
        assert_eq!((m.restored(), m.mark(), m.writes()), (0, 0, 0));
        assert!(!m.path().exists(), "nothing written before the first frame");
        m.accept(1, || 0).unwrap();
        assert_eq!((m.mark(), m.writes()), (1, 1));
        // 1000 numbers in 1 s: the next move covers min(100, 1000 × 1 s) = 100.
        m.accept(1001, || 1000 * MS).unwrap();
        assert_eq!((m.mark(), m.writes()), (1100, 2));
        for s in 1002..=1100 {
            m.accept(s, || 1000 * MS + s * MS).unwrap();
        }
        assert_eq!(m.writes(), 2, "numbers below the mark cost no write");
        let path = m.path().to_path_buf();
        assert!(
            path.to_string_lossy().ends_with(".rx"),
            "{}",
            path.display()
        );
        drop(m);
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "ivnsec-rxmark 1");
        assert_eq!(lines[1], "profile aes128-gcm");
        assert_eq!(lines[2], "sa ivnae key-id 1");
        assert!(lines[3].starts_with("fingerprint "));
        assert_eq!(lines[4], "accepted 1100");
        assert!(!text.contains(&hex::encode([7u8; 16])), "no key on disk");
        let m = open(&d, cp);
        assert_eq!((m.restored(), m.mark(), m.writes()), (1100, 1100, 0));
        let v = m.json(3);
        assert_eq!(v["restored_mark"], 1100);
        assert_eq!(v["refused_below_mark"], 3);
        assert_eq!(v["mark_writes"], 0);
    }

    #[test]
    fn a_receivers_mark_and_a_senders_state_of_one_sa_are_apart() {
        let d = Dir::new("apart");
        let mut rx = open(&d, Checkpoint::default());
        rx.accept(50, || 0).unwrap();
        // A sender of the same SA under the same key in the same directory: its own file,
        // its own lock, its own numbers.
        let mut tx = HighWater::open(
            &d.state(),
            "aes128-gcm",
            "ivnae key-id 1",
            &keys(),
            highwater::Options::default(),
        )
        .unwrap();
        assert_eq!(tx.first_seq().unwrap(), 1);
        tx.claim(1).unwrap();
        assert_ne!(tx.path(), rx.path());
        assert_eq!(rx.mark(), 50);
    }

    #[test]
    fn a_second_receiver_of_one_mark_is_refused() {
        let d = Dir::new("lock");
        let _m = open(&d, Checkpoint::default());
        let e = RxMark::open(
            &d.state(),
            "aes128-gcm",
            "ivnae key-id 1",
            &keys(),
            u64::MAX,
            Checkpoint::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("locked by another receiver"), "{e}");
        assert_eq!(code(e), 2);
    }

    #[test]
    fn corrupt_marks_are_refused() {
        let d = Dir::new("corrupt");
        let mut m = open(&d, Checkpoint::default());
        m.accept(9, || 0).unwrap();
        let path = m.path().to_path_buf();
        drop(m);
        let good = fs::read_to_string(&path).unwrap();
        for bad in [
            String::new(),
            good.replace("accepted 9", "accepted x"),
            good.replace("accepted 9", "reserved 9"),
            good.replace("ivnsec-rxmark 1", "ivnsec-highwater 1"),
            good.trim_end().to_string(),
            good.replace("accepted 9", "accepted 99999999999999999999999"),
        ] {
            fs::write(&path, &bad).unwrap();
            let e = RxMark::open(
                &d.state(),
                "aes128-gcm",
                "ivnae key-id 1",
                &keys(),
                u64::MAX,
                Checkpoint::default(),
            )
            .unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains("refusing to guess"), "{bad:?}: {msg}");
            assert_eq!(code(e), 2, "{bad:?}");
        }
    }

    #[test]
    fn a_mark_at_the_end_of_the_space_is_refused() {
        let d = Dir::new("end");
        let mut m = RxMark::open(
            &d.state(),
            "aes128-gcm",
            "ivnae key-id 1",
            &keys(),
            100,
            Checkpoint::default(),
        )
        .unwrap();
        m.accept(99, || 0).unwrap();
        m.accept(100, || MS).unwrap();
        assert_eq!(m.mark(), 100, "never beyond the protocol's largest number");
        drop(m);
        let e = RxMark::open(
            &d.state(),
            "aes128-gcm",
            "ivnae key-id 1",
            &keys(),
            100,
            Checkpoint::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("install a new key"), "{e}");
        assert_eq!(code(e), 2);
    }

    /// One step of the crash model.
    #[derive(Clone, Debug)]
    enum Op {
        /// A frame carrying this number arrives `dt_ms` after the previous step.
        Frame { seq: u64, dt_ms: u64 },
        /// The receiver dies at a point of its handling of the next frame above its mark, then
        /// restarts: 0 before the mark moves, 1 while it is written (a temporary file left,
        /// the rename not done), 2 after it moved but before the frame is accepted.
        CrashOn { seq: u64, at: u8 },
        /// The receiver dies between frames and restarts.
        Restart,
    }

    fn op() -> impl proptest::strategy::Strategy<Value = Op> {
        use proptest::prelude::*;
        prop_oneof![
            8 => (1u64..400, 0u64..50).prop_map(|(seq, dt_ms)| Op::Frame { seq, dt_ms }),
            1 => (1u64..400, 0u8..3).prop_map(|(seq, at)| Op::CrashOn { seq, at }),
            1 => Just(Op::Restart),
        ]
    }

    /// A receiver as the data planes run it: an SA window restored from the mark, check before
    /// verify, the mark moved, then the window marked and the frame accepted.
    struct Receiver {
        mark: RxMark,
        window: ReplayWindow,
    }

    impl Receiver {
        fn start(d: &Dir, cp: Checkpoint, w: u32) -> Receiver {
            let mark = open(d, cp);
            let mut window = ReplayWindow::new(w).unwrap();
            window.restore_floor(mark.restored());
            Receiver { mark, window }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 48, ..Default::default() })]
        /// Under crashes at every step of the handling of a frame, and between frames: no
        /// number is ever accepted twice (across every run), every number accepted is ≤ the
        /// mark on disk, and a restart refuses at most one checkpoint: the restored mark is at
        /// most N − 1 above the highest number that reached the mark.
        #[test]
        fn no_number_is_accepted_twice_across_crashes(
            frames in 1u64..16,
            ms in 1u64..200,
            w in 0u32..80,
            ops in proptest::collection::vec(op(), 1..80),
        ) {
            let d = Dir::new("model");
            let cp = Checkpoint::new(frames, ms).unwrap();
            let mut rx = Receiver::start(&d, cp, w);
            let mut ever: BTreeSet<u64> = BTreeSet::new();
            // The highest number that was handed to `accept` (the mark may stand above it).
            let mut reached = 0u64;
            let mut now = 0u64;
            for o in ops {
                match o {
                    Op::Frame { seq, dt_ms } => {
                        now += dt_ms * MS;
                        if rx.window.check(seq).is_err() {
                            continue; // refused before verify
                        }
                        reached = reached.max(seq);
                        rx.mark.accept(seq, || now).unwrap();
                        proptest::prop_assert!(rx.mark.mark() >= seq);
                        rx.window.insert(seq);
                        proptest::prop_assert!(ever.insert(seq), "{} accepted twice", seq);
                    }
                    Op::CrashOn { seq, at } => {
                        if rx.window.check(seq).is_err() || seq <= rx.mark.mark() {
                            continue; // no move needed: no crash point of interest
                        }
                        match at {
                            0 => {}
                            1 => {
                                // Died inside the write: a temporary file, no rename.
                                let tmp = rx.mark.path().with_extension("rx.tmp");
                                drop(rx);
                                fs::write(&tmp, "ivnsec-rxmark 1\npartial").unwrap();
                                rx = Receiver::start(&d, cp, w);
                                continue;
                            }
                            _ => {
                                reached = reached.max(seq);
                                rx.mark.accept(seq, || now).unwrap();
                            }
                        }
                        drop(rx);
                        rx = Receiver::start(&d, cp, w);
                    }
                    Op::Restart => {
                        drop(rx);
                        rx = Receiver::start(&d, cp, w);
                    }
                }
                if let Some(&max) = ever.iter().next_back() {
                    proptest::prop_assert!(rx.mark.mark() >= max, "accepted {} above the mark {}", max, rx.mark.mark());
                }
                proptest::prop_assert!(rx.mark.restored() <= reached + frames.saturating_sub(1),
                    "restored {} more than a checkpoint above {}", rx.mark.restored(), reached);
            }
        }
    }
}
