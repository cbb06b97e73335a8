//! The plan tables of seed 004's benchmarks that run in the plan's own process:
//! `[[chunk_bench]]` (`ivnsec crypto-bench --chunk-sizes`: time per chunk by provider and
//! context mode, and the break-evens, beside seed 004 §6.1's offload break-even) and
//! `[[tls_bench]]` (`ivnsec tls-bench`: handshakes per minute and CPU, beside seed 004 Tables
//! 5.1 and 5.2).

use anyhow::Result;
use serde::{Deserialize, Serialize};

use ivnsec_core::crypto::ProviderChoice;

use crate::bench::chunks::{self, ChunkSuite};
use crate::bench::{Providers, Timing};
use crate::tlsbench::{self, Algo, Kx, Outcome};
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
        if !["reuse", "fresh", "both"].contains(&self.context.as_str()) {
            return Err(KeyError::new(
                "context",
                format!("`{}`: reuse, fresh or both", self.context),
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

pub use crate::bench::chunks::ChunkBenchReport;

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

fn default_algos() -> Vec<String> {
    vec!["rsa-2048".into(), "rsa-4096".into()]
}
fn default_true() -> bool {
    true
}
fn default_concurrency() -> usize {
    10
}
fn default_tls_seconds() -> u32 {
    5
}

/// One `[[tls_bench]]` table (`ivnsec tls-bench`, docs/tls-bench.md).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsBenchConfig {
    /// Certificate algorithms: `ecdsa-p256`, `ed25519`, `rsa-2048`, `rsa-3072`, `rsa-4096`.
    #[serde(default = "default_algos")]
    pub algos: Vec<String>,
    /// Clients present a certificate (mutual TLS, as seed 004's OpenVPN clients did).
    #[serde(default = "default_true")]
    pub client_auth: bool,
    /// Parallel clients (seed 004: ten).
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Whole seconds per measurement.
    #[serde(default = "default_tls_seconds")]
    pub seconds: u32,
    /// Measure OpenSSL beside ours.
    #[serde(default = "default_true")]
    pub openssl: bool,
    /// Also seed 004's TLS 1.2 DHE-RSA configuration with OpenSSL.
    #[serde(default = "default_true")]
    pub dhe: bool,
}

impl TlsBenchConfig {
    fn settings(&self) -> Result<tlsbench::Settings, KeyError> {
        if self.algos.is_empty() {
            return Err(KeyError::new("algos", "give at least one algorithm"));
        }
        let mut algos = Vec::new();
        for (i, a) in self.algos.iter().enumerate() {
            let algo: Algo = a.parse().map_err(|_| {
                KeyError::new(
                    format!("algos[{i}]"),
                    format!("`{a}`: ecdsa-p256, ed25519, rsa-2048, rsa-3072 or rsa-4096"),
                )
            })?;
            algos.push(algo);
        }
        if self.concurrency == 0 || self.concurrency > tlsbench::MAX_CONCURRENCY {
            return Err(KeyError::new(
                "concurrency",
                format!(
                    "1 to {}, got {}",
                    tlsbench::MAX_CONCURRENCY,
                    self.concurrency
                ),
            ));
        }
        if self.seconds == 0 || self.seconds > tlsbench::MAX_SECONDS {
            return Err(KeyError::new(
                "seconds",
                format!(
                    "1 to {} whole seconds, got {}",
                    tlsbench::MAX_SECONDS,
                    self.seconds
                ),
            ));
        }
        Ok(tlsbench::Settings {
            algos,
            client_auth: vec![self.client_auth],
            resumption: vec![false],
            kx: vec![Kx::X25519],
            concurrency: self.concurrency,
            seconds: self.seconds,
            openssl: self.openssl,
            dhe: self.dhe,
            foreign_client_cert: false,
        })
    }

    pub fn check(&self) -> Result<(), KeyError> {
        self.settings().map(|_| ())
    }
}

/// Runs one checked `[[tls_bench]]` table.
pub fn run_tls_bench(c: &TlsBenchConfig) -> Result<Outcome> {
    let s = c
        .settings()
        .map_err(|e| anyhow::anyhow!("{}: {}", e.key, e.why))?;
    tlsbench::run(&s, &mut |_| {})
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
        let c: ChunkBenchConfig = toml::from_str("provider = \"fpga\"").unwrap();
        assert_eq!(c.check().unwrap_err().key, "provider");
        toml::from_str::<ChunkBenchConfig>("")
            .unwrap()
            .check()
            .unwrap();
        let t: TlsBenchConfig = toml::from_str("algos = [\"rsa-1024\"]").unwrap();
        assert_eq!(t.check().unwrap_err().key, "algos[0]");
        let t: TlsBenchConfig = toml::from_str("seconds = 0").unwrap();
        assert_eq!(t.check().unwrap_err().key, "seconds");
        toml::from_str::<TlsBenchConfig>("")
            .unwrap()
            .check()
            .unwrap();
    }
}
