//! Node processes never carry keys where other processes can read them: while `ivnsec pingpong`
//! runs, each of its node roles has the command line `ivnsec node pingpong` and exactly the
//! environment `ivnsec` itself was started with, nothing added (`/proc/PID/cmdline`, `/proc/PID/environ`); the spec and the keys
//! reach it on its stdin (docs/architecture.md, "Node processes and keys").

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::BIN;

/// The direct children of `parent`, as (pid, argv, environment entries).
fn children(parent: u32) -> Vec<(u32, Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …: comm may hold spaces, so split after its closing paren.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) {
            continue;
        }
        let split = |b: Vec<u8>| -> Vec<String> {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        };
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).map_or_else(|_| vec![], split);
        let env = std::fs::read(format!("/proc/{pid}/environ")).map_or_else(|_| vec![], split);
        out.push((pid, argv, env));
    }
    out
}

#[test]
fn node_roles_get_no_keys_in_their_environment_or_command_line() {
    // Over loopback (no root needed), slow enough to be looked at: 4000 exchanges 0.5 ms apart.
    // A known environment: whatever a node has beyond it was added by ivnsec.
    let given = ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"];
    let mut run = Command::new(BIN)
        .env_clear()
        .envs(given.iter().map(|v| v.split_once('=').unwrap()))
        .args([
            "pingpong",
            "--profile",
            "aes128-gcm",
            "--payload",
            "64",
            "--count",
            "4000",
            "--replications",
            "1",
            "--pause-ms",
            "0.5",
            "--on",
            "loopback",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ivnsec pingpong");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    while Instant::now() < deadline && seen.len() < 2 {
        for (pid, argv, env) in children(run.id()) {
            if argv.get(1).map(String::as_str) != Some("node") || seen.contains(&pid) {
                continue;
            }
            assert_eq!(
                &argv[1..],
                ["node", "pingpong"],
                "a node's command line carries nothing but its role"
            );
            let added: Vec<&String> = env
                .iter()
                .filter(|v| !given.contains(&v.as_str()))
                .collect();
            assert!(
                added.is_empty(),
                "node {pid} has variables ivnsec was not started with: {added:?}"
            );
            seen.push(pid);
        }
        if run.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // 0 or 1 (a latency verdict may fail on a loaded machine); not a usage or environment error.
    let status = run.wait().unwrap();
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "pingpong failed: {status}"
    );
    assert_eq!(
        seen.len(),
        2,
        "both roles (responder, initiator) were looked at while they ran"
    );
}
