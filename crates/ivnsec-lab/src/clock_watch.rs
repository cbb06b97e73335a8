//! The hosts' clocks watched while a run across hosts goes on.
//!
//! [`crate::clock`] reads each host's PTP state once; a run of minutes can outlive a
//! synchronisation (a grand master lost, a servo that unlocks, a cable pulled). [`Watch`] probes
//! every host of a run periodically (every [`INTERVAL`], at most [`MAX_SAMPLES`] rounds) on a
//! thread of its own while the run goes on, and [`record`] puts what it saw in the report's
//! environment under [`CLOCK_DURING_RUN_KEY`]: per host the states seen, the smallest and the
//! largest |offset from master| and every sample. A host that was not synchronised in any sample
//! makes the run's `owd_clock` `unsynchronised`, so the report flags one-way delays exactly as it
//! does for clocks found unsynchronised before the run.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock::{self, HostRunner, OWD_CLOCK_KEY, OwdTrust, PtpState};

/// How often the hosts are asked during a run.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// The most probing rounds one run records (an hour at [`INTERVAL`]); later rounds are not
/// taken, and the record says it was cut.
pub const MAX_SAMPLES: usize = 720;

/// The report environment's key for the clocks watched during the run.
pub const CLOCK_DURING_RUN_KEY: &str = "clock_during_run";

/// One host's PTP state at one moment of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    /// Seconds since the watch started.
    pub t_s: f64,
    pub host: String,
    pub state: PtpState,
    pub port_state: Option<String>,
    pub offset_ns: Option<f64>,
}

/// What the watch saw of one host.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostSummary {
    pub host: String,
    pub samples: usize,
    /// Every state seen, in the order first seen.
    pub states_seen: Vec<PtpState>,
    /// Smallest and largest |offset from master| of the samples that had one, ns.
    pub min_abs_offset_ns: Option<f64>,
    pub max_abs_offset_ns: Option<f64>,
    /// Synchronised in every sample.
    pub synchronised_throughout: bool,
}

/// What the watch saw during the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DuringRun {
    pub interval_s: f64,
    pub max_offset_ns: u64,
    /// Stopped taking samples at [`MAX_SAMPLES`] rounds.
    pub truncated: bool,
    pub hosts: Vec<HostSummary>,
    pub samples: Vec<Sample>,
}

impl DuringRun {
    /// Summarises `samples` of `hosts` (in that order).
    pub fn of(
        hosts: &[String],
        samples: Vec<Sample>,
        interval: Duration,
        max_offset_ns: u64,
        truncated: bool,
    ) -> DuringRun {
        let hosts = hosts
            .iter()
            .map(|h| {
                let mine: Vec<&Sample> = samples.iter().filter(|s| &s.host == h).collect();
                let mut states_seen = Vec::new();
                for s in &mine {
                    if !states_seen.contains(&s.state) {
                        states_seen.push(s.state);
                    }
                }
                let offsets: Vec<f64> = mine
                    .iter()
                    .filter_map(|s| s.offset_ns)
                    .filter(|o| o.is_finite())
                    .map(f64::abs)
                    .collect();
                HostSummary {
                    host: h.clone(),
                    samples: mine.len(),
                    min_abs_offset_ns: offsets.iter().copied().reduce(f64::min),
                    max_abs_offset_ns: offsets.iter().copied().reduce(f64::max),
                    synchronised_throughout: !mine.is_empty()
                        && mine.iter().all(|s| s.state == PtpState::Synchronised),
                    states_seen,
                }
            })
            .collect();
        DuringRun {
            interval_s: interval.as_secs_f64(),
            max_offset_ns,
            truncated,
            hosts,
            samples,
        }
    }

    /// The hosts that were not synchronised in some sample.
    pub fn left_synchronised(&self) -> Vec<&HostSummary> {
        self.hosts
            .iter()
            .filter(|h| !h.synchronised_throughout)
            .collect()
    }
}

struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

/// Probes a set of hosts periodically on a thread of its own until [`Watch::finish`].
pub struct Watch {
    names: Vec<String>,
    stop: Arc<Stop>,
    thread: Option<JoinHandle<(Vec<Sample>, bool)>>,
    interval: Duration,
    max_offset_ns: u64,
}

impl Watch {
    /// Starts watching `hosts` (each asked with pmc on ptp4l's default socket): one round at
    /// once, then one every `interval`, at most `max_rounds` rounds, and a last one at
    /// [`Watch::finish`].
    pub fn start<H: HostRunner + Send + 'static>(
        hosts: Vec<H>,
        interval: Duration,
        max_rounds: usize,
        max_offset_ns: u64,
    ) -> Watch {
        let names = hosts.iter().map(|h| h.name()).collect();
        let stop = Arc::new(Stop {
            stopped: Mutex::new(false),
            wake: Condvar::new(),
        });
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut samples = Vec::new();
            let mut rounds = 0usize;
            let round = |samples: &mut Vec<Sample>| {
                for h in &hosts {
                    let c = clock::probe(h, clock::DEFAULT_UDS, max_offset_ns);
                    samples.push(Sample {
                        t_s: (t0.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
                        host: c.host,
                        state: c.state,
                        port_state: c.port_state,
                        offset_ns: c.offset_ns,
                    });
                }
            };
            loop {
                if rounds >= max_rounds {
                    return (samples, true);
                }
                round(&mut samples);
                rounds += 1;
                let next = t0 + interval * rounds as u32;
                let mut stopped = s.stopped.lock().unwrap_or_else(|e| e.into_inner());
                while !*stopped {
                    let now = Instant::now();
                    if now >= next {
                        break;
                    }
                    stopped = s
                        .wake
                        .wait_timeout(stopped, next - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                if *stopped {
                    drop(stopped);
                    // The state at the end of the run.
                    if rounds < max_rounds {
                        round(&mut samples);
                        return (samples, false);
                    }
                    return (samples, true);
                }
            }
        });
        Watch {
            names,
            stop,
            thread: Some(thread),
            interval,
            max_offset_ns,
        }
    }

    /// Watches the hosts of a run across hosts with the defaults ([`INTERVAL`],
    /// [`MAX_SAMPLES`], [`clock::DEFAULT_MAX_OFFSET_NS`]).
    pub fn hosts(hosts: &[&crate::hosts::Host]) -> Watch {
        Watch::start(
            hosts.iter().map(|h| (*h).clone()).collect(),
            INTERVAL,
            MAX_SAMPLES,
            clock::DEFAULT_MAX_OFFSET_NS,
        )
    }

    /// Stops the watch (after a last round) and returns what it saw.
    pub fn finish(mut self) -> DuringRun {
        self.signal();
        let (samples, truncated) = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        DuringRun::of(
            &self.names,
            samples,
            self.interval,
            self.max_offset_ns,
            truncated,
        )
    }

    fn signal(&self) {
        *self.stop.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.wake.notify_all();
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // A run that failed: stop the thread; it ends after its probe in flight (bounded by
        // the probe's own timeout) without being waited for.
        self.signal();
    }
}

/// Records `during` in a report's environment; when a host was not synchronised in some
/// sample and the clocks did not share one machine, `owd_clock` becomes `unsynchronised` and
/// `clock_state` says which host and when, so the report flags one-way delays.
pub fn record(env: &mut serde_json::Map<String, serde_json::Value>, during: &DuringRun) {
    env.insert(
        CLOCK_DURING_RUN_KEY.into(),
        serde_json::to_value(during).unwrap_or_default(),
    );
    let shared = env.get(OWD_CLOCK_KEY) == Some(&serde_json::json!(OwdTrust::SharedClock));
    let left = during.left_synchronised();
    if shared || left.is_empty() {
        return;
    }
    let what: Vec<String> = left
        .iter()
        .map(|h| {
            let states: Vec<&str> = h.states_seen.iter().map(|s| s.as_str()).collect();
            format!("{} ({})", h.host, states.join(", "))
        })
        .collect();
    let line = format!(
        "during the run not synchronised: {}; one-way delays carry the clocks' offset",
        what.join("; ")
    );
    let state = match env.get(clock::CLOCK_STATE_KEY).and_then(|v| v.as_str()) {
        Some(s) => format!("{s}; {line}"),
        None => line,
    };
    env.insert(clock::CLOCK_STATE_KEY.into(), serde_json::json!(state));
    env.insert(
        OWD_CLOCK_KEY.into(),
        serde_json::json!(OwdTrust::Unsynchronised),
    );
}

/// The clock a node stamps one-way delays with: `CLOCK_MONOTONIC` on one host (every namespace
/// shares it; the results of runs on a testbed or loopback stay as they were), `CLOCK_REALTIME`
/// across hosts, the clock ptp4l (software timestamps) or phc2sys (from the NIC's PTP hardware
/// clock) keeps on the grand master's time. Only the stamps a one-way delay is taken from use it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StampClock {
    #[default]
    Monotonic,
    Realtime,
}

impl StampClock {
    /// Now on this clock, ns.
    pub fn now_ns(self) -> u64 {
        match self {
            StampClock::Monotonic => ivnsec_net::sys::monotonic_ns(),
            // SystemTime is CLOCK_REALTIME on Linux.
            StampClock::Realtime => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StampClock::Monotonic => "CLOCK_MONOTONIC",
            StampClock::Realtime => "CLOCK_REALTIME",
        }
    }
}

/// Where `/proc` tells which boot of which machine this is (a random UUID per boot).
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// A boot id as the kernel prints it: 36 characters, hex digits and dashes.
fn boot_id(text: &str) -> Option<String> {
    let t = text.trim();
    (t.len() == 36 && t.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
        .then(|| t.to_ascii_lowercase())
}

/// This machine's boot id.
pub fn this_boot_id() -> Option<String> {
    let mut buf = String::new();
    use std::io::Read;
    std::fs::File::open(BOOT_ID)
        .ok()?
        .take(128)
        .read_to_string(&mut buf)
        .ok()?;
    boot_id(&buf)
}

/// The boot id of a host, asked with `cat` there; `None` when it cannot be read.
pub fn boot_id_of(host: &dyn HostRunner) -> Option<String> {
    let out = host.run(&["cat".to_string(), BOOT_ID.to_string()]).ok()?;
    if out.code != Some(0) {
        return None;
    }
    boot_id(&String::from_utf8_lossy(&out.stdout))
}

/// Whether one-way delays may be taken between `hosts`, decided before a run: yes when every
/// host is this very machine (the same boot id: network namespaces or containers of it, one
/// system clock) or when every host is PTP-synchronised (pmc over its ssh); else an environment
/// error (exit 3) naming each host that is not, its clock state and how to fix it. Returns the
/// sentence the report carries about the clocks, and whether they are this machine's one clock.
pub fn one_way_clocks(
    what: &str,
    hosts: &[&dyn HostRunner],
    max_offset_ns: u64,
) -> anyhow::Result<(String, bool)> {
    let names: Vec<String> = hosts.iter().map(|h| h.name()).collect();
    if let Some(me) = this_boot_id()
        && hosts
            .iter()
            .all(|h| boot_id_of(*h).as_deref() == Some(me.as_str()))
    {
        return Ok((
            format!(
                "one-way delays on CLOCK_REALTIME; shared clock: {} run on this machine (the same \
                 boot id), one system clock",
                names.join(", ")
            ),
            true,
        ));
    }
    let set = clock::ClockSet::probe(hosts, |_| clock::DEFAULT_UDS.to_string(), max_offset_ns);
    let bad: Vec<String> = set
        .hosts
        .iter()
        .filter(|h| h.state != PtpState::Synchronised)
        .map(|h| format!("host {} is {} ({})", h.host, h.state.as_str(), h.reason))
        .collect();
    if !bad.is_empty() {
        return Err(ivnsec_node::error::env_error(format!(
            "{what} across hosts takes one-way delays from the sender's clock to the receiver's, \
             which needs one clock or clocks synchronised by PTP: {}. Run ptp4l on every host \
             (and phc2sys with hardware timestamping) until `ivnsec clock check --plan PLAN` says \
             synchronised (docs/multihost.md, Clocks (PTP)), or run {what} on a testbed",
            bad.join("; ")
        )));
    }
    let offsets: Vec<String> = set
        .hosts
        .iter()
        .map(|h| match h.offset_ns {
            Some(o) if h.port_state.as_deref() != Some("MASTER") => {
                format!("{} offset {o:.0} ns", h.host)
            }
            _ => format!(
                "{} {}",
                h.host,
                h.port_state.as_deref().unwrap_or("synchronised")
            ),
        })
        .collect();
    Ok((
        format!(
            "one-way delays on CLOCK_REALTIME; PTP-synchronised within ±{max_offset_ns} ns \
             before the run: {}",
            offsets.join(", ")
        ),
        false,
    ))
}

/// The note an experiment's report carries when a host was not synchronised in some sample of
/// the watch during the run, unless the hosts share this machine's one clock (`shared`).
pub fn flag_of(during: &DuringRun, shared: bool) -> Option<String> {
    let left = during.left_synchronised();
    if shared || left.is_empty() {
        return None;
    }
    let what: Vec<String> = left
        .iter()
        .map(|h| {
            let states: Vec<&str> = h.states_seen.iter().map(|s| s.as_str()).collect();
            format!("{} ({})", h.host, states.join(", "))
        })
        .collect();
    Some(format!(
        "FLAGGED: not synchronised during the run: {}; the one-way delays carry the clocks' \
         offset while a host was not synchronised (docs/multihost.md, Clocks (PTP))",
        what.join("; ")
    ))
}

/// A watch over the two hosts of an experiment that judges one-way delays, and what it
/// yields for the report: the watch's record and the flag ([`flag_of`]).
pub struct ExperimentWatch {
    watch: Watch,
    shared: bool,
}

impl ExperimentWatch {
    pub fn start(hosts: &[&crate::hosts::Host], shared: bool) -> ExperimentWatch {
        ExperimentWatch {
            watch: Watch::hosts(hosts),
            shared,
        }
    }

    /// Stops the watch: the record (JSON) and the flag, if any.
    pub fn finish(self) -> (serde_json::Value, Option<String>) {
        let during = self.watch.finish();
        let flag = flag_of(&during, self.shared);
        (serde_json::to_value(&during).unwrap_or_default(), flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{FnRunner, RunOutput};

    fn sample(t: f64, host: &str, state: PtpState, off: Option<f64>) -> Sample {
        Sample {
            t_s: t,
            host: host.into(),
            state,
            port_state: None,
            offset_ns: off,
        }
    }

    #[test]
    fn summary_per_host() {
        let d = DuringRun::of(
            &["a".into(), "b".into()],
            vec![
                sample(0.0, "a", PtpState::Synchronised, Some(-40.0)),
                sample(0.0, "b", PtpState::Synchronised, Some(5.0)),
                sample(5.0, "a", PtpState::Synchronised, Some(120.0)),
                sample(5.0, "b", PtpState::Unsynchronised, Some(-25_000.0)),
                sample(10.0, "b", PtpState::NoPtp4l, None),
            ],
            INTERVAL,
            10_000,
            false,
        );
        let a = &d.hosts[0];
        assert_eq!(a.samples, 2);
        assert_eq!(a.states_seen, [PtpState::Synchronised]);
        assert_eq!(a.min_abs_offset_ns, Some(40.0));
        assert_eq!(a.max_abs_offset_ns, Some(120.0));
        assert!(a.synchronised_throughout);
        let b = &d.hosts[1];
        assert_eq!(b.samples, 3);
        assert_eq!(
            b.states_seen,
            [
                PtpState::Synchronised,
                PtpState::Unsynchronised,
                PtpState::NoPtp4l
            ]
        );
        assert_eq!(b.min_abs_offset_ns, Some(5.0));
        assert_eq!(b.max_abs_offset_ns, Some(25_000.0));
        assert!(!b.synchronised_throughout);
        assert_eq!(d.left_synchronised().len(), 1);
    }

    #[test]
    fn a_host_leaving_sync_flags_the_one_way_delays() {
        let mut env = serde_json::Map::new();
        env.insert(OWD_CLOCK_KEY.into(), serde_json::json!("synchronised"));
        env.insert(
            clock::CLOCK_STATE_KEY.into(),
            serde_json::json!("synchronised: …"),
        );
        let d = DuringRun::of(
            &["a".into()],
            vec![
                sample(0.0, "a", PtpState::Synchronised, Some(1.0)),
                sample(5.0, "a", PtpState::Unsynchronised, Some(50_000.0)),
            ],
            INTERVAL,
            10_000,
            false,
        );
        record(&mut env, &d);
        assert_eq!(env[OWD_CLOCK_KEY], "unsynchronised");
        assert!(clock::owd_flag(&env).is_some());
        let state = env[clock::CLOCK_STATE_KEY].as_str().unwrap();
        assert!(
            state.contains("during the run not synchronised: a (synchronised, unsynchronised)"),
            "{state}"
        );
        assert_eq!(
            env[CLOCK_DURING_RUN_KEY]["hosts"][0]["max_abs_offset_ns"],
            50_000.0
        );
        // Synchronised throughout: nothing changes.
        let mut env = serde_json::Map::new();
        env.insert(OWD_CLOCK_KEY.into(), serde_json::json!("synchronised"));
        let d = DuringRun::of(
            &["a".into()],
            vec![sample(0.0, "a", PtpState::Synchronised, Some(1.0))],
            INTERVAL,
            10_000,
            false,
        );
        record(&mut env, &d);
        assert_eq!(env[OWD_CLOCK_KEY], "synchronised");
        assert!(env.contains_key(CLOCK_DURING_RUN_KEY));
        assert_eq!(flag_of(&d, false), None);
        // An experiment's flag: only when a host left sync and the clocks are not one.
        let left = DuringRun::of(
            &["a".into()],
            vec![
                sample(0.0, "a", PtpState::Synchronised, Some(1.0)),
                sample(5.0, "a", PtpState::Unsynchronised, Some(50_000.0)),
            ],
            INTERVAL,
            10_000,
            false,
        );
        let f = flag_of(&left, false).unwrap();
        assert!(f.contains("a (synchronised, unsynchronised)"), "{f}");
        assert_eq!(flag_of(&left, true), None);
    }

    fn runner(name: &str, pmc: &'static str) -> impl HostRunner + Send + 'static {
        FnRunner {
            name: name.to_string(),
            via: "test",
            on_this_host: false,
            run: move |_: &[String]| -> Result<RunOutput, String> {
                Ok(RunOutput {
                    code: Some(0),
                    stdout: pmc.as_bytes().to_vec(),
                    stderr: Vec::new(),
                })
            },
        }
    }

    #[test]
    fn the_watch_takes_rounds_until_finished_and_is_bounded() {
        // A host where pmc answers nothing (ptp4l not running): every sample "no ptp4l".
        let w = Watch::start(
            vec![runner("x", "")],
            Duration::from_millis(20),
            MAX_SAMPLES,
            10_000,
        );
        std::thread::sleep(Duration::from_millis(110));
        let d = w.finish();
        // At once, about every 20 ms, and a last one at the end.
        assert!(d.hosts[0].samples >= 3, "{d:?}");
        assert!(!d.truncated);
        assert!(d.samples.windows(2).all(|w| w[0].t_s <= w[1].t_s));
        // At most max_rounds rounds however long the run.
        let w = Watch::start(
            vec![runner("x", ""), runner("y", "")],
            Duration::from_millis(1),
            4,
            10_000,
        );
        std::thread::sleep(Duration::from_millis(60));
        let d = w.finish();
        assert_eq!(d.samples.len(), 8, "{d:?}");
        assert!(d.truncated);
    }

    fn answering(name: &str, out: String, pmc: &'static str) -> impl HostRunner {
        FnRunner {
            name: name.to_string(),
            via: "test",
            on_this_host: false,
            run: move |argv: &[String]| -> Result<RunOutput, String> {
                Ok(RunOutput {
                    code: Some(0),
                    stdout: if argv[0] == "cat" {
                        out.clone().into_bytes()
                    } else {
                        pmc.as_bytes().to_vec()
                    },
                    stderr: Vec::new(),
                })
            },
        }
    }

    #[test]
    fn boot_ids_are_checked() {
        assert_eq!(
            boot_id("0B9E6C3A-55f1-4c1e-9a4f-0c0ffee00001\n").as_deref(),
            Some("0b9e6c3a-55f1-4c1e-9a4f-0c0ffee00001")
        );
        assert_eq!(boot_id("x; rm -rf /"), None);
        assert_eq!(boot_id(""), None);
        assert!(this_boot_id().is_some());
    }

    #[test]
    fn one_way_delays_need_one_machine_or_synchronised_clocks() {
        let me = this_boot_id().unwrap();
        // Both on this machine: allowed whatever PTP says.
        let a = answering("a", me.clone(), "");
        let b = answering("b", me.clone(), "");
        let (ok, shared) = one_way_clocks("camera", &[&a, &b], 10_000).unwrap();
        assert!(ok.contains("shared clock"), "{ok}");
        assert!(shared);
        // Another machine without ptp4l: refused, exit 3, naming it and the fix.
        let c = answering("ecu9", "0b9e6c3a-55f1-4c1e-9a4f-0c0ffee00001".into(), "");
        let e = one_way_clocks("camera", &[&a, &c], 10_000).unwrap_err();
        assert_eq!(ivnsec_node::error::exit_code(&e), 3);
        let msg = format!("{e:#}");
        assert!(msg.contains("host ecu9 is"), "{msg}");
        assert!(msg.contains("ptp4l") && msg.contains("phc2sys"), "{msg}");
    }
}
