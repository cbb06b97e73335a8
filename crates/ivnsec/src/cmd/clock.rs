//! `ivnsec clock check`: the PTP clock state of a set of hosts, read with linuxptp's `pmc`
//! (`ivnsec_lab::clock`).

use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use ivnsec_lab::clock::{self, ClockSet, HostRunner, Target};

use crate::error::usage;
use crate::output::Json;

#[derive(Subcommand, Debug)]
pub enum Args {
    /// Each host's PTP clock state, read with linuxptp's pmc.
    ///
    /// Port state, offset from master, mean path delay, steps removed, grand master; and whether
    /// one-way delays across the hosts can be trusted.
    ///
    /// Each host answers `pmc -u -b 0 'GET TIME_STATUS_NP' 'GET CURRENT_DATA_SET' 'GET
    /// PORT_DATA_SET'` from its ptp4l. A host is `synchronised` when a port is SLAVE of a grand
    /// master within ±--max-offset ns (or it is the grand master), else `unsynchronised`, `no
    /// ptp4l`, `pmc missing` or `unreachable`, with the reason. Two or more hosts that are all on
    /// this machine (--local, --netns) share its system clock: their verdict is `shared clock`.
    /// Exit 0 when every host is synchronised (or the clock is shared), 1 when one is not, 3 when
    /// one cannot be asked (pmc missing, ssh failed, no such namespace). See docs/multihost.md.
    ///
    /// Examples:
    ///   ivnsec clock check --ssh root@192.0.2.10 --ssh root@192.0.2.11 --ssh-option -i --ssh-option ~/.ssh/bench
    ///   ivnsec clock check --netns ivn-3fa9c1-ecu1 --netns ivn-3fa9c1-ecu2 --json
    ///   ivnsec clock check --plan bench.toml
    #[command(verbatim_doc_comment)]
    Check(CheckArgs),
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Ask this machine's ptp4l.
    #[arg(long)]
    local: bool,
    /// Ask the ptp4l of a network namespace of this machine (repeatable), e.g. a testbed ECU
    /// `ivn-3fa9c1-ecu1` (or just `ecu1` when one testbed is up). A testbed started with `testbed up --ptp` is found by its socket under
    /// the state directory; otherwise the namespace's ptp4l must listen on --uds.
    #[arg(long, value_name = "NS")]
    netns: Vec<String>,
    /// Ask the ptp4l of another machine over OpenSSH (repeatable): `[user@]host`. ssh runs with
    /// BatchMode=yes (keys or an agent, never a password prompt) and ConnectTimeout=10.
    #[arg(long, value_name = "[USER@]HOST")]
    ssh: Vec<String>,
    /// Ask every host of a plan's `[[host]]` tables, each over its own ssh (its `ssh_options`).
    #[arg(long, value_name = "PLAN")]
    plan: Option<std::path::PathBuf>,
    /// An option passed to every ssh as it is (repeatable, one word each): `--ssh-option -i
    /// --ssh-option ~/.ssh/bench --ssh-option -oStrictHostKeyChecking=yes`.
    #[arg(long, value_name = "OPT", allow_hyphen_values = true)]
    ssh_option: Vec<String>,
    /// ptp4l's management socket (its `uds_address`) on every host; default /var/run/ptp4l (for
    /// a namespace of a `testbed up --ptp` testbed: the testbed's own socket).
    #[arg(long, value_name = "PATH")]
    uds: Option<String>,
    /// The bound on |offset from master| for `synchronised`, in nanoseconds.
    #[arg(long, value_name = "NS", default_value_t = clock::DEFAULT_MAX_OFFSET_NS)]
    max_offset: u64,
    /// Print one JSON document (`{"max_offset_ns", "shared_clock", "verdict", "owd", "hosts":
    /// [...]}`) instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    match args {
        Args::Check(a) => check(a),
    }
}

/// The hosts named on the command line (a plan's `[[host]]` tables are added beside them).
fn targets(a: &CheckArgs) -> Result<Vec<Target>> {
    let mut t = Vec::new();
    if a.local {
        t.push(Target::Local);
    }
    for ns in &a.netns {
        if ns.is_empty()
            || ns.len() > 200
            || ns.starts_with('-')
            || !ns
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        {
            return Err(usage(format!(
                "--netns {ns:?}: not a namespace name (letters, digits, '-', '_', '.')"
            )));
        }
        t.push(Target::Netns(testbed_namespace(ns)));
    }
    for dest in &a.ssh {
        if dest.is_empty() || dest.starts_with('-') || dest.chars().any(char::is_whitespace) {
            return Err(usage(format!(
                "--ssh {dest:?}: give a destination as `[user@]host` (options go in --ssh-option)"
            )));
        }
        t.push(Target::Ssh {
            destination: dest.clone(),
            options: a.ssh_option.clone(),
        });
    }
    if !a.ssh_option.is_empty() && a.ssh.is_empty() {
        return Err(usage("--ssh-option needs at least one --ssh host"));
    }
    Ok(t)
}

/// `ns` itself when such a namespace exists; else, when exactly one testbed recorded in the
/// state directory has a node of that name (`ecu1`), that node's namespace; else `ns`.
fn testbed_namespace(ns: &str) -> String {
    if std::path::Path::new("/run/netns").join(ns).exists() {
        return ns.to_string();
    }
    let state_dir = ivnsec_net::testbed::default_state_dir();
    let found: Vec<String> = ivnsec_net::testbed::list(&state_dir)
        .map(|l| l.testbeds)
        .unwrap_or_default()
        .iter()
        .filter_map(|s| s.node(ns).map(|n| n.namespace.clone()))
        .collect();
    match found.as_slice() {
        [one] => one.clone(),
        _ => ns.to_string(),
    }
}

fn check(a: CheckArgs) -> Result<ExitCode> {
    let mut json = Json::claim(a.json)?;
    let targets = targets(&a)?;
    let state_dir = ivnsec_net::testbed::default_state_dir();
    let uds_of = |r: &dyn HostRunner| -> String {
        if let Some(u) = &a.uds {
            return u.clone();
        }
        if r.via() == "netns" {
            let own = clock::testbed_uds(&state_dir, &r.name());
            if own.exists() {
                return own.to_string_lossy().into_owned();
            }
        }
        clock::DEFAULT_UDS.to_string()
    };
    let plan_hosts = match &a.plan {
        Some(p) => ivnsec_lab::plan::hosts_of(p)?,
        None => Vec::new(),
    };
    if targets.is_empty() && plan_hosts.is_empty() {
        return Err(usage(
            "name at least one host: --local, --netns NS, --ssh [USER@]HOST or --plan PLAN \
             (e.g. `ivnsec clock check --netns ivn-3fa9c1-ecu1 --netns ivn-3fa9c1-ecu2`)",
        ));
    }
    let mut runners: Vec<&dyn HostRunner> = targets.iter().map(|t| t as &dyn HostRunner).collect();
    runners.extend(plan_hosts.iter().map(|h| h as &dyn HostRunner));
    let set = ClockSet::probe(&runners, uds_of, a.max_offset);
    let code = set.exit_code();
    if a.json {
        let doc = serde_json::json!({
            "max_offset_ns": set.max_offset_ns,
            "shared_clock": set.shared_clock,
            "owd": set.owd_trust(),
            "verdict": set.verdict(),
            "hosts": set.hosts,
        });
        json.print(&doc)?;
    } else {
        print_table(&set);
    }
    Ok(ExitCode::from(code))
}

fn print_table(set: &ClockSet) {
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
    println!(
        "{:<24} {:<6} {:<15} {:<13} {:>10} {:>14} {:>5}  grand master",
        "host", "via", "state", "port", "offset ns", "path delay ns", "steps"
    );
    for h in &set.hosts {
        println!(
            "{:<24} {:<6} {:<15} {:<13} {:>10} {:>14} {:>5}  {}",
            h.host,
            h.via,
            h.state.as_str(),
            h.port_state.as_deref().unwrap_or("-"),
            num(h.offset_ns),
            num(h.mean_path_delay_ns),
            h.steps_removed.map_or("-".to_string(), |s| s.to_string()),
            h.gm_identity.as_deref().unwrap_or("-"),
        );
    }
    println!();
    for h in &set.hosts {
        println!("{}: {}", h.host, h.reason);
    }
    println!("\n{}", set.verdict());
}
