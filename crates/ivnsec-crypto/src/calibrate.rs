//! `ivnsec suites --calibrate`: the providers measured on this machine, and `auto`'s picks
//! derived from the figures with the rule of the built-in table.
//!
//! What is timed: for each primitive of the built-in table ([`crate::table::MEASURED`]:
//! AES-128/256-GCM, AES-128/256-CCM, ChaCha20-Poly1305, HMAC-SHA-1/224/256) and each provider
//! that has it, at each size of [`SIZES`]: an AEAD seal in place (12 bytes of AAD, as an IVN-AE
//! frame at the conf level) followed by the open of what it sealed, or a MAC computed twice (the
//! protect and the verify of a frame; 64-byte key) and compared. Each figure is ns per pair,
//! the fastest of the batches (other processes on a shared machine only add time). The batches
//! are taken in passes over every primitive, size and provider, so that each point's batches are
//! spread over the whole run and the providers of one point run back to back. Batches are at
//! most [`BATCH_NS`] long (rarely interrupted); the seconds asked for buy more of them (at least
//! [`MIN_BATCHES`]). The batch length is sized per provider and size first (that run is also the
//! warm-up) so that the whole measurement takes about the seconds asked for.
//!
//! The picks follow from the figures by [`derive_picks`].

use std::hint::black_box;
use std::time::Instant;

use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadKey, CryptoError, MAX_MAC_LEN, MacKey, Primitive,
};

use crate::providers::PROVIDERS;
use crate::table::{BreakEven, Pick, break_even, only, tabled_primitives};

/// The payload sizes measured (bytes): small control frames, a CAN-FD-over-Ethernet-sized
/// frame, full Ethernet frames, and the chunks of larger messages.
pub const SIZES: [usize; 8] = [16, 64, 256, 736, 1440, 2048, 4096, 8192];

/// The longest a timed batch is made (ns): short batches are rarely interrupted by other work
/// on a shared machine, so a longer run takes more batches rather than longer ones.
pub const BATCH_NS: f64 = 500_000.0;

/// The fewest timed batches per provider, size and primitive (one in each pass over all of
/// them); a longer run takes more, each at most [`BATCH_NS`]. The fastest counts.
pub const MIN_BATCHES: usize = 5;

/// The most timed batches per provider, size and primitive.
pub const MAX_BATCHES: usize = 10_000;

/// How much faster (as a fraction) another provider must be than the one that wins at the
/// smallest size to take a range from it: differences below this are noise of a shared
/// machine, and a key is not split for them.
pub const NOISE: f64 = 0.03;

/// Bytes of AAD of each AEAD call (an IVN-AE header at the conf level).
const AAD_LEN: usize = 12;
/// HMAC key length (the experiments of seeds 000/001 use 64 bytes).
const MAC_KEY_LEN: usize = 64;
/// The most pairs one batch runs.
const MAX_BATCH: usize = 1 << 22;

/// One provider's cost at each measured size: ns per seal + open (AEAD) or per two MACs and a
/// compare (MAC).
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    pub provider: &'static str,
    pub ns: Vec<f64>,
}

/// The figures of one primitive and the picks derived from them.
#[derive(Clone, Debug)]
pub struct Figures {
    pub primitive: Primitive,
    pub curves: Vec<Curve>,
    /// Providers that failed (a key not made, a call that returned an error), with why; they
    /// have no curve and are not picked.
    pub failed: Failed,
    /// `None` when no provider could be measured.
    pub picks: Option<Vec<Pick>>,
}

/// A whole calibration: the sizes, each primitive's figures, how many batches each figure is
/// the fastest of, and how long it took.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub sizes: Vec<usize>,
    pub figures: Vec<Figures>,
    pub batches: usize,
    pub seconds: f64,
}

/// The picks of one primitive from its providers' costs at `sizes` (ascending), with the rule of
/// the built-in table (docs/benchmarks.md, "`--provider auto`"):
///
/// 1. The provider that wins at the smallest size (the cheapest there; among providers within
///    [`NOISE`] of the cheapest, the one with the least cost over all sizes, each relative to
///    the cheapest at that size) takes every size...
/// 2. ...except where the provider that wins at the largest size is cheaper than it by more
///    than [`NOISE`]: [`break_even`] of the two, the first one's costs taken [`NOISE`] lower, gives
///    the split, the last crossing, above which that provider wins at every measured size.
///    Where the two are within the noise the smaller-size winner keeps the range.
///
/// So there is at most one split (two picks), at a measured size: the first provider up to
/// the last size it keeps, the other above. A provider that wins only between the smallest and
/// the largest size is not picked. Curves of the wrong length or with a cost that is not a
/// positive finite number are left out; `None` when none is left.
pub fn derive_picks(sizes: &[usize], curves: &[Curve]) -> Option<Vec<Pick>> {
    let curves: Vec<&Curve> = curves
        .iter()
        .filter(|c| c.ns.len() == sizes.len() && c.ns.iter().all(|x| x.is_finite() && *x > 0.0))
        .collect();
    let n = sizes.len();
    if n == 0 || curves.is_empty() {
        return None;
    }
    let best: Vec<f64> = (0..n)
        .map(|i| curves.iter().map(|c| c.ns[i]).fold(f64::INFINITY, f64::min))
        .collect();
    let score = |c: &Curve| -> f64 { c.ns.iter().zip(&best).map(|(x, b)| x / b).sum() };
    let cheaper = |a: f64, b: f64| a.total_cmp(&b);
    let lo = curves
        .iter()
        .copied()
        .filter(|c| c.ns[0] <= best[0] * (1.0 + NOISE))
        .min_by(|a, b| cheaper(score(a), score(b)))?;
    let hi = curves
        .iter()
        .copied()
        .min_by(|a, b| cheaper(a.ns[n - 1], b.ns[n - 1]))?;
    if hi.provider == lo.provider {
        return Some(vec![only(lo.provider)]);
    }
    let lo_less_noise: Vec<f64> = lo.ns.iter().map(|x| x * (1.0 - NOISE)).collect();
    Some(
        match break_even(sizes, &lo_less_noise, &hi.ns)? {
            BreakEven::FirstEverywhere => [Some(only(lo.provider)), None],
            // The first provider is within the noise of the cheapest at the smallest size, so
            // this does not happen; kept total.
            BreakEven::SecondEverywhere => [Some(only(hi.provider)), None],
            at @ BreakEven::At { .. } => at.picks(lo.provider, hi.provider),
        }
        .into_iter()
        .flatten()
        .collect(),
    )
}

/// What one provider runs for one primitive.
enum Op {
    Aead(Box<dyn AeadKey>),
    Mac(Box<dyn MacKey>),
}

/// Providers that could not be measured, with why.
pub type Failed = Vec<(&'static str, String)>;

/// One provider's key for the primitive, a buffer of each size, and what was measured so far.
struct Runner {
    provider: &'static str,
    op: Op,
    /// One buffer per measured size.
    bufs: Vec<Vec<u8>>,
    counter: u64,
    /// Pairs per batch, per size.
    batch: Vec<usize>,
    /// The fastest batch so far, ns per pair, per size.
    best: Vec<f64>,
    error: Option<String>,
}

impl Runner {
    fn new(
        provider: &'static ivnsec_core::crypto::CryptoProvider,
        p: Primitive,
        sizes: &[usize],
    ) -> Result<Runner, String> {
        let op = match p {
            Primitive::Aead(alg) => {
                let key: Vec<u8> = (0..alg.key_len()).map(|i| i as u8).collect();
                Op::Aead(
                    provider
                        .keys
                        .aead(alg, &key)
                        .map_err(|e| format!("{e:?}"))?,
                )
            }
            Primitive::Mac(alg) => {
                let key: Vec<u8> = (0..MAC_KEY_LEN).map(|i| 0x80 ^ i as u8).collect();
                Op::Mac(provider.keys.mac(alg, &key).map_err(|e| format!("{e:?}"))?)
            }
            other => return Err(format!("{other:?} is not calibrated")),
        };
        Ok(Runner {
            provider: provider.name,
            op,
            bufs: sizes
                .iter()
                .map(|&n| (0..n).map(|i| i as u8).collect())
                .collect(),
            counter: 0,
            batch: vec![1; sizes.len()],
            best: vec![f64::INFINITY; sizes.len()],
            error: None,
        })
    }

    /// One pair on the buffer of size number `at`: seal and open, or two MACs compared.
    fn once(&mut self, at: usize) -> Result<(), CryptoError> {
        self.counter = self.counter.wrapping_add(1);
        let buf: &mut [u8] = &mut self.bufs[at];
        match &self.op {
            Op::Aead(k) => {
                let mut nonce = [0u8; AEAD_NONCE_LEN];
                nonce[..8].copy_from_slice(&self.counter.to_le_bytes());
                let aad = [0x5au8; AAD_LEN];
                let mut tag = [0u8; AEAD_TAG_LEN];
                k.seal_in_place(&nonce, &aad, buf, &mut tag)?;
                k.open_in_place(&nonce, &aad, black_box(&mut *buf), &tag)?;
            }
            Op::Mac(k) => {
                let (mut a, mut b) = ([0u8; MAX_MAC_LEN], [0u8; MAX_MAC_LEN]);
                let n = k.compute(&[&*buf], &mut a);
                let m = k.compute(&[black_box(&*buf)], &mut b);
                if n != m || a != b {
                    return Err(CryptoError::AuthFailed);
                }
            }
        }
        black_box(&self.bufs[at]);
        Ok(())
    }

    /// `m` pairs at size number `at`; ns per pair.
    fn run(&mut self, at: usize, m: usize) -> Result<f64, CryptoError> {
        let t0 = Instant::now();
        for _ in 0..m {
            self.once(at)?;
        }
        Ok(t0.elapsed().as_nanos() as f64 / m.max(1) as f64)
    }

    /// Sets the batch length at size number `at` so that one batch takes about `target_ns`
    /// (the runs that find it are the warm-up).
    fn calibrate(&mut self, at: usize, target_ns: f64) -> Result<(), CryptoError> {
        let mut m = 1usize;
        loop {
            let per = self.run(at, m)?.max(0.5);
            if per * m as f64 >= target_ns / 4.0 || m >= MAX_BATCH {
                self.batch[at] = ((target_ns / per).ceil() as usize).clamp(1, MAX_BATCH);
                return Ok(());
            }
            m = m.saturating_mul(4).min(MAX_BATCH);
        }
    }

    /// One timed batch at size number `at`, kept if it is the fastest so far. The batch grows to
    /// `target_ns` at the fastest cost seen: a sizing run that was interrupted made it too short
    /// (a batch of a few pairs measures their cold start, not their cost).
    fn sample(&mut self, at: usize, target_ns: f64) {
        if self.error.is_some() {
            return;
        }
        match self.run(at, self.batch[at]) {
            Ok(ns) => {
                self.best[at] = self.best[at].min(ns);
                let want = (target_ns / self.best[at].max(0.5)).ceil() as usize;
                self.batch[at] = self.batch[at].max(want.clamp(1, MAX_BATCH));
            }
            Err(e) => self.fail(e),
        }
    }

    fn fail(&mut self, e: CryptoError) {
        if self.error.is_none() {
            self.error = Some(format!("{e:?}"));
        }
    }
}

/// Measures every primitive of the built-in table on every provider that has it, for about
/// `seconds` in all, at `sizes` (ascending); `progress` is told each primitive as its batches
/// are sized (the first of the passes over all of them).
///
/// The batches of one (primitive, size, provider) are spread over the whole run: each pass
/// times one batch of every provider at every size of every primitive, so that a burst of
/// other work on a shared machine spoils one batch of many points rather than every batch of
/// a few; the providers of one point run one after the other, under the same conditions.
pub fn measure(seconds: f64, sizes: &[usize], progress: &mut dyn FnMut(Primitive)) -> Calibration {
    let started = Instant::now();
    let mut all: Vec<(Primitive, Vec<Runner>, Failed)> = tabled_primitives()
        .map(|p| {
            let mut runners = Vec::new();
            let mut failed = Vec::new();
            for prov in PROVIDERS.iter().filter(|x| x.supports(p)) {
                match Runner::new(prov, p, sizes) {
                    Ok(r) => runners.push(r),
                    Err(e) => failed.push((prov.name, e)),
                }
            }
            (p, runners, failed)
        })
        .collect();
    let points: usize = all.iter().map(|(_, r, _)| r.len()).sum::<usize>() * sizes.len();
    let per_point = seconds.max(0.0) * 1e9 / points.max(1) as f64;
    // Sizing the batches costs about two batches.
    let batches = ((per_point / BATCH_NS) as usize)
        .saturating_sub(2)
        .clamp(MIN_BATCHES, MAX_BATCHES);
    let target = per_point / (batches + 2) as f64;
    for (p, runners, _) in all.iter_mut() {
        progress(*p);
        for r in runners.iter_mut() {
            for at in 0..sizes.len() {
                if r.error.is_none()
                    && let Err(e) = r.calibrate(at, target)
                {
                    r.fail(e);
                }
            }
        }
    }
    for pass in 0..batches {
        for (_, runners, _) in all.iter_mut() {
            let n = runners.len();
            for at in 0..sizes.len() {
                // Each pass starts with another provider, so that none always runs right after
                // the same other one (on some CPUs wide vector code lowers the clock for a
                // while after it ran).
                for j in 0..n {
                    runners[(pass + j) % n].sample(at, target);
                }
            }
        }
    }
    let figures = all
        .into_iter()
        .map(|(primitive, runners, mut failed)| {
            let mut curves = Vec::new();
            for r in runners {
                match r.error {
                    Some(e) => failed.push((r.provider, e)),
                    None => curves.push(Curve {
                        provider: r.provider,
                        ns: r.best,
                    }),
                }
            }
            let picks = derive_picks(sizes, &curves);
            Figures {
                primitive,
                curves,
                failed,
                picks,
            }
        })
        .collect();
    Calibration {
        sizes: sizes.to_vec(),
        figures,
        batches,
        seconds: started.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_core::crypto::{AeadAlg, MacAlg};

    fn curve(provider: &'static str, ns: &[f64]) -> Curve {
        Curve {
            provider,
            ns: ns.to_vec(),
        }
    }

    fn pick(up_to: usize, provider: &'static str) -> Pick {
        Pick { up_to, provider }
    }

    /// The built-in table's splits follow from its figures (docs/benchmarks.md, bare seal +
    /// open, ns, the lower of the runs) by this rule too: ChaCha20-Poly1305 aws-lc-rs up to
    /// 2048 B, OpenSSL above (OpenSSL 4 % faster at 3072 B, more than the noise); AES-128-CCM
    /// portable up to 256 B, OpenSSL above; AES-GCM aws-lc-rs at every size.
    #[test]
    fn the_builtin_splits_follow_from_their_figures() {
        let chacha = derive_picks(
            &[64, 2048, 3072, 8192],
            &[
                curve("fast", &[316.0, 1800.0, 2561.0, 6396.0]),
                curve("openssl", &[1171.0, 2015.0, 2458.0, 4674.0]),
            ],
        );
        assert_eq!(chacha, Some(vec![pick(2048, "fast"), only("openssl")]));
        let ccm = derive_picks(
            &[256, 512, 8192],
            &[
                curve("portable", &[496.0, 875.0, 12175.0]),
                curve("openssl", &[594.0, 848.0, 8431.0]),
            ],
        );
        assert_eq!(ccm, Some(vec![pick(256, "portable"), only("openssl")]));
        let gcm = derive_picks(
            &[64, 16384],
            &[
                curve("openssl", &[397.0, 4474.0]),
                curve("fast", &[151.0, 1747.0]),
                curve("portable", &[212.0, 3000.0]),
            ],
        );
        assert_eq!(gcm, Some(vec![only("fast")]));
    }

    /// Within the noise the smaller-size winner keeps the range: HMAC with aws-lc-rs 2 %
    /// faster from 4 KiB stays on RustCrypto; 5 % faster splits it.
    #[test]
    fn the_smaller_size_winner_keeps_ranges_within_the_noise() {
        let sizes = [64, 1440, 4096, 8192];
        let portable = curve("portable", &[346.0, 1738.0, 4700.0, 9200.0]);
        let close = curve("fast", &[456.0, 1869.0, 4606.0, 9016.0]);
        assert_eq!(
            derive_picks(&sizes, &[close, portable.clone()]),
            Some(vec![only("portable")])
        );
        let faster = curve("fast", &[456.0, 1869.0, 4465.0, 8740.0]);
        assert_eq!(
            derive_picks(&sizes, &[portable, faster]),
            Some(vec![pick(1440, "portable"), only("fast")])
        );
    }

    /// A tie at the smallest size goes to the provider that is cheaper over all sizes; a
    /// provider that wins only in the middle is not picked; noise crossing back and forth takes
    /// the last crossing.
    #[test]
    fn ties_middles_and_noise() {
        let sizes = [16, 256, 4096];
        let a = curve("portable", &[100.0, 400.0, 8000.0]);
        let b = curve("fast", &[101.0, 300.0, 4000.0]);
        assert_eq!(derive_picks(&sizes, &[a, b]), Some(vec![only("fast")]));
        let mid = curve("openssl", &[500.0, 100.0, 9000.0]);
        let lo = curve("portable", &[100.0, 400.0, 3000.0]);
        assert_eq!(
            derive_picks(&sizes, &[mid, lo]),
            Some(vec![only("portable")])
        );
        let zig = curve("fast", &[200.0, 100.0, 200.0, 100.0]);
        let flat = curve("portable", &[150.0, 150.0, 150.0, 150.0]);
        assert_eq!(
            derive_picks(&[1, 2, 3, 4], &[flat, zig]),
            Some(vec![pick(3, "portable"), only("fast")])
        );
    }

    /// Bad curves are left out; nothing left: `None`.
    #[test]
    fn bad_curves_are_left_out() {
        let sizes = [16, 64];
        assert_eq!(derive_picks(&sizes, &[]), None);
        assert_eq!(derive_picks(&[], &[curve("fast", &[])]), None);
        assert_eq!(
            derive_picks(
                &sizes,
                &[
                    curve("fast", &[1.0]),
                    curve("openssl", &[f64::NAN, 1.0]),
                    curve("portable", &[0.0, 1.0])
                ]
            ),
            None
        );
        assert_eq!(
            derive_picks(
                &sizes,
                &[
                    curve("fast", &[1.0, f64::INFINITY]),
                    curve("portable", &[5.0, 5.0])
                ]
            ),
            Some(vec![only("portable")])
        );
    }

    /// A short real measurement: every primitive of the table, every provider that has it, a
    /// positive figure at every size, picks that make a valid table.
    #[test]
    fn a_short_measurement_gives_a_valid_table() {
        let mut seen = Vec::new();
        let c = measure(0.2, &[16, 1024], &mut |p| seen.push(p));
        assert_eq!(seen.len(), c.figures.len());
        assert!(seen.contains(&Primitive::Aead(AeadAlg::ChaCha20Poly1305)));
        assert!(seen.contains(&Primitive::Mac(MacAlg::HmacSha256)));
        let mut entries = Vec::new();
        for f in &c.figures {
            assert!(f.failed.is_empty(), "{:?}", f.failed);
            let want = PROVIDERS.iter().filter(|p| p.supports(f.primitive)).count();
            assert_eq!(f.curves.len(), want, "{:?}", f.primitive);
            for cv in &f.curves {
                assert!(cv.ns.iter().all(|x| *x > 0.0 && x.is_finite()), "{cv:?}");
            }
            entries.push(crate::table::Entry {
                primitive: f.primitive,
                picks: f.picks.clone().unwrap(),
            });
        }
        crate::table::check_table(&entries).unwrap();
        assert!(c.seconds < 30.0, "{}", c.seconds);
    }
}
