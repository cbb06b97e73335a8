//! `[[chunk_bench]]` and `[[crypto_bench]]` in a plan, run in the plan's own process:
//! `[[chunk_bench]]` (`ivnsec crypto-bench --chunk-sizes`: time per chunk by provider and
//! context mode, and the break-evens, beside seed 004 §6.1's offload break-even) and
//! `[[crypto_bench]]` (single-frame protect/verify times, [`super::per_frame`]).

use anyhow::Result;
use serde::{Deserialize, Serialize};

use ivnsec_core::crypto::ProviderChoice;
use ivnsec_core::profile::NamedProfile;

use super::chunks::{self, ChunkBenchReport, ChunkSuite};
use super::per_frame::{PerFrameConfig, PerFrameReport};
use super::report::{ChunkBenchExperiment, CryptoBenchExperiment};
use super::{Providers, Timing};
use crate::experiment::context::in_process;
use crate::experiment::{Gathers, Jobs, PlanTables, PlanText, RunContext};
use ivnsec_node::error::KeyError;

fn default_suites() -> Vec<String> {
    vec![chunks::DEFAULT_SUITE.into(), "aes128-gcm".into()]
}
fn default_chunk_sizes() -> Vec<usize> {
    vec![64, 256, 1024, 4096, 16384, 65536]
}
fn default_context() -> String {
    "both".into()
}
fn default_providers() -> String {
    "all".into()
}
fn default_batches() -> u32 {
    31
}
fn default_batch_ms() -> f64 {
    3.0
}

/// One `[[chunk_bench]]` table.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkBenchConfig {
    /// `aes128-cbc`, `aes192-cbc`, `aes256-cbc` or an AEAD suite.
    #[serde(default = "default_suites")]
    pub suites: Vec<String>,
    /// Chunk bytes (1 … 1 MiB; whole 16-byte blocks with a CBC suite).
    #[serde(default = "default_chunk_sizes")]
    pub sizes: Vec<usize>,
    /// `reuse`, `fresh` or `both`.
    #[serde(default = "default_context")]
    pub context: String,
    /// `all` (every provider that has the suite) or one of `portable`, `fast`, `openssl`, `auto`.
    #[serde(default = "default_providers")]
    pub provider: String,
    /// Timed batches per point and their length.
    #[serde(default = "default_batches")]
    pub batches: u32,
    #[serde(default = "default_batch_ms")]
    pub batch_ms: f64,
}

impl ChunkBenchConfig {
    pub fn check(&self) -> Result<(), KeyError> {
        if self.suites.is_empty() || self.suites.len() > 8 {
            return Err(KeyError::new("suites", "give 1 to 8 suites"));
        }
        let mut cbc = false;
        for (i, s) in self.suites.iter().enumerate() {
            match ChunkSuite::parse(s) {
                Some(ChunkSuite::Cbc(_)) => cbc = true,
                Some(_) => {}
                None => {
                    return Err(KeyError::new(
                        format!("suites[{i}]"),
                        format!(
                            "`{s}` is neither aes128-cbc, aes192-cbc, aes256-cbc nor an AEAD suite"
                        ),
                    ));
                }
            }
        }
        if self.sizes.is_empty() || self.sizes.len() > 32 {
            return Err(KeyError::new("sizes", "give 1 to 32 sizes"));
        }
        for (i, &n) in self.sizes.iter().enumerate() {
            if n == 0 || n > chunks::MAX_CHUNK || (cbc && n % 16 != 0) {
                return Err(KeyError::new(
                    format!("sizes[{i}]"),
                    format!(
                        "a chunk is 1 to {} bytes (whole 16-byte blocks with a CBC suite), got {n}",
                        chunks::MAX_CHUNK
                    ),
                ));
            }
        }
        if !["reuse", "fresh", "both", "batch", "all"].contains(&self.context.as_str()) {
            return Err(KeyError::new(
                "context",
                format!("`{}`: reuse, fresh, both, batch or all", self.context),
            ));
        }
        if cbc && ["batch", "all"].contains(&self.context.as_str()) {
            return Err(KeyError::new(
                "context",
                format!(
                    "`{}` seals AEAD chunks in batches; a CBC suite has none (use an AEAD \
                     suite, e.g. aes128-ccm)",
                    self.context
                ),
            ));
        }
        self.providers()?;
        if !(1..=1000).contains(&self.batches) {
            return Err(KeyError::new("batches", "batches must be 1 to 1000"));
        }
        if !(self.batch_ms > 0.0 && self.batch_ms <= 1000.0) {
            return Err(KeyError::new(
                "batch_ms",
                "batch_ms must be above 0 and at most 1000",
            ));
        }
        Ok(())
    }

    fn providers(&self) -> Result<Providers, KeyError> {
        if self.provider == "all" {
            return Ok(Providers::All);
        }
        let p: ProviderChoice = self
            .provider
            .parse()
            .map_err(|e: String| KeyError::new("provider", format!("{e} (or `all`)")))?;
        Ok(Providers::One(p))
    }
}

/// Runs one checked `[[chunk_bench]]` table.
pub fn run_chunk_bench(c: &ChunkBenchConfig) -> Result<ChunkBenchReport> {
    let providers = c
        .providers()
        .map_err(|e| anyhow::anyhow!("{}: {}", e.key, e.why))?;
    let timing = Timing {
        batches: c.batches as usize,
        batch_ns: c.batch_ms * 1e6,
        frames: 0,
    };
    let s = chunks::settings(&c.suites, &c.sizes, Some(&c.context), providers, timing)?;
    let (rows, evens) = chunks::run(&s, &mut |_| Ok(()))?;
    Ok(ChunkBenchReport {
        chunks: serde_json::to_value(&rows)?,
        break_even: serde_json::to_value(&evens)?,
    })
}

#[derive(Deserialize)]
struct ChunkTables {
    #[serde(default)]
    chunk_bench: Vec<ChunkBenchConfig>,
}

impl<Pl, R> PlanTables<Pl, R> for ChunkBenchExperiment
where
    Pl: Jobs<ChunkBenchConfig>,
    R: Gathers<ChunkBenchReport>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: ChunkTables = t.tables()?;
        t.checked("chunk_bench", &f.chunk_bench, ChunkBenchConfig::check)?;
        *plan.jobs_mut() = f.chunk_bench;
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        120
    }

    fn run(&self, plan: &Pl, _cx: &mut RunContext, results: &mut R) -> Result<()> {
        // Seed 004's benchmarks in this process: AES by chunk size (and the TLS handshakes).
        in_process(
            "chunk_bench",
            plan.jobs(),
            |c| {
                format!(
                    "{} at {:?} bytes, context {}",
                    c.suites.join(", "),
                    c.sizes,
                    c.context
                )
            },
            run_chunk_bench,
            |r| results.gather(r),
        )
    }
}

#[derive(Deserialize)]
struct FrameTables {
    #[serde(default)]
    crypto_bench: Vec<PerFrameConfig>,
}

impl<Pl, R> PlanTables<Pl, R> for CryptoBenchExperiment
where
    Pl: Jobs<PerFrameConfig>,
    R: Gathers<PerFrameReport>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: FrameTables = t.tables()?;
        t.checked("crypto_bench", &f.crypto_bench, PerFrameConfig::check)?;
        *plan.jobs_mut() = f.crypto_bench;
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        110
    }

    fn run(&self, plan: &Pl, _cx: &mut RunContext, results: &mut R) -> Result<()> {
        // Single-frame crypto times first, in this process, before any testbed is built.
        in_process(
            "crypto-bench",
            plan.jobs(),
            |c| {
                format!(
                    "{} at {:?} bytes, {} frames one by one",
                    NamedProfile::join(&c.profiles, ", "),
                    c.sizes,
                    c.frames
                )
            },
            super::per_frame::run,
            |r| results.gather(r),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_tables_name_the_key() {
        let c: ChunkBenchConfig = toml::from_str("sizes = [64, 100]").unwrap();
        assert_eq!(c.check().unwrap_err().key, "sizes[1]");
        let c: ChunkBenchConfig = toml::from_str("suites = [\"des\"]").unwrap();
        assert_eq!(c.check().unwrap_err().key, "suites[0]");
        let c: ChunkBenchConfig = toml::from_str("context = \"new\"").unwrap();
        assert_eq!(c.check().unwrap_err().key, "context");
        // The default suite is CBC, which has no batches; an AEAD suite has.
        let c: ChunkBenchConfig = toml::from_str("context = \"batch\"").unwrap();
        assert_eq!(c.check().unwrap_err().key, "context");
        let c: ChunkBenchConfig =
            toml::from_str("context = \"all\"\nsuites = [\"aes128-ccm\"]").unwrap();
        c.check().unwrap();
        let c: ChunkBenchConfig = toml::from_str("provider = \"fpga\"").unwrap();
        assert_eq!(c.check().unwrap_err().key, "provider");
        toml::from_str::<ChunkBenchConfig>("")
            .unwrap()
            .check()
            .unwrap();
    }
}
