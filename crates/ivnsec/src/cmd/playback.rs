//! `ivnsec playback`: seed 002's sockperf *playback* test (§5.2.1): the sensor sends messages at
//! the times and sizes of a recorded timeline instead of a steady rate; everything else (the
//! roles, fragments, one-way delays, replies, verdict, CPU, baselines) is `ivnsec underload`'s.
//!
//! The command line; timelines and the run are `ivnsec_lab::underload::playback`, the printing
//! is `ivnsec underload`'s (`cmd::common::stream`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::underload::playback::{PlaybackConfig, run_playback};

use super::common::stream::StreamArgs;
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Seed 002's sockperf playback test with our protection: the sensor sends one message per entry \
of --timeline, at its time and of its size, to the consumer; each message is fragmented and \
every fragment protected as in `ivnsec underload`, whose report this prints (one-way \
percentiles, round trips of every --reply-every-th message, loss, the p99.9 < --requirement-us \
verdict, CPU and the increase over the `plain` run of the same invocation).

Timelines:
  sockperf's playback CSV: one `<time in seconds>, <size in bytes>` per line, times from the \
start of the run and strictly increasing, sizes 14..=64000; empty lines and lines starting with \
`#` are skipped (what sockperf's gen1.awk/gen2.awk write). The same file drives `sockperf \
playback --data-file` in the same run (baseline.sockperf).
  a classic pcap capture (Ethernet; pcapng must be converted with `editcap -F pcap`): one \
message per frame, sent at the frame's time after the first frame, its size the frame's \
original length on the wire (the record's orig_len: Ethernet header included, FCS excluded). \
For the sockperf baseline the capture is written as a playback CSV (times that do not increase \
are moved 1 ns on, sizes clamped to 14..=64000, and the report says how many).
Messages smaller than 16 bytes (the sequence number and send time) are sent as 16 bytes.

A bad timeline is an error naming the line (CSV) or the record (pcap), exit 2. Ctrl-C \
(SIGINT; also SIGTERM, SIGHUP) stops the run within a second: the report holds the profiles \
that finished, marked interrupted as `ivnsec underload`'s, exit 130 (128 + the signal).

As root a `sensors:1` testbed is built (sensor1 → consumer); --topology bump|bump2 runs through \
bump-in-the-wire gateways the run starts instead (seed 002 testbench 2; docs/gateway.md), \
--topology production across seed 002's testbench 3 (switches under STP; docs/testbed.md).

Examples:
  ivnsec playback --timeline plans/lidar-playback.csv
  ivnsec playback --profile macsec-gcm-aes-128 --timeline capture.pcap --json
  ivnsec playback --profile aes128-gcm --timeline plans/lidar-playback.csv --reply-every 10 --pcap pb.pcap
  sudo ivnsec playback --topology bump --profile plain --timeline plans/lidar-playback.csv")]
pub struct Args {
    /// The timeline: sockperf playback CSV or a classic pcap capture (detected by content).
    #[arg(long, value_name = "FILE")]
    pub timeline: PathBuf,
    #[command(flatten)]
    pub stream: StreamArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let json = Json::claim(a.stream.json)?;
    let st = &a.stream;
    let mut cfg = PlaybackConfig::new(&a.timeline);
    cfg.reply_every = st.reply_every;
    cfg.requirement_us = st.requirement_us;
    cfg.provider = st.provider.clone();
    cfg.baseline = !st.no_baseline;
    if !st.profiles.is_empty() {
        cfg.profiles = st.profiles.clone();
    }
    cfg.check()?;
    st.run("playback", json, |site, pcap| {
        run_playback(site, &cfg, pcap)
    })
}
