//! `ivnsec testbed up|status|exec|down`: the vehicle network as network namespaces.
//!
//! `up` builds and leaves the testbed running (nothing keeps running in the foreground; the
//! namespaces persist until `down`). State lives in `$IVNSEC_STATE_DIR`, else
//! `$XDG_RUNTIME_DIR/ivnsec`, else `/run/ivnsec`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::{Result, anyhow};
use clap::Subcommand;
use ivnsec_net::testbed::{self, Options, Testbed, TestbedState};
use ivnsec_net::topology::Topology;

use crate::error::{EnvError, usage};
use crate::output::Json;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Build a testbed: ECUs as network namespaces, veth links, a Linux bridge as the switch.
    ///
    /// Prints the prefix, nodes, interfaces, MACs and IPv4 addresses, then returns; the
    /// namespaces stay until `ivnsec testbed down`. Needs root.
    Up(UpArgs),
    /// List the testbeds ivnsec created (recorded in the state directory), with their nodes.
    Status(StatusArgs),
    /// Run a program inside a node: `ivnsec testbed exec ecu1 -- ping -c3 10.77.0.2`.
    ///
    /// The program's exit code is passed through. Needs root.
    Exec(ExecArgs),
    /// Remove a testbed (idempotent): stops processes inside its namespaces, deletes them and
    /// its state file. Touches nothing that does not carry the testbed's prefix.
    ///
    /// Reports what it stopped and removed: each process still running inside (pid, namespace,
    /// command line, and whether SIGTERM ended it or SIGKILL was needed), the interfaces that
    /// went with the namespaces (veth ends, bridges), the namespaces and the state file. With
    /// --json, the same as one JSON object. See docs/testbed.md.
    ///
    /// Example: `sudo ivnsec testbed down --all --json`
    Down(DownArgs),
}

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// pair | steer-by-wire | sensors:N (1..=254) | cascade:N (1..=32) | bump | bump2 |
    /// production.
    ///
    /// `production` (seed 002 testbench 3): four switches with redundant links running the
    /// kernel's spanning tree, sensors attached unevenly (two behind gateways), the consumer on
    /// three links; `up` returns once the tree has converged (about 5 s). Example:
    /// `sudo ivnsec testbed up --topology production`.
    #[arg(long, short, default_value = "pair")]
    topology: String,
    /// Build the topology an experiment plan names (its `topology` key) instead of --topology.
    #[arg(long, value_name = "FILE", conflicts_with = "topology")]
    plan: Option<std::path::PathBuf>,
    /// Give the ECUs no IPv4 addresses (raw Ethernet only).
    #[arg(long)]
    no_ipv4: bool,
    /// Also run linuxptp's ptp4l on every ECU (software timestamping, IEEE 802.3 transport
    /// through the switch): the first ECU the grand master, the others slaves that measure
    /// their offset but never steer the clock the namespaces share. Waits until the ports are
    /// MASTER and UNCALIBRATED/SLAVE, prints their state and then stays in the foreground:
    /// Ctrl-C (or `testbed down`) stops ptp4l; the testbed stays until `testbed down`.
    /// Needs linuxptp. See docs/multihost.md.
    ///
    /// Example: `sudo ivnsec testbed up --ptp`, then in another shell
    /// `ivnsec clock check --netns ivn-3fa9c1-ecu1 --netns ivn-3fa9c1-ecu2`.
    #[arg(long)]
    ptp: bool,
    /// Print the recorded state as JSON instead of a table (with --ptp: and the ECUs' clock
    /// state under `ptp`).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// The node to run in (`ecu1`, `cu`, `sensor3`, `sw0`, …).
    node: String,
    /// The testbed (`ivn-<6 hex>`); may be left out when only one is up.
    #[arg(long)]
    testbed: Option<String>,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

#[derive(clap::Args, Debug)]
pub struct DownArgs {
    /// The testbed to remove (`ivn-<6 hex>`); may be left out when only one is recorded.
    #[arg(long, conflicts_with = "all")]
    testbed: Option<String>,
    /// Remove every testbed recorded in the state directory (and nothing else).
    #[arg(long)]
    all: bool,
    /// Print what was stopped and removed as JSON (`{"state_dir", "testbeds": [...]}`, one
    /// object per testbed) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let state_dir = testbed::default_state_dir();
    match args {
        Args::Up(a) => up(a, &state_dir),
        Args::Status(a) => status(a, &state_dir),
        Args::Exec(a) => exec(a, &state_dir),
        Args::Down(a) => down(a, &state_dir),
    }
}

/// Maps the net crate's errors onto the exit-code convention (2 usage, 3 environment).
fn net_err(e: ivnsec_net::Error) -> anyhow::Error {
    match e {
        ivnsec_net::Error::Env(m) => anyhow::Error::new(EnvError(m)),
        ivnsec_net::Error::Usage(m) => usage(m),
        other => anyhow!(other),
    }
}

fn up(a: UpArgs, state_dir: &Path) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let topology: Topology = match &a.plan {
        Some(file) => {
            ivnsec_lab::plan::load(file, &ivnsec_lab::plan::RunSection::default())?.topology
        }
        None => a.topology.parse().map_err(net_err)?,
    };
    if a.ptp && ivnsec_lab::clock::testbed_ptp::find_ptp4l().is_none() {
        return Err(anyhow::Error::new(EnvError(
            "--ptp needs linuxptp's ptp4l, which is not installed: install linuxptp (Debian: \
             apt-get install linuxptp; scripts/setup does it)"
                .into(),
        )));
    }
    if a.ptp {
        ivnsec_lab::clock::testbed_ptp::TestbedPtp::check_shape(&TestbedState::planned(
            "ivn-000000",
            &topology,
        ))?;
    }
    let opts = Options {
        ipv4: !a.no_ipv4,
        state_dir: state_dir.to_path_buf(),
        prefix: None,
    };
    let tb = Testbed::up(&topology, &opts).map_err(net_err)?;
    let state = tb.keep();
    if a.ptp {
        return up_ptp(&a, &state, state_dir, json);
    }
    if a.json {
        json.print(&state)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "testbed {} is up: topology {}, state {}",
        state.prefix,
        state.topology,
        state_dir.join(format!("{}.json", state.prefix)).display()
    );
    print_nodes(&state);
    let ecus: Vec<&str> = state.ecus().map(|n| n.name.as_str()).collect();
    if let (Some(a), Some(b)) = (ecus.first(), ecus.last()) {
        match state.ipv4_of(b) {
            Some(ip) => {
                println!("\nrun a program in a node:  ivnsec testbed exec {a} -- ping -c3 {ip}")
            }
            None => println!("\nrun a program in a node:  ivnsec testbed exec {a} -- ip link"),
        }
    }
    println!(
        "remove it:                ivnsec testbed down --testbed {}",
        state.prefix
    );
    Ok(ExitCode::SUCCESS)
}

/// `up --ptp`: ptp4l on the ECUs of the testbed just built, in the foreground until a
/// termination signal or until every ptp4l has ended (`testbed down` stops them).
fn up_ptp(a: &UpArgs, state: &TestbedState, state_dir: &Path, mut json: Json) -> Result<ExitCode> {
    use ivnsec_lab::clock::DEFAULT_MAX_OFFSET_NS;
    use ivnsec_lab::clock::testbed_ptp::{PTP_READY_TIMEOUT, PtpEnd, TestbedPtp};
    let signals = ivnsec_net::sys::termination_signals()?;
    let remove_hint = format!(
        "the testbed stays: `ivnsec testbed down --testbed {}` removes it",
        state.prefix
    );
    let mut ptp =
        TestbedPtp::start(state, state_dir).map_err(|e| e.context(remove_hint.clone()))?;
    eprintln!(
        "ptp: ptp4l started on {} (grand master {}), waiting for MASTER/SLAVE",
        ptp.namespaces().join(", "),
        ptp.master()
    );
    let set = ptp
        .wait_ready(PTP_READY_TIMEOUT, DEFAULT_MAX_OFFSET_NS)
        .map_err(|e| e.context(remove_hint.clone()))?;
    if a.json {
        let mut doc = serde_json::to_value(state)?;
        doc["ptp"] = serde_json::to_value(&set)?;
        json.print(&doc)?;
    } else {
        println!(
            "testbed {} is up with PTP: topology {}, state {}",
            state.prefix,
            state.topology,
            state_dir.join(format!("{}.json", state.prefix)).display()
        );
        print_nodes(state);
        println!();
        for h in &set.hosts {
            println!(
                "ptp {:<24} port {:<13} offset {:>8} ns  {}",
                h.host,
                h.port_state.as_deref().unwrap_or("-"),
                h.offset_ns.map_or("-".into(), |o| format!("{o:.0}")),
                h.reason
            );
        }
        println!(
            "\ncheck the clocks:  ivnsec clock check {}",
            ptp.namespaces()
                .iter()
                .map(|n| format!("--netns {n}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        println!("stop PTP:          Ctrl-C (the testbed stays until `ivnsec testbed down`)");
    }
    eprintln!("ptp: ready; Ctrl-C stops ptp4l");
    match ptp.hold(&state.prefix, signals)? {
        PtpEnd::Signal(sig) => {
            eprintln!("ptp: stopped ptp4l (signal {sig}); {remove_hint}");
            Ok(ExitCode::SUCCESS)
        }
        PtpEnd::TestbedDown => {
            eprintln!("ptp: the testbed is down, ptp4l stopped with it");
            Ok(ExitCode::SUCCESS)
        }
        PtpEnd::Failed(why) => Err(anyhow::Error::new(EnvError(format!(
            "{why}; stopped the other ptp4l instances; {remove_hint}"
        )))),
    }
}

fn print_nodes(state: &TestbedState) {
    println!(
        "{:<10} {:<8} {:<22} {:<12} {:<17} {:<14} peer",
        "node", "kind", "namespace", "interface", "mac", "ipv4"
    );
    for n in &state.nodes {
        for (k, i) in n.interfaces.iter().enumerate() {
            let (node, kind, ns) = if k == 0 {
                (n.name.as_str(), n.kind.as_str(), n.namespace.as_str())
            } else {
                ("", "", "")
            };
            println!(
                "{node:<10} {kind:<8} {ns:<22} {:<12} {:<17} {:<14} {}",
                i.name,
                i.mac,
                i.ipv4.as_deref().unwrap_or("-"),
                i.peer.as_deref().unwrap_or("-")
            );
        }
    }
}

fn status(a: StatusArgs, state_dir: &Path) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let listing = testbed::list(state_dir).map_err(net_err)?;
    let (found, bad) = (listing.testbeds, listing.unreadable);
    let unrecorded = testbed::unrecorded_prefixes(state_dir).map_err(net_err)?;
    let mut live = Vec::new();
    for s in &found {
        live.push(testbed::live_namespaces(&s.prefix).map_err(net_err)?.len());
    }
    if a.json {
        let testbeds: Vec<serde_json::Value> = found
            .iter()
            .zip(&live)
            .map(|(s, &n)| serde_json::json!({ "state": s, "live_namespaces": n, "health": s.health(n) }))
            .collect();
        let bad: Vec<serde_json::Value> = bad
            .iter()
            .map(|(p, e)| serde_json::json!({ "prefix": p, "problem": e.to_string() }))
            .collect();
        let out = serde_json::json!({
            "state_dir": state_dir,
            "testbeds": testbeds,
            "unreadable": bad,
            "unrecorded_prefixes": unrecorded,
        });
        json.print(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() && bad.is_empty() {
        println!("no testbed is recorded in {}", state_dir.display());
    }
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for (s, &n) in found.iter().zip(&live) {
        println!(
            "testbed {}: topology {}, {}, {} of {} namespaces exist, created {} s ago by pid {}",
            s.prefix,
            s.topology,
            s.health(n),
            n,
            s.nodes.len(),
            now.saturating_sub(s.created_unix),
            s.created_by_pid
        );
        print_nodes(s);
        println!();
    }
    for (p, e) in &bad {
        println!(
            "testbed {p}: unreadable state ({e}); `ivnsec testbed down --testbed {p}` removes it"
        );
    }
    for p in &unrecorded {
        println!(
            "namespaces {p}-* exist but no state file in {} records them (another state directory?); \
             `ivnsec testbed down --testbed {p}` removes them",
            state_dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn exec(a: ExecArgs, state_dir: &Path) -> Result<ExitCode> {
    let state = testbed::pick(state_dir, a.testbed.as_deref()).map_err(net_err)?;
    let ns = state.namespace_of(&a.node).map_err(net_err)?.to_string();
    testbed::check_environment().map_err(net_err)?;
    let live = testbed::live_namespaces(&state.prefix).map_err(net_err)?;
    if !live.contains(&ns) {
        return Err(anyhow::Error::new(EnvError(format!(
            "namespace {ns} of testbed {} does not exist any more; remove the testbed with \
             `ivnsec testbed down --testbed {}` and build a new one",
            state.prefix, state.prefix
        ))));
    }
    let (program, rest) = a
        .command
        .split_first()
        .ok_or_else(|| usage("exec: no command given after --"))?;
    // Replaces this process with `ip netns exec NS CMD…`, which in turn execs CMD: its exit
    // code and signals reach the caller unchanged. exec() returns only on failure.
    let err = testbed::netns_command(&ns, program).args(rest).exec();
    Err(anyhow::Error::new(EnvError(format!(
        "cannot run `ip netns exec {ns}`: {err}"
    ))))
}

fn down(a: DownArgs, state_dir: &Path) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let prefixes: Vec<String> = if let Some(p) = a.testbed {
        vec![p]
    } else {
        let all = testbed::list(state_dir).map_err(net_err)?.prefixes();
        if all.len() > 1 && !a.all {
            return Err(usage(format!(
                "{} testbeds are recorded ({}); choose one with --testbed PREFIX or remove all with --all",
                all.len(),
                all.join(", ")
            )));
        }
        all
    };
    if prefixes.is_empty() && !a.json {
        println!(
            "no testbed is recorded in {}; nothing to do",
            state_dir.display()
        );
    }
    let mut reports = Vec::new();
    for p in prefixes {
        let r = testbed::down(&p, state_dir).map_err(net_err)?;
        // What a killed `up --ptp` could not remove (its ptp4l died with it).
        ivnsec_lab::clock::remove_testbed_files(state_dir, &p);
        if a.json {
            let mut v = serde_json::to_value(&r)?;
            v["already_down"] = serde_json::Value::Bool(r.was_already_down());
            reports.push(v);
            continue;
        }
        if r.was_already_down() {
            println!("testbed {p}: already down");
        } else {
            println!(
                "testbed {p}: removed {} namespaces{}",
                r.removed_namespaces.len(),
                match r.stopped_processes {
                    0 => String::new(),
                    n => format!(", stopped {n} processes running inside"),
                }
            );
            print_down_details(&r, state_dir);
        }
    }
    if a.json {
        let out = serde_json::json!({ "state_dir": state_dir, "testbeds": reports });
        json.print(&out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The lines under `testbed PREFIX: removed …`: each process stopped, the interfaces and
/// namespaces removed, the state file.
fn print_down_details(r: &testbed::DownReport, state_dir: &Path) {
    for p in &r.processes {
        let what = if p.args.is_empty() {
            &p.command
        } else {
            &p.args
        };
        println!(
            "  stopped pid {} in {} with {}: {}",
            p.pid,
            p.namespace,
            p.signal,
            if what.is_empty() { "(gone)" } else { what }
        );
    }
    if !r.removed_interfaces.is_empty() {
        let node = |ns: &str| {
            ns.strip_prefix(r.prefix.as_str())
                .and_then(|n| n.strip_prefix('-'))
                .unwrap_or(ns)
                .to_string()
        };
        let list: Vec<String> = r
            .removed_interfaces
            .iter()
            .map(|i| match i.kind.as_str() {
                "" => format!("{}/{}", node(&i.namespace), i.name),
                k => format!("{}/{} ({k})", node(&i.namespace), i.name),
            })
            .collect();
        let veth = r
            .removed_interfaces
            .iter()
            .filter(|i| i.kind == "veth")
            .count();
        println!(
            "  removed {} interfaces ({} veth links): {}",
            list.len(),
            veth.div_ceil(2),
            list.join(", ")
        );
    }
    if !r.removed_namespaces.is_empty() {
        println!("  removed namespaces: {}", r.removed_namespaces.join(", "));
    }
    if r.removed_state_file {
        println!(
            "  removed state file {}",
            state_dir.join(format!("{}.json", r.prefix)).display()
        );
    }
}
