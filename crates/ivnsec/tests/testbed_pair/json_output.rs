//! The `--json` commands that need root print exactly one JSON document on stdout, whatever
//! the programs they start print (`testbed`, `attack`, `tdma run`, `macsec`, `gateway`). The
//! list of commands and the others: `cli/json_output.rs`.

use std::process::Command;

use crate::common::json_output::{Stray, one_document, one_document_of, strayed, which};
use crate::common::net::{Netns, ip};
use crate::common::tdma::TWO_FLOWS;
use crate::common::{BIN, Proc, TempDir, text, write};

#[test]
fn root_commands_print_one_document() {
    require_root!();
    let s = Stray::new();
    let d = TempDir::new("json-root");

    // testbed up / status / down (every one runs `ip`).
    let o = s.run(&d, &["testbed", "up", "--topology", "pair", "--json"]);
    let v = one_document("testbed up", &o, &[0]);
    strayed(&s, "testbed up", &text(&o.stderr), "ip");
    let prefix = v["prefix"].as_str().unwrap().to_string();
    let o = s.run(&d, &["testbed", "status", "--json"]);
    let v = one_document("testbed status", &o, &[0]);
    assert_eq!(v["testbeds"].as_array().map(Vec::len), Some(1), "{v}");
    let o = s.run(&d, &["testbed", "down", "--testbed", &prefix, "--json"]);
    one_document("testbed down", &o, &[0]);
    strayed(&s, "testbed down", &text(&o.stderr), "ip");

    // attack: one class on one profile, on a testbed of its own.
    let o = s.run(
        &d,
        &[
            "attack",
            "--profile",
            "aes128-gcm",
            "--attack",
            "replay-w1",
            "--count",
            "20",
            "--json",
        ],
    );
    one_document("attack", &o, &[0]);
    strayed(&s, "attack", &text(&o.stderr), "ip");

    // tdma run: a few base periods on cascade:2.
    let flows = write(&d, "flows.toml", TWO_FLOWS);
    let o = s.run(
        &d,
        &[
            "tdma",
            "run",
            "--flows",
            &flows,
            "--bp",
            "10ms",
            "--gp",
            "1ms",
            "--topology",
            "cascade:2",
            "--profile",
            "hmac-sha256",
            "--periods",
            "5",
            "--json",
        ],
    );
    one_document("tdma run", &o, &[0, 1]);
    strayed(&s, "tdma run", &text(&o.stderr), "ip");

    // macsec up / status on a veth end in a namespace of this test's own.
    let prefix = ivnsec_net::testbed::random_prefix().unwrap();
    let ns = Netns(format!("{prefix}-json"));
    ip(&["netns", "add", &ns.0]);
    let (va, vb) = (format!("{prefix}ja"), format!("{prefix}jb"));
    ip(&[
        "-n", &ns.0, "link", "add", &va, "type", "veth", "peer", "name", &vb,
    ]);
    for v in [&va, &vb] {
        ip(&["-n", &ns.0, "link", "set", v, "up"]);
    }
    let keys = d.path("m.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "macsec-gcm-aes-128",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let run_dir = d.path("run");
    let exec = |args: &[&str]| {
        // The real ip: a wrapper started from here would write into this test's stdout.
        let mut c = Command::new(which("ip").unwrap());
        c.args(["netns", "exec", &ns.0, BIN])
            .args(args)
            .env("PATH", &s.path)
            .env("IVNSEC_STATE_DIR", d.state());
        c
    };
    let (up, _, _) = Proc::start(
        exec(&[
            "macsec",
            "up",
            "--iface",
            &va,
            "--tap",
            &format!("{prefix}jt"),
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            keys.to_str().unwrap(),
            "--peer",
            "02:00:00:00:00:0b",
            "--state-dir",
            d.path("mstate").to_str().unwrap(),
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--json",
        ]),
        "running until",
    );
    // The status file is written every 500 ms.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let o = exec(&[
        "macsec",
        "status",
        "--json",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let v = one_document("macsec status", &o, &[0]);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    let v = one_document_of("macsec up", up.finish(true), &[0]);
    assert!(v.get("tx").is_some(), "{v}");

    // gateway: plain port on one veth end, protected port (MTU + 32) on the other.
    ip(&["-n", &ns.0, "link", "set", &vb, "mtu", "1532"]);
    let (gw, _, _) = Proc::start(
        exec(&[
            "gateway",
            "--plain",
            &va,
            "--protected",
            &vb,
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            keys.to_str().unwrap(),
            "--peer",
            "02:00:00:00:00:0b",
            "--state-dir",
            d.path("gstate").to_str().unwrap(),
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--json",
        ]),
        "running until",
    );
    let v = one_document_of("gateway", gw.finish(true), &[0]);
    assert_eq!(v["role"], "gateway", "{v}");
    drop(ns);
}
