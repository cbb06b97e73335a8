//! `--outage` options on the experiments checked before any testbed is built (exit 2). The
//! `production` topology itself: `testbed_production/production.rs`.

use crate::common::{TempDir, text};

/// `pingpong --outage`: bad use exits 2 with a reason, before any testbed is built.
#[test]
fn outage_option_errors_exit_2() {
    let d = TempDir::new("prodo");
    for (args, why) in [
        (vec!["--outage", "1"], "needs --topology production"),
        (
            vec!["--outage", "1", "--topology", "bump2"],
            "needs --topology production",
        ),
        (
            vec!["--outage", "0", "--topology", "production"],
            "N is out of range",
        ),
        (
            vec!["--outage", "2@5", "--topology", "production"],
            "SECONDS must exceed",
        ),
        (
            vec!["--outage", "x", "--topology", "production"],
            "expected N[@SECONDS]",
        ),
        (
            vec![
                "--outage",
                "1",
                "--topology",
                "production",
                "--also-profile",
                "nope",
            ],
            "nope",
        ),
        (vec!["--also-profile", "aes128-gcm"], "--outage"),
    ] {
        let mut all = vec!["pingpong", "--profile", "plain", "--payload", "64"];
        all.extend(&args);
        let o = d.run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(why),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    // underload takes the same --outage (and sets --seconds from it).
    for (args, why) in [
        (vec!["--outage", "1"], "needs --topology production"),
        (
            vec!["--outage", "1", "--topology", "bump"],
            "needs --topology production",
        ),
        (
            vec!["--outage", "21", "--topology", "production"],
            "N is out of range",
        ),
        (
            vec![
                "--outage",
                "1",
                "--topology",
                "production",
                "--seconds",
                "5",
            ],
            "--seconds",
        ),
        (vec!["--outage-seed", "3"], "--outage"),
        (
            vec![
                "--outage",
                "1",
                "--topology",
                "production",
                "--profile",
                "nope",
            ],
            "nope",
        ),
    ] {
        let mut all = vec!["underload"];
        all.extend(&args);
        let o = d.run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(why),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    assert!(d.leftover_testbeds().is_empty());
}
