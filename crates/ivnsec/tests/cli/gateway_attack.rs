//! `ivnsec attack --topology` bad gateway options (exit 2). The attacks on the protected side
//! of the gateways run as root: `testbed_gateway/gateway_attack.rs`.

use crate::common::{TempDir, ivnsec, text};

#[test]
fn bad_gateway_options_are_usage_errors() {
    let d = TempDir::new("gwausage");
    for (args, needle) in [
        (
            &["attack", "--topology", "pair", "--count", "1"][..],
            "bump2",
        ),
        (
            &["attack", "--topology", "bump", "--profile", "aes128-gcm"][..],
            "macsec-gcm-aes-128",
        ),
        (&["attack", "--topology", "ring"][..], "ring"),
        (
            &["attack", "--topology", "bump2", "--profile", "aes128-gcm"][..],
            "macsec-gcm-aes-128",
        ),
        (
            &["attack", "--topology", "bump2", "--testbed", "ivn-000000"][..],
            "--testbed",
        ),
        (&["attack", "--topology", "bump2", "--mka"][..], "--mka"),
    ] {
        let o = ivnsec(&d, args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    let o = ivnsec(&d, &["attack", "--help"]);
    assert!(
        text(&o.stdout).contains("ivnsec attack --topology bump2"),
        "{}",
        text(&o.stdout)
    );
}
