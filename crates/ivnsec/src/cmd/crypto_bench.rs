//! `ivnsec crypto-bench`: protect and verify cost per profile, provider and payload size, and
//! (with `--vs-openssl`) the ratio to `openssl speed` on the same machine in the same run. The
//! measurement and its method are in `ivnsec_lab::bench`; this command takes the options and
//! prints the table or the JSON.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::bench::{Bench, DEFAULT_SIZES, Providers, Row, Settings};

use crate::error::usage;
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "MB/s counts payload bytes (10^6 per MB), like `openssl speed -bytes N`.\n\
Example:\n  ivnsec crypto-bench --suite aes128-gcm --suite chacha20-poly1305 --suite hmac-sha256 \\\n      --provider fast --vs-openssl\n\
Each provider side by side (what the `auto` table is measured from):\n  \
ivnsec crypto-bench --suite chacha20-poly1305 --sizes 64,1440,16384 --provider all --vs-openssl\n\
Seed 001 Figure 6 (HMAC per frame, min / mean / max of frames timed one by one):\n  \
ivnsec crypto-bench --suite hmac-sha1,hmac-sha256,hmac-sha3-256 --sizes 60,80 --frames 10000\n\
Seed 003 Figure 8 (AES-128-CBC by chunk size, one context reused against a new context per \
chunk; portable = software, fast = AES-NI/VAES standing in for the hardware engine; prints the \
break-even chunk sizes):\n  \
ivnsec crypto-bench --chunk-sizes 64,256,1024,4096,16384,65536 --context both\n  \
ivnsec crypto-bench --chunk-sizes 64,256,1024,4096,16384,65536 --suite aes128-gcm --json\n\
AES-CCM one message at a time against eight at a time (the multi-buffer lanes of the portable \
provider and of auto; OpenSSL seals a batch one by one):\n  \
ivnsec crypto-bench --chunk-sizes 64,256,1400,4096 --suite aes128-ccm,aes256-ccm --context all"
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
    /// Crypto provider: portable, fast, openssl, auto (the fastest per primitive and size, as
    /// `ivnsec suites` shows) or all (each provider that has the suite).
    #[arg(long, default_value = "all", value_parser = ["portable", "fast", "openssl", "auto", "all"])]
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
    /// Also time N frames one by one (protect and verify each, after the batches; at most
    /// 1000000) and show the min / mean / max of a single frame, which the batch figures
    /// average away. Each includes two clock readings (`meta.timer_ns` in --json).
    #[arg(long, default_value_t = 0, value_name = "N")]
    frames: u32,
    /// Time the encryption of chunks of these sizes instead of frames (seed 003 Fig. 8): per
    /// suite (aes128-cbc by default; aes192-cbc, aes256-cbc or an AEAD), provider and context
    /// mode, ns per chunk; then the break-even chunk sizes between providers and between
    /// context modes (1-1048576 bytes; CBC needs multiples of 16).
    #[arg(long, value_delimiter = ',', value_name = "N,…", conflicts_with_all = ["sizes", "vs_openssl", "frames"])]
    chunk_sizes: Vec<usize>,
    /// With --chunk-sizes: `reuse` (one context, key schedule once), `fresh` (a new context per
    /// chunk, key schedule inside the timing), `both`, `batch` (AEADs: one context, chunks
    /// sealed 8 at a time, the multi-buffer AES-CCM lanes where a provider has them) or `all`
    /// [default: both].
    #[arg(long, value_name = "MODE", requires = "chunk_sizes")]
    context: Option<String>,
}

impl Args {
    /// The lab's settings for these options.
    fn settings(&self) -> Result<Settings> {
        Ok(Settings {
            suites: self.suites.clone(),
            sizes: self.sizes.clone(),
            providers: match self.provider.as_str() {
                "all" => Providers::All,
                p => Providers::One(p.parse().map_err(usage)?),
            },
            quick: self.quick,
            batches: self.batches,
            batch_ms: self.batch_ms,
            vs_openssl: self.vs_openssl,
            openssl_seconds: self.openssl_seconds,
            frames: self.frames,
        })
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    if !args.chunk_sizes.is_empty() {
        return run_chunks(args);
    }
    let mut json = Json::claim(args.json)?;
    let mut bench = Bench::new(&args.settings()?)?;
    let mut out = std::io::stdout().lock();
    let one_by_one = args.frames > 0;
    if !args.json {
        print_header(&mut out, args.vs_openssl, one_by_one)?;
    }
    let rows = bench.run(&mut |row| {
        if !args.json {
            print_row(&mut out, row, args.vs_openssl, one_by_one)?;
            out.flush()?;
        }
        Ok(())
    })?;
    if args.json {
        json.print(&serde_json::json!({ "meta": bench.meta(), "results": rows }))?;
    } else if args.vs_openssl {
        writeln!(
            out,
            "\nopenssl: {}; MB/s = payload bytes/s / 1e6; OpenSSL per message = `openssl speed -aead -evp` \
(AEAD) or `-hmac` (HMAC), \
per CPU second; stream = `openssl speed -evp` (no per-message tag). ratio cpu = ivnsec protect MB/s per CPU \
second (p MB/s cpu) / OpenSSL msg MB/s; ratio median/mean = wall-clock batches / OpenSSL.",
            bench.meta().openssl_version.as_deref().unwrap_or("?")
        )?;
    }
    if !args.json && one_by_one {
        writeln!(
            out,
            "\n1-frame: {} frames protected and {} verified one by one after the batches; each \
figure includes two clock readings (an empty pair: {:.0} ns median).",
            args.frames,
            args.frames,
            bench.meta().timer_ns.unwrap_or(f64::NAN)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--chunk-sizes`: the seed 003 Fig. 8 benchmark and its break-evens.
fn run_chunks(args: Args) -> Result<ExitCode> {
    use ivnsec_lab::bench::chunks;
    let mut json = Json::claim(args.json)?;
    let base = args.settings()?;
    let timing = ivnsec_lab::bench::Timing {
        batches: base
            .batches
            .map_or(if base.quick { 5 } else { 31 }, |b| b as usize),
        batch_ns: base.batch_ms.unwrap_or(if base.quick { 0.2 } else { 3.0 }) * 1e6,
        frames: 0,
    };
    if timing.batches == 0 || !(timing.batch_ns.is_finite() && timing.batch_ns > 0.0) {
        return Err(usage("--batches and --batch-ms must be positive"));
    }
    let s = chunks::settings(
        &args.suites,
        &args.chunk_sizes,
        args.context.as_deref(),
        base.providers,
        timing,
    )?;
    let mut out = std::io::stdout().lock();
    if !args.json {
        writeln!(
            out,
            "{:<18} {:<8} {:<7} {:>7} {:>11} {:>23} {:>9}",
            "suite", "provider", "context", "chunk", "ns median", "ns min/mean/max", "MB/s"
        )?;
    }
    let (rows, evens) = chunks::run(&s, &mut |r| {
        if !args.json {
            writeln!(
                out,
                "{:<18} {:<8} {:<7} {:>7} {:>11.0} {:>23} {:>9.1}",
                r.suite,
                r.provider,
                r.context.name(),
                r.size,
                r.ns_median,
                format!("{:.0}/{:.0}/{:.0}", r.ns_min, r.ns_mean, r.ns_max),
                r.mbps
            )?;
            out.flush()?;
        }
        Ok(())
    })?;
    let auto: serde_json::Map<String, serde_json::Value> = s
        .suites
        .iter()
        .map(|x| {
            (
                x.name(),
                serde_json::Value::String(ivnsec_crypto::auto::describe_picks(x.primitive())),
            )
        })
        .collect();
    let seed004 = ivnsec_lab::seed004::OFFLOAD_BREAK_EVEN_TEXT;
    if args.json {
        json.print(&serde_json::json!({
            "meta": {
                "batches": timing.batches,
                "batch_ms": timing.batch_ns / 1e6,
                "sizes": s.sizes,
                "contexts": s.contexts,
                "ns_counts": "wall-clock ns per chunk, median over the batches",
                "mbps_counts": "chunk bytes / median ns, 10^6 bytes per MB",
            },
            "chunks": rows,
            "break_even": evens,
            "auto": auto,
            "seed004_break_even": seed004,
        }))?;
    } else {
        writeln!(out, "\nbreak-even (from the medians):")?;
        for e in &evens {
            match e.context {
                Some(c) => writeln!(out, "  {} {}: {}", e.suite, c.name(), e.text)?,
                None => writeln!(out, "  {}: {}", e.suite, e.text)?,
            }
        }
        for (suite, picks) in &auto {
            writeln!(
                out,
                "--provider auto for {suite}: {}",
                picks.as_str().unwrap_or("")
            )?;
        }
        writeln!(out, "seed 004 §6.1: {seed004}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The framing columns: the bare AEAD seal over the bytes the framing encrypts, and protect's
/// and verify's overheads against that bare AEAD.
fn write_framing(out: &mut impl Write, bare: &str, p: &str, v: &str) -> Result<()> {
    write!(out, " {bare:>7} {p:>8} {v:>8}")?;
    Ok(())
}

/// The one-by-one columns (`--frames`): protect and verify ns min/mean/max.
fn write_one_by_one(out: &mut impl Write, p: &str, v: &str) -> Result<()> {
    write!(out, " {p:>22} {v:>22}")?;
    Ok(())
}

fn print_header(out: &mut impl Write, vs_openssl: bool, one_by_one: bool) -> Result<()> {
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
    if one_by_one {
        write_one_by_one(out, "1-frame protect ns", "1-frame verify ns")?;
    }
    write_framing(out, "bare e", "p f-ovh", "v f-ovh")?;
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
    if one_by_one {
        write_one_by_one(out, "min/mean/max", "min/mean/max")?;
    }
    write_framing(out, "ns med", "% med", "% med")?;
    writeln!(out)?;
    Ok(())
}

fn print_row(out: &mut impl Write, r: &Row, vs_openssl: bool, one_by_one: bool) -> Result<()> {
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
    if one_by_one {
        let spread = |min: Option<f64>, mean: Option<f64>, max: Option<f64>| match (min, mean, max)
        {
            (Some(a), Some(b), Some(c)) => format!("{a:.0}/{b:.0}/{c:.0}"),
            _ => "-".to_string(),
        };
        write_one_by_one(
            out,
            &spread(
                r.protect_frame_ns_min,
                r.protect_frame_ns_mean,
                r.protect_frame_ns_max,
            ),
            &spread(
                r.verify_frame_ns_min,
                r.verify_frame_ns_mean,
                r.verify_frame_ns_max,
            ),
        )?;
    }
    write_framing(
        out,
        &opt(r.bare_aead_encrypted_ns, 0),
        &opt(r.framing_overhead_pct, 1),
        &opt(r.verify_framing_overhead_pct, 1),
    )?;
    writeln!(out)?;
    Ok(())
}
