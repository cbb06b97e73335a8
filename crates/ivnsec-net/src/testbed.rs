//! The testbed: a [`Topology`] built as real kernel networking — one network namespace per node,
//! veth links, a Linux bridge (in its own namespace) as the switch — and torn down again.
//!
//! Everything is done by running the `ip` command (iproute2) through `std::process::Command`,
//! not by speaking netlink ourselves: each step is a line a person can read, re-type and audit
//! (`ip -n NS -batch -` runs a namespace's lines in one process), and iproute2 already knows
//! every kernel's quirks. Building a testbed is not on a hot path.
//!
//! Guarantees:
//! - Names carry a random per-run prefix `ivn-<6 hex>`; the prefix is reserved by creating
//!   `<state dir>/<prefix>.json` exclusively *before* anything is created, so a crash mid-build
//!   still leaves a record that `down` uses.
//! - Only namespaces named `<prefix>-…` are ever deleted, and only processes running inside them
//!   are signalled. Deleting a namespace deletes its veth ends and so the peers.
//! - A [`Testbed`] tears down on drop unless [`Testbed::keep`] was called; [`down`] is
//!   idempotent.
//! - Inside each namespace IPv6 is disabled (`net.ipv6.conf.{all,default}.disable_ipv6=1`), so
//!   no duplicate-address detection, router solicitation or MLD frame disturbs a measurement;
//!   the bridge has STP off and forward delay 0, so ports forward at once; multicast snooping is
//!   off (a plain flooding switch); every ECU has a permanent ARP entry for every other ECU, so
//!   no ARP exchange lands inside a measurement. Offloads are left at the veth defaults: frames
//!   of at most the 1500-byte MTU never use segmentation offload, and the testbed does not need
//!   ethtool (see docs/testbed.md for turning offloads off for TCP tests).

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::topology::{
    self, IPV4_PREFIX_LEN, MTU, NodeKind, Plan, Topology, check_prefix, format_ipv4, format_mac,
    namespace_name,
};
use crate::{Error, Result, sys};

mod stp;

pub use stp::{StpView, converged};

/// Environment variable that overrides the state directory.
pub const STATE_DIR_ENV: &str = "IVNSEC_STATE_DIR";
/// Version of the state file format.
pub const STATE_FORMAT: u32 = 1;

/// Where testbed state files live: `$IVNSEC_STATE_DIR`, else `$XDG_RUNTIME_DIR/ivnsec`, else
/// `/run/ivnsec` (tmpfs: cleared on reboot, like the namespaces themselves).
pub fn default_state_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(STATE_DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("ivnsec");
    }
    PathBuf::from("/run/ivnsec")
}

/// How to build a testbed.
#[derive(Debug, Clone)]
pub struct Options {
    /// Give every ECU its IPv4 address (`10.77.group.host/16`, inside its namespace only).
    pub ipv4: bool,
    /// Directory of the state files.
    pub state_dir: PathBuf,
    /// Use this prefix instead of a random one (must match `ivn-<6 hex>` and be unused).
    pub prefix: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            ipv4: true,
            state_dir: default_state_dir(),
            prefix: None,
        }
    }
}

/// What a state file records about one running testbed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestbedState {
    /// [`STATE_FORMAT`].
    pub format: u32,
    /// `ivn-<6 hex>`.
    pub prefix: String,
    /// The topology string (`pair`, `cascade:3`, …).
    pub topology: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix: u64,
    /// Process that built it.
    pub created_by_pid: u32,
    /// False while being built (or if the build was interrupted).
    pub complete: bool,
    /// True once kept on purpose (`ivnsec testbed up`); false for a testbed a run owns, which
    /// the next `up` in the same state directory removes if its creator died without tearing
    /// it down (killed with SIGKILL). Files without the field count as kept.
    #[serde(default = "kept_by_default")]
    pub kept: bool,
    /// ECUs and switches.
    pub nodes: Vec<NodeState>,
}

/// One node of a recorded testbed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    /// Node name (`ecu1`, `sw0`, …).
    pub name: String,
    /// Its network namespace (`<prefix>-<name>`).
    pub namespace: String,
    /// `ecu` or `switch`.
    pub kind: String,
    /// Its interfaces.
    pub interfaces: Vec<IfaceState>,
}

/// One interface of a recorded node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaceState {
    /// Name inside the node's namespace.
    pub name: String,
    /// MAC address, `aa:bb:cc:dd:ee:ff`.
    pub mac: String,
    /// IPv4 address with prefix length, `10.77.0.1/16`.
    pub ipv4: Option<String>,
    /// Other end of the link, `node/interface`.
    pub peer: Option<String>,
}

impl TestbedState {
    fn from_plan(prefix: &str, topology: &Topology, plan: &Plan, ipv4: bool) -> Self {
        TestbedState {
            format: STATE_FORMAT,
            prefix: prefix.to_string(),
            topology: topology.to_string(),
            created_unix: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            created_by_pid: std::process::id(),
            complete: false,
            kept: false,
            nodes: plan
                .nodes
                .iter()
                .map(|n| NodeState {
                    name: n.name.clone(),
                    namespace: namespace_name(prefix, &n.name),
                    kind: n.kind.as_str().to_string(),
                    interfaces: n
                        .ifaces
                        .iter()
                        .map(|i| IfaceState {
                            name: i.name.clone(),
                            mac: format_mac(&i.mac),
                            ipv4: i
                                .ipv4
                                .filter(|_| ipv4)
                                .map(|a| format!("{}/{IPV4_PREFIX_LEN}", format_ipv4(&a))),
                            peer: i
                                .peer_node
                                .as_ref()
                                .zip(i.peer_if.as_ref())
                                .map(|(n, i)| format!("{n}/{i}")),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// How the testbed stands with `live` of its namespaces existing: `up`, `partly gone`,
    /// `gone`, or `incomplete (build interrupted)`.
    pub fn health(&self, live: usize) -> &'static str {
        if !self.complete {
            "incomplete (build interrupted)"
        } else if live == self.nodes.len() {
            "up"
        } else if live == 0 {
            "gone"
        } else {
            "partly gone"
        }
    }

    /// The state a testbed of `topology` under `prefix` records, with IPv4 addresses, without
    /// creating anything (for code that works on the recorded shape of a network).
    pub fn planned(prefix: &str, topology: &Topology) -> Self {
        Self::from_plan(prefix, topology, &topology.plan(), true)
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&NodeState> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// Namespace of node `name`, or a usage error listing the nodes.
    pub fn namespace_of(&self, name: &str) -> Result<&str> {
        match self.node(name) {
            Some(n) => Ok(&n.namespace),
            None => Err(Error::Usage(format!(
                "testbed {} has no node `{name}`; its nodes are: {}",
                self.prefix,
                self.nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// IPv4 address of ECU `name` (without prefix length).
    pub fn ipv4_of(&self, name: &str) -> Option<Ipv4Addr> {
        let a = self.node(name)?.interfaces.first()?.ipv4.as_ref()?;
        a.split('/').next()?.parse().ok()
    }

    /// Names of the ECU nodes.
    pub fn ecus(&self) -> impl Iterator<Item = &NodeState> {
        self.nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Ecu.as_str())
    }

    /// All namespaces this testbed records (only those carrying its prefix).
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        let p = format!("{}-", self.prefix);
        self.nodes
            .iter()
            .map(|n| n.namespace.as_str())
            .filter(move |ns| ns.starts_with(&p))
    }
}

/// A running testbed. Dropping it tears everything down unless [`Testbed::keep`] was called.
#[derive(Debug)]
pub struct Testbed {
    state: TestbedState,
    state_dir: PathBuf,
    keep: bool,
}

impl Testbed {
    /// Builds `topology` and records it in the state directory. On any error everything created
    /// so far is removed again.
    pub fn up(topology: &Topology, opts: &Options) -> Result<Testbed> {
        check_environment()?;
        let plan = topology.plan();
        for n in &plan.nodes {
            for i in &n.ifaces {
                topology::check_ifname(&i.name)?;
            }
        }
        fs::create_dir_all(&opts.state_dir).map_err(|e| Error::State {
            path: opts.state_dir.clone(),
            problem: format!("cannot create the state directory: {e}"),
        })?;
        reap_abandoned(&opts.state_dir);
        let prefix = reserve_prefix(&opts.state_dir, opts.prefix.as_deref())?;
        let state = TestbedState::from_plan(&prefix, topology, &plan, opts.ipv4);
        // From here on, Drop removes whatever exists (and the reserved state file).
        let mut tb = Testbed {
            state,
            state_dir: opts.state_dir.clone(),
            keep: false,
        };
        write_state(&tb.state_dir, &tb.state)?;
        build(&tb.state, &plan, opts.ipv4)?;
        tb.state.complete = true;
        write_state(&tb.state_dir, &tb.state)?;
        Ok(tb)
    }

    /// The recorded state.
    pub fn state(&self) -> &TestbedState {
        &self.state
    }

    /// `ivn-<6 hex>`.
    pub fn prefix(&self) -> &str {
        &self.state.prefix
    }

    /// The state directory this testbed is recorded in.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Namespace of node `node`.
    pub fn namespace(&self, node: &str) -> Result<&str> {
        self.state.namespace_of(node)
    }

    /// A command that runs `program` inside node `node` (`ip netns exec NS program`); add
    /// arguments and spawn it as usual.
    pub fn command(&self, node: &str, program: impl AsRef<std::ffi::OsStr>) -> Result<Command> {
        Ok(netns_command(self.namespace(node)?, program))
    }

    /// Leaves the testbed running after this value is dropped (`ivnsec testbed up`); returns its
    /// state. `down` removes it later.
    pub fn keep(mut self) -> TestbedState {
        self.keep = true;
        self.state.kept = true;
        // Recorded so that no later `up` mistakes it for a run's abandoned testbed; should the
        // write fail, the file still says "not kept" and a later `up` would remove it once this
        // process is gone, so say so.
        if let Err(e) = write_state(&self.state_dir, &self.state) {
            eprintln!("ivnsec: testbed {}: {e}", self.state.prefix);
        }
        self.state.clone()
    }

    /// Tears the testbed down and exits the process (code 128 + signal) when SIGINT, SIGTERM
    /// or SIGHUP arrives — a signal would otherwise end the process without running Drop.
    /// For long-running commands that own a testbed (experiments); a watcher thread waits for
    /// the signal.
    pub fn down_on_termination_signal(&self) -> Result<()> {
        let signals = sys::termination_signals()?;
        let prefix = self.state.prefix.clone();
        let state_dir = self.state_dir.clone();
        std::thread::Builder::new()
            .name(format!("{prefix}-teardown"))
            .spawn(move || {
                if let Ok(sig) = signals.wait() {
                    let _ = down(&prefix, &state_dir);
                    std::process::exit(128 + sig);
                }
            })?;
        Ok(())
    }

    /// Tears down now and reports errors (Drop does the same but can only ignore them).
    pub fn down(mut self) -> Result<DownReport> {
        self.keep = true;
        down(&self.state.prefix, &self.state_dir)
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if !self.keep {
            let _ = down(&self.state.prefix, &self.state_dir);
        }
    }
}

/// A command that runs `program` in namespace `ns` (`ip netns exec NS program`).
pub fn netns_command(ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(program);
    c
}

/// What [`down`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DownReport {
    /// The testbed.
    pub prefix: String,
    /// Namespaces deleted.
    pub removed_namespaces: Vec<String>,
    /// Processes signalled because they still ran inside them (`processes.len()`).
    pub stopped_processes: usize,
    /// Those processes, by pid.
    pub processes: Vec<StoppedProcess>,
    /// Interfaces that existed in the deleted namespaces (deleted with them: a veth pair goes
    /// when either end's namespace goes), by namespace and name.
    pub removed_interfaces: Vec<RemovedInterface>,
    /// Whether a state file was removed.
    pub removed_state_file: bool,
}

/// A process [`down`] stopped because it still ran inside one of the testbed's namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoppedProcess {
    /// Its process id.
    pub pid: u32,
    /// The namespace it ran in.
    pub namespace: String,
    /// Its program name (`/proc/PID/comm`, at most 15 bytes; empty if it was already gone).
    pub command: String,
    /// Its command line (`/proc/PID/cmdline`, arguments joined by spaces, at most
    /// [`MAX_SHOWN_ARGS`] bytes, cut at a character boundary).
    pub args: String,
    /// `SIGTERM` when that ended it within the grace second, `SIGKILL` when it took that.
    pub signal: String,
}

/// An interface that was deleted with its namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RemovedInterface {
    /// The namespace it was in.
    pub namespace: String,
    /// Its name there (`eth0`, `br0`, `p1`, …).
    pub name: String,
    /// The link kind iproute2 reports (`veth`, `bridge`, …); empty when it reports none.
    pub kind: String,
}

/// The most bytes of a stopped process's command line a [`DownReport`] keeps.
pub const MAX_SHOWN_ARGS: usize = 256;

impl DownReport {
    /// Whether there was nothing left to remove.
    pub fn was_already_down(&self) -> bool {
        self.removed_namespaces.is_empty() && !self.removed_state_file
    }
}

/// Removes testbed `prefix`: stops processes inside its namespaces, deletes every namespace
/// named `<prefix>-…` (recorded or not, e.g. after an interrupted build), and removes its state
/// file. Idempotent: a testbed that is already gone is not an error.
pub fn down(prefix: &str, state_dir: &Path) -> Result<DownReport> {
    check_prefix(prefix)?;
    let mut report = DownReport {
        prefix: prefix.to_string(),
        ..DownReport::default()
    };
    let live = live_namespaces(prefix)?;
    if !live.is_empty() {
        check_environment()?;
        report.processes = stop_processes(&live)?;
        report.stopped_processes = report.processes.len();
        report.removed_interfaces = interfaces(&live);
        let lines: Vec<String> = live.iter().map(|ns| format!("netns del {ns}")).collect();
        // -force: go on past a namespace that vanished meanwhile; the re-listing below decides.
        let _ = ip_batch(None, &lines, true);
        let left = live_namespaces(prefix)?;
        if !left.is_empty() {
            return Err(Error::Command {
                command: format!("ip netns del {}", left.join(" ")),
                status: None,
                stderr: "namespaces still exist after deletion".to_string(),
            });
        }
        report.removed_namespaces = live;
    }
    // What an experiment kept beside the state for the testbed's gateways (their key file and
    // nonce state: lab::site::start_gateways) goes with it.
    let _ = fs::remove_dir_all(state_dir.join(format!("{prefix}-gateways")));
    // Likewise the keys and nonce state of the tunnels of seed 004's experiments
    // (lab::tunnel), should the run have been killed before removing them.
    let _ = fs::remove_dir_all(state_dir.join(format!("{prefix}-tunnels")));
    let path = state_path(state_dir, prefix);
    match fs::remove_file(&path) {
        Ok(()) => report.removed_state_file = true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(Error::State {
                path,
                problem: format!("cannot remove: {e}"),
            });
        }
    }
    Ok(report)
}

/// What [`list`] found in a state directory.
#[derive(Debug, Default)]
pub struct Listing {
    /// Recorded testbeds, oldest first.
    pub testbeds: Vec<TestbedState>,
    /// State files that could not be read: the prefix their name carries, and the problem.
    pub unreadable: Vec<(String, Error)>,
}

impl Listing {
    /// Prefixes of all recorded testbeds, readable or not.
    pub fn prefixes(&self) -> Vec<String> {
        let ok = self.testbeds.iter().map(|s| s.prefix.clone());
        ok.chain(self.unreadable.iter().map(|(p, _)| p.clone()))
            .collect()
    }
}

fn kept_by_default() -> bool {
    true
}

/// Removes the testbeds in `state_dir` that a run owned (not kept) and whose creating process
/// is gone: a run killed with SIGKILL cannot tear its testbed down itself. Only testbeds
/// recorded in this state directory are touched; errors are left to `testbed down`.
fn reap_abandoned(state_dir: &Path) {
    let Ok(listing) = list(state_dir) else {
        return;
    };
    for s in listing.testbeds {
        if !s.kept && s.created_by_pid != std::process::id() && !process_alive(s.created_by_pid) {
            let _ = down(&s.prefix, state_dir);
        }
    }
}

/// Every testbed recorded in `state_dir`.
pub fn list(state_dir: &Path) -> Result<Listing> {
    let mut found = Vec::new();
    let mut bad = Vec::new();
    let entries = match fs::read_dir(state_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Listing::default()),
        Err(e) => {
            return Err(Error::State {
                path: state_dir.to_path_buf(),
                problem: format!("cannot read the state directory: {e}"),
            });
        }
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(prefix) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if check_prefix(prefix).is_err() {
            continue;
        }
        match load(state_dir, prefix) {
            Ok(s) => found.push(s),
            Err(e) => bad.push((prefix.to_string(), e)),
        }
    }
    found.sort_by(|a, b| (a.created_unix, &a.prefix).cmp(&(b.created_unix, &b.prefix)));
    Ok(Listing {
        testbeds: found,
        unreadable: bad,
    })
}

/// The recorded state of testbed `prefix`.
pub fn load(state_dir: &Path, prefix: &str) -> Result<TestbedState> {
    check_prefix(prefix)?;
    let path = state_path(state_dir, prefix);
    let text = fs::read_to_string(&path).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            Error::Usage(format!(
                "no testbed {prefix} is recorded in {} (see `ivnsec testbed status`)",
                state_dir.display()
            ))
        } else {
            Error::State {
                path: path.clone(),
                problem: e.to_string(),
            }
        }
    })?;
    let state: TestbedState = serde_json::from_str(&text).map_err(|e| Error::State {
        path: path.clone(),
        problem: format!("not a testbed state file: {e}"),
    })?;
    if state.prefix != prefix || state.format != STATE_FORMAT {
        return Err(Error::State {
            path,
            problem: format!("records prefix {} format {}", state.prefix, state.format),
        });
    }
    Ok(state)
}

/// The testbed `wanted` names, or the only one recorded in `state_dir` (a usage error when
/// none or several are).
pub fn pick(state_dir: &Path, wanted: Option<&str>) -> Result<TestbedState> {
    if let Some(p) = wanted {
        return load(state_dir, p);
    }
    let mut found = list(state_dir)?.testbeds;
    match found.len() {
        0 => Err(Error::Usage(format!(
            "no testbed is recorded in {}; start one with `ivnsec testbed up`",
            state_dir.display()
        ))),
        1 => Ok(found.remove(0)),
        _ => Err(Error::Usage(format!(
            "{} testbeds are up ({}); choose one with --testbed PREFIX",
            found.len(),
            found
                .iter()
                .map(|s| s.prefix.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Namespaces that exist now and are named `<prefix>-…`.
pub fn live_namespaces(prefix: &str) -> Result<Vec<String>> {
    check_prefix(prefix)?;
    let p = format!("{prefix}-");
    Ok(all_namespaces()?
        .into_iter()
        .filter(|n| n.starts_with(&p))
        .collect())
}

/// Prefixes of namespaces that look like ivnsec testbeds (`ivn-<6 hex>-…`) but have no state
/// file in `state_dir` — left by a run with another state directory, or by a lost state file.
/// Reported by `status`; removed only by an explicit `down --testbed PREFIX`.
pub fn unrecorded_prefixes(state_dir: &Path) -> Result<Vec<String>> {
    let mut out = BTreeSet::new();
    for ns in all_namespaces()? {
        let Some(p) = ns
            .get(..10)
            .filter(|_| ns.as_bytes().get(10) == Some(&b'-'))
        else {
            continue;
        };
        if check_prefix(p).is_ok() && !state_path(state_dir, p).exists() {
            out.insert(p.to_string());
        }
    }
    Ok(out.into_iter().collect())
}

/// Checks that this process can build a testbed: the `ip` command exists and the process has
/// CAP_SYS_ADMIN (to mount namespaces) and CAP_NET_ADMIN (to create links). The error says how
/// to fix it.
pub fn check_environment() -> Result<()> {
    match sys::die_with_parent(&mut Command::new("ip"))
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::Env(
                "the `ip` command (iproute2) is needed for the testbed but is not in PATH; install it \
                 (Debian/Ubuntu: `apt-get install iproute2`)"
                    .to_string(),
            ));
        }
        Err(e) => return Err(Error::Env(format!("cannot run the `ip` command: {e}"))),
    }
    const CAP_NET_ADMIN: u32 = 12;
    const CAP_SYS_ADMIN: u32 = 21;
    let caps = effective_capabilities().unwrap_or(0);
    if caps & (1 << CAP_NET_ADMIN) == 0 || caps & (1 << CAP_SYS_ADMIN) == 0 {
        return Err(Error::Env(
            "the testbed creates network namespaces, which needs root (CAP_SYS_ADMIN and \
             CAP_NET_ADMIN); run it as root, e.g. `sudo ivnsec testbed up`"
                .to_string(),
        ));
    }
    Ok(())
}

/// The effective capability set of this process (from `/proc/self/status`).
fn effective_capabilities() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    u64::from_str_radix(hex, 16).ok()
}

/// A fresh random prefix `ivn-<6 hex>`.
pub fn random_prefix() -> Result<String> {
    let mut b = [0u8; 3];
    getrandom::fill(&mut b)
        .map_err(|e| Error::Io(io::Error::other(format!("no randomness: {e}"))))?;
    Ok(format!("ivn-{:02x}{:02x}{:02x}", b[0], b[1], b[2]))
}

fn state_path(state_dir: &Path, prefix: &str) -> PathBuf {
    state_dir.join(format!("{prefix}.json"))
}

/// Picks a prefix no namespace uses and claims it by creating its state file exclusively.
fn reserve_prefix(state_dir: &Path, wanted: Option<&str>) -> Result<String> {
    for _ in 0..16 {
        let prefix = match wanted {
            Some(p) => {
                check_prefix(p)?;
                p.to_string()
            }
            None => random_prefix()?,
        };
        let path = state_path(state_dir, &prefix);
        let taken = !live_namespaces(&prefix)?.is_empty();
        if !taken {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(prefix),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(Error::State {
                        path,
                        problem: format!("cannot create: {e}"),
                    });
                }
            }
        }
        if wanted.is_some() {
            return Err(Error::Usage(format!(
                "testbed prefix {prefix} is already in use"
            )));
        }
    }
    Err(Error::Io(io::Error::other(
        "could not find an unused testbed prefix",
    )))
}

fn write_state(state_dir: &Path, state: &TestbedState) -> Result<()> {
    let path = state_path(state_dir, &state.prefix);
    let tmp = state_dir.join(format!(".{}.json.tmp", state.prefix));
    let text = serde_json::to_string_pretty(state).map_err(|e| Error::Io(io::Error::other(e)))?;
    let res = fs::write(&tmp, text + "\n").and_then(|()| fs::rename(&tmp, &path));
    res.map_err(|e| Error::State {
        path,
        problem: format!("cannot write: {e}"),
    })
}

/// Runs the `ip` lines that build the testbed, namespace by namespace.
fn build(state: &TestbedState, plan: &Plan, ipv4: bool) -> Result<()> {
    let ns = |node: &str| namespace_name(&state.prefix, node);
    // 1. The namespaces.
    let lines: Vec<String> = plan
        .nodes
        .iter()
        .map(|n| format!("netns add {}", ns(&n.name)))
        .collect();
    ip_batch(None, &lines, false)?;
    // 2. IPv6 off inside each (no DAD, RS or MLD frames), before any interface exists so that
    //    every interface inherits it from `default`.
    let ipv6_in_kernel = Path::new("/proc/sys/net/ipv6").exists();
    let use_sysctl = ipv6_in_kernel
        && sys::die_with_parent(Command::new("sysctl").arg("-V"))
            .output()
            .is_ok();
    if use_sysctl {
        for n in &plan.nodes {
            run(netns_command(&ns(&n.name), "sysctl").args([
                "-q",
                "-w",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ]))?;
        }
    }
    // Without sysctl, stop IPv6 link-local addresses instead: no address, no DAD, no RS.
    let addrgen = |lines: &mut Vec<String>, dev: &str| {
        if ipv6_in_kernel && !use_sysctl {
            lines.push(format!("link set {dev} addrgenmode none"));
        }
    };
    let ecu_addrs: Vec<(Ipv4Addr, String)> = plan
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Ecu)
        .filter_map(|n| {
            let i = &n.ifaces[0];
            Some((Ipv4Addr::from(i.ipv4?), format_mac(&i.mac)))
        })
        .collect();
    // 3. ECUs first (they create the veth pairs into their switch), then switches in order
    //    (switch k creates the link to switch k+1 before k+1 enslaves it).
    //    Gateways come between: their ECU created the plain link, they create the protected one.
    let order = plan
        .nodes
        .iter()
        .filter(|n| n.kind == NodeKind::Ecu)
        .chain(plan.nodes.iter().filter(|n| n.kind == NodeKind::Gateway))
        .chain(plan.nodes.iter().filter(|n| n.kind == NodeKind::Switch));
    for node in order {
        let mut lines = vec!["link set lo up".to_string()];
        if node.kind == NodeKind::Switch {
            let br = &node.ifaces[0];
            // The bridge's own MTU: the largest of its links (it forwards by port MTU).
            let mtu = plan
                .links
                .iter()
                .filter(|l| l.a_node == node.name || l.b_node == node.name)
                .map(|l| l.mtu)
                .max()
                .unwrap_or(MTU);
            // Behind gateways, the switch forwards MKA's PAE group address 01-80-C2-00-00-03
            // (a Linux bridge keeps it to itself unless group_fwd_mask bit 3 says otherwise).
            let pae = if plan.nodes.iter().any(|n| n.kind == NodeKind::Gateway) {
                " group_fwd_mask 8"
            } else {
                ""
            };
            let stp = if plan.stp {
                let k = node.name.strip_prefix("sw").unwrap_or_default();
                stp_options(match k {
                    "0" => topology::STP_ROOT_PRIORITY,
                    "1" => topology::STP_BACKUP_ROOT_PRIORITY,
                    _ => topology::STP_DEFAULT_PRIORITY,
                })
            } else {
                "forward_delay 0 stp_state 0".to_string()
            };
            lines.push(format!(
                "link add {} address {} mtu {mtu} type bridge {stp} mcast_snooping 0{pae}",
                br.name,
                format_mac(&br.mac)
            ));
            addrgen(&mut lines, &br.name);
        }
        if node.kind == NodeKind::Ecu && node.ifaces.len() > 1 {
            // An ECU with several links: `eth0` is a bridge with STP over its ports, so one
            // forwards and the others stand by (Plan::stp). It passes MKA's PAE group address
            // up to `eth0` (group_fwd_mask bit 3) rather than keeping it on the port.
            let i = &node.ifaces[0];
            let mtu = plan
                .links
                .iter()
                .filter(|l| l.a_node == node.name)
                .map(|l| l.mtu)
                .max()
                .unwrap_or(MTU);
            lines.push(format!(
                "link add {} address {} mtu {mtu} type bridge {} mcast_snooping 0 group_fwd_mask 8",
                i.name,
                format_mac(&i.mac),
                stp_options(topology::STP_ECU_PRIORITY)
            ));
        }
        for l in plan.links.iter().filter(|l| l.a_node == node.name) {
            let a = plan
                .iface(&l.a_node, &l.a_if)
                .expect("plan link ends exist");
            let b = plan
                .iface(&l.b_node, &l.b_if)
                .expect("plan link ends exist");
            lines.push(format!(
                "link add {} address {} mtu {mtu} type veth peer name {} address {} mtu {mtu} netns {}",
                a.name,
                format_mac(&a.mac),
                b.name,
                format_mac(&b.mac),
                ns(&l.b_node),
                mtu = l.mtu
            ));
            if plan.node(&l.b_node).map(|n| n.kind) == Some(NodeKind::Gateway) {
                // A legacy ECU behind a gateway: no TSO/GSO super-frames on the veth (a NIC
                // would cut them before the wire; the gateway forwards whole frames only).
                lines.push(format!("link set {} gso_max_segs 1", a.name));
            }
        }
        match node.kind {
            NodeKind::Ecu => {
                let i = &node.ifaces[0];
                for p in &node.ifaces[1..] {
                    addrgen(&mut lines, &p.name);
                    lines.push(format!("link set {} master {}", p.name, i.name));
                    lines.push(format!("link set {} up", p.name));
                }
                addrgen(&mut lines, &i.name);
                if let (true, Some(a)) = (ipv4, i.ipv4) {
                    let me = Ipv4Addr::from(a);
                    lines.push(format!("addr add {me}/{IPV4_PREFIX_LEN} dev {}", i.name));
                    for (other, mac) in ecu_addrs.iter().filter(|(o, _)| *o != me) {
                        lines.push(format!(
                            "neigh replace {other} lladdr {mac} dev {} nud permanent",
                            i.name
                        ));
                    }
                }
                lines.push(format!("link set {} up", i.name));
            }
            NodeKind::Switch => {
                for p in &node.ifaces[1..] {
                    addrgen(&mut lines, &p.name);
                    lines.push(format!(
                        "link set {} master {}",
                        p.name, node.ifaces[0].name
                    ));
                    lines.push(format!("link set {} up", p.name));
                }
                lines.push(format!("link set {} up", node.ifaces[0].name));
            }
            NodeKind::Gateway => {
                // No addresses: `ivnsec gateway` forwards frames between the two ports.
                for p in &node.ifaces {
                    addrgen(&mut lines, &p.name);
                    lines.push(format!("link set {} up", p.name));
                }
            }
        }
        ip_batch(Some(&ns(&node.name)), &lines, false)?;
    }
    if plan.stp {
        // Every port listens and learns for 2 × forward delay after it comes up; the tree
        // settles within a few hello times after that.
        wait_ready(state, true, Duration::from_secs(40))
    } else {
        wait_ready(state, false, Duration::from_secs(10))
    }
}

/// The `ip link add … type bridge` options of an STP bridge with priority `priority`: the
/// smallest timers the kernel accepts (topology::STP_*).
fn stp_options(priority: u16) -> String {
    format!(
        "forward_delay {} hello_time {} max_age {} stp_state 1 priority {priority}",
        topology::STP_FORWARD_DELAY_CS,
        topology::STP_HELLO_TIME_CS,
        topology::STP_MAX_AGE_CS
    )
}

/// Waits until every interface of the testbed has carrier and is up, and every bridge port is
/// forwarding. The kernel applies carrier changes asynchronously, so without this wait the
/// first frames after `up` may be dropped. With `stp`, the spanning tree has converged
/// instead: see [`converged`].
fn wait_ready(state: &TestbedState, stp: bool, timeout: Duration) -> Result<()> {
    if stp {
        let deadline = Instant::now() + timeout;
        loop {
            let c = converged(state)?;
            if c.is_converged() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Command {
                    command: "ip -o -d link show".to_string(),
                    status: None,
                    stderr: format!(
                        "the spanning tree has not converged after {timeout:?}: {}",
                        c.why_not()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let deadline = Instant::now() + timeout;
    loop {
        let mut not_ready = Vec::new();
        for node in &state.nodes {
            let out = sys::die_with_parent(&mut Command::new("ip"))
                .args(["-n", &node.namespace, "-o", "-d", "link", "show"])
                .output()?;
            if !out.status.success() {
                return Err(command_error(
                    &format!("ip -n {} -o -d link show", node.namespace),
                    &out,
                ));
            }
            let text = String::from_utf8_lossy(&out.stdout);
            for i in &node.interfaces {
                let line = text.lines().find(|l| {
                    let mut f = l.split_whitespace();
                    f.next();
                    f.next()
                        .map(|n| n.trim_end_matches(':'))
                        .is_some_and(|n| n.split('@').next() == Some(i.name.as_str()))
                });
                let ready = line.is_some_and(|l| {
                    !l.contains("NO-CARRIER")
                        && l.contains(" state UP ")
                        && (!l.contains("bridge_slave")
                            || l.contains("bridge_slave state forwarding"))
                });
                if !ready {
                    not_ready.push(format!("{}/{}", node.name, i.name));
                }
            }
        }
        if not_ready.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Command {
                command: "ip -o -d link show".to_string(),
                status: None,
                stderr: format!(
                    "links not ready after {timeout:?}: {}",
                    not_ready.join(", ")
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// All network namespaces `ip netns list` shows.
fn all_namespaces() -> Result<Vec<String>> {
    let out = match sys::die_with_parent(Command::new("ip").args(["netns", "list"])).output() {
        Ok(o) => o,
        // No `ip`: no namespace can have been made by us either.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    if !out.status.success() {
        return Err(command_error("ip netns list", &out));
    }
    // Lines look like `name` or `name (id: 3)`.
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// Stops every process inside `namespaces` (all named with our prefix): SIGTERM, up to one
/// second of grace, then SIGKILL. Returns what was signalled, by pid.
fn stop_processes(namespaces: &[String]) -> Result<Vec<StoppedProcess>> {
    let mut found = std::collections::BTreeMap::new();
    for ns in namespaces {
        let out = sys::die_with_parent(Command::new("ip").args(["netns", "pids", ns])).output()?;
        // A namespace that vanished meanwhile has no processes.
        if out.status.success() {
            for pid in String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .filter(|&p| p != std::process::id())
            {
                found.entry(pid).or_insert_with(|| StoppedProcess {
                    pid,
                    namespace: ns.clone(),
                    command: proc_text(pid, "comm", 64).trim_end().to_string(),
                    args: proc_text(pid, "cmdline", MAX_SHOWN_ARGS)
                        .trim_end_matches('\0')
                        .replace('\0', " "),
                    signal: "SIGTERM".to_string(),
                });
            }
        }
    }
    for &pid in found.keys() {
        sys::signal_process(pid, false)?;
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    while found.keys().any(|&p| process_alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for p in found.values_mut().filter(|p| process_alive(p.pid)) {
        sys::signal_process(p.pid, true)?;
        p.signal = "SIGKILL".to_string();
    }
    Ok(found.into_values().collect())
}

/// At most `limit` bytes of `/proc/PID/FILE` as text (invalid UTF-8 replaced, cut at a
/// character boundary); empty when the process is gone.
fn proc_text(pid: u32, file: &str, limit: usize) -> String {
    use std::io::Read;
    let mut buf = Vec::new();
    if let Ok(f) = fs::File::open(format!("/proc/{pid}/{file}")) {
        let _ = f.take(limit as u64).read_to_end(&mut buf);
    }
    let mut s = String::from_utf8_lossy(&buf).into_owned();
    while s.len() > limit {
        s.pop();
    }
    s
}

/// The interfaces inside `namespaces` other than `lo` (`ip -j -d link show`); a namespace that
/// cannot be read (vanished meanwhile, or an iproute2 without JSON output) lists none.
fn interfaces(namespaces: &[String]) -> Vec<RemovedInterface> {
    let mut found = Vec::new();
    for ns in namespaces {
        let mut cmd = Command::new("ip");
        cmd.args(["-n", ns, "-j", "-d", "link", "show"]);
        let out = match sys::die_with_parent(&mut cmd).output() {
            Ok(o) if o.status.success() => o,
            _ => continue,
        };
        let Ok(serde_json::Value::Array(links)) = serde_json::from_slice(&out.stdout) else {
            continue;
        };
        for l in links {
            let Some(name) = l.get("ifname").and_then(|n| n.as_str()) else {
                continue;
            };
            if name == "lo" {
                continue;
            }
            let kind = l
                .pointer("/linkinfo/info_kind")
                .and_then(|k| k.as_str())
                .unwrap_or("");
            found.push(RemovedInterface {
                namespace: ns.clone(),
                name: name.to_string(),
                kind: kind.to_string(),
            });
        }
    }
    found
}

/// Whether `pid` runs (a zombie waiting for its parent counts as gone).
fn process_alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Format: `pid (comm) S …`; comm may contain spaces and parentheses.
        Ok(s) => {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// Runs `ip [-n NS] [-force] -batch -` with `lines` on stdin.
fn ip_batch(netns: Option<&str>, lines: &[String], force: bool) -> Result<()> {
    let mut args: Vec<&str> = Vec::new();
    if let Some(ns) = netns {
        args.extend(["-n", ns]);
    }
    if force {
        args.push("-force");
    }
    args.extend(["-batch", "-"]);
    let shown = format!("ip {}", args.join(" "));
    let mut child = sys::die_with_parent(&mut Command::new("ip"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut input = lines.join("\n");
    input.push('\n');
    // A write error means ip exited early; its status and stderr below tell why.
    let _ = child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(input.as_bytes());
    let out = child.wait_with_output()?;
    if out.status.success() {
        return Ok(());
    }
    let mut err = command_error(&shown, &out);
    // `Command failed -:N` names the line; show it.
    if let Error::Command { stderr, .. } = &mut err {
        let n = stderr
            .rsplit_once("Command failed -:")
            .and_then(|(_, n)| n.trim().parse::<usize>().ok());
        if let Some((n, line)) = n.and_then(|n| Some((n, lines.get(n.checked_sub(1)?)?))) {
            stderr.push_str(&format!(" (line {n}: `{line}`)"));
        }
    }
    Err(err)
}

/// Runs a command, failing with its stderr when it fails.
fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = sys::die_with_parent(cmd).stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(command_error(&shown, &out))
    }
}

fn command_error(shown: &str, out: &std::process::Output) -> Error {
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Error::Env(format!(
            "`{shown}` was refused ({stderr}); the testbed needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) \
             and a kernel that allows network namespaces here: run it as root, outside a restricted container"
        ));
    }
    Error::Command {
        command: shown.to_string(),
        status: out.status.code(),
        stderr,
    }
}

#[cfg(test)]
#[path = "testbed_tests.rs"]
mod tests;
