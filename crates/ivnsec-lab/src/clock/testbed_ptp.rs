//! PTP on a namespace testbed: a ptp4l per ECU and switch namespace ([`TestbedPtp`]), started,
//! waited for until every port is synchronised, held in the foreground (`testbed up --ptp`) and
//! stopped; what the clock state of each node is comes from [`super`]'s pmc readings.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use ivnsec_net::sys::die_with_parent;

use super::{ClockSet, DEFAULT_UDS, HostRunner, MAX_PROBE_OUTPUT, Target, testbed_uds};

/// Where ptp4l is installed, if it is (searched in PATH, then /usr/sbin and /sbin, which a
/// non-root PATH may lack).
pub fn find_ptp4l() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(std::path::PathBuf::from))
        .map(|d| d.join("ptp4l"))
        .find(|p| p.is_file())
}

/// The longest path a Unix socket address holds (`sun_path` less its NUL).
const MAX_UDS_PATH: usize = 107;

/// How long [`TestbedPtp::wait_ready`] waits for the ports by default: ptp4l's master waits
/// for three missed announce intervals (about 6 s) before it claims the role, and the slaves
/// qualify it over two announces.
pub const PTP_READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One ptp4l of a testbed.
struct PtpNode {
    node: String,
    namespace: String,
    uds: std::path::PathBuf,
    log: std::path::PathBuf,
    child: std::process::Child,
}

/// ptp4l on every ECU of a testbed (`ivnsec testbed up --ptp`): IEEE 802.3 transport (`-2`,
/// through the software switch), software timestamping (`-S`, veth has no hardware clock), the
/// first ECU the grand master, the others slave-only (`-s`). Every instance runs with
/// `free_running 1`: the namespaces share this machine's system clock, and a slave that
/// steered it would steer the host's clock (and its master's) — so the slaves measure their
/// offset but never adjust, and linuxptp keeps their ports UNCALIBRATED (a port becomes SLAVE
/// only once its servo locks). Each instance listens for pmc on its own socket
/// ([`testbed_uds`]) and logs notices and errors to `<state dir>/ptp/<namespace>.log`. The
/// processes die with this one; dropping the value stops them and removes their sockets and
/// logs.
pub struct TestbedPtp {
    nodes: Vec<PtpNode>,
    dir: std::path::PathBuf,
}

impl TestbedPtp {
    /// Whether ptp4l can run on a testbed of this shape: two ECUs or more, all on one switched
    /// network (no bump-in-the-wire gateway between an ECU and the switch: PTP frames would
    /// cross it only once `ivnsec gateway` runs there). A usage error saying why otherwise.
    pub fn check_shape(state: &ivnsec_net::testbed::TestbedState) -> anyhow::Result<()> {
        if state.nodes.iter().any(|n| n.kind == "gateway") {
            return Err(ivnsec_node::error::usage(format!(
                "--ptp does not run on topology {}: its legacy ECUs reach the switch only \
                 through gateways, which pass frames once `ivnsec gateway` runs in them; use \
                 pair, steer-by-wire, sensors:N or cascade:N",
                state.topology
            )));
        }
        let ecus = state.ecus().filter(|n| !n.interfaces.is_empty()).count();
        if ecus < 2 {
            return Err(ivnsec_node::error::usage(format!(
                "--ptp needs two ECUs or more; topology {} has {ecus}",
                state.topology
            )));
        }
        Ok(())
    }

    /// Starts ptp4l on the ECUs of `state` (at least two).
    pub fn start(
        state: &ivnsec_net::testbed::TestbedState,
        state_dir: &std::path::Path,
    ) -> anyhow::Result<TestbedPtp> {
        use anyhow::Context;
        let ptp4l = find_ptp4l().ok_or_else(|| {
            ivnsec_node::error::env_error(
                "ptp4l is not installed: install linuxptp (Debian: apt-get install linuxptp; \
                 scripts/setup does it)",
            )
        })?;
        Self::check_shape(state)?;
        let ecus: Vec<&ivnsec_net::testbed::NodeState> =
            state.ecus().filter(|n| !n.interfaces.is_empty()).collect();
        let dir = state_dir.join("ptp");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut ptp = TestbedPtp {
            nodes: Vec::new(),
            dir,
        };
        for (i, n) in ecus.iter().enumerate() {
            let uds = testbed_uds(state_dir, &n.namespace);
            if uds.as_os_str().len() > MAX_UDS_PATH {
                return Err(ivnsec_node::error::usage(format!(
                    "the ptp4l socket {} is longer than a Unix socket address allows ({} bytes): \
                     use a shorter state directory (IVNSEC_STATE_DIR)",
                    uds.display(),
                    MAX_UDS_PATH
                )));
            }
            let log = ptp.dir.join(format!("{}.log", n.namespace));
            let out = std::fs::File::create(&log)
                .with_context(|| format!("creating {}", log.display()))?;
            let err = out.try_clone()?;
            let mut cmd = ivnsec_net::testbed::netns_command(&n.namespace, &ptp4l);
            cmd.args(["-2", "-S", "-m", "-q", "-i"])
                .arg(&n.interfaces[0].name)
                .arg("--logging_level=5")
                .arg("--free_running=1")
                .arg(format!("--message_tag={}", n.name))
                .arg(format!("--uds_address={}", uds.display()));
            if i > 0 {
                cmd.arg("-s");
            }
            cmd.stdin(Stdio::null()).stdout(out).stderr(err);
            let child = die_with_parent(&mut cmd)
                .spawn()
                .with_context(|| format!("starting ptp4l in {}", n.namespace))?;
            ptp.nodes.push(PtpNode {
                node: n.name.clone(),
                namespace: n.namespace.clone(),
                uds,
                log,
                child,
            });
        }
        Ok(ptp)
    }

    /// The grand master's node name (the first ECU).
    pub fn master(&self) -> &str {
        &self.nodes[0].node
    }

    /// The namespaces, grand master first.
    pub fn namespaces(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.namespace.clone()).collect()
    }

    /// Asks every instance with pmc (the same probe as `clock check --netns`).
    pub fn probe(&self, max_offset_ns: u64) -> ClockSet {
        let targets: Vec<Target> = self
            .nodes
            .iter()
            .map(|n| Target::Netns(n.namespace.clone()))
            .collect();
        let runners: Vec<&dyn HostRunner> = targets.iter().map(|t| t as &dyn HostRunner).collect();
        let uds: Vec<(String, String)> = self
            .nodes
            .iter()
            .map(|n| (n.namespace.clone(), n.uds.to_string_lossy().into_owned()))
            .collect();
        ClockSet::probe(
            &runners,
            |r| {
                uds.iter()
                    .find(|(ns, _)| *ns == r.name())
                    .map_or_else(|| DEFAULT_UDS.to_string(), |(_, u)| u.clone())
            },
            max_offset_ns,
        )
    }

    /// A ptp4l that has ended, with the end of its log: `Some("ecu2 (ivn-…-ecu2): exit status
    /// 255: …")`.
    pub fn exited(&mut self) -> Option<String> {
        for n in &mut self.nodes {
            if let Ok(Some(status)) = n.child.try_wait() {
                return Some(format!(
                    "ptp4l of {} ({}) ended ({status}): {}",
                    n.node,
                    n.namespace,
                    log_tail(&n.log)
                ));
            }
        }
        None
    }

    /// Waits until the grand master's port is MASTER and every slave's port follows it
    /// (UNCALIBRATED or SLAVE with the grand master's identity); returns the last probe.
    pub fn wait_ready(
        &mut self,
        timeout: Duration,
        max_offset_ns: u64,
    ) -> anyhow::Result<ClockSet> {
        let start = Instant::now();
        loop {
            if let Some(why) = self.exited() {
                return Err(ivnsec_node::error::env_error(why));
            }
            let set = self.probe(max_offset_ns);
            if ready(&set) {
                return Ok(set);
            }
            if start.elapsed() > timeout {
                let states: Vec<String> = set
                    .hosts
                    .iter()
                    .map(|h| format!("{}: {} ({})", h.host, h.state.as_str(), h.reason))
                    .collect();
                return Err(ivnsec_node::error::env_error(format!(
                    "ptp4l did not reach MASTER/SLAVE within {} s: {}; logs in {}",
                    timeout.as_secs(),
                    states.join("; "),
                    self.dir.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// The testbed's ptp4l instances are up: the first is the grand master (port MASTER, its own
/// grand master), every other follows it (UNCALIBRATED or SLAVE, that grand master present) and
/// has measured a path delay (a Sync and a Delay_Req exchange completed, so its offset is a
/// measurement, not the initial zero).
pub fn ready(set: &ClockSet) -> bool {
    let Some((gm, slaves)) = set.hosts.split_first() else {
        return false;
    };
    let Some(gm_id) = gm.clock_identity.as_deref() else {
        return false;
    };
    gm.port_state.as_deref() == Some("MASTER")
        && gm.gm_identity.as_deref() == Some(gm_id)
        && slaves.iter().all(|h| {
            matches!(h.port_state.as_deref(), Some("UNCALIBRATED" | "SLAVE"))
                && h.gm_present == Some(true)
                && h.gm_identity.as_deref() == Some(gm_id)
                && h.mean_path_delay_ns.is_some_and(|d| d > 0.0)
        })
}

fn log_tail(path: &std::path::Path) -> String {
    let Ok(f) = std::fs::File::open(path) else {
        return "no log".into();
    };
    let mut buf = Vec::new();
    let _ = f.take(MAX_PROBE_OUTPUT as u64).read_to_end(&mut buf);
    let s = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(3)..].join(" | ")
}

/// How ptp4l held in the foreground ([`TestbedPtp::hold`]) ended; every instance is stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PtpEnd {
    /// A termination signal arrived (its number).
    Signal(i32),
    /// The testbed went down (`testbed down` stops the processes, then deletes the namespaces).
    TestbedDown,
    /// A ptp4l ended while the testbed stayed: why, with the end of its log.
    Failed(String),
}

impl TestbedPtp {
    /// Holds ptp4l in the foreground until a termination signal arrives on `signals` (installed
    /// before [`TestbedPtp::start`]) or an instance ends; then stops every instance. An ended
    /// ptp4l is the testbed going down when its namespaces are gone within 10 s.
    pub fn hold(
        mut self,
        prefix: &str,
        signals: ivnsec_net::sys::TerminationSignals,
    ) -> anyhow::Result<PtpEnd> {
        use std::sync::mpsc::{RecvTimeoutError, channel};
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            if let Ok(sig) = signals.wait() {
                let _ = tx.send(sig);
            }
        });
        loop {
            match rx.recv_timeout(Duration::from_millis(250)) {
                Ok(sig) => return Ok(PtpEnd::Signal(sig)),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(anyhow::anyhow!("the signal watcher ended"));
                }
            }
            if let Some(why) = self.exited() {
                drop(self);
                // `testbed down` stops the processes first and then deletes the namespaces:
                // give it a moment before calling this a failure of ptp4l.
                let since = Instant::now();
                while since.elapsed() < Duration::from_secs(10) {
                    if ivnsec_net::testbed::live_namespaces(prefix)
                        .map_err(ivnsec_node::error::net_err)?
                        .is_empty()
                    {
                        return Ok(PtpEnd::TestbedDown);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                return Ok(PtpEnd::Failed(why));
            }
        }
    }
}

impl Drop for TestbedPtp {
    fn drop(&mut self) {
        for n in &mut self.nodes {
            let _ = n.child.kill();
            let _ = n.child.wait();
            let _ = std::fs::remove_file(&n.uds);
            let _ = std::fs::remove_file(&n.log);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
