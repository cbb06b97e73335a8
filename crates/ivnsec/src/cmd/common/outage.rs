//! `--outage N[@SECONDS]` as `pingpong` and `underload` take it: the checks both share and the
//! text report of an outage run (`ivnsec_lab::outage`).

use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::outage::run::OutageReport;
use ivnsec_lab::outage::{Measure, OutageSpec};
use ivnsec_net::topology::Topology;

use super::lab;
use crate::output::Json;

/// The outage settings of a run: `--outage` needs `--topology production`; without
/// `--outage-seed` the seed is random (the report prints it).
pub fn spec(text: &str, topology: Option<&str>, seed: Option<u64>) -> Result<OutageSpec> {
    let topology = topology.map(lab::parse_topology).transpose()?;
    if topology != Some(Topology::Production) {
        return Err(crate::error::usage(
            "--outage needs --topology production (the testbed whose links have redundancy: \
             switches under STP, the consumer on three links)",
        ));
    }
    let seed = match seed {
        Some(v) => v,
        None => {
            let mut b = [0u8; 8];
            getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no randomness: {e}"))?;
            u64::from_le_bytes(b)
        }
    };
    OutageSpec::parse(text, seed)
}

/// Ends an outage run: the report as JSON when stdout was claimed for it, as text otherwise;
/// exit 1 when a verdict failed. Interrupted, the report (of the profiles that finished) is
/// marked so and the exit code is 128 + signal.
pub fn finish(r: &OutageReport, json: &mut Json) -> Result<ExitCode> {
    if crate::interrupted::requested() {
        if json.claimed() {
            json.print(&crate::interrupted::marked(r))?;
        } else {
            print(r);
            println!(
                "{}",
                crate::interrupted::line("the profile in progress is left out")
            );
        }
        return Ok(crate::interrupted::code());
    }
    if json.claimed() {
        json.print(r)?;
    } else {
        print(r);
    }
    Ok(if r.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Prints an outage run per profile, outage and event.
pub fn print(r: &OutageReport) {
    let ms = |v: Option<f64>| v.map_or("not recovered".to_string(), |v| format!("{v:.0} ms"));
    let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    println!(
        "{} on testbed {} ({}), {}; {} outage(s) of {} s, one every {} s, seed {}",
        r.experiment,
        r.testbed,
        r.topology,
        r.path,
        r.spec.count,
        r.spec.down_s,
        r.spec.interval_s,
        r.spec.seed
    );
    println!("links chosen: {}", r.chosen_links.join("; "));
    for run in &r.runs {
        let (units, latency) = match run.measure {
            Measure::Rtt => ("exchanges", "RTT"),
            Measure::OneWay => ("messages", "one-way delay"),
        };
        println!(
            "\n{}: {} {units}, {} lost; {latency} before: median {} µs, p99 {} µs",
            run.profile,
            run.units,
            run.lost,
            us(run.latency_before_us.median),
            us(run.latency_before_us.p99)
        );
        for o in &run.outages {
            println!(
                "  {} ({})",
                o.link,
                if o.on_tree {
                    "on the tree"
                } else {
                    "a blocked link"
                }
            );
            for e in &o.events {
                println!(
                    "    {:<4} at {:>6.2} s: {} of {} {units} lost, recovered after {}, tree \
                     settled after {}, {latency} while re-converging: median {} µs, p99 {} µs, \
                     max {} µs ({} {units})",
                    e.event,
                    e.at_s,
                    e.lost,
                    e.units,
                    ms(e.recovered_after_ms),
                    ms(e.tree_settled_after_ms),
                    us(e.latency_during_us.median),
                    us(e.latency_during_us.p99),
                    us(e.latency_during_us.max),
                    e.latency_during_us.count
                );
            }
            for m in &o.mka {
                println!(
                    "    MKA {}: {} ({} peer(s) lost, {} live again{}; SAKs installed: {:?})",
                    m.participant,
                    m.verdict,
                    m.peers_lost,
                    m.peers_live,
                    m.reestablished_after_s
                        .map_or(String::new(), |t| format!(" after {t:.1} s")),
                    m.saks_installed
                );
            }
        }
    }
    println!();
    for m in &r.mka_final {
        println!(
            "MKA {} at the end: {} of {} peers live, {}",
            m.participant,
            m.live_peers,
            m.expected_peers,
            if m.transmitting {
                "transmitting under an agreed SAK"
            } else {
                "NOT transmitting"
            }
        );
    }
}
