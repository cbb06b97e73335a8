//! No process of a run outlives `ivnsec`: after `kill -9` of `ivnsec pingpong` or `ivnsec
//! validate` on a testbed of their own, the node roles and the sockperf server and client are
//! gone within seconds (they are spawned with the kernel's parent-death signal), and `ivnsec
//! testbed down` then finds nothing to stop. Also what `down` reports, in text and JSON. That
//! every spawn site asks for that signal is checked in `cli/processes.rs`.
//! Root tests: without root or `ip netns` they print why and pass as skipped. Each uses its own
//! state directory, and its guards kill what it started and take its testbed down on failure.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::proc::poll;
use crate::common::{Proc, TempDir, ivnsec, text};

/// Whether `pid` runs (a zombie waiting to be reaped counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => {
            s.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Live processes whose parent is `parent`.
fn children_of(parent: u32) -> BTreeSet<u32> {
    let mut found = BTreeSet::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) S ppid …`; comm may contain spaces and parentheses.
        let mut rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r.split_whitespace())
            .into_iter()
            .flatten();
        let state = rest.next();
        let ppid = rest.next().and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) && state != Some("Z") {
            found.insert(pid);
        }
    }
    found
}

/// The testbed a running command recorded in `dir`'s state directory, once there is one.
fn recorded_prefix(dir: &TempDir) -> Option<String> {
    std::fs::read_dir(dir.state())
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .find_map(|n| {
            n.strip_suffix(".json")
                .filter(|p| p.starts_with("ivn-"))
                .map(str::to_string)
        })
}

/// Processes in the namespaces of testbed `prefix` (`ip netns pids`).
fn pids_in_testbed(prefix: &str) -> BTreeSet<u32> {
    let list = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let mut pids = BTreeSet::new();
    for ns in text(&list.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|ns| ns.starts_with(&format!("{prefix}-")))
    {
        let o = Command::new("ip")
            .args(["netns", "pids", ns])
            .output()
            .unwrap();
        pids.extend(
            text(&o.stdout)
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .filter(|&p| alive(p)),
        );
    }
    pids
}

/// Starts `ivnsec ARGS` with `dir`'s state, waits until `ready` holds for the processes in its
/// testbed (pid, program name), kills it with SIGKILL, and checks that within 5 s none of its
/// children and no process in its testbed is left; then that `testbed down` finds nothing to
/// stop and removes the testbed. Returns the program names of the processes that were killed.
fn kill_9_leaves_nothing(
    dir: &TempDir,
    args: &[&str],
    ready: impl Fn(&[(u32, String)]) -> bool,
) -> Vec<String> {
    let run = dir
        .cmd()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ivnsec");
    let mut run = Proc(Some(run));
    let parent = run.id();
    let found = poll(Duration::from_secs(60), || {
        if let Ok(Some(status)) = run.child().try_wait() {
            panic!("ivnsec {args:?} ended ({status}) before its processes were seen");
        }
        let prefix = recorded_prefix(dir)?;
        let procs: Vec<(u32, String)> = pids_in_testbed(&prefix)
            .into_iter()
            .map(|p| (p, comm(p)))
            .collect();
        ready(&procs).then_some((prefix, procs))
    });
    let (prefix, procs) = found.unwrap_or_else(|| panic!("ivnsec {args:?} never got ready"));
    let children = children_of(parent);
    // What runs in the testbed was started by this ivnsec (directly: `ip netns exec` execs).
    // A process still alive now was alive when the children were listed.
    for (pid, name) in procs.iter().filter(|(p, _)| alive(*p)) {
        assert!(
            children.contains(pid),
            "{name} ({pid}) in {prefix} is not a child of ivnsec {parent}: {children:?}"
        );
    }

    run.child().kill().unwrap(); // SIGKILL: no destructor, no signal handler runs.
    run.child().wait().unwrap();
    let running = || -> BTreeSet<(u32, String)> {
        let mut pids = pids_in_testbed(&prefix);
        pids.extend(children.iter().copied());
        pids.into_iter()
            .filter(|&p| alive(p))
            .map(|p| (p, comm(p)))
            .collect()
    };
    if poll(Duration::from_secs(5), || {
        running().is_empty().then_some(())
    })
    .is_none()
    {
        panic!(
            "5 s after kill -9 of ivnsec {args:?}, still running: {:?}",
            running()
        );
    }

    // The namespaces stay (SIGKILL cannot be caught); `down` removes them and stops nothing.
    let o = ivnsec(dir, &["testbed", "down", "--testbed", &prefix, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
    let r = &v["testbeds"][0];
    assert_eq!(r["prefix"], prefix.as_str(), "{v}");
    assert_eq!(r["stopped_processes"], 0, "{v}");
    assert_eq!(r["processes"], serde_json::json!([]), "{v}");
    assert!(
        !r["removed_namespaces"].as_array().unwrap().is_empty(),
        "{v}"
    );
    procs.into_iter().map(|(_, n)| n).collect()
}

#[test]
fn kill_9_of_pingpong_leaves_no_node_running() {
    require_root!();
    let dir = TempDir::new("kill-pingpong");
    let out = dir.path("report");
    let killed = kill_9_leaves_nothing(
        &dir,
        &[
            "pingpong",
            "--on",
            "testbed",
            "--profile",
            "aes128-gcm",
            "--payload",
            "64",
            "--count",
            "100000",
            "--replications",
            "100",
            "--pause-ms",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        // The responder and the initiator, both `ivnsec node pingpong`.
        |procs| procs.iter().filter(|(_, n)| n == "ivnsec").count() >= 2,
    );
    assert!(
        killed.iter().filter(|n| *n == "ivnsec").count() >= 2,
        "{killed:?}"
    );
}

#[test]
fn kill_9_of_validate_leaves_no_sockperf_or_node_running() {
    require_root!();
    let sockperf = Command::new("sockperf").arg("--version").output().is_ok();
    if !sockperf {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"sockperf part SKIPPED: no `sockperf` (Debian: apt-get install sockperf); \
              checking the node roles instead\n",
        );
    }
    let dir = TempDir::new("kill-validate");
    let out = dir.path("report");
    let killed = kill_9_leaves_nothing(
        &dir,
        &[
            "validate",
            "--on",
            "testbed",
            "--count",
            "20",
            "--replications",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
        |procs| {
            if sockperf {
                // The baseline runs first: its server and its client.
                procs.iter().filter(|(_, n)| n == "sockperf").count() >= 2
            } else {
                procs.iter().filter(|(_, n)| n == "ivnsec").count() >= 2
            }
        },
    );
    let want = if sockperf { "sockperf" } else { "ivnsec" };
    assert!(
        killed.iter().filter(|n| *n == want).count() >= 2,
        "{killed:?}"
    );
}

/// `ivnsec testbed exec NODE -- sh -c SCRIPT`, left running (exec all the way down: its pid is
/// the shell's in the namespace).
fn run_in(dir: &TempDir, node: &str, script: &str) -> Proc {
    let c = dir
        .cmd()
        .args(["testbed", "exec", node, "--", "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Proc(Some(c))
}

#[test]
fn down_reports_what_it_stopped_and_removed() {
    require_root!();
    let dir = TempDir::new("down-report");
    for json in [true, false] {
        let o = ivnsec(&dir, &["testbed", "up", "--topology", "pair", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let state: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
        let prefix = state["prefix"].as_str().unwrap().to_string();
        // One program that SIGTERM ends, one that ignores SIGTERM (so does the sleep it
        // starts: an ignored signal stays ignored across exec) and needs SIGKILL.
        let polite = run_in(&dir, "ecu2", "exec sleep 30");
        let stubborn = run_in(&dir, "ecu1", "trap '' TERM; sleep 30; true");
        let (polite_pid, stubborn_pid) = (polite.id(), stubborn.id());
        // Both have exec'd into the namespace (sh, and under it the stubborn one's sleep).
        let procs = poll(Duration::from_secs(10), || {
            let p = pids_in_testbed(&prefix);
            (p.contains(&polite_pid)
                && p.contains(&stubborn_pid)
                && p.len() == 3
                && comm(polite_pid) == "sleep")
                .then_some(p)
        })
        .unwrap_or_else(|| panic!("the programs did not start in {prefix}"));
        let stubborn_sleep = *procs
            .iter()
            .find(|&&p| p != polite_pid && p != stubborn_pid)
            .unwrap();

        if json {
            let o = ivnsec(&dir, &["testbed", "down", "--testbed", &prefix, "--json"]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
            assert_eq!(v["state_dir"], dir.state().to_str().unwrap(), "{v}");
            let r = &v["testbeds"][0];
            assert_eq!(v["testbeds"].as_array().unwrap().len(), 1, "{v}");
            assert_eq!(r["prefix"], prefix.as_str());
            assert_eq!(r["already_down"], false);
            assert_eq!(r["removed_state_file"], true);
            assert_eq!(r["stopped_processes"], 3, "{v}");
            let stopped: BTreeSet<(u64, String, String, String)> = r["processes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    (
                        p["pid"].as_u64().unwrap(),
                        p["namespace"].as_str().unwrap().to_string(),
                        p["command"].as_str().unwrap().to_string(),
                        p["signal"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let ns = |n: &str| format!("{prefix}-{n}");
            let want: BTreeSet<(u64, String, String, String)> = [
                (polite_pid, ns("ecu2"), "sleep", "SIGTERM"),
                (stubborn_pid, ns("ecu1"), "sh", "SIGKILL"),
                (stubborn_sleep, ns("ecu1"), "sleep", "SIGKILL"),
            ]
            .into_iter()
            .map(|(p, n, c, s)| (u64::from(p), n, c.to_string(), s.to_string()))
            .collect();
            assert_eq!(stopped, want, "{v}");
            let args: Vec<&str> = r["processes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["args"].as_str().unwrap())
                .collect();
            assert!(args.contains(&"sleep 30"), "{args:?}");
            assert!(
                args.contains(&"sh -c trap '' TERM; sleep 30; true"),
                "{args:?}"
            );
            // The pair's interfaces as docs/testbed.md draws them, each with its kind.
            let ifaces: BTreeSet<(String, String, String)> = r["removed_interfaces"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    (
                        i["namespace"].as_str().unwrap().to_string(),
                        i["name"].as_str().unwrap().to_string(),
                        i["kind"].as_str().unwrap().to_string(),
                    )
                })
                .collect();
            let want: BTreeSet<(String, String, String)> = [
                ("ecu1", "eth0", "veth"),
                ("ecu2", "eth0", "veth"),
                ("sw0", "br0", "bridge"),
                ("sw0", "to-ecu1", "veth"),
                ("sw0", "to-ecu2", "veth"),
            ]
            .into_iter()
            .map(|(n, i, k)| (ns(n), i.to_string(), k.to_string()))
            .collect();
            assert_eq!(ifaces, want, "{v}");
            let nss: BTreeSet<&str> = r["removed_namespaces"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            assert_eq!(
                nss,
                [ns("ecu1"), ns("ecu2"), ns("sw0")]
                    .iter()
                    .map(String::as_str)
                    .collect()
            );
            // Again: already down, nothing stopped or removed.
            let o = ivnsec(&dir, &["testbed", "down", "--testbed", &prefix, "--json"]);
            let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
            let r = &v["testbeds"][0];
            assert_eq!(r["already_down"], true, "{v}");
            assert_eq!(r["stopped_processes"], 0, "{v}");
            assert_eq!(r["removed_interfaces"], serde_json::json!([]), "{v}");
            // Nothing recorded any more: an empty list.
            let o = ivnsec(&dir, &["testbed", "down", "--json"]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            let v: Value = serde_json::from_str(&text(&o.stdout)).unwrap();
            assert_eq!(v["testbeds"], serde_json::json!([]), "{v}");
        } else {
            let o = ivnsec(&dir, &["testbed", "down"]);
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            let s = text(&o.stdout);
            assert!(
                s.contains(&format!(
                    "testbed {prefix}: removed 3 namespaces, stopped 3 processes running inside"
                )),
                "{s}"
            );
            assert!(
                s.contains(&format!(
                    "stopped pid {polite_pid} in {prefix}-ecu2 with SIGTERM: sleep 30"
                )),
                "{s}"
            );
            assert!(
                s.contains(&format!(
                    "stopped pid {stubborn_pid} in {prefix}-ecu1 with SIGKILL: sh -c trap '' TERM; sleep 30; true"
                )),
                "{s}"
            );
            assert!(s.contains("removed 5 interfaces (2 veth links): "), "{s}");
            for i in ["ecu1/eth0 (veth)", "sw0/br0 (bridge)", "sw0/to-ecu2 (veth)"] {
                assert!(s.contains(i), "{i}: {s}");
            }
            assert!(s.contains("removed namespaces: "), "{s}");
            assert!(
                s.contains(&format!(
                    "removed state file {}",
                    dir.state().join(format!("{prefix}.json")).display()
                )),
                "{s}"
            );
        }
        assert!(!alive(polite_pid) && !alive(stubborn_pid) && !alive(stubborn_sleep));
        drop((polite, stubborn));
    }
}
