//! `ivnsec gateway --keyserver` options checked before anything is created. The gateways
//! themselves run as root on `bump`/`bump2` testbeds: `testbed_gateway/gateway.rs`.

use crate::common::BIN;

/// `--keyserver` takes the same options as `macsec up --keyserver`: without --cert/--key/--ca
/// clap refuses it, next to a PSK it is refused, and an IVN-AE gateway (static keys only) says
/// so — all exit 2 before anything is created (no root needed).
#[test]
fn keyserver_options_are_checked() {
    let run = |args: &[&str]| {
        let o = std::process::Command::new(BIN).args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let base = [
        "gateway",
        "--plain",
        "nosuch-plain0",
        "--protected",
        "nosuch-prot0",
        "--keyserver",
        "127.0.0.1:9",
    ];
    let (code, err) = run(&[&base[..], &["--profile", "macsec-gcm-aes-128"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--cert") && err.contains("--ca"), "{err}");
    let full = [
        &base[..],
        &["--cert", "c.pem", "--key", "c.key", "--ca", "ca.pem"],
    ]
    .concat();
    let (code, err) = run(&[
        &full[..],
        &["--profile", "macsec-gcm-aes-128", "--psk", "p.psk"],
    ]
    .concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--psk"), "{err}");
    let (code, err) = run(&[&full[..], &["--profile", "aes128-gcm"]].concat());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("static keys"), "{err}");
}
