//! Runs an experiment on a fresh `production` testbed while links go down and come back
//! ([`super`]): builds the testbed, starts the MKA participants (the consumer's `ivnsec macsec
//! up` and the gateways, one pre-shared CAK), runs each profile (plain first, then each
//! protection) with the same seeded outages, watches the spanning tree, and reads what the MKA
//! participants logged. The experiment is a closure ([`run_with`]) that runs one profile from
//! `sensor1` to the consumer and returns its [`Trace`]: the ping-pong ([`run`]) or the sensor
//! stream (`crate::underload::outage`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Result, anyhow};
use ivnsec_net::sys::monotonic_ns;
use ivnsec_net::testbed::{self, Options, Testbed, TestbedState};
use ivnsec_net::topology::{self, NodeKind, Topology};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use super::{
    Event, EventStats, LinkRef, Measure, OutageSpec, RttUs, STP_POLL_MS, Trace, analyse, rtt_before,
};
use crate::pingpong::run::{Scenario, run_scenario};
use crate::site::{Site, net_err};
use ivnsec_core::profile::NamedProfile;
use ivnsec_node::error::usage;

/// The MACsec profile of the MKA participants the outage run starts.
pub const MKA_PROFILE: &str = "macsec-gcm-aes-128";
/// How long the MKA participants get to find each other before the first scenario.
const MKA_START_TIMEOUT: Duration = Duration::from_secs(40);

/// What a run with outages reports.
#[derive(Clone, Debug, Serialize)]
pub struct OutageReport {
    /// `pingpong` or `underload`.
    pub experiment: String,
    /// The testbed's prefix and topology.
    pub testbed: String,
    pub topology: String,
    /// N, interval, down time and seed.
    pub spec: OutageSpec,
    /// The links the outages could choose from (their loss leaves another path).
    pub eligible_links: Vec<String>,
    /// The links chosen, in order.
    pub chosen_links: Vec<String>,
    /// Who exchanged: initiator → responder.
    pub path: String,
    /// One run per profile (plain first).
    pub runs: Vec<ProfileRun>,
    /// Each MKA participant at the end: live peers out of the others.
    pub mka_final: Vec<MkaFinal>,
}

/// One profile's run with its outages.
#[derive(Clone, Debug)]
pub struct ProfileRun {
    /// The profile, with the name it was given.
    pub profile: NamedProfile,
    /// Units (key `exchanges` or `messages`: [`Measure`]) and how many were lost.
    pub units: usize,
    pub lost: usize,
    /// Latencies before the first outage (key `rtt_before_us` or `one_way_before_us`).
    pub latency_before_us: RttUs,
    pub outages: Vec<OutageStats>,
    pub measure: Measure,
}

impl Serialize for ProfileRun {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("profile", &self.profile)?;
        m.serialize_entry(self.measure.units_key(), &self.units)?;
        m.serialize_entry("lost", &self.lost)?;
        m.serialize_entry(self.measure.before_key(), &self.latency_before_us)?;
        m.serialize_entry("outages", &self.outages)?;
        m.end()
    }
}

/// One outage: its link, whether it carried the exchanges' path, its two events, and what the
/// MKA participants saw from its start to the next outage's.
#[derive(Clone, Debug, Serialize)]
pub struct OutageStats {
    pub link: String,
    /// Both ends forwarding just before it went down (it was on the spanning tree).
    pub on_tree: bool,
    pub events: Vec<EventStats>,
    pub mka: Vec<MkaWindow>,
}

/// What one MKA participant logged during one outage (its events file).
#[derive(Clone, Debug, Serialize)]
pub struct MkaWindow {
    pub participant: String,
    pub peers_lost: usize,
    pub peers_live: usize,
    /// Key numbers of the SAKs it installed (receive or transmit).
    pub saks_installed: Vec<u64>,
    /// From the link going down to its last `peer_live`, when it lost peers.
    pub reestablished_after_s: Option<f64>,
    /// `survived` (no peer lost), `re-established` (every lost peer live again) or
    /// `not re-established`.
    pub verdict: String,
}

/// An MKA participant at the end of the run.
#[derive(Clone, Debug, Serialize)]
pub struct MkaFinal {
    pub participant: String,
    pub live_peers: usize,
    pub expected_peers: usize,
    /// Whether it transmits under an agreed SAK.
    pub transmitting: bool,
}

/// One started MKA participant.
struct Participant {
    name: String,
    run_dir: PathBuf,
    events: PathBuf,
    child: Child,
}

impl Drop for Participant {
    fn drop(&mut self) {
        let _ = ivnsec_net::sys::signal_process(self.child.id(), false);
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The links whose loss the testbed survives: between two switches, and the ports of an ECU
/// with several links (the consumer's uplinks). Each once, from the end named first.
pub fn candidate_links(state: &TestbedState) -> Vec<LinkRef> {
    let kind = |n: &str| state.node(n).map(|x| x.kind.as_str());
    let mut out: Vec<LinkRef> = Vec::new();
    for n in &state.nodes {
        let multi_homed = n.kind == NodeKind::Ecu.as_str() && n.interfaces.len() > 1;
        for i in &n.interfaces {
            let Some((pn, pi)) = i.peer.as_deref().and_then(|p| p.split_once('/')) else {
                continue;
            };
            let switch_pair =
                n.kind == NodeKind::Switch.as_str() && kind(pn) == Some(NodeKind::Switch.as_str());
            if !(switch_pair || multi_homed) {
                continue;
            }
            let seen = out
                .iter()
                .any(|l| l.a_node == pn && l.a_if == pi && l.b_node == n.name);
            if !seen {
                out.push(LinkRef {
                    a_node: n.name.clone(),
                    a_if: i.name.clone(),
                    b_node: pn.to_string(),
                    b_if: pi.to_string(),
                });
            }
        }
    }
    out
}

/// Runs ping-pong `scenarios` (the caller puts plain first) on a fresh `production` testbed
/// with the outages of `spec`: `sensor1` initiates, the consumer responds.
pub fn run(scenarios: &[Scenario], spec: &OutageSpec) -> Result<OutageReport> {
    let profiles: Vec<NamedProfile> = scenarios.iter().map(|s| s.profile.clone()).collect();
    run_with("pingpong", &profiles, spec, Measure::Rtt, &|site, k| {
        let outcome = run_scenario(site, &scenarios[k], None)?;
        Ok(Trace {
            starts_ns: outcome.starts_ns.clone(),
            latency_ns: outcome
                .exchanges
                .iter()
                .map(|e| (!e.lost).then(|| e.rtt_ns()))
                .collect(),
        })
    })
}

/// One profile of an experiment with outages: runs profile `k` of the run between the
/// testbed's `sensor1` and the consumer at the site given, for the whole of the outages'
/// schedule ([`OutageSpec::duration_s`]), and returns its units.
pub type Work<'a> = dyn Fn(&Site, usize) -> Result<Trace> + Sync + 'a;

/// Runs `work` once per profile of `profiles` on a fresh `production` testbed, with the
/// outages of `spec` taking links down and up while it runs (from its start); `experiment`
/// and `measure` name what the report holds.
pub fn run_with(
    experiment: &str,
    profiles: &[NamedProfile],
    spec: &OutageSpec,
    measure: Measure,
    work: &Work<'_>,
) -> Result<OutageReport> {
    let topology = Topology::Production;
    let tb = Testbed::up(&topology, &Options::default()).map_err(net_err)?;
    // Interrupted (crate::interrupt): the profiles that finished are reported, the one in
    // progress is left out, nothing more runs, and the testbed goes when this returns.
    crate::interrupt::remove_on_signal(&tb).map_err(net_err)?;
    let state = tb.state().clone();
    let mka = start_mka(&tb)?;
    let n_expected = mka.len().saturating_sub(1);
    wait_mka_live(&mka, n_expected)?;

    let eligible = candidate_links(&state);
    if eligible.is_empty() {
        return Err(usage(format!(
            "topology {topology} has no redundant link to take down"
        )));
    }
    let chosen: Vec<LinkRef> = spec.choose(&eligible).into_iter().cloned().collect();
    let (initiator, responder) = ("sensor1".to_string(), "consumer".to_string());
    let site = Site::Testbed {
        state: state.clone(),
        initiator: initiator.clone(),
        responder: responder.clone(),
    };

    let mut runs = Vec::new();
    let stopped = crate::interrupt::requested;
    for (k, profile) in profiles.iter().enumerate() {
        if stopped() {
            break;
        }
        wait_converged(&state, Duration::from_secs(30))?;
        let t_start = monotonic_ns();
        let run = std::thread::scope(|scope| -> Result<(Vec<Done>, Trace)> {
            let worker = scope.spawn(|| work(&site, k));
            let done = run_outages(&state, spec, &chosen, t_start, &mka);
            let trace = worker
                .join()
                .map_err(|_| anyhow!("the {experiment} thread panicked"))??;
            Ok((done?, trace))
        });
        // The profile in progress when the signal came is left out (its nodes were killed).
        if stopped() {
            break;
        }
        let (done, trace) = run?;
        let rtt = &trace.latency_ns;
        let events: Vec<Event> = done.iter().flat_map(|o| o.events.clone()).collect();
        let stats = analyse(&trace.starts_ns, rtt, &events, measure);
        let first = events.first().map_or(u64::MAX, |e| e.at_ns);
        let mut outages = Vec::new();
        for (k, o) in done.iter().enumerate() {
            outages.push(OutageStats {
                link: o.link.clone(),
                on_tree: o.on_tree,
                events: stats
                    .iter()
                    .skip(2 * k)
                    .take(o.events.len())
                    .cloned()
                    .collect(),
                mka: o.mka.clone(),
            });
        }
        runs.push(ProfileRun {
            profile: profile.clone(),
            units: rtt.len(),
            lost: rtt.iter().filter(|r| r.is_none()).count(),
            latency_before_us: rtt_before(&trace.starts_ns, rtt, first),
            outages,
            measure,
        });
    }
    let mka_final = mka
        .iter()
        .map(|p| {
            let st = status(&p.run_dir).unwrap_or(Value::Null);
            MkaFinal {
                participant: p.name.clone(),
                live_peers: live_peers(&st),
                expected_peers: n_expected,
                transmitting: !st["tx"]["encoding_an"].is_null(),
            }
        })
        .collect();
    // All asked to stop at once (each Drop then waits for its own).
    for p in &mka {
        let _ = ivnsec_net::sys::signal_process(p.child.id(), false);
    }
    drop(mka);
    let report = OutageReport {
        experiment: experiment.to_string(),
        testbed: state.prefix.clone(),
        topology: state.topology.clone(),
        spec: spec.clone(),
        eligible_links: eligible.iter().map(LinkRef::label).collect(),
        chosen_links: chosen.iter().map(LinkRef::label).collect(),
        path: format!("{initiator} → {responder}"),
        runs,
        mka_final,
    };
    drop(tb);
    Ok(report)
}

impl OutageReport {
    /// Whether every event was recovered from and every MKA participant ended with all its
    /// peers live and transmitting (the command's exit 0).
    pub fn passed(&self) -> bool {
        let recovered = self.runs.iter().all(|r| {
            r.outages
                .iter()
                .all(|o| o.events.iter().all(|e| e.recovered_after_ms.is_some()))
        });
        let mka_ok = self
            .mka_final
            .iter()
            .all(|m| m.live_peers == m.expected_peers && m.transmitting);
        recovered && mka_ok
    }
}

/// One outage as it happened.
struct Done {
    link: String,
    on_tree: bool,
    events: Vec<Event>,
    mka: Vec<MkaWindow>,
}

/// Takes the chosen links down and up on schedule (from `t_start`), watching the tree; then
/// reads what the MKA participants logged from each outage's start to the next one's.
fn run_outages(
    state: &TestbedState,
    spec: &OutageSpec,
    chosen: &[LinkRef],
    t_start: u64,
    mka: &[Participant],
) -> Result<Vec<Done>> {
    let mut done = Vec::new();
    let mut unix_downs = Vec::new();
    let at = |s: f64| t_start + (s * 1e9) as u64;
    for (k, link) in chosen.iter().enumerate() {
        sleep_until(at(spec.down_at_s(k as u32)))?;
        let view = testbed::converged(state).map_err(net_err)?;
        let port = |n: &str, i: &str| {
            let name = format!("{n}/{i}");
            view.ports
                .iter()
                .find(|(p, _)| *p == name)
                .map(|(_, s)| s.clone())
        };
        // A link is on the tree when neither end is a blocked bridge port.
        let on_tree = [(&link.a_node, &link.a_if), (&link.b_node, &link.b_if)]
            .iter()
            .all(|(n, i)| port(n, i).is_none_or(|s| s == "forwarding"));
        unix_downs.push(unix_now());
        let t_down = monotonic_ns();
        set_link(state, link, false)?;
        let up_at = t_down + (spec.down_s * 1e9) as u64;
        let settled_down = watch_settled(state, up_at, false)?;
        sleep_until(up_at)?;
        let t_up = monotonic_ns();
        set_link(state, link, true)?;
        let next = if k + 1 < chosen.len() {
            at(spec.down_at_s(k as u32 + 1))
        } else {
            t_up + (super::TAIL_S * 1e9) as u64
        };
        let settled_up = watch_settled(state, next.saturating_sub(500_000_000), true)?;
        let label = link.label();
        done.push(Done {
            link: label.clone(),
            on_tree,
            events: vec![
                Event {
                    down: true,
                    link: label.clone(),
                    at_ns: t_down,
                    settled_ns: settled_down,
                },
                Event {
                    down: false,
                    link: label,
                    at_ns: t_up,
                    settled_ns: settled_up,
                },
            ],
            mka: Vec::new(),
        });
    }
    // Let the last `peer_live` lines reach the files.
    std::thread::sleep(Duration::from_millis(500));
    for (k, d) in done.iter_mut().enumerate() {
        let from = unix_downs[k];
        let to = unix_downs.get(k + 1).copied().unwrap_or(f64::INFINITY);
        d.mka = mka.iter().map(|p| mka_window(p, from, to)).collect();
    }
    Ok(done)
}

/// At most `limit` bytes of a file as text (what a participant wrote: bounded all the same).
fn read_bounded(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)?
        .take(limit)
        .read_to_string(&mut s)?;
    Ok(s)
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Sleeps until `mono` (CLOCK_MONOTONIC ns); an interrupt ends the wait (and the run) within
/// a tenth of a second.
fn sleep_until(mono: u64) -> Result<()> {
    loop {
        if crate::interrupt::requested() {
            return Err(anyhow!("interrupted"));
        }
        let now = monotonic_ns();
        if mono <= now {
            return Ok(());
        }
        std::thread::sleep(Duration::from_nanos((mono - now).min(100_000_000)));
    }
}

/// `ip -n NS link set IF down|up` at the link's first end (its peer loses carrier with it).
fn set_link(state: &TestbedState, link: &LinkRef, up: bool) -> Result<()> {
    let ns = state.namespace_of(&link.a_node).map_err(net_err)?;
    let out = ivnsec_net::sys::die_with_parent(&mut Command::new("ip"))
        .args(["-n", ns, "link", "set", &link.a_if])
        .arg(if up { "up" } else { "down" })
        .stdin(Stdio::null())
        .output()?;
    if !out.status.success() {
        return Err(anyhow!(
            "ip -n {ns} link set {} {}: {}",
            link.a_if,
            if up { "up" } else { "down" },
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// Polls the tree until it has settled (with `all_up`: converged, every interface up), or
/// `until` (CLOCK_MONOTONIC ns) passes; the time it was first seen settled after having been
/// seen unsettled, or the first poll's time when it never was.
fn watch_settled(state: &TestbedState, until: u64, all_up: bool) -> Result<Option<u64>> {
    // The kernel applies the carrier change at once; give it a moment to reach every bridge.
    std::thread::sleep(Duration::from_millis(50));
    loop {
        let now = monotonic_ns();
        let v = testbed::converged(state).map_err(net_err)?;
        let ok = if all_up {
            v.is_converged()
        } else {
            v.is_settled()
        };
        if ok {
            return Ok(Some(now));
        }
        if now >= until {
            return Ok(None);
        }
        if crate::interrupt::requested() {
            return Err(anyhow!("interrupted"));
        }
        std::thread::sleep(Duration::from_millis(STP_POLL_MS));
    }
}

fn wait_converged(state: &TestbedState, timeout: Duration) -> Result<()> {
    let t0 = Instant::now();
    loop {
        let v = testbed::converged(state).map_err(net_err)?;
        // Interrupted: the caller's loop ends at once.
        if v.is_converged() || crate::interrupt::requested() {
            return Ok(());
        }
        if t0.elapsed() > timeout {
            return Err(anyhow!(
                "the spanning tree did not converge within {timeout:?}: {}",
                v.why_not()
            ));
        }
        std::thread::sleep(Duration::from_millis(STP_POLL_MS));
    }
}

/// Starts MKA on one fresh pre-shared CAK in the consumer (`ivnsec macsec up` on its `eth0`;
/// its address stays there, so the ping-pong runs beside it) and in every gateway, with their
/// files beside the testbed's state (removed with it).
fn start_mka(tb: &Testbed) -> Result<Vec<Participant>> {
    let dir = tb.state_dir().join(format!("{}-gateways", tb.prefix()));
    std::fs::create_dir_all(&dir).map_err(|e| anyhow!("creating {}: {e}", dir.display()))?;
    let psk_path = dir.join("mka.psk");
    let _ = std::fs::remove_file(&psk_path);
    let psk = ivnsec_node::keys::psk::Psk::generate(128, None)?;
    ivnsec_node::keys::psk::write_new(&psk_path, &psk)?;
    drop(psk);
    let exe = std::env::current_exe().map_err(|e| anyhow!("locating the ivnsec binary: {e}"))?;
    let mut out = Vec::new();
    let nodes: Vec<&testbed::NodeState> = tb
        .state()
        .nodes
        .iter()
        .filter(|n| n.name == "consumer" || n.kind == NodeKind::Gateway.as_str())
        .collect();
    for n in nodes {
        let run_dir = dir.join(format!("run-{}", n.name));
        let events = dir.join(format!("events-{}.jsonl", n.name));
        let mut cmd = testbed::netns_command(&n.namespace, &exe);
        if n.kind == NodeKind::Gateway.as_str() {
            cmd.args([
                "gateway",
                "--plain",
                topology::GATEWAY_PLAIN_IF,
                "--protected",
                topology::GATEWAY_PROTECTED_IF,
            ]);
        } else {
            cmd.args(["macsec", "up", "--iface", topology::ECU_IF, "--tap", "mka0"]);
        }
        cmd.args(["--profile", MKA_PROFILE, "--psk"])
            .arg(&psk_path)
            .arg("--state-dir")
            .arg(dir.join(format!("state-{}", n.name)))
            .arg("--run-dir")
            .arg(&run_dir)
            .arg("--events")
            .arg(&events)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = ivnsec_net::sys::die_with_parent(&mut cmd)
            .spawn()
            .map_err(|e| anyhow!("starting MKA in {}: {e}", n.name))?;
        out.push(Participant {
            name: n.name.clone(),
            run_dir,
            events,
            child,
        });
    }
    Ok(out)
}

/// The one status file in `run_dir/macsec/`.
fn status(run_dir: &Path) -> Option<Value> {
    let d = std::fs::read_dir(run_dir.join("macsec")).ok()?;
    for e in d.flatten() {
        if e.file_name().to_string_lossy().ends_with(".json") {
            let text = read_bounded(&e.path(), 1 << 20).ok()?;
            return serde_json::from_str(&text).ok();
        }
    }
    None
}

fn live_peers(st: &Value) -> usize {
    st["key_source_state"]["peers"]
        .as_array()
        .map_or(0, |v| v.iter().filter(|p| p["live"] == true).count())
}

fn wait_mka_live(mka: &[Participant], expected: usize) -> Result<()> {
    let t0 = Instant::now();
    loop {
        let mut missing = Vec::new();
        for p in mka {
            let st = status(&p.run_dir).unwrap_or(Value::Null);
            if live_peers(&st) < expected || st["tx"]["encoding_an"].is_null() {
                missing.push(p.name.clone());
            }
        }
        // Interrupted: no profile runs; the report holds none.
        if missing.is_empty() || crate::interrupt::requested() {
            return Ok(());
        }
        if t0.elapsed() > MKA_START_TIMEOUT {
            return Err(anyhow!(
                "MKA did not come up within {MKA_START_TIMEOUT:?} ({} without {expected} live \
                 peers and a transmit SA)",
                missing.join(", ")
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What participant `p` logged from `from` to `to` (Unix seconds).
fn mka_window(p: &Participant, from: f64, to: f64) -> MkaWindow {
    let text = read_bounded(&p.events, 16 << 20).unwrap_or_default();
    let (mut lost, mut live, mut saks, mut last_live) = (0, 0, Vec::new(), None);
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let t = v["time"].as_f64().unwrap_or(0.0);
        if t < from || t >= to {
            continue;
        }
        match v["event"].as_str() {
            Some("peer_lost") => lost += 1,
            Some("peer_live") => {
                live += 1;
                last_live = Some(t);
            }
            Some("sak_installed") => {
                if let Some(k) = v["key_number"].as_u64() {
                    if !saks.contains(&k) {
                        saks.push(k);
                    }
                }
            }
            _ => {}
        }
    }
    let verdict = if lost == 0 {
        "survived"
    } else if live >= lost {
        "re-established"
    } else {
        "not re-established"
    };
    MkaWindow {
        participant: p.name.clone(),
        peers_lost: lost,
        peers_live: live,
        saks_installed: saks,
        reestablished_after_s: last_live.filter(|_| lost > 0).map(|t| t - from),
        verdict: verdict.to_string(),
    }
}
