//! `ivnsec attack` bad input: usage errors (exit 2) and the classes and default profiles its
//! `--help` names. The attacks themselves run as root on a testbed: `testbed_pair/attack.rs`.

use crate::common::{TempDir, ivnsec, stderr};

#[test]
fn bad_input_is_a_usage_error() {
    let d = TempDir::new("usage");
    for (args, needle) in [
        (&["attack", "--profile", "aes512-gcm"][..], "aes512-gcm"),
        (&["attack", "--profile", "secoc-cmac-aes512"][..], "SecOC"),
        (&["attack", "--profile", "someip-aes512-gcm"][..], "SOME/IP"),
        (
            &["attack", "--profile", "someip-aes128-gcm/none"][..],
            "SOME/IP",
        ),
        (&["attack", "--count", "0"][..], "--count"),
        (&["attack", "--payload", "4"][..], "--payload"),
        (&["attack", "--flood-seconds", "0"][..], "--flood-seconds"),
        (&["attack", "--attack", "teleport"][..], "teleport"),
        (&["attack", "--all", "--profile", "aes128-gcm"][..], "--all"),
        (&["attack", "--rcvbuf-mib", "0"][..], "--rcvbuf-mib"),
        (&["attack", "--flood-switch", "bus"][..], "bus"),
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let o = ivnsec(&d, &["attack", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    for class in ["replay-w1024", "bit-flip", "downgrade", "flood"] {
        assert!(help.contains(class), "{help}");
    }
    // The default profiles include one SecOC and one secured SOME/IP profile.
    for p in ["secoc-cmac-aes128", "someip-aes128-gcm/conf"] {
        assert!(help.contains(p), "{help}");
    }
}

/// `--eap` with options it does not take, and its classes without it: exit 2 with the reason,
/// before any testbed is built.
#[test]
fn bad_eap_combinations_are_usage_errors() {
    let d = TempDir::new("eapusage");
    for (args, needle) in [
        (&["attack", "--eap", "--mka"][..], "--mka"),
        (
            &["attack", "--eap-attack", "eap-logoff-spoofed"][..],
            "--eap",
        ),
        (
            &["attack", "--eap", "--eap-attack", "teleport"][..],
            "teleport",
        ),
        (&["attack", "--eap", "--attack", "flood"][..], "--attack"),
        (&["attack", "--eap", "--count", "0"][..], "--count"),
        (
            &["attack", "--eap", "--profile", "aes128-gcm"][..],
            "macsec-gcm-aes-128",
        ),
        (&["attack", "--eap", "--pcap", "x.pcap"][..], "--pcap"),
        (&["attack", "--eap", "--all"][..], "--all"),
        (&["attack", "--eap", "--topology", "bump2"][..], "--eap"),
        (&["attack", "--eap", "--hosts", "bench.toml"][..], "--hosts"),
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    let o = ivnsec(&d, &["attack", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    for needle in [
        "eap-logoff-spoofed",
        "eap-failure-spoofed",
        "radius-forged-accept",
        "eapol-start-flood",
        "ivnsec attack --eap",
    ] {
        assert!(help.contains(needle), "{help}");
    }
}
