//! Running a plan: its ping-pong scenarios on one site, then each experiment table on a site of
//! its own, into one report (and one capture).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::Plan;
use crate::experiment::context::Capture;
use crate::experiment::{Gathers, RunContext, UNWATCHED_FROM};
use crate::pingpong::run::run_scenario;
use crate::report::{Experiments, Report, ScenarioRun};
use crate::site::{OpenSite, Site, Where};

/// Where and how a plan runs beyond the plan file.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where the experiments' nodes run.
    pub on: Where,
    /// A running testbed to use instead of building one.
    pub testbed: Option<String>,
    /// One capture of the whole run.
    pub pcap: Option<PathBuf>,
}

/// Hears how the ping-pong scenarios of a run advance (a progress bar on a terminal).
pub trait Progress {
    /// The scenarios start: `total` exchanges in all.
    fn start(&mut self, total: u64);
    /// Scenario `index` of `count` starts.
    fn scenario(&mut self, name: &str, index: usize, count: usize);
    /// `exchanges` more exchanges are done.
    fn advance(&mut self, exchanges: u64);
    /// The scenarios are done.
    fn finish(&mut self);
}

/// No progress reports.
#[derive(Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn start(&mut self, _: u64) {}
    fn scenario(&mut self, _: &str, _: usize, _: usize) {}
    fn advance(&mut self, _: u64) {}
    fn finish(&mut self) {}
}

/// Runs the plan: its ping-pong scenarios on `open` (the site of the plan's topology, closed
/// before the experiments start; `None` when the plan has no scenario) with a progress bar, then
/// each listed experiment in the order of its run rank, on sites of its own (a fresh testbed of
/// the topology it needs, or what `--on`/`--testbed` say). Returns the report, not yet written.
pub fn run_plan(
    plan: &Plan,
    settings: &Settings,
    open: Option<OpenSite>,
    baseline: Option<Value>,
    out: &Path,
    progress: &mut dyn Progress,
) -> Result<Report> {
    let started = Instant::now();
    let mut capture = settings.pcap.as_deref().map(Capture::create).transpose()?;
    let mut runs = Vec::with_capacity(plan.scenarios.len());
    let mut environment = serde_json::Map::new();
    // Across hosts, the hosts' clocks are watched while the plan runs on them.
    let mut watch = plan
        .host_pair()
        .map(|(a, b)| crate::clock_watch::Watch::hosts(&[a, b]));
    if let Some(open) = &open {
        runs = run_scenarios(plan, open, capture.as_mut(), progress)?;
        environment = scenarios_environment(plan, open);
    } else {
        environment.insert("plan".into(), serde_json::json!(plan.name));
        // The plan's experiments each run on a testbed (or loopback) of this machine (across
        // hosts: replaced below by the hosts' clock state).
        crate::clock::record_this_host(
            &mut environment,
            &[("every node", None)],
            &ivnsec_net::testbed::default_state_dir(),
        );
    }
    let list = crate::experiments::planned::<Plan, Experiments>();
    // Across hosts, the experiments that run there run between the same two hosts (opened
    // again when the plan had no ping-pong scenario).
    let hosts_site = match (plan.host_pair(), &open) {
        (None, _) => None,
        (Some(_), Some(o)) if matches!(o.site, Site::Hosts { .. }) => Some(o.site.clone()),
        (Some((a, b)), _) if list.iter().any(|x| x.on_hosts(plan)) => {
            Some(crate::site::open_hosts(a, b)?.site)
        }
        (Some(_), _) => None,
    };
    if let Some(Site::Hosts {
        initiator,
        responder,
    }) = &hosts_site
    {
        crate::pingpong::run::record_hosts(&mut environment, initiator, responder);
    }
    if let Some(tb) = open.and_then(|o| o.testbed) {
        let prefix = tb.prefix().to_string();
        match tb.down() {
            Ok(_) => eprintln!("ivnsec: testbed {prefix} removed"),
            Err(e) => eprintln!("ivnsec: removing testbed {prefix}: {e}"),
        }
    }
    let mut cx = RunContext {
        on: settings.on,
        testbed: settings.testbed.as_deref(),
        out,
        hosts: plan.host_pair(),
        hosts_site,
        capture: capture.take(),
    };
    let mut experiments = Experiments::default();
    let mut order = list;
    order.sort_by_key(|x| x.run_rank());
    for x in order {
        if x.run_rank() >= UNWATCHED_FROM {
            if let Some(w) = watch.take() {
                crate::clock_watch::record(&mut environment, &w.finish());
            }
        }
        x.run(plan, &mut cx, &mut experiments)?;
    }
    if let Some(w) = watch {
        crate::clock_watch::record(&mut environment, &w.finish());
    }
    if let Some(mut c) = cx.capture {
        c.flush()?;
    }
    environment.insert(
        "duration_s".into(),
        serde_json::json!(started.elapsed().as_secs_f64()),
    );
    if crate::interrupt::requested() {
        // Stopped by Ctrl-C (or SIGTERM/SIGHUP): the report holds what finished before it.
        environment.insert("interrupted".into(), serde_json::json!(true));
    }
    Ok(Report {
        environment,
        requirements: plan.requirements,
        scenarios: runs,
        baseline_sockperf: baseline,
        experiments,
    })
}

/// The environment of a plan whose ping-pong scenarios ran on `open`.
fn scenarios_environment(plan: &Plan, open: &OpenSite) -> serde_json::Map<String, Value> {
    let mut environment =
        crate::pingpong::run::environment(&open.site, &plan.scenarios[0], &plan.name);
    // What the provider choice picked for every profile of the plan, not only the first
    // scenario's (often `plain`, which needs no cryptography).
    match crate::pingpong::run::providers_chosen(&plan.scenarios) {
        Some(chosen) => environment.insert("provider_chosen".into(), chosen.into()),
        None => environment.remove("provider_chosen"),
    };
    if let Some(why) = &open.fallback_reason {
        environment.insert("fallback_reason".into(), serde_json::json!(why));
    }
    environment
}

/// The results of a run by kind, for the listed experiments to add to.
macro_rules! gathers {
    ($($t:ty $(, $table:ty)? => $field:ident;)*) => {$(
        impl Gathers<$t $(, $table)?> for Experiments {
            fn gather(&mut self, result: $t) {
                self.$field.push(result);
            }
        }
    )*};
}

gathers! {
    crate::throughput::ThroughputResult => throughput;
    crate::underload::UnderloadReport => underload;
    crate::underload::UnderloadReport, crate::underload::playback::Playback => playback;
    crate::camera::CameraReport => camera;
    crate::tdma::sweep::TdmaReport => tdma;
    crate::bench::per_frame::PerFrameReport => crypto_bench;
    crate::gateway_pingpong::GatewayPingPong => pingpong;
    crate::tunnel::PingReport => tunnel_ping;
    crate::tunnel::BulkReport => tunnel_bulk;
    crate::bench::chunks::ChunkBenchReport => chunk_bench;
    crate::tlsbench::Outcome => tls_bench;
}

/// Every ping-pong scenario of `plan` on `open`, reporting progress.
fn run_scenarios(
    plan: &Plan,
    open: &OpenSite,
    mut capture: Option<&mut Capture>,
    progress: &mut dyn Progress,
) -> Result<Vec<ScenarioRun>> {
    progress.start(plan.exchanges());
    let mut runs = Vec::with_capacity(plan.scenarios.len());
    for (i, s) in plan.scenarios.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        progress.scenario(&s.name(), i, plan.scenarios.len());
        let part = capture.as_ref().map(|c| c.part().to_path_buf());
        let o = match run_scenario(&open.site, s, part.as_deref()) {
            // Its nodes were stopped: the scenario is left out, the finished ones are kept.
            Err(_) if crate::interrupt::requested() => break,
            r => r.with_context(|| format!("scenario {}", s.name()))?,
        };
        if let Some(c) = capture.as_mut() {
            c.absorb()?;
        }
        progress.advance(u64::from(s.count) * u64::from(s.replications));
        runs.push(ScenarioRun {
            name: s.name(),
            profile: s.profile.clone(),
            payload: s.payload,
            frame_bytes: o.frame_bytes,
            exchanges: o.exchanges,
        });
    }
    progress.finish();
    Ok(runs)
}

/// Adds our half round trips (part 3 / 2: send until the reply is back, responder included —
/// what sockperf's client measures) at p25, p50, p99 and p99.9, and the ratio of our median to
/// sockperf's, for `plain` and `aes128-gcm` at 64 bytes (the report sets them beside sockperf's
/// percentiles).
pub fn compare_with_baseline(report: &mut Report) {
    let Some(Value::Object(b)) = &mut report.baseline_sockperf else {
        return;
    };
    let Some(theirs) = b.get("half_rtt_p50_us").and_then(Value::as_f64) else {
        return;
    };
    for (profile, key) in [("plain", "plain"), ("aes128-gcm", "aes128_gcm")] {
        let Some(run) = report
            .scenarios
            .iter()
            .find(|r| r.payload == 64 && r.profile == profile)
        else {
            continue;
        };
        let mut half: Vec<f64> = run
            .exchanges
            .iter()
            .filter(|e| !e.lost)
            .map(|e| e.round_trip_ns as f64 / 2000.0)
            .collect();
        if half.is_empty() {
            continue;
        }
        half.sort_by(f64::total_cmp);
        for (p, q) in [("p25", 0.25), ("p99", 0.99), ("p999", 0.999)] {
            let v = crate::stats::quantile_sorted(&half, q);
            b.insert(format!("ours_{key}_64_half_rtt_{p}_us"), json!(v));
        }
        let ours = crate::stats::quantile_sorted(&half, 0.5);
        b.insert(format!("ours_{key}_64_half_rtt_p50_us"), json!(ours));
        b.insert(format!("ratio_{key}_64"), json!(ours / theirs));
    }
    b.insert(
        "targets".into(),
        json!(
            "ours (part 3 / 2) / sockperf half round trip, medians: plain ≤ 1.1, aes128-gcm 64 B ≤ 1.2"
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pingpong::Exchange;
    use crate::report::ScenarioRun;

    /// Half round trips of 1, 2, …, 1001 µs (and one lost exchange, left out): type 7
    /// quantiles 1 + 1000 q, so p25 251, p50 501, p99 991, p99.9 1000 µs.
    #[test]
    fn ours_beside_sockperf_at_four_percentiles() {
        let mut exchanges: Vec<Exchange> = (1..=1001u64)
            .map(|k| Exchange {
                replication: 0,
                index: k as u32,
                payload_ns: 0,
                protect_ns: 0,
                round_trip_ns: 2_000 * k,
                verify_ns: 0,
                resp_verify_ns: 0,
                resp_protect_ns: 0,
                owd_direct_ns: None,
                lost: false,
            })
            .collect();
        exchanges.push(Exchange {
            lost: true,
            round_trip_ns: 0,
            ..exchanges[0]
        });
        let mut report = Report {
            environment: Default::default(),
            requirements: Default::default(),
            scenarios: vec![ScenarioRun {
                name: "plain@64".into(),
                profile: "plain".parse().unwrap(),
                payload: 64,
                frame_bytes: 78,
                exchanges,
            }],
            baseline_sockperf: Some(json!({ "half_rtt_p50_us": 250.5 })),
            experiments: Default::default(),
        };
        compare_with_baseline(&mut report);
        let b = report.baseline_sockperf.unwrap();
        for (k, want) in [
            ("p25", 251.0),
            ("p50", 501.0),
            ("p99", 991.0),
            ("p999", 1000.0),
        ] {
            assert_eq!(
                b[format!("ours_plain_64_half_rtt_{k}_us")],
                json!(want),
                "{k}"
            );
        }
        assert_eq!(b["ratio_plain_64"], json!(2.0));
        // No aes128-gcm scenario: nothing added for it.
        assert!(b.get("ours_aes128_gcm_64_half_rtt_p50_us").is_none());
    }
}
