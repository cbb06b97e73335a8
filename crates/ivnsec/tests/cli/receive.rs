//! `ivnsec receive` exit codes as a user meets them: a UDP port another process holds is an
//! environment problem (exit 3) with a sentence saying what to do, not a failed verification.

use std::net::UdpSocket;

use crate::common;

use crate::common::{TempDir, text};

#[test]
fn udp_port_in_use_exits_3_saying_how_to_fix_it() {
    let d = TempDir::new("rx-busy");
    let keys = d.path("k.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // The port is held by this test for as long as the receiver tries it.
    let busy = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    let o = d.run(&[
        "receive",
        "--profile",
        "aes128-gcm",
        "--keys",
        keys.to_str().unwrap(),
        "--udp",
        &addr,
        // Bounded even if the bind were to succeed.
        "--seconds",
        "5",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("udp {addr} is already in use")),
        "{err}"
    );
    assert!(err.contains("--udp 127.0.0.1:0"), "{err}");
    assert!(o.stdout.is_empty(), "no counters: nothing was received");
    drop(busy);
}

/// Starts `ivnsec receive` on a free loopback port with `extra` options; returns it and its port.
fn start_loopback_receiver(
    d: &TempDir,
    keys: &std::path::Path,
    extra: &[&str],
) -> (common::Proc, u16) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let mut c = d.cmd();
    c.args(["receive", "--profile", "aes128-gcm", "--keys"])
        .arg(keys)
        .args(["--udp", "127.0.0.1:0", "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let port = loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let o = child.wait_with_output().unwrap();
            panic!("receive ended: {seen}{}", text(&o.stdout));
        }
        seen.push_str(&line);
        if let Some(rest) = line.split("listening on udp 127.0.0.1:").nth(1) {
            break rest
                .split_whitespace()
                .next()
                .unwrap()
                .parse::<u16>()
                .unwrap();
        }
    };
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    (common::Proc(Some(child)), port)
}

/// `ivnsec send` of `count` units to the recorder `rec`; every datagram it gets is kept and
/// forwarded to the receiver on `to` (the capture of the protected traffic).
fn send_through(
    d: &TempDir,
    keys: &std::path::Path,
    state: &std::path::Path,
    count: u64,
    rec: &UdpSocket,
    to: u16,
) -> Vec<Vec<u8>> {
    let addr = rec.local_addr().unwrap().to_string();
    let mut sender = d.cmd();
    sender
        .args(["send", "--profile", "aes128-gcm", "--keys"])
        .arg(keys)
        .arg("--state-dir")
        .arg(state)
        .args([
            "--udp",
            &addr,
            "--count",
            &count.to_string(),
            "--rate",
            "2000",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = common::Proc(Some(sender.spawn().unwrap()));
    rec.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    while (got.len() as u64) < count {
        let n = rec.recv(&mut buf).expect("the sender's units");
        rec.send_to(&buf[..n], ("127.0.0.1", to)).unwrap();
        got.push(buf[..n].to_vec());
    }
    let _ = child.0.take().unwrap().wait();
    got
}

/// Waits for the receiver; `code` is the exit code it must give: 0 when every unit verified,
/// 1 when one was dropped.
fn finish(p: common::Proc, code: i32) -> serde_json::Value {
    let mut p = p;
    let o = p.0.take().unwrap().wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(code), "{}", text(&o.stdout));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Record protected traffic, restart the receiver, replay the recording into it: with
/// --state-dir not one replayed unit is accepted (all counted as replays below the restored
/// mark), while the sender's fresh units after the restart are.
#[test]
fn a_restarted_receiver_with_a_state_dir_accepts_no_replayed_unit() {
    let d = TempDir::new("rx-restart");
    let keys = d.path("k.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let rx_state = d.path("rx-state");
    let tx_state = d.path("tx-state");
    let rx_state_s = rx_state.to_str().unwrap();
    let opts = [
        "--state-dir",
        rx_state_s,
        "--replay-checkpoint-frames",
        "64",
        "--replay-checkpoint-ms",
        "1000",
    ];
    let rec = UdpSocket::bind("127.0.0.1:0").unwrap();

    let mut first = opts.to_vec();
    first.extend(["--count", "300"]);
    let (rx, port) = start_loopback_receiver(&d, &keys, &first);
    let capture = send_through(&d, &keys, &tx_state, 300, &rec, port);
    let v = finish(rx, 0);
    assert_eq!(v["accepted"], 300, "{v}");
    let m = &v["replay_mark"];
    assert_eq!(m["restored_mark"], 0, "{v}");
    let mark = m["mark"].as_u64().unwrap();
    assert!(
        (300..300 + 64).contains(&mark),
        "one checkpoint at most: {v}"
    );
    assert!(m["mark_writes"].as_u64().unwrap() >= 2, "{v}");

    // Restarted: the whole recording again, then fresh units.
    let mut second = opts.to_vec();
    second.extend(["--count", "50"]);
    let (rx, port) = start_loopback_receiver(&d, &keys, &second);
    for (i, u) in capture.iter().enumerate() {
        rec.send_to(u, ("127.0.0.1", port)).unwrap();
        if i % 25 == 24 {
            // Paced, so the receiver's socket buffer never overflows.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }
    let fresh = send_through(&d, &keys, &tx_state, 50, &rec, port);
    assert_eq!(fresh.len(), 50);
    // The replayed units failed verification: exit 1.
    let v = finish(rx, 1);
    assert_eq!(v["accepted"], 50, "only the fresh units: {v}");
    assert_eq!(v["received"], 350, "{v}");
    let replays = v["drops"]["replay_duplicate"].as_u64().unwrap_or(0)
        + v["drops"]["replay_too_old"].as_u64().unwrap_or(0);
    assert_eq!(replays, 300, "every replayed unit refused as a replay: {v}");
    assert_eq!(v["replay_mark"]["restored_mark"], mark, "{v}");
    assert_eq!(v["replay_mark"]["refused_below_mark"], 300, "{v}");
}

/// Without --state-dir the receiver says what a restart costs; the checkpoint options are
/// checked (exit 2, naming the option).
#[test]
fn without_a_state_dir_the_receiver_warns_and_checkpoints_are_checked() {
    let d = TempDir::new("rx-warn");
    let keys = d.path("k.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "aes128-gcm",
        "--out",
        keys.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let k = keys.to_str().unwrap();
    let base = [
        "receive",
        "--profile",
        "aes128-gcm",
        "--keys",
        k,
        "--udp",
        "127.0.0.1:0",
    ];
    let mut a = base.to_vec();
    a.extend(["--seconds", "0.2", "--json"]);
    let o = d.run(&a);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("has no --state-dir") && err.contains("accepts, once, every frame"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["replay_mark"].is_null(), "{v}");
    for (opt, bad) in [
        ("--replay-checkpoint-frames", "0"),
        ("--replay-checkpoint-frames", "1048577"),
        ("--replay-checkpoint-ms", "0"),
        ("--replay-checkpoint-ms", "60001"),
    ] {
        let mut a = base.to_vec();
        a.extend(["--seconds", "0.2", opt, bad]);
        let o = d.run(&a);
        assert_eq!(o.status.code(), Some(2), "{opt} {bad}");
        let err = text(&o.stderr);
        assert!(err.contains(opt) && err.contains(bad), "{err}");
    }
    // A profile without a mark refuses --state-dir rather than pretending.
    let sk = d.path("s.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "secoc-cmac-aes128",
        "--out",
        sk.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let st = d.path("st");
    let o = d.run(&[
        "receive",
        "--profile",
        "secoc-cmac-aes128",
        "--keys",
        sk.to_str().unwrap(),
        "--udp",
        "127.0.0.1:0",
        "--seconds",
        "0.2",
        "--state-dir",
        st.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("keeps no acceptance mark"),
        "{}",
        text(&o.stderr)
    );
}
