//! `ivnsec keygen --mka` (private PSK files) and every refusal of `macsec up --psk` and
//! `attack --mka` before anything is created (exit 2). MKA between ECUs is a root test:
//! `testbed_ecus/mka.rs`.

use std::process::Output;

use crate::common::mka::{keygen_mka, psk_fields};
use crate::common::{TempDir, text};

/// A usage error (exit 2) that says `want`.
fn refused(o: &Output, args: &dyn std::fmt::Debug, want: &str) {
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains(want),
        "{args:?}: {}",
        text(&o.stderr)
    );
}

#[test]
fn keygen_mka_writes_private_psk_files_and_bad_options_exit_2() {
    use std::os::unix::fs::PermissionsExt;
    let d = TempDir::new("mkabad");
    let psk = keygen_mka(&d, "ca.psk", &[]);
    assert_eq!(
        std::fs::metadata(&psk).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let (cak, ckn) = psk_fields(&psk);
    assert_eq!((cak.len(), ckn.len()), (32, 32), "128-bit CAK, 16-byte CKN");
    let o = d
        .cmd()
        .args(["keygen", "--mka", "--out"])
        .arg(&psk)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "never overwrites");
    assert_eq!(psk_fields(&psk), (cak.clone(), ckn.clone()));
    let p256 = keygen_mka(&d, "ca256.psk", &["--cak-bits", "256", "--ckn", "0a:0b"]);
    let (c256, n256) = psk_fields(&p256);
    assert_eq!((c256.len(), n256.as_str()), (64, "0a0b"));
    let o = d.run(&["keygen", "--mka"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("cak = \""), "{}", text(&o.stdout));
    for (args, want) in [
        (&["keygen", "--mka", "--cak-bits", "192"][..], "--cak-bits"),
        (&["keygen", "--mka", "--ckn", "zz"][..], "--ckn"),
        (
            &["keygen", "--mka", "--ckn", &"ab".repeat(33)][..],
            "1 to 32",
        ),
        (
            &["keygen", "--ckn", "01", "--profile", "aes128-gcm"][..],
            "--mka",
        ),
        (&["keygen"][..], "--profile"),
    ] {
        refused(&d.run(args), &args, want);
    }
    let o = d.run(&["keygen", "--help"]);
    assert!(text(&o.stdout).contains("keygen --mka --out"));

    // `macsec up --psk`: every refusal before anything is created (--iface lo exists).
    let loose = d.path("loose.psk");
    std::fs::copy(&psk, &loose).unwrap();
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o640)).unwrap();
    let keyfile = d.path("static.toml");
    let o = d.run(&[
        "keygen",
        "--profile",
        "macsec-gcm-aes-128",
        "--out",
        keyfile.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let st = d.path("st");
    let (p, l, k, s) = (
        psk.to_str().unwrap(),
        loose.to_str().unwrap(),
        keyfile.to_str().unwrap(),
        st.to_str().unwrap(),
    );
    let up = ["macsec", "up", "--iface", "lo", "--tap", "ivnmka0"];
    let prof = ["--profile", "macsec-gcm-aes-128"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--psk", p], "refusing to run MKA without --state-dir"),
        (
            vec!["--psk", l, "--state-dir", s],
            "readable by group or others",
        ),
        (
            vec!["--psk", k, "--state-dir", s],
            "expected keys: cak, ckn",
        ),
        (
            vec!["--psk", p, "--state-dir", s, "--peer", "02:00:00:00:00:01"],
            "--peer",
        ),
        (
            vec!["--keys", k, "--state-dir", s, "--priority", "3"],
            "--priority",
        ),
        (vec!["--psk", p, "--state-dir", s, "--an", "1"], "--an"),
        (
            vec!["--psk", p, "--state-dir", s, "--life-seconds", "1"],
            "--life-seconds",
        ),
        (
            vec!["--psk", p, "--state-dir", s, "--hello-seconds", "0"],
            "--hello-seconds",
        ),
        (
            vec!["--psk", p, "--state-dir", s, "--rekey-seconds", "0"],
            "--rekey-seconds",
        ),
        (
            vec!["--psk", p, "--state-dir", s, "--pn-threshold", "0"],
            "--pn-threshold",
        ),
        (
            vec!["--psk", p, "--state-dir", s, "--ramp-up-count", "3"],
            "--ramp-up-ms",
        ),
        (
            vec![
                "--psk",
                p,
                "--state-dir",
                s,
                "--ramp-up-ms",
                "10",
                "--ramp-up-count",
                "0",
            ],
            "--ramp-up",
        ),
        (
            vec!["--psk", p, "--state-dir", s, "--priority", "256"],
            "--priority",
        ),
    ];
    for (args, want) in cases {
        let o = d.cmd().args(up).args(prof).args(&args).output().unwrap();
        refused(&o, &args, want);
    }
    assert!(!st.exists(), "nothing was reserved by any refusal");
    let o = d.run(&["macsec", "up", "--help"]);
    let help = text(&o.stdout);
    for want in [
        "keygen --mka --out ca.psk",
        "--psk ca.psk",
        "--priority",
        "--rekey-seconds",
        "--pn-threshold",
        "--hello-seconds",
        "--life-seconds",
        "--sak-retire-seconds",
        "--ramp-up-ms",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }

    // `attack --mka`: bad input is a usage error before any testbed is built.
    for (args, want) in [
        (
            &["attack", "--mka", "--profile", "aes128-gcm"][..],
            "MACsec",
        ),
        (&["attack", "--mka", "--count", "0"][..], "--count"),
        (&["attack", "--mka-attack", "mka-bad-icv"][..], "--mka"),
        (&["attack", "--mka", "--attack", "bit-flip"][..], "--attack"),
        (&["attack", "--mka", "--pcap", "x.pcap"][..], "--pcap"),
        (
            &["attack", "--mka", "--mka-attack", "mka-teleport"][..],
            "mka-teleport",
        ),
    ] {
        refused(&d.run(args), &args, want);
    }
    let o = d.run(&["attack", "--help"]);
    for class in [
        "mka-bad-icv",
        "mka-stale-mn",
        "mka-foreign-ckn",
        "mka-sak-not-key-server",
    ] {
        assert!(text(&o.stdout).contains(class), "{}", text(&o.stdout));
    }
}
