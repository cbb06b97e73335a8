//! `ivnsec crypto-bench`: protect and verify cost per profile, provider and payload size, and
//! (with `--vs-openssl`) the ratio to `openssl speed` on the same machine in the same run.
//!
//! Method (docs/benchmarks.md):
//! - "size" is the payload in bytes. The plain frame is the 14-byte Ethernet header plus the
//!   payload; the protected frame adds the 12-byte IVN-AE header and the tag. MB/s counts payload
//!   bytes (10^6 per MB), which is what `openssl speed -bytes N` counts.
//! - Protect: `IvnAeTx::protect_in_place` called M times on one buffer (the cipher's cost does not
//!   depend on the bytes, so the buffer is not restored between calls; nothing else is timed).
//! - Verify: a ring of frames with increasing sequence numbers is protected (untimed), then
//!   `IvnAeRx::verify_in_place` is timed over the ring, in order, on one receiver with a 64-frame
//!   replay window. The ring is capped at 512 KiB so it stays in the L2/L3 cache.
//! - Each measurement: calibration (also the warm-up), one untimed batch, then K batches timed
//!   with `std::time::Instant`; ns/frame = batch time / M; reported as min, median, mean, max over
//!   the batches. `*_mbps` is from the mean, `*_mbps_median` from the median.
//! - `openssl speed` divides by the CPU time of its process (user time from getrusage), which
//!   leaves out the time it was descheduled. For a like-for-like ratio, `--vs-openssl` also runs
//!   protect for as long as OpenSSL runs (`--openssl-seconds` of *CPU* time) and divides by this
//!   thread's CPU time (utime + stime from /proc/thread-self/stat): `protect_mbps_cpu`.
//!   `ratio_vs_openssl` = `protect_mbps_cpu` / OpenSSL MB/s (falls back to the median batch when
//!   /proc is unavailable); `ratio_vs_openssl_median` and `ratio_vs_openssl_mean` use the
//!   wall-clock batches.
//! - Cycles/byte are *estimated* as ns/byte × the "cpu MHz" of /proc/cpuinfo (no TSC read: the
//!   project keeps `unsafe` out of this crate).
//! - MACsec (`macsec-…`) and ESP (`esp-…`) profiles time the whole-frame protect/verify of the
//!   standard framing the same way: MACsec over the same plain Ethernet frame (confidentiality on,
//!   no SCI in the SecTAG: 20 bytes of AAD), ESP in transport mode over an IPv4/UDP packet whose
//!   UDP payload is "size" bytes (8 bytes of AAD; the 20-byte IPv4 header is restored before each
//!   protect, inside the timing). Each such row, and each IVN-AE AEAD row at the conf level
//!   (12 bytes of AAD), also times the bare AEAD seal (in place, one buffer) and open (over a ring
//!   of sealed buffers with increasing nonces) of "size" bytes with the same key length and AAD
//!   length: `bare_aead_ns`, `bare_aead_open_ns`. `overhead_pct` = (protect − bare seal) / bare
//!   seal × 100 and `verify_overhead_pct` = (verify − bare open) / bare open × 100, both from the
//!   medians. Transforms without an AEAD over the payload (ESP NULL/CBC-HMAC/GMAC, HMAC, CRC,
//!   auth-level) have null there.
//! - SecOC (`secoc-…`) profiles time `SecocTx::protect_in_place` on an Authentic I-PDU of "size"
//!   bytes (default lengths: 8-bit truncated FV of a 64-bit FV, 24-bit authenticator; the MAC runs
//!   over DataID ‖ PDU ‖ 8-byte FV) and `SecocRx::verify` over a ring of Secured I-PDUs with
//!   increasing freshness values. There is no bare-AEAD comparison (SecOC only authenticates).

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use ivnsec_core::crypto::{AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, CryptoProvider, Primitive};
use ivnsec_core::sa::esp::{EspAlg, EspMode, EspParams, EspRx, EspTx};
use ivnsec_core::sa::ivnae::{IvnAeRx, IvnAeTx, SaParams};
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecRx, MacsecTx, RxOptions, TxOptions, ValidateFrames,
};
use ivnsec_core::sa::secoc::{SecocAlg, SecocParams, SecocRx, SecocRxOptions, SecocTx};
use ivnsec_core::suite::{HashFn, IvnAeProfile, Level, Suite};
use ivnsec_core::wire::ip;
use ivnsec_core::wire::macsec::Sci;
use serde::Serialize;

use crate::error::{EnvError, usage};
use crate::providers::{self, PROVIDERS, ProviderChoice};

const DEFAULT_SIZES: [usize; 6] = [16, 64, 128, 736, 1440, 16384];
/// Ethernet header (dst ‖ src ‖ EtherType) in front of the payload of a plain frame.
const ETH_HEADER: usize = 14;
/// Largest payload accepted by `--sizes`.
const MAX_SIZE: usize = 65535;
/// Cap on the verify ring, so the frames stay in cache.
const RING_BYTES: usize = 512 * 1024;
/// Replay window of the verifying SA (the `frame verify` default).
const REPLAY_WINDOW: u32 = 64;
/// HMAC key length (the experiments of seeds 000/001 use 64 bytes).
const MAC_KEY_LEN: usize = 64;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "MB/s counts payload bytes (10^6 per MB), like `openssl speed -bytes N`.\n\
Example:\n  ivnsec crypto-bench --suite aes128-gcm --suite chacha20-poly1305 --suite hmac-sha256 \\\n      --provider fast --vs-openssl"
)]
pub struct Args {
    /// Profile to measure: a suite name (its default level) or `suite/auth`, `suite/conf`, a
    /// MACsec cipher suite (`macsec-gcm-aes-128`, …), an ESP transform (`esp-aes128-gcm`, …) or
    /// a SecOC profile (`secoc-cmac-aes128`, `secoc-hmac-sha256`); repeatable or
    /// comma-separated. Default: every profile (`ivnsec suites`), every MACsec cipher suite, every
    /// ESP transform and every SecOC profile.
    #[arg(long = "suite", value_name = "S", value_delimiter = ',')]
    suites: Vec<String>,
    /// Payload sizes in bytes (1-65535), comma-separated.
    #[arg(long, value_delimiter = ',', value_name = "N,…", default_values_t = DEFAULT_SIZES)]
    sizes: Vec<usize>,
    /// Crypto provider: portable, fast, auto (fast when it has the suite) or all (each provider
    /// that has the suite).
    #[arg(long, default_value = "all", value_parser = ["portable", "fast", "auto", "all"])]
    provider: String,
    /// Also run `openssl speed` for the profiles with a single OpenSSL equivalent and print the
    /// ratio ivnsec/OpenSSL (MB/s of protect vs OpenSSL's).
    #[arg(long)]
    vs_openssl: bool,
    /// Print `{"results":[…]}` JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Short runs (5 batches of ~0.2 ms): for tests and smoke runs; figures are noisier.
    #[arg(long)]
    quick: bool,
    /// Timed batches per measurement [default: 31, 5 with --quick].
    #[arg(long, value_name = "K")]
    batches: Option<u32>,
    /// Target duration of one batch in milliseconds [default: 3, 0.2 with --quick].
    #[arg(long, value_name = "MS")]
    batch_ms: Option<f64>,
    /// Seconds per `openssl speed` run (OpenSSL accepts whole seconds only).
    #[arg(long, default_value_t = 1, value_name = "S")]
    openssl_seconds: u32,
}

/// What one measurement is configured with.
#[derive(Clone, Copy, Debug)]
struct Timing {
    batches: usize,
    batch_ns: f64,
}

/// ns per frame over the timed batches.
#[derive(Clone, Copy, Debug, Serialize)]
struct Stats {
    min: f64,
    median: f64,
    mean: f64,
    max: f64,
}

impl Stats {
    fn from(mut v: Vec<f64>) -> Stats {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Stats {
            min: v[0],
            median,
            mean: v.iter().sum::<f64>() / n as f64,
            max: v[n - 1],
        }
    }
}

#[derive(Serialize)]
struct Row {
    /// `ivn-ae`, `macsec`, `esp` or `secoc`.
    protocol: &'static str,
    suite: String,
    level: &'static str,
    profile: String,
    provider: &'static str,
    size: usize,
    plain_frame_len: usize,
    protected_frame_len: usize,
    protect_ns: f64,
    protect_ns_min: f64,
    protect_ns_median: f64,
    protect_ns_max: f64,
    verify_ns: f64,
    verify_ns_min: f64,
    verify_ns_median: f64,
    verify_ns_max: f64,
    protect_mbps: f64,
    verify_mbps: f64,
    protect_mbps_median: f64,
    verify_mbps_median: f64,
    protect_mbps_cpu: Option<f64>,
    /// Bare AEAD seal / open of `size` bytes, ns (median); null without an AEAD over the payload.
    bare_aead_ns: Option<f64>,
    bare_aead_open_ns: Option<f64>,
    /// (protect − bare seal) / bare seal × 100 and (verify − bare open) / bare open × 100, medians.
    overhead_pct: Option<f64>,
    verify_overhead_pct: Option<f64>,
    protect_cycles_per_byte_est: Option<f64>,
    verify_cycles_per_byte_est: Option<f64>,
    batches: usize,
    protect_frames_per_batch: usize,
    verify_frames_per_batch: usize,
    openssl_cmd: Option<String>,
    openssl_mbps: Option<f64>,
    openssl_stream_mbps: Option<f64>,
    ratio_vs_openssl: Option<f64>,
    ratio_vs_openssl_median: Option<f64>,
    ratio_vs_openssl_mean: Option<f64>,
    ratio_vs_openssl_stream: Option<f64>,
    openssl_note: Option<String>,
}

#[derive(Serialize)]
struct Meta {
    batches: usize,
    batch_ms: f64,
    cpu_mhz: Option<f64>,
    openssl_version: Option<String>,
    openssl_seconds: Option<u32>,
    mbps_counts: &'static str,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let profiles = parse_targets(&args.suites)?;
    for &s in &args.sizes {
        if s == 0 || s > MAX_SIZE {
            return Err(usage(format!(
                "--sizes: {s} is out of range (payload sizes are 1-{MAX_SIZE} bytes)"
            )));
        }
    }
    let timing = Timing {
        batches: args
            .batches
            .map_or(if args.quick { 5 } else { 31 }, |b| b as usize),
        batch_ns: args.batch_ms.unwrap_or(if args.quick { 0.2 } else { 3.0 }) * 1e6,
    };
    if timing.batches == 0 || !(timing.batch_ns.is_finite() && timing.batch_ns > 0.0) {
        return Err(usage("--batches and --batch-ms must be positive"));
    }
    if args.openssl_seconds == 0 {
        return Err(usage("--openssl-seconds must be at least 1"));
    }
    let jobs = plan(&profiles, &args.provider, !args.suites.is_empty())?;
    let openssl_version = if args.vs_openssl {
        Some(openssl_version()?)
    } else {
        None
    };
    let cpu_mhz = cpu_mhz();

    let mut openssl = OpensslCache::new(args.openssl_seconds);
    let mut rows = Vec::new();
    let mut out = std::io::stdout().lock();
    if !args.json {
        print_header(&mut out, args.vs_openssl)?;
    }
    for (profile, provs) in &jobs {
        for &size in &args.sizes {
            for prov in provs {
                let equivalent = match profile {
                    Target::Ivn(p) if args.vs_openssl => openssl_equivalent(*p),
                    _ => None,
                };
                let cpu_seconds = equivalent.as_ref().map(|_| f64::from(args.openssl_seconds));
                let (p, v, meta) = match *profile {
                    Target::Ivn(pr) => measure(prov, pr, size, timing, cpu_seconds),
                    Target::Macsec(cs) => measure_macsec(prov, cs, size, timing, cpu_seconds),
                    Target::Esp(alg) => measure_esp(prov, alg, size, timing, cpu_seconds),
                    Target::Secoc(alg) => measure_secoc(prov, alg, size, timing, cpu_seconds),
                }
                .with_context(|| format!("{profile} on provider {} at {size} bytes", prov.name))?;
                let bare = match bare_aead_for(*profile) {
                    Some((alg, aad_len)) => Some(
                        measure_bare_aead(prov, alg, aad_len, size, timing).with_context(|| {
                            format!("bare {alg:?} on provider {} at {size} bytes", prov.name)
                        })?,
                    ),
                    None => None,
                };
                let pct = |framed: f64, bare: f64| (framed - bare) / bare * 100.0;
                let mbps = |ns: f64| size as f64 / ns * 1e3;
                let cpb = |ns: f64| cpu_mhz.map(|mhz| ns * mhz / 1e3 / size as f64);
                let mut row = Row {
                    protocol: profile.protocol(),
                    suite: profile.suite_name(),
                    level: profile.level_name(),
                    profile: profile.to_string(),
                    provider: prov.name,
                    size,
                    plain_frame_len: meta.plain_len,
                    protected_frame_len: meta.protected_len,
                    protect_ns: p.mean,
                    protect_ns_min: p.min,
                    protect_ns_median: p.median,
                    protect_ns_max: p.max,
                    verify_ns: v.mean,
                    verify_ns_min: v.min,
                    verify_ns_median: v.median,
                    verify_ns_max: v.max,
                    protect_mbps: mbps(p.mean),
                    verify_mbps: mbps(v.mean),
                    protect_mbps_median: mbps(p.median),
                    verify_mbps_median: mbps(v.median),
                    protect_mbps_cpu: meta.protect_cpu_ns.map(mbps),
                    bare_aead_ns: bare.map(|(s, _)| s.median),
                    bare_aead_open_ns: bare.map(|(_, o)| o.median),
                    overhead_pct: bare.map(|(s, _)| pct(p.median, s.median)),
                    verify_overhead_pct: bare.map(|(_, o)| pct(v.median, o.median)),
                    protect_cycles_per_byte_est: cpb(p.mean),
                    verify_cycles_per_byte_est: cpb(v.mean),
                    batches: timing.batches,
                    protect_frames_per_batch: meta.protect_m,
                    verify_frames_per_batch: meta.verify_m,
                    openssl_cmd: None,
                    openssl_mbps: None,
                    openssl_stream_mbps: None,
                    ratio_vs_openssl: None,
                    ratio_vs_openssl_median: None,
                    ratio_vs_openssl_mean: None,
                    ratio_vs_openssl_stream: None,
                    openssl_note: None,
                };
                if args.vs_openssl {
                    // Same clock as OpenSSL (CPU time) when /proc has it, else the median batch.
                    let ours = row.protect_mbps_cpu.unwrap_or(row.protect_mbps_median);
                    match equivalent {
                        None => row.openssl_note = Some("no single OpenSSL equivalent".into()),
                        Some(eq) => {
                            let (cmd, r) = openssl.get(eq.per_message, size);
                            row.openssl_cmd = Some(cmd);
                            match r {
                                Ok(o) => {
                                    row.openssl_mbps = Some(o);
                                    row.ratio_vs_openssl = Some(ours / o);
                                    row.ratio_vs_openssl_median = Some(row.protect_mbps_median / o);
                                    row.ratio_vs_openssl_mean = Some(row.protect_mbps / o);
                                    if row.protect_mbps_cpu.is_none() {
                                        row.openssl_note = Some(
                                            "no thread CPU time: ratio from the median batch"
                                                .into(),
                                        );
                                    }
                                }
                                Err(e) => row.openssl_note = Some(e),
                            }
                            if let Some(stream) = eq.stream {
                                match openssl.get(stream, size).1 {
                                    Ok(o) => {
                                        row.openssl_stream_mbps = Some(o);
                                        row.ratio_vs_openssl_stream = Some(ours / o);
                                    }
                                    Err(e) => {
                                        let note = row
                                            .openssl_note
                                            .take()
                                            .map_or(String::new(), |n| n + "; ");
                                        row.openssl_note = Some(format!("{note}stream: {e}"));
                                    }
                                }
                            }
                        }
                    }
                }
                if !args.json {
                    print_row(&mut out, &row, args.vs_openssl)?;
                    out.flush()?;
                }
                rows.push(row);
            }
        }
    }
    if args.json {
        let meta = Meta {
            batches: timing.batches,
            batch_ms: timing.batch_ns / 1e6,
            cpu_mhz,
            openssl_version,
            openssl_seconds: args.vs_openssl.then_some(args.openssl_seconds),
            mbps_counts: "payload bytes per second / 1e6 (as openssl speed -bytes N)",
        };
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({ "meta": meta, "results": rows }),
        )?;
        writeln!(out)?;
    } else if args.vs_openssl {
        writeln!(
            out,
            "\nopenssl: {}; MB/s = payload bytes/s / 1e6; OpenSSL per message = `openssl speed -aead -evp` \
(AEAD) or `-hmac` (HMAC), \
per CPU second; stream = `openssl speed -evp` (no per-message tag). ratio cpu = ivnsec protect MB/s per CPU \
second (p MB/s cpu) / OpenSSL msg MB/s; ratio median/mean = wall-clock batches / OpenSSL.",
            openssl_version.as_deref().unwrap_or("?")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--suite` names: an IVN-AE profile, a MACsec cipher suite, an ESP transform or a SecOC
/// profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Ivn(IvnAeProfile),
    Macsec(CipherSuite),
    Esp(EspAlg),
    Secoc(SecocAlg),
}

impl Target {
    fn protocol(self) -> &'static str {
        match self {
            Target::Ivn(_) => "ivn-ae",
            Target::Macsec(_) => "macsec",
            Target::Esp(_) => "esp",
            Target::Secoc(_) => "secoc",
        }
    }

    fn suite_name(self) -> String {
        match self {
            Target::Ivn(p) => p.suite.to_string(),
            Target::Macsec(c) => c.profile().to_string(),
            Target::Esp(a) => a.name().to_string(),
            Target::Secoc(a) => a.name().to_string(),
        }
    }

    fn level_name(self) -> &'static str {
        match self {
            Target::Ivn(p) => p.level.name(),
            // The benchmark runs MACsec with confidentiality (E = C = 1).
            Target::Macsec(_) => "conf",
            Target::Esp(a) if a.confidential() => "conf",
            Target::Esp(_) => "auth",
            Target::Secoc(_) => "auth",
        }
    }

    fn supported_by(self, prov: &CryptoProvider) -> bool {
        match self {
            Target::Ivn(p) => providers::has_suite(prov, p.suite),
            Target::Macsec(c) => prov.supports(Primitive::Aead(c.aead())),
            Target::Esp(a) => a.supported_by(prov),
            Target::Secoc(a) => a.supported_by(prov),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Ivn(p) => p.fmt(f),
            Target::Macsec(c) => f.write_str(c.profile()),
            Target::Esp(a) => f.write_str(a.name()),
            Target::Secoc(a) => f.write_str(a.name()),
        }
    }
}

/// The bare AEAD (and its AAD length) a target's framing is compared with: the AEAD that
/// encrypts the payload. `None` when there is none (HMAC, CRC, CBC-HMAC, NULL, auth level).
fn bare_aead_for(t: Target) -> Option<(AeadAlg, usize)> {
    match t {
        Target::Ivn(p) => match p.suite {
            // The IVN-AE header (12 bytes) is the AAD at the conf level.
            Suite::Aead(a) if p.level == Level::Conf => Some((a, 12)),
            _ => None,
        },
        // SecTAG without SCI (8) ‖ destination and source MAC (12).
        Target::Macsec(c) => Some((c.aead(), 20)),
        // SPI ‖ sequence number.
        Target::Esp(a) => match a {
            EspAlg::Aes128Gcm => Some((AeadAlg::Aes128Gcm, 8)),
            EspAlg::Aes256Gcm => Some((AeadAlg::Aes256Gcm, 8)),
            EspAlg::ChaCha20Poly1305 => Some((AeadAlg::ChaCha20Poly1305, 8)),
            _ => None,
        },
        Target::Secoc(_) => None,
    }
}

fn parse_targets(names: &[String]) -> Result<Vec<Target>> {
    if names.is_empty() {
        return Ok(IvnAeProfile::all()
            .map(Target::Ivn)
            .chain(CipherSuite::ALL.into_iter().map(Target::Macsec))
            .chain(EspAlg::ALL.into_iter().map(Target::Esp))
            .chain(SecocAlg::ALL.into_iter().map(Target::Secoc))
            .collect());
    }
    let mut out: Vec<Target> = Vec::new();
    for n in names {
        let t = if n.starts_with("macsec-") {
            Target::Macsec(CipherSuite::from_profile(n).ok_or_else(|| {
                let all: Vec<&str> = CipherSuite::ALL.iter().map(|c| c.profile()).collect();
                usage(format!(
                    "--suite '{n}': unknown MACsec cipher suite (expected one of {})",
                    all.join(", ")
                ))
            })?)
        } else if n.starts_with("esp-") {
            Target::Esp(EspAlg::from_name(n).ok_or_else(|| {
                let all: Vec<&str> = EspAlg::ALL.iter().map(|a| a.name()).collect();
                usage(format!(
                    "--suite '{n}': unknown ESP transform (expected one of {})",
                    all.join(", ")
                ))
            })?)
        } else if n.starts_with("secoc-") {
            Target::Secoc(SecocAlg::from_name(n).ok_or_else(|| {
                let all: Vec<&str> = SecocAlg::ALL.iter().map(|a| a.name()).collect();
                usage(format!(
                    "--suite '{n}': unknown SecOC profile (expected one of {})",
                    all.join(", ")
                ))
            })?)
        } else {
            Target::Ivn(n.parse().map_err(|e| {
                usage(format!(
                    "--suite '{n}': {e} (`ivnsec suites` lists the profiles)"
                ))
            })?)
        };
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// The providers to run for each target. With explicit suites, a named provider that lacks one
/// is an error; with the default (every profile) such combinations are skipped.
fn plan(
    targets: &[Target],
    provider: &str,
    explicit: bool,
) -> Result<Vec<(Target, Vec<&'static CryptoProvider>)>> {
    let mut jobs = Vec::new();
    for &t in targets {
        let provs: Vec<&'static CryptoProvider> = if provider == "all" {
            PROVIDERS
                .iter()
                .copied()
                .filter(|pr| t.supported_by(pr))
                .collect()
        } else {
            let choice: ProviderChoice = provider.parse().map_err(usage)?;
            let picked = match t {
                Target::Ivn(p) => providers::select(choice, p.suite),
                _ => {
                    let fast: &'static CryptoProvider = &ivnsec_crypto_fast::PROVIDER;
                    let portable: &'static CryptoProvider = &ivnsec_crypto_portable::PROVIDER;
                    let pr = match choice {
                        ProviderChoice::Portable => portable,
                        ProviderChoice::Fast => fast,
                        ProviderChoice::Auto if t.supported_by(fast) => fast,
                        ProviderChoice::Auto => portable,
                    };
                    if t.supported_by(pr) {
                        Ok(pr)
                    } else {
                        Err(format!(
                            "provider '{}' does not implement {t}; use --provider portable or auto",
                            pr.name
                        ))
                    }
                }
            };
            match picked {
                Ok(pr) => vec![pr],
                Err(e) if explicit => return Err(usage(e)),
                Err(_) => Vec::new(),
            }
        };
        if !provs.is_empty() {
            jobs.push((t, provs));
        }
    }
    if jobs.is_empty() {
        return Err(usage(
            "nothing to measure: no selected provider has the selected suites",
        ));
    }
    Ok(jobs)
}

struct MeasureMeta {
    plain_len: usize,
    protected_len: usize,
    protect_m: usize,
    verify_m: usize,
    /// Protect ns/frame of CPU time (see the module doc), when asked for and measurable.
    protect_cpu_ns: Option<f64>,
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

/// Protect and verify statistics for one (provider, profile, size).
fn measure(
    prov: &CryptoProvider,
    profile: IvnAeProfile,
    size: usize,
    t: Timing,
    cpu_seconds: Option<f64>,
) -> Result<(Stats, Stats, MeasureMeta)> {
    let (key, mac_key) = keys_for(profile.suite);
    let params = SaParams::new(profile, &key, &mac_key);
    let plain_len = ETH_HEADER + size;

    // Protect: one buffer, protected over and over.
    let mut tx = IvnAeTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let protected_len = tx.protected_len(plain_len);
    let mut buf = plain_frame(plain_len, protected_len);
    let mut protect_batch = |m: usize| -> Result<f64> {
        let t0 = Instant::now();
        for _ in 0..m {
            tx.protect_in_place(black_box(&mut buf), plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let ns = t0.elapsed().as_nanos() as f64;
        black_box(&buf);
        Ok(ns)
    };
    let protect_m = calibrate(&mut protect_batch, t.batch_ns, usize::MAX)?;
    protect_batch(protect_m)?;
    let mut samples = Vec::with_capacity(t.batches);
    for _ in 0..t.batches {
        samples.push(protect_batch(protect_m)? / protect_m as f64);
    }
    let protect = Stats::from(samples);
    let protect_cpu_ns = match cpu_seconds {
        Some(secs) => cpu_time_per_frame(&mut protect_batch, protect_m, secs)?,
        None => None,
    };

    // Verify: a ring of frames with increasing sequence numbers, refilled (untimed) per batch.
    let mut tx = IvnAeTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx = IvnAeRx::new(prov, &params, REPLAY_WINDOW).map_err(|e| anyhow!("SA: {e}"))?;
    let stride = protected_len.div_ceil(64) * 64;
    let ring_max = (RING_BYTES / stride).max(1);
    let mut ring = vec![0u8; stride * ring_max];
    for slot in ring.chunks_exact_mut(stride) {
        slot[..plain_len].copy_from_slice(&plain_frame(plain_len, plain_len));
    }
    let mut verify_batch = |m: usize| -> Result<f64> {
        for slot in ring.chunks_exact_mut(stride).take(m) {
            // The slot holds the previous frame's leftovers; protect does not parse the plain
            // frame, and its cost does not depend on the bytes, only on the length.
            let n = tx
                .protect_in_place(slot, plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
            debug_assert_eq!(n, protected_len);
        }
        let t0 = Instant::now();
        for slot in ring.chunks_exact_mut(stride).take(m) {
            let r = rx.verify_in_place(black_box(&mut slot[..protected_len]));
            if let Err(e) = r {
                return Err(anyhow!("verify dropped a frame: {e}"));
            }
            black_box(r.ok());
        }
        Ok(t0.elapsed().as_nanos() as f64)
    };
    let verify_m = calibrate(&mut verify_batch, t.batch_ns, ring_max)?;
    verify_batch(verify_m)?;
    let mut samples = Vec::with_capacity(t.batches);
    for _ in 0..t.batches {
        samples.push(verify_batch(verify_m)? / verify_m as f64);
    }
    let verify = Stats::from(samples);
    Ok((
        protect,
        verify,
        MeasureMeta {
            plain_len,
            protected_len,
            protect_m,
            verify_m,
            protect_cpu_ns,
        },
    ))
}

/// Calibration (also the warm-up), one untimed batch, then `t.batches` timed ones: ns per frame
/// and the frames per batch.
fn timed_batches(
    batch: &mut dyn FnMut(usize) -> Result<f64>,
    t: Timing,
    max_m: usize,
) -> Result<(Stats, usize)> {
    let m = calibrate(batch, t.batch_ns, max_m)?;
    batch(m)?;
    let mut samples = Vec::with_capacity(t.batches);
    for _ in 0..t.batches {
        samples.push(batch(m)? / m as f64);
    }
    Ok((Stats::from(samples), m))
}

/// A ring of `stride`-byte slots capped at [`RING_BYTES`]: (buffer, number of slots).
fn ring_for(stride: usize) -> (Vec<u8>, usize) {
    let stride = stride.div_ceil(64) * 64;
    let n = (RING_BYTES / stride).max(1);
    (vec![0u8; stride * n], n)
}

fn key_bytes(len: usize, x: u8) -> Vec<u8> {
    (0..len).map(|i| x ^ i as u8).collect()
}

/// Whole-frame MACsec protect and verify (confidentiality, no SCI in the SecTAG).
fn measure_macsec(
    prov: &CryptoProvider,
    suite: CipherSuite,
    size: usize,
    t: Timing,
    cpu_seconds: Option<f64>,
) -> Result<(Stats, Stats, MeasureMeta)> {
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
    let mut buf = plain_frame(plain_len, protected_len);
    let mut protect_batch = |m: usize| -> Result<f64> {
        let t0 = Instant::now();
        for _ in 0..m {
            // protect does not parse the frame: the leftovers of the previous call are as good.
            tx.protect_in_place(black_box(&mut buf), plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let ns = t0.elapsed().as_nanos() as f64;
        black_box(&buf);
        Ok(ns)
    };
    let (protect, protect_m) = timed_batches(&mut protect_batch, t, usize::MAX)?;
    let protect_cpu_ns = match cpu_seconds {
        Some(secs) => cpu_time_per_frame(&mut protect_batch, protect_m, secs)?,
        None => None,
    };

    let mut tx = MacsecTx::new(prov, &kp, tx_opts, 1).map_err(|e| anyhow!("SA: {e}"))?;
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
    let plain = plain_frame(plain_len, plain_len);
    let mut verify_batch = |m: usize| -> Result<f64> {
        for slot in ring.chunks_exact_mut(stride).take(m) {
            slot[..plain_len].copy_from_slice(&plain);
            tx.protect_in_place(slot, plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let t0 = Instant::now();
        for slot in ring.chunks_exact_mut(stride).take(m) {
            let r = rx.verify_in_place(black_box(&mut slot[..protected_len]));
            if let Err(e) = r {
                return Err(anyhow!("verify dropped a frame: {e}"));
            }
            black_box(r.ok());
        }
        Ok(t0.elapsed().as_nanos() as f64)
    };
    let (verify, verify_m) = timed_batches(&mut verify_batch, t, ring_max)?;
    Ok((
        protect,
        verify,
        MeasureMeta {
            plain_len,
            protected_len,
            protect_m,
            verify_m,
            protect_cpu_ns,
        },
    ))
}

/// IPv4 (192.0.2.1 → 192.0.2.2) / UDP packet with `size` payload bytes.
fn ipv4_udp(size: usize) -> Vec<u8> {
    let total = 20 + 8 + size;
    let mut p = vec![0u8; total];
    p[..12].copy_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0x12,
        0x34,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    p[12..20].copy_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
    ip::fill_ipv4_checksum(&mut p[..20]);
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
fn measure_esp(
    prov: &CryptoProvider,
    alg: EspAlg,
    size: usize,
    t: Timing,
    cpu_seconds: Option<f64>,
) -> Result<(Stats, Stats, MeasureMeta)> {
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
    let mut buf = vec![0u8; cap];
    buf[..plain_len].copy_from_slice(&packet);
    let protected_len = tx
        .protect_in_place(&mut buf, plain_len, None)
        .map_err(|e| anyhow!("protect: {e}"))?;
    let mut protect_batch = |m: usize| -> Result<f64> {
        let t0 = Instant::now();
        for _ in 0..m {
            // protect parses the IPv4 header: put the plain one back (20 bytes, timed). The rest
            // is the previous packet's leftovers; the cost depends on the length only.
            buf[..20].copy_from_slice(&packet[..20]);
            tx.protect_in_place(black_box(&mut buf), plain_len, None)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let ns = t0.elapsed().as_nanos() as f64;
        black_box(&buf);
        Ok(ns)
    };
    let (protect, protect_m) = timed_batches(&mut protect_batch, t, usize::MAX)?;
    let protect_cpu_ns = match cpu_seconds {
        Some(secs) => cpu_time_per_frame(&mut protect_batch, protect_m, secs)?,
        None => None,
    };

    let mut tx =
        EspTx::new(prov, &params, EspMode::Transport, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx = EspRx::new(prov, &params, REPLAY_WINDOW).map_err(|e| anyhow!("SA: {e}"))?;
    let (mut ring, ring_max) = ring_for(cap);
    let stride = ring.len() / ring_max;
    let mut lens = vec![0usize; ring_max];
    let mut verify_batch = |m: usize| -> Result<f64> {
        for (slot, len) in ring.chunks_exact_mut(stride).zip(lens.iter_mut()).take(m) {
            slot[..plain_len].copy_from_slice(&packet);
            *len = tx
                .protect_in_place(slot, plain_len, None)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let t0 = Instant::now();
        for (slot, &len) in ring.chunks_exact_mut(stride).zip(lens.iter()).take(m) {
            let r = rx.verify_in_place(black_box(&mut slot[..len]));
            if let Err(e) = r {
                return Err(anyhow!("verify dropped a packet: {e}"));
            }
            black_box(r.ok());
        }
        Ok(t0.elapsed().as_nanos() as f64)
    };
    let (verify, verify_m) = timed_batches(&mut verify_batch, t, ring_max)?;
    Ok((
        protect,
        verify,
        MeasureMeta {
            plain_len,
            protected_len,
            protect_m,
            verify_m,
            protect_cpu_ns,
        },
    ))
}

/// SecOC protect (appending the authentication information to a `size`-byte Authentic I-PDU)
/// and verify, default lengths, Data ID 0x0123.
fn measure_secoc(
    prov: &CryptoProvider,
    alg: SecocAlg,
    size: usize,
    t: Timing,
    cpu_seconds: Option<f64>,
) -> Result<(Stats, Stats, MeasureMeta)> {
    let key = key_bytes(alg.key_len().unwrap_or(32), 0x55);
    let params = SecocParams::new(alg, &key, 0x0123);
    let plain_len = size;
    let mut tx = SecocTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let protected_len = tx.secured_len(plain_len);
    let mut buf = key_bytes(protected_len, 0x66);
    let mut protect_batch = |m: usize| -> Result<f64> {
        let t0 = Instant::now();
        for _ in 0..m {
            tx.protect_in_place(black_box(&mut buf), plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let ns = t0.elapsed().as_nanos() as f64;
        black_box(&buf);
        Ok(ns)
    };
    let (protect, protect_m) = timed_batches(&mut protect_batch, t, usize::MAX)?;
    let protect_cpu_ns = match cpu_seconds {
        Some(secs) => cpu_time_per_frame(&mut protect_batch, protect_m, secs)?,
        None => None,
    };

    let mut tx = SecocTx::new(prov, &params, 1).map_err(|e| anyhow!("SA: {e}"))?;
    let mut rx =
        SecocRx::new(prov, &params, SecocRxOptions::default()).map_err(|e| anyhow!("SA: {e}"))?;
    let (mut ring, ring_max) = ring_for(protected_len);
    let stride = ring.len() / ring_max;
    let pdu = key_bytes(plain_len, 0x77);
    let mut verify_batch = |m: usize| -> Result<f64> {
        for slot in ring.chunks_exact_mut(stride).take(m) {
            slot[..plain_len].copy_from_slice(&pdu);
            tx.protect_in_place(slot, plain_len)
                .map_err(|e| anyhow!("protect: {e}"))?;
        }
        let t0 = Instant::now();
        for slot in ring.chunks_exact(stride).take(m) {
            let r = rx.verify(black_box(&slot[..protected_len]));
            if let Err(e) = r {
                return Err(anyhow!("verify dropped a PDU: {e}"));
            }
            black_box(r.ok());
        }
        Ok(t0.elapsed().as_nanos() as f64)
    };
    let (verify, verify_m) = timed_batches(&mut verify_batch, t, ring_max)?;
    Ok((
        protect,
        verify,
        MeasureMeta {
            plain_len,
            protected_len,
            protect_m,
            verify_m,
            protect_cpu_ns,
        },
    ))
}

/// Bare AEAD seal (in place on one buffer) and open (over a ring of sealed buffers with
/// increasing nonces) of `size` bytes with `aad_len` bytes of AAD: ns per call.
fn measure_bare_aead(
    prov: &CryptoProvider,
    alg: AeadAlg,
    aad_len: usize,
    size: usize,
    t: Timing,
) -> Result<(Stats, Stats)> {
    let key = prov
        .keys
        .aead(alg, &key_bytes(alg.key_len(), 0x44))
        .map_err(|e| anyhow!("AEAD key: {e}"))?;
    let aad = key_bytes(aad_len, 0x55);
    let nonce_of = |n: u64| {
        let mut nonce = [0u8; AEAD_NONCE_LEN];
        nonce[4..].copy_from_slice(&n.to_be_bytes());
        nonce
    };
    let mut counter = 0u64;
    let mut buf: Vec<u8> = (0..size).map(|i| i as u8).collect();
    let mut seal_batch = |m: usize| -> Result<f64> {
        let t0 = Instant::now();
        for _ in 0..m {
            counter += 1;
            let mut tag = [0u8; AEAD_TAG_LEN];
            key.seal_in_place(&nonce_of(counter), &aad, black_box(&mut buf), &mut tag)
                .map_err(|e| anyhow!("seal: {e}"))?;
            black_box(&tag);
        }
        let ns = t0.elapsed().as_nanos() as f64;
        black_box(&buf);
        Ok(ns)
    };
    let (seal, _) = timed_batches(&mut seal_batch, t, usize::MAX)?;

    let (mut ring, ring_max) = ring_for(size + AEAD_TAG_LEN);
    let stride = ring.len() / ring_max;
    let mut counter = 0u64;
    let mut open_batch = |m: usize| -> Result<f64> {
        let first = counter;
        for slot in ring.chunks_exact_mut(stride).take(m) {
            counter += 1;
            let (data, rest) = slot.split_at_mut(size);
            let tag: &mut [u8; AEAD_TAG_LEN] =
                (&mut rest[..AEAD_TAG_LEN]).try_into().expect("tag slice");
            key.seal_in_place(&nonce_of(counter), &aad, data, tag)
                .map_err(|e| anyhow!("seal: {e}"))?;
        }
        let mut n = first;
        let t0 = Instant::now();
        for slot in ring.chunks_exact_mut(stride).take(m) {
            n += 1;
            let (data, rest) = slot.split_at_mut(size);
            let tag: &[u8; AEAD_TAG_LEN] = (&rest[..AEAD_TAG_LEN]).try_into().expect("tag slice");
            let r = key.open_in_place(&nonce_of(n), &aad, black_box(data), tag);
            if let Err(e) = r {
                return Err(anyhow!("open failed: {e}"));
            }
        }
        Ok(t0.elapsed().as_nanos() as f64)
    };
    let (open, _) = timed_batches(&mut open_batch, t, ring_max)?;
    Ok((seal, open))
}

/// ns of this thread's CPU time per frame, over at least `secs` of CPU time, counted from one
/// clock tick to another (like `openssl speed`, whose figures divide by CPU time). `None` when
/// /proc/thread-self/stat is unavailable or the machine is so busy that the CPU time does not
/// accumulate within 20 × `secs` of wall time.
fn cpu_time_per_frame(
    batch: &mut dyn FnMut(usize) -> Result<f64>,
    m: usize,
    secs: f64,
) -> Result<Option<f64>> {
    let Some(mut start) = thread_cpu_ticks() else {
        return Ok(None);
    };
    let target = (secs * CLK_TCK as f64).ceil() as u64;
    let wall = Instant::now();
    let deadline = secs * 20.0;
    // Start on a tick boundary.
    loop {
        batch(m.div_ceil(8))?;
        match thread_cpu_ticks() {
            Some(t) if t != start => {
                start = t;
                break;
            }
            Some(_) if wall.elapsed().as_secs_f64() < deadline => {}
            _ => return Ok(None),
        }
    }
    let mut frames = 0u64;
    loop {
        batch(m)?;
        frames += m as u64;
        let now = thread_cpu_ticks().ok_or_else(|| anyhow!("/proc/thread-self/stat vanished"))?;
        if now - start >= target {
            return Ok(Some(
                (now - start) as f64 * 1e9 / CLK_TCK as f64 / frames as f64,
            ));
        }
        if wall.elapsed().as_secs_f64() >= deadline {
            return Ok(None);
        }
    }
}

/// Linux USER_HZ: the unit of the times in /proc/*/stat (100 on every mainstream architecture).
const CLK_TCK: u64 = 100;

/// utime + stime of the calling thread, in `CLK_TCK` ticks.
fn thread_cpu_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: split after it.
    let rest = s.get(s.rfind(')')? + 1..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts with field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A plain frame (dst ‖ src ‖ EtherType 0x0800 ‖ payload) in a buffer of `cap` ≥ its length.
fn plain_frame(plain_len: usize, cap: usize) -> Vec<u8> {
    let mut b = vec![0u8; cap.max(plain_len)];
    b[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    b[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    b[12..14].copy_from_slice(&[0x08, 0x00]);
    for (i, x) in b[14..plain_len].iter_mut().enumerate() {
        *x = i as u8;
    }
    b
}

/// Frames per batch so that one batch lasts about `target_ns` (at most `max_m`). Doubles the
/// batch until it takes a quarter of the target, then scales; this also warms up.
fn calibrate(
    batch: &mut dyn FnMut(usize) -> Result<f64>,
    target_ns: f64,
    max_m: usize,
) -> Result<usize> {
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

/// The `openssl speed` arguments equivalent to a profile.
struct Equivalent {
    /// Per message: AEAD init + AAD + encrypt + tag (`-aead -evp X`), or HMAC (`-hmac H`).
    per_message: &'static [&'static str],
    /// AEAD streaming encryption (`-evp X`: EVP_EncryptUpdate over the buffer, no per-message tag).
    stream: Option<&'static [&'static str]>,
}

fn openssl_equivalent(p: IvnAeProfile) -> Option<Equivalent> {
    use ivnsec_core::crypto::AeadAlg::*;
    let aead = |m: &'static [&'static str], s: &'static [&'static str]| {
        Some(Equivalent {
            per_message: m,
            stream: Some(s),
        })
    };
    let hmac = |m: &'static [&'static str]| {
        Some(Equivalent {
            per_message: m,
            stream: None,
        })
    };
    match p.suite {
        // Only the conf level encrypts N bytes; auth (GMAC-like, all AAD) has no speed equivalent.
        Suite::Aead(a) if p.level == Level::Conf => match a {
            Aes128Gcm => aead(&["-aead", "-evp", "aes-128-gcm"], &["-evp", "aes-128-gcm"]),
            Aes256Gcm => aead(&["-aead", "-evp", "aes-256-gcm"], &["-evp", "aes-256-gcm"]),
            Aes128Ccm => aead(&["-aead", "-evp", "aes-128-ccm"], &["-evp", "aes-128-ccm"]),
            Aes256Ccm => aead(&["-aead", "-evp", "aes-256-ccm"], &["-evp", "aes-256-ccm"]),
            ChaCha20Poly1305 => aead(
                &["-aead", "-evp", "chacha20-poly1305"],
                &["-evp", "chacha20-poly1305"],
            ),
            _ => None,
        },
        Suite::Hmac(h) => match h {
            HashFn::Md5 => hmac(&["-hmac", "md5"]),
            HashFn::Sha1 => hmac(&["-hmac", "sha1"]),
            HashFn::Sha224 => hmac(&["-hmac", "sha224"]),
            HashFn::Sha256 => hmac(&["-hmac", "sha256"]),
            HashFn::Sha3_256 => hmac(&["-hmac", "sha3-256"]),
        },
        _ => None,
    }
}

/// `openssl speed` arguments (after `speed -mr -seconds S -bytes N`).
type OpensslArgs = &'static [&'static str];

/// The command line run and its MB/s, or why there is none.
type OpensslResult = (String, Result<f64, String>);

/// `openssl speed` results by (arguments, size), so each runs once per invocation.
struct OpensslCache {
    seconds: u32,
    done: HashMap<(OpensslArgs, usize), OpensslResult>,
}

impl OpensslCache {
    fn new(seconds: u32) -> OpensslCache {
        OpensslCache {
            seconds,
            done: HashMap::new(),
        }
    }

    /// The command line and its MB/s (payload bytes / s / 1e6), or why there is none.
    fn get(&mut self, alg: OpensslArgs, size: usize) -> OpensslResult {
        let seconds = self.seconds;
        self.done
            .entry((alg, size))
            .or_insert_with(|| {
                let mut argv: Vec<String> = [
                    "speed",
                    "-mr",
                    "-seconds",
                    &seconds.to_string(),
                    "-bytes",
                    &size.to_string(),
                ]
                .map(String::from)
                .into();
                argv.extend(alg.iter().map(|s| s.to_string()));
                let cmd = format!("openssl {}", argv.join(" "));
                (cmd, run_openssl(&argv, size))
            })
            .clone()
    }
}

fn run_openssl(argv: &[String], size: usize) -> Result<f64, String> {
    let out = ivnsec_net::sys::die_with_parent(&mut Command::new("openssl"))
        .args(argv)
        .output()
        .map_err(|e| format!("cannot run openssl: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match parse_openssl_mr(&stdout, size) {
        Some(bps) if out.status.success() => Ok(bps / 1e6),
        _ => {
            let err = String::from_utf8_lossy(&out.stderr);
            let first = err
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no result line");
            Err(format!(
                "openssl speed failed ({}): {}",
                out.status,
                first.trim()
            ))
        }
    }
}

/// Bytes per second from `openssl speed -mr` output: the `+H:` line lists the sizes and the
/// `+F:` line the matching bytes/s (`+F:<idx>:<name>:<v1>:<v2>…`; the name may contain `:`
/// in no known case, but the values are taken from the end).
fn parse_openssl_mr(text: &str, size: usize) -> Option<f64> {
    let sizes: Vec<usize> = text
        .lines()
        .find_map(|l| l.strip_prefix("+H:"))
        .map(|h| h.split(':').filter_map(|s| s.trim().parse().ok()).collect())?;
    let pos = sizes.iter().position(|&s| s == size)?;
    let f = text.lines().find_map(|l| l.strip_prefix("+F:"))?;
    let fields: Vec<&str> = f.split(':').collect();
    let values = fields.get(fields.len().checked_sub(sizes.len())?..)?;
    let v: f64 = values.get(pos)?.trim().parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

fn openssl_version() -> Result<String> {
    match ivnsec_net::sys::die_with_parent(Command::new("openssl").arg("version")).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        Ok(o) => Err(anyhow::Error::new(EnvError(format!(
            "--vs-openssl: `openssl version` failed ({}); install OpenSSL or drop --vs-openssl",
            o.status
        )))),
        Err(e) => Err(anyhow::Error::new(EnvError(format!(
            "--vs-openssl needs the `openssl` command ({e}); install OpenSSL (e.g. apt-get install openssl) or drop --vs-openssl"
        )))),
    }
}

/// "cpu MHz" of the first processor in /proc/cpuinfo (Linux), for the cycles/byte estimate.
fn cpu_mhz() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| *v > 0.0)
}

fn print_header(out: &mut impl Write, vs_openssl: bool) -> Result<()> {
    write!(
        out,
        "{:<26} {:<8} {:>5} {:>24} {:>7} {:>7} {:>8} {:>8} {:>6} {:>7} {:>7} {:>7} {:>7}",
        "profile",
        "provider",
        "size",
        "protect ns min/mean/max",
        "p ns",
        "v ns",
        "p MB/s",
        "v MB/s",
        "cpb~",
        "bare s",
        "bare o",
        "p ovh",
        "v ovh"
    )?;
    if vs_openssl {
        write!(
            out,
            " {:>8} {:>9} {:>6} {:>6} {:>6} {:>9} {:>6}",
            "p MB/s", "ossl MB/s", "ratio", "ratio", "ratio", "ossl MB/s", "ratio"
        )?;
    }
    writeln!(out)?;
    write!(
        out,
        "{:<26} {:<8} {:>5} {:>24} {:>7} {:>7} {:>8} {:>8} {:>6} {:>7} {:>7} {:>7} {:>7}",
        "",
        "",
        "",
        "(wall clock)",
        "median",
        "mean",
        "mean",
        "mean",
        "est.",
        "ns med",
        "ns med",
        "% med",
        "% med"
    )?;
    if vs_openssl {
        write!(
            out,
            " {:>8} {:>9} {:>6} {:>6} {:>6} {:>9} {:>6}",
            "cpu", "msg", "cpu", "median", "mean", "stream", "stream"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

fn print_row(out: &mut impl Write, r: &Row, vs_openssl: bool) -> Result<()> {
    let opt = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
    let ns = format!(
        "{:.0}/{:.0}/{:.0}",
        r.protect_ns_min, r.protect_ns, r.protect_ns_max
    );
    let cpb = r
        .protect_cycles_per_byte_est
        .map_or("-".into(), |c| format!("{c:.2}"));
    write!(
        out,
        "{:<26} {:<8} {:>5} {:>24} {:>7.0} {:>7.0} {:>8.1} {:>8.1} {:>6} {:>7} {:>7} {:>7} {:>7}",
        r.profile,
        r.provider,
        r.size,
        ns,
        r.protect_ns_median,
        r.verify_ns,
        r.protect_mbps,
        r.verify_mbps,
        cpb,
        opt(r.bare_aead_ns, 0),
        opt(r.bare_aead_open_ns, 0),
        opt(r.overhead_pct, 1),
        opt(r.verify_overhead_pct, 1)
    )?;
    if vs_openssl {
        let f = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
        write!(
            out,
            " {:>8} {:>9} {:>6} {:>6} {:>6} {:>9} {:>6}",
            f(r.protect_mbps_cpu, 1),
            f(r.openssl_mbps, 1),
            f(r.ratio_vs_openssl, 2),
            f(r.ratio_vs_openssl_median, 2),
            f(r.ratio_vs_openssl_mean, 2),
            f(r.openssl_stream_mbps, 1),
            f(r.ratio_vs_openssl_stream, 2)
        )?;
        if let Some(n) = &r.openssl_note {
            write!(out, "  ({n})")?;
        }
    }
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_openssl_machine_readable() {
        let text = "+DT:AES-128-GCM:1:64\n+R:1694951:AES-128-GCM:0.640000\n+H:64\n+F:25:AES-128-GCM:169495100.00\n";
        assert_eq!(parse_openssl_mr(text, 64), Some(169495100.0));
        assert_eq!(parse_openssl_mr(text, 128), None);
        let hmac = "+H:16:64\n+F:9:hmac(sha256):1000.5:2000.25\n";
        assert_eq!(parse_openssl_mr(hmac, 64), Some(2000.25));
        assert_eq!(parse_openssl_mr("garbage", 64), None);
    }

    #[test]
    fn stats_order() {
        let s = Stats::from(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.min, s.median, s.mean, s.max), (1.0, 2.5, 4.0, 10.0));
    }

    #[test]
    fn equivalents_cover_the_targets() {
        for name in [
            "aes128-gcm",
            "aes256-gcm",
            "aes128-ccm",
            "chacha20-poly1305",
            "hmac-sha1",
            "hmac-sha256",
        ] {
            assert!(
                openssl_equivalent(name.parse().unwrap()).is_some(),
                "{name}"
            );
        }
        assert!(openssl_equivalent("aes128-gcm/auth".parse().unwrap()).is_none());
        assert!(openssl_equivalent("aes128-cbc-hmac-sha256".parse().unwrap()).is_none());
    }
}
