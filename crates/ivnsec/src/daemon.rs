//! What the long-running commands (`macsec up`, `gateway`, `esp up`, `keyserver`) share as
//! system services: `--config FILE` (their flags as TOML), `--metrics ADDR` (Prometheus text
//! format, [`ivnsec_node::metrics`]) and readiness for systemd (`Type=notify`, sd_notify).
//!
//! The config file holds the same names as the flags, without the dashes in front:
//!
//! ```toml
//! plain = "eth1"
//! protected = "eth0"
//! profile = "macsec-gcm-aes-128"
//! keys = "/etc/ivnsec/ca.toml"
//! peer = ["02:00:00:00:00:02"]     # a repeatable flag takes a list
//! rcvbuf-mib = 32
//! json = false                     # a switch: true gives it, false leaves it out
//! ```
//!
//! A flag on the command line wins over the same key in the file. An unknown key, a list for a
//! flag that takes one value, or a table is a configuration error (exit 2) that names the file
//! and the key. The file is read before the command line is checked, so a required flag may come
//! from either.
//!
//! Readiness: the data-plane daemons publish their status file once the interface is up
//! (`macsec up`: TAP up and the key source started; `gateway`: both ports open; `esp up`: TUN
//! configured). A watcher thread sends `READY=1` when that file first appears with this
//! process's pid, so readiness means what the status says, without a hook in the data plane.
//! The key server is ready once its listener is bound.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::ArgAction;
use clap::parser::ValueSource;

use crate::error::usage;

/// `--config` and `--metrics`, flattened into every daemon's arguments.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DaemonArgs {
    /// Read options from a TOML file: the flags' names as keys (`plain = "eth1"`,
    /// `rcvbuf-mib = 32`, `peer = ["02:00:00:00:00:02"]`, `json = true`); flags given on the
    /// command line win. Unknown keys are refused (exit 2). Keeps key paths out of unit files.
    /// Example: `ivnsec gateway --config /etc/ivnsec/gateway/eth1.toml`
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve Prometheus metrics (text format) at http://ADDR/metrics: frames, bytes, drops by
    /// reason, sequence numbers used, rekeys, peers, key-server connections, certificate
    /// expiry. Example: `--metrics 127.0.0.1:9477`
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
}

/// The subcommand paths that flatten [`DaemonArgs`].
const DAEMONS: [&[&str]; 4] = [
    &["gateway"],
    &["keyserver"],
    &["macsec", "up"],
    &["esp", "up"],
];

/// A command line that failed before any command ran.
pub enum ParseError {
    /// clap's own (usage, `--help`, `--version`): printed by clap.
    Clap(clap::Error),
    /// A `--config` file that could not be read or holds a bad key (exit 2).
    Config(anyhow::Error),
    /// An argument that is no profile (exit 2), in the command's words
    /// ([`crate::cmd::ProfileArgError`]).
    Profile(anyhow::Error),
}

/// Where the flags of a subcommand are: the names of its subcommand path (`["gateway"]`,
/// `["macsec", "up"]`) and its matches.
fn leaf(m: &clap::ArgMatches) -> (Vec<String>, &clap::ArgMatches) {
    let mut names = Vec::new();
    let mut m = m;
    while let Some((name, sub)) = m.subcommand() {
        names.push(name.to_string());
        m = sub;
    }
    (names, m)
}

/// The command line with the options of `--config FILE` added (those not given as flags), or
/// the command line as it is when it has no `--config`.
pub fn with_config(cmd: &clap::Command, argv: Vec<OsString>) -> Result<Vec<OsString>, ParseError> {
    // A first, lenient pass finds the subcommand and where --config points; required flags may
    // still be missing (they may be in the file).
    let Ok(first) = cmd.clone().ignore_errors(true).try_get_matches_from(&argv) else {
        return Ok(argv);
    };
    let (names, m) = leaf(&first);
    // Only the daemons' --config ([`DaemonArgs`]); other commands' --config (`someip serve`'s
    // node file) is theirs.
    if !DAEMONS.iter().any(|d| *d == names) {
        return Ok(argv);
    }
    let Ok(Some(file)) = m.try_get_one::<PathBuf>("config") else {
        return Ok(argv);
    };
    let file = file.clone();
    let mut sub = cmd.clone();
    for n in &names {
        sub = match sub.find_subcommand(n) {
            Some(s) => s.clone(),
            None => return Ok(argv),
        };
    }
    let given = |id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
    let extra = config_args(&file, &names.join(" "), &sub, &given).map_err(ParseError::Config)?;
    let mut argv = argv;
    argv.extend(extra);
    Ok(argv)
}

/// The flags a config file stands for, leaving out those `given` on the command line.
fn config_args(
    file: &Path,
    command: &str,
    sub: &clap::Command,
    given: &dyn Fn(&str) -> bool,
) -> Result<Vec<OsString>> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        usage(format!(
            "--config {}: {e}; give the path of a readable TOML file",
            file.display()
        ))
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| usage(format!("--config {}: not valid TOML: {e}", file.display())))?;
    let mut out = Vec::new();
    for (key, value) in &table {
        let bad = |why: String| usage(format!("--config {}: key `{key}`: {why}", file.display()));
        let arg = sub
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && key != "config")
            .ok_or_else(|| {
                let known: Vec<&str> = sub
                    .get_arguments()
                    .filter_map(|a| a.get_long())
                    .filter(|l| !matches!(*l, "config" | "help"))
                    .collect();
                bad(format!(
                    "`{command}` has no such option (it takes: {})",
                    known.join(", ")
                ))
            })?;
        if given(arg.get_id().as_str()) {
            continue;
        }
        let flag = format!("--{key}");
        let scalar = |v: &toml::Value| -> Result<String> {
            match v {
                toml::Value::String(s) => Ok(s.clone()),
                toml::Value::Integer(i) => Ok(i.to_string()),
                toml::Value::Float(f) => Ok(f.to_string()),
                other => Err(bad(format!(
                    "expected a string or a number, found {}",
                    other.type_str()
                ))),
            }
        };
        match arg.get_action() {
            ArgAction::SetTrue | ArgAction::SetFalse => match value {
                toml::Value::Boolean(true) => out.push(flag.into()),
                toml::Value::Boolean(false) => {}
                other => {
                    return Err(bad(format!(
                        "a switch takes true or false, found {}",
                        other.type_str()
                    )));
                }
            },
            ArgAction::Append => {
                let items: Vec<&toml::Value> = match value {
                    toml::Value::Array(a) => a.iter().collect(),
                    v => vec![v],
                };
                for v in items {
                    out.push(OsString::from(&flag));
                    out.push(scalar(v)?.into());
                }
            }
            _ => {
                if let toml::Value::Array(_) = value {
                    return Err(bad(format!(
                        "{flag} takes one value, found a list; give one value"
                    )));
                }
                out.push(format!("{flag}={}", scalar(value)?).into());
            }
        }
    }
    Ok(out)
}

/// Tells systemd (when it started us with `Type=notify`) that the service is ready, with a
/// status line. Nothing happens without `$NOTIFY_SOCKET`.
pub fn notify_ready(status: &str) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    let states = [
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(status),
    ];
    if let Err(e) = sd_notify::notify(&states) {
        eprintln!("ivnsec: warning: telling systemd the service is ready: {e}");
    }
}

/// Sends `READY=1` once the status file `path` exists and names this process (see the module
/// documentation), from a background thread. Gives up silently after `limit` (the daemon then
/// failed to come up and says why itself).
pub fn ready_when_status(path: PathBuf, what: String) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    std::thread::spawn(move || {
        let me = u64::from(std::process::id());
        let until = std::time::Instant::now() + Duration::from_secs(600);
        while std::time::Instant::now() < until {
            if status_names_pid(&path, me) {
                notify_ready(&what);
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

/// Whether the JSON status file at `path` has `"pid": pid`.
fn status_names_pid(path: &Path, pid: u64) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["pid"].as_u64())
        == Some(pid)
}

/// Starts what `--metrics` and systemd need of a daemon that publishes a status file: the
/// metrics responder (bound now, so a bad address fails before anything is set up) and the
/// readiness watcher.
pub fn start_status_daemon(d: &DaemonArgs, src: ivnsec_node::metrics::StatusSource) -> Result<()> {
    let what = format!("{} {} running", src.daemon, src.instance);
    ready_when_status(src.path.clone(), what);
    if let Some(addr) = d.metrics {
        let src = std::sync::Arc::new(src);
        let local = ivnsec_node::metrics::serve(addr, std::sync::Arc::new(move || src.render()))?;
        eprintln!("metrics: http://{local}/metrics");
    }
    Ok(())
}

/// A status source for `--metrics` (the rekey watch empty).
pub fn status_source(
    daemon: &'static str,
    instance: &str,
    path: PathBuf,
    seq_limit: u64,
    cert: Option<PathBuf>,
) -> ivnsec_node::metrics::StatusSource {
    ivnsec_node::metrics::StatusSource {
        daemon,
        instance: instance.to_string(),
        path,
        seq_limit,
        cert,
        rekeys: Default::default(),
    }
}

/// The status file of a `macsec up` TAP or a gateway's plain port, as the SecY writes it.
pub fn macsec_status_path(run_dir: Option<&Path>, host_side: &str) -> Result<PathBuf> {
    let dir = run_dir
        .map(Path::to_path_buf)
        .unwrap_or_else(ivnsec_net::testbed::default_state_dir);
    ivnsec_node::macsec::status::path(&dir, host_side).context("the status file's path")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn argv(s: &[&str]) -> Vec<OsString> {
        s.iter().map(OsString::from).collect()
    }

    fn with(toml: &str, args: &[&str]) -> Result<Vec<OsString>, String> {
        let dir = std::env::temp_dir().join(format!("ivnsec-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(format!("{}.toml", args.len() + toml.len()));
        std::fs::write(&f, toml).unwrap();
        let mut a = argv(args);
        a.push("--config".into());
        a.push(f.clone().into());
        let r = with_config(&crate::cli::Cli::command(), a).map_err(|e| match e {
            ParseError::Config(e) | ParseError::Profile(e) => format!("{e:#}"),
            ParseError::Clap(e) => e.to_string(),
        });
        let _ = std::fs::remove_file(&f);
        r.map(|v| v.into_iter().skip(args.len() + 2).collect())
    }

    #[test]
    fn config_keys_become_flags_and_flags_win() {
        let extra = with(
            "plain = \"eth1\"\nprotected = \"eth0\"\npeer = [\"02:00:00:00:00:02\", \
             \"02:00:00:00:00:03\"]\nrcvbuf-mib = 32\njson = true\nprofile = \"x\"\n",
            &["ivnsec", "gateway", "--profile", "macsec-gcm-aes-128"],
        )
        .unwrap();
        let extra: Vec<String> = extra
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert!(extra.contains(&"--plain=eth1".to_string()), "{extra:?}");
        assert!(extra.contains(&"--rcvbuf-mib=32".to_string()));
        assert!(extra.contains(&"--json".to_string()));
        assert_eq!(extra.iter().filter(|s| *s == "--peer").count(), 2);
        // --profile was given on the command line: the file's is left out.
        assert!(
            !extra.iter().any(|s| s.starts_with("--profile")),
            "{extra:?}"
        );
    }

    #[test]
    fn unknown_keys_and_wrong_shapes_name_the_file_and_key() {
        let e = with("plian = \"eth1\"\n", &["ivnsec", "gateway"]).unwrap_err();
        assert!(e.contains("key `plian`") && e.contains(".toml"), "{e}");
        assert!(e.contains("plain"), "lists the known keys: {e}");
        let e = with("plain = [\"a\", \"b\"]\n", &["ivnsec", "gateway"]).unwrap_err();
        assert!(e.contains("key `plain`") && e.contains("one value"), "{e}");
        let e = with("json = \"yes\"\n", &["ivnsec", "gateway"]).unwrap_err();
        assert!(
            e.contains("key `json`") && e.contains("true or false"),
            "{e}"
        );
        let e = with("config = \"x.toml\"\n", &["ivnsec", "keyserver"]).unwrap_err();
        assert!(e.contains("key `config`"), "{e}");
        let e = with("listen = \n", &["ivnsec", "keyserver"]).unwrap_err();
        assert!(e.contains("not valid TOML"), "{e}");
    }

    #[test]
    fn a_command_line_without_config_is_left_alone() {
        for a in [
            argv(&["ivnsec", "suites", "--json"]),
            // `someip serve --config` is the node file of its own, not a daemon config.
            argv(&["ivnsec", "someip", "serve", "--config", "/nonexistent.toml"]),
        ] {
            let out = with_config(&crate::cli::Cli::command(), a.clone())
                .ok()
                .unwrap();
            assert_eq!(out, a);
        }
    }
}
