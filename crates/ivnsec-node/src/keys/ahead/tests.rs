use std::fs;
use std::time::{Duration, Instant};

use ivnsec_core::channel::DirectionKeys;

use super::*;
use crate::keys::highwater::Options;
use crate::keys::rxmark::Checkpoint;
use crate::keys::test_dir::TestDir as Dir;

fn keys() -> DirectionKeys {
    DirectionKeys::new(&[9u8; 16], &[], [2u8; 12])
}

fn sender(d: &Dir, block: u64) -> HighWater {
    let opts = Options {
        block,
        seq_limit: None,
        protocol_max: u64::from(u32::MAX),
        used_record: None,
        confirm_new_key: true,
        grow: false,
    };
    HighWater::open(&d.state(), "aes128-gcm", "ivnae key-id 1", &keys(), opts).unwrap()
}

fn receiver(d: &Dir) -> RxMark {
    RxMark::open(
        &d.state(),
        "aes128-gcm",
        "ivnae key-id 2",
        &keys(),
        u64::from(u32::MAX),
        Checkpoint::default(),
    )
    .unwrap()
}

/// Waits (at most 10 s) until `f` holds.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "never: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_sender_reserves_the_next_block_on_its_worker_and_never_uses_an_uncovered_number() {
    let d = Dir::new("tx");
    let hw = sender(&d, 100);
    let first = hw.first_seq().unwrap();
    let dur = Durable::new(hw, "test-ahead");
    // The first number is above the (empty) reservation: the data path writes it itself.
    dur.use_number(first).unwrap();
    let covered = dur.covered();
    assert_eq!(covered, first + 99);
    assert_eq!(dur.with(|h| h.writes()), 1);
    // Up to half of the block: compares only.
    for seq in first + 1..=first + 49 {
        dur.use_number(seq).unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!((dur.with(|h| h.writes()), dur.covered()), (1, covered));
    // Past half: the worker reserves the next block (a block from the next number on).
    dur.use_number(first + 50).unwrap();
    eventually("the worker's reservation", || dur.covered() > covered);
    assert_eq!(dur.with(|h| h.writes()), 2);
    assert_eq!(dur.covered(), first + 50 + 100);
    dur.top_up().unwrap();
    // Every number used is covered on disk by the state a restart reads.
    for seq in first + 51..=first + 120 {
        dur.use_number(seq).unwrap();
        assert!(seq <= dur.covered());
    }
    // A jump past the cover is written by the data path before it returns.
    dur.use_number(first + 1000).unwrap();
    assert!(dur.covered() >= first + 1000);
    // Dropping it joins the worker and releases the state's lock: a restart starts above
    // everything used.
    drop(dur);
    let again = sender(&d, 100);
    assert!(again.first_seq().unwrap() > first + 1000);
    // Number 0 is never valid.
    let dur = Durable::new(again, "test-ahead");
    assert!(dur.use_number(0).is_err());
}

#[test]
fn a_failed_early_write_is_returned_by_the_next_top_up() {
    let d = Dir::new("fail");
    let hw = sender(&d, 10);
    let first = hw.first_seq().unwrap();
    let lock = hw.path().with_extension("lock");
    let dur = Durable::new(hw, "test-ahead");
    dur.use_number(first).unwrap();
    // The lock file deleted under the running sender: its next write must fail.
    fs::remove_file(&lock).unwrap();
    for seq in first + 1..=first + 6 {
        dur.use_number(seq).unwrap();
    }
    let mut got = None;
    eventually("the failure", || {
        got = dur.top_up().err();
        got.is_some()
    });
    assert!(matches!(got, Some(HwError::LockLost { .. })), "{got:?}");
    // The numbers the failed write would have covered stay refused.
    let e = dur.use_number(first + 10).unwrap_err();
    assert!(matches!(e, HwError::LockLost { .. }), "{e}");
}

#[test]
fn a_receiver_settles_a_batch_and_its_mark_moves_ahead_on_the_worker() {
    let d = Dir::new("rx");
    let mut dur = Durable::new(receiver(&d), "test-ahead");
    // A first batch of 64: one write, by the data path, covering the batch.
    for seq in (1..=64).rev() {
        dur.note(seq);
    }
    assert_eq!(dur.covered(), 0, "nothing covered before settle");
    dur.settle().unwrap();
    assert_eq!(dur.with(|m| m.writes()), 1);
    assert!(dur.covered() >= 64);
    // Batches of 8 until an early move is due: the data path's last settle asks the worker,
    // which moves the mark with no further call of the data path.
    let mut seq = 64;
    let covered = loop {
        let (c0, due0) = (dur.covered(), dur.with(|m| m.top_up_due_above()));
        for _ in 0..8 {
            seq += 1;
            dur.note(seq);
        }
        dur.settle().unwrap();
        assert!(seq <= dur.covered(), "a settled number is covered");
        if seq <= c0 && seq > due0 {
            // Covered without a write of the data path, and due: the worker was asked.
            break c0;
        }
        assert!(seq < 10_000, "never due");
    };
    eventually("the worker's move", || dur.covered() > covered);
    let now = seq;
    dur.top_up().unwrap();
    // A restart restores everything accepted.
    drop(dur);
    assert!(receiver(&d).restored() >= now);
}

#[test]
fn a_slow_receiver_is_never_moved_early() {
    // One frame at a time, each passing the mark (steps of 1 and 2 over long gaps): the
    // worker has nothing to move, and a restart refuses nothing beyond what was accepted.
    let d = Dir::new("slow");
    let mut m = receiver(&d);
    m.accept(1, || 0).unwrap();
    let dur = Durable::new(m, "test-ahead");
    for seq in 2..=5 {
        dur.use_number(seq).unwrap();
        dur.top_up().unwrap();
    }
    std::thread::sleep(Duration::from_millis(20));
    let accepted_up_to = 5;
    assert!(dur.covered() <= 2 * accepted_up_to, "{}", dur.covered());
}

#[test]
fn a_status_never_waits_for_a_write_in_flight() {
    let d = Dir::new("status");
    let hw = sender(&d, 100);
    let first = hw.first_seq().unwrap();
    let dur = Durable::new(hw, "test-ahead");
    dur.use_number(first).unwrap();
    assert_eq!(dur.status_json()["writes"], 1);
    assert_eq!(dur.status_json()["reserved"], first + 99);
    assert_eq!(dur.limit(), u64::from(u32::MAX));
    // Another thread holds the state as a write in flight does; a status (taken under the
    // data path's locks) answers at once with what the last write published.
    std::thread::scope(|s| {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let dur = &dur;
        s.spawn(move || {
            dur.with(|_| {
                held_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(500));
            })
        });
        held_rx.recv().unwrap();
        let t = Instant::now();
        assert_eq!(dur.status_json()["reserved"], first + 99);
        assert!(
            t.elapsed() < Duration::from_millis(250),
            "{:?}",
            t.elapsed()
        );
    });
}
