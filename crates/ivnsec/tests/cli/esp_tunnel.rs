//! `ivnsec esp up` bad input: refused with exit 2 and a sentence before anything is created.
//! The tunnels themselves run as root between two namespaces: `testbed_pair/esp_tunnel.rs`.

use std::io::Write;
use std::path::Path;

use crate::common::esp::{PROFILE, keys};
use crate::common::{TempDir, text};

/// Bad input exits 2 with a sentence naming the problem, before anything is created (no root
/// needed for these).
#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let d = TempDir::new("esp-tun-bad");
    let k = keys(&d);
    let state = d.path("state");
    let base = |tx: &Path, local: &str, remote: &str, tx_spi: &str| -> Vec<String> {
        [
            "esp",
            "up",
            "--tun",
            "ivnbad0",
            "--local",
            local,
            "--remote",
            remote,
            "--profile",
            PROFILE,
            "--tx-keys",
            tx.to_str().unwrap(),
            "--rx-keys",
            k.ba.to_str().unwrap(),
            "--tx-spi",
            tx_spi,
            "--rx-spi",
            "0x1002",
            "--state-dir",
            state.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec()
    };
    let run = |args: Vec<String>| -> (i32, String) {
        let o = d.cmd().args(&args).output().unwrap();
        (o.status.code().unwrap_or(-1), text(&o.stderr))
    };
    let v4 = ("192.0.2.1", "192.0.2.2");

    let missing = d.path("missing.toml");
    let (c, e) = run(base(&missing, v4.0, v4.1, "0x1001"));
    assert_eq!(c, 2, "{e}");
    assert!(
        e.contains("missing.toml") && e.contains("ivnsec keygen"),
        "{e}"
    );

    let loose = d.path("loose.toml");
    std::fs::copy(&k.ab, &loose).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (c, e) = run(base(&loose, v4.0, v4.1, "0x1001"));
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("chmod 600"), "{e}");

    let (c, e) = run(base(&k.ab, v4.0, v4.1, "0"));
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("--tx-spi 0") && e.contains("RFC 4303"), "{e}");

    let (c, e) = run(base(&k.ab, "192.0.2.1", "2001:db8::2", "0x1001"));
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("IPv4/IPv6 mix"), "{e}");

    // One key for both directions would make both ends reuse each other's nonces.
    let mut same = base(&k.ab, v4.0, v4.1, "0x1001");
    let i = same.iter().position(|a| a == "--rx-keys").unwrap();
    same[i + 1] = k.ab.to_str().unwrap().to_string();
    let (c, e) = run(same);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("same key"), "{e}");

    let mut no_state = base(&k.ab, v4.0, v4.1, "0x1001");
    no_state.truncate(no_state.len() - 2);
    let (c, e) = run(no_state);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("--state-dir"), "{e}");

    // Crypto workers take batches, which the one-packet path does not make.
    let mut workers = base(&k.ab, v4.0, v4.1, "0x1001");
    workers.extend(["--no-offload", "--crypto-workers", "2"].map(String::from));
    let (c, e) = run(workers);
    assert_eq!(c, 2, "{e}");
    assert!(
        e.contains("--crypto-workers") && e.contains("--no-offload"),
        "{e}"
    );

    // The pipeline splits the offload path's batches; `off` and `auto` are fine there.
    let mut piped = base(&k.ab, v4.0, v4.1, "0x1001");
    piped.extend(["--no-offload", "--pipeline", "on"].map(String::from));
    let (c, e) = run(piped);
    assert_eq!(c, 2, "{e}");
    assert!(
        e.contains("--pipeline on") && e.contains("--no-offload"),
        "{e}"
    );
    let mut bad_pipe = base(&k.ab, v4.0, v4.1, "0x1001");
    bad_pipe.extend(["--pipeline", "twice"].map(String::from));
    let (c, e) = run(bad_pipe);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("--pipeline") && e.contains("auto"), "{e}");
    let o = d.run(&["esp", "up", "--help"]);
    assert!(
        text(&o.stdout).contains("--pipeline <MODE>"),
        "{}",
        text(&o.stdout)
    );

    // The link path sends protocol 50 from the offload path's batches only.
    for (extra, other) in [
        ("--udp-encap", "--udp-encap"),
        ("--no-offload", "--no-offload"),
    ] {
        let mut link = base(&k.ab, v4.0, v4.1, "0x1001");
        link.extend(["--outer-send", "link", extra].map(String::from));
        let (c, e) = run(link);
        assert_eq!(c, 2, "{e}");
        assert!(e.contains("--outer-send link") && e.contains(other), "{e}");
    }
    let mut bad_mode = base(&k.ab, v4.0, v4.1, "0x1001");
    bad_mode.extend(["--outer-send", "raw"].map(String::from));
    let (c, e) = run(bad_mode);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("auto") && e.contains("socket"), "{e}");

    let mut wrong = base(&k.ab, v4.0, v4.1, "0x1001");
    let i = wrong.iter().position(|a| a == "--profile").unwrap();
    wrong[i + 1] = "macsec-gcm-aes-128".into();
    let (c, e) = run(wrong);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("esp-"), "{e}");

    // --help has an example.
    let o = d.run(&["esp", "up", "--help"]);
    assert!(text(&o.stdout).contains("Example"), "{}", text(&o.stdout));
    let _ = std::io::stderr().flush();
}
