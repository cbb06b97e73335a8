//! The timed loops of the crypto benchmark, one per family, and the bare AEAD they are compared
//! with. Each times protect on one buffer, then verify over a ring of units with increasing
//! sequence numbers, in batches sized by calibration (see the method in [`super`]). The bare AEAD
//! seal and open are timed in the same rounds as protect and verify, batch after batch, so that
//! both see the same stretches of a shared machine.

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use ivnsec_core::channel::write_ipv4_header;
use ivnsec_core::crypto::{AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, CryptoProvider};
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};
use ivnsec_core::suite::{IvnAeProfile, Suite};
use ivnsec_core::wire::macsec::Sci;

use super::cpu::cpu_time_per_frame;
use super::{Stats, Timing};

/// Ethernet header (dst ‖ src ‖ EtherType) in front of the payload of a plain frame.
const ETH_HEADER: usize = 14;
/// Cap on the verify ring, so the frames stay in cache.
const RING_BYTES: usize = 512 * 1024;
/// Replay window of the verifying SA (the `frame verify` default).
const REPLAY_WINDOW: u32 = 64;
/// HMAC key length (the experiments of seeds 000/001 use 64 bytes).
const MAC_KEY_LEN: usize = 64;

/// A batch of `m` units; returns the nanoseconds it took (only the timed part).
pub(super) type Batch<'a> = dyn FnMut(usize) -> Result<f64> + 'a;

/// Calls `unit` on each item, all timed together: the nanoseconds they took.
fn time_each<T>(
    items: impl IntoIterator<Item = T>,
    mut unit: impl FnMut(T) -> Result<()>,
) -> Result<f64> {
    let t0 = Instant::now();
    for item in items {
        unit(item)?;
    }
    Ok(t0.elapsed().as_nanos() as f64)
}

/// What one measurement found besides its statistics.
pub struct MeasureMeta {
    pub plain_len: usize,
    pub protected_len: usize,
    pub protect_m: usize,
    pub verify_m: usize,
    /// Protect ns/frame of CPU time (see the module doc), when asked for and measurable.
    pub protect_cpu_ns: Option<f64>,
    /// Protect and verify timed frame by frame ([`Timing::frames`] of each), when asked for.
    pub protect_frame: Option<Stats>,
    pub verify_frame: Option<Stats>,
    /// Bare AEAD seal and open, one pair per [`BareSpec`] asked for, in that order.
    pub bare: Vec<(Stats, Stats)>,
}

/// A bare AEAD call timed beside the framing: `len` bytes encrypted, `aad_len` bytes of AAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BareSpec {
    pub alg: AeadAlg,
    pub aad_len: usize,
    pub len: usize,
}

/// Protect and verify statistics and what they were measured on.
pub type Measured = (Stats, Stats, MeasureMeta);

/// What a measurement is asked for besides protect and verify.
#[derive(Clone, Copy, Debug)]
pub struct Extra<'a> {
    /// Also time protect for this many seconds of CPU time (see [`super::cpu`]).
    pub cpu_seconds: Option<f64>,
    /// Bare AEAD calls to time in the same rounds as protect (seal) and verify (open).
    pub bare: &'a [BareSpec],
}

/// Times `protect` (and, with `cpu_seconds`, its CPU time per frame), then `verify` over a ring
/// of at most `ring_max` units; each bare AEAD of `extra` is timed in the same rounds, its seal
/// beside protect and its open beside verify.
fn protect_then_verify(
    prov: &CryptoProvider,
    protect: &mut Batch<'_>,
    verify: &mut Batch<'_>,
    ring_max: usize,
    t: Timing,
    extra: Extra<'_>,
    (plain_len, protected_len): (usize, usize),
) -> Result<Measured> {
    let mut bares = extra
        .bare
        .iter()
        .map(|&spec| BareAead::new(prov, spec))
        .collect::<Result<Vec<_>>>()?;
    let mut rounds: Vec<(&mut Batch<'_>, usize)> = vec![(&mut *protect, usize::MAX)];
    for b in &mut bares {
        rounds.push((&mut *b.seal, usize::MAX));
    }
    let mut seal = timed_rounds(&mut rounds, t)?.into_iter();
    drop(rounds);
    let (protect_stats, protect_m) = seal.next().context("protect timing")?;
    let protect_cpu_ns = match extra.cpu_seconds {
        Some(secs) => cpu_time_per_frame(protect, protect_m, secs)?,
        None => None,
    };
    let mut rounds: Vec<(&mut Batch<'_>, usize)> = vec![(&mut *verify, ring_max)];
    for b in &mut bares {
        rounds.push((&mut *b.open, b.open_max));
    }
    let mut open = timed_rounds(&mut rounds, t)?.into_iter();
    drop(rounds);
    let (verify_stats, verify_m) = open.next().context("verify timing")?;
    let bare = seal.zip(open).map(|((s, _), (o, _))| (s, o)).collect();
    let protect_frame = one_by_one(protect, t.frames)?;
    let verify_frame = one_by_one(verify, t.frames)?;
    Ok((
        protect_stats,
        verify_stats,
        MeasureMeta {
            plain_len,
            protected_len,
            protect_m,
            verify_m,
            protect_cpu_ns,
            protect_frame,
            verify_frame,
            bare,
        },
    ))
}

/// `n` frames, each timed on its own (a batch of one: one clock reading before and one after
/// the call), after the batches have warmed up: the spread a single frame sees, which the
/// batch means average away. `None` for `n` = 0.
fn one_by_one(batch: &mut Batch<'_>, n: usize) -> Result<Option<Stats>> {
    if n == 0 {
        return Ok(None);
    }
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(batch(1)?);
    }
    Ok(Some(Stats::from(samples)))
}

/// What an empty timing (two clock readings) costs, in ns: the median of `n` (at least 1).
/// Every one-by-one figure includes it once.
pub fn timer_ns(n: usize) -> f64 {
    let samples: Vec<f64> = (0..n.max(1))
        .map(|_| {
            let t0 = Instant::now();
            black_box(());
            t0.elapsed().as_nanos() as f64
        })
        .collect();
    Stats::from(samples).median
}

fn keys_for(suite: Suite) -> (Vec<u8>, Vec<u8>) {
    let key: Vec<u8> = (0..suite.key_len().unwrap_or(0)).map(|i| i as u8).collect();
    let mac_key: Vec<u8> = if suite.needs_mac_key() {
        (0..MAC_KEY_LEN).map(|i| 0x80 ^ i as u8).collect()
    } else {
        Vec::new()
    };
    (key, mac_key)
}

/// IVN-AE protect and verify statistics for one (provider, profile, size).
pub fn measure_ivnae(
    prov: &CryptoProvider,
    profile: IvnAeProfile,
    size: usize,
    t: Timing,
    extra: Extra<'_>,
) -> Result<Measured> {
    let (key, mac_key) = keys_for(profile.suite);
    let params = SaParams::new(profile, &key, &mac_key);
    let plain_len = ETH_HEADER + size;

    // Protect: one buffer, protected over and over, the frame behind the SA's headroom as the
    // channel builds it.
    let mut tx = IvnAeTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let protected_len = tx.protected_len(plain_len);
    let at = tx.headroom();
    let mut buf = plain_frame_at(at, plain_len, protected_len);
    let mut protect_batch = |m: usize| {
        time_each(0..m, |_| {
            tx.protect_in_place_at(black_box(&mut buf), at, plain_len)
                .map(drop)
                .map_err(|e| anyhow!("protect: {e}"))
        })
    };

    // Verify: a ring of frames with increasing sequence numbers, refilled (untimed) per batch.
    let mut vtx = IvnAeTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx = IvnAeRx::new(prov, &params, REPLAY_WINDOW).map_err(|e| anyhow!("SA: {e}"))?;
    let (mut ring, ring_max) = ring_for(protected_len);
    let stride = ring.len() / ring_max;
    for slot in ring.chunks_exact_mut(stride) {
        slot[..at + plain_len].copy_from_slice(&plain_frame_at(at, plain_len, 0));
    }
    let mut verify_batch = |m: usize| -> Result<f64> {
        for slot in ring.chunks_exact_mut(stride).take(m) {
            // The slot holds the previous frame's leftovers; protect does not parse the plain
            // frame, and its cost does not depend on the bytes, only on the length.
            let n = vtx
                .protect_in_place_at(slot, at, plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
            debug_assert_eq!(n, protected_len);
        }
        time_each(ring.chunks_exact_mut(stride).take(m), |slot| {
            rx.verify_in_place(black_box(&mut slot[..protected_len]))
                .map(|v| {
                    black_box(v);
                })
                .map_err(|e| anyhow!("verify dropped a frame: {e}"))
        })
    };
    protect_then_verify(
        prov,
        &mut protect_batch,
        &mut verify_batch,
        ring_max,
        t,
        extra,
        (plain_len, protected_len),
    )
}

/// For each (batch, largest batch size): calibration (also the warm-up) and one untimed batch;
/// then `t.batches` rounds in which each runs one timed batch, one after the other, so that
/// all of them see the same stretches of a shared machine. Per batch: ns per frame and the
/// frames per batch.
pub(super) fn timed_rounds(
    batches: &mut [(&mut Batch<'_>, usize)],
    t: Timing,
) -> Result<Vec<(Stats, usize)>> {
    let mut ms = Vec::with_capacity(batches.len());
    for (batch, max_m) in batches.iter_mut() {
        let m = calibrate(*batch, t.batch_ns, *max_m)?;
        batch(m)?;
        ms.push(m);
    }
    let mut samples = vec![Vec::with_capacity(t.batches); batches.len()];
    for _ in 0..t.batches {
        for ((batch, _), (&m, s)) in batches.iter_mut().zip(ms.iter().zip(&mut samples)) {
            s.push(batch(m)? / m as f64);
        }
    }
    Ok(samples
        .into_iter()
        .zip(ms)
        .map(|(s, m)| (Stats::from(s), m))
        .collect())
}

/// Frames per batch so that one batch lasts about `target_ns` (at most `max_m`). Doubles the
/// batch until it takes a quarter of the target, then scales; this also warms up.
fn calibrate(batch: &mut Batch<'_>, target_ns: f64, max_m: usize) -> Result<usize> {
    let mut m = 1usize;
    loop {
        let ns = batch(m)?.max(1.0);
        if ns >= target_ns / 4.0 || m >= max_m {
            let per = ns / m as f64;
            return Ok(((target_ns / per).ceil() as usize).clamp(1, max_m));
        }
        m = m.saturating_mul(2).min(max_m);
    }
}

/// A ring of `stride`-byte slots (rounded up to 64 bytes) capped at [`RING_BYTES`]: (buffer,
/// number of slots).
fn ring_for(stride: usize) -> (Vec<u8>, usize) {
    let stride = stride.div_ceil(64) * 64;
    let n = (RING_BYTES / stride).max(1);
    (vec![0u8; stride * n], n)
}

fn key_bytes(len: usize, x: u8) -> Vec<u8> {
    (0..len).map(|i| x ^ i as u8).collect()
}

/// A plain frame (dst ‖ src ‖ EtherType 0x0800 ‖ payload) behind `at` spare bytes, in a buffer
/// of at least `cap` bytes.
fn plain_frame_at(at: usize, plain_len: usize, cap: usize) -> Vec<u8> {
    let mut b = vec![0u8; cap.max(at + plain_len)];
    let f = &mut b[at..at + plain_len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    for (i, x) in f[14..].iter_mut().enumerate() {
        *x = i as u8;
    }
    b
}

/// Whole-frame MACsec protect and verify (confidentiality, no SCI in the SecTAG).
pub fn measure_macsec(
    prov: &CryptoProvider,
    suite: CipherSuite,
    size: usize,
    t: Timing,
    extra: Extra<'_>,
) -> Result<Measured> {
    let key = key_bytes(suite.key_len(), 0x11);
    let kp = KeyParams {
        suite,
        key: &key,
        sci: Sci::from_u64(0x0200_0000_0001_0001),
        an: 0,
        ssci: suite.is_xpn().then_some(1),
        salt: suite.is_xpn().then_some([0x5a; 12]),
    };
    let tx_opts = TxOptions {
        confidentiality: true,
        include_sci: false,
        es: false,
        scb: false,
    };
    let plain_len = ETH_HEADER + size;

    let mut tx = MacsecTx::new(prov, &kp, tx_opts, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let protected_len = tx.protected_len(plain_len);
    // The frame behind the SA's headroom, as the channel and the TAP data plane have it.
    let at = tx.headroom();
    let mut buf = plain_frame_at(at, plain_len, protected_len);
    // protect does not parse the frame: the leftovers of the previous call are as good.
    let mut protect_batch = |m: usize| {
        time_each(0..m, |_| {
            tx.protect_in_place_at(black_box(&mut buf), at, plain_len)
                .map(drop)
                .map_err(|e| anyhow!("protect: {e}"))
        })
    };

    let mut vtx = MacsecTx::new(prov, &kp, tx_opts, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx = MacsecRx::new(
        prov,
        &kp,
        RxOptions {
            validate: ValidateFrames::Strict,
            replay_protect: true,
            replay_window: REPLAY_WINDOW,
            lowest_pn: 1,
        },
    )
    .map_err(|e| anyhow!("SA: {e}"))?;
    let (mut ring, ring_max) = ring_for(protected_len);
    let stride = ring.len() / ring_max;
    let plain = plain_frame_at(at, plain_len, 0);
    let mut verify_batch = |m: usize| -> Result<f64> {
        for slot in ring.chunks_exact_mut(stride).take(m) {
            slot[..at + plain_len].copy_from_slice(&plain);
            vtx.protect_in_place_at(slot, at, plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        time_each(ring.chunks_exact_mut(stride).take(m), |slot| {
            rx.verify_in_place(black_box(&mut slot[..protected_len]))
                .map(|v| {
                    black_box(v);
                })
                .map_err(|e| anyhow!("verify dropped a frame: {e}"))
        })
    };
    protect_then_verify(
        prov,
        &mut protect_batch,
        &mut verify_batch,
        ring_max,
        t,
        extra,
        (plain_len, protected_len),
    )
}

/// IPv4 (192.0.2.1 → 192.0.2.2) / UDP (12345 → 12346) packet with `size` payload bytes.
fn ipv4_udp(size: usize) -> Vec<u8> {
    let total = 20 + 8 + size;
    let mut p = vec![0u8; total];
    write_ipv4_header(
        &mut p[..20],
        total,
        17,
        Ipv4Addr::new(192, 0, 2, 1),
        Ipv4Addr::new(192, 0, 2, 2),
    );
    let udp_len = 8 + size;
    p[20..28].copy_from_slice(&[
        0x30,
        0x39,
        0x30,
        0x3a,
        (udp_len >> 8) as u8,
        udp_len as u8,
        0,
        0,
    ]);
    for (i, x) in p[28..].iter_mut().enumerate() {
        *x = i as u8;
    }
    p
}

/// Whole-packet ESP protect and verify (transport mode, IPv4/UDP, no ESN).
pub fn measure_esp(
    prov: &CryptoProvider,
    alg: EspAlg,
    size: usize,
    t: Timing,
    extra: Extra<'_>,
) -> Result<Measured> {
    let key = key_bytes(alg.key_len(), 0x22);
    let auth_key = key_bytes(alg.auth_key_len().unwrap_or(0), 0x33);
    let params = EspParams {
        alg,
        spi: 0x1000,
        key: &key,
        auth_key: &auth_key,
        esn: false,
    };
    let packet = ipv4_udp(size);
    let plain_len = packet.len();

    let mut tx =
        EspTx::new(prov, &params, EspMode::Transport, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let cap = tx.max_protected_len(plain_len);
    // The packet behind the SA's headroom, as the channel builds it.
    let at = tx.headroom();
    let mut buf = vec![0u8; cap];
    buf[at..at + plain_len].copy_from_slice(&packet);
    let protected_len = tx
        .protect_in_place_at(&mut buf, at, plain_len, None)
        .map_err(|e| anyhow!("protect: {e}"))?;
    let mut protect_batch = |m: usize| {
        time_each(0..m, |_| {
            // protect parses the IPv4 header: put the plain one back (20 bytes, timed). The rest
            // is the previous packet's leftovers; the cost depends on the length only.
            buf[at..at + 20].copy_from_slice(&packet[..20]);
            tx.protect_in_place_at(black_box(&mut buf), at, plain_len, None)
                .map(drop)
                .map_err(|e| anyhow!("protect: {e}"))
        })
    };

    let mut vtx =
        EspTx::new(prov, &params, EspMode::Transport, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx = EspRx::new(prov, &params, REPLAY_WINDOW).map_err(|e| anyhow!("SA: {e}"))?;
    let (mut ring, ring_max) = ring_for(cap);
    let stride = ring.len() / ring_max;
    let mut lens = vec![0usize; ring_max];
    let mut verify_batch = |m: usize| -> Result<f64> {
        for (slot, len) in ring.chunks_exact_mut(stride).zip(lens.iter_mut()).take(m) {
            slot[at..at + plain_len].copy_from_slice(&packet);
            *len = vtx
                .protect_in_place_at(slot, at, plain_len, None)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let slots = ring.chunks_exact_mut(stride).zip(lens.iter()).take(m);
        time_each(slots, |(slot, &len)| {
            rx.verify_in_place(black_box(&mut slot[..len]))
                .map(|v| {
                    black_box(v);
                })
                .map_err(|e| anyhow!("verify dropped a packet: {e}"))
        })
    };
    protect_then_verify(
        prov,
        &mut protect_batch,
        &mut verify_batch,
        ring_max,
        t,
        extra,
        (plain_len, protected_len),
    )
}

/// SecOC protect (appending the authentication information to a `size`-byte Authentic I-PDU)
/// and verify, default lengths, Data ID 0x0123.
pub fn measure_secoc(
    prov: &CryptoProvider,
    alg: SecocAlg,
    size: usize,
    t: Timing,
    extra: Extra<'_>,
) -> Result<Measured> {
    let key = key_bytes(alg.key_len().unwrap_or(32), 0x55);
    let params = SecocParams::new(alg, &key, 0x0123);
    let plain_len = size;
    let mut tx = SecocTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let protected_len = tx.secured_len(plain_len);
    let mut buf = key_bytes(protected_len, 0x66);
    let mut protect_batch = |m: usize| {
        time_each(0..m, |_| {
            tx.protect_in_place(black_box(&mut buf), plain_len)
                .map(drop)
                .map_err(|e| anyhow!("protect: {e}"))
        })
    };

    let mut vtx = SecocTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx =
        SecocRx::new(prov, &params, SecocRxOptions::default()).map_err(|e| anyhow!("SA: {e}"))?;
    let (mut ring, ring_max) = ring_for(protected_len);
    let stride = ring.len() / ring_max;
    let pdu = key_bytes(plain_len, 0x77);
    let mut verify_batch = |m: usize| -> Result<f64> {
        for slot in ring.chunks_exact_mut(stride).take(m) {
            slot[..plain_len].copy_from_slice(&pdu);
            vtx.protect_in_place(slot, plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        time_each(ring.chunks_exact(stride).take(m), |slot| {
            rx.verify(black_box(&slot[..protected_len]))
                .map(|v| {
                    black_box(v);
                })
                .map_err(|e| anyhow!("verify dropped a PDU: {e}"))
        })
    };
    protect_then_verify(
        prov,
        &mut protect_batch,
        &mut verify_batch,
        ring_max,
        t,
        extra,
        (plain_len, protected_len),
    )
}

/// The batches of one bare AEAD call: seal in place on one buffer, open over a ring of sealed
/// buffers with increasing nonces (sealed untimed before each batch).
struct BareAead {
    seal: Box<Batch<'static>>,
    open: Box<Batch<'static>>,
    /// Ring slots: the largest open batch.
    open_max: usize,
}

impl BareAead {
    fn new(prov: &CryptoProvider, spec: BareSpec) -> Result<BareAead> {
        let BareSpec { alg, aad_len, len } = spec;
        let key: Arc<dyn AeadKey> = Arc::from(
            prov.keys
                .aead(alg, &key_bytes(alg.key_len(), 0x44))
                .map_err(|e| anyhow!("AEAD key: {e}"))?,
        );
        let aad = key_bytes(aad_len, 0x55);
        let nonce_of = |n: u64| {
            let mut nonce = [0u8; AEAD_NONCE_LEN];
            nonce[4..].copy_from_slice(&n.to_be_bytes());
            nonce
        };
        let (seal_key, seal_aad) = (Arc::clone(&key), aad.clone());
        let mut counter = 0u64;
        let mut buf: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let seal = move |m: usize| -> Result<f64> {
            let t0 = Instant::now();
            for _ in 0..m {
                counter += 1;
                let mut tag = [0u8; AEAD_TAG_LEN];
                seal_key
                    .seal_in_place(&nonce_of(counter), &seal_aad, black_box(&mut buf), &mut tag)
                    .map_err(|e| anyhow!("seal: {e}"))?;
                black_box(&tag);
            }
            let ns = t0.elapsed().as_nanos() as f64;
            black_box(&buf);
            Ok(ns)
        };

        let (mut ring, ring_max) = ring_for(len + AEAD_TAG_LEN);
        let stride = ring.len() / ring_max;
        let mut counter = 0u64;
        let open = move |m: usize| -> Result<f64> {
            let first = counter;
            for slot in ring.chunks_exact_mut(stride).take(m) {
                counter += 1;
                let (data, rest) = slot.split_at_mut(len);
                let tag: &mut [u8; AEAD_TAG_LEN] = (&mut rest[..AEAD_TAG_LEN])
                    .try_into()
                    .map_err(|_| anyhow!("tag slice"))?;
                key.seal_in_place(&nonce_of(counter), &aad, data, tag)
                    .map_err(|e| anyhow!("seal: {e}"))?;
            }
            let mut n = first;
            let t0 = Instant::now();
            for slot in ring.chunks_exact_mut(stride).take(m) {
                n += 1;
                let (data, rest) = slot.split_at_mut(len);
                let tag: &[u8; AEAD_TAG_LEN] = (&rest[..AEAD_TAG_LEN])
                    .try_into()
                    .map_err(|_| anyhow!("tag slice"))?;
                let r = key.open_in_place(&nonce_of(n), &aad, black_box(data), tag);
                if let Err(e) = r {
                    return Err(anyhow!("open failed: {e}"));
                }
            }
            Ok(t0.elapsed().as_nanos() as f64)
        };
        Ok(BareAead {
            seal: Box::new(seal),
            open: Box::new(open),
            open_max: ring_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ESP benchmark packet is a well-formed IPv4/UDP packet: RFC 791 header with a valid
    /// checksum (the one's complement sum over the header is 0xffff), RFC 768 lengths.
    #[test]
    fn esp_packet_is_ipv4_udp() {
        let p = ipv4_udp(100);
        assert_eq!(p.len(), 128);
        assert_eq!(p[0], 0x45);
        assert_eq!(u16::from_be_bytes([p[2], p[3]]), 128);
        assert_eq!(p[9], 17);
        assert_eq!(&p[12..20], &[192, 0, 2, 1, 192, 0, 2, 2]);
        let sum: u32 = p[..20]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        let folded = (sum & 0xffff) + (sum >> 16);
        assert_eq!(folded, 0xffff);
        assert_eq!(u16::from_be_bytes([p[20], p[21]]), 12345);
        assert_eq!(u16::from_be_bytes([p[22], p[23]]), 12346);
        assert_eq!(u16::from_be_bytes([p[24], p[25]]), 108);
    }

    #[test]
    fn ring_slots_are_cache_lines_within_the_cap() {
        let (ring, n) = ring_for(108);
        assert_eq!(ring.len() / n, 128);
        assert!(ring.len() <= RING_BYTES);
        // A unit larger than the cap still gets one slot.
        let (ring, n) = ring_for(RING_BYTES + 1);
        assert_eq!(n, 1);
        assert!(ring.len() > RING_BYTES);
    }

    /// The framed and the bare batches take turns, round after round, each with its own
    /// calibrated size: both are timed over the same stretches of the machine.
    #[test]
    fn rounds_take_turns() {
        use std::cell::RefCell;
        let log = RefCell::new(Vec::new());
        let mut a = |m: usize| -> Result<f64> {
            log.borrow_mut().push(('a', m));
            Ok(m as f64 * 10.0)
        };
        let mut b = |m: usize| -> Result<f64> {
            log.borrow_mut().push(('b', m));
            Ok(m as f64 * 40.0)
        };
        let t = Timing {
            batches: 3,
            batch_ns: 4000.0,
            frames: 0,
        };
        let out = timed_rounds(&mut [(&mut a, usize::MAX), (&mut b, 50)], t).unwrap();
        assert_eq!(out.len(), 2);
        // 4000 ns at 10 ns per frame: 400 frames; at 40 ns: 100, capped at 50.
        assert_eq!((out[0].1, out[1].1), (400, 50));
        assert_eq!((out[0].0.median, out[1].0.median), (10.0, 40.0));
        let timed: Vec<(char, usize)> = log.borrow().iter().rev().take(6).rev().copied().collect();
        assert_eq!(
            timed,
            [
                ('a', 400),
                ('b', 50),
                ('a', 400),
                ('b', 50),
                ('a', 400),
                ('b', 50)
            ]
        );
    }

    #[test]
    fn calibration_sizes_the_batch_to_the_target() {
        // A batch that "takes" 10 ns per frame: 1 ms needs 100 000 frames; max_m caps it.
        let mut batch = |m: usize| -> Result<f64> { Ok(m as f64 * 10.0) };
        assert_eq!(calibrate(&mut batch, 1e6, usize::MAX).unwrap(), 100_000);
        assert_eq!(calibrate(&mut batch, 1e6, 512).unwrap(), 512);
    }
}
