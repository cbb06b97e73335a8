//! The bench of the tests across SSH hosts: a testbed whose ECUs run sshds, and the checks the
//! tests share.

use crate::common::{BIN, Proc, TempDir, text};
use ivnsec_net::testbed::{Options, Testbed};
use ivnsec_net::topology::Topology;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const SSHD: &str = "/usr/sbin/sshd";

/// Why SSH "hosts" cannot be built here, if they cannot.
pub(crate) fn ssh_missing() -> Option<String> {
    if !Path::new(SSHD).exists() {
        return Some(format!(
            "no {SSHD} (Debian: apt-get install openssh-server)"
        ));
    }
    for tool in ["ssh", "ssh-keygen"] {
        if Command::new(tool).arg("-V").output().is_err()
            && Command::new(tool).arg("-?").output().is_err()
        {
            return Some(format!(
                "no {tool} (Debian: apt-get install openssh-client)"
            ));
        }
    }
    None
}

macro_rules! require_sshd {
    () => {
        require_root!();
        if let Some(why) = $crate::bench::ssh_missing() {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("SKIPPED {}: {why}\n", module_path!()),
            );
            return;
        }
    };
}

/// The bench: a testbed, an sshd in two of its ECUs, keys and known hosts in the test's
/// directory. Dropped: the sshds stop, then the testbed goes (and the directory with `d`).
pub(crate) struct Bench {
    // Field order is drop order: the servers first, then the testbed.
    pub(crate) sshd: Vec<Proc>,
    pub(crate) tb: Option<Testbed>,
    pub(crate) dir: PathBuf,
    /// (name, namespace, address) of cu, front, rear.
    pub(crate) nodes: Vec<(String, String, String)>,
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.sshd.clear();
        if let Some(tb) = self.tb.take() {
            let _ = tb.down();
        }
    }
}

pub(crate) fn ssh_keygen(path: &Path) {
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "ivnsec-test", "-f"])
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "ssh-keygen: {}", text(&o.stderr));
}

impl Bench {
    /// Stops the sshds, removes the testbed, and checks that none of its namespaces is left.
    pub(crate) fn close(self) {
        let prefix = self.tb.as_ref().unwrap().prefix().to_string();
        drop(self);
        let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
        let left: Vec<String> = text(&o.stdout)
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .map(str::to_string)
            .collect();
        assert!(left.is_empty(), "namespaces left: {left:?}");
    }

    pub(crate) fn up(d: &TempDir) -> Bench {
        Bench::up_with(d, &[])
    }

    /// The bench, with the sshd of each host in `elsewhere` seeing a boot id of its own (a
    /// file bind-mounted over /proc/sys/kernel/random/boot_id in a mount namespace of that
    /// sshd only): to ivnsec that host is another machine, with a clock of its own.
    pub(crate) fn up_with(d: &TempDir, elsewhere: &[&str]) -> Bench {
        Bench::up_opts(d, elsewhere, 1)
    }

    /// The bench with an sshd in `cu` too (where ivnsec runs): three hosts.
    pub(crate) fn up_three(d: &TempDir) -> Bench {
        Bench::up_opts(d, &[], 0)
    }

    /// The bench with an sshd in every node from index `first` of cu, front, rear.
    pub(crate) fn up_opts(d: &TempDir, elsewhere: &[&str], first: usize) -> Bench {
        let tb = Testbed::up(
            &Topology::SteerByWire,
            &Options {
                ipv4: true,
                state_dir: d.state(),
                prefix: None,
            },
        )
        .unwrap();
        let nodes: Vec<(String, String, String)> = ["cu", "front", "rear"]
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    tb.state().namespace_of(n).unwrap().to_string(),
                    tb.state().ipv4_of(n).unwrap().to_string(),
                )
            })
            .collect();
        let dir = d.path("ssh");
        std::fs::create_dir_all(&dir).unwrap();
        ssh_keygen(&dir.join("client"));
        std::fs::copy(dir.join("client.pub"), dir.join("authorized_keys")).unwrap();
        // sshd's privilege separation directory (the package's postinst makes it at boot).
        std::fs::create_dir_all("/run/sshd").unwrap();
        let mut bench = Bench {
            sshd: Vec::new(),
            tb: Some(tb),
            dir: dir.clone(),
            nodes,
        };
        let mut known = String::new();
        let mut servers = Vec::new();
        for (name, ns, ip) in &bench.nodes[first..] {
            let key = dir.join(format!("host-{name}"));
            ssh_keygen(&key);
            let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
            let mut words = public.split_whitespace();
            known.push_str(&format!(
                "{ip} {} {}\n",
                words.next().unwrap(),
                words.next().unwrap()
            ));
            let config = dir.join(format!("sshd-{name}.conf"));
            std::fs::write(
                &config,
                format!(
                    "ListenAddress {ip}:22\nHostKey {}\nAuthorizedKeysFile {}\n\
                     PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile none\n\
                     LogLevel ERROR\n",
                    key.display(),
                    dir.join("authorized_keys").display()
                ),
            )
            .unwrap();
            let mut c = Command::new("ip");
            if elsewhere.contains(&name.as_str()) {
                let boot_id = dir.join(format!("boot_id-{name}"));
                std::fs::write(&boot_id, "0b9e6c3a-55f1-4c1e-9a4f-0c0ffee00001\n").unwrap();
                c.args([
                    "netns",
                    "exec",
                    ns,
                    "unshare",
                    "-m",
                    "--propagation",
                    "private",
                ])
                .args(["sh", "-c"])
                .arg(
                    "mount --bind \"$1\" /proc/sys/kernel/random/boot_id && \
                         exec \"$2\" -D -e -f \"$3\"",
                )
                .arg("sh")
                .arg(&boot_id)
                .arg(SSHD);
            } else {
                c.args(["netns", "exec", ns, SSHD, "-D", "-e", "-f"]);
            }
            c.arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            servers.push(Proc(Some(c.spawn().unwrap())));
        }
        bench.sshd = servers;
        std::fs::write(dir.join("known_hosts"), known).unwrap();
        // Each sshd listens once its port answers from cu.
        for (_, _, ip) in &bench.nodes[first..] {
            let t0 = Instant::now();
            loop {
                let o = bench
                    .in_cu("sh")
                    .args(["-c", &format!("exec 3<>/dev/tcp/{ip}/22 2>/dev/null")])
                    .output();
                // dash has no /dev/tcp: fall back to asking ssh itself.
                let ready = o.is_ok_and(|o| o.status.success())
                    || bench
                        .in_cu("ssh")
                        .args(bench.ssh_options())
                        .args(["-o", "BatchMode=yes", &format!("root@{ip}"), "true"])
                        .output()
                        .is_ok_and(|o| o.status.success());
                if ready {
                    break;
                }
                assert!(
                    t0.elapsed() < Duration::from_secs(10),
                    "sshd on {ip} did not start"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        bench
    }

    /// A command in the `cu` namespace, where ivnsec runs.
    pub(crate) fn in_cu(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.nodes[0].1, program]);
        c
    }

    pub(crate) fn ssh_options(&self) -> Vec<String> {
        vec![
            "-i".into(),
            self.dir.join("client").display().to_string(),
            "-o".into(),
            format!(
                "UserKnownHostsFile={}",
                self.dir.join("known_hosts").display()
            ),
            "-o".into(),
            "StrictHostKeyChecking=yes".into(),
        ]
    }

    /// The `[[host]]` table of `name` (front or rear; cu on a bench of three) with extra lines.
    /// A plan file `file` in `d`: `head`, then the `[[host]]` tables of `front` and `rear`.
    pub(crate) fn hosts_plan(&self, d: &TempDir, file: &str, head: &str) -> PathBuf {
        let plan = d.path(file);
        let text = format!(
            "{head}{}{}",
            self.host_table("front", ""),
            self.host_table("rear", "")
        );
        std::fs::write(&plan, text).unwrap();
        plan
    }

    pub(crate) fn host_table(&self, name: &str, extra: &str) -> String {
        let ip = &self.nodes.iter().find(|n| n.0 == name).unwrap().2;
        let opts: Vec<String> = self
            .ssh_options()
            .iter()
            .map(|o| format!("{o:?}"))
            .collect();
        format!(
            "[[host]]\nname = \"{name}\"\nssh = \"root@{ip}\"\niface = \"eth0\"\n\
             ssh_options = [{}]\nivnsec_dir = \"{}\"\n{extra}\n",
            opts.join(", "),
            self.dir.join(format!("ivnsec-{name}")).display()
        )
    }

    /// `ivnsec ARGS` in `cu`.
    pub(crate) fn ivnsec(&self, d: &TempDir, args: &[&str]) -> Output {
        self.in_cu(BIN)
            .args(args)
            .env("IVNSEC_STATE_DIR", d.state())
            .output()
            .unwrap()
    }
}

/// Processes running an ivnsec from under `dir` (the copies on the "hosts").
pub(crate) fn ours_running(dir: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe"))
            && exe.starts_with(dir)
        {
            pids.push(pid);
        }
    }
    pids
}

/// Waits up to 10 s for no process of `dir` to run.
pub(crate) fn assert_none_left(dir: &Path) {
    let t0 = Instant::now();
    while !ours_running(dir).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "nodes left running: {:?}",
            ours_running(dir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The keys of a JSON object, and of the objects in it, as paths (`a.b`, arrays by their first
/// element as `a[]`).
pub(crate) fn shape(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}.{k}");
                out.insert(p.clone());
                shape(x, &p, out);
            }
        }
        Value::Array(a) => {
            if let Some(x) = a.first() {
                shape(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

/// `ivnsec run` of `plan` in cu: exit 3, the stderr naming `host`; nothing of the test left.
pub(crate) fn fails_naming(bench: &Bench, d: &TempDir, plan: &str, host: &str, says: &str) {
    let p = d.path(&format!("fail-{host}.toml"));
    std::fs::write(&p, plan).unwrap();
    let out = d.path("report-fail");
    let o = bench.ivnsec(
        d,
        &["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains(&format!("host {host}")), "{err}");
    assert!(err.contains(says), "wanted {says:?}: {err}");
    assert_none_left(&bench.dir);
}

/// The pids of the children of `pid` that run sshd (its sessions), and theirs.
pub(crate) fn sshd_sessions(listener: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut parents = vec![listener];
    while let Some(p) = parents.pop() {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
            let Some((head, rest)) = stat.rsplit_once(") ") else {
                continue;
            };
            let ppid: u32 = rest
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if ppid == p && head.contains("(sshd") {
                found.push(pid);
                parents.push(pid);
            }
        }
    }
    found
}

pub(crate) const PLAN: &str = "name = \"multihost\"\n[run]\ncount = 40\nreplications = 2\ntimeout_ms = 500\n\
[[matrix]]\nprofiles = [\"plain\", \"aes128-gcm\"]\npayloads = [64]\n\
[[throughput]]\nprofiles = [\"aes128-gcm\"]\npayloads = [256]\nseconds = 1\nbaseline = false\n";

/// A timeline of ten 3000-byte messages 20 ms apart (sockperf playback CSV).
pub(crate) const TIMELINE: &str = "0.010, 3000\n0.030, 3000\n0.050, 3000\n0.070, 3000\n0.090, 3000\n\
     0.110, 3000\n0.130, 3000\n0.150, 3000\n0.170, 3000\n0.190, 3000\n";

pub(crate) const STREAMS: &str = "name = \"streams\"\n\
     [[underload]]\nprofiles = [\"aes128-gcm\"]\nsize = 4000\nmps = 100\nseconds = 1\n\
     reply_every = 10\nbaseline = false\n\
     [[playback]]\nprofiles = [\"macsec-gcm-aes-128/auth\"]\ntimeline = \"t.csv\"\n\
     baseline = false\n\
     [[camera]]\ncameras = [1]\nlevels = [\"conf\"]\nframe_bytes = 8000\nseconds = 1\n\
     transport = \"l2\"\n";
