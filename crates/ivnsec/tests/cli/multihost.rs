//! Experiments across SSH hosts, what needs no host: `--hosts` option errors, the plan of
//! docs/multihost.md accepted, `attack` and `tdma run` refusing hosts. The runs across hosts are
//! in the `multihost` binary.

use crate::common;
use crate::common::{TempDir, text};
use std::path::Path;

/// `--hosts` of the experiment commands: a plan that cannot be read, without two hosts, or
/// beside --testbed is a usage error (exit 2) before anything starts.
#[test]
fn hosts_option_errors() {
    let d = TempDir::new("multihost-usage");
    let one = d.path("one.toml");
    std::fs::write(
        &one,
        "[[host]]\nname = \"a\"\nssh = \"root@192.0.2.1\"\niface = \"eth1\"\n",
    )
    .unwrap();
    let two = d.path("two.toml");
    let host =
        |n: &str| format!("[[host]]\nname = \"{n}\"\nssh = \"root@{n}\"\niface = \"eth1\"\n");
    std::fs::write(
        &two,
        format!(
            "[[scenario]]\nprofile = \"plain\"\npayload = 64\n{}{}",
            host("a"),
            host("b")
        ),
    )
    .unwrap();
    let out = d.path("out");
    for (args, says) in [
        (
            vec![
                "run",
                two.to_str().unwrap(),
                "--on",
                "loopback",
                "--out",
                out.to_str().unwrap(),
            ],
            "exclude each other",
        ),
        (
            vec![
                "pingpong",
                "--hosts",
                "/nonexistent/bench.toml",
                "--profile",
                "plain",
                "--payload",
                "64",
            ],
            "cannot read",
        ),
        (
            vec![
                "pingpong",
                "--hosts",
                one.to_str().unwrap(),
                "--profile",
                "plain",
                "--payload",
                "64",
            ],
            "needs two",
        ),
        (
            vec![
                "throughput",
                "--hosts",
                one.to_str().unwrap(),
                "--testbed",
                "ivn-000000",
                "--profile",
                "plain",
                "--payload",
                "64",
            ],
            "cannot be used with",
        ),
        (
            vec![
                "throughput",
                "--hosts",
                two.to_str().unwrap(),
                "--tcp",
                "--profile",
                "someip-nosec",
                "--payload",
                "1000",
            ],
            "cannot be used with",
        ),
        (
            vec![
                "hosts",
                "check",
                one.to_str().unwrap().replace("one", "none").as_str(),
            ],
            "cannot read",
        ),
    ] {
        let o = d.run(&args.iter().map(|s| s.as_ref()).collect::<Vec<&str>>());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// The plan of docs/multihost.md is a plan ivnsec accepts: `testbed up --plan` loads and checks
/// the whole plan first, then, without `ip` on its PATH, stops with exit 3 (a plan error would
/// be exit 2).
#[test]
fn docs_example_plan_is_accepted() {
    let md = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/multihost.md"),
    )
    .unwrap();
    let start = md.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let plan = &md[start..start + md[start..].find("```").unwrap()];
    assert!(plan.contains("[[host]]"), "{plan}");
    let d = TempDir::new("multihost-docs");
    let file = d.path("bench.toml");
    std::fs::write(&file, plan).unwrap();
    let empty = d.path("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let o = d
        .cmd()
        .args(["testbed", "up", "--plan", file.to_str().unwrap()])
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{plan}\n{}", text(&o.stderr));
    // And a misspelt key of a [[host]] is a plan error naming it.
    std::fs::write(&file, plan.replace("ssh_options", "ssh_option")).unwrap();
    let o = d
        .cmd()
        .args(["testbed", "up", "--plan", file.to_str().unwrap()])
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("ssh_option"),
        "{}",
        text(&o.stderr)
    );
}

/// Bad uses of `attack --hosts` stop at once with exit 2 and the reason, before any host is
/// asked (no root or sshd needed): the attacker named on the receiver's host or on no host, a
/// plan of one host, options that need the testbed (--mka, --pcap), and `--flood-switch
/// bench` without hosts; `tdma run --hosts` with a plan of one host or with --pcap.
#[test]
fn attack_and_tdma_run_refuse_hosts() {
    let d = TempDir::new("multihost-refuse");
    let plan = d.path("hosts.toml");
    let hosts = "[[host]]\nname = \"a\"\nssh = \"root@192.0.2.1\"\niface = \"eth1\"\n\
                 [[host]]\nname = \"b\"\nssh = \"root@192.0.2.2\"\niface = \"eth1\"\n";
    std::fs::write(&plan, hosts).unwrap();
    let one = d.path("one.toml");
    std::fs::write(
        &one,
        &hosts[..hosts.find("[[host]]\nname = \"b\"").unwrap()],
    )
    .unwrap();
    let p = plan.to_str().unwrap();
    let pcap = d.path("x.pcap");
    for (args, says) in [
        (
            vec!["attack", "--hosts", p, "--attacker", "b", "--json"],
            "runs the receiver",
        ),
        (
            vec!["attack", "--hosts", p, "--attacker", "zz"],
            "no [[host]] named `zz`",
        ),
        (
            vec!["attack", "--hosts", one.to_str().unwrap()],
            "needs two or three",
        ),
        (vec!["attack", "--hosts", p, "--mka"], "--mka"),
        (
            vec!["attack", "--hosts", p, "--pcap", pcap.to_str().unwrap()],
            "--pcap",
        ),
        (
            vec!["attack", "--flood-switch", "bench", "--json"],
            "only with --hosts",
        ),
        (
            vec![
                "tdma",
                "run",
                "--hosts",
                one.to_str().unwrap(),
                "--flows",
                p,
                "--bp",
                "10ms",
                "--gp",
                "0ms",
            ],
            "tdma run across hosts needs two",
        ),
        (
            vec![
                "tdma", "run", "--hosts", p, "--flows", p, "--bp", "10ms", "--gp", "0ms", "--pcap",
                "x.pcap",
            ],
            "--pcap",
        ),
    ] {
        let o = common::ivnsec(&d, &args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    }
    // Their --help says how to run across hosts, with an example.
    for args in [vec!["attack", "--help"], vec!["tdma", "run", "--help"]] {
        let o = common::ivnsec(&d, &args);
        assert!(text(&o.stdout).contains("--hosts <PLAN>"), "{args:?}");
    }
    let o = common::ivnsec(&d, &["attack", "--help"]);
    assert!(
        text(&o.stdout).contains("ivnsec attack --hosts bench.toml"),
        "{}",
        text(&o.stdout)
    );
}
