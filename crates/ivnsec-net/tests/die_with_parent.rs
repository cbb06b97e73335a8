//! `sys::die_with_parent`: a child started through it dies when its parent is killed with
//! SIGKILL (no destructor, no handler runs), also when it was started with `ip netns exec`
//! (root: skipped with the reason printed otherwise). The parent is this test binary run again
//! as a helper process, which the test kills.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{PrefixGuard, TempDir, options};
use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::{self, Testbed};
use ivnsec_net::topology::Topology;

/// Environment variable that turns the `helper` test into a parent process.
const HELPER_ENV: &str = "IVNSEC_PDEATH_TEST_HELPER";

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

/// Waits up to `limit` for `pid` to be gone.
fn gone_within(pid: u32, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The program name of `pid` once it has exec'd (the parent prints the pid right after fork).
fn comm_after_exec(pid: u32) -> String {
    let t = Instant::now();
    while comm(pid) != "sleep" && t.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(10));
    }
    comm(pid)
}

/// Kills a process on drop (a failed assertion leaves no sleeper behind).
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = ivnsec_net::sys::signal_process(self.0, true);
        }
    }
}

/// Starts this binary's `helper` test as a parent process that spawns `job`'s child and
/// prints its pid; returns the parent and the child's pid.
fn start_parent(job: &str) -> (Child, u32) {
    let exe = std::env::current_exe().unwrap();
    let mut parent = Command::new(exe)
        .args(["--exact", "helper", "--nocapture", "--test-threads", "1"])
        .env(HELPER_ENV, job)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(parent.stdout.take().unwrap());
    let pid = out.lines().find_map(|l| {
        let l = l.ok()?;
        // The harness may print `test helper ... ` before it on the same line.
        l.split_once("IVNSEC-CHILD ")
            .and_then(|(_, p)| p.trim().parse::<u32>().ok())
    });
    let Some(pid) = pid else {
        let _ = parent.kill();
        let mut err = String::new();
        let _ = parent.stderr.take().unwrap().read_to_string(&mut err);
        panic!("the helper printed no child pid: {err}");
    };
    (parent, pid)
}

/// Not a test of its own: when started by `start_parent()` it spawns `sleep 60` (directly, or
/// with `ip netns exec NS`), prints the child's pid and waits to be killed.
#[test]
fn helper() {
    let Ok(job) = std::env::var(HELPER_ENV) else {
        return;
    };
    let mut cmd = match job.strip_prefix("netns:") {
        Some(ns) => testbed::netns_command(ns, "sleep"),
        None => Command::new("sleep"),
    };
    let mut child = die_with_parent(cmd.arg("60").stdin(Stdio::null()))
        .spawn()
        .unwrap();
    println!("IVNSEC-CHILD {}", child.id());
    // Waits for the 60 s sleep: the test kills this process long before.
    let _ = child.wait();
    panic!("the helper was not killed");
}

#[test]
fn child_dies_when_its_parent_is_killed() {
    let (mut parent, child) = start_parent("plain");
    let _k = KillOnDrop(child);
    assert!(alive(child), "the child runs while its parent does");
    assert_eq!(comm_after_exec(child), "sleep");
    parent.kill().unwrap(); // SIGKILL
    parent.wait().unwrap();
    assert!(
        gone_within(child, Duration::from_secs(3)),
        "sleep (pid {child}) outlived its SIGKILLed parent"
    );
}

#[test]
fn without_the_helper_the_child_outlives_its_parent() {
    // The control experiment: the same parent, a child spawned without the hook, survives.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "sleep 60 & echo IVNSEC-CHILD $!"])
        .stdout(Stdio::piped());
    let mut sh = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(sh.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let child: u32 = line
        .trim()
        .strip_prefix("IVNSEC-CHILD ")
        .unwrap()
        .parse()
        .unwrap();
    let _k = KillOnDrop(child);
    sh.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(child),
        "a child without the death signal keeps running"
    );
}

#[test]
fn the_signal_follows_the_spawning_thread() {
    // PR_SET_PDEATHSIG fires when the *thread* that forked ends: the reason every spawn site
    // spawns from a thread that outlives its children.
    let child = std::thread::spawn(|| {
        die_with_parent(Command::new("sleep").arg("60"))
            .spawn()
            .unwrap()
    })
    .join()
    .unwrap();
    let pid = child.id();
    let _k = KillOnDrop(pid);
    let mut child = child;
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > Duration::from_secs(3) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("the child outlived the thread that spawned it");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
}

#[test]
fn a_child_in_a_namespace_dies_too() {
    require_root!();
    let dir = TempDir::new("pdeath");
    let tb = Testbed::up(&Topology::Pair, &options(&dir)).expect("testbed up");
    let _guard = PrefixGuard {
        prefix: tb.prefix().to_string(),
        state_dir: dir.0.clone(),
    };
    let ns = tb.namespace("ecu1").unwrap().to_string();
    let (mut parent, child) = start_parent(&format!("netns:{ns}"));
    let _k = KillOnDrop(child);
    // `ip netns exec` execs the program in its own process (no fork): the pid becomes sleep's
    // (once ip has entered the namespace).
    assert_eq!(
        comm_after_exec(child),
        "sleep",
        "ip netns exec forked instead of exec"
    );
    let in_ns = Command::new("ip")
        .args(["netns", "pids", &ns])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&in_ns.stdout).to_string();
    assert!(
        pids.split_whitespace().any(|p| p == child.to_string()),
        "sleep {child} is not in {ns}: {pids}"
    );
    parent.kill().unwrap();
    parent.wait().unwrap();
    assert!(
        gone_within(child, Duration::from_secs(3)),
        "sleep (pid {child}) in {ns} outlived its SIGKILLed parent"
    );
    let report = tb.down().unwrap();
    assert_eq!(report.stopped_processes, 0, "{report:?}");
}
