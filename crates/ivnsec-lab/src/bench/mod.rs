//! The crypto benchmark (`ivnsec crypto-bench`): protect and verify cost per profile, provider
//! and payload size, and (with `vs_openssl`) the ratio to `openssl speed` on the same machine in
//! the same run. This module holds what is measured (targets, the plan of providers, the rows);
//! [`measure`] the timed loops per family, [`openssl`] the `openssl speed` comparison and
//! [`cpu`] the thread CPU time and clock rate. The binary only parses options and prints rows.
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
//!   leaves out the time it was descheduled. For a like-for-like ratio, `vs_openssl` also runs
//!   protect for as long as OpenSSL runs (`openssl_seconds` of *CPU* time) and divides by this
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
//!   medians; `overhead_min_pct` and `verify_overhead_min_pct` the same from the fastest batch of
//!   each side (`protect_ns_min`, `bare_aead_ns_min`, …), the steadier figure on a shared machine
//!   (neighbours only add time). The `framing_…` variants compare with the bare AEAD of the
//!   bytes the framing really encrypts (`encrypted_len`). Transforms without an AEAD over the payload (ESP NULL/CBC-HMAC/GMAC, HMAC, CRC,
//!   auth-level) have null there.
//! - SecOC (`secoc-…`) profiles time `SecocTx::protect_in_place` on an Authentic I-PDU of "size"
//!   bytes (default lengths: 8-bit truncated FV of a 64-bit FV, 24-bit authenticator; the MAC runs
//!   over DataID ‖ PDU ‖ 8-byte FV) and `SecocRx::verify` over a ring of Secured I-PDUs with
//!   increasing freshness values. There is no bare-AEAD comparison (SecOC only authenticates).

pub mod chunks;
pub mod cpu;
pub mod measure;
pub mod openssl;
pub mod per_frame;
pub mod plan;
pub mod report;

use std::fmt;

use anyhow::{Context, Result};
use ivnsec_core::crypto::{self, AeadAlg, CryptoProvider, ProviderChoice};
use ivnsec_core::profile::{MacsecProfile, NamedProfile, Profile};
use ivnsec_core::sa::esp::{EspAlg, ICV_LEN as ESP_ICV_LEN};
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::sa::secoc::SecocAlg;
use ivnsec_core::suite::{IvnAeProfile, Level, Suite};
use ivnsec_core::wire::esp::HEADER_LEN as ESP_HEADER_LEN;
use ivnsec_crypto::PROVIDERS;
use serde::Serialize;

use crate::stats::quantile_sorted;
use ivnsec_node::error::usage;
use measure::{BareSpec, Extra};
use openssl::OpensslCache;

/// The payload sizes measured when none are given.
pub const DEFAULT_SIZES: [usize; 6] = [16, 64, 128, 736, 1440, 16384];
/// Largest payload accepted as a size.
pub const MAX_SIZE: usize = 65535;

/// Which providers measure each target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Providers {
    /// Each provider that implements the target.
    All,
    /// The one provider this choice selects (`auto`: the fastest that has the target).
    One(ProviderChoice),
}

/// What `ivnsec crypto-bench` is asked to measure, and for how long.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Profile names (`--suite`); empty: every IVN-AE profile, MACsec cipher suite, ESP transform
    /// and SecOC profile.
    pub suites: Vec<String>,
    /// Payload sizes in bytes (1 to [`MAX_SIZE`]).
    pub sizes: Vec<usize>,
    pub providers: Providers,
    /// Short runs (5 batches of ~0.2 ms) unless `batches` / `batch_ms` say otherwise.
    pub quick: bool,
    /// Timed batches per measurement [default: 31, 5 with `quick`].
    pub batches: Option<u32>,
    /// Target duration of one batch in milliseconds [default: 3, 0.2 with `quick`].
    pub batch_ms: Option<f64>,
    /// Also run `openssl speed` and fill the ratio fields.
    pub vs_openssl: bool,
    /// Seconds per `openssl speed` run (whole seconds, at least 1).
    pub openssl_seconds: u32,
    /// Also time this many frames one by one (protect and verify each): the min / mean / max a
    /// single frame takes (0: not measured; at most [`MAX_FRAMES`]).
    pub frames: u32,
}

/// What one measurement is configured with.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub batches: usize,
    pub batch_ns: f64,
    /// Frames protected and verified one by one after the batches (0: none).
    pub frames: usize,
}

/// Most frames timed one by one per measurement (`frames`).
pub const MAX_FRAMES: u32 = 1_000_000;

/// ns per frame over the timed batches.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Stats {
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub max: f64,
}

impl Stats {
    /// Min, median, mean and max of non-empty samples.
    pub fn from(mut v: Vec<f64>) -> Stats {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Stats {
            min: v[0],
            median: quantile_sorted(&v, 0.5),
            mean: v.iter().sum::<f64>() / n as f64,
            max: v[n - 1],
        }
    }
}

/// One (profile, provider, size) measured: the `results` objects of `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// `ivn-ae`, `macsec`, `esp` or `secoc`.
    pub protocol: &'static str,
    pub suite: String,
    pub level: &'static str,
    /// The profile measured, named canonically (`aes128-gcm/conf`, `macsec-gcm-aes-128`).
    pub profile: NamedProfile,
    pub provider: &'static str,
    pub size: usize,
    pub plain_frame_len: usize,
    pub protected_frame_len: usize,
    pub protect_ns: f64,
    pub protect_ns_min: f64,
    pub protect_ns_median: f64,
    pub protect_ns_max: f64,
    pub verify_ns: f64,
    pub verify_ns_min: f64,
    pub verify_ns_median: f64,
    pub verify_ns_max: f64,
    pub protect_mbps: f64,
    pub verify_mbps: f64,
    pub protect_mbps_median: f64,
    pub verify_mbps_median: f64,
    pub protect_mbps_cpu: Option<f64>,
    /// Bare AEAD seal / open of `size` bytes, ns (median); null without an AEAD over the payload.
    pub bare_aead_ns: Option<f64>,
    pub bare_aead_open_ns: Option<f64>,
    /// (protect − bare seal) / bare seal × 100 and (verify − bare open) / bare open × 100, medians.
    pub overhead_pct: Option<f64>,
    pub verify_overhead_pct: Option<f64>,
    /// Bytes the framing encrypts for a `size`-byte payload (MACsec and IVN-AE: the inner
    /// EtherType too; ESP: the UDP header, padding and trailer too); null without a bare AEAD.
    pub encrypted_len: Option<usize>,
    /// Bare AEAD seal / open of `encrypted_len` bytes, ns (median).
    pub bare_aead_encrypted_ns: Option<f64>,
    pub bare_aead_encrypted_open_ns: Option<f64>,
    /// The overheads against the bare AEAD of `encrypted_len` bytes: what the framing alone
    /// adds (header, sequence number, nonce, AAD, moves, parsing, replay window).
    pub framing_overhead_pct: Option<f64>,
    pub verify_framing_overhead_pct: Option<f64>,
    /// Bare AEAD seal / open of `size` and of `encrypted_len` bytes, ns: the fastest batch.
    pub bare_aead_ns_min: Option<f64>,
    pub bare_aead_open_ns_min: Option<f64>,
    pub bare_aead_encrypted_ns_min: Option<f64>,
    pub bare_aead_encrypted_open_ns_min: Option<f64>,
    /// The four overheads above from the fastest batch of each side (`protect_ns_min` against
    /// `bare_aead_ns_min`, …) instead of the medians. On a shared machine other processes only
    /// ever add time to a batch, so the fastest batches are the least disturbed estimate of
    /// both; the medians swing when a neighbour's load comes and goes between rounds.
    pub overhead_min_pct: Option<f64>,
    pub verify_overhead_min_pct: Option<f64>,
    pub framing_overhead_min_pct: Option<f64>,
    pub verify_framing_overhead_min_pct: Option<f64>,
    pub protect_cycles_per_byte_est: Option<f64>,
    pub verify_cycles_per_byte_est: Option<f64>,
    pub batches: usize,
    pub protect_frames_per_batch: usize,
    pub verify_frames_per_batch: usize,
    pub openssl_cmd: Option<String>,
    pub openssl_mbps: Option<f64>,
    pub openssl_stream_mbps: Option<f64>,
    pub ratio_vs_openssl: Option<f64>,
    pub ratio_vs_openssl_median: Option<f64>,
    pub ratio_vs_openssl_mean: Option<f64>,
    pub ratio_vs_openssl_stream: Option<f64>,
    pub openssl_note: Option<String>,
    /// Protect and verify of single frames, each timed on its own (`frames` of them, clock
    /// readings included: `meta.timer_ns`), ns; null unless asked for.
    pub protect_frame_ns_min: Option<f64>,
    pub protect_frame_ns_mean: Option<f64>,
    pub protect_frame_ns_max: Option<f64>,
    pub verify_frame_ns_min: Option<f64>,
    pub verify_frame_ns_mean: Option<f64>,
    pub verify_frame_ns_max: Option<f64>,
}

/// The `meta` object of `--json`: how the run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Meta {
    pub batches: usize,
    pub batch_ms: f64,
    pub cpu_mhz: Option<f64>,
    pub openssl_version: Option<String>,
    pub openssl_seconds: Option<u32>,
    pub mbps_counts: &'static str,
    /// Frames timed one by one per measurement (0: none).
    pub frames: usize,
    /// What an empty timing (two clock readings) costs, ns (median); null without `frames`.
    pub timer_ns: Option<f64>,
    /// Which table `--provider auto` read: the built-in one or this machine's calibration
    /// (`ivnsec suites --calibrate`).
    pub auto_table_source: String,
}

/// A checked benchmark, ready to run: the targets with their providers, the sizes, the timing
/// and (with `vs_openssl`) the `openssl speed` results measured so far.
pub struct Bench {
    jobs: Vec<(Target, Vec<&'static CryptoProvider>)>,
    sizes: Vec<usize>,
    timing: Timing,
    openssl: Option<OpensslCache>,
    meta: Meta,
}

impl Bench {
    /// Checks the settings and plans the run. Bad names, sizes, timings or a named provider
    /// that lacks a named suite are usage errors; `vs_openssl` without `openssl` is an
    /// environment error.
    pub fn new(s: &Settings) -> Result<Bench> {
        let targets = parse_targets(&s.suites)?;
        for &size in &s.sizes {
            if size == 0 || size > MAX_SIZE {
                return Err(usage(format!(
                    "--sizes: {size} is out of range (payload sizes are 1-{MAX_SIZE} bytes)"
                )));
            }
        }
        let timing = Timing {
            batches: s
                .batches
                .map_or(if s.quick { 5 } else { 31 }, |b| b as usize),
            batch_ns: s.batch_ms.unwrap_or(if s.quick { 0.2 } else { 3.0 }) * 1e6,
            frames: s.frames as usize,
        };
        if s.frames > MAX_FRAMES {
            return Err(usage(format!(
                "--frames {}: at most {MAX_FRAMES} frames are timed one by one",
                s.frames
            )));
        }
        if timing.batches == 0 || !(timing.batch_ns.is_finite() && timing.batch_ns > 0.0) {
            return Err(usage("--batches and --batch-ms must be positive"));
        }
        if s.openssl_seconds == 0 {
            return Err(usage("--openssl-seconds must be at least 1"));
        }
        let jobs = plan(&targets, s.providers, !s.suites.is_empty())?;
        let openssl_version = if s.vs_openssl {
            Some(openssl::openssl_version()?)
        } else {
            None
        };
        Ok(Bench {
            jobs,
            sizes: s.sizes.clone(),
            timing,
            openssl: s.vs_openssl.then(|| OpensslCache::new(s.openssl_seconds)),
            meta: Meta {
                batches: timing.batches,
                batch_ms: timing.batch_ns / 1e6,
                cpu_mhz: cpu::cpu_mhz(),
                openssl_version,
                openssl_seconds: s.vs_openssl.then_some(s.openssl_seconds),
                mbps_counts: "payload bytes per second / 1e6 (as openssl speed -bytes N)",
                frames: timing.frames,
                timer_ns: (timing.frames > 0).then(|| measure::timer_ns(timing.frames)),
                auto_table_source: ivnsec_crypto::auto_table_source(),
            },
        })
    }

    /// How the run measures (the `meta` object of `--json`).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// Measures every (target, size, provider) in order, hands each row to `on_row` as soon as
    /// it is measured (so a table can be printed as it grows), and returns all rows.
    pub fn run(&mut self, on_row: &mut dyn FnMut(&Row) -> Result<()>) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        let (jobs, sizes) = (self.jobs.clone(), self.sizes.clone());
        for (profile, provs) in &jobs {
            for &size in &sizes {
                for prov in provs {
                    let row = self.row(*profile, prov, size)?;
                    on_row(&row)?;
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    }

    fn row(&mut self, profile: Target, prov: &CryptoProvider, size: usize) -> Result<Row> {
        let timing = self.timing;
        let equivalent = match (profile, &self.openssl) {
            (Target::Ivn(p), Some(_)) => openssl::openssl_equivalent(p),
            _ => None,
        };
        let cpu_seconds = equivalent
            .as_ref()
            .zip(self.openssl.as_ref())
            .map(|(_, o)| f64::from(o.seconds()));
        // The bare AEAD over `size` bytes and over the bytes the framing encrypts, timed in the
        // same rounds as protect and verify.
        let bare_specs: Vec<BareSpec> = bare_aead_for(profile)
            .map(|(alg, aad_len)| {
                [size, encrypted_len(profile, size)]
                    .map(|len| BareSpec { alg, aad_len, len })
                    .to_vec()
            })
            .unwrap_or_default();
        let extra = Extra {
            cpu_seconds,
            bare: &bare_specs,
        };
        let (p, v, meta) = match profile {
            Target::Ivn(pr) => measure::measure_ivnae(prov, pr, size, timing, extra),
            Target::Macsec(cs) => measure::measure_macsec(prov, cs, size, timing, extra),
            Target::Esp(alg) => measure::measure_esp(prov, alg, size, timing, extra),
            Target::Secoc(alg) => measure::measure_secoc(prov, alg, size, timing, extra),
        }
        .with_context(|| format!("{profile} on provider {} at {size} bytes", prov.name))?;
        let bare = meta.bare.first().copied();
        let bare_enc = meta.bare.get(1).copied();
        let pct = |framed: f64, bare: f64| (framed - bare) / bare * 100.0;
        let mbps = |ns: f64| size as f64 / ns * 1e3;
        let cpu_mhz = self.meta.cpu_mhz;
        let cpb = |ns: f64| cpu_mhz.map(|mhz| ns * mhz / 1e3 / size as f64);
        let mut row = Row {
            protocol: profile.protocol(),
            suite: profile.suite_name(),
            level: profile.level_name(),
            profile: NamedProfile::from(profile.profile()),
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
            encrypted_len: bare_specs.get(1).map(|b| b.len),
            bare_aead_encrypted_ns: bare_enc.map(|(s, _)| s.median),
            bare_aead_encrypted_open_ns: bare_enc.map(|(_, o)| o.median),
            framing_overhead_pct: bare_enc.map(|(s, _)| pct(p.median, s.median)),
            verify_framing_overhead_pct: bare_enc.map(|(_, o)| pct(v.median, o.median)),
            bare_aead_ns_min: bare.map(|(s, _)| s.min),
            bare_aead_open_ns_min: bare.map(|(_, o)| o.min),
            bare_aead_encrypted_ns_min: bare_enc.map(|(s, _)| s.min),
            bare_aead_encrypted_open_ns_min: bare_enc.map(|(_, o)| o.min),
            overhead_min_pct: bare.map(|(s, _)| pct(p.min, s.min)),
            verify_overhead_min_pct: bare.map(|(_, o)| pct(v.min, o.min)),
            framing_overhead_min_pct: bare_enc.map(|(s, _)| pct(p.min, s.min)),
            verify_framing_overhead_min_pct: bare_enc.map(|(_, o)| pct(v.min, o.min)),
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
            protect_frame_ns_min: meta.protect_frame.map(|s| s.min),
            protect_frame_ns_mean: meta.protect_frame.map(|s| s.mean),
            protect_frame_ns_max: meta.protect_frame.map(|s| s.max),
            verify_frame_ns_min: meta.verify_frame.map(|s| s.min),
            verify_frame_ns_mean: meta.verify_frame.map(|s| s.mean),
            verify_frame_ns_max: meta.verify_frame.map(|s| s.max),
        };
        if let Some(cache) = &mut self.openssl {
            openssl::compare(&mut row, equivalent, cache);
        }
        Ok(row)
    }
}

/// What `--suite` names: an IVN-AE profile, a MACsec cipher suite (with confidentiality), an
/// ESP transform or a SecOC profile.
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

    /// The profile measured (MACsec with confidentiality).
    fn profile(self) -> Profile {
        match self {
            Target::Ivn(p) => Profile::IvnAe(p),
            Target::Macsec(suite) => Profile::Macsec(MacsecProfile {
                suite,
                confidentiality: true,
            }),
            Target::Esp(a) => Profile::Esp(a),
            Target::Secoc(a) => Profile::Secoc(a),
        }
    }

    /// The provider `choice` selects for this target, or why there is none.
    fn select(self, choice: ProviderChoice) -> Result<&'static CryptoProvider, String> {
        let picked = match self {
            // Named as a suite in the error, as the frame commands name it.
            Target::Ivn(p) => ivnsec_crypto::select_suite(choice, p.suite),
            t => ivnsec_crypto::select_primitives(choice, &t.profile().primitives(), &t),
        };
        picked.map_err(|e| e.to_string())
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

/// Bytes the AEAD of a target's framing encrypts for a `size`-byte payload.
fn encrypted_len(t: Target, size: usize) -> usize {
    match t {
        // The inner EtherType travels encrypted in front of the payload.
        Target::Ivn(_) | Target::Macsec(_) => size + 2,
        // UDP header ‖ payload ‖ padding ‖ pad length ‖ next header.
        Target::Esp(a) => a.esp_len(8 + size) - ESP_HEADER_LEN - a.iv_len() - ESP_ICV_LEN,
        Target::Secoc(_) => size,
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
    providers: Providers,
    explicit: bool,
) -> Result<Vec<(Target, Vec<&'static CryptoProvider>)>> {
    let mut jobs = Vec::new();
    for &t in targets {
        let provs: Vec<&'static CryptoProvider> = match providers {
            Providers::All => {
                let needs = t.profile().primitives();
                PROVIDERS
                    .iter()
                    .copied()
                    .filter(|pr| crypto::has_all(pr, &needs))
                    .collect()
            }
            Providers::One(choice) => match t.select(choice) {
                Ok(pr) => vec![pr],
                Err(e) if explicit => return Err(usage(e)),
                Err(_) => Vec::new(),
            },
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

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_node::error::exit_code;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn plan_of(suites: &[&str], providers: Providers) -> Result<Vec<(String, Vec<&'static str>)>> {
        let targets = parse_targets(&names(suites))?;
        Ok(plan(&targets, providers, !suites.is_empty())?
            .into_iter()
            .map(|(t, p)| (t.to_string(), p.iter().map(|p| p.name).collect()))
            .collect())
    }

    #[test]
    fn stats_order() {
        let s = Stats::from(vec![3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.min, s.median, s.mean, s.max), (1.0, 2.5, 4.0, 10.0));
        let s = Stats::from(vec![5.0, 1.0, 3.0]);
        assert_eq!((s.min, s.median, s.mean, s.max), (1.0, 3.0, 3.0, 5.0));
    }

    /// Every family by its prefix; a repeated or differently spelled name runs once; a suite
    /// alone means its default level.
    #[test]
    fn targets_by_family_once_each() {
        let t = parse_targets(&names(&[
            "aes128-gcm",
            "aes128-gcm/conf",
            "macsec-gcm-aes-xpn-256",
            "esp-null-hmac-sha256",
            "secoc-cmac-aes128",
            "hmac-sha256",
        ]))
        .unwrap();
        let shown: Vec<(String, &str, &str)> = t
            .iter()
            .map(|t| (t.to_string(), t.protocol(), t.level_name()))
            .collect();
        assert_eq!(
            shown,
            [
                ("aes128-gcm/conf".to_string(), "ivn-ae", "conf"),
                ("macsec-gcm-aes-xpn-256".to_string(), "macsec", "conf"),
                ("esp-null-hmac-sha256".to_string(), "esp", "auth"),
                ("secoc-cmac-aes128".to_string(), "secoc", "auth"),
                // A suite with one level prints without it.
                ("hmac-sha256".to_string(), "ivn-ae", "auth"),
            ]
        );
        // Every profile of the four families when none is named.
        let all = parse_targets(&[]).unwrap();
        assert_eq!(
            all.len(),
            IvnAeProfile::all().count()
                + CipherSuite::ALL.len()
                + EspAlg::ALL.len()
                + SecocAlg::ALL.len()
        );
    }

    /// A row's `profile` is the target's profile named canonically: the name the target
    /// prints (what `--json` and the tables always showed), and one `--profile` takes.
    #[test]
    fn rows_name_the_target_canonically() {
        for t in parse_targets(&[]).unwrap() {
            let named = NamedProfile::from(t.profile());
            assert_eq!(named.name(), t.to_string());
            assert_eq!(named.name().parse::<Profile>().unwrap(), t.profile());
        }
    }

    #[test]
    fn unknown_names_are_usage_errors() {
        for bad in [
            "aes512-gcm",
            "hmac-sha256/conf",
            "macsec-gcm-aes-512",
            "esp-aes512-gcm",
            "secoc-cmac-aes512",
        ] {
            let e = parse_targets(&names(&[bad])).unwrap_err();
            assert_eq!(exit_code(&e), 2, "{bad}");
            assert!(
                e.to_string().starts_with(&format!("--suite '{bad}': ")),
                "{e}"
            );
        }
    }

    /// `all` runs each target on the providers that implement it; a named provider that lacks
    /// a named target is a usage error that says so, and without named targets it is skipped.
    #[test]
    fn plan_follows_the_provider_table() {
        // The portable (RustCrypto) provider has every primitive; the fast one has no AES-CCM,
        // the OpenSSL one no HMAC.
        assert_eq!(
            plan_of(&["aes128-ccm", "aes128-gcm", "hmac-sha256"], Providers::All).unwrap(),
            [
                ("aes128-ccm/conf".to_string(), vec!["openssl", "portable"]),
                (
                    "aes128-gcm/conf".to_string(),
                    vec!["fast", "openssl", "portable"]
                ),
                ("hmac-sha256".to_string(), vec!["fast", "portable"]),
            ]
        );
        // `auto` runs a mixed choice on its per-primitive provider, and names one otherwise.
        assert_eq!(
            plan_of(
                &["chacha20-poly1305", "hmac-sha256"],
                Providers::One(ProviderChoice::Auto)
            )
            .unwrap(),
            [
                ("chacha20-poly1305/conf".to_string(), vec!["auto"]),
                ("hmac-sha256".to_string(), vec!["portable"]),
            ]
        );
        assert_eq!(
            plan_of(&["aes128-ccm"], Providers::One(ProviderChoice::OpenSsl)).unwrap(),
            [("aes128-ccm/conf".to_string(), vec!["openssl"])]
        );
        assert_eq!(
            plan_of(&["esp-aes128-gcm"], Providers::One(ProviderChoice::Auto)).unwrap(),
            [("esp-aes128-gcm".to_string(), vec!["fast"])]
        );
        let e = plan_of(&["aes128-ccm"], Providers::One(ProviderChoice::Fast)).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert_eq!(
            e.to_string(),
            "provider 'fast' does not implement suite aes128-ccm; use --provider portable or auto"
        );
        let skipped = plan_of(&[], Providers::One(ProviderChoice::Fast)).unwrap();
        assert!(
            skipped
                .iter()
                .all(|(t, p)| p == &["fast"] && !t.contains("ccm"))
        );
        assert!(skipped.iter().any(|(t, _)| t == "macsec-gcm-aes-128"));
    }

    #[test]
    fn bad_settings_are_usage_errors() {
        let ok = Settings {
            suites: names(&["hmac-sha256"]),
            sizes: vec![16],
            providers: Providers::All,
            quick: true,
            batches: None,
            batch_ms: None,
            vs_openssl: false,
            openssl_seconds: 1,
            frames: 0,
        };
        let b = Bench::new(&ok).unwrap();
        assert_eq!((b.meta().batches, b.meta().batch_ms), (5, 0.2));
        assert_eq!(b.meta().openssl_seconds, None);
        for bad in [
            Settings {
                sizes: vec![16, 0],
                ..ok.clone()
            },
            Settings {
                sizes: vec![MAX_SIZE + 1],
                ..ok.clone()
            },
            Settings {
                batches: Some(0),
                ..ok.clone()
            },
            Settings {
                batch_ms: Some(f64::NAN),
                ..ok.clone()
            },
            Settings {
                batch_ms: Some(-1.0),
                ..ok.clone()
            },
            Settings {
                openssl_seconds: 0,
                ..ok.clone()
            },
            Settings {
                frames: MAX_FRAMES + 1,
                ..ok.clone()
            },
        ] {
            let e = Bench::new(&bad).err().expect("an error");
            assert_eq!(exit_code(&e), 2, "{bad:?}: {e}");
        }
    }

    /// One quick row per family: the lengths are those of the standards' framing, and the bare
    /// AEAD comparison is there exactly where an AEAD encrypts the payload.
    #[test]
    fn rows_have_the_framing_lengths() {
        let mut b = Bench::new(&Settings {
            suites: names(&[
                "aes128-gcm",
                "hmac-sha256",
                "macsec-gcm-aes-128",
                "esp-aes128-gcm",
                "secoc-cmac-aes128",
            ]),
            sizes: vec![64],
            providers: Providers::One(ProviderChoice::Portable),
            quick: true,
            batches: Some(2),
            batch_ms: Some(0.05),
            vs_openssl: false,
            openssl_seconds: 1,
            frames: 0,
        })
        .unwrap();
        let mut seen = 0;
        let rows = b
            .run(&mut |_| {
                seen += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, 5);
        let lens: Vec<(&str, usize, usize, bool)> = rows
            .iter()
            .map(|r| {
                assert_eq!(r.provider, "portable");
                assert!(r.protect_ns > 0.0 && r.verify_ns > 0.0, "{r:?}");
                (
                    r.protocol,
                    r.plain_frame_len,
                    r.protected_frame_len,
                    r.bare_aead_ns.is_some(),
                )
            })
            .collect();
        assert_eq!(
            lens,
            [
                // docs/wire-ivnae.md: 14 + 12 header + 2 inner EtherType + 64 + 16 tag.
                ("ivn-ae", 78, 108, true),
                // HMAC-SHA-256 (auth level): 14 + 12 + 2 + 64 + 32-byte MAC.
                ("ivn-ae", 78, 124, false),
                // IEEE 802.1AE: 8-byte SecTAG without SCI and a 16-byte ICV.
                ("macsec", 78, 102, true),
                // RFC 4303/4106, transport: IPv4 20, SPI 4 + seq 4, IV 8, UDP 8 + 64, padding
                // (2) so that it and pad length + next header (2) end on 4 bytes, 16-byte ICV.
                ("esp", 92, 20 + 8 + 8 + 72 + 2 + 2 + 16, true),
                // AUTOSAR SecOC default lengths: 8-bit truncated FV, 24-bit authenticator.
                ("secoc", 64, 64 + 1 + 3, false),
            ]
        );
        // What the AEAD of each framing encrypts: IVN-AE conf and MACsec with E = C = 1 the
        // inner EtherType and the payload (docs/wire-ivnae.md, IEEE 802.1AE §14.1); ESP the UDP
        // datagram, 2 bytes of padding, pad length and next header (RFC 4303 §2, RFC 4106 §3).
        let enc: Vec<Option<usize>> = rows.iter().map(|r| r.encrypted_len).collect();
        assert_eq!(enc, [Some(66), None, Some(66), Some(8 + 64 + 2 + 2), None]);
        for r in rows.iter().filter(|r| r.encrypted_len.is_some()) {
            assert!(r.bare_aead_encrypted_ns.is_some_and(|n| n > 0.0), "{r:?}");
            assert!(
                r.bare_aead_encrypted_open_ns.is_some_and(|n| n > 0.0),
                "{r:?}"
            );
            assert!(r.framing_overhead_pct.is_some_and(f64::is_finite), "{r:?}");
            assert!(
                r.verify_framing_overhead_pct.is_some_and(f64::is_finite),
                "{r:?}"
            );
            // The fastest-batch overheads: each side's fastest batch, so each bare minimum is at
            // most its median, and the overhead follows from the two minima.
            for (min, median) in [
                (r.bare_aead_ns_min, r.bare_aead_ns),
                (r.bare_aead_open_ns_min, r.bare_aead_open_ns),
                (r.bare_aead_encrypted_ns_min, r.bare_aead_encrypted_ns),
                (
                    r.bare_aead_encrypted_open_ns_min,
                    r.bare_aead_encrypted_open_ns,
                ),
            ] {
                let (min, median) = (min.expect("min"), median.expect("median"));
                assert!(0.0 < min && min <= median, "{r:?}");
            }
            let want = |framed: f64, bare: Option<f64>| bare.map(|b| (framed - b) / b * 100.0);
            assert_eq!(
                r.framing_overhead_min_pct,
                want(r.protect_ns_min, r.bare_aead_encrypted_ns_min)
            );
            assert_eq!(
                r.verify_overhead_min_pct,
                want(r.verify_ns_min, r.bare_aead_open_ns_min)
            );
            assert!(r.overhead_min_pct.is_some_and(f64::is_finite), "{r:?}");
            assert!(
                r.verify_framing_overhead_min_pct
                    .is_some_and(f64::is_finite),
                "{r:?}"
            );
        }
        // Rows without an AEAD over the payload have no overheads at all.
        for r in rows.iter().filter(|r| r.encrypted_len.is_none()) {
            assert_eq!(
                (
                    r.bare_aead_ns_min,
                    r.overhead_min_pct,
                    r.framing_overhead_min_pct
                ),
                (None, None, None),
                "{r:?}"
            );
        }
    }

    /// With `frames`, every row has the one-by-one figures of protect and verify (seed 001
    /// Figure 6 times each HMAC on its own); without, they are null.
    #[test]
    fn frames_one_by_one() {
        let settings = |frames| Settings {
            suites: names(&["hmac-sha1", "hmac-sha3-256"]),
            sizes: vec![60, 80],
            providers: Providers::One(ProviderChoice::Portable),
            quick: true,
            batches: Some(2),
            batch_ms: Some(0.05),
            vs_openssl: false,
            openssl_seconds: 1,
            frames,
        };
        let mut b = Bench::new(&settings(50)).unwrap();
        assert_eq!(b.meta().frames, 50);
        assert!(b.meta().timer_ns.is_some_and(|t| t >= 0.0));
        let rows = b.run(&mut |_| Ok(())).unwrap();
        assert_eq!(rows.len(), 4);
        for r in &rows {
            for (min, mean, max) in [
                (
                    r.protect_frame_ns_min,
                    r.protect_frame_ns_mean,
                    r.protect_frame_ns_max,
                ),
                (
                    r.verify_frame_ns_min,
                    r.verify_frame_ns_mean,
                    r.verify_frame_ns_max,
                ),
            ] {
                let (min, mean, max) = (min.unwrap(), mean.unwrap(), max.unwrap());
                assert!(0.0 < min && min <= mean && mean <= max, "{r:?}");
            }
        }
        let mut b = Bench::new(&settings(0)).unwrap();
        assert_eq!(b.meta().timer_ns, None);
        let rows = b.run(&mut |_| Ok(())).unwrap();
        assert!(
            rows.iter()
                .all(|r| r.protect_frame_ns_max.is_none() && r.verify_frame_ns_min.is_none())
        );
    }
}
