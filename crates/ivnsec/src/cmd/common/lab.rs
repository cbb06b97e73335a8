//! What the experiment commands (`pingpong`, `run`, `validate`) share on the command line:
//! where the nodes run and how they receive, and printing a scenario's results.

use ivnsec_lab::pingpong::efficiency;
use ivnsec_lab::pingpong::run::{Judged, Mode, Outcome};
use ivnsec_lab::site::Where;

/// Where to run, as asked on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WhereArg {
    /// A testbed when root, else UDP on loopback (and say so).
    Auto,
    /// Build a `pair` testbed (needs root).
    Testbed,
    /// UDP on loopback, no root needed.
    Loopback,
}

impl From<WhereArg> for Where {
    fn from(w: WhereArg) -> Where {
        match w {
            WhereArg::Auto => Where::Auto,
            WhereArg::Testbed => Where::Testbed,
            WhereArg::Loopback => Where::Loopback,
        }
    }
}

/// Receive strategy of both nodes, as asked on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Sleep in the kernel until a frame arrives (a wake-up per hop).
    Blocking,
    /// Spin on non-blocking reads (one CPU busy per node, no wake-up latency).
    BusyPoll,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Blocking => Mode::Blocking,
            ModeArg::BusyPoll => Mode::BusyPoll,
        }
    }
}

fn fmt_us(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// Prints one scenario's section table.
pub fn print_scenario(name: &str, payload: usize, o: &Outcome, j: &Judged) {
    println!(
        "{name}: {} exchanges, {} lost, frame {} B, efficiency {:.1} %",
        o.exchanges.len(),
        o.lost(),
        o.frame_bytes,
        100.0 * efficiency(payload, o.frame_bytes)
    );
    println!(
        "  {:<13} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "section (µs)", "mean", "min", "median", "p99", "p99.9", "max", "wilcoxon", "pwcet1e-9"
    );
    for (s, st) in &j.sections {
        let Some(st) = st else { continue };
        println!(
            "  {:<13} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9} {:>10}",
            s.name(),
            st.mean_us,
            st.min_us,
            st.median_us,
            st.p99_us,
            st.p999_us,
            st.max_us,
            fmt_us(st.wilcoxon_bound_us),
            fmt_us(st.pwcet_1e9_us)
        );
    }
    for (r, n) in &o.rejected {
        println!("  initiator rejected {n} replies: {r}");
    }
    for (r, n) in &o.responder_drops {
        println!("  responder dropped {n} requests: {r}");
    }
    if o.stale > 0 {
        println!(
            "  {} replies arrived after their exchange timed out",
            o.stale
        );
    }
    println!(
        "  verdicts: control (OWD worst × margin ≤ 2.5 ms, RTT ≤ 5 ms): {}   sensor (p99.9 < 2 ms): {}",
        pass(j.verdicts.control_2500us),
        pass(j.verdicts.sensor_p999_2ms)
    );
}

pub fn pass(b: bool) -> &'static str {
    if b { "PASS" } else { "FAIL" }
}

/// A testbed topology from `--topology` (a usage error naming the option otherwise).
pub fn parse_topology(t: &str) -> anyhow::Result<ivnsec_net::topology::Topology> {
    t.parse()
        .map_err(|e| crate::error::usage(format!("--topology {t}: {e}")))
}

/// The two ECUs of `--topology` on a command that builds `default` by itself and takes only
/// the bump-in-the-wire topologies: `bump` (the legacy sensor1 behind its gateway → the MACsec
/// consumer) or `bump2` (ecu1 → ecu2, both legacy ECUs behind gateways); the run starts the
/// gateways (and bump's consumer MACsec). Anything else is a usage error naming both.
pub fn bump_layout(
    command: &str,
    t: &str,
    default: &str,
) -> anyhow::Result<ivnsec_lab::site::Layout> {
    use ivnsec_net::topology::Topology;
    match parse_topology(t)? {
        topology @ (Topology::Bump | Topology::Bump2 | Topology::Production) => {
            Ok(ivnsec_lab::site::Layout::of(topology))
        }
        _ => Err(crate::error::usage(format!(
            "--topology {t}: {command} builds {default} by itself; --topology takes bump (the \
             legacy sensor1 behind a gateway, a MACsec consumer), bump2 (two legacy ECUs, \
             each behind a gateway) or production (seed 002 testbench 3: sensor1 to the \
             consumer across switches under STP)"
        ))),
    }
}

/// Where a command with `--topology` runs: a testbed always (`--on auto` does not fall back to
/// loopback; `--on loopback` is a usage error).
pub fn where_for_topology(on: Where, topology: Option<&str>) -> anyhow::Result<Where> {
    match (topology, on) {
        (None, on) => Ok(on),
        (Some(t), Where::Loopback) => Err(crate::error::usage(format!(
            "--topology {t} builds a testbed; it cannot run with --on loopback"
        ))),
        (Some(_), _) => Ok(Where::Testbed),
    }
}
