//! Running a plan: its ping-pong scenarios on one site, then each experiment table on a site of
//! its own, into one report (and one capture).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use ivnsec_core::profile::NamedProfile;
use serde_json::{Value, json};

use super::Plan;
use crate::camera::run as camera;
use crate::pingpong::run::run_scenario;
use crate::report::{Experiments, Report, ScenarioRun};
use crate::site::{OpenSite, Site, Where};
use crate::throughput::run as throughput;
use crate::underload::{playback, run as underload};

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

/// One capture for a whole plan: each node writes its part, which is appended in order.
struct Capture {
    writer: ivnsec_net::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
    part: PathBuf,
}

impl Capture {
    fn create(p: &Path) -> Result<Capture> {
        Ok(Capture {
            writer: ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
            part: crate::site::part_path(p),
        })
    }

    /// Appends what the last node wrote to the part file.
    fn absorb(&mut self) -> Result<()> {
        crate::site::append_pcap(&mut self.writer, &self.part)
    }
}

/// Runs the plan: its ping-pong scenarios on `open` (the site of the plan's topology, closed
/// before the experiments start; `None` when the plan has no scenario) with a progress bar, then
/// each experiment on a site of its own (a fresh testbed of the topology it needs, or what
/// `--on`/`--testbed` say). Returns the report, not yet written.
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
    let watch = plan
        .host_pair()
        .map(|(a, b)| crate::clock_watch::Watch::hosts(&[a, b]));
    if let Some(open) = &open {
        runs = run_scenarios(plan, open, capture.as_mut(), progress)?;
        environment = crate::pingpong::run::environment(&open.site, &plan.scenarios[0], &plan.name);
        // What the provider choice picked for every profile of the plan, not only the first
        // scenario's (often `plain`, which needs no cryptography).
        match crate::pingpong::run::providers_chosen(&plan.scenarios) {
            Some(chosen) => environment.insert("provider_chosen".into(), chosen.into()),
            None => environment.remove("provider_chosen"),
        };
        if let Some(why) = &open.fallback_reason {
            environment.insert("fallback_reason".into(), serde_json::json!(why));
        }
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
    // Across hosts, the throughput groups run between the same two hosts (opened again when
    // the plan had no ping-pong scenario).
    let hosts_site = match (plan.host_pair(), &open) {
        (None, _) => None,
        (Some(_), Some(o)) if matches!(o.site, Site::Hosts { .. }) => Some(o.site.clone()),
        (Some((a, b)), _) if !groups_empty(plan) || !streams_empty(plan) => {
            Some(crate::site::open_hosts(a, b)?.site)
        }
        (Some(_), _) => None,
    };
    if let Some(Site::Hosts {
        initiator,
        responder,
    }) = &hosts_site
    {
        environment.insert(
            "hosts".into(),
            serde_json::json!([
                crate::hosts::describe(initiator),
                crate::hosts::describe(responder)
            ]),
        );
        // Two machines, two clocks: each one's PTP state, read with pmc over the same SSH.
        let set = crate::clock::ClockSet::probe(
            &[&initiator.spec, &responder.spec],
            |_| crate::clock::DEFAULT_UDS.to_string(),
            crate::clock::DEFAULT_MAX_OFFSET_NS,
        );
        crate::clock::record_environment(&mut environment, &set);
    }
    if let Some(tb) = open.and_then(|o| o.testbed) {
        let prefix = tb.prefix().to_string();
        match tb.down() {
            Ok(_) => eprintln!("ivnsec: testbed {prefix} removed"),
            Err(e) => eprintln!("ivnsec: removing testbed {prefix}: {e}"),
        }
    }
    let mut experiments = Experiments::default();
    let groups: Vec<&super::ThroughputJob> = plan
        .throughput
        .iter()
        .chain(&plan.throughput_gateways)
        .collect();
    if !groups.is_empty() {
        eprintln!(
            "ivnsec run: {} throughput group(s), about {:.0} s of sending",
            groups.len(),
            plan.throughput_seconds()
        );
    }
    for (i, job) in groups.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: throughput group {}/{}: {} at {} B, {} sender(s), {}{}",
            i + 1,
            groups.len(),
            NamedProfile::join(&job.profiles, ", "),
            job.config.payload,
            job.config.senders,
            job.config
                .rate_bps
                .map_or("unshaped".to_string(), |b| format!("{b} b/s")),
            job.topology
                .as_ref()
                .map_or(String::new(), |t| format!(", on {t} through its gateways"))
        );
        let layout = match &job.topology {
            Some(t) => crate::site::Layout::of(*t),
            None => throughput::layout(job.config.senders),
        };
        let site = match &hosts_site {
            Some(s) => crate::site::OpenSite {
                site: s.clone(),
                testbed: None,
                fallback_reason: None,
            },
            None => crate::site::open_site(settings.on, settings.testbed.as_deref(), &layout)?,
        };
        let part = capture.as_ref().map(|c| c.part.clone());
        let results = match throughput::run_set(
            &site.site,
            &job.config,
            &job.profiles,
            job.baseline,
            part.as_deref(),
        ) {
            Err(_) if crate::interrupt::requested() => break,
            r => r?,
        };
        drop(site);
        if let Some(c) = capture.as_mut() {
            c.absorb()?;
        }
        experiments.throughput.extend(results);
    }
    // Each experiment on a site of its own; its nodes' capture parts join the run's capture.
    let mut on_site = |what: String,
                       layout: crate::site::Layout,
                       run: &mut dyn FnMut(&Site, Option<&Path>) -> Result<()>|
     -> Result<()> {
        if crate::interrupt::requested() {
            return Ok(());
        }
        eprintln!("ivnsec run: {what}");
        // Across hosts: on the plan's two hosts (the first sends, the second receives).
        let site = match &hosts_site {
            Some(s) => crate::site::OpenSite {
                site: s.clone(),
                testbed: None,
                fallback_reason: None,
            },
            None => crate::site::open_site(settings.on, settings.testbed.as_deref(), &layout)?,
        };
        if let Some(why) = &site.fallback_reason {
            eprintln!("ivnsec: no testbed ({why}); running over UDP on loopback instead");
        }
        let part = capture.as_ref().map(|c| c.part.clone());
        match run(&site.site, part.as_deref()) {
            // Interrupted: what it measured so far is not kept, the rest of the plan is skipped.
            Err(_) if crate::interrupt::requested() => return Ok(()),
            r => r.with_context(|| what.clone())?,
        }
        drop(site);
        if let Some(c) = capture.as_mut() {
            c.absorb()?;
        }
        Ok(())
    };
    let underloads: Vec<&crate::underload::run::UnderloadConfig> = plan
        .underload
        .iter()
        .chain(&plan.underload_gateways)
        .collect();
    for (i, cfg) in underloads.iter().enumerate() {
        let what = format!(
            "under load {}/{}: {}{}",
            i + 1,
            underloads.len(),
            NamedProfile::join(&cfg.profiles, ", "),
            cfg.topology
                .as_ref()
                .map_or(String::new(), |t| format!(", on {t} through its gateways"))
        );
        let layout = match cfg.topology.as_deref() {
            Some("bump") => crate::site::Layout::of(ivnsec_net::topology::Topology::Bump),
            Some(_) => crate::site::Layout::of(ivnsec_net::topology::Topology::Bump2),
            None => underload::layout(),
        };
        on_site(what, layout, &mut |site, part| {
            // Interrupted, it returns the profiles that finished (none: left out).
            let r = underload::run_underload(site, cfg, part)?;
            if !r.runs.is_empty() {
                experiments.underload.push(r);
            }
            Ok(())
        })?;
    }
    for (i, job) in plan.playback.iter().enumerate() {
        let mut cfg = job.config.clone();
        if let Some((name, text)) = job.embedded {
            // The preset's built-in timeline goes into the report: the run can be redone from it.
            let path = out.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
            cfg.timeline = path;
        }
        let what = format!(
            "playback {}/{}: {} from {}",
            i + 1,
            plan.playback.len(),
            NamedProfile::join(&cfg.profiles, ", "),
            cfg.timeline.display()
        );
        let layout = match cfg.topology.as_deref() {
            Some("bump") => crate::site::Layout::of(ivnsec_net::topology::Topology::Bump),
            Some(_) => crate::site::Layout::of(ivnsec_net::topology::Topology::Bump2),
            None => underload::layout(),
        };
        on_site(what, layout, &mut |site, part| {
            let r = playback::run_playback(site, &cfg, part)?;
            if !r.runs.is_empty() {
                experiments.playback.push(r);
            }
            Ok(())
        })?;
    }
    for (i, cfg) in plan.camera.iter().enumerate() {
        let what = format!(
            "cameras {}/{}: {:?} at {} over {:?}",
            i + 1,
            plan.camera.len(),
            cfg.cameras,
            cfg.levels.join(", "),
            cfg.transport
        );
        on_site(what, camera::layout(), &mut |site, part| {
            // Interrupted, it returns the runs that finished (none: left out).
            let r = camera::run_camera(site, cfg, part)?;
            if !r.results.is_empty() {
                experiments.camera.push(r);
            }
            Ok(())
        })?;
    }
    for (i, job) in plan.pingpong_gateways.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: ping-pong through gateways {}/{}: {} scenario(s) on {}",
            i + 1,
            plan.pingpong_gateways.len(),
            job.scenarios.len(),
            job.topology
        );
        let layout = crate::site::Layout::of(job.topology);
        let open = crate::site::open_site(settings.on, settings.testbed.as_deref(), &layout)?;
        let gateway = ivnsec_net::topology::NodeKind::Gateway.as_str();
        let (state, ini, res) = match &open.site {
            Site::Testbed {
                state,
                initiator,
                responder,
            } if state.nodes.iter().any(|n| n.kind == gateway) => (state, initiator, responder),
            _ => {
                eprintln!(
                    "ivnsec run: [[pingpong]] on {} needs a testbed with its gateways (root, \
                     no --testbed of another topology); skipped",
                    job.topology
                );
                continue;
            }
        };
        for s in &job.scenarios {
            if crate::interrupt::requested() {
                break;
            }
            let part = capture.as_ref().map(|c| c.part.clone());
            let o = match run_scenario(&open.site, s, part.as_deref()) {
                Err(_) if crate::interrupt::requested() => break,
                r => r.with_context(|| format!("ping-pong {} on {}", s.name(), job.topology))?,
            };
            if let Some(c) = capture.as_mut() {
                c.absorb()?;
            }
            experiments
                .pingpong
                .push(crate::gateway_pingpong::GatewayPingPong::of(
                    &state.topology,
                    open.site.transport(),
                    (ini, res),
                    s.profile.name(),
                    s.payload,
                    &o.exchanges,
                ));
        }
        drop(open);
    }
    if let Some(w) = watch {
        crate::clock_watch::record(&mut environment, &w.finish());
    }
    // Single-frame crypto times first, in this process, before any testbed is built.
    for (i, cfg) in plan.crypto_bench.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: crypto-bench {}/{}: {} at {:?} bytes, {} frames one by one",
            i + 1,
            plan.crypto_bench.len(),
            cfg.profiles.join(", "),
            cfg.sizes,
            cfg.frames
        );
        experiments
            .crypto_bench
            .push(crate::bench::per_frame::run(cfg).context("crypto-bench")?);
    }
    // Seed 004's benchmarks in this process: AES by chunk size and the TLS handshakes.
    for (i, cfg) in plan.chunk_bench.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: chunk_bench {}/{}: {} at {:?} bytes, context {}",
            i + 1,
            plan.chunk_bench.len(),
            cfg.suites.join(", "),
            cfg.sizes,
            cfg.context
        );
        experiments
            .chunk_bench
            .push(crate::plan::seed004_tables::run_chunk_bench(cfg).context("chunk_bench")?);
    }
    for (i, cfg) in plan.tls_bench.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: tls_bench {}/{}: {} with {} clients, {} s each",
            i + 1,
            plan.tls_bench.len(),
            cfg.algos.join(", "),
            cfg.concurrency,
            cfg.seconds
        );
        experiments
            .tls_bench
            .push(crate::plan::seed004_tables::run_tls_bench(cfg).context("tls_bench")?);
    }
    // Seed 004's tunnel experiments, each on a `pair` testbed of its own with the tunnels the
    // run starts (root only: without it, under `--on auto`, they are skipped and said so).
    let tunnels_skipped = match settings.on {
        Where::Loopback => Some("--on loopback".to_string()),
        Where::Auto => ivnsec_net::testbed::check_environment()
            .err()
            .map(|e| e.to_string()),
        Where::Testbed => None,
    };
    if let Some(why) = tunnels_skipped
        .as_ref()
        .filter(|_| !plan.tunnel_ping.is_empty() || !plan.tunnel_bulk.is_empty())
    {
        eprintln!(
            "ivnsec run: [[tunnel_ping]] and [[tunnel_bulk]] need a testbed with TUN/TAP \
             (root); skipped: {why}"
        );
    }
    let tunnels = if tunnels_skipped.is_some() {
        0
    } else {
        usize::MAX
    };
    for (i, cfg) in plan.tunnel_ping.iter().take(tunnels).enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: tunnel_ping {}/{}: {} ping(s) at {:?} bytes over {}",
            i + 1,
            plan.tunnel_ping.len(),
            cfg.count,
            cfg.sizes,
            cfg.paths.join(", ")
        );
        // Interrupted, it returns the rows that finished (none: left out).
        let r = match crate::tunnel::run_ping(cfg) {
            Err(_) if crate::interrupt::requested() => break,
            r => r.context("tunnel_ping")?,
        };
        if !r.rows.is_empty() {
            experiments.tunnel_ping.push(r);
        }
    }
    for (i, cfg) in plan.tunnel_bulk.iter().take(tunnels).enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: tunnel_bulk {}/{}: {} over {}",
            i + 1,
            plan.tunnel_bulk.len(),
            cfg.tools.join(", "),
            cfg.paths.join(", ")
        );
        let r = match crate::tunnel::run_bulk(cfg) {
            Err(_) if crate::interrupt::requested() => break,
            r => r.context("tunnel_bulk")?,
        };
        if !r.rows.is_empty() {
            experiments.tunnel_bulk.push(r);
        }
    }
    for (i, sweep) in plan.tdma.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        eprintln!(
            "ivnsec run: tdma {}/{}: the analysis, then {} run(s) of {} base periods on \
             cascade testbeds (about {:.0} s) where it can measure",
            i + 1,
            plan.tdma.len(),
            sweep.runs(),
            sweep.periods,
            sweep.measure_seconds()
        );
        let part = capture.as_ref().map(|c| c.part.clone());
        let report = match plan.host_pair() {
            // Across hosts: between the plan's two hosts; no capture there (the ECUs run on
            // other machines).
            Some((a, b)) => crate::tdma::sweep::run_across_hosts(sweep, a, b, &mut |_| Ok(())),
            None => crate::tdma::sweep::run(sweep, settings.on, part.as_deref(), &mut |_| {
                if let Some(c) = capture.as_mut() {
                    c.absorb()?;
                }
                Ok(())
            }),
        };
        let report = match report {
            Err(_) if crate::interrupt::requested() => break,
            r => r.context("tdma")?,
        };
        experiments.tdma.push(report);
    }
    if let Some(mut c) = capture {
        c.writer.flush()?;
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

/// Whether the plan has no throughput group.
/// No under-load, playback or camera table (those run across hosts on the plan's hosts).
fn streams_empty(plan: &Plan) -> bool {
    plan.underload.is_empty() && plan.playback.is_empty() && plan.camera.is_empty()
}

fn groups_empty(plan: &Plan) -> bool {
    plan.throughput.is_empty() && plan.throughput_gateways.is_empty()
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
        let part = capture.as_ref().map(|c| c.part.clone());
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
            profile: s.profile.to_string(),
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
                profile: "plain".into(),
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
