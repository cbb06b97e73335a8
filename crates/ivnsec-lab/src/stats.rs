//! Statistics of latency samples: descriptive summaries, the one-sample Wilcoxon signed-rank
//! bound of seed 000 §4.3, and a probabilistic worst-case execution time (pWCET) from a Gumbel
//! fit to block maxima.
//!
//! Quantiles are exact: samples are sorted and quantiles interpolated linearly between order
//! statistics (Hyndman–Fan type 7, the default of R and numpy). Distribution functions come from
//! `statrs`; the tests compare every result with scipy 1.17 on the same data.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// Descriptive statistics of one set of samples (same unit as the input).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub std: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
}

/// Quantile `q` (0..=1) of sorted, non-empty data: type 7 linear interpolation.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    debug_assert!(!sorted.is_empty());
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Sorts finite samples ascending; NaN and infinities are dropped.
fn sorted_finite(samples: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Summary of the finite samples, or `None` when there are none.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let s = sorted_finite(samples);
    let n = s.len();
    if n == 0 {
        return None;
    }
    let mean = s.iter().sum::<f64>() / n as f64;
    let var = if n > 1 {
        s.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    Some(Summary {
        count: n,
        mean,
        min: s[0],
        max: s[n - 1],
        std: var.sqrt(),
        median: quantile_sorted(&s, 0.5),
        p90: quantile_sorted(&s, 0.90),
        p99: quantile_sorted(&s, 0.99),
        p999: quantile_sorted(&s, 0.999),
        p9999: quantile_sorted(&s, 0.9999),
    })
}

/// Largest sample count for which the exact null distribution is used (as scipy's `auto`).
const WILCOXON_EXACT_MAX_N: usize = 50;

/// One-sided p-value of the one-sample Wilcoxon signed-rank test of H0 "median ≥ m" against
/// H1 "median < m". Zero differences are dropped (Wilcoxon's method); ties get average ranks.
/// Exact distribution for n ≤ 50 without ties, else the normal approximation with tie correction
/// and no continuity correction (scipy's `wilcoxon(x - m, alternative="less")` defaults).
/// Returns `None` when no non-zero difference remains.
pub fn wilcoxon_less_p(samples: &[f64], m: f64) -> Option<f64> {
    let mut d: Vec<f64> = samples
        .iter()
        .map(|x| x - m)
        .filter(|d| d.is_finite() && *d != 0.0)
        .collect();
    let n = d.len();
    if n == 0 {
        return None;
    }
    d.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    // Average ranks over runs of equal |d|; collect tie sizes.
    let mut r_plus = 0.0;
    let mut tie_term = 0.0;
    let mut ties = false;
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && d[j].abs() == d[i].abs() {
            j += 1;
        }
        let t = (j - i) as f64;
        let rank = (i + 1 + j) as f64 / 2.0;
        r_plus += d[i..j].iter().filter(|x| **x > 0.0).count() as f64 * rank;
        if j - i > 1 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j;
    }
    if n <= WILCOXON_EXACT_MAX_N && !ties {
        return Some(exact_signed_rank_cdf(n, r_plus.round() as usize));
    }
    let nf = n as f64;
    let mean = nf * (nf + 1.0) / 4.0;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if var <= 0.0 {
        return None;
    }
    let z = (r_plus - mean) / var.sqrt();
    let normal = Normal::standard();
    Some(normal.cdf(z))
}

/// P(W+ ≤ w) under H0 for n untied ranks: counts subsets of {1..n} by rank sum.
fn exact_signed_rank_cdf(n: usize, w: usize) -> f64 {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for s in (k..=max).rev() {
            counts[s] += counts[s - k];
        }
    }
    let total = 2f64.powi(n as i32);
    counts[..=w.min(max)].iter().sum::<f64>() / total
}

/// Seed 000 §4.3: the smallest median bound m for which H0 "median ≥ m" is rejected at
/// significance `alpha` (0.01 for 99 % confidence). Found by bisection between the smallest and
/// the largest sample; `None` when even m above every sample is not rejected (too few samples).
pub fn wilcoxon_median_bound(samples: &[f64], alpha: f64) -> Option<f64> {
    let s = sorted_finite(samples);
    let (&lo0, &hi0) = (s.first()?, s.last()?);
    let span = (hi0 - lo0).max(hi0.abs() * 1e-12).max(1e-12);
    let mut lo = lo0;
    let mut hi = hi0 + span;
    if wilcoxon_less_p(&s, hi)? >= alpha {
        return None;
    }
    // p(m) does not increase with m; keep p(hi) < alpha ≤ p(lo).
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi || hi - lo <= span * 1e-9 {
            break;
        }
        match wilcoxon_less_p(&s, mid) {
            Some(p) if p < alpha => hi = mid,
            _ => lo = mid,
        }
    }
    Some(hi)
}

/// A Gumbel (maximum) distribution fitted to block maxima.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GumbelFit {
    /// Location μ.
    pub mu: f64,
    /// Scale β.
    pub beta: f64,
    /// Number of block maxima the fit used.
    pub blocks: usize,
    /// Kolmogorov–Smirnov distance between the maxima and the fitted distribution.
    pub ks_d: f64,
    /// Asymptotic 5 % critical value of that distance, 1.358 / √blocks.
    pub ks_crit_5pct: f64,
}

impl GumbelFit {
    pub fn cdf(&self, x: f64) -> f64 {
        (-(-(x - self.mu) / self.beta).exp()).exp()
    }

    /// The value exceeded with probability `p` by one draw (one block maximum).
    pub fn quantile_exceed(&self, p: f64) -> f64 {
        // F(x) = 1 − p  ⇒  x = μ − β ln(−ln(1 − p)), with ln(1 − p) computed as ln_1p(−p).
        self.mu - self.beta * (-(-p).ln_1p()).ln()
    }

    /// Whether the KS distance is below the 5 % critical value.
    pub fn fit_ok(&self) -> bool {
        self.ks_d < self.ks_crit_5pct
    }
}

/// Maximum-likelihood Gumbel fit (the estimator of scipy's `gumbel_r.fit`): β solves
/// β = x̄ − Σ xᵢ e^(−xᵢ/β) / Σ e^(−xᵢ/β), then μ = −β ln(mean e^(−xᵢ/β)). `None` for fewer than
/// three finite values or no spread.
pub fn gumbel_fit(maxima: &[f64]) -> Option<GumbelFit> {
    let x = sorted_finite(maxima);
    let k = x.len();
    if k < 3 || x[k - 1] == x[0] {
        return None;
    }
    let kf = k as f64;
    let mean = x.iter().sum::<f64>() / kf;
    let xmin = x[0];
    // Shifting by the minimum keeps the exponentials in range.
    let weighted = |beta: f64| {
        let (mut s0, mut s1) = (0.0, 0.0);
        for &xi in &x {
            let w = (-(xi - xmin) / beta).exp();
            s0 += w;
            s1 += xi * w;
        }
        (s0, s1)
    };
    let g = |beta: f64| {
        let (s0, s1) = weighted(beta);
        mean - s1 / s0 - beta
    };
    // g > 0 as β → 0⁺ (weighted mean → min), g < 0 for large β: bisect.
    let spread = x[k - 1] - xmin;
    let (mut lo, mut hi) = (spread * 1e-9, spread * 10.0);
    if !(g(lo) > 0.0 && g(hi) < 0.0) {
        return None;
    }
    for _ in 0..300 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > 0.0 {
            lo = mid
        } else {
            hi = mid
        }
        if hi - lo <= hi * 1e-15 {
            break;
        }
    }
    let beta = 0.5 * (lo + hi);
    let (s0, _) = weighted(beta);
    let mu = xmin - beta * (s0 / kf).ln();
    let mut fit = GumbelFit {
        mu,
        beta,
        blocks: k,
        ks_d: 0.0,
        ks_crit_5pct: 1.358 / kf.sqrt(),
    };
    fit.ks_d = x
        .iter()
        .enumerate()
        .map(|(i, &xi)| {
            let f = fit.cdf(xi);
            ((i + 1) as f64 / kf - f).max(f - i as f64 / kf)
        })
        .fold(0.0, f64::max);
    Some(fit)
}

/// Probabilistic WCET: the latency exceeded with probability `p_per_message` per message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pwcet {
    pub value: f64,
    pub p_per_message: f64,
    pub block_size: usize,
    pub fit: GumbelFit,
}

/// Splits the samples (in measurement order) into blocks of `block_size`, fits a Gumbel to the
/// block maxima and returns the per-message exceedance quantile: a block maximum exceeds x with
/// probability 1 − (1 − p)^block_size. Needs at least 3 full blocks.
pub fn pwcet(samples_in_order: &[f64], block_size: usize, p_per_message: f64) -> Option<Pwcet> {
    if block_size == 0 || !(0.0..1.0).contains(&p_per_message) {
        return None;
    }
    let maxima: Vec<f64> = samples_in_order
        .chunks_exact(block_size)
        .map(|b| {
            b.iter()
                .copied()
                .filter(|x| x.is_finite())
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .filter(|m| m.is_finite())
        .collect();
    let fit = gumbel_fit(&maxima)?;
    // 1 − (1 − p)^B without cancellation.
    let p_block = -((block_size as f64) * (-p_per_message).ln_1p()).exp_m1();
    Some(Pwcet {
        value: fit.quantile_exceed(p_block),
        p_per_message,
        block_size,
        fit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// 40 latencies (µs) typed in once; every expected value below was computed from them by
    /// scipy 1.17.1 / numpy (see each test), an implementation independent of ours.
    const DATA: [f64; 40] = [
        312.4, 298.1, 305.7, 321.9, 299.5, 310.2, 1204.8, 301.3, 296.0, 308.8, 315.1, 303.6, 299.9,
        297.2, 330.4, 302.5, 306.1, 300.7, 311.8, 298.6, 304.4, 309.3, 297.9, 318.2, 301.0, 300.2,
        455.6, 305.0, 299.1, 303.3, 307.7, 296.6, 302.0, 314.5, 298.9, 300.8, 306.9, 312.0, 297.5,
        301.8,
    ];

    #[test]
    fn summary_matches_numpy() {
        // numpy: mean, min, max, std(ddof=1), percentile(q) with the default 'linear' method.
        let s = summarize(&DATA).unwrap();
        assert_eq!(s.count, 40);
        assert!(close(s.mean, 331.4325, 1e-12), "{}", s.mean);
        assert_eq!((s.min, s.max), (296.0, 1204.8));
        assert!(close(s.std, 143.80797629085737, 1e-12), "{}", s.std);
        assert!(close(s.median, 303.45, 1e-12), "{}", s.median);
        assert!(close(s.p90, 318.57, 1e-12), "{}", s.p90);
        assert!(close(s.p99, 912.612, 1e-12), "{}", s.p99);
        assert!(close(s.p999, 1175.5812, 1e-12), "{}", s.p999);
        assert!(close(s.p9999, 1201.87812, 1e-12), "{}", s.p9999);
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN]).is_none());
    }

    #[test]
    fn wilcoxon_exact_matches_scipy() {
        // scipy.stats.wilcoxon(np.array(DATA) - m, alternative="less").pvalue; n = 40, no ties
        // in |d| for these m, so scipy uses the exact distribution.
        let p = wilcoxon_less_p(&DATA, 310.0).unwrap();
        assert!(close(p, 0.0034486580644957996, 1e-9), "{p}");
        let p = wilcoxon_less_p(&DATA, 305.35).unwrap();
        assert!(close(p, 0.4080194908829071, 1e-9), "{p}");
    }

    #[test]
    fn wilcoxon_normal_approximation_matches_scipy() {
        // 60 values with ties → scipy's normal approximation with tie correction.
        let x: Vec<f64> = DATA.iter().chain(DATA[..20].iter()).copied().collect();
        let p = wilcoxon_less_p(&x, 310.0).unwrap();
        assert!(close(p, 0.0015216194308000346, 1e-9), "{p}");
    }

    #[test]
    fn median_bound_is_the_rejection_boundary() {
        let m = wilcoxon_median_bound(&DATA, 0.01).unwrap();
        assert!(wilcoxon_less_p(&DATA, m).unwrap() < 0.01);
        assert!(wilcoxon_less_p(&DATA, m - 0.01).unwrap() >= 0.01);
        // Bound above the sample median and below the heavy tail.
        assert!(m > 303.45 && m < 330.0, "{m}");
        assert!(wilcoxon_median_bound(&[1.0, 2.0], 0.01).is_none());
    }

    #[test]
    fn gumbel_mle_matches_scipy() {
        // scipy.stats.gumbel_r.fit(DATA) → (loc, scale); kstest(DATA, "gumbel_r", (loc, scale)).statistic
        let f = gumbel_fit(&DATA).unwrap();
        assert!(close(f.mu, 305.6986771958449, 1e-7), "mu {}", f.mu);
        assert!(close(f.beta, 27.961096616621266, 1e-6), "beta {}", f.beta);
        assert!(close(f.ks_d, 0.38554350601737525, 1e-6), "D {}", f.ks_d);
        assert!(!f.fit_ok(), "these data are far from Gumbel");
        // scipy.stats.gumbel_r.isf(1e-6, loc, scale)
        assert!(close(
            f.quantile_exceed(1e-6),
            f.mu + f.beta * 13.8155105,
            1e-6
        ));
        assert!(gumbel_fit(&[1.0, 1.0, 1.0]).is_none());
    }

    #[test]
    fn pwcet_uses_block_maxima() {
        let p = pwcet(&DATA, 4, 1e-9).unwrap();
        assert_eq!(p.fit.blocks, 10);
        // scipy.stats.gumbel_r.fit(np.array(DATA).reshape(10, 4).max(axis=1))
        assert!(close(p.fit.mu, 335.34318660628895, 1e-7), "{}", p.fit.mu);
        assert!(close(p.fit.beta, 99.0227444350625, 1e-6), "{}", p.fit.beta);
        // Exceeded with probability 1e-9 per message: far above every sample.
        assert!(p.value > 1204.8);
        assert!(pwcet(&DATA, 20, 1e-9).is_none(), "two blocks are too few");
        assert!(pwcet(&DATA, 0, 1e-9).is_none());
    }
}
