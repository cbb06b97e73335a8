//! "No heap allocation per frame" (DESIGN.md, hot path rules), checked with a counting global
//! allocator: once an SA pair exists, `protect_in_place` and `verify_in_place` of 1000 frames
//! allocate nothing, for one profile of each family on every provider that has it (portable,
//! fast, openssl, and `auto`'s per-primitive provider).
//!
//! What this can and cannot see: the counter wraps Rust's global allocator, so it sees every
//! allocation made by Rust code — ivnsec-core, the RustCrypto crates, and aws-lc-rs's Rust side.
//! AWS-LC itself is C and allocates with its own `OPENSSL_malloc` (libc `malloc`), which a Rust
//! `#[global_allocator]` never sees; e.g. aws-lc-rs's CMAC context is created with
//! `CMAC_CTX_new`. So for the fast provider this test proves "no Rust allocation per frame", not
//! "no malloc per frame". Reading the aws-lc-rs 1.19 source, the per-frame paths of the suites
//! below do not reach C `malloc` either: GCM and ChaCha20-Poly1305 use an `EVP_AEAD_CTX` made once
//! per key, HMAC a stack `HMAC_CTX`, AES-CBC/CTR call `AES_cbc_encrypt`/`AES_ctr128_encrypt` with
//! the stored `AES_KEY` — but this test does not check that.
//!
//! MACsec and ESP are checked alike, through `protect_in_place_at` from the SA's headroom and
//! from offset 0.
//!
//! The same holds for SecOC per PDU (both MACs, byte-aligned and non-aligned bit lengths, verify
//! attempts); there the fast provider's CMAC creates a `CMAC_CTX` on the C heap per MAC, which
//! this test cannot see (its HMAC uses a stack `HMAC_CTX`).
//!
//! The OpenSSL provider is the same case: libcrypto allocates with `OPENSSL_malloc`, unseen here.
//! Its per-frame path keeps one `EVP_CIPHER_CTX` per key and direction, made once, and only sets
//! the nonce per frame (`EVP_EncryptInit_ex` with no cipher and no key); the `openssl` crate
//! allocates on the Rust side only when OpenSSL reports an error (its `ErrorStack`), which the
//! successful frames below never do. `auto`'s provider adds nothing per frame: a size-split key
//! picks one of its scheduled keys by the frame's length.
//!
//! The counter is per thread, so allocations by the test harness or by other threads do not
//! count.
//!
//! Why this file has `unsafe` (the rest of the crate forbids it): a `#[global_allocator]` is an
//! `unsafe impl GlobalAlloc`. A counting crate such as `allocation-counter` (which also counts per
//! thread) would move that `unsafe` into a third-party dependency; for one test we keep the
//! thirty lines here instead, so nothing new enters the lock file and the counting is exactly the
//! one the assertions below were written for. It is its own test binary, `#![deny(unsafe_code)]`,
//! with `unsafe` allowed only on the allocator impl and a `SAFETY` comment on each block.
#![deny(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ivnsec_conformance::packets::{ipv4, udp_payload};
use ivnsec_conformance::{PROVIDERS, providers};
use ivnsec_core::crypto::AeadAlg;
use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions};
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};
use ivnsec_core::sa::someip::{Level, ServiceParams, ServiceSa};
use ivnsec_core::suite::IvnAeProfile;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_core::wire::someip::{MessageType, Repr, ReturnCode};

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
#[allow(unsafe_code)]
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

/// One profile of each family: AEAD (conf and auth), HMAC only, AES-CBC + HMAC, AES-CTR + HMAC,
/// CRC-32. Profiles a provider lacks (CCM, SHA3 on the fast one) are skipped for it.
const PROFILES: [&str; 10] = [
    "aes128-gcm/conf",
    "aes256-gcm/auth",
    "chacha20-poly1305/conf",
    "aes128-ccm/conf",
    "aes256-ccm/auth",
    "hmac-sha3-256",
    "hmac-sha256",
    "aes128-cbc-hmac-sha256",
    "aes256-ctr-hmac-sha1",
    "crc32",
];

const FRAMES: u64 = 1000;

/// Protects and verifies `FRAMES` frames of varying length and returns the allocations counted
/// during that loop (SA creation and buffers happen before the count starts).
fn allocations_per_run(provider: &CryptoProvider, profile: IvnAeProfile) -> u64 {
    let key = [0x11u8; 32];
    let mac_key = [0x22u8; 64];
    let s = profile.suite;
    let params = SaParams {
        key: s.key_len().map_or(&[][..], |n| &key[..n]),
        mac_key: if s.needs_mac_key() { &mac_key[..] } else { &[] },
        ..SaParams::new(profile, &[], &[])
    };
    let mut tx = IvnAeTx::new(provider, &params, 1).unwrap();
    let mut rx = IvnAeRx::new(provider, &params, 64).unwrap();
    let mut buf = vec![0u8; 2048];
    let mut plain = vec![0u8; 1514];
    for (i, b) in plain.iter_mut().enumerate() {
        *b = i as u8;
    }

    let before = allocations();
    for i in 0..FRAMES {
        let plain_len = 14 + (i as usize * 37) % 1500;
        buf[..plain_len].copy_from_slice(&plain[..plain_len]);
        let n = tx.protect_in_place(&mut buf, plain_len).expect("protect");
        let r = rx.verify_in_place(&mut buf[..n]).expect("verify");
        assert_eq!(r.len(), plain_len);
    }
    let used = allocations() - before;

    assert_eq!(rx.counters().ok_frames, FRAMES);
    used
}

#[test]
fn protect_and_verify_do_not_allocate() {
    // The counter works: an allocation on this thread is seen.
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 100]);
    assert!(
        allocations() > before,
        "the counting allocator is not active"
    );
    drop(v);

    let mut report = Vec::new();
    for name in PROFILES {
        let profile: IvnAeProfile = name.parse().unwrap();
        for provider in providers(profile) {
            let n = allocations_per_run(provider, profile);
            report.push((provider.name, name, n));
        }
    }
    // 10 profiles on the portable and the auto provider, 7 on the fast one, the 5 AEAD profiles
    // and crc32 on the OpenSSL one (it has no MAC).
    assert_eq!(report.len(), 10 + 7 + 6 + 10);
    let allocating: Vec<_> = report.iter().filter(|(_, _, n)| *n > 0).collect();
    assert!(
        allocating.is_empty(),
        "allocations in {FRAMES} protect+verify rounds (provider, profile, count): {allocating:?}"
    );
}

// SecOC: no allocation per PDU.

const PDUS: u64 = 1000;

fn secoc_allocations_per_run(
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
        if i % 10 == 9 && fv <= 16 {
            // Every tenth PDU is preceded by 2^fv_bits lost ones: verified on attempt 1 (for
            // short truncated FVs: 2^32 lost PDUs would take hours).
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
    for alg in SecocAlg::ALL {
        // Every provider but the OpenSSL one (no MAC) has both MACs (the 18 below counts on it).
        assert_eq!(providers(alg).count(), PROVIDERS.len() - 1, "{alg}");
        for provider in providers(alg) {
            // The defaults, a non-aligned layout, and the experiments' (32 of 64 FV bits, 64).
            for (fv, mac, full) in [(8u8, 24u16, 64u8), (3, 28, 40), (32, 64, 64)] {
                report.push((
                    provider.name,
                    alg,
                    fv,
                    secoc_allocations_per_run(provider, alg, fv, mac, full),
                ));
            }
        }
    }
    assert_eq!(report.len(), 18);
    let allocating: Vec<_> = report.iter().filter(|r| r.3 > 0).collect();
    assert!(
        allocating.is_empty(),
        "allocations in {PDUS} protect+verify rounds (provider, alg, fv_bits, count): {allocating:?}"
    );
}

// Secured SOME/IP: no allocation per message once the sender's replay window exists (it is made
// when the sender's first message verifies, once per sender).

fn someip_allocations_per_run(provider: &CryptoProvider, alg: AeadAlg, level: Level) -> u64 {
    let key = [0x5au8; 32];
    let params = ServiceParams {
        alg,
        level,
        key_id: 1,
        key: &key[..alg.key_len()],
        ..ServiceParams::nosec(0x4956)
    };
    let mut tx = ServiceSa::new(provider, &params).unwrap();
    let mut rx = ServiceSa::new(provider, &params).unwrap();
    let mut header = Repr {
        service_id: 0x4956,
        method_id: 1,
        client_id: 0x0101,
        session_id: 1,
        interface_version: 1,
        message_type: MessageType::Request,
        tp: false,
        return_code: ReturnCode::E_OK,
        payload_len: 0,
    };
    let body = vec![0x33u8; 1400];
    let mut buf = vec![0u8; 2048];
    let n = tx.protect(&header, &body[..8], &mut buf).expect("protect");
    rx.verify(&mut buf[..n]).expect("first message");

    let before = allocations();
    for i in 0..PDUS {
        let len = (i as usize * 37) % 1400;
        header.session_id = (i % 0xfffe) as u16 + 2;
        let n = tx
            .protect(&header, &body[..len], &mut buf)
            .expect("protect");
        let r = rx.verify(&mut buf[..n]).expect("verify");
        assert_eq!(r.len(), len);
    }
    let used = allocations() - before;
    assert_eq!(rx.rx_counters().ok_frames, PDUS + 1);
    used
}

#[test]
fn someip_protect_and_verify_do_not_allocate() {
    let mut report = Vec::new();
    for alg in AeadAlg::ALL {
        for provider in providers(alg) {
            for level in [Level::Auth, Level::Conf] {
                let n = someip_allocations_per_run(provider, alg, level);
                report.push((provider.name, alg.name(), level.name(), n));
            }
        }
    }
    // 5 suites on the portable, OpenSSL and auto providers, 3 on the fast one (no CCM), at two
    // levels.
    assert_eq!(report.len(), 2 * (5 + 3 + 5 + 5));
    let allocating: Vec<_> = report.iter().filter(|r| r.3 > 0).collect();
    assert!(
        allocating.is_empty(),
        "allocations in {PDUS} protect+verify rounds (provider, suite, level, count): {allocating:?}"
    );
}

// MACsec and ESP: no allocation per frame / packet, through `protect_in_place_at` with the unit
// behind the SA's headroom (the path of the channel and the TAP data plane) and at offset 0.

fn macsec_esp_allocations_per_run(
    provider: &CryptoProvider,
    suite: CipherSuite,
    alg: EspAlg,
) -> u64 {
    let key = [0x33u8; 36];
    let kp = KeyParams {
        suite,
        key: &key[..suite.key_len()],
        sci: Sci::from_u64(0x0200_0000_0001_0001),
        an: 0,
        ssci: suite.is_xpn().then_some(1),
        salt: suite.is_xpn().then_some([0x5a; 12]),
    };
    let tx_opts = TxOptions {
        confidentiality: true,
        ..TxOptions::default()
    };
    let mut mtx = MacsecTx::new(provider, &kp, tx_opts, 1).unwrap();
    let mut mrx = MacsecRx::new(provider, &kp, RxOptions::default()).unwrap();
    let params = EspParams {
        alg,
        spi: 0x100,
        key: &key[..alg.key_len()],
        auth_key: &[],
        esn: false,
    };
    let mut etx = EspTx::new(provider, &params, EspMode::Transport, 1).unwrap();
    let mut erx = EspRx::new(provider, &params, 64).unwrap();
    let frame: Vec<u8> = (0..1514).map(|i| i as u8).collect();
    let packet = ipv4(17, &udp_payload(1400));
    let mut buf = vec![0u8; 2048];

    let before = allocations();
    for i in 0..FRAMES {
        let len = 14 + (i as usize * 37) % 1500;
        let at = if i % 2 == 0 { mtx.headroom() } else { 0 };
        buf[at..at + len].copy_from_slice(&frame[..len]);
        let n = mtx
            .protect_in_place_at(&mut buf, at, len)
            .expect("MACsec protect");
        let d = mrx.verify_in_place(&mut buf[..n]).expect("MACsec verify");
        assert_eq!(d.range.len(), len);

        let at = if i % 2 == 0 { etx.headroom() } else { 0 };
        buf[at..at + packet.len()].copy_from_slice(&packet);
        let n = etx
            .protect_in_place_at(&mut buf, at, packet.len(), None)
            .expect("ESP protect");
        let r = erx.verify_in_place(&mut buf[..n]).expect("ESP verify");
        assert_eq!(r.len(), packet.len());
    }
    let used = allocations() - before;
    assert_eq!(mrx.counters().in_pkts_ok, FRAMES);
    assert_eq!(erx.counters().ok_frames, FRAMES);
    used
}

#[test]
fn macsec_and_esp_protect_and_verify_do_not_allocate() {
    let mut report = Vec::new();
    for (suite, alg) in [
        (CipherSuite::GcmAes128, EspAlg::Aes128Gcm),
        (CipherSuite::GcmAesXpn256, EspAlg::ChaCha20Poly1305),
    ] {
        for provider in providers(suite) {
            let n = macsec_esp_allocations_per_run(provider, suite, alg);
            report.push((provider.name, suite, alg, n));
        }
    }
    assert_eq!(report.len(), 2 * PROVIDERS.len());
    let allocating: Vec<_> = report.iter().filter(|r| r.3 > 0).collect();
    assert!(
        allocating.is_empty(),
        "allocations in {FRAMES} protect+verify rounds (provider, suite, alg, count): {allocating:?}"
    );
}
