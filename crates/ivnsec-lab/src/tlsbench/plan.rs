//! `[[tls_bench]]` in a plan, run in the plan's own process (`ivnsec tls-bench`: handshakes
//! per minute and CPU, beside seed 004 Tables 5.1 and 5.2).

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::report::TlsBenchExperiment;
use super::{Algo, Kx, Outcome};
use crate::experiment::context::in_process;
use crate::experiment::{Gathers, Jobs, PlanTables, PlanText, RunContext};
use crate::tlsbench;
use ivnsec_node::error::KeyError;

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

#[derive(Deserialize)]
struct Tables {
    #[serde(default)]
    tls_bench: Vec<TlsBenchConfig>,
}

impl<Pl, R> PlanTables<Pl, R> for TlsBenchExperiment
where
    Pl: Jobs<TlsBenchConfig>,
    R: Gathers<Outcome>,
{
    fn parse(&self, t: &PlanText, plan: &mut Pl) -> Result<()> {
        let f: Tables = t.tables()?;
        t.checked("tls_bench", &f.tls_bench, TlsBenchConfig::check)?;
        *plan.jobs_mut() = f.tls_bench;
        Ok(())
    }

    fn is_empty(&self, plan: &Pl) -> bool {
        plan.jobs().is_empty()
    }

    fn run_rank(&self) -> u8 {
        130
    }

    fn run(&self, plan: &Pl, _cx: &mut RunContext, results: &mut R) -> Result<()> {
        in_process(
            "tls_bench",
            plan.jobs(),
            |c| {
                format!(
                    "{} with {} clients, {} s each",
                    c.algos.join(", "),
                    c.concurrency,
                    c.seconds
                )
            },
            run_tls_bench,
            |r| results.gather(r),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_tables_name_the_key() {
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
