//! Encryption by chunk size (`ivnsec crypto-bench --chunk-sizes …`; seed 003 Fig. 8: AES-128-CBC
//! in software and on a hardware engine, chunks of 64 B to 64 KiB, "within (i) the same and
//! (ii) different cryptographic contexts"). Each provider stands for one side: `portable`
//! (RustCrypto) for software, `fast` (aws-lc-rs, AES-NI/VAES) for the engine; `openssl` where
//! it has the suite.
//!
//! Per suite, provider, context mode and chunk size, the time to encrypt one chunk:
//! - `reuse`: one context (key schedule made once), every chunk encrypted with it;
//! - `fresh`: a new context per chunk: the key schedule is made (and dropped) for every chunk,
//!   inside the timing, as an engine that is set up per request.
//!
//! CBC chunks are encrypted in place with a fresh IV per chunk (a counter: no IV repeats under
//! the key), AEAD chunks sealed with a counter nonce that never repeats under the key across
//! both modes. Timing as the rest of the benchmark ([`super::measure`]): calibrated batches,
//! every series of one chunk size timed in the same rounds, median ns per chunk.
//!
//! From the medians, the break-even chunk sizes ([`ivnsec_crypto::table::break_even`], the rule
//! `auto`'s size splits are read with): between each two providers in each context mode, and
//! per provider between the modes, where the per-chunk context setup (fresh − reuse) costs as
//! much as encrypting the chunk (reuse): below that size setting up the context costs more
//! than the data.

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, anyhow};
use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadOp, BLOCK_LEN, CipherAlg, CryptoProvider, Primitive,
};
use ivnsec_crypto::PROVIDERS;
use ivnsec_crypto::table::{BreakEven, break_even};
use serde::Serialize;

use super::measure::{Batch, timed_rounds};
use super::{Providers, Timing};
use ivnsec_node::error::usage;

/// What one plan `[[chunk_bench]]` table measured (the `chunks` and `break_even` objects of
/// `crypto-bench --chunk-sizes --json`), as the report holds it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ChunkBenchReport {
    pub chunks: serde_json::Value,
    pub break_even: serde_json::Value,
}

/// The chunk sizes of seed 003 Fig. 8.
pub const SEED003_CHUNKS: [usize; 6] = [64, 256, 1024, 4096, 16384, 65536];
/// Largest chunk.
pub const MAX_CHUNK: usize = 1 << 20;
/// The suite of seed 003 Fig. 8.
pub const DEFAULT_SUITE: &str = "aes128-cbc";

/// What one chunk is encrypted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkSuite {
    /// AES-CBC without padding (chunks are whole blocks).
    Cbc(CipherAlg),
    /// An AEAD, sealed in place (no AAD).
    Aead(AeadAlg),
}

impl ChunkSuite {
    /// `aes128-cbc`, `aes192-cbc`, `aes256-cbc`, or an AEAD name (`aes128-gcm`, …).
    pub fn parse(s: &str) -> Option<ChunkSuite> {
        if let Some(c) = CipherAlg::ALL
            .into_iter()
            .find(|c| format!("{}-cbc", c.name()) == s)
        {
            return Some(ChunkSuite::Cbc(c));
        }
        AeadAlg::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .map(ChunkSuite::Aead)
    }

    pub fn name(self) -> String {
        match self {
            ChunkSuite::Cbc(c) => format!("{}-cbc", c.name()),
            ChunkSuite::Aead(a) => a.name().to_string(),
        }
    }

    pub fn primitive(self) -> Primitive {
        match self {
            ChunkSuite::Cbc(c) => Primitive::Cipher(c),
            ChunkSuite::Aead(a) => Primitive::Aead(a),
        }
    }

    fn key_len(self) -> usize {
        match self {
            ChunkSuite::Cbc(c) => c.key_len(),
            ChunkSuite::Aead(a) => a.key_len(),
        }
    }
}

/// One context for every chunk, a new one per chunk, or one context sealing chunks in batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextMode {
    Reuse,
    Fresh,
    /// AEADs only: one context, chunks sealed [`BATCH_CHUNKS`] at a time
    /// (`AeadKey::seal_batch`: the multi-buffer lanes where the provider has them, as the
    /// portable provider's and `auto`'s AES-CCM; one by one otherwise).
    Batch,
}

/// Chunks per `seal_batch` call in the `batch` mode: one group of the AES-CCM lanes.
pub const BATCH_CHUNKS: usize = 8;

impl ContextMode {
    pub fn name(self) -> &'static str {
        match self {
            ContextMode::Reuse => "reuse",
            ContextMode::Fresh => "fresh",
            ContextMode::Batch => "batch",
        }
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct ChunkSettings {
    pub suites: Vec<ChunkSuite>,
    pub sizes: Vec<usize>,
    pub contexts: Vec<ContextMode>,
    pub providers: Providers,
    pub timing: Timing,
}

/// Checks the command line's values: suite names (default [`DEFAULT_SUITE`]), sizes (1 to
/// [`MAX_CHUNK`]; CBC needs whole 16-byte blocks), context modes (`reuse`, `fresh`, `both`;
/// default both). Errors are usage errors naming the option.
pub fn settings(
    suites: &[String],
    sizes: &[usize],
    context: Option<&str>,
    providers: Providers,
    timing: Timing,
) -> Result<ChunkSettings> {
    let names: Vec<&str> = if suites.is_empty() {
        vec![DEFAULT_SUITE]
    } else {
        suites.iter().map(String::as_str).collect()
    };
    let suites = names
        .iter()
        .map(|n| {
            ChunkSuite::parse(n).ok_or_else(|| {
                usage(format!(
                    "--suite {n}: with --chunk-sizes a suite is aes128-cbc, aes192-cbc, \
                     aes256-cbc or an AEAD (aes128-gcm, aes256-gcm, aes128-ccm, aes256-ccm, \
                     chacha20-poly1305)"
                ))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if sizes.is_empty() {
        return Err(usage("--chunk-sizes needs at least one size"));
    }
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    for &s in &sorted {
        if s == 0 || s > MAX_CHUNK {
            return Err(usage(format!(
                "--chunk-sizes: {s} is out of range (chunks are 1-{MAX_CHUNK} bytes)"
            )));
        }
        if suites.iter().any(|x| matches!(x, ChunkSuite::Cbc(_))) && s % BLOCK_LEN != 0 {
            return Err(usage(format!(
                "--chunk-sizes: {s} is not a whole number of 16-byte AES blocks, which CBC \
                 without padding needs; use e.g. {}",
                s.next_multiple_of(BLOCK_LEN)
            )));
        }
    }
    let contexts = match context.unwrap_or("both") {
        "reuse" => vec![ContextMode::Reuse],
        "fresh" => vec![ContextMode::Fresh],
        "both" => vec![ContextMode::Reuse, ContextMode::Fresh],
        "batch" => vec![ContextMode::Batch],
        "all" => vec![ContextMode::Reuse, ContextMode::Fresh, ContextMode::Batch],
        other => {
            return Err(usage(format!(
                "--context {other}: takes reuse, fresh, both, batch or all"
            )));
        }
    };
    if contexts.contains(&ContextMode::Batch)
        && let Some(cbc) = suites.iter().find(|x| matches!(x, ChunkSuite::Cbc(_)))
    {
        return Err(usage(format!(
            "--context batch seals AEAD chunks in batches; {} is not an AEAD (use e.g. \
             --suite aes128-ccm)",
            cbc.name()
        )));
    }
    Ok(ChunkSettings {
        suites,
        sizes: sorted,
        contexts,
        providers,
        timing,
    })
}

/// One measured series point: the `chunks` objects of `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct ChunkRow {
    pub suite: String,
    pub provider: &'static str,
    pub context: ContextMode,
    pub size: usize,
    /// ns per chunk over the timed batches: median (the figure compared), min, mean, max.
    pub ns_median: f64,
    pub ns_min: f64,
    pub ns_mean: f64,
    pub ns_max: f64,
    /// Chunk bytes per second at the median, 10⁶ bytes per MB (seed 003's "Thr MB/s").
    pub mbps: f64,
    pub chunks_per_batch: usize,
}

/// One break-even: the `break_even` objects of `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct BreakEvenRow {
    pub suite: String,
    /// `providers` (between `first` and `second` in `context`) or `contexts` (one provider:
    /// the context setup, fresh − reuse, against the chunk's own cost, reuse).
    pub kind: &'static str,
    pub first: String,
    pub second: String,
    /// The context mode of a `providers` break-even; null for `contexts`.
    pub context: Option<ContextMode>,
    /// What wins below the break-even and from it on (names as in `first`/`second`).
    pub below: String,
    pub above: String,
    /// Interpolated break-even size in bytes; null when one side wins at every size.
    pub size: Option<f64>,
    /// The measured sizes around it: the last where `below` wins, the first where `above` does.
    pub last_below: Option<usize>,
    pub first_above: Option<usize>,
    /// The sentence the table prints.
    pub text: String,
}

/// The providers measuring `suite`.
fn providers_for(suite: ChunkSuite, p: Providers) -> Result<Vec<&'static CryptoProvider>> {
    let prim = suite.primitive();
    match p {
        Providers::All => Ok(PROVIDERS
            .iter()
            .copied()
            .filter(|pr| pr.supports(prim))
            .collect()),
        Providers::One(choice) => {
            let what = suite.name();
            ivnsec_crypto::select_primitives(choice, &[prim], &what)
                .map(|p| vec![p])
                .map_err(|e| usage(e.to_string()))
        }
    }
}

/// A batch encrypting `m` chunks of `size` bytes of `suite` with `prov`.
fn chunk_batch<'a>(
    prov: &'static CryptoProvider,
    suite: ChunkSuite,
    size: usize,
    mode: ContextMode,
    counter: &'a mut u64,
) -> Result<Box<Batch<'a>>> {
    let key: Vec<u8> = (0..suite.key_len()).map(|i| 0x5a ^ i as u8).collect();
    let mut buf: Vec<u8> = (0..size).map(|i| i as u8).collect();
    Ok(match suite {
        ChunkSuite::Cbc(alg) => {
            let mut reused = match mode {
                ContextMode::Reuse => Some(
                    prov.keys
                        .cipher(alg, &key)
                        .map_err(|e| anyhow!("{} key: {e}", prov.name))?,
                ),
                ContextMode::Fresh | ContextMode::Batch => None,
            };
            Box::new(move |m: usize| -> Result<f64> {
                let t0 = Instant::now();
                for _ in 0..m {
                    *counter += 1;
                    let mut iv = [0u8; BLOCK_LEN];
                    iv[8..].copy_from_slice(&counter.to_be_bytes());
                    let fresh;
                    let k = match reused.as_mut() {
                        Some(k) => &**k,
                        None => {
                            fresh = prov
                                .keys
                                .cipher(alg, black_box(&key))
                                .map_err(|e| anyhow!("key: {e}"))?;
                            &*fresh
                        }
                    };
                    k.cbc_encrypt(&iv, black_box(&mut buf))
                        .map_err(|e| anyhow!("cbc: {e}"))?;
                }
                Ok(t0.elapsed().as_nanos() as f64)
            })
        }
        ChunkSuite::Aead(alg) if mode == ContextMode::Batch => {
            let k = prov
                .keys
                .aead(alg, &key)
                .map_err(|e| anyhow!("{} key: {e}", prov.name))?;
            let mut bufs: Vec<Vec<u8>> = (0..BATCH_CHUNKS).map(|_| buf.clone()).collect();
            Box::new(move |m: usize| -> Result<f64> {
                let t0 = Instant::now();
                let mut left = m;
                while left > 0 {
                    let n = left.min(BATCH_CHUNKS);
                    let mut ops: Vec<AeadOp<'_>> = bufs[..n]
                        .iter_mut()
                        .map(|b| {
                            *counter += 1;
                            let mut nonce = [0u8; AEAD_NONCE_LEN];
                            nonce[4..].copy_from_slice(&counter.to_be_bytes());
                            AeadOp::new(nonce, &[], black_box(b), [0; AEAD_TAG_LEN])
                        })
                        .collect();
                    k.seal_batch(&mut ops);
                    for op in &ops {
                        op.result.map_err(|e| anyhow!("seal: {e}"))?;
                        black_box(&op.tag);
                    }
                    left -= n;
                }
                Ok(t0.elapsed().as_nanos() as f64)
            })
        }
        ChunkSuite::Aead(alg) => {
            let reused = match mode {
                ContextMode::Reuse => Some(
                    prov.keys
                        .aead(alg, &key)
                        .map_err(|e| anyhow!("{} key: {e}", prov.name))?,
                ),
                ContextMode::Fresh | ContextMode::Batch => None,
            };
            Box::new(move |m: usize| -> Result<f64> {
                let t0 = Instant::now();
                for _ in 0..m {
                    *counter += 1;
                    let mut nonce = [0u8; AEAD_NONCE_LEN];
                    nonce[4..].copy_from_slice(&counter.to_be_bytes());
                    let mut tag = [0u8; AEAD_TAG_LEN];
                    let fresh;
                    let k = match reused.as_ref() {
                        Some(k) => &**k,
                        None => {
                            fresh = prov
                                .keys
                                .aead(alg, black_box(&key))
                                .map_err(|e| anyhow!("key: {e}"))?;
                            &*fresh
                        }
                    };
                    k.seal_in_place(&nonce, &[], black_box(&mut buf), &mut tag)
                        .map_err(|e| anyhow!("seal: {e}"))?;
                    black_box(&tag);
                }
                Ok(t0.elapsed().as_nanos() as f64)
            })
        }
    })
}

/// Measures every suite × provider × context × size; `on_row` sees each row as it is measured.
/// Returns the rows and the break-evens.
pub fn run(
    s: &ChunkSettings,
    on_row: &mut dyn FnMut(&ChunkRow) -> Result<()>,
) -> Result<(Vec<ChunkRow>, Vec<BreakEvenRow>)> {
    let mut rows = Vec::new();
    for &suite in &s.suites {
        let provs = providers_for(suite, s.providers)?;
        if provs.is_empty() {
            return Err(usage(format!("no provider has {}", suite.name())));
        }
        // One key per suite and provider, three counters: `reuse` counts from 0, `batch` from
        // 2^62, `fresh` from 2^63, kept across sizes, so no IV or nonce repeats under the key
        // in any mode.
        let mut counters: Vec<[u64; 3]> = provs.iter().map(|_| [0, 1 << 63, 1 << 62]).collect();
        for &size in &s.sizes {
            let mut series: Vec<(&'static CryptoProvider, ContextMode)> = Vec::new();
            let mut batches: Vec<Box<Batch<'_>>> = Vec::new();
            for (prov, [reuse, fresh, batch]) in provs.iter().zip(counters.iter_mut()) {
                let (mut reuse, mut fresh, mut batch) = (Some(reuse), Some(fresh), Some(batch));
                for &mode in &s.contexts {
                    let c = match mode {
                        ContextMode::Reuse => reuse.take(),
                        ContextMode::Fresh => fresh.take(),
                        ContextMode::Batch => batch.take(),
                    }
                    .ok_or_else(|| anyhow!("context mode listed twice"))?;
                    batches.push(chunk_batch(prov, suite, size, mode, c)?);
                    series.push((prov, mode));
                }
            }
            let mut rounds: Vec<(&mut Batch<'_>, usize)> =
                batches.iter_mut().map(|b| (&mut **b, usize::MAX)).collect();
            let stats = timed_rounds(&mut rounds, s.timing)?;
            drop(rounds);
            drop(batches);
            for ((prov, mode), (st, m)) in series.into_iter().zip(stats) {
                let row = ChunkRow {
                    suite: suite.name(),
                    provider: prov.name,
                    context: mode,
                    size,
                    ns_median: st.median,
                    ns_min: st.min,
                    ns_mean: st.mean,
                    ns_max: st.max,
                    mbps: size as f64 / st.median * 1e3,
                    chunks_per_batch: m,
                };
                on_row(&row)?;
                rows.push(row);
            }
        }
    }
    let evens = break_evens(&rows, &s.sizes);
    Ok((rows, evens))
}

fn series(rows: &[ChunkRow], suite: &str, provider: &str, mode: ContextMode) -> Vec<f64> {
    rows.iter()
        .filter(|r| r.suite == suite && r.provider == provider && r.context == mode)
        .map(|r| r.ns_median)
        .collect()
}

fn describe(b: BreakEven, first: &str, second: &str) -> (String, String, String) {
    match b {
        BreakEven::FirstEverywhere => (
            first.into(),
            first.into(),
            format!("{first} is faster at every measured size"),
        ),
        BreakEven::SecondEverywhere => (
            second.into(),
            second.into(),
            format!("{second} is faster at every measured size"),
        ),
        BreakEven::At {
            first_below,
            last_below,
            first_above,
            at,
        } => {
            let (lo, hi) = if first_below {
                (first, second)
            } else {
                (second, first)
            };
            (
                lo.into(),
                hi.into(),
                format!(
                    "{lo} up to {last_below} B, {hi} from {first_above} B (break-even ≈ {at:.0} B)"
                ),
            )
        }
    }
}

fn row_of(
    suite: &str,
    kind: &'static str,
    (first, second): (&str, &str),
    context: Option<ContextMode>,
    b: BreakEven,
) -> BreakEvenRow {
    let (below, above, text) = describe(b, first, second);
    let text = format!("{first} vs {second}: {text}");
    let (size, last_below, first_above) = match b {
        BreakEven::At {
            last_below,
            first_above,
            at,
            ..
        } => (Some(at), Some(last_below), Some(first_above)),
        _ => (None, None, None),
    };
    BreakEvenRow {
        suite: suite.to_string(),
        kind,
        first: first.to_string(),
        second: second.to_string(),
        context,
        below,
        above,
        size,
        last_below,
        first_above,
        text,
    }
}

/// The break-evens of measured rows (every series measured at every one of `sizes`): each
/// pair of providers per suite and context mode, and each provider's context setup against
/// its chunk cost.
pub fn break_evens(rows: &[ChunkRow], sizes: &[usize]) -> Vec<BreakEvenRow> {
    let mut out = Vec::new();
    let mut suites: Vec<&str> = rows.iter().map(|r| r.suite.as_str()).collect();
    suites.dedup();
    for suite in suites {
        let mut provs: Vec<&'static str> = rows
            .iter()
            .filter(|r| r.suite == suite)
            .map(|r| r.provider)
            .collect();
        provs.dedup();
        let mut provs_seen = Vec::new();
        for p in provs {
            if !provs_seen.contains(&p) {
                provs_seen.push(p);
            }
        }
        for mode in [ContextMode::Reuse, ContextMode::Fresh, ContextMode::Batch] {
            for (i, a) in provs_seen.iter().enumerate() {
                for b in &provs_seen[i + 1..] {
                    let (sa, sb) = (series(rows, suite, a, mode), series(rows, suite, b, mode));
                    if let Some(be) = break_even(sizes, &sa, &sb) {
                        out.push(row_of(suite, "providers", (a, b), Some(mode), be));
                    }
                }
            }
        }
        for p in &provs_seen {
            let reuse = series(rows, suite, p, ContextMode::Reuse);
            let fresh = series(rows, suite, p, ContextMode::Fresh);
            if reuse.len() != sizes.len() || fresh.len() != sizes.len() {
                continue;
            }
            let setup: Vec<f64> = fresh.iter().zip(&reuse).map(|(f, r)| f - r).collect();
            if let Some(be) = break_even(sizes, &setup, &reuse) {
                let mut r = row_of(suite, "contexts", ("context setup", "chunk"), None, be);
                r.first = format!("{p}: context setup (fresh − reuse)");
                r.second = format!("{p}: the chunk (reuse)");
                r.text = match be {
                    BreakEven::At {
                        first_above, at, ..
                    } if !matches!(
                        be,
                        BreakEven::At {
                            first_below: true,
                            ..
                        }
                    ) =>
                    {
                        format!(
                            "{p}: a new context per chunk costs more than the chunk itself below \
                         ≈ {at:.0} B; from {first_above} B the chunk costs more"
                        )
                    }
                    BreakEven::At { last_below, .. } => format!(
                        "{p}: no break-even: the context setup costs less than the chunk up to \
                         {last_below} B and not above, i.e. the setup is within the noise of \
                         the large chunks"
                    ),
                    BreakEven::FirstEverywhere => format!(
                        "{p}: a new context costs less than the chunk at every measured size"
                    ),
                    BreakEven::SecondEverywhere => format!(
                        "{p}: a new context costs more than the chunk at every measured size"
                    ),
                };
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            batches: 3,
            batch_ns: 20_000.0,
            frames: 0,
        }
    }

    #[test]
    fn names_sizes_and_modes_are_checked() {
        let s = settings(&[], &[4096, 64, 64], None, Providers::All, timing()).unwrap();
        assert_eq!(s.suites, [ChunkSuite::Cbc(CipherAlg::Aes128)]);
        assert_eq!(s.sizes, [64, 4096]);
        assert_eq!(s.contexts, [ContextMode::Reuse, ContextMode::Fresh]);
        let s = settings(
            &["chacha20-poly1305".into()],
            &[100],
            Some("fresh"),
            Providers::All,
            timing(),
        )
        .unwrap();
        assert_eq!(s.suites, [ChunkSuite::Aead(AeadAlg::ChaCha20Poly1305)]);
        assert_eq!(s.contexts, [ContextMode::Fresh]);
        for (suites, sizes, ctx, needle) in [
            (vec!["aes512-cbc".to_string()], vec![64], None, "--suite"),
            (vec![], vec![], None, "at least one"),
            (vec![], vec![0], None, "out of range"),
            (vec![], vec![MAX_CHUNK + 16], None, "out of range"),
            (vec![], vec![100], None, "16-byte"),
            (vec![], vec![64], Some("sometimes"), "--context"),
            (vec![], vec![64], Some("batch"), "not an AEAD"),
            (
                vec!["aes128-ccm".into(), "aes128-cbc".into()],
                vec![64],
                Some("all"),
                "not an AEAD",
            ),
        ] {
            let e = settings(&suites, &sizes, ctx, Providers::All, timing()).unwrap_err();
            assert_eq!(ivnsec_node::error::exit_code(&e), 2);
            assert!(format!("{e:#}").contains(needle), "{e:#}");
        }
    }

    /// A short real run: every provider that has AES-128-CBC, both modes, two sizes; the rows
    /// are in, the figures positive, and the break-evens name the measured providers.
    #[test]
    fn a_short_run_measures_every_series() {
        let s = settings(&[], &[64, 4096], None, Providers::All, timing()).unwrap();
        let mut seen = 0;
        let (rows, evens) = run(&s, &mut |_| {
            seen += 1;
            Ok(())
        })
        .unwrap();
        let provs: Vec<&str> = PROVIDERS
            .iter()
            .filter(|p| p.supports(Primitive::Cipher(CipherAlg::Aes128)))
            .map(|p| p.name)
            .collect();
        assert_eq!(rows.len(), provs.len() * 2 * 2);
        assert_eq!(seen, rows.len());
        for r in &rows {
            assert!(r.ns_median > 0.0 && r.ns_min <= r.ns_median && r.ns_median <= r.ns_max);
            assert!((r.mbps - r.size as f64 / r.ns_median * 1e3).abs() < 1e-9);
        }
        let pairs = provs.len() * (provs.len() - 1) / 2;
        assert_eq!(
            evens.iter().filter(|e| e.kind == "providers").count(),
            2 * pairs
        );
        assert_eq!(
            evens.iter().filter(|e| e.kind == "contexts").count(),
            provs.len()
        );
    }

    /// `--context all` on AES-128-CCM: three modes per provider, and the `batch` rows of the
    /// providers with multi-buffer lanes (portable; auto when asked for) beside OpenSSL's,
    /// which seals a batch one by one; every chunk sealed (an error would fail the run).
    #[test]
    fn the_batch_mode_seals_aead_chunks_in_groups() {
        let s = settings(
            &["aes128-ccm".into()],
            &[64, 1400],
            Some("all"),
            Providers::All,
            timing(),
        )
        .unwrap();
        assert_eq!(
            s.contexts,
            [ContextMode::Reuse, ContextMode::Fresh, ContextMode::Batch]
        );
        let (rows, evens) = run(&s, &mut |_| Ok(())).unwrap();
        let provs: Vec<&str> = PROVIDERS
            .iter()
            .filter(|p| p.supports(Primitive::Aead(AeadAlg::Aes128Ccm)))
            .map(|p| p.name)
            .collect();
        assert!(provs.contains(&"portable"));
        assert_eq!(rows.len(), provs.len() * 3 * 2);
        assert!(rows.iter().all(|r| r.ns_median > 0.0));
        assert!(
            rows.iter()
                .any(|r| r.context == ContextMode::Batch && r.provider == "portable")
        );
        let pairs = provs.len() * (provs.len() - 1) / 2;
        assert_eq!(
            evens.iter().filter(|e| e.kind == "providers").count(),
            3 * pairs
        );
    }

    fn row(provider: &'static str, context: ContextMode, size: usize, ns: f64) -> ChunkRow {
        ChunkRow {
            suite: "aes128-cbc".into(),
            provider,
            context,
            size,
            ns_median: ns,
            ns_min: ns,
            ns_mean: ns,
            ns_max: ns,
            mbps: size as f64 / ns * 1e3,
            chunks_per_batch: 1,
        }
    }

    /// Seed 003's picture with made-up costs: an engine with a fixed 2000 ns per request and
    /// 0.5 ns/B against software at 100 ns + 4 ns/B crosses at 1900 / 3.5 ≈ 543 B (reuse);
    /// with a fresh context costing the engine 3000 ns more and software 200 ns more, at
    /// 4700 / 3.5 ≈ 1343 B. The engine's setup equals its chunk cost at (3000 − 0) …: fresh −
    /// reuse = 3000 against 2000 + 0.5·s, equal at s = 2000.
    #[test]
    fn break_evens_of_known_lines() {
        use ContextMode::{Fresh, Reuse};
        let sizes = [64, 256, 1024, 4096, 16384];
        let mut rows = Vec::new();
        for &s in &sizes {
            let x = s as f64;
            rows.push(row("portable", Reuse, s, 100.0 + 4.0 * x));
            rows.push(row("portable", Fresh, s, 300.0 + 4.0 * x));
            rows.push(row("fast", Reuse, s, 2000.0 + 0.5 * x));
            rows.push(row("fast", Fresh, s, 5000.0 + 0.5 * x));
        }
        let e = break_evens(&rows, &sizes);
        let reuse = e
            .iter()
            .find(|e| e.kind == "providers" && e.context == Some(Reuse))
            .unwrap();
        assert_eq!(
            (reuse.below.as_str(), reuse.above.as_str()),
            ("portable", "fast")
        );
        assert_eq!(
            (reuse.last_below, reuse.first_above),
            (Some(256), Some(1024))
        );
        // Interpolated between the measurements at 256 and 1024, which are on the lines.
        assert!((reuse.size.unwrap() - 1900.0 / 3.5).abs() < 1e-6);
        let fresh = e
            .iter()
            .find(|e| e.kind == "providers" && e.context == Some(Fresh))
            .unwrap();
        assert!((fresh.size.unwrap() - 4700.0 / 3.5).abs() < 1e-6);
        let fast = e
            .iter()
            .find(|e| e.kind == "contexts" && e.first.starts_with("fast"))
            .unwrap();
        assert!((fast.size.unwrap() - 2000.0).abs() < 1e-6, "{fast:?}");
        assert!(fast.text.contains("below ≈ 2000 B"), "{}", fast.text);
        let soft = e
            .iter()
            .find(|e| e.kind == "contexts" && e.first.starts_with("portable"))
            .unwrap();
        // Software: setup 200 against 100 + 4·s, below the chunk from the smallest size.
        assert_eq!(soft.size, None);
        assert!(
            soft.text.contains("less than the chunk at every"),
            "{}",
            soft.text
        );
    }
}
