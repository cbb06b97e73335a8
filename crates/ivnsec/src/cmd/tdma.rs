//! `ivnsec tdma`: time-triggered (TDMA) networks, seed 001 (docs/tdma.md). `capacity` is the
//! analysis of how many frames fit in a base period (`ivnsec_lab::tdma::capacity`); this module
//! takes the options and prints the table or the JSON.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_lab::tdma::capacity::{self, ExactTime, MaxTt, Method, Query, Row, Switches, Tag};
use ivnsec_lab::tdma::{Duration, Rate};

use crate::error::parse_profile;

/// The `tdma` subcommands (`schedule` and `run` join them here).
#[derive(Subcommand, Debug)]
pub enum Args {
    /// How many frames fit in one TDMA base period: seed 001's NF_max (eq. 1, 2, 4, 9), exactly.
    ///
    /// For every frame size and switch count: the frame time (frame bytes x 8 / rate, eq. 2, or
    /// the measured one given with --frame-time) and NF_max = floor(BP / (Frame_time + GP x
    /// N_switch)) (eq. 1 and 9). With a maximum transmission time (--max-tt, or eq. 4 Max_TT =
    /// 2 x (Frame_time - SO) + Diff from --switch-overhead and --diff) NF_max = floor(BP /
    /// Max_TT) instead, as seed 001's Tables 7 and 10. Times are computed as exact fractions
    /// of picoseconds, never in floating point. See docs/tdma.md.
    Capacity(CapacityArgs),
}

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Durations take a unit: s, ms, us, ns, ps (10ms, 0.2ms, 115us); rates \
are bits per second with an optional k, M or G (100M, 54M, 1G). Frame bytes are the Ethernet \
frame without preamble, FCS and inter-frame gap, as in seed 001. In the table, slot is what one \
frame takes of the base period (Frame_time + GP x N_switch, or Max_TT); ~ marks a value rounded \
to 6 decimals.

Examples:
  # seed 001 Table 3: TTEthernet, 100 Mb/s, 60-byte frames and 60 + 20 (HMAC-SHA1)
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 80
  # Table 11: measured frame times (0.115 ms, 0.15 ms), 1 to 5 cascaded switches
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60,80 \\
      --frame-time 0.115ms,0.15ms --switches 1..5
  # Table 7 measured: eq. 4 with SO = 0.1 ms and Diff = 0.2 ms
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 \\
      --frame-time 0.115ms --switch-overhead 0.1ms --diff 0.2ms
  # Table 10 measured: a measured Max_TT on 802.11 (54 Mb/s)
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 54M --frame 60 --max-tt 1.024ms --json
  # what our suites cost in frames per base period
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 --suite hmac-sha256
  ivnsec tdma capacity --bp 10ms --gp 0.2ms --rate 100M --frame 60 --suite macsec-gcm-aes-128"
)]
pub struct CapacityArgs {
    /// Base period BP (seed 001: 10ms).
    #[arg(long, value_name = "DURATION")]
    bp: Duration,
    /// Guard period GP, added once per switch (seed 001: 0.2ms; 0ms for none).
    #[arg(long, value_name = "DURATION")]
    gp: Duration,
    /// Transmission rate of eq. 2 (seed 001: 100M TTEthernet, 54M 802.11g).
    #[arg(long, value_name = "RATE")]
    rate: Rate,
    /// Frame sizes in bytes (1 to 256 of them, space- or comma-separated); every size is a row
    /// for every switch count.
    #[arg(long = "frame", value_name = "BYTES", num_args = 1.., value_delimiter = ',', required = true)]
    frames: Vec<u32>,
    /// Measured frame times instead of eq. 2: one for every frame, or one per --frame in the
    /// same order.
    #[arg(long = "frame-time", value_name = "DURATION", num_args = 1.., value_delimiter = ',')]
    frame_times: Vec<Duration>,
    /// Switches a frame crosses, N_switch of eq. 9: N, or A..B for every count from A to B
    /// (both included), 1 to 1024.
    #[arg(long, value_name = "N|A..B", default_value = "1")]
    switches: Switches,
    /// Measured maximum transmission time: NF_max = floor(BP / Max_TT). One for every frame, or
    /// one per --frame in the same order.
    #[arg(
        long = "max-tt",
        value_name = "DURATION",
        num_args = 1..,
        value_delimiter = ',',
        conflicts_with_all = ["switch_overhead", "diff"]
    )]
    max_tt: Vec<Duration>,
    /// Switch overhead SO of eq. 4, Max_TT = 2 x (Frame_time - SO) + Diff (needs --diff).
    #[arg(long, value_name = "DURATION", requires = "diff")]
    switch_overhead: Option<Duration>,
    /// Diff of eq. 4: the time the switch takes to forward a frame (needs --switch-overhead).
    #[arg(long, value_name = "DURATION", requires = "switch_overhead")]
    diff: Option<Duration>,
    /// Tag bytes added to every frame (20 for HMAC-SHA1, 32 for HMAC-SHA256); each row also
    /// shows NF_max without the tag.
    #[arg(long, value_name = "N", conflicts_with = "suite")]
    tag_bytes: Option<u32>,
    /// Add what an IVN-AE or MACsec profile adds to each plain Ethernet frame (header, tag,
    /// padding; `ivnsec suites` lists them), e.g. hmac-sha1, aes128-gcm, macsec-gcm-aes-128.
    #[arg(long, value_name = "PROFILE")]
    suite: Option<String>,
    /// Print {"rows": [{frame_bytes, rate_bps, bp_ms, gp_ms, switches, frame_time_ms,
    /// max_tt_ms, nf_max}]} instead of a table (max_tt_ms null without a Max_TT).
    #[arg(long)]
    json: bool,
}

impl CapacityArgs {
    /// The lab's query for these options.
    fn query(&self) -> Result<Query> {
        let tag = match (&self.suite, self.tag_bytes) {
            (Some(name), _) => Tag::Suite(parse_profile(name)?),
            (None, Some(n)) => Tag::Bytes(n),
            (None, None) => Tag::None,
        };
        let max_tt = match (self.switch_overhead, self.diff) {
            (Some(switch_overhead), Some(diff)) => MaxTt::Eq4 {
                switch_overhead,
                diff,
            },
            _ if !self.max_tt.is_empty() => MaxTt::Given(self.max_tt.clone()),
            _ => MaxTt::None,
        };
        Ok(Query {
            bp: self.bp,
            gp: self.gp,
            rate: self.rate,
            frames: self.frames.clone(),
            frame_times: self.frame_times.clone(),
            switches: self.switches,
            max_tt,
            tag,
        })
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Capacity(a) => run_capacity(a),
    }
}

fn run_capacity(args: CapacityArgs) -> Result<ExitCode> {
    let query = args.query()?;
    let rows = query.rows()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &capacity::json(&rows))?;
        writeln!(out)?;
    } else {
        print_table(&mut out, &args, &query, &rows)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Decimals of the milliseconds in the table.
const MS_DECIMALS: u32 = 6;

/// A duration in milliseconds for the table (`0.2`, `~0.000001` below the precision).
fn ms(d: Duration) -> String {
    ExactTime::from(d).ms_text(MS_DECIMALS)
}

fn print_table(out: &mut impl Write, args: &CapacityArgs, q: &Query, rows: &[Row]) -> Result<()> {
    match q.method() {
        Method::Eq1 => writeln!(
            out,
            "NF_max = floor(BP / (Frame_time + GP x N_switch))   (seed 001 eq. 1, 9)"
        )?,
        Method::Eq4 => writeln!(
            out,
            "NF_max = floor(BP / Max_TT), Max_TT = 2 x (Frame_time - SO) + Diff   (seed 001 eq. 4), \
SO {} ms, Diff {} ms",
            ms(args.switch_overhead.unwrap_or_default()),
            ms(args.diff.unwrap_or_default())
        )?,
        Method::MaxTtGiven => writeln!(out, "NF_max = floor(BP / Max_TT), Max_TT measured")?,
    }
    if q.frame_times.is_empty() {
        writeln!(out, "Frame_time = frame bytes x 8 / rate   (eq. 2)")?;
    } else {
        writeln!(out, "Frame_time measured")?;
    }
    let rate = q.rate.to_string();
    let (number, multiplier) = rate.split_at(rate.trim_end_matches(char::is_alphabetic).len());
    write!(
        out,
        "BP {} ms, GP {} ms, rate {number} {multiplier}b/s",
        ms(q.bp),
        ms(q.gp)
    )?;
    match &q.tag {
        Tag::None => writeln!(out)?,
        Tag::Bytes(n) => writeln!(out, ", tag {n} bytes per frame")?,
        Tag::Suite(p) => writeln!(out, ", tag: what {p} adds to each frame")?,
    }
    writeln!(out)?;
    let tagged = q.tag != Tag::None;
    write!(
        out,
        "{:>12} {:>8} {:>14} {:>14} {:>14} {:>8}",
        "frame bytes", "N_switch", "Frame_time ms", "slot ms", "Max_TT ms", "NF_max"
    )?;
    if tagged {
        write!(out, " {:>15}", "NF_max untagged")?;
    }
    writeln!(out)?;
    for r in rows {
        let frame = if tagged {
            format!("{}+{}", r.frame, r.tag_bytes)
        } else {
            r.frame_bytes.to_string()
        };
        write!(
            out,
            "{:>12} {:>8} {:>14} {:>14} {:>14} {:>8}",
            frame,
            r.switches,
            r.frame_time.ms_text(MS_DECIMALS),
            r.slot.ms_text(MS_DECIMALS),
            r.max_tt.map_or("-".to_string(), |t| t.ms_text(MS_DECIMALS)),
            r.nf_max
        )?;
        if let Some(n) = r.nf_max_untagged {
            write!(out, " {n:>15}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}
