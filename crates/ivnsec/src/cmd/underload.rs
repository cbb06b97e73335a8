//! `ivnsec underload`: seed 002's sockperf *under-load* test (§5.2.1) with our protection: a
//! sensor streams 24,938-byte lidar messages at 950 messages/s to the consumer, every message
//! cut into fragments that are each protected, the consumer measures every message's one-way
//! delay and sends every 100th back; per profile the p99.9 < 2 ms verdict of §5.1, loss, round
//! trips and CPU, beside the `plain` run and `sockperf under-load` on the same path in the same
//! invocation.
//!
//! The command line; the experiment is `ivnsec_lab::underload::run` and the printing
//! `cmd::common::stream` (both shared with `ivnsec playback`, the same roles on a timeline).

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::underload::run::{UnderloadConfig, run_underload};

use super::common::stream::StreamArgs;
use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Seed 002's sockperf under-load test with our protection. A sensor (the `sensor1` ECU) sends \
--size-byte messages at --mps messages per second for --seconds to the consumer; every message \
carries its sequence number and send time (CLOCK_MONOTONIC, shared by every namespace of the \
host) and is cut into fragments that each fit the 1500-byte MTU and are each protected by the \
profile (docs/fragmentation.md). The consumer verifies every fragment, reassembles, records \
each message's one-way delay (send → last fragment verified) and sends every --reply-every-th \
message back whole, so round trips are measured too, like sockperf.

Reported per profile: messages sent/received/lost, one-way p50/p90/p99/p99.9/max, round trips \
and half round trips of the replied messages, units the consumer rejected, the verdict \
`p99.9 < --requirement-us` (at least 99.9 % of the messages sent arrived in time; a lost \
message counts as late), and CPU: sensor, consumer and the whole machine (/proc/stat every \
second) as % of all cores, CPU ns per message byte, and the increase over the `plain` run made \
first in the same invocation (seed 002's < 5 % rule).

Baseline in the same run: when sockperf is installed, `sockperf under-load` (UDP, the same \
--mps, -m --size, --reply-every and duration; the kernel IP-fragments its datagrams) runs between \
the same two ECUs; its figures (half round trips of the replied messages, as sockperf prints \
them) sit under baseline.sockperf beside our plain run's half round trips.

As root, a `sensors:1` testbed (sensor1 and consumer on one switch) is built and removed \
afterwards, or --testbed PREFIX uses a running one (its sensor1 and consumer, else its first and \
last ECUs); otherwise both processes talk UDP on loopback, which the output says. --topology \
bump|bump2 runs through bump-in-the-wire gateways the run starts instead (seed 002 testbench 2; \
docs/gateway.md); --topology production from sensor1 to the consumer across seed 002's \
testbench 3 (switches with redundant links under STP; docs/testbed.md), where --outage takes \
links down and up during the run (docs/experiments.md).

Ctrl-C (SIGINT; also SIGTERM, SIGHUP) stops the run within a second (its nodes, sockperf and \
the testbed go): the report holds the profiles that finished before it, marked \
`\"interrupted\": true` in JSON and by a last line `interrupted: …` in text (with --outage: \
the profiles whose whole outage schedule finished).

Exit codes: 0 every profile met the requirement, 1 one did not, 2 usage error, 3 a missing \
privilege or tool for the requested site, 130 interrupted by Ctrl-C (128 + the signal).

Examples:
  ivnsec underload
  ivnsec underload --profile plain --profile macsec-gcm-aes-128 --profile esp-null-hmac-sha256 --seconds 10 --json
  ivnsec underload --profile aes128-gcm --size 1400 --mps 5000 --reply-every 10 --pcap ul.pcap
  sudo ivnsec underload --topology bump --profile plain --seconds 5 --json
  sudo ivnsec underload --topology production --profile macsec-gcm-aes-128 --outage 2@30 --json")]
pub struct Args {
    /// Message size in bytes (16 ..= 1048576; seed 002: a 24,938-byte lidar packet).
    #[arg(long, default_value_t = 24_938)]
    pub size: usize,
    /// Messages per second.
    #[arg(long, default_value_t = 950.0)]
    pub mps: f64,
    /// How long each profile's sensor sends, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
    /// Link outages during the run (needs --topology production): N links chosen at random
    /// (seeded: --outage-seed) go down for 12 s each, one every SECONDS (default 25), and come
    /// back, while sensor1 streams to the consumer. Runs `plain` first, then each --profile,
    /// each sending for the whole schedule (3 s before the first outage, 8 s after the last
    /// link came back; --seconds is set from it), with the same outages; reports per outage
    /// and profile the messages lost, the time to recover, the spanning tree's settling time,
    /// the one-way delays while the network re-converges (median, p99, max), and whether the
    /// MKA sessions (the consumer and the gateways, started on one pre-shared CAK) survived or
    /// re-established; the same report as `pingpong --outage` with `messages` and
    /// `one_way_…_us` for `exchanges` and `rtt_…_us`. No sockperf baseline. Exit 1 when an
    /// outage was not recovered from or an MKA participant ended without its peers.
    /// Example: `sudo ivnsec underload --topology production --profile macsec-gcm-aes-128
    /// --outage 1`.
    #[arg(
        long,
        value_name = "N[@SECONDS]",
        conflicts_with_all = ["seconds", "pcap", "hosts"]
    )]
    pub outage: Option<String>,
    /// The seed of the outages' link choice (default: a random one, printed in the report).
    #[arg(long, value_name = "SEED", requires = "outage")]
    pub outage_seed: Option<u64>,
    #[command(flatten)]
    pub stream: StreamArgs,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let json = Json::claim(a.stream.json)?;
    let st = &a.stream;
    let mut cfg = UnderloadConfig {
        size: a.size,
        mps: a.mps,
        reply_every: st.reply_every,
        seconds: a.seconds,
        requirement_us: st.requirement_us,
        provider: st.provider.clone(),
        baseline: !st.no_baseline,
        ..UnderloadConfig::default()
    };
    if !st.profiles.is_empty() {
        cfg.profiles = st.profiles.clone();
    }
    if let Some(text) = &a.outage {
        let spec = super::common::outage::spec(text, st.topology.as_deref(), a.outage_seed)?;
        cfg.seconds = spec.duration_s();
        cfg.check()?;
        return outage(&cfg, &spec, json);
    }
    cfg.check()?;
    st.run("underload", json, |site, pcap| {
        run_underload(site, &cfg, pcap)
    })
}

/// `underload --outage`: plain, then each profile, on a fresh `production` testbed with the
/// same seeded link outages (ivnsec_lab::underload::outage).
fn outage(
    cfg: &UnderloadConfig,
    spec: &ivnsec_lab::outage::OutageSpec,
    mut json: Json,
) -> Result<ExitCode> {
    // Ctrl-C: the profiles that finished are printed, marked interrupted.
    crate::interrupted::watch()?;
    let report = ivnsec_lab::underload::outage::run_underload_outage(cfg, spec)?;
    super::common::outage::finish(&report, &mut json)
}
