//! "No heap allocation per PDU" for SecOC, checked with a counting global allocator (the same
//! one as `no_alloc.rs`, in its own test binary because a binary has one global allocator): once
//! an SA pair exists, `protect_in_place` and `verify` of 1000 PDUs allocate nothing, for both
//! MACs on both providers, with byte-aligned and non-aligned bit lengths and with verify
//! attempts.
//!
//! As in `no_alloc.rs`, this sees Rust allocations only: AWS-LC's C code allocates with its own
//! `OPENSSL_malloc`. The fast provider's CMAC creates a `CMAC_CTX` (C heap) per MAC, which this
//! test cannot see; its HMAC uses a stack `HMAC_CTX`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};

struct Counting;

thread_local! {
    // `const` initialisation and a `Copy` value without `Drop`: reading it never allocates and
    // never registers a destructor, so it is safe to use from inside the allocator.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: during thread teardown the slot may be gone; such allocations are not ours.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is a thread-local counter increment, which neither
// allocates nor touches the memory being managed.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as our caller's; `ptr` came from `System` via this allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's; `ptr` came from `System` via this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const PROVIDERS: [&CryptoProvider; 2] = [
    &ivnsec_crypto_portable::PROVIDER,
    &ivnsec_crypto_fast::PROVIDER,
];

const PDUS: u64 = 1000;

fn allocations_per_run(
    provider: &CryptoProvider,
    alg: SecocAlg,
    fv: u8,
    mac: u16,
    full: u8,
) -> u64 {
    let key = [0x42u8; 16];
    let params = SecocParams {
        fv_bits: fv,
        mac_bits: mac,
        full_fv_bits: full,
        ..SecocParams::new(alg, &key, 0x1234)
    };
    let mut tx = SecocTx::new(provider, &params, 1).unwrap();
    let opts = SecocRxOptions {
        last_freshness: 0,
        acceptance_window: Some(1 << 20),
        verify_attempts: 2,
    };
    let mut rx = SecocRx::new(provider, &params, opts).unwrap();
    let mut buf = vec![0u8; 2048];
    let mut lost = vec![0u8; 2048];

    let before = allocations();
    for i in 0..PDUS {
        let len = (i as usize * 37) % 1500;
        buf[..len].fill(i as u8);
        let n = tx.protect_in_place(&mut buf, len).expect("protect");
        if i % 10 == 9 {
            // Every tenth PDU is preceded by 2^fv_bits lost ones: verified on attempt 1.
            for _ in 0..(1u32 << fv) {
                tx.protect_in_place(&mut lost, 8).expect("protect");
            }
            let n = tx.protect_in_place(&mut buf, len).expect("protect");
            let v = rx.verify(&buf[..n]).expect("verify after loss");
            assert_eq!(v.attempt, 1);
            continue;
        }
        let v = rx.verify(&buf[..n]).expect("verify");
        assert_eq!(v.authentic_len, len);
    }
    let used = allocations() - before;
    assert_eq!(rx.counters().ok_frames, PDUS);
    used
}

#[test]
fn secoc_protect_and_verify_do_not_allocate() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 100]);
    assert!(
        allocations() > before,
        "the counting allocator is not active"
    );
    drop(v);

    let mut report = Vec::new();
    for provider in PROVIDERS {
        for alg in SecocAlg::ALL {
            for (fv, mac, full) in [(8u8, 24u16, 64u8), (3, 28, 40)] {
                assert!(alg.supported_by(provider));
                report.push((
                    provider.name,
                    alg,
                    fv,
                    allocations_per_run(provider, alg, fv, mac, full),
                ));
            }
        }
    }
    assert_eq!(report.len(), 8);
    let allocating: Vec<_> = report.iter().filter(|r| r.3 > 0).collect();
    assert!(
        allocating.is_empty(),
        "allocations in {PDUS} protect+verify rounds (provider, alg, fv_bits, count): {allocating:?}"
    );
}
