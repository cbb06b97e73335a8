//! Experiments across hosts reached by SSH (docs/multihost.md); what needs no host (option
//! errors, the plan of the docs, commands that refuse hosts) is in `cli/multihost.rs`. The "hosts" are ECU namespaces
//! of a testbed (steer-by-wire: `cu`, `front`, `rear`), `front` and `rear` each running its own
//! OpenSSH server (Debian's openssh-server) on its testbed address with a throwaway host key;
//! ivnsec runs in `cu` and reaches them with a throwaway client key, known hosts in a file of
//! the test (`UserKnownHostsFile` in the plan's ssh_options). The hosts' PATH has no ivnsec:
//! ivnsec copies itself into a directory of the test (`ivnsec_dir`) on each.
//!
//! Checked: a ping-pong and a throughput plan across the hosts give the same report shape as
//! the same plan on loopback; `hosts check` says what each host has; an unreachable host, a
//! wrong host key, a host without ivnsec (copying off) and an SSH connection dropped mid-run
//! each end the run with exit 3 and the host's name; so does Ctrl-C, whatever the nodes were
//! doing; afterwards no ivnsec of the test runs and the namespaces are gone. The test makes
//! sshd's privilege separation directory `/run/sshd` when it is missing (Debian's service
//! would make it at boot), and touches nothing else outside its temporary directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ivnsec_net::testbed::{Options, Testbed};
use ivnsec_net::topology::Topology;
use serde_json::Value;

use crate::common;

use crate::common::{BIN, Proc, TempDir, text};

const SSHD: &str = "/usr/sbin/sshd";

/// Why SSH "hosts" cannot be built here, if they cannot.
fn ssh_missing() -> Option<String> {
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
        if let Some(why) = ssh_missing() {
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
struct Bench {
    // Field order is drop order: the servers first, then the testbed.
    sshd: Vec<Proc>,
    tb: Option<Testbed>,
    dir: PathBuf,
    /// (name, namespace, address) of cu, front, rear.
    nodes: Vec<(String, String, String)>,
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.sshd.clear();
        if let Some(tb) = self.tb.take() {
            let _ = tb.down();
        }
    }
}

fn ssh_keygen(path: &Path) {
    let o = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "ivnsec-test", "-f"])
        .arg(path)
        .output()
        .unwrap();
    assert!(o.status.success(), "ssh-keygen: {}", text(&o.stderr));
}

impl Bench {
    /// Stops the sshds, removes the testbed, and checks that none of its namespaces is left.
    fn close(self) {
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

    fn up(d: &TempDir) -> Bench {
        Bench::up_with(d, &[])
    }

    /// The bench, with the sshd of each host in `elsewhere` seeing a boot id of its own (a
    /// file bind-mounted over /proc/sys/kernel/random/boot_id in a mount namespace of that
    /// sshd only): to ivnsec that host is another machine, with a clock of its own.
    fn up_with(d: &TempDir, elsewhere: &[&str]) -> Bench {
        Bench::up_opts(d, elsewhere, 1)
    }

    /// The bench with an sshd in `cu` too (where ivnsec runs): three hosts.
    fn up_three(d: &TempDir) -> Bench {
        Bench::up_opts(d, &[], 0)
    }

    /// The bench with an sshd in every node from index `first` of cu, front, rear.
    fn up_opts(d: &TempDir, elsewhere: &[&str], first: usize) -> Bench {
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
    fn in_cu(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.nodes[0].1, program]);
        c
    }

    fn ssh_options(&self) -> Vec<String> {
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
    fn host_table(&self, name: &str, extra: &str) -> String {
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
    fn ivnsec(&self, d: &TempDir, args: &[&str]) -> Output {
        self.in_cu(BIN)
            .args(args)
            .env("IVNSEC_STATE_DIR", d.state())
            .output()
            .unwrap()
    }
}

/// Processes running an ivnsec from under `dir` (the copies on the "hosts").
fn ours_running(dir: &Path) -> Vec<u32> {
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
fn assert_none_left(dir: &Path) {
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
fn shape(v: &Value, at: &str, out: &mut BTreeSet<String>) {
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

const PLAN: &str = "name = \"multihost\"\n[run]\ncount = 40\nreplications = 2\ntimeout_ms = 500\n\
[[matrix]]\nprofiles = [\"plain\", \"aes128-gcm\"]\npayloads = [64]\n\
[[throughput]]\nprofiles = [\"aes128-gcm\"]\npayloads = [256]\nseconds = 1\nbaseline = false\n";

/// A ping-pong and a throughput plan across two SSH hosts: the same report shape as on
/// loopback, every exchange answered, frames delivered, the hosts named in the environment,
/// one-way delays not taken from two clocks; `hosts check` finds both ready; nothing left.
#[test]
fn plan_across_ssh_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost");
    let bench = Bench::up(&d);
    let plan = d.path("hosts.toml");
    std::fs::write(
        &plan,
        format!(
            "{PLAN}{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let out = d.path("report-hosts");
    let o = bench.ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let hosts: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // The same plan without hosts, on loopback.
    let local_plan = d.path("local.toml");
    std::fs::write(&local_plan, PLAN).unwrap();
    let (_, local) = common::run_plan_on_loopback(&d, &local_plan);
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    shape(&hosts["scenarios"], "scenarios", &mut a);
    shape(&local["scenarios"], "scenarios", &mut b);
    // What only a clock shared by both ends gives is there but empty (null): the direct
    // one-way delays and the error of their estimate from round trips.
    b.retain(|k| {
        !k.starts_with("scenarios[].sections.owd_direct.")
            && !k.starts_with("scenarios[].owd_estimate_error_us.")
    });
    assert_eq!(a, b, "scenario shape differs from the local run");
    for s in hosts["scenarios"].as_array().unwrap() {
        assert!(s["sections"]["owd_direct"].is_null(), "{s}");
        assert!(s["owd_estimate_error_us"].is_null(), "{s}");
    }
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    shape(&hosts["experiments"], "experiments", &mut a);
    shape(&local["experiments"], "experiments", &mut b);
    assert_eq!(a, b, "experiment shape differs from the local run");
    // Every exchange came back, across the two hosts.
    let scenarios = hosts["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 2);
    let env = &hosts["environment"];
    let names: Vec<&str> = env["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["front", "rear"], "{env}");
    assert!(
        env["transport"].as_str().unwrap().contains("over SSH"),
        "{env}"
    );
    assert!(
        env["clock"].as_str().unwrap().contains("not one clock"),
        "{env}"
    );
    // Each host's PTP state, read with pmc over its ssh: these hosts run no ptp4l, so their
    // clocks count as unsynchronised (the run takes no direct one-way delay anyway).
    assert_eq!(env["owd_clock"], "unsynchronised", "{env}");
    let clocks = env["clock_state"].as_str().unwrap();
    assert!(
        clocks.contains("front no ptp4l") && clocks.contains("rear no ptp4l"),
        "{clocks}"
    );
    for h in env["hosts"].as_array().unwrap() {
        assert_eq!(h["iface"], "eth0", "{h}");
        assert_eq!(h["mtu"], 1500, "{h}");
        assert!(h["cores"].as_u64().is_some_and(|c| c >= 1), "{h}");
        assert!(!h["kernel"].as_str().unwrap().is_empty(), "{h}");
    }
    let samples = std::fs::read_to_string(out.join("samples.csv")).unwrap();
    let header: Vec<&str> = samples.lines().next().unwrap().split(',').collect();
    let lost = header.iter().position(|h| *h == "lost").unwrap();
    let owd = header.iter().position(|h| *h == "owd_direct_ns").unwrap();
    let rows: Vec<Vec<&str>> = samples
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2 * 40 * 2);
    assert!(
        rows.iter().all(|r| r[lost] == "0" || r[lost] == "false"),
        "lost exchanges"
    );
    // Two hosts, two clocks: no direct one-way delay.
    assert!(
        rows.iter().all(|r| r[owd].is_empty()),
        "owd_direct across hosts"
    );
    let t = &hosts["experiments"]["throughput"][0];
    assert!(t["delivered"].as_u64().unwrap() > 0, "{t}");
    assert_eq!(t["per_sender"][0]["name"], "front", "{t}");
    // ivnsec was copied to each host (their PATH has none) and runs no more.
    for h in ["front", "rear"] {
        let copy = bench
            .dir
            .join(format!("ivnsec-{h}"))
            .join(env!("CARGO_PKG_VERSION"))
            .join("ivnsec");
        assert!(copy.exists(), "{}", copy.display());
    }
    assert_none_left(&bench.dir);

    // hosts check: both reachable as root, eth0 up at 1500, ivnsec there now.
    let o = bench.ivnsec(&d, &["hosts", "check", plan.to_str().unwrap(), "--json"]);
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    let status = |host: usize, what: &str| {
        doc["hosts"][host]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["what"] == what)
            .map(|c| c["status"].as_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("no {what} in {doc}"))
    };
    for h in 0..2 {
        for what in ["ssh", "privilege", "interface", "link", "mtu", "ivnsec"] {
            assert_eq!(status(h, what), "ok", "{what}: {doc}");
        }
    }
    // No ptp4l runs on these hosts: PTP is a warning (the run works without it), read by pmc.
    for h in 0..2 {
        assert_eq!(status(h, "ptp"), "warn", "{doc}");
    }
    assert!(doc.to_string().contains("no ptp4l"), "{doc}");
    assert_eq!(doc["ready"], true, "{doc}");
    assert_eq!(o.status.code(), Some(0));
    let text_out = bench.ivnsec(&d, &["hosts", "check", plan.to_str().unwrap()]);
    assert!(text(&text_out.stdout).contains("every host is ready"));

    // The experiment commands take the same hosts: pingpong and throughput --hosts PLAN.
    let o = bench.ivnsec(
        &d,
        &[
            "pingpong",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "chacha20-poly1305",
            "--payload",
            "100",
            "--count",
            "30",
            "--replications",
            "1",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert_eq!(v["lost"], 0, "{v}");
    assert_eq!(v["count"], 30, "{v}");
    assert!(v["sections"]["owd_direct"].is_null(), "{v}");
    let o = bench.ivnsec(
        &d,
        &[
            "throughput",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "aes128-gcm",
            "--payload",
            "512",
            "--seconds",
            "1",
            "--no-baseline",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    let r = if v.is_array() { &v[0] } else { &v };
    assert!(r["delivered"].as_u64().unwrap() > 0, "{v}");
    assert!(r["transport"].as_str().unwrap().contains("over SSH"), "{v}");
    assert_none_left(&bench.dir);

    bench.close();
    assert!(
        d.leftover_testbeds().is_empty(),
        "{:?}",
        d.leftover_testbeds()
    );
}

/// `ivnsec run` of `plan` in cu: exit 3, the stderr naming `host`; nothing of the test left.
fn fails_naming(bench: &Bench, d: &TempDir, plan: &str, host: &str, says: &str) {
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

/// An unreachable host, a wrong host key, a host without ivnsec where copying is off: each
/// stops the run before any node starts, with exit 3 and the host's name and cause.
#[test]
fn failing_hosts_are_named() {
    require_sshd!();
    let d = TempDir::new("multihost-fail");
    let bench = Bench::up(&d);
    let front = bench.host_table("front", "");
    // Unreachable: an address of the testbed's subnet where nothing answers.
    let rear_ip = &bench.nodes[2].2;
    let unused = format!("{}.250", rear_ip.rsplit_once('.').unwrap().0);
    let ghost = bench
        .host_table("rear", "")
        .replace("name = \"rear\"", "name = \"ghost\"")
        .replace(&bench.nodes[2].2, &unused);
    fails_naming(
        &bench,
        &d,
        &format!("{PLAN}{front}{ghost}"),
        "ghost",
        "SSH failed",
    );
    // A wrong host key: the known hosts say front's key for rear's address.
    let kh = bench.dir.join("known_hosts");
    let good = std::fs::read_to_string(&kh).unwrap();
    let lines: Vec<&str> = good.lines().collect();
    let (a0, k0) = lines[0].split_once(' ').unwrap();
    let (a1, k1) = lines[1].split_once(' ').unwrap();
    let swapped = format!("{a0} {k1}\n{a1} {k0}\n");
    std::fs::write(&kh, swapped).unwrap();
    fails_naming(
        &bench,
        &d,
        &format!("{PLAN}{front}{}", bench.host_table("rear", "")),
        "front",
        "Host key verification failed",
    );
    std::fs::write(&kh, good).unwrap();
    // No ivnsec on rear's PATH and copying off.
    fails_naming(
        &bench,
        &d,
        &format!("{PLAN}{front}{}", bench.host_table("rear", "copy = false")),
        "rear",
        "copying is off",
    );
    // hosts check says the same, with exit 3.
    let p = d.path("check.toml");
    std::fs::write(
        &p,
        format!("{front}{}", bench.host_table("rear", "copy = false")),
    )
    .unwrap();
    let o = bench.ivnsec(&d, &["hosts", "check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("ivnsec    missing"), "{out}");
    assert!(out.contains("copy = true"), "{out}");
    bench.close();
    assert!(d.leftover_testbeds().is_empty());
}

/// The pids of the children of `pid` that run sshd (its sessions), and theirs.
fn sshd_sessions(listener: u32) -> Vec<u32> {
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

/// The SSH connection to the responder's host dropped mid-run (its sshd session killed): the
/// run ends with exit 3 naming that host, soon, and no node is left on either host.
#[test]
fn ssh_dropped_mid_run() {
    require_sshd!();
    let d = TempDir::new("multihost-drop");
    let bench = Bench::up(&d);
    let p = d.path("long.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"long\"\n[run]\ncount = 100000\nreplications = 1\npause_ms = 1\n\
             [[scenario]]\nprofile = \"aes128-gcm\"\npayload = 64\n{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let out = d.path("report-drop");
    let mut run = bench.in_cu(BIN);
    run.args(["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("IVNSEC_STATE_DIR", d.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = run.spawn().unwrap();
    let mut run = Proc(Some(child));
    // Both nodes run (ivnsec copied to each host first).
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    // The nodes on the hosts got their keys over the SSH channel: their command lines are
    // `IVNSEC node pingpong`, nothing more.
    for pid in ours_running(&bench.dir) {
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        let argv: Vec<String> = argv
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        assert_eq!(argv[1..], ["node", "pingpong"], "{argv:?}");
    }
    let listener = bench.sshd[1].0.as_ref().unwrap().id();
    // `ip netns exec` execs sshd, so the listener is the spawned pid.
    let sessions = sshd_sessions(listener);
    assert!(!sessions.is_empty(), "no sshd session on rear");
    for pid in sessions {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let t1 = Instant::now();
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    assert!(t1.elapsed() < Duration::from_secs(30), "the run went on");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("host rear"), "{err}");
    assert_none_left(&bench.dir);
    bench.close();
    assert!(d.leftover_testbeds().is_empty());
}

/// Ctrl-C (SIGINT) to ivnsec in the middle of a long throughput run across hosts: ivnsec ends
/// at once and, its SSH connections gone with it, the receiver and the sender on the hosts stop
/// well before their 30 s are up.
#[test]
fn ctrl_c_stops_every_node() {
    require_sshd!();
    let d = TempDir::new("multihost-int");
    let bench = Bench::up(&d);
    let p = d.path("long.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"long\"\n[[throughput]]\nprofiles = [\"aes128-gcm\"]\npayloads = [256]\n\
             rates = [\"10M\"]\nseconds = 30\nbaseline = false\n{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let out = d.path("report-int");
    let mut run = bench.in_cu(BIN);
    run.args(["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("IVNSEC_STATE_DIR", d.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut run = Proc(Some(run.spawn().unwrap()));
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    // `ip netns exec` execs ivnsec: the spawned pid is ivnsec's.
    let pid = run.0.as_ref().unwrap().id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let t1 = Instant::now();
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    assert!(
        t1.elapsed() < Duration::from_secs(10),
        "ivnsec went on after SIGINT"
    );
    assert!(!o.status.success(), "{}", text(&o.stderr));
    assert_none_left(&bench.dir);
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "the nodes ran their whole time"
    );
    bench.close();
    assert!(d.leftover_testbeds().is_empty());
}

/// The hosts' clocks are watched while a run across them goes on (every 5 s and at the end):
/// the report's environment holds per host the states seen, min/max |offset| and the samples.
/// On this one machine the "hosts" are namespaces sharing its clock and run no ptp4l, so pmc
/// finds none on either during the whole run: every sample says `no ptp4l`, no offset is
/// known, and the run's one-way delays are flagged as taken on unsynchronised clocks.
#[test]
fn clocks_watched_during_a_run_across_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-watch");
    let bench = Bench::up(&d);
    let plan = d.path("hosts.toml");
    std::fs::write(
        &plan,
        format!(
            "{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let out = d.path("report");
    // About 6 s of exchanges (60 × 100 ms pauses): rounds at 0 s and 5 s, and one at the end.
    let o = bench.ivnsec(
        &d,
        &[
            "pingpong",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "aes128-gcm",
            "--payload",
            "64",
            "--count",
            "60",
            "--replications",
            "1",
            "--pause-ms",
            "100",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let env = &v["environment"];
    let w = &env["clock_during_run"];
    assert_eq!(w["interval_s"], 5.0, "{w}");
    let hosts = w["hosts"].as_array().unwrap();
    let names: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(names, ["front", "rear"], "{w}");
    for h in hosts {
        assert!(h["samples"].as_u64().unwrap() >= 3, "{h}");
        assert_eq!(h["states_seen"], serde_json::json!(["no ptp4l"]), "{h}");
        assert_eq!(h["synchronised_throughout"], false, "{h}");
        assert!(h["max_abs_offset_ns"].is_null(), "{h}");
    }
    let samples = w["samples"].as_array().unwrap();
    let per_host: u64 = hosts.iter().map(|h| h["samples"].as_u64().unwrap()).sum();
    assert_eq!(samples.len() as u64, per_host);
    // The samples span the run: the first at its start, one 5 s on.
    assert!(
        samples.iter().any(|s| s["t_s"].as_f64().unwrap() >= 5.0),
        "{w}"
    );
    assert!(samples.iter().all(|s| s["state"] == "no ptp4l"), "{w}");
    assert_eq!(env["owd_clock"], "unsynchronised", "{env}");
    let state = env["clock_state"].as_str().unwrap();
    assert!(
        state.contains("during the run not synchronised: front (no ptp4l); rear (no ptp4l)"),
        "{state}"
    );
    // summary.md flags nothing directly measured here: across hosts there is no direct OWD.
    assert!(v["scenarios"][0]["sections"]["owd_direct"].is_null());
    assert_none_left(&bench.dir);
    bench.close();
}

/// A timeline of ten 3000-byte messages 20 ms apart (sockperf playback CSV).
const TIMELINE: &str = "0.010, 3000\n0.030, 3000\n0.050, 3000\n0.070, 3000\n0.090, 3000\n\
     0.110, 3000\n0.130, 3000\n0.150, 3000\n0.170, 3000\n0.190, 3000\n";

const STREAMS: &str = "name = \"streams\"\n\
     [[underload]]\nprofiles = [\"aes128-gcm\"]\nsize = 4000\nmps = 100\nseconds = 1\n\
     reply_every = 10\nbaseline = false\n\
     [[playback]]\nprofiles = [\"macsec-gcm-aes-128/auth\"]\ntimeline = \"t.csv\"\n\
     baseline = false\n\
     [[camera]]\ncameras = [1]\nlevels = [\"conf\"]\nframe_bytes = 8000\nseconds = 1\n\
     transport = \"l2\"\n";

/// Under load, playback and cameras judge one-way delays. Across hosts that all are this
/// machine (here: namespaces of it, each with its sshd; the same boot id) they share one clock
/// and run: the sensor / camera ECU on the first host, the consumer on the second, the delays
/// timed on CLOCK_REALTIME (what PTP disciplines; here the one system clock, so every delay
/// is positive and small). Their reports say so.
#[test]
fn one_way_experiments_across_hosts_of_this_machine() {
    require_sshd!();
    let d = TempDir::new("multihost-streams");
    let bench = Bench::up(&d);
    let hosts = format!(
        "{}{}",
        bench.host_table("front", ""),
        bench.host_table("rear", "")
    );
    std::fs::write(d.path("t.csv"), TIMELINE).unwrap();
    let plan = d.path("streams.toml");
    std::fs::write(&plan, format!("{STREAMS}{hosts}")).unwrap();
    let out = d.path("report");
    let o = bench.ivnsec(
        &d,
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "exit {:?}: {}",
        o.status.code(),
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let e = &v["experiments"];
    let sane = |us: &Value, what: &str| {
        let x = us.as_f64().unwrap_or_else(|| panic!("{what}: {e}"));
        assert!(x > 0.0 && x < 1e6, "{what} = {x} µs: {e}");
    };
    for (table, sent) in [("underload", 100), ("playback", 10)] {
        let x = &e[table][0];
        let t = x["transport"].as_str().unwrap();
        assert!(t.contains("over SSH"), "{t}");
        assert!(
            t.contains("CLOCK_REALTIME") && t.contains("shared clock: front, rear"),
            "{t}"
        );
        let r = &x["runs"][0];
        assert_eq!(r["messages"]["sent"], sent, "{r}");
        assert!(r["messages"]["received"].as_u64().unwrap() > 0, "{r}");
        sane(&r["one_way"]["min_us"], "one-way min");
        sane(&r["one_way"]["max_us"], "one-way max");
    }
    let c = &e["camera"][0];
    assert!(
        c["clock"].as_str().unwrap().contains("CLOCK_REALTIME"),
        "{c}"
    );
    let r = &c["results"][0];
    assert!(r["frames_received"].as_u64().unwrap() > 0, "{r}");
    sane(&r["delay_us"]["min"], "camera delay min");
    sane(&r["delay_us"]["max"], "camera delay max");
    // The hosts' clocks were watched meanwhile.
    let w = &v["environment"]["clock_during_run"];
    assert_eq!(w["hosts"].as_array().unwrap().len(), 2, "{w}");

    // The commands take the same hosts.
    let o = bench.ivnsec(
        &d,
        &[
            "underload",
            "--hosts",
            plan.to_str().unwrap(),
            "--profile",
            "macsec-gcm-aes-128",
            "--size",
            "3000",
            "--mps",
            "50",
            "--seconds",
            "1",
            "--no-baseline",
            "--json",
        ],
    );
    let u: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert!(matches!(o.status.code(), Some(0 | 1)), "{u}");
    assert_eq!(u["runs"][0]["messages"]["sent"], 50, "{u}");
    // The hosts' clocks were watched during the run: no ptp4l on either, but one machine's
    // clock, so nothing is flagged.
    let w = &u["clock_during_run"];
    assert!(
        w["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|h| h["samples"].as_u64().unwrap() >= 2),
        "{w}"
    );
    assert!(u.get("clock_flag").is_none(), "{u}");
    sane(&u["runs"][0]["one_way"]["p50_us"], "underload --hosts p50");
    let o = bench.ivnsec(
        &d,
        &[
            "camera",
            "--hosts",
            plan.to_str().unwrap(),
            "--cameras",
            "1",
            "--level",
            "auth",
            "--frame-bytes",
            "6000",
            "--seconds",
            "1",
            "--json",
        ],
    );
    let cam: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert!(cam["site"].as_str().unwrap().contains("over SSH"), "{cam}");
    assert_eq!(
        cam["clock_during_run"]["hosts"].as_array().unwrap().len(),
        2,
        "{cam}"
    );
    assert!(cam.get("clock_flag").is_none(), "{cam}");
    assert!(
        cam["results"][0]["frames_received"].as_u64().unwrap() > 0,
        "{cam}"
    );
    sane(&cam["results"][0]["delay_us"]["p50"], "camera --hosts p50");
    // Across hosts nothing is captured on this machine.
    let o = bench.ivnsec(
        &d,
        &[
            "underload",
            "--hosts",
            plan.to_str().unwrap(),
            "--pcap",
            d.path("x.pcap").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("tcpdump"), "{}", text(&o.stderr));
    assert_none_left(&bench.dir);
    bench.close();
}

/// A host that is another machine (its own boot id) and runs no ptp4l: the experiments whose
/// verdict is a one-way delay (`tdma run` too: its slots and deadlines are on the hosts'
/// clocks) refuse to run across it, exit 3, naming the host, its clock state and how to fix
/// it; no node is started.
#[test]
fn one_way_experiments_refused_on_unsynchronised_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-refused");
    let bench = Bench::up_with(&d, &["rear"]);
    let hosts = format!(
        "{}{}",
        bench.host_table("front", ""),
        bench.host_table("rear", "")
    );
    std::fs::write(d.path("t.csv"), TIMELINE).unwrap();
    let plan = d.path("streams.toml");
    std::fs::write(&plan, format!("{STREAMS}{hosts}")).unwrap();
    let p = plan.to_str().unwrap();
    let t = d.path("t.csv");
    let flows = d.path("flows.toml");
    std::fs::write(
        &flows,
        "[[flow]]\nname = \"steer\"\nfrom = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 100\n",
    )
    .unwrap();
    for args in [
        vec![
            "tdma",
            "run",
            "--hosts",
            p,
            "--flows",
            flows.to_str().unwrap(),
            "--bp",
            "4ms",
            "--gp",
            "1ms",
        ],
        vec!["underload", "--hosts", p, "--seconds", "1"],
        vec!["playback", "--hosts", p, "--timeline", t.to_str().unwrap()],
        vec!["camera", "--hosts", p, "--seconds", "1"],
        vec!["run", p, "--out", d.path("r").to_str().unwrap()],
    ] {
        let o = bench.ivnsec(&d, &args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("host rear is no ptp4l"), "{args:?}: {err}");
        assert!(
            err.contains("ptp4l") && err.contains("phc2sys") && err.contains("docs/multihost.md"),
            "{args:?}: {err}"
        );
        assert!(ours_running(&bench.dir).is_empty());
    }
    // The ping-pong needs no shared clock (round trips): it runs across the same hosts.
    let o = bench.ivnsec(
        &d,
        &[
            "pingpong",
            "--hosts",
            p,
            "--profile",
            "plain",
            "--payload",
            "64",
            "--count",
            "10",
            "--replications",
            "1",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&o.stdout), text(&o.stderr)));
    assert_eq!(v["lost"], 0, "{v}");
    assert_none_left(&bench.dir);
    bench.close();
}

/// The consumer's SSH connection dropped in the middle of an under-load run across hosts (its
/// sshd session killed): once the sensor has sent its messages the run ends with exit 3 naming
/// the hosts, and no node is left on either.
#[test]
fn ssh_dropped_mid_underload() {
    require_sshd!();
    let d = TempDir::new("multihost-ul-drop");
    let bench = Bench::up(&d);
    let p = d.path("hosts.toml");
    std::fs::write(
        &p,
        format!(
            "{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let mut run = bench.in_cu(BIN);
    run.args([
        "underload",
        "--hosts",
        p.to_str().unwrap(),
        "--profile",
        "aes128-gcm",
        "--size",
        "2000",
        "--mps",
        "100",
        "--seconds",
        "6",
        "--no-baseline",
    ])
    .env("IVNSEC_STATE_DIR", d.state())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut run = Proc(Some(run.spawn().unwrap()));
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 2 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let listener = bench.sshd[1].0.as_ref().unwrap().id();
    let sessions = sshd_sessions(listener);
    assert!(!sessions.is_empty(), "no sshd session on rear");
    for pid in sessions {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("host rear"), "{err}");
    assert!(err.contains("SSH connection was lost"), "{err}");
    assert_none_left(&bench.dir);
    bench.close();
}

/// Runs `ivnsec attack --hosts PLAN ARGS --json` in cu; returns exit code and the document.
fn attack_across(bench: &Bench, d: &TempDir, plan: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["attack", "--hosts", plan.to_str().unwrap(), "--json"];
    all.extend_from_slice(args);
    let o = bench.ivnsec(d, &all);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "exit {:?}, {e}: {}{}",
            o.status.code(),
            text(&o.stdout),
            text(&o.stderr)
        )
    });
    (o.status.code().unwrap_or(-1), v)
}

/// `ivnsec attack --hosts` on three SSH hosts (sender front, receiver rear, attacker cu: the
/// plan's third) and with the attacker beside the sender (`--attacker front`): nothing forged
/// is accepted; the forging classes run; on the learning bridge the attacker on a host of its
/// own captures nothing to replay, and the replay is reported as not run with the reason, as is
/// the flood that needs the testbed's static switch; beside the sender the replays capture the
/// sender's own egress and run, and the flood runs through the bench's switch as it is. The
/// nodes start over SSH (the copies of ivnsec on the hosts) and none is left afterwards.
#[test]
fn attack_across_ssh_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-attack");
    let bench = Bench::up_three(&d);
    let plan = d.path("attack.toml");
    std::fs::write(
        &plan,
        format!(
            "{}{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", ""),
            bench.host_table("cu", "")
        ),
    )
    .unwrap();
    let results = |v: &Value| v["results"].as_array().unwrap().clone();
    let find = |v: &Value, profile: &str, attack: &str| {
        results(v)
            .into_iter()
            .find(|r| r["profile"] == profile && r["attack"] == attack)
            .unwrap_or_else(|| panic!("no {profile} {attack}: {v}"))
    };

    // The attacker on a host of its own (cu).
    let (code, v) = attack_across(
        &bench,
        &d,
        &plan,
        &[
            "--profile",
            "aes128-gcm",
            "--attack",
            "no-key",
            "--attack",
            "replay-w1",
            "--attack",
            "flood",
            "--count",
            "200",
        ],
    );
    nothing_accepted(code, &v);
    assert_eq!(v["hosts"]["attacker"]["name"], "cu", "{v}");
    assert_eq!(v["hosts"]["attacker_beside_sender"], false, "{v}");
    assert!(v["testbed"].as_str().unwrap().contains("over SSH"), "{v}");
    let r = find(&v, "aes128-gcm", "no-key");
    assert!(r.get("not_run").is_none(), "{r}");
    assert_eq!(r["injected"], 200, "{r}");
    assert_eq!(r["accepted"], 0, "{r}");
    assert_eq!(r["switch"], "bench", "{r}");
    assert_eq!(
        r["dropped"]
            .as_object()
            .unwrap()
            .values()
            .map(|x| x.as_u64().unwrap())
            .sum::<u64>()
            + r["not_seen"].as_u64().unwrap(),
        200,
        "every forged frame judged or counted: {r}"
    );
    assert!(r["legit_sent"].as_u64().unwrap() > 0, "{r}");
    assert!(
        r["legit_p50_us"].is_null(),
        "no one-way delay across hosts: {r}"
    );
    assert!(r["legit_rtt_p50_us"].as_f64().unwrap() > 0.0, "{r}");
    let replay = find(&v, "aes128-gcm", "replay-w1");
    let why = replay["not_run"]
        .as_str()
        .unwrap_or_else(|| panic!("{replay}"));
    assert!(why.contains("captured 0 legitimate frame"), "{why}");
    assert!(why.contains("--attacker front"), "{why}");
    assert_eq!(replay["injected"], 0, "{replay}");
    let flood = find(&v, "aes128-gcm", "flood");
    let why = flood["not_run"]
        .as_str()
        .unwrap_or_else(|| panic!("{flood}"));
    assert!(
        why.contains("--flood-switch static") && why.contains("bench"),
        "{why}"
    );
    assert_eq!(v["not_run"], 2, "{v}");
    assert_none_left(&bench.dir);

    // The attacker beside the sender: the replays capture the sender's egress. (No bit-flip
    // across hosts: a flipped source-address bit of front's MAC can be rear's, one bit apart on
    // this bench, and the learning bridge then sends rear's traffic to the attacker's port.)
    let (code, v) = attack_across(
        &bench,
        &d,
        &plan,
        &[
            "--attacker",
            "front",
            "--profile",
            "aes128-gcm",
            "--profile",
            "esp-aes128-gcm",
            "--attack",
            "replay-w1",
            "--attack",
            "garbage",
            "--attack",
            "flood",
            "--flood-switch",
            "bench",
            "--flood-seconds",
            "0.3",
            "--count",
            "200",
        ],
    );
    assert_eq!(v["hosts"]["attacker_beside_sender"], true, "{v}");
    assert_eq!(v["not_run"], 0, "{v}");
    for r in results(&v) {
        assert_eq!(r["accepted"], 0, "{r}");
        assert!(r["injected"].as_u64().unwrap() > 0, "{r}");
        assert!(r.get("not_run").is_none(), "{r}");
    }
    for p in ["aes128-gcm", "esp-aes128-gcm"] {
        let r = find(&v, p, "replay-w1");
        assert_eq!(r["injected"], 200, "{r}");
        let d = r["dropped"].as_object().unwrap();
        assert!(
            d.contains_key("replay_duplicate") || d.contains_key("replay_too_old"),
            "{r}"
        );
    }
    nothing_accepted(code, &v);
    assert_none_left(&bench.dir);
    bench.close();
}

/// Nothing forged or replayed was accepted; the verdict is `pass` with exit 0, or `fail` with
/// exit 1 only for a legitimate exchange lost (on this shared machine a reply can miss the
/// sender's 1 s timeout under load).
fn nothing_accepted(code: i32, v: &Value) {
    let results = v["results"].as_array().unwrap();
    for r in results {
        assert_eq!(r["accepted"], 0, "{r}");
    }
    let legit_lost = results.iter().any(|r| {
        r["legit_sent"] != r["legit_delivered"] || r["legit_exchanges_lost"].as_u64() != Some(0)
    });
    match code {
        0 => assert_eq!(v["verdict"], "pass", "{v}"),
        1 => assert!(legit_lost && v["verdict"] == "fail", "{v}"),
        _ => panic!("exit {code}: {v}"),
    }
}

/// `ivnsec tdma run --hosts` between two SSH hosts of this machine (one clock, so allowed):
/// ecu1 on front, ecu2 on rear, a small schedule in both directions for a few base periods
/// and the capacity steps: it completes, every slot has its send error and one-way delay on
/// CLOCK_REALTIME, the capacity stays within eq. 9's NF_max, the per-switch forwarding delay
/// (Table 6 "Diff") is marked not measured with the reason, the clocks were watched; nothing is
/// left running.
#[test]
fn tdma_run_across_ssh_hosts() {
    require_sshd!();
    let d = TempDir::new("multihost-tdma");
    let bench = Bench::up(&d);
    let plan = d.path("tdma-hosts.toml");
    std::fs::write(
        &plan,
        format!(
            "{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let flows = d.path("flows.toml");
    std::fs::write(
        &flows,
        "[[flow]]\nname = \"steer\"\nfrom = \"ecu1\"\nto = \"ecu2\"\nframe_bytes = 100\n\
         [[flow]]\nname = \"brake\"\nfrom = \"ecu2\"\nto = \"ecu1\"\nframe_bytes = 100\n",
    )
    .unwrap();
    // A generous slot (BP 4 ms, 1 ms guard per switch): eq. 9 allows 3 frames per BP.
    let o = bench.ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--hosts",
            plan.to_str().unwrap(),
            "--flows",
            flows.to_str().unwrap(),
            "--bp",
            "4ms",
            "--gp",
            "1ms",
            "--profile",
            "hmac-sha1",
            "--periods",
            "20",
            "--json",
        ],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "exit {:?}, {e}: {}{}",
            o.status.code(),
            text(&o.stdout),
            text(&o.stderr)
        )
    });
    assert!(matches!(o.status.code(), Some(0 | 1)), "{v}");
    assert_eq!(o.status.code() == Some(0), v["schedule_met"] == true, "{v}");
    assert_eq!(v["hosts"]["ecu1"]["name"], "front", "{v}");
    assert_eq!(v["hosts"]["ecu2"]["name"], "rear", "{v}");
    assert!(v["testbed"].as_str().unwrap().contains("over SSH"), "{v}");
    let clock = v["clock"].as_str().unwrap();
    assert!(
        clock.contains("CLOCK_REALTIME") && clock.contains("shared clock: front, rear"),
        "{clock}"
    );
    let why = v["switch_diff_not_measured"].as_str().unwrap();
    assert!(why.contains("not measured across hosts"), "{why}");
    assert!(v["switch_diff_us"].as_array().unwrap().is_empty(), "{v}");
    assert!(v["first_hop_us"].is_null(), "{v}");
    let slots = v["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 2, "{v}");
    for s in slots {
        assert_eq!(s["sent"], 20, "{s}");
        assert!(s["arrived"].as_u64().unwrap() > 0, "{s}");
        assert!(s["switch_diff_us"].as_array().unwrap().is_empty(), "{s}");
        let owd = s["owd_us"]["p50"].as_f64().unwrap();
        assert!(owd > 0.0 && owd < 1e6, "one-way delay {owd} µs: {s}");
        let err = s["send_error_us"]["max"].as_f64().unwrap();
        assert!((0.0..1e6).contains(&err), "send error {err} µs: {s}");
    }
    let c = &v["capacity"];
    assert_eq!(c["nf_max"], 3, "{c}");
    assert!(c["nf_no_miss"].as_u64().unwrap() <= 3, "{c}");
    assert!(!c["steps"].as_array().unwrap().is_empty(), "{c}");
    assert_eq!(
        v["clock_during_run"]["hosts"].as_array().unwrap().len(),
        2,
        "{v}"
    );
    assert_none_left(&bench.dir);

    // The text output says the same.
    let o = bench.ivnsec(
        &d,
        &[
            "tdma",
            "run",
            "--hosts",
            plan.to_str().unwrap(),
            "--flows",
            flows.to_str().unwrap(),
            "--bp",
            "4ms",
            "--gp",
            "1ms",
            "--periods",
            "5",
            "--no-capacity",
        ],
    );
    let out = text(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{out}{}",
        text(&o.stderr)
    );
    assert!(out.contains("TDMA run on hosts over SSH"), "{out}");
    assert!(
        out.contains("switch forwarding delay (Table 6 Diff): not measured across hosts"),
        "{out}"
    );
    assert_none_left(&bench.dir);

    // A plan's [[tdma]] beside its [[host]] tables runs between the same hosts.
    let tdma_plan = d.path("tdma-plan.toml");
    std::fs::write(
        &tdma_plan,
        format!(
            "name = \"tdma-hosts\"\n[[tdma]]\nbp = \"4ms\"\ngp = \"1ms\"\n\
             profiles = [\"hmac-sha1\"]\nframes = [60]\nswitches = [1]\nperiods = 10\n{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let report = d.path("tdma-report");
    let o = bench.ivnsec(
        &d,
        &[
            "run",
            tdma_plan.to_str().unwrap(),
            "--out",
            report.to_str().unwrap(),
        ],
    );
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        text(&o.stderr)
    );
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("summary.json")).unwrap())
            .unwrap();
    let t = &v["experiments"]["tdma"][0];
    assert!(t["not_measured"].is_null(), "{t}");
    let m = &t["measured"][0]["run"];
    assert_eq!(m["hosts"]["ecu1"]["name"], "front", "{m}");
    assert!(
        m["switch_diff_not_measured"]
            .as_str()
            .unwrap()
            .contains("not measured across hosts"),
        "{m}"
    );
    assert!(m["slots"][0]["arrived"].as_u64().unwrap() > 0, "{m}");
    assert_none_left(&bench.dir);
    bench.close();
}

/// The receiver's SSH connection dropped in the middle of an attack across hosts (its sshd
/// session on rear killed): the run ends with exit 3 naming host rear and the receiver, and no
/// node is left on either host. Then Ctrl-C in the middle of another: the same, at once.
#[test]
fn ssh_dropped_mid_attack() {
    require_sshd!();
    let d = TempDir::new("multihost-attack-drop");
    let bench = Bench::up(&d);
    let p = d.path("hosts.toml");
    std::fs::write(
        &p,
        format!(
            "{}{}",
            bench.host_table("front", ""),
            bench.host_table("rear", "")
        ),
    )
    .unwrap();
    let spawn = || {
        let mut run = bench.in_cu(BIN);
        run.args([
            "attack",
            "--hosts",
            p.to_str().unwrap(),
            "--profile",
            "aes128-gcm",
            "--attack",
            "no-key",
            "--count",
            "1000000",
        ])
        .env("IVNSEC_STATE_DIR", d.state())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        run
    };
    let mut run = Proc(Some(spawn().spawn().unwrap()));
    let t0 = Instant::now();
    // The receiver and the sender, then the attacker beside the sender.
    while ours_running(&bench.dir).len() < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let listener = bench.sshd[1].0.as_ref().unwrap().id();
    let sessions = sshd_sessions(listener);
    assert!(!sessions.is_empty(), "no sshd session on rear");
    for pid in sessions {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("host rear"), "{err}");
    assert!(err.contains("(receiver)"), "{err}");
    assert!(err.contains("SSH connection was lost"), "{err}");
    assert_none_left(&bench.dir);

    // Ctrl-C in the middle of the same attack: ivnsec ends at once, and the nodes with it (the
    // attacker in the middle of its class).
    let mut run = Proc(Some(spawn().spawn().unwrap()));
    let t0 = Instant::now();
    while ours_running(&bench.dir).len() < 3 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the nodes did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let pid = run.0.as_ref().unwrap().id().to_string();
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let t1 = Instant::now();
    let o = run.0.take().unwrap().wait_with_output().unwrap();
    assert!(
        t1.elapsed() < Duration::from_secs(10),
        "ivnsec went on after SIGINT"
    );
    assert!(!o.status.success(), "{}", text(&o.stderr));
    assert_none_left(&bench.dir);
    bench.close();
}
