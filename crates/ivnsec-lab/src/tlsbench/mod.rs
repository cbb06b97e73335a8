//! `ivnsec tls-bench`: seed 004's handshake costs (Tables 5.1 and 5.2: TLS connections per
//! minute and CPU with RSA-1024/2048/4096 + DHE, software against a hardware engine), measured
//! today on this host: full TLS 1.3 handshakes of rustls (aws-lc-rs provider) client and server
//! over loopback TCP, per server-certificate algorithm, with and without client certificates,
//! with resumption, with X25519 or the post-quantum hybrid X25519MLKEM768; in the same run
//! OpenSSL (`openssl s_server` + `openssl s_time`) on the same certificate files, and the
//! ratio; and the seed's own configuration that rustls cannot do (TLS 1.2 DHE-RSA, RSA-1024)
//! measured with OpenSSL for the table beside seed 004's (docs/tls-bench.md).
//!
//! One connection of either side: TCP connect, the TLS handshake, one 18-byte request
//! (`GET /ok HTTP/1.0`), the 47-byte answer `openssl s_server -WWW` gives for a 2-byte file,
//! close. The request makes the TLS 1.3 session tickets reach the client (OpenSSL's `s_time
//! -reuse` reuses nothing without it) and makes both servers finish the handshake, client
//! certificate check included, before a connection counts.

pub mod certs;
pub mod openssl;
pub mod ours;
pub mod plan;
pub mod report;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use certs::{CertSet, TempDir};
use ivnsec_node::error::usage;

/// A server (and client) certificate algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algo {
    EcdsaP256,
    Ed25519,
    Rsa2048,
    Rsa3072,
    Rsa4096,
}

impl Algo {
    pub const ALL: [Algo; 5] = [
        Algo::EcdsaP256,
        Algo::Ed25519,
        Algo::Rsa2048,
        Algo::Rsa3072,
        Algo::Rsa4096,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algo::EcdsaP256 => "ecdsa-p256",
            Algo::Ed25519 => "ed25519",
            Algo::Rsa2048 => "rsa-2048",
            Algo::Rsa3072 => "rsa-3072",
            Algo::Rsa4096 => "rsa-4096",
        }
    }

    /// RSA modulus bits (`None` for the elliptic-curve algorithms).
    pub fn rsa_bits(self) -> Option<u32> {
        match self {
            Algo::Rsa2048 => Some(2048),
            Algo::Rsa3072 => Some(3072),
            Algo::Rsa4096 => Some(4096),
            Algo::EcdsaP256 | Algo::Ed25519 => None,
        }
    }
}

impl fmt::Display for Algo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algo {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Algo> {
        Algo::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Algo::ALL.iter().map(|a| a.name()).collect();
                usage(format!(
                    "unknown algorithm `{s}`; one of {} (RSA-1024 and DHE, which seed 004 used, \
are measured with OpenSSL only: see --dhe)",
                    names.join(", ")
                ))
            })
    }
}

/// The TLS 1.3 key exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kx {
    #[serde(rename = "x25519")]
    X25519,
    /// The hybrid post-quantum key exchange (X25519 + ML-KEM-768, draft-ietf-tls-ecdhe-mlkem).
    #[serde(rename = "x25519mlkem768")]
    X25519Mlkem768,
}

impl Kx {
    pub fn name(self) -> &'static str {
        match self {
            Kx::X25519 => "x25519",
            Kx::X25519Mlkem768 => "x25519mlkem768",
        }
    }

    /// The group's name for OpenSSL's `-groups`.
    pub fn openssl_group(self) -> &'static str {
        match self {
            Kx::X25519 => "X25519",
            Kx::X25519Mlkem768 => "X25519MLKEM768",
        }
    }
}

impl FromStr for Kx {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Kx> {
        match s {
            "x25519" => Ok(Kx::X25519),
            "x25519mlkem768" => Ok(Kx::X25519Mlkem768),
            _ => Err(usage(format!(
                "unknown key exchange `{s}`; one of x25519, x25519mlkem768"
            ))),
        }
    }
}

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub algo: Algo,
    pub kx: Kx,
    pub client_auth: bool,
    pub resumption: bool,
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct Settings {
    pub algos: Vec<Algo>,
    pub client_auth: Vec<bool>,
    pub resumption: Vec<bool>,
    pub kx: Vec<Kx>,
    /// Parallel clients (and server workers; OpenSSL: this many `s_server` + `s_time` pairs).
    pub concurrency: usize,
    /// Seconds per measurement (each of ours and OpenSSL's).
    pub seconds: u32,
    /// Run OpenSSL beside ours.
    pub openssl: bool,
    /// Also measure seed 004's TLS 1.2 DHE-RSA configuration with OpenSSL (RSA-1024, and the
    /// RSA-2048 / RSA-4096 of `algos`).
    pub dhe: bool,
    /// Clients present a certificate of another CA (every handshake with client
    /// authentication must fail; the failures are counted).
    pub foreign_client_cert: bool,
}

/// Most parallel clients.
pub const MAX_CONCURRENCY: usize = 256;
/// Longest measurement.
pub const MAX_SECONDS: u32 = 3600;

impl Settings {
    /// Checks the ranges (usage errors, exit 2).
    pub fn check(&self) -> Result<()> {
        if self.concurrency == 0 || self.concurrency > MAX_CONCURRENCY {
            return Err(usage(format!(
                "--concurrency {}: between 1 and {MAX_CONCURRENCY}",
                self.concurrency
            )));
        }
        if self.seconds == 0 || self.seconds > MAX_SECONDS {
            return Err(usage(format!(
                "--seconds {}: between 1 and {MAX_SECONDS} (whole seconds)",
                self.seconds
            )));
        }
        if self.algos.is_empty() {
            return Err(usage("no --algo given"));
        }
        Ok(())
    }

    /// Every case, in a stable order (algorithm, key exchange, client auth, resumption).
    pub fn cases(&self) -> Vec<Case> {
        let mut out = Vec::new();
        let dedup = |v: &[bool]| {
            let mut v = v.to_vec();
            v.sort();
            v.dedup();
            v
        };
        // The order given, each algorithm once.
        let mut algos: Vec<Algo> = Vec::new();
        for a in &self.algos {
            if !algos.contains(a) {
                algos.push(*a);
            }
        }
        let mut kxs = self.kx.clone();
        kxs.sort();
        kxs.dedup();
        for &algo in &algos {
            for &kx in &kxs {
                for &client_auth in &dedup(&self.client_auth) {
                    for &resumption in &dedup(&self.resumption) {
                        out.push(Case {
                            algo,
                            kx,
                            client_auth,
                            resumption,
                        });
                    }
                }
            }
        }
        out
    }

    pub fn duration(&self) -> Duration {
        Duration::from_secs(u64::from(self.seconds))
    }
}

/// Handshake counts and CPU of one side's measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Connections that completed (handshake, request, answer).
    pub handshakes: u64,
    /// Connections that failed (handshake refused or broken), counted by the clients.
    pub failures: u64,
    /// Wall-clock seconds the clients ran.
    pub seconds: f64,
    pub handshakes_per_s: f64,
    pub handshakes_per_min: f64,
    /// Whole-machine busy % (`/proc/stat`, all cores = 100 %) over the run.
    pub cpu_pct: f64,
    /// CPU of the servers alone, % of the whole machine (all cores = 100 %).
    pub server_cpu_pct: f64,
    /// CPU of clients and servers together, % of the whole machine.
    pub process_cpu_pct: f64,
    /// CPU time of clients and servers together per completed connection, in µs (less
    /// sensitive than the rates to other load on the machine); `null` without one.
    pub cpu_us_per_handshake: Option<f64>,
    /// CPU time of the servers per completed connection, in µs.
    pub server_cpu_us_per_handshake: Option<f64>,
}

impl Measured {
    /// Fills the rates and the per-connection CPU from the counts, the seconds and the CPU
    /// shares (`cores` CPUs = 100 %).
    pub fn rates(&mut self, cores: f64) {
        if self.seconds > 0.0 {
            self.handshakes_per_s = self.handshakes as f64 / self.seconds;
            self.handshakes_per_min = 60.0 * self.handshakes_per_s;
        }
        let per = |pct: f64| {
            (self.handshakes > 0)
                .then(|| pct / 100.0 * cores * self.seconds * 1e6 / self.handshakes as f64)
        };
        self.cpu_us_per_handshake = per(self.process_cpu_pct);
        self.server_cpu_us_per_handshake = per(self.server_cpu_pct);
    }
}

/// OpenSSL on the same certificates, or why it was not run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpensslSide {
    /// `null` when not measured (see `note`).
    pub handshakes_per_s: Option<f64>,
    /// The exact commands (one `s_server` and one `s_time` of the N pairs; the others differ
    /// in the port only). `null` when not run.
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One result row of `--json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub algo: Algo,
    pub kx: Kx,
    pub client_auth: bool,
    pub resumption: bool,
    pub protocol: String,
    pub handshakes: u64,
    pub failures: u64,
    /// Connections that resumed a session (with resumption, all but the first few).
    pub resumed: u64,
    pub seconds: f64,
    pub handshakes_per_s: f64,
    pub handshakes_per_min: f64,
    pub cpu_pct: f64,
    pub server_cpu_pct: f64,
    pub process_cpu_pct: f64,
    pub cpu_us_per_handshake: Option<f64>,
    pub server_cpu_us_per_handshake: Option<f64>,
    pub openssl: OpensslSide,
    /// Ours / OpenSSL's handshakes per second (`null` without an OpenSSL figure).
    pub ratio: Option<f64>,
}

/// A configuration measured with OpenSSL only (seed 004's TLS 1.2 DHE-RSA, which rustls does
/// not implement).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpensslOnly {
    /// `rsa-1024`, `rsa-2048`, `rsa-4096`.
    pub algo: String,
    pub protocol: String,
    pub cipher: String,
    pub dh_bits: u32,
    pub client_auth: bool,
    pub measured: Measured,
    pub command: String,
    pub why: String,
}

/// The whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub results: Vec<Row>,
    pub openssl_only: Vec<OpensslOnly>,
    pub meta: Meta,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub concurrency: usize,
    pub seconds: u32,
    pub cores: usize,
    pub rustls: String,
    pub openssl_version: Option<String>,
    pub cpu_model: Option<String>,
}

impl Outcome {
    /// Handshakes that failed anywhere (ours or OpenSSL's).
    pub fn failures(&self) -> u64 {
        self.results
            .iter()
            .map(|r| r.failures + r.openssl.measured.as_ref().map_or(0, |m| m.failures))
            .sum::<u64>()
            + self
                .openssl_only
                .iter()
                .map(|o| o.measured.failures)
                .sum::<u64>()
    }
}

/// The CPUs this process may run on (all cores = 100 % in the CPU figures).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn cpu_model() -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    s.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Runs every case (ours, then OpenSSL's on the same files) and, with `dhe`, seed 004's
/// DHE-RSA configurations; `progress` sees each row as it is measured.
pub fn run(s: &Settings, progress: &mut dyn FnMut(&Row)) -> Result<Outcome> {
    s.check()?;
    let openssl = if s.openssl || s.dhe {
        Some(openssl::Openssl::find()?)
    } else {
        None
    };
    let dir = TempDir::new()?;
    let mut results = Vec::new();
    let mut sets: Vec<CertSet> = Vec::new();
    for case in s.cases() {
        if !sets.iter().any(|c| c.algo == case.algo) {
            sets.push(CertSet::generate(&dir, case.algo, s.foreign_client_cert)?);
        }
        let set = sets
            .iter()
            .find(|c| c.algo == case.algo)
            .expect("generated");
        let m = ours::measure(set, case, s.concurrency, s.duration())?;
        let side = match (&openssl, s.openssl) {
            (Some(o), true) => o.measure_tls13(&dir, set, case, s.concurrency, s.duration())?,
            _ => OpensslSide {
                note: Some("not run (--openssl off)".into()),
                ..OpensslSide::default()
            },
        };
        let ratio = side
            .handshakes_per_s
            .filter(|&o| o > 0.0)
            .map(|o| m.measured.handshakes_per_s / o);
        let row = Row {
            algo: case.algo,
            kx: case.kx,
            client_auth: case.client_auth,
            resumption: case.resumption,
            protocol: "TLSv1.3".into(),
            handshakes: m.measured.handshakes,
            failures: m.measured.failures,
            resumed: m.resumed,
            seconds: m.measured.seconds,
            handshakes_per_s: m.measured.handshakes_per_s,
            handshakes_per_min: m.measured.handshakes_per_min,
            cpu_pct: m.measured.cpu_pct,
            server_cpu_pct: m.measured.server_cpu_pct,
            process_cpu_pct: m.measured.process_cpu_pct,
            cpu_us_per_handshake: m.measured.cpu_us_per_handshake,
            server_cpu_us_per_handshake: m.measured.server_cpu_us_per_handshake,
            openssl: side,
            ratio,
        };
        progress(&row);
        results.push(row);
    }
    let mut openssl_only = Vec::new();
    // The failure check (--foreign-client-cert) is about our certificates: no DHE rows then.
    if let (Some(o), true) = (&openssl, s.dhe && !s.foreign_client_cert) {
        let client_auth = s.client_auth.contains(&true);
        for bits in [1024u32, 2048, 4096] {
            let set = sets.iter().find(|c| c.algo.rsa_bits() == Some(bits));
            if bits != 1024 && set.is_none() {
                continue;
            }
            openssl_only.push(o.measure_dhe(
                &dir,
                bits,
                set,
                client_auth,
                s.concurrency,
                s.duration(),
            )?);
        }
    }
    Ok(Outcome {
        results,
        openssl_only,
        meta: Meta {
            concurrency: s.concurrency,
            seconds: s.seconds,
            cores: cores(),
            rustls: "rustls 0.23 (aws-lc-rs provider)".into(),
            openssl_version: openssl.as_ref().map(|o| o.version.clone()),
            cpu_model: cpu_model(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            algos: vec![Algo::Rsa2048, Algo::EcdsaP256, Algo::Rsa2048],
            client_auth: vec![false, true],
            resumption: vec![true, false, true],
            kx: vec![Kx::X25519Mlkem768, Kx::X25519],
            concurrency: 10,
            seconds: 5,
            openssl: true,
            dhe: true,
            foreign_client_cert: false,
        }
    }

    #[test]
    fn every_combination_once() {
        let c = settings().cases();
        assert_eq!(c.len(), 2 * 2 * 2 * 2);
        assert_eq!(
            c[0],
            Case {
                algo: Algo::Rsa2048,
                kx: Kx::X25519,
                client_auth: false,
                resumption: false
            }
        );
        for (i, a) in c.iter().enumerate() {
            assert!(!c[i + 1..].contains(a), "{a:?} twice");
        }
    }

    #[test]
    fn ranges_are_checked() {
        assert!(settings().check().is_ok());
        for bad in [
            Settings {
                concurrency: 0,
                ..settings()
            },
            Settings {
                concurrency: MAX_CONCURRENCY + 1,
                ..settings()
            },
            Settings {
                seconds: 0,
                ..settings()
            },
            Settings {
                seconds: MAX_SECONDS + 1,
                ..settings()
            },
            Settings {
                algos: vec![],
                ..settings()
            },
        ] {
            let e = bad.check().unwrap_err();
            assert_eq!(ivnsec_node::error::exit_code(&e), 2, "{e}");
        }
        assert!("rsa-1024".parse::<Algo>().is_err());
        assert_eq!("ed25519".parse::<Algo>().unwrap(), Algo::Ed25519);
        assert_eq!("x25519mlkem768".parse::<Kx>().unwrap(), Kx::X25519Mlkem768);
    }

    #[test]
    fn rates_and_cpu_per_connection() {
        let mut m = Measured {
            handshakes: 1000,
            seconds: 2.0,
            process_cpu_pct: 50.0,
            server_cpu_pct: 25.0,
            ..Measured::default()
        };
        m.rates(2.0);
        assert_eq!(m.handshakes_per_s, 500.0);
        assert_eq!(m.handshakes_per_min, 30_000.0);
        // 50 % of 2 cores for 2 s = 2 CPU seconds over 1000 connections.
        assert_eq!(m.cpu_us_per_handshake, Some(2000.0));
        assert_eq!(m.server_cpu_us_per_handshake, Some(1000.0));
        let mut none = Measured {
            seconds: 1.0,
            ..Measured::default()
        };
        none.rates(2.0);
        assert_eq!(none.handshakes_per_s, 0.0);
        assert_eq!(none.cpu_us_per_handshake, None);
    }
}
