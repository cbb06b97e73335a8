//! `ivnsec receive` exit codes as a user meets them: a UDP port another process holds is an
//! environment problem (exit 3) with a sentence saying what to do, not a failed verification.

use std::net::UdpSocket;

// This file needs no root: `require_root!` goes unused.
#[allow(unused_macros)]
mod common;

use common::{TempDir, text};

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
