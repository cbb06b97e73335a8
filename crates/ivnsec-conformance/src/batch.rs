//! Helpers of the tests that compare batched, out-of-order crypto with one-by-one processing:
//! a deterministic generator for hostile traffic, and a runner that works through a batch out
//! of order on two threads at once, as the data planes' crypto workers may.

/// A small deterministic generator (xorshift64*), so a failing case can be named by its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Runs `work` on every item: the upper half on a second thread, each half from its last item
/// down, so the items are worked on out of order and two at once.
pub fn out_of_order<T: Send>(items: &mut [T], work: impl Fn(&mut T) + Sync) {
    let mid = items.len() / 2;
    let (a, b) = items.split_at_mut(mid);
    let run = |half: &mut [T]| half.iter_mut().rev().for_each(&work);
    std::thread::scope(|s| {
        s.spawn(|| run(b));
        run(a);
    });
}
