//! Hosts reached over SSH: the `[[host]]` tables of a plan, the `ssh` command that runs an
//! argument vector on one of them, and a host made ready for a run (ivnsec found or copied
//! there, its interface's addresses read). Where a node runs is one abstraction
//! ([`crate::site::Site`], [`crate::process::Place`]); this module is the SSH part of it.
//!
//! OpenSSH does the work: `ssh -T -o BatchMode=yes …` (never a password prompt), the user's
//! `ssh_options` passed as they are. A node's spec and keys travel over the SSH channel's stdin
//! exactly as they travel over a local pipe; nothing secret is put on a command line.

use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Result, anyhow};
use serde::Deserialize;

use ivnsec_node::error::{env_error, usage};

pub mod check;
pub mod probe;

pub use probe::Probe;

/// The version line `ivnsec --version` prints; a host's ivnsec must print the same.
pub fn version_line() -> String {
    format!("ivnsec {}", env!("CARGO_PKG_VERSION"))
}

/// One `[[host]]` table of a plan.
///
/// ```toml
/// [[host]]
/// name = "ecu1"
/// ssh = "root@192.0.2.10"
/// iface = "eth1"
/// ssh_options = ["-i", "/home/me/.ssh/bench", "-o", "UserKnownHostsFile=/home/me/.ssh/bench_hosts"]
/// ivnsec_dir = "/var/tmp/ivnsec"   # optional: where ivnsec is found or copied (default ~/.cache/ivnsec)
/// copy = true                      # optional: copy this ivnsec there when the host has none
/// ```
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// The host's name in reports and errors.
    pub name: String,
    /// `ssh`'s destination: `user@address`, an address or a `Host` of the SSH configuration.
    pub ssh: String,
    /// The interface the experiment's frames use on that host.
    pub iface: String,
    /// Options for `ssh`, passed as they are (`-i KEYFILE`, `-o Port=2222`, `-F CONFIG`, …).
    #[serde(default)]
    pub ssh_options: Vec<String>,
    /// Where ivnsec is looked for (`DIR/VERSION/ivnsec`) and copied to when the host has no
    /// ivnsec of this version on its PATH. Default: `~/.cache/ivnsec` of the SSH user.
    #[serde(default)]
    pub ivnsec_dir: Option<String>,
    /// Copy this ivnsec to the host when it has none of the same version (default true).
    #[serde(default)]
    pub copy: Option<bool>,
}

/// Longest a host name, an interface name or an `ssh` destination may be.
const MAX_FIELD: usize = 255;

impl Host {
    /// Checks the table; the error names the key and the problem (the caller adds the file).
    pub fn check(&self) -> std::result::Result<(), ivnsec_node::error::KeyError> {
        use ivnsec_node::error::KeyError;
        let name_ok = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        if !name_ok(&self.name) {
            return Err(KeyError::new(
                "name",
                format!("`{}`: 1 to 64 letters, digits, `-`, `_` or `.`", self.name),
            ));
        }
        if self.ssh.is_empty()
            || self.ssh.len() > MAX_FIELD
            || self.ssh.starts_with('-')
            || self
                .ssh
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(KeyError::new(
                "ssh",
                format!(
                    "`{}`: a destination such as root@192.0.2.10 (no spaces, not starting with `-`)",
                    self.ssh
                ),
            ));
        }
        // Linux interface names: at most 15 bytes, no `/`, no white space.
        if self.iface.is_empty()
            || self.iface.len() > 15
            || self
                .iface
                .chars()
                .any(|c| c == '/' || c == ':' || c.is_whitespace() || c.is_control())
        {
            return Err(KeyError::new(
                "iface",
                format!(
                    "`{}`: an interface name of 1 to 15 characters, such as eth1",
                    self.iface
                ),
            ));
        }
        if let Some(o) = self.ssh_options.iter().find(|o| o.len() > 4096) {
            return Err(KeyError::new(
                "ssh_options",
                format!("an option of {} bytes, at most 4096", o.len()),
            ));
        }
        if let Some(d) = &self.ivnsec_dir
            && (d.is_empty() || d.len() > 4096 || d.contains('\0'))
        {
            return Err(KeyError::new("ivnsec_dir", "an empty or too long path"));
        }
        Ok(())
    }

    /// The `ssh` command that runs `argv` on this host: no terminal, `BatchMode=yes` (no password
    /// or host-key prompt: a key the host does not know fails at once), the user's options, then
    /// a connect timeout and keep-alives (a dead host or link ends the command within about
    /// 10 s). The remote side gets `argv` quoted for its shell, one word each.
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut c = Command::new("ssh");
        c.args(["-T", "-o", "BatchMode=yes"]);
        c.args(&self.ssh_options);
        c.args([
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ServerAliveInterval=2",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            "LogLevel=ERROR",
            "--",
            &self.ssh,
        ]);
        c.arg(argv.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" "));
        c
    }

    /// `name (ssh)`, how errors name the host.
    pub fn label(&self) -> String {
        format!("host {} ({})", self.name, self.ssh)
    }

    /// Whether ivnsec may be copied to the host.
    pub fn may_copy(&self) -> bool {
        self.copy.unwrap_or(true)
    }
}

/// `s` as one word for a POSIX shell: in single quotes, each `'` written as `'\''`.
pub fn quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/' | '=' | ':' | '@' | ',')
        })
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `argv` on `host` with `input` on its stdin (then closed), waits at most `limit`, and
/// returns exit status, stdout and stderr (each read up to 1 MiB).
pub fn run(
    host: &Host,
    argv: &[&str],
    input: Option<&Path>,
    limit: Duration,
) -> Result<(std::process::ExitStatus, String, String)> {
    let mut cmd = host.command(argv);
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = ivnsec_net::sys::die_with_parent(&mut cmd)
        .spawn()
        .map_err(|e| {
            env_error(format!(
                "{}: cannot start ssh: {e}; install the OpenSSH client (Debian: apt-get install \
             openssh-client)",
                host.label()
            ))
        })?;
    let feeder = match (input, child.stdin.take()) {
        (Some(p), Some(mut w)) => {
            let mut f =
                std::fs::File::open(p).map_err(|e| anyhow!("reading {}: {e}", p.display()))?;
            Some(std::thread::spawn(move || {
                let r = std::io::copy(&mut f, &mut w);
                let _ = w.flush();
                r.map(|_| ())
            }))
        }
        _ => None,
    };
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = (&mut out).take(1 << 20).read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = (&mut err).take(1 << 20).read_to_end(&mut s);
        s
    });
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(env_error(format!(
                "{}: no answer within {} s over SSH; check that it is up and reachable",
                host.label(),
                limit.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let out = String::from_utf8_lossy(&reader.join().unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&err_reader.join().unwrap_or_default())
        .trim()
        .to_string();
    Ok((status, out, err))
}

/// Exit status 255 is ssh's own: it could not connect, authenticate or keep the connection.
pub fn ssh_failed(status: &std::process::ExitStatus) -> bool {
    status.code() == Some(255)
}

/// What ssh said when it failed, with a hint on how to fix it, as an environment error (exit 3)
/// that names the host.
pub fn ssh_error(host: &Host, stderr: &str) -> anyhow::Error {
    let hint = if stderr.contains("Host key verification failed")
        || stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
    {
        "the host's key is not the one known for it: check the host, then fix the known_hosts \
         file (ssh-keygen -R HOST, or the UserKnownHostsFile of ssh_options)"
    } else if stderr.contains("Permission denied") {
        "the key was refused: give ssh_options = [\"-i\", \"KEYFILE\"] with a key in the host's \
         authorized_keys"
    } else {
        "check that the host is up, reachable and runs sshd (ivnsec hosts check PLAN)"
    };
    env_error(format!(
        "{}: SSH failed: {}; {hint}",
        host.label(),
        if stderr.is_empty() {
            "no message"
        } else {
            stderr
        }
    ))
}

/// A host ready for a run: its ivnsec (same version as this one), the MAC and IPv4 address of
/// its interface.
#[derive(Clone, Debug)]
pub struct Remote {
    pub spec: Host,
    /// The path of ivnsec on the host.
    pub exe: String,
    pub mac: [u8; 6],
    pub ip: Option<Ipv4Addr>,
    /// What the probe found (for the report's environment).
    pub probe: Probe,
}

impl Remote {
    /// The `ssh` command that runs `ivnsec ARGS` on the host.
    pub fn ivnsec(&self, args: &[&str]) -> Command {
        let mut argv = vec![self.exe.as_str()];
        argv.extend_from_slice(args);
        self.spec.command(&argv)
    }

    /// An error of a node on this host (a lost connection, or the node failed there) as an
    /// environment error naming the host.
    pub fn node_error(&self, e: anyhow::Error) -> anyhow::Error {
        if e.chain().any(|c| c.is::<ivnsec_node::error::EnvError>()) {
            return e;
        }
        env_error(format!(
            "{}: its node failed or the SSH connection was lost: {e:#}",
            self.spec.label()
        ))
    }
}

/// A host in a report's environment: name, SSH destination, interface, MTU, speed, ivnsec path.
pub fn describe(r: &Remote) -> serde_json::Value {
    serde_json::json!({
        "name": r.spec.name,
        "ssh": r.spec.ssh,
        "iface": r.spec.iface,
        "mac": r.probe.mac,
        "ipv4": r.probe.ipv4_cidr,
        "mtu": r.probe.mtu,
        "speed_mbps": r.probe.speed_mbps,
        "kernel": r.probe.kernel,
        "cores": r.probe.cores,
        "cpu": r.probe.cpu,
        "ivnsec": r.exe,
    })
}

/// Probes `spec`, finds ivnsec of this version there (on its PATH, or a copy of this very binary
/// in its `ivnsec_dir`) or copies this one there, and reads its interface's addresses.
pub fn prepare(spec: &Host) -> Result<Remote> {
    let local = std::env::current_exe().map_err(|e| anyhow!("locating the ivnsec binary: {e}"))?;
    let digest = file_sha256(&local)?;
    let mut p = probe::run(spec, &digest)?;
    if !p.iface {
        return Err(env_error(format!(
            "{}: has no interface `{}`; set iface to one of its interfaces (ip link)",
            spec.label(),
            spec.iface
        )));
    }
    if !p.privileged() {
        return Err(env_error(format!(
            "{}: the SSH user (uid {}) may not open raw sockets; log in as root or give ivnsec \
             CAP_NET_RAW (setcap cap_net_raw,cap_net_admin+ep PATH)",
            spec.label(),
            p.uid.map_or("?".into(), |u| u.to_string())
        )));
    }
    let exe = match p.usable_ivnsec() {
        Some(exe) => exe,
        None if spec.may_copy() => {
            let dest = copy_self(spec, &local)?;
            p = probe::run(spec, &digest)?;
            p.usable_ivnsec().ok_or_else(|| {
                env_error(format!(
                    "{}: copied ivnsec to {dest}, but it does not run there ({}); the host needs \
                     a Linux of the same architecture ({})",
                    spec.label(),
                    p.cached_version.as_deref().unwrap_or("no version printed"),
                    std::env::consts::ARCH
                ))
            })?
        }
        None => {
            return Err(env_error(format!(
                "{}: has no {} (on its PATH: {}; in {}: {}) and copying is off (copy = false); \
                 install this ivnsec on it, or allow the copy",
                spec.label(),
                version_line(),
                p.path_version.as_deref().unwrap_or("none"),
                p.dir,
                p.cached_version.as_deref().unwrap_or("none"),
            )));
        }
    };
    let mac = p
        .mac
        .as_deref()
        .and_then(ivnsec_net::topology::parse_mac)
        .ok_or_else(|| {
            env_error(format!(
                "{}: interface {} has no Ethernet address",
                spec.label(),
                spec.iface
            ))
        })?;
    let ip = p.ipv4();
    Ok(Remote {
        spec: spec.clone(),
        exe,
        mac,
        ip,
        probe: p,
    })
}

/// Copies this binary to `DIR/VERSION/ivnsec` on the host over the SSH channel (mode 0755, in a
/// directory only the SSH user may write); returns that path.
fn copy_self(spec: &Host, local: &Path) -> Result<String> {
    eprintln!("ivnsec: copying ivnsec to {}", spec.label());
    let script = format!(
        "set -e; umask 022; D=\"${{1:-$HOME/.cache/ivnsec}}/{v}\"; mkdir -p \"$D\"; \
         chmod 0755 \"$D\"; T=\"$D/ivnsec.part.$$\"; cat > \"$T\"; chmod 0755 \"$T\"; \
         mv -f \"$T\" \"$D/ivnsec\"; echo \"$D/ivnsec\"",
        v = env!("CARGO_PKG_VERSION")
    );
    let dir = spec.ivnsec_dir.clone().unwrap_or_default();
    let (status, out, err) = run(
        spec,
        &["sh", "-c", &script, "sh", &dir],
        Some(local),
        Duration::from_secs(300),
    )?;
    if ssh_failed(&status) {
        return Err(ssh_error(spec, &err));
    }
    if !status.success() {
        return Err(env_error(format!(
            "{}: copying ivnsec there failed ({status}): {err}; set ivnsec_dir to a writable \
             directory, or install ivnsec on the host",
            spec.label()
        )));
    }
    Ok(out.trim().to_string())
}

/// SHA-256 of a file, in hex.
pub fn file_sha256(p: &Path) -> Result<String> {
    use sha2::Digest;
    let mut f = std::fs::File::open(p).map_err(|e| anyhow!("reading {}: {e}", p.display()))?;
    let mut h = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Checks the hosts of a plan together: names unique, at least two for an experiment.
pub fn check_set(hosts: &[Host]) -> Result<()> {
    for (i, h) in hosts.iter().enumerate() {
        if hosts[..i].iter().any(|o| o.name == h.name) {
            return Err(usage(format!("two hosts are named `{}`", h.name)));
        }
    }
    Ok(())
}

/// A host of a plan's `[[host]]` tables, asked over its own ssh command (its options, batch
/// mode, timeouts).
impl crate::clock::HostRunner for Host {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn via(&self) -> &'static str {
        "ssh"
    }
    fn on_this_host(&self) -> bool {
        false
    }
    fn run(&self, argv: &[String]) -> Result<crate::clock::RunOutput, String> {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        crate::clock::run_bounded(&mut self.command(&argv), crate::clock::PROBE_TIMEOUT).map_err(
            |e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    "`ssh` is not installed on this machine".to_string()
                } else {
                    format!("running `ssh`: {e}")
                }
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "ecu1".into(),
            ssh: "root@192.0.2.10".into(),
            iface: "eth1".into(),
            ssh_options: vec!["-i".into(), "/k ey".into(), "-o".into(), "Port=2222".into()],
            ivnsec_dir: None,
            copy: None,
        }
    }

    /// Words survive a POSIX shell as they are, quotes and spaces included (sh itself is the
    /// judge).
    #[test]
    fn quoting_survives_sh() {
        let words = [
            "plain", "a b", "it's", "", "$HOME", "`id`", "x;y", "a\"b", "\\n", "ü",
        ];
        let line = words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ");
        let out = Command::new("sh")
            .args(["-c", &format!("printf '%s\\n' {line}")])
            .output()
            .unwrap();
        let back: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
        assert_eq!(back, words);
    }

    /// The ssh command: batch mode first (the first value of an option wins in ssh), the user's
    /// options as they are, the destination after `--`, the remote words quoted.
    #[test]
    fn ssh_command_shape() {
        let c = host().command(&["/opt/ivnsec", "node", "ping pong"]);
        assert_eq!(c.get_program(), "ssh");
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(&args[..3], ["-T", "-o", "BatchMode=yes"]);
        assert_eq!(&args[3..7], ["-i", "/k ey", "-o", "Port=2222"]);
        let dd = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dd + 1], "root@192.0.2.10");
        assert_eq!(args[dd + 2], "/opt/ivnsec node 'ping pong'");
        assert_eq!(args.len(), dd + 3);
        assert!(args.contains(&"ServerAliveInterval=2".to_string()));
    }

    /// Bad tables are refused with the key named.
    #[test]
    fn bad_tables() {
        assert!(host().check().is_ok());
        let bad = |f: &dyn Fn(&mut Host), key: &str| {
            let mut h = host();
            f(&mut h);
            assert_eq!(h.check().unwrap_err().key, key);
        };
        bad(&|h| h.name = String::new(), "name");
        bad(&|h| h.name = "a b".into(), "name");
        bad(&|h| h.ssh = "-oProxyCommand=x".into(), "ssh");
        bad(&|h| h.ssh = "root@a b".into(), "ssh");
        bad(&|h| h.iface = "a-very-long-interface".into(), "iface");
        bad(&|h| h.iface = "../x".into(), "iface");
        bad(&|h| h.ivnsec_dir = Some(String::new()), "ivnsec_dir");
        let two = [host(), host()];
        assert!(check_set(&two).is_err());
    }
}
