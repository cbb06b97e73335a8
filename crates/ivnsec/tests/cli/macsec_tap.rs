//! `ivnsec macsec up` bad options: exit 2 with a reason before anything is created or reserved.
//! The TAPs themselves run as root between two namespaces: `testbed_pair/macsec_tap.rs`.

use std::process::Output;

use crate::common::macsec::{MAC_B, key_file};
use crate::common::{TempDir, text};

fn up_on_lo(d: &TempDir, extra: &[&str]) -> Output {
    let mut c = d.cmd();
    c.args(["macsec", "up", "--iface", "lo", "--tap", "ivntest0"])
        .args(extra);
    c.output().unwrap()
}

#[test]
fn bad_options_exit_2_with_a_reason() {
    let d = TempDir::new("mtapbad");
    let keys = key_file(&d, "macsec-gcm-aes-128");
    let k = keys.to_str().unwrap();
    let st = d.path("st");
    let s = st.to_str().unwrap();
    let cases: [(&[&str], &str); 9] = [
        (
            &["--profile", "aes128-gcm", "--keys", k, "--state-dir", s],
            "macsec-gcm-aes-128",
        ),
        (
            &["--profile", "macsec-nope", "--keys", k, "--state-dir", s],
            "macsec",
        ),
        (
            &["--profile", "macsec-gcm-aes-128", "--psk", k],
            "refusing to run MKA without --state-dir",
        ),
        (
            &["--profile", "macsec-gcm-aes-128", "--keys", k],
            "--state-dir",
        ),
        (&["--profile", "macsec-gcm-aes-128"], "--keys"),
        (
            &[
                "--profile",
                "macsec-gcm-aes-128",
                "--keys",
                k,
                "--state-dir",
                s,
                "--peer",
                "02:00",
            ],
            "not a MAC address",
        ),
        (
            &[
                "--profile",
                "macsec-gcm-aes-128",
                "--keys",
                k,
                "--state-dir",
                s,
                "--an",
                "4",
                "--peer",
                MAC_B,
            ],
            "--an",
        ),
        (
            &[
                "--profile",
                "macsec-gcm-aes-256",
                "--keys",
                k,
                "--state-dir",
                s,
                "--peer",
                MAC_B,
            ],
            "one key serves one suite",
        ),
        (
            &[
                "--profile",
                "macsec-gcm-aes-128",
                "--keys",
                k,
                "--state-dir",
                s,
                "--reserve-block",
                "0",
                "--peer",
                MAC_B,
            ],
            "reserve-block",
        ),
    ];
    for (args, want) in cases {
        let o = up_on_lo(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(want),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    // Static XPN: two listed members whose SSCIs collide (a pair found with the Python function
    // of docs/macsec-tap.md) are refused before anything is created.
    let xpn = key_file(&d, "macsec-gcm-aes-xpn-128");
    let o = up_on_lo(
        &d,
        &[
            "--profile",
            "macsec-gcm-aes-xpn-128",
            "--keys",
            xpn.to_str().unwrap(),
            "--state-dir",
            s,
            "--peer",
            "02:cc:00:00:7f:05",
            "--peer",
            "02:cc:00:00:fb:5e",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("derive the same XPN SSCI 0xca1d7e61"),
        "{}",
        text(&o.stderr)
    );
    // No peer; an interface that does not exist.
    let o = up_on_lo(
        &d,
        &[
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            k,
            "--state-dir",
            s,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--peer"), "{}", text(&o.stderr));
    let o = d
        .cmd()
        .args(["macsec", "up", "--iface", "ivn-nosuchif", "--tap", "t0"])
        .args([
            "--profile",
            "macsec-gcm-aes-128",
            "--keys",
            k,
            "--state-dir",
            s,
        ])
        .args(["--peer", MAC_B])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no such interface"),
        "{}",
        text(&o.stderr)
    );
    // Nothing was reserved by any refusal.
    assert!(!st.exists());
    // --help has the example.
    let o = d.run(&["macsec", "up", "--help"]);
    assert!(text(&o.stdout).contains("Example"));
    let o = d.run(&["macsec", "status", "--tap", "ivn-none", "--run-dir", s]);
    assert_eq!(o.status.code(), Some(1));
}

/// `--busy-poll-us` of `macsec up`, `esp up` and `gateway`: out of 1 … 10000 (or not a number)
/// exits 2 naming the option, and every `--help` shows it with an example; `macsec up --help`
/// names `--no-offload`.
#[test]
fn busy_poll_us_is_checked_and_documented_on_every_data_plane() {
    let d = TempDir::new("busypoll");
    let cmds: [&[&str]; 3] = [&["macsec", "up"], &["esp", "up"], &["gateway"]];
    for cmd in cmds {
        for bad in ["0", "10001", "fast", "-5"] {
            let bad_arg = format!("--busy-poll-us={bad}");
            let o = d.cmd().args(cmd).arg(&bad_arg).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{cmd:?} --busy-poll-us {bad}");
            let err = text(&o.stderr);
            assert!(err.contains("--busy-poll-us"), "{cmd:?} {bad}: {err}");
        }
        let o = d.cmd().args(cmd).arg("--help").output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        let help = text(&o.stdout);
        assert!(help.contains("--busy-poll-us <US>"), "{cmd:?}: {help}");
        assert!(
            help.contains("--busy-poll-us 50"),
            "{cmd:?}: the example: {help}"
        );
    }
    let o = d.cmd().args(["macsec", "up", "--help"]).output().unwrap();
    assert!(text(&o.stdout).contains("--no-offload"));
}

/// `--crypto-workers` of `macsec up`, `gateway` and `esp up`: a number above 64, a negative
/// one or a word other than `auto` exits 2 naming the option and the range; every `--help`
/// shows it with an example.
#[test]
fn crypto_workers_is_checked_and_documented() {
    let d = TempDir::new("cryptoworkers");
    let cmds: [&[&str]; 3] = [&["macsec", "up"], &["gateway"], &["esp", "up"]];
    for cmd in cmds {
        for bad in ["65", "-1", "many", "1.5", ""] {
            let bad_arg = format!("--crypto-workers={bad}");
            let o = d.cmd().args(cmd).arg(&bad_arg).output().unwrap();
            assert_eq!(o.status.code(), Some(2), "{cmd:?} {bad_arg}");
            let err = text(&o.stderr);
            assert!(err.contains("--crypto-workers"), "{cmd:?} {bad}: {err}");
            assert!(
                err.contains("from 0 to 64, or auto"),
                "{cmd:?} {bad}: {err}"
            );
        }
        let o = d.cmd().args(cmd).arg("--help").output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        let help = text(&o.stdout);
        assert!(
            help.contains("--crypto-workers <N|auto>"),
            "{cmd:?}: {help}"
        );
        assert!(help.contains("--crypto-workers 4"), "{cmd:?}: {help}");
    }
}
