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
